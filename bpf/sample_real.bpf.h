/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * REAL: the ticks owed to the thread that ran when they fired (tick ownership), and
 * off-CPU time, the intervals sched_switch opens and closes and the stacks they are charged
 * to. Part of sample.bpf.c.
 */
#ifndef PCMON_SAMPLE_REAL_BPF_H
#define PCMON_SAMPLE_REAL_BPF_H

/*
 * A timer tick reaches the CPU late: here, in a virtual machine, 5-20 us after it fired
 * (and any tick waits while interrupts are off). A thread that ran only a few microseconds
 * before it blocked has left by then, and the tick lands on the thread that took the CPU:
 * twopaths' client, which runs 3 us at a time, lost half its ticks to the server so (as
 * it does under perf's cpu-clock). With REAL the switch program notes when each watched
 * thread came on CPU and from whom (switch_in()). A tick that fired before the current
 * thread came on is the previous thread's, or the one's before it: it is owed to that
 * thread, which takes it at the stack it left the CPU with (charge(), charge_dwarf()), if it is
 * watched with an interval open; else it is dropped. Either way it is counted (tstat).
 * True if the tick is not the current thread's.
 */
/*
 * The last watched REAL thread to leave each CPU, and when: a tick that lands on a thread
 * nobody watches may still be owed to it (tick_for_unwatched()).
 */
struct cpu_left {
	__u64 ts;
	__u32 tid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_left);
} left_map SEC(".maps");

enum owed { OWED_MOVED, OWED_DROPPED, OWED_UNWATCHED };

/*
 * A tick that fired at @fired, before thread @tid left the CPU: it is @tid's, or (if @tid
 * came on after it fired) the one's before it, and so on. The owner, if watched with an
 * interval open and sampled at the tick's @period, takes it when it comes back on CPU, at the
 * stack it left with (charge(), charge_dwarf()); *@target is then the owner's.
 */
static __always_inline enum owed owe_tick(__u32 tid, __u64 fired, __u64 period, __u32 *target)
{
	enum owed r = OWED_DROPPED;

	for (int i = 0; i < 3 && tid; i++) {
		struct task_struct *t = bpf_task_from_pid(tid);
		struct pcmon_offcpu *po;

		if (!t)
			break;
		po = t->bpf_storage ? bpf_task_storage_get(&offcpu, t, NULL, 0) : NULL;
		tid = 0; /* not watched, or running again: the tick cannot be given to it */
		if (!po)
			r = OWED_UNWATCHED;
		if (po && po->ts) {
			if (po->on_ts && fired < po->on_ts) {
				tid = po->on_prev; /* it came on after the tick too */
			} else if (po->period_ns == period) {
				__sync_fetch_and_add(&po->owed_on, 1);
				*target = po->key.target;
				r = OWED_MOVED;
			}
		}
		bpf_task_release(t);
	}
	return r;
}

/*
 * A timer tick reaches the CPU late: here, in a virtual machine, 5-20 us after it fired
 * (and any tick waits while interrupts are off). A thread that ran only a few microseconds
 * before it blocked has left by then, and the tick lands on the thread that took the CPU:
 * twopaths' client, which runs 3 us at a time, lost half its ticks to the server so (as
 * it does under perf's cpu-clock). With REAL the switch program notes when each watched
 * thread came on CPU and from whom (switch_in()). A tick that fired before the current
 * thread came on is the previous thread's, or the one's before it: owe_tick() gives it to
 * that thread if it can take it; else it is dropped. Either way it is counted (tstat).
 * True if the tick is not the current thread's.
 */
static __always_inline bool tick_not_ours(struct bpf_perf_event_data *ctx,
					  struct task_struct *task, __u32 target)
{
	struct pcmon_offcpu *o;
	struct pcmon_tstat *ts;
	enum owed r;
	__u32 owner;
	__u64 fired;

	if (!task->bpf_storage)
		return false;
	o = bpf_task_storage_get(&offcpu, task, NULL, 0);
	if (!o || !o->on_ts)
		return false;
	fired = tick_fired(ctx);
	if (!fired || fired >= o->on_ts)
		return false;
	r = owe_tick(o->on_prev, fired, ctx->sample_period, &owner);
	ts = bpf_map_lookup_elem(&tstat, &target);
	if (ts) {
		if (r == OWED_MOVED)
			ts->ticks_moved++;
		else if (r == OWED_UNWATCHED)
			ts->ticks_unwatched++;
		else
			ts->ticks_dropped++;
	}
	return true;
}

