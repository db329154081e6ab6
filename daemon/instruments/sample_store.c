// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument's section of a results file (store.h has the file as a whole):
 *
 *   "sampling": {"real": B, "kernel": B, "icase": B, "interval_us": N, ["when": "...",]
 *    "when_from_file": B, "no_inline": B, "unwind": "fp|dwarf|auto",
 *    "critical": ["NAME=PATTERN", ...], "seen": N, "lost_counts_full": N,
 *    "lost_offcpu_full": N, "lost_oom": N, "lost_ring_full": N, "lost_memory": N,
 *    "denied": N, "ticks_moved": N, "ticks_dropped": N,
 *    "procs": [{"m": MODULE, "n": NAME, ["file": F,] ["line": N]}, ...],
 *    "locs": [{"a": "0x...", "f": [PROC_INDEX, ...innermost first], ["file": F,]
 *              ["line": N,] ["fl": [[FILE, LINE], ...] each frame's own line]}, ...],
 *    "stacks": [{"k": "oncpu|oncpu_kernel|off_blocked|off_runnable", "p": PID, ["t": TID,]
 *                ["cg": CGROUP_ID,] ["u": UNWALK_REASON,] ["cs": true, "cr": CUT_REASON,]
 *                ["mp": true,] ["s": SECTION,] "nu": USER_LOCS, "c": COUNT, "ns": NS,
 *                "l": [LOC_INDEX, ...outermost first]}, ...],
 *    "threads": [{"t": TID, "n": NAME}, ...], "processes": [{"p": PID, "n": NAME}, ...],
 *    "cgroups": [{"id": CGROUP_ID, "path": PATH}, ...],
 *    "slices": {"spec": "10s,1m@1h,10m@1d", "memory_kib": N, "merged_early": N,
 *               "coarsened": N, "list": [{"t0": MS, "t1": MS,
 *               "s": [STACK_INDEX, COUNT, NS, ...]}, ...]}}
 *
 * The slices (format 4) hold the samples by time: each slice [t0, t1) in milliseconds since
 * the epoch, oldest first, with the counts of the stacks sampled in it as triples, a stack
 * by its index in "stacks". A file without them (format 3 and before) loads as one slice,
 * the target's whole life.
 *
 * Stacks are saved symbolized (module, address, frame names, lines), so they list the same
 * after a restart, when the processes and even their files may be gone. Formats 1 and 2 kept
 * these fields at the top level of the file, which is then the section (store.c); format 1
 * named each location's module and frames ("m", "f": [NAME, ...]) instead of "procs".
 * Threads, their names, processes' names and cgroups came during format 3: files without
 * them list with threads, processes and cgroups not known (tid 0, cgroup 0).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pat.h"
#include "proto.h"
#include "sample.h"
#include "slices.h"
#include "stfile.h"
#include "sym.h"
#include "tail.h"
#include "target.h"
#include "timed.h"
#include "util.h"

#define STORE_MAX_ITEMS (1 << 24)	/* locations, stacks */
#define STORE_MAX_DEPTH 4096		/* user, or kernel, locations of one stack */
#define STORE_MAX_FRAMES 4096		/* frames of one location (its inline chain) */
#define STORE_MAX_NAME 65536		/* a procedure, module or file name */
#define STORE_MAX_PATTERN PROTO_MAX_LINE
#define STORE_MAX_PID 4194304		/* PID_MAX_LIMIT */
#define STORE_MAX_INTERVAL_US 60000000	/* as pcmon start accepts */

static const char *const stack_kind_names[PCMON_KIND_MAX] = {
	[PCMON_KIND_ONCPU] = "oncpu",
	[PCMON_KIND_ONCPU_KMODE] = "oncpu_kernel",
	[PCMON_KIND_OFF_BLOCKED] = "off_blocked",
	[PCMON_KIND_OFF_RUNNABLE] = "off_runnable",
};

/* The names kept by number: each an array of {NUM: N, NAME: "..."}. */
static const struct name_set {
	const char *key, *num, *name;
	size_t off;		/* of its struct sample_names in struct sample */
	uint64_t max;		/* the largest number */
	size_t maxlen;		/* the longest name */
} name_sets[] = {
	{ "threads", "t", "n", offsetof(struct sample, threads), STORE_MAX_PID, 64 },
	{ "processes", "p", "n", offsetof(struct sample, processes), STORE_MAX_PID, 64 },
	{ "cgroups", "id", "path", offsetof(struct sample, cgroups), UINT64_MAX, STORE_MAX_NAME },
};

/* ---- writing */

/* Numbers things in first-use order: sym id -> index in the file's table, -1 unset. */
struct idmap {
	int64_t *idx;
	size_t cap;
	uint32_t n;
	cJSON *arr;
};

struct writer {
	struct sf_wr *w;
	const struct sym *s;
	struct idmap procs, locs;
};

/* @id's index in @m; a new entry (*o, to fill) is appended to m->arr on first use. */
static int64_t idmap_get(struct writer *w, struct idmap *m, uint32_t id, cJSON **o)
{
	*o = NULL;
	if (id >= m->cap) {
		size_t old = m->cap;

		if (GROW(m->idx, m->cap, (size_t)id + 1)) {
			w->w->oom = true;
			return -1;
		}
		for (size_t i = old; i < m->cap; i++)
			m->idx[i] = -1;
	}
	if (m->idx[id] >= 0)
		return m->idx[id];
	*o = cJSON_CreateObject();
	sf_push(w->w, m->arr, *o);
	if (w->w->oom) {
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
		w->w->oom = true; /* cannot be: every frame is a procedure */
		return -1;
	}
	x = idmap_get(w, &w->procs, proc, &o);
	if (o) {
		sf_put_str(w->w, o, "m", sym_str(w->s, pi->module));
		sf_put_str(w->w, o, "n", sym_str(w->s, pi->name));
		if (pi->file)
			sf_put_str(w->w, o, "file", sym_str(w->s, pi->file));
		if (pi->line)
			sf_put_num(w->w, o, "line", pi->line);
		if (pi->hi) { /* its code, for profil after a restart */
			char a[24];

			snprintf(a, sizeof(a), "0x%llx", (unsigned long long)pi->lo);
			sf_put_str(w->w, o, "lo", a);
			snprintf(a, sizeof(a), "0x%llx", (unsigned long long)pi->hi);
			sf_put_str(w->w, o, "hi", a);
		}
	}
	return w->w->oom ? -1 : x;
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
		w->w->oom = true; /* cannot be: stacks hold interned locations */
		return -1;
	}
	x = idmap_get(w, &w->locs, loc, &o);
	if (!o)
		return x;
	fr = sym_frames(w->s, l);
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)l->addr);
	sf_put_str(w->w, o, "a", addr);
	f = sf_chk(w->w, cJSON_AddArrayToObject(o, "f"));
	for (uint32_t i = 0; f && i < l->nframes; i++) {
		int64_t p = proc_index(w, fr[i]);

		if (p < 0)
			break;
		sf_push(w->w, f, cJSON_CreateNumber(p));
	}
	if (l->file)
		sf_put_str(w->w, o, "file", sym_str(w->s, l->file));
	if (l->line)
		sf_put_num(w->w, o, "line", l->line);
	/* each frame's own line (an inline chain's call sites), when one beyond the innermost */
	{
		const struct sym_line *fl = sym_frame_lines(w->s, l);
		bool more = false;

		for (uint32_t i = 1; i < l->nframes; i++)
			more |= fl[i].file || fl[i].line;
		f = more ? sf_chk(w->w, cJSON_AddArrayToObject(o, "fl")) : NULL;
		for (uint32_t i = 0; f && i < l->nframes; i++) {
			cJSON *y = cJSON_CreateArray();

			sf_push(w->w, f, y);
			if (w->w->oom)
				break;
			sf_push(w->w, y, cJSON_CreateString(sym_str(w->s, fl[i].file)));
			sf_push(w->w, y, cJSON_CreateNumber(fl[i].line));
		}
	}
	return w->w->oom ? -1 : x;
}

