// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call-counting instrument's kernel side (docs/count.md): a uprobe at the entry of each
 * counted procedure and a uretprobe at its return, and for each thread a shadow stack of its
 * open activations with the stack pointer at entry, in task storage.
 *
 * - Self time is charged to every activation; self+children only to the outermost
 *   activation of a procedure on the thread, so recursion does not count it twice.
 * - An activation whose frame is gone — a longjmp or an exception jumped over its return, or
 *   the kernel gave it no return probe (it keeps at most 64 nested ones per thread) — is
 *   closed when an event from a shallower stack pointer shows it, counted as unwound.
 * - A thread's exit closes what it has open, counted as exited.
 * - The probes' own cost is measured by the engine (a calibration in its own process, target
 *   0) and subtracted in userspace: each activation counts the activations closed below it,
 *   and those it called itself (the outer part of their probes lies in its self time). Its
 *   minimum and maximum are kept with the cost taken out here (ccost, set once measured).
 * - WHEN (docs/when.md, "At probes"): each call is classed at entry, and its totals go to the
 *   key (procedure, class): by the pattern's state on the shadow stack (pcmon_when.h) when
 *   every name is a probed procedure (context procedures, PCMON_COUNT_CTX, are probed for
 *   that alone and stay out of the table), else by the id of its user stack, walked here
 *   and matched by the engine. A call whose class cannot be told is counted as such.
 * - Totals are per CPU: an entry and a return touch no cache line another CPU writes. An
 *   entry touches no totals at all: a call is counted when it is closed (struct pcmon_cstat:
 *   its calls field holds only the entries never closed here), and the engine adds the
 *   activations open when it reads them (dump_open).
 * Which target a task belongs to comes from the shared process maps (procs.bpf.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "pcmon_count.h"
#include "procs.bpf.h"
#include "cstack.bpf.h"
#include "vclock.bpf.h"

#define EEXIST 17
#define ENOMEM 12

char LICENSE[] SEC("license") = "GPL";

#define CALIB_TARGET 0
__u32 calib_pid;	/* the engine's own process, while it calibrates (target 0) */
struct pcmon_ccost ccost;	/* the probes' cost, once measured (0 while it is measured) */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pcmon_ckey);
	__type(value, struct pcmon_cstat);
} cstat SEC(".maps");

/* PCMON_CW_SHADOW: how each probed procedure (by cookie) moves the pattern's state */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct pcmon_wadv);
} cadv SEC(".maps");

/* PCMON_CW_WALK: the user stacks at entries, by id */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, PCMON_COUNT_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PCMON_COUNT_STACK_DEPTH * sizeof(__u64));
} cwalk SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_ccfg);
} ccfg SEC(".maps");

/* switches in missed and made up for (struct vclock), by target */
__u64 clock_repairs[PCMON_MAX_TARGETS];
/* by target, steal that could not be placed in the rows of its calls (place_steal()) */
__u64 unplaced_steal[PCMON_MAX_TARGETS];
/* the scheduler hooks are attached: a thread's clock may outlive its exit until its last
 * switch (count_exit) */
__u32 switch_on;

/*
 * Thread @tid's clock was stopped at a switch out and the thread runs again (@ran: the
 * kernel's CPU time of it now) with no switch in seen: of the gap, what it did not run
 * was off CPU.
 */
static __always_inline void clock_repair(struct vclock *v, __u64 ran, __u64 now)
{
	__u64 gap = now - v->off_since, on = ran - v->ran_at_out;

	v->off_ns += gap > on ? gap - on : 0;
	v->off_since = 0;
	v->pre_since = 0;
	v->steal_in = steal_now();
	if (v->target < PCMON_MAX_TARGETS)
		__sync_fetch_and_add(&clock_repairs[v->target], 1);
}

/*
 * The clock of @task (@v its vclock, looked up once a probe), running now: wall time, or
 * (VIRTUAL) wall time less the time it spent off CPU while counted (sched_switch below
 * keeps that) and the time the hypervisor stole while it ran.
 */
