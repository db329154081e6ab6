// SPDX-License-Identifier: GPL-2.0-only
/*
 * The diff of two profiles as a document (diffdoc.h): each side's stacks and slices into the
 * statistics (diffstat.h), the test run, its verdicts as JSON. pcmon diff prints it; the
 * HTTP server's page is to serve the same.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffdoc.h"
#include "proto.h"
#include "util.h"

const char *diffdoc_name(const struct diffdoc *d, size_t id)
{
	size_t len;

	return itab_key(d->names, (uint32_t)id, &len);
}

/* The wall-clock span side @k covers: its window's (whole slices) within the target's
 * life, or the target's life. */
static void side_span(const struct diffdoc_side *s, double *t0, double *t1)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(s->rep, "window");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->rep, "target");
	double start = proto_num(t, "start_wall", 0), end = start + proto_num(t, "elapsed_s", 0);

	*t0 = start;
	*t1 = end;
	if (w && proto_num(w, "slices", 0)) {
		*t0 = fmax(proto_num(w, "from", 0), start);
		*t1 = fmin(proto_num(w, "to", 0), end);
	}
	if (*t1 < *t0)
		*t1 = *t0;
}

/* Side @k's samples into the statistics: each stack's frames by name, root first. */
static int count_side(struct diffdoc *d, int k)
{
	const struct xprof *p = &d->s[k].p;
	struct xframe *fr = NULL;
	uint32_t *ids = NULL;
	size_t cap = 0, cap_ids = 0;
	double t0, t1;
	int err = -ENOMEM;

	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		int n = xprof_frames(p, s, &fr, &cap);

		if (n < 0 || GROW(ids, cap_ids, (size_t)n + 1))
			goto out;
		for (int j = 0; j < n; j++)
			if (itab_str(d->names, fr[j].name, &ids[j]) < 0)
				goto out;
		if (s->count && dstat_add(&d->st, k, (double)s->count, ids, n))
			goto out;
	}
	side_span(&d->s[k], &t0, &t1);
	d->st.side[k].period_ns = p->period_ns;
	d->st.side[k].seconds = t1 - t0;
	err = 0;
out:
	free(fr);
	free(ids);
	return err;
}

/* Side @k's time slices (its timeline, listed or saved with it) for the dispersion: the
 * procedures followed and the rest, each slice's time within the side's. */
static int slices_side(struct diffdoc *d, int k)
{
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(d->s[k].rep, "timeline");
	const cJSON *sl = cJSON_GetObjectItemCaseSensitive(tl, "slices"), *x, *v;
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(tl, "procedures");
	size_t nc = (size_t)cJSON_GetArraySize(sl), np = (size_t)cJSON_GetArraySize(procs), c, r = 0;
	double t0, t1, *counts, *secs;
	uint32_t *ids;
	int err = -ENOMEM;

	if (nc < 2)
		return 0;
	side_span(&d->s[k], &t0, &t1);
	counts = calloc((np + 1) * nc, sizeof(*counts));
	secs = calloc(nc, sizeof(*secs));
	ids = calloc(np + 1, sizeof(*ids));
	if (!counts || !secs || !ids)
		goto out;
	c = 0;
	cJSON_ArrayForEach(x, sl) {
		double a = proto_num(x, "t0", 0), b = proto_num(x, "t1", 0);

		if (t1 > t0) /* (the side's start and end may cut its first and last slice) */
			a = fmax(a, t0), b = fmin(b, t1);
		secs[c] = fmax(b - a, 0);
		counts[np * nc + c++] = proto_num(x, "counted", 0);
	}
	cJSON_ArrayForEach(x, procs) {
		/* (a name the stacks do not have is a procedure of its own all the same) */
		if (itab_str(d->names, proto_str(x, "name", "?"), &ids[r]) < 0)
			goto out;
		c = 0;
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(x, "shallow")) {
			if (c < nc) {
				counts[r * nc + c] = v->valuedouble;
				counts[np * nc + c] -= v->valuedouble; /* the rest */
			}
			c++;
		}
		r++;
	}
	for (c = 0; c < nc; c++)
		counts[np * nc + c] = fmax(counts[np * nc + c], 0);
	ids[np] = DSTAT_NO_ID;
	dstat_add_slices(&d->st, k, &(struct dstat_slices){ counts, secs, np + 1, nc, ids });
	err = 0;
out:
	free(counts);
	free(secs);
	free(ids);
	return err;
}

double diffdoc_pct(double a, double b)
{
	return b > 0 ? 100 * a / b : 0;
}

/* The effect a row is shown with: its verdict's, else its larger (a whole frame's: deep). */
int diffdoc_shown(const struct dstat_row *r)
{
	if (r->whole)
		return 1;
	if (r->sig || r->sh < 0)
		return r->sig ? r->by : 1;
	return r->dp >= 0 && fabs(r->eff[1].pp) > fabs(r->eff[0].pp);
}

