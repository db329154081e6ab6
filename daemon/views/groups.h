/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * groups_: a listing's counted samples by who took them (pcmon list --by, docs/sampling.md):
 * by process, by command name, by thread or by cgroup, each group with its counted samples
 * and, like LIST, its procedures' shallow and deep counts. It sees each charge of
 * agg_list() through the visitor, so WHEN, critical sections and --no-inline apply as in
 * LIST: a group's counted samples add up, over the groups, to the listing's.
 */
#ifndef PCMON_GROUPS_H
#define PCMON_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "agg.h"

/* What a group is (the request's "by"). */
#define GROUPS_BY(X)                                                                       \
	X(PROCESS, process) /* a process: its pid, named by its command */                 \
	X(COMM, comm)	    /* every process of one command name */                        \
	X(THREAD, thread)   /* a thread: its tid, named by its own name */                 \
	X(CGROUP, cgroup)   /* a cgroup v2: its path */

enum groups_by {
#define GROUPS_BY_ENUM(id, name) GROUPS_##id,
	GROUPS_BY(GROUPS_BY_ENUM)
#undef GROUPS_BY_ENUM
	GROUPS_BY_MAX,
};

extern const char *const groups_by_names[GROUPS_BY_MAX];

/* How the instrument that took the samples names their processes, threads and cgroups
 * (sym string ids, 0: not known). */
struct groups_namer {
	uint32_t (*process)(const void *ctx, uint32_t pid);
	uint32_t (*thread)(const void *ctx, uint32_t tid);
	uint32_t (*cgroup)(const void *ctx, uint64_t id);
	const void *ctx;
};
/* The group of stack @st by @by (enum groups_by): its key, and its name in *name. */
uint64_t groups_key(const struct groups_namer *nm, int by, const struct agg_stack *st,
		    uint32_t *name);
/* "process|comm|thread|cgroup", for the request's field. */
#define GROUPS_BY_VALUES "process|comm|thread|cgroup"
/* The grouping @name says, -1 for none. */
int groups_by_parse(const char *name);

struct group {
	uint64_t key;		/* what tells it apart: a pid, a tid, a cgroup id, a name (comm) */
	uint32_t name;		/* sym string id: the command's, the thread's, the cgroup's path */
	uint32_t pid;		/* process, thread: its process */
	uint32_t processes;	/* how many processes its samples came from */
	uint64_t counted;	/* its counted samples (all of them, sections' too) */
	uint64_t foreign;	/* ... of them charged to foreignPcs */
	struct agg_row *rows;	/* its procedures, sorted by shallow count as agg_sort_rows() */
	size_t nrows, cap_rows;
};

struct groups;

struct groups *groups_new(const struct sym *s);
void groups_free(struct groups *g);
/*
 * Charge visit @v (of agg_list()) to the group of @key: named @name, of process @pid the
 * first time it is met. Shallow and deep counts as agg_list() makes them: a procedure's
 * samples to it, and to every procedure on their stack once.
 */
void groups_add(struct groups *g, uint64_t key, uint32_t name, uint32_t pid,
		const struct agg_visit *v);
/*
 * The groups by counted samples (ties: by name, then key), their rows sorted as LIST's; no
 * visit is taken after. 0, or -ENOMEM if a visit ran out of memory. Valid until
 * groups_free().
 */
int groups_sorted(struct groups *g, const struct group **out, size_t *n);

/*
 * What a group is called, in the exports' root frame: "comm NAME", "process PID NAME",
 * "thread TID NAME", "cgroup PATH" (@key: its pid, tid or cgroup id; @name: its name, "?"
 * when not known).
 */
void groups_title(enum groups_by by, uint64_t key, const char *name, char *buf, size_t len);

#endif
