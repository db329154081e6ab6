// SPDX-License-Identifier: GPL-2.0-only
/*
 * store_: results in the state directory, one JSON file per target (target-ID.json).
 *
 * Stacks are saved symbolized (module, address, frame names, line), so they list the same
 * after a restart, when the processes and even their files may be gone.
 *
 * Format 2 (written):
 *   {"format": 2, "id": 3, "name": "...", "comm": "...", "owner": UID, "kind": "pid",
 *    "pid": N, "real": B, "kernel": B, "children": B, "icase": B, "interval_us": N,
 *    ["when": "...",] "when_from_file": B, "no_inline": B, "unwind": "fp|dwarf|auto",
 *    "critical": ["NAME=PATTERN", ...], "state": "running|paused|stopped|exited",
 *    "elapsed_s": X, "start_wall": X, "root_exited": B, "wait_status": N, "seen": N,
 *    "lost_counts_full": N, "lost_offcpu_full": N, "lost_oom": N, "lost_ring_full": N,
 *    ["lost_memory": N, "denied": N, "handed_over": N,]
 *    "locs": [{"m": MODULE, "a": "0x...", "f": [NAME, ...innermost first], ["file": F,]
 *              ["line": N,] ["fl": [[FILE, LINE], ...] each frame's own line]}, ...],
 *    "stacks": [{"k": "oncpu|oncpu_kernel|off_blocked|off_runnable", "p": PID,
 *                ["u": UNWALK_REASON,] ["cs": true,] ["mp": true,] ["s": SECTION,]
 *                "nu": USER_LOCS,
 *                "c": COUNT, "ns": NS, "l": [LOC_INDEX, ...outermost first]}, ...]}
 * Enumerations are names; addresses are hex strings (kernel addresses do not fit a double);
 * other 64-bit values are numbers below 2^53 and decimal strings from 2^53 on.
 *
 * Format 1 (read only) has the same fields with enumerations as numbers (kind, state, k,
 * u) and every number as a JSON number: addresses and nanoseconds above 2^53 were rounded.
 * Fields added during its life (when_from_file, no_inline, unwind, lost_ring_full, u, cs,
 * s) may be missing.
 *
 * The loader checks every field's presence, type and range before it touches anything, so
 * a file is loaded whole or not at all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
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

/* the largest whole number a parsed double is exactly: 2^53 may be 2^53 + 1 rounded */
#define EXACT_MAX ((1ULL << 53) - 1)
#define STORE_MAX_FILE (1LL << 30)	/* bytes: a bigger results file is not one of ours */
#define STORE_MAX_ITEMS (1 << 24)	/* locations, stacks */
#define STORE_MAX_DEPTH 4096		/* user, or kernel, locations of one stack */
#define STORE_MAX_FRAMES 4096		/* frames of one location (its inline chain) */
#define STORE_MAX_NAME 65536		/* a procedure, module or file name */
#define STORE_MAX_PATTERN PROTO_MAX_LINE
#define STORE_MAX_PID 4194304		/* PID_MAX_LIMIT */
#define STORE_MAX_INTERVAL_US 60000000	/* as pcmon start accepts */

static const char *const kind_names[] = { [TARGET_PID] = "pid", [TARGET_CGROUP] = "cgroup",
					  [TARGET_ALL] = "all" };
static const char *const stack_kind_names[PCMON_KIND_MAX] = {
	[PCMON_KIND_ONCPU] = "oncpu",
	[PCMON_KIND_ONCPU_KMODE] = "oncpu_kernel",
	[PCMON_KIND_OFF_BLOCKED] = "off_blocked",
	[PCMON_KIND_OFF_RUNNABLE] = "off_runnable",
};
static const char *const unwind_names[] = { "fp", "dwarf", "auto" };

struct save_state {
	bool failed;		/* the last save of this target failed */
	unsigned failures;	/* ... so many times in a row */
	char err[320];
};

struct store {
	char *dir;
	uint64_t saves, failures;
	char last_err[400];	/* the last failure, for pcmon status */
	uint64_t last_err_ns;
	double last_err_wall;
	struct save_state ids[PCMON_MAX_TARGETS];
};

/* ---- names in the state directory */

/* The id of "target-ID.json" followed by @suffix, or 0. */
static uint32_t name_id(const char *name, const char *suffix)
{
	const char *p = name + 7;
	uint32_t id = 0;

	if (strncmp(name, "target-", 7) || *p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		id = id * 10 + (*p - '0');
		if (id >= PCMON_MAX_TARGETS)
			return 0;
	}
	return strncmp(p, ".json", 5) || strcmp(p + 5, suffix) ? 0 : id;
}

static int path_of(char *buf, size_t len, const char *dir, uint32_t id, const char *suffix)
{
	int n = snprintf(buf, len, "%s/target-%u.json%s", dir, id, suffix);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- the lifecycle */

static void note_error(struct store *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note_error(struct store *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->last_err, sizeof(st->last_err), fmt, ap);
	va_end(ap);
	st->last_err_ns = now_ns();
	st->last_err_wall = wall_time();
}

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		r = -errno;
	close(fd);
	return r;
}

int store_open(const char *dir, struct store **out)
{
	struct store *st = calloc(1, sizeof(*st));

	*out = NULL;
	if (!st || !(st->dir = strdup(dir))) {
		free(st);
		return -ENOMEM;
	}
	if (!mkdir(dir, 0750)) {
		char *parent = strdup(dir), *slash = parent ? strrchr(parent, '/') : NULL;

		if (slash) {
			*slash = '\0';
			sync_dir(slash == parent ? "/" : parent);
		}
		free(parent);
	} else if (errno != EEXIST) {
		note_error(st, "cannot create the state directory %s: %s", dir, strerror(errno));
		pr_warn("%s", st->last_err);
	}
	*out = st;
	return 0;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	free(st->dir);
	free(st);
}

/* ---- writing */

/* Numbers things in first-use order: sym id -> index in the file's table, -1 unset. */
struct idmap {
	int64_t *idx;
	size_t cap;
	uint32_t n;
	cJSON *arr;
};

struct writer {
	const struct sym *s;
	bool oom;		/* a field could not be added: the text must not be used */
	struct idmap procs, locs;
};

static cJSON *chk(struct writer *w, cJSON *x)
{
	if (!x)
		w->oom = true;
	return x;
}

static void put_str(struct writer *w, cJSON *o, const char *k, const char *v)
{
	chk(w, cJSON_AddStringToObject(o, k, v));
}

static void put_bool(struct writer *w, cJSON *o, const char *k, bool v)
{
	chk(w, cJSON_AddBoolToObject(o, k, v));
}

