// SPDX-License-Identifier: GPL-2.0-only
/*
 * Four threads for a known wall time: one blocked in read() on a pipe, one spinning, one
 * sleeping, and main waiting for them; each names itself (t3-reader, t3-spinner, t3-sleeper).
 * Reports the sum of the threads' lifetimes.
 */
#include <pthread.h>

#include "workload.h"

static uint64_t chunk, end_ns;
static int pipefd[2];
static double lifetimes[3];

NOINLINE void spinner_work(void) { SPIN_BODY(chunk); }

static void *reader(void *arg)
{
	uint64_t t0 = wall_ns();
	char c;

	pthread_setname_np(pthread_self(), "t3-reader");
	do_read(pipefd[0], &c, 1); /* main writes when the time is up */
	lifetimes[0] = (wall_ns() - t0) / 1e9;
	return arg;
}

static void *spinner(void *arg)
{
	uint64_t t0 = wall_ns();

	pthread_setname_np(pthread_self(), "t3-spinner");
	while (wall_ns() < end_ns)
		spinner_work();
	lifetimes[1] = (wall_ns() - t0) / 1e9;
	return arg;
}

static void *sleeper(void *arg)
{
	uint64_t t0 = wall_ns();

	pthread_setname_np(pthread_self(), "t3-sleeper");
	while (wall_ns() < end_ns)
		do_nanosleep(5000000);
	lifetimes[2] = (wall_ns() - t0) / 1e9;
	return arg;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t t0 = wall_ns();
	pthread_t th[3];

	chunk = calibrate(1000000);
	if (pipe(pipefd))
		return 1;
	end_ns = wall_ns() + secs * 1e9;
	pthread_create(&th[0], NULL, reader, NULL);
	pthread_create(&th[1], NULL, spinner, NULL);
	pthread_create(&th[2], NULL, sleeper, NULL);
	while (wall_ns() < end_ns)
		do_nanosleep(end_ns - wall_ns());
	if (write(pipefd[1], "x", 1) != 1)
		return 1;
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	double main_s = (wall_ns() - t0) / 1e9;
	printf("{\"threads\": 4, \"thread_wall_s\": %.4f, \"main_s\": %.4f}\n",
	       main_s + lifetimes[0] + lifetimes[1] + lifetimes[2], main_s);
	return 0;
}
