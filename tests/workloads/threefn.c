// SPDX-License-Identifier: GPL-2.0-only
/* Spends CPU in work_a, work_b and work_c in the proportions 5:3:2, and says how much. */
#include "workload.h"

static uint64_t chunk;

NOINLINE void work_a(void) { SPIN_BODY(chunk); }
NOINLINE void work_b(void) { SPIN_BODY(chunk); }
NOINLINE void work_c(void) { SPIN_BODY(chunk); }

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	static void (*const fn[10])(void) = { work_a, work_a, work_a, work_a, work_a,
					      work_b, work_b, work_b, work_c, work_c };
	uint64_t in[3] = { 0 }, end, t0, total0 = cpu_ns();

	chunk = calibrate(200000); /* 0.2 ms pieces */
	end = wall_ns() + secs * 1e9;
	/* pieces in random order: a fixed cycle would alias with the sampling period */
	for (uint64_t rnd = 88172645463325252ULL; wall_ns() < end;) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		unsigned f = rnd % 10, k = f < 5 ? 0 : f < 8 ? 1 : 2;

		t0 = cpu_ns();
		fn[f]();
		in[k] += cpu_ns() - t0;
	}
	double total = cpu_ns() - total0;
	/* proc_cpu_s: all of the process's CPU time, from its start (the loader's too) */
	printf("{\"work_a\": %.5f, \"work_b\": %.5f, \"work_c\": %.5f, \"cpu_s\": %.4f, "
	       "\"proc_cpu_s\": %.4f}\n",
	       in[0] / total, in[1] / total, in[2] / total, total / 1e9, cpu_ns() / 1e9);
	return 0;
}
