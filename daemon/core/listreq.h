/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * list_req: a `list` request, read once from its JSON by the engine (after proto_check() of
 * the fields its instruments take) and handed to each instrument's part of the listing
 * (inst.h, list_json): what the listings read, never the JSON itself. Its strings are the
 * request's, valid while it is.
 */
#ifndef PCMON_LISTREQ_H
#define PCMON_LISTREQ_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct list_req {
	/* which samples count, and how they are named: each unset (NULL, -1) is the target's */
	const char *when;		/* a WHEN pattern (docs/when.md) */
	bool when_from_file;		/* ... read from a file (--when-file) */
	int icase;			/* its names match whatever their case: 0, 1, -1 */
	const char **critical;		/* NAME=PATTERN sections besides the target's */
	size_t ncritical;
	int no_inline;			/* inline frames not told apart: 0, 1, -1 */
	bool no_kernel;			/* kernel frames left out */
	const char *since, *until;	/* a window of time (NULL: the target's life) */

	/* sampling's view: at most one of the exports' stacks (with the timeline, for diff
	 * and save), a procedure's lines, its profil(2) buffer */
	bool stacks, labels;		/* labels: every sample's comm and cgroup, the host */
	bool timeline;
	uint32_t timeline_top;		/* the procedures followed: the hottest, and those named */
	const char **timeline_procs;
	size_t ntimeline_procs;
	const char *by;			/* process|comm|cgroup|thread, NULL: none */
	const char *lines, *offset;	/* --lines PROC, profil --offset */
	uint32_t scale, bufsiz;		/* profil's */
	/* what came after a mark (sample_mark.c): 0 none; let it go, or move it to now */
	uint32_t since_mark;
	bool drop_mark, remark;

	/* the call table's, the probe-node tables' and the allocations' */
	bool calls, tables, alloc;	/* that part alone (alloc with stacks: its profile) */
	const char *sort;		/* the call table's order */

	/* a tailed leg's profile in place of the target's (tail.h): the leg's number, 0: none;
	 * which of its profiles: tail, body or abandoned */
	uint32_t tail;
	const char *tail_part;
};

/* @req into @lr: 0, or -ENOMEM. list_req_free() frees what it holds, not the request. */
int list_req_parse(const cJSON *req, struct list_req *lr);
void list_req_free(struct list_req *lr);

#endif
