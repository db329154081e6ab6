// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for tail profiles' engine side (daemon/instruments/tail.c, docs/tail.md): no BPF.
 *
 * What is checked: thresholds as given, and those refused; the log-linear histogram's
 * buckets within 3 % and the percentile estimate; samples filed by their instance's end
 * whatever the order in which samples, sets and ends arrive (a set of one instance named by
 * it, samples before their set is told, after their instance ended, a set of two); abandoned instances kept apart; a
 * percentile deciding its first instances early; samples of a set never told counted as
 * unmatched once forgotten; held samples bounded, the rest counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "stfile.h"
#include "tail.h"

#define MS 1000000ull

/* A main aggregate holding stacks 0 (one location, 1) and 1 (one location, 2). */
static struct agg *main_agg(void)
{
	struct agg *a = agg_new();
	struct {
		struct agg_stack st;
		uint32_t loc;
	} s = { .st = { .nuser = 1 } };
	uint32_t id;

	for (uint32_t i = 0; i < 2; i++) {
		s.loc = i + 1;
		assert_int_equal(agg_add_id(a, &s.st, 1, 0, &id), 0);
		assert_int_equal(id, i);
	}
	return a;
}

/* Samples of stack @loc (1 or 2) in profile @p. */
static uint64_t in(const struct agg *p, uint32_t loc)
{
	uint64_t n = 0, c, ns;

	for (size_t i = 0; i < agg_count(p); i++) {
		const struct agg_stack *st = agg_get(p, i, &c, &ns);

		if (st->locs[0] == loc)
			n += c;
	}
	return n;
}

static struct pcmon_tail_ev ev_set(uint32_t set, uint32_t i0, uint32_t i1)
{
	return (struct pcmon_tail_ev){ .type = PCMON_TAIL_SET, .set = set, .inst = { i0, i1 } };
}

static struct pcmon_tail_ev ev_end(uint32_t slot, uint32_t inst, uint64_t dur, bool abandoned)
{
	return (struct pcmon_tail_ev){ .type = abandoned ? PCMON_TAIL_ABANDON : PCMON_TAIL_END,
				       .slot = slot, .dur = dur, .inst = { inst } };
}

