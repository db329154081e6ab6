// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pushing windows to Pyroscope and OpenTelemetry collectors (push.h, docs/fleet.md): the
 * engine's loop cuts and encodes, a thread sends with libcurl.
 */
#include <cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "export.h"
#include "otlp.h"
#include "pcmon_bpf.h"
#include "proto.h"
#include "push.h"
#include "util.h"

struct job {
	char *url;
	const char *type;	/* Content-Type */
	bool gzipped;		/* the body is sent with Content-Encoding: gzip */
	uint8_t *body;
	size_t len;
};

/*
 * A published target's window: the mark it runs from, and which target it was taken on
 * (an id taken by a new target starts again). A target loaded from the state directory
 * was sent by the pcmond before: it is only remembered, never sent again.
 */
struct window {
	uint32_t mark;		/* 0: none */
	double start_wall;	/* the target's */
	bool loaded;		/* there when pushing began: sent before, or never published */
};

struct push {
	struct engine *e;
	char *pyroscope, *otlp;
	uint32_t interval_s;
	int tfd;
	char host[256];
	struct window win[PCMON_MAX_TARGETS];

	pthread_t thread;
	bool curl, running, stop;
	bool finishing;		/* pcmond stopping: the thread ends once the queue is empty */
	bool idle;		/* ... and it has */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *q[PUSH_QUEUE];	/* a ring: q[head], ... n of them */
	size_t head, n;
	struct push_stats st;
};

static const struct client root = { .uid = 0, .pid = 0 };

static void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->url);
	free(j->body);
	free(j);
}

/* ---- the sending thread */

/* libcurl asks while a transfer waits: pcmond stopping ends it (after PUSH_FINISH_S). */
static int progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		    curl_off_t ulnow)
{
	struct push *p = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return __atomic_load_n(&p->stop, __ATOMIC_RELAXED);
}

/* One try: 0 sent, 1 worth another try (no answer, 429, 5xx), -1 refused for good. */
static int send_once(struct push *p, CURL *c, const struct job *j)
{
	struct curl_slist *h = NULL;
	char type[96];
	long code = 0;
	CURLcode r;

	snprintf(type, sizeof(type), "Content-Type: %s", j->type);
	h = curl_slist_append(h, type);
	if (j->gzipped)
		h = curl_slist_append(h, "Content-Encoding: gzip");
	h = curl_slist_append(h, "User-Agent: pcmond/" PCMON_VERSION);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, j->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)j->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)j->len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)PUSH_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)PUSH_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
	r = curl_easy_perform(c);
	if (r == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(h);
	if (r != CURLE_OK) {
		pr_debug("push %s: %s", j->url, curl_easy_strerror(r));
		return 1;
	}
	if (code >= 200 && code < 300)
		return 0;
	pr_debug("push %s: HTTP %ld", j->url, code);
	return code == 429 || code >= 500 ? 1 : -1;
}

static void *run(void *arg)
{
	struct push *p = arg;
	CURL *c = curl_easy_init();

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct job *j;
		int r = -1, tries;

		if (!p->n) {
			if (p->finishing) { /* all was sent */
				p->idle = true;
				pthread_cond_broadcast(&p->cond);
				break;
			}
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		j = p->q[p->head];
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		pthread_mutex_unlock(&p->lock);
		for (tries = 0; c && tries < PUSH_TRIES; tries++) {
			if (tries) { /* backoff: 1 s, 2 s, ... unless pcmond stops */
				struct timespec ts;

				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += 1 << (tries - 1);
				pthread_mutex_lock(&p->lock);
				p->st.retries++;
				while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &ts) != ETIMEDOUT)
					;
				tries = p->stop ? PUSH_TRIES : tries;
				pthread_mutex_unlock(&p->lock);
				if (tries == PUSH_TRIES)
					break;
			}
			if ((r = send_once(p, c, j)) <= 0)
				break;
		}
		pthread_mutex_lock(&p->lock);
		if (r == 0)
			p->st.sent++;
		else
			p->st.failed++;
		pthread_mutex_unlock(&p->lock);
		job_free(j);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	curl_easy_cleanup(c);
	return NULL;
}

