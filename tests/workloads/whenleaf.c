// SPDX-License-Identifier: GPL-2.0-only
/*
 * WHEN at probes' ground truth (docs/when.md, "At probes"): one leaf procedure reached on
 * three paths in known numbers, each call timed by the program itself:
 *
 *   main -> via_a -> leaf            50 times (a direct call)
 *   main -> via_b -> mid -> leaf     30 times
 *   main -> leaf                     20 times
 *
 * Prints its counts and the wall and CPU time of the leaf's calls on each path as one JSON
 * line.
 * Usage: whenleaf [LEAF_US]   (each leaf call's work, default 200 us)
 */
#include "workload.h"

static uint64_t leaf_ns[3], leaf_cpu_ns[3];

NOINLINE void leaf(uint64_t iters)
{
	SPIN_BODY(iters);
	BARRIER();
}

/*
 * The leaf's call, timed in wall time and in the thread's CPU time (what --virtual counts:
 * a preemption between the clock and the probe does not count there), charged to path @p.
 * A macro: an inlined function would be a frame of its own between the caller and the leaf.
 */
#define TIMED_LEAF(p, iters)                                  \
	do {                                                  \
		uint64_t t0_ = wall_ns(), c0_ = thread_ns();  \
		leaf(iters);                                  \
		leaf_cpu_ns[p] += thread_ns() - c0_;          \
		leaf_ns[p] += wall_ns() - t0_;                \
	} while (0)

static inline uint64_t thread_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

NOINLINE void via_a(uint64_t iters)
{
	TIMED_LEAF(0, iters);
	BARRIER();
}

NOINLINE void mid(uint64_t iters)
{
	TIMED_LEAF(1, iters);
	BARRIER();
}

NOINLINE void via_b(uint64_t iters)
{
	mid(iters);
	BARRIER();
}

int main(int argc, char **argv)
{
	uint64_t iters = calibrate((argc > 1 ? atoi(argv[1]) : 200) * 1000ULL);
	int n[3] = { 0 };

	/* interleaved, so that no path's calls are all at the start or the end: of every ten
	 * calls, five through via_a, three through via_b, two from main */
	for (int i = 0; i < 100; i++) {
		int p = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2;

		if (p == 0)
			via_a(iters);
		else if (p == 1)
			via_b(iters);
		else
			TIMED_LEAF(2, iters);
		n[p]++;
	}
	printf("{\"a\": %d, \"b\": %d, \"c\": %d, \"leaf_a_ns\": %llu, \"leaf_b_ns\": %llu, "
	       "\"leaf_c_ns\": %llu, \"leaf_a_cpu_ns\": %llu, \"leaf_b_cpu_ns\": %llu, "
	       "\"leaf_c_cpu_ns\": %llu}\n",
	       n[0], n[1], n[2], (unsigned long long)leaf_ns[0], (unsigned long long)leaf_ns[1],
	       (unsigned long long)leaf_ns[2], (unsigned long long)leaf_cpu_ns[0],
	       (unsigned long long)leaf_cpu_ns[1], (unsigned long long)leaf_cpu_ns[2]);
	return 0;
}
