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

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __ksym;

#define VM_EXEC 0x00000004

/* Until 6.11 an inode's change time was one struct timespec64 (6.6: __i_ctime, before: i_ctime). */
struct inode___6_6 {
	struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));
struct inode___6_5 {
	struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

/* Since 6.13 the top bit of i_ctime_nsec says whether the time was read (multigrain times). */
#define CTIME_NSEC_MASK ((1u << 30) - 1)

static __always_inline __u64 inode_ctime_ns(struct inode *ino)
{
	if (bpf_core_field_exists(ino->i_ctime_sec))
		return BPF_CORE_READ(ino, i_ctime_sec) * 1000000000ULL +
		       (BPF_CORE_READ(ino, i_ctime_nsec) & CTIME_NSEC_MASK);
	if (bpf_core_field_exists(((struct inode___6_6 *)ino)->__i_ctime))
		return BPF_CORE_READ((struct inode___6_6 *)ino, __i_ctime.tv_sec) * 1000000000ULL +
		       BPF_CORE_READ((struct inode___6_6 *)ino, __i_ctime.tv_nsec);
	return BPF_CORE_READ((struct inode___6_5 *)ino, i_ctime.tv_sec) * 1000000000ULL +
	       BPF_CORE_READ((struct inode___6_5 *)ino, i_ctime.tv_nsec);
}

/*
 * Does the current process map for execution only files whose probes are in place
 * (probe_files)? Then an exec or a dynamic-linker event brings it nothing to attach. A
 * build execs hundreds of processes a second, all of the same few dozen files: the probe
 * thread looks at each file once, not at each process. false when the map cannot be walked
 * now (its lock is taken): the event goes to the probe thread as before.
 */
static bool objects_known(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	bool known = bpf_iter_task_vma_new(&it, task, 0) == 0;

	while (known && (vma = bpf_iter_task_vma_next(&it))) {
		struct pcmon_file_key k;
		struct inode *ino;
		__u64 *ctime;

		if (!(BPF_CORE_READ(vma, vm_flags) & VM_EXEC) || !BPF_CORE_READ(vma, vm_file))
			continue;
		ino = BPF_CORE_READ(vma, vm_file, f_inode);
		k.dev = BPF_CORE_READ(ino, i_sb, s_dev);
		k.ino = BPF_CORE_READ(ino, i_ino);
		ctime = bpf_map_lookup_elem(&probe_files, &k);
		known = ctime && *ctime == inode_ctime_ns(ino);
	}
	bpf_iter_task_vma_destroy(&it);
	return known;
}

/* Does an exec or a dynamic-linker event bring files the probe thread must look into? */
static __always_inline bool objects_new(void)
{
	struct pcmon_gstat *gs = gstats();
	bool known = objects_known();

	if (gs) {
		if (known)
			gs->probe_events_spared++;
		else
			gs->probe_events++;
	}
	return !known;
}

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
	__u32 seq = 0;
	bool prompt;

