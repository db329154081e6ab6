// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/diffstat.c (pcmon diff's statistics): the exact binomial
 * tests, Holm's correction, deep counts, the models, the dispersion, the effects, and the
 * family's false-positive rate over simulated null diffs of realistic shapes.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "diffstat.h"

#define ALPHA 0.01

/* ---- the pieces */

static double binom_pmf(int k, int n, double p)
{
	return exp(lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) + k * log(p) +
		   (n - k) * log1p(-p));
}

/* The exact two-sided p by enumeration: the outcomes no likelier than x. */
static double minlike(int x, int n, double p)
{
	double px = binom_pmf(x, n, p), sum = 0;

	for (int k = 0; k <= n; k++)
		if (binom_pmf(k, n, p) <= px * (1 + 1e-7))
			sum += binom_pmf(k, n, p);
	return fmin(sum, 1);
}

static void test_ibeta(void **state)
{
	(void)state;
	assert_true(fabs(dstat_ibeta(1, 1, 0.3) - 0.3) < 1e-12);
	assert_true(fabs(dstat_ibeta(7, 7, 0.5) - 0.5) < 1e-12);
	assert_true(fabs(dstat_ibeta(3, 1, 0.4) - 0.064) < 1e-12);
	/* a binomial tail: P(X >= 8) for n 20, p 0.3 is I_0.3(8, 13) */
	double sum = 0;
	for (int k = 8; k <= 20; k++)
		sum += binom_pmf(k, 20, 0.3);
	assert_true(fabs(dstat_ibeta(8, 13, 0.3) - sum) < 1e-12);
	/* and a far one, with large counts: relative precision */
	sum = 0;
	for (int k = 1300; k <= 2200; k++)
		sum += binom_pmf(k, 2200, 0.5);
	assert_true(fabs(dstat_ibeta(1300, 901, 0.5) / sum - 1) < 1e-8);
}

static void test_exact_p(void **state)
{
	(void)state;
	/* a = b = 10 at a scale of 5: p0 5/6 (the normal approximation said 2.2e-4) */
	assert_true(fabs(dstat_binom_p(10, 20, 5.0 / 6, true) / minlike(10, 20, 5.0 / 6) - 1) < 1e-9);
	assert_true(fabs(dstat_binom_p(10, 20, 5.0 / 6, true) - 5.985e-4) < 1e-6);
	for (int x = 0; x <= 30; x++) {
		double p = dstat_binom_p(x, 30, 0.37, true), want = minlike(x, 30, 0.37);

		assert_true(fabs(p - want) < 1e-9 * fmax(1, 1 / want));
	}
	assert_true(fabs(dstat_binom_p(3, 10, 0.5, true) - 0.34375) < 1e-12);
	assert_true(fabs(dstat_binom_p(0, 10, 0.5, true) - 2.0 / 1024) < 1e-12);
	/* what appeared: 15 of 15 in B at even odds */
	assert_true(fabs(dstat_binom_p(15, 15, 0.5, true) - 2 * pow(0.5, 15)) < 1e-15);
	/* the continuous extension is no smaller than the exact p at whole counts */
	assert_true(dstat_binom_p(10, 20, 5.0 / 6, false) >= 5.98e-4);
	assert_true(dstat_binom_p(10, 20, 5.0 / 6, false) < 1.3e-3);
	/* the expected outcome: 1 */
	assert_true(dstat_binom_p(1100, 2200, 0.5, true) > 0.99);
}

static void test_holm(void **state)
{
	struct dstat_test x[4] = { { .p = 0.004 }, { .p = 0.0001 }, { .p = 0.02 }, { .p = 0.0030 } };
	struct dstat_test *f[4] = { &x[0], &x[1], &x[2], &x[3] };

	(void)state;
	dstat_holm(f, 4, 0.01);
	/* sorted: 0.0001*4, 0.003*3, 0.004*2 (raised to 0.009), 0.02*1 */
	assert_true(fabs(x[1].p_adj - 0.0004) < 1e-12 && x[1].sig);
	assert_true(fabs(x[3].p_adj - 0.009) < 1e-12 && x[3].sig);
	assert_true(fabs(x[0].p_adj - 0.009) < 1e-12 && x[0].sig);
	assert_true(fabs(x[2].p_adj - 0.02) < 1e-12 && !x[2].sig);
}

/* ---- diffs made by hand */

enum { START, LIBC, MAIN, ALPHA_, BETA, GAMMA, OUTER, CALIB, NIDS };