/*
 * The same late tick, landing on a thread nobody watches (a server that is not the target,
 * the idle task): it is owed to the last watched thread that left this CPU, if it fired
 * before that thread left. Counted in the owner's target when it takes it.
 */
static __always_inline void tick_for_unwatched(struct bpf_perf_event_data *ctx)
{
	struct cpu_left *left = bpf_map_lookup_elem(&left_map, &(__u32){ 0 });
	struct pcmon_tstat *ts;
	__u32 owner = 0;
	__u64 fired;

	if (!left || !left->tid)
		return;
	fired = tick_fired(ctx);
	if (!fired || fired >= left->ts)
		return;
	if (owe_tick(left->tid, fired, ctx->sample_period, &owner) != OWED_MOVED)
		return;
	ts = bpf_map_lookup_elem(&tstat, &owner);
	if (ts)
		__sync_fetch_and_add(&ts->ticks_moved, 1);
}

/*
 * Off-CPU time. sched_switch runs in the context of @prev: the stacks of a thread going off
 * CPU are taken here and kept with its start time; when it is switched in again the interval
 * is charged to them.
 *
 * Taking a user stack reads user memory frame by frame, and each read costs a microsecond
 * or more in some virtual machines: a thread that blocks a hundred thousand times a second
 * (a pipe ping-pong) paid more for that than for its own work. So a thread going off CPU
 * has its stack taken as it returns to user mode, in its own context, by a task work
 * (settle_later(), 6.18): until then no user code runs, so that is the very stack it left
 * with, whatever its caller and whatever took it into the kernel (a system call, a page
 * fault, an interrupt that preempted it). Before 6.18 on_sys_exit does it for threads
 * blocked or preempted in a system call, and every system call pays for that program;
 * threads preempted elsewhere are read by a thread of their own process that switches them
 * in (PCMON_LAZY_PEER), through the address space they share. And a stack is taken only when
 * the interval is charged: an interval at least as long as the sampling period always is,
 * with its nanoseconds; a shorter one is charged one whole period with probability
 * length/period (what a timer sampling the thread's wall time would do), so the expected
 * charge is the interval's length and most short intervals never need a stack. Threads
 * watched with --kernel (whose kernel stack must be the blocking one), and before 6.18 the
 * rest, have their stacks taken at once and every interval charged exactly.
 *
 * The program runs on every context switch of the machine, so what it reads is kept short:
 * a thread watched before has its process's entry copied (copy_proc(), procs_gen) and the
 * hash lookup is paid only by the others; an interval that ends uncharged reads nothing but
 * its start and period.
 */

/* Blocked inside a 64-bit system call: what entry_SYSCALL_64 leaves in pt_regs. */
static __always_inline bool in_syscall(struct pt_regs *r)
{
	long nr = r->orig_ax;

	return nr >= 0 && nr < 1024 && (long)r->ax == -38 /* -ENOSYS */ && r->cx == r->ip &&
	       r->r11 == r->flags;
}

/* Take the current thread's stacks into @o. */
static __always_inline void take_stacks(void *ctx, struct task_struct *task, struct pcmon_offcpu *o,
					bool kernel, bool walked)
{
	if (!walked) /* (else the CFI tables walked it into o->urec: cfi_walk()) */
		o->key.uerr = capture_user(ctx, &o->key, &o->urec.st);
	if (!o->key.uerr)
		py_append(task, &o->key, o->key.tid, &o->urec.st);
	o->krec.st.len = 0;
	if (kernel)
		o->key.kerr = capture(ctx, &o->krec.st, 0);
	o->urec.key = o->key.ustack = stack_hash(&o->urec.st);
	o->krec.key = o->key.kstack = stack_hash(&o->krec.st);
}

/*
 * Walk the frame pointers of @task, which is off CPU, from its saved user registers, as
 * bpf_get_stack() walks the current thread's: through the current address space, which must
 * be @task's (PCMON_LAZY_PEER), or from outside it where the program may sleep (dump_offcpu).
 */
struct uwalk {
	struct task_struct *task;
	struct pcmon_stack *st;
	__u64 fp;
};

