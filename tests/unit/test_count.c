// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the call-counting instrument's pure logic (daemon/instruments/count*.c,
 * docs/count.md): no BPF. BPF keeps each procedure's raw totals (struct pcmon_cstat); these
 * tests give the totals BPF would have kept for small hand-timed traces, and check what the
 * call table makes of them: the probes' cost taken off per activation and per kind, never
 * below 0; self+children and the average over outermost activations only (recursion);
 * the sort orders; open activations by procedure; the options parsed; and the state file's
 * "calls" section, saved and loaded back, or refused with the field named.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "counter.h"
#include "slices.h"
#include "stfile.h"
#include "timed.h"
#include "util.h"
#include "json_check.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

struct proc {
	const char *module, *name;
	bool xol;
	struct pcmon_cstat s;
};

/* A detached table (as loaded from a file) of @n procedures, freed by count_ops.free. */
static struct count *table(const struct proc *p, size_t n, double cost, double cost_xol)
{
	struct count *ct = calloc(1, sizeof(*ct));

	assert_non_null(ct);
	ct->fns = calloc(n + 1, sizeof(*ct->fns));
	assert_non_null(ct->fns);
	ct->cap_fns = n + 1;
	for (size_t i = 0; i < n; i++) {
		ct->fns[i] = (struct count_fn){ .module = strdup(p[i].module),
						.name = strdup(p[i].name), .xol = p[i].xol,
						.stat = p[i].s };
		assert_non_null(ct->fns[i].module);
		assert_non_null(ct->fns[i].name);
	}
	ct->nfns = n;
	ct->cost_ns = cost;
	ct->cost_xol_ns = cost_xol;
	/* the whole pair inside the activation's clock readings, unless a test says */
	ct->in_ns[0] = cost;
	ct->in_ns[1] = cost_xol;
	ct->detached = true;
	return ct;
}

/* Patterns @pats, of which those with matched[i] false never named anything. */
static void set_patterns(struct count *ct, const char *const *pats, const bool *matched, size_t n)
{
	ct->patterns = calloc(n + 1, sizeof(*ct->patterns));
	ct->pats = calloc(n + 1, sizeof(*ct->pats));
	ct->matched = calloc(n + 1, sizeof(*ct->matched));
	assert_non_null(ct->patterns);
	assert_non_null(ct->pats);
	assert_non_null(ct->matched);
	for (size_t i = 0; i < n; i++) {
		ct->patterns[i] = strdup(pats[i]);
		ct->matched[i] = matched[i];
	}
	ct->npats = n;
}

/* The call table of @ct sorted by @sort, with no open activations: the reply's "calls". */
static cJSON *report(const struct count *ct, const uint64_t *open, const char *sort)
{
	uint64_t none[16 * COUNT_NCLS] = { 0 };
	cJSON *rep = cJSON_CreateObject();

	assert_non_null(rep);
	assert_true(ct->nfns * COUNT_NCLS <= ARRAY_SIZE(none));
	assert_int_equal(count_report_json(ct, open ? open : none, NULL, sort, rep), 0);
	return rep;
}

static const cJSON *row(const cJSON *rep, int k)
{
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(rep, "calls");
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(calls, "procedures");
	const cJSON *x = cJSON_GetArrayItem(arr, k);

	if (!x)
		fail_msg("no row %d", k);
	return x;
}

static int rows(const cJSON *rep)
{
	const cJSON *calls = cJSON_GetObjectItemCaseSensitive(rep, "calls");

	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(calls, "procedures"));
}

/* The names of the rows in order, "a b c". */
static const char *order(const cJSON *rep)
{
	static char buf[256];
	size_t len = 0;

	buf[0] = '\0';
	for (int k = 0; k < rows(rep); k++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", k ? " " : "",
				str(row(rep, k), "name"));
	return buf;
}

/* ---------------------------------------------------------------------------------------- */
/* Times with the probes' cost taken out */

static void test_self_takes_one_probe_pair_per_activation(void **state)
{
	/* 3 activations closed, 100 ns of self time between them, probes at 5 ns a pair: 85;
	 * the same stepped out of line at 20 ns a pair: 100 - 3 * 20 = 40 */
	const struct proc p[] = {
		{ "prog", "emulated", false,
		  { .calls = 3, .closed = 3, .outer = 3, .self_ns = 100, .total_ns = 100,
		    .total_acts = 3 } },
		{ "prog", "stepped", true,
		  { .calls = 3, .closed = 3, .outer = 3, .self_ns = 100, .total_ns = 100,
		    .total_acts = 3, .total_acts_xol = 3 } },
	};
	struct count *ct = table(p, 2, 5, 20);

	(void)state;
	assert_true(count_self_ns(ct, &ct->fns[0]) == 85);
	assert_true(count_self_ns(ct, &ct->fns[1]) == 40);
	count_ops.free(ct);
}

static void test_self_counts_closed_activations_not_calls(void **state)
{
	/* 4 calls, of which 1 still open: its self time is not in self_ns yet, nor is its
	 * probe pair taken off: 60 - 3 * 10 = 30, not 60 - 4 * 10 = 20 */
	const struct proc p[] = {
		{ "prog", "f", false,
		  { .calls = 4, .closed = 3, .outer = 3, .self_ns = 60, .total_ns = 60,
		    .total_acts = 3 } },
	};
	struct count *ct = table(p, 1, 10, 0);

	(void)state;
	assert_true(count_self_ns(ct, &ct->fns[0]) == 30);
	count_ops.free(ct);
}

static void test_times_never_below_zero(void **state)
{
	/* a procedure shorter than its probes: 10 activations of 3 ns under 5 ns probes would
	 * be 30 - 50 = -20; exactly the probes' cost, 50 - 50, is 0 too */
	const struct proc p[] = {
		{ "prog", "tiny", false,
		  { .calls = 10, .closed = 10, .outer = 10, .self_ns = 30, .total_ns = 30,
		    .total_acts = 10 } },
		{ "prog", "even", false,
		  { .calls = 10, .closed = 10, .outer = 10, .self_ns = 50, .total_ns = 50,
		    .total_acts = 10 } },
	};
	struct count *ct = table(p, 2, 5, 0);
	cJSON *rep;

	(void)state;
	assert_true(count_self_ns(ct, &ct->fns[0]) == 0);
	assert_true(count_total_ns(ct, &ct->fns[0]) == 0);
	assert_true(count_self_ns(ct, &ct->fns[1]) == 0);
	assert_true(count_total_ns(ct, &ct->fns[1]) == 0);
	rep = report(ct, NULL, "self");
	assert_true(num(row(rep, 0), "self_ns") == 0);
	assert_true(num(row(rep, 0), "avg_ns") == 0);
	/* but what was taken off is what the probes cost, whole: 2 * 10 * 5 */
	assert_true(num(cJSON_GetObjectItem(rep, "calls"), "subtracted_ns") == 100);
	cJSON_Delete(rep);
	count_ops.free(ct);
}

