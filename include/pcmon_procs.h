/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The shared, process-lifecycle side of BPF (bpf/procs.bpf.c, bpf/procs.bpf.h) and its
 * userspace half (daemon/core/procs.c): which process belongs to which target, each target's
 * settings and drop counters, and the lifecycle events. Every instrument's programs find a
 * task's target through these maps, which the engine shares between the objects
 * (bpf_map__reuse_fd).
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_PROCS_H
#define PCMON_PROCS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PCMON_MAX_TARGETS 256	/* target ids are 1..PCMON_MAX_TARGETS-1 */
#define PCMON_COMM_LEN 16

/* Per-target flags (pcmon_tcfg.flags). */
#define PCMON_TF_ACTIVE	  (1u << 0) /* sampling (not paused, not stopped) */
#define PCMON_TF_KERNEL	  (1u << 1) /* also capture kernel stacks */
#define PCMON_TF_REAL	  (1u << 2) /* account off-CPU time too */
#define PCMON_TF_CHILDREN (1u << 3) /* processes forked after start join the target */
#define PCMON_TF_DWARF	  (1u << 4) /* copy registers and stack for the engine to unwind */
/* its instruments act on exec and dlopen at once (attach probes): wake the engine for them */
#define PCMON_TF_PROMPT	  (1u << 5)
/* read CPython processes' frames (docs/python.md); --no-python clears it */
#define PCMON_TF_PYTHON	  (1u << 6)

struct pcmon_tcfg {
	__u32 flags;
	__u32 owner;	 /* uid of the target's owner; 0 (root) may watch anything */
	__u64 period_ns; /* cpu-clock period this target samples at */
	__u64 slice_ns;	 /* length of its shortest time slices (pcmon_key.slice), 0: none */
};

/*
 * tgid -> which target it belongs to, and how many times it has exec'ed since.
 *
 * probe_seq/probe_ack: an exec or a dynamic-linker event may bring objects with critical-
 * section probes (include/pcmon/critical.h), which only the engine can attach. BPF counts
 * such events in probe_seq (each event carries its number); the engine's probe thread
 * (daemon/instruments/probes.c), once it has looked for probes and attached them, stores that number in
 * probe_ack (the probes_ack program).
 * While they differ the process's marks may be missing, and its samples say so
 * (PCMON_KF_MARKS_PENDING).
 */
struct pcmon_proc {
	__u32 target;	/* first: the engine finds a target's entries by it */
	__u32 epoch;
	__u32 flags;	/* PCMON_PF_* */
	__u32 probe_seq;	/* written by BPF only */
	__u32 probe_ack;	/* written by the engine only, through probes_ack */
	__u32 pad;
};

/* A file as the kernel knows it (probe_files): its superblock's dev_t (major << 20 | minor,
 * as in /proc/PID/maps) and its inode number. */
struct pcmon_file_key {
	__u64 dev;
	__u64 ino;
};

/* The context of the probes_ack program (BPF_PROG_TEST_RUN). */
struct pcmon_probes_ack {
	__u32 tgid;
	__u32 seq;
};

/* Launched by `pcmon run`, held before exec: its samples count from the exec on. */
#define PCMON_PF_EXEC_WAIT (1u << 0)
/*
 * Taken by a --cgroup or --all target when first sampled (or forked from such a process),
 * not named by a --pid target: an explicit target may take it over, and the one that had
 * it says so.
 */
#define PCMON_PF_IMPLICIT (1u << 1)
/*
 * This image of the process was sampled, and the engine told (PCMON_EV_SAMPLED): it reads
 * the process's address map then, not at every fork and exec of processes it may never see
 * a sample of. Not inherited by a child, cleared by exec.
 */
#define PCMON_PF_SAMPLED (1u << 2)
/*
 * The process has exited (its last thread passed sched_process_exit): its entry stays until
 * the process is freed, as its address space is torn down after that and the samples taken
 * meanwhile are still its image's. An entry without the flag is a new process's that got
 * the same pid before the old one was freed, and stays.
 */
#define PCMON_PF_EXITED (1u << 3)

/*
 * What a process mapped for execution as it exited (exit_maps, keyed by process and image):
 * its address space is torn down next, and an image first sampled then, or sampled just
 * before, is gone before the engine can read its map. The engine reads this instead, and
 * names the files it holds open by device and inode.
 */
#define PCMON_EXIT_VMAS 48

struct pcmon_exit_key {
	__u32 tgid;
	__u32 epoch;
};

struct pcmon_exit_vma {
	__u64 start, end, pgoff;
	__u64 ino;
	__u32 dev;		/* the superblock's dev_t as the kernel has it (major << 20 | minor) */
	__u32 pad;
};

struct pcmon_exit_maps {
	__u32 n;
	__u32 more;		/* there were more than PCMON_EXIT_VMAS */
	struct pcmon_exit_vma v[PCMON_EXIT_VMAS];
};

/* Taken while the probes of objects the process just loaded were not attached yet. */
#define PCMON_KF_MARKS_PENDING (1u << 0)
/* The user stack's native walk took all the frames it had room for (sample.bpf.c). */
#define PCMON_KF_USER_DEPTH (1u << 1)

