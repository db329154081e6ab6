// SPDX-License-Identifier: GPL-2.0-only
/*
 * `threads N spin|sleep SECONDS`: N threads that either spin (arithmetic in spin_leaf) or
 * sleep (100 ms nanosleeps in sleep_leaf) for SECONDS, to see how a profiler's cost grows
 * with the number of target threads. Prints "ready PID" once every thread is running, and
 * {"threads": N, "mode": ..., "proc_cpu_s": ...} at the end.
 */
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static atomic_int stop, started;
static uint64_t chunk;

NOINLINE static void spin_leaf(void)
{
	SPIN_BODY(chunk);
}

NOINLINE static void sleep_leaf(void)
{
	do_nanosleep(100000000);
	BARRIER();
}

NOINLINE static void *spinner(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop))
		spin_leaf();
	BARRIER();
	return NULL;
}

NOINLINE static void *sleeper(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop))
		sleep_leaf();
	BARRIER();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	int spin = argc > 2 ? strcmp(argv[2], "sleep") != 0 : 1;
	double secs = argc > 3 ? atof(argv[3]) : 5;
	pthread_t *t = calloc(n, sizeof(*t));
	pthread_attr_t attr;

	chunk = calibrate(100000); /* 0.1 ms pieces: threads see `stop` soon */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (run_threads(n, t, &attr, spin ? spinner : sleeper, &started, &stop, secs, "threads"))
		return 1;
	printf("{\"threads\": %d, \"mode\": \"%s\", \"proc_cpu_s\": %.6f}\n", n,
	       spin ? "spin" : "sleep", cpu_ns() / 1e9);
	return 0;
}
