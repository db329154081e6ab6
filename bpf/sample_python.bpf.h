/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Python walk: a CPython thread's frames read from its interpreter state and appended
 * to the native stack (docs/python.md, include/pcmon_python.h). Part of sample.bpf.c.
 */
#ifndef PCMON_SAMPLE_PYTHON_BPF_H
#define PCMON_SAMPLE_PYTHON_BPF_H

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
	__u64 want;	/* the kernel's tid, or the thread's fs base (PCMON_PYF_PTHREAD_ID) */
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

	if (pp->o.flags & PCMON_PYF_PTHREAD_ID) {
		/* (the thread sampled, or the one read from outside) */
		struct task_struct *t = remote ? task : bpf_get_current_task_btf();

		f.want = BPF_CORE_READ(t, thread.fsbase);
	}
	if (pt->runtime == pp->runtime && pt->epoch == pp->epoch) {
		if (pt->tstate &&
		    !py_read(&id, sizeof(id), pt->tstate + pp->o.ts_native_id, task, remote) &&
		    id == f.want)
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
	__u16 lo, size, code, previous, prev_instr, is_entry, shim_owner, co_code, flags;
};

/* A field of @size bytes at @off of a frame's window (the engine's offsets, bounded here). */
static __always_inline __u64 win_get(const __u8 *win, __u16 off, int size)
{
	__u64 v = 0;

	if (off > PCMON_PY_FRAME_WINDOW - size)
		return 0;
	if (size == 1)
		return win[off];
	bpf_probe_read_kernel(&v, size == 4 ? 4 : 8, win + off);
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
	else if (w->size <= PCMON_PY_FRAME_MID)
		err = py_read(win, PCMON_PY_FRAME_MID, w->frame + w->lo, w->task, remote);
	else
		err = py_read(win, PCMON_PY_FRAME_WINDOW, w->frame + w->lo, w->task, remote);
	if (err) {
		w->status = PCMON_PY_FAULT;
		return 1;
	}
	if (w->flags & PCMON_PYF_LASTI) {
		/* 3.8-3.10: a PyFrameObject, run by an activation of its own */
		__s32 lasti = (__s32)win_get(win, w->prev_instr, 4);

		code = win_get(win, w->code, 8);
		if (!code || code > PCMON_PY_CODE_MASK) {
			w->status = PCMON_PY_FAULT;
			return 1;
		}
		if (lasti < 0)
			instr1 = 0;
		else if (w->flags & PCMON_PYF_LASTI_BYTES)
			instr1 = (__u64)lasti / 2 + 1;
		else
			instr1 = (__u64)lasti + 1;
		w->st->ip[stack_slot(w->n)] = pcmon_py_word(code, 1, instr1);
		w->n++;
		w->frame = win_get(win, w->previous, 8);
		return 0;
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
			      .co_code = pp->o.co_code, .flags = pp->o.flags };
	w.end = n + 1 + PCMON_PY_FRAMES_MAX;
	if (w.end > PCMON_STACK_MAX)
		w.end = PCMON_STACK_MAX;
	/* 3.11, 3.12: the thread state's _PyCFrame holds the current frame; 3.8-3.10, 3.13 on:
	 * the state itself */
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
	if (!pp->runtime) {
		if (pp->o.flags & PCMON_PYF_UNREADABLE)
			py_mark(st, PCMON_PY_UNKNOWN);
		return NULL;
	}
	return pp;
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
	keep += js_keep(key);
	return max_depth > keep ? max_depth - keep : 1;
}

/* The user stack, the walk's depth said in @key when it took all the room it had. */
static __always_inline __u8 capture_user(void *ctx, struct pcmon_key *key, struct pcmon_stack *s)
{
	__u32 depth;
	__u8 err;

	if (BPF_CORE_READ(bpf_get_current_task_btf(), flags) & PCMON_PF_KTHREAD) {
		s->len = 0; /* no user stack, by nature */
		return PCMON_SERR_KTHREAD;
	}
	depth = native_depth(key);
	err = capture_to(ctx, s, BPF_F_USER_STACK, depth);

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
	const struct pcmon_pyproc *pp;
	struct pcmon_pythread *pt;

	/* (a V8's JavaScript frames first: read through the current address space only) */
	if (!outside)
		js_append(task, key, st);
	pp = py_proc(key, st);
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
/* The Python marker and frames read into @st, into dwarf record @d (as many as it holds). */
static __always_inline void py_to_dsample(struct pcmon_dsample *d, const struct pcmon_stack *st)
{
	__u32 n = st->len;

	if (n > PCMON_PY_FRAMES_MAX + 1)
		n = PCMON_PY_FRAMES_MAX + 1;
	d->pylen = 0;
	if (n && !bpf_probe_read_kernel(d->py, n * sizeof(__u64), st->ip))
		d->pylen = n;
}

static __always_inline void py_append_dwarf(struct task_struct *task, const struct pcmon_key *key,
					    __u32 tid, struct pcmon_dsample *d, __u32 slot)
{
	struct pcmon_stack *st = bpf_map_lookup_elem(&pyscratch, &slot);

	d->pylen = 0;
	if (!st)
		return;
	st->len = 0;
	py_append(task, key, tid, st);
	py_to_dsample(d, st);
}

#endif /* PCMON_SAMPLE_PYTHON_BPF_H */
