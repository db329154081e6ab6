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
};

struct legs_leg {
	uint32_t id, from, to;	/* from/to: node numbers, PCMON_ANY_NODE for '*' */
	struct pcmon_leg stat;	/* its totals, as last read (or loaded); stat.h less h0 */
	struct pcmon_hcfg hist;
	struct pcmon_hist h0;	/* what BPF's counts held when the histogram was set up */
};

/* One target's nodes and legs. */
struct legs {
	struct legs_node *nodes;	/* node i + 1 */
	size_t nnodes;
	struct legs_leg *legs;
	size_t nlegs, cap_legs;
	uint32_t track, add;	/* enum pcmon_track; 1: --add successor */
	double hit_cost_ns;	/* one probe hit, as measured when it started ... */
	double step_cost_ns;	/* ... and what one whose instruction is stepped adds */
	bool detached;

	/* WHEN (docs/when.md, "At probes"): from the legs' counter's shadow stack */
	char *when_text;	/* NULL: every hit counts */
	bool when_file, icase;
	struct pat *when;
	struct pcmon_wpat wpat;
	struct bpf_link **ctx_links;	/* the context procedures' entry and return probes */
	size_t nctx_links;
};

extern const struct inst_ops legs_ops;

struct counter_prog_stats;

/* The pure parts, apart from BPF (tests/unit/test_legs.c; what BPF computes per hit is in
 * pcmon_legs.h). */

/* A hit's cost from the calibration's @emulated and @stepped entry-and-return pairs. */
void legs_calibrate(struct legs *lg, double emulated, double stepped);
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

#endif
