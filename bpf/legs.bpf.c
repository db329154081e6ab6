// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe-node instrument's kernel side (docs/legs.md), the Mesa PerfTool's nodes and legs:
 * a node is a probe point (a procedure's entry or return, an offset in it, a USDT probe);
 * a leg is the code a thread runs from a from node to a to node. Every thread has its own
 * leg in flight (task storage), so threads crossing the same nodes all get theirs. A node
 * may record an integer argument into a histogram; a leg its time.
 *
 * --track all (the Mesa tool's default): every leg in the table is tracked on its own, per
 * thread. A hit of node N first completes each leg (F, N) and (F, *) the thread has in
 * flight, then starts each leg (N, T) and (*, T) — a leg already in flight from N is
 * abandoned (a second from before its to; one from '*' just starts again). Nodes hit in
 * between do not matter: nested and overlapping legs all count. The probe hits of the
 * thread inside a leg are counted, and their cost taken off its time.
 *
 * --track successor: a hit of N by a thread whose last node is F completes leg (F, N) — or
 * (F, *), or (*, N) — and N becomes the last node if it starts a leg; if N is F again or
 * starts a leg itself, F's leg is abandoned. --add successor adds the leg from the
 * thread's last node to N when the table lacks it, in either mode. --track none: nodes are
 * only counted. A thread's exit abandons the legs it had in flight.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "pcmon_legs.h"
#include "pcmon_count.h"
#include "procs.bpf.h"
/* WHEN: the call counter's shadow stacks, shared with the legs' own counter */
#include "cstack.bpf.h"
/* the threads' clocks, shared with the call counter: time preempted at a probe */
#include "vclock.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* cookie */
	__type(value, struct pcmon_node);
} nodes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pcmon_lkey);
	__type(value, struct pcmon_leg);
} legs SEC(".maps");

/* histogram shapes, apart from the counts (pcmon_hkey) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pcmon_hkey);
	__type(value, struct pcmon_hcfg);
} hcfgs SEC(".maps");

/* (target, from, 0): the `to` of a leg that starts at node from (the first one set up) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pcmon_lkey);
	__type(value, __u32);
} lfrom SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_lcfg);
} lcfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_lthread);
} lthread SEC(".maps");

/* --track all: the legs each node starts and ends, a target's legs, the legs in flight */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pcmon_lkey);
	__type(value, struct pcmon_nlegs);
} nlegs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_tlegs);
} tlegs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__type(key, struct pcmon_fkey);
	__type(value, struct pcmon_flight);
} lflight SEC(".maps");


/* Tail profiles (pcmon_tail.h): each target's tailed legs, by slot */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_ltails);
} ltails SEC(".maps");

/* their instances' sets and ends, for the engine */
#define TAIL_RING_BYTES (4 * 1024 * 1024)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, TAIL_RING_BYTES);	/* 87,000 records */
} tail_events SEC(".maps");

/*
 * Ids of sets and instances: each CPU counts its own (the return of an atomic add is not
 * BPF's before v3), PCMON_TAIL_ID(), never 0.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} tail_ids SEC(".maps");

__u64 tail_lost;			/* records the ring had no room for */

/* A leg as --add successor creates it (too big for the BPF stack: a global) */
struct pcmon_leg fresh_leg = { .min_ns = ~0ULL };

static __always_inline void hist_add(const struct pcmon_hcfg *c, struct pcmon_hist *h, __u64 v)
{
	__u32 i = pcmon_hist_slot(c, v);

	if (i == PCMON_HIST_UNDER)
		__sync_fetch_and_add(&h->under, 1);
	else if (i == PCMON_HIST_OVER)
		__sync_fetch_and_add(&h->over, 1);
	else if (i <= PCMON_HIST_BUCKETS) /* (not NOWHERE; and the verifier sees the bound) */
		__sync_fetch_and_add(&h->b[i], 1);
}

