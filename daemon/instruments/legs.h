/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * legs_: the probe-node instrument (docs/legs.md), the Mesa PerfTool's nodes, legs and
 * histograms: `--node NODE [--hist-arg N]`, `--leg FROM:TO`, `--hist ...`, `pcmon tables`.
 * Kernel side: bpf/legs.bpf.c.
 */
#ifndef PCMON_LEGS_H
#define PCMON_LEGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inst.h"
#include "pcmon_legs.h"
#include "pcmon_tail.h"

struct bpf_link;
struct pat;

struct legs_node {
	char *spec;		/* as given: PROC, PROC%return, PROC+OFF, provider:name */
	uint32_t arg;		/* record argument arg - 1; 0: none */
	uint32_t cost_ns;	/* what a hit costs (its probe stepped out of line, or not) ... */
	uint32_t pre_ns;	/* ... before BPF reads the clock (the trap in: half an emulated hit) */
	struct pcmon_hcfg hist;
	struct bpf_link **links;	/* one per probed address */
	size_t nlinks;
	uint64_t hits;		/* as last read (or loaded); with WHEN, the matching ones ... */
	uint64_t other, unknown;	/* ... the others, and those not told */
	struct pcmon_wadv adv;	/* WHEN: how its procedure moves the pattern's state */
	struct pcmon_hist h;	/* its histogram's counts, as last read (or loaded) */
	struct pcmon_hist h0;	/* what BPF's counts held when the histogram was set up */
	uint64_t c_hits;	/* BPF's raw counts already in the time slices */
	struct pcmon_hist c_h;
};

struct legs_leg {
	uint32_t id, from, to;	/* from/to: node numbers, PCMON_ANY_NODE for '*' */
	struct pcmon_leg stat;	/* its totals, as last read (or loaded); stat.h less h0 */
	struct pcmon_hcfg hist;
	struct pcmon_hist h0;	/* what BPF's counts held when the histogram was set up */
	struct pcmon_leg c;	/* BPF's raw totals already in the time slices */
};

/*
 * The tables' time slices hold one sum per row (slices of width 1), keyed by what it
 * counts: LEGS_KEY(slot, field), slot 2 * i for node i + 1 and 2 * id + 1 for leg id. A
 * node's fields: its hits, its histogram's underflow, overflow and buckets; a leg's: its
 * PCMON_LEG_FIELDS in order (min_ns and max_ns never: a window has no extremes), then its
 * histogram's. A slice holds what each gained in it, rows only for those that did.
 */
#define LEGS_KEY(slot, field) ((uint64_t)(slot) << 7 | (field))
#define LEGS_NODE_SLOT(i) (2 * (uint64_t)(i))
#define LEGS_LEG_SLOT(id) (2 * (uint64_t)(id) + 1)
#define LEGS_NODE_HIST 1	/* a node's histogram fields from here */
#define LEGS_LEG_HIST 8		/* a leg's */
/* A leg's field @k of PCMON_LEG_FIELDS: the first LEGS_LEG_HIST before its histogram, the
 * others after it (LEGS_LEG_LATE on), where no histogram field is. */
#define LEGS_LEG_LATE (LEGS_LEG_HIST + 2 + PCMON_HIST_BUCKETS + 1)
#define LEGS_LEG_FIELD(k) ((k) < LEGS_LEG_HIST ? (k) : LEGS_LEG_LATE + (k) - LEGS_LEG_HIST)
#define LEGS_MAX_KEY LEGS_KEY(2 * 1000000 + 2, 0)	/* (leg ids below 1000000) */

struct timed_window;

/* One target's nodes and legs. */
struct legs {
	struct legs_node *nodes;	/* node i + 1 */
	size_t nnodes;
	struct legs_leg *legs;
	size_t nlegs, cap_legs;
	uint32_t track, add;	/* enum pcmon_track; 1: --add successor */
	double hit_cost_ns;	/* one probe hit, as measured when it started ... */
	double step_cost_ns;	/* ... and what one whose instruction is stepped adds */
	double hit_err_ns;	/* how far a hit's cost, and the part of it within a leg, may
				 * be off (its spread and half a hit: legs_calibrate()) */
	bool detached;
	struct slices *slices;	/* the counts by time (slices.h), NULL: none kept */
	uint64_t last_read;	/* wall ns of the last read of BPF's counts */
	uint64_t charge_wall;	/* the slice what is folded now goes to */

