// SPDX-License-Identifier: GPL-2.0-only
/*
 * hot_inline is always inlined into outer (about 70% of the work; the share is measured and
 * printed);
 * with DWARF, pcmon lists it as a procedure of its own. Built -O2 -g, and also stripped
 * with its debug info kept separately (by build-id and by .gnu_debuglink).
 */
#include "../workload.h"

static uint64_t chunk, round_chunk, t_inline, t_outer;

static inline __attribute__((always_inline)) void hot_inline(void)
{
	SPIN_BODY(round_chunk * 7);
}

NOINLINE void outer(void)
{
	uint64_t t0 = cpu_ns(), t1;

	hot_inline();
	t1 = cpu_ns();
	SPIN_BODY(round_chunk * 3);
	t_outer += cpu_ns() - t0;
	t_inline += t1 - t0;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end;

	chunk = calibrate(20000);
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end) {
		round_chunk = jittered(chunk); /* rounds of random length: no aliasing */
		outer();
	}
	printf("{\"inline_share_of_outer\": %.4f}\n", (double)t_inline / t_outer);
	return 0;
}