/* The leg from @from to @to, or to any node, or from any node; *k: the one found. */
static __always_inline struct pcmon_leg *leg_of(__u32 target, __u32 from, __u32 to,
						struct pcmon_lkey *k)
{
	struct pcmon_leg *l;

	*k = (struct pcmon_lkey){ target, from, to, 0 };
	l = bpf_map_lookup_elem(&legs, k);
	if (l)
		return l;
	k->to = PCMON_ANY_NODE;
	l = bpf_map_lookup_elem(&legs, k);
	if (l)
		return l;
	k->from = PCMON_ANY_NODE;
	k->to = to;
	return bpf_map_lookup_elem(&legs, k);
}

/* The leg that starts at @from, abandoned. */
static __always_inline void abandon(__u32 target, __u32 from)
{
	struct pcmon_lkey k = { target, from, 0, 0 };
	struct pcmon_leg *l;
	__u32 *to = bpf_map_lookup_elem(&lfrom, &k);

	if (!to)
		return;
	k.to = *to;
	l = bpf_map_lookup_elem(&legs, &k);
	if (l)
		__sync_fetch_and_add(&l->abandoned, 1);
}

/* A finished leg of @dur ns with @inner probe hits inside it, which cost @cost ns, @pre of
 * them preempted at the probes; @steal ns of it stolen by the hypervisor. */
static __always_inline void record(struct pcmon_leg *l, const struct pcmon_lkey *k, __u64 dur,
				   __u64 inner, __u64 cost, __u64 pre, __u64 steal)
{
	struct pcmon_hkey hk = { k->target, k->from, k->to, 0 };
	struct pcmon_hcfg *c = bpf_map_lookup_elem(&hcfgs, &hk);

	dur = pcmon_leg_net(dur, cost);
	__sync_fetch_and_add(&l->count, 1);
	__sync_fetch_and_add(&l->total_ns, dur);
	__sync_fetch_and_add(&l->probe_hits, inner);
	__sync_fetch_and_add(&l->probe_ns, cost);
	if (pre)
		__sync_fetch_and_add(&l->preempted_ns, pre);
	if (steal)
		__sync_fetch_and_add(&l->stolen_ns, steal);
	if (dur < l->min_ns) {
		l->min_ns = dur;
		l->min_steal_ns = steal;
	}
	if (dur > l->max_ns) {
		l->max_ns = dur;
		l->max_steal_ns = steal;
	}
	if (c)
		hist_add(c, &l->h, dur);
}

/* ---- tail profiles */

static __always_inline __u32 tail_id(void)
{
	__u32 zero = 0, *c = bpf_map_lookup_elem(&tail_ids, &zero);

	if (!c)
		return 0;
	if (!(++*c & 0x1ffffff))
		++*c;
	return PCMON_TAIL_ID(*c, bpf_get_smp_processor_id());
}

static __always_inline void tail_emit(__u32 type, __u32 target, __u32 tid, __u32 set, __u32 slot,
				      __u64 dur, const __u32 *inst, __u32 one)
{
	struct pcmon_tail_ev *e = bpf_ringbuf_reserve(&tail_events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&tail_lost, 1);
		return;
	}
	e->type = type;
	e->target = target;
	e->tid = tid;
	e->set = set;
	e->slot = slot;
	e->pad = 0;
	e->dur = dur;
	for (int i = 0; i < PCMON_TAIL_LEGS; i++)
		e->inst[i] = inst ? inst[i] : 0;
	if (!inst)
		e->inst[0] = one;
	/* the engine is woken only as the ring fills (an eighth of it): else it reads the ring
	 * as it wakes anyway (once a second at least), and a leg of many short instances does
	 * not wake it for each */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&tail_events, BPF_RB_AVAIL_DATA) >
				      TAIL_RING_BYTES / 8 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* The thread's tailed instances, for @target (a thread whose process went to another
 * target starts afresh). */
