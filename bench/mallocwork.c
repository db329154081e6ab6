// SPDX-License-Identifier: GPL-2.0-only
/*
 * A malloc-heavy program for the allocation section of the benchmark (bench.py, 14):
 * `mallocwork UNITS [WORK_NS]` runs UNITS units, each a malloc of 16 bytes to 4 KiB (drawn from
 * a fixed sequence), its bytes touched, and a free: nine in ten freed at once, one in ten
 * kept in a ring of 4,096 blocks (the block it replaces freed), as a program with a working
 * set does; with WORK_NS, that many nanoseconds of spinning in each unit beside (a program
 * that does something with what it allocates). Prints {"units": N, "bytes": B, "wall_s": ..., "cpu_s": ...}: what an allocation
 * profiler costs it is its extra time for the same units.
 */
#include <string.h>

#include "bench.h"

#define RING 4096

static void *ring[RING];
static uint64_t rnd = 88172645463325252ULL;

NOINLINE static void *get(size_t n)
{
	char *p = malloc(n);

	memset(p, 1, n < 64 ? n : 64);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	uint64_t units = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000, bytes = 0, t0, c0;
	uint64_t work = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;

	t0 = wall_ns();
	c0 = cpu_ns();
	for (uint64_t i = 0; i < units; i++) {
		size_t n;
		void *p;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		n = 16 + rnd % 4080;
		p = get(n);
		bytes += n;
		for (uint64_t until = work ? wall_ns() + work : 0; wall_ns() < until;)
			;
		if (rnd % 10 == 0) {
			size_t k = (rnd >> 20) % RING;

			free(ring[k]);
			ring[k] = p;
		} else {
			free(p);
		}
	}
	printf("{\"units\": %llu, \"bytes\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f}\n",
	       (unsigned long long)units, (unsigned long long)bytes, (wall_ns() - t0) / 1e9,
	       (cpu_ns() - c0) / 1e9);
	return 0;
}
