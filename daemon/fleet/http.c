// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmond's HTTP server: libmicrohttpd in "external select" mode, its epoll descriptor in
 * pcmond's loop (srv_watch()). See http.h and docs/fleet.md.
 */
#include <arpa/inet.h>
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "export.h"
#include "http.h"
#include "http_api.h"
#include "metrics.h"
#include "web_assets.h"
#include "proto.h"
#include "util.h"

/* A request in flight: what the access handler keeps between its calls (MHD's con_cls). */
struct hreq {
	struct http *h;
	struct MHD_Connection *conn;
	bool suspended, done;
	const void *fixed;	/* a body that is pcmond's own (the page's files): not freed */
	/* a scrape: its window, and the answer made when it ended */
	char target[16];
	uint32_t mark;
	uint64_t due_ns;
	enum http_route route;
	int status;
	char *body;
	size_t len;
	const char *type;
	struct hreq *next;	/* in h->windows */
};

struct http {
	struct engine *e;
	struct MHD_Daemon *d;
	char *token;		/* NULL: none asked for (loopback only) */
	char *cert, *key;
	struct hreq *windows;	/* scrapes under way */
	uint32_t nwindows;
	char host[256];
	struct metrics_extra st;
};

/* ---- answers */

static void answer_text(struct hreq *r, int status, const char *type, char *body)
{
	r->status = status;
	r->type = type;
	r->body = body;
	r->len = body ? strlen(body) : 0;
}

static void answer_error(struct hreq *r, int status, const char *why)
{
	char *b = NULL;

	if (asprintf(&b, "%s\n", why) < 0)
		b = NULL;
	answer_text(r, status, "text/plain; charset=utf-8", b);
}

static uint64_t rss_bytes(void)
{
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%*d %ld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return (uint64_t)pages * sysconf(_SC_PAGESIZE);
}

static void answer_metrics(struct http *h, struct hreq *r)
{
	cJSON *st = http_engine_request(h->e, "status", NULL), *tg = http_engine_request(h->e, "targets", NULL);
	char *text;

	h->st.rss_bytes = rss_bytes();
	h->st.windows_open = h->nwindows;
	text = metrics_text(st, tg, &h->st);
	cJSON_Delete(st);
	cJSON_Delete(tg);
	if (!text)
		answer_error(r, 500, "out of memory");
	else
		answer_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", text);
}

static void answer_index(struct http *h, struct hreq *r)
{
	cJSON *tg = http_engine_request(h->e, "targets", NULL), *t;
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		cJSON_Delete(tg);
		answer_error(r, 500, "out of memory");
		return;
	}
	fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>pcmond on ");
	export_xml_text(f, h->host);
	fprintf(f, "</title></head><body>\n<h1>pcmond on ");
	export_xml_text(f, h->host);
	fprintf(f, "</h1>\n<p><a href=\"/metrics\">metrics</a> · <a href=\"/healthz\">health</a></p>\n"
		   "<table><tr><th>id</th><th>name</th><th>kind</th><th>state</th><th>samples</th>"
		   "<th>profile</th></tr>\n");
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(tg, "targets")) {
		int id = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "id"));

		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "published")))
			continue;
		fprintf(f, "<tr><td>%d</td><td>", id);
		export_xml_text(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name")) ?: "");
		fprintf(f, "</td><td>");
		export_xml_text(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "kind")) ?: "");
		fprintf(f, "</td><td>");
		export_xml_text(f, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "state")) ?: "");
		fprintf(f, "</td><td>%.0f</td><td>"
			   "<a href=\"/flamegraph.svg?target=%d&amp;since=-1m\">flamegraph of the last minute</a> · "
			   "<a href=\"/debug/pprof/profile?target=%d&amp;seconds=30\">pprof, 30 s</a>",
			cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "samples")), id, id);
		if (cJSON_GetObjectItemCaseSensitive(t, "alloc_rate")) /* it watches allocations */
			fprintf(f, " · <a href=\"/debug/pprof/heap?target=%d\">heap (pprof)</a>", id);
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n<form action=\"/debug/pprof/profile\">pprof of the next "
		   "<input name=\"seconds\" value=\"30\" size=\"4\"> seconds of target "
		   "<input name=\"target\" size=\"8\"> <input type=\"submit\" value=\"get\"></form>\n"
		   "<form action=\"/flamegraph.svg\">flamegraph since <input name=\"since\" value=\"-15m\" "
		   "size=\"8\"> (as pcmon list --since) of target <input name=\"target\" size=\"8\"> "
		   "<input type=\"submit\" value=\"draw\"></form>\n</body></html>\n");
	cJSON_Delete(tg);
	if (fclose(f)) {
		free(buf);
		answer_error(r, 500, "out of memory");
		return;
	}
	answer_text(r, 200, "text/html; charset=utf-8", buf);
}

