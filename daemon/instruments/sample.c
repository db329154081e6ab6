// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument: its settings, its ops, and the path of a sample from BPF into a
 * target's aggregate. A frame-pointer sample arrives in BPF's in-kernel aggregate and is
 * drained every tick (on_entry); a --unwind dwarf sample arrives as a record of registers
 * and copied stack on a ring and is unwound here (on_dsample). Either way it is symbolized
 * into one agg_stack and charged to its target.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgpath.h"
#include "dbginfo.h"
#include "engine.h"
#include "groups.h"
#include "lines.h"
#include "pat.h"
#include "profil.h"
#include "probes.h"
#include "procs.h"
#include "proto.h"
#include "python.h"
#include "sample.h"
#include "sampler.h"
#include "slices.h"
#include "sym.h"
#include "target.h"
#include "unwind.h"
#include "util.h"
#include "when.h"

const char *const sample_unwind_names[3] = { "fp", "dwarf", "auto" };

/* An off-CPU interval of a --unwind dwarf target: its stack arrived, its length has not. */
struct pending {
	uint32_t tid, target;
	uint64_t ts;
	struct agg_stack *st;
};

/*
 * The instrument's counters for `pcmon status`, defined once: X(field, key, unit, part) —
 * reported as @key, in @unit of the field (1e6: ns as ms); part 1 before the counts map's
 * capacity, part 2 after it.
 */
#define SAMPLE_STATUS_FIELDS(X)                                                            \
	X(drains, drains, 1, 1)                                                            \
	X(drained_entries, drained_entries, 1, 1)                                          \
	X(drain_ns, drain_ms_total, 1e6, 1)                                                \
	X(drain_max_ns, drain_ms_max, 1e6, 1)                                              \
	/* of them, unasked: a time slice ended, a new target's first, a map filling */     \
	X(drains_slice, drains_at_slice_end, 1, 1)                                         \
	X(drains_first, drains_of_first_samples, 1, 1)                                     \
	X(drains_filling, drains_of_filling_map, 1, 1)                                     \
	/* the most entries a drain found, of sampler_capacity() */                        \
	X(fill_max, drain_fill_max, 1, 2)                                                  \
	/* drains that found the counts map half full or more */                           \
	X(drains_late, drains_late, 1, 2)                                                  \
	/* --unwind dwarf samples unwound, the time it took, the bytes of stack they had */ \
	X(unwound, dwarf_samples_unwound, 1, 2)                                            \
	X(unwind_ns, dwarf_unwind_ms_total, 1e6, 2)                                        \
	X(copied, dwarf_stack_bytes_total, 1, 2)

/* Engine-wide: what converting and draining samples needs. */
struct sample_g {
	struct inst_env env;
	struct sampler *smp;		/* the BPF programs that sample (sampler.h) */
	struct probes *probes;		/* critical-section probes, from the first target on */
	struct agg_stack *scratch;	/* conversion buffer for one stack */
	size_t scratch_cap;
	__u64 *upcs;			/* unwinder output */
	size_t cap_upcs;
#define SAMPLE_STATUS_FIELD(f, key, unit, part) uint64_t f;
	SAMPLE_STATUS_FIELDS(SAMPLE_STATUS_FIELD)
#undef SAMPLE_STATUS_FIELD
	/*
	 * An off-CPU record of a dwarf target: BPF noted its thread's name as it sent it, so the
	 * name is read again, whatever this drain read before (a thread that named itself after
	 * an earlier record of the same drain kept its first name: test_pprof_thread_labels).
	 */
	bool name_fresh;
	bool first_drain;		/* a target started and nothing was drained since */
	/*
	 * Names are read at most once per thread in each batch of samples: a drain of the
	 * counts maps, or a read of the dwarf ring. (Per drain alone, a --unwind dwarf target,
	 * whose samples never go through the counts maps, kept the name a child had before
	 * it named itself: test_exports_rooted_at_the_group.)
	 */
	uint64_t name_gen;
	uint64_t last_drain_ns;
	/*
	 * The wall time a drain charges its samples at (their time slice): now, unless a whole
	 * second (every slice boundary is one) passed since the last drain: then just before
	 * it. Every drain after a boundary comes within milliseconds of it (the tick's, or a
	 * save's or a listing's before it), so what it finds was taken before the boundary
	 * but for those milliseconds.
	 */
	uint64_t charge_wall;
	uint64_t last_drain_wall, last_tick_wall;
	struct pending *pending;	/* dwarf off-CPU intervals still open, by thread */
	size_t npending, cap_pending;
	struct cgpath *cgroups;		/* the paths of the cgroups samples were taken in */
	struct itab *section_keys;	/* (name address, pid, epoch) of marked sections seen */
	uint32_t *section_names;	/* ... and the string id of each name */
	size_t cap_sections;
	struct py *py;			/* Python frames: interpreters found, code objects named */
	uint32_t *natlocs, *mergelocs;	/* a user stack's native locations, merged with them */
	size_t cap_natlocs;
};

static struct target *target_of(struct sample_g *g, uint32_t id)
{
	struct target *t = id < PCMON_MAX_TARGETS ? g->env.targets[id] : NULL;

	return t && sample_of(t) ? t : NULL;
}

/* ---- settings */

struct sample *sample_new(void)
{
	struct sample *sp = calloc(1, sizeof(*sp));
	struct slices_cfg cfg;

	slices_cfg_parse(SLICES_DEFAULT, &cfg, NULL, 0); /* (it parses) */
	cfg.budget = SLICES_DEFAULT_BUDGET;
	/* a stack's samples and off-CPU nanoseconds */
	if (sp && (!(sp->agg = agg_new()) || !(sp->slices = slices_new(&cfg, 2)) ||
		   !(sp->threads.keys = itab_new()) ||
		   !(sp->processes.keys = itab_new()) || !(sp->cgroups.keys = itab_new()))) {
		sample_free(sp);
		sp = NULL;
	}
	if (sp)
		sp->python = true;
	return sp;
}

static void names_free(struct sample_names *n)
{
	itab_free(n->keys);
	free(n->names);
	free(n->read);
}

void sample_free(void *st)
{
	struct sample *sp = st;

	if (!sp)
		return;
	for (size_t i = 0; i < sp->ncrit; i++) {
		free(sp->crit[i].name);
		free(sp->crit[i].text);
		pat_free(sp->crit[i].pat);
	}
	free(sp->crit);
	free(sp->when_text);
	pat_free(sp->when);
	agg_free(sp->agg);
	sample_marks_free(sp);
	slices_free(sp->slices);
	names_free(&sp->threads);
	names_free(&sp->processes);
	names_free(&sp->cgroups);
	free(sp);
}

