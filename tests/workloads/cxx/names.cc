// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ names for the demangler: a free function with parameters, a member function of a
 * class template, and a function in an anonymous namespace, spending 50, 30 and 20 % of the
 * CPU in random order. Prints the shares as measured here.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#define NOINLINE __attribute__((noinline))

static uint64_t cpu_ns()
{
	timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static volatile uint64_t sink;
static uint64_t chunk = 1; /* iterations of spin() in 0.2 ms, calibrated */

/* a macro, not an inline function: the work is the caller's own, no frame of its own */
#define spin(iters)                                      \
	do {                                             \
		for (uint64_t i_ = 0; i_ < (iters); i_++) \
			sink = sink + i_;                \
	} while (0)

static void calibrate()
{
	uint64_t t0 = cpu_ns();

	spin(1000000);
	chunk = 1000000ull * 200000 / (cpu_ns() - t0 + 1) + 1;
}

struct bitmap_head {
	uint64_t bits[4];
};

NOINLINE void bitmap_set_bit(bitmap_head *h, int n)
{
	spin(chunk);
	h->bits[n & 3] |= 1;
}

namespace geo {
template <typename T> struct Grid {
	T cells[4];
	NOINLINE T sum(int n) const
	{
		spin(chunk);
		return cells[n & 3];
	}
};
} // namespace geo

namespace {
NOINLINE int helper(long x)
{
	spin(chunk);
	return (int)x;
}
} // namespace

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	bitmap_head h = {};
	geo::Grid<int> g = {};
	uint64_t in[3] = {}, t0, total0 = cpu_ns();

	calibrate();
	/* SECS of CPU time, not of the clock: as many samples on a busy machine as on a quiet one */
	uint64_t end = cpu_ns() + (uint64_t)(secs * 1e9);
	for (uint64_t rnd = 88172645463325252ull;;) {
		if (cpu_ns() >= end)
			break;
		rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
		unsigned f = rnd % 10, k = f < 5 ? 0 : f < 8 ? 1 : 2;

		t0 = cpu_ns();
		if (k == 0)
			bitmap_set_bit(&h, (int)f);
		else if (k == 1)
			sink = sink + g.sum((int)f);
		else
			sink = sink + helper((long)f);
		in[k] += cpu_ns() - t0;
	}
	double total = cpu_ns() - total0;
	printf("{\"bitmap_set_bit\": %.5f, \"sum\": %.5f, \"helper\": %.5f}\n", in[0] / total,
	       in[1] / total, in[2] / total);
	return 0;
}
