/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agg_: per-target aggregates and the LIST computation over them.
 *
 * A target keeps one entry per distinct (kind, pid, thread, cgroup, stack): the stack as
 * symbolized locations, outermost first. Keeping stacks (not per-procedure totals) is what
 * lets `pcmon list --when P` re-apply any pattern to stored samples.
 */
#ifndef PCMON_AGG_H
#define PCMON_AGG_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "pat.h"
#include "pcmon_bpf.h"
#include "sym.h"


/*
 * Why a sample's stack could not be walked (the `unwalkable` critical section), or was cut
 * short, defined once: X(id, name, cuts) — AGG_UNWALK_<id>, named @name in listings, exports
 * and state files; @cuts 1: it may cut a stack short too (the summary's cut_short_by_reason).
 * New reasons go last: format-1 state files store the number.
 */
#define AGG_UNWALK_REASONS(X)                                                              \
	/* the user stack could not be read, or a frame was bad */                         \
	X(FAULT, fault, 1)                                                                 \
	/* dwarf: the copied stack ended before the root */                                \
	X(TRUNCATED, truncated, 1)                                                         \
	/* the frames were lost (stacks ring full) */                                      \
	X(LOST, lost, 0)                                                                   \
	/* the stack has more frames than the maximum depth */                             \
	X(DEPTH, depth, 1)                                                                 \
	/* dwarf: code without CFI whose frame-pointer chain ended */                      \
	X(NOCFI, no_cfi, 1)                                                                \
	/* fp: the frame-pointer chain ended short of a root (only ever cuts one short) */ \
	X(FP_CHAIN, fp_chain, 1)                                                           \
	/* a Python frame chain could not be read whole (a frame freed under the sampler, */ \
	/* a read fault, a code object gone): the stack stops at what was read */          \
	X(PYTHON, python, 1)                                                               \
	/* Python code ran but its frames were not known: sampled before the engine */     \
	/* found the interpreter, or before the thread's state was on its list */          \
	X(PYTHON_UNKNOWN, python_unknown, 1)                                               \
	/* a JavaScript frame could not be read or named (docs/node.md) */                  \
	X(JS, js, 1)                                                                       \
	/* a Java frame could not be walked or named: its code blob freed or moved since */ \
	/* the sample, or its frame unreadable */                                          \
	X(JAVA, java, 1)

enum agg_unwalk {
	AGG_WALK_OK = 0,
#define AGG_UNWALK_ENUM(id, name, cuts) AGG_UNWALK_##id,
	AGG_UNWALK_REASONS(AGG_UNWALK_ENUM)
#undef AGG_UNWALK_ENUM
	AGG_UNWALK_MAX,
};
/* Each reason's name; [AGG_WALK_OK] is the section's, "unwalkable". */
extern const char *const agg_unwalk_names[AGG_UNWALK_MAX];

struct agg_stack {
	uint32_t kind;		/* enum pcmon_kind */
	uint32_t pid;
	uint32_t tid;		/* the thread (0: not known, results saved before it was kept) */
	uint32_t unwalk;	/* enum agg_unwalk */
	uint32_t section;	/* string id (sym) of the marked critical section, 0 = none */
	uint32_t flags;		/* AGG_SF_* */
	uint64_t cgroup;	/* the thread's cgroup v2 id (0: not known, from an older file) */
	uint32_t nuser;		/* user locations, outermost first ... */
	uint32_t nkern;		/* ... then kernel locations, outermost first */
	uint32_t locs[];
};

/* Taken before the probes of objects the process had just loaded were attached: if the
 * thread was in a section marked there, the sample does not say so (PCMON_KF_MARKS_PENDING). */
#define AGG_SF_MARKS_PENDING (1u << 0)
/*
 * The walk stopped short of a root: the frames walked are kept and charged, the outer ones
 * are missing. Why it stopped (an enum agg_unwalk other than AGG_WALK_OK) is kept in the
 * flags' second byte: AGG_SF_CUT(reason), agg_cut_reason(st).
 */
