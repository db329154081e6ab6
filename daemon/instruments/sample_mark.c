// SPDX-License-Identifier: GPL-2.0-only
/*
 * Windows that start now: `mark` takes a snapshot of a target's counts, and a listing with
 * "since_mark" lists only what was counted after it. pcmond's HTTP scrape
 * (/debug/pprof/profile?seconds=N, docs/fleet.md) is one of each, N seconds apart: each
 * request has its own window, however many overlap, and a window is exact to the drain
 * (both ends drain what BPF holds first).
 *
 * A mark "at_start" has nothing before it: its window is everything since the target
 * started, or was last zeroed (a push's first window, push.c).
 *
 * A target keeps at most SAMPLE_MARKS of them; one unused for SAMPLE_MARK_TTL_S is dropped
 * when the next is taken (a client that went away leaves nothing behind for long).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg.h"
#include "inst.h"
#include "proto.h"
#include "sample_int.h"
#include "target.h"
#include "util.h"

/* longer than the longest push interval (an hour), whose marks move only once an interval */
#define SAMPLE_MARK_TTL_S 3900

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void drop(struct sample_mark *m)
{
	agg_snap_free(&m->snap);
	memset(m, 0, sizeof(*m));
}

cJSON *sample_cmd_mark(void *g, struct target *t, const cJSON *req)
{
	struct sample *sp = sample_of(t);
	uint64_t now = now_ns();
	struct sample_mark *m = NULL;
	cJSON *rep;

	if (!sp)
		return proto_error(1, "target %u \"%s\" does not sample", t->id, t->name);
	if (!sp->marks && !(sp->marks = calloc(1, sizeof(*sp->marks))))
		return proto_error(1, "out of memory");
	for (int i = 0; i < SAMPLE_MARKS; i++) {
		struct sample_mark *x = &sp->marks->m[i];

		if (x->id && x->taken_ns + SAMPLE_MARK_TTL_S * 1000000000ULL < now)
			drop(x);
		if (!x->id && !m)
			m = x;
	}
	if (!m)
		return proto_error(1, "target %u: %d windows open already: wait for one to end",
				   t->id, SAMPLE_MARKS);
	if (proto_bool(req, "at_start", 0)) {
		/* nothing before it: the window holds every sample since the start (or `zero`) */
		agg_snap_empty(sp->agg, &m->snap);
		m->taken_ns = t->start_ns;
		m->taken_wall = t->start_wall;
		m->lost = 0;
	} else {
		sample_drain_all(g); /* what BPF holds belongs before the mark */
		if (agg_snapshot(sp->agg, &m->snap))
			return proto_error(1, "out of memory");
		m->taken_ns = now_ns();
		m->taken_wall = wall_now();
		m->lost = sample_lost(sp);
	}
	if (!++sp->marks->next_id)
		sp->marks->next_id = 1;
	m->id = sp->marks->next_id;
	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "mark", m->id);
	cJSON_AddNumberToObject(rep, "taken_wall", m->taken_wall);
	return rep;
}

static struct sample_mark *find(struct sample *sp, uint32_t id)
{
	for (int i = 0; id && sp->marks && i < SAMPLE_MARKS; i++)
		if (sp->marks->m[i].id == id)
			return &sp->marks->m[i];
	return NULL;
}

int sample_mark_window(struct sample *sp, const struct target *t, uint32_t id,
		       struct sample_window *w, cJSON **err)
{
	struct sample_mark *m = find(sp, id);

	if (!m) {
		*err = proto_error(2, "target %u: no window %u (ended, or older than %d s)", t->id,
				   id, SAMPLE_MARK_TTL_S);
		return -1;
	}
	w->agg = agg_since(sp->agg, &m->snap);
	if (!w->agg) {
		*err = proto_error(1, "out of memory while listing");
		return -1;
	}
	w->from_wall = m->taken_wall;
	w->to_wall = wall_now();
	w->seconds = (now_ns() - m->taken_ns) / 1e9;
	w->lost = sample_lost(sp) - MIN(sample_lost(sp), m->lost);
	return 0;
}

void sample_mark_move(struct sample *sp, uint32_t id)
{
	struct sample_mark *m = find(sp, id);
	struct agg_snap snap;

	/* (a mark that cannot move for want of memory stays: the next window is longer) */
	if (!m || agg_snapshot(sp->agg, &snap))
		return;
	agg_snap_free(&m->snap);
	m->snap = snap;
	m->taken_ns = now_ns();
	m->taken_wall = wall_now();
	m->lost = sample_lost(sp);
}

void sample_mark_drop(struct sample *sp, uint32_t id)
{
	struct sample_mark *m = find(sp, id);

	if (m)
		drop(m);
}
