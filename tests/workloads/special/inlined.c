// SPDX-License-Identifier: GPL-2.0-only
/*
 * hot_inline is always inlined into outer (70% of the work) and its own share is known;
 * with DWARF, pcmon lists it as a procedure of its own. Built -O2 -g, and also stripped
 * with its debug info kept separately (by build-id and by .gnu_debuglink).
 */
#include "../workload.h"

static uint64_t chunk;

static inline __attribute__((always_inline)) void hot_inline(void)
{
	SPIN_BODY(chunk * 7);
}

NOINLINE void outer(void)
{
	hot_inline();
	SPIN_BODY(chunk * 3);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end;

	chunk = calibrate(20000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		outer();
	printf("{\"inline_share_of_outer\": 0.7}\n");
	return 0;
}
