// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sampling over time (docs/sampling.md, "Time slices"): a target's slices as settings and
 * figures, a listing's window (--since, --until) answered from them, and the timeline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "proto.h"
#include "sample.h"
#include "slices.h"
#include "sym.h"
#include "tail.h"
#include "target.h"
#include "timed.h"
#include "util.h"

int sample_set_slices(struct sample *sp, const cJSON *req, cJSON **rep)
{
	return timed_cfg(req, &sp->slices->cfg, rep);
}

void sample_slices_json(const struct sample *sp, cJSON *o)
{
	timed_facts_json(sp->slices, o);
	cJSON_AddNumberToObject(o, "slices_lost", sp->slices_lost);
}

static void into_view(void *ctx, const uint64_t *row)
{
	agg_view_add(ctx, row[0], row[1], row[2]);
}

int sample_window_begin(struct sample_listing *ls, const struct list_req *lr, cJSON **rep)
{
	struct timed_window w;

	ls->agg = ls->sp->agg;
	if (timed_window_parse(lr, ls->t->start_wall, &w, rep))
		return -1;
	if (lr->tail) { /* a tailed leg's profile (tail.h): not kept by time */
		struct tail_leg *l = tails_leg(ls->sp->tails, lr->tail);
		int part = 0;

		while (part < TAIL_PARTS - 1 && strcmp(tail_part_names[part], lr->tail_part))
			part++;
		if (!l) {
			*rep = proto_error(1, "--tail %u: target %u tails no leg %u (start it with --tail LEG)",
					   lr->tail, ls->t->id, lr->tail);
			return -1;
		}
		if (w.on) {
			*rep = proto_error(2, "--tail: tail profiles are not kept by time (no --since or --until)");
			return -1;
		}
		ls->agg = l->prof[part];
		ls->tail = l;
		ls->tail_part = part;
		return 0;
	}
	if (!w.on)
		return 0;
	ls->view = agg_view(ls->sp->agg);
	if (!ls->view) {
		*rep = proto_error(1, "out of memory while listing");
		return -1;
	}
	timed_window_take(&w, ls->sp->slices, into_view, ls->view);
	ls->agg = ls->view;
	ls->windowed = true;
	ls->since = w.since;
	ls->until = w.until;
	ls->covered_t0 = w.span.t0;
	ls->covered_t1 = w.span.t1;
	ls->nslices = w.span.nslices;
	ls->cut = w.span.cut;
	return 0;
}

/* The listing's "window" (timed.h). */
void sample_window_json(const struct sample_listing *ls, cJSON *rep)
{
	struct timed_window w = { .on = ls->windowed, .since = ls->since, .until = ls->until,
				  .span = { .t0 = ls->covered_t0, .t1 = ls->covered_t1,
					    .nslices = ls->nslices, .cut = ls->cut } };

	timed_window_json(&w, rep);
}

/* ---- the timeline */

#define TIMELINE_MAX_PROCS 64

/*
 * The procedures followed: the top ones of the window and those asked by name, each name as
 * --when takes one (module.procedure, the procedure alone, a glob). A name no procedure of
 * the target answers to is said in @rep's "timeline_unseen", with the names near it.
 */
static size_t pick(struct sample_listing *ls, const struct agg_list *whole, const struct sym *s,
		   const struct list_req *lr, uint32_t *procs, size_t max, cJSON *rep)
{
	size_t top = lr->timeline_top, n = 0, np = 0;
	bool icase = lr->icase >= 0 ? lr->icase : ls->sp->icase;
	struct agg_row *rows = malloc((whole->nrows + 1) * sizeof(*rows));
	struct pat *pats[TIMELINE_MAX_PROCS] = { 0 };
	const char *texts[TIMELINE_MAX_PROCS];
	cJSON *un;

	if (!rows)
		return 0;
	if (whole->nrows) /* (a window of no slice lists no row: its rows may be NULL) */
		memcpy(rows, whole->rows, whole->nrows * sizeof(*rows));
	agg_sort_rows(rows, whole->nrows, 0, s);
	for (size_t i = 0; i < whole->nrows && n < MIN(top, max); i++)
		procs[n++] = rows[i].proc;
	for (size_t j = 0; j < lr->ntimeline_procs; j++) {
		const char *name = lr->timeline_procs[j];
		struct pat *p = NULL;

		if (np == TIMELINE_MAX_PROCS || pat_parse(name, icase ? PAT_ICASE : 0, &p, NULL))
			continue; /* (checked when the request was read) */
		pats[np] = p;
		texts[np++] = name;
		for (size_t i = 0; i < whole->nrows && n < max; i++) {
			struct pat_frame pf = agg_proc_frame(s, rows[i].proc);
			size_t k;

			if (!pf.proc || !pat_name_match(p, 0, &pf))
				continue;
			for (k = 0; k < n && procs[k] != rows[i].proc; k++)
				;
			if (k == n)
				procs[n++] = rows[i].proc;
		}
	}
	un = np ? agg_names_unseen_json(ls->sp->agg, s, (const struct pat *const *)pats, np, texts)
		: NULL;
	if (un)
		cJSON_AddItemToObject(rep, "timeline_unseen", un);
	for (size_t k = 0; k < np; k++)
		pat_free(pats[k]);
	free(rows);
	return n;
}

