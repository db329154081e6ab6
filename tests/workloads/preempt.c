// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two spinning threads pinned to one CPU: each is runnable but preempted about half the time
 * (more on a busy machine). Each measures its own wall and CPU time from its creation: a
 * spinner never blocks, so the difference is the time it waited, runnable, the wait before
 * it first ran included (on a busy machine a new thread can wait a tenth of a second). The
 * main thread, pinned to the same CPU, is runnable too while it creates the second spinner
 * and once the joins return (a quarter of a second on a busy machine): its wait on the run
 * queue is the kernel's count (schedstat), as it also blocks. The sum is printed.
 */
#include <pthread.h>

#include "workload.h"

static uint64_t chunk, end_ns;

struct spinner {
	uint64_t created_ns;	/* wall time just before pthread_create() */
	uint64_t first_wait_ns;	/* of waited_ns, before it first ran (not yet in its code) */
	uint64_t waited_ns;
};
static struct spinner sp[2];

NOINLINE void contended_spin(void) { SPIN_BODY(chunk); }

static void *spin(void *arg)
{
	struct spinner *s = arg;

	s->first_wait_ns = (wall_ns() - s->created_ns) - clock_ns(CLOCK_THREAD_CPUTIME_ID);
	while (wall_ns() < end_ns)
		contended_spin();
	/* (the thread's CPU clock starts at its creation) */
	s->waited_ns = (wall_ns() - s->created_ns) - clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return arg;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t main_wait;
	pthread_t th[2];

	if (pin_to_cpu(0))
		return 1;
	main_wait = run_delay_ns();
	chunk = calibrate(100000);
	end_ns = wall_ns() + secs * 1e9;
	for (int i = 0; i < 2; i++) {
		sp[i].created_ns = wall_ns();
		pthread_create(&th[i], NULL, spin, &sp[i]);
	}
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	main_wait = run_delay_ns() - main_wait;
	printf("{\"threads\": 2, \"cpus\": 1, \"runnable_s\": %.4f, \"first_wait_s\": %.4f, \"main_runnable_s\": %.4f}\n",
	       (sp[0].waited_ns + sp[1].waited_ns + main_wait) / 1e9,
	       (sp[0].first_wait_ns + sp[1].first_wait_ns) / 1e9, main_wait / 1e9);
	return 0;
}