static void test_recursion_counts_self_plus_children_once(void **state)
{
	/*
	 * f called twice from main: A [0, 10), and B [20, 30), which calls f again, C [22, 27).
	 * BPF: self A 10, B 10 - 5 = 5, C 5: 20; self+children of the outermost ones only,
	 * A 10 + B 10 = 20 (C is inside B: counted twice it would be 25); activations inside
	 * them, their own included: A 1, B 2 (itself and C).
	 */
	const struct proc p[] = {
		{ "prog", "f", false,
		  { .calls = 3, .closed = 3, .outer = 2, .self_ns = 20, .total_ns = 20,
		    .total_acts = 3, .max_ns = 10 } },
	};
	struct count *ct = table(p, 1, 0, 0);
	cJSON *rep = report(ct, NULL, "self");

	(void)state;
	assert_true(num(row(rep, 0), "calls") == 3);
	assert_true(num(row(rep, 0), "self_ns") == 20);
	assert_true(num(row(rep, 0), "total_ns") == 20);
	/* the average is per outermost call: 20 / 2, not 20 / 3 */
	assert_true(num(row(rep, 0), "avg_ns") == 10);
	cJSON_Delete(rep);

	/* with probes at 1 ns a pair: 3 activations closed, 3 inside the outermost ones:
	 * self 20 - 3 = 17, total 20 - 3 = 17, avg 17 / 2 */
	ct->cost_ns = ct->in_ns[0] = 1;
	rep = report(ct, NULL, "self");
	assert_true(num(row(rep, 0), "self_ns") == 17);
	assert_true(num(row(rep, 0), "total_ns") == 17);
	assert_true(num(row(rep, 0), "avg_ns") == 8.5);
	assert_true(num(row(rep, 0), "max_ns") == 10); /* BPF took the cost out */
	cJSON_Delete(rep);
	count_ops.free(ct);
}

static void test_total_takes_each_kind_at_its_cost(void **state)
{
	/* parent (emulated) [0, 1000) calls child (stepped) twice: 3 activations inside
	 * parent, 2 of them stepped: 1000 - 2 * 30 - 1 * 10 = 930; child's own self time,
	 * 200 in its 2 activations, at the stepped cost: 200 - 2 * 30 = 140 */
	const struct proc p[] = {
		{ "prog", "parent", false,
		  { .calls = 1, .closed = 1, .outer = 1, .self_ns = 800, .total_ns = 1000,
		    .total_acts = 3, .total_acts_xol = 2 } },
		{ "prog", "child", true,
		  { .calls = 2, .closed = 2, .outer = 2, .self_ns = 200, .total_ns = 200,
		    .total_acts = 2, .total_acts_xol = 2 } },
	};
	struct count *ct = table(p, 2, 10, 30);

	(void)state;
	assert_true(count_total_ns(ct, &ct->fns[0]) == 930);
	assert_true(count_self_ns(ct, &ct->fns[0]) == 790);
	assert_true(count_total_ns(ct, &ct->fns[1]) == 140);
	assert_true(count_self_ns(ct, &ct->fns[1]) == 140);
	count_ops.free(ct);
}

static void test_stolen_time_is_in_the_error(void **state)
{
	/* 10 calls of 100 us (1 ms, no probe cost here): the hypervisor stole 300 us during
	 * them, 200 us of it in the longest and none in the shortest. The times keep it (the
	 * thread's wall time did pass), their errors hold it: it may have been at the probes */
	const struct proc p[] = {
		{ "prog", "f", false,
		  { .calls = 10, .closed = 10, .outer = 10, .self_ns = 1000000, .total_ns = 1000000,
		    .total_acts = 10, .max_ns = 300000, .min_ns = 70000, .max_acts = 1,
		    .min_acts = 1, .self_steal_ns = 300000, .total_steal_ns = 300000,
		    .max_steal_ns = 200000, .min_steal_ns = 0 } },
	};
	struct count *ct = table(p, 1, 0, 0);
	struct pcmon_cstat merged = { 0 }, other = p[0].s;
	const cJSON *x;
	cJSON *rep;

	(void)state;
	rep = report(ct, NULL, "self");
	x = row(rep, 0);
	assert_true(num(x, "total_ns") == 1000000 && num(x, "total_err_ns") == 300000);
	assert_true(num(x, "self_ns") == 1000000 && num(x, "self_err_ns") == 300000);
	assert_true(num(x, "avg_err_ns") == 30000);
	assert_true(num(x, "max_err_ns") == 200000 && num(x, "min_err_ns") == 0);
	assert_true(num(x, "stolen_ns") == 300000);
	cJSON_Delete(rep);
	count_ops.free(ct);
	/* CPUs' totals added: an extreme keeps the steal of its own activation */
	other.max_ns = 100000;
	other.max_steal_ns = 5;
	other.min_ns = 10000;
	other.min_steal_ns = 7;
	counter_stat_add(&merged, &p[0].s);
	counter_stat_add(&merged, &other);
	assert_true(merged.max_ns == 300000 && merged.max_steal_ns == 200000);
	assert_true(merged.min_ns == 10000 && merged.min_steal_ns == 7);
	assert_true(merged.total_steal_ns == 600000);
}

static void test_unplaced_steal_is_in_every_error(void **state)
{
	/* VIRTUAL, 10 calls of 100 us: the scheduler counted 250 us of steal after a probe had
	 * read the clock (90 us at most in one placement), which may have been in these calls
	 * or beside them. Every time of the row holds it in its error; the times themselves
	 * are what the clock read */
	const struct proc p[] = {
		{ "prog", "f", false,
		  { .calls = 10, .closed = 10, .outer = 10, .self_ns = 1000000, .total_ns = 1000000,
		    .total_acts = 10, .max_ns = 120000, .min_ns = 80000, .max_acts = 1,
		    .min_acts = 1, .unplaced_steal_ns = 250000, .max_unplaced_ns = 90000 } },
	};
	struct count *ct = table(p, 1, 0, 0);
	const cJSON *x;
	cJSON *rep;

	(void)state;
	ct->virt = true;
	rep = report(ct, NULL, "self");
	x = row(rep, 0);
	assert_true(num(x, "total_ns") == 1000000 && num(x, "total_err_ns") == 250000);
	assert_true(num(x, "self_ns") == 1000000 && num(x, "self_err_ns") == 250000);
	assert_true(num(x, "avg_err_ns") == 25000);
	/* one call holds at most the largest placement, not the row's sum */
	assert_true(num(x, "max_err_ns") == 90000 && num(x, "min_err_ns") == 90000);
	assert_true(num(x, "stolen_ns") == 0 && num(x, "unplaced_steal_ns") == 250000);
	cJSON_Delete(rep);
	count_ops.free(ct);
}

