/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --unwind dwarf: the registers and a copy of the top of the user stack sent to the engine,
 * which unwinds them with the objects' call-frame information. Part of sample.bpf.c.
 */
#ifndef PCMON_SAMPLE_DWARF_BPF_H
#define PCMON_SAMPLE_DWARF_BPF_H

/* ---- --unwind dwarf */

/* The mapping of each thread's stack, remembered: looking it up needs the mmap lock. */
struct stack_vma {
	__u64 start, end;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct stack_vma);
} stackvma SEC(".maps");

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct stack_vma *v = data;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	return 0;
}

static __always_inline void ring_count(__u32 target, bool cut)
{
	struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &target);

	if (ts)
		__sync_fetch_and_add(cut ? &ts->ring_cut : &ts->lost_ring_full, 1);
}

/*
 * A record with room for @need bytes of stack, from the smallest size class that holds them.
 * The ring takes constant sizes only; classes keep a thread with a shallow stack from paying
 * ring space for the deepest one (a 64 KiB record for 2 KiB of frames). Past 64 KiB they
 * double, up to the whole of the largest stack a process is given by default: a deep
 * recursion or a big buffer in main costs what its stack holds, and still reaches the root.
 */
#define DCLASS(bytes)                                                                   \
	if (need <= (bytes)) {                                                          \
		*room = (bytes);                                                        \
		return bpf_ringbuf_reserve(&dsamples, sizeof(struct pcmon_dsample) + (bytes), 0); \
	}
static __always_inline struct pcmon_dsample *reserve_dwarf(__u64 need, __u64 *room)
{
	DCLASS(1024)
	DCLASS(2048)
	DCLASS(4096)
	DCLASS(8192)
	DCLASS(16384)
	DCLASS(32768)
	DCLASS(65536)
	DCLASS(131072)
	DCLASS(262144)
	DCLASS(524288)
	DCLASS(1048576)
	DCLASS(2097152)
	DCLASS(4194304)
	*room = PCMON_DWARF_STACK_MAX;
	return bpf_ringbuf_reserve(&dsamples, sizeof(struct pcmon_dsample) + PCMON_DWARF_STACK_MAX, 0);
}
#undef DCLASS

/*
 * How many bytes above @sp hold the thread's frames. The main thread's outermost frame
 * (_start) sits just below mm->start_stack, where argc is: the environment and auxiliary
 * vector above it are not frames. Another thread's stack is its mapping, looked up once per
 * thread (bpf_find_vma() needs the mmap lock, which it may not get from an interrupt or the
 * scheduler, so the answer is remembered).
 */