static __always_inline void uwalk_start(struct uwalk *w, struct task_struct *task,
					struct pcmon_stack *st)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);

	w->task = task;
	w->st = st;
	w->fp = r->bp;
	st->ip[0] = user_pc(task, r->ip);
	st->len = 1;
}

/* Keep the frame record just read at w->fp (@err: reading it failed); 1 ends the walk. */
static __always_inline long uwalk_keep(struct uwalk *w, long err, const __u64 *frame)
{
	__u32 n = w->st->len;

	if (err || !frame[1] || n >= max_depth || n >= PCMON_STACK_MAX)
		return 1;
	w->st->ip[n & (PCMON_STACK_MAX - 1)] = frame[1];
	w->st->len = n + 1;
	w->fp = frame[0];
	return 0;
}

static long uwalk_step(__u32 i, void *data)
{
	struct uwalk *w = data;
	__u64 frame[2] = {};

	if (!w->fp)
		return 1;
	return uwalk_keep(w, bpf_probe_read_user(frame, sizeof(frame), (void *)w->fp), frame);
}

static long uwalk_step_task(__u32 i, void *data)
{
	struct uwalk *w = data;
	__u64 frame[2] = {};

	if (!w->fp)
		return 1;
	return uwalk_keep(w, bpf_copy_from_user_task(frame, sizeof(frame), (void *)w->fp, w->task, 0),
			  frame);
}

static __always_inline void walk_peer(struct task_struct *task, struct pcmon_offcpu *o)
{
	struct uwalk w;

	uwalk_start(&w, task, &o->urec.st);
	bpf_loop(PCMON_STACK_MAX, uwalk_step, &w, 0);
	py_append(task, &o->key, o->key.tid, &o->urec.st);
	o->krec.st.len = 0;
	o->key.uerr = o->key.kerr = PCMON_SERR_NONE;
	o->urec.key = o->key.ustack = stack_hash(&o->urec.st);
	o->krec.key = o->key.kstack = 0;
}

/* The ticks owed to @o's thread (taken: 0 left), and the key to charge them with. */
static __always_inline __u64 take_owed(struct pcmon_offcpu *o, struct pcmon_key *key)
{
	__u64 owed = o->owed_on;

	if (!owed)
		return 0;
	__sync_fetch_and_add(&o->owed_on, -owed); /* a tick may be owed meanwhile */
	*key = o->key;
	key->kind = key->kind == PCMON_KIND_OFF_BLOCKED ? PCMON_KIND_ONCPU_KMODE : PCMON_KIND_ONCPU;
	return owed;
}

/*
 * Charge an interval that ends: @ns off CPU (if any), and the timer ticks that fired while
 * the thread was still on CPU before it and reached the CPU after it had left (on_sample(),
 * tick_not_ours()), as on-CPU samples at the stack it left with, in the kernel if it blocked.
 */
static __always_inline void charge(struct pcmon_offcpu *o, __u64 ns)
{
	struct pcmon_key key;
	__u64 owed;

	o->key.slice = slice_stamp(o->slice_ns);
	if (ns)
		record_current(&o->key, &o->urec, &o->krec, ns);
	owed = take_owed(o, &key);
	if (owed)
		record_n(&key, &o->urec, &o->krec, 0, owed);
}

/*
 * The same, for --unwind dwarf: @task's stack is copied for the engine (the current address
 * space is its; @may_sleep: the program may sleep, emit_dwarf_from()).
 */
static __always_inline void charge_dwarf(void *ctx, struct task_struct *task,
					 struct pcmon_offcpu *o, __u64 ns, const bool may_sleep)
{
	struct pcmon_key key;
	__u64 owed;

	if (ns)
		emit_dwarf_from(ctx, task, &o->key, PCMON_DS_OFF, 0, ns, false, may_sleep);
	owed = take_owed(o, &key);
	if (owed)
		emit_dwarf_from(ctx, task, &key, PCMON_DS_OWED, 0, owed, false, may_sleep);
}

/*
 * Charge what a lazy thread owes, with the stack it has now (it has not left the kernel);
 * @may_sleep: from its task work, which may.
 */
