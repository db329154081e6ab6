// SPDX-License-Identifier: GPL-2.0-only
/*
 * A program with an allocator of its own (a bump allocator over a static arena, with a
 * free that only counts): pool_alloc() and pool_free(), which glibc's names do not find. It
 * allocates N blocks of 512 bytes at one site, frees every other one, and says what it
 * allocated and what is still live.
 *
 *   bumpalloc N
 */
#include "workload.h"

#define ARENA (64u << 20)

static char arena[ARENA];
static size_t used;

NOINLINE void *pool_alloc(size_t n)
{
	void *p = used + n <= ARENA ? arena + used : NULL;

	used += p ? (n + 15) & ~(size_t)15 : 0;
	BARRIER();
	return p;
}

NOINLINE void pool_free(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

NOINLINE void make_blocks(int n, void **b)
{
	for (int i = 0; i < n; i++)
		b[i] = pool_alloc(512);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000, freed = 0;
	void **b = malloc((n + 1) * sizeof(*b));

	make_blocks(n, b);
	for (int i = 0; i < n; i += 2, freed++)
		pool_free(b[i]);
	printf("{\"bytes\": %d, \"blocks\": %d, \"live_bytes\": %d}\n", n * 512, n,
	       (n - freed) * 512);
	return 0;
}
