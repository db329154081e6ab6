/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for the benchmark workloads in bench/. Like tests/workloads/workload.h, but kept
 * separate so the benchmark does not break when the test workloads change. Every workload
 * measures itself and prints one JSON line on stdout.
 */
#ifndef PCMON_BENCH_H
#define PCMON_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* keeps a call from being a tail call, so the caller stays on the stack */
#define BARRIER() __asm__ volatile("" ::: "memory")

static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
static inline uint64_t wall_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* Pure arithmetic, no calls: every sample inside lands in the function that runs it. */
#define SPIN_BODY(iters)                                                                   \
	do {                                                                               \
		volatile uint64_t x_ = 1;                                                  \
		for (uint64_t i_ = 0; i_ < (iters); i_++)                                  \
			x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;         \
	} while (0)

/* Iterations of SPIN_BODY that take about @ns of CPU here. */
static inline uint64_t calibrate(uint64_t ns)
{
	uint64_t iters = 100000, t0, dt;

	for (;;) {
		t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		SPIN_BODY(iters);
		dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (dt > 20000000)
			break;
		iters *= 2;
	}
	return iters * ns / dt;
}

/*
 * System calls made from our own frame-pointer code rather than libc's (built without frame
 * pointers), so a frame-pointer walk from inside the kernel still finds our callers.
 */
static inline long raw_syscall3(long nr, long a, long b, long c)
{
	volatile long ret; /* stack use gives the caller a frame */
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	ret = r;
	return ret;
}

__attribute__((noipa, unused)) static void do_nanosleep(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ULL, ns % 1000000000ULL };

	raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
}

__attribute__((noipa, unused)) static long do_read(int fd, void *buf, size_t len)
{
	return raw_syscall3(SYS_read, fd, (long)buf, len);
}

__attribute__((noipa, unused)) static long do_write(int fd, const void *buf, size_t len)
{
	return raw_syscall3(SYS_write, fd, (long)buf, len);
}

/* Tell the harness we are set up (it attaches a profiler to our pid after this line). */
static inline void say_ready(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
}

#endif