static __always_inline void settle(void *ctx, struct task_struct *task, struct pcmon_offcpu *o,
				   const bool may_sleep)
{
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &o->key.pid);
	__u64 ns = o->pending_ns;

	o->pending_ns = 0;
	if (!active_cfg(o->key.target))
		return;
	if (o->dwarf && p && p->epoch == o->key.epoch) {
		charge_dwarf(ctx, task, o, ns, may_sleep);
		return;
	}
	walk_peer(task, o); /* its own address space is the current one */
	/* it exec'd since it blocked: that stack is gone */
	if (!p || p->epoch != o->key.epoch) {
		o->key.uerr = PCMON_SERR_OTHER;
		o->urec.st.len = 0;
	}
	note_thread(o->key.tid, task);
	charge(o, ns);
}

/*
 * A thread blocked in a system call whose interval is charged gets a task work, which runs
 * in its own context as it returns to user mode (bpf_task_work_schedule_resume, 6.18): the
 * stack is taken there, and no program runs on the return of every other system call.
 */
struct settle_work {
	struct bpf_task_work tw;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct settle_work);
} settle_works SEC(".maps");

extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map,
					      int (*callback)(struct bpf_map *map, void *key,
							      void *value),
					      void *aux__prog) __ksym __weak;

/*
 * The current thread is on its way back to user mode: settle what it owes, if anything
 * (@may_sleep: from its task work).
 */
static __always_inline void settle_current(void *ctx, const bool may_sleep)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pcmon_offcpu *o;

	if (!task->bpf_storage)
		return;
	o = bpf_task_storage_get(&offcpu, task, NULL, 0);
	if (o && (o->pending_ns || o->owed_on))
		settle(ctx, task, o, may_sleep);
}

static int settle_cb(struct bpf_map *map, void *key, void *value)
{
	settle_current(NULL, true);
	return 0;
}

/* Have @task settle as it returns to user mode: false if it cannot be asked. */
static __always_inline bool settle_later(struct task_struct *task, __u32 tid)
{
	struct settle_work *w;
	long r;

	if (!task_work_ok)
		return false;
	w = bpf_map_lookup_elem(&settle_works, &tid);
	if (!w) {
		struct settle_work z = {};

		bpf_map_update_elem(&settle_works, &tid, &z, BPF_NOEXIST);
		w = bpf_map_lookup_elem(&settle_works, &tid);
		if (!w)
			return false;
	}
	r = bpf_task_work_schedule_resume_impl(task, &w->tw, &settle_works, settle_cb, NULL);
	return r == 0 || r == -16 /* EBUSY: asked already, not yet run */;
}

/* List @tid as a lazy dwarf peer on this CPU, in address space @mm; false if no room. */
static __always_inline bool peers_add(__u64 mm, __u32 tid)
{
	struct peers *pw = bpf_map_lookup_elem(&peers_map, &(__u32){ 0 });

	if (!pw)
		return false;
	if (pw->mm != mm) {
		/* what is listed was copied when its address space left (peers_leave) */
		__builtin_memset(pw, 0, sizeof(*pw));
		pw->mm = mm;
	}
	for (int i = 0; i < PEERS_MAX; i++) {
		if (!pw->tid[i] || pw->tid[i] == tid) {
			pw->tid[i] = tid;
			return true;
		}
	}
	return false;
}

/* @tid is back on this CPU: no longer listed. */
static __always_inline void peers_drop(__u32 tid)
{
	struct peers *pw = bpf_map_lookup_elem(&peers_map, &(__u32){ 0 });

	if (!pw)
		return;
	for (int i = 0; i < PEERS_MAX; i++)
		if (pw->tid[i] == tid)
			pw->tid[i] = 0;
}

/*
 * The address space of this CPU's listed peers is about to leave it (@next runs another, or
 * none): copy the stacks of those still off CPU now, through it, and let their intervals
 * end as if taken eagerly (switch_in() sends the length).
 */
static __always_inline void peers_leave(void *ctx, struct task_struct *prev,
					struct task_struct *next)
{
	struct peers *pw = bpf_map_lookup_elem(&peers_map, &(__u32){ 0 });
	__u64 mm;