void sample_lost_json(const struct sample *sp, cJSON *o)
{
	/* the engine's drops, then BPF's */
#define ADD_OWN(f, key, need, drop, name) \
	if (drop)                         \
		cJSON_AddNumberToObject(o, #name, sp->f);
	SAMPLE_COUNT_FIELDS(ADD_OWN)
#undef ADD_OWN
#define ADD_BPF(f, since, drop, name) \
	if (drop)                     \
		cJSON_AddNumberToObject(o, #name, sp->lost.f);
	PCMON_TSTAT_FIELDS(ADD_BPF)
#undef ADD_BPF
}

uint64_t sample_lost(const struct sample *sp)
{
	uint64_t n = 0;

#define ADD_OWN(f, key, need, drop, name) n += drop ? sp->f : 0;
	SAMPLE_COUNT_FIELDS(ADD_OWN)
#undef ADD_OWN
#define ADD_LOST(f, since, drop, name) n += drop ? sp->lost.f : 0;
	PCMON_TSTAT_FIELDS(ADD_LOST)
#undef ADD_LOST
	return n;
}

const char *sample_mode_name(const struct sample *sp)
{
	return sp->real ? "REAL" : "VIRTUAL";
}

static int parse_critical(const char *spec, int icase, char **name, struct pat **pat, cJSON **err)
{
	const char *eq = strchr(spec, '=');
	struct pat_error pe = { 0 };
	int r;

	if (!eq || eq == spec) {
		*err = proto_error(2, "--critical '%s': expected NAME=PATTERN", spec);
		return -EINVAL;
	}
	r = pat_parse(eq + 1, icase ? PAT_ICASE : 0, pat, &pe);
	if (r) {
		*err = r == -EINVAL ? proto_error(2, "--critical %.*s: column %d: %s", (int)(eq - spec),
						  spec, pe.column, pe.msg)
				    : proto_error(1, "out of memory");
		return r;
	}
	*name = strndup(spec, eq - spec);
	return 0;
}

int sample_set_criticals(struct sample *sp, const cJSON *arr, cJSON **err)
{
	const cJSON *it;
	size_t cap = 0;

	cJSON_ArrayForEach(it, arr) {
		struct sample_crit c = { 0 };

		if (!cJSON_IsString(it)) {
			*err = proto_error(2, "--critical: expected NAME=PATTERN strings");
			return -EINVAL;
		}
		if (sp->ncrit >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(it->valuestring, sp->icase, &c.name, &c.pat, err))
			return -EINVAL;
		c.text = strdup(strchr(it->valuestring, '=') + 1);
		if (GROW(sp->crit, cap, sp->ncrit + 1)) {
			pat_free(c.pat);
			free(c.name);
			free(c.text);
			*err = proto_error(1, "out of memory");
			return -ENOMEM;
		}
		sp->crit[sp->ncrit++] = c;
	}
	return 0;
}

int sample_list_criticals(const struct sample *sp, const cJSON *arr, int icase,
			  struct agg_critical **out, size_t *n, cJSON **err)
{
	struct agg_critical *c = calloc(sp->ncrit + cJSON_GetArraySize(arr) + 1, sizeof(*c));
	const cJSON *it;

	*out = c;
	*n = 0;
	if (!c) {
		*err = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < sp->ncrit; i++)
		c[(*n)++] = (struct agg_critical){ sp->crit[i].name, sp->crit[i].pat };
	cJSON_ArrayForEach(it, arr) {
		char *name;
		struct pat *p;

		if (!cJSON_IsString(it)) {
			*err = proto_error(2, "--critical: expected NAME=PATTERN strings");
			return -EINVAL;
		}
		if (*n >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(it->valuestring, icase, &name, &p, err))
			return -EINVAL;
		c[(*n)++] = (struct agg_critical){ name, p };
	}
	return 0;
}

void sample_free_criticals(const struct sample *sp, struct agg_critical *c, size_t n)
{
	for (size_t i = sp->ncrit; i < n; i++) {
		free((char *)c[i].name);
		pat_free((struct pat *)c[i].pat);
	}
	free(c);
}

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
		return AGG_WALK_OK;
	case PCMON_SERR_FULL:
		return AGG_UNWALK_LOST;
	default:
		return AGG_UNWALK_FAULT;
	}
}

