// SPDX-License-Identifier: GPL-2.0-only
/*
 * A sample's stacks symbolized into one agg_stack: frame-pointer stacks from BPF, --unwind
 * dwarf records unwound here, and the Python frames merged into the native ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfitab.h"
#include "dbginfo.h"
#include "hotspot.h"
#include "procs.h"
#include "python.h"
#include "sample_int.h"
#include "sampler.h"
#include "unwind.h"
#include "v8.h"

/* ---- symbolizing a sample */

/* The string id of a marked section's name, from its address in process (pid, epoch). */
static uint32_t section_name(struct sample_g *g, const struct pcmon_key *k)
{
	struct { uint64_t addr; uint32_t pid, epoch; } key = { k->section, k->pid, k->epoch };
	char name[PCMON_SECTION_LEN];
	uint32_t slot, id = 0;
	int r;

	if (!k->section)
		return 0;
	r = itab_intern(g->section_keys, &key, sizeof(key), &slot);
	if (r == 0)
		return g->section_names[slot];
	if (r < 0 || GROW(g->section_names, g->cap_sections, slot + 1))
		return 0;
	if (sym_user_string(g->env.sym, k->pid, k->epoch, k->section, name, sizeof(name)) ||
	    !name[0])
		snprintf(name, sizeof(name), "section@%llx", (unsigned long long)k->section);
	sym_intern_str(g->env.sym, name, &id);
	return g->section_names[slot] = id;
}

static enum agg_unwalk unwalk_of(uint8_t serr)
{
	switch (serr) {
	case PCMON_SERR_NONE:
	case PCMON_SERR_KTHREAD: /* (its stack: the thread, then its kernel frames) */
		return AGG_WALK_OK;
	case PCMON_SERR_FULL:
		return AGG_UNWALK_LOST;
	default:
		return AGG_UNWALK_FAULT;
	}
}

/*
 * The location of user frame @pc of a walked stack (@call_site: a return address): a Java
 * frame comes named from the walk (hs_walk(): HS_LOC_TAG and its location).
 */
static uint32_t user_loc(struct sample_g *g, const struct pcmon_key *k, uint64_t pc,
			 bool call_site)
{
	/* (the tag and a location there is: no user address has bit 63 set, but a walk that
	 * read garbage may hand one on, all ones: that is an address, named as none) */
	if ((pc & ~(uint64_t)UINT32_MAX) == HS_LOC_TAG && sym_loc(g->env.sym, (uint32_t)pc))
		return (uint32_t)pc;
	return sym_user(g->env.sym, k->pid, k->epoch, pc, call_site);
}

/*
 * A marker with no frame (PCMON_PY_UNKNOWN, PCMON_PY_NOSTATE): were Python frames missed? A
 * thread whose native frames run the interpreter's loop was running Python code (whether
 * pcmon can read that CPython or not: it was not known then); so was, as far as anyone can
 * tell, a CPython process sampled before BPF knew it whose native walk did not reach a root
 * (frame pointers: the walk stops in the interpreter). A C thread, a process with no
 * CPython, and the native start-up of a CPython are left as they are.
 */
static bool python_missed(struct sample_g *g, const struct pcmon_key *k, uint32_t status,
			  const uint32_t *locs, uint32_t nu, bool whole)
{
	if (py_runs_eval(g->py, locs, nu))
		return true;
	return status == PCMON_PY_UNKNOWN && !whole && py_is_python(g->py, k->pid);
}

/* @st cut short for @why (enum agg_unwalk), in place of a reason it had (AGG_SF_CUT). */
static void cut_for(struct agg_stack *st, enum agg_unwalk why)
{
	st->flags = (st->flags & ~0xff02u) | AGG_SF_CUT(why);
}

/*
 * A stack BPF read no Python frames for, of a target that reads them (@locs its native
 * frames): one whose native frames run the interpreter's loop was running Python code that
 * BPF did not know the interpreter of then (the engine, busy naming the first samples from a
 * libpython's debug information, had not yet found it in a process started a moment before),
 * so it is flagged, not silently native.
 */
/* Does the target of @k walk Java frames (not --no-java)? */
static bool walks_java(struct sample_g *g, const struct pcmon_key *k)
{
	const struct target *t = target_of(g, k->target);

	return t && sample_of(t)->java;
}