static void render_stack(struct writer *w, struct sf_text *x, const struct agg_stack *st,
			 uint64_t count, uint64_t ns)
{
	struct sf_wr *sw = w->w;

	sf_text_lit(sw, x, x->len ? ",{\"k\":\"" : "[{\"k\":\"");
	sf_text_lit(sw, x, st->kind < PCMON_KIND_MAX ? stack_kind_names[st->kind] : "?");
	sf_text_lit(sw, x, "\",\"p\":");
	sf_text_u64(sw, x, st->pid);
	if (st->tid) {
		sf_text_lit(sw, x, ",\"t\":");
		sf_text_u64(sw, x, st->tid);
	}
	if (st->cgroup) {
		sf_text_lit(sw, x, ",\"cg\":");
		sf_text_u64(sw, x, st->cgroup);
	}
	if (st->unwalk) {
		sf_text_lit(sw, x, ",\"u\":");
		sf_text_str(sw, x, st->unwalk < AGG_UNWALK_MAX ? agg_unwalk_names[st->unwalk] : "?");
	}
	if (st->flags & AGG_SF_CUT_SHORT) {
		sf_text_lit(sw, x, ",\"cs\":true,\"cr\":");
		sf_text_str(sw, x, agg_unwalk_names[agg_cut_reason(st)]);
	}
	if (st->flags & AGG_SF_MARKS_PENDING)
		sf_text_lit(sw, x, ",\"mp\":true");
	if (st->section) {
		sf_text_lit(sw, x, ",\"s\":");
		sf_text_str(sw, x, sym_str(w->s, st->section));
	}
	sf_text_lit(sw, x, ",\"nu\":");
	sf_text_u64(sw, x, st->nuser);
	sf_text_lit(sw, x, ",\"c\":");
	sf_text_u64(sw, x, count);
	sf_text_lit(sw, x, ",\"ns\":");
	sf_text_u64(sw, x, ns);
	sf_text_lit(sw, x, ",\"l\":[");
	for (uint32_t j = 0; j < st->nuser + st->nkern; j++) {
		int64_t i = loc_index(w, st->locs[j]);

		if (i < 0) {
			sw->oom = true;
			return;
		}
		if (j)
			sf_text_lit(sw, x, ",");
		sf_text_u64(sw, x, i);
	}
	sf_text_lit(sw, x, "]}");
}

