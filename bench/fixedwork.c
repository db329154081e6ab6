// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fixed amount of CPU work, for target-slowdown ratios: `fixedwork UNITS [MAX_WALL_S]` runs
 * UNITS units of arithmetic, each through a call chain eight frames deep (so a stack walk
 * has frames to walk), then prints the CPU and wall time the work took:
 *   {"units": N, "cpu_s": ..., "wall_s": ..., "proc_cpu_s": ...}
 * cpu_s/wall_s cover the work only; proc_cpu_s is the whole process (for expected sample
 * counts). A unit is a fixed number of iterations, never calibrated, so the work is the
 * same in every run and any change in time is the profiler's doing. With MAX_WALL_S it
 * stops early after that much wall time and "units" says how many it did: the time per
 * unit is still a slowdown measure, and a very slow profiler cannot stall the benchmark.
 */
#include "bench.h"

#define UNIT_ITERS 20000 /* ~10-30 us of arithmetic on current CPUs */

static volatile uint64_t sink;

NOINLINE static void leaf(void)
{
	SPIN_BODY(UNIT_ITERS);
}

/* level_N calls level_{N-1}; the barrier after the call keeps each frame on the stack */
#define LEVEL(name, next)                                                                  \
	NOINLINE static void name(void)                                                    \
	{                                                                                  \
		next();                                                                    \
		sink++;                                                                    \
		BARRIER();                                                                 \
	}
LEVEL(level1, leaf)
LEVEL(level2, level1)
LEVEL(level3, level2)
LEVEL(level4, level3)
LEVEL(level5, level4)
LEVEL(level6, level5)
LEVEL(level7, level6)

int main(int argc, char **argv)
{
	uint64_t units = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000, u;
	double max_wall = argc > 2 ? atof(argv[2]) : 0;
	uint64_t c0 = cpu_ns(), w0 = wall_ns(), deadline = w0 + (uint64_t)(max_wall * 1e9);

	for (u = 0; u < units; u++) {
		if (max_wall > 0 && (u & 63) == 0 && wall_ns() > deadline)
			break;
		level7();
	}
	uint64_t c1 = cpu_ns(), w1 = wall_ns();
	printf("{\"units\": %llu, \"cpu_s\": %.6f, \"wall_s\": %.6f, \"proc_cpu_s\": %.6f}\n",
	       (unsigned long long)u, (c1 - c0) / 1e9, (w1 - w0) / 1e9, c1 / 1e9);
	return 0;
}
