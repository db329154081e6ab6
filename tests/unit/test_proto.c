// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/proto.c: request validation, reply builders, accessors, the line
 * reader and the client call, over socketpairs, threads and a forked peer (docs/service.md).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

static void put(int fd, const char *s, size_t len)
{
	assert_int_equal(write(fd, s, len), (ssize_t)len);
}

#define PUT(fd, lit) put((fd), (lit), sizeof(lit) - 1)

/* Parse a request given as a C string; on failure *err holds the reason. */
static cJSON *req(const char *line, char *err, size_t errlen)
{
	err[0] = '\0';
	return proto_parse_request(line, strlen(line), err, errlen);
}

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/* @line (@len bytes) must be refused with an error that contains @what. */
static void expect_bad_n(const char *line, size_t len, const char *what)
{
	char err[256] = "";
	cJSON *r = proto_parse_request(line, len, err, sizeof(err));

	if (r) {
		cJSON_Delete(r);
		fail_msg("request '%.*s' accepted; expected an error about %s", (int)MIN(len, 80),
			 line, what);
	}
	if (!strstr(err, what))
		fail_msg("request '%.*s': error '%s' does not say '%s'", (int)MIN(len, 80), line,
			 err, what);
}

static void expect_bad(const char *line, const char *what)
{
	expect_bad_n(line, strlen(line), what);
}

/* The unformatted JSON text of @o (a static buffer). */
static const char *text(const cJSON *o)
{
	static char buf[4096];
	char *s = cJSON_PrintUnformatted(o);

	assert_non_null(s);
	snprintf(buf, sizeof(buf), "%s", s);
	free(s);
	return buf;
}

