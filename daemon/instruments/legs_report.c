// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Mesa tool's report, `pcmon tables`, as JSON (the "tables" object of a `list` reply):
 * the nodes' hits and the legs' times less the probes' cost, with their errors, and their
 * histograms; of the target's whole life, or of a window of its time slices. The CLI renders
 * its text from this (cli/format.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counter.h"
#include "legs.h"
#include "slices.h"
#include "timed.h"
#include "util.h"

static const char *const track_names[] = { [PCMON_TRACK_ALL] = "all",
					   [PCMON_TRACK_SUCCESSOR] = "successor",
					   [PCMON_TRACK_NONE] = "none" };

static void hist_json(const struct pcmon_hcfg *c, const struct pcmon_hist *h, cJSON *o)
{
	cJSON *x = cJSON_AddObjectToObject(o, "hist"), *b;
	uint32_t n = c->kind == PCMON_HIST_LOG ? PCMON_HIST_BUCKETS + 1 : c->buckets;

	cJSON_AddStringToObject(x, "kind", c->kind == PCMON_HIST_LOG ? "log" : "linear");
	if (c->kind == PCMON_HIST_LINEAR) {
		cJSON_AddNumberToObject(x, "scale", c->scale);
		cJSON_AddNumberToObject(x, "base", c->base);
	}
	cJSON_AddNumberToObject(x, "underflow", h->under);
	cJSON_AddNumberToObject(x, "overflow", h->over);
	b = cJSON_AddArrayToObject(x, "buckets");
	for (uint32_t i = 0; i < n && i <= PCMON_HIST_BUCKETS; i++)
		cJSON_AddItemToArray(b, cJSON_CreateNumber(h->b[i]));
}

/* @key's time @v with its error, and its name in @below if it is below the error. */
static void leg_time_json(cJSON *x, const char *key, double v, double err, cJSON *below)
{
	char k[32];

	cJSON_AddNumberToObject(x, key, v);
	snprintf(k, sizeof(k), "%.*s_err_ns", (int)strlen(key) - 3, key);
	cJSON_AddNumberToObject(x, k, err);
	if (below && v < err)
		cJSON_AddItemToArray(below, cJSON_CreateStringReference(key));
}

static int tables_json(const struct legs *lg, double elapsed, const struct counter_prog_stats *ps,
		       bool window, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "tables"), *arr, *x;
	double cost = 0;
	uint64_t hits = 0;

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < lg->nnodes; i++) {
		/* hits that did not match cost all the same */
		uint64_t all = lg->nodes[i].hits + lg->nodes[i].other + lg->nodes[i].unknown;

		hits += all;
		cost += all * (double)lg->nodes[i].cost_ns;
	}
	cJSON_AddNumberToObject(o, "elapsed_ns", elapsed);
	if (lg->when_text)
		cJSON_AddStringToObject(o, "when", lg->when_text);
	cJSON_AddStringToObject(o, "track", track_names[lg->track < 3 ? lg->track : 0]);
	/* steal the scheduler counted after a hit: in every leg's error (docs/legs.md) */
	cJSON_AddNumberToObject(o, "unplaced_steal_ns", (double)lg->unplaced_steal_ns);
	x = cJSON_AddObjectToObject(o, "overhead");
	cJSON_AddNumberToObject(x, "hits", hits);
	cJSON_AddNumberToObject(x, "per_hit_ns", hits ? cost / hits : lg->hit_cost_ns);
	cJSON_AddNumberToObject(x, "emulated_hit_ns", lg->hit_cost_ns);
	cJSON_AddNumberToObject(x, "stepped_hit_ns", lg->hit_cost_ns + lg->step_cost_ns);
	cJSON_AddNumberToObject(x, "total_ns", cost);
	cJSON_AddNumberToObject(x, "percent_of_elapsed", elapsed > 0 ? 100 * cost / elapsed : 0);
	if (ps) {
		cJSON_AddNumberToObject(x, "bpf_runs", ps->run_cnt);
		cJSON_AddNumberToObject(x, "bpf_run_time_ns", ps->run_time_ns);
	}
	arr = cJSON_AddArrayToObject(o, "nodes");
	for (size_t i = 0; i < lg->nnodes; i++) {
		const struct legs_node *n = &lg->nodes[i];

		if (!n->spec[0])
			continue; /* deleted */
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "id", i + 1);
		cJSON_AddStringToObject(x, "spec", n->spec);
		cJSON_AddNumberToObject(x, "hits", n->hits);
		if (lg->when_text && window) { /* (not kept by time) */
			cJSON_AddNullToObject(x, "not_matching");
			cJSON_AddNullToObject(x, "unknown");
		} else if (lg->when_text) {
			cJSON_AddNumberToObject(x, "not_matching", n->other);
			cJSON_AddNumberToObject(x, "unknown", n->unknown);
		}
		cJSON_AddNumberToObject(x, "cost_ns", n->cost_ns);
		cJSON_AddNumberToObject(x, "cost_before_ns", n->pre_ns);
		if (n->arg)
			cJSON_AddNumberToObject(x, "arg", n->arg - 1);
		if (n->hist.kind)
			hist_json(&n->hist, &n->h, x);
		cJSON_AddItemToArray(arr, x);
	}
	arr = cJSON_AddArrayToObject(o, "legs");
	for (size_t i = 0; i < lg->nlegs; i++) {
		const struct pcmon_leg *s = &lg->legs[i].stat;
		cJSON *below = cJSON_CreateArray();
		struct legs_times t;
		double total;

		legs_leg_times(lg, s, &t); /* net of the probe hits inside (BPF) */
		total = t.total;
		x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "id", lg->legs[i].id);
		cJSON_AddNumberToObject(x, "from", lg->legs[i].from);
		cJSON_AddNumberToObject(x, "to", lg->legs[i].to);
		cJSON_AddNumberToObject(x, "count", s->count);
		leg_time_json(x, "total_ns", t.total, t.total_err, below);
		leg_time_json(x, "avg_ns", t.avg, t.avg_err, below);
		if (window) { /* extremes are not kept by time */
			cJSON_AddNullToObject(x, "min_ns");
			cJSON_AddNullToObject(x, "max_ns");
		} else {
			leg_time_json(x, "min_ns", t.min, t.min_err, below);
			leg_time_json(x, "max_ns", t.max, t.max_err, below);
		}
		if (below)
			cJSON_AddItemToObject(x, "below_resolution", below);
		cJSON_AddNumberToObject(x, "percent_of_elapsed", elapsed > 0 ? 100 * total / elapsed : 0);
		cJSON_AddNumberToObject(x, "abandoned", s->abandoned);
		cJSON_AddNumberToObject(x, "untracked", s->untracked);
		cJSON_AddNumberToObject(x, "probe_hits", s->probe_hits);
		cJSON_AddNumberToObject(x, "probe_ns", s->probe_ns);
		cJSON_AddNumberToObject(x, "preempted_at_probes_ns", s->preempted_ns);
		cJSON_AddNumberToObject(x, "stolen_ns", s->stolen_ns);
		cJSON_AddBoolToObject(x, "added", !s->id);
		if (lg->legs[i].hist.kind)
			hist_json(&lg->legs[i].hist, &s->h, x);
		cJSON_AddItemToArray(arr, x);
	}
	return 0;
}

