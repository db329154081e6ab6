/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto_: the pcmond wire protocol. One JSON object per line each way.
 *
 *   request: {"v": 1, "cmd": "list", ...arguments}
 *   reply:   {"v": 1, "ok": true, ...results}
 *            {"v": 1, "ok": false, "error": "one line saying what to do", "status": 1|2}
 *
 * `status` is the exit status the CLI should end with: 1 runtime failure, 2 usage error.
 */
#ifndef PCMON_PROTO_H
#define PCMON_PROTO_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION 1
#define PROTO_MAX_LINE (256 * 1024)	/* longest request accepted */
#define PROTO_MAX_REPLY (256 * 1024 * 1024)

#define PCMON_VERSION "0.1.0"
#define PCMON_DEFAULT_SOCKET "/run/pcmon/pcmond.sock"
#define PCMON_DEFAULT_STATE_DIR "/var/lib/pcmon"
#define PCMON_DEFAULT_CACHE_DIR "/var/cache/pcmon"

/*
 * Parse and validate one request line: one JSON object (nothing after it), protocol version
 * "v", a "cmd" string, and every argument the protocol knows (proto.c, fields[]) of its
 * type: a wrong-typed argument is refused, never taken for an absent one; numbers are
 * finite and at most 2^53 in size. Unknown arguments are left to the command. NULL and
 * @err filled if the request is not acceptable.
 */
cJSON *proto_parse_request(const char *line, size_t len, char *err, size_t errlen);

cJSON *proto_ok(void);
cJSON *proto_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cJSON *proto_request(const char *cmd);

/* Request accessors with defaults. */
const char *proto_str(const cJSON *o, const char *name, const char *def);
double proto_num(const cJSON *o, const char *name, double def);
int proto_bool(const cJSON *o, const char *name, int def);
/* The strings of the array @name (its other items skipped) into *@out, a new array of
 * pointers into @o (free() it; NULL and 0 when there are none): 0, or -ENOMEM. */
int proto_strs(const cJSON *o, const char *name, const char ***out, size_t *n);

/*
 * What a command accepts: every member of a request must be one of its fields (besides "v"
 * and "cmd"), of that field's type and within its range, or the request is refused whole,
 * naming the field. Handlers can then read fields without second-guessing their types.
 */
enum proto_type {
	PT_STR,		/* a string of at most .max bytes */
	PT_BOOL,
	PT_UINT,	/* a whole number from .min to .max */
	PT_ENUM,	/* one of the strings in .values, "a|b|c" */
	PT_TARGET,	/* a target: its id (a whole number) or its name (a string) */
	PT_STRS,	/* an array of strings of at most .max bytes each */
	PT_NODES,	/* an array of {"spec": string of at most .max bytes, ["arg": 0-5]} */
};

struct proto_field {
	const char *name;
	enum proto_type type;
	double min, max;
	const char *values;
	bool required;
	/* the command-line option that gives it ("--interval"): a value it refuses is named so,
	 * as the user typed it; NULL: the field's own name */
	const char *opt;
};

/* 0, or -EINVAL with a one-line reason in @err. */
int proto_check(const cJSON *req, const struct proto_field *fields, size_t n, char *err,
		size_t errlen);

/* @msg as one line ending in a newline (malloc'ed, *len bytes, no NUL); NULL: no memory. */
char *proto_format(const cJSON *msg, size_t *len);
/* Write @msg as one line to a blocking @fd (the client side); 0 or -errno. */
int proto_send(int fd, const cJSON *msg);

/*
 * Buffered line reader for one connection. Bytes come in with proto_reader_fill() (one
 * read from a socket) or proto_reader_feed(); proto_reader_next() hands out complete lines.
 * It holds at most one line's worth (max) plus one read: a longer line is discarded as it
 * arrives and reported once, when its newline comes.
 */
/*
 * Descriptors travel with an empty line sent with SCM_RIGHTS just before the request that
 * uses them (a cgroup directory or an executable the client opened with its own rights, so
 * that pcmond never opens a path on a user's behalf). The request names them by index, in
 * the order they came: "cgroup_fd": 0. An empty line gets no reply.
 */
#define PROTO_MAX_FDS 4

struct proto_reader {
	char *buf;
	size_t start, len, cap;	/* unread bytes are buf[start, len) */
	size_t scanned;		/* of those, how many are known to hold no newline */
	size_t max;		/* longest line accepted */
	int overflow;		/* the current line is too long: it is being skipped */
	uint64_t total;		/* bytes taken in since the start */
	uint64_t line_at;	/* stream offset of the line handed out last */
	int fds[PROTO_MAX_FDS];	/* descriptors received and not yet handed out, oldest first */
	uint64_t fd_at[PROTO_MAX_FDS]; /* stream offset just past the read that brought them */
	int nfds;
	int fds_dropped;	/* more came than fit: they were closed */
};
#define PROTO_READ_CHUNK 65536
void proto_reader_init(struct proto_reader *r, size_t max);
void proto_reader_free(struct proto_reader *r);
/* One read() of up to PROTO_READ_CHUNK bytes: bytes read, 0 if none now (EAGAIN), -EPIPE at
 * end of input, other -errno on error. */
int proto_reader_fill(struct proto_reader *r, int fd);
/* Take @n bytes as if read; 0 or -ENOMEM. */
int proto_reader_feed(struct proto_reader *r, const void *data, size_t n);
/*
 * The next buffered line: 1 when *line holds one (NUL-terminated, without its newline; valid
 * until the next fill or feed), 0 when none is complete, -EMSGSIZE for a line longer than
 * max (skipped: the next call goes on after it).
 */
int proto_reader_next(struct proto_reader *r, char **line, size_t *len);
/* After proto_reader_next() returned 0: does the reader hold part of a line? */
bool proto_reader_partial(const struct proto_reader *r);
/*
 * Next line, reading from @fd as needed: 1, 0 when more input is needed (non-blocking @fd),
 * -EMSGSIZE for an overlong line (skipped), -EPIPE at end of input, other -errno on error.
 */
int proto_read_line(struct proto_reader *r, int fd, char **line, size_t *len);

/*
 * Hand out the descriptors that came before the line last returned (at most @max), oldest
 * first, and forget them; returns how many. Descriptors sent for a later request stay.
 */
int proto_reader_take_fds(struct proto_reader *r, int *fds, int max);

/*
 * Client side: send @req on a blocking @fd and wait for the reply. A daemon that refuses the
 * connection says why in a line and closes: that line is the reply, even if sending failed.
 */
int proto_call(int fd, const cJSON *req, cJSON **reply);
/* The same, after passing @nfds descriptors for it (see PROTO_MAX_FDS). */
int proto_call_fds(int fd, const cJSON *req, const int *fds, int nfds, cJSON **reply);
/* Connect to the daemon socket; -errno on failure. */
int proto_connect(const char *path);

#endif
