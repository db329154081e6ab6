// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument's kernel side: timer samples (cpu-clock perf events) and off-CPU
 * intervals (sched_switch), charged to targets and aggregated in-kernel, and the marked
 * critical sections (USDT) they are taken in. Which target a task belongs to comes from the
 * shared process maps (procs.bpf.h, kept by procs.bpf.c).
 *
 * Counts are double-buffered: `gen` selects which of two counts maps the programs write. The
 * engine flips `gen`, waits for an RCU grace period (every program that could have read the
 * old value has then returned) and drains the idle map with nothing in flight, so no sample
 * is lost or counted twice.
 *
 * A counts key names its stacks by a 64-bit hash of their frames. The frames go to the
 * engine through a ring buffer, once per key and buffer: when a key is new to the map being
 * written, its stacks are sent tagged with that map's number, so by the time the engine
 * drains a map it has every stack the map's keys name, and forgets them after. A ring costs
 * neither a lock nor an allocation per stack, and carries only the frames a stack has; a
 * hash map of stacks cost both, once to store and once to delete, for every stack.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "pcmon_sample.h"
#include "procs.bpf.h"

char LICENSE[] SEC("license") = "GPL";

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
static __always_inline __u64 current_section(struct task_struct *task)
{
	struct pcmon_crit *c;
	__u32 d;

	if (!sections_on || !task->bpf_storage)
		return 0;
	c = bpf_task_storage_get(&crit, task, NULL, 0);
	if (!c || !c->depth)
		return 0;
	d = c->depth < PCMON_SECTION_NEST ? c->depth - 1 : PCMON_SECTION_NEST - 1;
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

/* ---- Python frames (docs/python.md, include/pcmon_python.h) */

/* CPython processes the engine found an interpreter in, by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct pcmon_pyproc);
} pyprocs SEC(".maps");

/* Each thread's PyThreadState, once found: the thread list is walked once per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_pythread);
} pythreads SEC(".maps");

/* Room to read a chain into for a dwarf record: [0] for samples, [1] for switches (a sample
 * may interrupt the switch program on the same CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct pcmon_stack);
} pyscratch SEC(".maps");

/* A thread without a state (a C thread of a Python process) is looked for again after this. */
#define PY_MISS_NS 20000000ull

/*
 * A read of the sampled process's memory: the current thread's (@remote false: through the
 * current address space) or another task's from a program that may sleep (@remote true: the
 * open-interval iterator). Constant at each call site, so a non-sleeping program never holds
 * the sleeping helper.
 */
static __always_inline long py_read(void *dst, __u32 size, __u64 addr, struct task_struct *task,
				    const bool remote)
{
	if (remote)
		return bpf_copy_from_user_task(dst, size, (void *)addr, task, 0);
	return bpf_probe_read_user(dst, size, (void *)addr);
}

struct py_find {
	struct task_struct *task;	/* whose memory (remote reads) */
	__u64 ts;	/* the thread state being looked at */
	__u64 found;
	__u32 want;	/* the kernel's tid */
	__u16 next, id;
};

static __always_inline long py_find_one(struct py_find *f, const bool remote)
{
	__u64 id = 0;

	if (!f->ts || py_read(&id, sizeof(id), f->ts + f->id, f->task, remote))
		return 1;
	if (id == f->want) {
		f->found = f->ts;
		return 1;
	}
	if (py_read(&f->ts, sizeof(f->ts), f->ts + f->next, f->task, remote))
		return 1;
	return 0;
}

static long py_find_step(__u32 i, void *data)
{
	return py_find_one(data, false);
}

static long py_find_step_task(__u32 i, void *data)
{
	return py_find_one(data, true);
}

/*
 * The thread's PyThreadState, 0 if it has none. Every thread of the interpreter is on its
 * list with the kernel's id of its thread (native_thread_id), whether it holds the GIL or
 * not: the list is walked the first time a thread is sampled, and what was found is kept in
 * the thread's storage @pt, checked at each sample against the id it holds (a state freed
 * and another made for the same thread is found again). A thread that has none is looked
 * for again only after PY_MISS_NS; one sampled before the interpreter was made (its list
 * empty) is looked for again at its next sample.
 */
static __always_inline __u64 py_tstate(struct pcmon_pythread *pt, __u32 tid,
				       const struct pcmon_pyproc *pp, struct task_struct *task,
				       const bool remote)
{
	struct py_find f = { .task = task, .want = tid, .next = pp->o.ts_next,
			     .id = pp->o.ts_native_id };
	__u64 interp = 0, id = 0, now;

	if (pt->runtime == pp->runtime && pt->epoch == pp->epoch) {
		if (pt->tstate &&
		    !py_read(&id, sizeof(id), pt->tstate + pp->o.ts_native_id, task, remote) &&
		    id == tid)
			return pt->tstate;
		if (!pt->tstate && bpf_ktime_get_ns() < pt->miss_until)
			return 0;
	}
	if (py_read(&interp, sizeof(interp), pp->runtime + pp->o.rt_interp_head, task, remote) ||
	    !interp ||
	    py_read(&f.ts, sizeof(f.ts), interp + pp->o.is_threads_head, task, remote) || !f.ts)
		return 0; /* no interpreter yet: nothing kept, looked for at the next sample */
	bpf_loop(PCMON_PY_THREADS_MAX, remote ? py_find_step_task : py_find_step, &f, 0);
	now = f.found ? 0 : bpf_ktime_get_ns();
	pt->tstate = f.found;
	pt->runtime = pp->runtime;
	pt->epoch = pp->epoch;
	pt->miss_until = now ? now + PY_MISS_NS : 0;
	return f.found;
}

struct py_walk {
	struct pcmon_stack *st;
	struct task_struct *task;	/* whose memory (remote reads) */
	__u64 frame;
	__u32 n, end;		/* next word of st to write, the first not to */
	__u32 first;		/* the first word of frames */
	__u32 status;
	__u16 lo, size, code, previous, prev_instr, is_entry, shim_owner, co_code;
};

/* A field of @size bytes at @off of a frame's window (the engine's offsets, bounded here). */
static __always_inline __u64 win_get(const __u8 *win, __u16 off, int size)
{
	__u64 v = 0;

	if (off > PCMON_PY_FRAME_WINDOW - size)
		return 0;
	if (size == 1)
		return win[off];
	bpf_probe_read_kernel(&v, sizeof(v), win + off);
	return v;
}

/* @i bounded for the verifier, whatever the compiler knows of it */
static __always_inline __u32 stack_slot(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & (PCMON_STACK_MAX - 1);
}

static __always_inline long py_step_one(struct py_walk *w, const bool remote)
{
	__u8 win[PCMON_PY_FRAME_WINDOW] = {};
	__u64 code, prev_instr, first, instr1, entry;
	long err;

	if (!w->frame)
		return 1;
	if (w->n >= w->end) {
		w->status = PCMON_PY_DEPTH;
		return 1;
	}
	/* no more than the frame's fields span: the last frame of a chunk may end a mapping */
	if (w->size <= PCMON_PY_FRAME_SHORT)
		err = py_read(win, PCMON_PY_FRAME_SHORT, w->frame + w->lo, w->task, remote);
	else
		err = py_read(win, PCMON_PY_FRAME_WINDOW, w->frame + w->lo, w->task, remote);
	if (err) {
		w->status = PCMON_PY_FAULT;
		return 1;
	}
	entry = win_get(win, w->is_entry, 1);
	if (w->shim_owner && entry >= w->shim_owner) {
		/* the shim an activation was entered through: the frame before it was its first */
		if (w->n > w->first)
			w->st->ip[stack_slot(w->n - 1)] |= PCMON_PY_ENTRY;
		w->frame = win_get(win, w->previous, 8);
		return 0;
	}
	if (w->shim_owner)
		entry = 0;
	/* (3.14's f_executable is a tagged reference: its low bits are not the address's) */
	code = win_get(win, w->code, 8) & ~7ULL;
	prev_instr = win_get(win, w->prev_instr, 8);
	if (!code || code > PCMON_PY_CODE_MASK) {
		w->status = PCMON_PY_FAULT; /* not a frame (any more) */
		return 1;
	}
	first = code + w->co_code;
	instr1 = prev_instr < first ? 0 : (prev_instr - first) / 2 + 1;
	w->st->ip[stack_slot(w->n)] = pcmon_py_word(code, entry != 0, instr1);
	w->n++;
	w->frame = win_get(win, w->previous, 8);
	return 0;
}

static long py_step(__u32 i, void *data)
{
	return py_step_one(data, false);
}

static long py_step_task(__u32 i, void *data)
{
	return py_step_one(data, true);
}

/* Append a marker saying @status and no frame to @st (room permitting). */
static __always_inline void py_mark(struct pcmon_stack *st, __u32 status)
{
	__u32 n = st->len;

	if (n >= PCMON_STACK_MAX - 1)
		return;
	st->ip[stack_slot(n)] = PCMON_PY_MARK | status;
	st->len = n + 1;
}

/*
 * Append thread @tid's Python frames to @st (its state found through @pt, its process's
 * interpreter @pp): a marker with how the walk ended, then the frames, innermost first.
 * Nothing is added for a thread whose Python code is not running (no frame); a thread with
 * no Python state gets a marker saying so (PCMON_PY_NOSTATE: the engine tells a C thread
 * from one running Python by its native frames).
 */
static __always_inline int py_walk(struct pcmon_stack *st, struct pcmon_pythread *pt,
				   const struct pcmon_pyproc *pp, __u32 tid, struct task_struct *task,
				   const bool remote)
{
	struct py_walk w;
	__u64 tstate, cframe = 0;
	__u32 n;

	if (!st || !pt || !pp)
		return 0;
	n = st->len;
	if (n >= PCMON_STACK_MAX - 1)
		return 0;
	tstate = py_tstate(pt, tid, pp, task, remote);
	if (!tstate) {
		py_mark(st, PCMON_PY_NOSTATE);
		return 0;
	}
	w = (struct py_walk){ .st = st, .task = task, .n = n + 1, .first = n + 1,
			      .lo = pp->o.fr_lo, .size = pp->o.fr_size, .code = pp->o.fr_code,
			      .previous = pp->o.fr_previous, .prev_instr = pp->o.fr_prev_instr,
			      .is_entry = pp->o.fr_is_entry, .shim_owner = pp->o.fr_shim_owner,
			      .co_code = pp->o.co_code };
	w.end = n + 1 + PCMON_PY_FRAMES_MAX;
	if (w.end > PCMON_STACK_MAX)
		w.end = PCMON_STACK_MAX;
	/* 3.11: the thread state's _PyCFrame holds the current frame; 3.13: the state itself */
	if (pp->o.ts_cframe == PCMON_PY_NO_CFRAME)
		cframe = tstate;
	else if (py_read(&cframe, sizeof(cframe), tstate + pp->o.ts_cframe, task, remote))
		cframe = 0;
	if (!cframe ||
	    py_read(&w.frame, sizeof(w.frame), cframe + pp->o.cf_current, task, remote)) {
		w.status = PCMON_PY_FAULT;
	} else if (!w.frame) {
		return 0; /* no Python code running: its native frames say it all */
	} else {
		bpf_loop(PCMON_PY_FRAMES_MAX + 1, remote ? py_step_task : py_step, &w, 0);
		if (w.frame && w.status == PCMON_PY_OK)
			w.status = PCMON_PY_DEPTH;
	}
	st->ip[stack_slot(n)] = PCMON_PY_MARK | w.status;
	st->len = w.n;
	return 0;
}

/* A function of its own, verified once for all the places that read a chain. */
__noinline int py_walk_frames(struct pcmon_stack *st, struct pcmon_pythread *pt,
			      const struct pcmon_pyproc *pp, __u32 tid)
{
	return py_walk(st, pt, pp, tid, NULL, false);
}

/* The same, for a thread off CPU read from the (sleepable) open-interval iterator. */
static __noinline int py_walk_frames_task(struct pcmon_stack *st, struct pcmon_pythread *pt,
					  const struct pcmon_pyproc *pp, __u32 tid,
					  struct task_struct *task)
{
	return py_walk(st, pt, pp, tid, task, true);
}

/*
 * The interpreter BPF reads @key's process with: NULL if its target does not read Python
 * frames or the engine found none in it (an entry with no runtime). A process the engine has
 * not looked at yet (its first milliseconds: PCMON_EV_SAMPLED is on its way) gets a marker
 * saying so, PCMON_PY_UNKNOWN, so that its samples are flagged rather than silently native.
 */
static __always_inline const struct pcmon_pyproc *py_proc(const struct pcmon_key *key,
							   struct pcmon_stack *st)
{
	struct pcmon_tcfg *cfg = active_cfg(key->target);
	struct pcmon_pyproc *pp;

	if (!cfg || !(cfg->flags & PCMON_TF_PYTHON))
		return NULL;
	pp = bpf_map_lookup_elem(&pyprocs, &key->pid);
	if (!pp || pp->epoch != key->epoch) {
		py_mark(st, PCMON_PY_UNKNOWN);
		return NULL;
	}
	return pp->runtime ? pp : NULL;
}

/*
 * Frames a user stack's native walk may take: room is kept after them for what py_append()
 * adds, a marker, and for a CPython process its frames. Without it a frame-pointer chain
 * gone astray (code built without frame pointers keeps data in rbp, and the kernel follows
 * it through the heap until the limit) left no room, and the sample lost its Python frames
 * (PCMON_KF_USER_DEPTH tells the engine a walk that took all its room).
 */
static __always_inline __u32 native_depth(const struct pcmon_key *key)
{
	struct pcmon_tcfg *cfg = active_cfg(key->target);
	struct pcmon_pyproc *pp;
	__u32 keep;

	if (!cfg || !(cfg->flags & PCMON_TF_PYTHON))
		return max_depth;
	pp = bpf_map_lookup_elem(&pyprocs, &key->pid);
	keep = pp && pp->epoch == key->epoch && pp->runtime ? PCMON_PY_FRAMES_MAX + 1 : 1;
	return max_depth > keep ? max_depth - keep : 1;
}

/* The user stack, the walk's depth said in @key when it took all the room it had. */
static __always_inline __u8 capture_user(void *ctx, struct pcmon_key *key, struct pcmon_stack *s)
{
	__u32 depth = native_depth(key);
	__u8 err = capture_to(ctx, s, BPF_F_USER_STACK, depth);

	if (!err && s->len >= depth)
		key->flags |= PCMON_KF_USER_DEPTH;
	return err;
}

/*
 * Append the Python frames @task is running to @st: read through the current address space
 * (@task is the current thread, or one of its process), or from @outside it (a task off CPU,
 * dump_offcpu).
 */
static __always_inline void py_append_from(struct task_struct *task, const struct pcmon_key *key,
					   __u32 tid, struct pcmon_stack *st, bool outside)
{
	const struct pcmon_pyproc *pp = py_proc(key, st);
	struct pcmon_pythread *pt;

	if (!pp)
		return;
	pt = bpf_task_storage_get(&pythreads, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!pt)
		return;
	if (outside)
		py_walk_frames_task(st, pt, pp, tid, task);
	else
		py_walk_frames(st, pt, pp, tid);
}

static __always_inline void py_append(struct task_struct *task, const struct pcmon_key *key,
				      __u32 tid, struct pcmon_stack *st)
{
	py_append_from(task, key, tid, st, false);
}

static __always_inline void py_append_task(struct task_struct *task, const struct pcmon_key *key,
					   struct pcmon_stack *st)
{
	py_append_from(task, key, key->tid, st, true);
}

/* The same, into the record of a --unwind dwarf sample: @slot 0 from the sample program, 1
 * from the switch program. */
static __always_inline void py_append_dwarf(struct task_struct *task, const struct pcmon_key *key,
					    __u32 tid, struct pcmon_dsample *d, __u32 slot)
{
	struct pcmon_stack *st = bpf_map_lookup_elem(&pyscratch, &slot);
	__u32 n;

	d->pylen = 0;
	if (!st)
		return;
	st->len = 0;
	py_append(task, key, tid, st);
	n = st->len;
	if (n > PCMON_PY_FRAMES_MAX + 1)
		n = PCMON_PY_FRAMES_MAX + 1;
	if (n && !bpf_probe_read_kernel(d->py, n * sizeof(__u64), st->ip))
		d->pylen = n;
}

/*
 * Wake the engine only when a ring is half full: it reads the rings on its own tick anyway,
 * and a wakeup per record would cost it a context switch per sample.
 */
static __always_inline __u64 ring_flags(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 2
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

static __always_inline void lost_ring(__u32 target)
{
	struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &target);

	if (ts)
		__sync_fetch_and_add(&ts->lost_ring_full, 1);
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
	return PCMON_DWARF_STACK_MAX; /* unknown: as much as allowed, halved if unreadable */
}

/*
 * Stream @task's user registers and the top of its user stack for the engine to unwind: the
 * current thread's, or one off CPU whose process is the current one (its stack is read
 * through the current address space). The user registers are the ones saved at the last
 * entry into the kernel: the interrupted ones for a sample taken in user mode, the
 * system-call site's otherwise. @kernel: also the kernel stack (the current thread's only).
 */
static __always_inline void emit_dwarf(void *ctx, struct task_struct *task,
				       const struct pcmon_key *key, __u32 type, __u64 ts, __u64 ns,
				       bool kernel)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 sp = BPF_CORE_READ(r, sp), start_stack = BPF_CORE_READ(task, mm, start_stack);
	__u64 need = stack_need(task, sp, start_stack), room, n;
	struct pcmon_dsample *d;
	long got;

	if (need > dwarf_stack)
		need = dwarf_stack;
	if (type != PCMON_DS_SAMPLE) /* (on_sample() noted it already) */
		note_thread(key->tid, task);
	d = reserve_dwarf(need, &room);
	if (!d) {
		lost_ring(key->target);
		return;
	}
	d->h.type = type;
	d->h.tid = BPF_CORE_READ(task, pid);
	d->h.ts = ts;
	d->h.ns = ns;
	d->h.key = *key;
	d->regs[0] = BPF_CORE_READ(r, ax);
	d->regs[1] = BPF_CORE_READ(r, dx);
	d->regs[2] = BPF_CORE_READ(r, cx);
	d->regs[3] = BPF_CORE_READ(r, bx);
	d->regs[4] = BPF_CORE_READ(r, si);
	d->regs[5] = BPF_CORE_READ(r, di);
	d->regs[6] = BPF_CORE_READ(r, bp);
	d->regs[7] = sp;
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

	/* a read past the end of the mapping fails whole: halve until one succeeds */
	n = need < room ? need : room;
	got = bpf_probe_read_user(d->stack, n, (void *)sp);
	for (int i = 0; i < 6 && got && n > 256; i++) {
		n /= 2;
		got = bpf_probe_read_user(d->stack, n, (void *)sp);
	}
	d->ulen = got ? 0 : n;
	if (got)
		d->h.key.uerr = PCMON_SERR_FAULT;
	py_append_dwarf(task, key, d->h.tid, d, type != PCMON_DS_SAMPLE);
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
extern void *bpf_cast_to_kern_ctx(void *) __ksym __weak;

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

/* When the tick being delivered fired (CLOCK_MONOTONIC ns), 0 if that cannot be read. */
static __always_inline __u64 tick_fired(struct bpf_perf_event_data *ctx)
{
	struct bpf_perf_event_data_kern *kctx;

	if (!bpf_cast_to_kern_ctx)
		return 0;
	kctx = bpf_cast_to_kern_ctx(ctx);
	return BPF_CORE_READ(kctx, event, hw.hrtimer.node.expires);
}

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

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pcmon_key key = {};
	struct pcmon_gstat *gs;
	struct pcmon_proc *p;
	struct pcmon_tcfg *cfg;
	struct scratch *sc;
	__u32 zero = 0;

	gs = gstats();
	if (gs)
		gs->samples_seen++;
	p = proc_of(id >> 32);
	if (!p || (p->flags & PCMON_PF_EXEC_WAIT)) {
		if (real_on)
			tick_for_unwatched(ctx);
		return 0;
	}
	cfg = active_cfg(p->target);
	if (!cfg || cfg->period_ns != ctx->sample_period)
		return 0;
	if (!may_watch(bpf_get_current_task_btf(), cfg, p->target))
		return 0;
	if ((cfg->flags & PCMON_TF_REAL) && tick_not_ours(ctx, bpf_get_current_task_btf(), p->target))
		return 0;
	note_sampled(p, id >> 32);
	sc = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!sc)
		return 0;

	key.target = p->target;
	key.pid = id >> 32;
	key.tid = (__u32)id;
	note_thread(key.tid, bpf_get_current_task_btf());
	key.epoch = p->epoch;
	key.kind = (__s64)PT_REGS_IP(&ctx->regs) < 0 ? PCMON_KIND_ONCPU_KMODE : PCMON_KIND_ONCPU;
	key.section = current_section(bpf_get_current_task_btf());
	key.flags = marks_pending(p);
	key.cgroup = bpf_get_current_cgroup_id();
	if (cfg->flags & PCMON_TF_DWARF) {
		emit_dwarf(ctx, bpf_get_current_task_btf(), &key, PCMON_DS_SAMPLE, 0, 0,
			   cfg->flags & PCMON_TF_KERNEL);
		return 0;
	}
	key.uerr = capture_user(ctx, &key, &sc->urec.st);
	if (!key.uerr)
		py_append(bpf_get_current_task_btf(), &key, key.tid, &sc->urec.st);
	sc->krec.st.len = 0;
	if (cfg->flags & PCMON_TF_KERNEL)
		key.kerr = capture(ctx, &sc->krec.st, 0);
	sc->urec.key = stack_hash(&sc->urec.st);
	sc->krec.key = stack_hash(&sc->krec.st);
	record_current(&key, &sc->urec, &sc->krec, 0);
	return 0;
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
					bool kernel)
{
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

	if (ns)
		record_current(&o->key, &o->urec, &o->krec, ns);
	owed = take_owed(o, &key);
	if (owed)
		record_n(&key, &o->urec, &o->krec, 0, owed);
}