static void side(struct dstat *d, int k, double secs, const double *counts)
{
	/* every stack under main; alpha under outer */
	static const uint32_t st[][5] = {
		[ALPHA_] = { START, LIBC, MAIN, OUTER, ALPHA_ },
		[BETA] = { START, LIBC, MAIN, BETA },
		[GAMMA] = { START, LIBC, MAIN, GAMMA },
		[CALIB] = { START, LIBC, MAIN, CALIB },
	};
	static const int len[] = { [ALPHA_] = 5, [BETA] = 4, [GAMMA] = 4, [CALIB] = 4 };

	for (int i = ALPHA_; i < NIDS; i++)
		if (i != OUTER && counts[i] > 0)
			assert_int_equal(dstat_add(d, k, counts[i], st[i], len[i]), 0);
	d->side[k].seconds = secs;
	d->side[k].period_ns = 1e6;
}

/* The program: alpha 60.0 % -> 64.3 % of the CPU, beta the rest, ~19,860 samples
 * a side, both windows 20 s of a CPU-bound loop. */
static void test_dominant_leaf_grew(void **state)
{
	double a[NIDS] = { [ALPHA_] = 11916, [BETA] = 7944 }, b[NIDS] = { [ALPHA_] = 12770, [BETA] = 7090 };
	struct dstat d;

	(void)state;
	for (int m = 0; m <= DSTAT_AUTO; m++) {
		if (m == DSTAT_RUN)
			continue;
		dstat_init(&d, m, ALPHA);
		side(&d, 0, 20, a);
		side(&d, 1, 20, b);
		assert_int_equal(dstat_run(&d), 0);
		assert_true(d.rows[ALPHA_].sig && d.rows[ALPHA_].dir == 1);
		assert_true(d.rows[OUTER].sig && d.rows[OUTER].dir == 1); /* its caller, one test */
		assert_int_equal(d.rows[OUTER].dp, d.rows[ALPHA_].sh);
		/* beta's own clocks: 7.89 s -> 7.07 s of each window */
		assert_true(d.rows[BETA].sig && d.rows[BETA].dir == -1);
		/* the program itself, 100 % of both: never */
		for (int i = START; i <= MAIN; i++)
			assert_true(d.rows[i].whole && !d.rows[i].sig);
		/* alpha: +4.30 points, 1.072 times, both intervals away from no change */
		const struct dstat_effect *e = &d.rows[ALPHA_].eff[0];
		assert_true(fabs(e->pp - 4.2999) < 0.01 && e->pp_lo > 0 && e->pp_lo < 4.3 && e->pp_hi > 4.3);
		assert_true(fabs(e->ratio - 1.0717) < 0.001 && e->lo > 1 && e->hi > e->ratio);
		/* (tests: alpha's samples, beta's; the program's not in the family) */
		assert_int_equal(d.family, 2);
		dstat_free(&d);
	}
}

/*
 * A run's start-up fills the first slice of each side (on a loaded machine calibrate took a
 * second of its own), and the procedures of its work are not in it: the slice is left out of
 * the dispersion, and alpha's 20 % more work is found. With the slice, alpha and beta were
 * set aside as procedures that start within the side, each tested with its own spread of a
 * degree of freedom a side: alpha's +4.4 points came out as [-14, +23].
 */
static void test_startup_slice_left_out(void **state)
{
	enum { NS = 16, NR = 4 };
	static const uint32_t ids[NR] = { ALPHA_, BETA, GAMMA, CALIB };
	static const double per[2][NR] = { { 500, 480, 20 }, { 555, 425, 20 } };
	double tab[2][NR * NS] = { { 0 } }, secs[NS], tot[2][NIDS] = { { 0 } };
	uint64_t rnd = 88172645463325252ULL;
	struct dstat d;

	(void)state;
	for (int k = 0; k < 2; k++)
		for (int c = 0; c < NS; c++) {
			secs[c] = 1;
			for (int r = 0; r < NR; r++) {
				/* slice 0: calibrate, and the small gamma that runs throughout */
				double n = c ? per[k][r] : r == NR - 1 ? 100 : r == 2 ? 20 : 0;

				rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
				if (n > 0) /* (a wobble of Poisson's size) */
					n = round(n + sqrt(n) * ((double)(rnd % 2001) / 1000.0 - 1.0));
				tab[k][r * NS + c] = n;
				tot[k][ids[r]] += n;
			}
		}
	dstat_init(&d, DSTAT_SAMPLE, ALPHA);
	for (int k = 0; k < 2; k++) {
		struct dstat_slices sl = { tab[k], secs, NR, NS, ids };

		side(&d, k, NS, tot[k]);
		dstat_add_slices(&d, k, &sl);
	}
	assert_int_equal(dstat_run(&d), 0);
	assert_int_equal(d.phi_from, DSTAT_SLICES);
	assert_true(d.rows[ALPHA_].sig && d.rows[ALPHA_].dir == 1);
	assert_true(d.rows[ALPHA_].eff[0].pp_lo > 0);
	assert_int_equal(d.nslices, 2 * (NS - 1));
	dstat_free(&d);
}

