/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for the benchmark workloads in bench/: those of the test workloads (timing,
 * SPIN_BODY, calibrate, system calls from frame-pointer code), plus the start-up handshake.
 * Every workload measures itself and prints one JSON line on stdout.
 */
#ifndef PCMON_BENCH_H
#define PCMON_BENCH_H

#include <pthread.h>
#include <stdatomic.h>

#include "../tests/workloads/workload.h"

/* Tell the harness we are set up (it attaches a profiler to our pid after this line). */
static inline void say_ready(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
}

/*
 * Start @n threads running @fn (argument: 1..n), wait until each has counted itself in
 * @started, tell the harness, let them run @secs, then set @stop and join them.
 */
static inline int run_threads(int n, pthread_t *t, const pthread_attr_t *attr,
			      void *(*fn)(void *), atomic_int *started, atomic_int *stop, double secs,
			      const char *who)
{
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], attr, fn, (void *)(i + 1))) {
			fprintf(stderr, "%s: pthread_create failed\n", who);
			return 1;
		}
	while (atomic_load(started) < n)
		do_nanosleep(1000000);
	say_ready();
	do_nanosleep((uint64_t)(secs * 1e9));
	atomic_store(stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}

#endif
