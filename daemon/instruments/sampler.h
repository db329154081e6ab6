/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sampler_: the BPF side's userspace half. Loads bpf/sample.bpf.c once, opens cpu-clock
 * perf events per CPU for each sampling period in use, attaches the sched_switch program
 * while some target wants REAL time, and drains the in-kernel aggregates.
 */
#ifndef PCMON_SAMPLER_H
#define PCMON_SAMPLER_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "pcmon_bpf.h"

struct procs;
struct sampler;

struct sampler_opts {
	uint32_t max_depth;	/* wanted frames per stack; raised up to what the kernel allows */
	uint32_t counts_entries; /* distinct (target, pid, stack) per drain buffer */
	uint32_t stack_ring_bytes; /* size of the ring of new stacks (power of 2; 0: 8 MiB) */
	uint32_t dwarf_stack;	/* most bytes of user stack a dwarf sample copies (0: 1 MiB) */
	struct procs *procs;	/* the process map, whose maps the programs share (procs.h) */
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


/* Thread @tid's name and its process's (@len bytes each) as BPF noted them with its latest
 * sample: 0, or -ENOENT. */
int sampler_thread_name(struct sampler *s, uint32_t tid, char *comm, char *pcomm, size_t len);

/*
 * Flip the buffers, wait until no program can still write the old pair, and hand every
 * entry of it to @cb, then empty it. ustack/kstack are NULL when absent. The entries come
 * oldest time slice first: @age says how many slices before the one @wall (the wall clock
 * after the pair was read) is in entry @k was counted in (pcmon_key.slice); NULL: all now.
 * @cb is given @wall and the entry's age.
 */
typedef void (*sampler_entry_cb)(void *ctx, const struct pcmon_key *k, const struct pcmon_val *v,
				 const struct pcmon_stack *ustack, const struct pcmon_stack *kstack,
				 uint64_t wall, uint8_t age);
typedef uint8_t (*sampler_age_cb)(void *ctx, const struct pcmon_key *k, uint64_t wall);
int sampler_drain(struct sampler *s, sampler_age_cb age, sampler_entry_cb cb, void *ctx);
/*
 * What the pair being written holds, read from BPF's memory without a system call: whether
 * anything was counted since the last drain, and how many entries were added. The capacity
 * of each counts map: what a drain period may add before samples are lost.
 */
bool sampler_pending(const struct sampler *s, uint32_t *entries);
/*
 * How REAL takes the stacks of threads blocked in system calls, while a REAL target is
 * sampled: "task_work" or "sys_exit" (as the call returns, for charged intervals), or
 * "at_block"; NULL while none is.
 */
const char *sampler_blocked_stacks(const struct sampler *s);
/* Whether BPF asked for a drain since the last call (a counts map filling up). */
bool sampler_drain_wanted(struct sampler *s);
uint32_t sampler_capacity(const struct sampler *s);

/*
 * Off-CPU intervals still open, with their start time (CLOCK_MONOTONIC ns): @o, or the
 * copy @d (@dlen bytes) of a --unwind dwarf thread whose stack is not taken yet.
 */
typedef void (*sampler_open_cb)(void *ctx, const struct pcmon_offcpu *o,
				const struct pcmon_dsample *d, size_t dlen);
void sampler_open_intervals(struct sampler *s, sampler_open_cb cb, void *ctx);

/* Streams: --unwind dwarf records, and new stacks. The fds to poll, and the consumer. */
/*
 * The dwarf records' backlog (dsring.h) in `status`: the most it held, and the records it
 * had no memory for (lost, and said so in pcmond's log too).
 */
void sampler_backlog_json(const struct sampler *s, cJSON *o);
int sampler_dsamples_fd(struct sampler *s);
int sampler_stacks_fd(struct sampler *s);	/* woken when the stacks ring is half full */
/* The stacks ring mapped, for a target whose samples send stacks through it (not dwarf's). */
int sampler_stacks_get(struct sampler *s, char *err, size_t errlen);
typedef void (*sampler_dsample_cb)(void *ctx, const void *data, size_t len);
int sampler_poll(struct sampler *s, sampler_dsample_cb ds, void *ctx);

/* Attach the PCMON_CRITICAL_BEGIN/END probes of an object (once per file). Thread-safe:
 * the engine's loop and its probe thread (probes.h) both call it. */
int sampler_usdt_attach(struct sampler *s, const char *path);
/* Python frames (docs/python.md): process @pid's interpreter, for BPF to read its threads'
 * frames at sample time (@pp NULL: no longer). 0 or -errno. */
struct pcmon_pyproc;
int sampler_py_set(struct sampler *s, uint32_t pid, const struct pcmon_pyproc *pp);
/* The same for a V8 (docs/node.md): @vp NULL removes the entry. */
struct pcmon_v8proc;
int sampler_js_set(struct sampler *s, uint32_t pid, const struct pcmon_v8proc *vp);

/*
 * The maps of BPF's CFI tables (cfitab.c): the map of tables and the processes' lists, in
 * *@tables and *@procs; the programs that drop a list as its process unmaps what it lists
 * are attached on the first call. 0, or -errno if they could not be (no list may be kept).
 */
int sampler_cfi_fds(struct sampler *s, int *tables, int *procs);
/* Java frames (docs/java.md): image @epoch of @pid is a JVM, whose samples BPF sends as dwarf
 * records whatever the target's --unwind (@on false: no longer). 0 or -errno. */
int sampler_jvm_set(struct sampler *s, uint32_t pid, uint32_t epoch, bool on);
/*
 * Called with each new stack as the ring brings it, before its samples are drained: the
 * code objects of its Python frames are read while the process is there to read (its
 * memory is gone by the time its exit is heard of; sample_convert_python_early() says why).
 */
typedef void (*sampler_py_cb)(void *ctx, uint32_t pid, const __u64 *ip, uint32_t n);
void sampler_py_hook(struct sampler *s, sampler_py_cb cb, void *ctx);

/* Sampling's programs' entries in status's "programs" array (procs_program_json()). */
void sampler_programs_json(struct sampler *s, cJSON *arr);

#endif