static void put_num(struct writer *w, cJSON *o, const char *k, double v)
{
	chk(w, cJSON_AddNumberToObject(o, k, v));
}

/* Exact: a number below 2^53, a decimal string from there on. */
static void put_u64(struct writer *w, cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	if (v <= EXACT_MAX) {
		put_num(w, o, k, (double)v);
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	put_str(w, o, k, buf);
}

static void push(struct writer *w, cJSON *arr, cJSON *x)
{
	if (!chk(w, x) || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		w->oom = true;
	}
}

/* @id's index in @m; a new entry (*o, to fill) is appended to m->arr on first use. */
static int64_t idmap_get(struct writer *w, struct idmap *m, uint32_t id, cJSON **o)
{
	*o = NULL;
	if (id >= m->cap) {
		size_t old = m->cap;

		if (GROW(m->idx, m->cap, (size_t)id + 1)) {
			w->oom = true;
			return -1;
		}
		for (size_t i = old; i < m->cap; i++)
			m->idx[i] = -1;
	}
	if (m->idx[id] >= 0)
		return m->idx[id];
	*o = cJSON_CreateObject();
	push(w, m->arr, *o);
	if (w->oom) {
		*o = NULL; /* freed, or the text is lost anyway */
		return -1;
	}
	return m->idx[id] = m->n++;
}

/* The index of procedure @proc in "procs". */
static int64_t proc_index(struct writer *w, uint32_t proc)
{
	const struct sym_procinfo *pi = sym_proc(w->s, proc);
	cJSON *o;
	int64_t x;

	if (!pi) {
		w->oom = true; /* cannot be: every frame is a procedure */
		return -1;
	}
	x = idmap_get(w, &w->procs, proc, &o);
	if (o) {
		put_str(w, o, "m", sym_str(w->s, pi->module));
		put_str(w, o, "n", sym_str(w->s, pi->name));
		if (pi->file)
			put_str(w, o, "file", sym_str(w->s, pi->file));
		if (pi->line)
			put_num(w, o, "line", pi->line);
	}
	return w->oom ? -1 : x;
}

/* The index of location @loc in "locs": its address, its frames as procedure indices. */
static int64_t loc_index(struct writer *w, uint32_t loc)
{
	const struct sym_loc *l = sym_loc(w->s, loc);
	const uint32_t *fr;
	char addr[24];
	cJSON *o, *f;
	int64_t x;

	if (!l) {
		w->oom = true; /* cannot be: stacks hold interned locations */
		return -1;
	}
	x = idmap_get(w, &w->locs, loc, &o);
	if (!o)
		return x;
	fr = sym_frames(w->s, l);
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)l->addr);
	put_str(w, o, "a", addr);
	f = chk(w, cJSON_AddArrayToObject(o, "f"));
	for (uint32_t i = 0; f && i < l->nframes; i++) {
		int64_t p = proc_index(w, fr[i]);

		if (p < 0)
			break;
		push(w, f, cJSON_CreateNumber(p));
	}
	if (l->file)
		put_str(w, o, "file", sym_str(w->s, l->file));
	if (l->line)
		put_num(w, o, "line", l->line);
	/* each frame's own line (an inline chain's call sites), when one beyond the innermost */
	{
		const struct sym_line *fl = sym_frame_lines(w->s, l);
		bool more = false;

		for (uint32_t i = 1; i < l->nframes; i++)
			more |= fl[i].file || fl[i].line;
		f = more ? chk(w, cJSON_AddArrayToObject(o, "fl")) : NULL;
		for (uint32_t i = 0; f && i < l->nframes; i++) {
			cJSON *y = cJSON_CreateArray();

			push(w, f, y);
			if (w->oom)
				break;
			push(w, y, cJSON_CreateString(sym_str(w->s, fl[i].file)));
			push(w, y, cJSON_CreateNumber(fl[i].line));
		}
	}
	return w->oom ? -1 : x;
}

static void render_stack(struct writer *w, cJSON *arr, const struct agg_stack *st,
			 uint64_t count, uint64_t ns)
{
	cJSON *e = cJSON_CreateObject(), *l;

	push(w, arr, e);
	if (w->oom)
		return;
	put_str(w, e, "k", st->kind < PCMON_KIND_MAX ? stack_kind_names[st->kind] : "?");
	put_num(w, e, "p", st->pid);
	if (st->unwalk)
		put_str(w, e, "u",
			st->unwalk < AGG_UNWALK_MAX ? agg_unwalk_names[st->unwalk] : "?");
	if (st->flags & AGG_SF_CUT_SHORT)
		put_bool(w, e, "cs", true);
	if (st->flags & AGG_SF_MARKS_PENDING)
		put_bool(w, e, "mp", true);
	if (st->section)
		put_str(w, e, "s", sym_str(w->s, st->section));
	put_num(w, e, "nu", st->nuser);
	put_u64(w, e, "c", count);
	put_u64(w, e, "ns", ns);
	l = chk(w, cJSON_AddArrayToObject(e, "l"));
	for (uint32_t j = 0; l && j < st->nuser + st->nkern; j++) {
		int64_t x = loc_index(w, st->locs[j]);

		if (x < 0) {
			w->oom = true;
			return;
		}
		push(w, l, cJSON_CreateNumber(x));
	}
}

