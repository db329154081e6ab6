/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sampling instrument's BPF structs (bpf/sample.bpf.c), shared with its userspace half
 * (daemon/instruments/sampler.c, daemon/instruments/sample.c): the in-kernel aggregates, the --unwind dwarf records,
 * open off-CPU intervals and marked critical sections.
 * Plain __u32/__u64 only: this header is compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_SAMPLE_BPF_H
#define PCMON_SAMPLE_BPF_H

#include "pcmon_procs.h"
#include "pcmon_python.h"

/* task_struct.flags: a kernel thread (include/linux/sched.h; a macro, not in BTF) */
#define PCMON_PF_KTHREAD 0x00200000

#define PCMON_STACK_MAX 512	/* frames a stack buffer can hold; the live depth is a rodata knob */

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
	PCMON_SERR_FULL,	/* the stacks ring was full: frames were lost */
	PCMON_SERR_OTHER,	/* bpf_get_stack() failed for another reason */
	PCMON_SERR_KTHREAD,	/* a kernel thread: it has no user stack */
	PCMON_SERR_MAX,
};

/* Off-CPU kinds carry nanoseconds (pcmon_val.ns), on-CPU ones do not. */
#define PCMON_KIND_IS_OFFCPU(k) ((k) == PCMON_KIND_OFF_BLOCKED || (k) == PCMON_KIND_OFF_RUNNABLE)

/* A stack: frames innermost first, as the kernel gives them. */
struct pcmon_stack {
	__u32 len;
	__u32 pad;
	__u64 ip[PCMON_STACK_MAX];
};

/*
 * A record of the stacks ring: a stack BPF counted under a key new to the buffer pair @gen,
 * sent once per pair, cut after its frames. Counts entries name it by @key (a hash of the
 * frames).
 */
struct pcmon_srec {
	__u64 key;
	__u32 gen;
	__u32 pid;	/* the process it was taken in (tgid): Python frames are named at once */
	struct pcmon_stack st;
};

struct pcmon_key {
	__u32 target;
	__u32 pid;	/* tgid */
	__u32 epoch;	/* exec generation of pid: which address space ustack belongs to */
	__u8 kind;	/* enum pcmon_kind */
	__u8 uerr;	/* enum pcmon_stack_err for the user stack */
	__u8 kerr;	/* enum pcmon_stack_err for the kernel stack */
	__u8 flags;	/* PCMON_KF_* */
	__u32 tid;	/* the thread */
	__u32 tset;	/* on-CPU: its open instances of tailed legs (pcmon_tail.h), 0: none */
	__u64 ustack;	/* key in the stacks map, 0 = no user stack */
	__u64 kstack;	/* key in the stacks map, 0 = no kernel stack */
	__u64 section;	/* address of the innermost marked section's name (in pid), 0 = none */
	/*
	 * The thread's cgroup v2 (its id: the inode number of its directory) when sampled, or
	 * when it went off CPU (pcmon list --by cgroup). In the key, not in a map of pid ->
	 * cgroup: 8 bytes more a key cost each counts map 8 bytes an entry and the hash 8 bytes
	 * more to mix, where a map would cost every sample a lookup of its own, and would
	 * charge a process moved to another cgroup all its samples in the last one.
	 */
	__u64 cgroup;
	/*
	 * The time slice the sample was taken in: the number of whole slices (its target's
	 * shortest, pcmon_tcfg.slice_ns) since the epoch by the wall clock, so that a count is
	 * charged to its slice however late it is read (slice_stamp()).
	 */
	__u64 slice;
};

/* A thread's name, and its process's, as its latest sample found them (tnames, by tid). */
struct pcmon_tname {
	char comm[16];
	char pcomm[16];	/* the process's: its main thread's (pcmon list --by comm) */
};

#define PCMON_SECTION_LEN 32	/* bytes of a section name kept, with its NUL */
#define PCMON_SECTION_NEST 8	/* names remembered per thread; deeper nesting keeps counting */

/* Per-thread state of PCMON_CRITICAL_BEGIN/END (task-local storage). */
struct pcmon_crit {
	__u32 depth;
	__u32 pad;
	__u64 hash[PCMON_SECTION_NEST];	/* name addresses, outermost first */
	__u64 end_pc[PCMON_SECTION_NEST]; /* the user pc of the END that last closed each */
};

struct pcmon_val {
	__u64 count;	/* samples (on-CPU) or switches (off-CPU) */
	__u64 ns;	/* off-CPU nanoseconds */
};

/*
 * --unwind dwarf: a sample (or the start of an off-CPU interval) with the user registers and
 * the top of the user stack, for the engine to unwind with the objects' CFI; the end of an
 * off-CPU interval is a short record that closes the start of the same thread.
 */
