/* SPDX-License-Identifier: GPL-2.0-only */
/* Tables for people, from the JSON replies of the engine. */
#ifndef PCMON_FORMAT_H
#define PCMON_FORMAT_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdio.h>

struct list_view {
	bool shallow, deep;	/* which tables (both when neither was asked for) */
	long top;		/* rows per table, 0 = all */
};

void fmt_list(FILE *f, const cJSON *rep, const struct list_view *v);
void fmt_calls(FILE *f, const cJSON *rep);
/* The allocation table (format_alloc.c). */
void fmt_alloc(FILE *f, const cJSON *rep);
/* Every section of a `list` reply: sampling's listing, the call table. */
void fmt_listing(FILE *f, const cJSON *rep, const struct list_view *v);
void fmt_targets(FILE *f, const cJSON *rep);
void fmt_status(FILE *f, const cJSON *rep);
/* list --lines: per line, per address with its code, the source text when readable
 * (under its compilation directory, or one of @dirs); profil's cells (views.c). */
void fmt_lines(FILE *f, const cJSON *rep, const char *const *dirs, size_t ndirs);
void fmt_profil(FILE *f, const cJSON *rep);
/* A listing's "window" line, if it has one; wall seconds as local "YYYY-MM-DD HH:MM:SS". */
void fmt_window(FILE *f, const cJSON *rep);
/* Names a --proc or --when gave that no procedure of the target answers to, with those near. */
void fmt_unseen(FILE *f, const cJSON *arr, const char *opt);
/* "exited 0", "killed by SIGKILL", "running" ... */
void fmt_state(char *buf, size_t len, const cJSON *target);

#endif