/* A scrape's window has ended (or, @since, a past one is asked): what it counted, as
 * gzipped pprof or as a flamegraph. HTTP_HEAP: the target's allocations now, as a Go heap
 * profile (docs/alloc.md). */
static void finish_window(struct http *h, struct hreq *r, const char *since)
{
	cJSON *req = cJSON_CreateObject(), *rep;
	char err[256], *buf = NULL;
	struct xprof p;
	size_t len = 0;
	FILE *f;
	int fr;

	cJSON_AddNumberToObject(req, "v", PROTO_VERSION);
	cJSON_AddStringToObject(req, "cmd", "list");
	cJSON_AddStringToObject(req, "target", r->target);
	if (r->route == HTTP_HEAP) {
		cJSON_AddBoolToObject(req, "alloc", true);
		if (since) /* allocated since then; live now */
			cJSON_AddStringToObject(req, "since", since);
	} else if (since) {
		cJSON_AddStringToObject(req, "since", since);
	} else {
		cJSON_AddNumberToObject(req, "since_mark", r->mark);
		cJSON_AddBoolToObject(req, "drop_mark", true);
	}
	cJSON_AddBoolToObject(req, "stacks", true);
	if (r->route != HTTP_HEAP)
		cJSON_AddBoolToObject(req, "labels", true);
	rep = http_engine_call(h->e, req);
	cJSON_Delete(req);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		/* (a past window or the heap: what was asked may not be there) */
		answer_error(r, since || r->route == HTTP_HEAP ? 400 : 500,
			     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rep, "error")) ?: "failed");
		cJSON_Delete(rep);
		return;
	}
	if (xprof_load(&p, rep, err, sizeof(err))) {
		cJSON_Delete(rep);
		answer_error(r, 500, err);
		return;
	}
	f = open_memstream(&buf, &len);
	fr = !f ? -1
	     : r->route != HTTP_FLAMEGRAPH ? export_pprof(f, &p, err, sizeof(err))
					   : export_flamegraph(f, &p, p.target, NULL);
	if (f && fclose(f))
		fr = -1;
	xprof_free(&p);
	cJSON_Delete(rep);
	if (fr) {
		free(buf);
		answer_error(r, 500, "cannot encode the profile");
		return;
	}
	r->status = 200;
	r->type = r->route != HTTP_FLAMEGRAPH ? "application/octet-stream" : "image/svg+xml";
	r->body = buf;
	r->len = len;
}

/* Start a window of @q for request @r: 0, or an HTTP status with @why. */
static int start_window(struct http *h, struct hreq *r, const struct http_req *q, char *why,
			size_t whylen)
{
	cJSON *rep;
	int st;

	if (h->nwindows >= HTTP_MAX_WINDOWS) {
		snprintf(why, whylen, "%d scrapes are under way: try again when one ends",
			 HTTP_MAX_WINDOWS);
		return 503;
	}
	if ((st = http_published_target(h->e, q->target, r->target, sizeof(r->target), why, whylen)))
		return st;
	rep = http_engine_request(h->e, "mark", r->target);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"))) {
		snprintf(why, whylen, "%s",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rep, "error")) ?: "failed");
		cJSON_Delete(rep);
		return 503;
	}
	r->mark = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rep, "mark"));
	cJSON_Delete(rep);
	r->route = q->route;
	r->due_ns = now_ns() + q->seconds * 1000000000ULL;
	r->next = h->windows;
	h->windows = r;
	h->nwindows++;
	MHD_suspend_connection(r->conn);
	r->suspended = true;
	return 0;
}

/* ---- libmicrohttpd's callbacks */

