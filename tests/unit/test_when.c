// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for WHEN at probes (daemon/pattern/when.c, docs/when.md "At probes") and the
 * shadow-stack matcher BPF runs (include/pcmon_when.h, compiled here as it is for
 * bpf/count.bpf.c and bpf/legs.bpf.c): no BPF.
 *
 * What is checked: the shadow stack's answer is pat_match()'s on the whole stack, for every
 * pattern and stack of a small alphabet tried at random (frames the pattern does not name
 * left off the shadow stack, as they are when not probed); which patterns the shadow stack
 * can answer, and the reasons given for those it cannot; the request's pattern and its
 * one-line errors, by column and, from a file, by line.
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

#include "listreq.h"
#include "proto.h"
#include "util.h"
#include "when.h"

/* The procedures of the random stacks: p.a ... p.e are named by patterns, p.x never. */
static const char *const procs[] = { "a", "b", "c", "d", "e", "x" };
#define NPROCS ARRAY_SIZE(procs)

static struct pat *parse(const char *text)
{
	struct pat_error pe = { 0 };
	struct pat *p = NULL;

	if (pat_parse(text, 0, &p, &pe))
		fail_msg("%s: column %d: %s", text, pe.column, pe.msg);
	return p;
}

/* The shadow stack's answer on @stack (outermost first, @n frames, indices into procs). */
static bool shadow_match(const struct pat *p, const struct pcmon_wpat *w, const int *stack,
			 size_t n)
{
	struct pcmon_wadv adv[NPROCS];
	uint32_t s = 0;

	for (size_t i = 0; i < NPROCS; i++) {
		struct pat_frame f = { .module = "p", .proc = procs[i] };

		when_adv(p, w, &f, &adv[i]);
	}
	/* the open activations: the frames a probe would see (those the pattern names) */
	for (size_t i = 0; i + 1 < n; i++) {
		bool named = false;

		for (int t = 0; t < PCMON_WHEN_THREADS; t++)
			named |= adv[stack[i]].adv[t] != 0;
		if (named)
			s = pcmon_when_step(w, s, &adv[stack[i]]);
	}
	return pcmon_when_test(w, s, &adv[stack[n - 1]]);
}

static bool full_match(const struct pat *p, const int *stack, size_t n)
{
	struct pat_frame f[16];

	for (size_t i = 0; i < n; i++)
		f[i] = (struct pat_frame){ .module = "p", .proc = procs[stack[i]] };
	return pat_match(p, f, n) != PAT_NOMATCH;
}

/* A random pattern the shadow stack takes: 1-3 threads of 1-4 names of p.a ... p.e, joined
 * through '*', some ending in '*'. */
static void random_pattern(char *buf, size_t len, unsigned *seed)
{
	int nt = 1 + rand_r(seed) % 3;
	size_t o = 0;

	for (int t = 0; t < nt; t++) {
		int nn = 1 + rand_r(seed) % 4;

		o += snprintf(buf + o, len - o, "%s", t ? " | " : "");
		for (int k = 0; k < nn; k++)
			o += snprintf(buf + o, len - o, "%sp.%s", k ? "->*->" : "",
				      procs[rand_r(seed) % (NPROCS - 1)]);
		if (rand_r(seed) % 2)
			o += snprintf(buf + o, len - o, "->*");
	}
}

static void test_shadow_stack_is_pat_match(void **state)
{
	unsigned seed = 34;

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct pcmon_wpat w;
		char text[256], why[200];
		struct pat *p;

		random_pattern(text, sizeof(text), &seed);
		p = parse(text);
		assert_int_equal(when_plan(p, false, &w, why, sizeof(why)), 0);
		for (int k = 0; k < 50; k++) {
			int stack[12];
			size_t n = 1 + rand_r(&seed) % ARRAY_SIZE(stack);

			for (size_t i = 0; i < n; i++)
				stack[i] = rand_r(&seed) % NPROCS;
			if (shadow_match(p, &w, stack, n) != full_match(p, stack, n)) {
				char s[128] = "";

				for (size_t i = 0; i < n; i++)
					snprintf(s + strlen(s), sizeof(s) - strlen(s), " %s",
						 procs[stack[i]]);
				fail_msg("%s on%s: shadow stack %d, pat_match %d", text, s,
					 shadow_match(p, &w, stack, n), full_match(p, stack, n));
			}
		}
		pat_free(p);
	}
}

/* A state holds 4 bits a thread: a thread of 15 names, all present, fits. */
static void test_long_threads_and_recursion(void **state)
{
	char text[512] = "";
	int stack[16];
	struct pcmon_wpat w;
	char why[200];
	struct pat *p;

	(void)state;
	for (int i = 0; i < 15; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%sp.%s",
			 i ? "->*->" : "", procs[i % 5]);
	p = parse(text);
	assert_int_equal(when_plan(p, false, &w, why, sizeof(why)), 0);
	assert_int_equal(w.nnames[0], 15);
	assert_true(w.anchored[0]);
	for (int i = 0; i < 15; i++)
		stack[i] = i % 5;
	assert_true(shadow_match(p, &w, stack, 15));
	assert_false(shadow_match(p, &w, stack, 14));
	pat_free(p);
	/* recursion: a->*->a needs two activations of a */
	p = parse("p.a->*->p.a->*");
	assert_int_equal(when_plan(p, false, &w, why, sizeof(why)), 0);
	assert_false(shadow_match(p, &w, (int[]){ 0, 1 }, 2));
	assert_true(shadow_match(p, &w, (int[]){ 0, 1, 0 }, 3));
	assert_true(shadow_match(p, &w, (int[]){ 0, 0 }, 2));
	pat_free(p);
}

