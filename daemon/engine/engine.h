/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * engine_: targets and the commands on them. pcmond serves it over its socket; `pcmon run`
 * without a daemon links it in directly. Either way every command is a JSON request
 * answered by a JSON reply (see proto.h), so the CLI formats the same documents.
 */
#ifndef PCMON_ENGINE_H
#define PCMON_ENGINE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine_opts.h"

struct engine;

/* Target slots only root may take, so that users together can never lock root out. */
#define ENGINE_ROOT_RESERVE 32

/*
 * The engine's scheduling priority where it may take it (root, CAP_SYS_NICE): it works in
 * short bursts, and at the default priority it waits its turn behind every runnable thread
 * of the programs it watches, while BPF's rings fill (pcmond, and pcmon run's own engine).
 */
#define ENGINE_NICE (-10)

struct client {
	uid_t uid;
	pid_t pid;
	/* descriptors the client passed with this request; a handler that keeps one sets -1 */
	int *fds;
	int nfds;
};

/* PCMON_VERSION of the engine's build: the CLI checks pcmon-engine.so's against its own. */
extern const char engine_version[];

int engine_new(const struct engine_opts *o, struct engine **out, char *err, size_t errlen);
void engine_free(struct engine *e);
/* Readable when engine_work() has something to do. */
int engine_fd(struct engine *e);
void engine_work(struct engine *e);
/* Answer one request; never NULL (an allocation failure is answered as an error). */
cJSON *engine_handle(struct engine *e, const struct client *c, const cJSON *req);
/* pcmond's own parts (its HTTP server, its pushes) add what they count to `pcmon status`. */
void engine_status_hook(struct engine *e, void (*fn)(void *ctx, cJSON *rep), void *ctx);
/*
 * ... and hear of a target's counts about to be forgotten (`zero`, `drop`), while they can
 * still be listed: a push sends what came since its last window first (docs/fleet.md).
 */
void engine_forget_hook(struct engine *e, void (*fn)(void *ctx, uint32_t id, bool drop),
			void *ctx);
/*
 * pcmond stops: no target counts anything more, and what BPF holds is collected, so that
 * what is pushed last and what is saved are the same counts.
 */
void engine_quiesce(struct engine *e);
/* Write every target's results to the state directory. */
void engine_flush(struct engine *e, bool durable);

/* The start request's field @name as the engine checks it, NULL if none (the CLI's help). */
struct proto_field;
const struct proto_field *engine_start_field(const char *name);

#endif
