/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The sampling object's settings (set before load), the maps its programs share (counts,
 * the stack and dwarf rings, off-CPU intervals, thread names, scratch), what they read of a
 * task, and record(): how a sample is counted in them and its stacks sent to the engine.
 * Part of sample.bpf.c (one object), included by it first.
 */
#ifndef PCMON_SAMPLE_MAPS_BPF_H
#define PCMON_SAMPLE_MAPS_BPF_H

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

#define PF_EXITING 0x00000004
#define TASK_RUNNING 0

const volatile __u32 max_depth = 127;	/* frames per stack, <= PCMON_STACK_MAX */
const volatile __u32 dwarf_stack = PCMON_DWARF_STACK_DEFAULT; /* most bytes of user stack a dwarf record carries */
const volatile __u32 drain_at = 8192;	/* entries in a counts map that wake the engine */
const volatile bool task_work_ok;	/* the kernel has bpf_task_work_schedule_resume_impl */

__u32 gen;		/* which buffer pair the programs write; flipped by the engine */
/*
 * What each pair holds since the engine last emptied it, read by the engine from its
 * memory-mapped copy of .bss without a system call: whether anything was counted, and how
 * many entries were added (how full the counts map is). A drain costs a scan of every bucket
 * of both maps, so the engine drains only when there is something, and seldom while little
 * comes in.
 */
__u32 touched[2];
__u32 nkeys[2];
__u32 woken[2];		/* the engine was asked to drain the pair (wake_drain) */
__u32 lazy_stacks;	/* enum pcmon_settle: blocked threads' stacks may wait for it */
__u32 real_on;		/* the switch program is attached: some target samples REAL */
__u32 sections_on;	/* critical-section probes are attached somewhere */
/*
 * CLOCK_TAI less the wall clock (whole seconds, 0 where nothing set the kernel's TAI
 * offset), kept by the engine: BPF reads TAI, the wall clock with it (slice_stamp()).
 */
__s64 tai_off_ns;

extern void *bpf_cast_to_kern_ctx(void *) __ksym __weak;

/* When the tick being delivered fired (CLOCK_MONOTONIC ns), 0 if that cannot be read. */
static __always_inline __u64 tick_fired(struct bpf_perf_event_data *ctx)
{
	struct bpf_perf_event_data_kern *kctx;

	if (!bpf_cast_to_kern_ctx)
		return 0;
	kctx = bpf_cast_to_kern_ctx(ctx);
	return BPF_CORE_READ(kctx, event, hw.hrtimer.node.expires);
}

/*
 * Each CPU's last tick of each sampling interval, for the ticks its timer missed since
 * (pcmon_ticks_missed()): when it fired, the thread it landed on, and that thread's context
 * switches then. The same thread with as many switches at the next tick held the CPU from
 * one to the other, and the ticks missed between them are its own.
 */
struct tick_last {
	__u64 period;	/* ns; 0: a free slot */
	__u64 fired;
	__u64 nsw;
	__u32 tid;
	__u32 pad;
};

struct tick_lasts {
	struct tick_last s[PCMON_MAX_PERIODS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tick_lasts);
} tick_map SEC(".maps");

/*
 * The ticks this CPU's timer for the tick being delivered missed since its last (counted
 * in gstat), and *@own: whether they are all @task's, which ran from that tick to this one.
 * A timer not seen before takes the slot of the interval that fired longest ago (one no
 * longer in use, as the engine runs at most PCMON_MAX_PERIODS at once).
 */
static __always_inline __u64 ticks_missed(struct bpf_perf_event_data *ctx,
					   struct task_struct *task, bool *own)
{
	struct tick_lasts *tl = bpf_map_lookup_elem(&tick_map, &(__u32){ 0 });
	__u64 period = ctx->sample_period, fired = tick_fired(ctx), nsw, n = 0;
	struct tick_last *l = NULL;

	*own = false;
	if (!tl || !fired)
		return 0;
	for (int i = 0; i < PCMON_MAX_PERIODS; i++) {
		struct tick_last *s = &tl->s[i];

		if (s->period == period) {
			l = s;
			n = pcmon_ticks_missed(s->fired, fired, period);
			break;
		}
		if (!l || s->fired < l->fired)
			l = s;
	}
	if (!l)
		return 0;
	nsw = task->nvcsw + task->nivcsw;
	*own = n && l->tid == task->pid && l->nsw == nsw;
	l->period = period;
	l->fired = fired;
	l->nsw = nsw;
	l->tid = task->pid;
	return n;
}