void sample_save(const struct target *t, const void *state, const struct sym *s,
		 struct sf_wr *sw, cJSON *o)
{
	const struct sample *sp = state;
	struct writer w = { .w = sw, .s = s };
	struct sf_text stacks = { 0 };
	cJSON *arr;

	(void)t;
	sf_put_bool(sw, o, "real", sp->real);
	sf_put_bool(sw, o, "kernel", sp->kernel);
	sf_put_bool(sw, o, "icase", sp->icase);
	sf_put_num(sw, o, "interval_us", (double)(sp->period_ns / 1000));
	if (sp->when_text)
		sf_put_str(sw, o, "when", sp->when_text);
	sf_put_bool(sw, o, "when_from_file", sp->when_from_file);
	sf_put_bool(sw, o, "no_inline", sp->no_inline);
	sf_put_str(sw, o, "unwind", sp->unwind[0] ? sp->unwind : "fp");
	arr = sf_chk(sw, cJSON_AddArrayToObject(o, "critical"));
	for (size_t i = 0; arr && i < sp->ncrit; i++) {
		char *spec;

		if (asprintf(&spec, "%s=%s", sp->crit[i].name, sp->crit[i].text) < 0) {
			sw->oom = true;
			break;
		}
		sf_push(sw, arr, cJSON_CreateString(spec));
		free(spec);
	}
#define PUT_COUNT(f, key, need, drop, name) sf_put_u64(sw, o, #key, sp->f);
	SAMPLE_COUNT_FIELDS(PUT_COUNT)
#undef PUT_COUNT
#define PUT_TSTAT(f, since, drop, name) sf_put_u64(sw, o, #f, sp->lost.f);
	PCMON_TSTAT_FIELDS(PUT_TSTAT)
#undef PUT_TSTAT

