// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call counting's ground truth (docs/count.md): exact call counts, self and self+children times
 * measured by the program itself (wall clock around each activation), recursion 20 and 100
 * deep (past the kernel's 64 nested return probes), a longjmp out of three frames, a function
 * that sleeps (REAL counts its time, VIRTUAL does not), and a thread that exits inside a
 * counted function. Prints what it did as one JSON line.
 *
 * Usage: calls [SPIN_MS]   (SPIN_MS: each parent's and child's own work, default 4)
 */
#include <pthread.h>
#include <setjmp.h>

#include "workload.h"

#define EXACT 10000
#define PAIRS 60
#define REC_RUNS 30
#define JUMPS 10
#define NAPS 10

static uint64_t child_total_ns, parent_total_ns;
static int depth;
static jmp_buf jb;

NOINLINE void exact(void)
{
	BARRIER();
}

NOINLINE void child(uint64_t iters)
{
	SPIN_BODY(iters);
	BARRIER();
}

NOINLINE void parent(uint64_t iters)
{
	uint64_t t0;

	SPIN_BODY(iters);
	t0 = wall_ns();
	child(iters);
	child_total_ns += wall_ns() - t0;
	BARRIER();
}

NOINLINE int rec20(int d)
{
	int r = d ? rec20(d - 1) : 0;

	BARRIER();
	return r + 1;
}

NOINLINE int rec100(int d)
{
	int r = d ? rec100(d - 1) : 0;

	BARRIER();
	return r + 1;
}

NOINLINE void lj_c(void)
{
	longjmp(jb, 1);
}

NOINLINE void lj_b(void)
{
	lj_c();
	BARRIER();
}

NOINLINE void lj_a(void)
{
	lj_b();
	BARRIER();
}

NOINLINE void after_jumps(void)
{
	BARRIER();
}

/* Asleep, not on a CPU: REAL counts it, VIRTUAL does not. */
NOINLINE void nap(void)
{
	struct timespec ts = { 0, 20000000 };

	nanosleep(&ts, NULL);
	BARRIER();
}

NOINLINE void dies_inside(void)
{
	pthread_exit(NULL);
}

static void *thread_main(void *arg)
{
	(void)arg;
	dies_inside();
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t iters = calibrate((argc > 1 ? atoi(argv[1]) : 4) * 1000000ULL);
	uint64_t t0, nap_ns;
	volatile int jumps = 0;
	pthread_t th;

	for (int i = 0; i < EXACT; i++)
		exact();
	for (int i = 0; i < PAIRS; i++) {
		t0 = wall_ns();
		parent(iters);
		parent_total_ns += wall_ns() - t0;
	}
	for (int i = 0; i < REC_RUNS; i++)
		depth += rec20(20) + rec100(100);
	if (setjmp(jb) == 0 || ++jumps < JUMPS)
		lj_a();
	after_jumps();
	t0 = wall_ns();
	for (int i = 0; i < NAPS; i++)
		nap();
	nap_ns = wall_ns() - t0;
	pthread_create(&th, NULL, thread_main, NULL);
	pthread_join(th, NULL);
	printf("{\"exact\": %d, \"pairs\": %d, \"parent_total_ns\": %llu, \"parent_self_ns\": %llu, "
	       "\"child_total_ns\": %llu, \"rec20\": %d, \"rec100\": %d, \"depth_sum\": %d, "
	       "\"jumps\": %d, \"naps\": %d, \"nap_ns\": %llu}\n",
	       EXACT, PAIRS, (unsigned long long)parent_total_ns,
	       (unsigned long long)(parent_total_ns - child_total_ns),
	       (unsigned long long)child_total_ns, REC_RUNS * 21, REC_RUNS * 101, depth, jumps, NAPS,
	       (unsigned long long)nap_ns);
	return 0;
}
