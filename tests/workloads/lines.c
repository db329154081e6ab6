// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where inside a procedure the time goes (docs/lines.md): work() runs two loops, each on a
 * line of its own (LOOP_A, LOOP_B: about 65/35 of the loops' time), then calls helper(),
 * inlined, from a third line (CALL_H). Each part's CPU time is measured around it and the
 * shares of work's time printed as one JSON line. The markers are what the test looks for.
 */
#include "workload.h"

static uint64_t n_a, n_b, n_h;
static volatile uint64_t sink;

static inline __attribute__((always_inline)) uint64_t helper(uint64_t acc, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) acc = acc * 3935559000370003845ULL + (i ^ acc >> 7); /* HELPER_LOOP */
	return acc;
}

static uint64_t t_a, t_b, t_h;

NOINLINE void work(void)
{
	uint64_t acc = sink, t0, t1, t2, t3;

	t0 = cpu_ns();
	for (uint64_t i = 0; i < n_a; i++) acc = acc * 6364136223846793005ULL + (i ^ acc >> 3); /* LOOP_A */
	t1 = cpu_ns();
	for (uint64_t i = 0; i < n_b; i++) acc = acc * 2862933555777941757ULL + (i ^ acc >> 5); /* LOOP_B */
	t2 = cpu_ns();
	acc = helper(acc, n_h); /* CALL_H */
	t3 = cpu_ns();
	sink = acc;
	t_a += t1 - t0;
	t_b += t2 - t1;
	t_h += t3 - t2;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	uint64_t end, per_ms;

	/* about 1 ms of work per call: 0.52 in A, 0.28 in B, 0.2 in the helper */
	n_a = n_b = n_h = 100000;
	t_a = t_b = t_h = 0;
	work();
	per_ms = 1000000.0 * 100000 / (t_a + t_b + t_h + 1) * 3;
	n_a = per_ms * 0.52;
	n_b = per_ms * 0.28;
	n_h = per_ms * 0.20;
	t_a = t_b = t_h = 0;
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		work();
	double w = t_a + t_b + t_h;
	printf("{\"a\": %.5f, \"b\": %.5f, \"h\": %.5f, \"work_s\": %.4f}\n", t_a / w, t_b / w,
	       t_h / w, w / 1e9);
	return 0;
}
