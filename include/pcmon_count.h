/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The call-counting instrument's BPF structs (bpf/count.bpf.c), shared with its userspace
 * half (daemon/instruments/counter.c, daemon/instruments/count*.c): each thread's shadow stack of open
 * activations and the per-procedure totals.
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_COUNT_BPF_H
#define PCMON_COUNT_BPF_H

#include "pcmon_procs.h"
#include "pcmon_when.h"

#define PCMON_COUNT_DEPTH 128	/* open activations a thread's shadow stack keeps */
#define PCMON_COUNT_RETS 4	/* rows of calls returned between two clock updates it keeps */

/*
 * A probe's BPF cookie: the target and the procedure's index in the target's table. The
 * entry and the return probe of a procedure carry the same one.
 */
#define PCMON_COUNT_COOKIE(target, fn) (((__u64)(target) << 32) | (__u32)(fn))
#define PCMON_COUNT_TARGET(cookie) ((__u32)((cookie) >> 32))
#define PCMON_COUNT_FN(cookie) ((__u32)(cookie) & ~(PCMON_COUNT_XOL | PCMON_COUNT_CTX))
/*
 * The probed instruction is stepped out of line (a second trap): a probe on a `push` is
 * emulated by the kernel, most others are not. The two cost differently; the flag rides in
 * the cookie so that BPF counts each kind apart for the cost to be subtracted exactly.
 */
#define PCMON_COUNT_XOL (1u << 31)
/*
 * A context procedure: probed only because a WHEN pattern names it (docs/when.md, "At
 * probes"). Its activations keep the shadow stack's pattern state and are otherwise
 * transparent: not in the table, their time their caller's self time, less their probes.
 */
#define PCMON_COUNT_CTX (1u << 30)

/*
 * How a target's calls are told apart by its WHEN pattern (pcmon_ccfg.when): not at all, by
 * the shadow stack's state (every name a probed procedure), or by the stack walked at each
 * entry and matched by the engine (the stack's id in the key).
 */
enum pcmon_count_when { PCMON_CW_NONE, PCMON_CW_SHADOW, PCMON_CW_WALK };

/*
 * The class of a call in the totals' key: a stack id (PCMON_CW_WALK), or one of these.
 * UNKNOWN: the stack could not be walked, or the shadow stack was too deep to tell; NOSTACK:
 * walked but not kept (the stacks map full, or a hash collision).
 */
#define PCMON_CLS_ALL 0xffffffffu	/* no pattern */
#define PCMON_CLS_MATCH 0xfffffffeu
#define PCMON_CLS_NOMATCH 0xfffffffdu
#define PCMON_CLS_UNKNOWN 0xfffffffcu
#define PCMON_CLS_NOSTACK 0xfffffffbu
#define PCMON_CLS_LOWEST 0xfffffff0u	/* the lowest class: below it, a stack id */
#define PCMON_COUNT_STACKS 16384	/* stacks the walk keeps (PCMON_CW_WALK) */
#define PCMON_COUNT_STACK_DEPTH 127

/* The totals' key: a procedure of a target, the class of its calls, and for a stack id the
 * process (and its exec epoch) whose addresses the stack holds. */
struct pcmon_ckey {
	__u64 cookie;
	__u32 cls;
	__u32 tgid;
	__u32 epoch;
	__u32 pad;
};

/* One open activation. */
struct pcmon_cact {
	__u64 cookie;
	__u64 sp;		/* the stack pointer at entry: where its return address is */
	__u64 t0;		/* entry time (ns) */
	__u64 child_ns;		/* time of the activations it called, closed (raw) */
	__u32 desc;		/* activations below it, closed ... */
	__u32 desc_xol;		/* ... of which with a stepped-out-of-line probe */
	__u32 nested;		/* an outer activation of the same procedure is open on the thread */
	__u32 cls;		/* its calls' class (PCMON_CLS_*, a stack id) */
	__u32 wstate;		/* PCMON_CW_SHADOW: the pattern's state down to it (pcmon_when.h) */
	__u32 epoch;		/* PCMON_CW_WALK: its process's exec epoch */
	__u32 self_ctx;		/* context activations whose probes' cost lies in its self time ... */
	__u32 self_ctx_xol;	/* ... of which stepped out of line */
	__u32 kids;		/* activations it called, closed: their probes' outer part (before
				 * their entry's clock reading, after their return's) is in its self */
	__u32 kids_xol;		/* ... of which stepped out of line */
	__u64 pre0;		/* its thread's time preempted at a probe, at entry (count.bpf.c) */
	__u64 child_pre;	/* ... of that, inside the activations it called, closed */
	__u64 steal0;		/* REAL: the time stolen from its thread so far, at entry */
	__u64 child_steal;	/* ... of that, inside the activations it called, closed */
	__u64 unplaced;		/* VIRTUAL: steal taken out of it that may have been before its
				 * entry (count.bpf.c, place_steal()) */
};