/* Into the queue; the oldest window waiting goes if it is full (the newest is worth more). */
static void enqueue(struct push *p, struct job *j)
{
	pthread_mutex_lock(&p->lock);
	if (p->n == PUSH_QUEUE) {
		job_free(p->q[p->head]);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
		p->st.dropped++;
	}
	p->q[(p->head + p->n) % PUSH_QUEUE] = j;
	p->n++;
	p->st.windows++;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* ---- cutting windows (the engine's loop) */

static cJSON *request(struct push *p, const char *cmd, uint32_t target, uint32_t mark)
{
	cJSON *req = cJSON_CreateObject(), *rep;
	char id[16];

	snprintf(id, sizeof(id), "%u", target);
	cJSON_AddNumberToObject(req, "v", PROTO_VERSION);
	cJSON_AddStringToObject(req, "cmd", cmd);
	if (target)
		cJSON_AddStringToObject(req, "target", id);
	/* which targets there are: each window's listing reads BPF itself (one drain a tick) */
	if (!strcmp(cmd, "targets"))
		cJSON_AddBoolToObject(req, "current", false);
	if (mark) {
		cJSON_AddNumberToObject(req, "since_mark", mark);
		cJSON_AddBoolToObject(req, "remark", true);
		cJSON_AddBoolToObject(req, "stacks", true);
		cJSON_AddBoolToObject(req, "labels", true);
	}
	rep = engine_handle(p->e, &root, req);
	cJSON_Delete(req);
	return rep;
}

static bool ok(const cJSON *rep)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok"));
}

/* @s with the characters a URL's query may not hold escaped. */
static char *query_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0), *out = e ? strdup(e) : NULL;

	curl_free(e);
	return out;
}

static struct job *pyroscope_job(struct push *p, const struct xprof *x, const cJSON *win)
{
	double from = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(win, "from_wall"));
	double until = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(win, "to_wall"));
	struct job *j = calloc(1, sizeof(*j));
	char *name = NULL, *ename = NULL, err[128];
	FILE *f;

	if (!j)
		return NULL;
	/* Pyroscope's application name with its labels: NAME{k=v,...} */
	if (asprintf(&name, "pcmon.%s{host=%s,target=%s}", x->target, p->host, x->target) < 0)
		name = NULL;
	ename = name ? query_escape(name) : NULL;
	if (!ename ||
	    asprintf(&j->url, "%s/ingest?name=%s&from=%.0f&until=%.0f&format=pprof&spyName=pcmon"
			      "&sampleRate=%.0f",
		     p->pyroscope, ename, from, until > from ? until : from + 1,
		     x->period_ns ? 1e9 / x->period_ns : 100) < 0)
		j->url = NULL;
	free(name);
	free(ename);
	j->type = "application/octet-stream";
	f = j->url ? open_memstream((char **)&j->body, &j->len) : NULL;
	if (!f || export_pprof(f, x, err, sizeof(err)) | fclose(f)) { /* (gzipped itself) */
		job_free(j);
		return NULL;
	}
	return j;
}

static struct job *otlp_job(struct push *p, const struct xprof *x, const cJSON *win)
{
	double from = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(win, "from_wall"));
	double secs = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(win, "seconds"));
	struct otlp_meta m = {
		.host_name = p->host,
		.start_unix_nano = (uint64_t)(from * 1e9),
		.duration_nano = (uint64_t)(secs * 1e9),
	};
	struct job *j = calloc(1, sizeof(*j));
	uint8_t *raw = NULL;
	size_t len = 0;
	char err[256];
	FILE *f;
	int r;

	if (!j || asprintf(&j->url, "%s/v1development/profiles", p->otlp) < 0) {
		free(j);
		return NULL;
	}
	r = otlp_encode(x, &m, &raw, &len, err, sizeof(err));
	if (r) {
		if (r == -E2BIG) {
			pthread_mutex_lock(&p->lock);
			p->st.too_large++;
			pthread_mutex_unlock(&p->lock);
		}
		pr_debug("push: %s", err);
		job_free(j);
		return NULL;
	}
	j->type = "application/x-protobuf";
	j->gzipped = true;
	f = open_memstream((char **)&j->body, &j->len);
	if (!f || export_gzip(f, raw, len) | fclose(f)) {
		free(raw);
		job_free(j);
		return NULL;
	}
	free(raw);
	return j;
}

