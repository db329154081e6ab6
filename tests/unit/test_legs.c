// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the probe-node instrument's pure logic (daemon/instruments/legs*.c, docs/legs.md), and
 * for the arithmetic its BPF side does on each hit (include/pcmon_legs.h, compiled here as
 * it is for bpf/legs.bpf.c): no BPF.
 *
 * What is checked: a value's histogram bucket, at every bound; a leg's time net of the
 * probe hits inside it, never below 0; a node's cost from the calibration; the specs of
 * nodes, legs and histograms, and those refused with their message; the limits on legs
 * per node and per target; the index of legs --track all gives BPF; what is drained from
 * BPF folded into the tables (histograms since they were set up, legs --add successor
 * added); the tables' JSON; and the "tables" section of the state file, older ones too.
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

#include "counter.h"
#include "legs.h"
#include "slices.h"
#include "stfile.h"
#include "timed.h"
#include "util.h"
#include "json_check.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

/* An empty state (as a target gets on its first `pcmon node add`), freed by legs_ops.free. */
static struct legs *empty(void)
{
	struct legs *lg = calloc(1, sizeof(*lg));

	assert_non_null(lg);
	return lg;
}

/* Node @spec appended to @lg, recording argument @arg (-1: none). */
static struct legs_node *add_node(struct legs *lg, const char *spec, int arg)
{
	struct legs_node *n = realloc(lg->nodes, (lg->nnodes + 1) * sizeof(*n));

	assert_non_null(n);
	lg->nodes = n;
	n = &lg->nodes[lg->nnodes++];
	*n = (struct legs_node){ .spec = strdup(spec), .arg = arg < 0 ? 0 : arg + 1 };
	assert_non_null(n->spec);
	return n;
}

/* Leg (@from, @to) appended as parse would, numbered after the others; @added: by BPF. */
static struct legs_leg *add_leg(struct legs *lg, uint32_t from, uint32_t to, bool added)
{
	struct legs_leg *l;

	assert_int_equal(GROW(lg->legs, lg->cap_legs, lg->nlegs + 1), 0);
	l = &lg->legs[lg->nlegs];
	*l = (struct legs_leg){ .id = lg->nlegs + 1, .from = from, .to = to };
	l->stat.min_ns = ~0ULL;
	l->stat.id = added ? 0 : l->id;
	lg->nlegs++;
	return l;
}

static struct legs *new_legs(const char *json, cJSON **rep)
{
	cJSON *req = cJSON_Parse(json);
	void *st = NULL;

	if (!req)
		fail_msg("not JSON: %s", json);
	*rep = NULL;
	if (legs_ops.new(NULL, NULL, req, &st, rep))
		st = NULL;
	else
		assert_null(*rep);
	cJSON_Delete(req);
	return st;
}

/* A start request's fields with @legs and @hists (JSON arrays' insides) on @nnodes nodes,
 * node 1 recording argument 0. */
static char *request(int nnodes, const char *legs, const char *hists)
{
	size_t cap = 64 * nnodes + strlen(legs) + strlen(hists) + 64, len = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	len += snprintf(s + len, cap - len, "{\"nodes\": [");
	for (int i = 1; i <= nnodes; i++)
		len += snprintf(s + len, cap - len, "%s{\"spec\": \"prog.f%d\"%s}",
				i > 1 ? ", " : "", i, i == 1 ? ", \"arg\": 0" : "");
	snprintf(s + len, cap - len, "], \"legs\": [%s], \"hists\": [%s]}", legs, hists);
	return s;
}

/* The request refused with status 2 and exactly @msg. */
static void expect_refused(int nnodes, const char *legs, const char *hists, const char *msg)
{
	char *json = request(nnodes, legs, hists);
	cJSON *rep;
	struct legs *lg = new_legs(json, &rep);

	if (lg)
		fail_msg("%s: accepted; expected \"%s\"", json, msg);
	assert_non_null(rep);
	if (strcmp(str(rep, "error"), msg) || num(rep, "status") != 2)
		fail_msg("%s:\n  got %d \"%s\"\n  expected 2 \"%s\"", json, (int)num(rep, "status"),
			 str(rep, "error"), msg);
	cJSON_Delete(rep);
	free(json);
}

static struct legs *accepted(int nnodes, const char *legs, const char *hists)
{
	char *json = request(nnodes, legs, hists);
	cJSON *rep;
	struct legs *lg = new_legs(json, &rep);

	if (!lg)
		fail_msg("%s: refused: %s", json, str(rep, "error"));
	free(json);
	return lg;
}

/* ---------------------------------------------------------------------------------------- */
/* Histogram buckets (BPF's arithmetic) */

static void test_log_buckets_hold_powers_of_two(void **state)
{
	const struct pcmon_hcfg log = { .kind = PCMON_HIST_LOG };

	(void)state;
	/* b[0] holds 0, b[i + 1] holds [2^i, 2^(i+1)): 1 -> b[1], 2 and 3 -> b[2], 4 -> b[3] */
	assert_int_equal(pcmon_hist_slot(&log, 0), 0);
	assert_int_equal(pcmon_hist_slot(&log, 1), 1);
	assert_int_equal(pcmon_hist_slot(&log, 2), 2);
	assert_int_equal(pcmon_hist_slot(&log, 3), 2);
	assert_int_equal(pcmon_hist_slot(&log, 4), 3);
	for (int i = 0; i < 64; i++) {
		uint64_t lo = 1ULL << i, hi = i == 63 ? UINT64_MAX : (1ULL << (i + 1)) - 1;

		if (pcmon_hist_slot(&log, lo) != (uint32_t)i + 1 ||
		    pcmon_hist_slot(&log, hi) != (uint32_t)i + 1)
			fail_msg("[2^%d, 2^%d): %u and %u, expected bucket %d", i, i + 1,
				 pcmon_hist_slot(&log, lo), pcmon_hist_slot(&log, hi), i + 1);
		if (i && pcmon_hist_slot(&log, lo - 1) != (uint32_t)i)
			fail_msg("2^%d - 1 in bucket %u, expected %d", i,
				 pcmon_hist_slot(&log, lo - 1), i);
	}
	/* the largest value has a bucket, the last of PCMON_HIST_BUCKETS + 1 */
	assert_int_equal(pcmon_hist_slot(&log, UINT64_MAX), PCMON_HIST_BUCKETS);
}