static void test_total_guards_more_stepped_than_activations(void **state)
{
	/* a file may say 5 stepped activations of 2 (BPF never would): the 2 are taken as
	 * stepped, 1000 - 2 * 10 = 980; the emulated rest, 2 - 5 in 64 bits, must not wrap
	 * around to 2^64 - 3 activations and take everything */
	const struct proc p[] = {
		{ "prog", "odd", false,
		  { .calls = 2, .closed = 2, .outer = 1, .self_ns = 1000, .total_ns = 1000,
		    .total_acts = 2, .total_acts_xol = 5 } },
	};
	struct count *ct = table(p, 1, 100, 10);

	(void)state;
	assert_true(count_total_ns(ct, &ct->fns[0]) == 980);
	count_ops.free(ct);
}

/* ---------------------------------------------------------------------------------------- */
/* The call table */

static void test_table_parent_and_child(void **state)
{
	/*
	 * parent [0, 100) calls child twice, [10, 30) and [40, 70); probes at 2 ns a pair.
	 * child: self 20 + 30 = 50 - 2 * 2 = 46, total the same, avg 46 / 2 = 23, max 30.
	 * parent: self 100 - 50 = 50 - 2 = 48; total 100 less its 3 activations' probes, 94.
	 * Taken off in all: one pair per activation closed, 3 * 2 = 6.
	 */
	const struct proc p[] = {
		{ "libc.so.6", "child", false,
		  { .calls = 2, .closed = 2, .outer = 2, .self_ns = 50, .total_ns = 50,
		    .total_acts = 2, .max_ns = 30 } },
		{ "prog", "parent", false,
		  { .calls = 1, .closed = 1, .outer = 1, .self_ns = 50, .total_ns = 100,
		    .total_acts = 3, .max_ns = 100 } },
	};
	/* by procedure and class: child's 2, parent's 1 (all matching: no pattern) */
	const uint64_t open[2 * COUNT_NCLS] = { [0] = 2, [COUNT_NCLS] = 1 };
	struct count *ct = table(p, 2, 2, 7);
	cJSON *rep = report(ct, open, "self"), *c = cJSON_GetObjectItem(rep, "calls");

	(void)state;
	assert_string_equal(str(c, "mode"), "REAL");
	assert_true(num(c, "probe_cost_ns") == 2);
	assert_true(num(c, "stepped_probe_cost_ns") == 7);
	assert_true(num(c, "subtracted_ns") == 6);
	assert_null(cJSON_GetObjectItem(c, "programs"));
	assert_string_equal(order(rep), "parent child"); /* self 48 > 46 */

	assert_string_equal(str(row(rep, 0), "procedure"), "prog.parent");
	assert_string_equal(str(row(rep, 0), "module"), "prog");
	assert_true(num(row(rep, 0), "calls") == 1);
	assert_true(num(row(rep, 0), "self_ns") == 48);
	assert_true(num(row(rep, 0), "total_ns") == 94);
	assert_true(num(row(rep, 0), "avg_ns") == 94);
	/* its one call, longest and shortest: BPF kept 100 raw here, but no activation is
	 * longer than the total */
	assert_true(num(row(rep, 0), "max_ns") == 94);
	/* the open count follows its procedure to its row */
	assert_true(num(row(rep, 0), "open") == 1);

	assert_string_equal(str(row(rep, 1), "procedure"), "libc.so.6.child");
	assert_true(num(row(rep, 1), "calls") == 2);
	assert_true(num(row(rep, 1), "self_ns") == 46);
	assert_true(num(row(rep, 1), "total_ns") == 46);
	assert_true(num(row(rep, 1), "avg_ns") == 23);
	assert_true(num(row(rep, 1), "max_ns") == 30);
	assert_true(num(row(rep, 1), "open") == 2);
	cJSON_Delete(rep);
	count_ops.free(ct);
}

static void test_table_sorts(void **state)
{
	/* no probe cost; avg is total / outer: a 300, b 1000 / 5 = 200, c 500 / 2 = 250 */
	const struct proc p[] = {
		{ "m", "a", false,
		  { .calls = 1, .closed = 1, .outer = 1, .self_ns = 300, .total_ns = 300 } },
		{ "m", "b", false,
		  { .calls = 5, .closed = 5, .outer = 5, .self_ns = 200, .total_ns = 1000 } },
		{ "m", "c", false,
		  { .calls = 10, .closed = 10, .outer = 2, .self_ns = 100, .total_ns = 500 } },
	};
	struct count *ct = table(p, 3, 0, 0);
	static const char *const sorts[][2] = {
		{ "self", "a b c" }, { "calls", "c b a" }, { "total", "b c a" }, { "avg", "a c b" },
		{ "bogus", "a b c" }, /* (the engine checks the name: anything else is self) */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sorts); i++) {
		cJSON *rep = report(ct, NULL, sorts[i][0]);

		if (strcmp(order(rep), sorts[i][1]))
			fail_msg("--sort %s: %s, expected %s", sorts[i][0], order(rep),
				 sorts[i][1]);
		cJSON_Delete(rep);
	}
	count_ops.free(ct);
}

static void test_table_keeps_ties_in_table_order(void **state)
{
	/* equal self times: the order the procedures were found in, both ways round */
	const struct proc p[] = {
		{ "m", "d", false, { .calls = 1, .closed = 1, .outer = 1, .self_ns = 7, .total_ns = 7 } },
		{ "m", "e", false, { .calls = 2, .closed = 2, .outer = 2, .self_ns = 7, .total_ns = 7 } },
		{ "m", "f", false, { .calls = 3, .closed = 3, .outer = 3, .self_ns = 9, .total_ns = 9 } },
		{ "m", "d", false, { .calls = 1, .closed = 1, .outer = 1, .self_ns = 7, .total_ns = 7 } },
	};
	struct count *ct = table(p, 3, 0, 0), *rev = table(p + 1, 3, 0, 0);
	cJSON *rep = report(ct, NULL, "self"), *rep2 = report(rev, NULL, "self");

	(void)state;
	assert_string_equal(order(rep), "f d e");
	assert_string_equal(order(rep2), "f e d");
	cJSON_Delete(rep);
	cJSON_Delete(rep2);
	count_ops.free(ct);
	count_ops.free(rev);
}

