/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * count_: the call-counting instrument (docs/count.md), `--count PATTERN`: calls, self time and
 * self+children time per procedure, from entry and return probes (counter.h, bpf/count.bpf.c).
 */
#ifndef PCMON_COUNT_H
#define PCMON_COUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inst.h"
#include "pcmon_count.h"

struct bpf_link;
struct pat;

/* What a call's stack at entry was, by the target's WHEN pattern. */
enum count_cls { COUNT_MATCH, COUNT_OTHER, COUNT_UNKNOWN, COUNT_NCLS };

/* Why calls could not be classed, defined once: X(field, words in the JSON). */
#define COUNT_UNKNOWN_REASONS(X)                                                           \
	X(unwalked)	/* the stack walk failed at the entry */                           \
	X(not_kept)	/* walked, but the stacks map was full (or a hash collision) */    \
	X(unresolved)	/* its addresses could not be read back or named */                \
	X(cut_short)	/* the walk stopped short of the root (a frame without a frame     \
			 * pointer, or too deep) and what it walked did not match */      \
	X(too_deep)	/* the shadow stack was past its depth: no state kept */

struct count_unknown {
#define COUNT_UNKNOWN_FIELD(f) uint64_t f;
	COUNT_UNKNOWN_REASONS(COUNT_UNKNOWN_FIELD)
#undef COUNT_UNKNOWN_FIELD
};

/* A walked stack, once named and matched. */
struct count_stack {
	uint8_t cls;		/* enum count_cls */
	char *to;		/* with a ':': the frame it charges, "module.procedure" (or
				 * "foreignPcs": above the root, or a frame without a name) */
};

/*
 * With a ':' in the pattern (docs/when.md, "Attribution"), a procedure's matching calls
 * are also split by the frame the colon charges, as a sample would be: fn's calls charged
 * to @to. Their sum is fn's matching calls.
 */
struct count_charge {
	uint32_t fn;
	char *to;
	struct pcmon_cstat s;
	uint64_t open;
};

/* One probed procedure: a (file, start) the patterns name. */
struct count_fn {
	char *module, *name;
	uint64_t vaddr;
	bool late;		/* probed after its process had started running it: calls
				 * before then are not counted */
	bool xol;		/* its probed instruction is stepped out of line (dearer) */
	bool ctx;		/* probed only because the WHEN pattern names it: not in the table */
	struct bpf_link *entry, *ret;
	/* raw totals, as last read from BPF (or loaded), by class (WHEN): calls whose stack
	 * matched (all of them without a pattern), did not, or could not be told */
	union {
		struct pcmon_cstat stat;	/* by[COUNT_MATCH] */
		struct pcmon_cstat by[COUNT_NCLS];
	};
	struct pcmon_cstat charged;	/* of stat, what is in the time slices already */
};

/*
 * A procedure's row in the time slices: its totals as words, in PCMON_CSTAT_FIELDS order,
 * by its index in fns. A slice holds what the totals gained in it; max_ns, a maximum, not
 * a sum, is 0 in every slice (a window has no maximum).
 */
#define COUNT_WIDTH (sizeof(struct pcmon_cstat) / sizeof(__u64))
#define COUNT_WIDTH_V5 13	/* before min_ns and the callees were kept: the first 13 */
#define COUNT_WIDTH_STEAL 22	/* before the hypervisor's steal was kept: the first 22 */
#define COUNT_WIDTH_UNPLACED 26	/* before its unplaced part was (unplaced_steal_ns) */

struct timed_window;

/* One target's call counting. */
struct count {
	char **patterns;
	struct pat **pats;
	bool *matched;		/* pattern i has named a procedure */
	struct near *near;	/* ... and if not, the names nearest it (in memory only) */
	size_t npats;
	uint32_t max_probes;
	struct count_fn *fns;	/* fns[i] is the procedure of cookie (target, i) */
	size_t nfns, cap_fns;
	struct { dev_t dev; ino_t ino; } *objs;	/* objects searched */
	size_t nobjs, cap_objs;
	size_t searched;	/* objects looked into, for "matches nothing" */
	double cost_ns;		/* one entry + return probe, as measured when it started ... */
	double cost_xol_ns;	/* ... where the instruction is stepped out of line */
	double in_ns[2];	/* of each (emulated, stepped), the part inside the activation's
				 * clock readings; the rest is in its caller's self time */
	double spread_ns[2];	/* how far each may stray from the measure (its error) */
	double split_err_ns[2];	/* how far in_ns may be off (count_attach.c, cost_set()) */
	double ret_ns;		/* of cost_ns, the return probe's */
	int cost_cpus;		/* the CPUs it was measured on (0: not measured, or loaded
				 * from a file written before the spread was kept) */
	bool virt;		/* times are the threads' CPU time (VIRTUAL), else wall (REAL) */
	uint64_t clock_repairs;	/* switches in not seen, made up (counter_clock_repairs()) */
	uint64_t unplaced_steal_ns; /* steal in the error of every row (counter_unplaced_steal()) */
	bool detached;		/* stopped, or loaded from disk: stat is final */
	struct slices *slices;	/* the totals by time (slices.h), rows of COUNT_WIDTH */
	uint64_t last_read;	/* wall ns of the last read of BPF's totals (slices_charge_wall) */
	uint64_t slices_lost;	/* calls the slices could not keep (out of memory) */