static void test_linear_bucket_bounds(void **state)
{
	/* docs/legs.md's sizes, linear,4,500,0: [0, 500), [500, 1000), ... [1500, 2000) */
	const struct pcmon_hcfg sizes = { PCMON_HIST_LINEAR, 4, 500, 0 };
	/* 3 buckets of 10 from 1000: [1000, 1010), [1010, 1020), [1020, 1030) */
	const struct pcmon_hcfg c = { PCMON_HIST_LINEAR, 3, 10, 1000 };

	(void)state;
	assert_int_equal(pcmon_hist_slot(&sizes, 0), 0);
	assert_int_equal(pcmon_hist_slot(&sizes, 499), 0);
	assert_int_equal(pcmon_hist_slot(&sizes, 500), 1);
	assert_int_equal(pcmon_hist_slot(&sizes, 1000), 2);
	assert_int_equal(pcmon_hist_slot(&sizes, 1499), 2);
	assert_int_equal(pcmon_hist_slot(&sizes, 1999), 3);
	assert_int_equal(pcmon_hist_slot(&sizes, 2000), PCMON_HIST_OVER);

	assert_int_equal(pcmon_hist_slot(&c, 0), PCMON_HIST_UNDER);
	assert_int_equal(pcmon_hist_slot(&c, 999), PCMON_HIST_UNDER);
	assert_int_equal(pcmon_hist_slot(&c, 1000), 0);
	assert_int_equal(pcmon_hist_slot(&c, 1009), 0);
	assert_int_equal(pcmon_hist_slot(&c, 1010), 1);
	assert_int_equal(pcmon_hist_slot(&c, 1029), 2);
	assert_int_equal(pcmon_hist_slot(&c, 1030), PCMON_HIST_OVER);
	assert_int_equal(pcmon_hist_slot(&c, UINT64_MAX), PCMON_HIST_OVER);
}

static void test_linear_guards(void **state)
{
	const struct pcmon_hcfg ones = { PCMON_HIST_LINEAR, PCMON_HIST_BUCKETS, 1, 0 };
	/* more buckets than a histogram has (BPF is given what the engine checked; still) */
	const struct pcmon_hcfg many = { PCMON_HIST_LINEAR, 1000, 1, 0 };
	const struct pcmon_hcfg flat = { PCMON_HIST_LINEAR, 4, 0, 0 };
	const struct pcmon_hcfg top = { PCMON_HIST_LINEAR, 4, 1, UINT64_MAX };
	const struct pcmon_hcfg none = { PCMON_HIST_NONE, 4, 1, 0 }, odd = { 7, 4, 1, 0 };

	(void)state;
	assert_int_equal(pcmon_hist_slot(&ones, 63), 63);
	assert_int_equal(pcmon_hist_slot(&ones, 64), PCMON_HIST_OVER);
	/* 2^32 + 5 buckets past the base: over, not bucket 5 of a 32-bit index */
	assert_int_equal(pcmon_hist_slot(&ones, (1ULL << 32) + 5), PCMON_HIST_OVER);
	assert_int_equal(pcmon_hist_slot(&many, 63), 63);
	assert_int_equal(pcmon_hist_slot(&many, 64), PCMON_HIST_OVER);
	/* a shape of width 0 counts nothing (and divides by nothing) */
	assert_int_equal(pcmon_hist_slot(&flat, 5), PCMON_HIST_NOWHERE);
	assert_int_equal(pcmon_hist_slot(&top, UINT64_MAX), 0);
	assert_int_equal(pcmon_hist_slot(&top, UINT64_MAX - 1), PCMON_HIST_UNDER);
	assert_int_equal(pcmon_hist_slot(&none, 1), PCMON_HIST_NOWHERE);
	assert_int_equal(pcmon_hist_slot(&odd, 1), PCMON_HIST_NOWHERE);
	/* none of the markers is a bucket */
	assert_true(PCMON_HIST_UNDER > PCMON_HIST_BUCKETS && PCMON_HIST_OVER > PCMON_HIST_BUCKETS &&
		    PCMON_HIST_NOWHERE > PCMON_HIST_BUCKETS);
}

/* ---------------------------------------------------------------------------------------- */
/* Probe cost taken off a leg (BPF's arithmetic) and each node's cost */

static void test_leg_net_never_below_zero(void **state)
{
	(void)state;
	assert_int_equal(pcmon_leg_net(1000, 400), 600);
	assert_int_equal(pcmon_leg_net(400, 400), 0);
	assert_int_equal(pcmon_leg_net(300, 400), 0); /* not 2^64 - 100 */
	assert_int_equal(pcmon_leg_net(UINT64_MAX, 0), UINT64_MAX);
	assert_int_equal(pcmon_leg_net(0, 0), 0);
}

static void test_leg_net_of_the_hits_inside(void **state)
{
	/*
	 * One thread hits node 1 at 1000 ns, node 3 at 1500, node 2 at 3000. Nodes 1 and 2
	 * cost 100 ns a hit, node 3 (stepped) 300; each reads the clock 25 ns into its hit.
	 * Leg 1:2 is 2000 ns, of which the probes took 75 (node 1 after its reading) + 300
	 * (node 3) + 25 (node 2 before its reading) = 400: 1600 net, 2 hits inside (3 and 2).
	 * Leg 3:2 is 1500 ns less 275 + 25 = 300: 1200 net, 1 hit inside.
	 */
	struct pcmon_lthread th = { 0 };
	__u64 h1, c1, h3, c3, h2, c2;

	(void)state;
	pcmon_thread_hit(&th, 100, 25, &h1, &c1);
	pcmon_thread_hit(&th, 300, 25, &h3, &c3);
	pcmon_thread_hit(&th, 100, 25, &h2, &c2);
	assert_int_equal(c1, 25);
	assert_int_equal(c3, 125);
	assert_int_equal(c2, 425);
	assert_int_equal(h2 - h1, 2);
	assert_int_equal(c2 - c1, 400);
	assert_int_equal(pcmon_leg_net(3000 - 1000, c2 - c1), 1600);
	assert_int_equal(h2 - h3, 1);
	assert_int_equal(pcmon_leg_net(3000 - 1500, c2 - c3), 1200);
	/* the thread has paid for its three hits whole */
	assert_int_equal(th.hits, 3);
	assert_int_equal(th.cost, 500);
}

static void test_node_cost_from_the_calibration(void **state)
{
	struct legs *lg = empty();

	(void)state;
	add_node(lg, "prog.f", -1);
	add_node(lg, "prog.g", -1);
	/* an entry-and-return pair 2000.8 ns emulated, 5000 stepped: a hit 1000.4 ns, and a
	 * stepped one 5000 - 2000.8 = 2999.2 more; the clock is read half an emulated hit in */
	legs_calibrate(lg, 2000.8, 5000);
	assert_true(lg->hit_cost_ns == 1000.4);
	assert_true(lg->step_cost_ns > 2999.19 && lg->step_cost_ns < 2999.21);
	legs_node_cost(lg, 0, false);
	legs_node_cost(lg, 1, true);
	assert_int_equal(lg->nodes[0].cost_ns, 1000); /* 1000.4, rounded */
	assert_int_equal(lg->nodes[0].pre_ns, 500);   /* 500.2 */
	assert_int_equal(lg->nodes[1].cost_ns, 4000); /* 1000.4 + 2999.2 = 3999.6 */
	assert_int_equal(lg->nodes[1].pre_ns, 500);
	/* halves round up: 1001 / 2 = 500.5 -> 501 */
	legs_calibrate(lg, 2002, 2002);
	legs_node_cost(lg, 0, false);
	assert_int_equal(lg->nodes[0].pre_ns, 501);
	/* stepping measured cheaper than emulating (noise): a stepped hit costs an emulated one */
	legs_calibrate(lg, 3000, 2000);
	assert_true(lg->step_cost_ns == 0);
	legs_node_cost(lg, 1, true);
	assert_int_equal(lg->nodes[1].cost_ns, 1500);
	legs_ops.free(lg);
}