static __always_inline __u64 clock_of(const struct pcmon_cstack *cs, struct task_struct *task,
				      struct vclock *v, __u64 now)
{
	if (!cs->virt || !v)
		return now;
	if (v->off_since) /* running, its switch in not seen */
		clock_repair(v, task->se.sum_exec_runtime, now);
	return now - v->off_ns - vclock_steal(v);
}

enum how { RETURNED, UNWOUND, EXITED };

/*
 * Activation @i of the shadow stack. The mask comes after an empty asm so that the compiler
 * cannot fold it into the index's earlier arithmetic: the verifier must see it.
 */
static __always_inline struct pcmon_cact *act(struct pcmon_cstack *cs, __u32 i)
{
	asm volatile("" : "+r"(i));
	i &= PCMON_COUNT_DEPTH - 1;
	return &cs->a[i];
}

/* The key of the row of activation @a, of process @tgid. */
static __always_inline void key_of(const struct pcmon_cact *a, __u32 tgid, struct pcmon_ckey *k)
{
	k->cookie = a->cookie;
	k->cls = a->cls;
	k->tgid = 0;
	k->epoch = 0;
	k->pad = 0;
	if (a->cls < PCMON_CLS_LOWEST) { /* a stack id: its addresses are this process's */
		k->tgid = tgid;
		k->epoch = a->epoch;
	}
}

/*
 * Steal @d the scheduler counted for the thread of @v (@cs its shadow stack, NULL if it
 * cannot be had) in an interval between two updates of its clock in which a probe read
 * it: what it counts at an update was stolen at some point since the update before, so
 * it cannot be placed on either side of that probe. It goes into the error of the calls
 * that returned in the interval (their time may hold it; past PCMON_COUNT_RETS rows, with
 * no shadow stack, or where a node of the legs was hit, every row and leg of the target) and, VIRTUAL, of the calls entered in it
 * and open now (their time had it taken out, and some may have been before their entry).
 * A call open across the whole interval holds it all, as its time says.
 */
/* @d placed in row @s: in its sum, and its largest placement (an extreme; a lost race keeps
 * a smaller one, as for the other extremes) */
static __always_inline void row_unplaced(struct pcmon_cstat *s, __u64 d)
{
	__sync_fetch_and_add(&s->unplaced_steal_ns, d);
	if (d > s->max_unplaced_ns)
		s->max_unplaced_ns = d;
}

static __always_inline void place_steal(const struct vclock *v, struct pcmon_cstack *cs, __u64 d)
{
	__u32 n = cs && cs->ret_gen == v->upd_gen ? cs->nret : 0, depth;
	struct pcmon_cstat *s;

	/* (an update inside a probe, between its clock reading and its end, may hold time of
	 * the call that probe opens or closes, which it has not recorded yet) */
	if (!cs || n > PCMON_COUNT_RETS || v->leg_hit || v->in_probe) {
		if (v->target < PCMON_MAX_TARGETS)
			__sync_fetch_and_add(&unplaced_steal[v->target], d);
		if (!cs)
			return;
	}
	for (__u32 i = 0; i < PCMON_COUNT_RETS; i++) {
		if (i >= n)
			break;
		s = bpf_map_lookup_elem(&cstat, &cs->ret[i]);
		if (s)
			row_unplaced(s, d);
	}
	if (!cs->virt || cs->ent_gen != v->upd_gen)
		return;
	depth = cs->depth;
	for (__u32 i = cs->ent_low; i < PCMON_COUNT_DEPTH; i++) {
		if (i >= depth)
			break;
		act(cs, i)->unplaced += d;
	}
}

/*
 * Look at the steal counted for the thread of @v (running here; @cs its shadow stack,
 * maybe NULL) since it was last looked at, @update: just after the scheduler updated the
 * clock of its CPU (else at a probe, which may see that an update came since).
 */
static __always_inline void steal_look(struct vclock *v, struct pcmon_cstack *cs, bool update)
{
	__u64 now = vclock_steal(v), d = now > v->steal_look ? now - v->steal_look : 0;

	if (d && v->probed)
		place_steal(v, cs, d);
	v->steal_look = now;
	if (d || update) { /* a new interval */
		v->probed = 0;
		v->leg_hit = 0;
		v->upd_gen++;
	}
}