#define AGG_SF_CUT_SHORT (1u << 1)
#define AGG_SF_CUT(reason) (AGG_SF_CUT_SHORT | (uint32_t)(reason) << 8)
static inline uint32_t agg_cut_reason(const struct agg_stack *st)
{
	uint32_t r = st->flags >> 8 & 0xff;

	return !(st->flags & AGG_SF_CUT_SHORT) ? AGG_WALK_OK : r && r < AGG_UNWALK_MAX ? r :
										       AGG_UNWALK_FP_CHAIN;
}

struct agg;
struct agg *agg_new(void);
void agg_free(struct agg *a);
void agg_zero(struct agg *a);
int agg_add(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns);
/* The same, saying the stack's id (what time slices keep, slices.h). */
int agg_add_id(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns,
	       uint32_t *id);
/* agg_add_id() for a stack already there; -ENOENT (nothing added) for a new one. */
int agg_bump_id(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns,
		uint32_t *id);
/*
 * A view of @a's stacks with counts of its own, all 0: what a window of time slices holds
 * (agg_view_add() by stack id). It borrows @a's stacks: free it (agg_free) before @a
 * changes. Every listing reads a view as it reads an aggregate.
 */
struct agg *agg_view(const struct agg *a);
void agg_view_add(struct agg *v, uint32_t id, uint64_t count, uint64_t ns);
void agg_view_clear(struct agg *v);
size_t agg_bytes(const struct agg *a); /* memory it holds */

/* What a table held at some moment, to tell what came after (agg_since()). */
struct agg_snap_val {
	uint64_t count, ns;
};
struct agg_snap {
	uint64_t gen;
	size_t n;
	struct agg_snap_val *vals;
};
int agg_snapshot(const struct agg *a, struct agg_snap *s);
/* A snapshot of @a as if it held nothing yet (what came since is all of it). */
void agg_snap_empty(const struct agg *a, struct agg_snap *s);
void agg_snap_free(struct agg_snap *s);
/* A new table of what @a counted since snapshot @s (all of it if @a was zeroed since). */
struct agg *agg_since(const struct agg *a, const struct agg_snap *s);
size_t agg_count(const struct agg *a);
const struct agg_stack *agg_get(const struct agg *a, size_t i, uint64_t *count, uint64_t *ns);
static inline size_t agg_stack_size(uint32_t nlocs)
{
	return sizeof(struct agg_stack) + nlocs * sizeof(uint32_t);
}

/* An additional, transient weight for a stored stack (off-CPU intervals still open). */
struct agg_extra {
	const struct agg_stack *st;
	uint64_t ns;
};

struct agg_critical {
	const char *name;
	const struct pat *pat;
};

/* Where a frame of an expanded stack comes from. */
struct agg_frame_at {
	uint32_t loc;		/* index into agg_stack.locs */
	uint32_t inl;		/* index into the location's frames: 0 innermost; the
				 * outermost (nframes - 1) is the function itself, the rest
				 * functions inlined into it */
};

/* How a group of counted samples was charged, for views built over a listing. */
enum agg_class {
	AGG_C_UNWALKABLE,	/* to `unwalkable` (st->unwalk says why) */
	AGG_C_MARKED,		/* to a section the program marked (arg: its string id) */
	AGG_C_CRITICAL,		/* to a declared section (arg: its index in opts.crit) */
	AGG_C_FOREIGN,		/* to foreignPcs */
	AGG_C_PROC,		/* to procedure procs[nframes - 1] */
};

struct agg_visit {
	const struct agg_stack *st;
	uint64_t weight;	/* samples; off-CPU: interrupts of t */
	uint64_t ns;		/* off-CPU: nanoseconds (open intervals included); else 0 */
	enum agg_class cls;
	uint32_t arg;
	/* AGG_C_PROC and AGG_C_FOREIGN: the frames as charged, outermost first (procedure ids
	 * and where each came from); the charged frame is the last. NULL/0 otherwise. */
	const uint32_t *procs;
	const struct agg_frame_at *at;
	int nframes;
};

