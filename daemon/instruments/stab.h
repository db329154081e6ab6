/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stab_: the stacks the BPF stacks ring sent for one counts map since it was last drained
 * (pcmon_srec), by key, each cut after its frames: what a drain looks its entries' stacks
 * up in (sampler.c keeps one per counts map).
 */
#ifndef PCMON_STAB_H
#define PCMON_STAB_H

#include <stddef.h>
#include <stdint.h>

#include "pcmon_sample.h"

struct stab {
	uint64_t *keys;
	size_t *off;		/* where each stack is in arena */
	size_t n, cap_keys, cap_off;
	uint64_t *arena;	/* each stack as pcmon_stack, cut after its frames */
	size_t narena, cap_arena;
	uint32_t *slots;	/* open addressing over keys: index + 1, 0 = empty */
	size_t nslots;
};

/* The first @n frames of @st, kept as @key's. 0, or -ENOMEM (nothing kept). */
int stab_add(struct stab *t, uint64_t key, const struct pcmon_stack *st, uint32_t n);
/* The stack kept as @key's; NULL if none (key 0: none, by definition). */
const struct pcmon_stack *stab_find(const struct stab *t, uint64_t key);
/* Empty, its memory kept for the next drain's. */
void stab_clear(struct stab *t);
void stab_free(struct stab *t);

#endif