char *store_render(const struct sym *s, const struct target *t)
{
	struct writer w = { .s = s };
	cJSON *o = cJSON_CreateObject(), *arr;
	char *text = NULL;

	if (!o)
		return NULL;
	put_num(&w, o, "format", STORE_FORMAT);
	put_str(&w, o, "written_by", "pcmond " PCMON_VERSION);
	put_num(&w, o, "id", t->id);
	put_str(&w, o, "name", t->name);
	put_str(&w, o, "comm", t->comm);
	put_num(&w, o, "owner", t->owner);
	put_str(&w, o, "kind",
		(unsigned)t->kind < ARRAY_SIZE(kind_names) ? kind_names[t->kind] : "?");
	put_num(&w, o, "pid", t->pid);
	put_bool(&w, o, "real", t->real);
	put_bool(&w, o, "kernel", t->kernel);
	put_bool(&w, o, "children", t->children);
	put_bool(&w, o, "icase", t->icase);
	put_num(&w, o, "interval_us", (double)(t->period_ns / 1000));
	if (t->when_text)
		put_str(&w, o, "when", t->when_text);
	put_bool(&w, o, "when_from_file", t->when_from_file);
	put_bool(&w, o, "no_inline", t->no_inline);
	put_str(&w, o, "unwind", t->unwind[0] ? t->unwind : "fp");
	arr = chk(&w, cJSON_AddArrayToObject(o, "critical"));
	for (size_t i = 0; arr && i < t->ncrit; i++) {
		char *spec;

		if (asprintf(&spec, "%s=%s", t->crit[i].name, t->crit[i].text) < 0) {
			w.oom = true;
			break;
		}
		push(&w, arr, cJSON_CreateString(spec));
		free(spec);
	}
	put_str(&w, o, "state", target_state_name(t->state));
	put_num(&w, o, "elapsed_s", target_elapsed(t));
	put_num(&w, o, "start_wall", t->start_wall);
	put_bool(&w, o, "root_exited", t->root_exited);
	put_num(&w, o, "wait_status", t->exit_status);
	put_u64(&w, o, "seen", t->seen_samples);
	put_u64(&w, o, "lost_counts_full", t->lost.lost_counts_full);
	put_u64(&w, o, "lost_offcpu_full", t->lost.lost_offcpu_full);
	put_u64(&w, o, "lost_oom", t->lost_oom);
	put_u64(&w, o, "lost_ring_full", t->lost.lost_ring_full);
	put_u64(&w, o, "lost_memory", t->lost_memory);
	put_u64(&w, o, "denied", t->lost.denied);
	put_u64(&w, o, "handed_over", t->handed_over);

	w.procs.arr = chk(&w, cJSON_AddArrayToObject(o, "procs"));
	w.locs.arr = chk(&w, cJSON_AddArrayToObject(o, "locs"));
	arr = chk(&w, cJSON_AddArrayToObject(o, "stacks"));
	for (size_t i = 0; !w.oom && i < agg_count(t->agg); i++) {
		uint64_t count, ns;
		const struct agg_stack *st = agg_get(t->agg, i, &count, &ns);

		render_stack(&w, arr, st, count, ns);
	}
	if (!w.oom)
		text = cJSON_PrintUnformatted(o);
	free(w.procs.idx);
	free(w.locs.idx);
	cJSON_Delete(o);
	return text;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/*
 * Replace DIR/target-ID.json by @text: write a temporary file, fsync it, rename it over the
 * old one, fsync the directory. A failure removes the temporary file and leaves the old one.
 */
static int write_replace(const char *dir, uint32_t id, const char *text, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, r;

	if (path_of(path, sizeof(path), dir, id, "") ||
	    path_of(tmp, sizeof(tmp), dir, id, ".tmp")) {
		snprintf(err, errlen, "state directory path too long: %.200s", dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0750) && errno != EEXIST) { /* it was removed under us */
		r = -errno;
		snprintf(err, errlen, "cannot create the state directory %.200s: %s", dir,
			 strerror(-r));
		return r;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create %.200s: %s", tmp, strerror(-r));
		return r;
	}
	r = write_all(fd, text, strlen(text));
	if (!r && fsync(fd))
		r = -errno;
	if (close(fd) && !r)
		r = -errno;
	if (r) {
		snprintf(err, errlen, "cannot write %.200s: %s", tmp, strerror(-r));
		goto fail;
	}
	if (rename(tmp, path)) {
		r = -errno;
		snprintf(err, errlen, "cannot rename %.200s to %s: %s", tmp, basename_of(path),
			 strerror(-r));
		goto fail;
	}
	/* the new file is whole either way; until this succeeds a crash may bring back the old */
	r = sync_dir(dir);
	if (r)
		snprintf(err, errlen, "cannot sync the state directory %.200s: %s", dir,
			 strerror(-r));
	return r;
fail:
	unlink(tmp);
	return r;
}

int store_save(struct store *st, const struct sym *s, const struct target *t)
{
	struct save_state *ss;
	char err[sizeof(ss->err)] = "";
	char *text;
	int r;

	if (!st || !t->id || t->id >= PCMON_MAX_TARGETS)
		return 0;
	ss = &st->ids[t->id];
	text = store_render(s, t);
	if (!text) {
		r = -ENOMEM;
		snprintf(err, sizeof(err), "out of memory while writing the results");
	} else {
		r = write_replace(st->dir, t->id, text, err, sizeof(err));
	}
	free(text);
	if (!r) {
		st->saves++;
		if (ss->failed)
			pr_info("saved target %u after %u failed attempt(s)", t->id, ss->failures);
		*ss = (struct save_state){ 0 };
		return 0;
	}
	st->failures++;
	/* once per new error: a full disk is retried every few seconds */
	if (!ss->failed || strcmp(ss->err, err))
		pr_warn("cannot save target %u \"%s\": %s (will retry)", t->id, t->name, err);
	else
		pr_debug("cannot save target %u: %s (still)", t->id, err);
	ss->failed = true;
	ss->failures++;
	snprintf(ss->err, sizeof(ss->err), "%s", err);
	note_error(st, "target %u: %s", t->id, err);
	return r;
}

int store_remove(struct store *st, uint32_t id)
{
	char path[PATH_MAX];
	int r;

	if (!st || !id || id >= PCMON_MAX_TARGETS)
		return 0;
	st->ids[id] = (struct save_state){ 0 };
	if (path_of(path, sizeof(path), st->dir, id, ""))
		return -ENAMETOOLONG;
	if (unlink(path))
		r = errno == ENOENT ? 0 : -errno;
	else
		r = sync_dir(st->dir);
	if (r) {
		note_error(st, "target %u: cannot remove %s: %s (it will be back after a restart)",
			   id, path, strerror(-r));
		pr_warn("%s", st->last_err);
	}
	return r;
}

/* ---- reports */

void store_target_json(const struct store *st, uint32_t id, cJSON *o)
{
	if (!st || !id || id >= PCMON_MAX_TARGETS)
		return;
	cJSON_AddBoolToObject(o, "saved", !st->ids[id].failed);
	if (st->ids[id].failed)
		cJSON_AddStringToObject(o, "save_error", st->ids[id].err);
}

void store_status_json(const struct store *st, cJSON *o)
{
	cJSON *x;
	int unsaved = 0;

	if (!st)
		return;
	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		unsaved += st->ids[i].failed;
	x = cJSON_AddObjectToObject(o, "store");
	if (!x)
		return;
	cJSON_AddStringToObject(x, "dir", st->dir);
	cJSON_AddNumberToObject(x, "saves", st->saves);
	cJSON_AddNumberToObject(x, "save_failures", st->failures);
	cJSON_AddNumberToObject(x, "unsaved_targets", unsaved);
	if (st->last_err[0]) {
		cJSON_AddStringToObject(x, "last_error", st->last_err);
		cJSON_AddNumberToObject(x, "last_error_age_s", (now_ns() - st->last_err_ns) / 1e9);
		cJSON_AddNumberToObject(x, "last_error_wall", st->last_err_wall);
	}
}

/* ---- reading: every field checked before anything is loaded */

struct rd {
	int format;
	char at[40];		/* the element being read, "stacks[12]." */
	char *why;
	size_t whylen;
};

/* Which files must have a field. */
enum need {
	OPTIONAL,
	ALWAYS,		/* in every format */
	SINCE2,		/* added during format 1's life: required from format 2 on */
};

static int bad(struct rd *rd, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct rd *rd, const char *field, const char *fmt, ...)
{
	int n = snprintf(rd->why, rd->whylen, "%s%s: ", rd->at, field);
	va_list ap;

	if (n >= 0 && (size_t)n < rd->whylen) {
		va_start(ap, fmt);
		vsnprintf(rd->why + n, rd->whylen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *type_name(const cJSON *x)
{
	return cJSON_IsNumber(x)   ? "a number"
	       : cJSON_IsString(x) ? "a string"
	       : cJSON_IsBool(x)   ? "a boolean"
	       : cJSON_IsNull(x)   ? "null"
	       : cJSON_IsArray(x)  ? "an array"
	       : cJSON_IsObject(x) ? "an object"
				   : "invalid";
}

/* The field, or NULL when it may be and is absent (then 0 is returned too). */
static int field(struct rd *rd, const cJSON *o, const char *name, enum need need, const cJSON **x)
{
	*x = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!*x && (need == ALWAYS || (need == SINCE2 && rd->format >= 2)))
		return bad(rd, name, "missing");
	return 0;
}

static int wrong_type(struct rd *rd, const char *name, const cJSON *x, const char *want)
{
	return bad(rd, name, "%s where %s belongs", type_name(x), want);
}

static int get_bool(struct rd *rd, const cJSON *o, const char *name, enum need need, bool *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsBool(x))
		return wrong_type(rd, name, x, "true or false");
	*v = cJSON_IsTrue(x);
	return 0;
}

static int get_str(struct rd *rd, const cJSON *o, const char *name, enum need need, size_t max,
		   const char **v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsString(x) || !x->valuestring)
		return wrong_type(rd, name, x, "a string");
	if (strnlen(x->valuestring, max + 1) > max)
		return bad(rd, name, "longer than %zu bytes", max);
	*v = x->valuestring;
	return 0;
}

/* A whole number, in [0, max]. @loose: format 1 wrote it as a double, maybe rounded. */
static int num_u64(struct rd *rd, const char *name, const cJSON *x, uint64_t max, bool loose,
		   uint64_t *v)
{
	double d = x->valuedouble;

	if (!(d >= 0))
		return bad(rd, name, "%g is negative", d);
	if (d != floor(d))
		return bad(rd, name, "%g is not a whole number", d);
	if (d >= 18446744073709551616.0)
		return bad(rd, name, "%.17g does not fit 64 bits", d);
	if (d > (double)EXACT_MAX && !(loose && rd->format == 1))
		return bad(rd, name, "%.17g is too large to be exact (2^53 or more)", d);
	*v = (uint64_t)d;
	if (*v > max)
		return bad(rd, name, "%llu is more than %llu", (unsigned long long)*v,
			   (unsigned long long)max);
	return 0;
}

/* Format 2: a 64-bit value from 2^53 on, as decimal digits. */
static int str_u64(struct rd *rd, const char *name, const char *s, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	const char *p = s;

	if (!*p)
		return bad(rd, name, "empty string where a number belongs");
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return bad(rd, name, "\"%.24s\" is not a whole number", s);
		if (n > (UINT64_MAX - (*p - '0')) / 10)
			return bad(rd, name, "\"%.24s\" does not fit 64 bits", s);
		n = n * 10 + (*p - '0');
	}
	if (n > max)
		return bad(rd, name, "%llu is more than %llu", (unsigned long long)n,
			   (unsigned long long)max);
	*v = n;
	return 0;
}