static __always_inline struct pcmon_tailth *tail_thread(__u32 target, __u32 gen)
{
	struct pcmon_tailth *th = bpf_task_storage_get(&tailth, bpf_get_current_task_btf(), NULL,
						       BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (th && (th->target != target || th->gen != gen)) {
		__builtin_memset(th, 0, sizeof(*th));
		th->target = target;
		th->gen = gen;
	}
	return th;
}

/* The thread's set of open instances changed: samples taken from now on carry its new id:
 * 0 if none is open, the instance's if one is, else one of its own, told to the engine. */
static __always_inline void tail_newset(struct pcmon_tailth *th, __u32 tid)
{
	__u32 n = 0, one = 0;

	for (int i = 0; i < PCMON_TAIL_LEGS; i++)
		if (th->inst[i]) {
			n++;
			one = th->inst[i];
		}
	if (n <= 1) {
		th->set = one;
		return;
	}
	th->set = tail_id() | PCMON_TAIL_MULTI;
	tail_emit(PCMON_TAIL_SET, th->target, tid, th->set, 0, 0, th->inst, 0);
}

/* Leg slot @slot's instance open on thread @th ends after @dur ns net (@how 0; 1: it is
 * abandoned), or a new one opens (@how 2, abandoning one open). */
static __always_inline void tail_slot_hit(struct pcmon_tailth *th, __u32 slot, __u32 tid, __u64 dur,
					  __u32 how)
{
	__u32 i = slot - 1, old;

	if (i >= PCMON_TAIL_LEGS)
		return;
	asm volatile("" : "+r"(i));
	i &= PCMON_TAIL_LEGS - 1;
	old = th->inst[i];
	if (old)
		tail_emit(how ? PCMON_TAIL_ABANDON : PCMON_TAIL_END, th->target, tid, th->set, slot,
			  dur, NULL, old);
	if (!old && how != 2)
		return;
	th->inst[i] = how == 2 ? tail_id() : 0;
	tail_newset(th, tid);
}

/*
 * --track all: a hit of @node, at @now with the thread's probe cost @cost, as the target's
 * tailed legs see it, before the legs in flight are ended and started: each tailed leg to
 * @node in flight ends (its time net as record() has it), each from @node (if the hit
 * @starts legs) opens an instance, abandoning one in flight. A function of its own, which
 * the verifier checks once: inlined into the legs' loops, it made node_hit too big to load.
 */
__noinline int tail_hit(__u32 target, __u32 node, __u64 now, __u64 cost, __u32 starts)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), key = target;
	struct pcmon_ltails *lt = bpf_map_lookup_elem(&ltails, &key);
	__u32 *gen = bpf_map_lookup_elem(&tailgen, &key);
	struct pcmon_tailth *th = NULL;

	if (!lt || !gen)
		return 0;
	for (__u32 s = 0; s < PCMON_TAIL_LEGS && s < lt->n; s++) {
		struct pcmon_fkey fk = { tid, target, lt->l[s].from, lt->l[s].to };
		struct pcmon_flight *fl;

		if (fk.to != node && !(starts && fk.from == node))
			continue;
		if (!th && !(th = tail_thread(target, *gen)))
			return 0;
		fl = bpf_map_lookup_elem(&lflight, &fk);
		if (fk.to == node && fl)
			tail_slot_hit(th, s + 1, tid, pcmon_leg_net(now - fl->ts, cost - fl->cost), 0);
		if (starts && fk.from == node)
			tail_slot_hit(th, s + 1, tid, 0, 2);
	}
	return 0;
}