/* Read one line with @r from @fd; expect return @want and, when @want == 1, the text @line. */
static void expect_line(struct proto_reader *r, int fd, int want, const char *line)
{
	char *got = NULL;
	size_t len = 0;
	int rc = proto_read_line(r, fd, &got, &len);

	if (rc != want)
		fail_msg("proto_read_line returned %d (%s), expected %d (%s)", rc,
			 rc == 1 ? got : "", want, want == 1 ? line : "");
	if (want == 1) {
		assert_non_null(got);
		assert_int_equal(len, strlen(line));
		assert_memory_equal(got, line, len);
		assert_int_equal(got[len], '\0');
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Request validation */

static void test_parse_valid(void **state)
{
	char err[128];
	cJSON *r;

	(void)state;
	r = req("{\"v\":1,\"cmd\":\"list\",\"target\":3,\"json\":true}", err, sizeof(err));
	assert_non_null(r);
	assert_string_equal(proto_str(r, "cmd", NULL), "list");
	assert_int_equal(proto_num(r, "target", -1), 3);
	assert_int_equal(proto_bool(r, "json", 0), 1);
	cJSON_Delete(r);

	/* 1.0 is version 1; whitespace around and inside is fine; key order is free */
	r = req("  { \"cmd\" : \"stop\" ,\n \"v\" : 1.0 }  ", err, sizeof(err));
	assert_non_null(r);
	assert_string_equal(proto_str(r, "cmd", NULL), "stop");
	cJSON_Delete(r);

	/* only @len bytes are looked at: what follows in memory does not matter */
	{
		const char *s = "{\"v\":1,\"cmd\":\"zero\"}GARBAGE";

		r = proto_parse_request(s, 20, err, sizeof(err));
		assert_non_null(r);
		assert_string_equal(proto_str(r, "cmd", NULL), "zero");
		cJSON_Delete(r);
	}

	/* a request built by proto_request() is a valid request */
	{
		cJSON *q = proto_request("targets");
		char *s = cJSON_PrintUnformatted(q);

		r = proto_parse_request(s, strlen(s), err, sizeof(err));
		assert_non_null(r);
		assert_string_equal(proto_str(r, "cmd", NULL), "targets");
		assert_int_equal(proto_num(r, "v", 0), PROTO_VERSION);
		cJSON_Delete(r);
		free(s);
		cJSON_Delete(q);
	}
}

static void test_parse_errors(void **state)
{
	(void)state;
	expect_bad("", "not JSON");
	expect_bad("hello", "not JSON");
	expect_bad("{\"v\":1,\"cmd\":\"list\"", "not JSON");
	expect_bad_n("{\"v\":1,\"cmd\":\"list\"}", 5, "not JSON"); /* cut by @len */
	expect_bad("{v:1,cmd:\"list\"}", "not JSON");
	expect_bad("[1,2]", "not a JSON object");
	expect_bad("42", "not a JSON object");
	expect_bad("\"list\"", "not a JSON object");
	expect_bad("null", "not a JSON object");
	expect_bad("true", "not a JSON object");
	expect_bad("{\"cmd\":\"list\"}", "no protocol version \"v\"");
	expect_bad("{\"v\":\"1\",\"cmd\":\"list\"}", "no protocol version \"v\"");
	expect_bad("{\"v\":null,\"cmd\":\"list\"}", "no protocol version \"v\"");
	expect_bad("{\"V\":1,\"cmd\":\"list\"}", "no protocol version \"v\"");
	expect_bad("{\"v\":2,\"cmd\":\"list\"}", "protocol version 2 not supported");
	expect_bad("{\"v\":0,\"cmd\":\"list\"}", "protocol version 0 not supported");
	expect_bad("{\"v\":1.5,\"cmd\":\"list\"}", "protocol version 1.5 not supported");
	expect_bad("{\"v\":1}", "no \"cmd\"");
	expect_bad("{\"v\":1,\"cmd\":\"\"}", "no \"cmd\"");
	expect_bad("{\"v\":1,\"cmd\":5}", "no \"cmd\"");
	expect_bad("{\"v\":1,\"cmd\":null}", "no \"cmd\"");
	expect_bad("{\"v\":1,\"cmd\":[\"list\"]}", "no \"cmd\"");
	expect_bad("{\"v\":1,\"Cmd\":\"list\"}", "no \"cmd\"");
}

/* Known arguments must have their type: a wrong one is refused, never taken for absent. */
static void test_parse_field_types(void **state)
{
	static const char *good[] = {
		"{\"v\":1,\"cmd\":\"start\",\"pid\":42,\"interval_us\":1000,\"mode\":\"real\","
		"\"unwind\":\"fp\",\"kernel\":true,\"no_inline\":false,\"children\":false,"
		"\"name\":\"n\",\"icase\":true,\"when\":\"a->b\",\"when_from_file\":false,"
		"\"critical\":[\"x=a\",\"y=b\"],\"exec_wait\":true,\"exe\":\"/bin/true\"}",
		"{\"v\":1,\"cmd\":\"start\",\"cgroup\":\"/sys/fs/cgroup/x\"}",
		"{\"v\":1,\"cmd\":\"start\",\"all\":true,\"critical\":[]}",
		"{\"v\":1,\"cmd\":\"list\",\"target\":\"db\"}",
		"{\"v\":1,\"cmd\":\"list\",\"target\":7}",
		"{\"v\":1,\"cmd\":\"list\",\"pid\":-9007199254740992}", /* range is the protocol's */
		/* arguments the protocol does not know are the command's business */
		"{\"v\":1,\"cmd\":\"list\",\"future\":{\"x\":[1,null]},\"json\":\"yes\","
		"\"future\":2}",
	};
	static const struct {
		const char *line, *what;
	} bad[] = {
		/* the fields of a command are its table's business (proto_check, below) */
		{ "{\"v\":1,\"cmd\":\"status\",\"cmd\":7}", "\"cmd\" given twice" },
		{ "{\"v\":1,\"v\":1,\"cmd\":\"status\"}", "\"v\" given twice" },
	};
	char err[256];
	cJSON *r;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		r = req(good[i], err, sizeof(err));
		if (!r)
			fail_msg("request '%s' refused: %s", good[i], err);
		cJSON_Delete(r);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		expect_bad(bad[i].line, bad[i].what);
}

/*
 * A request line is one JSON object and nothing else: text after the object is malformed,
 * not silently dropped (a second request glued to the first would be lost unanswered).
 */
static void test_parse_trailing_garbage(void **state)
{
	static const char nul[] = "{\"v\":1,\"cmd\":\"list\"}\0junk";

	(void)state;
	expect_bad("{\"v\":1,\"cmd\":\"list\"} junk", "malformed");
	expect_bad("{\"v\":1,\"cmd\":\"stop\"}{\"v\":1,\"cmd\":\"drop\"}", "malformed");
	expect_bad_n(nul, sizeof(nul) - 1, "malformed");
}

static void test_parse_trailing_blank_ok(void **state)
{
	char err[128] = "";
	static const char s[] = "{\"v\":1,\"cmd\":\"list\"} \t\r";
	cJSON *r = proto_parse_request(s, sizeof(s) - 1, err, sizeof(err));

	(void)state;
	if (!r)
		fail_msg("request with trailing blanks rejected: %s", err);
	cJSON_Delete(r);
}

static void test_parse_length(void **state)
{
	char *big = malloc(PROTO_MAX_LINE + 2);
	char err[128];
	cJSON *r;
	size_t head;

	(void)state;
	assert_non_null(big);
	/* a valid object padded with blanks to exactly PROTO_MAX_LINE bytes: accepted */
	memset(big, ' ', PROTO_MAX_LINE + 1);
	head = strlen("{\"v\":1,\"cmd\":\"list\"}");
	memcpy(big, "{\"v\":1,\"cmd\":\"list\"}", head);
	big[PROTO_MAX_LINE + 1] = '\0';
	err[0] = '\0';
	r = proto_parse_request(big, PROTO_MAX_LINE, err, sizeof(err));
	if (!r)
		fail_msg("request of exactly PROTO_MAX_LINE bytes rejected: %s", err);
	cJSON_Delete(r);
	/* one byte more: too long, whatever it holds */
	r = proto_parse_request(big, PROTO_MAX_LINE + 1, err, sizeof(err));
	assert_null(r);
	assert_non_null(strstr(err, "too long"));
	assert_non_null(strstr(err, "262145 bytes"));
	assert_non_null(strstr(err, "262144"));
	free(big);
}

static void test_parse_small_err_buffer(void **state)
{
	char err[8];

	(void)state;
	memset(err, 'Z', sizeof(err));
	/* a short buffer gets a truncated, terminated message and nothing past it (ASan) */
	assert_null(proto_parse_request("nope", 4, err, sizeof(err)));
	assert_int_equal(strlen(err), sizeof(err) - 1);
	assert_int_equal(strncmp(err, "malformed request: not JSON", sizeof(err) - 1), 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Replies and accessors */

static void test_builders(void **state)
{
	cJSON *r;
	char longfmt[700];

	(void)state;
	r = proto_ok();
	assert_string_equal(text(r), "{\"v\":1,\"ok\":true}");
	cJSON_Delete(r);
	r = proto_error(2, "unknown option '%s' (%d)", "--frob", 7);
	assert_string_equal(text(r), "{\"v\":1,\"ok\":false,"
				     "\"error\":\"unknown option '--frob' (7)\",\"status\":2}");
	assert_int_equal(proto_bool(r, "ok", -1), 0);
	assert_int_equal(proto_num(r, "status", 0), 2);
	cJSON_Delete(r);
	r = proto_error(1, "%s", "");
	assert_string_equal(text(r), "{\"v\":1,\"ok\":false,\"error\":\"\",\"status\":1}");
	cJSON_Delete(r);
	r = proto_request("list");
	assert_string_equal(text(r), "{\"v\":1,\"cmd\":\"list\"}");
	cJSON_Delete(r);

	/* a long message is cut to 511 characters, not overrun */
	memset(longfmt, 'e', sizeof(longfmt) - 1);
	longfmt[sizeof(longfmt) - 1] = '\0';
	r = proto_error(1, "%s", longfmt);
	assert_int_equal(strlen(proto_str(r, "error", "")), 511);
	cJSON_Delete(r);
}

static void test_accessors(void **state)
{
	char err[128];
	cJSON *r = req("{\"v\":1,\"cmd\":\"start\",\"name\":\"db\",\"pid\":4242,\"interval\":2.5,"
		       "\"kernel\":true,\"real\":false,\"n\":\"5\",\"b\":1,\"s\":null}",
		       err, sizeof(err));

	(void)state;
	assert_non_null(r);
	assert_string_equal(proto_str(r, "name", "x"), "db");
	assert_string_equal(proto_str(r, "missing", "dflt"), "dflt");
	assert_null(proto_str(r, "missing", NULL));
	assert_string_equal(proto_str(r, "pid", "not a string"), "not a string");
	assert_string_equal(proto_str(r, "s", "nul"), "nul");
	assert_string_equal(proto_str(r, "NAME", "case"), "case");
	assert_int_equal(proto_num(r, "pid", -1), 4242);
	assert_true(proto_num(r, "interval", -1) == 2.5);
	assert_true(proto_num(r, "n", -1) == -1); /* "5" is a string */
	assert_true(proto_num(r, "kernel", -7) == -7);
	assert_true(proto_num(r, "missing", 9.75) == 9.75);
	assert_int_equal(proto_bool(r, "kernel", 0), 1);
	assert_int_equal(proto_bool(r, "real", 1), 0);
	assert_int_equal(proto_bool(r, "b", 7), 7); /* 1 is a number, not a bool */
	assert_int_equal(proto_bool(r, "missing", -3), -3);
	/* no object at all: defaults */
	assert_string_equal(proto_str(NULL, "cmd", "d"), "d");
	assert_true(proto_num(NULL, "pid", 4) == 4);
	assert_int_equal(proto_bool(NULL, "x", 1), 1);
	cJSON_Delete(r);
}

/* ---------------------------------------------------------------------------------------- */
/* proto_send and the line reader */

static void test_send_read(void **state)
{
	struct proto_reader rd;
	int sv[2];
	cJSON *m = proto_request("list"), *back;
	char *line;
	size_t len;

	(void)state;
	pair(sv);
	cJSON_AddStringToObject(m, "when", "a->b\n:c"); /* a newline inside a string is escaped */
	cJSON_AddNumberToObject(m, "target", 3);
	assert_int_equal(proto_send(sv[0], m), 0);
	assert_int_equal(proto_send(sv[0], m), 0);
	proto_reader_init(&rd, PROTO_MAX_LINE);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), 1);
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"list\",\"when\":\"a->b\\n:c\",\"target\":3}");
	assert_int_equal(len, strlen(line));
	back = cJSON_ParseWithLength(line, len);
	assert_non_null(back);
	assert_string_equal(proto_str(back, "when", NULL), "a->b\n:c");
	cJSON_Delete(back);
	/* the second copy came in the same read: it is served from the buffer */
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), 1);
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"list\",\"when\":\"a->b\\n:c\",\"target\":3}");
	close(sv[0]);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), -EPIPE);
	proto_reader_free(&rd);
	assert_null(rd.buf);
	close(sv[1]);
	cJSON_Delete(m);
}