static int get_u64x(struct rd *rd, const cJSON *o, const char *name, enum need need,
		    uint64_t max, bool loose, uint64_t *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (cJSON_IsNumber(x))
		return num_u64(rd, name, x, max, loose, v);
	if (cJSON_IsString(x) && x->valuestring && rd->format >= 2)
		return str_u64(rd, name, x->valuestring, max, v);
	return wrong_type(rd, name, x, "a whole number");
}

/* A count or a sum of nanoseconds: a whole number; format 2 writes big ones as strings. */
static int get_u64(struct rd *rd, const cJSON *o, const char *name, enum need need, uint64_t *v)
{
	return get_u64x(rd, o, name, need, UINT64_MAX, false, v);
}

static int get_u32(struct rd *rd, const cJSON *o, const char *name, enum need need, uint32_t max,
		   uint32_t *v)
{
	const cJSON *x;
	uint64_t n;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsNumber(x))
		return wrong_type(rd, name, x, "a whole number");
	r = num_u64(rd, name, x, max, false, &n);
	if (!r)
		*v = (uint32_t)n;
	return r;
}

static int get_double(struct rd *rd, const cJSON *o, const char *name, enum need need, double lo,
		      double hi, double *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsNumber(x))
		return wrong_type(rd, name, x, "a number");
	if (!(x->valuedouble >= lo && x->valuedouble <= hi))
		return bad(rd, name, "%g is not in [%g, %g]", x->valuedouble, lo, hi);
	*v = x->valuedouble;
	return 0;
}

/* An enumeration: its name (format 2), its number (format 1). Names may have holes (NULL). */
static int get_enum(struct rd *rd, const cJSON *o, const char *name, enum need need,
		    const char *const *names, uint32_t n, uint32_t *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (rd->format == 1) {
		uint64_t u;

		if (!cJSON_IsNumber(x))
			return wrong_type(rd, name, x, "a number");
		r = num_u64(rd, name, x, n - 1, false, &u);
		if (!r)
			*v = (uint32_t)u;
		return r;
	}
	if (!cJSON_IsString(x) || !x->valuestring)
		return wrong_type(rd, name, x, "a name");
	for (uint32_t i = 0; i < n; i++) {
		if (names[i] && !strcmp(names[i], x->valuestring)) {
			*v = i;
			return 0;
		}
	}
	return bad(rd, name, "unknown value \"%.40s\"", x->valuestring);
}

