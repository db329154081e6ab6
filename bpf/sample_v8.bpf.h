/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The JavaScript walk: a V8 thread's frame-pointer chain, each frame whose function slot holds
 * a JSFunction recorded with its SharedFunctionInfo, read now because JSFunctions move (a
 * scavenge copies them) while SharedFunctionInfos stay put for the engine to name later
 * (docs/node.md, include/pcmon_v8.h). Part of sample.bpf.c, before the Python walk, which
 * appends after it.
 */
#ifndef PCMON_SAMPLE_V8_BPF_H
#define PCMON_SAMPLE_V8_BPF_H

#include "pcmon_v8.h"

/* V8 processes the engine looked at, by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	/* (a walk holds a pointer into its value: an element replaced is freed only after
	 * RCU, where a preallocated one would be taken again at once) */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct pcmon_v8proc);
} v8procs SEC(".maps");

/* Where the thread was: its frame pointer and pc, and the interpreter's registers (which
 * hold the live bytecode offset and array while a bytecode handler runs). */
struct js_regs {
	__u64 fp, pc, r9, r12, sp;
};

struct js_walk {
	struct pcmon_stack *st;
	__u64 fp, pc;
	__u64 r9, r12, sp;
	__u32 end;		/* the first word of st not to write */
	__u32 status;
	__u32 done;		/* the chain ended */
	const struct pcmon_v8offs *o;	/* (in the map's value: no copy on the stack) */
};

static __always_inline __u32 js_slot(__u32 i)
{
	asm volatile("" : "+r"(i));
	return i & (PCMON_STACK_MAX - 1);
}

/* The word at byte @below under the frame pointer, from the window read at fp - 64. */
static __always_inline __u64 js_win(const __u64 *win, __u16 below)
{
	__u32 i;

	if (below > PCMON_JS_WIN_BELOW || below < 8 || (below & 7))
		return 0;
	i = ((__u32)PCMON_JS_WIN_BELOW - below) >> 3;
	asm volatile("" : "+r"(i));
	return i < 8 ? win[i] : 0;
}

/* The instance type of the heap object @tagged (0: not one, or unreadable). */
static __always_inline __u16 js_type(const struct js_walk *w, __u64 tagged)
{
	__u64 map = 0;
	__u16 type = 0;

	if ((tagged & 3) != 1 || tagged > PCMON_JS_ADDR_MASK ||
	    bpf_probe_read_user(&map, sizeof(map), (void *)(tagged - 1 + w->o->map)) ||
	    (map & 3) != 1 ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(map - 1 + w->o->map_type)))
		return 0;
	return type;
}

/*
 * Where in @code (tagged) the innermost frame, at @pc outside it, returns to: a builtin the code
 * called that made no frame of its own runs (baseline code calls one for most arithmetic), and
 * its return address is the word at the top of the stack. The return offset plus
 * one, to go in the code's word (PCMON_JS_RET_SHIFT); 0: @pc in the code, or none found.
 */
static __always_inline __u64 js_ret(const struct js_walk *w, __u64 code, __u64 pc, __u64 *win)
{
	/* (win's first eight words as scratch, the frame's slots read already: the stack of a
	 * bpf_loop() callback counts against its caller's) */
	__u64 start, size;

	if ((code & 3) != 1 || !w->sp ||
	    bpf_probe_read_user(&win[4], 8, (void *)(code - 1 + w->o->code_start)) ||
	    bpf_probe_read_user(&win[5], 4, (void *)(code - 1 + w->o->code_size)))
		return 0;
	start = win[4];
	size = (__u32)win[5];
	if (!size || size > 0x7fffffff || (pc >= start && pc - start < size) ||
	    bpf_probe_read_user(win, PCMON_JS_RET_WORDS * 8, (void *)w->sp))
		return 0;
	for (int k = 0; k < PCMON_JS_RET_WORDS; k++)
		if (win[k] > start && win[k] - start <= size && win[k] - start < PCMON_JS_RET_MAX)
			return win[k] - start + 1;
	return 0;
}

