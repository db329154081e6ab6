/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sample_: the sampling instrument (docs/sampling.md, docs/stacks.md, docs/when.md, docs/critical.md). Timer samples of the target's threads,
 * VIRTUAL (on-CPU) or REAL (on- and off-CPU), their stacks symbolized into an aggregate
 * (agg.h) that every view reads: LIST, lines, profil, the exports.
 *
 * What other files use, by the part that defines it (sample_int.h lists them all):
 *
 *   sample.c          the base: a target's state, made and freed, what it lost, its sections
 *   sample_names.c    the names of the threads, processes and cgroups it sampled
 *   sample_time.c     time slices: settings, a listing's window, the timeline
 *   sample_store.c    the aggregate and settings as a section of the results file
 *   sample_mark.c     windows that start now (`mark`)
 *   sample_listing.c  a listing taken, which every view over the samples starts with
 *   sample_report.c   the aggregate as LIST's JSON (summary, procedures)
 *   sample_ops.c      the ops table (sample_ops)
 */
#ifndef PCMON_SAMPLE_H
#define PCMON_SAMPLE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "agg.h"
#include "inst.h"
#include "pcmon_bpf.h"

struct pat;
struct slices;
struct tails;
struct tail_leg;
struct target;

/*
 * A target's sampling counters that the engine keeps (BPF's: PCMON_TSTAT_FIELDS), defined
 * once: X(field, key, need, drop, name) — the state file's @key, read SF_<need>; @drop 1:
 * samples lost, counted in the listing's "lost" and named @name in its lost_by_reason; 0:
 * a fact `pcmon targets` shows, named @name.
 */
#define SAMPLE_COUNT_FIELDS(X)                                                             \
	/* drained from BPF (on-CPU samples + off-CPU switches) */                         \
	X(seen_samples, seen, ALWAYS, 0, samples)                                          \
	/* could not be stored: out of memory */                                           \
	X(lost_oom, lost_oom, ALWAYS, 1, out_of_memory)                                    \
	/* new stacks not kept: the owner was over her memory allowance */                 \
	X(lost_memory, lost_memory, OPTIONAL, 1, memory_limit)

struct sample_crit {
	char *name;
	char *text;
	struct pat *pat;
};

/*
 * Names by number, kept with the results so that they outlive what they name: threads' by
 * tid (the exports' thread label), processes' by pid and cgroups' by id (list --by).
 */
struct sample_names {
	struct itab *keys;	/* the numbers (uint64_t), in the order first named */
	uint32_t *names;	/* sym string ids ("" when it was gone before it was named) */
	uint64_t *read;		/* the drain that last read each name */
	size_t cap;
};

/* @key's name (a sym string id), 0 if not known. */
uint32_t sample_names_get(const struct sample_names *n, uint64_t key);
/* @key is called @name (a sym string id): 0, or -ENOMEM. */
int sample_names_set(struct sample_names *n, uint64_t key, uint32_t name);

/*
 * The windows open on a target's samples (sample_mark.c): each a snapshot of its counts when
 * it was marked. A target keeps at most SAMPLE_MARKS, freed with it (sample_free()).
 */
#define SAMPLE_MARKS 16

struct sample_mark {
	uint32_t id;		/* 0: a free slot */
	uint64_t taken_ns;
	double taken_wall;
	struct agg_snap snap;
	uint64_t lost;		/* samples lost until then */
};

struct sample_marks {
	struct sample_mark m[SAMPLE_MARKS];
	uint32_t next_id;
};

/* One target's sampling: its settings and its results. */
struct sample {
	bool real, kernel, icase, no_inline;
	bool python;		/* read CPython processes' frames (not --no-python) */
	bool java;		/* walk HotSpot JVMs' Java frames (not --no-java) */
	bool when_from_file;	/* when_text spans lines, ';'-terminated */
	bool dwarf;		/* user stacks unwound by the engine with CFI */
	char unwind[8];		/* as asked: fp, dwarf or auto */
	uint32_t flags;		/* PCMON_TF_REAL, _KERNEL, _DWARF as given to BPF */
	uint64_t period_ns;	/* the timers': a few us off the interval (sample_attach.c) */
	uint32_t interval_us;	/* as asked */
	char *when_text;
	struct pat *when;
	struct sample_crit *crit;
	size_t ncrit;

	struct agg *agg;
	struct slices *slices;	/* the same samples by time (slices.h) */
	uint64_t slices_lost;	/* samples the slices could not keep (out of memory) */
#define SAMPLE_COUNT_FIELD(f, key, need, drop, name) uint64_t f;
	SAMPLE_COUNT_FIELDS(SAMPLE_COUNT_FIELD)
#undef SAMPLE_COUNT_FIELD
	struct pcmon_tstat lost_base;	/* BPF drop counters when started or zeroed */
	struct pcmon_tstat lost;	/* drops since, as last read */
	bool holds_period, holds_offcpu;
	/* names: threads' and processes' (their main thread's) as their latest samples found
	 * them, cgroups' paths as they were when first met ("cgroup:ID" if gone by then) */
	struct sample_names threads, processes, cgroups;
	struct sample_marks *marks;	/* windows open (sample_mark.c), NULL: none yet */
	struct tails *tails;	/* tailed legs' profiles (tail.h), NULL: none (legs_attach.c) */
};

/* The instrument's ops (sample_ops.c). */
extern const struct inst_ops sample_ops;

static inline struct sample *sample_of(const struct target *t);

