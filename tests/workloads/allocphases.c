// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocations in three phases of SECS seconds each (default 3), and what each site did in
 * each second of wall-clock time, for checking windows of allocations against:
 *   A: churn() allocates and frees at once;
 *   B: churn() as in A, and leak() allocates 64 KiB blocks it never frees;
 *   C: churn() again, the leak still held.
 * At the end one JSON line: the phases' bounds (wall seconds since the epoch), and by whole
 * wall second, the bytes each site allocated in it ("seconds": {"SECOND": [churn, leak]}).
 * What is live at the end of a second is the leak's bytes up to it (churn holds nothing).
 *
 * usage: allocphases [SECS]
 */
#include <string.h>
#include <time.h>

#include "workload.h"

#define LEAK_BLOCK (64u << 10)
#define MAX_SECS 64

static uint64_t rnd = 88172645463325252ULL;

/* (the workload.h clock is the monotonic one: windows are by the wall's) */
static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static uint64_t first_sec, bytes[MAX_SECS][2]; /* by second since first_sec: churn, leak */

/* the block escapes: the compiler may not take a malloc and its free away as unobserved */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static void count(int site, uint64_t n)
{
	uint64_t s = real_ns() / 1000000000ull - first_sec;

	if (s < MAX_SECS)
		bytes[s][site] += n;
}

NOINLINE void churn(void)
{
	size_t n;
	char *p;

	rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
	n = 16 + rnd % 8192;
	p = malloc(n);
	memset(p, 1, n);
	ESCAPE(p);
	count(0, n);
	free(p);
	BARRIER();
}

NOINLINE void leak(void)
{
	char *p = malloc(LEAK_BLOCK);

	memset(p, 2, LEAK_BLOCK);
	ESCAPE(p);
	count(1, LEAK_BLOCK);
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	uint64_t t[4], churns = 0;

	first_sec = real_ns() / 1000000000ull;
	t[0] = real_ns();
	for (int ph = 0; ph < 3; ph++) {
		uint64_t end = t[ph] + (uint64_t)(secs * 1e9), next = real_ns();

		/*
		 * A churn every 20 us (about 200 MB a second), a leaked block every 100 churns in
		 * B (about 32 MiB a second); the time between spent spinning.
		 */
		while ((next += 20000) < end) {
			churn();
			if (ph == 1 && ++churns % 100 == 0)
				leak();
			while (real_ns() < next)
				;
		}
		t[ph + 1] = real_ns();
	}
	printf("{\"phases\": [%.6f, %.6f, %.6f, %.6f], \"seconds\": {", t[0] / 1e9, t[1] / 1e9,
	       t[2] / 1e9, t[3] / 1e9);
	for (uint64_t s = 0, sep = 0; s < MAX_SECS; s++) {
		if (!bytes[s][0] && !bytes[s][1])
			continue;
		printf("%s\"%llu\": [%llu, %llu]", sep++ ? ", " : "",
		       (unsigned long long)(first_sec + s), (unsigned long long)bytes[s][0],
		       (unsigned long long)bytes[s][1]);
	}
	printf("}}\n");
	fflush(stdout);
	return 0;
}