/* ---------------------------------------------------------------------------------------- */
/* Specs */

static void test_wanted(void **state)
{
	cJSON *a = cJSON_Parse("{\"nodes\": []}"), *b = cJSON_Parse("{\"count\": [\"x.y\"]}");

	(void)state;
	assert_true(legs_ops.wanted(a));
	assert_false(legs_ops.wanted(b));
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static void test_specs(void **state)
{
	cJSON *rep;
	struct legs *lg;

	(void)state;
	lg = new_legs("{\"nodes\": [{\"spec\": \"legs.req_begin\", \"arg\": 0},"
		      " {\"spec\": \"legs.end_small\"}, {\"spec\": \"legs.c:77\", \"arg\": 5}],"
		      " \"legs\": [\"1:2\", \"1:3\", \"*:3\", \"2:*\"],"
		      " \"hists\": [\"node:1,linear,4,500,0\", \"leg:2,log\"],"
		      " \"track\": \"successor\", \"add\": \"successor\"}",
		      &rep);
	assert_non_null(lg);
	assert_int_equal(lg->track, PCMON_TRACK_SUCCESSOR);
	assert_int_equal(lg->add, 1);
	assert_int_equal(lg->nnodes, 3);
	assert_string_equal(lg->nodes[0].spec, "legs.req_begin");
	assert_int_equal(lg->nodes[0].arg, 1); /* argument 0, stored + 1 */
	assert_int_equal(lg->nodes[1].arg, 0); /* none */
	assert_int_equal(lg->nodes[2].arg, 6);
	assert_int_equal(lg->nlegs, 4);
	{
		static const uint32_t want[4][2] = {
			{ 1, 2 }, { 1, 3 }, { PCMON_ANY_NODE, 3 }, { 2, PCMON_ANY_NODE }
		};

		for (uint32_t i = 0; i < 4; i++) {
			const struct legs_leg *l = &lg->legs[i];

			assert_int_equal(l->id, i + 1);
			assert_int_equal(l->stat.id, i + 1); /* set up, not added */
			assert_int_equal(l->from, want[i][0]);
			assert_int_equal(l->to, want[i][1]);
			/* no leg yet: the first one is the minimum */
			assert_int_equal(l->stat.min_ns, UINT64_MAX);
		}
	}
	assert_int_equal(lg->nodes[0].hist.kind, PCMON_HIST_LINEAR);
	assert_int_equal(lg->nodes[0].hist.buckets, 4);
	assert_int_equal(lg->nodes[0].hist.scale, 500);
	assert_int_equal(lg->nodes[0].hist.base, 0);
	assert_int_equal(lg->nodes[1].hist.kind, PCMON_HIST_NONE);
	assert_int_equal(lg->legs[1].hist.kind, PCMON_HIST_LOG);
	assert_int_equal(lg->legs[0].hist.kind, PCMON_HIST_NONE);
	legs_ops.free(lg);

	/* every leg tracked on its own, nothing added, unless asked */
	lg = new_legs("{\"nodes\": [{\"spec\": \"a.b\"}]}", &rep);
	assert_non_null(lg);
	assert_int_equal(lg->track, PCMON_TRACK_ALL);
	assert_int_equal(lg->add, 0);
	assert_int_equal(lg->nlegs, 0);
	legs_ops.free(lg);
	lg = new_legs("{\"nodes\": [{\"spec\": \"a.b\"}], \"track\": \"none\"}", &rep);
	assert_non_null(lg);
	assert_int_equal(lg->track, PCMON_TRACK_NONE);
	legs_ops.free(lg);
}

static void test_bad_nodes(void **state)
{
	static const char *const bad[] = {
		"{\"nodes\": [\"prog.f\"]}",
		"{\"nodes\": [{\"arg\": 1}]}",
		"{\"nodes\": [{\"spec\": \"\"}]}",
		"{\"nodes\": [{\"spec\": \"a.b\"}, {\"spec\": 5}]}",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cJSON *rep;

		if (new_legs(bad[i], &rep))
			fail_msg("%s accepted", bad[i]);
		assert_string_equal(str(rep, "error"),
				    "--node: expected {\"spec\": NODE, [\"arg\": N]}");
		cJSON_Delete(rep);
	}
}

static void test_bad_legs(void **state)
{
	static const char *const bad[] = { "1:4", "0:1",   "*:*",  "12",   "1:",  ":2",
					   "a:b", "1:2:3", "-1:2", "1:2x", "**:1" };

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char legs[32], msg[128];

		snprintf(legs, sizeof(legs), "\"1:2\", \"%s\"", bad[i]);
		snprintf(msg, sizeof(msg),
			 "--leg %s: expected FROM:TO, node numbers 1-3 or '*' (not both)", bad[i]);
		expect_refused(3, legs, "", msg);
	}
	/* the bounds themselves */
	legs_ops.free(accepted(3, "\"3:1\", \"*:3\", \"3:*\"", ""));
}

#define HIST_USAGE(spec)                                                             \
	"--hist " spec                                                               \
	": expected node:ID|leg:ID,linear,BUCKETS,SCALE,BASE or node:ID|leg:ID,log " \
	"(BUCKETS 1-64, an existing node or leg)"

static void test_bad_hists(void **state)
{
	static const char *const bad[] = {
		"leg:1,linear,0,5,0",  /* no bucket */
		"leg:1,linear,65,5,0", /* more than a histogram has */
		"leg:1,linear,4,0,0",  /* width 0 */
		"leg:1,linear,4,5",    /* no base */
		"leg:1,log,5",	       /* a log histogram has no shape to give */
		"leg:1,cubic",	       /* no such kind */
		"leg:3,log",	       /* two legs */
		"node:0,log",	       /* nodes count from 1 */
		"node:4,log",	       /* three nodes */
		"nodes:1,log",	       /* node or leg */
		"leg1,log",	       /* no colon */
		"",		       /* nothing */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char hists[64], msg[256];

		snprintf(hists, sizeof(hists), "\"%s\"", bad[i]);
		snprintf(msg, sizeof(msg), HIST_USAGE("%s"), bad[i]);
		expect_refused(3, "\"1:2\", \"2:3\"", hists, msg);
	}
	/* node 2 records no argument: said so, not the usage */
	expect_refused(3, "", "\"node:2,log\"",
		       "--hist node:2,log: node 2 records no argument (give it --hist-arg N)");
	/* the bounds: 1 and 64 buckets, a width of 1 */
	legs_ops.free(accepted(3, "\"1:2\", \"2:3\"",
			       "\"leg:1,linear,64,1,0\", \"leg:2,linear,1,1,7\", \"node:1,log\""));
}