/* A probe of the thread of @v (@cs its shadow stack) reads its clock: steal_look(), and
 * what the next update counts may have been stolen before this probe or after. */
static __always_inline void probe_look(struct vclock *v, struct pcmon_cstack *cs)
{
	if (!v)
		return;
	steal_look(v, cs, false);
	v->probed = 1;
	v->in_probe = 1;
}

/* The probe that called probe_look() for @v ends. */
static __always_inline void probe_done(struct vclock *v)
{
	if (v)
		v->in_probe = 0;
}

/*
 * Activations of the thread of @v (@cs its shadow stack) were closed at this probe other
 * than by their return (unwound, exited): what the next update counts may be in any of
 * their rows, which are not kept one by one (rare; it goes to the target's every row).
 */
static __always_inline void note_closed_many(const struct vclock *v, struct pcmon_cstack *cs)
{
	cs->ret_gen = v->upd_gen;
	cs->nret = PCMON_COUNT_RETS + 1;
}

/* The scheduler has just updated the clock of @task's CPU, @task running there. */
static __always_inline void update_look(struct vclock *v, struct task_struct *task)
{
	struct pcmon_cstack *cs = NULL;

	if (v->probed && vclock_steal(v) != v->steal_look && task->bpf_storage)
		cs = bpf_task_storage_get(&cstack, task, NULL, 0);
	steal_look(v, cs, true);
}

/* @task, whose clock is @v, leaves its CPU: the steal of its run there is its own (exact:
 * the switch has just updated the clock), and looked at (steal_look()). */
static __always_inline void steal_out(struct vclock *v, struct task_struct *task)
{
	if (!v->steal_in)
		return;
	v->steal_ns += steal_now() - v->steal_in;
	v->steal_in = 0;
	update_look(v, task);
}

static __always_inline bool same_key(const struct pcmon_ckey *a, const struct pcmon_ckey *b)
{
	return a->cookie == b->cookie && a->cls == b->cls && a->tgid == b->tgid &&
	       a->epoch == b->epoch;
}

/* Activation @a of the thread of @v (@cs its shadow stack), of process @tgid, returned:
 * its row is kept with those that may hold what the next update counts. */
static __always_inline void note_return(const struct vclock *v, struct pcmon_cstack *cs,
					const struct pcmon_cact *a, __u32 tgid)
{
	struct pcmon_ckey k;
	__u32 n;

	if (cs->ret_gen != v->upd_gen) {
		cs->ret_gen = v->upd_gen;
		cs->nret = 0;
	}
	key_of(a, tgid, &k);
	n = cs->nret;
	for (__u32 i = 0; i < PCMON_COUNT_RETS; i++) {
		if (i >= n)
			break;
		if (same_key(&cs->ret[i], &k))
			return;
	}
	if (n < PCMON_COUNT_RETS)
		cs->ret[n & (PCMON_COUNT_RETS - 1)] = k;
	if (n <= PCMON_COUNT_RETS)
		cs->nret = n + 1;
}

/* The totals of the calls of activation @a (this CPU's), made on first use. */
static __always_inline struct pcmon_cstat *stat_of(const struct pcmon_cact *a, __u32 tgid)
{
	struct pcmon_cstat *s, zero = {};
	struct pcmon_ckey k;

	key_of(a, tgid, &k);
	s = bpf_map_lookup_elem(&cstat, &k);
	if (s)
		return s;
	bpf_map_update_elem(&cstat, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&cstat, &k);
}

/*
 * Does the current task belong to the target of @cookie, and may its owner watch it? Its
 * shadow stack (made on its first counted call), its process's exec epoch in *epoch; NULL
 * if it is not watched, or (*no_stack) it is but has no shadow stack. The process map is
 * looked up only when the copy the shadow stack keeps is stale.
 */
