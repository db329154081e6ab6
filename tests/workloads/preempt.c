// SPDX-License-Identifier: GPL-2.0-only
/* Two spinning threads pinned to one CPU: each is runnable but preempted half the time. */
#include <pthread.h>
#include <sched.h>

#include "workload.h"

static uint64_t chunk, end_ns;

NOINLINE void contended_spin(void) { SPIN_BODY(chunk); }

static void *spin(void *arg)
{
	while (wall_ns() < end_ns)
		contended_spin();
	return arg;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	cpu_set_t one;
	pthread_t th[2];

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return 1;
	chunk = calibrate(100000);
	end_ns = wall_ns() + secs * 1e9;
	pthread_create(&th[0], NULL, spin, NULL);
	pthread_create(&th[1], NULL, spin, NULL);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("{\"threads\": 2, \"cpus\": 1}\n");
	return 0;
}
