// SPDX-License-Identifier: GPL-2.0-only
/* Recursion: rec() calls itself DEPTH deep, spinning at every level; leaf() spins at the bottom. */
#include "workload.h"

#define DEPTH 8
static uint64_t chunk;

NOINLINE void leaf(void) { SPIN_BODY(chunk * 2); }

NOINLINE void rec(int n)
{
	SPIN_BODY(chunk);
	if (n > 0)
		rec(n - 1);
	else
		leaf();
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep the frame */
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	uint64_t end, total0 = cpu_ns();

	chunk = calibrate(50000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		rec(DEPTH);
	printf("{\"depth\": %d, \"cpu_s\": %.4f}\n", DEPTH, (cpu_ns() - total0) / 1e9);
	return 0;
}
