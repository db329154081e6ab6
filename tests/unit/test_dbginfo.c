// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/dbginfo.c, the debuginfod fetcher (docs/names.md): off unless
 * servers are named; one fetch per build-id at a time; a bounded queue; failures
 * remembered with a retry time; a stuck download neither blocks the caller nor the
 * shutdown. The servers are sockets on 127.0.0.1 that refuse or never answer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dbginfo.h"
#include "util.h"

struct fx {
	char cache[64];
	char url[64];
	int sock;		/* the "server": listening and never accepting, or closed */
	struct dbginfo *d;
};

/* A server on 127.0.0.1: @listening never answers (connections wait in its backlog);
 * otherwise the port is closed again at once and connections are refused. */
static void server(struct fx *f, bool listening)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);

	f->sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->sock >= 0);
	assert_int_equal(bind(f->sock, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(f->sock, (struct sockaddr *)&sa, &len), 0);
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", ntohs(sa.sin_port));
	if (listening) {
		assert_int_equal(listen(f->sock, 512), 0);
	} else {
		close(f->sock);
		f->sock = -1;
	}
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->cache, sizeof(f->cache), "/tmp/pcmon-unit-dbginfo-XXXXXX");
	if (!mkdtemp(f->cache))
		return -1;
	f->sock = -1;
	/* no worker runs between tests: the environment may change here */
	unsetenv("DEBUGINFOD_URLS");
	unsetenv("DEBUGINFOD_TIMEOUT");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	dbginfo_free(f->d);
	if (f->sock >= 0)
		close(f->sock);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->cache);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", f->cache);
	free(f);
	return 0;
}

static void start(struct fx *f)
{
	struct dbginfo_opts o = { .urls = f->url, .cache_dir = f->cache };

	assert_int_equal(dbginfo_new(&o, &f->d), 0);
	assert_non_null(f->d);
	assert_true(dbginfo_fd(f->d) >= 0);
}

static void bid_of(unsigned n, unsigned char bid[20])
{
	memset(bid, 0xab, 20);
	memcpy(bid, &n, sizeof(n));
}

/* Wait (up to 10 s) until @pred holds for the worker's counters. */
static void wait_for(struct fx *f, bool (*pred)(const struct dbginfo_stats *),
		     struct dbginfo_stats *st)
{
	for (int i = 0; i < 1000; i++) {
		dbginfo_stats(f->d, st);
		if (pred(st))
			return;
		usleep(10000);
	}
	fail_msg("the worker did not get there: %lu requests, %lu pending, %lu failed",
		 st->requests, st->pending, st->failed);
}

static bool one_request(const struct dbginfo_stats *st)
{
	return st->requests >= 1;
}

static bool one_failure(const struct dbginfo_stats *st)
{
	return st->failed >= 1;
}

static void test_off_without_servers(void **state)
{
	struct fx *f = *state;
	struct dbginfo_opts o = { .cache_dir = f->cache };
	char sub[128];

	assert_int_equal(dbginfo_new(&o, &f->d), 0);
	assert_null(f->d);
	setenv("DEBUGINFOD_URLS", "  ", 1);
	assert_int_equal(dbginfo_new(&o, &f->d), 0);
	assert_null(f->d);
	/* "" turns it off whatever the environment says, and clears it for libdwfl */
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	o.urls = "";
	assert_int_equal(dbginfo_new(&o, &f->d), 0);
	assert_null(f->d);
	assert_null(getenv("DEBUGINFOD_URLS"));
	assert_int_equal(dbginfo_fd(NULL), -1);
	dbginfo_want(NULL, (const unsigned char *)"x", 1, NULL);
	/* nothing was created */
	snprintf(sub, sizeof(sub), "%s/debuginfod", f->cache);
	assert_int_not_equal(access(sub, F_OK), 0);
}

static void test_env_names_the_servers(void **state)
{
	struct fx *f = *state;
	struct dbginfo_opts o = { .cache_dir = f->cache };
	char sub[128];

	server(f, false);
	setenv("DEBUGINFOD_URLS", f->url, 1);
	assert_int_equal(dbginfo_new(&o, &f->d), 0);
	assert_non_null(f->d);
	snprintf(sub, sizeof(sub), "%s/debuginfod", f->cache);
	assert_string_equal(getenv("DEBUGINFOD_CACHE_PATH"), sub);
	assert_int_equal(access(sub, W_OK), 0);
}