/* Target @id's window since its mark: encoded for each receiver, queued; the mark moves. */
static void cut(struct push *p, uint32_t id)
{
	cJSON *rep = request(p, "list", id, p->win[id].mark), *win;
	char err[256];
	struct xprof x;

	if (!ok(rep)) { /* the mark went (it cannot while it moves every interval) */
		pr_warn("push: target %u: window %u is gone: %s", id, p->win[id].mark,
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rep, "error")) ?: "");
		p->win[id].mark = 0;
		p->st.gaps++;
		cJSON_Delete(rep);
		return;
	}
	win = cJSON_GetObjectItemCaseSensitive(rep, "window");
	/* an empty window is not sent: the receiver learns nothing from it */
	if (!cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(rep, "summary"), "counted"))) {
		cJSON_Delete(rep);
		return;
	}
	if (!xprof_load(&x, rep, err, sizeof(err))) {
		struct job *j;

		if (p->pyroscope && (j = pyroscope_job(p, &x, win)))
			enqueue(p, j);
		if (p->otlp && (j = otlp_job(p, &x, win)))
			enqueue(p, j);
		xprof_free(&x);
	}
	cJSON_Delete(rep);
}

/*
 * A published target pushing has not seen yet: its first window starts with the target (a
 * mark "at_start"), so that nothing sampled before the first interval ends is left out.
 */
static void begin(struct push *p, uint32_t id, double start_wall)
{
	struct window *w = &p->win[id];
	cJSON *req = cJSON_CreateObject(), *rep;
	char tid[16];

	snprintf(tid, sizeof(tid), "%u", id);
	cJSON_AddNumberToObject(req, "v", PROTO_VERSION);
	cJSON_AddStringToObject(req, "cmd", "mark");
	cJSON_AddStringToObject(req, "target", tid);
	cJSON_AddBoolToObject(req, "at_start", true);
	rep = engine_handle(p->e, &root, req);
	*w = (struct window){ .start_wall = start_wall };
	if (ok(rep))
		w->mark = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(rep, "mark"));
	else
		p->st.gaps++;
	cJSON_Delete(req);
	cJSON_Delete(rep);
}

/*
 * Each published target's window (@only's alone, if not 0): begun, or cut; @loaded: the
 * targets are only noted, as pushing starts.
 */
static void visit(struct push *p, bool loaded, uint32_t only)
{
	cJSON *rep = request(p, "targets", 0, 0), *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(rep, "targets")) {
		uint32_t id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "id"));
		double sw = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "start_wall"));
		struct window *w;

		if (id >= PCMON_MAX_TARGETS || (only && id != only))
			continue;
		w = &p->win[id];
		if (loaded) {
			*w = (struct window){ .start_wall = sw, .loaded = true };
			continue;
		}
		if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "published")))
			continue;
		if (w->start_wall != sw)
			begin(p, id, sw);
		if (w->mark)
			cut(p, id);
	}
	cJSON_Delete(rep);
}

