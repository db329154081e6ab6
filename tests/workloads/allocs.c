// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocates at three sites for SECS seconds and says what each allocated, in bytes and
 * blocks, and what is still live when it ends: churn() frees each block at once,
 * keep() holds every block until exit, grow() callocs a block and reallocs it larger (the
 * realloc counted as an allocation of its new size, the calloc's block freed by it when it
 * moves, as glibc does). Sizes are drawn from a fixed sequence, so runs are alike.
 *
 * With --wait FILE it waits (after printing its pid) until FILE exists, so that a watcher
 * may be started first.
 */
#include <string.h>
#include <sys/stat.h>

#include "workload.h"

struct site {
	uint64_t bytes, blocks, live_bytes, live_blocks;
};

static struct site s_churn, s_keep, s_grow;
static void **kept;
static size_t nkept, cap_kept;

static uint64_t rnd = 88172645463325252ULL;

/* the block escapes: the compiler may not take a malloc and its free away as unobserved */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

static size_t draw(size_t max)
{
	rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
	return 16 + rnd % max;
}

NOINLINE void churn(void)
{
	size_t n = draw(4096);
	char *p = malloc(n);

	memset(p, 1, n);
	ESCAPE(p);
	s_churn.bytes += n;
	s_churn.blocks++;
	free(p);
	BARRIER();
}

NOINLINE void keep(void)
{
	size_t n = draw(512);
	char *p = malloc(n);

	memset(p, 2, n);
	ESCAPE(p);
	if (nkept == cap_kept) {
		cap_kept = cap_kept ? 2 * cap_kept : 1024;
		kept = realloc(kept, cap_kept * sizeof(*kept)); /* (not one of the three sites) */
	}
	kept[nkept++] = p;
	s_keep.bytes += n;
	s_keep.blocks++;
	s_keep.live_bytes += n;
	s_keep.live_blocks++;
	BARRIER();
}

NOINLINE void grow(void)
{
	size_t n = draw(1024), m = n + draw(8192);
	char *p = calloc(1, n), *q;

	ESCAPE(p);
	s_grow.bytes += n;
	s_grow.blocks++;
	q = realloc(p, m);
	memset(q, 3, m);
	ESCAPE(q);
	s_grow.bytes += m;
	s_grow.blocks++;
	free(q);
	BARRIER();
}

static void site_json(const char *name, const struct site *s, const char *sep)
{
	printf("\"%s\": {\"bytes\": %llu, \"blocks\": %llu, \"live_bytes\": %llu, \"live_blocks\": %llu}%s",
	       name, (unsigned long long)s->bytes, (unsigned long long)s->blocks,
	       (unsigned long long)s->live_bytes, (unsigned long long)s->live_blocks, sep);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	uint64_t end;
	struct stat st;

	if (argc > 3 && !strcmp(argv[2], "--wait")) {
		printf("{\"pid\": %d}\n", getpid());
		fflush(stdout);
		while (stat(argv[3], &st))
			usleep(1000);
	}
	end = wall_ns() + secs * 1e9;
	/* in the proportions 6:1:3 by calls, in an order that does not alias */
	while (wall_ns() < end) {
		for (int i = 0; i < 100; i++) {
			unsigned k = draw(10) % 10;

			if (k < 6)
				churn();
			else if (k < 7)
				keep();
			else
				grow();
		}
	}
	printf("{");
	site_json("churn", &s_churn, ", ");
	site_json("keep", &s_keep, ", ");
	site_json("grow", &s_grow, "}\n");
	fflush(stdout);
	return 0;
}
