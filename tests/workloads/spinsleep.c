// SPDX-License-Identifier: GPL-2.0-only
/*
 * One thread alternating ~20 ms of spinning with ~20 ms of sleep; reports wall-time shares,
 * and each round's start, end of spin and end (CLOCK_MONOTONIC ns), the first MAX_ROUNDS,
 * for a test that looks at a window of the run.
 */
#include "workload.h"

static uint64_t chunk;

#define MAX_ROUNDS 4096
static uint64_t rounds[MAX_ROUNDS][3];

NOINLINE void spin_part(void)
{
	SPIN_BODY(chunk);
}

NOINLINE void sleep_part(void)
{
	do_nanosleep(20000000);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep sleep_part on the stack */
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	uint64_t in_spin = 0, in_sleep = 0, t0, t1, t2, start = wall_ns(), end;
	size_t n = 0;

	/* wall_s is the whole life of the thread, calibration included; the shares are the loop's */
	chunk = calibrate(20000000);
	end = wall_ns() + secs * 1e9;
	while ((t0 = wall_ns()) < end) {
		spin_part();
		t1 = wall_ns();
		sleep_part();
		t2 = wall_ns();
		in_spin += t1 - t0;
		in_sleep += t2 - t1;
		if (n < MAX_ROUNDS) {
			rounds[n][0] = t0;
			rounds[n][1] = t1;
			rounds[n++][2] = t2;
		}
	}
	double loop = in_spin + in_sleep, total = wall_ns() - start;

	printf("{\"spin\": %.5f, \"sleep\": %.5f, \"wall_s\": %.4f, \"rounds\": [", in_spin / loop,
	       in_sleep / loop, total / 1e9);
	for (size_t i = 0; i < n; i++)
		printf("%s[%llu, %llu, %llu]", i ? ", " : "", (unsigned long long)rounds[i][0],
		       (unsigned long long)rounds[i][1], (unsigned long long)rounds[i][2]);
	printf("]}\n");
	return 0;
}
