// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's timeline (alloc_int.h, docs/alloc.md): each slice of a window,
 * what it allocated and what was live at its end, for the target and for the procedures
 * followed, those that hold the most at the window's end (allocated the most, --sort alloc).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "alloc_int.h"
#include "slices.h"
#include "sym.h"
#include "timed.h"
#include "util.h"

#define ALLOC_TIMELINE_MAX 64

/* By stack: what a slice allocated (bytes, variance), and what is live after it. */
struct running {
	double (*v)[4];
	size_t n;
	double unit;
};

enum { R_ALLOC, R_ALLOC_VAR, R_LIVE, R_LIVE_VAR };

static void add_slice(struct running *r, const struct slices *sl, const struct slice *sc)
{
	for (size_t i = 0; i < r->n; i++)
		r->v[i][R_ALLOC] = r->v[i][R_ALLOC_VAR] = 0;
	for (uint32_t j = 0; j < sc->n; j++) {
		const uint64_t *row = slice_row(sl, sc, j), *x = row + 1;
		double *v;

		if (row[0] >= r->n)
			continue;
		v = r->v[row[0]];
		v[R_ALLOC] += (double)x[AC_ALLOC_BYTES];
		v[R_ALLOC_VAR] += (double)x[AC_ALLOC_VAR] * r->unit;
		v[R_LIVE] += (double)x[AC_ALLOC_BYTES] - (double)x[AC_FREE_BYTES];
		v[R_LIVE_VAR] += ((double)x[AC_ALLOC_VAR] - (double)x[AC_FREE_VAR]) * r->unit;
	}
}

/* Procedure @proc's own part of view @v's listing @l (0 if none). */
static double own(const struct agg_list *l, uint32_t proc)
{
	for (size_t i = 0; i < l->nrows; i++)
		if (l->rows[i].proc == proc)
			return (double)l->rows[i].shallow;
	return 0;
}

/* The listing of a view of @which (R_ALLOC or R_LIVE) of each stack, as whole bytes. */
static int list_of(const struct alloc *a, const struct running *r, int which, const struct sym *s,
		   const struct agg_list_opts *o, struct agg_list *l)
{
	struct agg *v = agg_view(a->stacks);
	int e;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i][which] >= 0.5)
			agg_view_add(v, (uint32_t)i, (uint64_t)llround(r->v[i][which]), 0);
	e = agg_list(v, s, o, l);
	agg_free(v);
	return e;
}

/* The procedures followed: the most of @end's listing, by own bytes. */
static size_t follow(const struct agg_list *end, const struct sym *s, uint32_t top,
		     uint32_t *procs)
{
	struct agg_row *rows = malloc((end->nrows + 1) * sizeof(*rows));
	size_t n = 0;

	if (!rows)
		return 0;
	if (end->nrows)
		memcpy(rows, end->rows, end->nrows * sizeof(*rows));
	agg_sort_rows(rows, end->nrows, 0, s);
	for (size_t i = 0; i < end->nrows && n < MIN(top, ALLOC_TIMELINE_MAX); i++)
		if (rows[i].shallow)
			procs[n++] = rows[i].proc;
	free(rows);
	return n;
}

