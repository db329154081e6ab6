// SPDX-License-Identifier: GPL-2.0-only
/*
 * Legs that nest, overlap and recurse, each timed by the program itself. Four threads serve
 * REQS requests each:
 *
 *   req_begin  step x STEPS  [work_short .. return]  mid  req_end  after
 *
 * work_short runs in every other request (the other half spin as long in the request's own
 * code), so the leg work_short -> work_short%return nests inside req_begin -> req_end; the
 * line marked STEP_LINE runs STEPS times inside every request (a FILE:LINE node hit many
 * times inside the leg); mid -> after overlaps req_begin -> req_end. A fifth thread begins a
 * request and exits inside it. Then main recurses REC_CALLS times through rec(), REC_DEPTH
 * deep (a second from before the to). Prints the counts, each leg's mean as measured here,
 * and every request's duration.
 */
#include <pthread.h>
#include <semaphore.h>

#include "workload.h"

#define THREADS 4
#define REQS 24		/* per thread */
#define STEPS 8
#define REC_CALLS 50
#define REC_DEPTH 3

static uint64_t step_iters, work_iters, gap_iters;
static uint64_t req_ns[THREADS][REQS], short_ns[THREADS], overlap_ns[THREADS];
/* of that, the time the thread did not run (its wall time less its CPU time): a wait that
 * falls outside a leg (a preemption as a probe returns) is in the program's time alone */
static uint64_t req_wait[THREADS], short_wait[THREADS], overlap_wait[THREADS];
static uint64_t each_wait[THREADS][REQS];

static uint64_t thread_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Of @wall ns, the part the thread did not run (its CPU clock may read a little ahead). */
static uint64_t waited(uint64_t wall, uint64_t cpu)
{
	return wall > cpu ? wall - cpu : 0;
}
static volatile uint64_t sink;
/* at most as many requests at once as there are CPUs: a thread waiting for one would put
 * the scheduler's delays, not the code's time, into the durations both sides measure */
static sem_t cpus;

/* Each does a little of its own: a node is a probe on a real first instruction (stepped
 * out of line, as most are in code without frame pointers), not on a bare `ret`. */
static volatile long seen;
NOINLINE void req_begin(long size) { seen = seen + size; }
NOINLINE void req_end(long size) { seen = seen - size; }
NOINLINE void mid(void) { seen = seen + 1; }
NOINLINE void after(void) { seen = seen - 1; }

NOINLINE void work_short(void)
{
	SPIN_BODY(work_iters);
}

NOINLINE void rec(int n)
{
	if (n > 0)
		rec(n - 1);
	else
		SPIN_BODY(step_iters);
	BARRIER();
}

static void *serve(void *arg)
{
	long me = (long)arg;

	for (int i = 0; i < REQS; i++) {
		uint64_t t0, t1, t2, tm, c0, c1, cm;

		sem_wait(&cpus);
		c0 = thread_ns();
		t0 = wall_ns();
		req_begin(i);
		for (int k = 0; k < STEPS; k++) {
			sink = sink + k; /* STEP_LINE */
			SPIN_BODY(step_iters);
		}
		if (i & 1) {
			c1 = thread_ns();
			t1 = wall_ns();
			work_short();
			t2 = wall_ns();
			short_ns[me] += t2 - t1;
			short_wait[me] += waited(t2 - t1, thread_ns() - c1);
		} else {
			SPIN_BODY(work_iters);
		}
		cm = thread_ns();
		tm = wall_ns();
		mid();
		SPIN_BODY(gap_iters);
		req_end(i);
		req_ns[me][i] = wall_ns() - t0;
		each_wait[me][i] = waited(req_ns[me][i], thread_ns() - c0);
		req_wait[me] += each_wait[me][i];
		SPIN_BODY(gap_iters);
		after();
		overlap_ns[me] += wall_ns() - tm;
		overlap_wait[me] += waited(wall_ns() - tm, thread_ns() - cm);
		sem_post(&cpus);
	}
	return NULL;
}

static void *leave_inside(void *arg)
{
	(void)arg;
	req_begin(-1);
	pthread_exit(NULL);
}

int main(void)
{
	uint64_t sh = 0, ov = 0, rq = 0, wr = 0, ws = 0, wo = 0;

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	sem_init(&cpus, 0, ncpu > 1 ? 2 : 1);
	/* a request about 1.5 x 2^21 ns, far from the log buckets' edges */
	step_iters = calibrate(150000);
	work_iters = calibrate(1045728);
	gap_iters = calibrate(500000);
	spawn_join(serve, THREADS);
	spawn_join(leave_inside, 1); /* begins a request and exits inside it */
	for (int i = 0; i < REC_CALLS; i++)
		rec(REC_DEPTH - 1);
	for (int i = 0; i < THREADS; i++) {
		sh += short_ns[i];
		ov += overlap_ns[i];
		wr += req_wait[i];
		ws += short_wait[i];
		wo += overlap_wait[i];
		for (int k = 0; k < REQS; k++)
			rq += req_ns[i][k];
	}
	printf("{\"threads\": %d, \"requests\": %d, \"short\": %d, \"steps\": %d, "
	       "\"rec_calls\": %d, \"rec_depth\": %d, \"req_mean_ns\": %.0f, "
	       "\"short_mean_ns\": %.0f, \"overlap_mean_ns\": %.0f, \"req_wait_ns\": %.0f, "
	       "\"short_wait_ns\": %.0f, \"overlap_wait_ns\": %.0f, \"each_ns\": [",
	       THREADS, THREADS * REQS, THREADS * REQS / 2, STEPS, REC_CALLS, REC_DEPTH,
	       (double)rq / (THREADS * REQS), (double)sh / (THREADS * REQS / 2),
	       (double)ov / (THREADS * REQS), (double)wr / (THREADS * REQS),
	       (double)ws / (THREADS * REQS / 2), (double)wo / (THREADS * REQS));
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < REQS; k++)
			printf("%s%llu", i + k ? ", " : "", (unsigned long long)req_ns[i][k]);
	printf("], \"each_wait_ns\": [");
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < REQS; k++)
			printf("%s%llu", i + k ? ", " : "", (unsigned long long)each_wait[i][k]);
	printf("]}\n");
	return 0;
}