static const char *conn_arg(void *ctx, const char *key)
{
	return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result queue(struct hreq *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!r->fixed && !r->body)
		answer_error(r, 500, "out of memory");
	if (r->fixed)
		resp = MHD_create_response_from_buffer(r->len, (void *)r->fixed,
						       MHD_RESPMEM_PERSISTENT);
	else
		resp = MHD_create_response_from_buffer(r->len, r->body ?: (char *)"",
						       r->body ? MHD_RESPMEM_MUST_FREE
							       : MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	r->body = NULL;
	MHD_add_response_header(resp, "Content-Type", r->type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (!strncmp(r->type, "text/html", 9)) /* its own files, and the API, and no more */
		MHD_add_response_header(resp, "Content-Security-Policy",
					"default-src 'none'; script-src 'self'; style-src 'self'; "
					"connect-src 'self'; img-src 'self'; base-uri 'none'; "
					"frame-ancestors 'none'; form-action 'self'");
	if (r->status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"pcmond\"");
	if (r->status == 200 && (r->route == HTTP_PROFILE || r->route == HTTP_HEAP))
		MHD_add_response_header(resp, "Content-Disposition",
					r->route == HTTP_HEAP ? "attachment; filename=\"heap\""
							      : "attachment; filename=\"profile\"");
	ret = MHD_queue_response(r->conn, r->status, resp);
	MHD_destroy_response(resp);
	r->done = true;
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct http *h = cls;
	struct hreq *r = *con_cls;
	struct http_req q;
	char why[256];
	int st;

	(void)version;
	(void)upload;
	if (!r) { /* the first call: the headers are in */
		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		r->h = h;
		r->conn = conn;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) { /* a body: not for us (refused below once it is read) */
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->suspended) /* resumed: the window's answer is made */
		return queue(r);
	if (r->done)
		return MHD_NO;
	if (h->token &&
	    !http_token_ok(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
			   h->token)) {
		h->st.http_unauthorized++;
		answer_error(r, 401, "a bearer token is needed: Authorization: Bearer TOKEN");
		return queue(r);
	}
	st = http_route(method, url, conn_arg, conn, &q, why, sizeof(why));
	r->route = q.route;
	if (st == 200) {
		switch (q.route) {
		case HTTP_HEALTHZ:
			answer_text(r, 200, "text/plain; charset=utf-8", strdup("ok\n"));
			break;
		case HTTP_METRICS:
			answer_metrics(h, r);
			break;
		case HTTP_LIST:
			answer_index(h, r);
			break;
		case HTTP_INDEX:
		case HTTP_ASSET: { /* the page, built in */
			const struct web_asset *a = web_asset(url);

			if (!a) {
				st = 404;
				snprintf(why, sizeof(why), "no such page: / is the page");
				break;
			}
			r->status = 200;
			r->type = a->type;
			r->fixed = a->data; /* (served as built in: no copy) */
			r->len = a->len;
			break;
		}
		case HTTP_API: {
			char *body = http_api_answer(h->e, h->host, &q, &st, why, sizeof(why));

			if (body)
				answer_text(r, 200, "application/json", body);
			break;
		}
		case HTTP_PROFILE:
		case HTTP_FLAMEGRAPH:
		case HTTP_HEAP:
			if (q.since || q.route == HTTP_HEAP) { /* answered now: a past window,
								    * from the slices, or the heap */
				st = http_published_target(h->e, q.target, r->target, sizeof(r->target), why,
						      sizeof(why));
				if (st)
					break;
				finish_window(h, r, q.since);
				h->st.http_requests++;
				return queue(r);
			}
			st = start_window(h, r, &q, why, sizeof(why));
			if (!st)
				return MHD_YES; /* answered when the window ends */
			break;
		}
	}
	if (st != 200) {
		h->st.http_refused++;
		answer_error(r, st, why);
	} else {
		h->st.http_requests++;
	}
	return queue(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct hreq *r = *con_cls;

	(void)cls;
	(void)conn;
	(void)why;
	if (!r)
		return;
	free(r->body);
	free(r);
	*con_cls = NULL;
}

/* ---- the loop's side */

void http_work(struct http *h)
{
	uint64_t now = now_ns();
	struct hreq **pp = &h->windows;

	MHD_run(h->d);
	while (*pp) {
		struct hreq *r = *pp;

		if (r->due_ns > now) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		h->nwindows--;
		finish_window(h, r, NULL);
		if (r->status == 200)
			h->st.http_requests++;
		MHD_resume_connection(r->conn);
	}
	MHD_run(h->d);
}

int http_fd(struct http *h)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);

	return i ? i->epoll_fd : -1;
}

int http_timeout_ms(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG mhd;
	uint64_t next = UINT64_MAX, now = now_ns();

	for (struct hreq *r = h->windows; r; r = r->next)
		next = MIN(next, r->due_ns);
	if (MHD_get_timeout(h->d, &mhd) == MHD_YES)
		next = MIN(next, now + mhd * 1000000ULL);
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)MIN((next - now + 999999) / 1000000, 60 * 1000);
}

