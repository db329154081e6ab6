// SPDX-License-Identifier: GPL-2.0-only
/*
 * Spins for SECONDS in spin_here, then says when (CLOCK_MONOTONIC) it blocks, for good, in
 * wait_here: an open REAL interval whose start the test knows.
 */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

NOINLINE void spin_here(double secs)
{
	uint64_t end = wall_ns() + secs * 1e9;

	while (wall_ns() < end)
		;
}

NOINLINE void wait_here(void)
{
	pause();
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep wait_here on the stack */
}

int main(int argc, char **argv)
{
	spin_here(arg_seconds(argc, argv, 0.5));
	printf("{\"blocked_at_ns\": %llu}\n", (unsigned long long)wall_ns());
	fflush(stdout);
	wait_here();
	return 0;
}