	if (!pw || !pw->mm)
		return;
	mm = (__u64)next->mm;
	if (mm == pw->mm)
		return;
	if ((__u64)prev->mm == pw->mm) {
		for (int i = 0; i < PEERS_MAX; i++) {
			struct task_struct *t;
			struct pcmon_offcpu *o;

			if (!pw->tid[i])
				continue;
			t = bpf_task_from_pid(pw->tid[i]);
			if (!t)
				continue;
			o = bpf_task_storage_get(&offcpu, t, NULL, 0);
			if (o && o->ts && o->dwarf && o->lazy == PCMON_LAZY_PEER && o->mm == pw->mm) {
				o->lazy = PCMON_LAZY_NO;
				emit_dwarf(ctx, t, &o->key, PCMON_DS_OFF_START, o->ts, 0, false);
			}
			bpf_task_release(t);
		}
	}
	/* else it left already (not seen: a task not watched switched out): switch_in() says */
	__builtin_memset(pw, 0, sizeof(*pw));
}

/*
 * When may @prev's stack be taken, @next about to run? (Not with --kernel, whose kernel
 * stack must be the blocking one.) A task work runs as the thread returns to user mode from
 * whatever entered the kernel, before any signal frame is pushed: its user registers and
 * stack are the ones it left with. sys_exit sees only system calls; a thread preempted or
 * blocked elsewhere is read by a thread of its own process that switches it in, or now.
 */
static __always_inline __u8 lazy_kind(struct pcmon_offcpu *o, struct task_struct *prev,
				      struct task_struct *next)
{
	if (lazy_stacks == PCMON_SETTLE_TASK_WORK)
		return PCMON_LAZY_RETURN;
	if (in_syscall((struct pt_regs *)bpf_task_pt_regs(prev)))
		return PCMON_LAZY_RETURN;
	if (next && next->mm == prev->mm) {
		o->mm = (__u64)prev->mm;
		return PCMON_LAZY_PEER; /* preempted by a thread of its own process */
	}
	return PCMON_LAZY_NO;
}

/* One clock read for both halves of a switch: @now is 0 until the first asks. */
static __always_inline __u64 switch_time(__u64 *now)
{
	if (!*now)
		*now = bpf_ktime_get_ns();
	return *now;
}

#define PCMON_PROC_COPIED (1ull << 63) /* tells a copy taken at generation 0 from none */