	w.procs.arr = sf_chk(sw, cJSON_AddArrayToObject(o, "procs"));
	w.locs.arr = sf_chk(sw, cJSON_AddArrayToObject(o, "locs"));
	for (size_t i = 0; !sw->oom && i < agg_count(sp->agg); i++) {
		uint64_t count, ns;
		const struct agg_stack *st = agg_get(sp->agg, i, &count, &ns);

		render_stack(&w, &stacks, st, count, ns);
	}
	if (stacks.len)
		sf_text_lit(sw, &stacks, "]");
	sf_put_text(sw, o, "stacks", &stacks);
	/* the names of threads (the exports' thread label), processes and cgroups (list --by) */
	for (size_t i = 0; i < ARRAY_SIZE(name_sets); i++) {
		const struct name_set *ns = &name_sets[i];
		const struct sample_names *n = (const void *)((const char *)sp + ns->off);

		arr = sf_chk(sw, cJSON_AddArrayToObject(o, ns->key));
		for (uint32_t j = 0; !sw->oom && j < itab_count(n->keys); j++) {
			cJSON *x = cJSON_CreateObject();

			sf_push(sw, arr, x);
			if (sw->oom)
				break;
			sf_put_u64(sw, x, ns->num, *(const uint64_t *)itab_key(n->keys, j, NULL));
			sf_put_str(sw, x, ns->name, sym_str(s, n->names[j]));
		}
	}
	/* each stack by its index in "stacks", which lists the aggregate's in order */
	timed_save(sw, sp->slices, o);
	tail_save(sp->tails, sw, o); /* the tails' profiles, by those indices too */
	free(w.procs.idx);
	free(w.locs.idx);
}

/* ---- reading: every field checked before anything is loaded */

/* The settings. */
static int read_settings(struct sf_rd *rd, const cJSON *o, struct sample *sp)
{
	const char *s = NULL;
	const cJSON *arr, *it;
	cJSON *err = NULL;
	uint32_t u = 0;
	int r, i = 0, nc;

	if ((r = sf_get_bool(rd, o, "real", SF_ALWAYS, &sp->real)) ||
	    (r = sf_get_bool(rd, o, "kernel", SF_ALWAYS, &sp->kernel)) ||
	    (r = sf_get_bool(rd, o, "icase", SF_ALWAYS, &sp->icase)))
		return r;
	if ((r = sf_get_u32(rd, o, "interval_us", SF_ALWAYS, STORE_MAX_INTERVAL_US, &u)))
		return r;
	if (!u)
		return sf_bad(rd, "interval_us", "0 is not an interval");
	sp->period_ns = (uint64_t)u * 1000;
	if ((r = sf_get_bool(rd, o, "when_from_file", SF_SINCE2, &sp->when_from_file)) ||
	    (r = sf_get_bool(rd, o, "no_inline", SF_SINCE2, &sp->no_inline)))
		return r;
	s = "fp";
	if ((r = sf_get_str(rd, o, "unwind", SF_SINCE2, 8, &s)))
		return r;
	for (u = 0; u < ARRAY_SIZE(sample_unwind_names) && strcmp(s, sample_unwind_names[u]); u++)
		;
	if (u == ARRAY_SIZE(sample_unwind_names))
		return sf_bad(rd, "unwind", "unknown method \"%s\"", s);
	snprintf(sp->unwind, sizeof(sp->unwind), "%s", s);
	sp->dwarf = strcmp(s, "fp") != 0;

	s = NULL;
	if ((r = sf_get_str(rd, o, "when", SF_OPTIONAL, STORE_MAX_PATTERN, &s)))
		return r;
	if (s) {
		struct pat_error pe = { 0 };

		sp->when_text = strdup(s);
		if (!sp->when_text)
			return -ENOMEM;
		r = pat_parse(s,
			      (sp->icase ? PAT_ICASE : 0) | (sp->when_from_file ? PAT_FROM_FILE : 0),
			      &sp->when, &pe);
		if (r == -EINVAL)
			return sf_bad(rd, "when", "column %d: %s", pe.column, pe.msg);
		if (r)
			return r;
	}
	if ((r = sf_get_array(rd, o, "critical", SF_ALWAYS, AGG_MAX_CRIT, &arr, &nc)))
		return r;
	cJSON_ArrayForEach(it, arr) {
		char name[24];

		snprintf(name, sizeof(name), "critical[%d]", i++);
		if (!cJSON_IsString(it) || !it->valuestring)
			return sf_wrong_type(rd, name, it, "a string NAME=PATTERN");
		if (strnlen(it->valuestring, STORE_MAX_PATTERN + 1) > STORE_MAX_PATTERN)
			return sf_bad(rd, name, "longer than %d bytes", STORE_MAX_PATTERN);
	}
	r = sample_set_criticals(sp, arr, &err);
	if (r == -EINVAL)
		r = sf_bad(rd, "critical", "%s", proto_str(err, "error", "not NAME=PATTERN"));
	cJSON_Delete(err);
	return r;
}

