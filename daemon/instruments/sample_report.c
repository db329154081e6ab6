// SPDX-License-Identifier: GPL-2.0-only
/*
 * LIST as JSON: a listing of a target's samples (agg_list) turned into the reply the CLI
 * renders as text (cli/format.c) and prints as it is with --json, so the two never disagree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbginfo.h"
#include "groups.h"
#include "inst.h"
#include "lines.h"
#include "proto.h"
#include "sample.h"
#include "stacks.h"
#include "sym.h"
#include "tail.h"
#include "target.h"
#include "util.h"

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * a / b : 0;
}

static void add_section(cJSON *arr, const char *name, uint64_t count, uint64_t counted)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", name);
	cJSON_AddNumberToObject(o, "count", count);
	cJSON_AddNumberToObject(o, "percent", pct(count, counted));
	cJSON_AddItemToArray(arr, o);
}

/* The listing's totals of the summary's part @part (AGG_LIST_TOTALS). */
static void add_totals(const struct agg_list *l, int part, cJSON *sum)
{
#define ADD_TOTAL(f, at) \
	if (at == part)  \
		cJSON_AddNumberToObject(sum, #f, l->f);
	AGG_LIST_TOTALS(ADD_TOTAL)
#undef ADD_TOTAL
}

static void add_summary(const struct sample_listing *ls, const struct agg_list *l,
			const struct sym *s, cJSON *sum)
{
	const struct sample *sp = ls->sp;
	cJSON *o, *arr;

	add_totals(l, 1, sum);
	cJSON_AddNumberToObject(sum, "cut_short", l->cut[AGG_WALK_OK]);
	o = cJSON_AddObjectToObject(sum, "cut_short_by_reason");
#define ADD_CUT(id, name, cuts) \
	if (cuts)               \
		cJSON_AddNumberToObject(o, #name, l->cut[AGG_UNWALK_##id]);
	AGG_UNWALK_REASONS(ADD_CUT)
#undef ADD_CUT
	add_totals(l, 2, sum);
	cJSON_AddNumberToObject(sum, "lost", sample_lost(sp));
	cJSON_AddNumberToObject(sum, "handed_over", ls->t->handed_over);
	sample_lost_json(sp, cJSON_AddObjectToObject(sum, "lost_by_reason"));
	/* BPF's other counters in the summary: denied and late ticks */
#define ADD_TSTAT(f, since, drop, name) \
	if (!drop)                      \
		cJSON_AddNumberToObject(sum, #name, sp->lost.f);
	PCMON_TSTAT_FIELDS(ADD_TSTAT)
#undef ADD_TSTAT
	if (ls->when_text)
		cJSON_AddStringToObject(sum, "when", ls->when_text);
	add_totals(l, 3, sum);

	arr = cJSON_AddArrayToObject(sum, "critical");
	add_section(arr, "unwalkable", l->unwalk[AGG_WALK_OK], l->counted);
	o = cJSON_AddObjectToObject(cJSON_GetArrayItem(arr, 0), "reasons");
	for (int i = 1; i < AGG_UNWALK_MAX; i++)
		cJSON_AddNumberToObject(o, agg_unwalk_names[i], l->unwalk[i]);
	for (size_t i = 0; i < ls->ncrit && i < AGG_MAX_CRIT; i++)
		add_section(arr, ls->crit[i].name, l->crit[i], l->counted);
	for (size_t i = 0; i < l->nmarked; i++) {
		add_section(arr, sym_str(s, l->marked[i].name), l->marked[i].count, l->counted);
		cJSON_AddBoolToObject(cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1),
				      "marked", 1);
	}
}

/*
 * Procedures @rows (of @counted samples), by shallow count, and the deep table's order as
 * indices into them. @all: of a group, the listing's counted samples (percentages of all
 * too), else 0.
 */
static void add_procedures(struct agg_row *rows, size_t n, uint64_t counted, uint64_t all,
			   const struct sym *s, cJSON *out)
{
	cJSON *arr = cJSON_AddArrayToObject(out, "procedures"), *o;
	struct agg_row *deep;
	struct itab *pos;
	uint32_t id;

	agg_sort_rows(rows, n, 0, s);
	for (size_t i = 0; i < n; i++) {
		const struct sym_procinfo *pi = sym_proc(s, rows[i].proc);

		o = agg_proc_json(s, rows[i].proc);
		cJSON_AddNumberToObject(o, "shallow", rows[i].shallow);
		cJSON_AddNumberToObject(o, "deep", rows[i].deep);
		cJSON_AddNumberToObject(o, "shallow_pct", pct(rows[i].shallow, counted));
		cJSON_AddNumberToObject(o, "deep_pct", pct(rows[i].deep, counted));
		if (all) {
			cJSON_AddNumberToObject(o, "shallow_pct_all", pct(rows[i].shallow, all));
			cJSON_AddNumberToObject(o, "deep_pct_all", pct(rows[i].deep, all));
		}
		if (pi->file)
			cJSON_AddStringToObject(o, "file", sym_str(s, pi->file));
		if (pi->line)
			cJSON_AddNumberToObject(o, "line", pi->line);
		cJSON_AddItemToArray(arr, o);
	}
	arr = cJSON_AddArrayToObject(out, "deep_order");
	deep = malloc((n ? n : 1) * sizeof(*deep));
	/* each row's place by its procedure: interned in order, a procedure's id is its row's
	 * (a table as large as the rows, not as all procedures: a group has few of them) */
	pos = itab_new();
	for (size_t i = 0; pos && i < n; i++)
		if (itab_intern(pos, &rows[i].proc, sizeof(rows[i].proc), &id) < 0) {
			itab_free(pos);
			pos = NULL;
		}
	if (deep && pos) {
		if (n)
			memcpy(deep, rows, n * sizeof(*deep));
		agg_sort_rows(deep, n, 1, s);
		for (size_t i = 0; i < n; i++) {
			int64_t at = itab_find(pos, &deep[i].proc, sizeof(deep[i].proc));

			cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)at));
		}
	}
	free(deep);
	itab_free(pos);
}