/* "1:2", "1:3", ... "1:N+1" or (@to) "2:1", "3:1", ...: @n legs that share a node. */
static char *fan(int n, bool to, const char *first)
{
	size_t cap = 16 * (n + 2), len = 0;
	char *s = malloc(cap);

	assert_non_null(s);
	len += snprintf(s, cap, "%s", first);
	for (int i = 0; i < n; i++)
		len += snprintf(s + len, cap - len, "%s\"%s%d%s\"", len ? ", " : "",
				to ? "" : "1:", i + 2, to ? ":1" : "");
	return s;
}

static void test_legs_per_node(void **state)
{
	char *legs;

	(void)state;
	/* 32 legs start at node 1: accepted; a 33rd is refused, a leg to it is not */
	legs = fan(32, false, "");
	legs_ops.free(accepted(40, legs, ""));
	free(legs);
	legs = fan(33, false, "");
	expect_refused(40, legs, "",
		       "--leg 1:34: at most 32 legs may start, and 32 end, at one node");
	free(legs);
	legs = fan(32, false, "\"2:1\"");
	legs_ops.free(accepted(40, legs, ""));
	free(legs);
	/* the same for legs that end at node 1 */
	legs = fan(33, true, "");
	expect_refused(40, legs, "",
		       "--leg 34:1: at most 32 legs may start, and 32 end, at one node");
	free(legs);
	/* and for '*', which starts every leg from '*' */
	{
		size_t len = 0;
		char buf[1024];

		for (int i = 1; i <= 33; i++)
			len += snprintf(buf + len, sizeof(buf) - len, "%s\"*:%d\"",
					i > 1 ? ", " : "", i);
		expect_refused(40, buf, "",
			       "--leg *:33: at most 32 legs may start, and 32 end, at one node");
	}
}

static void test_legs_per_target(void **state)
{
	/* 16 x 16 legs among 17 nodes (16 start, and 16 end, at each): 256, the most a table
	 * holds; one more, from and to a node with none, is refused for the table's sake */
	size_t cap = 16 * 300, len = 0;
	char *legs = malloc(cap);

	(void)state;
	assert_non_null(legs);
	for (int i = 1; i <= 16; i++)
		for (int j = 1; j <= 16; j++)
			len += snprintf(legs + len, cap - len, "%s\"%d:%d\"", len ? ", " : "", i,
					j);
	legs_ops.free(accepted(17, legs, ""));
	snprintf(legs + len, cap - len, ", \"17:17\"");
	expect_refused(17, legs, "", "--leg 17:17: a target's table holds at most 256 legs");
	free(legs);
}

/* ---------------------------------------------------------------------------------------- */
/* The index --track all gives BPF */

static void test_index(void **state)
{
	/* nodes 1-3 (and '*', node 0): legs 1:2, 1:3, *:3, 2:*, then one --add successor
	 * added (3:1: not indexed, BPF times it from the thread's last node) and one naming a
	 * node past the index (never indexed past the end) */
	struct legs *lg = empty();
	struct pcmon_nlegs nl[4] = { 0 };
	struct pcmon_tlegs tl = { 0 };

	(void)state;
	for (int i = 0; i < 3; i++)
		add_node(lg, "prog.f", -1);
	add_leg(lg, 1, 2, false);
	add_leg(lg, 1, 3, false);
	add_leg(lg, PCMON_ANY_NODE, 3, false);
	add_leg(lg, 2, PCMON_ANY_NODE, false);
	add_leg(lg, 3, 1, true);
	add_leg(lg, 1, 9, false);
	legs_index(lg, nl, 4, &tl);

	assert_int_equal(nl[1].nfrom, 2); /* node 1 starts 1:2 and 1:3 */
	assert_int_equal(nl[1].from_to[0], 2);
	assert_int_equal(nl[1].from_to[1], 3);
	assert_int_equal(nl[1].nto, 0); /* 3:1 is not indexed */
	assert_int_equal(nl[2].nto, 1);
	assert_int_equal(nl[2].to_from[0], 1);
	assert_int_equal(nl[2].nfrom, 1); /* 2:* */
	assert_int_equal(nl[2].from_to[0], PCMON_ANY_NODE);
	assert_int_equal(nl[3].nto, 2); /* 1:3 and *:3 */
	assert_int_equal(nl[3].to_from[0], 1);
	assert_int_equal(nl[3].to_from[1], PCMON_ANY_NODE);
	assert_int_equal(nl[3].nfrom, 0);
	assert_int_equal(nl[0].nfrom, 1); /* '*' starts *:3 ... */
	assert_int_equal(nl[0].from_to[0], 3);
	assert_int_equal(nl[0].nto, 1); /* ... and ends 2:* */
	assert_int_equal(nl[0].to_from[0], 2);
	assert_int_equal(tl.n, 4);
	assert_int_equal(tl.l[2].from, PCMON_ANY_NODE);
	assert_int_equal(tl.l[2].to, 3);
	assert_int_equal(tl.l[3].from, 2);
	assert_int_equal(tl.l[3].to, PCMON_ANY_NODE);
	legs_ops.free(lg);
}

static void test_index_bounds(void **state)
{
	/* what the specs refuse may still reach the index (a table edited while it runs):
	 * it keeps to PCMON_NODE_LEGS a node and PCMON_TARGET_LEGS a target, and no more */
	struct legs *lg = empty();
	struct pcmon_nlegs *nl = calloc(302, sizeof(*nl));
	struct pcmon_tlegs *tl = calloc(1, sizeof(*tl));

	(void)state;
	assert_non_null(nl);
	assert_non_null(tl);
	for (uint32_t i = 0; i < 300; i++)
		add_leg(lg, 1, i + 2, false);
	legs_index(lg, nl, 302, tl);
	assert_int_equal(nl[1].nfrom, PCMON_NODE_LEGS);
	assert_int_equal(nl[1].from_to[PCMON_NODE_LEGS - 1], PCMON_NODE_LEGS + 1);
	assert_int_equal(tl->n, PCMON_TARGET_LEGS);
	assert_int_equal(tl->l[PCMON_TARGET_LEGS - 1].to, PCMON_TARGET_LEGS + 1);
	assert_int_equal(nl[PCMON_TARGET_LEGS + 1].nto, 1);
	assert_int_equal(nl[PCMON_TARGET_LEGS + 2].nto, 0); /* the 257th leg: not indexed */
	free(nl);
	free(tl);
	legs_ops.free(lg);
}

/* ---------------------------------------------------------------------------------------- */
/* What BPF holds, folded into the tables */

