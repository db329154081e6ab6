// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's arithmetic (alloc_core.h): weights, sites, live blocks.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_core.h"
#include "pcmon_alloc.h"
#include "util.h"

/* A live sampled block: its site and its weights, found by its record's id. */
struct live {
	uint64_t id;
	uint32_t site;
	uint32_t used;
	struct alloc_weight w;
};

struct alloc_core {
	uint64_t rate;
	struct itab *stacks;		/* stack id -> site slot */
	struct alloc_site *sites;
	size_t cap_sites;
	struct live *live;		/* open addressing by id, a power of two */
	size_t cap_live, nlive;
};

void alloc_weigh(uint64_t size, uint64_t rate, struct alloc_weight *w)
{
	/* (not sampling, or a block of 0 bytes, which the countdown samples only when it is
	 * already due: counted as itself) */
	double p = rate && size ? -expm1(-(double)size / (double)rate) : 1;

	if (!(p > 0))
		p = 1;
	w->objects = 1 / p;
	w->bytes = (double)size / p;
	w->var_bytes = (1 - p) * w->bytes * w->bytes;
}

static const char *const roles[PCMON_AFN_N] = {
	[PCMON_AFN_MALLOC] = "malloc", [PCMON_AFN_CALLOC] = "calloc",
	[PCMON_AFN_REALLOC] = "realloc", [PCMON_AFN_MEMALIGN] = "memalign",
	[PCMON_AFN_POSIX_MEMALIGN] = "posix_memalign", [PCMON_AFN_VALLOC] = "valloc",
	[PCMON_AFN_FREE] = "free",
};

void alloc_functions_free(char **names)
{
	for (int i = 0; i < PCMON_AFN_N; i++) {
		free(names[i]);
		names[i] = NULL;
	}
}

/* a C symbol's name: a letter or _, then letters, digits, _ (and . as in a versioned one) */
static bool c_name(const char *s, size_t n)
{
	if (!n || n > 128 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

int alloc_parse_functions(const char *spec, char **names, char *err, size_t errlen)
{
	const char *p = spec;

	memset(names, 0, PCMON_AFN_N * sizeof(*names));
	while (*p) {
		size_t len = strcspn(p, ","), rl = strcspn(p, "=");
		int role = -1;

		if (rl >= len) {
			snprintf(err, errlen, "--alloc-functions: '%.*s' is not ROLE=NAME (malloc=je_malloc,free=je_free)",
				 (int)MIN(len, 64), p);
			goto bad;
		}
		for (int i = 0; i < PCMON_AFN_N; i++)
			if (strlen(roles[i]) == rl && !strncmp(p, roles[i], rl))
				role = i;
		if (role < 0) {
			snprintf(err, errlen, "--alloc-functions: no role '%.*s': give malloc, calloc, realloc, memalign, posix_memalign, valloc or free",
				 (int)MIN(rl, 64), p);
			goto bad;
		}
		if (names[role]) {
			snprintf(err, errlen, "--alloc-functions: %s is named twice", roles[role]);
			goto bad;
		}
		if (!c_name(p + rl + 1, len - rl - 1)) {
			snprintf(err, errlen, "--alloc-functions: %s=%.*s: give a function's name",
				 roles[role], (int)MIN(len - rl - 1, 64), p + rl + 1);
			goto bad;
		}
		names[role] = strndup(p + rl + 1, len - rl - 1);
		if (!names[role]) {
			alloc_functions_free(names);
			return -ENOMEM;
		}
		p += len + (p[len] == ',');
	}
	if (!names[PCMON_AFN_MALLOC] && !names[PCMON_AFN_CALLOC] && !names[PCMON_AFN_REALLOC] &&
	    !names[PCMON_AFN_MEMALIGN] && !names[PCMON_AFN_POSIX_MEMALIGN] &&
	    !names[PCMON_AFN_VALLOC]) {
		snprintf(err, errlen, "--alloc-functions: name at least one function that allocates (malloc=NAME)");
		goto bad;
	}
	return 0;
bad:
	alloc_functions_free(names);
	return -EINVAL;
}

uint32_t alloc_quantile(uint32_t i)
{
	const double n = PCMON_ALLOC_QUANTILES;
	/* (the slice's bounds as doubles: -i of an unsigned i wraps) */
	double lo = -log1p(-(double)i / n);
	double hi = i + 1 < n ? -log1p(-(double)(i + 1) / n) : INFINITY;
	double m = n * ((lo + 1) * exp(-lo) - (isinf(hi) ? 0 : (hi + 1) * exp(-hi)));

	return (uint32_t)fmin(fmax(m * 65536.0 + 0.5, 0), (double)UINT32_MAX);
}

struct alloc_core *alloc_core_new(uint64_t rate)
{
	struct alloc_core *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->rate = rate;
	a->stacks = itab_new();
	if (!a->stacks) {
		free(a);
		return NULL;
	}
	return a;
}

void alloc_core_free(struct alloc_core *a)
{
	if (!a)
		return;
	itab_free(a->stacks);
	free(a->sites);
	free(a->live);
	free(a);
}

uint64_t alloc_core_rate(const struct alloc_core *a)
{
	return a->rate;
}

static size_t slot_of(uint64_t id, size_t cap)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static int live_grow(struct alloc_core *a)
{
	size_t cap = a->cap_live ? a->cap_live * 2 : 1024;
	struct live *l = calloc(cap, sizeof(*l));

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap_live; i++) {
		size_t k;

		if (!a->live[i].used)
			continue;
		for (k = slot_of(a->live[i].id, cap); l[k].used; k = (k + 1) & (cap - 1))
			;
		l[k] = a->live[i];
	}
	free(a->live);
	a->live = l;
	a->cap_live = cap;
	return 0;
}

int alloc_core_alloc(struct alloc_core *a, uint64_t id, uint32_t stack, uint64_t size)
{
	struct alloc_weight w;
	struct alloc_site *s;
	uint32_t slot;
	size_t k;
	int r;

	r = itab_intern(a->stacks, &stack, sizeof(stack), &slot);
	if (r < 0 || GROW(a->sites, a->cap_sites, slot + 1))
		return -ENOMEM;
	s = &a->sites[slot];
	if (r == 1)
		*s = (struct alloc_site){ .stack = stack };
	if ((a->nlive + 1) * 2 > a->cap_live && live_grow(a))
		return -ENOMEM;
	alloc_weigh(size, a->rate, &w);
	s->samples++;
	s->alloc_objects += w.objects;
	s->alloc_bytes += w.bytes;
	s->alloc_var += w.var_bytes;
	s->inuse_objects += w.objects;
	s->inuse_bytes += w.bytes;
	s->inuse_var += w.var_bytes;
	for (k = slot_of(id, a->cap_live); a->live[k].used; k = (k + 1) & (a->cap_live - 1))
		;
	a->live[k] = (struct live){ .id = id, .site = slot, .used = 1, .w = w };
	a->nlive++;
	return 0;
}

/* Take out entry @k of the open-addressed table, moving up what follows it. */
static void live_remove(struct alloc_core *a, size_t k)
{
	size_t mask = a->cap_live - 1, j = k;

	a->live[k].used = 0;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!a->live[j].used)
			break;
		home = slot_of(a->live[j].id, a->cap_live);
		/* (j's entry may move to k if k lies on its way from home to j) */
		if ((j > k && (home <= k || home > j)) || (j < k && home <= k && home > j)) {
			a->live[k] = a->live[j];
			a->live[j].used = 0;
			k = j;
		}
	}
	a->nlive--;
}