	if (!p)
		return 0;
	if (objects_new()) {
		seq = probe_event(p);
		emit(&probe_events, PCMON_EV_DLOPEN, p->target, id >> 32, 0, p->epoch, 0, seq, true);
	}
	/* the symbolizer reads the map again only of a process it has (sampled); count attaches
	 * its probes to what was loaded (a prompt target) */
	prompt = prompt_events(p->target);
	if (prompt || (p->flags & PCMON_PF_SAMPLED))
		emit(&events, PCMON_EV_DLOPEN, p->target, id >> 32, 0, p->epoch, 0, seq, prompt);
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
		emit(&probe_events, PCMON_EV_FORK, np.target, ctgid, ptgid, 0, p->epoch, np.probe_seq,
		     true);
	/* (in the exit code's place: the parent's epoch) */
	emit(&events, PCMON_EV_FORK, np.target, ctgid, ptgid, 0, p->epoch, np.probe_seq,
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
	/* a new image: its probes are attached when the engine's probe thread has seen this,
	 * unless every file it maps is known already */
	if (objects_new()) {
		seq = probe_event(pr); /* procs_changed() */
		emit(&probe_events, PCMON_EV_EXEC, pr->target, tgid, 0, pr->epoch, 0, seq, true);
	} else {
		seq = READ_ONCE(pr->probe_seq);
		procs_changed(); /* (the epoch and flags) */
	}
	emit(&events, PCMON_EV_EXEC, pr->target, tgid, 0, pr->epoch, 0, seq,
	     prompt_events(pr->target));
	return 0;
}

/* The last exits of processes in targets: an image's entry is replaced when it is needed. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 2048);
	__type(key, struct pcmon_exit_key);
	__type(value, struct pcmon_exit_maps);
} exit_maps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcmon_exit_maps);
} exit_scratch SEC(".maps");

/*
 * Note what @task maps for execution from files, as its image @epoch of process @tgid exits
 * (struct pcmon_exit_maps). A walk of all its mappings: some 15 us for a compiler's hundred.
 */
static void note_exit_maps(struct task_struct *task, __u32 tgid, __u32 epoch)
{
	struct pcmon_exit_key k = { .tgid = tgid, .epoch = epoch };
	struct pcmon_exit_maps *m = bpf_map_lookup_elem(&exit_scratch, &(__u32){ 0 });
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;

	if (!m)
		return;
	m->n = 0;
	m->more = 0;
	if (bpf_iter_task_vma_new(&it, task, 0) == 0) {
		while ((vma = bpf_iter_task_vma_next(&it))) {
			struct pcmon_exit_vma *v;
			struct inode *ino;
			__u32 i = m->n;

			/* (the iterator's vma is trusted: plain loads, no helper calls) */
			if (!(vma->vm_flags & VM_EXEC) || !vma->vm_file)
				continue;
			if (i >= PCMON_EXIT_VMAS) {
				m->more = 1;
				break;
			}
			v = &m->v[i];
			ino = vma->vm_file->f_inode;
			v->start = vma->vm_start;
			v->end = vma->vm_end;
			v->pgoff = vma->vm_pgoff << 12; /* (pages of 4 KiB: x86-64, vmlinux/x86) */
			v->ino = ino->i_ino;
			v->dev = ino->i_sb->s_dev;
			v->pad = 0;
			m->n = i + 1;
		}
	}
	bpf_iter_task_vma_destroy(&it);
	if (m->n)
		bpf_map_update_elem(&exit_maps, &k, m, BPF_ANY);
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
	/*
	 * A sampled image's map may not have been read yet (the engine reads it a fraction of a
	 * millisecond after the first sample), or not all of it. An image not sampled yet can
	 * be sampled only from now on, with no user stack left to read: unwalkable anyway.
	 */
	if (pr->flags & PCMON_PF_SAMPLED)
		note_exit_maps(p, tgid, pr->epoch);
	emit(&events, PCMON_EV_EXIT, pr->target, tgid, 0, pr->epoch, BPF_CORE_READ(p, exit_code), 0,
	     false);
	/*
	 * Not deleted yet: exit_mm() comes next, and tearing down a compiler's address space
	 * takes milliseconds that are sampled. Deleted now, the entry would come back for those
	 * samples as a new image (--all, --cgroup) that no one can read the map of any more.
	 */
	pr->flags |= PCMON_PF_EXITED; /* no other thread is left to sample and flag it */
	procs_changed();
	return 0;
}

/* The process is gone for good when its leader is freed (after every thread is reaped). */
SEC("tp_btf/sched_process_free")
int BPF_PROG(on_free, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct pcmon_proc *pr;

	/* (a leader replaced by an exec in another thread has that thread's pid by now) */
	if (BPF_CORE_READ(p, pid) != tgid)
		return 0;
	pr = bpf_map_lookup_elem(&procs, &tgid);
	if (!pr || !(READ_ONCE(pr->flags) & PCMON_PF_EXITED))
		return 0;
	bpf_map_delete_elem(&procs, &tgid);
	procs_changed();
	return 0;
}
