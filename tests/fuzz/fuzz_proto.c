// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for pcmond's request path (daemon/core/proto.c): the bytes a client sends, cut
 * into reads of fuzzer-chosen sizes, framed into lines by the reader, each line validated by
 * proto_parse_request as the server does before dispatch, and the reply the server would
 * write formatted and read back.
 *
 * Checks: the reader gives exactly the lines (and overlong lines) a plain split at '\n'
 * gives, whatever the read sizes, and holds no more than a line and a read; a refused line
 * has a short error and its reply is one line of JSON; an accepted request has version 1, a
 * command, and known arguments of their types, and accepted again once printed by cJSON.
 *
 * Build: see the Makefile (daemon/core/proto.c daemon/core/util.c, -lcjson).
 * Input: byte 0 picks the longest line (the real limit, or small ones so that overlong lines
 * are common), byte 1 seeds the read sizes, the rest is the stream.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_proto: check failed at line %d: %s\n", __LINE__, \
				#cond);                                                        \
			abort();                                                               \
		}                                                                              \
	} while (0)

static const size_t limits[] = { PROTO_MAX_LINE, 1, 16, 64, 300 };

/* A command's fields, as the engine declares them (start's, the richest). */
static const struct proto_field fields[] = {
	{ .name = "pid", .type = PT_UINT, .min = 1, .max = 4194304 },
	{ .name = "interval_us", .type = PT_UINT, .min = 1, .max = 60000000 },
	{ .name = "cgroup", .type = PT_STR, .max = 4096 },
	{ .name = "mode", .type = PT_ENUM, .values = "real|virtual" },
	{ .name = "unwind", .type = PT_ENUM, .values = "fp|dwarf|auto" },
	{ .name = "name", .type = PT_STR, .max = 4096 },
	{ .name = "when", .type = PT_STR, .max = PROTO_MAX_LINE },
	{ .name = "all", .type = PT_BOOL },
	{ .name = "kernel", .type = PT_BOOL },
	{ .name = "target", .type = PT_TARGET },
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE },
};

/*
 * The request the server accepted: what the engine may rely on. The protocol layer vouches
 * for v and cmd; the command's fields, once its table accepts them.
 */
static void check_request(const cJSON *req)
{
	const cJSON *it, *x;
	char err[256], *again;

	CHECK(cJSON_IsObject(req));
	CHECK(proto_num(req, "v", 0) == PROTO_VERSION);
	CHECK(proto_str(req, "cmd", NULL) && proto_str(req, "cmd", NULL)[0]);
	if (!proto_check(req, fields, sizeof(fields) / sizeof(fields[0]), err, sizeof(err))) {
		cJSON_ArrayForEach(it, req) {
			const char *k = it->string;

			if (!strcmp(k, "v") || !strcmp(k, "cmd"))
				continue;
			if (!strcmp(k, "pid") || !strcmp(k, "interval_us"))
				CHECK(cJSON_IsNumber(it) && it->valuedouble >= 1 &&
				      it->valuedouble <= 60000000 &&
				      it->valuedouble == (double)(int64_t)it->valuedouble);
			else if (!strcmp(k, "mode"))
				CHECK(!strcmp(it->valuestring, "real") ||
				      !strcmp(it->valuestring, "virtual"));
			else if (!strcmp(k, "unwind"))
				CHECK(!strcmp(it->valuestring, "fp") || !strcmp(it->valuestring, "dwarf") ||
				      !strcmp(it->valuestring, "auto"));
			else if (!strcmp(k, "all") || !strcmp(k, "kernel"))
				CHECK(cJSON_IsBool(it));
			else if (!strcmp(k, "target"))
				CHECK(cJSON_IsString(it) || cJSON_IsNumber(it));
			else if (!strcmp(k, "critical"))
				cJSON_ArrayForEach(x, it)
					CHECK(cJSON_IsString(x));
			else
				CHECK(cJSON_IsString(it));
		}
	}
	/* what cJSON prints of an accepted request is accepted again */
	again = cJSON_PrintUnformatted(req);
	if (again && strlen(again) <= PROTO_MAX_LINE) {
		cJSON *r2 = proto_parse_request(again, strlen(again), err, sizeof(err));

		if (!r2)
			fprintf(stderr, "fuzz_proto: reprinted request refused: %s\n", err);
		CHECK(r2);
		CHECK(!strcmp(proto_str(r2, "cmd", ""), proto_str(req, "cmd", "")));
		cJSON_Delete(r2);
	}
	free(again);
}

