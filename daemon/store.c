// SPDX-License-Identifier: GPL-2.0-only
/*
 * store_: results in the state directory, one JSON file per target (target-ID.json),
 * written whole to a temporary file and renamed, so a crash leaves the previous copy.
 * Stacks are saved symbolized (module, address, frame names, each frame's file and line), so
 * they list the same after a restart, when the processes and even their files may be gone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pat.h"
#include "proto.h"
#include "store.h"
#include "sym.h"
#include "target.h"
#include "util.h"

#define STORE_FORMAT 1

static void path_of(char *buf, size_t len, const char *dir, uint32_t id)
{
	snprintf(buf, len, "%s/target-%u.json", dir, id);
}

/* Locations used by the target, numbered in first-use order. */
struct locmap {
	int64_t *idx;	/* sym loc id -> file index, -1 unset */
	size_t cap;
	cJSON *arr;
	uint32_t n;
};

static int64_t loc_index(struct locmap *m, const struct sym *s, uint32_t loc)
{
	const struct sym_loc *l = sym_loc(s, loc);
	const struct sym_line *fl;
	const uint32_t *fr;
	bool lines = false;
	cJSON *o, *f;

	if (loc >= m->cap) {
		size_t old = m->cap;

		if (GROW(m->idx, m->cap, loc + 1))
			return -1;
		for (size_t i = old; i < m->cap; i++)
			m->idx[i] = -1;
	}
	if (m->idx[loc] >= 0)
		return m->idx[loc];
	o = cJSON_CreateObject();
	fr = sym_frames(s, l);
	cJSON_AddStringToObject(o, "m", sym_str(s, sym_proc(s, fr[0])->module));
	cJSON_AddNumberToObject(o, "a", (double)l->addr);
	f = cJSON_AddArrayToObject(o, "f");
	for (uint32_t i = 0; i < l->nframes; i++)
		cJSON_AddItemToArray(f, cJSON_CreateString(sym_str(s, sym_proc(s, fr[i])->name)));
	if (l->file)
		cJSON_AddStringToObject(o, "file", sym_str(s, l->file));
	if (l->line)
		cJSON_AddNumberToObject(o, "line", l->line);
	/* "fl": per frame [file, line] (the innermost is "file"/"line" again, for old readers) */
	fl = sym_frame_lines(s, l);
	for (uint32_t i = 1; i < l->nframes; i++)
		lines |= fl[i].file || fl[i].line;
	if (lines) {
		f = cJSON_AddArrayToObject(o, "fl");
		for (uint32_t i = 0; i < l->nframes; i++) {
			cJSON *x = cJSON_CreateArray();

			cJSON_AddItemToArray(x, cJSON_CreateString(sym_str(s, fl[i].file)));
			cJSON_AddItemToArray(x, cJSON_CreateNumber(fl[i].line));
			cJSON_AddItemToArray(f, x);
		}
	}
	cJSON_AddItemToArray(m->arr, o);
	return m->idx[loc] = m->n++;
}