static __always_inline void copy_proc(struct pcmon_offcpu *o, const struct pcmon_proc *p, __u64 gen)
{
	o->proc_target = p->target;
	o->proc_epoch = p->epoch;
	o->proc_marks = marks_pending(p);
	o->proc_gen = gen;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct task_struct *next, bool blocked, __u64 *now)
{
	__u64 gen = procs_gen_now() | PCMON_PROC_COPIED;
	struct pcmon_offcpu *o = NULL;
	struct pcmon_proc *p = NULL;
	struct pcmon_tcfg *cfg;
	struct cpu_left *left;
	__u32 target;

	/*
	 * Is prev watched? A thread watched before keeps a copy of its process's entry, good
	 * while procs has not changed since (procs_gen); the others pay the hash lookup.
	 */
	if (prev->bpf_storage)
		o = bpf_task_storage_get(&offcpu, prev, NULL, 0);
	if (!o || o->proc_gen != gen) {
		p = bpf_map_lookup_elem(&procs, &(__u32){ prev->tgid });
		if (!p || (p->flags & PCMON_PF_EXEC_WAIT))
			return;
	}
	target = p ? p->target : o->proc_target;
	cfg = active_cfg(target);
	if (!cfg || !(cfg->flags & PCMON_TF_REAL))
		return;
	if (!may_watch(prev, cfg, target))
		return;
	if (prev->flags & PF_EXITING)
		return;
	if (!o) {
		o = bpf_task_storage_get(&offcpu, prev, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!o) {
			struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &target);

			if (ts)
				ts->lost_offcpu_full++;
			return;
		}
	}
	if (p) { /* read just now: the copy is renewed */
		copy_proc(o, p, gen);
		note_sampled(p, prev->tgid); /* its intervals are charged: it is sampled */
	}
	/*
	 * Blocked again before its system call returned (its task work, which runs before any
	 * user code, has not run): still the same stack. (With no lazy stacks, since REAL was
	 * last off, what it owed is from before: dropped.)
	 */
	if ((o->pending_ns || o->owed_on) && lazy_stacks)
		settle(ctx, prev, o, false);
	o->pending_ns = o->owed_on = 0;
	__builtin_memset(&o->key, 0, sizeof(o->key));
	o->key.target = target;
	o->key.pid = prev->tgid;
	o->key.tid = prev->pid;
	o->key.epoch = o->proc_epoch;
	o->key.kind = blocked ? PCMON_KIND_OFF_BLOCKED : PCMON_KIND_OFF_RUNNABLE;
	o->key.section = current_section(prev, false);
	o->key.flags = o->proc_marks;
	o->key.cgroup = task_cgroup(prev);
	o->ts = switch_time(now);
	o->lazy = PCMON_LAZY_NO;
	o->period_ns = cfg->period_ns;
	o->slice_ns = cfg->slice_ns;
	left = bpf_map_lookup_elem(&left_map, &(__u32){ 0 });
	if (left) {
		left->ts = o->ts;
		left->tid = prev->pid;
	}
	/* (a JVM's stacks are copied whatever --unwind: its Java frames are walked from them) */
	if ((cfg->flags & PCMON_TF_DWARF) || is_jvm(o->key.pid, o->key.epoch)) {
		o->key.ustack = o->key.kstack = 0;
		o->dwarf = 1;
		/*
		 * As for frame pointers below, a stack is copied only for an interval that is
		 * charged: as the thread returns to user mode (settle(): its user stack stays
		 * as it is until then), or when a thread of its own process switches it back
		 * in (PCMON_LAZY_PEER, through the same address space). Else the stack goes
		 * to the engine now; switch_in() only reports the length.
		 */
		if (lazy_stacks && !(cfg->flags & PCMON_TF_KERNEL)) {
			o->lazy = lazy_kind(o, prev, next);
			if (o->lazy == PCMON_LAZY_PEER && !peers_add(o->mm, o->key.tid))
				o->lazy = PCMON_LAZY_NO;
		}
		if (o->lazy != PCMON_LAZY_NO)
			return;
		/*
		 * Taken now (the sched_switch tracepoint, --kernel): walked here where the CFI
		 * tables say the way, and kept as a frame-pointer stack is; else copied. A copy
		 * at every switch of two threads that hand work back and forth thousands of times
		 * a second outran an engine starved by a build beside (the ring overflowed).
		 */
		if ((cfg->flags & PCMON_TF_DWARF) && dwarf_walked(prev, &o->key, &o->urec.st)) {
			o->dwarf = 0;
			note_thread(o->key.tid, prev);
			take_stacks(ctx, prev, o, cfg->flags & PCMON_TF_KERNEL, true);
			return;
		}
		emit_dwarf(ctx, prev, &o->key, PCMON_DS_OFF_START, o->ts, 0,
			   cfg->flags & PCMON_TF_KERNEL);
		return;
	}
	o->dwarf = 0;
	if (lazy_stacks && !(cfg->flags & PCMON_TF_KERNEL))
		o->lazy = lazy_kind(o, prev, next);
	if (o->lazy == PCMON_LAZY_NO) {
		note_thread(o->key.tid, prev);
		take_stacks(ctx, prev, o, cfg->flags & PCMON_TF_KERNEL, false);
	}
}

/* A record without a stack, for the engine to end an interval whose stack it has: @ns of it. */
static __always_inline void send_end(__u32 type, __u32 tid, __u64 ts, __u64 ns,
				     const struct pcmon_key *key)
{
	struct pcmon_dhdr *h = bpf_ringbuf_reserve(&dsamples, sizeof(*h), 0);

	if (!h) {
		ring_count(key->target, false);
		return;
	}
	h->type = type;
	h->tid = tid;
	h->ts = ts;
	h->ns = ns;
	h->key = *key;
	bpf_ringbuf_submit(h, ring_flags(&dsamples));
}

