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

struct legs_node {
	char *spec;		/* as given: PROC, PROC%return, PROC+OFF, provider:name */
	uint32_t arg;		/* record argument arg - 1; 0: none */
	uint32_t cost_ns;	/* what a hit costs (its probe stepped out of line, or not) ... */
	uint32_t pre_ns;	/* ... before BPF reads the clock (the trap in: half an emulated hit) */
	struct pcmon_hcfg hist;
	struct bpf_link **links;	/* one per probed address */
	size_t nlinks;
	uint64_t hits;		/* as last read (or loaded) */
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
};

extern const struct inst_ops legs_ops;


#endif