/* A paced service: alpha does 20 % more work, the others the same work per second. */
static void test_same_work_per_second_is_not_flagged(void **state)
{
	double a[NIDS] = { [ALPHA_] = 24000, [BETA] = 8000, [GAMMA] = 4000, [CALIB] = 1000 };
	double b[NIDS] = { [ALPHA_] = 28800, [BETA] = 8000, [GAMMA] = 4000, [CALIB] = 1000 };
	struct dstat d;
	size_t order[NIDS];

	(void)state;
	dstat_init(&d, DSTAT_AUTO, ALPHA);
	side(&d, 0, 100, a);
	side(&d, 1, 100, b);
	assert_int_equal(dstat_run(&d), 0);
	assert_int_equal(d.model, DSTAT_SECOND);
	assert_true(d.rows[ALPHA_].sig && d.rows[ALPHA_].dir == 1);
	assert_true(d.rows[OUTER].sig && d.rows[OUTER].dir == 1);
	assert_false(d.rows[BETA].sig || d.rows[GAMMA].sig || d.rows[CALIB].sig);
	for (int i = START; i <= MAIN; i++)
		assert_false(d.rows[i].sig);
	/* the order: the changed first */
	assert_true(dstat_order(&d, order) > 0);
	assert_true(order[0] == ALPHA_ || order[0] == OUTER);
	/* the total: 41,800 samples in 100 s against 37,000 */
	assert_true(fabs(d.total.ratio - 41800.0 / 37000) < 1e-9 && d.total.lo > 1);
	dstat_free(&d);
	/* by share, each of the others lost points: called shrank */
	dstat_init(&d, DSTAT_SAMPLE, ALPHA);
	side(&d, 0, 100, a);
	side(&d, 1, 100, b);
	assert_int_equal(dstat_run(&d), 0);
	assert_true(d.rows[ALPHA_].dir == 1 && d.rows[BETA].dir == -1);
	dstat_free(&d);
}

static void test_removed_function(void **state)
{
	double a[NIDS] = { [ALPHA_] = 5000, [BETA] = 3000, [GAMMA] = 40 };
	double b[NIDS] = { [ALPHA_] = 5000, [BETA] = 3000, [GAMMA] = 0 };
	struct dstat d;

	(void)state;
	dstat_init(&d, DSTAT_AUTO, ALPHA);
	side(&d, 0, 10, a);
	side(&d, 1, 10, b);
	assert_int_equal(dstat_run(&d), 0);
	assert_true(d.rows[GAMMA].sig && d.rows[GAMMA].dir == -1);
	assert_true(d.rows[GAMMA].eff[0].ratio == 0 && d.rows[GAMMA].eff[0].lo == 0);
	assert_true(d.rows[GAMMA].eff[0].hi > 0 && d.rows[GAMMA].eff[0].hi < 0.2);
	assert_false(d.rows[ALPHA_].sig || d.rows[BETA].sig);
	dstat_free(&d);
	/* one that appeared: no finite ratio */
	dstat_init(&d, DSTAT_RUN, ALPHA);
	side(&d, 0, 10, b);
	side(&d, 1, 10, a);
	assert_int_equal(dstat_run(&d), 0);
	assert_true(d.rows[GAMMA].sig && d.rows[GAMMA].dir == 1);
	assert_true(isinf(d.rows[GAMMA].eff[0].ratio) && isinf(d.rows[GAMMA].eff[0].hi));
	/* whole counts, k 1: the exact p of 40 of 40 at even odds */
	assert_true(fabs(d.tests[d.rows[GAMMA].sh].p - 2 * pow(0.5, 40)) < 1e-20);
	dstat_free(&d);
}