/* A code address: "0x..." (format 2), a number (format 1, rounded above 2^53). */
static int get_addr(struct rd *rd, const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *x;
	const char *p;
	uint64_t a = 0;
	int r = field(rd, o, name, ALWAYS, &x), n = 0;

	if (r)
		return r;
	if (rd->format == 1) {
		if (!cJSON_IsNumber(x))
			return wrong_type(rd, name, x, "a number");
		return num_u64(rd, name, x, UINT64_MAX, true, v);
	}
	if (!cJSON_IsString(x) || !x->valuestring)
		return wrong_type(rd, name, x, "a hex string");
	p = x->valuestring;
	if (strncmp(p, "0x", 2))
		return bad(rd, name, "\"%.24s\" does not start with 0x", p);
	for (p += 2; *p; p++, n++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;

		if (d < 0 || n >= 16)
			return bad(rd, name, "\"%.24s\" is not a 64-bit hex number",
				   x->valuestring);
		a = a << 4 | (uint64_t)d;
	}
	if (!n)
		return bad(rd, name, "\"0x\" has no digits");
	*v = a;
	return 0;
}

static int get_array(struct rd *rd, const cJSON *o, const char *name, enum need need, int max,
		     const cJSON **arr, int *n)
{
	int r = field(rd, o, name, need, arr);

	*n = 0;
	if (r || !*arr)
		return r;
	if (!cJSON_IsArray(*arr))
		return wrong_type(rd, name, *arr, "an array");
	*n = cJSON_GetArraySize(*arr);
	if (*n > max)
		return bad(rd, name, "%d entries, more than %d", *n, max);
	return 0;
}

/* The settings and totals of a target. */
static int read_head(struct rd *rd, const cJSON *o, uint32_t want, struct target *t)
{
	const char *s = NULL;
	uint32_t u = 0, n = PCMON_MAX_TARGETS - 1;
	const cJSON *arr, *it;
	cJSON *err = NULL;
	int r, i = 0, nc;

	if ((r = get_u32(rd, o, "id", ALWAYS, n, &t->id)))
		return r;
	if (!t->id)
		return bad(rd, "id", "0 is not a target id");
	if (want && t->id != want)
		return bad(rd, "id", "%u, but the file is named for target %u", t->id, want);
	if ((r = get_str(rd, o, "name", ALWAYS, sizeof(t->name) - 1, &s)))
		return r;
	snprintf(t->name, sizeof(t->name), "%s", s);
	str_sanitize(t->name, sizeof(t->name) - 1); /* shown to others: printable */
	if ((r = get_str(rd, o, "comm", ALWAYS, sizeof(t->comm) - 1, &s)))
		return r;
	snprintf(t->comm, sizeof(t->comm), "%s", s);
	if ((r = get_u32(rd, o, "owner", ALWAYS, UINT32_MAX - 1, &u)))
		return r;
	t->owner = u;
	if ((r = get_enum(rd, o, "kind", ALWAYS, kind_names, ARRAY_SIZE(kind_names), &u)))
		return r;
	t->kind = u;
	if ((r = get_u32(rd, o, "pid", ALWAYS, STORE_MAX_PID, &t->pid)) ||
	    (r = get_bool(rd, o, "real", ALWAYS, &t->real)) ||
	    (r = get_bool(rd, o, "kernel", ALWAYS, &t->kernel)) ||
	    (r = get_bool(rd, o, "children", ALWAYS, &t->children)) ||
	    (r = get_bool(rd, o, "icase", ALWAYS, &t->icase)))
		return r;
	if ((r = get_u32(rd, o, "interval_us", ALWAYS, STORE_MAX_INTERVAL_US, &u)))
		return r;
	if (!u)
		return bad(rd, "interval_us", "0 is not an interval");
	t->period_ns = (uint64_t)u * 1000;
	if ((r = get_bool(rd, o, "when_from_file", SINCE2, &t->when_from_file)) ||
	    (r = get_bool(rd, o, "no_inline", SINCE2, &t->no_inline)))
		return r;
	s = "fp";
	if ((r = get_str(rd, o, "unwind", SINCE2, 8, &s)))
		return r;
	for (u = 0; u < ARRAY_SIZE(unwind_names) && strcmp(s, unwind_names[u]); u++)
		;
	if (u == ARRAY_SIZE(unwind_names))
		return bad(rd, "unwind", "unknown method \"%s\"", s);
	snprintf(t->unwind, sizeof(t->unwind), "%s", s);
	t->dwarf = strcmp(s, "fp") != 0;

	s = NULL;
	if ((r = get_str(rd, o, "when", OPTIONAL, STORE_MAX_PATTERN, &s)))
		return r;
	if (s) {
		struct pat_error pe = { 0 };

		t->when_text = strdup(s);
		if (!t->when_text)
			return -ENOMEM;
		r = pat_parse(s,
			      (t->icase ? PAT_ICASE : 0) | (t->when_from_file ? PAT_FROM_FILE : 0),
			      &t->when, &pe);
		if (r == -EINVAL)
			return bad(rd, "when", "column %d: %s", pe.column, pe.msg);
		if (r)
			return r;
	}
	if ((r = get_array(rd, o, "critical", ALWAYS, AGG_MAX_CRIT, &arr, &nc)))
		return r;
	cJSON_ArrayForEach(it, arr) {
		char name[24];

		snprintf(name, sizeof(name), "critical[%d]", i++);
		if (!cJSON_IsString(it) || !it->valuestring)
			return wrong_type(rd, name, it, "a string NAME=PATTERN");
		if (strnlen(it->valuestring, STORE_MAX_PATTERN + 1) > STORE_MAX_PATTERN)
			return bad(rd, name, "longer than %d bytes", STORE_MAX_PATTERN);
	}
	r = target_set_criticals(t, arr, &err);
	if (r == -EINVAL)
		r = bad(rd, "critical", "%s", proto_str(err, "error", "not NAME=PATTERN"));
	cJSON_Delete(err);
	return r;
}

