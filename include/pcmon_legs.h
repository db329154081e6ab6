/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The probe-node instrument's BPF structs (bpf/legs.bpf.c), shared with its userspace half
 * (daemon/instruments/legs*.c): nodes (probe points), legs (the code between a from node and a to node,
 * timed per thread) and histograms (docs/legs.md).
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_LEGS_BPF_H
#define PCMON_LEGS_BPF_H

#include "pcmon_procs.h"
#include "pcmon_when.h"

/* A node's probe cookie: its target and its number (1...). */
#define PCMON_NODE_COOKIE(target, node) (((__u64)(target) << 32) | (__u32)(node))
#define PCMON_NODE_TARGET(cookie) ((__u32)((cookie) >> 32))
#define PCMON_NODE_ID(cookie) ((__u32)(cookie))
#define PCMON_ANY_NODE 0	/* '*' in a leg's from or to */

#define PCMON_HIST_BUCKETS 64	/* buckets of a histogram (log: bucket i holds [2^i, 2^(i+1))) */
enum pcmon_hist_kind { PCMON_HIST_NONE, PCMON_HIST_LINEAR, PCMON_HIST_LOG };

/* A histogram's shape. */
struct pcmon_hcfg {
	__u32 kind;		/* enum pcmon_hist_kind */
	__u32 buckets;		/* linear: how many (<= PCMON_HIST_BUCKETS) */
	__u64 scale;		/* linear: each bucket's width */
	__u64 base;		/* linear: the first bucket's start */
};

/* Counts, 64-bit. Log: b[0] holds 0, b[i + 1] holds [2^i, 2^(i+1)). */
struct pcmon_hist {
	__u64 under, over;
	__u64 b[PCMON_HIST_BUCKETS + 1];
};

/*
 * Which histogram a shape in hcfgs is for: a node's, (target, 0, 0, node), or a leg's,
 * (target, from, to, 0). Its counts stay in the node's or leg's entry, so that adding,
 * changing or removing a histogram never rewrites what a node or leg has counted.
 */
struct pcmon_hkey {
	__u32 target, from, to, node;
};

/* A node: how it is set up, and its totals. Keyed by cookie. */
struct pcmon_node {
	__u32 arg;		/* record integer argument arg - 1 (0: none) */
	__u32 cost_ns;		/* what a hit costs the thread: taken off the legs around it ... */
	__u32 pre_ns;		/* ... of which this much comes before its clock reading */
	__u32 pad;
	__u64 hits;		/* with a WHEN pattern: the hits whose stack matched ... */
	__u64 other;		/* ... the others */
	__u64 unknown;		/* ... and those the shadow stack could not tell (too deep) */
	struct pcmon_wadv adv;	/* WHEN: how the node's procedure moves the pattern's state */
	struct pcmon_hist h;	/* of the recorded argument, while hcfgs has a shape for it */
};

/* A leg, keyed by (target, from, to); from or to may be PCMON_ANY_NODE. */
struct pcmon_lkey {
	__u32 target, from, to, pad;
};

/*
 * A leg's totals. Times are net of the probes' cost: every probe hit of the thread inside
 * the leg — its from's after the from read the clock, each node hit in between, its to's
 * before the to read it: probe_hits in all, probe_ns together — is taken off.
 * Defined once: X(field, need) gives the struct and the leg's fields in the state file's
 * "tables" section, named as the field. @need: ALWAYS, OPTIONAL (added later), NET (in
 * the files whose times are net, and in those only: files without probe_hits held gross
 * times, daemon/instruments/legs_store.c).
 */
#define PCMON_LEG_FIELDS(X)                                                                \
	X(count, ALWAYS)                                                                   \
	X(total_ns, ALWAYS)                                                                \
	X(min_ns, ALWAYS)                                                                  \
	X(max_ns, ALWAYS)                                                                  \
	/* started, never finished: a second from, the thread's exit */                    \
	X(abandoned, ALWAYS)                                                               \
	/* probe hits inside the legs counted ... */                                       \
	X(probe_hits, NET)                                                                 \
	/* ... and what they cost, taken off total_ns */                                   \
	X(probe_ns, NET)                                                                   \
	/* ... of which time the thread was preempted at the probes */                     \
	X(preempted_ns, OPTIONAL)                                                          \
	/* starts not kept: the table of legs in flight was full */                        \
	X(untracked, OPTIONAL)                                                             \
	/* time the hypervisor stole from the thread during the legs counted (in total_ns, \
	 * and in its error: some may have been at the probes), and during the longest and \
	 * the shortest (extremes, as min_ns and max_ns) */                                \
	X(stolen_ns, OPTIONAL)                                                             \
	X(max_steal_ns, OPTIONAL)                                                          \
	X(min_steal_ns, OPTIONAL)

struct pcmon_leg {
#define PCMON_LEG_FIELD(f, need) __u64 f;
	PCMON_LEG_FIELDS(PCMON_LEG_FIELD)
#undef PCMON_LEG_FIELD
	__u32 id;		/* its number, 0: added by BPF (--add successor), numbered later */
	__u32 pad;
	struct pcmon_hist h;	/* of the leg's time (ns), while hcfgs has a shape for it */
};

