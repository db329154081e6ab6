// SPDX-License-Identifier: GPL-2.0-only
/*
 * diffwork SECS [MORE_PCT]: about SECS seconds of CPU, as a fixed number of pieces (the
 * same work however busy the machine is: two runs differ only as asked), in alpha (called by outer_a), beta and gamma (by outer_b)
 * and delta (by main) in the proportions 4:2:2:2 of pieces; with MORE_PCT, each piece of
 * alpha does that much more work. Two runs, with and without, are what pcmon diff must tell
 * apart: alpha and its callers changed, nothing else. Prints its own CPU shares.
 */
#include "workload.h"

static uint64_t chunk;

NOINLINE void alpha(uint64_t n) { SPIN_BODY(n); }
NOINLINE void beta(uint64_t n) { SPIN_BODY(n); }
NOINLINE void gamma_(uint64_t n) { SPIN_BODY(n); }
NOINLINE void delta(uint64_t n) { SPIN_BODY(n); }

NOINLINE void outer_a(uint64_t n)
{
	alpha(n);
	BARRIER();
}

NOINLINE void outer_b(int which, uint64_t n)
{
	if (which)
		gamma_(n);
	else
		beta(n);
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3), more = argc > 2 ? atof(argv[2]) : 0;
	uint64_t in[4] = { 0 }, pieces = secs * 5000, t0, n, total0 = cpu_ns();
	uint64_t rnd = 88172645463325252ULL;

	chunk = calibrate(200000); /* 0.2 ms pieces */
	while (pieces--) {
		unsigned f;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		f = rnd % 10;
		n = jittered(chunk);
		t0 = cpu_ns();
		if (f < 4)
			outer_a(n + n * more / 100);
		else if (f < 8)
			outer_b(f >= 6, n);
		else
			delta(n);
		in[f < 4 ? 0 : f < 6 ? 1 : f < 8 ? 2 : 3] += cpu_ns() - t0;
	}
	double total = cpu_ns() - total0;
	printf("{\"alpha\": %.5f, \"beta\": %.5f, \"gamma_\": %.5f, \"delta\": %.5f, \"cpu_s\": %.4f}\n",
	       in[0] / total, in[1] / total, in[2] / total, in[3] / total, total / 1e9);
	return 0;
}
