/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for the benchmark workloads in bench/: those of the test workloads (timing,
 * SPIN_BODY, calibrate, system calls from frame-pointer code), plus the start-up handshake.
 * Every workload measures itself and prints one JSON line on stdout.
 */
#ifndef PCMON_BENCH_H
#define PCMON_BENCH_H

#include "../tests/workloads/workload.h"

/* Tell the harness we are set up (it attaches a profiler to our pid after this line). */
static inline void say_ready(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
}

#endif