static void test_table_without_calls(void **state)
{
	/* probed, never called: all 0; entered only past the shadow stack's depth (counted,
	 * not timed) or still open: no outermost activation closed, so no average (no 0 / 0),
	 * even with a total from a file that says so */
	const struct proc p[] = {
		{ "m", "never", false, { 0 } },
		{ "m", "deep", false, { .calls = 4, .too_deep = 4, .total_ns = 500 } },
	};
	struct count *ct = table(p, 2, 3, 3);
	cJSON *rep = report(ct, NULL, "avg");

	(void)state;
	assert_int_equal(rows(rep), 2);
	for (int k = 0; k < 2; k++) {
		const cJSON *x = row(rep, k);

		assert_true(num(x, "self_ns") == 0);
		assert_true(num(x, "avg_ns") == 0);
	}
	assert_string_equal(order(rep), "never deep"); /* both 0: table order */
	assert_true(num(row(rep, 1), "too_deep") == 4);
	assert_true(num(row(rep, 1), "total_ns") == 500);
	assert_true(num(cJSON_GetObjectItem(rep, "calls"), "subtracted_ns") == 0);
	cJSON_Delete(rep);
	count_ops.free(ct);
}

static void test_empty_table_says_what_never_matched(void **state)
{
	/* a command's patterns that never named anything, VIRTUAL, with the programs' stats */
	static const char *const pats[] = { "prog.main", "libfoo.so.bar*" };
	static const bool matched[] = { true, false };
	struct counter_prog_stats ps = { .run_cnt = 12, .run_time_ns = 3456 };
	struct count *ct = table(NULL, 0, 9000, 26000);
	cJSON *rep = cJSON_CreateObject(), *c, *um;

	(void)state;
	set_patterns(ct, pats, matched, 2);
	ct->virt = true;
	ct->searched = 3;
	assert_int_equal(count_report_json(ct, (uint64_t[COUNT_NCLS]){ 0 }, &ps, "self", rep), 0);
	c = cJSON_GetObjectItem(rep, "calls");
	assert_string_equal(str(c, "mode"), "VIRTUAL");
	assert_true(num(c, "objects_searched") == 3);
	assert_int_equal(rows(rep), 0);
	assert_true(num(c, "subtracted_ns") == 0);
	um = cJSON_GetObjectItem(c, "unmatched");
	assert_int_equal(cJSON_GetArraySize(um), 1);
	assert_string_equal(cJSON_GetArrayItem(um, 0)->valuestring, "libfoo.so.bar*");
	assert_true(num(cJSON_GetObjectItem(c, "programs"), "runs") == 12);
	assert_true(num(cJSON_GetObjectItem(c, "programs"), "run_time_ns") == 3456);
	cJSON_Delete(rep);
	count_ops.free(ct);
}

/* ---------------------------------------------------------------------------------------- */
/* Cookies and open activations */

static void test_cookie_names_target_and_procedure(void **state)
{
	uint64_t a = count_cookie(7, 3, false), b = count_cookie(7, 3, true);

	(void)state;
	assert_int_equal(PCMON_COUNT_TARGET(a), 7);
	assert_int_equal(PCMON_COUNT_FN(a), 3);
	/* a stepped probe's cookie differs (BPF counts the kinds apart) but names the same */
	assert_true(a != b);
	assert_int_equal(PCMON_COUNT_TARGET(b), 7);
	assert_int_equal(PCMON_COUNT_FN(b), 3);
	assert_true((uint32_t)b & PCMON_COUNT_XOL);
	/* the largest target and index still come back apart */
	b = count_cookie(PCMON_MAX_TARGETS - 1, 99999, true);
	assert_int_equal(PCMON_COUNT_TARGET(b), PCMON_MAX_TARGETS - 1);
	assert_int_equal(PCMON_COUNT_FN(b), 99999);
}