static __always_inline void switch_in(void *ctx, struct task_struct *prev, struct task_struct *next,
				      __u64 *clock)
{
	struct pcmon_offcpu *o;
	struct pcmon_key key;
	__u64 now, ns;

	/* a task no BPF program ever gave local storage cannot have an interval open */
	if (!next->bpf_storage)
		return;
	o = bpf_task_storage_get(&offcpu, next, NULL, 0);
	if (!o || !o->ts)
		return;
	now = switch_time(clock);
	ns = now > o->ts ? now - o->ts : 0;
	o->ts = 0;
	o->on_ts = now; /* for a tick that fires from here on (tick_not_ours()) */
	o->on_prev = prev->pid;
	if (o->lazy != PCMON_LAZY_NO) {
		if (o->dwarf && o->lazy == PCMON_LAZY_PEER)
			peers_drop(o->key.tid);
		/*
		 * Shorter than a period: one period, with probability ns/period. Most
		 * intervals of a thread that switches often end here, so nothing else is read
		 * (unless a tick is owed: its stack is taken all the same).
		 */
		if (ns < o->period_ns) {
			if ((__u64)bpf_get_prandom_u32() * o->period_ns < ns << 32)
				ns = o->period_ns;
			else if (o->owed_on)
				ns = 0;
			else
				return;
		}
	}
	key = o->key;
	if (o->dwarf && o->lazy == PCMON_LAZY_NO) {
		struct pcmon_key on;
		__u64 owed = take_owed(o, &on);

		/* owed ticks first: the engine charges them at the stack OFF_START sent */
		if (owed)
			send_end(PCMON_DS_OWED_END, next->pid, now, owed, &on);
		send_end(PCMON_DS_OFF_END, next->pid, now, ns, &key);
		return;
	}
	if (!active_cfg(key.target))
		return;
	if (o->lazy == PCMON_LAZY_NO) {
		charge(o, ns);
		return;
	}
	if (o->lazy == PCMON_LAZY_RETURN) {
		if (lazy_stacks == PCMON_SETTLE_TASK_WORK && !o->pending_ns &&
		    !settle_later(next, key.tid)) {
			struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &key.target);

			if (ts)
				ts->lost_offcpu_full++;
			return;
		}
		o->pending_ns += ns;
		return;
	}
	/* PCMON_LAZY_PEER: readable here only through the same address space */
	if (o->dwarf && (__u64)prev->mm == o->mm) {
		charge_dwarf(ctx, next, o, ns, false);
		return;
	}
	walk_peer(next, o);
	if ((__u64)prev->mm != o->mm) {
		o->key.uerr = PCMON_SERR_OTHER;
		o->urec.st.len = 0;
	}
	note_thread(o->key.tid, next);
	charge(o, ns);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* prev_state (the 4th argument since 5.18) would save a read, but is not everywhere. */
	unsigned int state = prev->__state;
	__u64 now = 0;

	switch_out(ctx, prev, next, !preempt && state != TASK_RUNNING, &now);
	peers_leave(ctx, prev, next);
	switch_in(ctx, prev, next, &now);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int on_switch_tp(struct trace_event_raw_sched_switch *ctx)
{
	struct task_struct *prev = bpf_get_current_task_btf();
	struct task_struct *next;
	__u64 now = 0;

	/* no lazy stacks here (no sys_exit program): next is not needed */
	switch_out(ctx, prev, NULL, ctx->prev_state != TASK_RUNNING, &now);
	next = bpf_task_from_pid(ctx->next_pid);
	if (next) {
		switch_in(ctx, prev, next, &now);
		bpf_task_release(next);
	}
	return 0;
}

/* A lazy thread's system call returns: its stack is the one it blocked with (switch_out). */
SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	settle_current(ctx, false);
	return 0;
}

/*
 * The open interval of a --unwind dwarf thread whose copy was not taken yet (it is taken as
 * the thread returns to user mode): its user registers and stack are copied here, from
 * outside its address space, for the engine to unwind with CFI as it does every other copy.
 * (Its frame pointers would not do: libc keeps none, and a walk from a blocking call in libc
 * ends there.) A sleeping read faults in the pages a nofault read cannot take: a stack
 * buffer never written, a page swapped out. All of it must fit in the seq file's buffer,
 * so at most PCMON_OPEN_STACK bytes are copied; the engine flags a deeper stack truncated.
 * @sc->o is a copy of the interval; false if the thread ran meanwhile (its interval is no
 * longer open, or another one is: its stack is not the copy's).
 */