/* ---- list --by */

/* The visitor that charges each visit to its group. */
struct by_ctx {
	enum groups_by by;
	struct groups_namer nm;	/* the target's names (sample_namer()) */
	struct groups *g;
};

static void by_visit(void *ctx, const struct agg_visit *v)
{
	struct by_ctx *b = ctx;
	uint32_t name;
	uint64_t key = groups_key(&b->nm, b->by, v->st, &name);

	groups_add(b->g, key, name, v->st->pid, v);
}

/*
 * "groups": [{"by", "name", "counted", "percent", "foreign", "processes", ["pid",] ["tid",]
 * ["id",] "procedures", "deep_order"}], by counted samples; a group's percentages are of its
 * own counted samples, the _all ones of the listing's.
 */
static int add_groups(const struct by_ctx *b, uint64_t counted, const struct sym *s,
		      cJSON *out)
{
	const struct group *gs;
	cJSON *arr, *o;
	size_t n;
	int r = groups_sorted(b->g, &gs, &n);

	if (r)
		return r;
	arr = cJSON_AddArrayToObject(out, "groups");
	for (size_t i = 0; i < n; i++) {
		const struct group *gr = &gs[i];

		o = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "by", groups_by_names[b->by]);
		cJSON_AddStringToObject(o, "name", sym_str(s, gr->name));
		if (b->by == GROUPS_PROCESS || b->by == GROUPS_THREAD)
			cJSON_AddNumberToObject(o, "pid", gr->pid);
		if (b->by == GROUPS_THREAD)
			cJSON_AddNumberToObject(o, "tid", (double)gr->key);
		if (b->by == GROUPS_CGROUP)
			cJSON_AddNumberToObject(o, "id", (double)gr->key);
		cJSON_AddNumberToObject(o, "counted", gr->counted);
		cJSON_AddNumberToObject(o, "percent", pct(gr->counted, counted));
		cJSON_AddNumberToObject(o, "foreign", gr->foreign);
		cJSON_AddNumberToObject(o, "processes", gr->processes);
		add_procedures(gr->rows, gr->nrows, gr->counted, counted ? counted : 1, s, o);
	}
	return 0;
}

