// SPDX-License-Identifier: GPL-2.0-only
/*
 * What pcmond's HTTP server makes of what a client sends, apart from libmicrohttpd's own
 * parsing: the route and its arguments, the bearer token, the --http address. Pure
 * functions, fuzzed by tests/fuzz/fuzz_http.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "util.h"

static const struct {
	const char *path;
	enum http_route route;
} routes[] = {
	{ "/", HTTP_INDEX },
	{ "/targets.html", HTTP_LIST },
	{ "/healthz", HTTP_HEALTHZ },
	{ "/metrics", HTTP_METRICS },
	{ "/debug/pprof/profile", HTTP_PROFILE },
	{ "/flamegraph.svg", HTTP_FLAMEGRAPH },
	{ "/debug/pprof/heap", HTTP_HEAP },
};

static const char *const api_views[] = {
	[API_LISTING] = "listing", [API_TIMELINE] = "timeline", [API_FLAME] = "flame",
	[API_DIFF] = "diff", [API_LINES] = "lines",
};

/* /NAME.js, /NAME.css or /NAME.svg, NAME of lower-case letters, digits, '-' and '_': one of
 * the page's files, by its exact name. */
static bool is_asset(const char *path)
{
	size_t n = 1;

	if (path[0] != '/')
		return false;
	while ((path[n] >= 'a' && path[n] <= 'z') || (path[n] >= '0' && path[n] <= '9') ||
	       path[n] == '-' || path[n] == '_')
		n++;
	return n > 1 && n < 64 && (!strcmp(path + n, ".js") || !strcmp(path + n, ".css") ||
				   !strcmp(path + n, ".svg"));
}

/* A bounded text argument @key (absent: NULL): 0, or 400 with @why. */
static int text_arg(http_arg_fn arg, void *ctx, const char *key, size_t max, const char **out,
		    char *why, size_t whylen)
{
	const char *v = arg(ctx, key);

	*out = NULL;
	if (!v)
		return 0;
	if (!*v || strlen(v) > max) {
		snprintf(why, whylen, "%s=: give at most %zu characters", key, max);
		return 400;
	}
	*out = v;
	return 0;
}

/* A whole number argument @key from 1 to @max (absent: 0): 0, or 400 with @why. */
static int num_arg(http_arg_fn arg, void *ctx, const char *key, uint32_t max, uint32_t *out,
		   char *why, size_t whylen)
{
	const char *v = arg(ctx, key);
	unsigned long n;
	char *end;

	*out = 0;
	if (!v)
		return 0;
	n = strtoul(v, &end, 10);
	if (!*v || *end || *v == '-' || n < 1 || n > max) {
		snprintf(why, whylen, "%s=: give a whole number from 1 to %u", key, max);
		return 400;
	}
	*out = (uint32_t)n;
	return 0;
}

/* /api/targets, /api/targets/ID/VIEW, and the view's arguments. */
static int api_route(const char *path, http_arg_fn arg, void *ctx, struct http_req *out,
		     char *why, size_t whylen)
{
	const char *p = path + strlen("/api/targets"), *slash;
	size_t n;
	int st;

	out->route = HTTP_API;
	if (!*p) {
		out->api = API_TARGETS;
		return 200;
	}
	if (*p != '/')
		goto none;
	p++;
	for (n = 0; p[n] >= '0' && p[n] <= '9'; n++)
		;
	slash = p + n;
	if (!n || n >= sizeof(out->id) || *slash != '/')
		goto none;
	memcpy(out->id, p, n);
	out->id[n] = '\0';
	for (out->api = API_LISTING; out->api <= API_LINES; out->api++)
		if (!strcmp(slash + 1, api_views[out->api]))
			break;
	if (out->api > API_LINES)
		goto none;
	if ((st = text_arg(arg, ctx, "since", HTTP_API_MAX_TIME, &out->since, why, whylen)) ||
	    (st = text_arg(arg, ctx, "until", HTTP_API_MAX_TIME, &out->until, why, whylen)) ||
	    (st = text_arg(arg, ctx, "when", HTTP_API_MAX_WHEN, &out->when, why, whylen)) ||
	    (st = text_arg(arg, ctx, "a", 2 * HTTP_API_MAX_TIME + 2, &out->a, why, whylen)) ||
	    (st = text_arg(arg, ctx, "b", 2 * HTTP_API_MAX_TIME + 2, &out->b, why, whylen)) ||
	    (st = text_arg(arg, ctx, "proc", HTTP_API_MAX_WHEN, &out->proc, why, whylen)) ||
	    (st = num_arg(arg, ctx, "top", HTTP_API_MAX_TOP, &out->top, why, whylen)) ||
	    (st = num_arg(arg, ctx, "nodes", HTTP_API_MAX_NODES, &out->nodes, why, whylen)))
		return st;
	out->inverted = arg(ctx, "inverted") && !strcmp(arg(ctx, "inverted"), "1");
	if (out->api == API_DIFF && (!out->a || !out->b || !strstr(out->a, "..") ||
				     !strstr(out->b, ".."))) {
		snprintf(why, whylen, "a= and b=: give the two windows, SINCE..UNTIL each (as pcmon diff takes them)");
		return 400;
	}
	if (out->api == API_LINES && !out->proc) {
		snprintf(why, whylen, "proc=: give the procedure, as pcmon list --lines names it");
		return 400;
	}
	return 200;
none:
	snprintf(why, whylen, "no such page: /api/targets lists the targets, /api/targets/ID/VIEW "
			      "(listing, timeline, flame, diff, lines) shows one");
	return 404;
}