struct agg_list_opts {
	uint64_t period_ns;		/* t: off-CPU ns are converted into interrupts of t */
	const struct pat *when;		/* NULL: every sample counts */
	const struct agg_critical *crit; /* user-declared critical sections, first match wins */
	size_t ncrit;
	int kernel;			/* include kernel frames */
	int no_inline;			/* inlined functions count as the function they are in */
	const struct agg_extra *extra;
	size_t nextra;
	/* called for every group of counted samples, as it is charged (views: lines, profil,
	 * exports); the pointers in the visit are valid during the call only */
	void (*visit)(void *ctx, const struct agg_visit *v);
	void *visit_ctx;
};

struct agg_row {
	uint32_t proc;
	uint64_t shallow, deep;
};

#define AGG_MAX_CRIT 64

/*
 * A listing's totals, defined once: X(field, part) gives the struct's fields and LIST's
 * summary (sample_report.c), each named as its field; the summary has part 1 before the
 * stacks cut short, part 2 after them, part 3 after the lost samples and WHEN.
 *
 * interrupts = counted + not_matching. Counted samples (those WHEN lets through, and
 * unwalkable ones, which no pattern can test) go either to a critical section or to
 * procedures: counted = sum of sections + sum of shallow + foreign.
 *
 * marks_pending: counted samples charged to no marked section (to procedures, foreignPcs or
 * declared sections) that were taken while probes were pending (AGG_SF_MARKS_PENDING): any
 * of them may belong to a marked section. A marked section's true count lies between its
 * count and its count + marks_pending.
 */
#define AGG_LIST_TOTALS(X)                                                                 \
	X(interrupts, 1)                                                                   \
	X(counted, 1)                                                                      \
	X(not_matching, 1)                                                                 \
	X(foreign, 1)	     /* counted samples in no known procedure */                   \
	X(kernel_mode, 1)    /* on-CPU samples taken in kernel mode */                     \
	X(oncpu, 2)	     /* on-CPU samples */                                          \
	X(off_blocked, 2)    /* off-CPU, in interrupts of t ... */                         \
	X(off_runnable, 2)                                                                 \
	X(off_blocked_ns, 2) /* ... and in nanoseconds */                                  \
	X(off_runnable_ns, 2)                                                              \
	X(marks_pending, 3)

struct agg_list {
#define AGG_LIST_TOTAL(f, part) uint64_t f;
	AGG_LIST_TOTALS(AGG_LIST_TOTAL)
#undef AGG_LIST_TOTAL
	uint64_t unwalk[AGG_UNWALK_MAX]; /* unwalkable, by reason ([0] = total) */
	/* counted samples whose stack did not reach a root, their walked frames charged:
	 * [0] all, by reason after */
	uint64_t cut[AGG_UNWALK_MAX];
	uint64_t crit[AGG_MAX_CRIT];	/* user-declared sections, as in opts.crit */
	struct agg_marked {
		uint32_t name;		/* sym string id */
		uint64_t count;
	} *marked;			/* sections marked in the program (critical.h) */
	size_t nmarked;
	struct agg_row *rows;
	size_t nrows;
};

int agg_list(const struct agg *a, const struct sym *s, const struct agg_list_opts *o,
	     struct agg_list *out);
/* Procedure @proc as a WHEN pattern sees a frame of it. */
struct pat_frame agg_proc_frame(const struct sym *s, uint32_t proc);
/*
 * The names of patterns @pats that no procedure on @a's stacks answers to, each with the
 * procedures nearest it, [{"name": TEXT, "near": [FULL, ...]}] (@texts[k]: pattern k's text,
 * when it is one name); NULL when each is seen (or without memory).
 */
cJSON *agg_names_unseen_json(const struct agg *a, const struct sym *s,
			     const struct pat *const *pats, size_t npats, const char *const *texts);
void agg_list_free(struct agg_list *l);
/* Sort rows by shallow (ties: deep, then name) or by deep (ties: shallow, then name). */
/* A procedure's row in a listing: a new object with its "procedure" (full name), "module"
 * and "name". */
cJSON *agg_proc_json(const struct sym *s, uint32_t proc);
void agg_sort_rows(struct agg_row *rows, size_t n, int by_deep, const struct sym *s);
/* Off-CPU nanoseconds as interrupts of period_ns, rounded to nearest. */
uint64_t agg_ns_to_interrupts(uint64_t ns, uint64_t period_ns);

#endif
