// SPDX-License-Identifier: GPL-2.0-only
/*
 * main -> rec -> ... (40 levels) -> rec -> rec_leaf, and a sibling flat_work called from
 * main. Each level of rec keeps FRAME bytes on the stack (argv[2], default 600), so the
 * stack spans about 40 x FRAME bytes: with 600, 24 KiB, more than a 16 KiB copy used to
 * hold; with 4096, 160 KiB, more than any copy holds (every such sample must be flagged).
 * Prints the CPU shares of rec_leaf and flat_work as measured here, of all the CPU time the
 * program used from main on (its calibration too: a sampler's samples of it count).
 *
 * Each round's work is scaled by a random factor (jittered(): 0.5 to 1.5, the same for all
 * of it), so that the rounds do not alias with the sampling timer.
 */
#include <alloca.h>
#include <string.h>

#include "workload.h"

#define DEPTH 40

static uint64_t chunk, round_chunk;
static size_t frame = 600;
static uint64_t ns_leaf, ns_flat;

NOINLINE void rec_leaf(void)
{
	uint64_t t0 = cpu_ns();

	SPIN_BODY(round_chunk * 2);
	ns_leaf += cpu_ns() - t0;
}

NOINLINE void rec(int n)
{
	volatile char *buf = alloca(frame);

	buf[0] = (char)n;
	SPIN_BODY(round_chunk / 16);
	if (n > 0)
		rec(n - 1);
	else
		rec_leaf();
	buf[frame - 1] = 0; /* the frame stays live across the call */
	BARRIER();
}

NOINLINE void flat_work(void)
{
	uint64_t t0 = cpu_ns();

	SPIN_BODY(round_chunk * 2);
	ns_flat += cpu_ns() - t0;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 1.5);
	uint64_t end, total0;

	if (argc > 2)
		frame = (size_t)atol(argv[2]);
	total0 = cpu_ns();
	chunk = calibrate(100000);
	fprintf(stderr, "ready %d\n", (int)getpid());
	end = cpu_ns() + secs * 1e9; /* (seconds of CPU: as many samples on a busy machine) */
	while (cpu_ns() < end) {
		round_chunk = jittered(chunk);
		rec(DEPTH);
		flat_work();
	}
	{
		double total = cpu_ns() - total0;

		printf("{\"depth\": %d, \"frame\": %zu, \"rec_leaf\": %.4f, \"flat_work\": %.4f}\n",
		       DEPTH, frame, ns_leaf / total, ns_flat / total);
	}
	return 0;
}
