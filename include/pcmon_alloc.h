/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The allocation instrument's shared definitions (bpf/alloc.bpf.c, daemon/instruments/
 * alloc*.c; docs/alloc.md): which allocator function a probe is at, each thread's byte
 * countdown, and the records a sampled allocation and its free send to the engine.
 *
 * Sampling by bytes, as tcmalloc and Go's runtime do: each thread draws the bytes to its next
 * sample from an exponential distribution of mean rate; an allocation of size s that crosses
 * the countdown is sampled, which happens with probability 1 - exp(-s/rate), so the engine
 * counts each sample as rate / (1 - exp(-s/rate)) bytes (and that over s objects): totals
 * are unbiased estimates.
 */
#ifndef PCMON_ALLOC_H
#define PCMON_ALLOC_H

#include "pcmon_procs.h"
#include "pcmon_sample.h"

/* Which function a probe is at (its attach cookie's low byte). */
enum pcmon_afn {
	PCMON_AFN_MALLOC,	/* (size) */
	PCMON_AFN_CALLOC,	/* (n, size) */
	PCMON_AFN_REALLOC,	/* (ptr, size): frees ptr when it moves it */
	PCMON_AFN_MEMALIGN,	/* memalign, aligned_alloc (align, size) */
	PCMON_AFN_POSIX_MEMALIGN, /* (memptr, align, size): the block in *memptr */
	PCMON_AFN_VALLOC,	/* valloc, pvalloc (size) */
	PCMON_AFN_FREE,		/* (ptr) */
	PCMON_AFN_N,
};

/* Quantiles of the exponential distribution of mean 1 (x 2^16), the engine's, for the
 * countdowns drawn in BPF: each entry is the mean of an equal-probability slice, so a draw
 * keeps the distribution's mean exactly. */
#define PCMON_ALLOC_QUANTILES 1024

/* A target's allocation settings (array by target id). */
struct pcmon_acfg {
	__u64 rate;	/* mean bytes between samples; 0: not watched */
	__u32 paused;	/* no new samples, but the frees of those taken are still seen */
	__u32 pad;
};

/* Each thread's countdown, and the allocation between its entry and its return. */
struct pcmon_athread {
	__s64 left;	/* bytes to its next sample */
	__u64 size;	/* of the allocation in flight */
	__u64 old;	/* realloc's block, posix_memalign's memptr */
	__u32 fn;	/* enum pcmon_afn in flight, PCMON_AFN_N: none */
	__u32 sampled;
	__u32 rate_gen;	/* the countdown was drawn at this rate (a change draws again) */
	__u32 pad;
};

/* A live sampled block, by (process, address). */
struct pcmon_akey {
	__u64 addr;
	__u32 pid;
	__u32 pad;
};

struct pcmon_ablock {
	__u64 size;
	__u64 id;	/* the sample's record id */
};

enum pcmon_arec_kind {
	PCMON_AREC_ALLOC,	/* a sampled allocation, with its stack */
	PCMON_AREC_FREE,	/* a sampled block freed */
};

/* Bytes of the stack a sampled allocation copies from its return's stack pointer. */
#define PCMON_ALLOC_TOP 512

/* A record of the allocation ring: a sampled allocation (its stack follows, @nip frames,
 * innermost first: the caller's pc first) or its free. */
struct pcmon_arec {
	__u32 kind;
	__u32 target;
	__u32 pid;
	__u32 epoch;
	__u32 tid;
	__u32 nip;
	__u64 id;	/* per engine, from the allocation's record to its free's */
	__u64 ts;
	__u64 addr;
	__u64 size;
	/* the registers at the allocator's return and the top of the stack, for the engine to
	 * unwind the first frames by their CFI (a caller without a frame pointer, as libstdc++'s
	 * operator new, is skipped by the frame-pointer walk below) */
	__u64 regs[PCMON_NREGS];
	__u32 ulen;	/* bytes of ustack copied */
	__u32 pad2;
	__u8 ustack[PCMON_ALLOC_TOP];
	__u64 ip[PCMON_STACK_MAX];	/* last: a record is cut after its nip frames */
};

/* What is counted apart, by target (per CPU). */
struct pcmon_astat {
	__u64 entries;		/* allocation calls seen */
	__u64 sampled;
	__u64 live_full;	/* a sampled block not kept live: the map was full */
	__u64 ring_full;	/* a record not sent: the ring was full */
	__u64 frees_unmatched;	/* frees of blocks not sampled (most) */
	__u64 stack_errors;
};

#endif
