/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The allocation instrument's parts (alloc.h): its ops (alloc_ops.c: probes, records, the
 * target's life, results files) and its listing (alloc_report.c), from the bottom up.
 */
#ifndef PCMON_ALLOC_INT_H
#define PCMON_ALLOC_INT_H

#include <cJSON.h>

#include "alloc.h"
#include "alloc_core.h"
#include "pcmon_alloc.h"

struct allocator;
struct list_req;
struct sym;
struct target;

struct alloc_g {
	struct inst_env env;	/* (first: inst_g_new()) */
	struct allocator *al;	/* opened with the first target that watches allocations */
	struct agg_stack *st;	/* a record's stack, as it is built */
	__u64 pcs[PCMON_STACK_MAX]; /* ... its pcs */
	uint64_t wall_minus_mono;   /* CLOCK_REALTIME - CLOCK_MONOTONIC, as the ring was read */
	char err[256];
};

/* A target's totals, by A_*: summed over its sites (or as read back from its file). */
enum { A_ALLOC_BYTES, A_ALLOC_OBJECTS, A_INUSE_BYTES, A_INUSE_OBJECTS, A_ALLOC_VAR, A_INUSE_VAR,
       A_SAMPLES, A_N };
void alloc_totals(const struct alloc *a, double *v);

/*
 * Its part of a `list` reply (inst_ops.list_json), with what BPF counted apart (a->bpf, as
 * last read): the table, or with @lr->stacks the exports' profile. 0, or -1 with *@err.
 */
int alloc_report_json(struct sym *sym, const struct target *t, const struct alloc *a,
		      const struct list_req *lr, cJSON *rep, cJSON **err);

/*
 * "timeline": {"sort", "slices": [{"t0", "t1", "alloc_bytes", "alloc_bytes_stderr",
 * "inuse_bytes", "inuse_bytes_stderr"}], "procedures": [{"procedure", "module", "name",
 * "alloc_bytes": [...], "inuse_bytes": [...]}]} into @out (alloc_time.c): each slice of
 * window @w, what it allocated and what was live at its end, and the own bytes of the
 * lr->timeline_top procedures that hold the most at the window's end (--sort alloc: that
 * allocated the most in it). 0 or -ENOMEM.
 */
struct timed_window;
int alloc_timeline_json(const struct alloc *a, const struct sym *s, const struct list_req *lr,
			const struct timed_window *w, cJSON *out);

/* The table by procedure into @out ("sort", "procedures"): 0 or -ENOMEM. */
int alloc_procedures_json(const struct alloc *a, const struct sym *s, const struct list_req *lr,
			  cJSON *out);
/* A results file's table ("procedures", optional), checked: into *@out (NULL: none). */
struct sf_rd;
int alloc_procedures_load(struct sf_rd *rd, const cJSON *section, cJSON **out);

#endif