/*
 * Bytes of user stack a record can carry: the whole stack of a thread, up to this (the
 * default limit of a process's stack, RLIMIT_STACK); pcmond copies at most
 * PCMON_DWARF_STACK_DEFAULT unless told otherwise (--dwarf-stack).
 */
#define PCMON_DWARF_STACK_MAX (8u << 20)
#define PCMON_DWARF_STACK_DEFAULT (1u << 20)
#define PCMON_DWARF_STACK_GUESS (64u << 10) /* a thread whose stack mapping is not known yet */
#define PCMON_DWARF_RING_CUT (16u << 10)    /* what a copy the ring has no room for keeps */
#define PCMON_NREGS 17			/* x86-64 DWARF registers 0..16 (rip) */
#define PCMON_KSTACK_MAX 127
#define PCMON_MAX_PERIODS 8		/* sampling intervals in use at once */

/*
 * --unwind dwarf in BPF: the call-frame information of an object compiled into a table of
 * rows, each from its pc on (an ELF vaddr of the object) to the next row's, sorted by pc. A
 * table is an array map in the map of maps cfitabs; a process's executable mappings that
 * have one are listed in cfiprocs. What the rows cannot say (a rule with an expression, a
 * register other than rsp or rbp for the CFA, a signal frame, code without CFI) is a
 * PCMON_CFI_NONE row: the sample is then copied and unwound by the engine, as before.
 */
enum pcmon_cfi_kind {
	PCMON_CFI_NONE = 0,	/* not walked in BPF: the engine unwinds a copy */
	PCMON_CFI_RSP,		/* CFA = rsp + cfa_off */
	PCMON_CFI_RBP,		/* CFA = rbp + cfa_off */
	PCMON_CFI_PLT,		/* a PLT entry: CFA = rsp + 8, + 8 where (pc & 15) >= arg */
	PCMON_CFI_ROOT,		/* the return address is undefined: no caller (_start, clone3) */
};

/* Every row but ROOT and NONE: the return address at CFA - 8, the caller's rsp the CFA. */
struct pcmon_cfi_row {
	__u32 pc;
	__s32 cfa_off;
	__s16 rbp_off;	/* the caller's rbp saved at CFA + rbp_off; 0: rbp is the caller's */
	__u8 kind;	/* enum pcmon_cfi_kind */
	__u8 arg;
};

#define PCMON_CFI_TABLES 4096	/* tables at once (objects), slot 0 unused */
#define PCMON_CFI_MAPS 64	/* mappings with a table per process */

struct pcmon_cfi_map {
	__u64 start, end;	/* the mapping's addresses */
	__u64 bias;		/* pc - bias: the object's vaddr */
	__u32 table;		/* its slot in cfitabs */
	__u32 nrows;
};

struct pcmon_cfi_proc {
	__u32 epoch;		/* the image the mappings are of */
	__u32 n;
	struct pcmon_cfi_map m[PCMON_CFI_MAPS];	/* sorted by start, not overlapping */
};

enum pcmon_ds_type {
	PCMON_DS_SAMPLE = 1,
	PCMON_DS_OFF_START,
	PCMON_DS_OFF_END,
	PCMON_DS_DRAIN,		/* a counts map is an eighth full: drain now (header only) */
	PCMON_DS_OFF,		/* an off-CPU interval charged whole (ns), its stack taken after it */
	PCMON_DS_OWED,		/* ns on-CPU samples owed to the thread (tick_not_ours()) */
	PCMON_DS_OWED_END,	/* ns of them, at the stack its OFF_START sent (header only) */
};

struct pcmon_dhdr {
	__u32 type;	/* enum pcmon_ds_type */
	__u32 tid;
	__u64 ts;	/* OFF_START: when it went off CPU */
	__u64 ns;	/* OFF_END, OFF: how long it was off */
	struct pcmon_key key;
};

struct pcmon_dsample {
	struct pcmon_dhdr h;
	__u64 regs[PCMON_NREGS];
	__u64 start_stack; /* the process's initial stack pointer: the entry frame's CFA */
	__u64 taken;	/* when the stack was copied: whatever code it runs was mapped by then */
	__u32 ulen;	/* bytes of stack copied, from regs[7] (rsp) up */
	__u32 klen;	/* kernel frames */
	__u64 kstack[PCMON_KSTACK_MAX];
	/* Python frames (docs/python.md): a marker and the frames after it, 0: none */
	__u32 pylen;
	/* the first 4 bytes of code at regs[16] when the stack was copied (0: not read): a
	 * JIT's code there replaced since is told from what ran (docs/java.md) */
	__u32 code;
	__u64 py[PCMON_PY_FRAMES_MAX + 1];
	__u8 stack[];	/* ulen bytes; the record has room for a size class >= ulen */
};

