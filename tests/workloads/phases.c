// SPDX-License-Identifier: GPL-2.0-only
/*
 * Two phases of SECS seconds each (default 4): the first spends CPU in work_a and work_b
 * 7:3, the second in work_a, work_b and work_c 2:3:5. Prints, as one JSON line, each
 * phase's wall-clock start and end (seconds since the epoch), its CPU time (on a busy
 * machine, not the same in both) and its own CPU share per function, so that a window of time slices can be checked against each phase. With a
 * second argument "wait", the first phase begins when a line is read from stdin.
 */
#include <string.h>

#include "workload.h"

static uint64_t chunk;

/* (the length is drawn before the loop: SPIN_BODY evaluates its bound every round) */
NOINLINE void work_a(uint64_t n) { SPIN_BODY(n); }
NOINLINE void work_b(uint64_t n) { SPIN_BODY(n); }
NOINLINE void work_c(uint64_t n) { SPIN_BODY(n); }

static double realtime(void)
{
	return clock_ns(CLOCK_REALTIME) / 1e9;
}

/* One phase: pieces drawn at random in the proportions of @mix (tenths, by function). */
static void phase(const unsigned mix[3], double secs, double *start, double *end, double in[3],
		  double *cpu_s)
{
	static void (*const fn[3])(uint64_t) = { work_a, work_b, work_c };
	static uint64_t rnd = 88172645463325252ULL;
	uint64_t until, t0, n, total0 = cpu_ns();

	*start = realtime();
	until = wall_ns() + secs * 1e9;
	while (wall_ns() < until) {
		unsigned f, k;

		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		f = rnd % 10;
		k = f < mix[0] ? 0 : f < mix[0] + mix[1] ? 1 : 2;
		n = jittered(chunk);
		t0 = cpu_ns();
		fn[k](n);
		in[k] += cpu_ns() - t0;
	}
	*end = realtime();
	*cpu_s = (cpu_ns() - total0) / 1e9;
	for (int k = 0; k < 3; k++)
		in[k] /= *cpu_s * 1e9;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 4), s[2], e[2], cpu[2], in[2][3] = { { 0 } };
	static const unsigned mix[2][3] = { { 7, 3, 0 }, { 2, 3, 5 } };

	chunk = calibrate(200000); /* 0.2 ms pieces */
	/* "wait": the phases begin at a line on stdin (once the profiler watches) */
	if (argc > 2 && !strcmp(argv[2], "wait"))
		while (getchar() != '\n' && !feof(stdin))
			;
	for (int p = 0; p < 2; p++)
		phase(mix[p], secs, &s[p], &e[p], in[p], &cpu[p]);
	printf("{\"phases\": [");
	for (int p = 0; p < 2; p++)
		printf("%s{\"start\": %.3f, \"end\": %.3f, \"cpu_s\": %.4f, \"work_a\": %.5f, "
		       "\"work_b\": %.5f, \"work_c\": %.5f}",
		       p ? ", " : "", s[p], e[p], cpu[p], in[p][0], in[p][1], in[p][2]);
	printf("]}\n");
	return 0;
}