static __always_inline struct pcmon_cstack *watched(__u64 cookie, __u32 tgid,
						    struct task_struct *task, __u32 *epoch,
						    bool *no_stack)
{
	__u32 target = PCMON_COUNT_TARGET(cookie);
	__u64 gen = procs_gen_now() | PCMON_COUNT_COPIED;
	struct pcmon_cstack *cs = NULL;
	struct pcmon_tcfg *cfg;
	struct pcmon_proc *p;

	*epoch = 0;
	*no_stack = false;
	if (task->bpf_storage)
		cs = bpf_task_storage_get(&cstack, task, NULL, 0);
	if (target == CALIB_TARGET) {
		if (!calib_pid || tgid != calib_pid)
			return NULL;
	} else if (cs && cs->proc_gen == gen) {
		/* the copy is current: the owner may still have lost the right to watch it */
		cfg = cs->proc_target == target ? active_cfg(target) : NULL;
		if (!cfg || !may_watch(task, cfg, target))
			return NULL;
		*epoch = cs->proc_epoch;
		return cs;
	} else {
		p = proc_in_target(target, tgid, task);
		if (!p)
			return NULL;
		*epoch = p->epoch;
	}
	if (!cs)
		cs = bpf_task_storage_get(&cstack, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cs) {
		*no_stack = true;
		return NULL;
	}
	if (target != CALIB_TARGET) {
		cs->proc_gen = gen;
		cs->proc_target = target;
		cs->proc_epoch = *epoch;
	}
	return cs;
}

static __always_inline __u32 is_xol(__u64 cookie)
{
	return (__u32)cookie & PCMON_COUNT_XOL ? 1 : 0;
}

/*
 * The time of activation @a closed after @dur, its probes' cost taken out: the inner part
 * of its own pair, the whole pairs of the activations inside it, and @pre, the time its
 * thread was preempted at their probes. Below 0: 0.
 */
static __always_inline __u64 net_of(const struct pcmon_cact *a, __u64 dur, __u64 pre)
{
	__u32 x = is_xol(a->cookie);
	__u64 cost = ccost.in[x & 1] + (__u64)(a->desc - a->desc_xol) * ccost.pair[0] +
		     (__u64)a->desc_xol * ccost.pair[1] + pre;

	return dur > cost ? dur - cost : 0;
}

/*
 * What the probes' cost taken out of a time does not hold, read at a probe: how long its
 * thread has been preempted at a probe so far, and (REAL) how much time the hypervisor
 * has stolen from it so far. VIRTUAL: 0, its clock stopped then.
 */
struct probe_clocks {
	__u64 pre, steal;
};

static __always_inline void clocks_of(const struct vclock *v, __u32 virt, struct probe_clocks *c)
{
	c->pre = v && !virt ? v->pre_ns : 0;
	c->steal = v && !virt ? vclock_steal(v) : 0;
}

/*
 * An entry probe of thread @tid at @ip: kept for the scheduler hook (count_switch), and
 * its clocks read (clocks_of()). Its vclock, made on its first probe (NULL: the map is full).
 */
static __noinline struct vclock *note_entry(__u32 tid, __u64 ip, __u32 virt, __u32 target,
					    struct probe_clocks *c)
{
	struct vclock *v = vclock_at_probe(tid, ip, target);

	clocks_of(v, virt, c);
	return v;
}

/*
 * Close the innermost open activation of thread @tgid at @now, @at its clocks then
 * (clocks_of()), the way @how (enum how).
 *
 * A global function, verified once, not at each of its calls (the loops that close gone
 * activations would be too much for the verifier): @cs and @at are memory here, maybe NULL.
 */