static int read_state(struct rd *rd, const cJSON *o, struct target *t)
{
	const char *states[4];
	uint64_t lost[4] = { 0 };
	uint32_t u = 0;
	int r;

	for (u = 0; u < ARRAY_SIZE(states); u++)
		states[u] = target_state_name(u);
	if ((r = get_enum(rd, o, "state", ALWAYS, states, ARRAY_SIZE(states), &u)))
		return r;
	/* sampling does not survive a restart: a running target is stopped where it was */
	t->state = u == TARGET_RUNNING || u == TARGET_PAUSED ? TARGET_STOPPED : u;
	if ((r = get_double(rd, o, "elapsed_s", ALWAYS, 0, 1e10, &t->elapsed_saved)) ||
	    (r = get_double(rd, o, "start_wall", ALWAYS, 0, 1e11, &t->start_wall)) ||
	    (r = get_bool(rd, o, "root_exited", ALWAYS, &t->root_exited)))
		return r;
	if ((r = get_u32(rd, o, "wait_status", ALWAYS, 0xffff, &u)))
		return r;
	t->exit_status = (int)u;
	if ((r = get_u64(rd, o, "seen", ALWAYS, &t->seen_samples)) ||
	    (r = get_u64(rd, o, "lost_counts_full", ALWAYS, &lost[0])) ||
	    (r = get_u64(rd, o, "lost_offcpu_full", ALWAYS, &lost[1])) ||
	    (r = get_u64(rd, o, "lost_oom", ALWAYS, &t->lost_oom)) ||
	    (r = get_u64(rd, o, "lost_ring_full", SINCE2, &lost[2])) ||
	    (r = get_u64(rd, o, "lost_memory", OPTIONAL, &t->lost_memory)) ||
	    (r = get_u64(rd, o, "denied", OPTIONAL, &lost[3])) ||
	    (r = get_u64(rd, o, "handed_over", OPTIONAL, &t->handed_over)))
		return r;
	t->lost.lost_counts_full = lost[0];
	t->lost.lost_offcpu_full = lost[1];
	t->lost.lost_ring_full = lost[2];
	t->lost.denied = lost[3];
	return 0;
}

/* A procedure as the file gives it (format 2; strings point into the parsed document). */
struct rproc {
	const char *m, *n, *file;
	uint32_t line;
};

/* A location as the file gives it: format 1 names its frames, format 2 indexes "procs". */
struct rloc {
	const char *m, *file;
	const cJSON *f, *fl;	/* fl: each frame's [file, line], or NULL */
	uint64_t a;
	uint32_t line;
};

static int not_object(struct rd *rd, const char *arr, int i, const cJSON *x)
{
	char name[32];

	rd->at[0] = '\0';
	snprintf(name, sizeof(name), "%s[%d]", arr, i);
	return wrong_type(rd, name, x, "an object");
}

static int read_proc(struct rd *rd, const cJSON *it, int i, struct rproc *p)
{
	int r;

	if (!cJSON_IsObject(it))
		return not_object(rd, "procs", i, it);
	snprintf(rd->at, sizeof(rd->at), "procs[%d].", i);
	if ((r = get_str(rd, it, "m", ALWAYS, STORE_MAX_NAME, &p->m)) ||
	    (r = get_str(rd, it, "n", ALWAYS, STORE_MAX_NAME, &p->n)) ||
	    (r = get_str(rd, it, "file", OPTIONAL, STORE_MAX_NAME, &p->file)) ||
	    (r = get_u32(rd, it, "line", OPTIONAL, UINT32_MAX, &p->line)))
		return r;
	return 0;
}

static int read_loc(struct rd *rd, const cJSON *it, int i, const struct rproc *procs, int nprocs,
		    struct rloc *l)
{
	const cJSON *x;
	int r, j = 0, nf;