static bool python_unread(struct sample_g *g, const struct pcmon_key *k, const uint32_t *locs,
			  uint32_t n)
{
	const struct target *t = target_of(g, k->target);

	return t && sample_of(t)->python && !py_unsupported(g->py, k->pid) &&
	       py_runs_eval(g->py, locs, n);
}

/*
 * A stack BPF read no JavaScript frames for (no marker: taken before the engine looked at
 * its process), of a target that reads them, in a process since found to run a V8, whose
 * native frames run V8's code: flagged js, not silently native.
 */
static bool js_unread(struct sample_g *g, const struct pcmon_key *k, const uint32_t *locs,
		      uint32_t n)
{
	const struct target *t = target_of(g, k->target);

	return t && sample_of(t)->python && v8_unread(g->v8, k->pid, locs, n);
}

/* Does process @pid run a node (its executable's name says so)? */
bool js_node_exe(uint32_t pid)
{
	char exe[64], path[4096];
	const char *base;
	ssize_t n;

	snprintf(exe, sizeof(exe), "/proc/%u/exe", pid);
	n = readlink(exe, path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "node", 4);
}

/*
 * A stack with no JavaScript marker, of a process not looked at for a V8 yet: look now
 * rather than when its first-sample event is handled, after the rest of a dwarf stream (as
 * merge_python() does for Python). A node is looked at before its native pcs are named (the
 * first naming of node's frames reads its symbols, a while during which its samples would
 * not be known), its address map read first; any other process once they are (its map is
 * read then: looking through a map not read yet would leave it empty). This stack stays
 * native, flagged if it ran V8's code (js_unread()).
 */
static void js_look_early(struct sample_g *g, const struct pcmon_key *k, bool named)
{
	const struct target *t = target_of(g, k->target);

	if (!t || !sample_of(t)->python || k->uerr == PCMON_SERR_KTHREAD ||
	    v8_looked(g->v8, k->pid, k->epoch))
		return;
	if (!named) {
		if (!js_node_exe(k->pid))
			return;
		sym_proc_load(g->env.sym, k->pid, k->epoch);
	}
	if (v8_first_look(g->v8, k->pid, k->epoch))
		sample_convert_js_look(g, k->pid, k->epoch);
}

/*
 * The Python frames of a user stack (docs/python.md): @pyw is the marker BPF put after the
 * native frames and the frames after it. The native pcs are named, then each activation of
 * the interpreter's loop is replaced by the Python frames it runs (py_merge()), written to
 * @st outermost first; a chain BPF could not read whole cuts the stack short there, and one
 * it did not know (python_missed(): @whole, the native walk reached a root) is flagged.
 * Returns the user locations written.
 */
static uint32_t merge_python(struct sample_g *g, const struct pcmon_key *k, const __u64 *upc,
			     uint32_t nu, const __u64 *pyw, uint32_t npy, bool whole,
			     struct agg_stack *st)
{
	static const enum agg_unwalk cut_reason[] = {
		[PCMON_PY_FAULT] = AGG_UNWALK_PYTHON,
		[PCMON_PY_DEPTH] = AGG_UNWALK_DEPTH,
	};
	struct py_merge_in in = { .nn = nu, .pw = (const uint64_t *)pyw + 1, .np = npy - 1, .pid = k->pid,
				  .status = pyw[0] & ~PCMON_PY_MARK_MASK };
	uint32_t n, cut;

