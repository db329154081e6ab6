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
};

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
};

extern const struct inst_ops count_ops;

struct counter_prog_stats;
/* The call table of @ct as the "calls" object of @rep (count_report.c); @open: open
 * activations per procedure; @ps: the probes' run-time statistics, or NULL. 0 or -ENOMEM. */
int count_report_json(const struct count *ct, const uint64_t *open,
		      const struct counter_prog_stats *ps, const char *sort, cJSON *rep);

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