/* --track all: the legs in flight on thread @tid that end at @at (a node, or '*'), done. */
static __always_inline void end_legs(__u32 target, __u32 at, __u32 tid, __u64 now, __u64 hits,
				     __u64 cost, __u64 pre, __u64 steal)
{
	struct pcmon_lkey nk = { target, at, 0, 0 };
	struct pcmon_nlegs *nl = bpf_map_lookup_elem(&nlegs, &nk);

	if (!nl)
		return;
	for (__u32 i = 0; i < PCMON_NODE_LEGS && i < nl->nto; i++) {
		struct pcmon_fkey fk = { tid, target, nl->to_from[i], at };
		struct pcmon_flight *fl = bpf_map_lookup_elem(&lflight, &fk);
		struct pcmon_lkey k = { target, fk.from, at, 0 };
		struct pcmon_leg *l;

		if (!fl)
			continue;
		l = bpf_map_lookup_elem(&legs, &k);
		if (l)
			record(l, &k, now - fl->ts, hits - fl->hits, cost - fl->cost, pre - fl->pre,
			       steal - fl->steal);
		bpf_map_delete_elem(&lflight, &fk);
	}
}

/* --track all: the legs that start at @at (a node, or '*': every node) start on @tid. */
static __always_inline void start_legs(__u32 target, __u32 at, __u32 tid, __u64 now, __u64 hits,
				       __u64 cost, __u64 pre, __u64 steal)
{
	struct pcmon_lkey nk = { target, at, 0, 0 };
	struct pcmon_nlegs *nl = bpf_map_lookup_elem(&nlegs, &nk);

	if (!nl)
		return;
	for (__u32 i = 0; i < PCMON_NODE_LEGS && i < nl->nfrom; i++) {
		struct pcmon_fkey fk = { tid, target, at, nl->from_to[i] };
		struct pcmon_flight *fl = bpf_map_lookup_elem(&lflight, &fk);
		struct pcmon_flight v = { now, hits, cost, pre, steal };
		struct pcmon_lkey k = { target, at, fk.to, 0 };
		struct pcmon_leg *l;

		if (fl) {
			/* a second from before the to abandons the first; '*' starts again */
			if (at != PCMON_ANY_NODE && (l = bpf_map_lookup_elem(&legs, &k)))
				__sync_fetch_and_add(&l->abandoned, 1);
			*fl = v;
		} else if (bpf_map_update_elem(&lflight, &fk, &v, BPF_NOEXIST) &&
			   (l = bpf_map_lookup_elem(&legs, &k))) {
			__sync_fetch_and_add(&l->untracked, 1);
		}
	}
}

static __always_inline bool starts_a_leg(__u32 target, __u32 node)
{
	struct pcmon_lkey k = { target, node, 0, 0 };

	return bpf_map_lookup_elem(&lfrom, &k) != NULL;
}

enum { W_MATCH, W_OTHER, W_UNKNOWN };

/*
 * Does the stack of a hit of node @n match the target's pattern? Its frames are the open
 * activations of probed procedures above @sp (the hit's frame: an entry's own activation,
 * if the counter's entry probe ran first, is not one of its callers) and, innermost, the
 * node's procedure.
 */
static __always_inline int when_class(const struct pcmon_lcfg *lc, const struct pcmon_node *n,
				      struct task_struct *task, __u64 sp)
{
	struct pcmon_cstack *cs = task->bpf_storage ?
					  bpf_task_storage_get(&cstack, task, NULL, 0) : NULL;
	__u32 d = cs ? cs->depth : 0, s = 0;

	if (d > PCMON_COUNT_DEPTH)
		return W_UNKNOWN;
	for (int i = 0; cs && i < PCMON_COUNT_DEPTH; i++) {
		struct pcmon_cact *a;
		__u32 k = d - 1;

		if (!d)
			break;
		asm volatile("" : "+r"(k));
		a = &cs->a[k & (PCMON_COUNT_DEPTH - 1)];
		if (a->sp > sp) {
			s = a->wstate;
			break;
		}
		d--;
	}
	return pcmon_when_test(&lc->wpat, s, &n->adv) ? W_MATCH : W_OTHER;
}

