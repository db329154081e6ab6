// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/flame.c's tree as JSON (flame_tree_json()), what a page draws
 * a flame graph from: widths that add up, pruning that keeps every sample in the totals, the
 * inverted tree (callers), and two profiles merged as the differential graph merges them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "export.h"

/*
 * main -> work -> leaf (6), main -> work (2), main -> other (1), and 40 samples of one each
 * under main -> tiny<k>: narrow frames to prune.
 */
static char *profile_json(int ntiny, int scale)
{
	size_t cap = 1 << 16, len = 0;
	char *s = malloc(cap);

#define PUT(...) (len += (size_t)snprintf(s + len, cap - len, __VA_ARGS__))
	PUT("{\"target\": {\"name\": \"t\", \"mode\": \"VIRTUAL\", \"elapsed_s\": 1},"
	    " \"summary\": {\"counted\": %d}, \"profile\": {\"period_ns\": 1000000,"
	    " \"start_wall\": 1700000000, \"objects\": [{\"name\": \"p\", \"path\": \"/p\","
	    " \"build_id\": \"\"}], \"functions\": [{\"name\": \"main\", \"module\": \"p\"},"
	    " {\"name\": \"work\", \"module\": \"p\"}, {\"name\": \"leaf\", \"module\": \"p\"},"
	    " {\"name\": \"other\", \"module\": \"p\"}", 9 * scale + ntiny);
	for (int k = 0; k < ntiny; k++)
		PUT(", {\"name\": \"tiny%d\", \"module\": \"p\"}", k);
	PUT("], \"locations\": [{\"object\": 0, \"address\": \"10\", \"lines\": [[0, 1]]},"
	    " {\"object\": 0, \"address\": \"20\", \"lines\": [[1, 1]]},"
	    " {\"object\": 0, \"address\": \"30\", \"lines\": [[2, 1]]},"
	    " {\"object\": 0, \"address\": \"40\", \"lines\": [[3, 1]]}");
	for (int k = 0; k < ntiny; k++)
		PUT(", {\"object\": 0, \"address\": \"%x\", \"lines\": [[%d, 1]]}", 0x100 + k, 4 + k);
	PUT("], \"samples\": [");
	PUT("{\"count\": %d, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\","
	    " \"pid\": 1, \"tid\": 1, \"thread\": \"t\", \"locations\": [2, 1, 0]},", 6 * scale);
	PUT("{\"count\": %d, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\","
	    " \"pid\": 1, \"tid\": 1, \"thread\": \"t\", \"locations\": [1, 0]},", 2 * scale);
	PUT("{\"count\": %d, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\","
	    " \"pid\": 1, \"tid\": 1, \"thread\": \"t\", \"locations\": [3, 0]}", scale);
	for (int k = 0; k < ntiny; k++)
		PUT(", {\"count\": 1, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\","
		    " \"pid\": 1, \"tid\": 1, \"thread\": \"t\", \"locations\": [%d, 0]}", 4 + k);
	PUT("]}}");
#undef PUT
	assert_true(len < cap);
	return s;
}

struct fx {
	cJSON *rep[2];
	struct xprof p[2];
};

static void load(struct fx *f, int k, int ntiny, int scale)
{
	char *s = profile_json(ntiny, scale), err[128];

	f->rep[k] = cJSON_Parse(s);
	free(s);
	assert_non_null(f->rep[k]);
	assert_int_equal(xprof_load(&f->p[k], f->rep[k], err, sizeof(err)), 0);
}

static void unload(struct fx *f)
{
	for (int k = 0; k < 2; k++)
		if (f->rep[k]) {
			xprof_free(&f->p[k]);
			cJSON_Delete(f->rep[k]);
		}
}

static const cJSON *kid(const cJSON *n, const char *name)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(n, "c"))
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "n")), name))
			return c;
	return NULL;
}

static double v(const cJSON *n)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(n, "v"));
}

