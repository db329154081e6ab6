// SPDX-License-Identifier: GPL-2.0-only
/* Stacks by key, as the stacks ring sent them: see stab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stab.h"
#include "util.h"

static uint32_t slot_of(uint64_t key, size_t nslots)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (nslots - 1);
}

static void stab_index(struct stab *t, size_t i)
{
	uint32_t h = slot_of(t->keys[i], t->nslots);

	while (t->slots[h])
		h = (h + 1) & (t->nslots - 1);
	t->slots[h] = i + 1;
}

int stab_add(struct stab *t, uint64_t key, const struct pcmon_stack *st, uint32_t n)
{
	if (GROW(t->keys, t->cap_keys, t->n + 1) || GROW(t->off, t->cap_off, t->n + 1) ||
	    GROW(t->arena, t->cap_arena, t->narena + 1 + n))
		return -ENOMEM;
	if (2 * (t->n + 1) > t->nslots) {
		size_t want = t->nslots ? 2 * t->nslots : 1024;
		uint32_t *slots = calloc(want, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		free(t->slots);
		t->slots = slots;
		t->nslots = want;
		for (size_t i = 0; i < t->n; i++)
			stab_index(t, i);
	}
	t->keys[t->n] = key;
	t->off[t->n] = t->narena;
	/* laid out as a struct pcmon_stack cut after its frames */
	memcpy(&t->arena[t->narena], st, offsetof(struct pcmon_stack, ip));
	((struct pcmon_stack *)&t->arena[t->narena])->len = n;
	memcpy(&t->arena[t->narena + 1], st->ip, n * sizeof(__u64));
	t->narena += 1 + n;
	stab_index(t, t->n++);
	return 0;
}

/* The stack of @key as the ring sent it; NULL if it did not. */
const struct pcmon_stack *stab_find(const struct stab *t, uint64_t key)
{
	uint32_t h;

	if (!key || !t->nslots)
		return NULL;
	for (h = slot_of(key, t->nslots); t->slots[h]; h = (h + 1) & (t->nslots - 1))
		if (t->keys[t->slots[h] - 1] == key)
			return (const void *)&t->arena[t->off[t->slots[h] - 1]];
	return NULL;
}

void stab_clear(struct stab *t)
{
	t->n = t->narena = 0;
	if (t->nslots)
		memset(t->slots, 0, t->nslots * sizeof(*t->slots));
}

void stab_free(struct stab *t)
{
	free(t->keys);
	free(t->off);
	free(t->arena);
	free(t->slots);
}