	if (GROW(g->natlocs, g->cap_natlocs, nu + npy + 1)) {
		nu = 0;
		st->flags |= AGG_SF_CUT(AGG_UNWALK_PYTHON);
		return 0;
	}
	free(g->mergelocs);
	g->mergelocs = malloc(g->cap_natlocs * sizeof(*g->mergelocs));
	if (!g->mergelocs) {
		st->flags |= AGG_SF_CUT(AGG_UNWALK_PYTHON);
		return 0;
	}
	/*
	 * A launcher looked at before its libpython was mapped: its address map read again and
	 * looked at again first, before naming the native pcs may keep the engine a second
	 * (the first time it reads libpython's debug information), so that BPF reads Python
	 * frames from the samples taken meanwhile on.
	 */
	if (in.status == PCMON_PY_UNKNOWN && py_look_pending(g->py, k->pid, k->epoch)) {
		sym_proc_reload(g->env.sym, k->pid, k->epoch, now_ns());
		sample_convert_python_look(g, k->pid, k->epoch, false);
	}
	for (uint32_t i = 0; i < nu; i++)
		g->natlocs[i] = user_loc(g, k, upc[i], i > 0);
	in.nat = g->natlocs;
	/*
	 * A dwarf record is converted as it streams, before the lifecycle events that came with
	 * it are handled: the first sample of a process BPF knew nothing of makes the engine look
	 * for its interpreter now, rather than after the rest of the stream (its address map is
	 * read: its native pcs were just named).
	 */
	if (in.status == PCMON_PY_UNKNOWN && py_first_look(g->py, k->pid, k->epoch))
		sample_convert_python_look(g, k->pid, k->epoch, false);
	if (in.status == PCMON_PY_UNKNOWN || in.status == PCMON_PY_NOSTATE) {
		for (uint32_t i = 0; i < nu; i++)
			st->locs[nu - 1 - i] = g->natlocs[i];
		if (python_missed(g, k, in.status, g->natlocs, nu, whole))
			cut_for(st, AGG_UNWALK_PYTHON_UNKNOWN);
		return nu;
	}
	if (in.status > PCMON_PY_DEPTH)
		in.status = PCMON_PY_FAULT;
	n = py_merge(g->py, &in, g->mergelocs, &cut);
	for (uint32_t i = 0; i < n; i++)
		st->locs[n - 1 - i] = g->mergelocs[i];
	if (cut != PCMON_PY_OK)
		cut_for(st, cut_reason[cut]);
	return n;
}

/* Where a user stack's Python frames start (its marker), @n if it has none. */
static uint32_t python_start(const __u64 *upc, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if ((upc[i] & PCMON_PY_MARK_MASK) == PCMON_PY_MARK)
			return i;
	return n;
}

/* Where a user stack's JavaScript frames start (their marker), @n if it has none. */
static uint32_t js_start(const __u64 *upc, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if ((upc[i] & PCMON_JS_MARK_MASK) == PCMON_JS_MARK)
			return i;
	return n;
}

/* Where a user stack's native frames end: at its first marker, JavaScript's or Python's. */
static uint32_t runtime_start(const __u64 *upc, uint32_t n)
{
	return MIN(js_start(upc, n), python_start(upc, n));
}

/*
 * The JavaScript frames of a user stack (docs/node.md): @jsw is the marker BPF put after the
 * native frames and the frames after it. The native pcs are named, then each JavaScript
 * frame takes the place of V8's code at its pc (v8_merge()), written to @st outermost
 * first; a frame that could not be named leaves the stack flagged `js`. Returns the user
 * locations written.
 */
static uint32_t merge_js(struct sample_g *g, const struct pcmon_key *k, const __u64 *upc,
			 uint32_t nu, const __u64 *jsw, uint32_t njs, struct agg_stack *st)
{
	static const enum agg_unwalk cut_reason[] = {
		[PCMON_JS_FAULT] = AGG_UNWALK_JS,
		[PCMON_JS_DEPTH] = AGG_UNWALK_DEPTH,
	};
	struct v8_merge_in in = { .pc = (const uint64_t *)upc, .nn = nu,
				  .jw = (const uint64_t *)jsw + 1, .nj = njs - 1, .pid = k->pid };
	uint32_t status = jsw[0] & ~PCMON_JS_MARK_MASK, n, cut;

	if (GROW(g->natlocs, g->cap_natlocs, nu + njs + 1)) {
		st->flags |= AGG_SF_CUT(AGG_UNWALK_JS);
		return 0;
	}
	free(g->mergelocs);
	g->mergelocs = malloc(g->cap_natlocs * sizeof(*g->mergelocs));
	if (!g->mergelocs) {
		st->flags |= AGG_SF_CUT(AGG_UNWALK_JS);
		return 0;
	}
	for (uint32_t i = 0; i < nu; i++)
		g->natlocs[i] = user_loc(g, k, upc[i], i > 0);
	in.nat = g->natlocs;
	/* no frame read, though V8's code ran: JavaScript frames are missing (a dwarf record
	 * whose process was gone before its frames could be read from the copy) */
	if (njs == 1 && status == PCMON_JS_OK && v8_unread(g->v8, k->pid, g->natlocs, nu))
		status = PCMON_JS_FAULT;
	n = v8_merge(g->v8, &in, g->mergelocs, &cut);
	for (uint32_t i = 0; i < n; i++)
		st->locs[n - 1 - i] = g->mergelocs[i];
	if (status > PCMON_JS_DEPTH)
		status = PCMON_JS_FAULT;
	if (status == PCMON_JS_OK)
		status = cut;
	if (status != PCMON_JS_OK)
		cut_for(st, cut_reason[status]);
	return n;
}

