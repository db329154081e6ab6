// SPDX-License-Identifier: GPL-2.0-only
/*
 * Blocks in libc, as real programs do (libc has no frame pointers): two threads wait in
 * pthread_cond_wait (park_here) for the whole run, while main naps in libc's nanosleep
 * (nap_here) for SECONDS; then it wakes them and joins them. Says when the threads are
 * parked (CLOCK_MONOTONIC), so that a test lists them while they are still blocked.
 */
#include <pthread.h>
#include <time.h>

#include "workload.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int parked, done;

NOINLINE void park_here(void)
{
	pthread_mutex_lock(&lock);
	parked++;
	while (!done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	BARRIER();
}

static void *waiter(void *arg)
{
	park_here();
	return arg;
}

NOINLINE void nap_here(void)
{
	struct timespec ts = { 0, 10000000 };

	nanosleep(&ts, NULL);
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t t0 = wall_ns(), end;
	pthread_t th[2];
	int n = 0;

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, waiter, NULL);
	while (n < 2) {
		pthread_mutex_lock(&lock);
		n = parked;
		pthread_mutex_unlock(&lock);
		nap_here();
	}
	printf("{\"parked_at_ns\": %llu}\n", (unsigned long long)wall_ns());
	fflush(stdout);
	end = t0 + secs * 1e9;
	while (wall_ns() < end)
		nap_here();
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("{\"wall_s\": %.6f}\n", (wall_ns() - t0) / 1e9);
	return 0;
}