int store_save(const char *dir, const struct sym *s, const struct target *t)
{
	char path[4096], tmp[4200];
	struct locmap lm = { 0 };
	cJSON *o = cJSON_CreateObject(), *arr;
	char *text = NULL;
	FILE *f = NULL;
	int r = -ENOMEM;

	if (!o)
		return -ENOMEM;
	mkdir(dir, 0750);
	cJSON_AddNumberToObject(o, "format", STORE_FORMAT);
	cJSON_AddNumberToObject(o, "id", t->id);
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "comm", t->comm);
	cJSON_AddNumberToObject(o, "owner", t->owner);
	cJSON_AddNumberToObject(o, "kind", t->kind);
	cJSON_AddNumberToObject(o, "pid", t->pid);
	cJSON_AddBoolToObject(o, "real", t->real);
	cJSON_AddBoolToObject(o, "kernel", t->kernel);
	cJSON_AddBoolToObject(o, "children", t->children);
	cJSON_AddBoolToObject(o, "icase", t->icase);
	cJSON_AddNumberToObject(o, "interval_us", t->period_ns / 1000);
	if (t->when_text)
		cJSON_AddStringToObject(o, "when", t->when_text);
	cJSON_AddBoolToObject(o, "when_from_file", t->when_from_file);
	cJSON_AddBoolToObject(o, "no_inline", t->no_inline);
	cJSON_AddStringToObject(o, "unwind", t->unwind);
	arr = cJSON_AddArrayToObject(o, "critical");
	for (size_t i = 0; i < t->ncrit; i++) {
		char *spec;

		if (asprintf(&spec, "%s=%s", t->crit[i].name, t->crit[i].text) < 0)
			goto out;
		cJSON_AddItemToArray(arr, cJSON_CreateString(spec));
		free(spec);
	}
	cJSON_AddNumberToObject(o, "state", t->state);
	cJSON_AddNumberToObject(o, "elapsed_s", target_elapsed(t));
	cJSON_AddNumberToObject(o, "start_wall", t->start_wall);
	cJSON_AddBoolToObject(o, "root_exited", t->root_exited);
	cJSON_AddNumberToObject(o, "wait_status", t->exit_status);
	cJSON_AddNumberToObject(o, "seen", t->seen_samples);
	cJSON_AddNumberToObject(o, "lost_counts_full", t->lost.lost_counts_full);
	cJSON_AddNumberToObject(o, "lost_offcpu_full", t->lost.lost_offcpu_full);
	cJSON_AddNumberToObject(o, "lost_oom", t->lost_oom);
	cJSON_AddNumberToObject(o, "lost_memory", t->lost_memory);
	cJSON_AddNumberToObject(o, "lost_ring_full", t->lost.lost_ring_full);
	cJSON_AddNumberToObject(o, "denied", t->lost.denied);
	cJSON_AddNumberToObject(o, "handed_over", t->handed_over);

	lm.arr = cJSON_AddArrayToObject(o, "locs");
	arr = cJSON_AddArrayToObject(o, "stacks");
	for (size_t i = 0; i < agg_count(t->agg); i++) {
		uint64_t count, ns;
		const struct agg_stack *st = agg_get(t->agg, i, &count, &ns);
		cJSON *e = cJSON_CreateObject(), *l;

		cJSON_AddNumberToObject(e, "k", st->kind);
		cJSON_AddNumberToObject(e, "p", st->pid);
		cJSON_AddNumberToObject(e, "u", st->unwalk);
		if (st->flags)
			cJSON_AddNumberToObject(e, "f", st->flags);
		if (st->section)
			cJSON_AddStringToObject(e, "s", sym_str(s, st->section));
		cJSON_AddNumberToObject(e, "nu", st->nuser);
		cJSON_AddNumberToObject(e, "c", (double)count);
		cJSON_AddNumberToObject(e, "ns", (double)ns);
		l = cJSON_AddArrayToObject(e, "l");
		for (uint32_t j = 0; j < st->nuser + st->nkern; j++) {
			int64_t x = loc_index(&lm, s, st->locs[j]);

			if (x < 0)
				goto out;
			cJSON_AddItemToArray(l, cJSON_CreateNumber(x));
		}
		cJSON_AddItemToArray(arr, e);
	}
	text = cJSON_PrintUnformatted(o);
	if (!text)
		goto out;
	path_of(path, sizeof(path), dir, t->id);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f || fputs(text, f) < 0 || fflush(f) || fsync(fileno(f))) {
		r = -errno;
		pr_warn("cannot save target %u to %s: %s", t->id, tmp, strerror(errno));
		goto out;
	}
	fclose(f);
	f = NULL;
	if (rename(tmp, path)) {
		r = -errno;
		pr_warn("cannot save target %u: rename to %s: %s", t->id, path, strerror(errno));
		goto out;
	}
	r = 0;