static void check_refused(const char *text, bool colon_ok, const char *why_want)
{
	struct pat *p = parse(text);
	struct pcmon_wpat w;
	char why[200] = "";

	assert_int_equal(when_plan(p, colon_ok, &w, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, why_want);
	pat_free(p);
}

static void test_what_the_shadow_stack_cannot_answer(void **state)
{
	struct pcmon_wpat w;
	char why[200];
	struct pat *p;

	(void)state;
	check_refused("p.a->p.b", false, "'p.a->p.b' names a direct call");
	check_refused("p.a->*|(p.b->p.c->*)", false, "'p.b->p.c->*' names a direct call");
	check_refused(":p.a->*", false, "':' charges a frame the shadow stack may not hold");
	check_refused("(a|b)->*->(c|d)->*->(e|a)->*->(b|c)", false, "more than 8 call threads");
	check_refused(
		"a->*->b->*->c->*->d->*->e->*->a->*->b->*->c->*->d->*->e->*->a->*->b->*->c->*->d->*->e->*->a",
		false, "a call thread of more than 15 names");
	/* nodes take a ':' (a hit is not charged to a frame): whether the stack matches is all */
	p = parse(":p.a->*");
	assert_int_equal(when_plan(p, true, &w, why, sizeof(why)), 0);
	assert_int_equal(w.nthreads, 1);
	assert_false(w.anchored[0]);
	pat_free(p);
	/* '*' alone matches every stack */
	p = parse("*");
	assert_int_equal(when_plan(p, false, &w, why, sizeof(why)), 0);
	assert_true(shadow_match(p, &w, (int[]){ 5 }, 1));
	pat_free(p);
}

/* when_compile() of a list request's pattern, read as the engine reads it (listreq.h). */
static int compile_req(const char *json, bool icase, struct pat **p, cJSON **err)
{
	cJSON *req = cJSON_Parse(json);
	struct list_req lr;
	int r;

	assert_non_null(req);
	assert_int_equal(list_req_parse(req, &lr), 0);
	r = when_compile(lr.when, lr.when_from_file, icase, p, err);
	list_req_free(&lr);
	cJSON_Delete(req);
	return r;
}

static void test_request_pattern_errors(void **state)
{
	cJSON *err = NULL;
	struct pat *p = NULL;

	(void)state;
	assert_int_equal(compile_req("{\"when\": \"a->\"}", false, &p, &err), -EINVAL);
	assert_null(p);
	assert_string_equal(proto_str(err, "error", ""),
			    "--when: column 4: expected a name after '->'");
	cJSON_Delete(err);
	err = NULL;
	assert_int_equal(compile_req("{\"when\": \"a\\n->;\", \"when_from_file\": true}", false,
				     &p, &err), -EINVAL);
	assert_string_equal(proto_str(err, "error", ""),
			    "--when-file: line 2, column 3: expected a name after '->'");
	cJSON_Delete(err);
	/* none: no pattern, no error; -i: names ignore case */
	assert_int_equal(compile_req("{}", false, &p, &err), 0);
	assert_null(p);
	assert_int_equal(compile_req("{\"when\": \"P.A\"}", true, &p, &err), 0);
	assert_true(pat_name_match(p, 0, &(struct pat_frame){ .module = "p", .proc = "a" }));
	pat_free(p);
}

/* A list request read once: what it does not say is unset (the target's) or the default. */
static void test_list_request_read_once(void **state)
{
	cJSON *req = cJSON_Parse("{\"cmd\": \"list\", \"icase\": false, \"critical\": "
				 "[\"gc=*->gc->*\", \"io=read\"], \"timeline_procs\": [\"a\"], "
				 "\"since\": \"-1m\", \"stacks\": true, \"since_mark\": 3}");
	struct list_req lr;

	(void)state;
	assert_int_equal(list_req_parse(req, &lr), 0);
	assert_int_equal(lr.icase, 0);		/* said */
	assert_int_equal(lr.no_inline, -1);	/* not said: the target's */
	assert_null(lr.when);
	assert_int_equal(lr.ncritical, 2);
	assert_string_equal(lr.critical[1], "io=read");
	assert_int_equal(lr.ntimeline_procs, 1);
	assert_int_equal(lr.timeline_top, 5);
	assert_int_equal(lr.scale, 0x10000);
	assert_string_equal(lr.since, "-1m");
	assert_null(lr.until);
	assert_true(lr.stacks && !lr.timeline && !lr.labels);
	assert_int_equal(lr.since_mark, 3);
	assert_string_equal(lr.sort, "self");
	list_req_free(&lr);
	assert_null(lr.critical);
	cJSON_Delete(req);
}

/* The names taken apart, for context procedures: each one alone parses back to itself. */
static void test_names_alone(void **state)
{
	struct pat *p = parse("main->*->\"operator new\"->* | libc.mem*");
	char buf[64];

	(void)state;
	assert_int_equal(pat_nnames(p), 3);
	assert_int_equal(pat_name_str(p, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "main");
	assert_int_equal(pat_name_str(p, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "\"operator new\"");
	assert_int_equal(pat_name_str(p, 2, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "libc.mem*");
	assert_int_equal(pat_name_str(p, 3, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(pat_name_str(p, 2, buf, 4), -ERANGE);
	assert_int_equal(pat_thread_len(p, 0), 4);
	assert_int_equal(pat_thread_prim(p, 0, 1), PAT_STAR_PRIM);
	assert_int_equal(pat_thread_prim(p, 1, 0), 2);
	pat_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shadow_stack_is_pat_match),
		cmocka_unit_test(test_long_threads_and_recursion),
		cmocka_unit_test(test_what_the_shadow_stack_cannot_answer),
		cmocka_unit_test(test_request_pattern_errors),
		cmocka_unit_test(test_list_request_read_once),
		cmocka_unit_test(test_names_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
