// SPDX-License-Identifier: GPL-2.0-only
/* Recursion far deeper than the maximum stack depth: every sample's stack is truncated. */
#include "workload.h"

static uint64_t chunk;

NOINLINE void bottom(void) { SPIN_BODY(chunk); }

NOINLINE void dive(int n)
{
	if (n > 0)
		dive(n - 1);
	else
		bottom();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end;

	chunk = calibrate(1000000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		dive(argc > 2 ? atoi(argv[2]) : 1000);
	printf("{\"depth\": %d}\n", argc > 2 ? atoi(argv[2]) : 1000);
	return 0;
}