static void test_read_many_in_one_write(void **state)
{
	struct proto_reader rd;
	int sv[2];

	(void)state;
	pair(sv);
	PUT(sv[0], "a\nbb\n\nccc\n{\"v\":1}\nlast");
	close(sv[0]);
	proto_reader_init(&rd, 64);
	expect_line(&rd, sv[1], 1, "a");
	expect_line(&rd, sv[1], 1, "bb");
	expect_line(&rd, sv[1], 1, "");
	expect_line(&rd, sv[1], 1, "ccc");
	expect_line(&rd, sv[1], 1, "{\"v\":1}");
	/* "last" has no newline: end of input */
	expect_line(&rd, sv[1], -EPIPE, NULL);
	proto_reader_free(&rd);
	close(sv[1]);
}

static void test_read_split(void **state)
{
	struct proto_reader rd;
	int sv[2];

	(void)state;
	pair(sv);
	nonblock(sv[1]);
	proto_reader_init(&rd, 64);
	expect_line(&rd, sv[1], 0, NULL); /* nothing yet */
	PUT(sv[0], "{\"v\":1,");
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], "\"cmd\":");
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], "\"x\"}");
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], "\nsecond");
	expect_line(&rd, sv[1], 1, "{\"v\":1,\"cmd\":\"x\"}");
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], " half\n");
	expect_line(&rd, sv[1], 1, "second half");
	PUT(sv[0], "\n");
	expect_line(&rd, sv[1], 1, "");
	expect_line(&rd, sv[1], 0, NULL);
	close(sv[0]);
	expect_line(&rd, sv[1], -EPIPE, NULL);
	proto_reader_free(&rd);
	close(sv[1]);
}