static __always_inline bool dump_dwarf(struct bpf_iter__task *ctx, struct task_struct *task,
				       struct pcmon_offcpu *o, struct open_scratch *sc)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	struct pcmon_open_hdr hdr = { .type = PCMON_OPEN_DWARF };
	bool kthread = task->flags & PCMON_PF_KTHREAD;
	struct pcmon_dsample *d;
	struct open_dwarf *od;
	__u64 sp, start_stack, need, n;
	__u32 zero = 0;
	long got;

	od = bpf_map_lookup_elem(&open_dwarf, &zero);
	if (!od)
		return false;
	d = (struct pcmon_dsample *)od->b;
	sp = r->sp;
	start_stack = BPF_CORE_READ(task, mm, start_stack);
	need = kthread ? 0 : stack_need(task, sp, start_stack);
	if (need > dwarf_stack)
		need = dwarf_stack;
	if (need > PCMON_OPEN_STACK)
		need = PCMON_OPEN_STACK;
	d->h.type = PCMON_DS_OFF_START;
	d->h.tid = task->pid;
	d->h.ts = sc->o.ts;
	d->h.ns = 0;
	d->h.key = sc->o.key;
	dsample_regs(d, task, r, start_stack);
	d->klen = 0;
	/* a read past the end of the mapping fails whole: halve until one succeeds */
	n = need;
	got = n ? bpf_copy_from_user_task(d->stack, n, (void *)sp, task, 0) : 0;
	for (int i = 0; i < 6 && got && n > 256; i++) {
		n /= 2;
		got = bpf_copy_from_user_task(d->stack, n, (void *)sp, task, 0);
	}
	d->ulen = got ? 0 : n;
	if (got)
		d->h.key.uerr = PCMON_SERR_FAULT;
	if (kthread)
		d->h.key.uerr = PCMON_SERR_KTHREAD;
	/* its Python frames, if any (o's own stack is room to read them into) */
	sc->o.urec.st.len = 0;
	if (!kthread)
		py_append_task(task, &sc->o.key, &sc->o.urec.st);
	py_to_dsample(d, &sc->o.urec.st);
	/* the thread ran meanwhile: what was copied is not the interval's stack */
	if (o->ts != sc->o.ts)
		return false;
	n = d->ulen;
	if (n > PCMON_OPEN_STACK)
		n = PCMON_OPEN_STACK;
	hdr.len = sizeof(*d) + n;
	if (bpf_seq_write(ctx->meta->seq, &hdr, sizeof(hdr)))
		return false;
	bpf_seq_write(ctx->meta->seq, d, sizeof(*d) + n);
	return true;
}

/*
 * Open off-CPU intervals, for listings taken while threads are still off CPU. A lazy thread's
 * stack is not taken yet: a --unwind dwarf thread's is copied here (dump_dwarf()), another's
 * frame pointers are walked, reading its memory from outside (bpf_copy_from_user_task: this
 * iterator may sleep).
 */
SEC("iter.s/task")
int dump_offcpu(struct bpf_iter__task *ctx)
{
	struct pcmon_open_hdr hdr = { .type = PCMON_OPEN_FP, .len = sizeof(struct pcmon_offcpu) };
	struct task_struct *task = ctx->task;
	struct pcmon_offcpu *o;
	struct open_scratch *sc;
	__u32 zero = 0;

	if (!task || !task->bpf_storage)
		return 0;
	o = bpf_task_storage_get(&offcpu, task, NULL, 0);
	if (!o || !o->ts)
		return 0;
	if (o->lazy == PCMON_LAZY_NO) {
		if (!bpf_seq_write(ctx->meta->seq, &hdr, sizeof(hdr)))
			bpf_seq_write(ctx->meta->seq, o, sizeof(*o));
		return 0;
	}
	sc = bpf_map_lookup_elem(&open_scratch, &zero);
	if (!sc)
		return 0;
	bpf_probe_read_kernel(&sc->o, sizeof(sc->o), o);
	if (sc->o.dwarf) {
		dump_dwarf(ctx, task, o, sc);
		return 0;
	}
	{
		struct uwalk w;

		uwalk_start(&w, task, &sc->o.urec.st);
		sc->o.key.uerr = PCMON_SERR_NONE;
		bpf_loop(PCMON_STACK_MAX, uwalk_step_task, &w, 0);
	}
	py_append_task(task, &sc->o.key, &sc->o.urec.st);
	sc->o.krec.st.len = 0;
	sc->o.urec.key = sc->o.key.ustack = stack_hash(&sc->o.urec.st);
	sc->o.krec.key = sc->o.key.kstack = 0;
	if (!bpf_seq_write(ctx->meta->seq, &hdr, sizeof(hdr)))
		bpf_seq_write(ctx->meta->seq, &sc->o, sizeof(sc->o));
	return 0;
}

#endif /* PCMON_SAMPLE_REAL_BPF_H */
