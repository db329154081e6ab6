/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --unwind dwarf walked in BPF, from the objects' call-frame information compiled into
 * tables of rows (pcmon_sample.h, built by the engine: daemon/instruments/cfitab.c). A walk
 * that reaches a root (or the depth) is counted in the kernel like a frame-pointer stack:
 * no copy of the stack, nothing for the engine to unwind. One that meets what the tables
 * cannot say (no table yet, code without CFI, a JIT, a signal frame, a rule with an
 * expression) gives up, and the sample is copied for the engine as before. Part of
 * sample.bpf.c.
 */
#ifndef PCMON_SAMPLE_CFI_BPF_H
#define PCMON_SAMPLE_CFI_BPF_H

struct cfi_rows {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP); /* each table its own size */
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct pcmon_cfi_row));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, PCMON_CFI_TABLES);
	__type(key, __u32);
	__array(values, struct cfi_rows);
} cfitabs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct pcmon_cfi_proc);
} cfiprocs SEC(".maps");

/* The mapping of @p that holds @pc, NULL if none with a table does. */
static __always_inline const struct pcmon_cfi_map *cfi_map_of(const struct pcmon_cfi_proc *p,
							       __u64 pc)
{
	__u32 lo = 0, hi = p->n < PCMON_CFI_MAPS ? p->n : PCMON_CFI_MAPS, mid;
	const struct pcmon_cfi_map *m;

	/* the first mapping that starts above @pc: lo */
	for (int k = 0; k < 8 && lo < hi; k++) {
		mid = (lo + hi) / 2;
		if (p->m[mid & (PCMON_CFI_MAPS - 1)].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	m = &p->m[(lo - 1) & (PCMON_CFI_MAPS - 1)];
	return pc < m->end ? m : NULL;
}

/* The row of table @tab (@n rows) that holds @vaddr, NULL if none. */
static __always_inline const struct pcmon_cfi_row *cfi_row_of(void *tab, __u32 n, __u64 vaddr)
{
	__u32 lo = 0, hi = n, mid;
	const struct pcmon_cfi_row *r;

	if (vaddr >> 32)
		return NULL;
	for (int k = 0; k < 26 && lo < hi; k++) {
		mid = (lo + hi) / 2;
		r = bpf_map_lookup_elem(tab, &mid);
		if (!r)
			return NULL;
		if (r->pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || lo < hi)
		return NULL;
	lo--;
	return bpf_map_lookup_elem(tab, &lo);
}

/*
 * The row that says how to find the caller of @pc in process @p's tables, copied to @row:
 * 0, or -1 if no table has one. A global function, which the verifier walks once with what
 * it is given unknown: inlined into cfi_step(), its two binary searches were walked again
 * for each state the step was reached in (910,000 of on_sample's 958,000 instructions
 * verified, against the kernel's limit of 1,000,000).
 */
__noinline int cfi_row_for(const struct pcmon_cfi_proc *p, __u64 pc, struct pcmon_cfi_row *row)
{
	const struct pcmon_cfi_map *m;
	const struct pcmon_cfi_row *r;
	__u32 table;
	void *tab;

	if (!p || !row)
		return -1;
	m = cfi_map_of(p, pc);
	if (!m)
		return -1;
	table = m->table;
	tab = bpf_map_lookup_elem(&cfitabs, &table);
	r = tab ? cfi_row_of(tab, m->nrows, pc - m->bias) : NULL;
	if (!r)
		return -1;
	*row = *r;
	return 0;
}

struct cfi_walk {
	struct pcmon_stack *st;
	const struct pcmon_cfi_proc *p;
	__u64 pc, sp, bp;
	__u32 n;	/* frames walked */
	bool root;	/* ... and the last has no caller */
	bool failed;	/* the tables could not say where the caller is */
};

/* One frame: @i-th, its pc in w->pc. Returns 1 to stop. */
static long cfi_step(__u32 i, void *data)
{
	struct cfi_walk *w = data;
	/* a caller's pc is a return address: its call is the instruction before */
	__u64 look = i ? w->pc - 1 : w->pc, cfa, ra, bp;
	struct pcmon_cfi_row row, *r = &row;
	__u32 at = i;

	barrier_var(at); /* (the mask is what the verifier bounds the index by) */
	w->st->ip[at & (PCMON_STACK_MAX - 1)] = w->pc;
	w->n = i + 1;
	if (cfi_row_for(w->p, look, &row))
		goto fail;
	switch (r->kind) {
	case PCMON_CFI_ROOT:
		w->root = true;
		return 1;
	case PCMON_CFI_RSP:
		cfa = w->sp + r->cfa_off;
		break;
	case PCMON_CFI_RBP:
		cfa = w->bp + r->cfa_off;
		break;
	case PCMON_CFI_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= r->arg ? 8 : 0);
		break;
	default:
		goto fail;
	}
	/* a caller's frame is above its callee's: a rule that says otherwise is wrong here */
	if (cfa <= w->sp || bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)) || !ra)
		goto fail;
	if (r->rbp_off) {
		if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + r->rbp_off)))
			goto fail;
		w->bp = bp;
	}
	w->sp = cfa;
	w->pc = ra;
	return 0;
fail:
	w->failed = true;
	return 1;
}

/*
 * Walk the current thread's user stack into @st with the tables, as deep as @key leaves
 * room for (native_depth()). true when the stack is whole or as deep as that (said in @key);
 * false when the tables could not walk it: the caller copies it for the engine.
 */