static __always_inline int hit(__u64 cookie, __u64 arg_value[6], __u64 ret, bool is_ret, __u64 sp,
			       __u64 ip)
{
	__u32 target = PCMON_NODE_TARGET(cookie), node = PCMON_NODE_ID(cookie), zero_t = target;
	__u64 now = bpf_ktime_get_ns();
	struct pcmon_lthread *th;
	struct pcmon_lcfg *lc;
	struct pcmon_node *n;
	__u64 hits, cost, pre, steal;
	struct vclock *vc;
	int w = W_MATCH;

	if (!in_target(target, bpf_get_current_pid_tgid() >> 32))
		return 0;
	n = bpf_map_lookup_elem(&nodes, &cookie);
	lc = bpf_map_lookup_elem(&lcfg, &zero_t);
	if (!n || !lc)
		return 0;
	/* WHEN: a hit whose stack does not match is counted apart, starts no leg and records
	 * nothing; it still ends the legs in flight to it, and costs what it costs */
	if (lc->when)
		w = when_class(lc, n, bpf_get_current_task_btf(), sp);
	if (w == W_OTHER)
		__sync_fetch_and_add(&n->other, 1);
	else if (w == W_UNKNOWN)
		__sync_fetch_and_add(&n->unknown, 1);
	else
		__sync_fetch_and_add(&n->hits, 1);
	if (n->arg && w == W_MATCH) {
		struct pcmon_hkey hk = { target, 0, 0, node };
		struct pcmon_hcfg *c = bpf_map_lookup_elem(&hcfgs, &hk);
		__u32 a = n->arg - 1;
		__u64 v = 0;

		if (is_ret)
			v = ret; /* at a %return node, the recorded value is what it returns */
		else if (a < 6)
			v = arg_value[a];
		if (c)
			hist_add(c, &n->h, v);
	}
	th = bpf_task_storage_get(&lthread, bpf_get_current_task_btf(), NULL,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!th)
		return 0;
	if (th->target != target) { /* (a thread's process went to another target) */
		th->target = target;
		th->node = 0;
	}
	/* the thread's probe cost at this hit's clock reading: part of the hit's own before it,
	 * and the time it was preempted at its probes (at an entry or a USDT node, the
	 * scheduler hook looks for it at @ip; at a return, in the page it returns through) */
	pcmon_thread_hit(th, n->cost_ns, n->pre_ns, &hits, &cost);
	vc = vclock_at_probe((__u32)bpf_get_current_pid_tgid(), ip, target);
	pre = vc ? vc->pre_ns : 0;
	steal = vc ? vclock_steal(vc) : 0;
	if (vc) { /* what the next update counts may be before this hit or after */
		vc->probed = 1;
		vc->leg_hit = 1;
	}
	cost += pre;
	if (lc->track == PCMON_TRACK_ALL) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		/* tailed legs first: they read the legs in flight as they were before the hit */
		if (lc->ntailed)
			tail_hit(target, node, now, cost, w == W_MATCH);
		end_legs(target, node, tid, now, hits, cost, pre, steal);
		end_legs(target, PCMON_ANY_NODE, tid, now, hits, cost, pre, steal);
		if (w == W_MATCH) {
			start_legs(target, node, tid, now, hits, cost, pre, steal);
			start_legs(target, PCMON_ANY_NODE, tid, now, hits, cost, pre, steal);
		}
	}
	/* the leg from the thread's last node: successor's legs, and those --add made */
	if (th->node && (lc->track == PCMON_TRACK_SUCCESSOR || lc->add)) {
		struct pcmon_lkey k;
		struct pcmon_leg *l = leg_of(target, th->node, node, &k);

		if (!l && lc->add) {
			k = (struct pcmon_lkey){ target, th->node, node, 0 };
			bpf_map_update_elem(&legs, &k, &fresh_leg, BPF_NOEXIST);
			l = bpf_map_lookup_elem(&legs, &k);
		}
		/* under --track all, a leg of the table is tracked on its own (above) */
		if (l && (lc->track == PCMON_TRACK_SUCCESSOR || !l->id)) {
			record(l, &k, now - th->ts, hits - th->hits_at, cost - th->cost_at,
			       pre - th->pre_at, steal - th->steal_at);
			if (lc->track == PCMON_TRACK_SUCCESSOR)
				th->node = 0; /* done: the next leg starts at a from again */
		} else if (lc->track == PCMON_TRACK_SUCCESSOR && w == W_MATCH &&
			   (th->node == node || starts_a_leg(target, node))) {
			abandon(target, th->node); /* a second from before the to */
		}
	}
	if (w != W_MATCH)
		return 0;
	if (lc->add || (lc->track == PCMON_TRACK_SUCCESSOR && starts_a_leg(target, node))) {
		th->node = node;
		th->ts = now;
		th->hits_at = hits;
		th->cost_at = cost;
		th->pre_at = pre;
		th->steal_at = steal;
	}
	return 0;
}