static void test_open_activations_by_procedure(void **state)
{
	/* target 7 has 4 procedures; the BPF iterator hands every thread's open activations of
	 * every target: two of 7's procedure 3 (one stepped), one of its 0; one of target 8's;
	 * one of 7's that names no procedure of the table (ignored, not written past it) */
	uint64_t open[5 * COUNT_NCLS] = { 0 };
	struct count_open oc = { .target = 7, .open = open, .n = 4 };
	const uint64_t seen[] = { count_cookie(7, 0, false), count_cookie(7, 3, true),
				  count_cookie(8, 0, false), count_cookie(7, 3, false),
				  count_cookie(7, 4, false) };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(seen); i++) {
		struct pcmon_ckey k = { .cookie = seen[i], .cls = PCMON_CLS_ALL };

		count_tally_open(&oc, &k);
	}
	assert_int_equal(open[0 * COUNT_NCLS], 1);
	assert_int_equal(open[1 * COUNT_NCLS], 0);
	assert_int_equal(open[2 * COUNT_NCLS], 0);
	assert_int_equal(open[3 * COUNT_NCLS], 2);
	assert_int_equal(open[4 * COUNT_NCLS], 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Options */

static void *new_count(const char *json, cJSON **rep)
{
	cJSON *req = cJSON_Parse(json);
	void *st = NULL;

	assert_non_null(req);
	*rep = NULL;
	if (count_ops.new(NULL, NULL, req, &st, rep))
		st = NULL;
	else
		assert_null(*rep);
	cJSON_Delete(req);
	return st;
}

static void test_options(void **state)
{
	cJSON *rep;
	struct count *ct;

	(void)state;
	ct = new_count("{\"count\": [\"calls.parent\", \"calls.rec*\"], \"mode\": \"virtual\", "
		       "\"max_probes\": 5}", &rep);
	assert_non_null(ct);
	assert_int_equal(ct->npats, 2);
	assert_string_equal(ct->patterns[0], "calls.parent");
	assert_string_equal(ct->patterns[1], "calls.rec*");
	assert_non_null(ct->pats[1]);
	assert_false(ct->matched[0]); /* nothing searched yet */
	assert_true(ct->virt);
	assert_int_equal(ct->max_probes, 5);
	assert_int_equal(ct->nfns, 0);
	count_ops.free(ct);

	/* wall time and 1000 probes unless asked */
	ct = new_count("{\"count\": [\"x.y\"], \"mode\": \"real\"}", &rep);
	assert_non_null(ct);
	assert_false(ct->virt);
	assert_int_equal(ct->max_probes, 1000);
	count_ops.free(ct);
}

static void test_wanted(void **state)
{
	cJSON *a = cJSON_Parse("{\"count\": [\"x.y\"]}"), *b = cJSON_Parse("{\"nodes\": []}");

	(void)state;
	assert_true(count_ops.wanted(a));
	assert_false(count_ops.wanted(b));
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void expect_refused(const char *json, int status, const char *msg)
{
	cJSON *rep;

	assert_null(new_count(json, &rep));
	assert_non_null(rep);
	if (strcmp(str(rep, "error"), msg) || num(rep, "status") != status)
		fail_msg("%s: got %d \"%s\", expected %d \"%s\"", json, (int)num(rep, "status"),
			 str(rep, "error"), status, msg);
	cJSON_Delete(rep);
}

static void test_options_refused(void **state)
{
	(void)state;
	expect_refused("{\"count\": []}", 2, "--count: give a procedure pattern");
	expect_refused("{\"count\": [\"main->foo->\"]}", 2,
		       "--count main->foo->: column 12: expected a name after '->'");
	/* a bad pattern after good ones: what was parsed goes (ASan sees a leak otherwise) */
	expect_refused("{\"count\": [\"a.b\", \"c.d\", \"when ;x\"]}", 2,
		       "--count when ;x: column 7: unexpected text after ';'");
}

/* ---------------------------------------------------------------------------------------- */
/* The state file's "calls" section */

/* @ct saved, through text as in a file, and loaded back: NULL and the reason in @why if
 * refused. @edit may change the section's JSON in between. */
static struct count *round_trip(const struct count *ct, void (*edit)(cJSON *o), char *why,
				size_t whylen)
{
	struct sf_wr w = { 0 };
	struct sf_rd rd = { .format = 3, .section = "calls", .why = why, .whylen = whylen };
	cJSON *o = cJSON_CreateObject(), *back;
	void *out = (void *)1;
	char *text;
	int r;

	count_ops.save(NULL, ct, NULL, &w, o);
	assert_false(w.oom);
	text = cJSON_PrintUnformatted(o);
	assert_non_null(text);
	back = cJSON_Parse(text);
	assert_non_null(back);
	if (edit)
		edit(back);
	why[0] = '\0';
	r = count_ops.load(&rd, back, NULL, &out);
	cJSON_free(text);
	cJSON_Delete(o);
	cJSON_Delete(back);
	if (r) {
		assert_int_equal(r, -EINVAL);
		assert_null(out);
		return NULL;
	}
	assert_string_equal(why, "");
	return out;
}

/* Two procedures with every total set, some past 2^53 (a double cannot hold them). */
static struct count *full_table(void)
{
	static const char *const pats[] = { "prog.work*", "libm.so.6.sin", "prog.none" };
	static const bool matched[] = { true, true, false };
	const struct proc p[] = {
		{ "prog", "work_a", false,
		  { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
		    22, 23, 24, 25, 26, 27, 28 } },
		{ "libm.so.6", "sin", true,
		  { (1ULL << 53) + 1, UINT64_MAX, 1ULL << 60, UINT64_MAX - 1, (1ULL << 53) + 3,
		    12345678901234567ULL, 42, 99, 0, 1, 2, 0, 0, 7, 3, 1ULL << 54, 5, 2, 9, 4,
		    1ULL << 55, 6, 1ULL << 56, 8, 0, 1ULL << 57, 1ULL << 58, 9 } },
	};
	struct count *ct = table(p, 2, 9123.25, 26000.5);

	set_patterns(ct, pats, matched, 3);
	ct->fns[0].vaddr = 0x401136;
	ct->fns[1].vaddr = 0xffffffffff600000ULL; /* above 2^53: rounded as a double */
	ct->fns[1].late = true;
	ct->virt = true;
	ct->searched = 7;
	return ct;
}

/*
 * What BPF's totals gained between reads goes to the slice of each read; a window sums its
 * slices; the maximum is not summed; totals that went down (zeroed) count from 0.
 */
static void test_fold_charges_slices(void **state)
{
	const uint64_t S = 1000000000ull, T0 = 1700000040ull * S;
	struct count_fn fns[1] = { { .module = "m", .name = "f" } };
	struct count ct = { .fns = fns, .nfns = 1 };
	struct pcmon_cstat a = { .calls = 3, .closed = 3, .self_ns = 300, .max_ns = 200 };
	struct pcmon_cstat b = { .calls = 5, .closed = 4, .self_ns = 700, .max_ns = 250 };
	struct pcmon_cstat z = { .calls = 1, .closed = 1, .self_ns = 10, .max_ns = 10 };
	struct timed_window w = { .on = true, .since = T0 + S, .until = T0 + 2 * S };
	struct slices_cfg cfg;
	uint64_t row[COUNT_WIDTH];
	cJSON *rep = cJSON_CreateObject();
	const cJSON *p;

	(void)state;
	assert_int_equal(slices_cfg_parse("1s", &cfg, NULL, 0), 0);
	cfg.budget = 0;
	ct.slices = slices_new(&cfg, COUNT_WIDTH);
	assert_non_null(ct.slices);
	assert_int_equal(count_fold(&ct, 0, &a, T0), 0);
	assert_int_equal(count_fold(&ct, 0, &b, T0 + S), 0);
	assert_int_equal(count_fold(&ct, 0, &b, T0 + S + 1), 0); /* nothing new: no row */
	slices_tick(ct.slices, T0 + 2 * S);
	assert_int_equal(ct.slices->n, 2);
	count_row(&(struct pcmon_cstat){ .calls = 2, .closed = 1, .self_ns = 400 }, row);
	assert_memory_equal(slice_row(ct.slices, &ct.slices->s[1], 0) + 1, row, sizeof(row));
	assert_int_equal(fns[0].stat.max_ns, 250);
	/* the window of the second slice: its calls, no maximum */
	assert_int_equal(count_window_json(&ct, &w, "self", rep), 0);
	p = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"), "procedures"), 0);
	assert_int_equal(cJSON_GetObjectItem(p, "calls")->valuedouble, 2);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(p, "max_ns")));
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"), "window"), "slices")->valuedouble, 1);
	/* zeroed in BPF since the last read: counts from 0 */
	assert_int_equal(count_fold(&ct, 0, &z, T0 + 3 * S), 0);
	assert_int_equal(slice_row(ct.slices, &ct.slices->s[2], 0)[1], 1);
	cJSON_Delete(rep);
	slices_free(ct.slices);
}

