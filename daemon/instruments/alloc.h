/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * alloc_: the allocation instrument (docs/alloc.md). A target started with --alloc samples
 * the bytes its processes allocate through the allocator's functions (allocator.c, BPF's
 * side bpf/alloc.bpf.c): each sample is a stack, a size and the block's address, live until
 * its free. The engine keeps the stacks (an aggregate, as sampling's: views read it) and
 * what each allocated and holds (alloc_core.c), and lists them by procedure.
 */
#ifndef PCMON_ALLOC_INST_H
#define PCMON_ALLOC_INST_H

#include <stdbool.h>
#include <stdint.h>

#include "inst.h"
#include "pcmon_alloc.h"

#define ALLOC_RATE_DEFAULT (512u << 10)

struct agg;
struct alloc_core;

struct alloc {
	uint64_t rate;		/* mean bytes between samples */
	char *names[PCMON_AFN_N]; /* --alloc-functions, by enum pcmon_afn (none: glibc's) */
	bool named;
	struct agg *stacks;	/* the sampled allocations' stacks (count: samples) */
	struct alloc_core *core;
	struct slices *slices;	/* by stack id, AC_N sums (alloc_core.h): NULL read back */
	uint64_t var_unit;	/* alloc_var_unit(rate) */
	uint64_t slices_lost;	/* records a slice could not take (out of memory) */
	uint64_t frees_lost;	/* a sampled block's free whose allocation record was lost */
	uint64_t zeroed_after;	/* records up to this id came before a zero (1 + it; 0: none) */
	uint64_t last_id;	/* the last allocation record's id */
	uint64_t records_lost;	/* records of processes no longer the target's */
	uint64_t probed_files;	/* objects whose allocator functions are probed */
	struct pidtab *members;	/* --cgroup: the processes of its list probed so far */
	struct pcmon_astat bpf;	/* BPF's counters, as last read (kept at stop, and in the file) */
	bool stopped;
	bool loaded;		/* read back from a results file */
	/* read back from a file written before the stacks were kept: its totals and its table
	 * by procedure only (no windows, no exports) */
	bool table_only;
	double saved[8];
	cJSON *saved_procs;
};

extern const struct inst_ops alloc_ops;

#endif