__noinline int pop(struct pcmon_cstack *cs, __u32 tgid, __u64 now,
		   const struct probe_clocks *at, int how)
{
	struct pcmon_cact *a, *up = NULL;
	struct pcmon_cstat *s;
	__u64 dur, self, net, pre, self_pre, steal, self_steal;
	bool first;
	__u32 d;

	if (!cs || !at)
		return 0;
	d = cs->depth;
	if (!d)
		return 0;
	cs->depth = d - 1;
	if (d > PCMON_COUNT_DEPTH)
		return 0; /* not kept: counted at entry as too deep */
	a = act(cs, d - 1);
	if (d >= 2)
		up = act(cs, d - 2);
	dur = now > a->t0 ? now - a->t0 : 0;
	pre = at->pre - a->pre0; /* both read from the same count, which only grows */
	steal = at->steal - a->steal0; /* (likewise) */
	if ((__u32)a->cookie & PCMON_COUNT_CTX) {
		/* transparent: its time is its caller's, less its counted callees; its probes
		 * are one more activation inside the caller, whose self time holds their cost,
		 * and so does it the outer part of its callees' */
		if (up) {
			up->child_ns += a->child_ns;
			up->desc += 1 + a->desc;
			up->desc_xol += is_xol(a->cookie) + a->desc_xol;
			up->self_ctx += 1 + a->self_ctx;
			up->self_ctx_xol += is_xol(a->cookie) + a->self_ctx_xol;
			up->kids += a->kids;
			up->kids_xol += a->kids_xol;
			up->child_pre += a->child_pre;
			up->child_steal += a->child_steal;
			up->unplaced += a->unplaced;
		}
		return 0;
	}
	self = dur > a->child_ns ? dur - a->child_ns : 0;
	self_pre = pre - a->child_pre; /* the engine keeps it within the self time */
	self_steal = steal - a->child_steal;
	net = net_of(a, dur, pre);
	s = stat_of(a, tgid);
	if (s) {
		/* per CPU, but a program may be preempted on this CPU by another: atomics */
		first = !__sync_fetch_and_add(&s->closed, 1);
		/* a lost race keeps a larger minimum or a smaller maximum: harmless */
		if (first || net < s->min_ns) {
			s->min_ns = net;
			s->min_acts = 1 + a->desc;
			s->min_acts_xol = is_xol(a->cookie) + a->desc_xol;
			s->min_steal_ns = steal;
		}
		if (first || net > s->max_ns) {
			s->max_ns = net;
			s->max_acts = 1 + a->desc;
			s->max_acts_xol = is_xol(a->cookie) + a->desc_xol;
			s->max_steal_ns = steal;
		}
		__sync_fetch_and_add(&s->self_ns, self);
		__sync_fetch_and_add(&s->self_pre_ns, self_pre);
		if (self_steal)
			__sync_fetch_and_add(&s->self_steal_ns, self_steal);
		if (a->unplaced)
			row_unplaced(s, a->unplaced);
		if (a->self_ctx) {
			__sync_fetch_and_add(&s->self_ctx, a->self_ctx);
			__sync_fetch_and_add(&s->self_ctx_xol, a->self_ctx_xol);
		}
		if (a->kids) {
			__sync_fetch_and_add(&s->kids, a->kids);
			__sync_fetch_and_add(&s->kids_xol, a->kids_xol);
		}
		if (!a->nested) {
			__sync_fetch_and_add(&s->outer, 1);
			__sync_fetch_and_add(&s->total_ns, dur);
			__sync_fetch_and_add(&s->total_pre_ns, pre);
			if (steal)
				__sync_fetch_and_add(&s->total_steal_ns, steal);
			__sync_fetch_and_add(&s->total_acts, 1 + a->desc);
			__sync_fetch_and_add(&s->total_acts_xol, is_xol(a->cookie) + a->desc_xol);
		}
		if (how == UNWOUND)
			__sync_fetch_and_add(&s->unwound, 1);
		else if (how == EXITED)
			__sync_fetch_and_add(&s->exited, 1);
	}
	if (up) {
		up->child_ns += dur;
		up->desc += 1 + a->desc;
		up->desc_xol += is_xol(a->cookie) + a->desc_xol;
		up->kids += 1;
		up->kids_xol += is_xol(a->cookie);
		up->child_pre += pre;
		up->child_steal += steal;
	}
	return 0;
}

/*
 * Close the activations whose frames are gone: their return address lies below @sp, the
 * stack pointer of a frame that is live now (the stack grows down).
 */
