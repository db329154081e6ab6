// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "util.h"

/*
 * The arguments the protocol knows, with the types they may have. An argument of another
 * type is refused: taken for absent, "children": 0 would mean "children": true.
 */
enum { F_NUM = 1, F_STR = 2, F_BOOL = 4, F_STRS = 8 /* an array of strings */ };
static const struct {
	const char *name;
	unsigned types;
} fields[] = {
	{ "v", F_NUM },		     { "cmd", F_STR },
	{ "target", F_STR | F_NUM }, { "pid", F_NUM },	      { "cgroup", F_STR },
	{ "all", F_BOOL },	     { "mode", F_STR },	      { "interval_us", F_NUM },
	{ "unwind", F_STR },	     { "kernel", F_BOOL },    { "no_inline", F_BOOL },
	{ "children", F_BOOL },	     { "name", F_STR },	      { "icase", F_BOOL },
	{ "when", F_STR },	     { "when_from_file", F_BOOL }, { "critical", F_STRS },
	{ "exec_wait", F_BOOL },     { "exe", F_STR },
};

/* Numbers a double holds exactly: beyond them (and at inf) a cast to an integer is undefined. */
#define PROTO_MAX_NUMBER 9007199254740992.0 /* 2^53 */

static bool field_ok(const cJSON *it, unsigned types)
{
	const cJSON *x;

	if ((types & F_NUM) && cJSON_IsNumber(it))
		return true;
	if ((types & F_STR) && cJSON_IsString(it))
		return true;
	if ((types & F_BOOL) && cJSON_IsBool(it))
		return true;
	if ((types & F_STRS) && cJSON_IsArray(it)) {
		cJSON_ArrayForEach(x, it)
			if (!cJSON_IsString(x))
				return false;
		return true;
	}
	return false;
}

static const char *type_names(unsigned types)
{
	switch (types) {
	case F_NUM:
		return "a number";
	case F_STR:
		return "a string";
	case F_BOOL:
		return "true or false";
	case F_STRS:
		return "an array of strings";
	default:
		return "a string or a number";
	}
}

/*
 * Every known argument of its type; 0, or -EINVAL with @err filled. An argument given twice
 * is checked both times (the engine reads the first; pcmon repeats one given twice).
 */
static int check_fields(const cJSON *req, char *err, size_t errlen)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, req) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(fields); i++)
			if (it->string && !strcmp(it->string, fields[i].name))
				break;
		if (i == ARRAY_SIZE(fields))
			continue;
		if (!field_ok(it, fields[i].types)) {
			snprintf(err, errlen, "malformed request: \"%s\" must be %s", fields[i].name,
				 type_names(fields[i].types));
			return -EINVAL;
		}
		if (cJSON_IsNumber(it) && !(it->valuedouble >= -PROTO_MAX_NUMBER &&
					    it->valuedouble <= PROTO_MAX_NUMBER)) { /* NaN too */
			snprintf(err, errlen, "malformed request: \"%s\" is out of range",
				 fields[i].name);
			return -EINVAL;
		}
	}
	return 0;
}

cJSON *proto_parse_request(const char *line, size_t len, char *err, size_t errlen)
{
	const cJSON *v, *cmd;
	const char *end = NULL;
	cJSON *req;

	if (len > PROTO_MAX_LINE) {
		snprintf(err, errlen, "request too long (%zu bytes, at most %d)", len,
			 PROTO_MAX_LINE);
		return NULL;
	}
	req = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (!req) {
		snprintf(err, errlen, "malformed request: not JSON");
		return NULL;
	}
	while (end < line + len && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (end != line + len) {
		snprintf(err, errlen, "malformed request: text after the JSON object");
		goto bad;
	}
	if (!cJSON_IsObject(req)) {
		snprintf(err, errlen, "malformed request: not a JSON object");
		goto bad;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "v");
	if (!cJSON_IsNumber(v)) {
		snprintf(err, errlen, "malformed request: no protocol version \"v\"");
		goto bad;
	}
	if (v->valuedouble != PROTO_VERSION) {
		snprintf(err, errlen, "protocol version %g not supported (pcmond speaks %d): use a matching pcmon",
			 v->valuedouble, PROTO_VERSION);
		goto bad;
	}
	cmd = cJSON_GetObjectItemCaseSensitive(req, "cmd");
	if (!cJSON_IsString(cmd) || !cmd->valuestring[0]) {
		snprintf(err, errlen, "malformed request: no \"cmd\"");
		goto bad;
	}
	if (check_fields(req, err, errlen))
		goto bad;
	return req;
bad:
	cJSON_Delete(req);
	return NULL;
}

static cJSON *reply(int ok)
{
	cJSON *r = cJSON_CreateObject();

	if (r) {
		cJSON_AddNumberToObject(r, "v", PROTO_VERSION);
		cJSON_AddBoolToObject(r, "ok", ok);
	}
	return r;
}

cJSON *proto_ok(void)
{
	return reply(1);
}

cJSON *proto_error(int status, const char *fmt, ...)
{
	cJSON *r = reply(0);
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r) {
		cJSON_AddStringToObject(r, "error", msg);
		cJSON_AddNumberToObject(r, "status", status);
	}
	return r;
}