out:
	if (f)
		fclose(f);
	free(text);
	free(lm.idx);
	cJSON_Delete(o);
	return r;
}

void store_remove(const char *dir, uint32_t id)
{
	char path[4096];

	path_of(path, sizeof(path), dir, id);
	unlink(path);
}

static uint32_t *load_locs(struct sym *s, const cJSON *arr, size_t *n)
{
	const cJSON *it;
	uint32_t *ids = calloc(cJSON_GetArraySize(arr) + 1, sizeof(*ids));

	*n = 0;
	if (!ids)
		return NULL;
	cJSON_ArrayForEach(it, arr) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(it, "f"), *x;
		const cJSON *fl = cJSON_GetObjectItemCaseSensitive(it, "fl");
		const char *names[64], *files[64] = { NULL };
		uint32_t lines[64] = { 0 };
		size_t nn = 0;

		cJSON_ArrayForEach(x, f) {
			if (nn < ARRAY_SIZE(names))
				names[nn++] = cJSON_IsString(x) && x->valuestring[0] ? x->valuestring : NULL;
		}
		/* per-frame lines; files written before them have the innermost frame's only */
		files[0] = proto_str(it, "file", NULL);
		lines[0] = proto_num(it, "line", 0);
		for (size_t i = 0; cJSON_IsArray(fl) && i < nn; i++) {
			const cJSON *fi = cJSON_GetArrayItem(fl, i);
			const cJSON *file = cJSON_GetArrayItem(fi, 0);
			const cJSON *line = cJSON_GetArrayItem(fi, 1);
			bool known = cJSON_IsNumber(line) && line->valuedouble > 0 &&
				     line->valuedouble < UINT32_MAX;

			files[i] = cJSON_IsString(file) && file->valuestring[0] ? file->valuestring
										 : NULL;
			lines[i] = known ? (uint32_t)line->valuedouble : 0;
		}
		if (sym_intern_loc(s, proto_str(it, "m", ""), (uint64_t)proto_num(it, "a", 0), names,
				   files, lines, nn, &ids[*n])) {
			free(ids);
			return NULL;
		}
		(*n)++;
	}
	return ids;
}

static struct target *load_one(const char *path, struct sym *s)
{
	size_t len, nlocs = 0;
	char *text = read_file(path, &len);
	cJSON *o = text ? cJSON_ParseWithLength(text, len) : NULL, *err = NULL;
	const cJSON *it;
	struct target *t = NULL;
	uint32_t *locs = NULL;
	struct agg_stack *st = NULL;
	size_t cap = 0;

