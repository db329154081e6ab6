/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tail profiles (docs/tail.md): the BPF structs the legs counter (bpf/legs.bpf.c), the
 * sampler (bpf/sample.bpf.c) and the engine (daemon/instruments/tail.c) share.
 *
 * Each open instance of a tailed leg on a thread has an id of its own; the set of tailed
 * instances a thread has open has an id too, changed whenever one opens or closes, and
 * carried in each sample's key (pcmon_key.tset). A set of one instance is named by the
 * instance's id; a set of several has an id of its own (PCMON_TAIL_MULTI set), which the
 * legs counter tells the engine with the instances it holds (PCMON_TAIL_SET). Each
 * instance's end (its time, or that it was abandoned) goes on the same ring, so that the
 * engine can file the samples of a set into the tail, body or abandoned profile of each of
 * its instances' legs once they end: one record an instance, in the common case of legs
 * that do not overlap. Ids come from a counter per CPU (PCMON_TAIL_ID()): unique while the
 * engine may still meet them (2^25 a CPU before one comes again; CPUs 64 apart share ids).
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_TAIL_BPF_H
#define PCMON_TAIL_BPF_H

#include "pcmon_procs.h"

#define PCMON_TAIL_LEGS 4	/* tailed legs a target may have */
#define PCMON_TAIL_MULTI (1u << 31)	/* a set's id, not an instance's: its set told apart */
/* the @n-th id counted on CPU @cpu (never 0) */
#define PCMON_TAIL_ID(n, cpu) (((n) & 0x1ffffffu) << 6 | ((cpu) & 63u))

/* A thread's tailed instances (task storage tailth, shared): slot i is leg slot i + 1's. */
struct pcmon_tailth {
	__u32 target;
	__u32 gen;			/* the target's tailgen then: else what it holds is stale */
	__u32 set;			/* the id of the set below, 0: none open */
	__u32 pad;
	__u32 inst[PCMON_TAIL_LEGS];	/* the open instance of each tailed leg, 0: none */
};

/* A target's tailed legs (ltails, by target): slot i + 1 is leg l[i]. */
struct pcmon_ltails {
	__u32 n, pad;
	struct {
		__u32 from, to;
	} l[PCMON_TAIL_LEGS];
};

enum pcmon_tail_ev_type {
	PCMON_TAIL_SET = 1,	/* set @set (PCMON_TAIL_MULTI) of thread @tid holds inst[] (0: none) */
	PCMON_TAIL_END,		/* instance inst[0] of leg slot @slot ended, @dur ns (net) */
	PCMON_TAIL_ABANDON,	/* instance inst[0] of leg slot @slot was abandoned */
};

/* A record of the ring tail_events. */
struct pcmon_tail_ev {
	__u32 type;	/* enum pcmon_tail_ev_type */
	__u32 target;
	__u32 tid;
	__u32 set;
	__u32 slot;	/* 1...PCMON_TAIL_LEGS */
	__u32 pad;
	__u64 dur;
	__u32 inst[PCMON_TAIL_LEGS];
};

#endif /* PCMON_TAIL_BPF_H */