/*
 * A new stack came down the stacks ring: read its Python frames' code objects now, while the
 * process is there to read (sampler_py_hook()). Their names exist only in the process's
 * memory, which the kernel releases before the exit event reaches the engine; with
 * --unwind fp this stack's samples wait in BPF's counts map until a drain (a save every 5 s,
 * a listing, a filling map), but the ring, which carries each distinct stack once, is read
 * whenever the engine wakes, and a stack with Python frames wakes it within 100 ms
 * (ring_flags_py() in sample.bpf.c). Named only at the drain, a process that exits in between
 * (most `pcmon run`s of a script) would have each of those samples cut short at its first
 * Python frame. Only the code object and its interned strings are made
 * here (python.c's cache); the drain makes the locations. Dwarf records are converted as they
 * stream and need none of this. docs/python.md, "Naming code objects".
 */
void sample_convert_python_early(void *ctx, uint32_t pid, const __u64 *ip, uint32_t n)
{
	struct sample_g *g = ctx;
	uint32_t js = js_start(ip, n), py = python_start(ip, n);

	for (uint32_t i = js + 1; i + PCMON_JS_FRAME_WORDS <= MIN(py, n); i += PCMON_JS_FRAME_WORDS)
		if (v8_frame_early(g->v8, pid, (const uint64_t *)&ip[i]))
			break;
	for (uint32_t i = py + 1; i < n; i++)
		if (py_code_early(g->py, pid, ip[i]))
			break;
}

/*
 * A kernel thread's sample: no user stack, by nature. It is charged to a procedure named
 * after the thread, kernel.[NAME] (kworker/0:1H-kblockd is kernel.[kworker]: the part
 * before '/' names what the thread is, the rest which of them), its kernel frames (--kernel)
 * above it.
 */
static uint32_t kthread_loc(struct sample_g *g, uint32_t tid)
{
	char comm[32] = "", pcomm[32], name[40];
	const char *procs[1] = { name };
	uint64_t h = 14695981039346656037ULL;
	uint32_t loc = 0;

	sampler_thread_name(g->smp, tid, comm, pcomm, sizeof(comm));
	comm[strcspn(comm, "/")] = '\0';
	snprintf(name, sizeof(name), "[%s]", comm[0] ? comm : "kernel thread");
	for (const char *c = name; *c; c++) /* (its address: the name's FNV-1a hash) */
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	sym_intern_loc(g->env.sym, "kernel", h, procs, NULL, NULL, 1, &loc);
	return loc;
}

/*
 * Symbolize a stack into g->scratch: @upc/@kpc innermost first, as the kernel and the
 * unwinder give them; stored stacks run outermost first. Every frame but the innermost is a
 * return address, looked up at pc - 1 (the call). The innermost user pc is the one saved at
 * the last entry into the kernel, which is exact: the interrupted or faulting instruction,
 * the entry point right after exec, or the instruction after a `syscall` (in the same
 * function). Looking it up at pc - 1 would put a process's first instruction in the padding
 * before _start. The innermost kernel pc is exact only for a timer sample.
 */
static struct agg_stack *convert_pcs(struct sample_g *g, const struct pcmon_key *k,
				     const __u64 *upc, uint32_t nu, const __u64 *kpc, uint32_t nk,
				     enum agg_unwalk unwalk, const __u64 *rtw, uint32_t nrt, bool whole)
{
	uint32_t js = js_start(rtw, nrt), pys = python_start(rtw, nrt);
	const __u64 *pyw = rtw ? rtw + pys : NULL, *jsw = rtw ? rtw + js : NULL;
	uint32_t npy = nrt - pys, njs = js < pys ? pys - js : 0;
	bool oncpu = k->kind == PCMON_KIND_ONCPU || k->kind == PCMON_KIND_ONCPU_KMODE;
	bool kthread = k->uerr == PCMON_SERR_KTHREAD;
	struct sym *sym = g->env.sym;
	struct agg_stack *st;
	size_t need;