	/* WHEN (docs/when.md, "At probes"): from the legs' counter's shadow stack */
	char *when_text;	/* NULL: every hit counts */
	bool when_file, icase;
	struct pat *when;
	struct pcmon_wpat wpat;
	struct bpf_link **ctx_links;	/* the context procedures' entry and return probes */
	size_t nctx_links;
	bool clock_held;	/* the counter's scheduler hook held for it (counter_target_cfg) */
	/* steal counted after a hit, which may have fallen on either side of it: in every
	 * leg's error (counter_unplaced_steal(), from unplaced_at, its value at the zero) */
	uint64_t unplaced_steal_ns, unplaced_at;
	/* --tail LEG[:THRESHOLD] (tail.h, docs/tail.md): the legs tailed, in slot order; their
	 * profiles are the sampling instrument's (struct sample.tails) */
	struct legs_tail {
		uint32_t leg;		/* its number */
		uint64_t ns;		/* a duration, or 0: ... */
		double pct;		/* ... a percentile of its durations */
	} tails[PCMON_TAIL_LEGS];
	size_t ntails;
	size_t tails_on;	/* of them, counted in BPF's pglobal.ntailed (procs_tails()) */
};

extern const struct inst_ops legs_ops;

struct counter_prog_stats;

/* The pure parts, apart from BPF (tests/unit/test_legs.c; what BPF computes per hit is in
 * pcmon_legs.h). */

/* A hit's cost from the calibration's @emulated and @stepped entry-and-return pairs, and
 * its error from their @spread (that of the emulated pair). */
void legs_calibrate(struct legs *lg, double emulated, double stepped);
void legs_calibrate_err(struct legs *lg, double spread);
/*
 * A leg's times, the probes' cost taken out (BPF) with their error: the spread of the hits
 * inside and of the part of its ends' hits in it. Kept in order: min <= avg <= max <=
 * total, none below 0; a time below its error is below resolution.
 */
struct legs_times {
	double total, avg, min, max;
	double total_err, avg_err, min_err, max_err;
};
void legs_leg_times(const struct legs *lg, const struct pcmon_leg *s, struct legs_times *t);
/* Node @i's cost a hit and the part of it before its clock reading, rounded to the ns. */
void legs_node_cost(struct legs *lg, size_t i, bool xol);
/*
 * --track all's index of @lg's legs: per node (nl[0, @nn), node 0 for '*') the legs it
 * starts and ends, up to PCMON_NODE_LEGS each; every leg in @tl, up to PCMON_TARGET_LEGS.
 * Legs --add successor added are left out: BPF times them from the thread's last node.
 */
void legs_index(const struct legs *lg, struct pcmon_nlegs *nl, size_t nn, struct pcmon_tlegs *tl);
/* Node @i's and leg (@from, @to)'s totals as BPF holds them, into @lg: histograms counted
 * since they were set up. A leg not in the table is one --add successor added, appended.
 * legs_fold_leg(): 0 or -ENOMEM. */
void legs_fold_node(struct legs *lg, size_t i, const struct pcmon_node *n);
int legs_fold_leg(struct legs *lg, uint32_t from, uint32_t to, const struct pcmon_leg *l);
/* The tables of @lg as the "tables" object of @rep, @elapsed ns since the target started;
 * @ps: the node programs' run-time statistics, or NULL. 0 or -ENOMEM. */
int legs_tables_json(const struct legs *lg, double elapsed, const struct counter_prog_stats *ps,
		     cJSON *rep);
/* The tables of a window @w, from the slices it takes: counts, totals and histograms of
 * the window; no min or max (not kept by time). 0 or -ENOMEM. */
int legs_window_json(const struct legs *lg, struct timed_window *w, cJSON *rep);

#endif