static void test_fold_node_counts_since_its_histogram(void **state)
{
	/* node 1's histogram was set up when BPF's counts held 5 in b[1] and 2 under: of 8
	 * in b[1] now, 3 are its own; under 2 - 2 = 0; over 1 */
	struct legs *lg = empty();
	struct legs_node *n = add_node(lg, "prog.f", 0);
	struct pcmon_node bpf = { .hits = 20 };

	(void)state;
	n->h0.b[1] = 5;
	n->h0.under = 2;
	bpf.h.b[1] = 8;
	bpf.h.under = 2;
	bpf.h.over = 1;
	bpf.h.b[PCMON_HIST_BUCKETS] = 4;
	legs_fold_node(lg, 0, &bpf);
	assert_int_equal(lg->nodes[0].hits, 20);
	assert_int_equal(lg->nodes[0].h.b[1], 3);
	assert_int_equal(lg->nodes[0].h.under, 0);
	assert_int_equal(lg->nodes[0].h.over, 1);
	assert_int_equal(lg->nodes[0].h.b[PCMON_HIST_BUCKETS], 4);
	assert_int_equal(lg->nodes[0].h0.b[1], 5); /* the zero stays */
	legs_ops.free(lg);
}

static void test_fold_legs(void **state)
{
	struct legs *lg = empty();
	struct pcmon_leg bpf = { .count = 5,
				 .total_ns = 500,
				 .min_ns = 50,
				 .max_ns = 200,
				 .id = 2,
				 .probe_hits = 10,
				 .probe_ns = 1000 };

	(void)state;
	add_leg(lg, 1, 2, false);
	add_leg(lg, 2, 3, false)->h0.b[4] = 1;
	bpf.h.b[4] = 3;
	assert_int_equal(legs_fold_leg(lg, 2, 3, &bpf), 0);
	assert_int_equal(lg->nlegs, 2);
	assert_int_equal(lg->legs[1].stat.count, 5);
	assert_int_equal(lg->legs[1].stat.probe_ns, 1000);
	assert_int_equal(lg->legs[1].stat.h.b[4], 2); /* 3 since its zero of 1 */
	assert_int_equal(lg->legs[0].stat.count, 0);

	/* legs --add successor made in BPF (id 0) come in as they appear, numbered after the
	 * others: 3 and 4 */
	bpf = (struct pcmon_leg){ .count = 1, .id = 0 };
	assert_int_equal(legs_fold_leg(lg, 3, 1, &bpf), 0);
	bpf.count = 7;
	assert_int_equal(legs_fold_leg(lg, 1, 3, &bpf), 0);
	assert_int_equal(lg->nlegs, 4);
	assert_int_equal(lg->legs[2].id, 3);
	assert_int_equal(lg->legs[2].from, 3);
	assert_int_equal(lg->legs[2].to, 1);
	assert_int_equal(lg->legs[3].id, 4);
	assert_int_equal(lg->legs[3].stat.count, 7);
	/* drained again: updated in place, not added twice */
	bpf.count = 9;
	assert_int_equal(legs_fold_leg(lg, 3, 1, &bpf), 0);
	assert_int_equal(lg->nlegs, 4);
	assert_int_equal(lg->legs[2].stat.count, 9);
	legs_ops.free(lg);
}

/* ---------------------------------------------------------------------------------------- */
/* The tables */

static cJSON *tables(const struct legs *lg, double elapsed, const struct counter_prog_stats *ps)
{
	cJSON *rep = cJSON_CreateObject();

	assert_non_null(rep);
	assert_int_equal(legs_tables_json(lg, elapsed, ps, rep), 0);
	return rep;
}

static const cJSON *item(const cJSON *rep, const char *arr, int i)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "tables");
	const cJSON *x = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, arr), i);

	if (!x)
		fail_msg("no %s[%d]", arr, i);
	return x;
}

static void test_tables_overhead(void **state)
{
	/*
	 * Node 1: 10 hits of 100 ns; node 2 (deleted since: not listed, its hits were paid
	 * for all the same): 10 of 200; node 3 (stepped): 30 of 300. 50 hits, 1000 + 2000 +
	 * 9000 = 12000 ns, 240 a hit; 1% of 1.2 ms.
	 */
	struct legs *lg = empty();
	struct counter_prog_stats ps = { .run_cnt = 50, .run_time_ns = 4321 };
	cJSON *rep, *t, *o;

	(void)state;
	add_node(lg, "prog.a", -1)->hits = 10;
	add_node(lg, "", -1)->hits = 10;
	add_node(lg, "prog.c", -1)->hits = 30;
	lg->nodes[0].cost_ns = 100;
	lg->nodes[1].cost_ns = 200;
	lg->nodes[2].cost_ns = 300;
	lg->nodes[2].pre_ns = 45;
	lg->hit_cost_ns = 90;
	lg->step_cost_ns = 110;
	lg->track = PCMON_TRACK_SUCCESSOR;
	rep = tables(lg, 1.2e6, &ps);
	t = cJSON_GetObjectItem(rep, "tables");
	o = cJSON_GetObjectItem(t, "overhead");
	assert_string_equal(str(t, "track"), "successor");
	assert_true(num(t, "elapsed_ns") == 1.2e6);
	assert_true(num(o, "hits") == 50);
	assert_true(num(o, "total_ns") == 12000);
	assert_true(num(o, "per_hit_ns") == 240);
	assert_true(num(o, "emulated_hit_ns") == 90);
	assert_true(num(o, "stepped_hit_ns") == 200);
	assert_true(num(o, "percent_of_elapsed") == 1);
	assert_true(num(o, "bpf_runs") == 50);
	assert_true(num(o, "bpf_run_time_ns") == 4321);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(t, "nodes")), 2);
	assert_true(num(item(rep, "nodes", 0), "id") == 1);
	assert_true(num(item(rep, "nodes", 1), "id") == 3); /* numbers stay */
	assert_string_equal(str(item(rep, "nodes", 1), "spec"), "prog.c");
	assert_true(num(item(rep, "nodes", 1), "hits") == 30);
	assert_true(num(item(rep, "nodes", 1), "cost_ns") == 300);
	assert_true(num(item(rep, "nodes", 1), "cost_before_ns") == 45);
	assert_null(cJSON_GetObjectItem(item(rep, "nodes", 1), "arg"));
	assert_null(cJSON_GetObjectItem(item(rep, "nodes", 1), "hist"));
	cJSON_Delete(rep);

	/* no hit yet: a hit's cost is the calibration's; no elapsed time: no share of it; no
	 * BPF statistics (a table loaded from a file); a track the file cannot have: "all" */
	for (int i = 0; i < 3; i++)
		lg->nodes[i].hits = 0;
	lg->track = 7;
	rep = tables(lg, 0, NULL);
	t = cJSON_GetObjectItem(rep, "tables");
	o = cJSON_GetObjectItem(t, "overhead");
	assert_string_equal(str(t, "track"), "all");
	assert_true(num(o, "per_hit_ns") == 90);
	assert_true(num(o, "total_ns") == 0);
	assert_true(num(o, "percent_of_elapsed") == 0);
	assert_null(cJSON_GetObjectItem(o, "bpf_runs"));
	cJSON_Delete(rep);
	legs_ops.free(lg);
}

