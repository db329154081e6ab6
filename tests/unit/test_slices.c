// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/slices.c (time slices: settings, filling, coarsening, the
 * budget, windows, times as users write them).
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slices.h"

#define S NS_PER_S
#define T0 (1700000040ull * S)	/* a whole minute: aligned for every length here */

static struct slices *make(const char *spec, uint64_t budget)
{
	struct slices_cfg cfg;
	char err[128];
	struct slices *sl;

	assert_int_equal(slices_cfg_parse(spec, &cfg, err, sizeof(err)), 0);
	cfg.budget = budget;
	sl = slices_new(&cfg, 2); /* as sampling's: (samples, off-CPU ns) by stack */
	assert_non_null(sl);
	return sl;
}

/* @count samples and @ns off-CPU ns of stack @id at @wall */
static int add2(struct slices *sl, uint32_t id, uint64_t count, uint64_t ns, uint64_t wall)
{
	uint64_t v[2] = { count, ns };

	return slices_add(sl, id, v, wall);
}

/* row @j of slice @i: id, count, ns */
#define ROW(sl, i, j) slice_row((sl), &(sl)->s[i], (j))

static void test_cfg_parse(void **state)
{
	struct slices_cfg cfg;
	char err[128], back[128];

	(void)state;
	assert_int_equal(slices_cfg_parse(SLICES_DEFAULT, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.ntiers, 3);
	assert_true(cfg.tier[0].len_ns == 10 * S && cfg.tier[1].len_ns == 60 * S &&
		    cfg.tier[1].age_ns == 3600 * S && cfg.tier[2].len_ns == 600 * S &&
		    cfg.tier[2].age_ns == 86400 * S);
	slices_cfg_format(&cfg, back, sizeof(back));
	assert_string_equal(back, SLICES_DEFAULT);
	assert_int_equal(slices_cfg_parse("1s,3s@5s", &cfg, err, sizeof(err)), 0);
	/* refused: not a multiple, ages not growing, an age on the first, none after, junk */
	assert_int_equal(slices_cfg_parse("10s,15s@1h", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("1s,2s@1h,4s@1m", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("1s@1m", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("1s,2s", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("0s", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("ten", &cfg, err, sizeof(err)), -1);
	assert_int_equal(slices_cfg_parse("", &cfg, err, sizeof(err)), -1);
}

static uint64_t total_in(const struct slices *sl)
{
	uint64_t t = 0;

	for (size_t i = 0; i < sl->n; i++)
		for (uint32_t j = 0; j < sl->s[i].n; j++)
			t += ROW(sl, i, j)[1];
	return t;
}

static void test_add_fills_aligned_slices(void **state)
{
	struct slices *sl = make("10s", 0);

	(void)state;
	assert_int_equal(add2(sl, 3, 1, 0, T0 + 1 * S), 0);
	assert_int_equal(add2(sl, 3, 2, 5, T0 + 9 * S), 0);
	assert_int_equal(add2(sl, 1, 4, 0, T0 + 9 * S), 0);
	assert_int_equal(sl->n, 1);
	assert_int_equal(sl->s[0].t0, T0);
	assert_int_equal(sl->s[0].t1, T0 + 10 * S);
	assert_int_equal(sl->s[0].n, 2);
	/* past its end: a new slice, the old one closed and sorted by stack */
	assert_int_equal(add2(sl, 2, 1, 0, T0 + 25 * S), 0);
	assert_int_equal(sl->n, 2);
	assert_int_equal(ROW(sl, 0, 0)[0], 1);
	assert_int_equal(ROW(sl, 0, 1)[0], 3);
	assert_int_equal(ROW(sl, 0, 1)[1], 3);
	assert_int_equal(ROW(sl, 0, 1)[2], 5);
	assert_int_equal(sl->s[1].t0, T0 + 20 * S);
	/* a clock that went back: into the open slice */
	assert_int_equal(add2(sl, 2, 1, 0, T0 + 5 * S), 0);
	assert_int_equal(sl->n, 2);
	assert_int_equal(total_in(sl), 9);
	slices_free(sl);
}

static void test_coarsening_by_age(void **state)
{
	struct slices *sl = make("1s,3s@5s,6s@20s", 0);

	(void)state;
	for (uint64_t t = 0; t < 12; t++)
		assert_int_equal(add2(sl, t % 4, 1, 0, T0 + t * S + S / 2), 0);
	assert_int_equal(sl->n, 12);
	/* at T0+12: the slices ending by T0+7 are 5 s old: 3 s slices [0,3) [3,6) and [6,7) */
	assert_true(slices_tick(sl, T0 + 12 * S) > 0);
	assert_int_equal(sl->s[0].t0, T0);
	assert_int_equal(sl->s[0].t1, T0 + 3 * S);
	assert_int_equal(sl->s[1].t0, T0 + 3 * S);
	assert_int_equal(sl->s[1].t1, T0 + 6 * S);
	assert_int_equal(sl->s[2].t0, T0 + 6 * S);
	assert_int_equal(sl->s[2].t1, T0 + 7 * S);
	assert_int_equal(sl->n, 3 + 5);
	assert_int_equal(total_in(sl), 12);
	/* much later: 6 s slices */
	slices_tick(sl, T0 + 100 * S);
	assert_int_equal(sl->n, 2);
	assert_int_equal(sl->s[0].t1, T0 + 6 * S);
	assert_int_equal(sl->s[1].t0, T0 + 6 * S);
	assert_int_equal(sl->s[1].t1, T0 + 12 * S);
	assert_int_equal(sl->s[0].n, 4); /* the stacks merged, once each */
	assert_int_equal(total_in(sl), 12);
	assert_true(sl->coarsened > 0);
	assert_int_equal(sl->merged_early, 0);
	slices_free(sl);
}

static void test_budget_merges_the_oldest(void **state)
{
	struct slices *sl = make("1s", 2000);

	(void)state;
	for (uint64_t t = 0; t < 20; t++)
		for (uint32_t id = 0; id < 3; id++)
			assert_int_equal(add2(sl, id + t, 1, 0, T0 + t * S), 0);
	slices_tick(sl, T0 + 30 * S);
	assert_true(sl->merged_early > 0);
	assert_true(slices_bytes(sl) <= 2000 && sl->n > 1);
	assert_int_equal(total_in(sl), 60);
	assert_int_equal(sl->s[0].t0, T0);
	/* the newest keep their length */
	assert_int_equal(sl->s[sl->n - 1].t1 - sl->s[sl->n - 1].t0, S);
	slices_free(sl);
}

struct sum {
	uint64_t count;
};

static void add_up(void *ctx, const uint64_t *row)
{
	((struct sum *)ctx)->count += row[1];
}

static void test_window_takes_whole_slices(void **state)
{
	struct slices *sl = make("10s", 0);
	struct slices_span sp;
	struct sum s = { 0 };

	(void)state;
	for (uint64_t t = 0; t < 60; t++)
		assert_int_equal(add2(sl, 0, 1, 0, T0 + t * S), 0);
	slices_window(sl, T0 + 10 * S, T0 + 30 * S, add_up, &s, &sp);
	assert_int_equal(s.count, 20);
	assert_int_equal(sp.nslices, 2);
	assert_false(sp.cut);
	s.count = 0;
	slices_window(sl, T0 + 15 * S, T0 + 21 * S, add_up, &s, &sp);
	assert_int_equal(s.count, 20);
	assert_true(sp.cut);
	assert_int_equal(sp.t0, T0 + 10 * S);
	assert_int_equal(sp.t1, T0 + 30 * S);
	s.count = 0;
	slices_window(sl, T0 + 100 * S, T0 + 200 * S, add_up, &s, &sp);
	assert_int_equal(s.count, 0);
	assert_int_equal(sp.nslices, 0);
	assert_false(sp.cut);
	slices_free(sl);
}

static void test_push_as_loaded(void **state)
{
	struct slices *sl = make("1s", 0);
	uint64_t e[6] = { 5, 2, 0, 1, 3, 0 };
	struct slices_span sp;
	struct sum s = { 0 };

	(void)state;
	assert_int_equal(slices_push(sl, T0, T0 + 100 * S, e, 2), 0); /* one slice: a whole life */
	assert_int_equal(ROW(sl, 0, 0)[0], 1);
	slices_window(sl, T0 + 50 * S, T0 + 51 * S, add_up, &s, &sp);
	assert_int_equal(s.count, 5);
	assert_true(sp.cut);
	slices_free(sl);
}

static void test_times(void **state)
{
	uint64_t now = T0 + 3600 * S, start = T0, v;

	(void)state;
	assert_int_equal(slices_parse_time("-15m", now, start, &v), 0);
	assert_int_equal(v, now - 900 * S);
	assert_int_equal(slices_parse_time("-1h30m", now, start, &v), 0);
	assert_int_equal(v, now - 5400 * S);
	assert_int_equal(slices_parse_time("+10s", now, start, &v), 0);
	assert_int_equal(v, start + 10 * S);
	assert_int_equal(slices_parse_time("now", now, start, &v), 0);
	assert_int_equal(v, now);
	assert_int_equal(slices_parse_time("@1700000040.5", now, start, &v), 0);
	assert_int_equal(v, T0 + S / 2);
	assert_int_equal(slices_parse_time("1700000041", now, start, &v), 0);
	assert_int_equal(v, T0 + S);
	assert_int_equal(slices_parse_time("2023-11-14", now, start, &v), 0);
	assert_int_equal(slices_parse_time("2023-11-14T22:13:20", now, start, &v), 0);
	assert_int_equal(slices_parse_time("14:03", now, start, &v), 0);
	assert_int_equal(slices_parse_time("14:03:07", now, start, &v), 0);
	assert_int_equal(slices_parse_time("-15x", now, start, &v), -1);
	assert_int_equal(slices_parse_time("yesterday", now, start, &v), -1);
	assert_int_equal(slices_parse_time("14:03junk", now, start, &v), -1);
}

/* Rows of any width: every sum of a row added, merged and windowed alike (call counting's). */
static void test_wide_rows(void **state)
{
	struct slices_cfg cfg = { 0 };
	struct slices *sl;
	uint64_t a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 10, 0, 0, 0, 50 }, want[6] = { 7, 11, 2, 3, 4, 55 };

	(void)state;
	assert_null(slices_new(&cfg, 0));
	assert_null(slices_new(&cfg, SLICES_MAX_WIDTH + 1));
	assert_int_equal(slices_cfg_parse("1s,2s@1m", &cfg, NULL, 0), 0);
	cfg.budget = 0;
	sl = slices_new(&cfg, 5);
	assert_non_null(sl);
	assert_int_equal(slices_add(sl, 9, b, T0), 0);
	assert_int_equal(slices_add(sl, 7, a, T0), 0);
	assert_int_equal(slices_add(sl, 7, b, T0 + S), 0); /* the next slice */
	slices_tick(sl, T0 + 2 * S);
	assert_int_equal(sl->n, 2);
	/* a minute on, the two are one 2 s slice: 7's rows summed, sorted by id */
	slices_tick(sl, T0 + 62 * S);
	assert_int_equal(sl->n, 1);
	assert_int_equal(sl->s[0].n, 2);
	assert_memory_equal(slice_row(sl, &sl->s[0], 0), want, sizeof(want));
	assert_int_equal(slice_row(sl, &sl->s[0], 1)[0], 9);
	assert_int_equal(slices_bytes(sl), sl->cap * sizeof(*sl->s) + sl->cap_at * sizeof(*sl->at) +
						   2 * 6 * sizeof(uint64_t));
	slices_free(sl);
}

/* A read charges the slice before a whole second it is the first read after. */
static void test_charge_wall(void **state)
{
	uint64_t last = T0 + S / 2;

	(void)state;
	assert_int_equal(slices_charge_wall(&last, T0 + S / 2 + 1000), T0 + S / 2 + 1000);
	/* 2 ms after the next second: what it finds goes before that second */
	assert_int_equal(slices_charge_wall(&last, T0 + S + 2000000), T0 + S - 1);
	assert_int_equal(last, T0 + S + 2000000);
	/* and the next read in the same second is charged at its own time */
	assert_int_equal(slices_charge_wall(&last, T0 + S + 3000000), T0 + S + 3000000);
	/* a read made late, 700 ms after the next second: its own second */
	assert_int_equal(slices_charge_wall(&last, T0 + 2 * S + 700000000), T0 + 2 * S + 700000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfg_parse),
		cmocka_unit_test(test_add_fills_aligned_slices),
		cmocka_unit_test(test_coarsening_by_age),
		cmocka_unit_test(test_budget_merges_the_oldest),
		cmocka_unit_test(test_window_takes_whole_slices),
		cmocka_unit_test(test_push_as_loaded),
		cmocka_unit_test(test_wide_rows),
		cmocka_unit_test(test_charge_wall),
		cmocka_unit_test(test_times),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
