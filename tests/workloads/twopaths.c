// SPDX-License-Identifier: GPL-2.0-only
/*
 * A client thread asks a server thread for work over a pipe and blocks for the answer,
 * tens of thousands of times a second, through one of two call paths, path_a and path_b,
 * whose frames are alike: the same blocking instruction, the same stack pointer, the same
 * frame pointer. Only the return addresses on the stack tell them apart. The server spins
 * 20 us for path_a's requests and 60 us for path_b's. Each thread measures the wall time it
 * spends in each path; the report gives each path's share of the two threads' wall time,
 * from main()'s start and the server's (what REAL counts: every moment of each thread's
 * life), with both lifetimes (main_s, server_s). Both share one CPU.
 *
 * REAL mode must charge each path its share (sample.bpf.c takes a blocked thread's stack
 * when its system call returns, and only for the intervals it charges).
 */
#include <pthread.h>

#include "workload.h"

static int req[2], rep[2];
static uint64_t per_us;
static uint64_t server_ns[2];	/* spinning for each path's requests */
static uint64_t server_life_ns;	/* from its first instruction to its last */

static void server_spin(uint64_t us)
{
	SPIN_BODY(us * per_us);
}

NOINLINE static void serve(unsigned char which)
{
	uint64_t t0 = wall_ns();

	server_spin(which ? 60 : 20);
	do_write(rep[1], &which, 1);
	server_ns[which & 1] += wall_ns() - t0;
}

static void *server(void *arg)
{
	uint64_t born = wall_ns();
	unsigned char which;

	(void)arg;
	while (do_read(req[0], &which, 1) == 1 && which != 0xff)
		serve(which);
	server_life_ns = wall_ns() - born;
	return NULL;
}

/* the blocking round trip: called from both paths at the same stack depth */
NOINLINE static void ask(unsigned char which)
{
	do_write(req[1], &which, 1);
	do_read(rep[0], &which, 1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void path_a(void)
{
	ask(0);
	__asm__ volatile("" ::: "memory");
}

NOINLINE void path_b(void)
{
	ask(1);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	uint64_t born = wall_ns(), in_a = 0, in_b = 0, t0, t1, start, end;
	double secs = arg_seconds(argc, argv, 4);
	unsigned char stop = 0xff;
	unsigned long n = 0;
	pthread_t th;

	/*
	 * Both threads on one CPU, which is then never idle: cpu-clock samples the on-CPU time
	 * at a steady pace (on a virtual CPU that idles between 20 us bursts the timer does not),
	 * and every round trip is two context switches.
	 */
	if (pin_to_cpu(-1))
		return 1;
	per_us = calibrate(1000000) / 1000;
	if (pipe(req) || pipe(rep) || pthread_create(&th, NULL, server, NULL))
		return 1;
	start = wall_ns();
	end = start + secs * 1e9;
	while ((t0 = wall_ns()) < end) {
		/* two a's for each b: 40 us and 60 us of the server's work */
		if (n++ % 3 == 2) {
			path_b();
			t1 = wall_ns();
			in_b += t1 - t0;
		} else {
			path_a();
			t1 = wall_ns();
			in_a += t1 - t0;
		}
	}
	do_write(req[1], &stop, 1);
	pthread_join(th, NULL);
	end = wall_ns();
	/* the shares are of the two threads' lives (main's up to here: its exit is next) */
	double both = (double)(end - born) + server_life_ns;

	printf("{\"path_a\": %.5f, \"path_b\": %.5f, \"serve_a\": %.5f, \"serve_b\": %.5f, "
	       "\"requests\": %lu, \"wall_s\": %.4f, \"main_s\": %.4f, \"server_s\": %.4f}\n",
	       in_a / both, in_b / both, server_ns[0] / both, server_ns[1] / both, n,
	       (end - start) / 1e9, (end - born) / 1e9, server_life_ns / 1e9);
	return 0;
}
