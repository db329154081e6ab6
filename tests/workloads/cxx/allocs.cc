// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocates with C++'s new at two sites for SECS seconds and says what each allocated:
 * make_small() news and deletes 1000-byte arrays, make_big() news 16 KiB ones and keeps one
 * in 1024 until exit. operator new (Debian's libstdc++) keeps no frame pointer: a walk by frame
 * pointers alone skips the function that called it.
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static std::vector<char *> kept;
static unsigned long long small_bytes, big_bytes, big_live;

#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

__attribute__((noinline)) void make_small()
{
	char *p = new char[1000];

	ESCAPE(p);
	small_bytes += 1000;
	delete[] p;
}

__attribute__((noinline)) void make_big(unsigned long i)
{
	char *p = new char[16384];

	ESCAPE(p);
	big_bytes += 16384;
	if (i % 1024 == 0) {
		kept.push_back(p);
		big_live += 16384;
	} else {
		delete[] p;
	}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);

	kept.reserve(1 << 20);
	for (unsigned long i = 0; std::chrono::steady_clock::now() < end; i++) {
		make_small();
		if (i % 4 == 0)
			make_big(i / 4);
	}
	printf("{\"make_small\": {\"bytes\": %llu}, \"make_big\": {\"bytes\": %llu, \"live_bytes\": %llu}}\n",
	       small_bytes, big_bytes, big_live);
	return 0;
}