	/* WHEN (docs/when.md, "At probes") */
	char *when_text;	/* NULL: every call counts */
	bool when_file, icase;
	struct pat *when;
	uint32_t when_mode;	/* enum pcmon_count_when */
	char when_why[200];	/* PCMON_CW_WALK: why the shadow stack cannot answer */
	struct pcmon_wpat wpat;	/* PCMON_CW_SHADOW */
	struct pat **ctx_pats;	/* each name of the pattern alone: its context procedures */
	size_t nctx;
	bool ctx_late;		/* a context procedure was probed while its process ran */
	struct count_unknown unknown;	/* calls not classed, by reason (as last read) */
	uint64_t *open;		/* activations open when last read, by procedure and class */
	size_t cap_open;
	struct itab *stacks;	/* PCMON_CW_WALK: (stack id, tgid, epoch) seen ... */
	struct count_stack *stack_info;	/* ... its class, and the frame a ':' charges */
	size_t cap_info;
	struct count_charge *charges;	/* with a ':': matching calls by the frame charged */
	size_t ncharges, cap_charges;
};

extern const struct inst_ops count_ops;

struct counter_prog_stats;
/* The call table of @ct as the "calls" object of @rep (count_report.c); @open: open
 * activations per procedure and class (struct count_open); @ps: the probes' run-time statistics, or NULL. 0 or -ENOMEM. */
int count_report_json(const struct count *ct, const uint64_t *open,
		      const struct counter_prog_stats *ps, const char *sort, cJSON *rep);
/*
 * The call table of a window (@w, whose slices count_window() took): as above, with the
 * window's totals; no maximum and no open activations (not kept by time). 0 or -ENOMEM.
 */
int count_window_json(const struct count *ct, struct timed_window *w, const char *sort,
		      cJSON *rep);

/*
 * Procedure @i's raw totals as BPF holds them now (@s), into @ct: what they gained since
 * the last read goes to the time slice of @wall. Totals below the last read (zeroed in
 * between) count from 0. 0 or -ENOMEM (the slice could not take them: slices_lost).
 */
int count_fold(struct count *ct, size_t i, const struct pcmon_cstat *s, uint64_t wall);
/* Totals @s as a row's COUNT_WIDTH sums (max_ns 0). */
void count_row(const struct pcmon_cstat *s, uint64_t *v);

/*
 * The pure parts, apart from BPF (tests/unit/test_count.c):
 *
 * count_times(): the times of calls @s of @fn with the probes' cost taken out
 * (count_report.c), each with its error: what the cost's spread makes of the probe hits it
 * holds. Self time holds the inner part of its own pairs (between BPF's clock readings)
 * and the outer part of those of the activations it called; self+children the inner part
 * of its own and the whole pairs of every activation inside. They keep to: 0 <= self <=
 * total, min <= avg <= max <= total; a time below its error is below resolution.
 */
struct count_times {
	double self, total, avg, min, max;
	double self_err, total_err, avg_err, min_err, max_err;
	double self_sub, total_sub;	/* the probes' cost taken out */
	double probes;		/* the whole cost of the probes its calls hit */
};
void count_times(const struct count *ct, const struct count_fn *fn, const struct pcmon_cstat *s,
		 struct count_times *t);
/* count_self_ns(), count_total_ns(): @fn's self and self+children time (count_times()) */
double count_self_ns(const struct count *ct, const struct count_fn *fn);
double count_total_ns(const struct count *ct, const struct count_fn *fn);
/* ... of @fn's calls of class @s (one of fn->by) */
double count_self_ns_of(const struct count *ct, const struct count_fn *fn,
			const struct pcmon_cstat *s);
double count_total_ns_of(const struct count *ct, const struct count_fn *fn,
			 const struct pcmon_cstat *s);

/* The WHEN pattern @text of @ct (NULL: none) and how it is answered at the probes: the
 * shadow stack, or the walk (ct->when_why). 0, or -errno with the error in *rep. */
int count_set_when(struct count *ct, const char *text, cJSON **rep);

/* The BPF cookie of procedure @i of @target's table, whose probe is stepped out of line (@xol). */
uint64_t count_cookie(uint32_t target, size_t i, bool xol);

struct counter;
struct sym;

/* Open activations by procedure and class: count_tally_open() is called with each open
 * activation's key (counter_open_activations()), and counts those of @target into
 * open[fn * COUNT_NCLS + class], fn in [0, n); @ct classes them. */
struct count_open {
	uint32_t target;
	uint64_t *open;
	size_t n;
	struct count *ct;
	struct counter *ctr;	/* may be NULL (then a stack not seen yet is unknown) */
	struct sym *sym;
};
void count_tally_open(void *ctx, const struct pcmon_ckey *k);

/* The class of calls of key @k: by its class in BPF, or its stack looked up (the
 * first time: read back, named and matched; @c NULL: not read, unknown). */
enum count_cls count_class_of(struct count *ct, struct counter *c, struct sym *s,
			      const struct pcmon_ckey *k);
/* The charge of procedure @fn's calls to @to (made on first use), or NULL (out of memory). */
struct count_charge *count_charge(struct count *ct, uint32_t fn, const char *to);

#endif