static void test_tables_legs(void **state)
{
	/* leg 1: 4 legs, 1000 ns net, 100 to 500: avg 250, 1000 / 20000 = 5% of elapsed;
	 * leg 2: none finished, 2 abandoned: min is not 2^64 - 1 but 0, avg 0;
	 * leg 3: added by --add successor */
	struct legs *lg = empty();
	struct legs_leg *l;
	cJSON *rep;

	(void)state;
	add_node(lg, "prog.a", -1);
	add_node(lg, "prog.b", -1);
	l = add_leg(lg, 1, 2, false);
	l->stat.count = 4;
	l->stat.total_ns = 1000;
	l->stat.min_ns = 100;
	l->stat.max_ns = 500;
	l->stat.probe_hits = 12;
	l->stat.probe_ns = 3600;
	l->stat.untracked = 1;
	l = add_leg(lg, 2, PCMON_ANY_NODE, false);
	l->stat.abandoned = 2;
	add_leg(lg, 2, 1, true)->stat.count = 1;
	rep = tables(lg, 20000, NULL);

	assert_true(num(item(rep, "legs", 0), "id") == 1);
	assert_true(num(item(rep, "legs", 0), "count") == 4);
	assert_true(num(item(rep, "legs", 0), "total_ns") == 1000);
	assert_true(num(item(rep, "legs", 0), "avg_ns") == 250);
	assert_true(num(item(rep, "legs", 0), "min_ns") == 100);
	assert_true(num(item(rep, "legs", 0), "max_ns") == 500);
	assert_true(num(item(rep, "legs", 0), "percent_of_elapsed") == 5);
	assert_true(num(item(rep, "legs", 0), "probe_hits") == 12);
	assert_true(num(item(rep, "legs", 0), "probe_ns") == 3600);
	assert_true(num(item(rep, "legs", 0), "untracked") == 1);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(item(rep, "legs", 0), "added")));

	assert_true(num(item(rep, "legs", 1), "to") == PCMON_ANY_NODE);
	assert_true(num(item(rep, "legs", 1), "count") == 0);
	assert_true(num(item(rep, "legs", 1), "min_ns") == 0);
	assert_true(num(item(rep, "legs", 1), "avg_ns") == 0);
	assert_true(num(item(rep, "legs", 1), "abandoned") == 2);

	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(item(rep, "legs", 2), "added")));
	assert_true(num(item(rep, "legs", 2), "id") == 3);
	cJSON_Delete(rep);
	legs_ops.free(lg);
}

static void test_tables_histograms(void **state)
{
	/* a linear histogram lists its buckets, a log one all 65 (b[0] for 0, then [2^i,
	 * 2^(i+1))); each with its under- and overflow */
	struct legs *lg = empty();
	struct legs_node *n = add_node(lg, "prog.a", 2);
	struct legs_leg *l;
	const cJSON *h, *b;
	cJSON *rep;

	(void)state;
	n->hist = (struct pcmon_hcfg){ PCMON_HIST_LINEAR, 4, 500, 0 };
	n->h.b[0] = 41;
	n->h.b[2] = 40;
	n->h.b[4] = 99; /* past its 4 buckets: not listed */
	n->h.over = 3;
	l = add_leg(lg, 1, 1, false);
	l->hist.kind = PCMON_HIST_LOG;
	l->stat.h.b[24] = 32;
	l->stat.h.b[PCMON_HIST_BUCKETS] = 1;
	l->stat.h.under = 5; /* (a log histogram has none: shown as held) */
	rep = tables(lg, 1e9, NULL);

	assert_true(num(item(rep, "nodes", 0), "arg") == 2);
	h = cJSON_GetObjectItem(item(rep, "nodes", 0), "hist");
	assert_string_equal(str(h, "kind"), "linear");
	assert_true(num(h, "scale") == 500);
	assert_true(num(h, "base") == 0);
	assert_true(num(h, "overflow") == 3);
	assert_true(num(h, "underflow") == 0);
	b = cJSON_GetObjectItem(h, "buckets");
	assert_int_equal(cJSON_GetArraySize(b), 4);
	assert_true(cJSON_GetArrayItem(b, 0)->valuedouble == 41);
	assert_true(cJSON_GetArrayItem(b, 1)->valuedouble == 0);
	assert_true(cJSON_GetArrayItem(b, 2)->valuedouble == 40);

	h = cJSON_GetObjectItem(item(rep, "legs", 0), "hist");
	assert_string_equal(str(h, "kind"), "log");
	assert_null(cJSON_GetObjectItem(h, "scale"));
	b = cJSON_GetObjectItem(h, "buckets");
	assert_int_equal(cJSON_GetArraySize(b), PCMON_HIST_BUCKETS + 1);
	assert_true(cJSON_GetArrayItem(b, 24)->valuedouble == 32);
	assert_true(cJSON_GetArrayItem(b, PCMON_HIST_BUCKETS)->valuedouble == 1);
	cJSON_Delete(rep);
	legs_ops.free(lg);
}

/* ---------------------------------------------------------------------------------------- */
/* The state file's "tables" section */

static cJSON *save(const struct legs *lg)
{
	struct sf_wr w = { 0 };
	cJSON *o = cJSON_CreateObject(), *back;
	char *text;

	assert_non_null(o);
	legs_ops.save(NULL, lg, NULL, &w, o);
	assert_false(w.oom);
	text = cJSON_PrintUnformatted(o); /* through text, as in a file */
	assert_non_null(text);
	back = cJSON_Parse(text);
	assert_non_null(back);
	cJSON_free(text);
	cJSON_Delete(o);
	return back;
}

/* @o loaded: NULL and the reason in @why if refused. */
static struct legs *load(const cJSON *o, char *why, size_t whylen)
{
	struct sf_rd rd = { .format = 3, .section = "tables", .why = why, .whylen = whylen };
	void *out = (void *)1;
	int r;

	why[0] = '\0';
	r = legs_ops.load(&rd, o, NULL, &out);
	if (r) {
		assert_int_equal(r, -EINVAL);
		assert_null(out);
		return NULL;
	}
	assert_string_equal(why, "");
	return out;
}

static struct legs *full_tables(void)
{
	struct legs *lg = empty();
	struct legs_node *n;
	struct legs_leg *l;

