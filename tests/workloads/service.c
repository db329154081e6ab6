// SPDX-License-Identifier: GPL-2.0-only
/*
 * service SECS [paced|busy] [CHANGE AT]: a service handling requests for SECS seconds, for
 * pcmon diff. Each request runs, through main -> serve -> handle, alpha (60 % of a
 * request's CPU), beta (20 %), gamma (12 %) and eps (5 %), then log_line (3 %); each
 * piece's length varies at random, its mean fixed, and so does each request's size: an
 * exponential factor of mean 1 on all its pieces. A request of 1 ms sampled every 1 ms would
 * otherwise lock to the timer: each sample falls where the one before fell, give or take
 * the pieces' jitter, and a run of them lands in one function (the shares of a window
 * spread four times as far as sampling error). paced (the default): 400 requests a
 * second arriving at random (exponential gaps: requests on a fixed grid would alias with
 * the sampling timer, and their shares would depend on the phase between the two), served
 * as they come, sleeping in between (about 40 % of a CPU); busy: one request after the
 * other. At AT seconds a "deploy" makes the CHANGE: dominant (alpha does 20 %
 * more work), small (eps twice the work), remove (gamma is no longer called), none.
 * Prints its own clocks as one JSON line: each phase's wall-clock span and the CPU seconds
 * each function took in it ("phases": [{"start", "end", "cpu": {...}}]), read for one
 * request in eight (handle()).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "workload.h"

enum { ALPHA, BETA, GAMMA, EPS, LOG, NFN };
static const char *const names[NFN] = { "alpha", "beta", "gamma_", "eps", "log_line" };
static const double part[NFN] = { 0.60, 0.20, 0.12, 0.05, 0.03 };
static double more[NFN] = { 1, 1, 1, 1, 1 }; /* the deploy's factors */
static uint64_t unit, cpu[2][NFN];
static int phase;

NOINLINE void alpha(uint64_t n) { SPIN_BODY(n); }
NOINLINE void beta(uint64_t n) { SPIN_BODY(n); }
NOINLINE void gamma_(uint64_t n) { SPIN_BODY(n); }
NOINLINE void eps(uint64_t n) { SPIN_BODY(n); }
NOINLINE void log_line(uint64_t n) { SPIN_BODY(n); }

static void (*const fns[NFN])(uint64_t) = { alpha, beta, gamma_, eps, log_line };

/* a draw from an exponential distribution of mean @mean (xorshift64) */
static double exp_draw(double mean)
{
	static uint64_t rnd = 0x2545f4914f6cdd1dull;

	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return -log(((rnd >> 11) + 0.5) / 9007199254740992.0) * mean;
}

/*
 * One request. Its pieces' CPU time is read for one request in TIMED_EVERY and counted that
 * many times over: the clock is a system call (CPU-time clocks have no vDSO path), whose
 * cost on a virtual machine varies with the host's load, and read around every piece it
 * was a share of the profile large enough for a diff of two windows to see it change.
 */
#define TIMED_EVERY 8

NOINLINE void handle(void)
{
	static unsigned k;
	bool timed = k++ % TIMED_EVERY == 0;
	double size = exp_draw(1);

	for (int i = 0; i < NFN; i++) {
		uint64_t t0 = 0, n = (uint64_t)(jittered(unit) * size * part[i] * more[i]);

		if (!n)
			continue;
		if (timed)
			t0 = cpu_ns();
		fns[i](n);
		if (timed)
			cpu[phase][i] += (cpu_ns() - t0) * TIMED_EVERY;
	}
	BARRIER();
}

NOINLINE void serve(double secs, bool paced, double at, const char *change)
{
	uint64_t start = wall_ns(), next = start, step = 1000000000ull / 400;

	for (;;) {
		uint64_t now = wall_ns();

		if (now - start >= secs * 1e9)
			break;
		if (!phase && at >= 0 && now - start >= at * 1e9) {
			phase = 1;
			if (!strcmp(change, "dominant"))
				more[ALPHA] = 1.2;
			else if (!strcmp(change, "small"))
				more[EPS] = 2;
			else if (!strcmp(change, "remove"))
				more[GAMMA] = 0;
		}
		handle();
		if (paced) {
			struct timespec ts;

			next += (uint64_t)exp_draw((double)step);
			if (next > wall_ns()) {
				ts.tv_sec = next / 1000000000ull;
				ts.tv_nsec = next % 1000000000ull;
				clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			}
		}
	}
	BARRIER();
}

static double wall_s(void)
{
	return clock_ns(CLOCK_REALTIME) / 1e9;
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 10), at = argc > 4 ? atof(argv[4]) : -1;
	bool paced = argc < 3 || strcmp(argv[2], "busy");
	const char *change = argc > 3 ? argv[3] : "none";
	double t[3];

	unit = calibrate(1000000); /* a request: 1 ms of CPU */
	t[0] = wall_s();
	serve(secs, paced, at, change);
	t[2] = wall_s();
	t[1] = at >= 0 && phase ? t[0] + at : t[2];
	printf("{\"phases\": [");
	for (int p = 0; p <= phase; p++) {
		printf("%s{\"start\": %.3f, \"end\": %.3f, \"cpu\": {", p ? ", " : "", t[p], t[p + 1]);
		for (int i = 0; i < NFN; i++)
			printf("%s\"%s\": %.4f", i ? ", " : "", names[i], cpu[p][i] / 1e9);
		printf("}}");
	}
	printf("]}\n");
	return 0;
}