/* The same, for --unwind dwarf: @task's stack is copied for the engine (the current address space is its). */
static __always_inline void charge_dwarf(void *ctx, struct task_struct *task,
					 struct pcmon_offcpu *o, __u64 ns)
{
	struct pcmon_key key;
	__u64 owed;

	if (ns)
		emit_dwarf(ctx, task, &o->key, PCMON_DS_OFF, 0, ns, false);
	owed = take_owed(o, &key);
	if (owed)
		emit_dwarf(ctx, task, &key, PCMON_DS_OWED, 0, owed, false);
}

/* Charge what a lazy thread owes, with the stack it has now (it has not left the kernel). */
static __always_inline void settle(void *ctx, struct task_struct *task, struct pcmon_offcpu *o)
{
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &o->key.pid);
	__u64 ns = o->pending_ns;

	o->pending_ns = 0;
	if (!active_cfg(o->key.target))
		return;
	if (o->dwarf && p && p->epoch == o->key.epoch) {
		charge_dwarf(ctx, task, o, ns);
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

/* The current thread is on its way back to user mode: settle what it owes, if anything. */
static __always_inline void settle_current(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pcmon_offcpu *o;

	if (!task->bpf_storage)
		return;
	o = bpf_task_storage_get(&offcpu, task, NULL, 0);
	if (o && (o->pending_ns || o->owed_on))
		settle(ctx, task, o);
}

static int settle_cb(struct bpf_map *map, void *key, void *value)
{
	settle_current(NULL);
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
		settle(ctx, prev, o);
	o->pending_ns = o->owed_on = 0;
	__builtin_memset(&o->key, 0, sizeof(o->key));
	o->key.target = target;
	o->key.pid = prev->tgid;
	o->key.tid = prev->pid;
	o->key.epoch = o->proc_epoch;
	o->key.kind = blocked ? PCMON_KIND_OFF_BLOCKED : PCMON_KIND_OFF_RUNNABLE;
	o->key.section = current_section(prev);
	o->key.flags = o->proc_marks;
	o->key.cgroup = task_cgroup(prev);
	o->ts = switch_time(now);
	o->lazy = PCMON_LAZY_NO;
	o->period_ns = cfg->period_ns;
	left = bpf_map_lookup_elem(&left_map, &(__u32){ 0 });
	if (left) {
		left->ts = o->ts;
		left->tid = prev->pid;
	}
	if (cfg->flags & PCMON_TF_DWARF) {
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
		if (o->lazy == PCMON_LAZY_NO)
			emit_dwarf(ctx, prev, &o->key, PCMON_DS_OFF_START, o->ts, 0,
				   cfg->flags & PCMON_TF_KERNEL);
		return;
	}
	o->dwarf = 0;
	if (lazy_stacks && !(cfg->flags & PCMON_TF_KERNEL))
		o->lazy = lazy_kind(o, prev, next);
	if (o->lazy == PCMON_LAZY_NO) {
		note_thread(o->key.tid, prev);
		take_stacks(ctx, prev, o, cfg->flags & PCMON_TF_KERNEL);
	}
}

/* A record without a stack, for the engine to end an interval whose stack it has: @ns of it. */
static __always_inline void send_end(__u32 type, __u32 tid, __u64 ts, __u64 ns,
				     const struct pcmon_key *key)
{
	struct pcmon_dhdr *h = bpf_ringbuf_reserve(&dsamples, sizeof(*h), 0);

	if (!h) {
		lost_ring(key->target);
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
		charge_dwarf(ctx, next, o, ns);
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
	settle_current(ctx);
	return 0;
}

/*
 * Open off-CPU intervals, for listings taken while threads are still off CPU. A lazy thread's
 * stack is not taken yet: walk its frame pointers here, reading its memory from outside
 * (bpf_copy_from_user_task: this iterator may sleep).
 */
SEC("iter.s/task")
int dump_offcpu(struct bpf_iter__task *ctx)
{
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
		bpf_seq_write(ctx->meta->seq, o, sizeof(*o));
		return 0;
	}
	sc = bpf_map_lookup_elem(&open_scratch, &zero);
	if (!sc)
		return 0;
	bpf_probe_read_kernel(&sc->o, sizeof(sc->o), o);
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
	bpf_seq_write(ctx->meta->seq, &sc->o, sizeof(sc->o));
	return 0;
}

/* ---- PCMON_CRITICAL_BEGIN/END (include/pcmon/critical.h), attached per object */

static __always_inline struct pcmon_crit *crit_of_current(bool create)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &(__u32){ id >> 32 });

	if (!p)
		return NULL;
	return bpf_task_storage_get(&crit, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * A section is known by the address of its name: reading the string here could fail (its page
 * may never have been touched), while the engine reads it from the object file at leisure.
 */
SEC("usdt")
int BPF_USDT(crit_begin, const char *name)
{
	struct pcmon_crit *c = crit_of_current(true);

	if (!c)
		return 0;
	if (c->depth < PCMON_SECTION_NEST)
		c->hash[c->depth & (PCMON_SECTION_NEST - 1)] = (__u64)name ?: 1;
	c->depth++;
	return 0;
}

SEC("usdt")
int BPF_USDT(crit_end)
{
	struct pcmon_crit *c = crit_of_current(false);

	/* an END whose BEGIN came before pcmon attached leaves the depth at 0 */
	if (c && c->depth)
		c->depth--;
	return 0;
}

