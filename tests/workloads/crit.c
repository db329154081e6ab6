// SPDX-License-Identifier: GPL-2.0-only
/*
 * Marked critical sections: about 30% of the CPU inside PCMON_CRITICAL_BEGIN("gc"), of
 * which a third nested in "mark"; 10% in my_alloc (for --critical); the rest in mutator.
 * Reports the measured shares; SIGUSR1 reports those since the last report (or the start)
 * at once, and goes on, so that a window of a longer run can be checked.
 */
#include <pcmon/critical.h>
#include <signal.h>

#include "workload.h"

static uint64_t chunk;
static uint64_t t_gc_own; /* gc's time outside its sections: the probes' traps */

NOINLINE void mutator(void) { SPIN_BODY(chunk); }
NOINLINE void my_alloc(void) { SPIN_BODY(chunk); }
NOINLINE void sweep(void) { SPIN_BODY(chunk); }
NOINLINE void mark(void) { SPIN_BODY(chunk); }

NOINLINE void gc(void)
{
	uint64_t t0 = cpu_ns(), t1, t2;

	PCMON_CRITICAL_BEGIN("gc");
	t1 = cpu_ns();
	sweep();
	sweep();
	PCMON_CRITICAL_BEGIN("mark");
	mark();
	PCMON_CRITICAL_END();
	t2 = cpu_ns();
	PCMON_CRITICAL_END();
	t_gc_own += t1 - t0 + cpu_ns() - t2;
}

static volatile sig_atomic_t report_now;

static void on_usr1(int sig)
{
	(void)sig;
	report_now = 1;
}

static void report(uint64_t t_gc, uint64_t t_alloc, double total)
{
	uint64_t t_mark = (t_gc - t_gc_own) / 3;

	printf("{\"gc_outer\": %.5f, \"mark\": %.5f, \"gc_own\": %.5f, \"alloc\": %.5f, "
	       "\"cpu_s\": %.4f}\n",
	       (t_gc - t_gc_own - t_mark) / total, t_mark / total, t_gc_own / total,
	       t_alloc / total, total / 1e9);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	uint64_t t_gc = 0, t_alloc = 0, t0, t1, end, total0;

	signal(SIGUSR1, on_usr1); /* (first: a report asked for while calibrating waits) */
	chunk = calibrate(100000);
	total0 = cpu_ns();
	end = wall_ns() + secs * 1e9;
	for (uint64_t rnd = 0x9e3779b97f4a7c15ULL; wall_ns() < end;) {
		if (report_now) {
			report_now = 0;
			report(t_gc, t_alloc, cpu_ns() - total0);
			t_gc = t_alloc = t_gc_own = 0;
			total0 = cpu_ns();
		}
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		switch (rnd % 30) {
		case 0 ... 2: /* 3 in 30 pieces: gc = 3 chunks, mark 1 of them -> 30% */
			t0 = cpu_ns();
			gc();
			t1 = cpu_ns();
			t_gc += t1 - t0;
			break;
		case 3 ... 5: /* 3 in 30: my_alloc, 1 chunk -> 10% */
			t0 = cpu_ns();
			my_alloc();
			t_alloc += cpu_ns() - t0;
			break;
		default:
			mutator();
		}
	}
	report(t_gc, t_alloc, cpu_ns() - total0);
	return 0;
}
