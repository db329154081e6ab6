/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * alloc_core: what the allocation instrument makes of its samples (docs/alloc.md), apart
 * from BPF: each sampled allocation weighted as pprof weighs a heap profile's samples, the
 * sites (stacks) it charges, and the blocks still live.
 *
 * A block of s bytes is sampled with probability p = 1 - exp(-s/rate) (a countdown drawn
 * from an exponential distribution of mean rate, include/pcmon_alloc.h); a sample stands for
 * 1/p objects and s/p bytes (Horvitz-Thompson: unbiased), whose variance is estimated from the
 * samples as the sum of (1 - p) (s/p)^2.
 */
#ifndef PCMON_ALLOC_CORE_H
#define PCMON_ALLOC_CORE_H

#include <stddef.h>
#include <stdint.h>

/* One sample's weights. */
struct alloc_weight {
	double objects, bytes;
	double var_bytes;	/* its part of the estimate's variance */
};

void alloc_weigh(uint64_t size, uint64_t rate, struct alloc_weight *w);

/*
 * Entry @i of the countdown table BPF draws from (PCMON_ALLOC_QUANTILES entries, one picked
 * at random): the mean of the i-th of as many equal-probability slices of the exponential
 * distribution of mean 1, x 2^16. Over a slice [a, b] that mean is N ((a + 1) e^-a -
 * (b + 1) e^-b), so the table's mean is the distribution's, 1, exactly.
 */
uint32_t alloc_quantile(uint32_t i);

/* What a site (a stack, by its id) allocated, and what of it is live. */
struct alloc_site {
	uint32_t stack;
	uint64_t samples;
	double alloc_objects, alloc_bytes, alloc_var;
	double inuse_objects, inuse_bytes, inuse_var;
};

/*
 * An allocator's functions by role, "malloc=je_malloc,free=je_free" (roles: malloc, calloc,
 * realloc, memalign, posix_memalign, valloc, free; each at most once; names of C symbols)
 * into @names by enum pcmon_afn (strdup'ed, NULL where not named). 0, or -EINVAL with
 * @err, or -ENOMEM. alloc_functions_free() frees them.
 */
int alloc_parse_functions(const char *spec, char **names, char *err, size_t errlen);
void alloc_functions_free(char **names);

struct alloc_core;

struct alloc_core *alloc_core_new(uint64_t rate);
void alloc_core_free(struct alloc_core *a);
/* A sampled allocation (@id, the record's) of @size at @stack: 0, or -ENOMEM. */
int alloc_core_alloc(struct alloc_core *a, uint64_t id, uint32_t stack, uint64_t size);
/*
 * Its free: false if @id was not live (sampled before, or its record lost); else its site's
 * stack and its weights in *@stack and *@w (either NULL: not wanted).
 */
bool alloc_core_free_block(struct alloc_core *a, uint64_t id, uint32_t *stack,
			   struct alloc_weight *w);
/* A site as a results file gives it, no block of it live (added to one of its stack): 0, or
 * -ENOMEM. */
int alloc_core_put_site(struct alloc_core *a, const struct alloc_site *site);
/* The sites, *n of them (valid until the next call). */
const struct alloc_site *alloc_core_sites(const struct alloc_core *a, size_t *n);
uint64_t alloc_core_rate(const struct alloc_core *a);

/*
 * By time (slices.h): each sampled allocation and each free of a sampled block adds a row of
 * AC_N sums to its stack's row in the slice of its time. Slices hold integers: bytes
 * rounded, objects in thousandths, variances in units of alloc_var_unit(rate) (so that no
 * sum can overflow, whatever the rate). A window's allocations are its slices' AC_ALLOC_*;
 * what is live at its end, every slice's allocations up to then less their frees.
 */
enum { AC_SAMPLES, AC_ALLOC_BYTES, AC_ALLOC_MOBJ, AC_ALLOC_VAR, AC_FREES, AC_FREE_BYTES,
       AC_FREE_MOBJ, AC_FREE_VAR, AC_N };
uint64_t alloc_var_unit(uint64_t rate);
/* The row of one sampled allocation (@freed false) or of its free, of weights @w. */
void alloc_row(const struct alloc_weight *w, bool freed, uint64_t var_unit, uint64_t *row);

#endif
