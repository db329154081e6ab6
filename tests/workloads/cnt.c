// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call times against the program's own clock (docs/count.md, "Times and their error"):
 * procedures whose time is known, called flat and recursively, and short ones that the
 * probes swamp. Each measures its own time (wall clock), and the program prints what it did
 * and how long each took as one JSON line.
 *
 * Usage:
 *   cnt [FIB_N [LEAF_CALLS]]  mid() calls fib(FIB_N) (default 20) and a loop of LEAF_CALLS
 *                             (default 10000) calls of leaf(), a few ns each
 *   cnt flat NS CALLS         a loop of CALLS calls of work(), each NS ns of wall time, and
 *                             as many of work_xol(), its twin whose probe is stepped out of
 *                             line (its first instruction is not one uprobes emulate)
 *   cnt rec NS DEPTH RUNS     RUNS calls of rec(DEPTH), each level NS ns of its own
 */
#include <string.h>

#include "workload.h"

static uint64_t fib_calls, leaf_calls, leaf_sum;
static uint64_t seen_wait_ns;	/* of the spins' time, gaps between two readings over GAP_NS */

#define GAP_NS 5000	/* two readings of a spin are ~50 ns apart: a gap is time off CPU */

/* Spins until @ns of wall time have passed since it started: how long it spun. */
static inline uint64_t spin_for(uint64_t ns)
{
	uint64_t t0 = wall_ns(), t, last = t0;

	do {
		t = wall_ns();
		if (t - last > GAP_NS)
			seen_wait_ns += t - last;
		last = t;
	} while (t - t0 < ns);
	return t - t0;
}

/* (run_delay_ns(), workload.h: of the thread's wait, what the spins did not see
 * (seen_wait_ns) fell where its clock does not look (between the calls, their prologue
 * and last reading) or in the probes) */

NOINLINE int fib(int n)
{
	int r;

	fib_calls++;
	r = n < 2 ? n : fib(n - 1) + fib(n - 2);
	BARRIER();
	return r;
}

NOINLINE void leaf(uint64_t i)
{
	leaf_calls++;
	leaf_sum += i * 2654435761u;
	BARRIER();
}

/* its own time, and in *fib_ns and *leaf_ns the time of its calls of each, around them */
NOINLINE uint64_t mid(int n, uint64_t calls, uint64_t *fib_ns, uint64_t *leaf_ns)
{
	uint64_t t0 = wall_ns(), t1, t2;

	fib(n);
	t1 = wall_ns();
	for (uint64_t i = 0; i < calls; i++)
		leaf(i);
	t2 = wall_ns();
	*fib_ns = t1 - t0;
	*leaf_ns = t2 - t1;
	BARRIER();
	return wall_ns() - t0;
}

NOINLINE uint64_t work(uint64_t ns)
{
	uint64_t d = spin_for(ns);

	BARRIER();
	return d;
}

/* work(), reached through work_xol below */
__attribute__((noinline, used)) uint64_t work_xol_body(uint64_t ns)
{
	uint64_t d = spin_for(ns);

	BARRIER();
	return d;
}

/*
 * work()'s twin whose entry probe the kernel must step out of line: its first instruction
 * is a lea, which uprobes do not emulate (a push, a jump, a call or a nop they do; a
 * compiler's prologue without a frame pointer still starts with a push). It then jumps to
 * its body, which returns to the caller.
 */
__asm__(".text\n"
	".globl work_xol\n"
	".type work_xol, @function\n"
	"work_xol:\n"
	"\tlea 0(%rdi), %rdi\n"
	"\tjmp work_xol_body\n"
	".size work_xol, .-work_xol\n");
uint64_t work_xol(uint64_t ns);

static uint64_t rec_self_ns;

NOINLINE void rec(int depth, uint64_t ns)
{
	if (depth)
		rec(depth - 1, ns);
	rec_self_ns += spin_for(ns);
	BARRIER();
}

static int usage(void)
{
	fprintf(stderr, "usage: cnt [FIB_N [LEAF_CALLS]] | cnt flat NS CALLS | cnt rec NS DEPTH RUNS\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t t0, total = 0, total_xol = 0, loop_ns;

	if (argc > 1 && !strcmp(argv[1], "flat")) {
		uint64_t ns, calls;

		if (argc != 4)
			return usage();
		ns = strtoull(argv[2], NULL, 0);
		calls = strtoull(argv[3], NULL, 0);
		uint64_t d0, d1, d2, s1;

		t0 = wall_ns();
		d0 = run_delay_ns();
		for (uint64_t i = 0; i < calls; i++)
			total += work(ns);
		d1 = run_delay_ns();
		s1 = seen_wait_ns;
		for (uint64_t i = 0; i < calls; i++)
			total_xol += work_xol(ns);
		d2 = run_delay_ns();
		loop_ns = wall_ns() - t0;
		/* *_unseen_wait_ns: time waiting for a CPU during each loop that its spins did not
		 * see (a bound on what the program's clock misses of its calls) */
		printf("{\"mode\": \"flat\", \"ns\": %llu, \"calls\": %llu, \"work_ns\": %llu, "
		       "\"work_xol_ns\": %llu, \"loop_ns\": %llu, \"work_unseen_wait_ns\": %lld, "
		       "\"work_xol_unseen_wait_ns\": %lld}\n",
		       (unsigned long long)ns, (unsigned long long)calls, (unsigned long long)total,
		       (unsigned long long)total_xol, (unsigned long long)loop_ns,
		       (long long)(d1 - d0) - (long long)s1,
		       (long long)(d2 - d1) - (long long)(seen_wait_ns - s1));
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "rec")) {
		uint64_t ns, runs;
		int depth;

		if (argc != 5)
			return usage();
		ns = strtoull(argv[2], NULL, 0);
		depth = atoi(argv[3]);
		runs = strtoull(argv[4], NULL, 0);
		uint64_t d0 = run_delay_ns();

		for (uint64_t i = 0; i < runs; i++) {
			t0 = wall_ns();
			rec(depth, ns);
			total += wall_ns() - t0;
		}
		printf("{\"mode\": \"rec\", \"ns\": %llu, \"calls\": %llu, \"rec_total_ns\": %llu, "
		       "\"rec_self_ns\": %llu, \"rec_unseen_wait_ns\": %lld}\n",
		       (unsigned long long)ns, (unsigned long long)(runs * (depth + 1)),
		       (unsigned long long)total, (unsigned long long)rec_self_ns,
		       (long long)(run_delay_ns() - d0) - (long long)seen_wait_ns);
		return 0;
	}
	{
		int n = argc > 1 ? atoi(argv[1]) : 20;
		uint64_t calls = argc > 2 ? strtoull(argv[2], NULL, 0) : 10000, fib_ns, leaf_ns, mid_ns;

		if (n < 0 || n > 40)
			return usage();
		mid_ns = mid(n, calls, &fib_ns, &leaf_ns);
		printf("{\"mode\": \"mid\", \"mid_ns\": %llu, \"fib_ns\": %llu, \"leaf_loop_ns\": %llu, "
		       "\"fib_calls\": %llu, \"leaf_calls\": %llu}\n",
		       (unsigned long long)mid_ns, (unsigned long long)fib_ns,
		       (unsigned long long)leaf_ns, (unsigned long long)fib_calls,
		       (unsigned long long)leaf_calls);
	}
	return 0;
}