void push_work(struct push *p)
{
	uint64_t ticks;

	if (read(p->tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
		return; /* not due yet */
	visit(p, false, 0);
}

/*
 * engine_forget_hook(): a target's counts are about to go (zero, drop): what came since its
 * window began is sent first.
 */
static void forgetting(void *ctx, uint32_t id, bool drop)
{
	struct push *p = ctx;
	struct window *w = &p->win[id];

	if (id >= PCMON_MAX_TARGETS || w->loaded)
		return;
	visit(p, false, id); /* (begins it if it is new: a short target dropped at once) */
	if (drop)
		*w = (struct window){ 0 };
}

/* ---- setting up */

int push_fd(struct push *p)
{
	return p->tfd;
}

void push_stats(struct push *p, struct push_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->queued = p->n;
	pthread_mutex_unlock(&p->lock);
	st->targets = 0;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		st->targets += p->win[i].mark != 0;
}

/* A receiver's base URL: http(s)://..., without a trailing slash. */
static char *base_url(const char *url, const char *opt, char *err, size_t errlen)
{
	size_t n = strlen(url);
	char *s;

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
		snprintf(err, errlen, "%s %s: give an http:// or https:// URL", opt, url);
		return NULL;
	}
	while (n && url[n - 1] == '/')
		n--;
	s = strndup(url, n);
	if (!s)
		snprintf(err, errlen, "out of memory");
	return s;
}

int push_open(struct engine *e, const struct push_opts *o, struct push **out, char *err,
	      size_t errlen)
{
	struct push *p = calloc(1, sizeof(*p));
	struct itimerspec its = { 0 };
	int r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->e = e;
	p->tfd = -1;
	p->interval_s = o->interval_s ? o->interval_s : PUSH_DEFAULT_INTERVAL_S;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (gethostname(p->host, sizeof(p->host) - 1))
		snprintf(p->host, sizeof(p->host), "localhost");
	if ((o->pyroscope && !(p->pyroscope = base_url(o->pyroscope, "--push", err, errlen))) ||
	    (o->otlp && !(p->otlp = base_url(o->otlp, "--otlp", err, errlen)))) {
		push_close(p);
		return -EINVAL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl cannot start");
		push_close(p);
		return -EINVAL;
	}
	p->curl = true;
	p->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	its.it_value.tv_sec = its.it_interval.tv_sec = p->interval_s;
	if (p->tfd < 0 || timerfd_settime(p->tfd, 0, &its, NULL)) {
		snprintf(err, errlen, "cannot set the push timer: %s", strerror(errno));
		push_close(p);
		return -EINVAL;
	}
	r = thread_start(&p->thread, run, p);
	if (r) {
		snprintf(err, errlen, "cannot start the push thread: %s", strerror(r));
		push_close(p);
		return -EINVAL;
	}
	p->running = true;
	visit(p, true, 0); /* the targets loaded from the state directory were sent before */
	engine_forget_hook(e, forgetting, p);
	pr_info("pushing published targets every %u s to%s%s%s%s", p->interval_s,
		p->pyroscope ? " " : "", p->pyroscope ?: "", p->otlp ? " " : "", p->otlp ?: "");
	*out = p;
	return 0;
}

/*
 * pcmond stops: every published target's last window is cut, and the queue is sent for at
 * most PUSH_FINISH_S; what is still queued then is said, with what failed.
 */
static void finish(struct push *p)
{
	struct timespec until;

	visit(p, false, 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += PUSH_FINISH_S;
	pthread_mutex_lock(&p->lock);
	p->finishing = true;
	pthread_cond_broadcast(&p->cond);
	while (!p->idle && pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	__atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	p->st.unsent += p->n;
	if (p->st.unsent || p->st.failed || p->st.dropped)
		pr_warn("push: stopping: %" PRIu64 " windows sent; %" PRIu64 " not sent in %d s, %"
			PRIu64 " failed every try, %" PRIu64 " dropped from a full queue",
			p->st.sent, p->st.unsent, PUSH_FINISH_S, p->st.failed, p->st.dropped);
	else
		pr_info("push: stopping: all %" PRIu64 " windows sent", p->st.sent);
}

void push_close(struct push *p)
{
	if (!p)
		return;
	if (p->running)
		finish(p);
	if (p->curl)
		curl_global_cleanup();
	while (p->n) {
		job_free(p->q[p->head]);
		p->head = (p->head + 1) % PUSH_QUEUE;
		p->n--;
	}
	if (p->tfd >= 0)
		close(p->tfd);
	free(p->pyroscope);
	free(p->otlp);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p);
}