const char *diffdoc_side_name(const struct diffdoc_side *s, char *buf, size_t len)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(s->rep, "window");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->rep, "target");
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(s->rep, "tail");
	char a[32], b[32];

	if (tl) { /* diff --tail: a tailed leg's profile */
		const char *part = proto_str(tl, "part", "?");

		snprintf(buf, len, "target %.0f \"%s\", the %s of leg %.0f (%.0f instances)",
			 proto_num(t, "id", 0), proto_str(t, "name", "?"), part,
			 proto_num(tl, "leg", 0),
			 proto_num(tl, strcmp(part, "body") ? "slow_instances" : "body_instances", 0));
	} else if (w && proto_num(w, "slices", 0)) {
		clock_text(a, sizeof(a), proto_num(w, "from", 0));
		clock_text(b, sizeof(b), proto_num(w, "to", 0));
		snprintf(buf, len, "target %.0f \"%s\" %s to %s", proto_num(t, "id", 0),
			 proto_str(t, "name", "?"), a, b);
	} else {
		snprintf(buf, len, "target %.0f \"%s\"", proto_num(t, "id", 0), proto_str(t, "name", "?"));
	}
	return buf;
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void effect_json(cJSON *o, const char *key, const struct dstat_effect *e)
{
	cJSON *x = cJSON_AddObjectToObject(o, key);

	cJSON_AddNumberToObject(x, "pp", e->pp);
	cJSON_AddNumberToObject(x, "pp_low", e->pp_lo);
	cJSON_AddNumberToObject(x, "pp_high", e->pp_hi);
	cJSON_AddItemToObject(x, "ratio", num_or_null(e->ratio));
	cJSON_AddItemToObject(x, "ratio_low", num_or_null(e->lo));
	cJSON_AddItemToObject(x, "ratio_high", num_or_null(e->hi));
}

static const char *const from_names[] = { "none", "slices", "procedures", "fixed" };