/* Every node's callees are no wider than it; @n nodes in all. */
static void widths_hold(const cJSON *n, size_t *count)
{
	const cJSON *c;
	double sum = 0;

	(*count)++;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(n, "c")) {
		sum += v(c);
		widths_hold(c, count);
	}
	assert_true(sum <= v(n));
}

static void test_tree_widths(void **state)
{
	struct fx f = { 0 };
	const cJSON *root, *main_, *work;
	cJSON *o;
	size_t n = 0;

	(void)state;
	load(&f, 0, 0, 1);
	assert_int_equal(flame_tree_json(&f.p[0], NULL, false, 0, &o), 0);
	root = cJSON_GetObjectItem(o, "root");
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "total")), 9);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "pruned")), 0);
	main_ = kid(root, "main");
	work = kid(main_, "work");
	assert_int_equal(v(main_), 9);
	assert_int_equal(v(work), 8);
	assert_int_equal(v(kid(work, "leaf")), 6);
	assert_int_equal(v(kid(main_, "other")), 1);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(work, "t")), "u");
	widths_hold(root, &n);
	assert_int_equal(n, 5); /* all, main, work, leaf, other */
	cJSON_Delete(o);
	unload(&f);
}

static void test_pruning_keeps_the_totals(void **state)
{
	struct fx f = { 0 };
	const cJSON *root;
	cJSON *o;
	size_t n = 0;

	(void)state;
	load(&f, 0, 40, 100);
	assert_int_equal(flame_tree_json(&f.p[0], NULL, false, 10, &o), 0);
	root = cJSON_GetObjectItem(o, "root");
	widths_hold(root, &n);
	assert_true(n <= 10);
	/* the 40 narrow callees of main are left out, their samples still main's */
	assert_int_equal(v(kid(root, "main")), 940);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "pruned")), 40);
	assert_non_null(kid(kid(kid(root, "main"), "work"), "leaf"));
	assert_null(kid(kid(root, "main"), "tiny0"));
	cJSON_Delete(o);
	unload(&f);
}

static void test_inverted_roots_are_leaves(void **state)
{
	struct fx f = { 0 };
	const cJSON *root, *work;
	cJSON *o;

	(void)state;
	load(&f, 0, 0, 1);
	assert_int_equal(flame_tree_json(&f.p[0], NULL, true, 0, &o), 0);
	root = cJSON_GetObjectItem(o, "root");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "inverted")));
	/* the innermost frames are the roots, each as wide as its shallow samples */
	assert_int_equal(v(kid(root, "leaf")), 6);
	work = kid(root, "work");
	assert_int_equal(v(work), 2);
	assert_int_equal(v(kid(work, "main")), 2);
	assert_int_equal(v(kid(kid(root, "leaf"), "work")), 6);
	assert_null(kid(root, "main"));
	cJSON_Delete(o);
	unload(&f);
}

static void test_two_profiles_merged(void **state)
{
	struct fx f = { 0 };
	const cJSON *root, *leaf;
	cJSON *o;

	(void)state;
	load(&f, 0, 0, 1);	/* A: 9 samples */
	load(&f, 1, 0, 2);	/* B: the same shares, 18 samples */
	assert_int_equal(flame_tree_json(&f.p[0], &f.p[1], false, 0, &o), 0);
	root = cJSON_GetObjectItem(o, "root");
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "total_a")), 9);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "total_b")), 18);
	leaf = kid(kid(kid(root, "main"), "work"), "leaf");
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(leaf, "a")), 6);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(leaf, "b")), 12);
	/* its width a TB + b TA over the total 2 TA TB: the mean of its shares, 6/9 */
	assert_int_equal(v(leaf), 6 * 18 + 12 * 9);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "total")), 2 * 9 * 18);
	cJSON_Delete(o);
	unload(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_widths),
		cmocka_unit_test(test_pruning_keeps_the_totals),
		cmocka_unit_test(test_inverted_roots_are_leaves),
		cmocka_unit_test(test_two_profiles_merged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
