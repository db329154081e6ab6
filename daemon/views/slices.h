/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * slices_: a target's samples over time (docs/sampling.md, "Time slices"). The aggregate
 * (agg.h) holds each stack once with its whole-life counts; a slice holds, for an interval
 * of wall-clock time, the counts of the stacks sampled in it, by the aggregate's stack id
 * (so a slice costs a few words per stack it saw, never a stack).
 *
 * Slices are aligned on multiples of their length since the epoch. Older ones are merged
 * into coarser ones by tiers ("10s,1m@1h,10m@1d": 10 s slices, merged into minutes once an
 * hour old, into 10 minutes once a day old), and, when they hold more than the budget, the
 * oldest two are merged whatever their age (counted in merged_early).
 *
 * Pure logic: no clock is read here, the caller says what time it is.
 */
#ifndef PCMON_SLICES_H
#define PCMON_SLICES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SLICES_MAX_TIERS 4
#define SLICES_DEFAULT "10s,1m@1h,10m@1d"
#define SLICES_DEFAULT_BUDGET (4u << 20)	/* bytes per target */
#define NS_PER_S 1000000000ull

struct slices_cfg {
	struct slices_tier {
		uint64_t len_ns;	/* the slices' length in this tier */
		uint64_t age_ns;	/* a slice this old (its end) goes to this tier; tier 0: 0 */
	} tier[SLICES_MAX_TIERS];
	int ntiers;
	uint64_t budget;		/* bytes the slices may hold; 0: no limit */
};

/*
 * "LEN[,LEN@AGE]...": whole seconds (s, m, h, d suffixes), each length a multiple of the one
 * before, each age larger than the one before. 0, or -1 with the reason in @err.
 */
int slices_cfg_parse(const char *spec, struct slices_cfg *cfg, char *err, size_t errlen);
/* The spec back, as slices_cfg_parse() reads it. */
void slices_cfg_format(const struct slices_cfg *cfg, char *buf, size_t len);

struct slice_ent {
	uint32_t id;		/* the aggregate's stack id */
	uint32_t pad;
	uint64_t count, ns;
};

struct slice {
	uint64_t t0, t1;	/* [t0, t1): wall-clock ns since the epoch */
	uint32_t n;
	struct slice_ent *e;	/* closed: by id */
};

struct slices {
	struct slices_cfg cfg;
	struct slice *s;	/* oldest first; the last one is open if @open */
	size_t n, cap;
	bool open;
	uint32_t *at;		/* the open slice: entry index + 1 by stack id, 0: none */
	size_t cap_at, cap_open;
	uint64_t merged_early;	/* merges the budget forced */
	uint64_t coarsened;	/* merges the tiers made */
};

struct slices *slices_new(const struct slices_cfg *cfg);
void slices_free(struct slices *sl);
/* Forget every slice (pcmon zero). */
void slices_zero(struct slices *sl);
/*
 * @count samples and @ns off-CPU nanoseconds of stack @id at wall time @wall: into the open
 * slice, or a new one if @wall is past its end. 0 or -ENOMEM.
 */
int slices_add(struct slices *sl, uint32_t id, uint64_t count, uint64_t ns, uint64_t wall);
/* A whole slice as it was saved (after every slice before it). 0 or -ENOMEM. */
int slices_push(struct slices *sl, uint64_t t0, uint64_t t1, const struct slice_ent *e,
		uint32_t n);
/*
 * Time passes: close the open slice if @now is past its end, merge by the tiers, then merge
 * the oldest while over budget. Returns how many merges were made.
 */
size_t slices_tick(struct slices *sl, uint64_t now);
size_t slices_bytes(const struct slices *sl);

/* What a window [since, until) was answered from. */
struct slices_span {
	uint64_t t0, t1;	/* the slices taken cover [t0, t1) (both 0: none taken) */
	size_t nslices;
	bool cut;		/* the window cut a slice: the whole slice was taken */
};

/*
 * Every slice that overlaps [since, until): @fn is called for each of its entries. The span
 * taken goes to @span.
 */
void slices_window(const struct slices *sl, uint64_t since, uint64_t until,
		   void (*fn)(void *ctx, const struct slice_ent *e), void *ctx,
		   struct slices_span *span);
/* Slice @i (0: oldest) overlaps [since, until). */
static inline bool slice_in(const struct slice *s, uint64_t since, uint64_t until)
{
	return s->t1 > since && s->t0 < until;
}

/*
 * A time as the user writes it, into wall ns: "now", "-15m", "-1h30m" (before @now),
 * "+10s" (after @start), "@1700000000.5" or a bare number of seconds since the epoch,
 * "HH:MM[:SS]" (today, local time), "YYYY-MM-DD[ HH:MM[:SS]]" or with a T (local time).
 * 0, or -1 if it is none of these.
 */
int slices_parse_time(const char *s, uint64_t now, uint64_t start, uint64_t *out);
/* "10s", "1m", "1h30m": a duration in whole seconds. 0 or -1. */
int slices_parse_dur(const char *s, uint64_t *ns);

#endif
