// SPDX-License-Identifier: GPL-2.0-only
/*
 * The MAINSAIL manual's story: a hot leaf called only by mid, which is called mostly by
 * caller_a and rarely by caller_b. Reports each caller's share of the time spent in leaf.
 */
#include "workload.h"

static uint64_t chunk;

NOINLINE void leaf(void) { SPIN_BODY(chunk); }

NOINLINE void mid(void)
{
	SPIN_BODY(chunk / 4);
	leaf();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void caller_a(void)
{
	mid();
	__asm__ volatile("" ::: "memory");
}

NOINLINE void caller_b(void)
{
	mid();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	uint64_t in_a = 0, in_b = 0, t0, end, total0;

	chunk = calibrate(100000);
	total0 = cpu_ns();
	end = wall_ns() + secs * 1e9;
	for (uint64_t rnd = 0x2545f4914f6cdd1dULL; wall_ns() < end;) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		t0 = cpu_ns();
		if (rnd % 5) { /* 4 in 5 calls come through caller_a */
			caller_a();
			in_a += cpu_ns() - t0;
		} else {
			caller_b();
			in_b += cpu_ns() - t0;
		}
	}
	double total = cpu_ns() - total0;
	printf("{\"caller_a\": %.5f, \"caller_b\": %.5f, \"leaf_of_mid\": 0.8, \"cpu_s\": %.4f}\n",
	       in_a / total, in_b / total, total / 1e9);
	return 0;
}