static void test_parse(void **state)
{
	uint32_t leg;
	uint64_t ns;
	double pct;
	const char *why;

	(void)state;
	assert_int_equal(tail_parse("3", &leg, &ns, &pct, &why), 0);
	assert_true(leg == 3 && ns == 0 && pct == 99);
	assert_int_equal(tail_parse("1:5ms", &leg, &ns, &pct, &why), 0);
	assert_true(leg == 1 && ns == 5 * MS && pct == 0);
	assert_int_equal(tail_parse("2:250us", &leg, &ns, &pct, &why), 0);
	assert_true(ns == 250000);
	assert_int_equal(tail_parse("2:1.5s", &leg, &ns, &pct, &why), 0);
	assert_true(ns == 1500 * MS);
	assert_int_equal(tail_parse("2:p99.9", &leg, &ns, &pct, &why), 0);
	assert_true(ns == 0 && fabs(pct - 99.9) < 1e-9);
	const char *bad[] = { "", "0", "x", "1:", "1:5", "1:5m", "1:p100", "1:p0", "1:-5ms",
			      "1:p", "1:5ms:", "1 :5ms", "1:0ns" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(tail_parse(bad[i], &leg, &ns, &pct, &why), -EINVAL);
}

static void test_buckets_within_3_percent(void **state)
{
	(void)state;
	for (uint64_t v = 0; v < 64; v++)
		assert_int_equal(tail_bucket_low(tail_bucket(v)), v);
	for (uint64_t v = 1; v < (1ull << 62); v = v * 3 + 7) {
		uint32_t b = tail_bucket(v);
		uint64_t lo = tail_bucket_low(b), next = tail_bucket_low(b + 1);

		assert_true(b < TAIL_HBUCKETS);
		assert_true(lo <= v && v < next);
		assert_true((double)(next - lo) <= 0.0313 * (double)lo + 1);
	}
}

/* The p99 of 1...10000 ms, estimated within 3 %, the first 1,000 decided early. */
static void test_percentile(void **state)
{
	struct agg *a = main_agg();
	struct tails *t = tails_new(a);
	struct tail_leg *l;

	(void)state;
	assert_int_equal(tails_add_leg(t, 7, 1, 2, 0, 99), 1);
	l = tails_leg(t, 7);
	assert_non_null(l);
	for (uint32_t i = 1; i <= 10000; i++) {
		/* a pseudo-random order of the durations */
		uint64_t d = (uint64_t)((i * 7919u) % 10000 + 1) * MS / 10;
		struct pcmon_tail_ev e = ev_end(1, i, d, false);

		tails_event(t, &e, 0);
	}
	assert_int_equal(l->decided_early, 1000);
	assert_true(fabs((double)tail_threshold(l) - 990 * MS) <= 0.03 * 990 * MS);
	/* about 1 % slow: those decided early by a rougher estimate too */
	assert_in_range(l->instances[TAIL_SLOW], 90, 130);
	assert_int_equal(l->instances[TAIL_SLOW] + l->instances[TAIL_BODY], 10000);
	tails_free(t);
	agg_free(a);
}

#define M(id) ((id) | PCMON_TAIL_MULTI)

/*
 * Samples of one instance (named by its id), of a set of two (before the set is told, and
 * after), after their instances ended; an abandoned instance; a set never told.
 */
static void test_order(void **state)
{
	struct agg *a = main_agg();
	struct tails *t = tails_new(a);
	struct tail_leg *l1, *l2;
	struct pcmon_tail_ev e;

	(void)state;
	assert_int_equal(tails_add_leg(t, 1, 1, 2, 5 * MS, 0), 1);
	assert_int_equal(tails_add_leg(t, 2, 3, 4, 5 * MS, 0), 2);
	l1 = tails_leg(t, 1);
	l2 = tails_leg(t, 2);
	/* instance 100 of leg 1 alone: its samples carry its id, nothing told of it yet */
	tails_sample(t, 100, 0, 3, 0);
	assert_int_equal(t->held, 1);
	/* set M(11): 100 and 200 (leg 2 nested inside); a sample comes before the set is told
	 * (dwarf), one after */
	tails_sample(t, M(11), 1, 1, 1);
	e = ev_set(M(11), 100, 200);
	tails_event(t, &e, 2);
	tails_sample(t, M(11), 1, 1, 2);
	/* 200 ends fast: its samples go to leg 2's body */
	e = ev_end(2, 200, 1 * MS, false);
	tails_event(t, &e, 3);
	assert_int_equal(in(l2->prof[TAIL_BODY], 2), 2);
	/* 100 ends slow: all of its samples to leg 1's tail */
	e = ev_end(1, 100, 9 * MS, false);
	tails_event(t, &e, 4);
	assert_int_equal(in(l1->prof[TAIL_SLOW], 1), 3);
	assert_int_equal(in(l1->prof[TAIL_SLOW], 2), 2);
	assert_int_equal(t->held, 0);
	/* samples drained after their instances ended (fp: counts maps drain late) */
	tails_sample(t, M(11), 0, 5, 5);
	tails_sample(t, 100, 0, 1, 5);
	assert_int_equal(in(l1->prof[TAIL_SLOW], 1), 9);
	assert_int_equal(in(l2->prof[TAIL_BODY], 1), 5);
	/* an abandoned instance: apart */
	tails_sample(t, 300, 1, 4, 6);
	e = ev_end(1, 300, 0, true);
	tails_event(t, &e, 7);
	assert_int_equal(in(l1->prof[TAIL_ABANDONED], 2), 4);
	assert_int_equal(l1->instances[TAIL_ABANDONED], 1);
	assert_int_equal(l1->instances[TAIL_SLOW], 1);
	assert_int_equal(l2->instances[TAIL_BODY], 1);
	assert_int_equal(t->unmatched, 0);
	/* long after: forgotten; a set never told is counted as unmatched */
	tails_sample(t, M(99), 0, 6, 8);
	tails_expire(t, 8 + TAIL_KEEP_NS + 1);
	assert_int_equal(t->unmatched, 6);
	assert_int_equal(t->held, 0);
	tails_sample(t, M(11), 0, 1, 9 + TAIL_KEEP_NS);
	assert_int_equal(in(l1->prof[TAIL_SLOW], 1), 9); /* its set forgotten: held apart */
	tails_zero(t);
	assert_int_equal(agg_count(l1->prof[TAIL_SLOW]), 0);
	assert_int_equal(t->unmatched + t->held + l1->instances[TAIL_SLOW], 0);
	tails_free(t);
	agg_free(a);
}

/* Held samples are bounded: what does not fit is counted. */
static void test_overflow(void **state)
{
	struct agg *a = main_agg();
	struct tails *t = tails_new(a);
	struct pcmon_tail_ev e;

	(void)state;
	tails_add_leg(t, 1, 1, 2, MS, 0);
	for (uint32_t i = 0; i < TAIL_MAX_HELD + 10; i++)
		tails_sample(t, 5, i & 1, 1, 0); /* alternating: a group each */
	/* full: a sample of the last group's stack still joins it, another is counted */
	assert_int_equal(t->held, TAIL_MAX_HELD);
	assert_int_equal(t->overflow, 5);
	e = ev_end(1, 5, 2 * MS, false);
	tails_event(t, &e, 1);
	assert_int_equal(t->held, 0);
	assert_int_equal(tails_leg(t, 1)->samples[TAIL_SLOW], TAIL_MAX_HELD + 5);
	tails_free(t);
	agg_free(a);
}

/* A map of many ids, deleted as they expire: every one found until then. */
static void test_many_sets(void **state)
{
	struct agg *a = main_agg();
	struct tails *t = tails_new(a);
	struct tail_leg *l;

	(void)state;
	tails_add_leg(t, 1, 1, 2, MS, 0);
	l = tails_leg(t, 1);
	for (uint32_t i = 1; i <= 20000; i++) {
		struct pcmon_tail_ev e = ev_set(M(i * 64), i * 64 + 1, 0);

		tails_event(t, &e, (uint64_t)i * MS);
		tails_sample(t, M(i * 64), 0, 1, (uint64_t)i * MS);
		e = ev_end(1, i * 64 + 1, i & 1 ? 2 * MS : 0, false);
		tails_event(t, &e, (uint64_t)i * MS);
		if (i % 1000 == 0)
			tails_expire(t, (uint64_t)i * MS);
	}
	assert_int_equal(l->samples[TAIL_SLOW], 10000);
	assert_int_equal(l->samples[TAIL_BODY], 10000);
	assert_int_equal(t->unmatched, 0);
	tails_free(t);
	agg_free(a);
}

/* The results file's "tails": written and read back the same; a bad one refused. */
static void test_store_round_trip(void **state)
{
	struct agg *a = main_agg(), *a2 = main_agg();
	struct tails *t = tails_new(a), *back = NULL;
	struct sf_wr w = { 0 };
	char why[256] = "";
	struct sf_rd rd = { .format = 5, .why = why, .whylen = sizeof(why) };
	uint32_t sid[2] = { 0, 1 };
	cJSON *o = cJSON_CreateObject();
	struct pcmon_tail_ev e;

	(void)state;
	tails_add_leg(t, 3, 1, 2, 0, 99.5);
	tails_add_leg(t, 4, 2, 1, 7 * MS, 0);
	for (uint32_t i = 1; i <= 50; i++) {
		tails_sample(t, i * 64, i & 1, i, 0);
		e = ev_end(1 + (i & 1), i * 64, i * MS / 4, i % 10 == 0);
		tails_event(t, &e, 0);
	}
	tail_save(t, &w, o);
	assert_false(w.oom);
	{ /* as the file has it: printed, read */
		char *text = cJSON_PrintUnformatted(o);

		cJSON_Delete(o);
		o = cJSON_Parse(text);
		cJSON_free(text);
		assert_non_null(o);
	}
	if (tail_load(&rd, o, a2, sid, 2, &back))
		fail_msg("refused: %s", why);
	assert_non_null(back);
	assert_int_equal(back->nlegs, 2);
	for (size_t k = 0; k < 2; k++) {
		const struct tail_leg *x = &t->leg[k], *y = &back->leg[k];

		assert_int_equal(y->id, x->id);
		assert_int_equal(y->threshold_ns, x->threshold_ns);
		assert_true(y->pct == x->pct);
		assert_memory_equal(y->instances, x->instances, sizeof(x->instances));
		assert_memory_equal(y->samples, x->samples, sizeof(x->samples));
		assert_int_equal(tail_threshold(y), tail_threshold(x));
		for (int p = 0; p < TAIL_PARTS; p++)
			for (uint32_t loc = 1; loc <= 2; loc++)
				assert_int_equal(in(y->prof[p], loc), in(x->prof[p], loc));
	}
	tails_free(back);
	/* a pair naming a stack the section does not have: refused, saying where */
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "tails"), 0),
						 "body"),
			     cJSON_Parse("[7, 1]"));
	assert_int_equal(tail_load(&rd, o, a2, sid, 2, &back), -EINVAL);
	assert_null(back);
	assert_non_null(strstr(why, "tails[0]"));
	cJSON_Delete(o);
	tails_free(t);
	agg_free(a);
	agg_free(a2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_buckets_within_3_percent),
		cmocka_unit_test(test_percentile),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_many_sets),
		cmocka_unit_test(test_store_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
