// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmond's JSON API over HTTP (http_api.h, docs/fleet.md): each view the engine's answer to
 * the request pcmon sends for it, asked as root once its target is found published.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diffdoc.h"
#include "engine.h"
#include "export.h"
#include "http_api.h"
#include "proto.h"
#include "util.h"

#define API_DIFF_ALPHA 0.01	/* as pcmon diff's */
#define API_SLICE_PROCS 64	/* the procedures a side's timeline follows, as pcmon diff's */
#define API_FLAME_NODES 5000	/* a flame tree's, unless nodes= says */

static const struct client root = { .uid = 0, .pid = 0 };

/* ---- the engine, as root; targets */

cJSON *http_engine_call(struct engine *e, const cJSON *req)
{
	return engine_handle(e, &root, req);
}

/* A request @cmd (of target @target, NULL: none), to fill in. */
static cJSON *new_req(const char *cmd, const char *target)
{
	cJSON *req = cJSON_CreateObject();

	cJSON_AddNumberToObject(req, "v", PROTO_VERSION);
	cJSON_AddStringToObject(req, "cmd", cmd);
	if (target)
		cJSON_AddStringToObject(req, "target", target);
	return req;
}

/* The engine's answer to @req, which is freed. */
static cJSON *call_free(struct engine *e, cJSON *req)
{
	cJSON *rep = engine_handle(e, &root, req);

	cJSON_Delete(req);
	return rep;
}

cJSON *http_engine_request(struct engine *e, const char *cmd, const char *target)
{
	return call_free(e, new_req(cmd, target));
}

/*
 * Which targets there are, their totals as they were (not read from BPF first: the listing
 * that follows reads it, and one drain a scrape is enough).
 */
static cJSON *targets_known(struct engine *e)
{
	cJSON *req = new_req("targets", NULL);

	cJSON_AddBoolToObject(req, "current", false);
	return call_free(e, req);
}

int http_published_target(struct engine *e, const char *want, char *id, size_t idlen,
			  char *why, size_t whylen)
{
	cJSON *rep = targets_known(e), *t, *pick = NULL, *all = NULL;
	int n = 0, nall = 0;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "targets")) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
		const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "kind"));
		char tid[16];

		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "published")))
			continue;
		snprintf(tid, sizeof(tid), "%d",
			 (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "id")));
		if (want) {
			/* (a want of digits alone is an id: a target named "5" is not target 5) */
			if (!strcmp(want, tid) ||
			    (name && !strcmp(want, name) && strspn(want, "0123456789") != strlen(want))) {
				pick = t;
				break;
			}
			continue;
		}
		n++;
		pick = t;
		if (kind && !strcmp(kind, "all")) {
			nall++;
			all = t;
		}
	}
	if (want && !pick) {
		char shown[64];

		snprintf(shown, sizeof(shown), "%s", want);
		str_sanitize(shown, sizeof(shown) - 1);
		snprintf(why, whylen, "no published target '%s': / lists them", shown);
		goto refuse;
	}
	if (!want && n != 1) {
		if (nall != 1) {
			if (n)
				snprintf(why, whylen, "%d targets are published: name one, target=ID|NAME", n);
			else
				snprintf(why, whylen, "no target is published (pcmon start --publish, or "
						      "publish = yes in pcmond.conf)");
			cJSON_Delete(rep);
			return n ? 400 : 404;
		}
		pick = all;
	}
	snprintf(id, idlen, "%d",
		 (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pick, "id")));
	cJSON_Delete(rep);
	return 0;
refuse:
	cJSON_Delete(rep);
	return 404;
}

/* ---- the views */

/* A list request for target @id with the window and pattern @q asks. */
static cJSON *list_req(const char *id, const struct http_req *q)
{
	cJSON *req = new_req("list", id);

	if (q->since)
		cJSON_AddStringToObject(req, "since", q->since);
	if (q->until)
		cJSON_AddStringToObject(req, "until", q->until);
	if (q->when)
		cJSON_AddStringToObject(req, "when", q->when);
	return req;
}

/* The engine's answer to @req (taken), or NULL with 400 and its error in @why. */
static cJSON *ask(struct engine *e, cJSON *req, int *status, char *why, size_t whylen)
{
	cJSON *rep = call_free(e, req);

	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		snprintf(why, whylen, "%s",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rep, "error")) ?: "failed");
		*status = 400;
		cJSON_Delete(rep);
		return NULL;
	}
	cJSON_DeleteItemFromObject(rep, "v");
	cJSON_DeleteItemFromObject(rep, "ok");
	return rep;
}

/* The published targets: {"host", "targets": [the engine's facts of each]}. */
static cJSON *targets_json(struct engine *e, const char *host)
{
	cJSON *rep = targets_known(e), *o = cJSON_CreateObject(), *arr, *t;

	cJSON_AddStringToObject(o, "host", host);
	arr = cJSON_AddArrayToObject(o, "targets");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "targets"))
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "published")))
			cJSON_AddItemToArray(arr, cJSON_Duplicate(t, 1));
	cJSON_Delete(rep);
	return o;
}