/* Settings of the whole process map (an array of one). */
struct pcmon_pglobal {
	__u32 all_target;	/* target id of an --all target, 0 if none */
	__u32 cgroup_targets;	/* number of entries in cgroup_target */
	__u32 ntailed;		/* tailed legs of every target (pcmon_tail.h): 0, samples skip them */
	__u32 pad;
};

/* Per-target drop counters (per-CPU array indexed by target id). */
/*
 * A target's counters that BPF keeps (tstat, per CPU), defined once:
 * X(field, since, drop, name) — the state file's key is the field's name, read SF_<since>
 * (ALWAYS, SINCE2: from format 2 on, OPTIONAL: added later); @drop 1: a drop, counted in
 * the listing's "lost" and named @name in its lost_by_reason; 0: a fact of its own in the
 * summary, named @name.
 */
#define PCMON_TSTAT_FIELDS(X)                                                              \
	/* samples dropped: the counts map was full */                                     \
	X(lost_counts_full, ALWAYS, 1, counts_map_full)                                 \
	/* off-CPU intervals not tracked: the start map was full */                        \
	X(lost_offcpu_full, ALWAYS, 1, offcpu_map_full)                                 \
	/* --unwind dwarf samples dropped: the sample ring was full */                     \
	X(lost_ring_full, SINCE2, 1, sample_ring_full)                                     \
	/* --unwind dwarf samples whose stack copy was cut to fit a ring too full for */   \
	/* all of it (each also cut short: truncated) */                                   \
	X(ring_cut, OPTIONAL, 0, ring_cut)                                                 \
	/* samples of a process its non-root owner may no longer watch */                  \
	X(denied, OPTIONAL, 0, denied)                                                     \
	/* REAL: timer ticks that reached a thread of the target after it came on CPU, */  \
	/* given to the watched thread that was running when they fired ... */             \
	X(ticks_moved, OPTIONAL, 0, ticks_moved)                                           \
	/* ... or dropped: that thread is running again (or came on after it too) ... */   \
	X(ticks_dropped, OPTIONAL, 0, ticks_dropped)                                       \
	/* ... or not ours: that thread is not watched (another program's tick) */          \
	X(ticks_unwatched, OPTIONAL, 0, ticks_unwatched)                                   \
	/* timer ticks the kernel missed while a thread of the target held the CPU from */ \
	/* one tick to the next (pcmon_ticks_missed()): no sample stands for them */        \
	X(ticks_missed, OPTIONAL, 0, ticks_missed)

struct pcmon_tstat {
#define PCMON_TSTAT_FIELD(f, since, drop, name) __u64 f;
	PCMON_TSTAT_FIELDS(PCMON_TSTAT_FIELD)
#undef PCMON_TSTAT_FIELD
};

/* Process lifecycle events, streamed over the ring buffer. */
enum pcmon_ev_type {
	PCMON_EV_FORK = 1,
	PCMON_EV_EXEC,
	PCMON_EV_EXIT,
	PCMON_EV_DLOPEN,	/* a watched process loaded a library: look for probes in it */
	PCMON_EV_JOIN,		/* a process joined a --cgroup or --all target (probe ring only) */
	PCMON_EV_SAMPLED,	/* the first sample of an image (PCMON_PF_SAMPLED) */
};

struct pcmon_event {
	__u32 type;
	__u32 target;
	__u32 pid;
	__u32 ppid;
	__u32 epoch;
	union {
		__u32 exit_code;	/* EXIT */
		__u32 pepoch;		/* FORK: the parent's exec epoch, the image the child copies */
	};
	char comm[PCMON_COMM_LEN];
	__u32 probe_seq;	/* FORK, EXEC, DLOPEN, JOIN: the process's probe_seq after it */
	__u32 pad;
	__u64 ts;		/* bpf_ktime_get_ns() at the event */
};

/*
 * Global counters (per-CPU array, one element), defined once: X(field, status) — @status 1:
 * `pcmon status` reports it, named as the field.
 */
#define PCMON_GSTAT_FIELDS(X)                                                              \
	X(samples_seen, 0) /* perf_event program runs */                                   \
	X(events_lost, 1)  /* ring buffer full */                                          \
	X(procs_full, 1)   /* a child could not join its target: proc map full */           \
	X(probe_events, 1) /* exec/dlopen events that brought files the probe thread checks */ \
	X(probe_events_spared, 1) /* ... whose files were all known: no event (probe_files) */ \
	X(cfi_walked, 1)   /* --unwind dwarf stacks walked in BPF (whole, or at depth): */  \
			   /* samples', and blocked threads' taken as they switch out */ \
	X(cfi_copied, 1)   /* ... copied for the engine instead (no table, a rule it lacks) */ \
	X(ticks_missed, 1) /* timer ticks the kernel missed, on any thread (pcmon_ticks_missed()) */

struct pcmon_gstat {
#define PCMON_GSTAT_FIELD(f, status) __u64 f;
	PCMON_GSTAT_FIELDS(PCMON_GSTAT_FIELD)
#undef PCMON_GSTAT_FIELD
};

#endif /* PCMON_PROCS_H */
