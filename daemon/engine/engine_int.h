/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's own files share this: the engine (engine.c: its lifecycle, its loop, the
 * commands on targets), the start request (engine_start.c) and the daemon's figures
 * (engine_status.c). Nothing else includes it.
 */
#ifndef PCMON_ENGINE_INT_H
#define PCMON_ENGINE_INT_H

#include <stdint.h>

#include "engine.h"
#include "pcmon_procs.h"
#include "inst.h"
#include "proto.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

#define for_each_inst(i) for (int i = 0; i < INST_MAX; i++)

struct engine {
	struct engine_opts o;
	struct procs *procs;		/* which process is whose target, in BPF */
	struct sym *sym;
	struct dbginfo *dbg;		/* debuginfod fetches, NULL when off */
	void (*status_hook)(void *ctx, cJSON *rep);	/* engine_status_hook() */
	void *status_ctx;
	void (*forget_hook)(void *ctx, uint32_t id, bool drop);	/* engine_forget_hook() */
	void *forget_ctx;
	struct target *targets[PCMON_MAX_TARGETS];
	uint32_t next_id;
	int epfd, timerfd;
	uint64_t started_ns;
	double started_wall;
	uint64_t last_flush_ns;
	uint64_t flush_cost_ns;		/* CPU the last periodic save took (not disk waits) */
	struct store *store;		/* the state directory; NULL: none */
	struct inst_env env;		/* lent to the instruments */
	void *g[INST_MAX];		/* each instrument's engine-wide state */
	/* the start and list requests' fields: the target's and every instrument's */
	struct proto_field *start_fields, *list_fields;
	size_t nstart_fields, nlist_fields;
};

/*
 * How often what changed is saved: every 5 s, or less often when saving takes much CPU (a
 * target of 100k stacks, a system-wide one after minutes), so that it costs at most 0.05 %
 * of a CPU: a twentieth of a system-wide profiler's budget of 1 %. Waiting on the disk is
 * not counted: an fsync slow on a busy disk delays no retry.
 */
static inline uint64_t engine_save_interval_ns(const struct engine *e)
{
	return MAX(5000000000ULL, 2000 * e->flush_cost_ns);
}

/* Whether @c may see and act on @t: its owner, or root. */
bool engine_may_access(const struct client *c, const struct target *t);
/* Bytes of results the targets of @uid hold (its memory allowance). */
size_t engine_user_bytes(const struct engine *e, uid_t uid);
/* BPF's view of the target as a watched set, and its undoing (every instrument detached). */
int engine_target_configure(struct engine *e, struct target *t);
void engine_target_release(struct engine *e, struct target *t);
/* Every target brought up to date: events, then everything BPF holds. */
void engine_sync_all(struct engine *e);
/* Pause, resume or stop: t->flags says which, BPF and every instrument are told. */
void engine_target_activate(struct engine *e, struct target *t);
/* Stop watching @t for good, collecting everything already collected. */
void engine_target_stop(struct engine *e, struct target *t);
/* @t brought up to date for a report: what BPF holds, names that arrived. */
void engine_target_sync(struct engine *e, struct target *t);

/* The requests start (engine_start.c), targets and status (engine_status.c). */
cJSON *engine_cmd_start(struct engine *e, const struct client *c, const cJSON *req);
cJSON *engine_cmd_targets(struct engine *e, const struct client *c, const cJSON *req);
#define ENGINE_NTARGETS_FIELDS 1
extern const struct proto_field engine_targets_fields[ENGINE_NTARGETS_FIELDS];
cJSON *engine_cmd_status(struct engine *e, const struct client *c, const cJSON *req);
/* What a start request says about the target itself (the instruments add theirs). */
extern const struct proto_field engine_target_start_fields[];
extern const size_t engine_ntarget_start_fields;

#endif