static __always_inline bool cfi_walk(struct task_struct *task, struct pcmon_key *key,
				     struct pcmon_stack *st)
{
	const struct pcmon_cfi_proc *p;
	struct cfi_walk w = { .st = st };
	struct pt_regs *r;
	__u32 depth;

	if (BPF_CORE_READ(task, flags) & PCMON_PF_KTHREAD) {
		st->len = 0; /* no user stack, by nature */
		key->uerr = PCMON_SERR_KTHREAD;
		return true;
	}
	p = bpf_map_lookup_elem(&cfiprocs, &key->pid);
	if (!p || p->epoch != key->epoch)
		return false;
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	w.p = p;
	w.pc = user_pc(task, BPF_CORE_READ(r, ip));
	w.sp = BPF_CORE_READ(r, sp);
	w.bp = BPF_CORE_READ(r, bp);
	depth = native_depth(key);
	bpf_loop(depth < PCMON_STACK_MAX ? depth : PCMON_STACK_MAX, cfi_step, &w, 0);
	if (w.failed || (!w.root && w.n < depth))
		return false;
	st->len = w.n;
	if (!w.root)
		key->flags |= PCMON_KF_USER_DEPTH;
	key->uerr = PCMON_SERR_NONE;
	return true;
}

/*
 * A --unwind dwarf stack of @task: walked here with the tables (true), or to be copied for
 * the engine; counted either way (cfi_walked, cfi_copied). A JVM's or a V8's is always
 * copied, its Java or JavaScript frames being read from the copy, and not counted: no table
 * could have walked them.
 */
static __always_inline bool dwarf_walked(struct task_struct *task, struct pcmon_key *key,
					 struct pcmon_stack *st)
{
	struct pcmon_gstat *gs;
	bool walked;

	if (is_jvm(key->pid, key->epoch) || js_proc(key))
		return false;
	walked = cfi_walk(task, key, st);
	gs = gstats();
	if (gs && walked)
		gs->cfi_walked++;
	else if (gs)
		gs->cfi_copied++;
	return walked;
}

/*
 * A process unmaps or replaces memory: if that was a mapping its tables are listed for, its
 * entry goes (the engine lists its mappings again when its samples come copied), so that no
 * sample is walked with the table of an object no longer there.
 */
static __always_inline void cfi_unmapped(__u64 addr, __u64 len)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct pcmon_cfi_proc *p = bpf_map_lookup_elem(&cfiprocs, &pid);

	if (!p)
		return;
	for (int i = 0; i < PCMON_CFI_MAPS; i++) {
		if (i >= p->n)
			return;
		if (addr < p->m[i].end && addr + len > p->m[i].start) {
			bpf_map_delete_elem(&cfiprocs, &pid);
			return;
		}
	}
}

/*
 * An unmapping in flight, by thread: its range is dropped again as the call returns, for a
 * list written between the call's entry and its end (the engine's check after writing may
 * have run before the unmapping did).
 */
struct cfi_range {
	__u64 addr, len;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* tid */
	__type(value, struct cfi_range);
} cfi_unmaps SEC(".maps");

static __always_inline void cfi_enter(__u64 addr, __u64 len)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cfi_range r = { addr, len };

	cfi_unmapped(addr, len);
	bpf_map_update_elem(&cfi_unmaps, &tid, &r, BPF_ANY);
}

static __always_inline void cfi_exit_call(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cfi_range *r = bpf_map_lookup_elem(&cfi_unmaps, &tid);

	if (!r)
		return;
	cfi_unmapped(r->addr, r->len);
	bpf_map_delete_elem(&cfi_unmaps, &tid);
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int cfi_munmap(struct trace_event_raw_sys_enter *ctx)
{
	cfi_enter(ctx->args[0], ctx->args[1]);
	return 0;
}

#define PCMON_MREMAP_FIXED 2

/* the old range goes; with MREMAP_FIXED, whatever was at the new one too */
SEC("tracepoint/syscalls/sys_enter_mremap")
int cfi_mremap(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & PCMON_MREMAP_FIXED)
		cfi_unmapped(ctx->args[4], ctx->args[2]);
	cfi_enter(ctx->args[0], ctx->args[1]);
	return 0;
}

#define PCMON_MAP_FIXED 0x10

SEC("tracepoint/syscalls/sys_enter_mmap")
int cfi_mmap(struct trace_event_raw_sys_enter *ctx)
{
	if (ctx->args[3] & PCMON_MAP_FIXED)
		cfi_enter(ctx->args[0], ctx->args[1]);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_munmap")
int cfi_munmap_ret(void *ctx)
{
	cfi_exit_call();
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mremap")
int cfi_mremap_ret(void *ctx)
{
	cfi_exit_call();
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int cfi_mmap_ret(void *ctx)
{
	cfi_exit_call();
	return 0;
}

/*
 * A process's list goes with it, in the kernel (the engine hears of an exit later, or not at
 * all when its event is lost): its pid may come again, for another process, which starts as
 * image 0 like every process forked. (A main thread that exits before the others takes the
 * list with it: the rest are copied until the engine lists them again.)
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(cfi_exit, struct task_struct *task)
{
	__u32 pid = task->tgid;

	if (task->pid == task->tgid)
		bpf_map_delete_elem(&cfiprocs, &pid);
	return 0;
}

#endif /* PCMON_SAMPLE_CFI_BPF_H */
