/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * timed_: what every instrument that keeps its counts by time slice (slices.h) shares:
 * sampling (samples by stack), call counting (each procedure's totals) and the probe-node
 * tables (node hits, leg totals, histogram buckets). A target's --slices and
 * --slice-memory apply to each of its instruments; a listing's window (--since, --until)
 * is read the same way by each, and said the same way in its reply; each keeps its slices
 * in its section of the results file in the same form.
 */
#ifndef PCMON_TIMED_H
#define PCMON_TIMED_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "slices.h"

struct list_req;

struct sf_rd;
struct sf_wr;
struct target;

/* The default settings, SLICES_DEFAULT and SLICES_DEFAULT_BUDGET. */
void timed_default_cfg(struct slices_cfg *cfg);
/* The slice settings of a start request (the defaults, or "slices" and "slice_kib"):
 * 0, or -1 with the error in *rep. */
int timed_cfg(const cJSON *req, struct slices_cfg *cfg, cJSON **rep);

/* A listing's window: [since, until) as asked, and what the slices taken cover. */
struct timed_window {
	bool on;		/* "since" or "until" was asked */
	uint64_t since, until;	/* wall ns; 0 and UINT64_MAX: open */
	struct slices_span span;
};

/*
 * The window of a list request (@start_wall: the target's start, for "+10s"): w->on false
 * when none is asked. 0, or -1 with the error in *rep.
 */
int timed_window_parse(const struct list_req *lr, double start_wall, struct timed_window *w,
		       cJSON **rep);
/*
 * Take the window's slices of @sl (@fn gets each row, as slices_window()) into w->span;
 * what the open slice covers ends now.
 */
void timed_window_take(struct timed_window *w, const struct slices *sl,
		       void (*fn)(void *ctx, const uint64_t *row), void *ctx);
/* The window's length in ns: what its slices cover. */
uint64_t timed_window_ns(const struct timed_window *w);
/*
 * "window": {"since", "until" (as asked, seconds since the epoch; null: open), "from",
 * "to" (what the slices taken cover), "slices", "cut" (a slice reached outside the window:
 * whole slices were taken)}, into @o.
 */
void timed_window_json(const struct timed_window *w, cJSON *o);

/* The slices' settings and figures in a target's facts ("slices", "slices_kept", ...). */
void timed_facts_json(const struct slices *sl, cJSON *o);

/*
 * "slices": {"spec", "memory_kib", "merged_early", "coarsened", "list": [{"t0": MS,
 * "t1": MS, "s": [ID, SUM..., ID, SUM..., ...]}, ...]} in a section of the results file:
 * each row as its id and its width sums.
 */
void timed_save(struct sf_wr *w, const struct slices *sl, cJSON *o);
/*
 * The "slices" of a section, checked (rows of an id below @nids and @width sums);
 * and if @sl, loaded into it, each id through @idmap (NULL: as it is). 1 when the section
 * has none (a file written before its instrument kept slices), else 0 or -errno.
 */
int timed_read(struct sf_rd *rd, const cJSON *o, unsigned width, uint64_t nids,
	       struct slices *sl, const uint32_t *idmap);
/*
 * timed_read() of a file whose rows hold @fwidth sums (at most @width): the first @fwidth of
 * each row's sums, the others 0 (a file written before the instrument's rows grew).
 */
int timed_read_narrow(struct sf_rd *rd, const cJSON *o, unsigned width, unsigned fwidth,
		      uint64_t nids, struct slices *sl, const uint32_t *idmap);
/*
 * A file without slices: its totals (@n rows of 1 + sl->width words) as one slice, the
 * target's life as the file says it (rd->t_start to rd->t_end). 0 or -ENOMEM.
 */
int timed_one_slice(const struct sf_rd *rd, struct slices *sl, const uint64_t *rows, uint32_t n);

/*
 * An instrument whose totals stay in BPF until read (call counting, the probe-node
 * tables): what its tick() and sync() need of it. @slices: a state's slices (NULL: none
 * kept) and when BPF's totals were last read (wall ns); @read charges what they gained
 * since to the open slice.
 */
struct timed_reader {
	int inst;	/* enum inst_id */
	struct slices *(*slices)(void *st, uint64_t *last_read);
	void (*read)(void *g, const struct target *t, void *st);
};
/*
 * tick(): each target carrying the instrument (@g its engine-wide state, which starts with
 * a struct inst_env): when a slice of a running target ended, its totals are read and
 * charged to it; then its slices are coarsened (the target marked dirty when they changed).
 */
void timed_tick_targets(void *g, const struct timed_reader *r);
/* sync(), before a save or a listing: each target's totals, read. */
void timed_sync_targets(void *g, const struct timed_reader *r);

#endif
