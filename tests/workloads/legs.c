// SPDX-License-Identifier: GPL-2.0-only
/*
 * Legs' ground truth (docs/legs.md): 4 threads serve requests between req_begin(size) and
 * req_end(size), small ones (about 3.1 ms of work) and large ones (about 12.6 ms), each timed
 * by the thread itself; req_end ends a small request in end_small() and a large one in
 * end_large(), so that a leg to each times one kind. A fifth thread begins a request and
 * exits inside it. A USDT probe legs:tick fires once per request. Prints the counts, the
 * mean of each kind, each request's duration, and the sizes.
 */
#include <pthread.h>
#include <sys/sdt.h>

#include "workload.h"

#define THREADS 4
#define REQS 20		/* per thread, half small, half large */
#define SMALL 100
#define LARGE 1000

static uint64_t small_iters, large_iters;
static uint64_t small_ns[THREADS], large_ns[THREADS], each_ns[THREADS][REQS];
/* of small_ns and large_ns, the time the thread waited for a CPU (run_delay_ns()) */
static uint64_t small_wait[THREADS], large_wait[THREADS];

NOINLINE void req_begin(long size)
{
	__asm__ volatile("" : : "r"(size) : "memory");
}

NOINLINE void end_small(void)
{
	BARRIER();
}

NOINLINE void end_large(void)
{
	BARRIER();
}

/* Each request's duration as the thread measured it: a node can record it (argument 0). */
NOINLINE void report(uint64_t ns)
{
	__asm__ volatile("" : : "r"(ns) : "memory");
}

NOINLINE void req_end(long size)
{
	if (size == LARGE)
		end_large();
	else
		end_small();
	BARRIER();
}

static void *serve(void *arg)
{
	long me = (long)arg;

	for (int i = 0; i < REQS; i++) {
		int large = i & 1;
		uint64_t w0 = run_delay_ns(), t0 = wall_ns(), dt;

		req_begin(large ? LARGE : SMALL);
		DTRACE_PROBE1(legs, tick, i);
		SPIN_BODY(large ? large_iters : small_iters);
		req_end(large ? LARGE : SMALL);
		dt = wall_ns() - t0;
		(large ? large_ns : small_ns)[me] += dt;
		(large ? large_wait : small_wait)[me] += run_delay_ns() - w0;
		each_ns[me][i] = dt;
		report(dt);
	}
	return NULL;
}

static void *leave_inside(void *arg)
{
	(void)arg;
	req_begin(7);
	pthread_exit(NULL);
}

int main(void)
{
	uint64_t s = 0, l = 0, sw = 0, lw = 0;

	/* mid-bucket: 1.5 x 2^21 ns and 1.5 x 2^23 ns, far from the log buckets' edges */
	small_iters = calibrate(3145728);
	large_iters = calibrate(12582912);
	spawn_join(serve, THREADS);
	spawn_join(leave_inside, 1); /* begins a request and exits inside it */
	for (int i = 0; i < THREADS; i++) {
		s += small_ns[i];
		l += large_ns[i];
		sw += small_wait[i];
		lw += large_wait[i];
	}
	printf("{\"requests\": %d, \"small\": %d, \"large\": %d, \"small_mean_ns\": %.0f, "
	       "\"large_mean_ns\": %.0f, \"small_wait_ns\": %.0f, \"large_wait_ns\": %.0f, "
	       "\"size_small\": %d, \"size_large\": %d, \"each_ns\": [",
	       THREADS * REQS, THREADS * REQS / 2, THREADS * REQS / 2,
	       (double)s / (THREADS * REQS / 2), (double)l / (THREADS * REQS / 2),
	       (double)sw / (THREADS * REQS / 2), (double)lw / (THREADS * REQS / 2), SMALL, LARGE);
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < REQS; k++)
			printf("%s%llu", i + k ? ", " : "", (unsigned long long)each_ns[i][k]);
	printf("]}\n");
	return 0;
}
