// SPDX-License-Identifier: GPL-2.0-only
/*
 * Every sample a stack not seen before: a call path 32 calls deep, each step through one of
 * two functions picked by a pseudo-random bit, so there are 2^32 paths. For tests of what
 * happens when results grow (memory allowances). argv: seconds of CPU time (default 2), so
 * that a busy machine makes as many stacks as a quiet one.
 */
#include "workload.h"

static uint64_t state = 88172645463325252ULL;

static uint64_t next_bit(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state & 1;
}

NOINLINE void step_a(int n);
NOINLINE void step_b(int n);

NOINLINE void leaf(void) { SPIN_BODY(2000); }

NOINLINE void step_a(int n)
{
	if (n)
		next_bit() ? step_a(n - 1) : step_b(n - 1);
	else
		leaf();
	BARRIER();
}

NOINLINE void step_b(int n)
{
	if (n)
		next_bit() ? step_a(n - 1) : step_b(n - 1);
	else
		leaf();
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end = cpu_ns() + secs * 1e9;

	printf("ready\n");
	fflush(stdout);
	while (cpu_ns() < end)
		step_a(32);
	return 0;
}
