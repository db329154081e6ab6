/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * slices_: a target's samples over time (docs/sampling.md, "Time slices"). The aggregate
 * (agg.h) holds each stack once with its whole-life counts; a slice holds, for an interval
 * of wall-clock time, the counts of the stacks sampled in it, by the aggregate's stack id
 * (so a slice costs a few words per stack it saw, never a stack).
 *
 * Slices hold sums only, @width of them per id: sampling's are (samples, off-CPU ns) by
 * stack id; call counting's a procedure's totals by its index; the probe-node tables' one
 * count by (node or leg, field). Whatever is summed, a window is the sum of its slices.
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

#define SLICES_MAX_WIDTH 32	/* sums per id */

/*
 * A slice's entries are rows of 1 + width words: the id, then its sums (slice_row()).
 * Closed slices keep them sorted by id.
 */
struct slice {
	uint64_t t0, t1;	/* [t0, t1): wall-clock ns since the epoch */
	uint32_t n;
	uint64_t *e;
};

struct slices {
	struct slices_cfg cfg;
	unsigned width;		/* sums per id */
	struct slice *s;	/* oldest first; the last one is open if @open */
	size_t n, cap;
	bool open;
	uint32_t *at;		/* the open slice: entry index + 1 by stack id, 0: none */
	size_t cap_at, cap_open;
	uint64_t merged_early;	/* merges the budget forced */
	uint64_t coarsened;	/* merges the tiers made */
};

/* Slices of @width (1...SLICES_MAX_WIDTH) sums per id. */
struct slices *slices_new(const struct slices_cfg *cfg, unsigned width);

/* Row @i of slice @s: row[0] is the id, row[1...width] its sums. */
static inline uint64_t *slice_row(const struct slices *sl, const struct slice *s, uint32_t i)
{
	return s->e + (size_t)i * (1 + sl->width);
}

void slices_free(struct slices *sl);
/* Forget every slice (pcmon zero). */
void slices_zero(struct slices *sl);
/*
 * @v (width sums) of @id at wall time @wall: added into the open slice, or a new one if
 * @wall is past its end. 0 or -ENOMEM.
 */
int slices_add(struct slices *sl, uint32_t id, const uint64_t *v, uint64_t wall);
/* A whole slice as it was saved (after every slice before it): @n rows of 1 + width words. 0 or -ENOMEM. */
int slices_push(struct slices *sl, uint64_t t0, uint64_t t1, const uint64_t *rows, uint32_t n);
/*
 * The wall time a read of counters at @now charges what it finds to: @now, unless a whole
 * second (every slice boundary is one) passed since the read before (*@last) and @now is
 * at most SLICES_LATE_NS after it: then just before that second. Reads come within
 * milliseconds after every boundary (the engine's tick, 2 ms after whole seconds), so what
 * such a read finds was counted before the boundary but for those milliseconds; a read the
 * engine made late (busy, on a loaded machine: 0.7 s once) holds more of the new second
 * than of the old, and is charged to the new one.
 */
#define SLICES_LATE_NS 250000000ull
uint64_t slices_charge_wall(uint64_t *last, uint64_t now);
/* A slice of @sl ended between @last and @now (wall ns): its counts are due. */
static inline bool slices_ended(const struct slices *sl, uint64_t last, uint64_t now)
{
	return now / sl->cfg.tier[0].len_ns != last / sl->cfg.tier[0].len_ns;
}
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
 * Every slice that overlaps [since, until): @fn is called for each of its rows (id, sums).
 * The span taken goes to @span.
 */
void slices_window(const struct slices *sl, uint64_t since, uint64_t until,
		   void (*fn)(void *ctx, const uint64_t *row), void *ctx, struct slices_span *span);
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
