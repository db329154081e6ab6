/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Each probed thread's clock (bpf/count.bpf.c keeps it in its scheduler hook), declared
 * once for the two objects that use it: the call counter, and the legs, which take a
 * thread's time preempted at their probes off a leg as the counter does off a call.
 */
#ifndef PCMON_VCLOCK_BPF_H
#define PCMON_VCLOCK_BPF_H

/*
 * Each probed thread's time off CPU (VIRTUAL: its clock stops) and preempted at a probe
 * (REAL: that wall time is taken out with the probes' cost), by thread id. A hash map, not
 * task storage: the scheduler hook must never miss a switch, and a task-storage lookup can
 * fail there while another BPF program holds task storage on that CPU.
 *
 * Should a switch in be missed all the same (it happens, rarely, on a loaded machine: the
 * thread is found running, or switched out again, with its clock still stopped), the time
 * it ran since it was switched out is known from the kernel's own count of it
 * (se.sum_exec_runtime: exact at a switch out, behind by at most a tick at a probe), and
 * only the rest of that gap is taken as off CPU. Such repairs are counted by target
 * (clock_repairs), and the listing says so.
 */
struct vclock {
	__u64 off_ns;		/* time off CPU so far */
	__u64 off_since;	/* switched out at, 0: on CPU */
	__u64 ran_at_out;	/* the kernel's CPU time of the thread when switched out */
	__u64 steal_ns;		/* time stolen by the hypervisor while it ran, so far */
	__u64 steal_in;		/* its CPU's stolen time when it came on (steal_now()) */
	/* time preempted at a probe so far: switched out runnable with its user registers at
	 * the probed instruction of the last entry (emulated: just past it) or in the page the
	 * kernel steps instructions out of line in; wall time the probe's, not the code's */
	__u64 pre_ns;
	__u64 pre_since;	/* preempted there at, 0: not */
	__u64 entry_ip;		/* the last entry probe's address (+1: past its breakpoint) */
	__u32 target;		/* of its last entry */
	/*
	 * The scheduler counts steal when it next updates its clock (a tick, a switch), so
	 * what it counts at an update was stolen at some point since the update before. Where
	 * a probe read the clock in between, that time cannot be placed on either side of the
	 * probe (count.bpf.c, steal_look()): it goes into the error of the calls on both.
	 */
	__u64 steal_look;	/* vclock_steal() when last looked at */
	__u32 upd_gen;		/* the updates seen so far */
	__u32 probed;		/* a probe read the clock since the last */
	__u32 leg_hit;		/* ... a node's (legs.bpf.c): unplaced, it is the target's */
	__u32 dead;		/* exited: gone at its last switch out, with what it counted */
	__u32 in_probe;		/* a probe of the counter is between its clock reading and its
				 * end: an update then may fall between the two (count.bpf.c) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);	/* tid */
	__type(value, struct vclock);
} vclocks SEC(".maps");

/*
 * The time the hypervisor has taken from this CPU so far, as the scheduler last counted it
 * (the kernel's CPU time of a thread leaves it out, and so does its VIRTUAL clock here):
 * current at a switch, behind by what was stolen since the last tick at a probe. 0 where
 * the kernel does not count it. The CPU's run queue is found through the running task's
 * (the kernel keeps no symbol for per-CPU data unless built with all of them).
 */
static __always_inline __u64 steal_now(void)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct rq *rq = NULL;

	if (!bpf_core_field_exists(rq->prev_steal_time_rq) ||
	    !bpf_core_field_exists(cur->se.cfs_rq->rq))
		return 0;
	/* loads through the task's typed pointer, which the JIT makes fault-safe, not
	 * bpf_probe_read_kernel(): three helper calls at every probe, twice in some, cost
	 * call counting 460 ns a call of callheavy (1,160 ns before steal was read, 1,620 after) */
	rq = cur->se.cfs_rq->rq;
	return rq ? rq->prev_steal_time_rq : 0;
}

/* The time stolen from the thread of @v, running here, while it ran so far. */
static __always_inline __u64 vclock_steal(const struct vclock *v)
{
	return v->steal_ns + (v->steal_in ? steal_now() - v->steal_in : 0);
}

/*
 * A probe of thread @tid (running here) at @ip (0: a return probe), for target @target:
 * kept for the scheduler hook, which tells a preemption at it; the thread's clock made on
 * its first. Its clock (NULL: the map is full).
 */
static __always_inline struct vclock *vclock_at_probe(__u32 tid, __u64 ip, __u32 target)
{
	struct vclock zero = {}, *v;

	v = bpf_map_lookup_elem(&vclocks, &tid);
	if (v && v->dead) { /* an exited thread's, its last switch unseen: the id is reused */
		bpf_map_delete_elem(&vclocks, &tid);
		v = NULL;
	}
	if (!v) {
		zero.steal_in = steal_now(); /* it runs here now */
		bpf_map_update_elem(&vclocks, &tid, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&vclocks, &tid);
	}
	if (!v)
		return NULL;
	if (ip)
		v->entry_ip = ip;
	v->target = target;
	return v;
}

#endif /* PCMON_VCLOCK_BPF_H */