SEC("uprobe")
int node_hit(struct pt_regs *ctx)
{
	__u64 args[6] = { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
			  PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), ctx->r9 };

	return hit(bpf_get_attach_cookie(ctx), args, 0, false, PT_REGS_SP(ctx), PT_REGS_IP(ctx));
}

SEC("uretprobe")
int node_return(struct pt_regs *ctx)
{
	__u64 args[6] = {};

	/* the activation's frame: where its return address was */
	return hit(bpf_get_attach_cookie(ctx), args, PT_REGS_RC(ctx), true, PT_REGS_SP(ctx) - 8, 0);
}

SEC("usdt")
int node_usdt(struct pt_regs *ctx)
{
	__u64 args[6] = {};
	long v;

	for (int i = 0; i < 6; i++)
		if (!bpf_usdt_arg(ctx, i, &v))
			args[i] = v;
	return hit(bpf_usdt_cookie(ctx), args, 0, false, PT_REGS_SP(ctx), PT_REGS_IP(ctx));
}

/* A thread that exits abandons the legs it had in flight. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(legs_exit, struct task_struct *p)
{
	struct pcmon_tailth *tt;
	struct pcmon_lthread *th;
	struct pcmon_tlegs *tl;
	struct pcmon_lcfg *lc;
	__u32 target;

	if (!p->bpf_storage)
		return 0;
	tt = bpf_task_storage_get(&tailth, p, NULL, 0);
	if (tt) { /* its tailed instances, abandoned (unless stale) */
		__u32 key = tt->target, *gen = bpf_map_lookup_elem(&tailgen, &key);

		for (int i = 0; gen && *gen == tt->gen && i < PCMON_TAIL_LEGS; i++)
			if (tt->inst[i])
				tail_emit(PCMON_TAIL_ABANDON, tt->target, p->pid, tt->set, i + 1, 0,
					  NULL, tt->inst[i]);
		bpf_task_storage_delete(&tailth, p);
	}
	th = bpf_task_storage_get(&lthread, p, NULL, 0);
	if (!th)
		return 0;
	target = th->target;
	lc = bpf_map_lookup_elem(&lcfg, &target);
	if (th->node && lc && lc->track == PCMON_TRACK_SUCCESSOR)
		abandon(target, th->node);
	tl = bpf_map_lookup_elem(&tlegs, &target);
	for (__u32 i = 0; tl && i < PCMON_TARGET_LEGS && i < tl->n; i++) {
		struct pcmon_fkey fk = { p->pid, target, tl->l[i].from, tl->l[i].to };
		struct pcmon_lkey k = { target, fk.from, fk.to, 0 };
		struct pcmon_leg *l;

		if (!bpf_map_lookup_elem(&lflight, &fk))
			continue;
		bpf_map_delete_elem(&lflight, &fk);
		if (fk.from != PCMON_ANY_NODE && (l = bpf_map_lookup_elem(&legs, &k)))
			__sync_fetch_and_add(&l->abandoned, 1);
	}
	bpf_task_storage_delete(&lthread, p);
	/* its clock, unless the counter still closes its activations by it (count_exit) */
	if (!bpf_task_storage_get(&cstack, p, NULL, 0)) {
		__u32 tid = p->pid;

		bpf_map_delete_elem(&vclocks, &tid);
	}
	return 0;
}