/* An overlong line arriving in pieces: skipped with -EMSGSIZE, the next line is intact. */
static void test_read_overlong_pieces(void **state)
{
	struct proto_reader rd;
	int sv[2];

	(void)state;
	pair(sv);
	nonblock(sv[1]);
	proto_reader_init(&rd, 16);
	PUT(sv[0], "0123456789abcdefghij"); /* 20 bytes, no newline yet */
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], "0123456789abcdefghij");
	expect_line(&rd, sv[1], 0, NULL);
	PUT(sv[0], "tail\nnext\n");
	expect_line(&rd, sv[1], -EMSGSIZE, NULL);
	expect_line(&rd, sv[1], 1, "next");
	expect_line(&rd, sv[1], 0, NULL);
	proto_reader_free(&rd);
	close(sv[0]);
	close(sv[1]);
}

/* The reader without a socket: bytes fed in any pieces give the same lines. */
static void test_reader_feed(void **state)
{
	static const char in[] = "{\"v\":1}\n\nabcdefghijklmnopq\nxy\r\n0123456789abcdef\nrest";
	struct proto_reader rd;
	char *line;
	size_t len;

	(void)state;
	for (size_t piece = 1; piece <= sizeof(in); piece++) {
		const char *want[] = { "{\"v\":1}", "", NULL /* 17 bytes: too long */, "xy\r",
				       "0123456789abcdef" };
		size_t got = 0;

		proto_reader_init(&rd, 16);
		assert_false(proto_reader_partial(&rd));
		for (size_t off = 0; off < sizeof(in) - 1; off += piece) {
			int r;

			assert_int_equal(proto_reader_feed(&rd, in + off, MIN(piece, sizeof(in) - 1 - off)), 0);
			while ((r = proto_reader_next(&rd, &line, &len)) != 0) {
				assert_true(got < 5);
				if (!want[got]) {
					assert_int_equal(r, -EMSGSIZE);
				} else {
					assert_int_equal(r, 1);
					assert_int_equal(len, strlen(want[got]));
					assert_string_equal(line, want[got]);
				}
				got++;
			}
		}
		assert_int_equal(got, 5);
		/* "rest" is held: part of a line */
		assert_true(proto_reader_partial(&rd));
		assert_int_equal(proto_reader_feed(&rd, "\n", 1), 0);
		assert_int_equal(proto_reader_next(&rd, &line, &len), 1);
		assert_string_equal(line, "rest");
		assert_int_equal(proto_reader_next(&rd, &line, &len), 0);
		assert_false(proto_reader_partial(&rd));
		proto_reader_free(&rd);
	}
	/* a line being skipped counts as partial though nothing of it is held */
	proto_reader_init(&rd, 4);
	assert_int_equal(proto_reader_feed(&rd, "0123456789", 10), 0);
	assert_int_equal(proto_reader_next(&rd, &line, &len), 0);
	assert_true(proto_reader_partial(&rd));
	assert_int_equal(rd.len, 0);
	assert_int_equal(proto_reader_feed(&rd, "x\nok\n", 5), 0);
	assert_int_equal(proto_reader_next(&rd, &line, &len), -EMSGSIZE);
	assert_int_equal(proto_reader_next(&rd, &line, &len), 1);
	assert_string_equal(line, "ok");
	proto_reader_free(&rd);
}

/* proto_format: one line, one newline, at the end (newlines in strings are escaped). */
static void test_format(void **state)
{
	cJSON *m = proto_error(1, "two\nlines\r\n");
	size_t len = 0;
	char *s = proto_format(m, &len);

	(void)state;
	assert_non_null(s);
	assert_true(len > 1 && s[len - 1] == '\n');
	assert_null(memchr(s, '\n', len - 1));
	assert_memory_equal(s, "{\"v\":1,\"ok\":false,\"error\":\"two\\nlines\\r\\n\",\"status\":1}\n",
			    len);
	free(s);
	cJSON_Delete(m);
}