static void test_state_round_trip(void **state)
{
	struct count *ct = full_table(), *back;
	char why[256];

	(void)state;
	back = round_trip(ct, NULL, why, sizeof(why));
	if (!back)
		fail_msg("refused: %s", why);
	assert_true(back->detached); /* a loaded table is final */
	assert_true(back->virt);
	assert_true(back->cost_ns == 9123.25);
	assert_true(back->cost_xol_ns == 26000.5);
	assert_int_equal(back->searched, 7);
	assert_int_equal(back->npats, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(back->patterns[i], ct->patterns[i]);
		assert_int_equal(back->matched[i], ct->matched[i]);
	}
	assert_int_equal(back->nfns, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct count_fn *a = &ct->fns[i], *b = &back->fns[i];

		assert_string_equal(b->module, a->module);
		assert_string_equal(b->name, a->name);
		assert_int_equal(b->vaddr, a->vaddr);
		assert_int_equal(b->late, a->late);
		assert_int_equal(b->xol, a->xol);
		assert_memory_equal(&b->stat, &a->stat, sizeof(a->stat));
		assert_null(b->entry); /* no probes come back */
	}
	/* and the table it makes is the one it made */
	{
		cJSON *r1 = report(ct, NULL, "total"), *r2 = report(back, NULL, "total");
		char *t1 = cJSON_PrintUnformatted(r1), *t2 = cJSON_PrintUnformatted(r2);

		assert_string_equal(t1, t2);
		cJSON_free(t1);
		cJSON_free(t2);
		cJSON_Delete(r1);
		cJSON_Delete(r2);
	}
	count_ops.free(back);
	count_ops.free(ct);
}

static void test_state_round_trip_empty(void **state)
{
	/* a command that exited before its pattern named anything */
	static const char *const pats[] = { "prog.never" };
	static const bool matched[] = { false };
	struct count *ct = table(NULL, 0, 0, 0), *back;
	char why[256];

	(void)state;
	set_patterns(ct, pats, matched, 1);
	back = round_trip(ct, NULL, why, sizeof(why));
	if (!back)
		fail_msg("refused: %s", why);
	assert_int_equal(back->nfns, 0);
	assert_int_equal(back->npats, 1);
	assert_false(back->matched[0]);
	assert_false(back->virt);
	count_ops.free(back);
	count_ops.free(ct);
}

static cJSON *proc_of(cJSON *o, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(o, "procedures"), i);
}

static void negative_calls(cJSON *o)
{
	cJSON_ReplaceItemInObject(proc_of(o, 1), "calls", cJSON_CreateNumber(-1));
}

static void no_total(cJSON *o)
{
	cJSON_DeleteItemFromObject(proc_of(o, 0), "total_ns");
}

static void bad_pattern(cJSON *o)
{
	cJSON_ReplaceItemInArray(cJSON_GetObjectItem(o, "patterns"), 1,
				 cJSON_CreateString("main->foo->"));
}

static void not_an_object(cJSON *o)
{
	cJSON_ReplaceItemInArray(cJSON_GetObjectItem(o, "procedures"), 1, cJSON_CreateNumber(3));
}

static void bad_address(cJSON *o)
{
	cJSON_ReplaceItemInObject(proc_of(o, 0), "a", cJSON_CreateString("main"));
}

static void huge_cost(cJSON *o)
{
	cJSON_ReplaceItemInObject(o, "probe_cost_ns", cJSON_CreateNumber(2e9));
}

static void no_virtual(cJSON *o)
{
	cJSON_DeleteItemFromObject(o, "virtual");
}

static void no_searched(cJSON *o)
{
	cJSON_DeleteItemFromObject(o, "objects_searched");
}

static void test_state_refused_naming_the_field(void **state)
{
	static const struct {
		void (*edit)(cJSON *o);
		const char *why;
	} cases[] = {
		{ negative_calls, "calls.procedures[1].calls: -1 is negative" },
		{ no_total, "calls.procedures[0].total_ns: missing" },
		{ bad_pattern, "calls.patterns: not a procedure pattern" },
		{ not_an_object, "calls.procedures[1]: a number where an object belongs" },
		{ bad_address, "calls.procedures[0].a: \"main\" does not start with 0x" },
		{ huge_cost, "calls.probe_cost_ns: 2e+09 is not in [0, 1e+09]" },
		{ no_virtual, "calls.virtual: missing" },
		{ no_searched, "calls.objects_searched: missing" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct count *ct = full_table(), *back;
		char why[256];

		back = round_trip(ct, cases[i].edit, why, sizeof(why));
		if (back)
			fail_msg("case %zu loaded; expected \"%s\"", i, cases[i].why);
		if (strcmp(why, cases[i].why))
			fail_msg("case %zu: \"%s\", expected \"%s\"", i, why, cases[i].why);
		count_ops.free(ct);
	}
}

/* ---------------------------------------------------------------------------------------- */
/* WHEN (docs/when.md, "At probes") */

static void test_when_methods(void **state)
{
	cJSON *rep;
	struct count *ct;

	(void)state;
	/* names joined through '*': the shadow stack, each name a context pattern */
	ct = new_count("{\"count\": [\"libc.malloc\"], \"when\": \"prog.parse->*|prog.main->*->prog.x\"}",
		       &rep);
	assert_non_null(ct);
	assert_int_equal(ct->when_mode, PCMON_CW_SHADOW);
	assert_int_equal(ct->nctx, 3);
	assert_int_equal(ct->wpat.nthreads, 2);
	assert_string_equal(ct->when_text, "prog.parse->*|prog.main->*->prog.x");
	count_ops.free(ct);
	/* a direct call, a ':': the stack walked, and why */
	ct = new_count("{\"count\": [\"libc.malloc\"], \"when\": \"prog.parse->libc.malloc\"}", &rep);
	assert_int_equal(ct->when_mode, PCMON_CW_WALK);
	assert_int_equal(ct->nctx, 0);
	assert_string_equal(ct->when_why, "'prog.parse->libc.malloc' names a direct call");
	count_ops.free(ct);
	ct = new_count("{\"count\": [\"libc.malloc\"], \"when\": \":prog.parse->*\"}", &rep);
	assert_int_equal(ct->when_mode, PCMON_CW_WALK);
	count_ops.free(ct);
	/* a bad pattern: one line, by column */
	ct = new_count("{\"count\": [\"libc.malloc\"], \"when\": \"a->\"}", &rep);
	assert_null(ct);
	assert_string_equal(proto_str(rep, "error", ""), "--when: column 4: expected a name after '->'");
	cJSON_Delete(rep);
}

/* Classes of BPF's keys: a stack id is looked up (here: nothing to read it with, so it
 * cannot be told, and is not remembered as such). */
static void test_when_classes(void **state)
{
	struct count ct = { 0 };
	struct pcmon_ckey k = { .cookie = count_cookie(3, 1, false) };

	(void)state;
	k.cls = PCMON_CLS_ALL;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_MATCH);
	k.cls = PCMON_CLS_MATCH;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_MATCH);
	k.cls = PCMON_CLS_NOMATCH;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_OTHER);
	k.cls = PCMON_CLS_UNKNOWN;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_UNKNOWN);
	k.cls = PCMON_CLS_NOSTACK;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_UNKNOWN);
	k.cls = 17;
	assert_int_equal(count_class_of(&ct, NULL, NULL, &k), COUNT_UNKNOWN);
	assert_int_equal(itab_count(ct.stacks), 0);
	itab_free(ct.stacks);
}

