// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument's section of a results file (store.h has the file as a whole):
 *
 *   "sampling": {"real": B, "kernel": B, "icase": B, "interval_us": N, ["period_us": N,]
 *    ["when": "...",]
 *    "when_from_file": B, "no_inline": B, "unwind": "fp|dwarf|auto",
 *    "critical": ["NAME=PATTERN", ...], "seen": N, "lost_counts_full": N,
 *    "lost_offcpu_full": N, "lost_oom": N, "lost_ring_full": N, "lost_memory": N,
 *    "denied": N, "ticks_moved": N, "ticks_dropped": N,
 *    "procs": [...], "locs": [...], "stacks": [...] (stackfile.h),
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
 * Formats 1 and 2 kept these fields at the top level of the file, which is then the section
 * (store.c).
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
#include "stackfile.h"
#include "stfile.h"
#include "sym.h"
#include "tail.h"
#include "target.h"
#include "timed.h"
#include "util.h"

#define STORE_MAX_ITEMS (1 << 24)	/* names */
#define STORE_MAX_NAME 65536		/* a procedure, module or file name */
#define STORE_MAX_PATTERN PROTO_MAX_LINE
#define STORE_MAX_PID 4194304		/* PID_MAX_LIMIT */
#define STORE_MAX_INTERVAL_US 60000000	/* as pcmon start accepts */

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

void sample_save(const struct target *t, const void *state, const struct sym *s,
		 struct sf_wr *sw, cJSON *o)
{
	const struct sample *sp = state;
	cJSON *arr;

	(void)t;
	sf_put_bool(sw, o, "real", sp->real);
	sf_put_bool(sw, o, "kernel", sp->kernel);
	sf_put_bool(sw, o, "icase", sp->icase);
	sf_put_num(sw, o, "interval_us", (double)sp->interval_us);
	sf_put_num(sw, o, "period_us", (double)(sp->period_ns / 1000));
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

	stackfile_save(sw, s, sp->agg, o);
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
	sp->interval_us = u;
	/* the timer's (files from before it was kept: the interval, as the timer was then) */
	if ((r = sf_get_u32(rd, o, "period_us", SF_OPTIONAL, STORE_MAX_INTERVAL_US, &u)))
		return r;
	if (!u)
		return sf_bad(rd, "period_us", "0 is not a period");
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
	const cJSON *narr[ARRAY_SIZE(name_sets)] = { NULL }, *it;
	struct stackfile_rd f = { 0 };
	struct sample *sp = NULL;
	uint32_t *sid = NULL;
	int r, i;

	*out = NULL;
	r = -ENOMEM;
	sp = sample_new();
	if (!sp)
		goto out;
	if ((r = read_settings(rd, o, sp)) || (r = read_totals(rd, o, sp)) ||
	    (r = stackfile_check(rd, o, SF_ALWAYS, &f)))
		goto out;
	for (size_t k = 0; k < ARRAY_SIZE(name_sets); k++)
		if ((r = read_names(rd, o, &name_sets[k], &narr[k])))
			goto out;
	if ((r = read_slices(rd, o, f.nstacks, false, NULL, sp)))
		goto out;

	/* everything checked: now load */
	r = -ENOMEM;
	sid = calloc(f.nstacks + 1, sizeof(*sid));
	if (!sid || (r = stackfile_load(rd, &f, s, sp->agg, sid)))
		goto out;
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
	if ((r = read_slices(rd, o, f.nstacks, true, sid, sp)) ||
	    (r = tail_load(rd, o, sp->agg, sid, f.nstacks, &sp->tails)))
		goto out;
	*out = sp;
	sp = NULL;
	r = 0;
out:
	free(sid);
	stackfile_release(&f);
	sample_free(sp);
	return r;
}
