// SPDX-License-Identifier: GPL-2.0-only
/*
 * Built with -O2 -fno-omit-frame-pointer only: GCC gives leaf functions no frame, so a
 * frame-pointer walk from inside leaf_work skips its caller, middle_work.
 */
#include "../workload.h"

static uint64_t chunk;
volatile uint64_t sink;

/* registers only, no stack: GCC sets up no frame here */
__attribute__((noipa)) uint64_t leaf_work(uint64_t n)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

NOINLINE void middle_work(void)
{
	sink = leaf_work(chunk);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end;

	chunk = calibrate(200000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		middle_work();
	printf("{\"done\": 1}\n");
	return 0;
}
