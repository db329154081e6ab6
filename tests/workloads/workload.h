/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for workload programs with known behaviour. A workload measures itself (thread
 * CPU time or wall time spent in each function) and prints the shares as one JSON line on
 * stdout, so tests compare pcmon's numbers with the program's own.
 */
#ifndef PCMON_WORKLOAD_H
#define PCMON_WORKLOAD_H

#include <pthread.h>
#include <sched.h>
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

static inline uint64_t cpu_ns(void)
{
	return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
}

static inline uint64_t wall_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* The time this thread has waited on a run queue so far (the kernel's schedstat). 0: not
 * known. */
static inline uint64_t run_delay_ns(void)
{
	unsigned long long run = 0, wait = 0;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

/* Pure arithmetic, no calls: every sample inside lands in the function that runs it. */
#define SPIN_BODY(iters)                                                                   \
	do {                                                                               \
		volatile uint64_t x_ = 1;                                                  \
		for (uint64_t i_ = 0; i_ < (iters); i_++)                                  \
			x_ = x_ * 6364136223846793005ULL + 1442695040888963407ULL;         \
	} while (0)

/*
 * Iterations of SPIN_BODY that take about @ns of CPU here, measured over 30 ms of CPU: the
 * same CPU in every run, however fast the machine is then (a loop doubling its rounds
 * took 40 to 80 ms by the machine's speed, and two runs of one program differed by it).
 */
static inline uint64_t calibrate(uint64_t ns)
{
	uint64_t iters = 0, t0 = cpu_ns(), dt;

	do {
		SPIN_BODY(20000);
		iters += 20000;
		dt = cpu_ns() - t0;
	} while (dt < 30000000);
	return iters * ns / dt;
}

/*
 * @chunk scaled by a random factor from 0.5 to 1.5 (xorshift64). A loop of exactly equal
 * rounds aliases with a timer sampling at a fixed period: where the samples land then
 * depends on the phase between the two, by more than sampling error. A workload whose
 * shares are checked varies its rounds' length with this, keeping their proportions.
 */
static inline uint64_t jittered(uint64_t chunk)
{
	static uint64_t rnd = 0x9e3779b97f4a7c15ull;

	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return chunk / 2 + rnd % (chunk + 1);
}

/*
 * Blocking system calls made from our own frame-pointer code, not libc's: libc is built
 * without frame pointers, and a frame-pointer walk from inside it loses its caller.
 */
static inline long raw_syscall3(long nr, long a, long b, long c)
{
	/* stack use gives the caller a frame: GCC 12 drops the frame pointer of leaf functions */
	volatile long ret;

	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
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

/* Run @fn in @n threads, each given its index (0...), and wait for them all. */
static inline void spawn_join(void *(*fn)(void *), long n)
{
	pthread_t th[n];

	for (long i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, (void *)i);
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/*
 * Keep this thread, and the threads it creates from now on, on CPU @cpu (-1: the one it is
 * on now): threads that take turns on one CPU switch at every turn. 0, or -1 (errno).
 */
static inline int pin_to_cpu(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? sched_getcpu() : cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

static inline double arg_seconds(int argc, char **argv, double def)
{
	return argc > 1 ? atof(argv[1]) : def;
}

#endif