cJSON *diffdoc_json(const struct diffdoc *d, long top)
{
	const struct dstat *st = &d->st;
	cJSON *o = cJSON_CreateObject(), *arr, *x, *y;
	char buf[200];

	for (int k = 0; k < 2; k++) {
		x = cJSON_AddObjectToObject(o, k ? "b" : "a");
		cJSON_AddStringToObject(x, "name", diffdoc_side_name(&d->s[k], buf, sizeof(buf)));
		cJSON_AddNumberToObject(x, "samples", st->side[k].total);
		cJSON_AddNumberToObject(x, "seconds", st->side[k].seconds);
		cJSON_AddNumberToObject(x, "period_ns", st->side[k].period_ns);
		cJSON_AddNumberToObject(x, "slices", (double)st->side[k].nslices);
		if (cJSON_GetObjectItemCaseSensitive(d->s[k].rep, "window"))
			cJSON_AddItemToObject(x, "window", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(d->s[k].rep, "window"), 1));
	}
	x = cJSON_AddObjectToObject(o, "test");
	cJSON_AddStringToObject(x, "name", "exact binomial test of each procedure's counts against the model, two-sided, widened by the dispersion, Holm-corrected");
	cJSON_AddStringToObject(x, "model", dstat_model_name(st->model));
	cJSON_AddStringToObject(x, "model_asked", dstat_model_name(st->asked));
	cJSON_AddStringToObject(x, "model_text", dstat_model_text(st->model));
	cJSON_AddNumberToObject(x, "scale", st->scale);
	cJSON_AddNumberToObject(x, "alpha", st->alpha);
	cJSON_AddNumberToObject(x, "tests", (double)st->family);
	cJSON_AddNumberToObject(x, "interval", st->level);
	if (st->nbulk) {
		cJSON_AddNumberToObject(x, "median_ratio", st->bulk);
		cJSON_AddNumberToObject(x, "median_ratio_se", st->bulk_se);
		cJSON_AddNumberToObject(x, "median_of", (double)st->nbulk);
	}
	y = cJSON_AddObjectToObject(x, "models"); /* where that median sits against each */
	for (int m = 0; m < DSTAT_MODELS; m++)
		if (st->tries[m].done) {
			cJSON *z = cJSON_AddObjectToObject(y, dstat_model_name(m));

			cJSON_AddNumberToObject(z, "median_ratio", st->tries[m].off);
		}
	y = cJSON_AddObjectToObject(x, "dispersion");
	cJSON_AddStringToObject(y, "from", from_names[st->phi_from]);
	cJSON_AddNumberToObject(y, "phi", st->phi);
	cJSON_AddNumberToObject(y, "relative_spread", sqrt(st->sigma2));
	cJSON_AddBoolToObject(y, "spread_told", st->spread);
	cJSON_AddNumberToObject(y, "set_aside", (double)st->nout);
	cJSON_AddNumberToObject(y, "slices", (double)st->nslices);
	cJSON_AddNumberToObject(y, "df", st->df);
	cJSON_AddNumberToObject(y, "procedures", (double)st->npooled);
	if (st->model != DSTAT_SAMPLE)
		effect_json(x, "total", &st->total);
	arr = cJSON_AddArrayToObject(o, "procedures");
	for (size_t i = 0; i < d->n && (!top || (long)i < top); i++) {
		const struct dstat_row *r = &st->rows[d->order[i]];
		const struct dstat_test *sh = r->sh >= 0 ? &st->tests[r->sh] : NULL;
		const struct dstat_test *dp = r->dp >= 0 ? &st->tests[r->dp] : NULL;
		double ta = st->side[0].total, tb = st->side[1].total;

		x = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, x);
		cJSON_AddStringToObject(x, "procedure", diffdoc_name(d, d->order[i]));
		cJSON_AddNumberToObject(x, "a_shallow", r->a_sh);
		cJSON_AddNumberToObject(x, "b_shallow", r->b_sh);
		cJSON_AddNumberToObject(x, "a_deep", r->a_dp);
		cJSON_AddNumberToObject(x, "b_deep", r->b_dp);
		cJSON_AddNumberToObject(x, "a_shallow_pct", diffdoc_pct(r->a_sh, ta));
		cJSON_AddNumberToObject(x, "b_shallow_pct", diffdoc_pct(r->b_sh, tb));
		cJSON_AddNumberToObject(x, "shallow_pp", diffdoc_pct(r->b_sh, tb) - diffdoc_pct(r->a_sh, ta));
		cJSON_AddNumberToObject(x, "a_deep_pct", diffdoc_pct(r->a_dp, ta));
		cJSON_AddNumberToObject(x, "b_deep_pct", diffdoc_pct(r->b_dp, tb));
		cJSON_AddNumberToObject(x, "deep_pp", diffdoc_pct(r->b_dp, tb) - diffdoc_pct(r->a_dp, ta));
		cJSON_AddNumberToObject(x, "shallow_z", sh ? sh->z * (sh->complement ? -1 : 1) : 0);
		cJSON_AddNumberToObject(x, "shallow_p", sh && !r->whole ? sh->p : 1);
		cJSON_AddNumberToObject(x, "shallow_p_adj", sh && !r->whole ? sh->p_adj : 1);
		cJSON_AddNumberToObject(x, "deep_z", dp ? dp->z * (dp->complement ? -1 : 1) : 0);
		cJSON_AddNumberToObject(x, "deep_p", dp && !r->whole ? dp->p : 1);
		cJSON_AddNumberToObject(x, "deep_p_adj", dp && !r->whole ? dp->p_adj : 1);
		cJSON_AddBoolToObject(x, "whole", r->whole);
		cJSON_AddBoolToObject(x, "significant", r->sig);
		cJSON_AddStringToObject(x, "change", r->dir > 0 ? "grew" : r->dir < 0 ? "shrank" : "");
		cJSON_AddStringToObject(x, "by", diffdoc_shown(r) ? "deep" : "shallow");
		effect_json(x, "effect", &r->eff[diffdoc_shown(r)]);
		if (sh)
			effect_json(x, "shallow_effect", &r->eff[0]);
		if (dp)
			effect_json(x, "deep_effect", &r->eff[1]);
	}
	return o;
}

int diffdoc_init(struct diffdoc *d, enum dstat_model per, double alpha)
{
	*d = (struct diffdoc){ 0 };
	d->names = itab_new();
	if (!d->names)
		return -ENOMEM;
	dstat_init(&d->st, per, alpha);
	return 0;
}

int diffdoc_side(struct diffdoc *d, int k, cJSON *rep, char *err, size_t errlen)
{
	d->s[k].rep = rep;
	if (xprof_load(&d->s[k].p, rep, err, errlen))
		return -EINVAL;
	return count_side(d, k) || slices_side(d, k) ? -ENOMEM : 0;
}

int diffdoc_run(struct diffdoc *d, char *err, size_t errlen)
{
	if (dstat_check(&d->st, err, errlen))
		return -EINVAL;
	if (dstat_run(&d->st) || !(d->order = malloc((d->st.nrows + 1) * sizeof(*d->order))))
		return -ENOMEM;
	d->n = dstat_order(&d->st, d->order);
	return 0;
}

void diffdoc_free(struct diffdoc *d)
{
	for (int k = 0; k < 2; k++) {
		if (d->s[k].p.rep)
			xprof_free(&d->s[k].p);
		cJSON_Delete(d->s[k].rep);
	}
	free(d->order);
	dstat_free(&d->st);
	itab_free(d->names);
	*d = (struct diffdoc){ 0 };
}