	lg->track = PCMON_TRACK_SUCCESSOR;
	lg->add = 1;
	lg->hit_cost_ns = 3787.25;
	lg->step_cost_ns = 7426.5;
	n = add_node(lg, "legs.req_begin", 0);
	n->hits = (1ULL << 53) + 1;
	n->cost_ns = 3787;
	n->pre_ns = 1894;
	n->hist = (struct pcmon_hcfg){ PCMON_HIST_LINEAR, 4, 500, 0 };
	n->h.b[0] = 41;
	n->h.b[2] = 40;
	n->h.under = 1;
	n->h.over = 2;
	add_node(lg, "legs.end_small", -1)->cost_ns = 11214;
	add_node(lg, "", -1); /* deleted */
	l = add_leg(lg, 1, 2, false);
	l->stat = (struct pcmon_leg){ .count = 40,
				      .total_ns = 240673000,
				      .min_ns = 3034000,
				      .max_ns = 11247000,
				      .abandoned = 1,
				      .id = 1,
				      .probe_hits = 80,
				      .probe_ns = 605920,
				      .untracked = 3 };
	l->hist.kind = PCMON_HIST_LOG;
	l->stat.h.b[22] = 5;
	l->stat.h.b[PCMON_HIST_BUCKETS] = 7;
	add_leg(lg, PCMON_ANY_NODE, 2, false); /* none yet: min 2^64 - 1 */
	add_leg(lg, 2, 1, true)->stat.count = 39;
	return lg;
}

static void test_state_round_trip(void **state)
{
	struct legs *lg = full_tables(), *back;
	cJSON *o = save(lg);
	char why[256];

	(void)state;
	back = load(o, why, sizeof(why));
	if (!back)
		fail_msg("refused: %s", why);
	assert_true(back->detached);
	assert_int_equal(back->track, PCMON_TRACK_SUCCESSOR);
	assert_int_equal(back->add, 1);
	assert_true(back->hit_cost_ns == 3787.25);
	assert_true(back->step_cost_ns == 7426.5);
	assert_int_equal(back->nnodes, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct legs_node *a = &lg->nodes[i], *b = &back->nodes[i];

		assert_string_equal(b->spec, a->spec);
		assert_int_equal(b->arg, a->arg);
		assert_int_equal(b->hits, a->hits);
		assert_int_equal(b->cost_ns, a->cost_ns);
		assert_int_equal(b->pre_ns, a->pre_ns);
		assert_memory_equal(&b->hist, &a->hist, sizeof(a->hist));
		assert_memory_equal(&b->h, &a->h, sizeof(a->h));
		assert_int_equal(b->nlinks, 0);
	}
	assert_int_equal(back->nlegs, 3);
	for (size_t i = 0; i < 3; i++) {
		const struct legs_leg *a = &lg->legs[i], *b = &back->legs[i];

		assert_int_equal(b->id, a->id);
		assert_int_equal(b->from, a->from);
		assert_int_equal(b->to, a->to);
		assert_memory_equal(&b->hist, &a->hist, sizeof(a->hist));
		assert_memory_equal(&b->stat, &a->stat, sizeof(a->stat));
	}
	/* and the tables read the same */
	{
		cJSON *r1 = tables(lg, 5e8, NULL), *r2 = tables(back, 5e8, NULL);
		char *t1 = cJSON_PrintUnformatted(r1), *t2 = cJSON_PrintUnformatted(r2);

		assert_string_equal(t1, t2);
		cJSON_free(t1);
		cJSON_free(t2);
		cJSON_Delete(r1);
		cJSON_Delete(r2);
	}
	cJSON_Delete(o);
	legs_ops.free(back);
	legs_ops.free(lg);
}

/* A histogram that was never set up, as a file has it. */
#define NO_HIST                                                                      \
	"\"hist\": {\"kind\": 0, \"buckets\": 0, \"scale\": 0, \"base\": 0, \"under\": 0, " \
	"\"over\": 0, \"b\": []}"

static void test_state_from_before_netting(void **state)
{
	/*
	 * Files from before each leg counted its probe hits held gross totals, and one hit's
	 * cost (the header's hit_cost_ns, 300.75 ns) in each leg: 4 legs of 10000 ns in all
	 * are 10000 - 4 * 300.75 = 8797 net, 4 hits, 1203 ns of probes; 4 legs of 500 ns in
	 * all are less than their probes' 1203: 0. Nodes had no cost of their own: one hit's,
	 * in whole nanoseconds (300). Nothing was stepped, nothing untracked.
	 */
	static const char *const old =
		"{\"track\": 0, \"add\": 0, \"hit_cost_ns\": 300.75, \"nodes\": ["
		"{\"spec\": \"a.b\", \"arg\": 0, \"hits\": 8, " NO_HIST "}], \"legs\": ["
		"{\"id\": 1, \"from\": 1, \"to\": 1, \"added\": false, \"count\": 4, "
		"\"total_ns\": 10000, \"min_ns\": 2000, \"max_ns\": 3000, \"abandoned\": 0, "
		NO_HIST "}, "
		"{\"id\": 2, \"from\": 0, \"to\": 1, \"added\": false, \"count\": 4, "
		"\"total_ns\": 500, \"min_ns\": 100, \"max_ns\": 150, \"abandoned\": 0, "
		NO_HIST "}]}";
	cJSON *o = cJSON_Parse(old);
	struct legs *lg;
	char why[256];

	(void)state;
	assert_non_null(o);
	lg = load(o, why, sizeof(why));
	if (!lg)
		fail_msg("refused: %s", why);
	assert_true(lg->step_cost_ns == 0);
	assert_int_equal(lg->nodes[0].cost_ns, 300);
	assert_int_equal(lg->legs[0].stat.total_ns, 8797);
	assert_int_equal(lg->legs[0].stat.probe_hits, 4);
	assert_int_equal(lg->legs[0].stat.probe_ns, 1203);
	assert_int_equal(lg->legs[0].stat.untracked, 0);
	assert_int_equal(lg->legs[1].stat.total_ns, 0);
	assert_int_equal(lg->legs[1].stat.probe_ns, 1203);
	assert_int_equal(lg->legs[1].from, PCMON_ANY_NODE);
	cJSON_Delete(o);
	legs_ops.free(lg);
}

static cJSON *leg_of(cJSON *o, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(o, "legs"), i);
}

static cJSON *node_of(cJSON *o, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(o, "nodes"), i);
}

static void leg_past_the_nodes(cJSON *o)
{
	cJSON_ReplaceItemInObject(leg_of(o, 0), "to", cJSON_CreateNumber(4));
}

static void hist_kind(cJSON *o)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(leg_of(o, 0), "hist"), "kind",
				  cJSON_CreateNumber(3));
}

static void hist_buckets(cJSON *o)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(node_of(o, 0), "hist"), "buckets",
				  cJSON_CreateNumber(65));
}

static void hist_too_long(cJSON *o)
{
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(node_of(o, 0), "hist"), "b"),
			     cJSON_CreateNumber(1));
}

static void hist_not_a_count(cJSON *o)
{
	cJSON_ReplaceItemInArray(
		cJSON_GetObjectItem(cJSON_GetObjectItem(node_of(o, 1), "hist"), "b"), 3,
		cJSON_CreateNumber(1.5));
}

static void no_hist(cJSON *o)
{
	cJSON_DeleteItemFromObject(leg_of(o, 2), "hist");
}

static void no_spec(cJSON *o)
{
	cJSON_DeleteItemFromObject(node_of(o, 1), "spec");
}

