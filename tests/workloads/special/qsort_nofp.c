// SPDX-License-Identifier: GPL-2.0-only
/*
 * Built with -O2 -fomit-frame-pointer: libc's qsort calls an expensive comparator. A
 * frame-pointer walk from inside the comparator loses qsort and main; CFI does not.
 */
#include "../workload.h"

static int cmp_cost = 2000;

NOINLINE int slow_compare(const void *a, const void *b)
{
	volatile uint64_t x = 1;

	for (int i = 0; i < cmp_cost; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t end = wall_ns() + secs * 1e9;
	int v[512];

	while (wall_ns() < end) {
		for (int i = 0; i < 512; i++)
			v[i] = (i * 7919) % 512;
		qsort(v, 512, sizeof(v[0]), slow_compare);
	}
	printf("{\"sorted\": %d}\n", v[0]);
	return 0;
}
