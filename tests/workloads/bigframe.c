// SPDX-License-Identifier: GPL-2.0-only
/*
 * A program as many are written: main keeps a 64 KiB buffer on its stack (a read buffer, a
 * JSON writer) and calls work_a, work_b and work_c, which spend 59, 31 and 10 % of the CPU.
 * Every sample's stack spans more than 64 KiB: main's return address lies past the buffer.
 * Prints the shares of the loop as measured here, and of the whole run.
 */
#include <string.h>

#include "workload.h"

#define BUF (64 * 1024)

static uint64_t chunk;

NOINLINE void work_a(void) { SPIN_BODY(chunk); }
NOINLINE void work_b(void) { SPIN_BODY(chunk); }
NOINLINE void work_c(void) { SPIN_BODY(chunk); }

/* the buffer is written, read and passed on: it stays in main's frame */
NOINLINE static unsigned fill(volatile char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 4096)
		buf[i] = (char)(seed + i);
	return buf[n - 1];
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	volatile char buf[BUF];
	uint64_t in[3] = { 0 }, end, t0, total0 = cpu_ns(), pieces = 0;
	unsigned sink = 0;

	sink += fill(buf, sizeof(buf), 1);
	chunk = calibrate(200000); /* 0.2 ms pieces */
	fprintf(stderr, "ready %d\n", (int)getpid());
	end = cpu_ns() + secs * 1e9; /* (seconds of CPU: as many samples on a busy machine) */
	/* pieces in random order: a fixed cycle would alias with the sampling period */
	for (uint64_t rnd = 88172645463325252ULL; cpu_ns() < end;) {
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		unsigned f = rnd % 100, k = f < 59 ? 0 : f < 90 ? 1 : 2;

		t0 = cpu_ns();
		if (k == 0)
			work_a();
		else if (k == 1)
			work_b();
		else
			work_c();
		in[k] += cpu_ns() - t0;
		pieces++;
		sink += buf[rnd % BUF];
	}
	double total = cpu_ns() - total0, loop = in[0] + in[1] + in[2];
	/* iterations a CPU second: what a profiler's cost per sample takes from the program */
	printf("{\"work_a\": %.5f, \"work_b\": %.5f, \"work_c\": %.5f, \"loop\": %.5f, "
	       "\"cpu_s\": %.4f, \"iters_per_cpu_s\": %.0f, \"sink\": %u}\n",
	       in[0] / loop, in[1] / loop, in[2] / loop, loop / total, total / 1e9,
	       pieces * (double)chunk / (loop / 1e9), sink & 1);
	return 0;
}
