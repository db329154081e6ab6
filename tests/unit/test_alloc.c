// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/instruments/alloc_core.c: the weights of byte-sampled allocations,
 * their totals against the truth of a simulated program, and the live blocks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "alloc_core.h"
#include "pcmon_alloc.h"
#include "slices.h"

static void test_weights_at_both_ends(void **state)
{
	struct alloc_weight w;

	(void)state;
	/* far above the rate: always sampled, itself */
	alloc_weigh(64 << 20, 512 << 10, &w);
	assert_true(fabs(w.objects - 1) < 1e-9 && fabs(w.bytes - (64 << 20)) < 1e-3);
	assert_true(w.var_bytes < 1);
	/* far below: about one in rate/size, each standing for the rate's bytes */
	alloc_weigh(16, 512 << 10, &w);
	assert_true(fabs(w.bytes - (512 << 10)) / (512 << 10) < 1e-4);
	assert_true(fabs(w.objects - (512 << 10) / 16.0) / ((512 << 10) / 16.0) < 1e-4);
	/* not sampling, or an empty block: counted as itself */
	alloc_weigh(100, 0, &w);
	assert_true(w.objects == 1 && w.bytes == 100 && w.var_bytes == 0);
	alloc_weigh(0, 4096, &w);
	assert_true(w.objects == 1 && w.bytes == 0);
}

/* xorshift64*, and an exponential draw of mean @mean from it */
static uint64_t rnd = 0x9e3779b97f4a7c15ull;

static double exp_draw(double mean)
{
	rnd ^= rnd >> 12;
	rnd ^= rnd << 25;
	rnd ^= rnd >> 27;
	return -log(((rnd * 2685821657736338717ull >> 11) + 0.5) / 9007199254740992.0) * mean;
}

/*
 * A program of three sites, 1,000,000 blocks of 24 B, 2,000 of 300 KiB and 40 of 8 MiB,
 * sampled by a countdown as BPF samples them: each site's estimated bytes and objects
 * within 4 standard errors of the truth, and the error stated is of the truth's size.
 */
/* The countdown table: rising, positive, its mean the distribution's (1, x 2^16), and its
 * spread too (the exponential's variance is 1: the slices' means hold all but the spread
 * inside each slice, a little less). */
static void test_countdown_table(void **state)
{
	double sum = 0, sq = 0, n = PCMON_ALLOC_QUANTILES;

	(void)state;
	for (uint32_t i = 0; i < PCMON_ALLOC_QUANTILES; i++) {
		double q = alloc_quantile(i) / 65536.0;

		assert_true(alloc_quantile(i) > 0);
		if (i)
			assert_true(alloc_quantile(i) > alloc_quantile(i - 1));
		sum += q;
		sq += q * q;
	}
	assert_true(fabs(sum / n - 1) < 1e-4);
	assert_true(sq / n - (sum / n) * (sum / n) > 0.95 && sq / n - (sum / n) * (sum / n) < 1);
}

/* --alloc-functions: roles and names, and what is refused */
static void test_functions_parsed(void **state)
{
	char *n[PCMON_AFN_N], err[256];

	(void)state;
	assert_int_equal(alloc_parse_functions("malloc=je_malloc,free=je_free", n, err,
					       sizeof(err)), 0);
	assert_string_equal(n[PCMON_AFN_MALLOC], "je_malloc");
	assert_string_equal(n[PCMON_AFN_FREE], "je_free");
	assert_null(n[PCMON_AFN_CALLOC]);
	alloc_functions_free(n);
	assert_int_equal(alloc_parse_functions("posix_memalign=tc_posix_memalign", n, err,
					       sizeof(err)), 0);
	assert_string_equal(n[PCMON_AFN_POSIX_MEMALIGN], "tc_posix_memalign");
	alloc_functions_free(n);
	static const char *const bad[] = { "", "malloc", "malloc=", "new=x", "malloc=a,malloc=b",
					   "free=f", "malloc=9x", "malloc=a b", "malloc=x,=y" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(alloc_parse_functions(bad[i], n, err, sizeof(err)), -EINVAL);
		assert_true(strstr(err, "--alloc-functions") != NULL);
		for (int k = 0; k < PCMON_AFN_N; k++)
			assert_null(n[k]);
	}
}