	free(text);
	if (!o || proto_num(o, "format", 0) != STORE_FORMAT)
		goto bad;
	t = target_new(proto_num(o, "id", 0));
	if (!t || !t->id || t->id >= PCMON_MAX_TARGETS)
		goto bad;
	snprintf(t->name, sizeof(t->name), "%s", proto_str(o, "name", "?"));
	str_sanitize(t->name, sizeof(t->name) - 1);
	snprintf(t->comm, sizeof(t->comm), "%s", proto_str(o, "comm", ""));
	t->owner = proto_num(o, "owner", 0);
	t->kind = proto_num(o, "kind", 0);
	t->pid = proto_num(o, "pid", 0);
	t->real = proto_bool(o, "real", 0);
	t->kernel = proto_bool(o, "kernel", 0);
	t->children = proto_bool(o, "children", 1);
	t->icase = proto_bool(o, "icase", 0);
	t->period_ns = (uint64_t)proto_num(o, "interval_us", 10000) * 1000;
	t->no_inline = proto_bool(o, "no_inline", 0);
	snprintf(t->unwind, sizeof(t->unwind), "%s", proto_str(o, "unwind", "fp"));
	if (proto_str(o, "when", NULL)) {
		t->when_text = strdup(proto_str(o, "when", ""));
		t->when_from_file = proto_bool(o, "when_from_file", 0);
		if (!t->when_text ||
		    pat_parse(t->when_text, (t->icase ? PAT_ICASE : 0) |
						    (t->when_from_file ? PAT_FROM_FILE : 0),
			      &t->when, NULL))
			goto bad;
	}
	if (target_set_criticals(t, cJSON_GetObjectItemCaseSensitive(o, "critical"), &err))
		goto bad;
	t->state = proto_num(o, "state", TARGET_STOPPED);
	/* sampling does not survive a restart: a running target is stopped where it was */
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)
		t->state = TARGET_STOPPED;
	t->elapsed_saved = proto_num(o, "elapsed_s", 0);
	t->start_wall = proto_num(o, "start_wall", 0);
	t->root_exited = proto_bool(o, "root_exited", 0);
	t->exit_status = proto_num(o, "wait_status", 0);
	t->seen_samples = proto_num(o, "seen", 0);
	t->lost.lost_counts_full = proto_num(o, "lost_counts_full", 0);
	t->lost.lost_offcpu_full = proto_num(o, "lost_offcpu_full", 0);
	t->lost_oom = proto_num(o, "lost_oom", 0);
	t->lost_memory = proto_num(o, "lost_memory", 0);
	t->lost.lost_ring_full = proto_num(o, "lost_ring_full", 0);
	t->lost.denied = proto_num(o, "denied", 0);
	t->handed_over = proto_num(o, "handed_over", 0);

	locs = load_locs(s, cJSON_GetObjectItemCaseSensitive(o, "locs"), &nlocs);
	if (!locs)
		goto bad;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, "stacks")) {
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(it, "l"), *x;
		uint32_t n = cJSON_GetArraySize(l), j = 0, nu = proto_num(it, "nu", 0);

		if (nu > n || agg_stack_size(n) > cap) {
			if (nu > n)
				goto bad;
			free(st);
			cap = agg_stack_size(n);
			st = malloc(cap);
			if (!st)
				goto bad;
		}
		st->kind = proto_num(it, "k", 0);
		st->pid = proto_num(it, "p", 0);
		st->unwalk = proto_num(it, "u", 0);
		st->flags = (uint32_t)proto_num(it, "f", 0) & (AGG_SF_MARKS_PENDING | AGG_SF_CUT_SHORT);
		st->section = 0;
		if (proto_str(it, "s", NULL) && sym_intern_str(s, proto_str(it, "s", ""), &st->section))
			goto bad;
		st->nuser = nu;
		st->nkern = n - nu;
		cJSON_ArrayForEach(x, l) {
			size_t li = cJSON_IsNumber(x) ? (size_t)x->valuedouble : nlocs;

			if (li >= nlocs)
				goto bad;
			st->locs[j++] = locs[li];
		}
		if (agg_add(t->agg, st, proto_num(it, "c", 0), proto_num(it, "ns", 0)))
			goto bad;
	}
	free(st);
	free(locs);
	cJSON_Delete(o);
	return t;
bad:
	pr_warn("ignoring %s: not a pcmon results file this version can read", path);
	cJSON_Delete(err);
	free(st);
	free(locs);
	target_free(t);
	cJSON_Delete(o);
	return NULL;
}

void store_load_all(const char *dir, struct sym *s, struct target **targets, size_t max,
		    uint32_t *next_id)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[4096];
		struct target *t;
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "target-", 7) || n < 5 || strcmp(de->d_name + n - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		t = load_one(path, s);
		if (!t)
			continue;
		if (t->id >= max || targets[t->id]) {
			target_free(t);
			continue;
		}
		targets[t->id] = t;
		if (t->id >= *next_id)
			*next_id = t->id % (max - 1) + 1;
		pr_info("loaded target %u \"%s\" from %s", t->id, t->name, path);
	}
	closedir(d);
}
