/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Structures shared by the BPF side (bpf/sample.bpf.c) and the engine (daemon/sampler.c).
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_BPF_H
#define PCMON_BPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PCMON_MAX_TARGETS 256	/* target ids are 1..PCMON_MAX_TARGETS-1 */
#define PCMON_STACK_MAX 512	/* frames a stack buffer can hold; the live depth is a rodata knob */
#define PCMON_COMM_LEN 16

/* What a counts entry measures (pcmon_key.kind). */
enum pcmon_kind {
	PCMON_KIND_ONCPU = 0,	 /* timer sample, task was in user mode */
	PCMON_KIND_ONCPU_KMODE,	 /* timer sample, task was in kernel mode */
	PCMON_KIND_OFF_BLOCKED,	 /* off-CPU interval, task slept (value.ns) */
	PCMON_KIND_OFF_RUNNABLE, /* off-CPU interval, task was preempted (value.ns) */
	PCMON_KIND_MAX,
};

/* Stack capture outcome, kept in the key so that a failed walk is still a counted sample. */
enum pcmon_stack_err {
	PCMON_SERR_NONE = 0,
	PCMON_SERR_FAULT,	/* bpf_get_stack() failed: user memory not readable */
	PCMON_SERR_FULL,	/* the stacks map was full: frames were lost */
	PCMON_SERR_OTHER,	/* bpf_get_stack() failed for another reason */
	PCMON_SERR_MAX,
};

/* Per-target flags (pcmon_tcfg.flags). */
#define PCMON_TF_ACTIVE	  (1u << 0) /* sampling (not paused, not stopped) */
#define PCMON_TF_KERNEL	  (1u << 1) /* also capture kernel stacks */
#define PCMON_TF_REAL	  (1u << 2) /* account off-CPU time too */
#define PCMON_TF_CHILDREN (1u << 3) /* processes forked after start join the target */
#define PCMON_TF_DWARF	  (1u << 4) /* copy registers and stack for the engine to unwind */

struct pcmon_tcfg {
	__u32 flags;
	__u32 owner;	 /* uid of the target's owner; 0 (root) may watch anything */
	__u64 period_ns; /* cpu-clock period this target samples at */
};

/*
 * tgid -> which target it belongs to, and how many times it has exec'ed since.
 *
 * probe_seq/probe_ack: an exec or a dynamic-linker event may bring objects with critical-
 * section probes (include/pcmon/critical.h), which only the engine can attach. BPF counts
 * such events in probe_seq (each event carries its number); the engine's probe thread
 * (daemon/probes.c), once it has looked for probes and attached them, stores that number in
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

/* A stack as stored in the stacks maps: frames innermost first, as the kernel gives them. */
struct pcmon_stack {
	__u32 len;
	__u32 pad;
	__u64 ip[PCMON_STACK_MAX];
};

struct pcmon_key {
	__u32 target;
	__u32 pid;	/* tgid */
	__u32 epoch;	/* exec generation of pid: which address space ustack belongs to */
	__u8 kind;	/* enum pcmon_kind */
	__u8 uerr;	/* enum pcmon_stack_err for the user stack */
	__u8 kerr;	/* enum pcmon_stack_err for the kernel stack */
	__u8 flags;	/* PCMON_KF_* */
	__u64 ustack;	/* key in the stacks map, 0 = no user stack */
	__u64 kstack;	/* key in the stacks map, 0 = no kernel stack */
	__u64 section;	/* address of the innermost marked section's name (in pid), 0 = none */
};

/* Taken while the probes of objects the process just loaded were not attached yet. */
#define PCMON_KF_MARKS_PENDING (1u << 0)

#define PCMON_SECTION_LEN 32	/* bytes of a section name kept, with its NUL */
#define PCMON_SECTION_NEST 8	/* names remembered per thread; deeper nesting keeps counting */

/* Per-thread state of PCMON_CRITICAL_BEGIN/END (task-local storage). */
struct pcmon_crit {
	__u32 depth;
	__u32 pad;
	__u64 hash[PCMON_SECTION_NEST];	/* name addresses, outermost first */
};

struct pcmon_val {
	__u64 count;	/* samples (on-CPU) or switches (off-CPU) */
	__u64 ns;	/* off-CPU nanoseconds */
};

/* Per-target drop counters (per-CPU array indexed by target id). */
struct pcmon_tstat {
	__u64 lost_counts_full;	/* samples dropped: the counts map was full */
	__u64 lost_offcpu_full;	/* off-CPU intervals not tracked: the start map was full */
	__u64 lost_ring_full;	/* --unwind dwarf samples dropped: the sample ring was full */
	__u64 denied;		/* samples of a process its non-root owner may no longer watch */
};

/*
 * --unwind dwarf: a sample (or the start of an off-CPU interval) with the user registers and
 * the top of the user stack, for the engine to unwind with the objects' CFI; the end of an
 * off-CPU interval is a short record that closes the start of the same thread.
 */
#define PCMON_DWARF_STACK_MAX 65536	/* bytes of user stack a record can carry */
#define PCMON_NREGS 17			/* x86-64 DWARF registers 0..16 (rip) */
#define PCMON_KSTACK_MAX 127

enum pcmon_ds_type {
	PCMON_DS_SAMPLE = 1,
	PCMON_DS_OFF_START,
	PCMON_DS_OFF_END,
};

struct pcmon_dhdr {
	__u32 type;	/* enum pcmon_ds_type */
	__u32 tid;
	__u64 ts;	/* OFF_START: when it went off CPU */
	__u64 ns;	/* OFF_END: how long it was off */
	struct pcmon_key key;
};

struct pcmon_dsample {
	struct pcmon_dhdr h;
	__u64 regs[PCMON_NREGS];
	__u64 start_stack; /* the process's initial stack pointer: the entry frame's CFA */
	__u32 ulen;	/* bytes of stack copied, from regs[7] (rsp) up */
	__u32 klen;	/* kernel frames */
	__u64 kstack[PCMON_KSTACK_MAX];
	__u8 stack[];	/* ulen bytes; the record has room for a size class >= ulen */
};

/* A thread that went off CPU and has not run since. */
struct pcmon_offcpu {
	__u64 ts;		/* bpf_ktime_get_ns() when switched out */
	__u32 dwarf;		/* its stack went to the engine (--unwind dwarf) */
	__u32 pad;
	struct pcmon_key key;	/* ustack/kstack are hashes of the frames below */
	struct pcmon_stack ustack;
	struct pcmon_stack kstack;
};

/* Process lifecycle events, streamed over the ring buffer. */
enum pcmon_ev_type {
	PCMON_EV_FORK = 1,
	PCMON_EV_EXEC,
	PCMON_EV_EXIT,
	PCMON_EV_DLOPEN,	/* a watched process loaded a library: look for probes in it */
	PCMON_EV_JOIN,		/* a process joined a --cgroup or --all target (probe ring only) */
};

struct pcmon_event {
	__u32 type;
	__u32 target;
	__u32 pid;
	__u32 ppid;
	__u32 epoch;
	__u32 exit_code;
	char comm[PCMON_COMM_LEN];
	__u32 probe_seq;	/* FORK, EXEC, DLOPEN, JOIN: the process's probe_seq after it */
	__u32 pad;
	__u64 ts;		/* bpf_ktime_get_ns() at the event */
};

/* Global counters (per-CPU array, one element). */
struct pcmon_gstat {
	__u64 samples_seen;	/* perf_event program runs */
	__u64 events_lost;	/* ring buffer full */
	__u64 procs_full;	/* a child could not join its target: proc map full */
};

#endif /* PCMON_BPF_H */