/* How an off-CPU thread's stack will be taken (sample.bpf.c, switch_out). */
enum pcmon_lazy {
	PCMON_LAZY_NO,		/* taken when it went off CPU */
	PCMON_LAZY_RETURN,	/* as it returns to user mode (enum pcmon_settle) */
	PCMON_LAZY_PEER,	/* when a thread of its own process switches it in */
};

/* What takes a lazy thread's stack as its system call returns (lazy_stacks in sample.bpf.c). */
enum pcmon_settle {
	PCMON_SETTLE_NONE,	/* nothing: stacks are taken as threads block */
	PCMON_SETTLE_SYS_EXIT,	/* the sys_exit program, which every system call then pays */
	PCMON_SETTLE_TASK_WORK,	/* a task work, scheduled for charged intervals only (6.18+) */
};

/*
 * A thread's off-CPU state. ts != 0: it went off CPU then and has not run since. A thread
 * blocked in a system call has its stack taken when the call returns (lazy), and only if its
 * interval is charged: pending_ns waits for that.
 */
struct pcmon_offcpu {
	/*
	 * What every switch reads or writes comes first: task storage values start 8 bytes
	 * into a cache line, so these 56 bytes share one. A switch out in a busy loop touched
	 * a second line for on_ts and owed_on: 10 ns a switch more, with a compiler beside it.
	 */
	__u64 ts;		/* bpf_ktime_get_ns() when switched out */
	__u64 on_ts;		/* bpf_ktime_get_ns() when last switched in (0: not seen) */
	__u64 period_ns;	/* lazy: its target's period when it went off CPU */
	/* its process's entry in procs (target, epoch, marks pending) as of procs_gen */
	__u64 proc_gen;		/* procs_gen when copied, with PCMON_PROC_COPIED; 0: none */
	__u32 proc_target;
	__u32 proc_epoch;
	__u32 on_prev;		/* the thread it took the CPU from then */
	__u8 dwarf;		/* its stack went to the engine (--unwind dwarf) */
	__u8 lazy;		/* PCMON_LAZY_*: its stack is not taken yet */
	__u8 proc_marks;
	__u8 pad;
	__u64 owed_on;		/* timer ticks that fired while it ran, delivered after it left */
	__u64 pending_ns;	/* charged, waiting for the stack at the system call's return */
	__u64 mm;		/* PCMON_LAZY_PEER: the address space it is read through */
	__u64 slice_ns;		/* its target's slices' (pcmon_tcfg), to stamp what is charged */
	struct pcmon_key key;	/* ustack/kstack are the keys of the frames below */
	struct pcmon_srec urec;
	struct pcmon_srec krec;
};

/*
 * The off-CPU intervals still open, as the iterator dump_offcpu lists them: for each, this
 * header, then @len bytes: a struct pcmon_offcpu (PCMON_OPEN_FP: its stacks, taken as it went
 * off CPU, or walked by frame pointers now), or a struct pcmon_dsample and the ulen bytes of
 * stack after it (PCMON_OPEN_DWARF: the registers and stack of a --unwind dwarf thread whose
 * copy was not taken yet, copied now for the engine to unwind).
 */
enum pcmon_open_type {
	PCMON_OPEN_FP = 1,
	PCMON_OPEN_DWARF,
};

struct pcmon_open_hdr {
	__u32 type;	/* enum pcmon_open_type */
	__u32 len;
};

/*
 * All one task writes to an iterator's seq file must fit in its buffer (8 pages), or the
 * read fails: a copy of stack carries what is left, about 30 KiB. A deeper stack is unwound that
 * far and flagged truncated.
 */
#define PCMON_OPEN_SEQ_MAX 32704
#define PCMON_OPEN_STACK                                                                    \
	((PCMON_OPEN_SEQ_MAX - sizeof(struct pcmon_open_hdr) - sizeof(struct pcmon_dsample)) & \
	 ~7ul)

/*
 * Timer ticks the kernel missed. A cpu-clock event's timer fires every period on its CPU;
 * when it fires late by more than a period (its interrupt waited: interrupts off, a virtual
 * machine's host), hrtimer_forward_now() moves it past the ticks it missed, which then give
 * no sample, and perf counts nothing for them. Its expiries stay on the period's grid from
 * where the timer started, so two ticks of one timer, fired at @last and at @fired, are a
 * whole number of periods apart: the ticks between them were missed. A gap off the grid
 * means the timer was started again in between (a new event): none missed, 0. (BPF and the
 * unit tests share this.)
 */
static inline __u64 pcmon_ticks_missed(__u64 last, __u64 fired, __u64 period)
{
	__u64 gap;

	if (!last || !period || fired <= last)
		return 0;
	gap = fired - last;
	if (gap % period)
		return 0;
	return gap / period - 1;
}

#endif /* PCMON_SAMPLE_BPF_H */
