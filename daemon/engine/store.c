// SPDX-License-Identifier: GPL-2.0-only
/*
 * store_: results in the state directory, one JSON file per target (target-ID.json).
 *
 * Format 5 (written) is format 4 with the time slices of call counting ("calls") and of the
 * probe-node tables ("tables"); format 4 is format 3 with sampling's (sample_store.c). A
 * section without slices loads as one slice, the target's whole life.
 *
 * Format 3: what is watched and who owns it, then one section per instrument the
 * target carries, written and read by the instrument (inst_ops save/load; sampling's is
 * described in sample_store.c):
 *   {"format": 3, "written_by": "pcmond VERSION", "id": 3, "name": "...", "comm": "...",
 *    "owner": UID, "kind": "pid|cgroup|all", "pid": N, "children": B, ["published": true,]
 *    "state": "running|paused|stopped|exited", "elapsed_s": X, "start_wall": X,
 *    "root_exited": B, "wait_status": N, "handed_over": N,
 *    "sampling": {...}}
 * Enumerations are names; addresses are hex strings (kernel addresses do not fit a double);
 * other 64-bit values are numbers below 2^53 and decimal strings from 2^53 on (stfile.h).
 *
 * Formats 2 and 1 (read only) are the same target fields with sampling's at the top level
 * instead of in a section. Format 1 has enumerations as numbers (kind, state, k, u) and every
 * number as a JSON number: addresses and nanoseconds above 2^53 were rounded. Fields added
 * during its life (when_from_file, no_inline, unwind, lost_ring_full, u, cs, s) may be
 * missing.
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

#include "inst.h"
#include "pcmon_bpf.h"
#include "proto.h"
#include "stfile.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

#define STORE_MAX_FILE (1LL << 30)	/* bytes: a bigger results file is not one of ours */
#define STORE_MAX_PID 4194304		/* PID_MAX_LIMIT */

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

