/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The process-lifecycle side every instrument's BPF programs share: which process belongs to
 * which target (procs, cgroup_target, pglobal), each target's settings (tcfg) and drop
 * counters (tstat), global counters (gstat) and the events after which probes may be pending
 * (probe_events). Each .bpf.c that includes this defines these maps; the engine creates them
 * once, in bpf/procs.bpf.c's object, and hands their descriptors to the others before they
 * load (bpf_map__reuse_fd, daemon/core/procs.c), so every program sees the same maps.
 */
#ifndef PCMON_PROCS_BPF_H
#define PCMON_PROCS_BPF_H

#include "pcmon_procs.h"
#include "pcmon_tail.h"

#ifndef READ_ONCE
#define READ_ONCE(x) (*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
#endif

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32); /* tgid */
	__type(value, struct pcmon_proc);
} procs SEC(".maps");

/*
 * Bumped after every change to procs, by BPF and by the engine (mapped, daemon/core/procs.c): a
 * copy of a process's entry taken when it read n is good while it still reads n (the REAL
 * switch program keeps one per thread, to spare the hash lookup on every switch).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} procs_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u64); /* cgroup v2 id */
	__type(value, __u32);
} cgroup_target SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_tcfg);
} tcfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct pcmon_tstat);
} tstat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcmon_gstat);
} gstat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pcmon_pglobal);
} pglobal SEC(".maps");

/* Each thread's open instances of tailed legs (pcmon_tail.h): the legs counter writes it,
 * the sampler reads the set's id into each sample's key. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_tailth);
} tailth SEC(".maps");

/* Bumped by the engine as a target's tails start and stop (procs_tail_gen()): a thread's
 * tailth of an earlier generation (a target stopped with an instance open, its number
 * taken again) is stale. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PCMON_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} tailgen SEC(".maps");

/* Lifecycle events for the engine (struct pcmon_event): fork, exec, exit, first sample. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/*
 * Events after which a process's critical-section probes may be pending (exec, dynamic
 * linker, the fork of a process with probes pending): read by the engine's probe thread
 * (daemon/instruments/probes.c), which attaches them without waiting for the symbolizer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024); /* 4096 events: every process of an --all target at once */
} probe_events SEC(".maps");

/*
 * Objects whose critical-section probes are in place: the engine's probe thread has looked
 * into the file and attached what it carries, if anything (the probes are the file's: they
 * fire in every process that maps it). Keyed by the file's identity as the kernel sees it
 * (device and inode), with its change time, which a new file on a reused inode number does
 * not share. An exec or a dynamic-linker event whose process maps only such files for
 * execution has nothing to wait for: no event, nothing pending (procs.bpf.c). LRU: a file
 * pushed out is looked at once more.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct pcmon_file_key);
	__type(value, __u64); /* the inode's change time, ns */
} probe_files SEC(".maps");

static __always_inline struct pcmon_gstat *gstats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&gstat, &zero);
}