struct sample *sample_new(void);
void sample_free(void *st);
uint64_t sample_lost(const struct sample *sp);
/* The samples lost, by reason: the listing's and `targets`' "lost_by_reason". */
void sample_lost_json(const struct sample *sp, cJSON *o);
/* Thread @tid's name as its samples last found it: a sym string id, 0 if not known. */
uint32_t sample_thread_name(const struct sample *sp, uint32_t tid);
/* Thread @tid is called @name (sym string id). */
int sample_name_thread(struct sample *sp, uint32_t tid, uint32_t name);
/*
 * Process @pid's name (its main thread's) as its samples last found it: a sym string id, 0
 * if not known. Results saved before processes were named have their main thread's name.
 */
uint32_t sample_process_name(const struct sample *sp, uint32_t pid);
/* Cgroup @id's path (sym string id), "cgroup:ID" if it was gone when first met; 0: not known. */
uint32_t sample_cgroup_name(const struct sample *sp, uint64_t id);
const char *sample_mode_name(const struct sample *sp);

/* sample_mark.c: windows that start now, for a listing of what came after (HTTP scrapes). */
struct sample_window {
	struct agg *agg;	/* what was counted in it: the caller frees it */
	double from_wall, to_wall, seconds;
	uint64_t lost;
};
cJSON *sample_cmd_mark(void *g, struct target *t, const cJSON *req);
int sample_mark_window(struct sample *sp, const struct target *t, uint32_t id,
		       struct sample_window *w, cJSON **err);
void sample_mark_drop(struct sample *sp, uint32_t id);
/* The mark moves to now: the next window begins where the one just listed ends. */
void sample_mark_move(struct sample *sp, uint32_t id);

/* --critical NAME=PATTERN, as a JSON array of strings. */
int sample_set_criticals(struct sample *sp, const cJSON *arr, cJSON **err);
/* The target's sections followed by those given at list time. */
int sample_list_criticals(const struct sample *sp, const char *const *specs, size_t nspecs,
			  int icase, struct agg_critical **out, size_t *n, cJSON **err);
void sample_free_criticals(const struct sample *sp, struct agg_critical *c, size_t n);

/*
 * A listing being taken (sample_listing.c): the target a request names, brought up to date,
 * and the options agg_list() needs to read its samples as the request asks (WHEN, critical
 * sections, open off-CPU intervals). Every view over the samples (LIST, lines, profil,
 * exports) starts with sample_listing_begin() and ends with sample_listing_end(); a view
 * sets lo.visit to see each sample as it is charged.
 */
struct sample_listing {
	struct target *t;
	struct sample *sp;
	struct agg_list_opts lo;
	const char *when_text;		/* the pattern in effect, NULL: none */
	struct pat *when;		/* given with the request */
	struct agg_critical *crit;
	size_t ncrit;
	struct agg_extra *extra;	/* off-CPU intervals still open */
	size_t nextra, cap_extra;
	/*
	 * What is listed: the target's aggregate, or with "since"/"until" a view of it
	 * holding the time slices of the window (sample_time.c).
	 */
	struct agg *agg;
	struct agg *view;		/* the window's, NULL: none */
	bool windowed;
	uint64_t since, until;		/* wall ns, as asked */
	uint64_t covered_t0, covered_t1; /* what the slices taken cover */
	size_t nslices;
	bool cut;
	struct tail_leg *tail;		/* a tailed leg's profile listed (tail.h), NULL: none */
	int tail_part;			/* enum tail_part */
};

/* A listing request's patterns are well formed: 0, or -1 with the error in *rep (before
 * anything else is looked at, so that a usage error is reported as one). */
int sample_check_listing(const struct list_req *lr, cJSON **rep);

/* 0, or -1 with *rep set to the error to answer (@t carries no sampling, a bad pattern). */
int sample_listing_begin(void *g, struct target *t, const struct list_req *lr,
			 struct sample_listing *ls, cJSON **rep);
void sample_listing_end(struct sample_listing *ls);

/* LIST (sample_report.c): a listing taken, as the reply to `list` (summary, procedures,
 * deep_order) added to @out. */
void sample_list_json(const struct sample_listing *ls, struct agg_list *l, const struct sym *s,
		      cJSON *out);
/* How @sp names its processes, threads and cgroups, for the views that group by them. */
struct groups_namer;
void sample_namer(const struct sample *sp, struct groups_namer *out);
/* Sampling's inst_ops list_check and list_json (sample_report.c). */
int sample_check_list(const struct list_req *lr, cJSON **rep);
int sample_list(void *g, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		cJSON **err);

/* Time slices (sample_time.c): --slices and --slice-memory of a start request; the
 * settings and figures in a target's facts; the window a listing asks (since, until) as a
 * view in ls->agg, 0 or -1 with *rep the error; its "window" object in a reply; the
 * timeline. */
int sample_set_slices(struct sample *sp, const cJSON *req, cJSON **rep);
void sample_slices_json(const struct sample *sp, cJSON *o);
int sample_window_begin(struct sample_listing *ls, const struct list_req *lr, cJSON **rep);
void sample_window_json(const struct sample_listing *ls, cJSON *rep);
int sample_timeline_json(struct sample_listing *ls, const struct sym *s,
			 const struct list_req *lr, const struct agg_list *whole, cJSON *rep);

/* Results files (sample_store.c). */
void sample_save(const struct target *t, const void *st, const struct sym *s, struct sf_wr *w,
		 cJSON *section);
int sample_load(struct sf_rd *rd, const cJSON *section, struct sym *s, void **st);

/* The settings a sample state was started with (sample.c), for the store. */
extern const char *const sample_unwind_names[3];

#include "target.h"

static inline struct sample *sample_of(const struct target *t)
{
	return t->inst[INST_SAMPLE];
}

#endif
