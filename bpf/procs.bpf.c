// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon's process lifecycle, shared by every instrument: processes join their target's set
 * when forked from one of its processes (--pid with children), leave it when they exit, and
 * a new image (exec) or a dynamic-linker event is announced so that the engine can read the
 * process's maps and attach the probes its objects carry. The maps are in procs.bpf.h.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "procs.bpf.h"

char LICENSE[] SEC("license") = "GPL";



/*
 * The dynamic linker calls _dl_debug_state() (the debugger's breakpoint, r_brk) whenever the
 * set of loaded objects changes: at start-up and around each dlopen/dlclose — after mapping
 * a new object and before running any of its code. New objects may carry probes: until the
 * engine has attached them, the process's samples are flagged (marks_pending()).
 */
SEC("uprobe")
int on_dl_debug_state(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &(__u32){ id >> 32 });

	if (p) {
		__u32 seq = probe_event(p);

		emit(&probe_events, PCMON_EV_DLOPEN, p->target, id >> 32, 0, p->epoch, 0, seq, true);
		emit(&events, PCMON_EV_DLOPEN, p->target, id >> 32, 0, p->epoch, 0, seq,
		     prompt_events(p->target));
	}
	return 0;
}

/*
 * The engine's acknowledgement: the probes of everything up to event @seq are attached. A
 * program, so that the engine's write touches that one field in place: a map update from
 * user space would rewrite the whole entry under BPF's own in-place updates.
 */
SEC("syscall")
int probes_ack(struct pcmon_probes_ack *a)
{
	__u32 tgid = a->tgid, seq = a->seq;
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &tgid);

	/* events are handled in order; a late acknowledgement never goes back */
	if (p && (__s32)(seq - READ_ONCE(p->probe_ack)) > 0) {
		WRITE_ONCE(p->probe_ack, seq);
		procs_changed();
	}
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	struct pcmon_proc *p, np = {};
	struct pcmon_tcfg *cfg;

	if (ptgid == ctgid)
		return 0; /* a new thread: already covered by its tgid */
	p = bpf_map_lookup_elem(&procs, &ptgid);
	if (!p)
		return 0;
	cfg = bpf_map_lookup_elem(&tcfg, &p->target);
	if (!cfg || !(cfg->flags & PCMON_TF_CHILDREN))
		return 0;
	np.target = p->target;
	np.flags = p->flags & PCMON_PF_IMPLICIT;
	/* the child has the parent's objects: probes the engine has not attached yet in the
	 * parent's are missing in the child's too, until the engine has seen the fork */
	np.probe_seq = marks_pending(p) ? 1 : 0;
	if (bpf_map_update_elem(&procs, &ctgid, &np, BPF_ANY)) {
		struct pcmon_gstat *gs = gstats();

		if (gs)
			gs->procs_full++;
		return 0;
	}
	procs_changed();
	if (np.probe_seq)
		emit(&probe_events, PCMON_EV_FORK, np.target, ctgid, ptgid, 0, 0, np.probe_seq, true);
	emit(&events, PCMON_EV_FORK, np.target, ctgid, ptgid, 0, 0, np.probe_seq,
	     cfg->flags & PCMON_TF_PROMPT);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), seq;
	struct pcmon_proc *pr = bpf_map_lookup_elem(&procs, &tgid);

	if (!pr)
		return 0;
	pr->epoch++;
	pr->flags &= ~(PCMON_PF_EXEC_WAIT | PCMON_PF_SAMPLED);
	/* a new image: its probes are attached when the engine's probe thread has seen this */
	seq = probe_event(pr); /* procs_changed() */
	emit(&probe_events, PCMON_EV_EXEC, pr->target, tgid, 0, pr->epoch, 0, seq, true);
	emit(&events, PCMON_EV_EXEC, pr->target, tgid, 0, pr->epoch, 0, seq,
	     prompt_events(pr->target));
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct pcmon_proc *pr;

	/* signal->live drops to zero in do_exit() before this tracepoint, for the last thread */
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	pr = bpf_map_lookup_elem(&procs, &tgid);
	if (!pr)
		return 0;
	emit(&events, PCMON_EV_EXIT, pr->target, tgid, 0, pr->epoch, BPF_CORE_READ(p, exit_code), 0,
	     false);
	bpf_map_delete_elem(&procs, &tgid);
	procs_changed();
	return 0;
}