static __always_inline void emit(void *ring, __u32 type, __u32 target, __u32 pid, __u32 ppid,
				 __u32 epoch, __u32 exit_code, __u32 probe_seq, bool now)
{
	struct pcmon_event *e = bpf_ringbuf_reserve(ring, sizeof(*e), 0);

	if (!e) {
		struct pcmon_gstat *gs = gstats();

		if (gs)
			gs->events_lost++;
		return;
	}
	e->type = type;
	e->target = target;
	e->pid = pid;
	e->ppid = ppid;
	e->epoch = epoch;
	e->exit_code = exit_code;
	e->probe_seq = probe_seq;
	e->pad = 0;
	e->ts = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	/*
	 * @now: someone must act on it at once (attach probes, read an address map while the
	 * process is there). The others wait for the next of those, the engine's timer or a ring
	 * half full: a build forks hundreds of processes a second, and waking the engine for each
	 * fork and exit cost more than everything it did with them.
	 */
	bpf_ringbuf_submit(e, now || bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >
					     bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 2 ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
}

/* Whether target @target's instruments act on exec and dlopen at once (PCMON_TF_PROMPT). */
static __always_inline bool prompt_events(__u32 target)
{
	struct pcmon_tcfg *cfg = bpf_map_lookup_elem(&tcfg, &target);

	return cfg && (cfg->flags & PCMON_TF_PROMPT);
}

static __always_inline __u64 *procs_gen_ptr(void)
{
	return bpf_map_lookup_elem(&procs_gen, &(__u32){ 0 });
}

/* Read before reading procs; bumped after writing it. */
static __always_inline __u64 procs_gen_now(void)
{
	__u64 *g = procs_gen_ptr();

	return g ? READ_ONCE(*g) : 0;
}

static __always_inline void procs_changed(void)
{
	__u64 *g = procs_gen_ptr();

	if (g)
		__sync_fetch_and_add(g, 1);
}

/*
 * The target a process belongs to, joining --cgroup and --all targets on first sight. A
 * process that joins so was running before anyone looked for its probes: they are pending.
 */
static __always_inline struct pcmon_proc *proc_of(__u32 tgid)
{
	struct pcmon_proc *p, np = {};
	struct pcmon_pglobal *pg;
	__u32 zero = 0;

	p = bpf_map_lookup_elem(&procs, &tgid);
	if (p || !tgid)
		return p;
	pg = bpf_map_lookup_elem(&pglobal, &zero);
	if (!pg)
		return NULL;
	if (pg->cgroup_targets) {
		__u64 cg = bpf_get_current_cgroup_id();
		__u32 *t = bpf_map_lookup_elem(&cgroup_target, &cg);

		if (t)
			np.target = *t;
	}
	if (!np.target)
		np.target = pg->all_target;
	if (!np.target)
		return NULL;
	np.flags = PCMON_PF_IMPLICIT;
	/* first seen after its exit (its address space being torn down): gone when freed */
	if (BPF_CORE_READ(bpf_get_current_task_btf(), signal, live.counter) == 0)
		np.flags |= PCMON_PF_EXITED;
	np.probe_seq = 1;
	if (!bpf_map_update_elem(&procs, &tgid, &np, BPF_NOEXIST)) {
		procs_changed();
		emit(&probe_events, PCMON_EV_JOIN, np.target, tgid, 0, 0, 0, 1, true);
	}
	return bpf_map_lookup_elem(&procs, &tgid);
}

/*
 * @tgid (its entry @p) is being sampled: the first time in its image, the engine is told, so
 * that it reads the address map while the process is there (a plain store: two CPUs that
 * both see the flag clear send the event twice, which the engine takes as once).
 */
static __always_inline void note_sampled(struct pcmon_proc *p, __u32 tgid)
{
	if (p->flags & PCMON_PF_SAMPLED)
		return;
	p->flags |= PCMON_PF_SAMPLED;
	emit(&events, PCMON_EV_SAMPLED, p->target, tgid, 0, p->epoch, 0, 0, true);
}

/*
 * One more event that may bring probes; returns the number the event carries. (A value read
 * after the add may include another thread's add too: that thread had mapped its objects
 * before its add, so the engine still looks after they are there.)
 */
static __always_inline __u32 probe_event(struct pcmon_proc *p)
{
	__u32 seq;

	__sync_fetch_and_add(&p->probe_seq, 1);
	seq = READ_ONCE(p->probe_seq);
	procs_changed();
	return seq;
}

/* Has the engine attached the probes of everything this process loaded? (struct pcmon_proc) */
static __always_inline __u8 marks_pending(const struct pcmon_proc *p)
{
	return READ_ONCE(p->probe_seq) != READ_ONCE(p->probe_ack) ? PCMON_KF_MARKS_PENDING : 0;
}

static __always_inline struct pcmon_tcfg *active_cfg(__u32 target)
{
	struct pcmon_tcfg *cfg = bpf_map_lookup_elem(&tcfg, &target);

	if (!cfg || !(cfg->flags & PCMON_TF_ACTIVE))
		return NULL;
	return cfg;
}

#define MMF_DUMPABLE_MASK 3
#define SUID_DUMP_USER 1

/*
 * May a target owned by @owner watch @task? The rule ptrace and /proc apply: root may; a user
 * only while the task's real, effective and saved uids are hers and its memory is still
 * "dumpable". The kernel clears that on a setuid, setgid or file-capability exec and on a
 * credential change, and programs clear it themselves (prctl) to keep their secrets: from
 * then on the process is not hers to look into, though she started it. Checked per sample,
 * not only at exec, since a process can change credentials at any time.
 */
static __always_inline bool may_watch(struct task_struct *task, const struct pcmon_tcfg *cfg,
				      __u32 target)
{
	const struct cred *c;
	__u64 mmflags = 0;
	struct pcmon_tstat *ts;

	if (!cfg->owner)
		return true;
	/* the credentials through typed pointers (no helper call; an __rcu pointer the verifier
	 * may take for NULL, so checked) */
	c = task->real_cred;
	/* mm->flags is a word, or (6.18) a bitmap whose first word holds the same bits */
	bpf_core_read(&mmflags, sizeof(mmflags), &task->mm->flags);
	if (c && c->uid.val == cfg->owner && c->euid.val == cfg->owner &&
	    c->suid.val == cfg->owner && (mmflags & MMF_DUMPABLE_MASK) == SUID_DUMP_USER)
		return true;
	ts = bpf_map_lookup_elem(&tstat, &target);
	if (ts)
		__sync_fetch_and_add(&ts->denied, 1);
	return false;
}

/*
 * Is a process one of target @target's, being watched, and still its owner's to look into?
 * What every instrument's probe asks before it records anything. @p: its entry (maybe
 * NULL), @task running.
 */
static __always_inline struct pcmon_proc *proc_watched(struct pcmon_proc *p, __u32 target,
						       struct task_struct *task)
{
	struct pcmon_tcfg *cfg;

	if (!p || p->target != target || (p->flags & PCMON_PF_EXEC_WAIT))
		return NULL;
	cfg = active_cfg(target);
	return cfg && may_watch(task, cfg, target) ? p : NULL;
}

/* (process @tgid, as the process map has it) */
static __always_inline struct pcmon_proc *proc_in_target(__u32 target, __u32 tgid,
							 struct task_struct *task)
{
	return proc_watched(bpf_map_lookup_elem(&procs, &tgid), target, task);
}

/* Is @tgid target @target's? (A --cgroup or --all target's process joins it here if nothing
 * of its target saw it yet: a probe node may be the first.) */
static __always_inline bool in_target(__u32 target, __u32 tgid)
{
	return proc_watched(proc_of(tgid), target, bpf_get_current_task_btf()) != NULL;
}

#endif /* PCMON_PROCS_BPF_H */