static void test_one_fetch_per_build_id(void **state)
{
	struct fx *f = *state;
	struct dbginfo_stats st;
	unsigned char bid[20];

	server(f, true);
	start(f);
	bid_of(1, bid);
	for (int i = 0; i < 10; i++)
		dbginfo_want(f->d, bid, sizeof(bid), "/x");
	wait_for(f, one_request, &st);
	for (int i = 0; i < 10; i++)
		dbginfo_want(f->d, bid, sizeof(bid), "/x");
	usleep(100000);
	dbginfo_stats(f->d, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.pending, 1);
	assert_int_equal(st.fetched + st.failed, 0);
}

static void test_queue_is_bounded(void **state)
{
	struct fx *f = *state;
	const unsigned n = DBGINFO_QUEUE_MAX + 50;
	struct dbginfo_stats st;
	unsigned char bid[20];

	server(f, true); /* the first download never ends: everything else waits */
	start(f);
	bid_of(0, bid);
	dbginfo_want(f->d, bid, sizeof(bid), "/x");
	wait_for(f, one_request, &st);
	for (unsigned i = 1; i < n; i++) {
		bid_of(i, bid);
		dbginfo_want(f->d, bid, sizeof(bid), "/x");
	}
	dbginfo_stats(f->d, &st);
	assert_int_equal(st.pending, DBGINFO_QUEUE_MAX + 1); /* the queue, and the one fetching */
	assert_int_equal(st.queue_full, n - 1 - DBGINFO_QUEUE_MAX);
	assert_int_equal(st.failed, st.queue_full); /* remembered: the tick queues them again */
}

static void test_failure_is_remembered(void **state)
{
	struct fx *f = *state;
	struct dbginfo_stats st;
	unsigned char bid[20];
	cJSON *o = cJSON_CreateObject(), *b;

	server(f, false); /* connections refused */
	start(f);
	bid_of(7, bid);
	dbginfo_want(f->d, bid, sizeof(bid), "/usr/lib/libx.so");
	wait_for(f, one_failure, &st);
	/* asked again before its retry time: not fetched again */
	dbginfo_want(f->d, bid, sizeof(bid), "/usr/lib/libx.so");
	dbginfo_tick(f->d);
	usleep(100000);
	dbginfo_stats(f->d, &st);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.pending, 0);
	dbginfo_status_json(f->d, o);
	b = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "debuginfod"), "build_ids");
	b = cJSON_GetArrayItem(b, 0);
	assert_non_null(b);
	assert_string_equal(cJSON_GetObjectItem(b, "state")->valuestring, "failed");
	assert_string_equal(cJSON_GetObjectItem(b, "object")->valuestring, "/usr/lib/libx.so");
	assert_true(cJSON_GetObjectItem(b, "retry_in_s")->valuedouble > 20);
	cJSON_Delete(o);
}

static void test_stuck_download_does_not_hold_up_the_end(void **state)
{
	struct fx *f = *state;
	struct dbginfo_stats st;
	unsigned char bid[20];
	uint64_t t0;

	setenv("DEBUGINFOD_TIMEOUT", "300", 1);
	server(f, true);
	start(f);
	bid_of(3, bid);
	t0 = now_ns();
	dbginfo_want(f->d, bid, sizeof(bid), "/x");
	assert_true(now_ns() - t0 < 50000000); /* asking never waits for the network */
	wait_for(f, one_request, &st);
	usleep(200000);
	t0 = now_ns();
	dbginfo_free(f->d);
	f->d = NULL;
	assert_true(now_ns() - t0 < 5000000000ULL); /* aborted at its next progress call */
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_off_without_servers),
		T(test_env_names_the_servers),
		T(test_one_fetch_per_build_id),
		T(test_queue_is_bounded),
		T(test_failure_is_remembered),
		T(test_stuck_download_does_not_hold_up_the_end),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