	/* (a V8's stack carries its JavaScript frames: a Python marker after them is dropped) */
	if (njs)
		npy = 0;
	need = agg_stack_size(nu + (npy ? npy - 1 : 0) + njs / PCMON_JS_FRAME_WORDS + nk + kthread);
	if (need > g->scratch_cap) {
		free(g->scratch);
		g->scratch = malloc(need);
		g->scratch_cap = g->scratch ? need : 0;
		if (!g->scratch)
			return NULL;
	}
	st = g->scratch;
	st->kind = k->kind;
	st->pid = k->pid;
	st->tid = k->tid;
	st->cgroup = k->cgroup;
	st->unwalk = unwalk;
	st->section = section_name(g, k);
	st->flags = k->flags & PCMON_KF_MARKS_PENDING ? AGG_SF_MARKS_PENDING : 0;
	if (st->unwalk == AGG_WALK_OK && !nu && !kthread)
		st->unwalk = AGG_UNWALK_FAULT; /* an empty user stack: nothing to charge */
	if (st->unwalk != AGG_WALK_OK) {
		/* the frames of an unwalkable stack are not kept: it is charged to a section */
		st->nuser = st->nkern = 0;
		return st;
	}
	/* a stack taken at sched_switch starts inside pcmon's own program: leave that out */
	while (!oncpu && nk && sym_kernel_is_tracer(sym, kpc[0])) {
		kpc++;
		nk--;
	}
	if (!njs)
		js_look_early(g, k, false);
	if (kthread) {
		st->locs[0] = kthread_loc(g, k->tid);
		nu = st->locs[0] ? 1 : 0;
	} else if (njs) {
		nu = merge_js(g, k, upc, nu, jsw, njs, st);
	} else if (npy) {
		nu = merge_python(g, k, upc, nu, pyw, npy, whole, st);
		js_look_early(g, k, true);
	} else {
		for (uint32_t i = 0; i < nu; i++)
			st->locs[nu - 1 - i] = user_loc(g, k, upc[i], i > 0);
		js_look_early(g, k, true);
		if (python_unread(g, k, st->locs, nu))
			cut_for(st, AGG_UNWALK_PYTHON_UNKNOWN);
		else if (js_unread(g, k, st->locs, nu))
			cut_for(st, AGG_UNWALK_JS);
	}
	st->nuser = nu;
	st->nkern = nk;
	for (uint32_t i = 0; i < nk; i++) {
		bool leaf = i == 0 && oncpu;

		st->locs[nu + nk - 1 - i] = sym_kernel(sym, kpc[i], !leaf);
	}
	return st;
}

/*
 * A stack the kernel walked with frame pointers (in-kernel aggregates). The chain ends where
 * a frame pointer does (code built without them, as Debian's libc is): unless the outermost
 * frame's CFI says it has no caller, the stack is marked cut short, so the listing can say
 * that the deep counts of outer frames are lower bounds. A chain as deep as the limit was
 * cut there: its frames are kept too.
 */