/* A thread's shadow stack (task storage). */
struct pcmon_cstack {
	__u32 depth;		/* open activations; beyond PCMON_COUNT_DEPTH only counted */
	__u32 virt;		/* its times are the thread's CPU time (VIRTUAL), not wall */
	/* its process's entry in the process map, copied: good while procs_gen reads as then
	 * (every change to an entry bumps it, procs.bpf.h), so that an entry looks up nothing */
	__u64 proc_gen;		/* with PCMON_COUNT_COPIED; 0: none */
	__u32 proc_target;
	__u32 proc_epoch;
	struct pcmon_cact a[PCMON_COUNT_DEPTH];
	/* the rows of the calls that returned since the scheduler last updated the clock of
	 * its CPU (the update of generation ret_gen, count.bpf.c): what it counts next may
	 * have been stolen in any of them; past PCMON_COUNT_RETS, in its target's */
	__u32 ret_gen;
	__u32 nret;
	struct pcmon_ckey ret[PCMON_COUNT_RETS];
	/* VIRTUAL: the outermost activation entered since that update (of generation
	 * ent_gen): it and those inside it had the steal counted then taken out, and some
	 * may have been before their entry */
	__u32 ent_gen;
	__u32 ent_low;
};

#define PCMON_COUNT_COPIED (1ull << 63)	/* tells a copy taken at generation 0 from none */

/*
 * What one probe pair costs, as the engine measured it (counter.c), in ns, by kind (0: the
 * entry emulated, 1: stepped out of line): in all, and the part inside the activation's own
 * clock readings. BPF takes it out of each activation's time for its minimum and maximum.
 */
struct pcmon_ccost {
	__u64 pair[2];
	__u64 in[2];
};

/* A target's call-counting settings (array indexed by target id). */
struct pcmon_ccfg {
	__u32 virt;		/* VIRTUAL: the thread's CPU time, else wall time */
	__u32 when;		/* enum pcmon_count_when */
	struct pcmon_wpat wpat;	/* PCMON_CW_SHADOW: the pattern */
};

/*
 * Totals of one procedure of one target (cstat, by pcmon_ckey), defined once: X(field, need)
 * gives the struct and the fields of a procedure in the state file's "calls" section, each
 * named as the field; @need: ALWAYS (in every file) or OPTIONAL (added later). The call
 * table reports them through what they give (times less the probes' cost, averages:
 * daemon/instruments/count_report.c).
 */
#define PCMON_CSTAT_FIELDS(X)                                                              \
	X(calls, ALWAYS)	  /* entries (BPF: those it never closes, see count.bpf.c) */ \
	X(closed, ALWAYS)	  /* activations closed: returned, unwound or exited */    \
	X(outer, ALWAYS)	  /* ... of which outermost (none of it open around) */    \
	X(self_ns, ALWAYS)	  /* raw: the probes' own cost not yet subtracted */       \
	X(total_ns, ALWAYS)	  /* self+children of outermost activations only */        \
	X(total_acts, ALWAYS)	  /* activations inside those: whose probe cost it holds */ \
	X(total_acts_xol, ALWAYS) /* ... of which with a stepped-out-of-line probe */      \
	X(max_ns, ALWAYS)	  /* the longest activation, its probes' cost taken out */ \
	X(unwound, ALWAYS)	  /* closed: its frame was found gone (longjmp, ...) */    \
	X(exited, ALWAYS)	  /* closed by the thread's exit */                        \
	X(too_deep, ALWAYS)	  /* entries past PCMON_COUNT_DEPTH: counted, not timed */ \
	/* context activations (WHEN) whose probes' cost self_ns holds ... */              \
	X(self_ctx, OPTIONAL)                                                              \
	X(self_ctx_xol, OPTIONAL) /* ... of which stepped out of line */                   \
	/* activations called by those closed: their probes' outer part is in self_ns ... */ \
	X(kids, OPTIONAL)                                                                  \
	X(kids_xol, OPTIONAL)	  /* ... of which stepped out of line */                  \
	X(min_ns, OPTIONAL)	  /* the shortest activation, its probes' cost taken out */ \
	X(min_acts, OPTIONAL)	  /* activations the shortest one holds, itself included */ \
	X(min_acts_xol, OPTIONAL) /* ... of which stepped out of line */                   \
	X(max_acts, OPTIONAL)	  /* ... the longest one holds */                          \
	X(max_acts_xol, OPTIONAL)                                                          \
	/* of self_ns and total_ns, the time the thread was preempted at a probe: off CPU, \
	 * runnable, on its way back from an entry's probe to the code (REAL: in both) */  \
	X(self_pre_ns, OPTIONAL)                                                           \
	X(total_pre_ns, OPTIONAL)                                                          \
	/* REAL: of self_ns, total_ns and the extremes, the time the hypervisor stole from   \
	 * the thread (the guest's count, as the scheduler last updated it): in the times,  \
	 * and in their error, as some of it may have been at the probes */                \
	X(self_steal_ns, OPTIONAL)                                                         \
	X(total_steal_ns, OPTIONAL)                                                        \
	X(min_steal_ns, OPTIONAL)                                                          \
	X(max_steal_ns, OPTIONAL)                                                          \
	/* steal the scheduler counted after a probe read the clock, in time that may have   \
	 * been on either side of it (count.bpf.c, steal_look()): in the error of the calls   \
	 * on both sides (the one that returned there; VIRTUAL, the one open) */             \
	X(unplaced_steal_ns, OPTIONAL)                                                     \
	X(max_unplaced_ns, OPTIONAL) /* ... the most of it one placement gave (an extreme) */

struct pcmon_cstat {
#define PCMON_CSTAT_FIELD(f, need) __u64 f;
	PCMON_CSTAT_FIELDS(PCMON_CSTAT_FIELD)
#undef PCMON_CSTAT_FIELD
};

#endif /* PCMON_COUNT_BPF_H */
