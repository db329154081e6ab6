/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * http_: pcmond's HTTP server (pcmond --http ADDR:PORT; docs/fleet.md), for the tools a fleet
 * already runs: Parca, Grafana Alloy and `go tool pprof` scrape /debug/pprof/profile,
 * Prometheus scrapes /metrics. Built on libmicrohttpd, run from pcmond's own event loop (no
 * thread: every request is answered between two turns of the engine, as a socket request
 * is); a scrape of N seconds is held (suspended) while its window runs.
 *
 * Safe by default: nothing listens unless asked; loopback unless an address is named; any
 * other address needs a bearer token file and TLS; only published targets are served.
 */
#ifndef PCMON_HTTP_H
#define PCMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;
struct http;

#define HTTP_MAX_SECONDS 300	/* the longest scrape window */
#define HTTP_DEFAULT_SECONDS 30	/* as Go's net/http/pprof */
#define HTTP_MAX_CONNECTIONS 32
#define HTTP_MAX_WINDOWS 16	/* scrapes under way at once */

struct http_opts {
	const char *listen;	/* ADDR:PORT, [ADDR]:PORT or PORT (then 127.0.0.1) */
	const char *token_file;	/* a bearer token every request must carry (mode 0600) */
	const char *tls_cert;	/* PEM files: HTTPS */
	const char *tls_key;
};

int http_open(struct engine *e, const struct http_opts *o, struct http **out, char *err,
	      size_t errlen);
void http_close(struct http *h);
/* For the event loop: readable when there is work, and how soon to call anyway (-1: no). */
int http_fd(struct http *h);
int http_timeout_ms(struct http *h);
void http_work(struct http *h);

/*
 * A request, as the router sees it (pure: the fuzz target drives it): the path, the query
 * arguments through @arg, and what to do. Returns the HTTP status: 200 to go on, else the
 * error (with @why for the body).
 */
enum http_route { HTTP_INDEX, HTTP_HEALTHZ, HTTP_METRICS, HTTP_PROFILE, HTTP_FLAMEGRAPH,
		  HTTP_HEAP, HTTP_API, HTTP_ASSET, HTTP_LIST };
/* HTTP_API's views: /api/targets, /api/targets/ID/{listing,timeline,flame,diff,lines} */
enum http_api { API_TARGETS, API_LISTING, API_TIMELINE, API_FLAME, API_DIFF, API_LINES };
#define HTTP_API_MAX_TIME 32	/* a time's text, as pcmon list --since takes it */
#define HTTP_API_MAX_WHEN 1024	/* a WHEN pattern's */
#define HTTP_API_MAX_TOP 1000	/* rows, or a timeline's procedures */
#define HTTP_API_MAX_NODES 20000 /* a flame tree's */
struct http_req {
	enum http_route route;
	uint32_t seconds;	/* HTTP_PROFILE, HTTP_FLAMEGRAPH: the window to come ... */
	const char *since;	/* ... or one past, from the slices (pcmon list --since) */
	const char *target;	/* ID or NAME as given, NULL: the default (and HTTP_HEAP's) */
	/* HTTP_API: the view, its target's id (as digits), and its arguments */
	enum http_api api;
	char id[12];
	const char *until, *when;
	const char *proc;	/* API_LINES: the procedure, as pcmon list --lines names it */
	const char *a, *b;	/* API_DIFF: the two windows, SINCE..UNTIL each */
	uint32_t top, nodes;	/* 0: the view's default */
	bool inverted;
};
typedef const char *(*http_arg_fn)(void *ctx, const char *key);
int http_route(const char *method, const char *path, http_arg_fn arg, void *ctx,
	       struct http_req *out, char *why, size_t whylen);

/* Is "Authorization: @header" the bearer of @token? (constant time in the token) */
bool http_token_ok(const char *header, const char *token);

/* --http's value (ADDR:PORT, [ADDR6]:PORT, PORT: 127.0.0.1) into @ss; 0 or -EINVAL with @err. */
struct sockaddr_storage;
int http_parse_listen(const char *s, struct sockaddr_storage *ss, bool *loopback, char *err,
		      size_t errlen);

#endif