struct agg_stack *sample_convert(struct sample_g *g, const struct pcmon_key *k,
				 const struct pcmon_stack *us, const struct pcmon_stack *ks)
{
	uint32_t nall = us ? us->len : 0, nk = ks ? ks->len : 0;
	uint32_t nu = us ? runtime_start(us->ip, nall) : 0;
	uint32_t cut = 0;
	struct agg_stack *st;

	/*
	 * A JVM's samples are walked from a copy of its stack, whatever --unwind says: BPF is
	 * told once the engine found it (hs_is_jvm(), looked at only where the kernel's walk was
	 * cut short, as in JIT code), and its later samples come as dwarf records.
	 */
	if (nu && us && !unw_is_root(g->env.sym, k->pid, k->epoch, us->ip[nu - 1], nu > 1) &&
	    walks_java(g, k)) {
		hs_is_jvm(g->hs, k->pid, k->epoch);
		if (hs_new_jvm(g->hs, k->pid))
			sampler_jvm_set(g->smp, k->pid, k->epoch, true);
	}
	/* (the native walk's end, known first: the Python frames' own cut is said over it) */
	if (nu && ((k->flags & PCMON_KF_USER_DEPTH) || nu >= sampler_max_depth(g->smp)))
		cut = AGG_SF_CUT(AGG_UNWALK_DEPTH);
	else if (nu && !unw_is_root(g->env.sym, k->pid, k->epoch, us->ip[nu - 1], nu > 1))
		cut = AGG_SF_CUT(AGG_UNWALK_FP_CHAIN);
	st = convert_pcs(g, k, us ? us->ip : NULL, nu, ks ? ks->ip : NULL, nk, unwalk_of(k->uerr),
			 us ? us->ip + nu : NULL, nall - nu, !cut);
	if (!st || st->unwalk != AGG_WALK_OK || !nu)
		return st;
	if (!(st->flags & AGG_SF_CUT_SHORT))
		st->flags |= cut;
	return st;
}

/*
 * A dwarf record's runtime words (@d->py), unless BPF read no JavaScript frame though its
 * process runs a V8 (rbp held no frame pointer: code without them was running, a system
 * call's wrapper; or BPF did not walk: a stack copied from outside the thread): then the
 * frames the unwinder found V8 frame pointers for, read from the record's copy of the stack
 * (v8_frame_of_copy()), in @buf, their number in *@n.
 */
static const __u64 *js_from_copy(struct sample_g *g, const struct pcmon_dsample *d, uint32_t nu,
				 __u64 *buf, uint32_t *n)
{
	uint32_t np = MIN(d->pylen, PCMON_PY_FRAMES_MAX + 1), js = js_start(d->py, np), k = 1;
	const struct target *t = target_of(g, d->h.key.target);

	*n = np;
	/* a marker with frames after it (BPF read them), or saying the walk failed */
	if (js < np && (d->py[js] != PCMON_JS_MARK ||
			(js + 1 < np && (d->py[js + 1] & PCMON_PY_MARK_MASK) != PCMON_PY_MARK)))
		return d->py;
	/* (no marker at all: a stack copied from outside the thread, REAL's open intervals,
	 * or one taken before the engine looked at the process) */
	if (!t || !sample_of(t)->python || !v8_is_v8(g->v8, d->h.key.pid))
		return d->py;
	buf[0] = PCMON_JS_MARK;
	for (uint32_t i = 0; i < nu && k + PCMON_JS_FRAME_WORDS <= PCMON_JS_WORDS_MAX; i++)
		if (!v8_frame_of_copy(g->v8, d->h.key.pid, g->ubps[i], g->upcs[i], i, d->stack,
				      d->regs[7], d->ulen, (uint64_t *)&buf[k]))
			k += PCMON_JS_FRAME_WORDS;
	if (k == 1)
		return d->py;
	*n = k;
	return buf;
}

/*
 * A sample of @k's process came copied: count it towards the process's CFI tables (cfitab.h),
 * unless it is a V8's (its stacks are copied whatever the tables). A process a target watches
 * by itself (--pid, or a command it launched) is listed at its first copy, after a look for
 * its V8 made at once: the event of its first sample is handled after the records streamed
 * with it, and a launched program's first copies flooded the ring until then (66 KiB each,
 * bigframe at 10 kHz: 25 lost).
 */
static void copied(struct sample_g *g, const struct pcmon_key *k, uint64_t now)
{
	const struct target *t = target_of(g, k->target);
	bool own = t && t->kind == TARGET_PID;
	uint32_t live;

	/* (a record of an image the process has left since: its list would be the old one's) */
	if (!procs_proc_epoch(g->env.procs, k->pid, &live) && live != k->epoch)
		return;
	if (own && sample_of(t)->python && v8_first_look(g->v8, k->pid, k->epoch))
		sample_convert_js_look(g, k->pid, k->epoch);
	if (!v8_is_v8(g->v8, k->pid))
		cfitab_copied(g->cfi, k->pid, k->epoch, own, now);
}