/* ---- setting up */

/* A secret's file: a regular file no one but its owner may read or write. */
static char *read_secret(const char *path, const char *what, bool strip, char *err,
			 size_t errlen)
{
	struct stat st;
	char *s;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 || fstat(fd, &st)) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		snprintf(err, errlen, "%s %s: must be a regular file only its owner reads (chmod 600 %s)",
			 what, path, path);
		close(fd);
		return NULL;
	}
	close(fd);
	s = read_file(path, NULL);
	if (!s) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return NULL;
	}
	if (strip)
		s[strcspn(s, "\r\n")] = '\0';
	return s;
}

int http_open(struct engine *e, const struct http_opts *o, struct http **out, char *err,
	      size_t errlen)
{
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
	struct sockaddr_storage ss;
	struct http *h;
	bool loopback;
	int r;

	*out = NULL;
	if ((r = http_parse_listen(o->listen, &ss, &loopback, err, errlen)))
		return r;
	if (!loopback && (!o->token_file || !o->tls_cert || !o->tls_key)) {
		snprintf(err, errlen, "--http %s: an address other than loopback needs a token "
				      "(--http-token-file) and TLS (--http-tls-cert, --http-tls-key)",
			 o->listen);
		return -EINVAL;
	}
	if (!o->tls_cert != !o->tls_key) {
		snprintf(err, errlen, "--http-tls-cert and --http-tls-key go together");
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->e = e;
	if (gethostname(h->host, sizeof(h->host) - 1))
		snprintf(h->host, sizeof(h->host), "localhost");
	if (o->token_file &&
	    (!(h->token = read_secret(o->token_file, "--http-token-file", true, err, errlen)) ||
	     strlen(h->token) < 16)) {
		if (h->token)
			snprintf(err, errlen, "--http-token-file %s: the token is shorter than 16 characters",
				 o->token_file);
		goto fail;
	}
	if (o->tls_cert) {
		h->cert = read_file(o->tls_cert, NULL);
		if (!h->cert) {
			snprintf(err, errlen, "--http-tls-cert %s: %s", o->tls_cert, strerror(errno));
			goto fail;
		}
		if (!(h->key = read_secret(o->tls_key, "--http-tls-key", false, err, errlen)))
			goto fail;
		flags |= MHD_USE_TLS;
	}
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNECTIONS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(HTTP_MAX_CONNECTIONS / 2),
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 << 10),
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				o->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, h->cert,
				MHD_OPTION_HTTPS_MEM_KEY, h->key, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errlen, "--http %s: cannot listen there%s (in use, or not an address of "
				      "this machine)", o->listen, o->tls_cert ? " with this certificate" : "");
		goto fail;
	}
	pr_info("HTTP server on %s%s%s", o->listen, o->tls_cert ? " (TLS)" : "",
		h->token ? ", bearer token required" : "");
	*out = h;
	return 0;
fail:
	http_close(h);
	return -EINVAL;
}

void http_close(struct http *h)
{
	if (!h)
		return;
	/* scrapes under way: their marks go with their targets; their connections with MHD */
	for (struct hreq *r = h->windows; r; r = r->next)
		MHD_resume_connection(r->conn);
	if (h->d)
		MHD_stop_daemon(h->d);
	free(h->token);
	free(h->cert);
	free(h->key);
	free(h);
}