/* Entry sizes are set by the engine before load (bpf_map__set_max_entries/value_size). */
#define COUNTS_MAP(name)                                                                   \
	struct {                                                                           \
		__uint(type, BPF_MAP_TYPE_HASH);                                           \
		__uint(max_entries, 65536);                                                \
		__type(key, struct pcmon_key);                                             \
		__type(value, struct pcmon_val);                                           \
	} name SEC(".maps")

COUNTS_MAP(counts0);
COUNTS_MAP(counts1);

/* Stacks new to a counts map (struct pcmon_srec), for the engine (sized before load). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024);
} stackring SEC(".maps");

/*
 * Off-CPU intervals in flight, in task-local storage: a thread of a target gets an entry the
 * first time it goes off CPU. ts == 0 means no interval is open.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_offcpu);
} offcpu SEC(".maps");

/* Marked critical sections: per-thread nesting, and the names by hash for the engine. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_crit);
} crit SEC(".maps");

/* Threads' names and their processes', by tid, as their latest sample found them: a thread
 * gone before the engine drains is still named (the exports' thread label, list --by). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pcmon_tname);
} tnames SEC(".maps");

/*
 * HotSpot JVMs the engine found (docs/java.md), by tgid: the image (epoch) it found one in.
 * Their samples are sent as dwarf records whatever the target's --unwind, since their Java
 * frames are walked from the copied stack.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u32);
} jvmprocs SEC(".maps");

static __always_inline bool is_jvm(__u32 tgid, __u32 epoch)
{
	__u32 *e = bpf_map_lookup_elem(&jvmprocs, &tgid);

	return e && *e == epoch;
}

static __always_inline void note_thread(__u32 tid, struct task_struct *task)
{
	struct pcmon_tname n = {}, *old = bpf_map_lookup_elem(&tnames, &tid);

	BPF_CORE_READ_STR_INTO(&n.comm, task, comm);
	BPF_CORE_READ_STR_INTO(&n.pcomm, task, group_leader, comm);
	if (old && ((__u64 *)old->comm)[0] == ((__u64 *)n.comm)[0] &&
	    ((__u64 *)old->comm)[1] == ((__u64 *)n.comm)[1] &&
	    ((__u64 *)old->pcomm)[0] == ((__u64 *)n.pcomm)[0] &&
	    ((__u64 *)old->pcomm)[1] == ((__u64 *)n.pcomm)[1])
		return; /* the common case: no write */
	bpf_map_update_elem(&tnames, &tid, &n, BPF_ANY);
}

/* Scratch space: a stack is too big for the 512-byte BPF stack. */
struct scratch {
	struct pcmon_srec urec;
	struct pcmon_srec krec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch_map SEC(".maps");

/* A copy of an open interval to fill in, for dump_offcpu. */
struct open_scratch {
	struct pcmon_offcpu o;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct open_scratch);
} open_scratch SEC(".maps");

/* A --unwind dwarf thread's open interval, its registers and stack, for dump_offcpu. */
struct open_dwarf {
	__u8 b[sizeof(struct pcmon_dsample) + PCMON_OPEN_STACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct open_dwarf);
} open_dwarf SEC(".maps");

/* --unwind dwarf records (sized by the engine before load: dwarf_ring_bytes()). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} dsamples SEC(".maps");

/*
 * Dwarf threads preempted on this CPU by a thread of their own process, whose stacks are
 * not copied yet (PCMON_LAZY_PEER): readable only while that address space is loaded here.
 * Before it leaves the CPU, peers_leave() copies the stacks of those still off CPU.
 */
#define PEERS_MAX 4

struct peers {
	__u64 mm;
	__u32 tid[PEERS_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct peers);
} peers_map SEC(".maps");

/*
 * The id of @task's cgroup v2 (of the default hierarchy; the root's, 1, where only v1 is
 * mounted): what bpf_get_current_cgroup_id() says of the current task, read through BTF
 * pointers (CO-RE) for a task that need not be current. kn->id is the directory's inode
 * number, by which the engine finds its path.
 */
static __always_inline __u64 task_cgroup(struct task_struct *task)
{
	return task->cgroups->dfl_cgrp->kn->id;
}

