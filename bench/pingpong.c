// SPDX-License-Identifier: GPL-2.0-only
/*
 * Context-switch-heavy fixed work: `pingpong ROUNDTRIPS` passes one byte back and forth
 * between two threads over two pipes, so every round trip blocks and wakes each thread once.
 * Prints {"roundtrips": N, "wall_s": ..., "cpu_s": ..., "proc_cpu_s": ..., "cpu": C}.
 *
 * Both threads stay on the CPU the program starts on (C), so a round trip is exactly two
 * context switches on one CPU. Across CPUs, a round trip's time is mostly the time to wake
 * an idle CPU, which in a VM depends on whether the other vCPU happened to be halted: the
 * same run varied 8x depending on what else kept that CPU busy (a profiler's timer does).
 */
#include "bench.h"

#include <pthread.h>

static int ping[2], pong[2];
static uint64_t rounds;

NOINLINE static void bounce(void)
{
	char c;

	for (uint64_t i = 0; i < rounds; i++) {
		if (do_read(ping[0], &c, 1) != 1)
			break;
		do_write(pong[1], &c, 1);
	}
	BARRIER();
}

static void *partner(void *arg)
{
	(void)arg;
	bounce();
	return NULL;
}

NOINLINE static void serve(void)
{
	char c = 'x';

	for (uint64_t i = 0; i < rounds; i++) {
		do_write(ping[1], &c, 1);
		if (do_read(pong[0], &c, 1) != 1)
			break;
	}
	BARRIER();
}

int main(int argc, char **argv)
{
	pthread_t t;
	int cpu = sched_getcpu();

	rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	if (pin_to_cpu(cpu)) /* the partner thread inherits it */
		perror("pingpong: sched_setaffinity");
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, partner, NULL)) {
		perror("pingpong");
		return 1;
	}
	uint64_t c0 = cpu_ns(), w0 = wall_ns();
	serve();
	pthread_join(t, NULL);
	uint64_t c1 = cpu_ns(), w1 = wall_ns();
	printf("{\"roundtrips\": %llu, \"wall_s\": %.6f, \"cpu_s\": %.6f, \"proc_cpu_s\": %.6f, \"cpu\": %d}\n",
	       (unsigned long long)rounds, (w1 - w0) / 1e9, (c1 - c0) / 1e9, c1 / 1e9, cpu);
	return 0;
}