struct conn {
	int sv[2];
	struct proto_reader rd;
};

/* A socketpair whose reading end (sv[1]) is non-blocking, and a reader of lines <= 16 bytes. */
static int conn_setup(void **state)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c->sv) ||
	    fcntl(c->sv[1], F_SETFL, O_NONBLOCK)) {
		free(c);
		return -1;
	}
	proto_reader_init(&c->rd, 16);
	*state = c;
	return 0;
}

/* Runs after a failed test too: nothing leaks when an assertion fails midway. */
static int conn_teardown(void **state)
{
	struct conn *c = *state;

	proto_reader_free(&c->rd);
	close(c->sv[0]);
	close(c->sv[1]);
	free(c);
	return 0;
}

/*
 * The limit does not depend on how the bytes arrive. A line of exactly max bytes is accepted
 * even when its newline comes in a later read ...
 */
#define CONN(fn) cmocka_unit_test_setup_teardown(fn, conn_setup, conn_teardown)

static void test_read_limit_exact(void **state)
{
	struct conn *c = *state;
	struct proto_reader *rd = &c->rd;
	int w = c->sv[0], r = c->sv[1];

	/* 16 bytes and the newline together: accepted */
	PUT(w, "0123456789abcdef\n");
	expect_line(rd, r, 1, "0123456789abcdef");
	/* 16 bytes, then the newline in another read: accepted as well */
	PUT(w, "fedcba9876543210");
	expect_line(rd, r, 0, NULL);
	PUT(w, "\nz\n");
	expect_line(rd, r, 1, "fedcba9876543210");
	expect_line(rd, r, 1, "z");
}

/* ... and a line longer than max is refused even when it comes with its newline in one read. */
static void test_read_limit_one_read(void **state)
{
	struct conn *c = *state;
	struct proto_reader *rd = &c->rd;
	int w = c->sv[0], r = c->sv[1];

	/* 17 bytes and the newline together: too long, then the next line */
	PUT(w, "0123456789abcdefg\nok\n");
	expect_line(rd, r, -EMSGSIZE, NULL);
	expect_line(rd, r, 1, "ok");
	/* 40 bytes and the newline together, then a good line */
	PUT(w, "0123456789012345678901234567890123456789\nafter\n");
	expect_line(rd, r, -EMSGSIZE, NULL);
	expect_line(rd, r, 1, "after");
	expect_line(rd, r, 0, NULL);
}

struct writer {
	int fd;
	const char *buf;
	size_t len;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	size_t off = 0;

	while (off < w->len) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n <= 0)
			break;
		off += n;
	}
	close(w->fd);
	return NULL;
}

/* With the real limit: a 1 MiB line from a blocking writer, then a normal request. */
static void test_read_overlong_real(void **state)
{
	static const char tail[] = "\n{\"v\":1,\"cmd\":\"list\"}\n";
	size_t big = 1 << 20, len;
	char *buf = malloc(big + sizeof(tail)), *line;
	struct proto_reader rd;
	struct writer w;
	pthread_t th;
	int sv[2];

	(void)state;
	assert_non_null(buf);
	memset(buf, 'x', big);
	memcpy(buf + big, tail, sizeof(tail));
	pair(sv);
	w = (struct writer){ sv[0], buf, big + sizeof(tail) - 1 };
	assert_int_equal(pthread_create(&th, NULL, writer_main, &w), 0);
	proto_reader_init(&rd, PROTO_MAX_LINE);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), -EMSGSIZE);
	/* the reader did not keep the whole line: it discarded while skipping */
	assert_true(rd.cap < big);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), 1);
	assert_string_equal(line, "{\"v\":1,\"cmd\":\"list\"}");
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), -EPIPE);
	assert_int_equal(pthread_join(th, NULL), 0);
	proto_reader_free(&rd);
	close(sv[1]);
	free(buf);
}

static void test_read_errors(void **state)
{
	struct proto_reader rd;
	int sv[2];
	char *line;
	size_t len;

	(void)state;
	proto_reader_init(&rd, 64);
	assert_int_equal(proto_read_line(&rd, -1, &line, &len), -EBADF);
	proto_reader_free(&rd);

	/* immediate end of input */
	pair(sv);
	close(sv[0]);
	proto_reader_init(&rd, 64);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), -EPIPE);
	assert_int_equal(proto_read_line(&rd, sv[1], &line, &len), -EPIPE);
	proto_reader_free(&rd);
	close(sv[1]);
	proto_reader_free(&rd); /* freeing twice is harmless: free() reset it */
}

/* A reply bigger than the socket buffer: proto_send keeps writing while a thread reads. */
struct reader_arg {
	int fd;
	int rc;
	char *line;
	size_t len;
};

static void *reader_main(void *arg)
{
	struct reader_arg *a = arg;
	struct proto_reader rd;
	char *line;

	proto_reader_init(&rd, PROTO_MAX_REPLY);
	a->rc = proto_read_line(&rd, a->fd, &line, &a->len);
	if (a->rc == 1)
		a->line = strndup(line, a->len);
	proto_reader_free(&rd);
	return NULL;
}