static __always_inline void unwind_to(struct pcmon_cstack *cs, __u32 tgid, __u64 sp, __u64 now,
				      const struct probe_clocks *at, const struct vclock *v)
{
	bool closed = false;

	for (int i = 0; i < PCMON_COUNT_DEPTH; i++) {
		__u32 d = cs->depth;

		if (!d || d > PCMON_COUNT_DEPTH)
			break;
		if (act(cs, d - 1)->sp > sp)
			break;
		pop(cs, tgid, now, at, UNWOUND);
		closed = true;
	}
	if (closed && v)
		note_closed_many(v, cs);
}

/*
 * The class of a call entering at depth @d of @cs (PCMON_CLS_*, or a stack id), and in *ws
 * the pattern's state down to it (PCMON_CW_SHADOW).
 */
static __always_inline __u32 classify(struct pt_regs *ctx, const struct pcmon_ccfg *cc,
				      struct pcmon_cstack *cs, __u32 d, __u64 cookie, __u32 *ws)
{
	struct pcmon_wadv *adv;
	__u32 outer;
	long id;

	*ws = 0;
	if (!cc || cc->when == PCMON_CW_NONE)
		return PCMON_CLS_ALL;
	if (cc->when == PCMON_CW_WALK) {
		id = bpf_get_stackid(ctx, &cwalk, BPF_F_USER_STACK);
		if (id >= 0)
			return (__u32)id;
		return id == -EEXIST || id == -ENOMEM ? PCMON_CLS_NOSTACK : PCMON_CLS_UNKNOWN;
	}
	adv = bpf_map_lookup_elem(&cadv, &cookie);
	if (!adv || d > PCMON_COUNT_DEPTH)
		return PCMON_CLS_UNKNOWN; /* an activation past the depth kept: no state */
	outer = d ? act(cs, d - 1)->wstate : 0;
	*ws = pcmon_when_step(&cc->wpat, outer, adv);
	return pcmon_when_test(&cc->wpat, outer, adv) ? PCMON_CLS_MATCH : PCMON_CLS_NOMATCH;
}

SEC("uprobe")
int count_enter(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = pid_tgid >> 32, target = PCMON_COUNT_TARGET(cookie), d, nested = 0, ws, tid;
	struct pcmon_cact *a, tmp = { .cookie = cookie };
	struct pcmon_ccfg *cc;
	struct pcmon_cstack *cs;
	struct pcmon_cstat *s;
	struct probe_clocks at;
	struct vclock *v;
	bool no_stack;
	__u64 now;

	cs = watched(cookie, tgid, task, &tmp.epoch, &no_stack);
	if (!cs && !no_stack)
		return 0;
	cc = bpf_map_lookup_elem(&ccfg, &target);
	if (!cs) { /* counted, neither timed nor classed */
		tmp.cls = cc && cc->when ? PCMON_CLS_UNKNOWN : PCMON_CLS_ALL;
		s = (__u32)cookie & PCMON_COUNT_CTX ? NULL : stat_of(&tmp, tgid);
		if (s)
			__sync_fetch_and_add(&s->calls, 1);
		return 0;
	}
	now = bpf_ktime_get_ns();
	if (!cs->depth)
		cs->virt = cc ? cc->virt : 0;
	tid = (__u32)pid_tgid;
	v = note_entry(tid, PT_REGS_IP(ctx), cs->virt, target, &at);
	now = clock_of(cs, task, v, now);
	probe_look(v, cs);
	/* an open activation at or below this return address is gone: this frame replaced it */
	unwind_to(cs, tgid, PT_REGS_SP(ctx), now, &at, v);
	d = cs->depth;
	tmp.cls = classify(ctx, cc, cs, d, cookie, &ws);
	if (d >= PCMON_COUNT_DEPTH) { /* counted here, as it is never closed */
		cs->depth = d + 1;
		s = (__u32)cookie & PCMON_COUNT_CTX ? NULL : stat_of(&tmp, tgid);
		if (s) {
			__sync_fetch_and_add(&s->calls, 1);
			__sync_fetch_and_add(&s->too_deep, 1);
		}
		probe_done(v);
		return 0;
	}
	for (int i = 0; i < PCMON_COUNT_DEPTH; i++) {
		if (i >= d)
			break;
		if (act(cs, i)->cookie == cookie) {
			nested = 1;
			break;
		}
	}
	a = act(cs, d);
	a->cookie = cookie;
	a->sp = PT_REGS_SP(ctx);
	a->t0 = now;
	a->child_ns = 0;
	a->desc = 0;
	a->desc_xol = 0;
	a->nested = nested;
	a->cls = tmp.cls;
	a->wstate = ws;
	a->epoch = tmp.epoch;
	a->self_ctx = 0;
	a->self_ctx_xol = 0;
	a->kids = 0;
	a->kids_xol = 0;
	a->pre0 = at.pre;
	a->child_pre = 0;
	a->steal0 = at.steal;
	a->child_steal = 0;
	a->unplaced = 0;
	cs->depth = d + 1;
	if (v && (cs->ent_gen != v->upd_gen || d < cs->ent_low)) {
		cs->ent_gen = v->upd_gen; /* what the next update counts may be before it */
		cs->ent_low = d;
	}
	probe_done(v);
	return 0;
}