/*
 * Context procedures (probed for the pattern alone) are transparent: their time is their
 * caller's self time, less their probes, whose cost is taken off it as its own are.
 * parent [0, 100) calls ctx [10, 60) which calls child [20, 40): BPF charges parent self
 * 100 - 20 = 80, of which one context activation's probes; child self 20.
 */
static void test_when_context_cost(void **state)
{
	const struct proc p[] = {
		{ "prog", "parent", false,
		  { .calls = 1, .closed = 1, .outer = 1, .self_ns = 80, .total_ns = 100,
		    .total_acts = 3, .total_acts_xol = 1, .max_ns = 100, .self_ctx = 1 } },
		{ "prog", "child", true,
		  { .calls = 1, .closed = 1, .outer = 1, .self_ns = 20, .total_ns = 20,
		    .total_acts = 1, .total_acts_xol = 1, .max_ns = 20 } },
	};
	struct count *ct = table(p, 2, 5, 7);

	(void)state;
	/* its own probes (5) and the context activation's (5) */
	assert_true(count_self_ns(ct, &ct->fns[0]) == 70);
	/* the child's stepped probes (7); the parent's total: 2 x 5 + 7 */
	assert_true(count_self_ns(ct, &ct->fns[1]) == 13);
	assert_true(count_total_ns(ct, &ct->fns[0]) == 83);
	ct->fns[0].stat.self_ctx_xol = 1; /* a stepped one instead */
	assert_true(count_self_ns(ct, &ct->fns[0]) == 68);
	count_ops.free(ct);
}

/* The table with a pattern: each procedure's matching calls, the others apart, the context
 * procedures left out; and the state file keeps it all. */
static void test_when_table_and_state(void **state)
{
	const struct proc p[] = {
		{ "libc.so.6", "malloc", false,
		  { .calls = 30, .closed = 30, .outer = 30, .self_ns = 3000, .total_ns = 3000,
		    .total_acts = 30, .max_ns = 200 } },
		{ "prog", "parse", false, { .calls = 4, .closed = 4, .outer = 4 } },
	};
	static const char *const pats[] = { "libc.malloc" };
	static const bool matched[] = { true };
	struct count *ct = table(p, 2, 10, 20), *back;
	uint64_t open[2 * COUNT_NCLS] = { [COUNT_OTHER] = 2 };
	cJSON *rep, *none = NULL, *row;
	char why[256];

	(void)state;
	set_patterns(ct, pats, matched, 1);
	assert_int_equal(count_set_when(ct, "prog.parse->*", &none), 0);
	ct->fns[1].ctx = true;
	ct->fns[0].by[COUNT_OTHER] = (struct pcmon_cstat){ .calls = 70, .closed = 68, .outer = 68,
							    .self_ns = 7000, .total_ns = 7000,
							    .total_acts = 68, .max_ns = 300 };
	ct->fns[0].by[COUNT_UNKNOWN].calls = 1;
	ct->unknown.not_kept = 1;
	rep = cJSON_CreateObject();
	assert_int_equal(count_report_json(ct, open, NULL, "self", rep), 0);
	row = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"), "procedures"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"),
								"procedures")), 1);
	assert_true(num(row, "calls") == 30);
	assert_true(num(cJSON_GetObjectItem(row, "not_matching"), "calls") == 70);
	assert_true(num(cJSON_GetObjectItem(row, "not_matching"), "open") == 2);
	assert_true(num(cJSON_GetObjectItem(row, "not_matching"), "self_ns") == 7000 - 68 * 10);
	assert_true(num(cJSON_GetObjectItem(row, "unknown"), "calls") == 1);
	assert_string_equal(str(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"), "when"), "method"),
			    "shadow stack");
	cJSON_Delete(rep);
	back = round_trip(ct, NULL, why, sizeof(why));
	if (!back)
		fail_msg("refused: %s", why);
	assert_string_equal(back->when_text, "prog.parse->*");
	assert_int_equal(back->when_mode, PCMON_CW_SHADOW);
	assert_true(back->fns[1].ctx);
	assert_memory_equal(back->fns[0].by, ct->fns[0].by, sizeof(ct->fns[0].by));
	assert_int_equal(back->unknown.not_kept, 1);
	count_ops.free(back);
	count_ops.free(ct);
}

/* With a ':', the matching calls by the frame charged: most calls first, kept in the file. */
static void test_when_charges(void **state)
{
	const struct proc p[] = {
		{ "libc.so.6", "malloc", false,
		  { .calls = 10, .closed = 10, .outer = 10, .self_ns = 1000, .total_ns = 1000,
		    .total_acts = 10, .max_ns = 200 } },
	};
	static const char *const pats[] = { "libc.malloc" };
	static const bool matched[] = { true };
	struct count *ct = table(p, 1, 10, 20), *back;
	uint64_t open[COUNT_NCLS] = { 0 };
	cJSON *rep, *none = NULL, *arr;
	char why[256];

	(void)state;
	set_patterns(ct, pats, matched, 1);
	assert_int_equal(count_set_when(ct, ":libc.malloc", &none), 0);
	assert_int_equal(ct->when_mode, PCMON_CW_WALK);
	count_charge(ct, 0, "prog.a")->s = (struct pcmon_cstat){ .calls = 3, .closed = 3 };
	count_charge(ct, 0, "prog.b")->s = (struct pcmon_cstat){ .calls = 7, .closed = 7 };
	assert_ptr_equal(count_charge(ct, 0, "prog.a"), &ct->charges[0]); /* found again */
	rep = cJSON_CreateObject();
	assert_int_equal(count_report_json(ct, open, NULL, "self", rep), 0);
	arr = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "calls"),
									 "procedures"), 0),
				  "charged_to");
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	assert_string_equal(str(cJSON_GetArrayItem(arr, 0), "procedure"), "prog.b");
	assert_true(num(cJSON_GetArrayItem(arr, 0), "calls") == 7);
	assert_string_equal(str(cJSON_GetArrayItem(arr, 1), "procedure"), "prog.a");
	cJSON_Delete(rep);
	back = round_trip(ct, NULL, why, sizeof(why));
	if (!back)
		fail_msg("refused: %s", why);
	assert_int_equal(back->ncharges, 2);
	assert_string_equal(back->charges[1].to, "prog.b");
	assert_true(back->charges[1].s.calls == 7);
	count_ops.free(back);
	count_ops.free(ct);
}


