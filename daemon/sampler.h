/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sampler_: the BPF side's userspace half. Loads bpf/sample.bpf.c once, opens cpu-clock
 * perf events per CPU for each sampling period in use, attaches the sched_switch program
 * while some target wants REAL time, and drains the in-kernel aggregates.
 */
#ifndef PCMON_SAMPLER_H
#define PCMON_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "pcmon_bpf.h"

struct sampler;

struct sampler_opts {
	uint32_t max_depth;	/* wanted frames per stack; raised up to what the kernel allows */
	uint32_t counts_entries; /* distinct (target, pid, stack) per drain buffer */
	uint32_t stack_ring_bytes; /* size of the ring of new stacks (power of 2; 0: 8 MiB) */
	uint32_t dwarf_stack;	/* most bytes of user stack a dwarf sample copies (0: 1 MiB) */
	bool bpf_stats;		/* turn on kernel.bpf_stats_enabled while open (every program pays) */
	uint32_t ring_bytes;	/* size of the dwarf sample ring (power of 2; 0: 4 MiB a CPU, 16-128 MiB) */
};

/* 0 or -errno; on failure @err gets a one-line reason saying what to do. */
int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen);
void sampler_close(struct sampler *s);

uint32_t sampler_max_depth(const struct sampler *s);
uint32_t sampler_dwarf_stack(const struct sampler *s);
uint64_t sampler_min_period_ns(void);
bool sampler_has_offcpu(const struct sampler *s);

/* Reference-counted per-CPU cpu-clock events at @period_ns. */
int sampler_period_get(struct sampler *s, uint64_t period_ns, char *err, size_t errlen);
void sampler_period_put(struct sampler *s, uint64_t period_ns);
/* Reference-counted attachment of the off-CPU (sched_switch) program. */
int sampler_offcpu_get(struct sampler *s, char *err, size_t errlen);
void sampler_offcpu_put(struct sampler *s);

/* BPF's view of target @id; @owner: uid whose processes it may watch (0: any). */
int sampler_target_set(struct sampler *s, uint32_t id, uint32_t flags, uint64_t period_ns,
		       uint32_t owner);
/* Stop sampling @id and forget its processes, cgroups and open intervals in BPF. */
void sampler_target_clear(struct sampler *s, uint32_t id);
/*
 * Watch process @tgid as part of @target. A process another target named explicitly is not
 * taken: -EEXIST, *@had = that target. One a --cgroup or --all target merely picked up is
 * taken over: *@had = that target, to be told. Else *@had = 0.
 */
int sampler_proc_add(struct sampler *s, uint32_t tgid, uint32_t target, uint32_t flags,
		     uint32_t *had);
int sampler_proc_epoch(struct sampler *s, uint32_t tgid, uint32_t *epoch);
/* Thread @tid's name as BPF noted it with its first sample: 0, or -ENOENT. */
int sampler_thread_name(struct sampler *s, uint32_t tid, char *buf, size_t len);
int sampler_cgroup_add(struct sampler *s, uint64_t cgid, uint32_t target);
void sampler_all_set(struct sampler *s, uint32_t target);
void sampler_tstat(struct sampler *s, uint32_t target, struct pcmon_tstat *sum);
void sampler_gstat(struct sampler *s, struct pcmon_gstat *sum);

/*
 * Flip the buffers, wait until no program can still write the old pair, and hand every
 * entry of it to @cb, then empty it. ustack/kstack are NULL when absent.
 */
typedef void (*sampler_entry_cb)(void *ctx, const struct pcmon_key *k, const struct pcmon_val *v,
				 const struct pcmon_stack *ustack, const struct pcmon_stack *kstack);
int sampler_drain(struct sampler *s, sampler_entry_cb cb, void *ctx);
/*
 * What the pair being written holds, read from BPF's memory without a system call: whether
 * anything was counted since the last drain, and how many entries were added. The capacity
 * of each counts map: what a drain period may add before samples are lost.
 */
bool sampler_pending(const struct sampler *s, uint32_t *entries);
/* Whether BPF programs' runs and run time are being counted (--bpf-stats, or the sysctl). */
bool sampler_bpf_stats(const struct sampler *s);
/*
 * How REAL takes the stacks of threads blocked in system calls, while a REAL target is
 * sampled: "task_work" or "sys_exit" (as the call returns, for charged intervals), or
 * "at_block"; NULL while none is.
 */
const char *sampler_blocked_stacks(const struct sampler *s);
/* Whether BPF asked for a drain since the last call (a counts map filling up). */
bool sampler_drain_wanted(struct sampler *s);
uint32_t sampler_capacity(const struct sampler *s);

/* Off-CPU intervals still open, with their start time (CLOCK_MONOTONIC ns). */
typedef void (*sampler_open_cb)(void *ctx, const struct pcmon_offcpu *o);
void sampler_open_intervals(struct sampler *s, sampler_open_cb cb, void *ctx);

/* Streams: process lifecycle events and --unwind dwarf records. The fd to poll, and the
 * consumer of both. */
int sampler_events_fd(struct sampler *s);
int sampler_stacks_fd(struct sampler *s);	/* woken when the stacks ring is half full */
typedef void (*sampler_event_cb)(void *ctx, const struct pcmon_event *e);
typedef void (*sampler_dsample_cb)(void *ctx, const void *data, size_t len);
int sampler_poll(struct sampler *s, sampler_event_cb ev, sampler_dsample_cb ds, void *ctx);

/* Attach the PCMON_CRITICAL_BEGIN/END probes of an object (once per file). Thread-safe:
 * the engine's loop and its probe thread (probes.h) both call it. */
int sampler_usdt_attach(struct sampler *s, const char *path);
/* The ring of events after which probes may be pending (struct pcmon_event), for probes.c. */
int sampler_probe_events_fd(struct sampler *s);
/* The probes of everything process @tgid loaded up to its event @seq are attached: its
 * samples are no longer flagged PCMON_KF_MARKS_PENDING (struct pcmon_proc). Thread-safe. */
int sampler_probes_ack(struct sampler *s, uint32_t tgid, uint32_t seq);

/* The shared process-lifecycle object (procs.h), for the other instruments' objects. */
struct procs *sampler_procs(struct sampler *s);

struct sampler_prog_stats {
	const char *name;
	uint64_t run_cnt, run_time_ns;
	bool attached;
};
/* Run-time statistics of each BPF program (kernel.bpf_stats_enabled while we run). */
int sampler_prog_stats(struct sampler *s, struct sampler_prog_stats *out, int max);

#endif
