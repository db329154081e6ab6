// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tail profiles' ground truth (docs/tail.md): one thread serves REQS requests between
 * req_begin() and req_end(); each does about 1 ms of CPU in common_part(), and 1.5 % of them
 * (chosen at random, a fixed seed) 10 ms more in slow_path(). The program times each request
 * and each part itself and prints, as one JSON line: the requests, the slow ones, the CPU
 * time of each part (and of the common part inside slow requests), the requests' own p99
 * and how many took at least it, and at least argv[2] ms (default 5). argv[1]: the requests
 * (default 5000). With argv[3] "abandon", it then begins one request more in slow_path and
 * begins another before it ends (abandoned), and a last one that a second thread begins and
 * exits inside (abandoned too); "abandoned" in its line says how many (2).
 */
#include <string.h>

#include "workload.h"

#define SLOW_PER_MILLE 15

static uint64_t common_iters, slow_iters;

NOINLINE void req_begin(long id)
{
	__asm__ volatile("" : : "r"(id) : "memory");
}

NOINLINE void req_end(long id)
{
	__asm__ volatile("" : : "r"(id) : "memory");
}

NOINLINE void common_part(void)
{
	uint64_t n = jittered(common_iters);

	SPIN_BODY(n);
	BARRIER();
}

NOINLINE void slow_path(void)
{
	uint64_t n = jittered(slow_iters);

	SPIN_BODY(n);
	BARRIER();
}

static uint64_t thread_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* A request begun on a thread of its own that exits inside it. */
static void *begin_and_exit(void *arg)
{
	(void)arg;
	req_begin(-3);
	slow_path();
	return NULL;
}

/* Two requests abandoned, their samples in slow_path: one begun again before its end, one
 * whose thread exits inside it. */
static void abandon_two(void)
{
	pthread_t th;

	req_begin(-1);
	slow_path();
	req_begin(-2);
	req_end(-2);
	pthread_create(&th, NULL, begin_and_exit, NULL);
	pthread_join(th, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

NOINLINE void handle(long id, int slow, uint64_t *common_ns, uint64_t *slow_ns)
{
	uint64_t t0, t1, t2;

	req_begin(id);
	t0 = thread_ns();
	common_part();
	t1 = thread_ns();
	if (slow)
		slow_path();
	t2 = thread_ns();
	req_end(id);
	*common_ns = t1 - t0;
	*slow_ns = t2 - t1;
}

int main(int argc, char **argv)
{
	long reqs = argc > 1 ? atol(argv[1]) : 5000;
	uint64_t at_ns = (uint64_t)((argc > 2 ? atof(argv[2]) : 5) * 1e6);
	uint64_t *dur = calloc(reqs, sizeof(*dur)), *sorted = calloc(reqs, sizeof(*sorted));
	uint64_t common = 0, slowpart = 0, slow_common = 0, rnd = 0x2545f4914f6cdd1dull, p99;
	long nslow = 0, above = 0, slow_above = 0, above_at = 0;
	char *isslow = calloc(reqs, 1);

	if (!dur || !sorted || !isslow || reqs < 1)
		return 1;
	common_iters = calibrate(1000000);
	slow_iters = calibrate(10000000);
	for (long i = 0; i < reqs; i++) {
		uint64_t c, s, w0;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		isslow[i] = rnd % 1000 < SLOW_PER_MILLE;
		w0 = wall_ns();
		handle(i, isslow[i], &c, &s);
		dur[i] = wall_ns() - w0;
		common += c;
		slowpart += s;
		if (isslow[i]) {
			nslow++;
			slow_common += c;
		}
	}
	if (argc > 3 && !strcmp(argv[3], "abandon"))
		abandon_two();
	memcpy(sorted, dur, reqs * sizeof(*dur));
	qsort(sorted, reqs, sizeof(*sorted), cmp_u64);
	p99 = sorted[(reqs * 99 + 99) / 100 - 1];
	for (long i = 0; i < reqs; i++) {
		above += dur[i] >= p99;
		slow_above += dur[i] >= p99 && isslow[i];
		above_at += dur[i] >= at_ns;
	}
	printf("{\"requests\": %ld, \"slow\": %ld, \"common_ns\": %llu, \"slow_ns\": %llu, "
	       "\"slow_common_ns\": %llu, \"p99_ns\": %llu, \"above_p99\": %ld, "
	       "\"slow_above_p99\": %ld, \"at_ns\": %llu, \"above_at\": %ld, \"abandoned\": %d}\n",
	       reqs, nslow, (unsigned long long)common, (unsigned long long)slowpart,
	       (unsigned long long)slow_common, (unsigned long long)p99, above, slow_above,
	       (unsigned long long)at_ns, above_at, argc > 3 && !strcmp(argv[3], "abandon") ? 2 : 0);
	return 0;
}