/* ---------------------------------------------------------------------------------------- */
/* Every report keeps to the invariants */

static uint64_t rnd_next(uint64_t *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* Is @key of @x listed as below resolution? */
static bool listed_below(const cJSON *x, const char *key)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(x, "below_resolution"))
		if (cJSON_IsString(it) && !strcmp(it->valuestring, key))
			return true;
	return false;
}

static void test_every_report_keeps_to_the_invariants(void **state)
{
	static const char *const times[] = { "self_ns", "total_ns", "avg_ns", "min_ns", "max_ns" };
	uint64_t r = 0x9e3779b97f4a7c15ull;

	(void)state;
	/* random totals, consistent or not (a file may say anything), random probe costs */
	for (int run = 0; run < 2000; run++) {
		struct proc p[3] = { { "m", "a", false, { 0 } }, { "m", "b", true, { 0 } },
				     { "m", "c", false, { 0 } } };
		struct count *ct;
		cJSON *rep;

		for (int i = 0; i < 3; i++) {
			struct pcmon_cstat *s = &p[i].s;

			s->closed = rnd_next(&r) % 1000;
			s->calls = s->closed + rnd_next(&r) % 3;
			s->outer = s->closed ? 1 + rnd_next(&r) % s->closed : 0;
			s->self_ns = rnd_next(&r) % 10000000;
			s->total_ns = rnd_next(&r) % 10000000;
			s->total_acts = rnd_next(&r) % 5000;
			s->total_acts_xol = rnd_next(&r) % 5000;
			s->kids = rnd_next(&r) % 3000;
			s->kids_xol = rnd_next(&r) % 3000;
			s->self_ctx = rnd_next(&r) % 4;
			s->max_ns = rnd_next(&r) % 20000000;
			s->min_ns = rnd_next(&r) % 20000000;
			s->max_acts = rnd_next(&r) % 100;
			s->min_acts = rnd_next(&r) % 100;
			/* time preempted at the probes: any, even more than the time */
			s->self_pre_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
			s->total_pre_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
			/* and stolen by the hypervisor (REAL) */
			s->self_steal_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
			s->total_steal_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
			s->max_steal_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
			s->min_steal_ns = rnd_next(&r) % 2 ? rnd_next(&r) % 12000000 : 0;
		}
		ct = table(p, 3, (double)(rnd_next(&r) % 3000), (double)(rnd_next(&r) % 40000));
		for (int k = 0; k < 2; k++) {
			double pair = k ? ct->cost_xol_ns : ct->cost_ns;

			ct->in_ns[k] = pair * (double)(rnd_next(&r) % 100) / 200;
			ct->split_err_ns[k] = ct->in_ns[k];
			ct->spread_ns[k] = pair * (double)(rnd_next(&r) % 100) / 300;
		}
		rep = report(ct, NULL, "self");
		for (int i = 0; i < 3; i++) {
			const cJSON *x = row(rep, i);
			double self = num(x, "self_ns"), total = num(x, "total_ns");
			double avg = num(x, "avg_ns");

			for (size_t t = 0; t < ARRAY_SIZE(times); t++) {
				char err[32];
				double v;

				if (cJSON_IsNull(cJSON_GetObjectItem(x, times[t])))
					continue; /* no activation closed: no extremes */
				v = num(x, times[t]);
				snprintf(err, sizeof(err), "%.*s_err_ns", (int)strlen(times[t]) - 3,
					 times[t]);
				if (v < 0 || num(x, err) < 0)
					fail_msg("run %d row %d: %s %g, error %g", run, i, times[t], v,
						 num(x, err));
				/* a time below its error says so */
				assert_true((v < num(x, err)) == listed_below(x, times[t]));
			}
			if (self > total)
				fail_msg("run %d row %d: self %g > total %g", run, i, self, total);
			if (!cJSON_IsNull(cJSON_GetObjectItem(x, "max_ns"))) {
				double min = num(x, "min_ns"), max = num(x, "max_ns");

				if (!(min <= avg && avg <= max && max <= total))
					fail_msg("run %d row %d: min %g avg %g max %g total %g", run,
						 i, min, avg, max, total);
			}
			/* the probes' whole cost beyond the time left: said so */
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(x, "swamped")) ==
				    (num(x, "probes_ns") > total &&
				     !cJSON_IsNull(cJSON_GetObjectItem(x, "max_ns"))));
		}
		cJSON_Delete(rep);
		count_ops.free(ct);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_takes_one_probe_pair_per_activation),
		cmocka_unit_test(test_fold_charges_slices),
		cmocka_unit_test(test_self_counts_closed_activations_not_calls),
		cmocka_unit_test(test_times_never_below_zero),
		cmocka_unit_test(test_recursion_counts_self_plus_children_once),
		cmocka_unit_test(test_total_takes_each_kind_at_its_cost),
		cmocka_unit_test(test_stolen_time_is_in_the_error),
		cmocka_unit_test(test_unplaced_steal_is_in_every_error),
		cmocka_unit_test(test_total_guards_more_stepped_than_activations),
		cmocka_unit_test(test_table_parent_and_child),
		cmocka_unit_test(test_every_report_keeps_to_the_invariants),
		cmocka_unit_test(test_table_sorts),
		cmocka_unit_test(test_table_keeps_ties_in_table_order),
		cmocka_unit_test(test_table_without_calls),
		cmocka_unit_test(test_empty_table_says_what_never_matched),
		cmocka_unit_test(test_cookie_names_target_and_procedure),
		cmocka_unit_test(test_open_activations_by_procedure),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_options_refused),
		cmocka_unit_test(test_state_round_trip),
		cmocka_unit_test(test_state_round_trip_empty),
		cmocka_unit_test(test_state_refused_naming_the_field),
		cmocka_unit_test(test_when_methods),
		cmocka_unit_test(test_when_classes),
		cmocka_unit_test(test_when_context_cost),
		cmocka_unit_test(test_when_table_and_state),
		cmocka_unit_test(test_when_charges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