/*
 * A --unwind dwarf record: unwind its copied stack with the objects' CFI. A walk that stops
 * short of a root keeps the frames it walked (cut short, with why); only a stack of which
 * not even the innermost frame could be placed is unwalkable.
 */
struct agg_stack *sample_convert_dwarf(struct sample_g *g, const struct pcmon_dsample *d,
				       size_t len)
{
	static const enum agg_unwalk cut_reason[] = {
		[UNW_END_TRUNCATED] = AGG_UNWALK_TRUNCATED,
		[UNW_END_DEPTH] = AGG_UNWALK_DEPTH,
		[UNW_END_NOCFI] = AGG_UNWALK_NOCFI,
		[UNW_END_FAULT] = AGG_UNWALK_FAULT,
	};
	uint32_t depth = sampler_max_depth(g->smp), nu = 0, nrt;
	enum agg_unwalk uw = unwalk_of(d->h.key.uerr);
	__u64 jsw[PCMON_JS_WORDS_MAX];
	const __u64 *rtw;
	enum unw_end end = UNW_END_ROOT;
	enum hs_end hend = HS_END_NATIVE;
	uint64_t t0 = now_ns();
	struct agg_stack *st;

	if (len < sizeof(*d) || d->ulen > len - sizeof(*d))
		return NULL;
	rtw = d->py;
	nrt = MIN(d->pylen, PCMON_PY_FRAMES_MAX + 1);
	if (GROW(g->upcs, g->cap_upcs, depth))
		return NULL;
	sym_sample_taken(g->env.sym, d->taken);
	if (d->h.key.uerr == PCMON_SERR_KTHREAD) {
		; /* a whole stack of kernel frames (convert_pcs()) */
	} else if (uw == AGG_WALK_OK && walks_java(g, &d->h.key) &&
		   hs_is_jvm(g->hs, d->h.key.pid, d->h.key.epoch)) {
		int e;

		/* a JVM: Java frames walked and named as the stack is (docs/java.md) */
		nu = hs_walk(g->hs, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack, d->stack,
			     d->ulen, d->code, g->upcs, depth, &e, &hend);
		end = e;
	} else if (uw == AGG_WALK_OK) {
		if (GROW(g->ubps, g->cap_ubps, depth))
			return NULL;
		nu = unw_walk_bp(g->env.sym, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack,
				 d->stack, d->ulen, g->upcs, g->ubps, depth, &end);
		/* a sample BPF could not walk with tables: list the process's (cfitab.h) */
		if (d->h.type == PCMON_DS_SAMPLE)
			copied(g, &d->h.key, t0);
		rtw = js_from_copy(g, d, nu, jsw, &nrt);
		/* a JVM not readable yet whose walk stopped short (in its JIT code): flagged */
		if (end != UNW_END_ROOT && walks_java(g, &d->h.key) &&
		    hs_starting(g->hs, d->h.key.pid))
			hend = HS_END_JAVA;
	} else if (uw == AGG_UNWALK_FAULT) {
		/*
		 * Nothing could be copied. A thread the kernel has just created has no frame but
		 * its entry, and its stack page may not be there yet: that is a whole stack.
		 */
		nu = unw_walk(g->env.sym, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack,
			      NULL, 0, g->upcs, 1, &end);
		if (end == UNW_END_ROOT)
			uw = AGG_WALK_OK;
		else
			nu = 0;
		if (uw != AGG_WALK_OK && log_verbosity >= LOG_DEBUG)
			pr_debug("pid %u: no user stack copied (pc %#llx, sp %#llx)", d->h.key.pid,
				 (unsigned long long)d->regs[16], (unsigned long long)d->regs[7]);
	}
	if (uw == AGG_WALK_OK && end != UNW_END_ROOT && log_verbosity >= LOG_DEBUG)
		pr_debug("pid %u: unwinding stopped (%s) after %u frames at pc %#llx, copy %u bytes",
			 d->h.key.pid, agg_unwalk_names[cut_reason[end]], nu,
			 nu ? (unsigned long long)g->upcs[nu - 1] : 0ULL, d->ulen);
	g->unwound++;
	g->copied += d->ulen;
	g->unwind_ns += now_ns() - t0;
	st = convert_pcs(g, &d->h.key, g->upcs, nu, d->kstack, MIN(d->klen, PCMON_KSTACK_MAX), uw,
			 rtw, nrt, end == UNW_END_ROOT);
	if (st && st->unwalk == AGG_WALK_OK && end != UNW_END_ROOT && !(st->flags & AGG_SF_CUT_SHORT))
		st->flags |= AGG_SF_CUT(hend == HS_END_JAVA ? AGG_UNWALK_JAVA : cut_reason[end]);
	sym_sample_taken(g->env.sym, 0);
	return st;
}