static __always_inline __u64 stack_need(struct task_struct *task, __u64 sp, __u64 start_stack)
{
	struct stack_vma *sv;

	if (BPF_CORE_READ(task, pid) == BPF_CORE_READ(task, tgid) && start_stack > sp &&
	    start_stack - sp < dwarf_stack)
		return start_stack - sp + 64;
	sv = bpf_task_storage_get(&stackvma, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (sv && (sp < sv->start || sp >= sv->end)) {
		struct stack_vma found = {};

		if (bpf_find_vma(task, sp, vma_cb, &found, 0) == 0 && found.end > sp)
			*sv = found;
	}
	if (sv && sp >= sv->start && sp < sv->end)
		return sv->end - sp;
	/*
	 * Unknown, for now: the mmap lock was taken (a new thread's first samples, while its
	 * process maps the stacks of the others). A guess, not the whole allowance: a few
	 * 1 MiB records in a row filled an 8 MiB ring before the engine woke. A stack deeper
	 * than the guess is unwound as far as it goes and flagged cut short.
	 */
	return PCMON_DWARF_STACK_GUESS;
}

/*
 * Stream @task's user registers and the top of its user stack for the engine to unwind: the
 * current thread's, or one off CPU whose process is the current one (its stack is read
 * through the current address space). The user registers are the ones saved at the last
 * entry into the kernel: the interrupted ones for a sample taken in user mode, the
 * system-call site's otherwise. @kernel: also the kernel stack (the current thread's only).
 */
/*
 * @task's user registers @r (DWARF numbering), its initial stack pointer and the time into
 * record @d: what the engine unwinds a copy of its stack from.
 */
static __always_inline void dsample_regs(struct pcmon_dsample *d, struct task_struct *task,
					 struct pt_regs *r, __u64 start_stack)
{
	d->regs[0] = BPF_CORE_READ(r, ax);
	d->regs[1] = BPF_CORE_READ(r, dx);
	d->regs[2] = BPF_CORE_READ(r, cx);
	d->regs[3] = BPF_CORE_READ(r, bx);
	d->regs[4] = BPF_CORE_READ(r, si);
	d->regs[5] = BPF_CORE_READ(r, di);
	d->regs[6] = BPF_CORE_READ(r, bp);
	d->regs[7] = BPF_CORE_READ(r, sp);
	d->regs[8] = BPF_CORE_READ(r, r8);
	d->regs[9] = BPF_CORE_READ(r, r9);
	d->regs[10] = BPF_CORE_READ(r, r10);
	d->regs[11] = BPF_CORE_READ(r, r11);
	d->regs[12] = BPF_CORE_READ(r, r12);
	d->regs[13] = BPF_CORE_READ(r, r13);
	d->regs[14] = BPF_CORE_READ(r, r14);
	d->regs[15] = BPF_CORE_READ(r, r15);
	d->regs[16] = user_pc(task, BPF_CORE_READ(r, ip));
	d->start_stack = start_stack;
	d->taken = bpf_ktime_get_ns();
}

static __always_inline void emit_dwarf_from(void *ctx, struct task_struct *task,
					    const struct pcmon_key *key, __u32 type, __u64 ts,
					    __u64 ns, bool kernel, const bool may_sleep)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 sp = BPF_CORE_READ(r, sp), start_stack = BPF_CORE_READ(task, mm, start_stack);
	__u64 need = stack_need(task, sp, start_stack), room, n;
	bool kthread = BPF_CORE_READ(task, flags) & PCMON_PF_KTHREAD;
	struct pcmon_dsample *d;
	long got;

	if (need > dwarf_stack)
		need = dwarf_stack;
	if (kthread) /* no user stack, by nature */
		need = 0;
	if (type != PCMON_DS_SAMPLE) /* (on_sample() noted it already) */
		note_thread(key->tid, task);
	d = reserve_dwarf(need, &room);
	if (!d && need > PCMON_DWARF_RING_CUT) {
		/*
		 * The ring has no room for the whole copy (the reader fell behind): the
		 * innermost frames still fit, and are what the sample measured (its place, its
		 * shallow time). The engine walks them and flags the stack truncated.
		 */
		d = bpf_ringbuf_reserve(&dsamples, sizeof(*d) + PCMON_DWARF_RING_CUT, 0);
		room = PCMON_DWARF_RING_CUT;
		if (d)
			ring_count(key->target, true);
	}
	if (!d) {
		ring_count(key->target, false);
		return;
	}
	d->h.type = type;
	d->h.tid = BPF_CORE_READ(task, pid);
	d->h.ts = ts;
	d->h.ns = ns;
	d->h.key = *key;
	dsample_regs(d, task, r, start_stack);

	/*
	 * A read fails whole where a page is not there: past the end of the mapping, or one
	 * never written (the part of a big buffer a blocking call has not filled yet, say
	 * epoll_wait()'s events) or swapped out. Where the program may sleep (the thread's own
	 * task work, as it returns to user mode) such pages are faulted in, as the thread's own
	 * read of them would (a page never written reads as zeros); else, and past the end of
	 * the mapping, the copy is halved until a read succeeds.
	 */
	n = need < room ? need : room;
	got = kthread ? 0 : bpf_probe_read_user(d->stack, n, (void *)sp);
	if (got && may_sleep)
		got = bpf_copy_from_user(d->stack, n, (void *)sp);
	for (int i = 0; i < 6 && got && n > 256; i++) {
		n /= 2;
		got = may_sleep ? bpf_copy_from_user(d->stack, n, (void *)sp)
				: bpf_probe_read_user(d->stack, n, (void *)sp);
	}
	d->ulen = got || kthread ? 0 : n;
	if (got)
		d->h.key.uerr = PCMON_SERR_FAULT;
	if (kthread)
		d->h.key.uerr = PCMON_SERR_KTHREAD;
	d->pylen = 0;
	d->code = 0;
	if (!kthread) {
		py_append_dwarf(task, key, d->h.tid, d, type != PCMON_DS_SAMPLE);
		if (bpf_probe_read_user(&d->code, sizeof(d->code), (void *)d->regs[16]))
			d->code = 0;
	}
	d->klen = 0;
	if (kernel) {
		got = bpf_get_stack(ctx, d->kstack, sizeof(d->kstack), 0);
		if (got > 0)
			d->klen = got / sizeof(__u64);
		else
			d->h.key.kerr = PCMON_SERR_FAULT;
	}
	bpf_ringbuf_submit(d, ring_flags_py(&dsamples, d->pylen > 1));
}

/* The same, from a program that may not sleep. */
static __always_inline void emit_dwarf(void *ctx, struct task_struct *task,
				       const struct pcmon_key *key, __u32 type, __u64 ts, __u64 ns,
				       bool kernel)
{
	emit_dwarf_from(ctx, task, key, type, ts, ns, kernel, false);
}

/* record() into the counts map the engine is not draining */
/* @n samples (of @ns nanoseconds off CPU, if any) into the drain generation's counts. */
static __always_inline void record_n(struct pcmon_key *key, struct pcmon_srec *ur,
				     struct pcmon_srec *kr, __u64 ns, __u64 n)
{
	__u32 g = gen & 1;

	if (g)
		record(&counts1, 1, key, ur, kr, ns, n);
	else
		record(&counts0, 0, key, ur, kr, ns, n);
}

static __always_inline void record_current(struct pcmon_key *key, struct pcmon_srec *ur,
					   struct pcmon_srec *kr, __u64 ns)
{
	record_n(key, ur, kr, ns, 1);
}

#endif /* PCMON_SAMPLE_DWARF_BPF_H */