/* The flame graph's tree of target @id's window: {"window", "flame": TREE}. */
static cJSON *flame_json(struct engine *e, const char *id, const struct http_req *q,
			 int *status, char *why, size_t whylen)
{
	cJSON *req = list_req(id, q), *rep, *tree = NULL, *o;
	struct xprof p;

	cJSON_AddBoolToObject(req, "stacks", true);
	if (!(rep = ask(e, req, status, why, whylen)))
		return NULL;
	if (xprof_load(&p, rep, why, whylen)) { /* (a target that takes no samples) */
		*status = 400;
		cJSON_Delete(rep);
		return NULL;
	}
	if (flame_tree_json(&p, NULL, q->inverted, q->nodes ? q->nodes : API_FLAME_NODES, &tree))
		*status = 500, snprintf(why, whylen, "out of memory");
	xprof_free(&p);
	o = tree ? cJSON_CreateObject() : NULL;
	if (o) {
		if (cJSON_GetObjectItemCaseSensitive(rep, "window"))
			cJSON_AddItemToObject(o, "window", cJSON_DetachItemFromObject(rep, "window"));
		cJSON_AddItemToObject(o, "flame", tree);
	} else {
		cJSON_Delete(tree);
	}
	cJSON_Delete(rep);
	return o;
}

/* Window @spec (SINCE..UNTIL) of target @id, with its stacks and timeline, as pcmon diff asks
 * for a side. */
static cJSON *side(struct engine *e, const char *id, const char *spec, const struct http_req *q,
		   int *status, char *why, size_t whylen)
{
	struct http_req w = *q;
	char since[2 * HTTP_API_MAX_TIME + 3], *dots;
	cJSON *req;

	snprintf(since, sizeof(since), "%s", spec);
	dots = strstr(since, "..");
	*dots = '\0';
	w.since = since[0] ? since : NULL;
	w.until = dots[2] ? dots + 2 : NULL;
	req = list_req(id, &w);
	cJSON_AddBoolToObject(req, "stacks", true);
	cJSON_AddBoolToObject(req, "timeline", true);
	cJSON_AddNumberToObject(req, "timeline_top", API_SLICE_PROCS);
	return ask(e, req, status, why, whylen);
}

/* The diff of two windows of target @id: {"diff": pcmon diff --json's document, "flame":
 * the two merged as its differential flame graph}. */
static cJSON *diff_json(struct engine *e, const char *id, const struct http_req *q,
			int *status, char *why, size_t whylen)
{
	struct diffdoc d;
	cJSON *o = NULL, *doc = NULL, *tree = NULL;
	int r = 0;

	if (diffdoc_init(&d, DSTAT_AUTO, API_DIFF_ALPHA)) {
		*status = 500;
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	for (int k = 0; k < 2 && !r; k++) {
		cJSON *rep = side(e, id, k ? q->b : q->a, q, status, why, whylen);

		if (!rep) /* (its status and why are the engine's) */
			r = -1;
		else if ((r = diffdoc_side(&d, k, rep, why, whylen)))
			*status = r == -ENOMEM ? 500 : 400;
	}
	if (!r && (r = diffdoc_run(&d, why, whylen)))
		*status = r == -ENOMEM ? 500 : 400;
	if (!r && (!(doc = diffdoc_json(&d, q->top)) ||
		   flame_tree_json(&d.s[0].p, &d.s[1].p, false,
				   q->nodes ? q->nodes : API_FLAME_NODES, &tree) ||
		   !(o = cJSON_CreateObject()))) {
		*status = 500;
		snprintf(why, whylen, "out of memory");
	}
	if (o) {
		cJSON_AddItemToObject(o, "diff", doc);
		cJSON_AddItemToObject(o, "flame", tree);
	} else {
		cJSON_Delete(doc);
		cJSON_Delete(tree);
	}
	diffdoc_free(&d);
	return o;
}

char *http_api_answer(struct engine *e, const char *host, const struct http_req *q,
		      int *status, char *why, size_t whylen)
{
	char id[16];
	cJSON *o = NULL, *req;
	char *text;

	if (q->api != API_TARGETS &&
	    (*status = http_published_target(e, q->id, id, sizeof(id), why, whylen)))
		return NULL;
	*status = 200;
	if (q->api == API_TARGETS) {
		o = targets_json(e, host);
	} else if (q->api == API_LISTING || q->api == API_TIMELINE || q->api == API_LINES) {
		req = list_req(id, q);
		if (q->api == API_LINES)
			cJSON_AddStringToObject(req, "lines", q->proc);
		if (q->api == API_TIMELINE) {
			cJSON_AddBoolToObject(req, "timeline", true);
			cJSON_AddNumberToObject(req, "timeline_top", q->top ? q->top : 5);
		}
		o = ask(e, req, status, why, whylen);
	} else if (q->api == API_FLAME) {
		o = flame_json(e, id, q, status, why, whylen);
	} else {
		o = diff_json(e, id, q, status, why, whylen);
	}
	if (!o) {
		if (*status == 200)
			*status = 500, snprintf(why, whylen, "out of memory");
		return NULL;
	}
	text = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!text)
		*status = 500, snprintf(why, whylen, "out of memory");
	return text;
}
