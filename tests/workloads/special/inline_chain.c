// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two levels of inlining: leaf_work is inlined into mid_work, which is inlined into top_work,
 * a real function. Each frame of a sample in leaf_work must carry its own line: leaf_work the
 * line of the code, mid_work and top_work the lines of their inlined calls, which the test
 * finds by the marker comments. Built -O2 -g.
 */
#include "../workload.h"

static uint64_t chunk;

static inline __attribute__((always_inline)) void leaf_work(void)
{
	SPIN_BODY(chunk); /* LINE leaf_work body */
}

static inline __attribute__((always_inline)) void mid_work(void)
{
	leaf_work(); /* CALL leaf_work */
	BARRIER();
}

NOINLINE void top_work(void)
{
	mid_work(); /* CALL mid_work */
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end;

	chunk = calibrate(20000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		top_work();
	printf("{\"inline_levels\": 2}\n");
	return 0;
}
