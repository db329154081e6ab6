// SPDX-License-Identifier: GPL-2.0-only
/*
 * A call-heavy program: `callheavy CALLS` calls hot() CALLS times, each doing a few hundred
 * nanoseconds of arithmetic, and prints {"calls": N, "wall_s": ..., "cpu_s": ...}. What a
 * profiler that probes hot()'s entry and return costs per call is its extra time / CALLS.
 */
#include "bench.h"

NOINLINE void hot(uint64_t iters)
{
	SPIN_BODY(iters);
	BARRIER();
}

int main(int argc, char **argv)
{
	uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000, t0, c0;

	t0 = wall_ns();
	c0 = cpu_ns();
	for (uint64_t i = 0; i < calls; i++)
		hot(64);
	printf("{\"calls\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n", (unsigned long long)calls,
	       (wall_ns() - t0) / 1e9, (cpu_ns() - c0) / 1e9);
	return 0;
}
