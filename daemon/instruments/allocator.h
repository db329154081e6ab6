/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * allocator_: the allocation instrument's BPF object (bpf/alloc.bpf.c): the allocator's
 * functions probed in each object file once, each target's sampling rate, the ring of
 * sampled allocations and their frees.
 */
#ifndef PCMON_ALLOCATOR_H
#define PCMON_ALLOCATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "pcmon_alloc.h"

struct allocator;
struct procs;

int allocator_open(struct procs *p, struct allocator **out, char *err, size_t errlen);
void allocator_close(struct allocator *a);
/*
 * Probe the allocator's functions in the object @path (glibc's names, or those of @names,
 * by enum pcmon_afn, NULL where it has none) for process @pid, once: 0, 1 if it was probed
 * before, -ENOENT if it has none of them, or -errno. The probes are the process's:
 * the kernel plants its breakpoints in that process's memory alone, and the machine's other
 * processes that map the object run on untouched.
 */
int allocator_probe_file(struct allocator *a, const char *path, uint32_t pid,
			 const char *const *names);
/*
 * Target @target samples its allocations every @rate bytes on average (0: stops); @paused:
 * it takes no new samples, but the frees of those it took still end them.
 */
int allocator_target(struct allocator *a, uint32_t target, uint64_t rate, bool paused);
/* The ring, for poll(), and what it holds now, each record to @cb. */
int allocator_fd(const struct allocator *a);
int allocator_poll(struct allocator *a, void (*cb)(void *ctx, const struct pcmon_arec *r),
		   void *ctx);
/* Process @pid is gone: its probes are let go, its live blocks leave BPF's table. */
void allocator_forget_pid(struct allocator *a, uint32_t pid);
/* How the allocating functions are probed: "session" (a return probe only for the calls
 * whose entry asks, kernel 6.13 on) or "entry+return". */
const char *allocator_probes(const struct allocator *a);
/* What was counted apart for @target, summed over the CPUs. */
void allocator_stats(const struct allocator *a, uint32_t target, struct pcmon_astat *out);

#endif