int http_route(const char *method, const char *path, http_arg_fn arg, void *ctx,
	       struct http_req *out, char *why, size_t whylen)
{
	const char *s, *t;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		snprintf(why, whylen, "only GET is served here");
		return 405;
	}
	if (!strncmp(path, "/api/targets", strlen("/api/targets")))
		return api_route(path, arg, ctx, out, why, whylen);
	for (i = 0; i < ARRAY_SIZE(routes) && strcmp(path, routes[i].path); i++)
		;
	if (i == ARRAY_SIZE(routes) && is_asset(path)) { /* the page's files (web_assets.h):
							  * found, or 404, by http.c */
		out->route = HTTP_ASSET;
		return 200;
	}
	if (i == ARRAY_SIZE(routes)) {
		snprintf(why, whylen, "no such page: / lists what there is");
		return 404;
	}
	out->route = routes[i].route;
	if (out->route == HTTP_HEAP) { /* now, or allocated since=: no scrape's seconds= */
		if (arg(ctx, "seconds")) {
			snprintf(why, whylen, "seconds=: a heap is what is live now; give since= for what was allocated since a time");
			return 400;
		}
		goto since;
	}
	if (out->route != HTTP_PROFILE && out->route != HTTP_FLAMEGRAPH)
		return 200;
	out->seconds = HTTP_DEFAULT_SECONDS;
	if ((s = arg(ctx, "seconds"))) {
		char *end;
		unsigned long n = strtoul(s, &end, 10);

		if (!*s || *end || *s == '-' || n < 1 || n > HTTP_MAX_SECONDS) {
			char shown[33];

			snprintf(shown, sizeof(shown), "%s", s);
			str_sanitize(shown, sizeof(shown) - 1); /* (a reason is one line) */
			snprintf(why, whylen, "seconds=%s: give a whole number of seconds, 1 to %d",
				 shown, HTTP_MAX_SECONDS);
			return 400;
		}
		out->seconds = n;
	}
since:
	if ((t = arg(ctx, "since"))) {
		if (!*t || strlen(t) > 32 || arg(ctx, "seconds")) {
			snprintf(why, whylen, "since=: a time as pcmon list --since takes it (-1m, 14:03), "
					      "and not with seconds=");
			return 400;
		}
		out->since = t;
	}
	if ((t = arg(ctx, "target"))) {
		if (!*t || strlen(t) > 63) {
			snprintf(why, whylen, "target=: give a published target's id or name");
			return 400;
		}
		out->target = t;
	}
	return 200;
}

bool http_token_ok(const char *header, const char *token)
{
	static const char bearer[] = "Bearer ";
	size_t n = strlen(token), i;
	unsigned char diff = 0;

	if (!header || strncmp(header, bearer, sizeof(bearer) - 1))
		return false;
	header += sizeof(bearer) - 1;
	if (strlen(header) != n)
		return false;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)header[i] ^ (unsigned char)token[i];
	return !diff;
}

/* ADDR:PORT, [ADDR6]:PORT or PORT (loopback) into @ss; whether it is loopback. */
int http_parse_listen(const char *s, struct sockaddr_storage *ss, bool *loopback, char *err,
			size_t errlen)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	char addr[64] = "127.0.0.1";
	const char *port = s, *colon;
	unsigned long p;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':' || (size_t)(close - s - 1) >= sizeof(addr))
			goto bad;
		snprintf(addr, sizeof(addr), "%.*s", (int)(close - s - 1), s + 1);
		port = close + 2;
	} else if ((colon = strrchr(s, ':'))) {
		if ((size_t)(colon - s) >= sizeof(addr))
			goto bad;
		snprintf(addr, sizeof(addr), "%.*s", (int)(colon - s), s);
		port = colon + 1;
	}
	p = strtoul(port, &end, 10);
	if (!*port || *end || p < 1 || p > 65535)
		goto bad;
	if (inet_pton(AF_INET, addr, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		in->sin_port = htons(p);
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (inet_pton(AF_INET6, addr, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(p);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		return 0;
	}
bad:
	snprintf(addr, sizeof(addr), "%s", s);
	str_sanitize(addr, sizeof(addr) - 1); /* (said on one line) */
	snprintf(err, errlen, "--http %s: give PORT, ADDR:PORT or [ADDR6]:PORT (an address, not a name)",
		 addr);
	return -EINVAL;
}

