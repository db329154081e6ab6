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

/* Procedures never called in the loop: the to nodes of legs that start at hot() (the bench
 * times a node hit with 20 legs on it). */
#define COLD(n) NOINLINE void cold_##n(void) { BARRIER(); }
COLD(0) COLD(1) COLD(2) COLD(3) COLD(4) COLD(5) COLD(6) COLD(7) COLD(8) COLD(9)
COLD(10) COLD(11) COLD(12) COLD(13) COLD(14) COLD(15) COLD(16) COLD(17) COLD(18)
static void (*const colds[])(void) = { cold_0, cold_1, cold_2, cold_3, cold_4, cold_5, cold_6,
				       cold_7, cold_8, cold_9, cold_10, cold_11, cold_12, cold_13,
				       cold_14, cold_15, cold_16, cold_17, cold_18 };

int main(int argc, char **argv)
{
	uint64_t calls = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000, t0, c0;

	t0 = wall_ns();
	c0 = cpu_ns();
	for (uint64_t i = 0; i < calls; i++)
		hot(64);
	if (argc > 2) /* never, in the bench: keeps the cold procedures */
		colds[atoi(argv[2]) % 19]();
	printf("{\"calls\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n", (unsigned long long)calls,
	       (wall_ns() - t0) / 1e9, (cpu_ns() - c0) / 1e9);
	return 0;
}
