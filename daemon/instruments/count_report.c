// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call table as JSON (the "calls" section of a `list` reply), from a target's call
 * counting state: times with the probes' measured cost taken out, sorted as asked. The CLI
 * renders its text from this (cli/format.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "counter.h"
#include "near.h"
#include "pat.h"
#include "timed.h"
#include "util.h"

/* Of a count of activations @all, @xol of which stepped: @per[0] each, @per[1] the stepped. */
static double by_kind(const double *per, uint64_t all, uint64_t xol)
{
	return per[0] * (double)(all - MIN(xol, all)) + per[1] * (double)MIN(xol, all);
}

void count_times(const struct count *ct, const struct count_fn *fn, const struct pcmon_cstat *s,
		 struct count_times *t)
{
	const double pair[2] = { ct->cost_ns, ct->cost_xol_ns };
	const double *sp = ct->spread_ns;
	/* steal counted after a probe that may have been on either side of it: in the error
	 * of every time of the calls it may be in (count.bpf.c, place_steal()) */
	double unplaced = (double)(s->unplaced_steal_ns + ct->unplaced_steal_ns);
	/* ... of which one call's time may hold at most its largest placement (the table's, that
	 * could not be placed in a row, whole) */
	double unplaced1 = (double)(s->max_unplaced_ns + ct->unplaced_steal_ns);
	double in[2], out[2], split[2];
	int k = fn->xol ? 1 : 0;

	for (int i = 0; i < 2; i++) {
		in[i] = MIN(ct->in_ns[i], pair[i]);
		out[i] = MAX(pair[i] - in[i], 0);
		split[i] = sp[i] + ct->split_err_ns[i]; /* the part in the call, or its caller's */
	}
	/* self: the inner part of its own pairs, the outer of its callees', the whole of the
	 * context procedures' (WHEN) whose time is its */
	t->self_sub = in[k] * (double)s->closed + by_kind(out, s->kids, s->kids_xol) +
		      by_kind(pair, s->self_ctx, s->self_ctx_xol) + (double)s->self_pre_ns;
	/* the hypervisor's steal is in the times, and in their error: some may have been at
	 * the probes, which the program's own clock would not see (REAL; 0 in VIRTUAL) */
	t->self_err = split[k] * (double)s->closed + by_kind(split, s->kids, s->kids_xol) +
		      by_kind(sp, s->self_ctx, s->self_ctx_xol) + (double)s->self_steal_ns;
	/* self+children: its own inner part, the whole pairs of what is inside; in both, the
	 * time its thread was preempted at those probes, as BPF saw it (exact) */
	t->total_sub = by_kind(pair, s->total_acts, s->total_acts_xol) - out[k] * (double)s->outer +
		       (double)s->total_pre_ns;
	t->probes = by_kind(pair, s->total_acts, s->total_acts_xol) + (double)s->total_pre_ns;
	t->total_err = by_kind(sp, s->total_acts, s->total_acts_xol) +
		       ct->split_err_ns[k] * (double)s->outer + (double)s->total_steal_ns;
	t->self_err += unplaced;
	t->total_err += unplaced;
	t->total = MAX((double)s->total_ns - t->total_sub, 0);
	t->self = MIN(MAX((double)s->self_ns - t->self_sub, 0), t->total);
	t->avg = s->outer ? t->total / (double)s->outer : 0;
	t->avg_err = s->outer ? t->total_err / (double)s->outer : 0;
	/* the extremes, the cost taken out in BPF; kept in order with the average and total */
	t->max = MIN(MAX((double)s->max_ns, t->avg), t->total);
	t->max_err = by_kind(sp, s->max_acts, s->max_acts_xol) + (double)s->max_steal_ns + unplaced1;
	t->min = MIN((double)s->min_ns, t->avg);
	t->min_err = by_kind(sp, s->min_acts, s->min_acts_xol) + (double)s->min_steal_ns + unplaced1;
}

double count_self_ns_of(const struct count *ct, const struct count_fn *fn,
			const struct pcmon_cstat *s)
{
	struct count_times t;

	count_times(ct, fn, s, &t);
	return t.self;
}

double count_total_ns_of(const struct count *ct, const struct count_fn *fn,
			 const struct pcmon_cstat *s)
{
	struct count_times t;

	count_times(ct, fn, s, &t);
	return t.total;
}

double count_self_ns(const struct count *ct, const struct count_fn *fn)
{
	return count_self_ns_of(ct, fn, &fn->stat);
}

double count_total_ns(const struct count *ct, const struct count_fn *fn)
{
	return count_total_ns_of(ct, fn, &fn->stat);
}

/* A time and its error; below it, the time is below resolution. */
static void time_json(cJSON *x, const char *key, double v, double err, cJSON *below)
{
	char name[32];

	cJSON_AddNumberToObject(x, key, v);
	snprintf(name, sizeof(name), "%.*s_err_ns", (int)(strlen(key) - 3), key);
	cJSON_AddNumberToObject(x, name, err);
	if (v < err && below)
		cJSON_AddItemToArray(below, cJSON_CreateStringReference(key));
}

/*
 * The columns of calls of one class of @fn (*@open of them open now; NULL: a window, which
 * keeps neither the extremes nor the open calls by time).
 */
static void class_json(const struct count *ct, const struct count_fn *fn,
		       const struct pcmon_cstat *s, const uint64_t *open, cJSON *x)
{
	cJSON *below = cJSON_CreateArray();
	struct count_times t;

	count_times(ct, fn, s, &t);
	cJSON_AddNumberToObject(x, "calls", s->calls);
	time_json(x, "self_ns", t.self, t.self_err, below);
	time_json(x, "total_ns", t.total, t.total_err, below);
	time_json(x, "avg_ns", t.avg, t.avg_err, below);
	if (open && s->closed) {
		time_json(x, "min_ns", t.min, t.min_err, below);
		time_json(x, "max_ns", t.max, t.max_err, below);
	} else {
		cJSON_AddNullToObject(x, "min_ns");
		cJSON_AddNullToObject(x, "max_ns");
	}
	if (open)
		cJSON_AddNumberToObject(x, "open", *open);
	else
		cJSON_AddNullToObject(x, "open");
	cJSON_AddNumberToObject(x, "unwound", s->unwound);
	cJSON_AddNumberToObject(x, "exited", s->exited);
	cJSON_AddNumberToObject(x, "too_deep", s->too_deep);
	cJSON_AddNumberToObject(x, "subtracted_self_ns", t.self_sub);
	cJSON_AddNumberToObject(x, "subtracted_ns", t.total_sub);
	cJSON_AddNumberToObject(x, "probes_ns", t.probes);
	/* of those, the time its threads were preempted at the probes (BPF, count_switch) */
	cJSON_AddNumberToObject(x, "preempted_at_probes_ns", (double)s->total_pre_ns);
	/* and the time the hypervisor stole from them during the calls (in the error) */
	cJSON_AddNumberToObject(x, "stolen_ns", (double)s->total_steal_ns);
	/* and what it stole that cannot be placed on one side of a probe (in the error) */
	cJSON_AddNumberToObject(x, "unplaced_steal_ns", (double)s->unplaced_steal_ns);
	/* the probes cost more than the code they time: their cost swamps it */
	cJSON_AddBoolToObject(x, "swamped", s->closed && t.probes > t.total);
	if (below)
		cJSON_AddItemToObject(x, "below_resolution", below);
}

/* @fn's matching calls by the frame the pattern's ':' charges, most calls first. */
static void charges_json(const struct count *ct, const struct count_fn *fn, cJSON *arr)
{
	uint32_t i = fn - ct->fns;
	const struct count_charge *last = NULL;

	/* a selection, not a sort: a procedure is charged to few frames */
	for (;;) {
		const struct count_charge *best = NULL;

		for (size_t k = 0; k < ct->ncharges; k++) {
			const struct count_charge *c = &ct->charges[k];

			if (c->fn != i || !c->s.calls)
				continue;
			if (last && (c->s.calls > last->s.calls ||
				     (c->s.calls == last->s.calls && c <= last)))
				continue; /* listed already */
			if (!best || c->s.calls > best->s.calls)
				best = c;
		}
		if (!best)
			break;
		{
			cJSON *x = cJSON_CreateObject();

			cJSON_AddStringToObject(x, "procedure", best->to);
			class_json(ct, fn, &best->s, &best->open, x);
			cJSON_AddItemToArray(arr, x);
		}
		last = best;
	}
}

/*
 * What the target's WHEN pattern is and how it was answered at the probes; with @counts,
 * the calls not told apart by reason (whole life: a window has none, as it has no classes).
 */
static void when_json(const struct count *ct, bool counts, cJSON *o)
{
	cJSON *w = cJSON_AddObjectToObject(o, "when"), *u;
	uint64_t all = 0;

	cJSON_AddStringToObject(w, "pattern", ct->when_text);
	cJSON_AddStringToObject(w, "method", ct->when_mode == PCMON_CW_SHADOW ? "shadow stack"
									   : "stack walk");
	if (ct->when_mode == PCMON_CW_WALK)
		cJSON_AddStringToObject(w, "why_walk", ct->when_why);
	cJSON_AddBoolToObject(w, "context_late", ct->ctx_late);
	if (!counts)
		return;
	u = cJSON_AddObjectToObject(w, "unknown_by_reason");
#define UNKNOWN_JSON(f)                                            \
	cJSON_AddNumberToObject(u, #f, ct->unknown.f); \
	all += ct->unknown.f;
	COUNT_UNKNOWN_REASONS(UNKNOWN_JSON)
#undef UNKNOWN_JSON
	cJSON_AddNumberToObject(w, "unknown_calls", all);
}

/* The column the table is sorted by. */
static double sort_key(const struct count *ct, const struct count_fn *fn, const char *sort)
{
	if (!strcmp(sort, "calls"))
		return fn->stat.calls;
	if (!strcmp(sort, "total"))
		return count_total_ns(ct, fn);
	if (!strcmp(sort, "avg"))
		return fn->stat.outer ? count_total_ns(ct, fn) / fn->stat.outer : 0;
	return count_self_ns(ct, fn);
}

/* A row's sums @v added back to @s (PCMON_CSTAT_FIELDS order, as count.c made them) */
static void words_add(struct pcmon_cstat *s, const uint64_t *v)
{
	size_t k = 0;

#define ADD(f, need) s->f += v[k++];
	PCMON_CSTAT_FIELDS(ADD)
#undef ADD
}

int count_report_json(const struct count *ct, const uint64_t *open,
		      const struct counter_prog_stats *ps, const char *sort, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "calls"), *arr, *x;
	double subtracted = 0;
	size_t *order, n = 0;

	order = calloc(ct->nfns + 1, sizeof(*order));
	if (!o || !order) {
		free(order);
		return -ENOMEM;
	}
	cJSON_AddStringToObject(o, "mode", ct->virt ? "VIRTUAL" : "REAL");
	cJSON_AddNumberToObject(o, "clock_repairs", ct->clock_repairs);
	cJSON_AddNumberToObject(o, "unplaced_steal_ns", (double)ct->unplaced_steal_ns);
	cJSON_AddNumberToObject(o, "probe_cost_ns", ct->cost_ns);
	cJSON_AddNumberToObject(o, "stepped_probe_cost_ns", ct->cost_xol_ns);
	cJSON_AddNumberToObject(o, "probe_cost_spread_ns", ct->spread_ns[0]);
	cJSON_AddNumberToObject(o, "stepped_probe_cost_spread_ns", ct->spread_ns[1]);
	cJSON_AddNumberToObject(o, "probe_cost_inner_ns", ct->in_ns[0]);
	cJSON_AddNumberToObject(o, "stepped_probe_cost_inner_ns", ct->in_ns[1]);
	cJSON_AddNumberToObject(o, "return_probe_cost_ns", ct->ret_ns);
	cJSON_AddNumberToObject(o, "probe_cost_cpus", ct->cost_cpus);
	cJSON_AddNumberToObject(o, "objects_searched", ct->searched);
	if (ct->when_text)
		when_json(ct, open != NULL, o);
	x = cJSON_AddArrayToObject(o, "unmatched");
	for (size_t i = 0; i < ct->npats; i++)
		if (!ct->matched[i])
			cJSON_AddItemToArray(x, cJSON_CreateString(ct->patterns[i]));
	x = cJSON_AddArrayToObject(o, "unmatched_near"); /* (parallel: its nearest names) */
	for (size_t i = 0; i < ct->npats; i++)
		if (!ct->matched[i])
			cJSON_AddItemToArray(x, ct->near ? near_json(&ct->near[i]) : cJSON_CreateArray());
	if (ps) {
		x = cJSON_AddObjectToObject(o, "programs");
		cJSON_AddNumberToObject(x, "runs", ps->run_cnt);
		cJSON_AddNumberToObject(x, "run_time_ns", ps->run_time_ns);
	}
	/* the table lists the counted procedures, not the context ones (WHEN) */
	for (size_t i = 0; i < ct->nfns; i++)
		if (!ct->fns[i].ctx)
			order[n++] = i;
	/* sorted by the chosen column, largest first (an insertion sort: tables are short) */
	for (size_t i = 1; i < n; i++) {
		for (size_t j = i; j > 0; j--) {
			size_t tmp = order[j];

			if (sort_key(ct, &ct->fns[order[j - 1]], sort) >= sort_key(ct, &ct->fns[tmp], sort))
				break;
			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	}
	arr = cJSON_AddArrayToObject(o, "procedures");
	for (size_t k = 0; k < n; k++) {
		const struct count_fn *fn = &ct->fns[order[k]];
		const uint64_t *op = open ? &open[order[k] * COUNT_NCLS] : NULL;
		char full[512];

		for (int c = 0; c < COUNT_NCLS; c++)
			subtracted += (fn->xol ? ct->cost_xol_ns : ct->cost_ns) * (double)fn->by[c].closed;
		x = cJSON_CreateObject();
		snprintf(full, sizeof(full), "%s.%s", fn->module, fn->name);
		cJSON_AddStringToObject(x, "procedure", full);
		cJSON_AddStringToObject(x, "module", fn->module);
		cJSON_AddStringToObject(x, "name", fn->name);
		class_json(ct, fn, &fn->stat, op ? &op[COUNT_MATCH] : NULL, x);
		cJSON_AddBoolToObject(x, "attached_late", fn->late);
		cJSON_AddBoolToObject(x, "stepped_probe", fn->xol);
		/*
		 * With a pattern, the calls above are those that matched: the others apart. A
		 * window keeps the matching calls only (the classes are not kept by time).
		 */
		if (ct->when_text && op) {
			class_json(ct, fn, &fn->by[COUNT_OTHER], &op[COUNT_OTHER],
				   cJSON_AddObjectToObject(x, "not_matching"));
			class_json(ct, fn, &fn->by[COUNT_UNKNOWN], &op[COUNT_UNKNOWN],
				   cJSON_AddObjectToObject(x, "unknown"));
		}
		if (ct->when && pat_has_colon(ct->when) && op)
			charges_json(ct, fn, cJSON_AddArrayToObject(x, "charged_to"));
		cJSON_AddItemToArray(arr, x);
	}
	cJSON_AddNumberToObject(o, "subtracted_ns", subtracted);
	free(order);
	return 0;
}

struct window_sum {
	struct count_fn *fns;
	size_t n;
};

static void sum_row(void *ctx, const uint64_t *row)
{
	struct window_sum *ws = ctx;

	if (row[0] < ws->n) /* (a loaded file's rows were checked against its procedures) */
		words_add(&ws->fns[row[0]].stat, row + 1);
}

int count_window_json(const struct count *ct, struct timed_window *w, const char *sort,
		      cJSON *rep)
{
	struct count win = *ct;
	struct window_sum ws = { .n = ct->nfns };
	int r;

	/* the same table, each procedure's totals those of the window's slices */
	ws.fns = calloc(ct->nfns + 1, sizeof(*ws.fns));
	if (!ws.fns)
		return -ENOMEM;
	for (size_t i = 0; i < ct->nfns; i++) {
		ws.fns[i] = ct->fns[i];
		memset(ws.fns[i].by, 0, sizeof(ws.fns[i].by));
	}
	timed_window_take(w, ct->slices, sum_row, &ws);
	win.fns = ws.fns;
	r = count_report_json(&win, NULL, NULL, sort, rep);
	if (!r)
		timed_window_json(w, cJSON_GetObjectItemCaseSensitive(rep, "calls"));
	free(ws.fns);
	return r;
}
