// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for what pcmond's HTTP server makes of a request beyond libmicrohttpd's
 * own parsing (daemon/fleet/http_route.c): the method and path routed, the query string's
 * arguments (split and percent-decoded as libmicrohttpd hands them over) checked, the
 * Authorization header against a token, and --http's address.
 *
 * Checks: a request is routed (200) only for GET or HEAD on a known path, then with seconds
 * in 1..HTTP_MAX_SECONDS and a target of 1..63 bytes if given; an error has a reason of
 * at most one line; the token is accepted exactly when the header is "Bearer " and it; an
 * address is accepted only with a port in 1..65535.
 *
 * Input: NUL-separated fields: method, path, query string, Authorization header, --http.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http.h"

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz_http: check failed at line %d: %s\n", __LINE__, \
				#cond);                                                       \
			abort();                                                              \
		}                                                                             \
	} while (0)

#define MAX_ARGS 16

struct args {
	char *key[MAX_ARGS], *val[MAX_ARGS];
	int n;
};

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F'			? c - 'A' + 10
							: -1;
}

/* %XX and '+' decoded in place, as the server's library does for GET arguments */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%' && hexval(s[1]) >= 0 && hexval(s[2]) >= 0) {
			*o++ = (char)(hexval(s[1]) << 4 | hexval(s[2]));
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
}

static void split_query(char *q, struct args *a)
{
	char *save = NULL, *kv;

	for (kv = strtok_r(q, "&", &save); kv && a->n < MAX_ARGS; kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');

		if (eq)
			*eq++ = '\0';
		unescape(kv);
		if (eq)
			unescape(eq);
		a->key[a->n] = kv;
		a->val[a->n++] = eq ? eq : (char *)"";
	}
}

/* The first argument of that name, as libmicrohttpd's lookup returns it. */
static const char *arg(void *ctx, const char *key)
{
	const struct args *a = ctx;

	for (int i = 0; i < a->n; i++)
		if (!strcmp(a->key[i], key))
			return a->val[i];
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 6), *f[5], why[256], err[512];
	struct sockaddr_storage ss;
	struct http_req q;
	struct args a = { 0 };
	size_t off = 0;
	bool loopback;
	int st;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	memset(buf + size, 0, 6);
	for (int i = 0; i < 5; i++) {
		f[i] = buf + off;
		off += strlen(buf + off) + 1;
		if (off > size + 5)
			off = size + 5;
	}
	split_query(f[2], &a);
	why[0] = '\0';
	st = http_route(f[0], f[1], arg, &a, &q, why, sizeof(why));
	if (st == 200) {
		CHECK(!strcmp(f[0], "GET") || !strcmp(f[0], "HEAD"));
		if (q.route == HTTP_PROFILE || q.route == HTTP_FLAMEGRAPH) {
			CHECK(q.seconds >= 1 && q.seconds <= HTTP_MAX_SECONDS);
			CHECK(!q.target || (strlen(q.target) >= 1 && strlen(q.target) <= 63));
		}
		if (q.route == HTTP_HEAP)
			CHECK(!q.seconds && (!q.since || (strlen(q.since) >= 1 &&
							  strlen(q.since) <= 32)) &&
			      (!q.target || (strlen(q.target) >= 1 && strlen(q.target) <= 63)));
	} else {
		CHECK(st == 400 || st == 404 || st == 405);
		CHECK(why[0] && !strchr(why, '\n'));
	}
	{
		char expect[300];
		bool ok = http_token_ok(f[3], "0123456789abcdef");

		snprintf(expect, sizeof(expect), "Bearer %s", "0123456789abcdef");
		CHECK(ok == !strcmp(f[3], expect));
	}
	if (!http_parse_listen(f[4], &ss, &loopback, err, sizeof(err)))
		CHECK(ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	else
		CHECK(err[0] && !strchr(err, '\n'));
	free(buf);
	return 0;
}