static void test_send_large(void **state)
{
	size_t n = 3 << 20;
	char *big = malloc(n + 1);
	struct reader_arg a = { 0 };
	pthread_t th;
	cJSON *m = proto_ok(), *back;
	int sv[2];

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = 'a' + i % 26;
	big[n] = '\0';
	cJSON_AddStringToObject(m, "data", big);
	pair(sv);
	a.fd = sv[1];
	assert_int_equal(pthread_create(&th, NULL, reader_main, &a), 0);
	assert_int_equal(proto_send(sv[0], m), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(a.rc, 1);
	assert_int_equal(a.len, n + strlen("{\"v\":1,\"ok\":true,\"data\":\"\"}"));
	back = cJSON_ParseWithLength(a.line, a.len);
	assert_non_null(back);
	assert_string_equal(proto_str(back, "data", ""), big);
	cJSON_Delete(back);
	free(a.line);
	cJSON_Delete(m);
	free(big);
	close(sv[0]);
	close(sv[1]);
}

static void test_send_errors(void **state)
{
	cJSON *m = proto_ok();
	int sv[2];

	(void)state;
	pair(sv);
	close(sv[1]);
	/* a closed peer: -EPIPE, and no SIGPIPE kills us */
	assert_int_equal(proto_send(sv[0], m), -EPIPE);
	close(sv[0]);
	assert_int_equal(proto_send(-1, m), -EBADF);
	cJSON_Delete(m);
}

/* ---------------------------------------------------------------------------------------- */
/* proto_call */

/* A tiny server: answers every request with ok + "echo": cmd, or the parse error. */
struct server {
	int fd;
	int served;
};

static void *server_main(void *arg)
{
	struct server *sv = arg;
	struct proto_reader rd;
	char *line, err[256];
	size_t len;
	int r;

	proto_reader_init(&rd, PROTO_MAX_LINE);
	while ((r = proto_read_line(&rd, sv->fd, &line, &len)) != -EPIPE) {
		cJSON *q, *rep;

		if (r == 1 && (q = proto_parse_request(line, len, err, sizeof(err)))) {
			rep = proto_ok();
			cJSON_AddStringToObject(rep, "echo", proto_str(q, "cmd", "?"));
			cJSON_Delete(q);
		} else {
			rep = proto_error(2, "%s", r == 1 ? err : "read failed");
		}
		proto_send(sv->fd, rep);
		cJSON_Delete(rep);
		sv->served++;
	}
	proto_reader_free(&rd);
	close(sv->fd);
	return NULL;
}

static void test_call_thread(void **state)
{
	struct server srv;
	pthread_t th;
	cJSON *q, *rep;
	int sv[2];

	(void)state;
	pair(sv);
	srv = (struct server){ sv[1], 0 };
	assert_int_equal(pthread_create(&th, NULL, server_main, &srv), 0);
	/* several calls on one connection */
	for (int i = 0; i < 5; i++) {
		char cmd[16];

		snprintf(cmd, sizeof(cmd), "cmd%d", i);
		q = proto_request(cmd);
		assert_int_equal(proto_call(sv[0], q, &rep), 0);
		assert_non_null(rep);
		assert_int_equal(proto_bool(rep, "ok", 0), 1);
		assert_string_equal(proto_str(rep, "echo", ""), cmd);
		cJSON_Delete(rep);
		cJSON_Delete(q);
	}
	/* a request the server rejects still gets a reply, and the server keeps serving */
	q = cJSON_CreateObject();
	cJSON_AddNumberToObject(q, "v", 9);
	cJSON_AddStringToObject(q, "cmd", "list");
	assert_int_equal(proto_call(sv[0], q, &rep), 0);
	assert_int_equal(proto_bool(rep, "ok", 1), 0);
	assert_int_equal(proto_num(rep, "status", 0), 2);
	assert_non_null(strstr(proto_str(rep, "error", ""), "protocol version 9 not supported"));
	cJSON_Delete(rep);
	cJSON_Delete(q);
	q = proto_request("status");
	assert_int_equal(proto_call(sv[0], q, &rep), 0);
	assert_string_equal(proto_str(rep, "echo", ""), "status");
	cJSON_Delete(rep);
	cJSON_Delete(q);
	close(sv[0]);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(srv.served, 7);
}

/* A forked peer: echoes every line back verbatim, then exits 0 at end of input. */
static int echo_peer(int fd)
{
	struct proto_reader rd;
	char *line;
	size_t len;
	int r, lines = 0;

	proto_reader_init(&rd, PROTO_MAX_LINE);
	while ((r = proto_read_line(&rd, fd, &line, &len)) == 1) {
		line[len] = '\n';
		if (write(fd, line, len + 1) != (ssize_t)(len + 1))
			return 3;
		lines++;
	}
	proto_reader_free(&rd);
	return r == -EPIPE && lines == 2 ? 0 : 4;
}

static void test_call_forked_echo(void **state)
{
	cJSON *q = proto_request("list"), *rep;
	int sv[2], status;
	pid_t pid;

	(void)state;
	cJSON_AddNumberToObject(q, "target", 12);
	cJSON_AddStringToObject(q, "when", "\"quoted name\"->*");
	pair(sv);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(echo_peer(sv[1]));
	}
	close(sv[1]);
	assert_int_equal(proto_call(sv[0], q, &rep), 0);
	assert_string_equal(text(rep), "{\"v\":1,\"cmd\":\"list\",\"target\":12,"
				       "\"when\":\"\\\"quoted name\\\"->*\"}");
	cJSON_Delete(rep);
	assert_int_equal(proto_call(sv[0], q, &rep), 0);
	assert_int_equal(proto_num(rep, "target", 0), 12);
	cJSON_Delete(rep);
	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	cJSON_Delete(q);
}