	if (!cJSON_IsObject(it))
		return not_object(rd, "locs", i, it);
	snprintf(rd->at, sizeof(rd->at), "locs[%d].", i);
	if ((rd->format == 1 && (r = get_str(rd, it, "m", ALWAYS, STORE_MAX_NAME, &l->m))) ||
	    (r = get_addr(rd, it, "a", &l->a)) ||
	    (r = get_array(rd, it, "f", ALWAYS, STORE_MAX_FRAMES, &l->f, &nf)) ||
	    (r = get_str(rd, it, "file", OPTIONAL, STORE_MAX_NAME, &l->file)) ||
	    (r = get_u32(rd, it, "line", OPTIONAL, UINT32_MAX, &l->line)))
		return r;
	if (!nf)
		return bad(rd, "f", "a location has at least one frame");
	if ((r = get_array(rd, it, "fl", OPTIONAL, STORE_MAX_FRAMES, &l->fl, &j)))
		return r;
	if (l->fl && j != nf)
		return bad(rd, "fl", "%d lines for %d frames", j, nf);
	for (int k = 0; l->fl && k < j; k++) {
		const cJSON *y = cJSON_GetArrayItem(l->fl, k), *file, *line;

		file = cJSON_GetArrayItem(y, 0);
		line = cJSON_GetArrayItem(y, 1);
		if (!cJSON_IsArray(y) || cJSON_GetArraySize(y) != 2 || !cJSON_IsString(file) ||
		    strnlen(file->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME ||
		    !cJSON_IsNumber(line) || line->valuedouble < 0 || line->valuedouble > UINT32_MAX ||
		    line->valuedouble != (uint32_t)line->valuedouble)
			return bad(rd, "fl", "each frame's line is [FILE, LINE]");
	}
	j = 0;
	cJSON_ArrayForEach(x, l->f) {
		char name[24];
		uint64_t p;

		snprintf(name, sizeof(name), "f[%d]", j++);
		if (rd->format == 1) {
			if (!cJSON_IsString(x) || !x->valuestring)
				return wrong_type(rd, name, x, "a procedure name");
			if (strnlen(x->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME)
				return bad(rd, name, "longer than %d bytes", STORE_MAX_NAME);
			continue;
		}
		if (!cJSON_IsNumber(x))
			return wrong_type(rd, name, x, "a procedure index");
		if (!nprocs)
			return bad(rd, name, "there are no procedures");
		if ((r = num_u64(rd, name, x, nprocs - 1, false, &p)))
			return r;
		/* a location is in one object: its inline chain too */
		if (!l->m)
			l->m = procs[p].m;
		else if (strcmp(l->m, procs[p].m))
			return bad(rd, name,
				   "procedure of module \"%.64s\" in a location of \"%.64s\"",
				   procs[p].m, l->m);
	}
	return 0;
}

/* A stack as the file gives it: locations are indices into "locs". */
struct rstack {
	uint32_t kind, pid, unwalk, nuser, n;
	bool cut_short, marks_pending;
	const char *section;
	uint64_t count, ns;
	const cJSON *l;
};

static int read_stack(struct rd *rd, const cJSON *it, int i, int nlocs, struct rstack *st)
{
	const char *unwalk_names[AGG_UNWALK_MAX] = { NULL }; /* walkable: no "u" */
	const cJSON *x;
	int r, n, j = 0;

	*st = (struct rstack){ 0 };
	if (!cJSON_IsObject(it))
		return not_object(rd, "stacks", i, it);
	snprintf(rd->at, sizeof(rd->at), "stacks[%d].", i);
	for (int k = 1; k < AGG_UNWALK_MAX; k++)
		unwalk_names[k] = agg_unwalk_names[k];
	if ((r = get_enum(rd, it, "k", ALWAYS, stack_kind_names, PCMON_KIND_MAX, &st->kind)) ||
	    (r = get_u32(rd, it, "p", ALWAYS, STORE_MAX_PID, &st->pid)) ||
	    (r = get_enum(rd, it, "u", OPTIONAL, unwalk_names, AGG_UNWALK_MAX, &st->unwalk)) ||
	    (r = get_bool(rd, it, "cs", OPTIONAL, &st->cut_short)) ||
	    (r = get_bool(rd, it, "mp", OPTIONAL, &st->marks_pending)) ||
	    (r = get_str(rd, it, "s", OPTIONAL, 255, &st->section)) ||
	    (r = get_array(rd, it, "l", ALWAYS, 2 * STORE_MAX_DEPTH, &st->l, &n)) ||
	    (r = get_u32(rd, it, "nu", ALWAYS, MIN(n, STORE_MAX_DEPTH), &st->nuser)) ||
	    (r = get_u64(rd, it, "c", ALWAYS, &st->count)) ||
	    (r = get_u64x(rd, it, "ns", ALWAYS, UINT64_MAX, true, &st->ns)))
		return r;
	if (st->section && !st->section[0])
		return bad(rd, "s", "empty section name");
	if (n - st->nuser > STORE_MAX_DEPTH)
		return bad(rd, "l", "%u kernel locations, more than %d", n - st->nuser,
			   STORE_MAX_DEPTH);
	st->n = n;
	cJSON_ArrayForEach(x, st->l) {
		char name[24];
		uint64_t li;

		snprintf(name, sizeof(name), "l[%d]", j++);
		if (!cJSON_IsNumber(x))
			return wrong_type(rd, name, x, "a location index");
		if (!nlocs)
			return bad(rd, name, "there are no locations");
		if ((r = num_u64(rd, name, x, nlocs - 1, false, &li)))
			return r;
	}
	return 0;
}

/* Intern the file's procedures and locations into @s: ids[i] for "locs"[i]. Only -ENOMEM. */
static int commit_locs(struct rd *rd, struct sym *s, const struct rproc *procs, int nprocs,
		       const struct rloc *locs, int nlocs, uint32_t *ids)
{
	const char **names = malloc(STORE_MAX_FRAMES * sizeof(*names));
	const char **files = malloc(STORE_MAX_FRAMES * sizeof(*files));
	uint32_t *lines = malloc(STORE_MAX_FRAMES * sizeof(*lines));
	uint32_t id;
	int r = names && files && lines ? 0 : -ENOMEM;

	/* first, so that the locations' frames find them with their file and line */
	for (int i = 0; !r && i < nprocs; i++)
		r = sym_intern_proc(s, procs[i].m, procs[i].n[0] ? procs[i].n : NULL, procs[i].file,
				    procs[i].line, &id);
	for (int i = 0; !r && i < nlocs; i++) {
		const cJSON *x;
		uint32_t j = 0;

		cJSON_ArrayForEach(x, locs[i].f) {
			const char *n = rd->format == 1 ? x->valuestring
							: procs[(size_t)x->valuedouble].n;

			/* each frame's own line; files without them have the innermost's */
			const cJSON *y = locs[i].fl ? cJSON_GetArrayItem(locs[i].fl, j) : NULL;

			files[j] = y ? cJSON_GetArrayItem(y, 0)->valuestring : j ? NULL : locs[i].file;
			lines[j] = y ? (uint32_t)cJSON_GetArrayItem(y, 1)->valuedouble
				     : j ? 0 : locs[i].line;
			if (files[j] && !files[j][0])
				files[j] = NULL;
			names[j++] = n[0] ? n : NULL;
		}
		r = sym_intern_loc(s, locs[i].m, locs[i].a, names, files, lines, j, &ids[i]);
	}
	free(names);
	free(files);
	free(lines);
	return r < 0 ? -ENOMEM : 0;
}

int store_parse(const char *text, size_t len, uint32_t id, struct sym *s, struct target **out,
		char *why, size_t whylen)
{
	struct rd rd = { .why = why, .whylen = whylen };
	struct rstack rs;
	struct target *t = NULL;
	struct rloc *locs = NULL;
	struct rproc *procs = NULL;
	struct agg_stack *st = NULL;
	uint32_t *ids = NULL, fmt;
	uint64_t csum = 0, nssum = 0;
	const cJSON *arr, *it, *x;
	const char *end = NULL;
	cJSON *o;
	int r, nprocs = 0, nlocs = 0, nstacks = 0, i;

	*out = NULL;
	if (whylen)
		why[0] = '\0';
	o = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!o)
		return bad(&rd, "file", "not JSON (at byte %td of %zu)", end ? end - text : 0, len);
	while (end && end < text + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (end != text + len) {
		r = bad(&rd, "file", "bytes after the JSON object (at byte %td of %zu)", end - text,
			len);
		goto out;
	}
	if (!cJSON_IsObject(o)) {
		r = wrong_type(&rd, "file", o, "an object");
		goto out;
	}
	if ((r = get_u32(&rd, o, "format", ALWAYS, UINT32_MAX, &fmt)))
		goto out;
	if (fmt < 1 || fmt > STORE_FORMAT) {
		r = bad(&rd, "format", "%u: this pcmond reads formats 1 to %d%s", fmt, STORE_FORMAT,
			fmt > STORE_FORMAT ? " (written by a newer pcmond?)" : "");
		goto out;
	}
	rd.format = fmt;
	r = -ENOMEM;
	t = target_new(0);
	if (!t)
		goto out;
	if ((r = read_head(&rd, o, id, t)) || (r = read_state(&rd, o, t)))
		goto out;

	if (fmt >= 2) {
		if ((r = get_array(&rd, o, "procs", ALWAYS, STORE_MAX_ITEMS, &arr, &nprocs)))
			goto out;
		r = -ENOMEM;
		procs = calloc(nprocs + 1, sizeof(*procs));
		if (!procs)
			goto out;
		i = 0;
		cJSON_ArrayForEach(it, arr) {
			if ((r = read_proc(&rd, it, i, &procs[i])))
				goto out;
			i++;
		}
		rd.at[0] = '\0';
	}
	if ((r = get_array(&rd, o, "locs", ALWAYS, STORE_MAX_ITEMS, &arr, &nlocs)))
		goto out;
	r = -ENOMEM;
	locs = calloc(nlocs + 1, sizeof(*locs));
	ids = calloc(nlocs + 1, sizeof(*ids));
	if (!locs || !ids)
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if ((r = read_loc(&rd, it, i, procs, nprocs, &locs[i])))
			goto out;
		i++;
	}
	rd.at[0] = '\0';
	if ((r = get_array(&rd, o, "stacks", ALWAYS, STORE_MAX_ITEMS, &arr, &nstacks)))
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if ((r = read_stack(&rd, it, i++, nlocs, &rs)))
			goto out;
		/* identical stacks are merged on loading: their sums must not wrap */
		if (__builtin_add_overflow(csum, rs.count, &csum)) {
			r = bad(&rd, "c", "the counts of the stacks add up to more than 64 bits");
			goto out;
		}
		if (__builtin_add_overflow(nssum, rs.ns, &nssum)) {
			r = bad(&rd, "ns", "the times of the stacks add up to more than 64 bits");
			goto out;
		}
	}
	rd.at[0] = '\0';

