// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fixed amount of CPU work, for target-slowdown ratios: `fixedwork UNITS` runs UNITS units
 * of arithmetic, each through a call chain eight frames deep (so a stack walk has frames to
 * walk), then prints the CPU and wall time the work took:
 *   {"units": N, "cpu_s": ..., "wall_s": ..., "proc_cpu_s": ...}
 * cpu_s/wall_s cover the work only; proc_cpu_s is the whole process (for expected sample
 * counts). A unit is a fixed number of iterations, never calibrated, so the work is the
 * same in every run and any change in time is the profiler's doing.
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
	uint64_t units = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000;
	uint64_t c0 = cpu_ns(), w0 = wall_ns();

	for (uint64_t u = 0; u < units; u++)
		level7();
	uint64_t c1 = cpu_ns(), w1 = wall_ns();
	printf("{\"units\": %llu, \"cpu_s\": %.6f, \"wall_s\": %.6f, \"proc_cpu_s\": %.6f}\n",
	       (unsigned long long)units, (c1 - c0) / 1e9, (w1 - w0) / 1e9, c1 / 1e9);
	return 0;
}