/* Peers that misbehave: each reads the request, then does one thing. */
enum peer_mode { PEER_GARBAGE, PEER_CLOSE, PEER_SILENT };

static void run_bad_peer(int fd, enum peer_mode mode)
{
	char buf[256];

	if (read(fd, buf, sizeof(buf)) <= 0)
		_exit(3);
	if (mode == PEER_GARBAGE && write(fd, "this is not json\n", 17) != 17)
		_exit(3);
	if (mode == PEER_SILENT)
		pause();
	_exit(0);
}

static void test_call_errors(void **state)
{
	cJSON *q = proto_request("status"), *rep;
	int sv[2], status;
	pid_t pid;

	(void)state;
	/* a reply that is not JSON */
	pair(sv);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		run_bad_peer(sv[1], PEER_GARBAGE);
	close(sv[1]);
	rep = (cJSON *)1;
	assert_int_equal(proto_call(sv[0], q, &rep), -EBADMSG);
	assert_null(rep);
	close(sv[0]);
	waitpid(pid, &status, 0);

	/* the peer hangs up without a reply */
	pair(sv);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		run_bad_peer(sv[1], PEER_CLOSE);
	close(sv[1]);
	rep = (cJSON *)1;
	assert_int_equal(proto_call(sv[0], q, &rep), -EPIPE);
	assert_null(rep);
	close(sv[0]);
	waitpid(pid, &status, 0);

	/* a non-blocking socket and no reply yet: -EAGAIN, not a hang */
	pair(sv);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		run_bad_peer(sv[1], PEER_SILENT);
	close(sv[1]);
	nonblock(sv[0]);
	assert_int_equal(proto_call(sv[0], q, &rep), -EAGAIN);
	assert_null(rep);
	close(sv[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	/* nobody at the other end at all */
	pair(sv);
	close(sv[1]);
	assert_int_equal(proto_call(sv[0], q, &rep), -EPIPE);
	assert_null(rep);
	close(sv[0]);
	cJSON_Delete(q);
}

/*
 * A daemon that refuses a connection writes why and closes, maybe before the request is
 * sent: proto_call returns that line as the reply, not "Broken pipe".
 */
static void test_call_refused(void **state)
{
	static const char why[] = "{\"v\":1,\"ok\":false,\"error\":\"pcmond is busy\",\"status\":1}\n";
	cJSON *q = proto_request("targets"), *rep = NULL;
	int sv[2];

	(void)state;
	pair(sv);
	PUT(sv[1], why);
	close(sv[1]);
	assert_int_equal(proto_call(sv[0], q, &rep), 0);
	assert_non_null(rep);
	assert_int_equal(proto_bool(rep, "ok", 1), 0);
	assert_string_equal(proto_str(rep, "error", ""), "pcmond is busy");
	cJSON_Delete(rep);
	close(sv[0]);
	cJSON_Delete(q);
}

/* ---------------------------------------------------------------------------------------- */
/* proto_connect */

static void test_connect(void **state)
{
	const char *dir = getenv("TMPDIR");
	char tmp[200], path[300], longp[200];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct server srv;
	pthread_t th;
	cJSON *q, *rep;
	int lfd, fd;

	(void)state;
	memset(longp, 'p', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_int_equal(proto_connect(longp), -ENAMETOOLONG);
	assert_int_equal(proto_connect("/nonexistent/pcmon/pcmond.sock"), -ENOENT);

	snprintf(tmp, sizeof(tmp), "%s/pcmon-test-proto-XXXXXX", dir && dir[0] ? dir : "/tmp");
	assert_non_null(mkdtemp(tmp));
	snprintf(path, sizeof(path), "%s/s.sock", tmp);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	/* a socket file with no one listening */
	strcpy(sa.sun_path, path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(proto_connect(path), -ECONNREFUSED);
	assert_int_equal(listen(lfd, 4), 0);
	fd = proto_connect(path);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	srv = (struct server){ accept(lfd, NULL, NULL), 0 };
	assert_true(srv.fd >= 0);
	assert_int_equal(pthread_create(&th, NULL, server_main, &srv), 0);
	q = proto_request("targets");
	assert_int_equal(proto_call(fd, q, &rep), 0);
	assert_string_equal(proto_str(rep, "echo", ""), "targets");
	cJSON_Delete(rep);
	cJSON_Delete(q);
	close(fd);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(srv.served, 1);
	close(lfd);
	unlink(path);
	rmdir(tmp);
}


/* ---------------------------------------------------------------------------------------- */
/* proto_check: every field known, of its type, in range */

static const struct proto_field check_fields[] = {
	{ .name = "n", .type = PT_UINT, .min = 1, .max = 100 },
	{ .name = "s", .type = PT_STR, .max = 4 },
	{ .name = "b", .type = PT_BOOL },
	{ .name = "e", .type = PT_ENUM, .values = "fp|dwarf|auto" },
	{ .name = "t", .type = PT_TARGET, .required = true },
	{ .name = "a", .type = PT_STRS, .max = 3 },
};

static int check(const char *json, char *err)
{
	cJSON *req = cJSON_Parse(json);
	int r;

	assert_non_null(req);
	err[0] = '\0';
	r = proto_check(req, check_fields, sizeof(check_fields) / sizeof(check_fields[0]), err, 160);
	cJSON_Delete(req);
	return r;
}

static void test_check_accepts_good_requests(void **state)
{
	char err[160];

	(void)state;
	assert_int_equal(check("{\"v\":1,\"cmd\":\"x\",\"t\":3}", err), 0);
	assert_int_equal(check("{\"t\":\"name\",\"n\":100,\"s\":\"abcd\",\"b\":false,\"e\":\"auto\","
			       "\"a\":[\"x\",\"yz\"]}", err), 0);
	assert_int_equal(check("{\"t\":1,\"n\":1,\"e\":\"fp\",\"a\":[]}", err), 0);
}

static void test_check_refuses_wrong_types(void **state)
{
	static const char *const bad[][2] = {
		{ "{\"t\":[]}", "field \"t\" must be a target id or name" },
		{ "{\"t\":{}}", "field \"t\" must be" },
		{ "{\"t\":true}", "field \"t\" must be" },
		{ "{\"t\":null}", "field \"t\" must be" },
		{ "{\"t\":0.6}", "field \"t\" must be" },
		{ "{\"t\":0}", "field \"t\" must be" },
		{ "{\"t\":\"\"}", "field \"t\" must be" },
		{ "{\"t\":1,\"n\":\"5\"}", "field \"n\" must be a whole number from 1 to 100" },
		{ "{\"t\":1,\"n\":0}", "field \"n\" must be" },
		{ "{\"t\":1,\"n\":101}", "field \"n\" must be" },
		{ "{\"t\":1,\"n\":2.5}", "field \"n\" must be" },
		{ "{\"t\":1,\"n\":1e300}", "field \"n\" must be" },
		{ "{\"t\":1,\"s\":\"abcde\"}", "field \"s\" must be a string of at most 4 bytes" },
		{ "{\"t\":1,\"s\":1}", "field \"s\" must be" },
		{ "{\"t\":1,\"b\":1}", "field \"b\" must be true or false" },
		{ "{\"t\":1,\"e\":\"dw\"}", "field \"e\" must be one of fp|dwarf|auto" },
		{ "{\"t\":1,\"e\":\"\"}", "field \"e\" must be" },
		{ "{\"t\":1,\"e\":\"fp|dwarf\"}", "field \"e\" must be" },
		{ "{\"t\":1,\"a\":\"x\"}", "field \"a\" must be an array of strings" },
		{ "{\"t\":1,\"a\":[1]}", "field \"a\" must be" },
		{ "{\"t\":1,\"a\":[\"long\"]}", "field \"a\" must be" },
		{ "{\"t\":1,\"zz\":1}", "unknown field \"zz\"" },
		{ "{\"t\":1,\"t\":2}", "field \"t\" given twice" },
		{ "{\"n\":3}", "field \"t\" is missing" },
	};
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (check(bad[i][0], err) != -EINVAL)
			fail_msg("%s: accepted", bad[i][0]);
		if (strncmp(err, bad[i][1], strlen(bad[i][1])))
			fail_msg("%s: got \"%s\", wanted \"%s...\"", bad[i][0], err, bad[i][1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_field_types),
		cmocka_unit_test(test_parse_trailing_garbage),
		cmocka_unit_test(test_parse_trailing_blank_ok),
		cmocka_unit_test(test_parse_length),
		cmocka_unit_test(test_parse_small_err_buffer),
		cmocka_unit_test(test_builders),
		cmocka_unit_test(test_accessors),
		cmocka_unit_test(test_send_read),
		cmocka_unit_test(test_read_many_in_one_write),
		cmocka_unit_test(test_read_split),
		cmocka_unit_test(test_read_overlong_pieces),
		cmocka_unit_test(test_reader_feed),
		cmocka_unit_test(test_format),
		CONN(test_read_limit_exact),
		CONN(test_read_limit_one_read),
		cmocka_unit_test(test_read_overlong_real),
		cmocka_unit_test(test_read_errors),
		cmocka_unit_test(test_send_large),
		cmocka_unit_test(test_send_errors),
		cmocka_unit_test(test_call_thread),
		cmocka_unit_test(test_call_forked_echo),
		cmocka_unit_test(test_call_errors),
		cmocka_unit_test(test_call_refused),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_check_accepts_good_requests),
		cmocka_unit_test(test_check_refuses_wrong_types),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
