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

/* One probed procedure: a (file, start) the patterns name. */
struct count_fn {
	char *module, *name;
	uint64_t vaddr;
	bool late;		/* probed after its process had started running it: calls
				 * before then are not counted */
	bool xol;		/* its probed instruction is stepped out of line (dearer) */
	struct bpf_link *entry, *ret;
	struct pcmon_cstat stat;	/* raw totals, as last read from BPF (or loaded) */
	struct pcmon_cstat charged;	/* ... of which in the time slices already */
};

/*
 * A procedure's row in the time slices: its totals as words, in PCMON_CSTAT_FIELDS order,
 * by its index in fns. A slice holds what the totals gained in it; max_ns, a maximum, not
 * a sum, is 0 in every slice (a window has no maximum).
 */
#define COUNT_WIDTH (sizeof(struct pcmon_cstat) / sizeof(__u64))

struct timed_window;

/* One target's call counting. */
struct count {
	char **patterns;
	struct pat **pats;
	bool *matched;		/* pattern i has named a procedure */
	size_t npats;
	uint32_t max_probes;
	struct count_fn *fns;	/* fns[i] is the procedure of cookie (target, i) */
	size_t nfns, cap_fns;
	struct { dev_t dev; ino_t ino; } *objs;	/* objects searched */
	size_t nobjs, cap_objs;
	size_t searched;	/* objects looked into, for "matches nothing" */
	double cost_ns;		/* one entry + return probe, as measured when it started ... */
	double cost_xol_ns;	/* ... where the instruction is stepped out of line */
	bool virt;		/* times are the threads' CPU time (VIRTUAL), else wall (REAL) */
	bool detached;		/* stopped, or loaded from disk: stat is final */
	struct slices *slices;	/* the totals by time (slices.h), rows of COUNT_WIDTH */
	uint64_t last_read;	/* wall ns of the last read of BPF's totals (slices_charge_wall) */
	uint64_t slices_lost;	/* calls the slices could not keep (out of memory) */
};

extern const struct inst_ops count_ops;

struct counter_prog_stats;
/* The call table of @ct as the "calls" object of @rep (count_report.c); @open: open
 * activations per procedure; @ps: the probes' run-time statistics, or NULL. 0 or -ENOMEM. */
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
 * count_self_ns(), count_total_ns(): @fn's self and self+children time with the probes' cost
 * taken out (count_report.c), never below 0: one probe pair per activation closed from its
 * self time; one per activation inside an outermost one from self+children, each at its
 * own kind's cost (stepped out of line or emulated).
 */
double count_self_ns(const struct count *ct, const struct count_fn *fn);
double count_total_ns(const struct count *ct, const struct count_fn *fn);

/* The BPF cookie of procedure @i of @target's table, whose probe is stepped out of line (@xol). */
uint64_t count_cookie(uint32_t target, size_t i, bool xol);

/* Open activations by procedure: count_tally_open() is called with each open activation's
 * cookie (counter_open_activations()), and counts those of @target into open[0, n). */
struct count_open {
	uint32_t target;
	uint64_t *open;
	size_t n;
};
void count_tally_open(void *ctx, uint64_t cookie);

#endif
