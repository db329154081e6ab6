/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * http_api_: the JSON API of pcmond's HTTP server (docs/fleet.md), what a page or a script
 * reads a published target's profiles through: its listing, its timeline, its flame graph's
 * tree and the diff of two of its windows, each the engine's own answer to the request pcmon
 * would send (as root, after the target is found published). Read-only; every answer names
 * published targets only.
 */
#ifndef PCMON_HTTP_API_H
#define PCMON_HTTP_API_H

#include <stddef.h>

#include <cJSON.h>

#include "http.h"

struct engine;

/* The engine's answer to @req, as root. */
cJSON *http_engine_call(struct engine *e, const cJSON *req);
/* The engine's answer to request @cmd (of target @target, NULL: none), as root. */
cJSON *http_engine_request(struct engine *e, const char *cmd, const char *target);
/*
 * The published target @want names (its id or name), or the default: the one published
 * target, or the published system-wide one. Its id into @id; 0 or an HTTP status with @why.
 */
int http_published_target(struct engine *e, const char *want, char *id, size_t idlen,
			  char *why, size_t whylen);
/* The answer to API request @q: its JSON text (to free), or NULL with an HTTP status in
 * *@status and @why. */
char *http_api_answer(struct engine *e, const char *host, const struct http_req *q,
		      int *status, char *why, size_t whylen);

#endif