char *store_render(const struct sym *s, const struct target *t)
{
	struct sf_wr w = { 0 };
	cJSON *o = cJSON_CreateObject();
	char *text = NULL;

	if (!o)
		return NULL;
	sf_put_num(&w, o, "format", STORE_FORMAT);
	sf_put_str(&w, o, "written_by", "pcmond " PCMON_VERSION);
	sf_put_num(&w, o, "id", t->id);
	sf_put_str(&w, o, "name", t->name);
	sf_put_str(&w, o, "comm", t->comm);
	sf_put_num(&w, o, "owner", t->owner);
	sf_put_str(&w, o, "kind", target_kind_name(t->kind));
	sf_put_num(&w, o, "pid", t->pid);
	sf_put_bool(&w, o, "children", t->children);
	if (t->published)
		sf_put_bool(&w, o, "published", true);
	sf_put_str(&w, o, "state", target_state_name(t->state));
	sf_put_num(&w, o, "elapsed_s", target_elapsed(t));
	sf_put_num(&w, o, "start_wall", t->start_wall);
	sf_put_bool(&w, o, "root_exited", t->root_exited);
	sf_put_num(&w, o, "wait_status", t->exit_status);
	sf_put_u64(&w, o, "handed_over", t->handed_over);
	for (int i = 0; i < INST_MAX && !w.oom; i++) {
		cJSON *section;

		if (!t->inst[i])
			continue;
		section = sf_chk(&w, cJSON_AddObjectToObject(o, inst_table[i]->name));
		if (section)
			inst_table[i]->save(t, t->inst[i], s, &w, section);
	}
	if (!w.oom)
		text = cJSON_PrintUnformatted(o);
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
 * Replace DIR/target-ID.json by @text: write a temporary file, rename it over the old one.
 * The rename is atomic for every process, so a pcmond killed at any point leaves the old
 * file or the new one, whole. @durable also fsyncs the file before the rename and the
 * directory after it, for a crash of the machine: the periodic saves of a running target
 * skip that (two fsyncs every few seconds were most of an idle pcmond's CPU), its last save
 * does not. A failure removes the temporary file and leaves the old one.
 */
static int write_replace(const char *dir, uint32_t id, const char *text, bool durable,
			 char *err, size_t errlen)
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
	if (!r && durable && fsync(fd))
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
	if (!durable)
		return 0;
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

int store_save(struct store *st, const struct sym *s, const struct target *t, bool durable)
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
		r = write_replace(st->dir, t->id, text, durable, err, sizeof(err));
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

void store_status_json(const struct store *st, uint64_t interval_ns, cJSON *o)
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
	cJSON_AddNumberToObject(x, "interval_s", interval_ns / 1e9);
	cJSON_AddNumberToObject(x, "unsaved_targets", unsaved);
	if (st->last_err[0]) {
		cJSON_AddStringToObject(x, "last_error", st->last_err);
		cJSON_AddNumberToObject(x, "last_error_age_s", (now_ns() - st->last_err_ns) / 1e9);
		cJSON_AddNumberToObject(x, "last_error_wall", st->last_err_wall);
	}
}

/* ---- reading: every field checked before anything is loaded */

/* What is watched and who owns it. */
static int read_head(struct sf_rd *rd, const cJSON *o, uint32_t want, struct target *t)
{
	const char *kinds[] = { [TARGET_PID] = "pid", [TARGET_CGROUP] = "cgroup",
				[TARGET_ALL] = "all" };
	const char *s = NULL;
	uint32_t u = 0, n = PCMON_MAX_TARGETS - 1;
	int r;

	if ((r = sf_get_u32(rd, o, "id", SF_ALWAYS, n, &t->id)))
		return r;
	if (!t->id)
		return sf_bad(rd, "id", "0 is not a target id");
	if (want && t->id != want)
		return sf_bad(rd, "id", "%u, but the file is named for target %u", t->id, want);
	if ((r = sf_get_str(rd, o, "name", SF_ALWAYS, sizeof(t->name) - 1, &s)))
		return r;
	snprintf(t->name, sizeof(t->name), "%s", s);
	str_sanitize(t->name, sizeof(t->name) - 1); /* shown to others: printable */
	if ((r = sf_get_str(rd, o, "comm", SF_ALWAYS, sizeof(t->comm) - 1, &s)))
		return r;
	snprintf(t->comm, sizeof(t->comm), "%s", s);
	if ((r = sf_get_u32(rd, o, "owner", SF_ALWAYS, UINT32_MAX - 1, &u)))
		return r;
	t->owner = u;
	if ((r = sf_get_enum(rd, o, "kind", SF_ALWAYS, kinds, ARRAY_SIZE(kinds), &u)))
		return r;
	t->kind = u;
	if ((r = sf_get_u32(rd, o, "pid", SF_ALWAYS, STORE_MAX_PID, &t->pid)) ||
	    (r = sf_get_bool(rd, o, "children", SF_ALWAYS, &t->children)) ||
	    (r = sf_get_bool(rd, o, "published", SF_OPTIONAL, &t->published)))
		return r;
	return 0;
}

/* Where it is in its life. */
static int read_state(struct sf_rd *rd, const cJSON *o, struct target *t)
{
	const char *states[4];
	uint32_t u = 0;
	int r;

	for (u = 0; u < ARRAY_SIZE(states); u++)
		states[u] = target_state_name(u);
	if ((r = sf_get_enum(rd, o, "state", SF_ALWAYS, states, ARRAY_SIZE(states), &u)))
		return r;
	/* watching does not survive a restart: a running target is stopped where it was */
	t->state = u == TARGET_RUNNING || u == TARGET_PAUSED ? TARGET_STOPPED : u;
	/* (both bounded so that their sum in nanoseconds fits a u64: until the year 2286) */
	if ((r = sf_get_double(rd, o, "elapsed_s", SF_ALWAYS, 0, 1e9, &t->elapsed_saved)) ||
	    (r = sf_get_double(rd, o, "start_wall", SF_ALWAYS, 0, 1e10, &t->start_wall)) ||
	    (r = sf_get_bool(rd, o, "root_exited", SF_ALWAYS, &t->root_exited)))
		return r;
	if ((r = sf_get_u32(rd, o, "wait_status", SF_ALWAYS, 0xffff, &u)))
		return r;
	t->exit_status = (int)u;
	return sf_get_u64(rd, o, "handed_over", SF_OPTIONAL, &t->handed_over);
}

/*
 * Each instrument's section: an object named after it (format 3). Formats 1 and 2 had
 * sampling only, its fields at the top level: the file is its section.
 */
static int read_instruments(struct sf_rd *rd, const cJSON *o, struct sym *s, struct target *t)
{
	int r, carried = 0;

	/*
	 * Sampling last: it interns its names into @s once its section is all checked, and a
	 * section that fails after that would leave them there although the file is refused.
	 * The others intern nothing.
	 */
	_Static_assert(INST_SAMPLE == 0, "sampling is loaded last by (k + 1) % INST_MAX");
	for (int k = 0; k < INST_MAX; k++) {
		int i = (k + 1) % INST_MAX;
		const cJSON *section = rd->format < 3 ? (i == INST_SAMPLE ? o : NULL)
						      : cJSON_GetObjectItemCaseSensitive(o, inst_table[i]->name);

		if (!section)
			continue;
		if (!cJSON_IsObject(section))
			return sf_wrong_type(rd, inst_table[i]->name, section, "an object");
		rd->section = rd->format < 3 ? NULL : inst_table[i]->name;
		rd->t_start = t->start_wall;
		rd->t_end = t->start_wall + t->elapsed_saved;
		r = inst_table[i]->load(rd, section, s, &t->inst[i]);
		if (r)
			return r;
		rd->section = NULL;
		rd->at[0] = '\0';
		carried++;
	}
	return carried ? 0 : sf_bad(rd, "file", "no instrument's results in it");
}

int store_parse(const char *text, size_t len, uint32_t id, struct sym *s, struct target **out,
		char *why, size_t whylen)
{
	struct sf_rd rd = { .why = why, .whylen = whylen };
	struct target *t = NULL;
	const char *end = NULL;
	uint32_t fmt;
	cJSON *o;
	int r;

	*out = NULL;
	if (whylen)
		why[0] = '\0';
	o = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!o)
		return sf_bad(&rd, "file", "not JSON (at byte %td of %zu)", end ? end - text : 0, len);
	while (end && end < text + len && strchr(" \t\r\n", *end) && *end)
		end++;
	if (end != text + len) {
		r = sf_bad(&rd, "file", "bytes after the JSON object (at byte %td of %zu)",
			   end - text, len);
		goto out;
	}
	if (!cJSON_IsObject(o)) {
		r = sf_wrong_type(&rd, "file", o, "an object");
		goto out;
	}
	if ((r = sf_get_u32(&rd, o, "format", SF_ALWAYS, UINT32_MAX, &fmt)))
		goto out;
	if (fmt < 1 || fmt > STORE_FORMAT) {
		r = sf_bad(&rd, "format", "%u: this pcmond reads formats 1 to %d%s", fmt,
			   STORE_FORMAT, fmt > STORE_FORMAT ? " (written by a newer pcmond?)" : "");
		goto out;
	}
	rd.format = fmt;
	r = -ENOMEM;
	t = target_new(0);
	if (!t)
		goto out;
	/* a failed section may have interned names into @s already: nothing else is loaded */
	if ((r = read_head(&rd, o, id, t)) || (r = read_state(&rd, o, t)) ||
	    (r = read_instruments(&rd, o, s, t)))
		goto out;
	*out = t;
	t = NULL;
	r = 0;
out:
	if (r == -ENOMEM && whylen)
		snprintf(why, whylen, "out of memory");
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
