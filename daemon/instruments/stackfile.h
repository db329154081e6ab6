/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stackfile_: an aggregate's stacks in a results file, symbolized, as the sampling and the
 * allocation instruments keep them (stfile.h has the file's helpers, store.h the file):
 *
 *   "procs": [{"m": MODULE, "n": NAME, ["file": F,] ["line": N,] ["lo", "hi": "0x..."]}],
 *   "locs": [{"a": "0x...", "f": [PROC_INDEX, ...innermost first], ["file": F,]
 *             ["line": N,] ["fl": [[FILE, LINE], ...] each frame's own line]}],
 *   "stacks": [{"k": "oncpu|oncpu_kernel|off_blocked|off_runnable", "p": PID, ["t": TID,]
 *               ["cg": CGROUP_ID,] ["u": UNWALK_REASON,] ["cs": true, "cr": CUT_REASON,]
 *               ["mp": true,] ["s": SECTION,] "nu": USER_LOCS, "c": COUNT, "ns": NS,
 *               "l": [LOC_INDEX, ...outermost first]}]
 *
 * Stacks are written in the aggregate's order, so that a stack's index in "stacks" is its id
 * in the aggregate: the slices and the other tables of a section name stacks by it. Format 1
 * named each location's module and frames ("m", "f": [NAME, ...]) instead of "procs".
 */
#ifndef PCMON_STACKFILE_H
#define PCMON_STACKFILE_H

#include <stdint.h>

#include <cJSON.h>

#include "stfile.h"

struct agg;
struct sym;

/* Numbers things in first-use order: sym id -> index in the file's table, -1 unset. */
struct stackfile_idmap {
	int64_t *idx;
	size_t cap;
	uint32_t n;
	cJSON *arr;
};

struct stackfile_wr {
	struct sf_wr *w;
	const struct sym *s;
	struct stackfile_idmap procs, locs;
	struct sf_text stacks;
};

/* Every stack of @agg with its count and time into @section's "procs", "locs", "stacks"
 * (errors: w->oom). */
void stackfile_save(struct sf_wr *w, const struct sym *s, const struct agg *agg,
		    cJSON *section);

/* What a section's stacks hold, checked (strings point into the parsed document). */
struct stackfile_proc;
struct stackfile_loc;

struct stackfile_rd {
	struct stackfile_proc *procs;
	struct stackfile_loc *locs;
	int nprocs, nlocs, nstacks;
	const cJSON *stacks;
};

/* Read and check @section's "procs", "locs" and "stacks" (absent: @need says whether that is
 * an error, SF_ALWAYS or SF_OPTIONAL; f->stacks NULL then). 0 or sf_bad()'s error. */
int stackfile_check(struct sf_rd *rd, const cJSON *section, int need, struct stackfile_rd *f);

/* Intern what stackfile_check() read into @s and add its stacks to @agg: @sid[i] (room for
 * f->nstacks) the aggregate's id of the file's stack i. 0, or -ENOMEM. */
int stackfile_load(struct sf_rd *rd, struct stackfile_rd *f, struct sym *s, struct agg *agg,
		   uint32_t *sid);

void stackfile_release(struct stackfile_rd *f);

#endif
