// SPDX-License-Identifier: GPL-2.0-only
/* One thread alternating ~20 ms of spinning with ~20 ms of sleep; reports wall-time shares. */
#include "workload.h"

static uint64_t chunk;

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
	uint64_t in_spin = 0, in_sleep = 0, t0, t1, start = wall_ns(), end;

	/* wall_s is the whole life of the thread, calibration included; the shares are the loop's */
	chunk = calibrate(20000000);
	end = wall_ns() + secs * 1e9;
	while ((t0 = wall_ns()) < end) {
		spin_part();
		t1 = wall_ns();
		sleep_part();
		in_spin += t1 - t0;
		in_sleep += wall_ns() - t1;
	}
	double loop = in_spin + in_sleep, total = wall_ns() - start;

	printf("{\"spin\": %.5f, \"sleep\": %.5f, \"wall_s\": %.4f}\n", in_spin / loop,
	       in_sleep / loop, total / 1e9);
	return 0;
}