static long js_step(__u32 i, void *data)
{
	struct js_walk *w = data;
	__u64 win[10] = {};
	__u64 fn, sfi = 0, code = 0, cell = 0, boff, next, fp = w->fp;
	__u32 n;
	__u16 t;

	if (!fp || fp > PCMON_JS_ADDR_MASK) {
		w->done = 1;
		return 1;
	}
	/* the slots under the frame pointer, the saved one and the return address; the slots
	 * may run below the stack's pages there are (the innermost frame): then those two */
	if (bpf_probe_read_user(win, PCMON_JS_WIN_BELOW + 16, (void *)(fp - PCMON_JS_WIN_BELOW))) {
		if (bpf_probe_read_user(&win[8], 16, (void *)fp)) {
			w->done = 1;
			return 1;
		}
		goto next;
	}
	fn = js_win(win, w->o->fp_function);
	/* a JavaScript frame: a context (a heap object, where other frames keep a Smi marker)
	 * and a JSFunction */
	if ((js_win(win, w->o->fp_context) & 3) != 1 || (fn & 3) != 1)
		goto next;
	t = js_type(w, fn);
	if (t < w->o->type_fn_lo || t > w->o->type_fn_hi)
		goto next;
	/* (the words written so far: the stack's own length, which as a map value's the verifier
	 * does not track, so that it sees the loop converge) */
	n = w->st->len;
	if (n + PCMON_JS_FRAME_WORDS > w->end || n > PCMON_STACK_MAX - PCMON_JS_FRAME_WORDS) {
		w->status = PCMON_JS_DEPTH;
		return 1;
	}
	if (bpf_probe_read_user(&sfi, sizeof(sfi), (void *)(fn - 1 + w->o->fn_shared))) {
		w->status = PCMON_JS_FAULT; /* (the frame is left native, the stack flagged) */
		goto next;
	}
	if (js_type(w, sfi) != w->o->type_sfi)
		goto next; /* (an object of another type in the function's slot: not JavaScript) */
	boff = js_win(win, w->o->fp_bytecode_offset);
	/* an interpreted frame's offset is a Smi (a baseline frame keeps its feedback there) */
	boff = (boff & 1) ? 0 : (boff >> 32) + 1;
	/* the innermost frame, while one of the interpreter's handlers runs it (the bytecode
	 * array register holds the frame's array): the live offset, where the frame's slot
	 * holds the one of its last call */
	if (boff && i == 0 && w->r12 && w->r12 == js_win(win, w->o->fp_bytecode_array) &&
	    w->r9 < PCMON_JS_BOFF_FAR)
		boff = w->r9 + 1;
	/* the code its function has: the frame's unless it was replaced since the frame was
	 * entered, and optimized code has no bytecode offset (a spill slot is where an
	 * interpreted frame has it): the engine checks the pc is in it */
	if (bpf_probe_read_user(&code, sizeof(code), (void *)(fn - 1 + w->o->fn_code)))
		code = 0;
	if (bpf_probe_read_user(&cell, sizeof(cell), (void *)(fn - 1 + w->o->fn_feedback)))
		cell = 0;
	/* (its position: the loop's index, which the verifier does not track as a constant) */
	w->st->ip[js_slot(n)] = pcmon_js_pc_word(w->pc, i);
	w->st->ip[js_slot(n + 1)] = pcmon_js_sfi_word(sfi - 1, boff);
	code &= PCMON_JS_ADDR_MASK;
	if (i == 0 && boff == 0)
		code |= js_ret(w, code, w->pc, win) << PCMON_JS_RET_SHIFT;
	w->st->ip[js_slot(n + 2)] = code;
	w->st->ip[js_slot(n + 3)] = cell & PCMON_JS_ADDR_MASK;
	w->st->len = n + PCMON_JS_FRAME_WORDS;
next:
	next = win[8];
	w->pc = win[9];
	/* the stack grows down: a caller's frame is above its callee's */
	if (next <= fp || !w->pc) {
		w->done = 1;
		return 1;
	}
	w->fp = next;
	return 0;
}