static void test_totals_are_unbiased(void **state)
{
	const uint64_t rate = 512 << 10, size[3] = { 24, 300 << 10, 8 << 20 };
	const uint64_t count[3] = { 1000000, 2000, 40 };
	struct alloc_core *a = alloc_core_new(rate);
	double left = exp_draw((double)rate);
	uint64_t id = 0, done[3] = { 0 };
	const struct alloc_site *s;
	size_t n;

	(void)state;
	assert_non_null(a);
	/* interleaved: of every block, the site drawn in proportion to what is left */
	for (uint64_t k = 0; k < count[0] + count[1] + count[2]; k++) {
		uint64_t left_all = count[0] + count[1] + count[2] - k, pick = rnd % left_all;
		int site = pick < count[0] - done[0] ? 0 : pick < count[0] - done[0] + count[1] - done[1] ? 1 : 2;

		exp_draw(1); /* (advance the generator) */
		done[site]++;
		left -= (double)size[site];
		if (left <= 0) {
			left = exp_draw((double)rate);
			assert_int_equal(alloc_core_alloc(a, id++, (uint32_t)site, size[site]), 0);
		}
	}
	s = alloc_core_sites(a, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		uint32_t k = s[i].stack;
		double want = (double)(size[k] * count[k]), se = sqrt(s[i].alloc_var);

		assert_true(fabs(s[i].alloc_bytes - want) <= 4 * se + 1e-6 * want);
		/* (the error says something: some 46 samples of the small site, 1/sqrt(46)) */
		assert_true(se <= 0.25 * want);
		assert_true(fabs(s[i].alloc_objects - (double)count[k]) <=
			    4 * se / (double)size[k] + 1e-6 * (double)count[k]);
		/* none freed: all live */
		assert_true(s[i].inuse_bytes == s[i].alloc_bytes);
	}
	alloc_core_free(a);
}

/* Frees take a block's weights out of its site's live figures, once; unknown ids are not
 * errors; the table keeps its blocks through growth and removal. */
static void test_live_blocks(void **state)
{
	struct alloc_core *a = alloc_core_new(1000);
	const struct alloc_site *s;
	struct alloc_weight w;
	size_t n;

	(void)state;
	assert_non_null(a);
	for (uint64_t id = 0; id < 20000; id++)
		assert_int_equal(alloc_core_alloc(a, id, (uint32_t)(id % 2), 5000), 0);
	for (uint64_t id = 0; id < 20000; id += 3)
		assert_true(alloc_core_free_block(a, id, NULL, NULL));
	assert_false(alloc_core_free_block(a, 0, NULL, NULL));	  /* (once) */
	assert_false(alloc_core_free_block(a, 999999, NULL, NULL)); /* never sampled */
	alloc_weigh(5000, 1000, &w);
	s = alloc_core_sites(a, &n);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		uint64_t live = 0;

		for (uint64_t id = s[i].stack; id < 20000; id += 2)
			live += id % 3 != 0;
		assert_true(fabs(s[i].inuse_bytes - (double)live * w.bytes) < 1e-3);
		assert_true(fabs(s[i].alloc_bytes - 10000 * w.bytes) < 1e-3);
	}
	/* every block left is found */
	for (uint64_t id = 0; id < 20000; id++)
		assert_int_equal(alloc_core_free_block(a, id, NULL, NULL), id % 3 != 0);
	s = alloc_core_sites(a, &n);
	for (size_t i = 0; i < n; i++)
		assert_true(fabs(s[i].inuse_bytes) < 1e-3);
	alloc_core_free(a);
}

struct sums {
	double v[8][AC_N];	/* by stack */
};

static void add_row(void *ctx, const uint64_t *row)
{
	struct sums *x = ctx;

	for (int k = 0; k < AC_N; k++)
		x->v[row[0]][k] += (double)row[1 + k];
}

/*
 * Allocations and frees kept by time: a random stream over 8 sites and 100 s, at a rate of
 * 512 KiB and of 1 GiB (variances that would overflow in plain units). Every slice's sums
 * give each site's whole-life figures within rounding; a window gives what the stream did
 * in it; live at its end is its allocations up to then less their frees.
 */
