// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two threads take turns on one CPU: the client computes for about 2 us, asks the server
 * over a pipe and blocks; the server computes for about 10 us and answers. The client's
 * bursts are shorter than a timer tick takes to reach the CPU in a virtual machine (5-20 us
 * here): a tick that fires while the client runs arrives while the server does.
 *
 * REAL counts every moment of each thread's life, on CPU (sampled) and off (timed): each
 * thread's total must be its life, whoever the ticks reached. The report gives both lives
 * (client_s from main()'s start, server_s) and both CPU times.
 *
 * "bursts SECS apart": the server is a process of its own (forked), which a profiler told
 * not to follow children does not watch: a late tick then lands on a thread nobody watches.
 * Its life and CPU time are then reported as 0.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>

#include "workload.h"

static int req[2], rep[2];
static uint64_t per_us, server_life_ns, server_cpu_ns;

NOINLINE static void server_work(void)
{
	SPIN_BODY(jittered(10 * per_us));
}

static void *server(void *arg)
{
	uint64_t born = wall_ns();
	unsigned char c;

	(void)arg;
	while (do_read(req[0], &c, 1) == 1 && c) {
		server_work();
		do_write(rep[1], &c, 1);
	}
	server_cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	server_life_ns = wall_ns() - born;
	return NULL;
}

NOINLINE static void client_work(void)
{
	SPIN_BODY(jittered(2 * per_us));
}

int main(int argc, char **argv)
{
	uint64_t born = wall_ns(), end, client_cpu;
	double secs = arg_seconds(argc, argv, 3);
	unsigned char c = 1;
	unsigned long n = 0;
	pthread_t th;

	bool apart = argc > 2 && !strcmp(argv[2], "apart");
	pid_t child = 0;

	if (pin_to_cpu(-1))
		return 1;
	per_us = calibrate(1000000) / 1000;
	if (pipe(req) || pipe(rep))
		return 1;
	if (apart) {
		child = fork();
		if (child < 0)
			return 1;
		if (child == 0) {
			server(NULL);
			_exit(0);
		}
	} else if (pthread_create(&th, NULL, server, NULL)) {
		return 1;
	}
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end) {
		client_work();
		do_write(req[1], &c, 1);
		do_read(rep[0], &c, 1);
		n++;
	}
	c = 0;
	do_write(req[1], &c, 1);
	if (apart)
		waitpid(child, NULL, 0);
	else
		pthread_join(th, NULL);
	client_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	printf("{\"client_s\": %.4f, \"server_s\": %.4f, \"client_cpu_s\": %.4f, "
	       "\"server_cpu_s\": %.4f, \"rounds\": %lu}\n",
	       (wall_ns() - born) / 1e9, server_life_ns / 1e9, client_cpu / 1e9,
	       server_cpu_ns / 1e9, n);
	return 0;
}