int legs_tables_json(const struct legs *lg, double elapsed, const struct counter_prog_stats *ps,
		     cJSON *rep)
{
	return tables_json(lg, elapsed, ps, false, rep);
}

/* A row of the window's slices, into the tables' copy @ctx. */
static void sum_row(void *ctx, const uint64_t *row)
{
	struct legs *lg = ctx;
	uint64_t slot = row[0] >> 7, v = row[1];
	uint32_t field = row[0] & 127;
	struct pcmon_hist *h = NULL;

	if (!(slot & 1)) {
		if (slot / 2 >= lg->nnodes)
			return;
		if (!field)
			lg->nodes[slot / 2].hits += v;
		else
			h = &lg->nodes[slot / 2].h, field -= LEGS_NODE_HIST;
	} else {
		struct legs_leg *l = NULL;
		uint32_t k = 0;

		for (size_t i = 0; i < lg->nlegs && !l; i++)
			if (LEGS_LEG_SLOT(lg->legs[i].id) == slot)
				l = &lg->legs[i];
		if (!l)
			return; /* a leg deleted since */
		if (field >= LEGS_LEG_LATE) {
			field = field - LEGS_LEG_LATE + LEGS_LEG_HIST;
		} else if (field >= LEGS_LEG_HIST) {
			h = &l->stat.h;
			field -= LEGS_LEG_HIST;
		}
#define SUM_LEG(f, need)                  \
	if (!h && field == k)             \
		l->stat.f += v;           \
	k++;
		PCMON_LEG_FIELDS(SUM_LEG)
#undef SUM_LEG
	}
	if (!h)
		return;
	if (field == 0)
		h->under += v;
	else if (field == 1)
		h->over += v;
	else if (field - 2 < ARRAY_SIZE(h->b))
		h->b[field - 2] += v;
}

int legs_window_json(const struct legs *lg, struct timed_window *w, cJSON *rep)
{
	struct legs win = *lg;
	int r = -ENOMEM;

	/* the same tables, their counts those of the window's slices */
	win.nodes = calloc(lg->nnodes + 1, sizeof(*win.nodes));
	win.legs = calloc(lg->nlegs + 1, sizeof(*win.legs));
	if (!win.nodes || !win.legs)
		goto out;
	for (size_t i = 0; i < lg->nnodes; i++) {
		win.nodes[i] = lg->nodes[i];
		win.nodes[i].hits = 0;
		memset(&win.nodes[i].h, 0, sizeof(win.nodes[i].h));
	}
	for (size_t i = 0; i < lg->nlegs; i++) {
		win.legs[i] = lg->legs[i];
		win.legs[i].stat = (struct pcmon_leg){ .id = lg->legs[i].stat.id };
	}
	timed_window_take(w, lg->slices, sum_row, &win);
	r = tables_json(&win, (double)timed_window_ns(w), NULL, true, rep);
	if (!r)
		timed_window_json(w, cJSON_GetObjectItemCaseSensitive(rep, "tables"));
out:
	free(win.nodes);
	free(win.legs);
	return r;
}