/* The innermost marked section the current thread is in, 0 if none. */
static __always_inline __u64 current_section(struct task_struct *task, bool kmode)
{
	struct pcmon_crit *c;
	__u32 d;

	if (!sections_on || !task->bpf_storage)
		return 0;
	c = bpf_task_storage_get(&crit, task, NULL, 0);
	if (!c || !c->depth)
		return 0;
	d = c->depth < PCMON_SECTION_NEST ? c->depth - 1 : PCMON_SECTION_NEST - 1;
	/*
	 * In the kernel with its user pc at the END that closed this level last time: the
	 * thread is in that probe's trap, which BPF's END runs at the end of, and the section
	 * is closing; the trap is the cost of pcmon watching, charged as the code around it.
	 * (On a virtual machine a trap costs microseconds, and ticks held back while it ran
	 * with interrupts off land as it re-enables them, before END runs: 4 % of a loop of
	 * 200 us calls. A BEGIN's trap is outside its section already.)
	 */
	if (kmode && c->depth <= PCMON_SECTION_NEST) {
		__u64 uip = BPF_CORE_READ((struct pt_regs *)bpf_task_pt_regs(task), ip);
		__u64 end = c->end_pc[d & (PCMON_SECTION_NEST - 1)];

		if (end && uip - end <= 1) { /* (at the int3, or just after it) */
			if (!d)
				return 0;
			d--;
		}
	}
	barrier_var(d); /* (the mask is what the verifier bounds the index by) */
	return c->hash[d & (PCMON_SECTION_NEST - 1)];
}

struct hash_ctx {
	const struct pcmon_stack *s;
	__u64 h;
};

static long hash_step(__u32 i, void *data)
{
	struct hash_ctx *c = data;

	if (i >= PCMON_STACK_MAX)
		return 1;
	c->h ^= c->s->ip[i];
	c->h *= 0xff51afd7ed558ccdULL;
	c->h ^= c->h >> 33;
	return 0;
}

/* 64-bit mix over the frames; 0 is reserved for "no stack". bpf_loop keeps the verifier's
 * work independent of the depth. */
static __always_inline __u64 stack_hash(const struct pcmon_stack *s)
{
	struct hash_ctx c = { .s = s, .h = 0x9e3779b97f4a7c15ULL ^ s->len };

	bpf_loop(s->len < PCMON_STACK_MAX ? s->len : PCMON_STACK_MAX, hash_step, &c, 0);
	return c.h ? c.h : 1;
}

/* Fill @s with the current task's stack; returns enum pcmon_stack_err. */
/*
 * The user pc as the program sees it. A thread that hit a uprobe (pcmon's own, on the
 * dynamic linker, or anyone's) executes the displaced instruction out of line, in the
 * kernel's [uprobes] page: charge such a sample to the probed instruction itself.
 */
static __always_inline __u64 user_pc(struct task_struct *task, __u64 ip)
{
	struct uprobe_task *ut = BPF_CORE_READ(task, utask);
	__u64 xol;

	if (!ut)
		return ip;
	xol = BPF_CORE_READ(ut, xol_vaddr);
	if (xol && ip - xol < 16 /* MAX_UINSN_BYTES */)
		return BPF_CORE_READ(ut, vaddr) + (ip - xol);
	return ip;
}

static __always_inline __u8 capture_to(void *ctx, struct pcmon_stack *s, __u64 flags, __u32 depth)
{
	long n;

	if (depth > PCMON_STACK_MAX)
		depth = PCMON_STACK_MAX;
	n = bpf_get_stack(ctx, s->ip, depth * sizeof(__u64), flags);

	if (n < 0) {
		s->len = 0;
		return n == -14 /* EFAULT */ ? PCMON_SERR_FAULT : PCMON_SERR_OTHER;
	}
	s->len = n / sizeof(__u64);
	if ((flags & BPF_F_USER_STACK) && s->len)
		s->ip[0] = user_pc(bpf_get_current_task_btf(), s->ip[0]);
	return PCMON_SERR_NONE;
}

static __always_inline __u8 capture(void *ctx, struct pcmon_stack *s, __u64 flags)
{
	return capture_to(ctx, s, flags, max_depth);
}

/*
 * Wake the engine only when a ring is a quarter full: it reads the rings on its own tick
 * anyway, and a wakeup per record would cost it a context switch per sample. (A quarter
 * leaves it three quarters of the ring's time to come: at half, an engine kept off its CPU
 * for 50 ms at 5 kHz of copied stacks lost a record.)
 */