void sample_list_json(const struct sample_listing *ls, struct agg_list *l, const struct sym *s,
		      cJSON *out)
{
	add_summary(ls, l, s, cJSON_AddObjectToObject(out, "summary"));
	add_procedures(l->rows, l->nrows, l->counted, 0, s, out);
}

/*
 * Each tailed leg's figures and the listing of its tail, rows as the target's: "tails" of
 * a listing of the whole (docs/tail.md). 0, or -ENOMEM.
 */
static int tails_json(const struct sample_listing *ls, const struct sym *s, cJSON *rep)
{
	struct tails *tl = ls->sp->tails;
	cJSON *arr = tl && tl->nlegs ? cJSON_AddArrayToObject(rep, "tails") : NULL;

	for (size_t i = 0; arr && i < tl->nlegs; i++) {
		struct sample_listing one = *ls;
		cJSON *o = cJSON_CreateObject();
		struct agg_list l;

		if (!o || !cJSON_AddItemToArray(arr, o))
			return -ENOMEM;
		/* the tail's samples alone: the open off-CPU intervals are the whole's */
		one.agg = tl->leg[i].prof[TAIL_SLOW];
		one.lo.visit = NULL;
		one.lo.extra = NULL;
		one.lo.nextra = 0;
		tail_leg_json(tl, &tl->leg[i], o);
		if (agg_list(one.agg, s, &one.lo, &l))
			return -ENOMEM;
		sample_list_json(&one, &l, s, o);
		agg_list_free(&l);
	}
	return 0;
}

int sample_check_list(const struct list_req *lr, cJSON **rep)
{
	/* (the stacks and the timeline go together: diff and save take both, the slices for
	 * how much the profile varies) */
	if (!!lr->lines + !!lr->offset + (lr->stacks || lr->timeline) > 1) {
		*rep = proto_error(2, "list: one view at a time: --lines, profil, an export or the timeline");
		return -1;
	}
	if (lr->by && (lr->lines || lr->offset)) {
		*rep = proto_error(2, "--by: not with --lines or profil (one procedure's views)");
		return -1;
	}
	return sample_check_listing(lr, rep);
}

/*
 * Sampling's part of `list`: the summary and the procedures, and the view asked for: the
 * exports' stacks, the lines (--lines) or a profil(2) buffer (--offset).
 */