static void python_look(struct sample_g *g, uint32_t pid, uint32_t epoch, bool again);

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
	for (uint32_t i = 0; i < nu; i++)
		g->natlocs[i] = sym_user(g->env.sym, k->pid, k->epoch, upc[i], i > 0);
	in.nat = g->natlocs;
	/*
	 * A dwarf record is converted as it streams, before the lifecycle events that came with
	 * it are handled: the first sample of a process BPF knew nothing of makes the engine look
	 * for its interpreter now, rather than after the rest of the stream (its address map is
	 * read: its native pcs were just named).
	 */
	if (in.status == PCMON_PY_UNKNOWN && py_first_look(g->py, k->pid, k->epoch))
		python_look(g, k->pid, k->epoch, false);
	if (in.status == PCMON_PY_UNKNOWN || in.status == PCMON_PY_NOSTATE) {
		for (uint32_t i = 0; i < nu; i++)
			st->locs[nu - 1 - i] = g->natlocs[i];
		if (python_missed(g, k, in.status, g->natlocs, nu, whole))
			st->flags = (st->flags & ~0xff02u) | AGG_SF_CUT(AGG_UNWALK_PYTHON_UNKNOWN);
		return nu;
	}
	if (in.status > PCMON_PY_DEPTH)
		in.status = PCMON_PY_FAULT;
	n = py_merge(g->py, &in, g->mergelocs, &cut);
	for (uint32_t i = 0; i < n; i++)
		st->locs[n - 1 - i] = g->mergelocs[i];
	if (cut != PCMON_PY_OK)
		st->flags = (st->flags & ~0xff02u) | AGG_SF_CUT(cut_reason[cut]);
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
static void python_early(void *ctx, uint32_t pid, const __u64 *ip, uint32_t n)
{
	struct sample_g *g = ctx;

	for (uint32_t i = python_start(ip, n) + 1; i < n; i++)
		if (py_code_early(g->py, pid, ip[i]))
			break;
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
				     enum agg_unwalk unwalk, const __u64 *pyw, uint32_t npy, bool whole)
{
	bool oncpu = k->kind == PCMON_KIND_ONCPU || k->kind == PCMON_KIND_ONCPU_KMODE;
	struct sym *sym = g->env.sym;
	struct agg_stack *st;
	size_t need = agg_stack_size(nu + (npy ? npy - 1 : 0) + nk);

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
	if (st->unwalk == AGG_WALK_OK && !nu)
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
	if (npy) {
		nu = merge_python(g, k, upc, nu, pyw, npy, whole, st);
	} else {
		for (uint32_t i = 0; i < nu; i++)
			st->locs[nu - 1 - i] = sym_user(sym, k->pid, k->epoch, upc[i], i > 0);
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
static struct agg_stack *convert(struct sample_g *g, const struct pcmon_key *k,
				 const struct pcmon_stack *us, const struct pcmon_stack *ks)
{
	uint32_t nall = us ? us->len : 0, nk = ks ? ks->len : 0;
	uint32_t nu = us ? python_start(us->ip, nall) : 0;
	uint32_t cut = 0;
	struct agg_stack *st;

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
 * A --unwind dwarf record: unwind its copied stack with the objects' CFI. A walk that stops
 * short of a root keeps the frames it walked (cut short, with why); only a stack of which
 * not even the innermost frame could be placed is unwalkable.
 */
static struct agg_stack *convert_dwarf(struct sample_g *g, const struct pcmon_dsample *d,
				       size_t len)
{
	static const enum agg_unwalk cut_reason[] = {
		[UNW_END_TRUNCATED] = AGG_UNWALK_TRUNCATED,
		[UNW_END_DEPTH] = AGG_UNWALK_DEPTH,
		[UNW_END_NOCFI] = AGG_UNWALK_NOCFI,
		[UNW_END_FAULT] = AGG_UNWALK_FAULT,
	};
	uint32_t depth = sampler_max_depth(g->smp), nu = 0;
	enum agg_unwalk uw = unwalk_of(d->h.key.uerr);
	enum unw_end end = UNW_END_ROOT;
	uint64_t t0 = now_ns();
	struct agg_stack *st;

	if (len < sizeof(*d) || d->ulen > len - sizeof(*d))
		return NULL;
	if (GROW(g->upcs, g->cap_upcs, depth))
		return NULL;
	sym_sample_taken(g->env.sym, d->taken);
	if (uw == AGG_WALK_OK) {
		nu = unw_walk(g->env.sym, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack,
			      d->stack, d->ulen, g->upcs, depth, &end);
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
			 d->py, MIN(d->pylen, PCMON_PY_FRAMES_MAX + 1), end == UNW_END_ROOT);
	if (st && st->unwalk == AGG_WALK_OK && end != UNW_END_ROOT && !(st->flags & AGG_SF_CUT_SHORT))
		st->flags |= AGG_SF_CUT(cut_reason[end]);
	sym_sample_taken(g->env.sym, 0);
	return st;
}

uint32_t sample_names_get(const struct sample_names *n, uint64_t key)
{
	int64_t id = n->keys ? itab_find(n->keys, &key, sizeof(key)) : -1;

	return id < 0 ? 0 : n->names[id];
}

/* The slot of @key, a new one unnamed and unread: its index, or -ENOMEM. */
static int64_t names_slot(struct sample_names *n, uint64_t key)
{
	int64_t found = itab_find(n->keys, &key, sizeof(key));
	size_t need = (size_t)itab_count(n->keys) + 1, cap = n->cap;
	uint32_t id;

	if (found >= 0)
		return found;
	/* room first: a key interned has its slots */
	if (GROW(n->names, cap, need) || GROW(n->read, n->cap, need) ||
	    itab_intern(n->keys, &key, sizeof(key), &id) < 0)
		return -ENOMEM;
	n->names[id] = n->read[id] = 0;
	return id;
}

int sample_names_set(struct sample_names *n, uint64_t key, uint32_t name)
{
	int64_t id = names_slot(n, key);

	if (id < 0)
		return -ENOMEM;
	n->names[id] = name;
	return 0;
}

uint32_t sample_thread_name(const struct sample *sp, uint32_t tid)
{
	return sample_names_get(&sp->threads, tid);
}

int sample_name_thread(struct sample *sp, uint32_t tid, uint32_t name)
{
	return sample_names_set(&sp->threads, tid, name);
}

uint32_t sample_process_name(const struct sample *sp, uint32_t pid)
{
	uint32_t name = sample_names_get(&sp->processes, pid);

	return name ? name : sample_names_get(&sp->threads, pid);
}

uint32_t sample_cgroup_name(const struct sample *sp, uint64_t id)
{
	return sample_names_get(&sp->cgroups, id);
}

/* A comm file of /proc into @buf ("" if it cannot be read: the task is gone). */
static void read_comm(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * @n[@key] := @comm, read in drain @drain; an empty @comm (gone) keeps the name it had (a
 * new one is "": sym string 0).
 */
static void name_one(struct sample_g *g, struct sample_names *n, uint64_t key, const char *comm,
		     uint64_t drain)
{
	int64_t id = names_slot(n, key);
	uint32_t name;

	if (id < 0)
		return;
	n->read[id] = drain;
	if (comm[0] && !sym_intern_str(g->env.sym, comm, &name))
		n->names[id] = name;
}

/*
 * A thread's name (the exports' thread label) and its process's (list --by comm), read at
 * most once a batch of samples (name_gen), when a sample of the thread is read: as BPF
 * noted them with its latest sample, else as /proc has them now ("" for a thread gone by
 * then, unless it was named before).
 */
static void name_thread(struct sample_g *g, struct sample *sp, const struct agg_stack *st)
{
	char path[64], comm[32] = "", pcomm[32] = "";
	int64_t id;

	if (!st || !st->tid)
		return;
	id = itab_find(sp->threads.keys, &(uint64_t){ st->tid }, sizeof(uint64_t));
	if (!g->name_fresh && id >= 0 && sp->threads.read[id] == g->name_gen)
		return;
	if (sampler_thread_name(g->smp, st->tid, comm, pcomm, sizeof(comm))) {
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", st->pid, st->tid);
		read_comm(path, comm, sizeof(comm));
		snprintf(path, sizeof(path), "/proc/%u/comm", st->pid);
		read_comm(path, pcomm, sizeof(pcomm));
	}
	name_one(g, &sp->threads, st->tid, comm, g->name_gen);
	name_one(g, &sp->processes, st->pid, pcomm, g->name_gen);
}

/* The path of a cgroup a target's sample was taken in, found the first time it is met. */
static void name_cgroup(struct sample_g *g, struct sample *sp, const struct agg_stack *st)
{
	char gone[32];
	const char *path;
	uint32_t name;

	if (!st || !st->cgroup || sample_names_get(&sp->cgroups, st->cgroup))
		return;
	path = cgpath_of(g->cgroups, st->cgroup);
	if (!path) {
		snprintf(gone, sizeof(gone), "cgroup:%llu", (unsigned long long)st->cgroup);
		path = gone;
	}
	if (!sym_intern_str(g->env.sym, path, &name))
		sample_names_set(&sp->cgroups, st->cgroup, name);
}

/*
 * Add @count samples of stack @st (NULL: it could not be built) to @t. A target whose owner
 * is over her memory allowance still counts the stacks it has, but keeps no new one: those
 * samples are lost, and counted as such.
 */
static void charge(struct sample_g *g, struct target *t, const struct agg_stack *st,
		   uint64_t count, uint64_t ns)
{
	struct sample *sp = sample_of(t);
	uint32_t id;
	int r = !st ? -ENOMEM
		: t->over_memory ? agg_bump_id(sp->agg, st, count, ns, &id)
				  : agg_add_id(sp->agg, st, count, ns, &id);

	if (!r) {
		name_thread(g, sp, st);
		name_cgroup(g, sp, st);
		uint64_t v[2] = { count, ns };

		/* the whole-life count has it: a slice that cannot is told in status */
		if (slices_add(sp->slices, id, v, g->charge_wall))
			sp->slices_lost += count;
	}
	if (r == -ENOENT)
		sp->lost_memory += count;
	else if (r)
		sp->lost_oom += count;
	else
		sp->seen_samples += count;
	t->dirty = true;
}

/* ---- draining */

static void on_entry(void *ctx, const struct pcmon_key *k, const struct pcmon_val *v,
		     const struct pcmon_stack *us, const struct pcmon_stack *ks)
{
	struct sample_g *g = ctx;
	struct target *t = target_of(g, k->target);
	const struct agg_stack *st;

	g->drained_entries++;
	if (!t)
		return; /* dropped while its last samples were in flight */
	st = convert(g, k, us, ks);
	charge(g, t, st, v->count, v->ns);
}

/* The time slice what is read now goes to (g->charge_wall). */
static void charge_clock(struct sample_g *g)
{
	g->charge_wall = slices_charge_wall(&g->last_drain_wall, wall_ns());
}

/* Read what BPF holds; false if it held nothing (no drain counted). */
static bool drain(struct sample_g *g)
{
	uint32_t entries, cap = sampler_capacity(g->smp);
	uint64_t t0 = now_ns(), took;

	g->name_gen++;
	py_next_gen(g->py);
	charge_clock(g);
	/* every sample taken before t0 is read after this: exited processes' maps may go */
	if (!sampler_pending(g->smp, &entries)) {
		sym_forget_final(g->env.sym, t0);
		return false;
	}
	sampler_drain(g->smp, on_entry, g);
	sym_forget_final(g->env.sym, t0);
	g->first_drain = false; /* whatever asked for it: a save, a listing, the tick */
	took = now_ns() - t0;
	g->drains++;
	g->drain_ns += took;
	g->drain_max_ns = MAX(g->drain_max_ns, took);
	g->fill_max = MAX(g->fill_max, entries);
	if (entries >= cap / 2)
		g->drains_late++;
	g->last_drain_ns = t0;
	return true;
}

/*
 * The engine's tick (once a second, and when BPF says a counts map is an eighth full,
 * PCMON_DS_DRAIN): drain a map that is filling. A drain scans every bucket of both maps
 * whatever they hold, so the few stacks of a steady program wait in BPF, where each costs
 * nothing more however often it is counted, until the engine saves its results (every 5 s,
 * drain_all) or someone lists them (drain_all first: listings are always current). A flood
 * of new stacks is drained long before a map fills.
 */
/*
 * A time slice of a running target ended since the last tick: its samples are drained now,
 * charged to it (drain()), and slices coarsened. The engine's timer fires just after whole
 * seconds (engine_first_tick()), so a slice holds what was taken in it but for the few
 * milliseconds the tick comes after its end (docs/sampling.md, "Time slices").
 */
static void tick_slices(struct sample_g *g)
{
	uint64_t wall = wall_ns(), boundary = 0;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = target_of(g, i);
		uint64_t len;

		if (!t || t->state != TARGET_RUNNING)
			continue;
		len = sample_of(t)->slices->cfg.tier[0].len_ns;
		if (wall / len != g->last_tick_wall / len)
			boundary = MAX(boundary, wall - wall % len);
	}
	g->last_tick_wall = wall;
	if (boundary && drain(g))
		g->drains_slice++;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = target_of(g, i);

		if (t && slices_tick(sample_of(t)->slices, wall))
			t->dirty = true;
	}
}

static void tick(void *gp)
{
	struct sample_g *g = gp;
	uint32_t entries;

	tick_slices(g);

	/*
	 * A new target's first samples are drained at once, so that the costliest naming (its
	 * objects opened, their symbols sorted, their debug info read) is done before anyone
	 * asks: a listing on a machine busy with hundreds of threads waited 0.6 s for it.
	 */
	if (!sampler_pending(g->smp, &entries))
		return;
	if (g->first_drain && drain(g))
		g->drains_first++;
	else if (entries >= sampler_capacity(g->smp) / 8 && drain(g))
		g->drains_filling++;
}

/* Everything BPF holds: the pair being written (the other is empty between drains). */
static void drain_all(void *g)
{
	drain(g);
}

static struct pending *pending_find(struct sample_g *g, uint32_t tid)
{
	for (size_t i = 0; i < g->npending; i++)
		if (g->pending[i].tid == tid)
			return &g->pending[i];
	return NULL;
}

/* @count samples of stack @st taken as @kind (a copy: @st stays as it is). */
static void charge_kind(struct sample_g *g, struct target *t, const struct agg_stack *st,
			uint32_t kind, uint64_t count)
{
	size_t sz = agg_stack_size(st->nuser + st->nkern);
	struct agg_stack *c = malloc(sz);

	if (!c) {
		sample_of(t)->lost_oom += count;
		return;
	}
	memcpy(c, st, sz);
	c->kind = kind;
	charge(g, t, c, count, 0);
	free(c);
}

static void pending_drop(struct sample_g *g, struct pending *p)
{
	free(p->st);
	*p = g->pending[--g->npending];
}

static void on_dsample(struct sample_g *g, struct target *t, const struct pcmon_dhdr *h,
		       const void *data, size_t len)
{
	struct agg_stack *st;
	struct pending *p;
	size_t sz;

	switch (h->type) {
	case PCMON_DS_SAMPLE:
		charge(g, t, convert_dwarf(g, data, len), 1, 0);
		break;
	case PCMON_DS_OFF:
		charge(g, t, convert_dwarf(g, data, len), 1, h->ns);
		break;
	case PCMON_DS_OWED:
		charge(g, t, convert_dwarf(g, data, len), h->ns, 0);
		break;
	case PCMON_DS_OFF_START:
		st = convert_dwarf(g, data, len);
		p = pending_find(g, h->tid);
		if (p)
			pending_drop(g, p); /* its end was lost with a full ring: counted there */
		sz = st ? agg_stack_size(st->nuser + st->nkern) : 0;
		if (!st || GROW(g->pending, g->cap_pending, g->npending + 1)) {
			sample_of(t)->lost_oom++;
			return;
		}
		p = &g->pending[g->npending];
		*p = (struct pending){ .tid = h->tid, .target = t->id, .ts = h->ts, .st = malloc(sz) };
		if (!p->st) {
			sample_of(t)->lost_oom++;
			return;
		}
		memcpy(p->st, st, sz);
		g->npending++;
		break;
	case PCMON_DS_OWED_END:
		p = pending_find(g, h->tid);
		if (p)
			charge_kind(g, t, p->st, h->key.kind, h->ns);
		break;
	case PCMON_DS_OFF_END:
		p = pending_find(g, h->tid);
		if (!p)
			return; /* its start was lost with a full ring: counted there */
		charge(g, t, p->st, 1, h->ns);
		pending_drop(g, p);
		break;
	}
}

static void on_record(void *gp, const void *data, size_t len)
{
	struct sample_g *g = gp;
	const struct pcmon_dhdr *h = data;
	struct target *t = len >= sizeof(*h) ? target_of(g, h->key.target) : NULL;

	if (!t)
		return;
	g->name_fresh = h->type != PCMON_DS_SAMPLE;
	on_dsample(g, t, h, data, len);
	g->name_fresh = false;
}

/* ---- the ops */

static void close_g(void *gp);

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	struct sampler_opts so = { .max_depth = env->opts->max_depth,
				   .dwarf_stack = env->opts->dwarf_stack,
				   .counts_entries = env->opts->counts_entries,
				   .procs = env->procs };
	struct sample_g *g = inst_g_new(env, sizeof(*g), err, errlen); /* env: its first member */
	int r;

	*gp = NULL;
	if (!g)
		return -ENOMEM;
	if (!(g->section_keys = itab_new()) || !(g->cgroups = cgpath_new(NULL))) {
		close_g(g);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->name_gen = 1; /* (0: a name slot never read) */
	g->py = py_new(env->sym);
	if (!g->py) {
		close_g(g);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = sampler_open(&so, &g->smp, err, errlen);
	if (r) {
		close_g(g);
		return r;
	}
	sampler_py_hook(g->smp, python_early, g);
	*gp = g;
	return 0;
}

static void close_g(void *gp)
{
	struct sample_g *g = gp;

	if (!g)
		return;
	free(g->scratch);
	free(g->upcs);
	while (g->npending)
		pending_drop(g, &g->pending[0]);
	free(g->pending);
	itab_free(g->section_keys);
	free(g->section_names);
	cgpath_free(g->cgroups);
	py_free(g->py);
	free(g->natlocs);
	free(g->mergelocs);
	probes_stop(g->probes);
	sampler_close(g->smp);
	free(g);
}

static int fds(void *gp, int *out, int max)
{
	struct sample_g *g = gp;

	if (max < 2)
		return 0;
	out[0] = sampler_dsamples_fd(g->smp);
	out[1] = sampler_stacks_fd(g->smp);
	return 2;
}

/* The dwarf records and new stacks BPF streamed; true when a counts map is filling up. */
static bool stream(void *gp)
{
	struct sample_g *g = gp;

	g->name_gen++;
	py_next_gen(g->py);
	charge_clock(g);
	sampler_poll(g->smp, on_record, g);
	return sampler_drain_wanted(g->smp);
}

/*
 * Is there a CPython in process @pid (image @epoch)? BPF is told where, or that there is none
 * pcmon can read (so that it stops marking its samples as not known yet); a version pcmon
 * has no offsets for is said once per process, and keeps its native frames. A failed look
 * again (@again: it loaded objects) leaves an interpreter found before as it is.
 */
static void python_look(struct sample_g *g, uint32_t pid, uint32_t epoch, bool again)
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
	if (r == -ENOTSUP && py_tell_once(g->py, pid))
		pr_warn("pid %u: %s: its samples keep their native frames", pid, why);
	if (r) {
		/* (a full map: BPF goes on marking them, and python_missed() drops the marker) */
		pp = (struct pcmon_pyproc){ .epoch = epoch };
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
 * A process of a target that reads Python frames is first sampled, or loads objects (a
 * libpython opened after the first sample): is there a CPython in it (python_look(), unless
 * one of its first samples made the engine look already)?
 */
static void event(void *gp, struct target *t, void *st, const struct pcmon_event *ev)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	(void)t;
	/*
	 * (An exec leaves the old image's entry: BPF reads no entry of another image, and the
	 * new image's may be there already, made by one of its first records, which stream in
	 * before this event is handled.)
	 */
	if (ev->type == PCMON_EV_EXIT) {
		sampler_py_set(g->smp, ev->pid, NULL);
		py_exited(g->py, ev->pid, now_ns());
		return;
	}
	if (!sp->python || (ev->type != PCMON_EV_SAMPLED && ev->type != PCMON_EV_DLOPEN))
		return;
	if (ev->type == PCMON_EV_SAMPLED && !py_first_look(g->py, ev->pid, ev->epoch))
		return;
	python_look(g, ev->pid, ev->epoch, ev->type == PCMON_EV_DLOPEN);
}

static void attach_usdt(void *ctx, const char *path)
{
	struct sample_g *g = ctx;

	sampler_usdt_attach(g->smp, path);
}

/*
 * Critical-section probes: those of the objects a watched process has mapped now, and
 * (pcmon run) of the command it is about to exec, before it is released; after that the
 * probe thread attaches those of whatever processes load (probes.h).
 */
static int attach_probes(struct sample_g *g, struct target *t, cJSON **rep)
{
	char err[256], path[64];
	struct stat st;

	/* started here, not at open: pcmond forks into the background after that */
	if (!g->probes && probes_start(g->smp, g->env.procs, &g->probes, err, sizeof(err))) {
		*rep = proto_error(1, "%s", err);
		return -1;
	}
	if (t->kind != TARGET_PID)
		return 0;
	sym_proc_usdt(g->env.sym, t->pid, 0, attach_usdt, g);
	/* the descriptor is the client's, opened with its rights: a regular file only */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", t->exe_fd);
	if (t->exe_fd >= 0 && !fstat(t->exe_fd, &st) && S_ISREG(st.st_mode) &&
	    sym_fd_has_probes(t->exe_fd))
		sampler_usdt_attach(g->smp, path);
	return 0;
}

static bool wanted(const cJSON *req)
{
	return !proto_bool(req, "no_sample", 0);
}

static int new_state(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const char *mode = proto_str(req, "mode", NULL);
	const char *unwind = proto_str(req, "unwind", "auto");
	double usec = proto_num(req, "interval_us", 10000);
	uint64_t floor_ns = sampler_min_period_ns();
	struct sample *sp;

	(void)gp;
	(void)c;
	if (usec * 1000 < floor_ns) {
		*rep = proto_error(2, "--interval %g: must be a whole number of microseconds from %llu (this kernel's floor) to 60000000",
				   usec, (unsigned long long)(floor_ns + 999) / 1000);
		return -EINVAL;
	}
	sp = sample_new();
	if (!sp) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	sp->period_ns = (uint64_t)usec * 1000;
	sp->real = mode && !strcmp(mode, "real");
	sp->kernel = proto_bool(req, "kernel", 0);
	sp->no_inline = proto_bool(req, "no_inline", 0);
	sp->python = !proto_bool(req, "no_python", 0);
	/* auto: frame pointers are not whole even where kept (leaf functions have no frame),
	 * so CFI unwinding is the cheapest method that gives whole stacks; see README */
	snprintf(sp->unwind, sizeof(sp->unwind), "%s", unwind);
	sp->dwarf = strcmp(unwind, "fp") != 0;
	sp->icase = proto_bool(req, "icase", 0);
	if (when_compile(req, sp->icase, &sp->when, rep))
		goto fail;
	if (sp->when) {
		sp->when_text = strdup(proto_str(req, "when", ""));
		sp->when_from_file = proto_bool(req, "when_from_file", 0);
		if (!sp->when_text) {
			*rep = proto_error(1, "out of memory");
			goto fail;
		}
	}
	if (sample_set_criticals(sp, cJSON_GetObjectItemCaseSensitive(req, "critical"), rep) ||
	    sample_set_slices(sp, req, rep))
		goto fail;
	sp->flags = (sp->kernel ? PCMON_TF_KERNEL : 0) | (sp->real ? PCMON_TF_REAL : 0) |
		    (sp->dwarf ? PCMON_TF_DWARF : 0) | (sp->python ? PCMON_TF_PYTHON : 0);
	*out = sp;
	return 0;
fail:
	sample_free(sp);
	return -EINVAL;
}

/* BPF's view of the target: the target's flags and sampling's. */
static int configure(struct sample_g *g, struct target *t, struct sample *sp)
{
	return procs_target_set(g->env.procs, t->id, t->flags | sp->flags, sp->period_ns, t->owner);
}

static void release(struct sample_g *g, struct sample *sp)
{
	if (sp->holds_period)
		sampler_period_put(g->smp, sp->period_ns);
	if (sp->holds_offcpu)
		sampler_offcpu_put(g->smp);
	sp->holds_period = sp->holds_offcpu = false;
}

static int attach(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct sample_g *g = gp;
	struct sample *sp = st;
	char err[256];
	int r;

	if (attach_probes(g, t, rep))
		return -1;
	r = sampler_period_get(g->smp, sp->period_ns, err, sizeof(err));
	if (r) {
		*rep = proto_error(1, "%s", err);
		return r;
	}
	sp->holds_period = true;
	g->first_drain = true;
	r = !sp->dwarf || sp->real ? sampler_stacks_get(g->smp, err, sizeof(err)) : 0;
	if (r) {
		*rep = proto_error(1, "%s", err);
		release(g, sp);
		return r;
	}
	if (sp->real) {
		r = sampler_offcpu_get(g->smp, err, sizeof(err));
		if (r) {
			*rep = proto_error(1, "%s", err);
			release(g, sp);
			return r;
		}
		sp->holds_offcpu = true;
	}
	procs_tstat(g->env.procs, t->id, &sp->lost_base);
	r = configure(g, t, sp);
	if (r) {
		*rep = proto_error(1, "cannot register the target with BPF: %s", strerror(-r));
		release(g, sp);
	}
	return r;
}

static void set_active(void *g, struct target *t, void *st, bool active)
{
	(void)active; /* t->flags says it */
	configure(g, t, st);
}

/* The drop counters BPF keeps for the target, since it was started or zeroed. */
static void accumulate_lost(struct sample_g *g, const struct target *t, struct sample *sp)
{
	struct pcmon_tstat now;

	if (!sp->holds_period)
		return; /* released: the BPF counters belong to nobody now */
	procs_tstat(g->env.procs, t->id, &now);
#define SINCE_BASE(f, since, drop, name) sp->lost.f = now.f - sp->lost_base.f;
	PCMON_TSTAT_FIELDS(SINCE_BASE)
#undef SINCE_BASE
}

static void stop(void *gp, struct target *t, void *st)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	if (sp->holds_period)
		configure(g, t, sp); /* t->flags: no longer active */
	accumulate_lost(g, t, sp);
	release(g, sp);
}

static void zero(void *gp, struct target *t, void *st)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	agg_zero(sp->agg);
	slices_zero(sp->slices);
	sp->slices_lost = 0;
#define ZERO_COUNT(f, key, need, drop, name) sp->f = 0;
	SAMPLE_COUNT_FIELDS(ZERO_COUNT)
#undef ZERO_COUNT
	memset(&sp->lost, 0, sizeof(sp->lost));
	if (sp->holds_period)
		procs_tstat(g->env.procs, t->id, &sp->lost_base);
}

static size_t bytes(const void *st)
{
	const struct sample *sp = st;

	return agg_bytes(sp->agg) + slices_bytes(sp->slices);
}

static void facts_json(void *g, const struct target *t, const void *st, cJSON *o)
{
	const struct sample *sp = st;

	(void)g;
	(void)t;
	cJSON_AddStringToObject(o, "mode", sample_mode_name(sp));
	cJSON_AddNumberToObject(o, "interval_us", sp->period_ns / 1000);
	cJSON_AddBoolToObject(o, "kernel", sp->kernel);
	cJSON_AddBoolToObject(o, "python", sp->python);
	cJSON_AddStringToObject(o, "unwind", sp->unwind[0] ? sp->unwind : "fp");
	if (sp->when_text)
		cJSON_AddStringToObject(o, "when", sp->when_text);
	sample_slices_json(sp, o);
}

/* How the stacks counted were walked: samples unwalkable and cut short, by reason (for
 * /metrics; the listing says the same of what it lists). */
static void add_walk_reasons(const struct sample *sp, cJSON *o)
{
	uint64_t unwalk[AGG_UNWALK_MAX] = { 0 }, cut[AGG_UNWALK_MAX] = { 0 }, count, ns;
	cJSON *u, *c;

	for (size_t i = 0; i < agg_count(sp->agg); i++) {
		const struct agg_stack *st = agg_get(sp->agg, i, &count, &ns);

		if (st && st->unwalk && st->unwalk < AGG_UNWALK_MAX)
			unwalk[st->unwalk] += count;
		else if (st && (st->flags & AGG_SF_CUT_SHORT))
			cut[agg_cut_reason(st)] += count;
	}
	u = cJSON_AddObjectToObject(o, "unwalkable_by_reason");
	c = cJSON_AddObjectToObject(o, "cut_short_by_reason");
	for (int r = AGG_WALK_OK + 1; r < AGG_UNWALK_MAX; r++) {
		cJSON_AddNumberToObject(u, agg_unwalk_names[r], unwalk[r]);
		cJSON_AddNumberToObject(c, agg_unwalk_names[r], cut[r]);
	}
}

static void summary_json(void *g, const struct target *t, void *st, cJSON *o)
{
	struct sample *sp = st;

	accumulate_lost(g, t, sp);
#define ADD_FACT(f, key, need, drop, name) \
	if (!drop)                         \
		cJSON_AddNumberToObject(o, #name, sp->f);
	SAMPLE_COUNT_FIELDS(ADD_FACT)
#undef ADD_FACT
	cJSON_AddNumberToObject(o, "lost", sample_lost(sp));
	cJSON_AddNumberToObject(o, "denied", sp->lost.denied);
	add_walk_reasons(sp, o);
	sample_lost_json(sp, cJSON_AddObjectToObject(o, "lost_by_reason")); /* (for /metrics) */
}

/* The counters of status part @part (SAMPLE_STATUS_FIELDS). */
static void add_status(const struct sample_g *g, int part, cJSON *o)
{
#define ADD_STATUS(f, key, unit, at) \
	if (at == part)              \
		cJSON_AddNumberToObject(o, #key, g->f / (unit));
	SAMPLE_STATUS_FIELDS(ADD_STATUS)
#undef ADD_STATUS
}

static void status_json(void *gp, cJSON *o)
{
	struct sample_g *g = gp;
	struct probes_stats ps;
	const char *how = sampler_blocked_stacks(g->smp);
	cJSON *c;

	cJSON_AddNumberToObject(o, "max_stack_depth", sampler_max_depth(g->smp));
	cJSON_AddNumberToObject(o, "dwarf_stack_bytes", sampler_dwarf_stack(g->smp));
	cJSON_AddNumberToObject(o, "min_interval_us", (sampler_min_period_ns() + 999) / 1000);
	/* how REAL takes the stacks of threads blocked in system calls, while one samples */
	if (how)
		cJSON_AddStringToObject(o, "blocked_stacks", how);
	/* how long processes went with critical-section probes pending (docs/critical.md) */
	probes_stats(g->probes, &ps);
	c = cJSON_AddObjectToObject(o, "critical_probes");
#define ADD_PROBES(f, key, unit) cJSON_AddNumberToObject(c, #key, ps.f / (unit));
	PROBES_STATS_FIELDS(ADD_PROBES)
#undef ADD_PROBES
	sampler_programs_json(g->smp, cJSON_GetObjectItemCaseSensitive(o, "programs"));

	add_status(g, 1, o);
	cJSON_AddNumberToObject(o, "drain_capacity", sampler_capacity(g->smp));
	add_status(g, 2, o);
}

/* ---- listings */

void sample_listing_end(struct sample_listing *ls)
{
	for (size_t i = 0; i < ls->nextra; i++)
		free((void *)ls->extra[i].st);
	free(ls->extra);
	if (ls->sp)
		sample_free_criticals(ls->sp, ls->crit, ls->ncrit);
	pat_free(ls->when);
	agg_free(ls->view);
	memset(ls, 0, sizeof(*ls));
}

/* Keep a copy of @st as an open interval of @ns so far. */
static int add_extra(struct sample_listing *ls, const struct agg_stack *st, uint64_t ns)
{
	size_t sz = agg_stack_size(st->nuser + st->nkern);
	void *copy;

	if (GROW(ls->extra, ls->cap_extra, ls->nextra + 1) || !(copy = malloc(sz)))
		return -ENOMEM;
	memcpy(copy, st, sz);
	ls->extra[ls->nextra++] = (struct agg_extra){ .st = copy, .ns = ns };
	return 0;
}

struct open_ctx {
	struct sample_g *g;
	struct sample_listing *ls;
	uint64_t now;
	int err;
};

static void on_open_interval(void *ctx, const struct pcmon_offcpu *o)
{
	struct open_ctx *oc = ctx;
	struct agg_stack *st;

	/*
	 * Dwarf intervals whose stack was sent are the engine's own (g->pending); one of a
	 * thread blocked in a system call has its stack sent when the call returns, so here it
	 * has the one the iterator walked by frame pointers.
	 */
	if (o->key.target != oc->ls->t->id || o->ts >= oc->now || oc->err ||
	    (o->dwarf && o->lazy == PCMON_LAZY_NO))
		return;
	st = convert(oc->g, &o->key, &o->urec.st, oc->ls->sp->kernel ? &o->krec.st : NULL);
	if (!st || add_extra(oc->ls, st, oc->now - o->ts))
		oc->err = -ENOMEM;
}

int sample_check_listing(const cJSON *req, cJSON **rep)
{
	struct sample sp = { 0 };
	struct pat *when = NULL;
	int r;

	r = when_compile(req, 0, &when, rep);
	pat_free(when);
	if (!r)
		r = sample_set_criticals(&sp, cJSON_GetObjectItemCaseSensitive(req, "critical"), rep);
	for (size_t i = 0; i < sp.ncrit; i++) {
		free(sp.crit[i].name);
		free(sp.crit[i].text);
		pat_free(sp.crit[i].pat);
	}
	free(sp.crit);
	return r ? -1 : 0;
}

int sample_listing_begin(void *gp, struct target *t, const cJSON *req, struct sample_listing *ls,
			 cJSON **rep)
{
	struct sample_g *g = gp;
	struct sample *sp = sample_of(t);
	const char *wtext = proto_str(req, "when", NULL);
	int icase;

	memset(ls, 0, sizeof(*ls));
	if (!sp) {
		*rep = proto_error(1, "target %u \"%s\" does not sample (it was started with --no-sample)",
				   t->id, t->name);
		return -1;
	}
	icase = proto_bool(req, "icase", sp->icase);
	if (when_compile(req, icase, &ls->when, rep))
		return -1;
	ls->t = t;
	ls->sp = sp;
	if (sample_window_begin(ls, req, rep))
		goto fail;
	if (sample_list_criticals(sp, cJSON_GetObjectItemCaseSensitive(req, "critical"), icase,
				  &ls->crit, &ls->ncrit, rep))
		goto fail;
	/* open intervals are now's: in a window that reaches now */
	if (sp->real && (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED) &&
	    (!ls->windowed || ls->until >= wall_ns())) {
		struct open_ctx oc = { .g = g, .ls = ls, .now = now_ns() };

		sampler_open_intervals(g->smp, on_open_interval, &oc);
		for (size_t i = 0; i < g->npending && !oc.err; i++) {
			struct pending *p = &g->pending[i];

			if (p->target == t->id && p->ts < oc.now)
				oc.err = add_extra(ls, p->st, oc.now - p->ts);
		}
		if (oc.err) {
			*rep = proto_error(1, "out of memory while listing");
			goto fail;
		}
	}
	ls->when_text = wtext ? wtext : sp->when_text;
	ls->lo.period_ns = sp->period_ns;
	ls->lo.when = wtext ? ls->when : sp->when;
	ls->lo.kernel = sp->kernel && !proto_bool(req, "no_kernel", 0);
	ls->lo.no_inline = proto_bool(req, "no_inline", sp->no_inline);
	ls->lo.extra = ls->extra;
	ls->lo.nextra = ls->nextra;
	ls->lo.crit = ls->crit;
	ls->lo.ncrit = ls->ncrit;
	accumulate_lost(g, t, sp);
	return 0;
fail:
	sample_listing_end(ls);
	return -1;
}

#define F_BOOL(n) { .name = (n), .type = PT_BOOL }
#define F_STR(n, len) { .name = (n), .type = PT_STR, .max = (len) }
#define F_ENUM(n, v) { .name = (n), .type = PT_ENUM, .values = (v) }

static const struct proto_field fields[] = {
	F_BOOL("no_sample"),
	F_ENUM("mode", "real|virtual"),
	{ .name = "interval_us", .type = PT_UINT, .min = 1, .max = 60000000, .opt = "--interval" },
	{ .name = "unwind", .type = PT_ENUM, .values = "fp|dwarf|auto", .opt = "--unwind" },
	F_BOOL("kernel"),
	F_BOOL("no_inline"),
	F_BOOL("no_python"),
	F_STR("when", PROTO_MAX_LINE),
	F_BOOL("when_from_file"),
	F_BOOL("icase"),
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE },
	F_STR("slices", 127),
	{ .name = "slice_kib", .type = PT_UINT, .min = 0, .max = 1 << 22, .opt = "--slice-memory" },
};

/* What a list request may say about the samples: the pattern, and the view. */
static const struct proto_field list_fields[] = {
	F_STR("when", PROTO_MAX_LINE),
	F_BOOL("when_from_file"),
	F_BOOL("icase"),
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE },
	F_BOOL("no_inline"),
	F_BOOL("stacks"),
	F_BOOL("no_kernel"),
	{ .name = "by", .type = PT_ENUM, .values = GROUPS_BY_VALUES, .opt = "--by" },
	F_STR("lines", 512),
	F_STR("offset", 512),
	{ .name = "scale", .type = PT_UINT, .min = 0, .max = PROFIL_SCALE_MAX, .opt = "--scale" },
	{ .name = "bufsiz", .type = PT_UINT, .min = 2, .max = PCS_MAX_BUFSIZ, .opt = "--bufsiz" },
	F_STR("since", 64),
	F_STR("until", 64),
	F_BOOL("timeline"),
	{ .name = "timeline_top", .type = PT_UINT, .min = 0, .max = 1000, .opt = "--top" },
	{ .name = "timeline_procs", .type = PT_STRS, .max = 4096 },
	/* what came after a mark (sample_mark.c), and let the mark go */
	{ .name = "since_mark", .type = PT_UINT, .min = 1, .max = UINT32_MAX },
	F_BOOL("drop_mark"),
	F_BOOL("remark"),	/* ... or move it to now: windows back to back (push.c) */
	F_BOOL("labels"),	/* with stacks: every sample's comm and cgroup, the host */
};

static const struct proto_field mark_fields[] = {
	{ .name = "target", .type = PT_TARGET, .required = true },
	F_BOOL("at_start"),	/* the window starts with the target (a push's first) */
};

static const struct inst_cmd cmds[] = {
	{ "mark", sample_cmd_mark, mark_fields, ARRAY_SIZE(mark_fields) },
};

const struct inst_ops sample_ops = {
	.name = "sampling",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = wanted,
	.new = new_state,
	.attach = attach,
	.set_active = set_active,
	.stop = stop,
	.zero = zero,
	.free = sample_free,
	.list_json = sample_list,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.list_check = sample_check_list,
	.cmds = cmds,
	.ncmds = ARRAY_SIZE(cmds),
	.event = event,
	.fds = fds,
	.stream = stream,
	.tick = tick,
	.sync = drain_all,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.status_json = status_json,
	.save = sample_save,
	.load = sample_load,
};
