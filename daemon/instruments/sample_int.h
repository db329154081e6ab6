/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of the sampling instrument share, and no other file includes: the
 * engine-wide state (struct sample_g) and the functions one part calls in another.
 *
 *   sample.c          the base: a target's state (sample.h), made and freed, what it lost,
 *                     its critical sections
 *   sample_time.c     time slices: settings, a listing's window, the timeline (sample.h)
 *   sample_names.c    thread, process and cgroup names (sample_names_)
 *   sample_convert.c  a sample's stacks symbolized, Python frames merged (sample_convert_)
 *   sample_store.c    the samples and settings as a section of the results file (sample.h)
 *   sample_drain.c    draining BPF's counts and the dwarf ring into targets (sample_drain_)
 *   sample_attach.c   settings from a request, and a target's life in BPF: attach, pause,
 *                     stop, zero, its drops read (sample_attach_)
 *   sample_mark.c     windows that start now: `mark`, a listing's "since_mark" (sample.h)
 *   sample_listing.c  a listing taken: WHEN, critical sections, the window, open off-CPU
 *                     intervals (sample.h)
 *   sample_report.c   the listing as LIST's reply, or as the view it asks (sample.h)
 *   sample_ops.c      the ops table, the instrument's engine-wide life, status
 *
 * sample.c is the base: every other part calls into it, and it calls none of them; a part
 * calls only those above it in this list. sample.c does not include this file, nor do the
 * parts that need only sample.h (sample_time.c, sample_store.c, sample_report.c).
 */
#ifndef PCMON_SAMPLE_INT_H
#define PCMON_SAMPLE_INT_H

#include "engine_opts.h"
#include "sample.h"
#include "slices.h"
#include "util.h"

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
	__u64 *ubps;			/* ... and each frame's rbp (V8's frame pointers) */
	size_t cap_ubps;
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
	 * The wall time copied samples read now are charged at (their time slice; a count
	 * from BPF goes to the slice it was stamped with): now, unless a whole
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
	struct v8 *v8;			/* JavaScript frames: V8s found, functions named */
	struct hs *hs;			/* Java frames: HotSpot JVMs found, methods named */
	struct cfitab *cfi;		/* tables BPF walks dwarf stacks with; NULL: none */
	uint32_t *natlocs, *mergelocs;	/* a user stack's native locations, merged with them */
	size_t cap_natlocs;
};

static inline struct target *target_of(struct sample_g *g, uint32_t id)
{
	struct target *t = id < PCMON_MAX_TARGETS ? g->env.targets[id] : NULL;

	return t && sample_of(t) ? t : NULL;
}

/* The length of @sp's shortest slices: what BPF stamps its counts with (pcmon_key.slice). */
static inline uint64_t sample_slice_len(const struct sample *sp)
{
	return sp->slices->cfg.tier[0].len_ns;
}

/* sample_names.c */
void sample_names_thread(struct sample_g *g, struct sample *sp, const struct agg_stack *st);
void sample_names_cgroup(struct sample_g *g, struct sample *sp, const struct agg_stack *st);

/* sample_convert.c */
void sample_convert_python_early(void *ctx, uint32_t pid, const __u64 *ip, uint32_t n);
struct agg_stack *sample_convert(struct sample_g *g, const struct pcmon_key *k,
				 const struct pcmon_stack *us, const struct pcmon_stack *ks);
struct agg_stack *sample_convert_dwarf(struct sample_g *g, const struct pcmon_dsample *d,
				       size_t len);
void sample_convert_python_look(struct sample_g *g, uint32_t pid, uint32_t epoch, bool again);
/* Does process @pid run a node (its executable's name says so)? */
bool js_node_exe(uint32_t pid);
/* Is there a V8 in process @pid (image @epoch)? BPF is told (docs/node.md). */
void sample_convert_js_look(struct sample_g *g, uint32_t pid, uint32_t epoch);

/* sample_drain.c */
void sample_drain_clock(struct sample_g *g);
void sample_drain_tick(void *gp);
void sample_drain_all(void *g);
void sample_drain_pending_drop(struct sample_g *g, struct pending *p);
void sample_drain_record(void *gp, const void *data, size_t len);

/* sample_attach.c */
bool sample_attach_wanted(const cJSON *req);
int sample_attach_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep);
int sample_attach_target(void *gp, struct target *t, void *st, cJSON **rep);
void sample_attach_set_active(void *g, struct target *t, void *st, bool active);
void sample_attach_lost(struct sample_g *g, const struct target *t, struct sample *sp);
void sample_attach_stop(void *gp, struct target *t, void *st);
void sample_attach_zero(void *gp, struct target *t, void *st);

#endif /* PCMON_SAMPLE_INT_H */
