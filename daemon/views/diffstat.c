// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffstat.h"
#include "util.h"

/* ---- the binomial's tails, continuous in x and n */

/* The continued fraction of I_x(a, b) (modified Lentz), for x < (a + 1) / (a + b + 2). */
static double ibeta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1), h, step = 0;

	d = 1 / (fabs(d) < tiny ? tiny : d);
	h = d;
	for (int m = 1; m < 1000000 && fabs(step - 1) > 1e-15; m++) {
		double e[2] = { m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
				-(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)) };

		for (int i = 0; i < 2; i++) {
			d = 1 + e[i] * d;
			c = 1 + e[i] / c;
			d = 1 / (fabs(d) < tiny ? tiny : d);
			c = fabs(c) < tiny ? tiny : c;
			step = d * c;
			h *= step;
		}
	}
	return h;
}

double dstat_ibeta(double a, double b, double x)
{
	double lf;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	lf = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	/* each tail from its own side: a small tail is never 1 minus something near 1 */
	if (x < (a + 1) / (a + b + 2))
		return exp(lf) * ibeta_cf(a, b, x) / a;
	return 1 - exp(lf) * ibeta_cf(b, a, 1 - x) / b;
}

/* P(X <= x) and P(X >= x), X binomial (n, p) */
static double tail_lo(double x, double n, double p)
{
	return x >= n ? 1 : x < 0 ? 0 : dstat_ibeta(n - x, x + 1, 1 - p);
}

static double tail_hi(double x, double n, double p)
{
	return x <= 0 ? 1 : x > n ? 0 : dstat_ibeta(x, n - x + 1, p);
}

static double lpmf(double x, double n, double p)
{
	return lgamma(n + 1) - lgamma(x + 1) - lgamma(n - x + 1) + x * log(p) + (n - x) * log1p(-p);
}

double dstat_binom_p(double x, double n, double p, bool integer)
{
	double mode, lx, lo, hi, r;

	if (n <= 0 || p <= 0 || p >= 1)
		return 1;
	mode = fmin(fmax((n + 1) * p - 0.5, 0), n);
	lx = lpmf(x, n, p) + 1e-7; /* (outcomes as likely as x, to rounding, count) */
	if (x < mode) {
		/* the other tail: from the first outcome above the mode no likelier than x */
		if (lpmf(n, n, p) > lx)
			return fmin(tail_lo(x, n, p), 1);
		lo = mode, hi = n;
		for (int i = 0; i < 200 && hi - lo > 1e-9 * (1 + hi); i++) {
			double mid = (lo + hi) / 2;

			*(lpmf(mid, n, p) > lx ? &lo : &hi) = mid;
		}
		r = tail_lo(x, n, p) + tail_hi(integer ? ceil(hi - 1e-6) : hi, n, p);
	} else {
		if (lpmf(0, n, p) > lx)
			return fmin(tail_hi(x, n, p), 1);
		lo = 0, hi = mode;
		for (int i = 0; i < 200 && hi - lo > 1e-9 * (1 + hi); i++) {
			double mid = (lo + hi) / 2;

			*(lpmf(mid, n, p) > lx ? &hi : &lo) = mid;
		}
		r = tail_hi(x, n, p) + tail_lo(integer ? floor(lo + 1e-6) : lo, n, p);
	}
	return fmin(r, 1);
}

