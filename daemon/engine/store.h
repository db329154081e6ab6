/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store_: per-target results in the state directory, so a daemon restart loses nothing.
 *
 * One file per target, target-ID.json. A save writes target-ID.json.tmp, fsyncs it, renames
 * it over the previous file and fsyncs the directory: at every moment the directory holds
 * either the previous results or the new ones, whole. A save that fails is remembered per
 * target (store_target_json) and for the daemon (store_status_json); the caller retries it.
 */
#ifndef PCMON_STORE_H
#define PCMON_STORE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct sym;
struct target;

#define STORE_FORMAT 5	/* the format written; formats 1 to 4 are still read */

/* @dir is created if missing (a failure is reported at the first save). 0 or -ENOMEM. */
int store_open(const char *dir, struct store **out);
void store_close(struct store *st);

/*
 * Load every target-ID.json into @targets (indexed by id, @max entries) and remove stale
 * temporary files. A file that fails validation is skipped with one warning naming the
 * file and the field, and renamed target-ID.json.rejected so that no new target overwrites
 * it.
 */
void store_load_all(struct store *st, struct sym *s, struct target **targets, size_t max,
		    uint32_t *next_id);
/*
 * Write @t's results; 0 or -errno. The outcome is kept for the reports below. @durable:
 * also fsync, so that the file outlives a crash of the machine, not only of pcmond.
 */
int store_save(struct store *st, const struct sym *s, const struct target *t, bool durable);
/* Delete target @id's results (pcmon drop); 0 or -errno. */
int store_remove(struct store *st, uint32_t id);

/* Reports: "saved" (and "save_error") of a target; a "store" object for pcmon status. */
void store_target_json(const struct store *st, uint32_t id, cJSON *o);
void store_status_json(const struct store *st, uint64_t interval_ns, cJSON *o);

/* The file format alone, for tests and the fuzzer. */
/* @t as the text of a results file (malloc'ed), NULL when out of memory. */
char *store_render(const struct sym *s, const struct target *t);
/*
 * Validate and load the text of a results file; @id is the id its name gives (0: any).
 * 0 and *out set, or -EINVAL with @why saying which field is wrong, or -ENOMEM. Nothing is
 * loaded from a file that fails: no target, no locations in @s.
 */
int store_parse(const char *text, size_t len, uint32_t id, struct sym *s, struct target **out,
		char *why, size_t whylen);

#endif