static __always_inline __u64 ring_flags(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 4
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/*
 * A record carrying Python frames (@python): their code objects are named from the process's
 * memory, which is gone once it exits, so the engine is woken to read them within
 * PY_WAKE_NS rather than at its next tick (1 s: a short script would be gone). At most one
 * such wakeup per PY_WAKE_NS for the whole machine (a plain store: two CPUs may both wake it).
 */
#define PY_WAKE_NS 100000000ull
__u64 py_woke_ns;

static __always_inline __u64 ring_flags_py(void *ring, bool python)
{
	__u64 now;

	if (python) {
		now = bpf_ktime_get_ns();
		if (now - py_woke_ns >= PY_WAKE_NS) {
			py_woke_ns = now;
			return BPF_RB_FORCE_WAKEUP;
		}
	}
	return ring_flags(ring);
}

/*
 * Counts map @g just reached drain_at entries: wake the engine, which otherwise looks once
 * a second. A flood of new stacks is drained long before the map fills, and a steady few
 * cost the engine no wakeups but that one a second.
 */
static __always_inline void wake_drain(__u32 g)
{
	struct pcmon_dhdr h = { .type = PCMON_DS_DRAIN, .ts = g };

	woken[g] = 1; /* two CPUs may both get here: two wakeups, no harm */
	/* the ring full means the engine is being woken anyway */
	bpf_ringbuf_output(&dsamples, &h, sizeof(h), BPF_RB_FORCE_WAKEUP);
}

/* Send the frames of @r for counts map @g; false if the ring is full. */
static __always_inline bool emit_stack(struct pcmon_srec *r, __u32 g)
{
	__u32 len = r->st.len;

	bool python;

	if (len > PCMON_STACK_MAX)
		len = PCMON_STACK_MAX;
	/* Python frames end a stack with its outermost, the entry of the outermost activation:
	 * its word has PCMON_PY_ENTRY set, which no user address has (nor has a marker) */
	python = len && r->st.ip[(len - 1) & (PCMON_STACK_MAX - 1)] > PCMON_PY_CODE_MASK;
	r->gen = g;
	return !bpf_ringbuf_output(&stackring, r,
				   offsetof(struct pcmon_srec, st.ip) + len * sizeof(__u64),
				   ring_flags_py(&stackring, python));
}

/*
 * The time slice a sample taken now belongs to (pcmon_key.slice), its target's slices
 * @slice_ns long: their number since the epoch by the wall clock (0 without slices: BPF's
 * division by zero is 0).
 */
static __always_inline __u64 slice_stamp(__u64 slice_ns)
{
	return (bpf_ktime_get_tai_ns() - tai_off_ns) / slice_ns;
}

/*
 * Count a sample (@ns of off-CPU time) under @key in counts map @g, @ur/@kr its stacks
 * (key->uerr/kerr say whether they were taken). A key new to the map sends its stacks
 * first; a stack the ring has no room for is lost, and the sample is counted as such.
 */
static __always_inline void record(void *counts, __u32 g, struct pcmon_key *key,
				   struct pcmon_srec *ur, struct pcmon_srec *kr, __u64 ns, __u64 n)
{
	struct pcmon_val *v, zero = {};

	key->ustack = !key->uerr && ur->st.len ? ur->key : 0;
	ur->pid = kr->pid = key->pid;
	key->kstack = !key->kerr && kr->st.len ? kr->key : 0;
	/* read first: after the first sample of a drain period the line stays shared */
	if (!touched[g])
		touched[g] = 1;
	v = bpf_map_lookup_elem(counts, key);
	if (!v) {
		bool lost = false;

		if (key->ustack && !emit_stack(ur, g)) {
			key->ustack = 0;
			key->uerr = PCMON_SERR_FULL;
			lost = true;
		}
		if (key->kstack && !emit_stack(kr, g)) {
			key->kstack = 0;
			key->kerr = PCMON_SERR_FULL;
			lost = true;
		}
		if (lost)
			v = bpf_map_lookup_elem(counts, key);
	}
	if (!v) {
		/* may fail because another CPU inserted the key first: look again */
		if (!bpf_map_update_elem(counts, key, &zero, BPF_NOEXIST)) {
			__sync_fetch_and_add(&nkeys[g], 1);
			if (nkeys[g] >= drain_at && !woken[g])
				wake_drain(g);
		}
		v = bpf_map_lookup_elem(counts, key);
		if (!v) {
			struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &key->target);

			if (ts) {
				if (PCMON_KIND_IS_OFFCPU(key->kind))
					ts->lost_offcpu_full++;
				else
					ts->lost_counts_full++;
			}
			return;
		}
	}
	__sync_fetch_and_add(&v->count, n);
	if (ns)
		__sync_fetch_and_add(&v->ns, ns);
}

#endif /* PCMON_SAMPLE_MAPS_BPF_H */
