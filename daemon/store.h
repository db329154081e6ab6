/* SPDX-License-Identifier: GPL-2.0-only */
/* store_: per-target results in the state directory, so a daemon restart loses nothing. */
#ifndef PCMON_STORE_H
#define PCMON_STORE_H

#include <stddef.h>
#include <stdint.h>

struct sym;
struct target;

int store_save(const char *dir, const struct sym *s, const struct target *t);
void store_remove(const char *dir, uint32_t id);
void store_load_all(const char *dir, struct sym *s, struct target **targets, size_t max,
		    uint32_t *next_id);

#endif