/* Append a marker saying @status and no frame to @st (room permitting). */
static __always_inline void js_mark(struct pcmon_stack *st, __u32 status)
{
	__u32 n = st->len;

	if (n >= PCMON_STACK_MAX - 1)
		return;
	st->ip[js_slot(n)] = PCMON_JS_MARK | status;
	st->len = n + 1;
}

/* A function of its own, verified once for all the places that read a chain. */
__noinline int js_walk_frames(struct pcmon_stack *st, const struct pcmon_v8proc *vp,
			      const struct js_regs *r)
{
	struct js_walk w;
	__u32 n;

	if (!st || !vp || !r)
		return 0;
	n = st->len;
	if (n >= PCMON_STACK_MAX - 1)
		return 0;
	w = (struct js_walk){ .st = st, .o = &vp->o, .fp = r->fp, .pc = r->pc, .r9 = r->r9,
			      .r12 = r->r12, .sp = r->sp };
	st->ip[js_slot(n)] = PCMON_JS_MARK;
	st->len = n + 1;
	w.end = n + PCMON_JS_WORDS_MAX;
	if (w.end > PCMON_STACK_MAX)
		w.end = PCMON_STACK_MAX;
	bpf_loop(PCMON_JS_CHAIN_MAX, js_step, &w, 0);
	if (!w.done && w.status == PCMON_JS_OK)
		w.status = PCMON_JS_DEPTH;
	st->ip[js_slot(n)] = PCMON_JS_MARK | w.status;
	/* the outermost frame's word says so: a stack that ends with it wakes the engine soon
	 * (emit_stack(): its SharedFunctionInfos are named while the process runs) */
	if (st->len > n + 1)
		st->ip[js_slot(st->len - 1)] |= PCMON_JS_OUTERMOST;
	return 0;
}

/*
 * The V8 BPF reads @key's process with: NULL if its target does not read runtime frames or
 * the engine found none in it. A process not looked at yet gets no marker: no process is
 * known to run a V8 before it was looked at (the engine flags what it missed then).
 */
static __always_inline const struct pcmon_v8proc *js_proc(const struct pcmon_key *key)
{
	struct pcmon_tcfg *cfg = active_cfg(key->target);
	struct pcmon_v8proc *vp;

	if (!cfg || !(cfg->flags & PCMON_TF_PYTHON))
		return NULL;
	vp = bpf_map_lookup_elem(&v8procs, &key->pid);
	if (!vp || vp->epoch != key->epoch || !vp->version)
		return NULL;
	return vp;
}

/* Frames kept after a native walk of @key's process for its JavaScript ones. */
static __always_inline __u32 js_keep(const struct pcmon_key *key)
{
	return js_proc(key) ? PCMON_JS_WORDS_MAX : 0;
}

/* Append the JavaScript frames @task (the current thread, or one of its process) runs. */
static __always_inline void js_append(struct task_struct *task, const struct pcmon_key *key,
				      struct pcmon_stack *st)
{
	const struct pcmon_v8proc *vp = js_proc(key);
	struct js_regs regs;
	struct pt_regs *r;

	if (!vp)
		return;
	/* (the thread's user registers: where it was when it entered the kernel) */
	r = (struct pt_regs *)bpf_task_pt_regs(task);
	regs = (struct js_regs){ BPF_CORE_READ(r, bp), BPF_CORE_READ(r, ip), BPF_CORE_READ(r, r9),
				 BPF_CORE_READ(r, r12), BPF_CORE_READ(r, sp) };
	js_walk_frames(st, vp, &regs);
}

#endif /* PCMON_SAMPLE_V8_BPF_H */