	/* everything checked: now load */
	r = -ENOMEM;
	st = malloc(agg_stack_size(2 * STORE_MAX_DEPTH));
	if (!st || commit_locs(&rd, s, procs, nprocs, locs, nlocs, ids))
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		uint32_t j = 0;

		if ((r = read_stack(&rd, it, i++, nlocs, &rs)))
			goto out;
		*st = (struct agg_stack){ .kind = rs.kind, .pid = rs.pid, .unwalk = rs.unwalk,
					  .flags = (rs.cut_short ? AGG_SF_CUT_SHORT : 0) |
						   (rs.marks_pending ? AGG_SF_MARKS_PENDING : 0),
					  .nuser = rs.nuser,
					  .nkern = rs.n - rs.nuser };
		if (rs.section && sym_intern_str(s, rs.section, &st->section)) {
			r = -ENOMEM;
			goto out;
		}
		cJSON_ArrayForEach(x, rs.l)
			st->locs[j++] = ids[(size_t)x->valuedouble];
		if ((r = agg_add(t->agg, st, rs.count, rs.ns)))
			goto out;
	}
	*out = t;
	t = NULL;
	r = 0;
out:
	if (r == -ENOMEM && whylen)
		snprintf(why, whylen, "out of memory");
	free(st);
	free(ids);
	free(locs);
	free(procs);
	target_free(t);
	cJSON_Delete(o);
	return r;
}

/* ---- the state directory at start */

static int read_results(int dfd, const char *name, char **text, size_t *len, char *why,
			size_t whylen)
{
	struct stat sb;
	size_t cap;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), r = 0;

	*text = NULL;
	if (fd < 0) {
		r = -errno;
		snprintf(why, whylen, "cannot open: %s", strerror(-r));
		return r;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		r = -EISDIR;
		snprintf(why, whylen, "not a regular file");
		goto out;
	}
	if (sb.st_size > STORE_MAX_FILE) {
		r = -EFBIG;
		snprintf(why, whylen, "%lld bytes, more than a results file can be (%lld)",
			 (long long)sb.st_size, STORE_MAX_FILE);
		goto out;
	}
	cap = sb.st_size + 1;
	*len = 0;
	*text = malloc(cap);
	if (!*text) {
		r = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	while ((n = read(fd, *text + *len, cap - 1 - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(why, whylen, "cannot read: %s", strerror(-r));
			goto out;
		}
		*len += n;
		if (*len == cap - 1)
			break; /* it grew since fstat: what was there is what we read */
	}
	(*text)[*len] = '\0';
out:
	if (r) {
		free(*text);
		*text = NULL;
	}
	close(fd);
	return r;
}

/* Move a file that failed validation out of the way of a new target with its id. */
static void set_aside(int dfd, const char *name, char *kept, size_t len)
{
	for (int i = 0; i < 100; i++) {
		char to[NAME_MAX + 1];

		if (i)
			snprintf(to, sizeof(to), "%s.rejected.%d", name, i);
		else
			snprintf(to, sizeof(to), "%s.rejected", name);
		if (!renameat2(dfd, name, dfd, to, RENAME_NOREPLACE)) {
			snprintf(kept, len, "kept as %s", to);
			return;
		}
		if (errno != EEXIST)
			break;
	}
	snprintf(kept, len, "left in place, cannot rename it: %s", strerror(errno));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* target-ID.json.tmp: a save cut short by a crash; the file it was replacing is whole. */
static void remove_stale(const struct store *st, int dfd, const char *name)
{
	struct stat sb;

	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
		pr_warn("leaving %s/%s: a temporary name, but not a regular file", st->dir, name);
	else if (unlinkat(dfd, name, 0))
		pr_warn("cannot remove the stale temporary file %s/%s: %s", st->dir, name,
			strerror(errno));
	else
		pr_info("removed the stale temporary file %s/%s", st->dir, name);
}

/* One results file: the target, or NULL after one warning. */
static struct target *load_one(const struct store *st, int dfd, const char *name, uint32_t id,
			       struct sym *s)
{
	char why[512] = "", kept[NAME_MAX + 64] = "";
	struct target *t = NULL;
	size_t len = 0;
	char *text;
	int r;

	r = read_results(dfd, name, &text, &len, why, sizeof(why));
	if (!r)
		r = store_parse(text, len, id, s, &t, why, sizeof(why));
	free(text);
	if (!r)
		return t;
	if (r == -EINVAL || r == -EFBIG)
		set_aside(dfd, name, kept, sizeof(kept));
	pr_warn("ignoring %s/%s: %s%s%s", st->dir, name, why, kept[0] ? "; " : "", kept);
	return NULL;
}

void store_load_all(struct store *st, struct sym *s, struct target **targets, size_t max,
		    uint32_t *next_id)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	if (!st)
		return;
	d = opendir(st->dir);
	if (!d) {
		if (errno != ENOENT)
			pr_warn("cannot read the state directory %s: %s", st->dir, strerror(errno));
		return;
	}
	/* names first: the directory changes under readdir as files are set aside */
	while ((de = readdir(d))) {
		if (!name_id(de->d_name, "") && !name_id(de->d_name, ".tmp"))
			continue;
		if (GROW(names, cap, n + 1) || !(names[n] = strdup(de->d_name)))
			break;
		n++;
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = name_id(names[i], "");
		struct target *t;

		if (!id) {
			remove_stale(st, dirfd(d), names[i]);
			continue;
		}
		if (id >= max || targets[id])
			continue;
		t = load_one(st, dirfd(d), names[i], id, s);
		if (!t)
			continue;
		targets[id] = t;
		if (id >= *next_id)
			*next_id = id % (max - 1) + 1;
		pr_info("loaded target %u \"%s\" from %s/%s", id, t->name, st->dir, names[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
}