cJSON *proto_request(const char *cmd)
{
	cJSON *r = cJSON_CreateObject();

	if (r) {
		cJSON_AddNumberToObject(r, "v", PROTO_VERSION);
		cJSON_AddStringToObject(r, "cmd", cmd);
	}
	return r;
}

const char *proto_str(const cJSON *o, const char *name, const char *def)
{
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(i) ? i->valuestring : def;
}

double proto_num(const cJSON *o, const char *name, double def)
{
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(i) ? i->valuedouble : def;
}

int proto_bool(const cJSON *o, const char *name, int def)
{
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsBool(i) ? cJSON_IsTrue(i) : def;
}

char *proto_format(const cJSON *msg, size_t *len)
{
	char *s = cJSON_PrintUnformatted(msg);

	if (!s)
		return NULL;
	*len = strlen(s);
	s[(*len)++] = '\n'; /* replaces the NUL; the buffer is not used as a string again */
	return s;
}

int proto_send(int fd, const cJSON *msg)
{
	size_t len, off = 0;
	char *s = proto_format(msg, &len);

	if (!s)
		return -ENOMEM;
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);

		if (n < 0) {
			int r = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;

			if (errno == EINTR)
				continue;
			free(s);
			return r; /* a blocking socket with a send timeout, or a non-blocking one */
		}
		off += n;
	}
	free(s);
	return 0;
}

void proto_reader_init(struct proto_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max;
}

void proto_reader_free(struct proto_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* Room for @n more bytes at buf + len: unread bytes move to the front first. */
static int reader_room(struct proto_reader *r, size_t n)
{
	if (r->start) {
		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->start = 0;
	}
	if (r->len + n < r->len)
		return -ENOMEM;
	return GROW(r->buf, r->cap, r->len + n);
}

/* A line longer than max has no newline in the first max + 1 bytes: drop what is held. */
static void reader_check_overflow(struct proto_reader *r)
{
	if (r->len - r->start > r->max) {
		r->overflow = 1;
		r->start = r->len = r->scanned = 0;
	}
}

int proto_reader_fill(struct proto_reader *r, int fd)
{
	ssize_t n;

	/* nothing held: a buffer grown for a big line is not kept for good */
	if (r->len == r->start && r->cap > 4 * PROTO_READ_CHUNK) {
		free(r->buf);
		r->buf = NULL;
		r->start = r->len = r->cap = r->scanned = 0;
	}
	if (reader_room(r, PROTO_READ_CHUNK))
		return -ENOMEM;
	do
		n = read(fd, r->buf + r->len, PROTO_READ_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	r->len += n;
	return n;
}

int proto_reader_feed(struct proto_reader *r, const void *data, size_t n)
{
	if (!n)
		return 0;
	if (reader_room(r, n))
		return -ENOMEM;
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	return 0;
}

int proto_reader_next(struct proto_reader *r, char **line, size_t *len)
{
	char *from = r->buf + r->start + r->scanned;
	size_t avail = r->len - r->start - r->scanned;
	char *nl = avail ? memchr(from, '\n', avail) : NULL;

	if (!nl) {
		r->scanned = r->len - r->start;
		reader_check_overflow(r);
		return 0;
	}
	*nl = '\0';
	*line = r->buf + r->start;
	*len = nl - *line;
	r->start += *len + 1;
	r->scanned = 0;
	if (r->start == r->len) /* the line stays valid: its bytes are not touched */
		r->start = r->len = 0;
	if (r->overflow || *len > r->max) {
		r->overflow = 0;
		return -EMSGSIZE;
	}
	return 1;
}

bool proto_reader_partial(const struct proto_reader *r)
{
	return r->overflow || r->len > r->start;
}

int proto_read_line(struct proto_reader *r, int fd, char **line, size_t *len)
{
	for (;;) {
		int n = proto_reader_next(r, line, len);

		if (n)
			return n;
		n = proto_reader_fill(r, fd);
		if (n <= 0)
			return n;
	}
}

int proto_call(int fd, const cJSON *req, cJSON **reply)
{
	struct proto_reader rd;
	char *line;
	size_t len;
	int r;

	*reply = NULL;
	r = proto_send(fd, req);
	if (r && r != -EPIPE)
		return r;
	/* even when sending failed: a daemon that refused us wrote why before it closed */
	proto_reader_init(&rd, PROTO_MAX_REPLY);
	r = proto_read_line(&rd, fd, &line, &len);
	if (r == 1) {
		*reply = cJSON_ParseWithLength(line, len);
		r = *reply ? 0 : -EBADMSG;
	} else if (r == 0) {
		r = -EAGAIN;
	}
	proto_reader_free(&rd);
	return r;
}

int proto_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}
