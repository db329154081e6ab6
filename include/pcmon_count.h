/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The call-counting instrument's BPF structs (bpf/count.bpf.c), shared with its userspace
 * half (daemon/instruments/counter.c, daemon/instruments/count.c): each thread's shadow stack of open activations
 * and the per-procedure totals.
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_COUNT_BPF_H
#define PCMON_COUNT_BPF_H

#include "pcmon_procs.h"

#define PCMON_COUNT_DEPTH 128	/* open activations a thread's shadow stack keeps */

/*
 * A probe's BPF cookie: the target and the procedure's index in the target's table. The
 * entry and the return probe of a procedure carry the same one.
 */
#define PCMON_COUNT_COOKIE(target, fn) (((__u64)(target) << 32) | (__u32)(fn))
#define PCMON_COUNT_TARGET(cookie) ((__u32)((cookie) >> 32))
#define PCMON_COUNT_FN(cookie) ((__u32)(cookie) & ~PCMON_COUNT_XOL)
/*
 * The probed instruction is stepped out of line (a second trap): a probe on a `push` is
 * emulated by the kernel, most others are not. The two cost differently; the flag rides in
 * the cookie so that BPF counts each kind apart for the cost to be subtracted exactly.
 */
#define PCMON_COUNT_XOL (1u << 31)

/* One open activation. */
struct pcmon_cact {
	__u64 cookie;
	__u64 sp;		/* the stack pointer at entry: where its return address is */
	__u64 t0;		/* entry time (ns) */
	__u64 child_ns;		/* time of the activations it called, closed (raw) */
	__u32 desc;		/* activations below it, closed ... */
	__u32 desc_xol;		/* ... of which with a stepped-out-of-line probe */
	__u32 nested;		/* an outer activation of the same procedure is open on the thread */
	__u32 pad;
};

/* A thread's shadow stack (task storage). */
struct pcmon_cstack {
	__u32 depth;		/* open activations; beyond PCMON_COUNT_DEPTH only counted */
	__u32 virt;		/* its times are the thread's CPU time (VIRTUAL), not wall */
	struct pcmon_cact a[PCMON_COUNT_DEPTH];
};

/* A target's call-counting settings (array indexed by target id). */
struct pcmon_ccfg {
	__u32 virt;		/* VIRTUAL: the thread's CPU time, else wall time */
	__u32 pad;
};

/*
 * Totals of one procedure of one target (cstat, by cookie), defined once: X(field) gives the
 * struct and the fields of a procedure in the state file's "calls" section, each named as
 * the field and in every file. The call table reports them through what they give (times
 * less the probes' cost, averages: daemon/instruments/count_report.c).
 */
#define PCMON_CSTAT_FIELDS(X)                                                              \
	X(calls)	  /* entries */                                                    \
	X(closed)	  /* activations closed: returned, unwound or exited */            \
	X(outer)	  /* ... of which outermost (no activation of it open around) */   \
	X(self_ns)	  /* raw: the probes' own cost not yet subtracted */               \
	X(total_ns)	  /* self+children of outermost activations only (recursion) */    \
	X(total_acts)	  /* activations inside those: whose probe cost total_ns holds */  \
	X(total_acts_xol) /* ... of which with a stepped-out-of-line probe */              \
	X(max_ns)	  /* the longest activation, raw */                                \
	X(unwound)	  /* closed because its frame was found gone (longjmp, ...) */     \
	X(exited)	  /* closed by the thread's exit */                                \
	X(too_deep)	  /* entries past PCMON_COUNT_DEPTH: counted, not timed */

struct pcmon_cstat {
#define PCMON_CSTAT_FIELD(f) __u64 f;
	PCMON_CSTAT_FIELDS(PCMON_CSTAT_FIELD)
#undef PCMON_CSTAT_FIELD
};

#endif /* PCMON_COUNT_BPF_H */