/* The p at which P(X >= x) (@upper) or P(X <= x) is @q: an end of the interval. */
static double invert(double x, double n, double q, bool upper)
{
	double lo = 0, hi = 1;

	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;

		/* P(X >= x) grows with p, P(X <= x) shrinks */
		if (upper ? tail_hi(x, n, mid) < q : tail_lo(x, n, mid) > q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

static int by_p(const void *x, const void *y)
{
	const struct dstat_test *a = *(struct dstat_test *const *)x;
	const struct dstat_test *b = *(struct dstat_test *const *)y;

	return a->p < b->p ? -1 : a->p > b->p;
}

void dstat_holm(struct dstat_test **t, size_t n, double alpha)
{
	double run = 0;

	qsort(t, n, sizeof(*t), by_p);
	/* the i-th smallest p is multiplied by n - i; adjusted values never decrease */
	for (size_t i = 0; i < n; i++) {
		run = fmax(run, fmin(t[i]->p * (double)(n - i), 1));
		t[i]->p_adj = run;
		t[i]->sig = run < alpha;
	}
}

/* ---- models */

static const char *const model_names[] = { "sample", "second", "run", "auto" };

const char *dstat_model_name(enum dstat_model m)
{
	return model_names[m];
}

const char *dstat_model_text(enum dstat_model m)
{
	static const char *const text[] = {
		"a procedure that did not change keeps its share of the samples",
		"a procedure that did not change spends the same CPU seconds per second of each side",
		"a procedure that did not change spends the same CPU seconds in all (two runs of the same work)",
		"of the models the sides allow, the one under which the least changed",
	};

	return text[m];
}

int dstat_model_parse(const char *s, enum dstat_model *m)
{
	for (size_t i = 0; i < ARRAY_SIZE(model_names); i++)
		if (!strcmp(s, model_names[i])) {
			*m = i;
			return 0;
		}
	return -EINVAL;
}

/* ---- building */

void dstat_init(struct dstat *d, enum dstat_model model, double alpha)
{
	memset(d, 0, sizeof(*d));
	d->asked = d->model = model;
	d->alpha = alpha;
	d->level = 0.95;
}

void dstat_free(struct dstat *d)
{
	free(d->rows);
	free(d->tests);
	free(d->set_sh);
	free(d->set_dp);
	free(d->seen);
	free(d->pts[0]);
	free(d->pts[1]);
	free(d->own);
	memset(d, 0, sizeof(*d));
}

/* A sample's part of a set's fingerprint, which is the sum of its members' (splitmix64). */
static uint64_t member(int k, uint64_t i)
{
	uint64_t z = (i << 1 | (uint64_t)k) + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int grow_rows(struct dstat *d, uint32_t id)
{
	if (GROW(d->rows, d->cap, (size_t)id + 1) || GROW(d->set_sh, d->cap_sh, (size_t)id + 1) ||
	    GROW(d->set_dp, d->cap_dp, (size_t)id + 1))
		return -ENOMEM;
	for (size_t i = d->nrows; i <= id; i++) {
		d->rows[i] = (struct dstat_row){ .sh = -1, .dp = -1 };
		d->set_sh[i] = d->set_dp[i] = 0;
	}
	d->nrows = (size_t)id + 1;
	return 0;
}

int dstat_add(struct dstat *d, int k, double count, const uint32_t *ids, int n)
{
	uint64_t h = member(k, d->side[k].nsamples++);
	size_t m = 0;

	d->side[k].total += count;
	if (GROW(d->seen, d->cap_seen, (size_t)n + 1))
		return -ENOMEM;
	for (int j = 0; j < n; j++) {
		uint32_t id = ids[j];
		struct dstat_row *r;
		size_t q;

		if (id >= d->nrows && grow_rows(d, id))
			return -ENOMEM;
		r = &d->rows[id];
		/* (ids, not pointers: the rows may have moved since) */
		for (q = 0; q < m && d->seen[q] != id; q++)
			;
		if (q == m) {
			d->seen[m++] = id;
			*(k ? &r->b_dp : &r->a_dp) += count;
			d->set_dp[id] += h;
		}
		if (j == n - 1) {
			*(k ? &r->b_sh : &r->a_sh) += count;
			d->set_sh[id] += h;
		}
	}
	return 0;
}

/*
 * How each procedure's count spreads over one side's slices, at a constant share and at a
 * constant rate: Pearson's statistic over its degrees of freedom, beside its mean count in
 * a slice. Neighbouring slices are merged until they hold DSTAT_SLICE_SAMPLES (a slice of
 * a few samples says little and makes the statistic swing); procedures counted less than
 * twice a merged slice are pooled into one row.
 */
#define DSTAT_SLICE_SAMPLES 50

static int add_point(struct dstat *d, int j, double chi2, double df, double m, uint32_t id,
		     bool aside)
{
	if (df <= 0 || GROW(d->pts[j], d->cap_pts[j], d->npts[j] + 1))
		return -ENOMEM;
	d->pts[j][d->npts[j]++] = (struct dstat_point){ chi2 / df, m, df, id, aside, aside };
	return 0;
}

static int by_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), by_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Each row's statistic at a constant share, over its degrees of freedom (@y, @df), the
 * slices' totals taken over the rows not set aside: a row's part of the (rows - 1)
 * (slices - 1) degrees of freedom is (slices - 1) (1 - its share). */
static void shares_chi2(const double *m, size_t w, size_t nr, size_t nc, const double *tot,
			const bool *aside, double *y, double *df)
{
	double col[nc], all = 0;
	size_t rows = 0;

	for (size_t c = 0; c < nc; c++) {
		col[c] = 0;
		for (size_t r = 0; r < nr; r++)
			if (tot[r] > 0 && !aside[r])
				col[c] += m[r * w + c];
		all += col[c];
	}
	for (size_t r = 0; r < nr; r++)
		rows += tot[r] > 0 && !aside[r];
	for (size_t r = 0; r < nr; r++) {
		double chi2 = 0;

		y[r] = df[r] = 0;
		if (tot[r] <= 0 || all <= 0 || rows < 2)
			continue;
		for (size_t c = 0; c < nc; c++) {
			double e = tot[r] * col[c] / all;

			if (e > 0)
				chi2 += (m[r * w + c] - e) * (m[r * w + c] - e) / e;
		}
		/* (a row set aside: against the others' shares, one more than them) */
		df[r] = (double)(nc - 1) * fmax(1 - tot[r] / (all + (aside[r] ? tot[r] : 0)), 0.05);
		y[r] = chi2 / df[r];
	}
}

/* Do two procedures or more that should hold 10 of slice @c by their share hold none? */
static bool slice_apart(const double *m, size_t w, size_t nr, const double *col, size_t nc,
			size_t c)
{
	double all = 0;
	int none = 0;

	for (size_t k = 0; k < nc; k++)
		all += col[k];
	for (size_t r = 0; r < nr && all > 0; r++) {
		double tot = 0;

		for (size_t k = 0; k < nc; k++)
			tot += m[r * w + k];
		none += m[r * w + c] == 0 && tot * col[c] / all >= 10;
	}
	return none >= 2;
}

/*
 * A run's start-up (or its end) fills the first (last) slice with what runs nowhere else, and
 * the procedures of its work are not in it yet: that slice is left out, rather than all of
 * them set aside as procedures that start within the side (each then tested with a spread of
 * its own, of a degree of freedom a side: on a loaded machine, where calibration took most
 * of a second, a 20 % change of alpha's work came out as +4.4 points [-14, +23]). How many
 * slices are left.
 */
static size_t slices_apart_left_out(double *m, size_t w, size_t nr, double *col, double *secs,
				    size_t nc)
{
	if (nc > 2 && slice_apart(m, w, nr, col, nc, nc - 1))
		nc--;
	if (nc > 2 && slice_apart(m, w, nr, col, nc, 0)) {
		for (size_t r = 0; r < nr; r++)
			memmove(&m[r * w], &m[r * w + 1], (nc - 1) * sizeof(*m));
		memmove(col, col + 1, (nc - 1) * sizeof(*col));
		memmove(secs, secs + 1, (nc - 1) * sizeof(*secs));
		nc--;
	}
	return nc;
}

void dstat_add_slices(struct dstat *d, int k, const struct dstat_slices *sl)
{
	size_t nr = sl->nrows + 1, w = sl->ncols + 1, nc = 0, rows = 0; /* (row nr-1: pooled) */
	double *m = calloc(nr * w, sizeof(*m)), *col = calloc(w, sizeof(*col));
	double *secs = calloc(w, sizeof(*secs)), *tot = calloc(nr, sizeof(*tot)), len = 0;
	double *yv = calloc(2 * nr + 1, sizeof(*yv)), *dfv = calloc(nr + 1, sizeof(*dfv));
	bool *aside = calloc(nr + 1, sizeof(*aside));

	if (!m || !col || !secs || !tot || !yv || !dfv || !aside)
		goto out;
	for (size_t c = 0; c < sl->ncols; c++) {
		for (size_t r = 0; r < sl->nrows; r++) {
			m[r * w + nc] += sl->counts[r * sl->ncols + c];
			col[nc] += sl->counts[r * sl->ncols + c];
		}
		secs[nc] += sl->secs[c];
		if (col[nc] >= DSTAT_SLICE_SAMPLES)
			nc++;
	}
	if (nc && nc < sl->ncols) { /* what is left, into the last */
		for (size_t r = 0; r < sl->nrows; r++)
			m[r * w + nc - 1] += m[r * w + nc];
		col[nc - 1] += col[nc];
		secs[nc - 1] += secs[nc];
	}
	nc = slices_apart_left_out(m, w, nr, col, secs, nc);
	if (nc < DSTAT_SIDE_SLICES)
		goto out;
	for (size_t c = 0; c < nc; c++)
		len += secs[c];
	for (size_t r = 0; r < nr; r++) {
		for (size_t c = 0; c < nc; c++)
			tot[r] += m[r * w + c];
		if (r < nr - 1 && tot[r] < 2.0 * (double)nc) {
			for (size_t c = 0; c < nc; c++)
				m[(nr - 1) * w + c] += m[r * w + c];
			tot[r] = 0; /* (the pooled row's is summed when its turn comes) */
		}
	}
	/* a row that starts or stops within the side (none in a slice that should hold 10 of
	 * it: start-up in a run's first slice, a phase) is set aside, and the slices' totals
	 * taken without it: else it makes every other row of its slices look moved */
	for (int round = 0; round < 3; round++) {
		bool more = false;

		shares_chi2(m, w, nr, nc, tot, aside, yv, dfv);
		for (size_t r = 0; r < nr; r++) {
			double all = 0;

			if (tot[r] <= 0 || aside[r])
				continue;
			for (size_t c = 0; c < nc; c++)
				all += col[c];
			for (size_t c = 0; c < nc && !aside[r]; c++)
				if (m[r * w + c] == 0 && tot[r] * col[c] / all >= 10)
					more = aside[r] = true;
		}
		if (!more)
			break;
	}
	if (aside)
		shares_chi2(m, w, nr, nc, tot, aside, yv, dfv);
	for (size_t r = 0; r < nr; r++)
		rows += tot[r] > 0;
	for (size_t r = 0; r < nr; r++) {
		uint32_t id = sl->ids && r < sl->nrows ? sl->ids[r] : DSTAT_NO_ID;
		double chi2 = 0;

		if (tot[r] <= 0)
			continue;
		for (size_t c = 0; c < nc; c++) {
			double e = len > 0 ? tot[r] * secs[c] / len : 0;

			if (e > 0)
				chi2 += (m[r * w + c] - e) * (m[r * w + c] - e) / e;
		}
		if (rows >= 2 && yv && dfv[r] > 0)
			add_point(d, 0, yv[r] * dfv[r], dfv[r], tot[r] / (double)nc, id, aside[r]);
		if (len > 0)
			add_point(d, 1, chi2, (double)(nc - 1), tot[r] / (double)nc, id, aside && aside[r]);
	}
	d->side[k].nslices += nc;
out:
	free(m);
	free(col);
	free(secs);
	free(tot);
	free(yv);
	free(dfv);
	free(aside);
}

/* What model @m needs of the sides; 0 or -EINVAL with why not. */
static int check_model(const struct dstat *d, enum dstat_model m, char *err, size_t len)
{
	for (int k = 0; k < 2; k++) {
		const struct dstat_side *s = &d->side[k];
		char c = k ? 'B' : 'A';

		if (m != DSTAT_SAMPLE && s->period_ns <= 0) {
			snprintf(err, len, "%c: its sampling period is not known (--per %s needs it)", c,
				 model_names[m]);
			return -EINVAL;
		}
		if (m == DSTAT_SECOND && s->seconds <= 0) {
			snprintf(err, len, "%c: the time it covers is not known (--per second needs it)", c);
			return -EINVAL;
		}
	}
	return 0;
}

int dstat_check(const struct dstat *d, char *err, size_t len)
{
	for (int k = 0; k < 2; k++)
		if (d->side[k].total < DSTAT_MIN_SAMPLES) {
			snprintf(err, len, "%c has %.0f samples: too few to compare (a side needs %d)",
				 k ? 'B' : 'A', d->side[k].total, DSTAT_MIN_SAMPLES);
			return -EINVAL;
		}
	return d->asked == DSTAT_AUTO ? 0 : check_model(d, d->asked, err, len);
}

/* ---- the tests */

struct cand {
	double a, b;
	uint64_t set;
	int *slot;		/* the row's sh or dp */
	bool tested, shallow;
	uint32_t row;
};

static int by_set(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	if (a->set != b->set)
		return a->set < b->set ? -1 : 1;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

/* The counts a test is made of: the set's, or (a share, a set in more than half of the
 * samples) its complement's: Fisher's test is the same either way, and the binomial is
 * closer to the hypergeometric for the smaller one; and the finite-population factor. */
static void prepare(const struct dstat *d, struct dstat_test *t)
{
	double ta = d->side[0].total, tb = d->side[1].total, N = ta + tb, n = t->a + t->b;

	t->k = t->f = 1;
	t->complement = false;
	if (d->model != DSTAT_SAMPLE)
		return;
	if (n > N / 2) {
		t->complement = true;
		t->a = ta - t->a;
		t->b = tb - t->b;
		n = t->a + t->b;
	}
	t->k = t->f = fmax((N - n) / (N - 1), 1 / N);
}

static double p0_of(const struct dstat *d)
{
	return d->scale / (1 + d->scale);
}

static double z_of(const struct dstat *d, const struct dstat_test *t)
{
	double n = t->a + t->b, p = p0_of(d), v = n * p * (1 - p) * t->k;

	return v > 0 ? (t->b - n * p) / sqrt(v) : 0;
}

/* What an estimate of @nu degrees of freedom is multiplied by to be its upper 85 % bound:
 * over the chi-square's 15 % quantile over its degrees of freedom (Wilson-Hilferty). */
static double upper85(double nu)
{
	double q;

	nu = fmax(nu, 1);
	q = 1 - 2 / (9 * nu) - 1.0364 * sqrt(2 / (9 * nu));
	return 1 / (q * q * q);
}

/*
 * The dispersion from the procedures: how far their shallow counts' log-ratios spread
 * about the median one, in standard errors (those expected at least 5 times on each
 * side): about the median, so that all moving together (what a share does when one large
 * procedure grows) is not taken for noise; the largest fifth left out (what changed),
 * over what the rest of a normal's would give (0.4376). A few procedures tell it loosely
 * (about 0.6 degrees of freedom each), so what is taken is its upper 85 % bound: too small
 * a dispersion calls noise a change.
 */
static int procs_dispersion(struct dstat *d)
{
	double *r = malloc((2 * d->ntests + 1) * sizeof(*r)), *se, mid, p = p0_of(d), sum = 0;
	size_t m = 0, keep;

	if (!r)
		return -ENOMEM;
	se = r + d->ntests;
	for (size_t i = 0; i < d->ntests; i++) {
		struct dstat_test *t = &d->tests[i];
		double n = t->a + t->b, a, b;

		if (!t->pooled || n * p < 5 || n * (1 - p) < 5)
			continue;
		a = t->complement ? d->side[0].total - t->a : t->a;
		b = t->complement ? d->side[1].total - t->b : t->b;
		r[m] = log((b + 0.5) / (a + 0.5));
		se[m++] = sqrt(t->f * (1 / (a + 0.5) + 1 / (b + 0.5)));
	}
	d->npooled = m;
	d->phi_procs = 0;
	if (m >= DSTAT_PROCS_MIN) {
		double *sorted = malloc(m * sizeof(*sorted));

		if (!sorted) {
			free(r);
			return -ENOMEM;
		}
		memcpy(sorted, r, m * sizeof(*sorted));
		mid = median(sorted, m);
		for (size_t i = 0; i < m; i++)
			sorted[i] = (r[i] - mid) / se[i] * (r[i] - mid) / se[i];
		qsort(sorted, m, sizeof(*sorted), by_double);
		keep = (4 * m + 4) / 5;
		for (size_t i = 0; i < keep; i++)
			sum += sorted[i];
		free(sorted);
		d->phi_procs = sum / (double)keep / 0.4376 * upper85(0.6 * (double)m);
	}
	free(r);
	return 0;
}

/*
 * y = phi0 + sigma2 m over the slices' points (those not left out), least squares weighted
 * by each point's degrees of freedom over its expected square (twice refitted); sigma2 not
 * below 0, and 0 when @spread is not known.
 */
static void fit(const struct dstat_point *p, size_t n, bool spread, double *phi0, double *sigma2)
{
	*phi0 = 1;
	*sigma2 = 0;
	for (int it = 0; it < 3; it++) {
		double sw = 0, sm = 0, sy = 0, smm = 0, smy = 0, det;

		for (size_t i = 0; i < n; i++) {
			double e = fmax(*phi0 + *sigma2 * p[i].m, 0.1), w = p[i].df / (e * e);

			if (p[i].out)
				continue;
			sw += w;
			sm += w * p[i].m;
			sy += w * p[i].y;
			smm += w * p[i].m * p[i].m;
			smy += w * p[i].m * p[i].y;
		}
		if (sw <= 0)
			return;
		det = sw * smm - sm * sm;
		if (spread && det > 1e-12 * sw * smm) {
			*sigma2 = (sw * smy - sm * sy) / det;
			*phi0 = (sy - *sigma2 * sm) / sw;
		}
		if (!spread || det <= 1e-12 * sw * smm || *sigma2 < 0) { /* a constant */
			*sigma2 = 0;
			*phi0 = sy / sw;
		}
	}
}

/* How far point @p is above @phi0 + @sigma2 m: Wilson-Hilferty's normal of its
 * chi-square. */
static double above(const struct dstat_point *p, double phi0, double sigma2)
{
	double e = fmax(fmax(phi0, 1) + sigma2 * p->m, 1), v = 2 / (9 * p->df);

	return (cbrt(p->y / e) - (1 - v)) / sqrt(v);
}

/* The fit, leaving out one at a time (six at most) the point farthest above the fit of
 * the others, while it is beyond 3.1 (one in a thousand): a procedure that starts or
 * stops within a side; judged by the others' fit, so that it cannot hide by raising the
 * fit it is judged by, and a large procedure that moves as much as the others say a large
 * one does stays in. */
static void fit_robust(struct dstat *d, int j, bool spread, double *phi0, double *sigma2)
{
	struct dstat_point *p = d->pts[j];
	size_t n = d->npts[j];

	for (size_t i = 0; i < n; i++)
		p[i].out = p[i].aside;
	for (int round = 0; round < 6; round++) {
		double worst = 3.1, f0, s2;
		size_t w = n;

		for (size_t i = 0; i < n; i++) {
			double z;

			if (p[i].out)
				continue;
			p[i].out = true;
			fit(p, n, spread, &f0, &s2);
			p[i].out = false;
			z = above(&p[i], f0, s2);
			if (z > worst) {
				worst = z;
				w = i;
			}
		}
		if (w == n)
			break;
		p[w].out = true;
	}
	fit(p, n, spread, phi0, sigma2);
	d->nout = 0;
	for (size_t i = 0; i < n; i++)
		d->nout += p[i].out;
}

/* A spread growing with a procedure's count is told from a constant only with enough
 * slices on each side that has any: with two, one large procedure's two slices make it. */
static bool spread_known(const struct dstat *d)
{
	for (int k = 0; k < 2; k++)
		if (d->side[k].nslices && d->side[k].nslices < DSTAT_SPREAD_SLICES)
			return false;
	return true;
}

/* A procedure left out of the fit is widened by its own spread over the slices of both
 * sides (Pearson's statistic over its degrees of freedom), where that is larger. */
static int own_dispersion(struct dstat *d, int j)
{
	if (GROW(d->own, d->cap_own, d->nrows + 1))
		return -ENOMEM;
	memset(d->own, 0, (d->nrows + 1) * sizeof(*d->own));
	for (size_t i = 0; i < d->npts[j]; i++) {
		const struct dstat_point *p = &d->pts[j][i];
		double chi2 = 0, df = 0;

		if (!p->out || p->id == DSTAT_NO_ID || p->id >= d->nrows || d->own[p->id])
			continue;
		for (size_t k = 0; k < d->npts[j]; k++)
			if (d->pts[j][k].id == p->id) {
				chi2 += d->pts[j][k].y * d->pts[j][k].df;
				df += d->pts[j][k].df;
			}
		d->own[p->id] = df > 0 ? chi2 / df : 0;
	}
	return 0;
}

/* The slices' spread when they have enough degrees of freedom, else the procedures' when
 * enough are counted, else what slices there are; never below Poisson. */
static int dispersion(struct dstat *d)
{
	int j = d->model == DSTAT_SECOND;
	double phi0, s2, nu, nu0;

	d->df = 0;
	for (size_t i = 0; i < d->npts[j]; i++)
		d->df += d->pts[j][i].df;
	d->nslices = d->df > 0 ? d->side[0].nslices + d->side[1].nslices : 0;
	d->phi_from = DSTAT_POISSON;
	d->phi = 1;
	d->sigma2 = 0;
	d->spread = false;
	d->nout = 0;
	if (d->own)
		memset(d->own, 0, d->cap_own * sizeof(*d->own));
	if (d->phi_fixed > 0) {
		d->phi_from = DSTAT_FIXED;
		d->phi = d->phi_fixed;
	} else if (d->df >= DSTAT_SLICES_DF || (d->df > 0 && !d->phi_procs)) {
		fit_robust(d, j, spread_known(d), &phi0, &s2);
		/* a fit of a few degrees of freedom tells it loosely: its upper 85 % bound, each
		 * part by the degrees of freedom of the points it makes: a point's part of its
		 * spread is the spread's (the large procedures) or the constant's */
		nu = 0;
		nu0 = -1;
		for (size_t i = 0; i < d->npts[j]; i++) {
			const struct dstat_point *p = &d->pts[j][i];
			double w = s2 * p->m / (fmax(phi0, 1) + s2 * p->m);

			if (!p->out) {
				nu += p->df * w;
				nu0 += p->df * (1 - w);
			}
		}
		phi0 *= upper85(nu0);
		s2 *= upper85(nu - 1);
		if (own_dispersion(d, j))
			return -ENOMEM;
		d->phi_from = DSTAT_SLICES;
		d->phi = fmax(1, phi0);
		d->sigma2 = s2;
		d->spread = spread_known(d);
	} else if (d->phi_procs > 0) {
		d->phi_from = DSTAT_PROCS;
		d->phi = fmax(1, d->phi_procs);
	}
	return 0;
}

/*
 * A test's widening: the finite-population factor times phi, plus the spread: a set
 * whose share moves by sigma in each slice moves its count by sigma times its mean count
 * in a slice there, so its variance grows by sigma2 (n p0 (1 - p0))^2 (1/KA + 1/KB) (by
 * the set's own counts, also when its complement is tested: what one gains, the other
 * loses). A side without slices is taken as having the other's.
 */
static void widen(const struct dstat *d, struct dstat_test *t)
{
	double p = p0_of(d), n = t->a + t->b, own = n, ka, kb, var;

	t->k = t->f * d->phi;
	if (n > 0 && t->row != DSTAT_NO_ID && t->row < d->cap_own && d->own && d->own[t->row] > 0) {
		/* its own spread, in counts: the same for its complement */
		double on = t->complement ? d->side[0].total + d->side[1].total - n : n;

		t->k = fmax(t->k, t->f * d->own[t->row] * on / n);
	}
	if (d->sigma2 <= 0 || n <= 0)
		return;
	if (t->complement)
		own = d->side[0].total + d->side[1].total - n;
	ka = (double)d->side[0].nslices;
	kb = (double)d->side[1].nslices;
	ka = ka > 0 ? ka : kb;
	kb = kb > 0 ? kb : ka;
	var = d->sigma2 * own * p * (1 - p) * own * p * (1 - p) * (1 / ka + 1 / kb);
	t->k += var / (n * p * (1 - p));
}

/* Counts (a, b) of a set whose test is @t, at the end @pi of the test's p0 interval: its
 * points of share and B/A. */
static void at_pi(const struct dstat *d, const struct dstat_test *t, double a, double b,
		  double pi, double *pp, double *ratio)
{
	double ta = d->side[0].total, tb = d->side[1].total, n = t->a + t->b;

	if (t->complement) {
		b = tb - pi * n;
		a = ta - (1 - pi) * n;
	} else {
		n = a + b;
		b = pi * n;
		a = n - b;
	}
	*pp = 100 * (b / tb - a / ta);
	*ratio = a > 0 ? b / a / d->scale : INFINITY;
}

static void effect(const struct dstat *d, const struct dstat_test *t, double a, double b,
		   struct dstat_effect *e)
{
	double ta = d->side[0].total, tb = d->side[1].total, q = (1 - d->level) / 2;
	double x = t->b / t->k, n = (t->a + t->b) / t->k, pp[2], r[2];

	e->pp = 100 * (b / tb - a / ta);
	e->ratio = a > 0 ? b / a / d->scale : INFINITY;
	e->pp_lo = e->pp_hi = e->pp;
	e->lo = e->hi = e->ratio;
	if (d->level <= 0 || n <= 0)
		return;
	at_pi(d, t, a, b, t->b > 0 ? invert(x, n, q, true) : 0, &pp[0], &r[0]);
	at_pi(d, t, a, b, t->a > 0 ? invert(x, n, q, false) : 1, &pp[1], &r[1]);
	/* (a complement's p0 runs the other way) */
	e->pp_lo = fmin(pp[0], pp[1]);
	e->pp_hi = fmax(pp[0], pp[1]);
	e->lo = fmin(r[0], r[1]);
	e->hi = fmax(r[0], r[1]);
}

static double scale_of(const struct dstat *d)
{
	const struct dstat_side *A = &d->side[0], *B = &d->side[1];

	switch (d->model) {
	case DSTAT_SECOND:
		return (B->seconds / B->period_ns) / (A->seconds / A->period_ns);
	case DSTAT_RUN:
		return A->period_ns / B->period_ns;
	default:
		return B->total / A->total;
	}
}

/* The candidate tests, one per distinct set of samples. */
static int make_tests(struct dstat *d)
{
	double ta = d->side[0].total, tb = d->side[1].total;
	struct cand *c = malloc((2 * d->nrows + 1) * sizeof(*c));
	size_t nc = 0;

	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < d->nrows; i++) {
		struct dstat_row *r = &d->rows[i];

		r->whole = r->a_dp >= DSTAT_WHOLE * ta && r->b_dp >= DSTAT_WHOLE * tb;
		if (r->a_sh + r->b_sh > 0)
			c[nc++] = (struct cand){ r->a_sh, r->b_sh, d->set_sh[i], &r->sh, !r->whole,
						 true, (uint32_t)i };
		if (r->a_dp + r->b_dp > 0)
			c[nc++] = (struct cand){ r->a_dp, r->b_dp, d->set_dp[i], &r->dp, !r->whole,
						 false, DSTAT_NO_ID };
	}
	qsort(c, nc, sizeof(*c), by_set);
	d->ntests = 0;
	for (size_t i = 0; i < nc; i++) {
		struct dstat_test *t;

		if (!i || by_set(&c[i], &c[i - 1])) {
			if (GROW(d->tests, d->cap_tests, d->ntests + 1)) {
				free(c);
				return -ENOMEM;
			}
			t = &d->tests[d->ntests++];
			*t = (struct dstat_test){ .a = c[i].a, .b = c[i].b, .set = c[i].set,
						  .p = 1, .p_adj = 1, .row = DSTAT_NO_ID };
			prepare(d, t);
		}
		t = &d->tests[d->ntests - 1];
		if (c[i].shallow)
			t->row = c[i].row;
		t->pooled |= c[i].shallow && c[i].tested;
		t->tested |= c[i].tested;
		*c[i].slot = (int)(d->ntests - 1);
	}
	free(c);
	return 0;
}

/* Each row: beyond noise or not, which way, by which of its tests (the larger change),
 * its effects and its place in the order. */
static void decide(struct dstat *d)
{
	for (size_t i = 0; i < d->nrows; i++) {
		struct dstat_row *r = &d->rows[i];
		int idx[2] = { r->sh, r->dp };
		double cnt[2][2] = { { r->a_sh, r->b_sh }, { r->a_dp, r->b_dp } }, best = -1;

		r->sig = false;
		r->dir = 0;
		r->by = r->sh >= 0 ? 0 : 1;
		r->eff[0] = r->eff[1] = (struct dstat_effect){ 0 };
		for (int j = 0; j < 2; j++) {
			const struct dstat_test *t = idx[j] >= 0 ? &d->tests[idx[j]] : NULL;

			if (!t)
				continue;
			effect(d, t, cnt[j][0], cnt[j][1], &r->eff[j]);
			if (r->whole || !t->sig || fabs(r->eff[j].pp) <= best)
				continue;
			best = fabs(r->eff[j].pp);
			r->sig = true;
			r->by = j;
			r->dir = (t->z > 0) != t->complement ? 1 : -1;
		}
		r->key = r->sig ? 1e9 + best : fmax(fabs(r->eff[0].pp), fabs(r->eff[1].pp));
	}
}

/* One model's diff. */
static int run_model(struct dstat *d, enum dstat_model m)
{
	struct dstat_test **fam;
	int e;

	d->model = m;
	d->scale = scale_of(d);
	if ((e = make_tests(d)) || (e = procs_dispersion(d)) || (e = dispersion(d)))
		return e;
	fam = malloc((d->ntests + 1) * sizeof(*fam));
	if (!fam)
		return -ENOMEM;
	d->family = 0;
	for (size_t i = 0; i < d->ntests; i++) {
		struct dstat_test *t = &d->tests[i];

		widen(d, t);
		t->z = z_of(d, t);
		/* whole outcomes where the counts are the counts, else the extension */
		t->p = dstat_binom_p(t->b / t->k, (t->a + t->b) / t->k, p0_of(d), t->k == 1);
		if (t->tested)
			fam[d->family++] = t;
	}
	dstat_holm(fam, d->family, d->alpha);
	free(fam);
	return 0;
}

/*
 * DSTAT_AUTO: the median of the procedures' log B/A (each counted 20 times or more, a
 * set's own counts, its shallow test's), its standard error from their spread (1.253
 * times 1.4826 times their median absolute deviation over the square root of how many);
 * DSTAT_SAMPLE unless another model's log s is nearer it by two standard errors.
 */
static enum dstat_model choose(struct dstat *d)
{
	double ta = d->side[0].total, tb = d->side[1].total, *r, mid, se, dist[DSTAT_MODELS];
	enum dstat_model best = DSTAT_SAMPLE;
	size_t m = 0;
	char err[160];

	d->bulk = d->bulk_se = 0;
	d->nbulk = 0;
	r = malloc((d->ntests + 1) * sizeof(*r));
	if (!r)
		return DSTAT_SAMPLE;
	for (size_t i = 0; i < d->ntests; i++) {
		const struct dstat_test *t = &d->tests[i];
		double a = t->complement ? ta - t->a : t->a, b = t->complement ? tb - t->b : t->b;

		if (t->pooled && a + b >= 20)
			r[m++] = log((b + 0.5) / (a + 0.5));
	}
	if (m < 3) {
		free(r);
		return DSTAT_SAMPLE;
	}
	mid = median(r, m);
	for (size_t i = 0; i < m; i++)
		r[i] = fabs(r[i] - mid);
	se = 1.253 * 1.4826 * median(r, m) / sqrt((double)m);
	free(r);
	d->bulk = exp(mid);
	d->bulk_se = exp(se);
	d->nbulk = m;
	for (int k = 0; k < DSTAT_MODELS; k++) {
		if (check_model(d, k, err, sizeof(err)))
			continue;
		d->model = k;
		dist[k] = fabs(mid - log(scale_of(d)));
		d->tries[k] = (struct dstat_try){ .done = true, .off = exp(mid) / scale_of(d) };
		if (k != DSTAT_SAMPLE && dist[k] < dist[DSTAT_SAMPLE] - 2 * se &&
		    (best == DSTAT_SAMPLE || dist[k] < dist[best]))
			best = k;
	}
	return best;
}

int dstat_run(struct dstat *d)
{
	struct dstat_test tot;
	enum dstat_model m = d->asked;
	char err[160];
	int e;

	if (dstat_check(d, err, sizeof(err)))
		return -EINVAL;
	memset(d->tries, 0, sizeof(d->tries));
	if (m == DSTAT_AUTO) {
		if ((e = run_model(d, DSTAT_SAMPLE)))
			return e;
		m = choose(d);
	}
	if ((e = run_model(d, m)))
		return e;
	decide(d);
	/* all samples against the model (a share holds them the same by its making) */
	tot = (struct dstat_test){ .a = d->side[0].total, .b = d->side[1].total, .f = 1,
				   .row = DSTAT_NO_ID };
	widen(d, &tot);
	effect(d, &tot, tot.a, tot.b, &d->total);
	return 0;
}

static int by_key(const void *x, const void *y, void *ctx)
{
	const struct dstat *d = ctx;
	size_t i = *(const size_t *)x, j = *(const size_t *)y;

	if (d->rows[i].key != d->rows[j].key)
		return d->rows[i].key > d->rows[j].key ? -1 : 1;
	return i < j ? -1 : i > j;
}

size_t dstat_order(const struct dstat *d, size_t *order)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nrows; i++)
		if (d->rows[i].a_dp + d->rows[i].b_dp > 0)
			order[n++] = i;
	qsort_r(order, n, sizeof(*order), by_key, (void *)d);
	return n;
}
