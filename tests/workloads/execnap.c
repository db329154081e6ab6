// SPDX-License-Identifier: GPL-2.0-only
/*
 * Naps in nap_before (1 ms at a time, so its thread switches often), then execs PROGRAM
 * [ARGS...] on the same thread: REAL must charge what that thread does from then on to the
 * new image's frames, not read them against the old image's address space. Reports how long
 * it napped.
 */
#include <stdio.h>
#include <unistd.h>

#include "workload.h"

NOINLINE void nap_before(double secs)
{
	uint64_t end = wall_ns() + secs * 1e9;

	while (wall_ns() < end)
		do_nanosleep(1000000);
	__asm__ volatile("" ::: "memory"); /* not a tail call: keep nap_before on the stack */
}

int main(int argc, char **argv)
{
	uint64_t t0 = wall_ns();

	if (argc < 3) {
		fprintf(stderr, "usage: execnap SECONDS PROGRAM [ARGS...]\n");
		return 2;
	}
	nap_before(arg_seconds(argc, argv, 0.3));
	printf("{\"napped_s\": %.4f}\n", (wall_ns() - t0) / 1e9);
	fflush(stdout);
	execv(argv[2], argv + 2);
	perror("execnap: exec");
	return 1;
}