static void bad_track(cJSON *o)
{
	cJSON_ReplaceItemInObject(o, "track", cJSON_CreateNumber(3));
}

static void test_state_refused_naming_the_field(void **state)
{
	static const struct {
		void (*edit)(cJSON *o);
		const char *why;
	} cases[] = {
		{ leg_past_the_nodes, "tables.legs[0].to: 4 is more than 3" },
		{ hist_kind, "tables.legs[0].kind: 3 is more than 2" },
		{ hist_buckets, "tables.nodes[0].buckets: 65 is more than 64" },
		{ hist_too_long, "tables.nodes[0].b: 66 entries, more than 65" },
		{ hist_not_a_count, "tables.nodes[1].b: 1.5 is not a whole number" },
		{ no_hist, "tables.legs[2].hist: missing" },
		{ no_spec, "tables.nodes[1].spec: missing" },
		{ bad_track, "tables.track: 3 is more than 2" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct legs *lg = full_tables();
		cJSON *o = save(lg);
		char why[256];

		cases[i].edit(o);
		if (load(o, why, sizeof(why)))
			fail_msg("case %zu loaded; expected \"%s\"", i, cases[i].why);
		if (strcmp(why, cases[i].why))
			fail_msg("case %zu: \"%s\", expected \"%s\"", i, why, cases[i].why);
		cJSON_Delete(o);
		legs_ops.free(lg);
	}
}

/* Random legs' totals, consistent or not (a file may say anything): every leg's times keep
 * to the invariants, errors from the hits each holds. */
/*
 * A window's legs hold what each field gained in its slices: every field its own, the
 * counters past the histogram too (untracked once fell in its underflow bucket), and the
 * time stolen by the hypervisor widens the window's error as it does the whole table's.
 */
static void test_window_keeps_every_field(void **state)
{
	const uint64_t S = 1000000000ull, T0 = 1700000040ull * S;
	struct timed_window w = { .on = true, .since = T0, .until = T0 + S };
	struct pcmon_leg bpf = { .count = 4, .total_ns = 4000, .min_ns = 500, .max_ns = 2000,
				 .id = 1, .untracked = 3, .stolen_ns = 700, .max_steal_ns = 600 };
	struct legs *lg = empty();
	struct slices_cfg cfg;
	const cJSON *x;
	cJSON *rep = cJSON_CreateObject();

	(void)state;
	assert_int_equal(slices_cfg_parse("1s", &cfg, NULL, 0), 0);
	cfg.budget = 0;
	lg->slices = slices_new(&cfg, 1);
	assert_non_null(lg->slices);
	legs_calibrate(lg, 0, 0);
	legs_calibrate_err(lg, 0);
	add_leg(lg, 1, 2, false);
	lg->charge_wall = T0;
	bpf.h.b[3] = 4;
	assert_int_equal(legs_fold_leg(lg, 1, 2, &bpf), 0);
	/* the whole table: the longest leg's error holds what was stolen in it */
	{
		struct legs_times t;

		legs_leg_times(lg, &lg->legs[0].stat, &t);
		assert_true(t.total_err == 700 && t.max_err == 600 && t.min_err == 0);
	}
	slices_tick(lg->slices, T0 + S);
	assert_int_equal(legs_window_json(lg, &w, rep), 0);
	x = item(rep, "legs", 0);
	assert_true(num(x, "count") == 4 && num(x, "untracked") == 3);
	assert_true(num(x, "stolen_ns") == 700 && num(x, "total_err_ns") == 700);
	cJSON_Delete(rep);
	slices_free(lg->slices);
	lg->slices = NULL;
	legs_ops.free(lg);
}

static void test_leg_times_invariants(void **state)
{
	struct legs *lg = empty();
	uint64_t r = 0x2545f4914f6cdd1dull;

	(void)state;
	for (int run = 0; run < 5000; run++) {
		struct pcmon_leg s = { 0 };
		struct legs_times t;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		s.count = r % 4 ? r % 1000 : 0;
		s.total_ns = (r >> 10) % 10000000;
		s.min_ns = (r >> 20) % 20000000;
		s.max_ns = (r >> 30) % 20000000;
		s.probe_hits = (r >> 40) % 5000;
		s.stolen_ns = r % 3 ? 0 : (r >> 45) % 100000;
		s.max_steal_ns = r % 5 ? 0 : (r >> 35) % 100000;
		s.min_steal_ns = r % 7 ? 0 : (r >> 25) % 100000;
		lg->unplaced_steal_ns = r % 11 ? 0 : (r >> 50) % 100000;
		legs_calibrate(lg, (double)((r >> 5) % 4000), (double)((r >> 15) % 40000));
		legs_calibrate_err(lg, (double)((r >> 25) % 3000));
		legs_leg_times(lg, &s, &t);
		assert_true(t.total >= 0 && t.avg >= 0 && t.min >= 0 && t.max >= 0);
		assert_true(t.total_err >= 0 && t.avg_err >= 0 && t.min_err >= 0 && t.max_err >= 0);
		if (s.count)
			assert_true(t.min <= t.avg && t.avg <= t.max && t.max <= t.total);
		/* the error grows with the hits the leg holds, its ends' and those inside, and
		 * holds what the hypervisor stole, in the legs and around a hit (unplaced) */
		assert_true(t.total_err == lg->hit_err_ns * (double)(s.count + s.probe_hits) +
					   (double)s.stolen_ns + (double)lg->unplaced_steal_ns);
		if (s.count)
			assert_true(t.max_err >= (double)(s.max_steal_ns + lg->unplaced_steal_ns) &&
				    t.min_err >= (double)(s.min_steal_ns + lg->unplaced_steal_ns));
	}
	free(lg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_buckets_hold_powers_of_two),
		cmocka_unit_test(test_linear_bucket_bounds),
		cmocka_unit_test(test_linear_guards),
		cmocka_unit_test(test_leg_net_never_below_zero),
		cmocka_unit_test(test_leg_net_of_the_hits_inside),
		cmocka_unit_test(test_node_cost_from_the_calibration),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_specs),
		cmocka_unit_test(test_bad_nodes),
		cmocka_unit_test(test_bad_legs),
		cmocka_unit_test(test_bad_hists),
		cmocka_unit_test(test_legs_per_node),
		cmocka_unit_test(test_legs_per_target),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_bounds),
		cmocka_unit_test(test_fold_node_counts_since_its_histogram),
		cmocka_unit_test(test_fold_legs),
		cmocka_unit_test(test_tables_overhead),
		cmocka_unit_test(test_tables_legs),
		cmocka_unit_test(test_tables_histograms),
		cmocka_unit_test(test_state_round_trip),
		cmocka_unit_test(test_state_from_before_netting),
		cmocka_unit_test(test_state_refused_naming_the_field),
		cmocka_unit_test(test_window_keeps_every_field),
		cmocka_unit_test(test_leg_times_invariants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