/* A target's leg settings (array indexed by target id). */
enum pcmon_track { PCMON_TRACK_ALL, PCMON_TRACK_SUCCESSOR, PCMON_TRACK_NONE };
struct pcmon_lcfg {
	__u32 track;		/* enum pcmon_track: which hits start a leg */
	__u32 add;		/* 1: a leg from the thread's last node to this one is added */
	__u32 when;		/* 1: a hit counts, and starts legs, only if its stack matches wpat */
	__u32 ntailed;		/* legs of the target tailed (ltails, pcmon_tail.h): 0, none */
	struct pcmon_wpat wpat;	/* from the call counter's shadow stack (pcmon_when.h) */
};

/* A thread's state (task storage): its probe hits, and the last node it hit (successor). */
struct pcmon_lthread {
	__u32 target;
	__u32 node;		/* 0: none */
	__u64 ts;		/* when it hit node */
	__u64 hits_at, cost_at;	/* its hits and probe cost then, */
	__u64 pre_at;		/* and its time preempted at probes then (vclock.bpf.h) */
	__u64 steal_at;		/* and the time stolen from it then */
	__u64 hits;		/* probe hits of the thread so far ... */
	__u64 cost;		/* ... and what they cost it (ns) */
};

/*
 * --track all: every leg is tracked on its own, per thread. nlegs, keyed by (target, node,
 * 0, 0), lists the legs that start and end at a node; node PCMON_ANY_NODE lists the legs
 * from '*' (started at every node) and to '*' (ended at every node).
 */
#define PCMON_NODE_LEGS 32	/* legs one node may start, and end */
#define PCMON_TARGET_LEGS 256	/* legs in one target's table */
struct pcmon_nlegs {
	__u32 nfrom, nto;
	__u32 from_to[PCMON_NODE_LEGS];	/* the legs (node, to): their to */
	__u32 to_from[PCMON_NODE_LEGS];	/* the legs (from, node): their from */
};

/* Every leg of a target (tlegs, by target): what a thread that exits may have in flight. */
struct pcmon_tlegs {
	__u32 n, pad;
	struct pcmon_tleg {
		__u32 from, to;
	} l[PCMON_TARGET_LEGS];
};

/* A leg in flight on a thread (lflight): when it started, the thread's hits and probe cost then. */
struct pcmon_fkey {
	__u32 tid, target, from, to;
};
struct pcmon_flight {
	__u64 ts, hits, cost, pre, steal;
};

/* Legs that start at a node (keyed by (target, from, 0, 0) in lfrom): is any leg waiting on it. */
struct pcmon_lfrom {
	__u64 legs;
};

/*
 * The arithmetic BPF does on a hit, here so that the engine's unit test checks the very code
 * (tests/unit/test_legs.c). Always inlined: in BPF, a function of its own would be a
 * subprogram the verifier checks apart.
 */
#define PCMON_INLINE static inline __attribute__((always_inline))

/* Where a value goes in a histogram: a bucket 0...PCMON_HIST_BUCKETS, or one of these. */
#define PCMON_HIST_UNDER (PCMON_HIST_BUCKETS + 1)	/* linear: below its base */
#define PCMON_HIST_OVER (PCMON_HIST_BUCKETS + 2)	/* linear: past its last bucket */
#define PCMON_HIST_NOWHERE (PCMON_HIST_BUCKETS + 3)	/* no shape (or a linear one of width 0) */

/* floor(log2(v)) for v > 0, without a loop the verifier must walk */
PCMON_INLINE __u32 pcmon_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* Value @v's place in a histogram of shape @c (log: b[0] holds 0, b[i + 1] [2^i, 2^(i+1))). */
PCMON_INLINE __u32 pcmon_hist_slot(const struct pcmon_hcfg *c, __u64 v)
{
	__u64 i;

	if (c->kind == PCMON_HIST_LOG)
		return v ? pcmon_log2(v) + 1 : 0;
	if (c->kind != PCMON_HIST_LINEAR || !c->scale)
		return PCMON_HIST_NOWHERE;
	if (v < c->base)
		return PCMON_HIST_UNDER;
	/* compared in 64 bits: a value far past the last bucket must not wrap into one */
	i = (v - c->base) / c->scale;
	if (i >= c->buckets || i >= PCMON_HIST_BUCKETS)
		return PCMON_HIST_OVER;
	return (__u32)i;
}

/*
 * A thread's hit of a node whose hit costs it @cost_ns, @pre_ns of them before the node reads
 * the clock: *hits and *cost are the thread's probe hits and their cost as of that reading.
 * A leg's probe cost is its to's *cost less its from's: the from's part after its reading,
 * every hit in between, the to's part before its reading.
 */
PCMON_INLINE void pcmon_thread_hit(struct pcmon_lthread *th, __u32 cost_ns, __u32 pre_ns,
				   __u64 *hits, __u64 *cost)
{
	*hits = ++th->hits;
	*cost = th->cost + pre_ns;
	th->cost += cost_ns;
}

/* A leg's time of @dur ns net of the @cost ns its probe hits took, never below 0. */
PCMON_INLINE __u64 pcmon_leg_net(__u64 dur, __u64 cost)
{
	return dur > cost ? dur - cost : 0;
}

#endif /* PCMON_LEGS_BPF_H */
