/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * inst_: instruments. A target (target.h) is what is watched and who owns it; an instrument
 * is how it is watched (docs/sampling.md). Each instrument is one module behind the ops table below;
 * the engine keeps the targets and calls every instrument a target carries for each thing
 * that happens to it. Adding an instrument is adding its files, an enum inst_id value
 * (target.h) and its entry in inst_table[] (inst_table.c) — see HACKING.md.
 */
#ifndef PCMON_INST_H
#define PCMON_INST_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "listreq.h"
#include "proto.h"

struct client;
struct dbginfo;
struct engine_opts;
struct procs;
struct sym;
struct target;
struct sf_rd;
struct sf_wr;
struct pcmon_event;

/* What the engine lends its instruments. */
struct inst_env {
	const struct engine_opts *opts;	/* the daemon's settings (engine_opts.h) */
	struct procs *procs;		/* which process is whose target, in BPF (procs.h) */
	struct sym *sym;
	struct dbginfo *dbg;		/* debuginfod fetches, NULL when off */
	struct target **targets;	/* by id, PCMON_MAX_TARGETS of them, NULL: free */
	/* the engine's epoll: a stream an instrument opens later (not in its fds() at open)
	 * is added here, and wakes the engine to read it (inst_ops.stream) */
	int epfd;
};

/*
 * A command an instrument brings (pcmon node|leg|hist edit the probe-node tables): the
 * engine checks the request against @fields, finds the target named in its "target" field
 * (which the caller may access) and hands it over; the reply is the handler's.
 */
struct inst_cmd {
	const char *name;
	cJSON *(*fn)(void *g, struct target *t, const cJSON *req);
	const struct proto_field *fields;
	size_t nfields;
};

/*
 * An instrument's engine-wide state of @size bytes, zeroed, whose first member is a
 * struct inst_env (set to @env): what open() makes. NULL, with @err said, when out of memory.
 */
void *inst_g_new(const struct inst_env *env, size_t size, char *err, size_t errlen);

struct inst_ops {
	/* its key in requests ("sampling": {...}), replies and state files */
	const char *name;
	/* the start request's fields it takes (checked once, in engine_handle) */
	const struct proto_field *fields;
	size_t nfields;

	/* The instrument's engine-wide state (maps drained, buffers): once per engine. */
	int (*open)(struct inst_env *env, void **g, char *err, size_t errlen);
	void (*close)(void *g);

	/*
	 * A start request: does it ask for this instrument? (Sampling: unless --no-sample.)
	 * Then new() parses its options into a state (0, or the error in *rep), and attach()
	 * puts it to work once the target's id and owner are known, before its processes are.
	 */
	bool (*wanted)(const cJSON *req);
	int (*new)(void *g, const struct client *c, const cJSON *req, void **st, cJSON **rep);
	int (*attach)(void *g, struct target *t, void *st, cJSON **rep);
	/* Pause (false) or resume (true). */
	void (*set_active)(void *g, struct target *t, void *st, bool active);
	/* Detach for good, after collecting everything already in flight. */
	void (*stop)(void *g, struct target *t, void *st);
	void (*zero)(void *g, struct target *t, void *st);
	void (*free)(void *st);

	/*
	 * A process of the target forked, exec'ed, loaded objects or exited (may be NULL).
	 * @prompt_events: it must act on exec and dlopen at once (attach probes to the new
	 * image); else events wait for the engine's next wake-up (docs/design.md).
	 */
	void (*event)(void *g, struct target *t, void *st, const struct pcmon_event *ev);
	bool prompt_events;
	/*
	 * Its part of a `list` reply (may be NULL), for the request @lr (listreq.h): added to
	 * @rep, 0; or -1 with *@err the error to answer instead (left NULL: out of memory). @list_fields: the list request's
	 * fields it takes; list_check() (may be NULL) refuses a request before any target is
	 * looked for. @only: the list field that asks for this instrument's part alone
	 * ("calls"), and @missing what a target without it lacks ("counts no calls (start
	 * it with --count PATTERN)").
	 */
	int (*list_json)(void *g, struct target *t, void *st, const struct list_req *lr,
			 cJSON *rep, cJSON **err);
	const struct proto_field *list_fields;
	size_t nlist_fields;
	int (*list_check)(const struct list_req *lr, cJSON **rep);
	const char *only, *missing;
	/* Commands of its own (may be none). */
	const struct inst_cmd *cmds;
	size_t ncmds;

	/*
	 * Streams it reads besides its periodic drain (may be NULL): fds() says which
	 * descriptors to poll (at most 4), stream() reads what they hold now. It runs before
	 * the processes' lifecycle events are handled (a record is made sense of while its
	 * process's address map may still be read again); true asks for a drain at once (a
	 * BPF buffer filling up): tick() then runs after the events.
	 */
	int (*fds)(void *g, int *fds, int max);
	bool (*stream)(void *g);

	/* Periodic work (drain what BPF holds); sync() collects everything, for a listing. */
	void (*tick)(void *g);
	void (*sync)(void *g);
	/* Bytes of results the state holds (per-user memory allowance). */
	size_t (*bytes)(const void *st);
	/* Its settings and totals: the target's line in `targets`, its facts in replies. */
	void (*facts_json)(void *g, const struct target *t, const void *st, cJSON *o);
	void (*summary_json)(void *g, const struct target *t, void *st, cJSON *o);
	/* Its engine-wide figures in `status` (may be NULL); its BPF programs' entries go in
	 * the "programs" array already there (procs_program_json()). */
	void (*status_json)(void *g, cJSON *rep);

	/* The state as a section of the results file, and back (stfile.h). */
	void (*save)(const struct target *t, const void *st, const struct sym *s,
		     struct sf_wr *w, cJSON *section);
	int (*load)(struct sf_rd *rd, const cJSON *section, struct sym *s, void **st);
};

#endif