/*
 * "timeline": {"slices": [{"t0", "t1", "counted", "interrupts"}], "procedures":
 * [{"procedure", "name", "module", "shallow": [...], "deep": [...]}]}: each slice the
 * window takes listed alone (WHEN and the sections apply as to the whole), with the
 * counts of the procedures followed in it.
 */
int sample_timeline_json(struct sample_listing *ls, const struct sym *s,
			 const struct list_req *lr, const struct agg_list *whole, cJSON *rep)
{
	const struct slices *sl = ls->sp->slices;
	uint64_t since = ls->windowed ? ls->since : 0, until = ls->windowed ? ls->until : UINT64_MAX;
	uint32_t procs[TIMELINE_MAX_PROCS];
	cJSON *tl = cJSON_AddObjectToObject(rep, "timeline"), *arr, *sh[TIMELINE_MAX_PROCS],
	      *dp[TIMELINE_MAX_PROCS];
	struct agg *v = agg_view(ls->sp->agg);
	struct agg_list_opts lo = ls->lo;
	uint64_t now = wall_ns();

	size_t np;

	if (!tl || !v) {
		agg_free(v);
		return -ENOMEM;
	}
	np = pick(ls, whole, s, lr, procs, TIMELINE_MAX_PROCS, tl);
	lo.visit = NULL;
	lo.extra = NULL; /* open intervals: in the whole listing, not in one slice */
	lo.nextra = 0;
	arr = cJSON_AddArrayToObject(tl, "procedures");
	for (size_t k = 0; k < np; k++) {
		cJSON *o = agg_proc_json(s, procs[k]);

		cJSON_AddItemToArray(arr, o);
		sh[k] = cJSON_AddArrayToObject(o, "shallow");
		dp[k] = cJSON_AddArrayToObject(o, "deep");
	}
	arr = cJSON_AddArrayToObject(tl, "slices");
	for (size_t i = 0; i < sl->n; i++) {
		const struct slice *sc = &sl->s[i];
		struct agg_list l;
		cJSON *o;

		if (!slice_in(sc, since, until))
			continue;
		agg_view_clear(v);
		for (uint32_t j = 0; j < sc->n; j++)
			into_view(v, slice_row(sl, sc, j));
		if (agg_list(v, s, &lo, &l)) {
			agg_free(v);
			return -ENOMEM;
		}
		o = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, o);
		cJSON_AddNumberToObject(o, "t0", sc->t0 / 1e9);
		cJSON_AddNumberToObject(o, "t1", MIN(sc->t1, now) / 1e9);
		cJSON_AddNumberToObject(o, "counted", l.counted);
		cJSON_AddNumberToObject(o, "interrupts", l.interrupts);
		for (size_t k = 0; k < np; k++) {
			uint64_t a = 0, b = 0;

			for (size_t r = 0; r < l.nrows; r++)
				if (l.rows[r].proc == procs[k]) {
					a = l.rows[r].shallow;
					b = l.rows[r].deep;
					break;
				}
			cJSON_AddItemToArray(sh[k], cJSON_CreateNumber((double)a));
			cJSON_AddItemToArray(dp[k], cJSON_CreateNumber((double)b));
		}
		agg_list_free(&l);
	}
	agg_free(v);
	return 0;
}