SEC("uretprobe")
int count_return(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), now = bpf_ktime_get_ns();
	__u64 sp = PT_REGS_SP(ctx) - 8; /* where the return address was: the entry's sp */
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct probe_clocks at;
	struct pcmon_cstack *cs;
	struct vclock *v;
	__u32 d;

	if (!task->bpf_storage)
		return 0;
	cs = bpf_task_storage_get(&cstack, task, NULL, 0);
	if (!cs || !cs->depth)
		return 0;
	v = bpf_map_lookup_elem(&vclocks, &tid); /* (once: a hash lookup each is dear) */
	now = clock_of(cs, task, v, now);
	clocks_of(v, cs->virt, &at);
	probe_look(v, cs);
	/* deeper activations still open lost their returns: gone */
	for (int i = 0; i < PCMON_COUNT_DEPTH; i++) {
		d = cs->depth;
		if (!d || d > PCMON_COUNT_DEPTH)
			break;
		if (act(cs, d - 1)->sp >= sp)
			break;
		pop(cs, tgid, now, &at, UNWOUND);
		if (v)
			note_closed_many(v, cs);
	}
	d = cs->depth;
	if (d > PCMON_COUNT_DEPTH) {
		pop(cs, tgid, now, &at, RETURNED); /* a too-deep one: only its depth is kept */
		probe_done(v);
		return 0;
	}
	if (d && act(cs, d - 1)->cookie == cookie &&
	    act(cs, d - 1)->sp == sp) {
		pop(cs, tgid, now, &at, RETURNED);
		/* what the next update counts may be in this call */
		if (v && !((__u32)cookie & PCMON_COUNT_CTX))
			note_return(v, cs, act(cs, d - 1), tgid);
	}
	/* else: the return of an activation entered before the probes were attached */
	probe_done(v);
	return 0;
}

/*
 * A thread that exits closes whatever it has open, whichever way it leaves. Its clock and
 * shadow stack go with it, unless calls returned since the last update of its CPU's clock
 * (what its last switch counts may have been stolen in them): then they go at that switch.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(count_exit, struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 tid = p->pid;
	struct probe_clocks at;
	struct pcmon_cstack *cs;
	struct vclock *v;

	if (!p->bpf_storage)
		return 0;
	cs = bpf_task_storage_get(&cstack, p, NULL, 0);
	if (!cs)
		return 0;
	v = bpf_map_lookup_elem(&vclocks, &tid);
	now = clock_of(cs, p, v, now); /* p is the thread that runs this */
	clocks_of(v, cs->virt, &at);
	probe_look(v, cs);
	for (int i = 0; i < PCMON_COUNT_DEPTH + 1; i++) {
		if (!cs->depth)
			break;
		pop(cs, p->tgid, now, &at, EXITED);
		if (v)
			note_closed_many(v, cs);
	}
	probe_done(v);
	/* (where the kernel counts no steal, steal_in stays 0: nothing to wait for) */
	if (v && switch_on && v->steal_in && cs->nret && cs->ret_gen == v->upd_gen) {
		v->dead = 1; /* count_switch */
		return 0;
	}
	bpf_task_storage_delete(&cstack, p);
	bpf_map_delete_elem(&vclocks, &tid);
	return 0;
}

