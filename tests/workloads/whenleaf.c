// SPDX-License-Identifier: GPL-2.0-only
/*
 * WHEN at probes' ground truth (docs/when.md, "At probes"): one leaf procedure reached on
 * three paths in known numbers, each call timed by the program itself:
 *
 *   main -> via_a -> leaf            50 times (a direct call)
 *   main -> via_b -> mid -> leaf     30 times
 *   main -> leaf                     20 times
 *
 * Prints its counts, the wall and CPU time of the leaf's calls on each path (timed by the
 * leaf, inside its probes), and the time the thread waited on a run queue around them, as
 * one JSON line.
 * Usage: whenleaf [LEAF_US]   (each leaf call's work, default 200 us)
 */
#include <fcntl.h>

#include "workload.h"

static uint64_t leaf_ns[3], leaf_cpu_ns[3], leaf_wait_ns[3];
static int schedstat_fd = -1;

/*
 * The time this thread has waited on a run queue so far (/proc/thread-self/schedstat, ns;
 * 0 where it is not told). A leg's time and the leaf's own clock may differ by a preemption
 * at a probe that the leg could not take off: the tests allow what the thread waited around
 * the calls, and no more.
 */
static uint64_t waited_ns(void)
{
	unsigned long long run, wait;
	char b[96];
	ssize_t n;

	if (schedstat_fd < 0 || (n = pread(schedstat_fd, b, sizeof(b) - 1, 0)) <= 0)
		return 0;
	b[n] = 0;
	return sscanf(b, "%llu %llu", &run, &wait) == 2 ? wait : 0;
}

static inline uint64_t thread_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int path; /* the path of the leaf's call being made */

/*
 * The leaf, timing itself in wall time and in the thread's CPU time (what --virtual counts:
 * a preemption does not count there), charged to the path of its call. Timed inside, between
 * its entry probe and its return probe: a probe's trap is the profiler's cost, which it
 * takes off the call, and is the thread's CPU time too (one took 11 ms on a loaded virtual
 * machine, timed around the call).
 */
NOINLINE void leaf(uint64_t iters)
{
	uint64_t t0 = wall_ns(), c0 = thread_ns();

	SPIN_BODY(iters);
	BARRIER();
	leaf_cpu_ns[path] += thread_ns() - c0;
	leaf_ns[path] += wall_ns() - t0;
}

/*
 * A call of the leaf on path @p, and the time the thread waited around it. A macro: an
 * inlined function would be a frame of its own between the caller and the leaf.
 */
#define TIMED_LEAF(p, iters)                          \
	do {                                          \
		uint64_t w0_ = waited_ns();           \
		path = (p);                           \
		leaf(iters);                          \
		leaf_wait_ns[p] += waited_ns() - w0_; \
	} while (0)

NOINLINE void via_a(uint64_t iters)
{
	TIMED_LEAF(0, iters);
	BARRIER();
}

NOINLINE void mid(uint64_t iters)
{
	TIMED_LEAF(1, iters);
	BARRIER();
}

NOINLINE void via_b(uint64_t iters)
{
	mid(iters);
	BARRIER();
}

int main(int argc, char **argv)
{
	uint64_t iters = calibrate((argc > 1 ? atoi(argv[1]) : 200) * 1000ULL);
	int n[3] = { 0 };

	schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);

	/* interleaved, so that no path's calls are all at the start or the end: of every ten
	 * calls, five through via_a, three through via_b, two from main */
	for (int i = 0; i < 100; i++) {
		int p = i % 10 < 5 ? 0 : i % 10 < 8 ? 1 : 2;

		if (p == 0)
			via_a(iters);
		else if (p == 1)
			via_b(iters);
		else
			TIMED_LEAF(2, iters);
		n[p]++;
	}
	printf("{\"a\": %d, \"b\": %d, \"c\": %d, \"leaf_a_ns\": %llu, \"leaf_b_ns\": %llu, "
	       "\"leaf_c_ns\": %llu, \"leaf_a_cpu_ns\": %llu, \"leaf_b_cpu_ns\": %llu, "
	       "\"leaf_c_cpu_ns\": %llu, \"leaf_a_wait_ns\": %llu, \"leaf_b_wait_ns\": %llu, "
	       "\"leaf_c_wait_ns\": %llu}\n",
	       n[0], n[1], n[2], (unsigned long long)leaf_ns[0], (unsigned long long)leaf_ns[1],
	       (unsigned long long)leaf_ns[2], (unsigned long long)leaf_cpu_ns[0],
	       (unsigned long long)leaf_cpu_ns[1], (unsigned long long)leaf_cpu_ns[2],
	       (unsigned long long)leaf_wait_ns[0], (unsigned long long)leaf_wait_ns[1],
	       (unsigned long long)leaf_wait_ns[2]);
	return 0;
}