/*
 * Is there a CPython in process @pid (image @epoch)? BPF is told where, or that there is none
 * pcmon can read (so that it stops marking its samples as not known yet); a version pcmon
 * has no offsets for is said once per process, and keeps its native frames. A failed look
 * again (@again: it loaded objects) leaves an interpreter found before as it is.
 */
void sample_convert_python_look(struct sample_g *g, uint32_t pid, uint32_t epoch, bool again)
{
	struct pcmon_pyproc pp;
	char why[4400];
	uint32_t live;
	int r;

	/*
	 * Only at the image the process runs now: BPF reads the entry of that one alone, and a
	 * late look at one it has left (its first-sample event handled after the new image's
	 * first samples) would take the entry over, its samples unknown for good.
	 */
	if (!procs_proc_epoch(g->env.procs, pid, &live) && live != epoch)
		return;
	r = py_add(g->py, g->env.sym, pid, epoch, &pp, why, sizeof(why));
	/* a launcher whose libpython is not mapped yet: no entry, so that BPF marks its samples
	 * unknown and their conversion looks again (merge_python()) */
	if (py_set_pending(g->py, pid, epoch, r == -EAGAIN))
		return;
	if (r == -EAGAIN)
		r = -ENOENT; /* (looked at PY_LOOK_TRIES times: given up) */
	if (r == -ENOTSUP)
		py_set_unsupported(g->py, pid);
	if (r == -ENOTSUP && py_tell_once(g->py, pid))
		pr_warn("pid %u: %s: its samples keep their native frames", pid, why);
	if (r == -EPROTO && py_tell_once(g->py, pid))
		pr_warn("pid %u: %s: its samples that run Python code are flagged python_unknown",
			pid, why);
	if (r) {
		/* (a full map: BPF goes on marking them, and python_missed() drops the marker) */
		pp = (struct pcmon_pyproc){ .epoch = epoch };
		if (r == -EPROTO)
			pp.o.flags = PCMON_PYF_UNREADABLE;
		if (!again || !py_is_python(g->py, pid))
			sampler_py_set(g->smp, pid, &pp);
		return;
	}
	pp.epoch = epoch;
	r = sampler_py_set(g->smp, pid, &pp);
	if (r)
		pr_warn("pid %u: Python frames: %s", pid, strerror(-r));
	else if (!again)
		pr_debug("pid %u: CPython %u.%u.%u, its Python frames are read", pid,
			 pp.version >> 24, pp.version >> 16 & 0xff, pp.version >> 8 & 0xff);
}

/*
 * Is there a V8 pcmon reads in process @pid (image @epoch)? BPF is told, and reads its
 * JavaScript frames from then on; a V8 of another version is said once per process, and its
 * samples keep their native frames.
 */
void sample_convert_js_look(struct sample_g *g, uint32_t pid, uint32_t epoch)
{
	struct pcmon_v8proc vp;
	char why[4400];
	uint32_t live;
	int r;

	if (!procs_proc_epoch(g->env.procs, pid, &live) && live != epoch)
		return;
	r = v8_add(g->v8, g->env.sym, pid, epoch, &vp, why, sizeof(why));
	if (r == -ENOTSUP && v8_tell_once(g->v8, pid))
		pr_warn("pid %u: %s: its samples keep their native frames", pid, why);
	if (r) {
		sampler_js_set(g->smp, pid, NULL);
		return;
	}
	vp.epoch = epoch;
	r = sampler_js_set(g->smp, pid, &vp);
	if (r)
		pr_warn("pid %u: JavaScript frames: %s", pid, strerror(-r));
	else
		pr_debug("pid %u: V8 %u.%u.%u, its JavaScript frames are read", pid, vp.version >> 24,
			 vp.version >> 16 & 0xff, vp.version & 0xffff);
}