/* The reply the server writes: one line of JSON that says ok and, if not, why. */
static void check_reply(cJSON *rep, int ok)
{
	size_t len = 0;
	char *s = proto_format(rep, &len);
	cJSON *back;

	CHECK(s && len >= 2 && s[len - 1] == '\n');
	CHECK(!memchr(s, '\n', len - 1));
	back = cJSON_ParseWithLength(s, len - 1);
	CHECK(back);
	CHECK(proto_bool(back, "ok", -1) == ok);
	CHECK(proto_num(back, "v", 0) == PROTO_VERSION);
	if (!ok)
		CHECK(proto_str(back, "error", NULL) && proto_num(back, "status", 0) == 2);
	cJSON_Delete(back);
	free(s);
}

/* One line out of the reader, as the server handles it. */
static void handle(int r, const char *line, size_t len)
{
	char err[256];
	cJSON *req, *rep;

	if (r == -EMSGSIZE) {
		rep = proto_error(2, "request too long (at most %d bytes)", PROTO_MAX_LINE);
		check_reply(rep, 0);
		cJSON_Delete(rep);
		return;
	}
	err[0] = '\0';
	req = proto_parse_request(line, len, err, sizeof(err));
	if (!req) {
		CHECK(err[0] && strlen(err) < sizeof(err));
		rep = proto_error(2, "%s", err);
		check_reply(rep, 0);
	} else {
		check_request(req);
		rep = proto_ok();
		cJSON_AddStringToObject(rep, "echo", proto_str(req, "cmd", ""));
		check_reply(rep, 1);
		cJSON_Delete(req);
	}
	cJSON_Delete(rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reader rd;
	const char *in, *seg;
	size_t n, max, off = 0;
	uint32_t rng;

	if (size < 2)
		return 0;
	max = limits[data[0] % (sizeof(limits) / sizeof(limits[0]))];
	rng = data[1] * 2654435761u + 1;
	in = (const char *)data + 2;
	n = size - 2;
	seg = in; /* the next line a plain split expects */

	proto_reader_init(&rd, max);
	while (off < n) {
		size_t piece, len;
		char *line;
		int r;

		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		piece = rng % 8 == 0 ? PROTO_READ_CHUNK : 1 + rng % 97;
		piece = piece < n - off ? piece : n - off;
		CHECK(proto_reader_feed(&rd, in + off, piece) == 0);
		off += piece;
		while ((r = proto_reader_next(&rd, &line, &len)) != 0) {
			const char *nl = memchr(seg, '\n', in + n - seg);
			size_t want;

			CHECK(nl && nl < in + off); /* a line only once its newline came */
			want = nl - seg;
			if (want > max) {
				CHECK(r == -EMSGSIZE);
			} else {
				CHECK(r == 1 && len == want && line[len] == '\0');
				CHECK(!memcmp(line, seg, len));
			}
			handle(r, line, len);
			seg = nl + 1;
		}
		/* nothing more is complete: the rest is part of a line */
		CHECK(!memchr(seg, '\n', in + off - seg));
		CHECK(proto_reader_partial(&rd) == (seg < in + off));
		/* the reader keeps at most a line's worth, whatever it is sent */
		CHECK(rd.len - rd.start <= max);
	}
	proto_reader_free(&rd);
	return 0;
}