bool alloc_core_free_block(struct alloc_core *a, uint64_t id, uint32_t *stack,
			   struct alloc_weight *w)
{
	struct alloc_site *s;
	size_t k;

	if (!a->cap_live)
		return false;
	for (k = slot_of(id, a->cap_live); a->live[k].used; k = (k + 1) & (a->cap_live - 1)) {
		if (a->live[k].id != id)
			continue;
		s = &a->sites[a->live[k].site];
		if (stack)
			*stack = s->stack;
		if (w)
			*w = a->live[k].w;
		s->inuse_objects -= a->live[k].w.objects;
		s->inuse_bytes -= a->live[k].w.bytes;
		s->inuse_var -= a->live[k].w.var_bytes;
		live_remove(a, k);
		return true;
	}
	return false;
}

int alloc_core_put_site(struct alloc_core *a, const struct alloc_site *site)
{
	uint32_t slot;
	int r = itab_intern(a->stacks, &site->stack, sizeof(site->stack), &slot);

	if (r < 0 || GROW(a->sites, a->cap_sites, slot + 1))
		return -ENOMEM;
	if (r == 1) {
		a->sites[slot] = *site;
		return 0;
	}
	a->sites[slot].samples += site->samples; /* (a stack twice: merged, as the aggregate does) */
	a->sites[slot].alloc_objects += site->alloc_objects;
	a->sites[slot].alloc_bytes += site->alloc_bytes;
	a->sites[slot].alloc_var += site->alloc_var;
	a->sites[slot].inuse_objects += site->inuse_objects;
	a->sites[slot].inuse_bytes += site->inuse_bytes;
	a->sites[slot].inuse_var += site->inuse_var;
	return 0;
}

const struct alloc_site *alloc_core_sites(const struct alloc_core *a, size_t *n)
{
	*n = itab_count(a->stacks);
	return a->sites;
}

uint64_t alloc_var_unit(uint64_t rate)
{
	/* (a sample's variance is below rate^2: 2^32 of them to a slice before a sum overflows) */
	return MAX((uint64_t)1, (uint64_t)((double)rate * (double)rate) >> 32);
}

void alloc_row(const struct alloc_weight *w, bool freed, uint64_t var_unit, uint64_t *row)
{
	int at = freed ? AC_FREES : AC_SAMPLES;

	memset(row, 0, AC_N * sizeof(*row));
	row[at] = 1;
	row[at + 1] = (uint64_t)llround(w->bytes);
	row[at + 2] = (uint64_t)llround(w->objects * 1000);
	row[at + 3] = (uint64_t)llround(w->var_bytes / (double)var_unit);
}