static void test_small_counts_are_exact(void **state)
{
	/* 10 and 10 where B should have 5 times A's: p 6.0e-4 (the normal approximation
	 * said 2.2e-4) */
	double a[NIDS] = { [ALPHA_] = 1000, [GAMMA] = 10 }, b[NIDS] = { [ALPHA_] = 5000, [GAMMA] = 10 };
	struct dstat d;

	(void)state;
	dstat_init(&d, DSTAT_SECOND, ALPHA);
	side(&d, 0, 10, a);
	side(&d, 1, 50, b);
	d.phi_fixed = 1;
	assert_int_equal(dstat_run(&d), 0);
	assert_true(fabs(d.tests[d.rows[GAMMA].sh].p - 5.985e-4) < 1e-6);
	dstat_free(&d);
}

static void test_empty_side_refused(void **state)
{
	double a[NIDS] = { [ALPHA_] = 60, [BETA] = 30 }, b[NIDS] = { [ALPHA_] = 6000 };
	struct dstat d;
	char err[200];

	(void)state;
	dstat_init(&d, DSTAT_AUTO, ALPHA);
	side(&d, 1, 10, b);
	assert_int_equal(dstat_check(&d, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "A has 0 samples: too few to compare (a side needs 100)");
	assert_int_equal(dstat_run(&d), -EINVAL);
	side(&d, 0, 10, a);
	assert_int_equal(dstat_check(&d, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "A has 90 samples"));
	dstat_free(&d);
	/* what a model needs */
	dstat_init(&d, DSTAT_SECOND, ALPHA);
	side(&d, 0, 10, b);
	side(&d, 1, 0, b);
	assert_int_equal(dstat_check(&d, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "B: the time it covers is not known (--per second needs it)");
	dstat_free(&d);
}

/* A name that repeats on a stack counts once deep, also when the rows grow in between. */
static void test_deep_counted_once(void **state)
{
	uint32_t s1[] = { 0, 7, 0, 5000, 7, 3 };
	uint32_t s2[] = { 0, 7, 7, 7 };
	struct dstat d;

	(void)state;
	dstat_init(&d, DSTAT_SAMPLE, ALPHA);
	assert_int_equal(dstat_add(&d, 0, 10, s1, 6), 0);
	assert_int_equal(dstat_add(&d, 0, 5, s2, 4), 0);
	assert_int_equal(d.nrows, 5001);
	assert_true(d.rows[0].a_dp == 15 && d.rows[7].a_dp == 15 && d.rows[5000].a_dp == 10);
	assert_true(d.rows[3].a_sh == 10 && d.rows[7].a_sh == 5 && d.rows[0].a_sh == 0);
	assert_true(d.side[0].total == 15);
	dstat_free(&d);
}

/* Wrappers over the same samples are one test; tests over other samples are not. */
static void test_identical_tests_merged(void **state)
{
	uint32_t s1[] = { 0, 1, 2, 3, 4 }, s2[] = { 0, 1, 5 }, s3[] = { 0, 1, 6 };
	struct dstat d;

	(void)state;
	dstat_init(&d, DSTAT_SAMPLE, ALPHA);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(dstat_add(&d, k, 500 + 100 * k, s1, 5), 0);
		assert_int_equal(dstat_add(&d, k, 300, s2, 3), 0);
		assert_int_equal(dstat_add(&d, k, 300, s3, 3), 0); /* the same counts as s2 */
	}
	assert_int_equal(dstat_run(&d), 0);
	/* 2, 3, 4 one set; 5 and 6 two (equal counts, other samples); 0 and 1 whole */
	assert_int_equal(d.rows[2].dp, d.rows[4].sh);
	assert_int_equal(d.rows[3].dp, d.rows[4].dp);
	assert_int_not_equal(d.rows[5].sh, d.rows[6].sh);
	assert_int_equal(d.family, 3);
	dstat_free(&d);
}

/* ---- simulated null diffs */

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static double uniform(void)
{
	rnd_state ^= rnd_state << 13, rnd_state ^= rnd_state >> 7, rnd_state ^= rnd_state << 17;
	return ((rnd_state >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

static double poisson(double mean)
{
	double l = exp(-mean), p = 1;
	int k = 0;

	if (mean > 50)
		return fmax(0, round(mean + sqrt(mean) * normal()));
	do {
		k++;
		p *= uniform();
	} while (p > l);
	return k - 1;
}

/*
 * A realistic profile: a dominant leaf under a chain of handlers (half the samples), a deep
 * chain of wrappers, a recursion, 60 small procedures with power-law shares (some reached
 * from two callers), and a few samples outside main (start-up).
 */
#define MAXDEPTH 24
#define NSTACKS 72

struct shape {
	uint32_t ids[NSTACKS][MAXDEPTH];
	int len[NSTACKS];
	double w[NSTACKS], cum[NSTACKS];
	int n;
};

static void shape_make(struct shape *s)
{
	enum { S_START, S_LIBC, S_MAIN, S_SERVE, S_DISPATCH, S_HANDLE, S_PARSE, S_LEX, S_DOM,
	       S_DL, S_REC, S_RLEAF, S_MEMCPY, S_WRAP0 = 20, S_DEEP = 40, S_SMALL0 = 50 };
	double small = 0;
	int i;

	memset(s, 0, sizeof(*s));
	/* the dominant leaf */
	uint32_t dom[] = { S_START, S_LIBC, S_MAIN, S_SERVE, S_DISPATCH, S_HANDLE, S_PARSE, S_LEX, S_DOM };
	memcpy(s->ids[0], dom, sizeof(dom));
	s->len[0] = 9;
	s->w[0] = 0.5;
	/* a deep chain of 16 wrappers */
	memcpy(s->ids[1], dom, 5 * sizeof(uint32_t));
	for (i = 0; i < 16; i++)
		s->ids[1][5 + i] = S_WRAP0 + i;
	s->ids[1][21] = S_DEEP;
	s->len[1] = 22;
	s->w[1] = 0.1;
	/* a recursion: rec rec rec rec rleaf */
	memcpy(s->ids[2], dom, 5 * sizeof(uint32_t));
	for (i = 0; i < 4; i++)
		s->ids[2][5 + i] = S_REC;
	s->ids[2][9] = S_RLEAF;
	s->len[2] = 10;
	s->w[2] = 0.05;
	/* memcpy from parse and from the deep chain's middle */
	memcpy(s->ids[3], dom, 7 * sizeof(uint32_t));
	s->ids[3][7] = S_MEMCPY;
	s->len[3] = 8;
	s->w[3] = 0.03;
	memcpy(s->ids[4], s->ids[1], 13 * sizeof(uint32_t));
	s->ids[4][13] = S_MEMCPY;
	s->len[4] = 14;
	s->w[4] = 0.01;
	/* start-up, outside main */
	s->ids[5][0] = S_START;
	s->ids[5][1] = S_DL;
	s->len[5] = 2;
	s->w[5] = 0.002;
	/* 60 small ones, shares as k^-1.2, under handle */
	for (i = 0; i < 60; i++)
		small += pow(i + 1, -1.2);
	for (i = 0; i < 60; i++) {
		memcpy(s->ids[6 + i], dom, 6 * sizeof(uint32_t));
		s->ids[6 + i][6] = S_SMALL0 + i;
		s->len[6 + i] = 7;
		s->w[6 + i] = 0.308 * pow(i + 1, -1.2) / small;
	}
	s->n = 66;
	for (i = 0; i < s->n; i++)
		s->cum[i] = (i ? s->cum[i - 1] : 0) + s->w[i];
}

static int draw(const struct shape *s)
{
	double u = uniform() * s->cum[s->n - 1];
	int lo = 0, hi = s->n - 1;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (s->cum[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* samples come in bursts of this many (a constant factor over Poisson) */
static int burst = 1;
/* the sides' slices of a second */
static int slices_a = 10, slices_b = 25;

/* One side: @slices slices of a second at @rate samples a second, each stack's weight
 * moved in each slice by a relative spread @spread (0: Poisson); its slices' table by
 * leaf handed over when @with_slices. */
static void sim_side(struct dstat *d, int k, const struct shape *s, int slices, double rate,
		     double spread, bool with_slices)
{
	double counts[NSTACKS] = { 0 }, *tab = calloc((size_t)(s->n + 1) * slices, sizeof(double));
	double *secs = calloc(slices, sizeof(double));
	struct shape moved = *s;

	assert_non_null(tab);
	assert_non_null(secs);
	for (int c = 0; c < slices; c++) {
		double t;

		for (int i = 0; i < s->n; i++) {
			moved.w[i] = s->w[i] * (spread > 0 ? exp(spread * normal() - spread * spread / 2) : 1);
			moved.cum[i] = (i ? moved.cum[i - 1] : 0) + moved.w[i];
		}
		t = poisson(rate / burst);
		for (int j = 0; j < (int)t; j++) {
			int i = draw(&moved);

			counts[i] += burst;
			tab[i * slices + c] += burst; /* (each stack's leaf is its own, but memcpy's) */
		}
		secs[c] = 1;
	}
	for (int i = 0; i < s->n; i++)
		if (counts[i] > 0)
			assert_int_equal(dstat_add(d, k, counts[i], s->ids[i], s->len[i]), 0);
	d->side[k].seconds = slices;
	d->side[k].period_ns = 1e6;
	if (with_slices) {
		/* memcpy's two stacks are one procedure */
		for (int c = 0; c < slices; c++) {
			tab[3 * slices + c] += tab[4 * slices + c];
			tab[4 * slices + c] = 0;
		}
		uint32_t ids[NSTACKS];

		for (int i = 0; i < s->n; i++)
			ids[i] = s->ids[i][s->len[i] - 1]; /* each row its leaf */
		struct dstat_slices sl = { tab, secs, (size_t)s->n, (size_t)slices, ids };
		dstat_add_slices(d, k, &sl);
	}
	free(tab);
	free(secs);
}

/* How many of @n null diffs called something changed. */
static int null_diffs(int n, enum dstat_model m, double spread, bool with_slices, double phi,
		      double *mean_phi)
{
	struct shape s;
	int any = 0;

	shape_make(&s);
	*mean_phi = 0;
	for (int r = 0; r < n; r++) {
		struct dstat d;
		bool sig = false;

		dstat_init(&d, m, ALPHA);
		d.level = 0; /* (no intervals: they are not the test) */
		d.phi_fixed = phi;
		sim_side(&d, 0, &s, slices_a, 1000, spread, with_slices);
		sim_side(&d, 1, &s, slices_b, 1000, spread, with_slices);
		assert_int_equal(dstat_run(&d), 0);
		for (size_t i = 0; i < d.ntests; i++)
			sig |= d.tests[i].sig;
		any += sig;
		*mean_phi += d.phi / n;
		dstat_free(&d);
	}
	return any;
}

/*
 * The stated rate: at most ALPHA of null diffs call anything changed, over 2,000 simulated
 * ones (10 s against 25 s at 1,000 samples a second: every model the sides allow tried,
 * the dispersion from the procedures), 2,000 with their slices (--per sample), 1,000 whose
 * procedures move by 30 % of themselves from second to second (the dispersion from the
 * slices) and 300 whose samples come in bursts of 4 (from the procedures). Without the
 * widening the moving ones are mostly "changed": the test can fail.
 */
static void test_false_positive_rate(void **state)
{
	double phi;
	int any;

	(void)state;
	any = null_diffs(2000, DSTAT_AUTO, 0, false, 0, &phi);
	print_message("Poisson, auto: %d of 2000 null diffs called something changed (mean phi %.2f)\n",
		      any, phi);
	assert_true(any <= 20);
	any = null_diffs(2000, DSTAT_SAMPLE, 0, true, 0, &phi);
	print_message("Poisson, --per sample, slices: %d of 2000 (mean phi %.2f)\n", any, phi);
	assert_true(any <= 20);
	any = null_diffs(1000, DSTAT_AUTO, 0.3, true, 0, &phi);
	print_message("30 %% spread a second, auto, slices: %d of 1000 (mean phi %.2f)\n", any, phi);
	assert_true(any <= 10);
	burst = 4;
	any = null_diffs(300, DSTAT_AUTO, 0, false, 0, &phi);
	burst = 1;
	print_message("bursts of 4, auto, procedures: %d of 300 (mean phi %.2f)\n", any, phi);
	assert_true(any <= 3);
	any = null_diffs(100, DSTAT_AUTO, 0.3, false, 1, &phi);
	print_message("30 %% spread a second, not widened: %d of 100\n", any);
	assert_true(any >= 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ibeta),
		cmocka_unit_test(test_exact_p),
		cmocka_unit_test(test_holm),
		cmocka_unit_test(test_dominant_leaf_grew),
		cmocka_unit_test(test_same_work_per_second_is_not_flagged),
		cmocka_unit_test(test_removed_function),
		cmocka_unit_test(test_startup_slice_left_out),
		cmocka_unit_test(test_small_counts_are_exact),
		cmocka_unit_test(test_empty_side_refused),
		cmocka_unit_test(test_deep_counted_once),
		cmocka_unit_test(test_identical_tests_merged),
		cmocka_unit_test(test_false_positive_rate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
