/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * near_: the names closest to one that matched nothing, for an error or a warning that says
 * which names were meant ("no procedure cnt.fibb; near: cnt.fib"). Candidates are offered
 * one by one; the closest few by edit distance on their last part (a procedure's name
 * without its module), case aside, are kept, or those containing the name wanted.
 */
#ifndef PCMON_NEAR_H
#define PCMON_NEAR_H

#include <cJSON.h>
#include <stddef.h>

#define NEAR_MAX 3
#define NEAR_NAME_MAX 256

struct near {
	char want[NEAR_NAME_MAX];	/* the last part of the name that matched nothing */
	int n;
	unsigned dist[NEAR_MAX];
	char best[NEAR_MAX][NEAR_NAME_MAX];	/* closest first */
};

/* @want as written (a pattern's name: module.procedure, a glob, or a procedure alone). */
void near_init(struct near *nr, const char *want);
/* A candidate: @name its procedure's name, @full what is shown ("module.procedure"). */
void near_offer(struct near *nr, const char *name, const char *full);
/* The names kept as " (near: a, b)", or "" if none: the end of an error message. */
void near_text(const struct near *nr, char *buf, size_t len);
/* The names kept, as a JSON array of strings (closest first); NULL without memory. */
cJSON *near_json(const struct near *nr);

#endif
