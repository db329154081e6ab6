// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two spinning threads pinned to one CPU: each is runnable but preempted about half the time
 * (more on a busy machine). Each measures its own wall and CPU time: a spinner never blocks,
 * so the difference is the time it waited, runnable; the sum is printed.
 */
#include <pthread.h>

#include "workload.h"

static uint64_t chunk, end_ns;
static uint64_t waited_ns[2];

NOINLINE void contended_spin(void) { SPIN_BODY(chunk); }

static void *spin(void *arg)
{
	uint64_t w0 = wall_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (wall_ns() < end_ns)
		contended_spin();
	*(uint64_t *)arg = (wall_ns() - w0) - (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
	return arg;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	pthread_t th[2];

	if (pin_to_cpu(0))
		return 1;
	chunk = calibrate(100000);
	end_ns = wall_ns() + secs * 1e9;
	pthread_create(&th[0], NULL, spin, &waited_ns[0]);
	pthread_create(&th[1], NULL, spin, &waited_ns[1]);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("{\"threads\": 2, \"cpus\": 1, \"runnable_s\": %.4f}\n",
	       (waited_ns[0] + waited_ns[1]) / 1e9);
	return 0;
}