/* The totals. */
static int read_totals(struct sf_rd *rd, const cJSON *o, struct sample *sp)
{
	struct pcmon_tstat lost = { 0 };
	uint64_t v;
	int r;

#define GET_COUNT(f, key, need, drop, name)                    \
	if ((r = sf_get_u64(rd, o, #key, SF_##need, &sp->f))) \
		return r;
	SAMPLE_COUNT_FIELDS(GET_COUNT)
#undef GET_COUNT
#define GET_TSTAT(f, since, drop, name)                                        \
	v = 0; /* (an optional key that is absent leaves it) */                  \
	if ((r = sf_get_u64(rd, o, #f, SF_##since, &v)))                        \
		return r;                                                       \
	lost.f = v;
	PCMON_TSTAT_FIELDS(GET_TSTAT)
#undef GET_TSTAT
	sp->lost = lost;
	return 0;
}

/* A procedure as the file gives it (format 2; strings point into the parsed document). */
struct rproc {
	const char *m, *n, *file;
	uint32_t line;
	uint64_t lo, hi;
};

/* A location as the file gives it: format 1 names its frames, format 2 indexes "procs". */
struct rloc {
	const char *m, *file;
	const cJSON *f, *fl;	/* fl: each frame's [file, line], or NULL */
	uint64_t a;
	uint32_t line;
};

static int read_proc(struct sf_rd *rd, const cJSON *it, int i, struct rproc *p)
{
	int r;

	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "procs", i, it);
	snprintf(rd->at, sizeof(rd->at), "procs[%d].", i);
	if ((r = sf_get_str(rd, it, "m", SF_ALWAYS, STORE_MAX_NAME, &p->m)) ||
	    (r = sf_get_str(rd, it, "n", SF_ALWAYS, STORE_MAX_NAME, &p->n)) ||
	    (r = sf_get_str(rd, it, "file", SF_OPTIONAL, STORE_MAX_NAME, &p->file)) ||
	    (r = sf_get_u32(rd, it, "line", SF_OPTIONAL, UINT32_MAX, &p->line)))
		return r;
	if (cJSON_GetObjectItemCaseSensitive(it, "hi") &&
	    ((r = sf_get_addr(rd, it, "lo", &p->lo)) || (r = sf_get_addr(rd, it, "hi", &p->hi))))
		return r;
	if (p->hi && p->lo >= p->hi)
		return sf_bad(rd, "hi", "not above lo");
	return 0;
}

static int read_loc(struct sf_rd *rd, const cJSON *it, int i, const struct rproc *procs, int nprocs,
		    struct rloc *l)
{
	const cJSON *x;
	int r, j = 0, nf;

	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "locs", i, it);
	snprintf(rd->at, sizeof(rd->at), "locs[%d].", i);
	if ((rd->format == 1 && (r = sf_get_str(rd, it, "m", SF_ALWAYS, STORE_MAX_NAME, &l->m))) ||
	    (r = sf_get_addr(rd, it, "a", &l->a)) ||
	    (r = sf_get_array(rd, it, "f", SF_ALWAYS, STORE_MAX_FRAMES, &l->f, &nf)) ||
	    (r = sf_get_str(rd, it, "file", SF_OPTIONAL, STORE_MAX_NAME, &l->file)) ||
	    (r = sf_get_u32(rd, it, "line", SF_OPTIONAL, UINT32_MAX, &l->line)))
		return r;
	if (!nf)
		return sf_bad(rd, "f", "a location has at least one frame");
	if ((r = sf_get_array(rd, it, "fl", SF_OPTIONAL, STORE_MAX_FRAMES, &l->fl, &j)))
		return r;
	if (l->fl && j != nf)
		return sf_bad(rd, "fl", "%d lines for %d frames", j, nf);
	for (int k = 0; l->fl && k < j; k++) {
		const cJSON *y = cJSON_GetArrayItem(l->fl, k), *file, *line;

		file = cJSON_GetArrayItem(y, 0);
		line = cJSON_GetArrayItem(y, 1);
		if (!cJSON_IsArray(y) || cJSON_GetArraySize(y) != 2 || !cJSON_IsString(file) ||
		    strnlen(file->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME ||
		    !cJSON_IsNumber(line) || line->valuedouble < 0 || line->valuedouble > UINT32_MAX ||
		    line->valuedouble != (uint32_t)line->valuedouble)
			return sf_bad(rd, "fl", "each frame's line is [FILE, LINE]");
	}
	j = 0;
	cJSON_ArrayForEach(x, l->f) {
		char name[24];
		uint64_t p;

		snprintf(name, sizeof(name), "f[%d]", j++);
		if (rd->format == 1) {
			if (!cJSON_IsString(x) || !x->valuestring)
				return sf_wrong_type(rd, name, x, "a procedure name");
			if (strnlen(x->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME)
				return sf_bad(rd, name, "longer than %d bytes", STORE_MAX_NAME);
			continue;
		}
		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a procedure index");
		if (!nprocs)
			return sf_bad(rd, name, "there are no procedures");
		if ((r = sf_item_u64(rd, name, x, nprocs - 1, &p)))
			return r;
		/* a location is in one object: its inline chain too */
		if (!l->m)
			l->m = procs[p].m;
		else if (strcmp(l->m, procs[p].m))
			return sf_bad(rd, name,
				   "procedure of module \"%.64s\" in a location of \"%.64s\"",
				   procs[p].m, l->m);
	}
	return 0;
}

/* A stack as the file gives it: locations are indices into "locs". */
struct rstack {
	uint32_t kind, pid, tid, unwalk, cut, nuser, n;
	uint64_t cgroup;
	bool cut_short, marks_pending;
	const char *section;
	uint64_t count, ns;
	const cJSON *l;
};

static int read_stack(struct sf_rd *rd, const cJSON *it, int i, int nlocs, struct rstack *st)
{
	const char *unwalk_names[AGG_UNWALK_MAX] = { NULL }; /* walkable: no "u" */
	const cJSON *x;
	int r, n, j = 0;

	*st = (struct rstack){ 0 };
	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "stacks", i, it);
	snprintf(rd->at, sizeof(rd->at), "stacks[%d].", i);
	for (int k = 1; k < AGG_UNWALK_MAX; k++)
		unwalk_names[k] = agg_unwalk_names[k];
	if ((r = sf_get_enum(rd, it, "k", SF_ALWAYS, stack_kind_names, PCMON_KIND_MAX, &st->kind)) ||
	    (r = sf_get_u32(rd, it, "p", SF_ALWAYS, STORE_MAX_PID, &st->pid)) ||
	    (r = sf_get_u32(rd, it, "t", SF_OPTIONAL, STORE_MAX_PID, &st->tid)) ||
	    (r = sf_get_u64(rd, it, "cg", SF_OPTIONAL, &st->cgroup)) ||
	    /* (fp_chain, the last reason, only ever cuts a stack short) */
	    (r = sf_get_enum(rd, it, "u", SF_OPTIONAL, unwalk_names, AGG_UNWALK_FP_CHAIN, &st->unwalk)) ||
	    (r = sf_get_bool(rd, it, "cs", SF_OPTIONAL, &st->cut_short)) ||
	    /* why (files written before it was kept hold fp stacks only) */
	    (r = sf_get_enum(rd, it, "cr", SF_OPTIONAL, unwalk_names, AGG_UNWALK_MAX, &st->cut)) ||
	    (r = sf_get_bool(rd, it, "mp", SF_OPTIONAL, &st->marks_pending)) ||
	    (r = sf_get_str(rd, it, "s", SF_OPTIONAL, 255, &st->section)) ||
	    (r = sf_get_array(rd, it, "l", SF_ALWAYS, 2 * STORE_MAX_DEPTH, &st->l, &n)) ||
	    (r = sf_get_u32(rd, it, "nu", SF_ALWAYS, MIN(n, STORE_MAX_DEPTH), &st->nuser)) ||
	    (r = sf_get_u64(rd, it, "c", SF_ALWAYS, &st->count)) ||
	    (r = sf_get_u64x(rd, it, "ns", SF_ALWAYS, UINT64_MAX, true, &st->ns)))
		return r;
	if (st->section && !st->section[0])
		return sf_bad(rd, "s", "empty section name");
	if (n - st->nuser > STORE_MAX_DEPTH)
		return sf_bad(rd, "l", "%u kernel locations, more than %d", n - st->nuser,
			   STORE_MAX_DEPTH);
	st->n = n;
	cJSON_ArrayForEach(x, st->l) {
		char name[24];
		uint64_t li;

		snprintf(name, sizeof(name), "l[%d]", j++);
		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a location index");
		if (!nlocs)
			return sf_bad(rd, name, "there are no locations");
		if ((r = sf_item_u64(rd, name, x, nlocs - 1, &li)))
			return r;
	}
	return 0;
}

/* The names of set @ns, each checked: its array in *@arr (NULL if the file has none). */
static int read_names(struct sf_rd *rd, const cJSON *o, const struct name_set *ns,
		      const cJSON **arr)
{
	const cJSON *it;
	int r, n, i = 0;

	*arr = NULL;
	if ((r = sf_get_array(rd, o, ns->key, SF_OPTIONAL, STORE_MAX_ITEMS, arr, &n)))
		return r;
	cJSON_ArrayForEach(it, *arr) {
		const char *name;
		uint64_t num;

		snprintf(rd->at, sizeof(rd->at), "%s[%d].", ns->key, i);
		if (!cJSON_IsObject(it))
			return sf_not_object(rd, ns->key, i, it);
		if ((r = sf_get_u64x(rd, it, ns->num, SF_ALWAYS, ns->max, false, &num)) ||
		    (r = sf_get_str(rd, it, ns->name, SF_ALWAYS, ns->maxlen, &name)))
			return r;
		i++;
	}
	rd->at[0] = '\0';
	return 0;
}

/* Intern the file's procedures and locations into @s: ids[i] for "locs"[i]. Only -ENOMEM. */
static int commit_locs(struct sf_rd *rd, struct sym *s, const struct rproc *procs, int nprocs,
		       const struct rloc *locs, int nlocs, uint32_t *ids)
{
	const char **names = malloc(STORE_MAX_FRAMES * sizeof(*names));
	const char **files = malloc(STORE_MAX_FRAMES * sizeof(*files));
	uint32_t *lines = malloc(STORE_MAX_FRAMES * sizeof(*lines));
	uint32_t id;
	int r = names && files && lines ? 0 : -ENOMEM;

	/* first, so that the locations' frames find them with their file and line */
	for (int i = 0; !r && i < nprocs; i++)
		if (!(r = sym_intern_proc(s, procs[i].m, procs[i].n[0] ? procs[i].n : NULL,
					  procs[i].file, procs[i].line, &id)) && procs[i].hi)
			sym_set_proc_extent(s, id, procs[i].lo, procs[i].hi);
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

/*
 * The time slices, checked (@load false) or loaded into @sp with @sid the aggregate's id of
 * each stack of the file (@load true). Absent: one slice of everything, the target's life.
 */
static int read_slices(struct sf_rd *rd, const cJSON *o, int nstacks, bool load,
		       const uint32_t *sid, struct sample *sp)
{
	size_t cnt;
	uint64_t *rows;
	int r = timed_read(rd, o, 2, nstacks, load ? sp->slices : NULL, sid);

	if (r <= 0 || !load)
		return r < 0 ? r : 0;
	cnt = agg_count(sp->agg);
	rows = calloc(3 * cnt + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t k = 0; k < cnt; k++) {
		rows[3 * k] = k;
		agg_get(sp->agg, k, &rows[3 * k + 1], &rows[3 * k + 2]);
	}
	r = timed_one_slice(rd, sp->slices, rows, cnt);
	free(rows);
	return r;
}

int sample_load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out)
{
	struct rstack rs;
	struct sample *sp = NULL;
	struct rloc *locs = NULL;
	struct rproc *procs = NULL;
	struct agg_stack *st = NULL;
	uint32_t *ids = NULL, *sid = NULL;
	uint64_t csum = 0, nssum = 0;
	const cJSON *arr, *it, *x;
	int r, nprocs = 0, nlocs = 0, nstacks = 0, i;
	const cJSON *narr[ARRAY_SIZE(name_sets)] = { NULL };

	*out = NULL;
	r = -ENOMEM;
	sp = sample_new();
	if (!sp)
		goto out;
	if ((r = read_settings(rd, o, sp)) || (r = read_totals(rd, o, sp)))
		goto out;
	if (rd->format >= 2) {
		if ((r = sf_get_array(rd, o, "procs", SF_ALWAYS, STORE_MAX_ITEMS, &arr, &nprocs)))
			goto out;
		r = -ENOMEM;
		procs = calloc(nprocs + 1, sizeof(*procs));
		if (!procs)
			goto out;
		i = 0;
		cJSON_ArrayForEach(it, arr) {
			if ((r = read_proc(rd, it, i, &procs[i])))
				goto out;
			i++;
		}
		rd->at[0] = '\0';
	}
	if ((r = sf_get_array(rd, o, "locs", SF_ALWAYS, STORE_MAX_ITEMS, &arr, &nlocs)))
		goto out;
	r = -ENOMEM;
	locs = calloc(nlocs + 1, sizeof(*locs));
	ids = calloc(nlocs + 1, sizeof(*ids));
	if (!locs || !ids)
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if ((r = read_loc(rd, it, i, procs, nprocs, &locs[i])))
			goto out;
		i++;
	}
	rd->at[0] = '\0';
	if ((r = sf_get_array(rd, o, "stacks", SF_ALWAYS, STORE_MAX_ITEMS, &arr, &nstacks)))
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if ((r = read_stack(rd, it, i++, nlocs, &rs)))
			goto out;
		/* identical stacks are merged on loading: their sums must not wrap */
		if (__builtin_add_overflow(csum, rs.count, &csum)) {
			r = sf_bad(rd, "c", "the counts of the stacks add up to more than 64 bits");
			goto out;
		}
		if (__builtin_add_overflow(nssum, rs.ns, &nssum)) {
			r = sf_bad(rd, "ns", "the times of the stacks add up to more than 64 bits");
			goto out;
		}
	}
	rd->at[0] = '\0';
	for (size_t k = 0; k < ARRAY_SIZE(name_sets); k++)
		if ((r = read_names(rd, o, &name_sets[k], &narr[k])))
			goto out;
	if ((r = read_slices(rd, o, nstacks, false, NULL, sp)))
		goto out;

	/* everything checked: now load */
	r = -ENOMEM;
	st = malloc(agg_stack_size(2 * STORE_MAX_DEPTH));
	sid = calloc(nstacks + 1, sizeof(*sid));
	if (!st || !sid || commit_locs(rd, s, procs, nprocs, locs, nlocs, ids))
		goto out;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		uint32_t j = 0;

		if ((r = read_stack(rd, it, i++, nlocs, &rs)))
			goto out;
		*st = (struct agg_stack){ .kind = rs.kind, .pid = rs.pid, .tid = rs.tid,
					  .cgroup = rs.cgroup,
					  .unwalk = rs.unwalk,
					  .flags = (rs.cut_short ? AGG_SF_CUT(rs.cut ? rs.cut :
								AGG_UNWALK_FP_CHAIN) : 0) |
						   (rs.marks_pending ? AGG_SF_MARKS_PENDING : 0),
					  .nuser = rs.nuser,
					  .nkern = rs.n - rs.nuser };
		if (rs.section && sym_intern_str(s, rs.section, &st->section)) {
			r = -ENOMEM;
			goto out;
		}
		cJSON_ArrayForEach(x, rs.l)
			st->locs[j++] = ids[(size_t)x->valuedouble];
		if ((r = agg_add_id(sp->agg, st, rs.count, rs.ns, &sid[i - 1])))
			goto out;
	}
	for (size_t k = 0; k < ARRAY_SIZE(name_sets); k++) {
		const struct name_set *ns = &name_sets[k];

		i = 0;
		cJSON_ArrayForEach(it, narr[k]) {
			uint64_t num = 0;
			uint32_t name;

			/* (read again: checked above) */
			snprintf(rd->at, sizeof(rd->at), "%s[%d].", ns->key, i++);
			sf_get_u64x(rd, it, ns->num, SF_ALWAYS, ns->max, false, &num);
			r = -ENOMEM;
			if (sym_intern_str(s, proto_str(it, ns->name, ""), &name) ||
			    sample_names_set((void *)((char *)sp + ns->off), num, name))
				goto out;
		}
		rd->at[0] = '\0';
	}
	if ((r = read_slices(rd, o, nstacks, true, sid, sp)) ||
	    (r = tail_load(rd, o, sp->agg, sid, nstacks, &sp->tails)))
		goto out;
	*out = sp;
	sp = NULL;
	r = 0;
out:
	free(sid);
	free(st);
	free(ids);
	free(locs);
	free(procs);
	sample_free(sp);
	return r;
}