/*
 * A thread inside counted procedures that leaves the CPU: VIRTUAL, its clock stops until it
 * is back; preempted (runnable) at a probe, on its way from an entry's breakpoint to the
 * code, the time until it is back is the probe's (pre_ns). Its user registers tell where:
 * at the probed instruction (emulated: just past it) or in the page the kernel steps the
 * instruction out of line in. Attached while some target counts.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(count_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 ptid = prev->pid, ntid = next->pid;
	__u64 now = bpf_ktime_get_ns(), ip, xol;
	struct pt_regs *regs;
	struct vclock *v;

	v = bpf_map_lookup_elem(&vclocks, &ptid);
	if (v && v->dead) { /* its last switch: the steal it counts, and it is gone */
		steal_out(v, prev);
		bpf_task_storage_delete(&cstack, prev);
		bpf_map_delete_elem(&vclocks, &ptid);
		v = NULL;
	}
	if (v) {
		__u64 ran = prev->se.sum_exec_runtime; /* brought up to date for this switch */

		if (v->off_since) /* switched out again, its switch in not seen */
			clock_repair(v, ran, now);
		steal_out(v, prev);
		v->off_since = now;
		v->ran_at_out = ran;
		v->pre_since = 0;
		if (prev->__state == 0 /* TASK_RUNNING: preempted */ && prev->mm) {
			regs = (struct pt_regs *)bpf_task_pt_regs(prev);
			ip = regs ? BPF_CORE_READ(regs, ip) : 0;
			xol = BPF_CORE_READ(prev, mm, uprobes_state.xol_area, vaddr);
			if ((v->entry_ip && ip - (v->entry_ip - 1) < 16) ||
			    (xol && ip - xol < 4096))
				v->pre_since = now;
		}
	}
	v = bpf_map_lookup_elem(&vclocks, &ntid);
	if (v)
		v->steal_in = steal_now();
	if (v && v->off_since) {
		v->off_ns += now - v->off_since;
		v->off_since = 0;
		if (v->pre_since)
			v->pre_ns += now - v->pre_since;
		v->pre_since = 0;
	}
	return 0;
}

/*
 * The scheduler brought the CPU time of @tsk up to date, its clock updated just before (a
 * tick, a wakeup, ...): what steal it counted then is looked at (steal_look()), while a
 * thread is timed. Attached with count_switch.
 */
SEC("tp_btf/sched_stat_runtime")
int BPF_PROG(count_runtime, struct task_struct *tsk)
{
	__u32 tid = tsk->pid;
	struct vclock *v;

	if (tsk != bpf_get_current_task_btf()) /* another CPU's: steal_now() reads this one's */
		return 0;
	v = bpf_map_lookup_elem(&vclocks, &tid);
	if (v && v->steal_in)
		update_look(v, tsk);
	return 0;
}

/* Open activations (their keys), for listings taken while threads are inside counted
 * procedures. */
SEC("iter/task")
int dump_open(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct pcmon_cstack *cs;
	__u32 d;

	if (!task || !task->bpf_storage)
		return 0;
	cs = bpf_task_storage_get(&cstack, task, NULL, 0);
	if (!cs || !cs->depth)
		return 0;
	d = cs->depth < PCMON_COUNT_DEPTH ? cs->depth : PCMON_COUNT_DEPTH;
	for (int i = 0; i < PCMON_COUNT_DEPTH; i++) {
		struct pcmon_ckey k;
		struct pcmon_cact *a;

		if (i >= d)
			break;
		a = act(cs, i);
		k = (struct pcmon_ckey){ .cookie = a->cookie, .cls = a->cls };
		if (a->cls < PCMON_CLS_LOWEST) {
			k.tgid = task->tgid;
			k.epoch = a->epoch;
		}
		bpf_seq_write(ctx->meta->seq, &k, sizeof(k));
	}
	return 0;
}