int sample_list(void *g, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		cJSON **err)
{
	const char *lines = lr->lines, *offset = lr->offset;
	const struct inst_env *env = g; /* its first member */
	int by = groups_by_parse(lr->by);
	struct by_ctx bc = { .by = by };
	uint32_t since = lr->since_mark;
	struct sample_window w = { 0 };
	struct sample_listing ls;
	struct stacks *x = NULL;
	struct pcs *pcs = NULL;
	struct agg_list l;
	int r = -1;

	(void)st;
	if (sample_listing_begin(g, t, lr, &ls, err))
		return -1;
	if (since && sample_mark_window(ls.sp, t, since, &w, err))
		goto out;
	if (since && lr->remark) /* (nothing drains in between: no gap) */
		sample_mark_move(ls.sp, since);
	if (lr->stacks) { /* the exports' view, rooted at the groups if --by */
		struct groups_namer nm;

		sample_namer(ls.sp, &nm);
		x = stacks_new(env->sym, &ls.lo, &nm, by);
		if (x && lr->labels)
			stacks_labels(x);
		ls.lo.visit = stacks_visit;
		ls.lo.visit_ctx = x;
	} else if (by >= 0) { /* who took them */
		sample_namer(ls.sp, &bc.nm);
		bc.g = groups_new(env->sym);
		ls.lo.visit = by_visit;
		ls.lo.visit_ctx = bc.g ? &bc : NULL;
	} else if (lines || offset) { /* where inside procedures */
		pcs = pcs_new(env->sym);
		ls.lo.visit = pcs_visit;
		ls.lo.visit_ctx = pcs;
	}
	if ((ls.lo.visit && !ls.lo.visit_ctx) ||
	    agg_list(w.agg ? w.agg : ls.agg, env->sym, &ls.lo, &l))
		goto out;
	if ((x && stacks_json(x, rep)) ||
	    (lr->timeline && sample_timeline_json(&ls, env->sym, lr, &l, rep)) ||
	    (lines && pcs_lines_json(pcs, lines, l.counted, rep, err)) ||
	    (offset && pcs_profil_json(pcs, offset, lr->scale, lr->bufsiz, t->comm, rep, err))) {
		agg_list_free(&l);
		goto out;
	}
	if (x) {
		cJSON *p = cJSON_GetObjectItemCaseSensitive(rep, "profile");

		cJSON_AddNumberToObject(p, "period_ns", (double)ls.lo.period_ns);
		cJSON_AddNumberToObject(p, "start_wall", w.agg ? w.from_wall :
						ls.windowed && ls.nslices ? ls.covered_t0 / 1e9 :
						t->start_wall);
		if (w.agg) /* (else the target's elapsed time) */
			cJSON_AddNumberToObject(p, "duration_s", w.seconds);
		else if (ls.windowed && ls.nslices) /* what the slices cover */
			cJSON_AddNumberToObject(p, "duration_s",
						(ls.covered_t1 - ls.covered_t0) / 1e9);
		if (lr->labels) { /* every sample says where it comes from */
			char host[256] = "";

			gethostname(host, sizeof(host) - 1);
			cJSON_AddStringToObject(p, "host", host);
		}
	}
	sample_list_json(&ls, &l, env->sym, rep);
	if (ls.lo.when) { /* a name of the pattern no procedure of the target has: said */
		const struct pat *p = ls.lo.when;
		cJSON *un = agg_names_unseen_json(ls.sp->agg, env->sym, &p, 1, NULL);

		if (un)
			cJSON_AddItemToObject(cJSON_GetObjectItemCaseSensitive(rep, "summary"),
					      "when_unseen", un);
	}
	sample_window_json(&ls, rep);
	/* the tails beside the whole, in its plain listing */
	if (!ls.tail && !ls.windowed && !w.agg && !x && by < 0 && !lines && !offset &&
	    !lr->timeline && tails_json(&ls, env->sym, rep)) {
		agg_list_free(&l);
		goto out;
	}
	if (ls.tail) {
		cJSON *o = cJSON_AddObjectToObject(rep, "tail");

		if (o) {
			tail_leg_json(ls.sp->tails, ls.tail, o);
			cJSON_AddStringToObject(o, "part", tail_part_names[ls.tail_part]);
		}
	}
	agg_list_free(&l);
	if (w.agg) { /* a window: what it covered */
		cJSON *o = cJSON_AddObjectToObject(rep, "window"), *sum;

		cJSON_AddNumberToObject(o, "from_wall", w.from_wall);
		cJSON_AddNumberToObject(o, "to_wall", w.to_wall);
		cJSON_AddNumberToObject(o, "seconds", w.seconds);
		sum = cJSON_GetObjectItemCaseSensitive(rep, "summary");
		cJSON_ReplaceItemInObject(sum, "lost", cJSON_CreateNumber((double)w.lost));
	}
	if (bc.g && add_groups(&bc, l.counted, env->sym, rep)) {
		*err = proto_error(1, "out of memory while listing");
		goto out;
	}
	if (env->dbg) { /* names that may still come */
		struct dbginfo_stats ds;

		dbginfo_stats(env->dbg, &ds);
		cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(rep, "summary"),
					"debuginfod_pending", ds.pending);
	}
	r = 0;
out:
	if (since && lr->drop_mark)
		sample_mark_drop(ls.sp, since);
	agg_free(w.agg);
	stacks_free(x);
	pcs_free(pcs);
	groups_free(bc.g);
	sample_listing_end(&ls);
	return r;
}
