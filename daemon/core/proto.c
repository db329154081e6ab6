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

/* "v" and "cmd" given once: a second one would be read by nobody, and mean nothing. */
static int check_once(const cJSON *req, char *err, size_t errlen)
{
	int v = 0, cmd = 0;
	const cJSON *it;

	cJSON_ArrayForEach(it, req) {
		v += !strcmp(it->string, "v");
		cmd += !strcmp(it->string, "cmd");
	}
	if (v > 1 || cmd > 1) {
		snprintf(err, errlen, "malformed request: \"%s\" given twice", v > 1 ? "v" : "cmd");
		return -EINVAL;
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
	if (check_once(req, err, errlen))
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

int proto_strs(const cJSON *o, const char *name, const char ***out, size_t *n)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, name), *it;
	int len = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;

	*out = NULL;
	*n = 0;
	if (len <= 0)
		return 0;
	*out = calloc((size_t)len, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it))
			(*out)[(*n)++] = it->valuestring;
	return 0;
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

static bool is_whole(const cJSON *v, double min, double max)
{
	/* the range first: converting a double out of int64_t's range is undefined */
	return cJSON_IsNumber(v) && v->valuedouble >= min && v->valuedouble <= max &&
	       v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* Is @s one of the '|'-separated words of @values, whole? */
static bool in_values(const char *s, const char *values)
{
	size_t n = strlen(s);

	for (const char *p = values; *p;) {
		size_t w = strcspn(p, "|");

		if (w == n && n && !strncmp(p, s, n))
			return true;
		p += w + (p[w] == '|');
	}
	return false;
}

static bool field_fits(const struct proto_field *f, const cJSON *v)
{
	const cJSON *x;

	switch (f->type) {
	case PT_STR:
		return cJSON_IsString(v) && strlen(v->valuestring) <= f->max;
	case PT_BOOL:
		return cJSON_IsBool(v);
	case PT_UINT:
		return is_whole(v, f->min, f->max);
	case PT_ENUM:
		return cJSON_IsString(v) && in_values(v->valuestring, f->values);
	case PT_TARGET:
		return is_whole(v, 1, 1e9) ||
		       (cJSON_IsString(v) && v->valuestring[0] && strlen(v->valuestring) <= 255);
	case PT_STRS:
		if (!cJSON_IsArray(v))
			return false;
		cJSON_ArrayForEach(x, v)
			if (!cJSON_IsString(x) || strlen(x->valuestring) > f->max)
				return false;
		return true;
	case PT_NODES:
		if (!cJSON_IsArray(v))
			return false;
		cJSON_ArrayForEach(x, v) {
			const cJSON *spec = cJSON_GetObjectItemCaseSensitive(x, "spec");
			const cJSON *arg = cJSON_GetObjectItemCaseSensitive(x, "arg");

			if (!cJSON_IsObject(x) || cJSON_GetArraySize(x) != 1 + !!arg ||
			    !cJSON_IsString(spec) || strlen(spec->valuestring) > f->max ||
			    (arg && !is_whole(arg, 0, 5)))
				return false;
		}
		return true;
	}
	return false;
}

static const char *type_words(const struct proto_field *f, char *buf, size_t len)
{
	switch (f->type) {
	case PT_STR:
		snprintf(buf, len, "a string of at most %.0f bytes", f->max);
		break;
	case PT_BOOL:
		snprintf(buf, len, "true or false");
		break;
	case PT_UINT:
		snprintf(buf, len, "a whole number from %.0f to %.0f", f->min, f->max);
		break;
	case PT_ENUM:
		snprintf(buf, len, "one of %s", f->values);
		break;
	case PT_TARGET:
		snprintf(buf, len, "a target id or name");
		break;
	case PT_STRS:
		snprintf(buf, len, "an array of strings");
		break;
	case PT_NODES:
		snprintf(buf, len, "an array of {\"spec\": NODE, \"arg\": 0-5}");
		break;
	}
	return buf;
}

/* A refused value as the user typed it, short. */
static const char *value_words(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		snprintf(buf, len, "%.40s", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(buf, len, "%.17g", v->valuedouble);
	else if (cJSON_IsBool(v))
		snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else
		snprintf(buf, len, "(%s)", cJSON_IsArray(v) ? "an array" : cJSON_IsObject(v) ? "an object" : "null");
	return buf;
}

int proto_check(const cJSON *req, const struct proto_field *fields, size_t n, char *err,
		size_t errlen)
{
	const cJSON *m;
	char words[96];

	cJSON_ArrayForEach(m, req) {
		size_t i;

		if (!strcmp(m->string, "v") || !strcmp(m->string, "cmd"))
			continue;
		for (i = 0; i < n && strcmp(fields[i].name, m->string); i++)
			;
		if (i == n) {
			snprintf(err, errlen, "unknown field \"%.64s\"", m->string);
			return -EINVAL;
		}
		if (cJSON_GetObjectItemCaseSensitive(req, m->string) != m) {
			snprintf(err, errlen, "field \"%s\" given twice", m->string);
			return -EINVAL;
		}
		if (!field_fits(&fields[i], m)) {
			char val[48];

			type_words(&fields[i], words, sizeof(words));
			/* a value of the right type the option refuses: named as typed */
			if (fields[i].opt && (cJSON_IsString(m) == (fields[i].type != PT_UINT)))
				snprintf(err, errlen, "%s %s: must be %s", fields[i].opt,
					 value_words(m, val, sizeof(val)), words);
			else
				snprintf(err, errlen, "field \"%s\" must be %s", m->string, words);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (fields[i].required && !cJSON_GetObjectItemCaseSensitive(req, fields[i].name)) {
			snprintf(err, errlen, "field \"%s\" is missing", fields[i].name);
			return -EINVAL;
		}
	}
	return 0;
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
	for (int i = 0; i < r->nfds; i++)
		close(r->fds[i]);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

int proto_reader_take_fds(struct proto_reader *r, int *fds, int max)
{
	int n = 0;

	while (n < r->nfds && n < max && r->fd_at[n] <= r->line_at)
		n++;
	memcpy(fds, r->fds, n * sizeof(*fds));
	memmove(r->fds, r->fds + n, (r->nfds - n) * sizeof(*fds));
	memmove(r->fd_at, r->fd_at + n, (r->nfds - n) * sizeof(*r->fd_at));
	r->nfds -= n;
	return n;
}

/* read() that also keeps descriptors passed with the bytes (SCM_RIGHTS). */
static ssize_t recv_fds(struct proto_reader *r, int fd, void *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(PROTO_MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { buf, len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			    .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;
	ssize_t n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);

	if (n < 0 && errno == ENOTSOCK)
		return read(fd, buf, len);
	for (c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
		int *p = (int *)CMSG_DATA(c), k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (int i = 0; i < k; i++) {
			if (r->nfds < PROTO_MAX_FDS) {
				/* the kernel ends a read with the segment that carried them */
				r->fd_at[r->nfds] = r->total + n;
				r->fds[r->nfds++] = p[i];
			} else {
				close(p[i]);
				r->fds_dropped = 1;
			}
		}
	}
	if (m.msg_flags & MSG_CTRUNC)
		r->fds_dropped = 1;
	return n;
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
		n = recv_fds(r, fd, r->buf + r->len, PROTO_READ_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	r->len += n;
	r->total += n;
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
	r->total += n;
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
	r->line_at = r->total - (r->len - r->start);
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

/* The empty line that carries @nfds descriptors to the next request. */
static int send_fds(int fd, const int *fds, int nfds)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(PROTO_MAX_FDS * sizeof(int))];
	} ctl;
	struct iovec iov = { "\n", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			    .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	if (nfds < 1 || nfds > PROTO_MAX_FDS)
		return -EINVAL;
	memset(ctl.b, 0, sizeof(ctl.b));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	return sendmsg(fd, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

int proto_call(int fd, const cJSON *req, cJSON **reply)
{
	return proto_call_fds(fd, req, NULL, 0, reply);
}

int proto_call_fds(int fd, const cJSON *req, const int *fds, int nfds, cJSON **reply)
{
	struct proto_reader rd;
	char *line;
	size_t len;
	int r;

	*reply = NULL;
	r = nfds ? send_fds(fd, fds, nfds) : 0;
	if (!r)
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