int alloc_timeline_json(const struct alloc *a, const struct sym *s, const struct list_req *lr,
			const struct timed_window *w, cJSON *out)
{
	const struct slices *sl = a->slices;
	bool by_alloc = lr->sort && !strcmp(lr->sort, "alloc");
	struct agg_list_opts o = { .no_inline = lr->no_inline > 0 };
	struct running r = { .n = agg_count(a->stacks), .unit = (double)a->var_unit };
	uint64_t since = w->on ? w->since : 0, until = w->on ? w->until : UINT64_MAX, now = wall_ns();
	uint32_t procs[ALLOC_TIMELINE_MAX];
	cJSON *tl, *arr, *al[ALLOC_TIMELINE_MAX], *li[ALLOC_TIMELINE_MAX];
	struct agg_list l, l2;
	size_t np = 0, last = SIZE_MAX;
	int e = 0;

	if (!(r.v = calloc(r.n + 1, sizeof(*r.v))))
		return -ENOMEM;
	/* the window's end: what the followed procedures are picked by */
	for (size_t i = 0; i < sl->n; i++) {
		if (sl->s[i].t0 >= until)
			break;
		add_slice(&r, sl, &sl->s[i]);
		if (slice_in(&sl->s[i], since, until))
			last = i;
	}
	if (last != SIZE_MAX) { /* (by allocated bytes: over the window, not its last slice) */
		struct running win = { .v = calloc(r.n + 1, sizeof(*win.v)), .n = r.n, .unit = r.unit };
		double *sum = calloc(r.n + 1, sizeof(*sum));

		if (!win.v || !sum) {
			free(win.v);
			free(sum);
			free(r.v);
			return -ENOMEM;
		}
		for (size_t i = 0; by_alloc && i <= last; i++) {
			if (!slice_in(&sl->s[i], since, until))
				continue;
			add_slice(&win, sl, &sl->s[i]);
			for (size_t k = 0; k < r.n; k++)
				sum[k] += win.v[k][R_ALLOC];
		}
		for (size_t k = 0; k < r.n; k++)
			win.v[k][R_ALLOC] = sum[k];
		e = by_alloc ? list_of(a, &win, R_ALLOC, s, &o, &l) : list_of(a, &r, R_LIVE, s, &o, &l);
		free(win.v);
		free(sum);
		if (e) {
			free(r.v);
			return e;
		}
		np = follow(&l, s, lr->timeline_top, procs);
		agg_list_free(&l);
	}
	tl = cJSON_AddObjectToObject(out, "timeline");
	cJSON_AddStringToObject(tl, "sort", by_alloc ? "alloc" : "inuse");
	arr = cJSON_AddArrayToObject(tl, "procedures");
	for (size_t k = 0; k < np; k++) {
		cJSON *p = agg_proc_json(s, procs[k]);

		cJSON_AddItemToArray(arr, p);
		al[k] = cJSON_AddArrayToObject(p, "alloc_bytes");
		li[k] = cJSON_AddArrayToObject(p, "inuse_bytes");
	}
	arr = cJSON_AddArrayToObject(tl, "slices");
	memset(r.v, 0, (r.n + 1) * sizeof(*r.v));
	for (size_t i = 0; !e && i < sl->n && i <= last && last != SIZE_MAX; i++) {
		const struct slice *sc = &sl->s[i];
		double tot[4] = { 0 };
		cJSON *x;

		add_slice(&r, sl, sc);
		if (!slice_in(sc, since, until))
			continue;
		for (size_t k = 0; k < r.n; k++)
			for (int m = 0; m < 4; m++)
				tot[m] += m >= R_LIVE ? fmax(r.v[k][m], 0) : r.v[k][m];
		x = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, x);
		cJSON_AddNumberToObject(x, "t0", sc->t0 / 1e9);
		cJSON_AddNumberToObject(x, "t1", MIN(sc->t1, now) / 1e9);
		cJSON_AddNumberToObject(x, "alloc_bytes", round(tot[R_ALLOC]));
		cJSON_AddNumberToObject(x, "alloc_bytes_stderr", round(sqrt(tot[R_ALLOC_VAR])));
		cJSON_AddNumberToObject(x, "inuse_bytes", round(tot[R_LIVE]));
		cJSON_AddNumberToObject(x, "inuse_bytes_stderr", round(sqrt(tot[R_LIVE_VAR])));
		if (!np)
			continue;
		if ((e = list_of(a, &r, R_ALLOC, s, &o, &l)))
			break;
		if ((e = list_of(a, &r, R_LIVE, s, &o, &l2))) {
			agg_list_free(&l);
			break;
		}
		for (size_t k = 0; k < np; k++) {
			cJSON_AddItemToArray(al[k], cJSON_CreateNumber(own(&l, procs[k])));
			cJSON_AddItemToArray(li[k], cJSON_CreateNumber(own(&l2, procs[k])));
		}
		agg_list_free(&l);
		agg_list_free(&l2);
	}
	free(r.v);
	return e;
}