static void test_rows_by_time(void **state)
{
	const uint64_t rates[] = { 512u << 10, 1ull << 30 };

	(void)state;
	for (size_t ri = 0; ri < 2; ri++) {
		uint64_t rate = rates[ri], unit = alloc_var_unit(rate), rnd = 88172645463325252ull;
		struct alloc_core *a = alloc_core_new(rate);
		struct slices_cfg cfg;
		struct slices *sl;
		struct sums all = { 0 }, win = { 0 }, upto = { 0 }, want = { 0 }, want_live = { 0 };
		const struct alloc_site *site;
		struct slices_span span;
		uint64_t row[AC_N], id = 0, t0 = 1700000000ull * NS_PER_S;
		uint64_t w0 = t0 + 30 * NS_PER_S, w1 = t0 + 60 * NS_PER_S;
		char err[64];
		size_t n;

		assert_int_equal(slices_cfg_parse("1s", &cfg, err, sizeof(err)), 0);
		sl = slices_new(&cfg, AC_N);
		assert_non_null(a);
		assert_non_null(sl);
		for (int step = 0; step < 40000; step++) {
			uint64_t t = t0 + (uint64_t)step * 2500000; /* 100 s */
			struct alloc_weight w;
			uint32_t stack;

			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			if (rnd % 3 || !id) { /* a sampled allocation */
				uint64_t size = 1 + (rnd >> 20) % (4 * rate);

				stack = (uint32_t)(rnd >> 8) % 8;
				assert_int_equal(alloc_core_alloc(a, id++, stack, size), 0);
				alloc_weigh(size, rate, &w);
				alloc_row(&w, false, unit, row);
			} else if (alloc_core_free_block(a, (rnd >> 12) % id, &stack, &w)) {
				alloc_row(&w, true, unit, row);
			} else {
				continue;
			}
			assert_int_equal(slices_add(sl, stack, row, t), 0);
			slices_tick(sl, t);
			/* what the window [w0, w1) holds, and what is live at its end */
			for (int k = 0; k < AC_N; k++) {
				if (t >= w0 && t < w1)
					want.v[stack][k] += (double)row[k];
				if (t < w1)
					want_live.v[stack][k] += (double)row[k];
			}
		}
		slices_window(sl, 0, UINT64_MAX, add_row, &all, &span);
		slices_window(sl, w0, w1, add_row, &win, &span);
		assert_int_equal(span.t0, w0);
		assert_int_equal(span.t1, w1);
		slices_window(sl, 0, w1, add_row, &upto, &span);
		site = alloc_core_sites(a, &n);
		for (size_t i = 0; i < n; i++) {
			const double *v = all.v[site[i].stack];
			double ns = (double)site[i].samples;

			assert_true(v[AC_SAMPLES] == ns);
			/* (each row's rounding: half a byte, half a thousandth, half a unit) */
			assert_true(fabs(v[AC_ALLOC_BYTES] - site[i].alloc_bytes) <= ns / 2 + 1);
			assert_true(fabs(v[AC_ALLOC_MOBJ] / 1000 - site[i].alloc_objects) <= ns / 2000 + 1);
			assert_true(fabs(v[AC_ALLOC_VAR] * (double)unit - site[i].alloc_var) <=
				    (ns / 2 + 1) * (double)unit + 1e-9 * site[i].alloc_var);
			assert_true(fabs(v[AC_ALLOC_BYTES] - v[AC_FREE_BYTES] - site[i].inuse_bytes) <=
				    ns + 1);
		}
		for (int st = 0; st < 8; st++)
			for (int k = 0; k < AC_N; k++) {
				assert_true(win.v[st][k] == want.v[st][k]);
				assert_true(upto.v[st][k] == want_live.v[st][k]);
			}
		slices_free(sl);
		alloc_core_free(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weights_at_both_ends),
		cmocka_unit_test(test_countdown_table),
		cmocka_unit_test(test_functions_parsed),
		cmocka_unit_test(test_totals_are_unbiased),
		cmocka_unit_test(test_live_blocks),
		cmocka_unit_test(test_rows_by_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
