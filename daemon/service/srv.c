// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine.h"
#include "proto.h"
#include "srv.h"
#include "util.h"

#define NS_PER_S 1000000000ULL
#define SRV_ACCEPT_BURST 16 /* connections taken per turn of the loop */

struct conn {
	int fd;			/* -1: a free slot */
	struct client cred;
	struct proto_reader rd;
	char *out;		/* replies not yet written: out[off, len) */
	size_t off, len, cap;
	uint32_t watching;	/* the epoll events asked for now */
	bool lines;		/* the reader may hold whole requests: serve without waiting */
	bool eof;		/* the peer has sent all it will: answer it, then close */
	uint64_t active_ns;	/* accepted, last request served or last reply bytes written */
	uint64_t partial_ns;	/* since when part of a request is held; 0: none */
	uint64_t progress_ns;	/* replies pending: since they last moved (or were queued) */
	size_t taken;		/* bytes the peer took since then */
};

/* The server's counters, defined once: the struct's fields and pcmon status's
 * "connections" numbers, each named as its field. */
#define SRV_COUNTERS(X)                                                                    \
	X(refused)          /* connections refused: over a limit on connections */        \
	X(idle_timeouts)    /* closed: idle too long */                                    \
	X(request_timeouts) /* closed: a request half-sent too long */                     \
	X(write_timeouts)   /* closed: a reply unread too long */

struct srv {
	char path[108];
	int lfd, epfd, sigfd;
	bool activated;		/* the listening socket is systemd's: its path is not ours */
	struct engine *e;
	struct srv_opts o;
	struct conn *conns;		/* o.max_clients slots */
	uint32_t nconns, nonroot;	/* connections open; those of users other than root */
	uint32_t next;			/* round robin: the slot served first in the next turn */
	uint64_t accept_paused_ns;	/* out of fds: accept again at this time; 0: accepting */
#define SRV_COUNTER(f) uint64_t f;
	SRV_COUNTERS(SRV_COUNTER)
#undef SRV_COUNTER
	struct srv_watch watch[SRV_MAX_WATCH];
	int nwatch;
};

/* epoll data: small integers for our own fds, conn index + 16 for clients */
enum { TAG_LISTEN = 1, TAG_SIGNAL, TAG_ENGINE, TAG_WATCH, TAG_CONN0 = 16 };

/* Enough descriptors for every client next to the engine's perf events and maps. */
static void raise_fd_limit(uint32_t clients)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max ||
	    rl.rlim_cur >= clients + 1024)
		return;
	rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)clients + 1024);
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int make_dir_for(const char *path)
{
	char dir[108];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int srv_open(const char *path, struct engine *e, const struct srv_opts *o, struct srv **out,
	     char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	struct group *gr;
	sigset_t mask;
	struct srv *s;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "--socket %s: path too long (at most %zu bytes)", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->lfd = s->epfd = s->sigfd = -1;
	s->e = e;
	s->o = *o;
	if (!s->o.max_clients)
		s->o.max_clients = SRV_DEFAULT_MAX_CLIENTS;
	s->o.max_clients = MIN(MAX(s->o.max_clients, SRV_MIN_CLIENTS), SRV_MAX_CLIENTS);
	if (!s->o.per_user)
		s->o.per_user = SRV_DEFAULT_PER_USER;
	s->o.per_user = MIN(s->o.per_user, s->o.max_clients - SRV_ROOT_RESERVE);
	s->o.idle_s = s->o.idle_s ? s->o.idle_s : SRV_DEFAULT_IDLE_S;
	s->o.request_s = s->o.request_s ? s->o.request_s : SRV_DEFAULT_REQUEST_S;
	s->o.write_s = s->o.write_s ? s->o.write_s : SRV_DEFAULT_WRITE_S;
	s->conns = calloc(s->o.max_clients, sizeof(*s->conns));
	if (!s->conns) {
		free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < s->o.max_clients; i++)
		s->conns[i].fd = -1;
	raise_fd_limit(s->o.max_clients);
	snprintf(s->path, sizeof(s->path), "%s", path);
	strcpy(sa.sun_path, path);
	if (o->listen_fd > 0) {
		/* socket activation: systemd listens, with the owner and mode pcmond.socket sets */
		s->lfd = o->listen_fd;
		s->activated = true;
		if (fcntl(s->lfd, F_SETFL, fcntl(s->lfd, F_GETFL) | O_NONBLOCK) ||
		    fcntl(s->lfd, F_SETFD, FD_CLOEXEC)) {
			r = -errno;
			snprintf(err, errlen, "the socket systemd passed: %s", strerror(-r));
			goto fail;
		}
		goto listening;
	}

	/* a socket that answers belongs to a live daemon; one that does not is stale */
	fd = proto_connect(path);
	if (fd >= 0) {
		close(fd);
		snprintf(err, errlen, "another pcmond is serving %s: stop it first (systemctl stop pcmond)",
			 path);
		r = -EADDRINUSE;
		goto fail;
	}
	unlink(path);
	r = make_dir_for(path);
	if (r) {
		snprintf(err, errlen, "cannot create the directory of %s: %s", path, strerror(-r));
		goto fail;
	}
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(s->lfd, SOMAXCONN)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(-r));
		goto fail;
	}
	/* group pcmon may talk to the daemon; the engine checks what each user may do */
	gr = getgrnam("pcmon");
	if (gr && chown(path, 0, gr->gr_gid))
		pr_warn("cannot give %s to group pcmon: %s", path, strerror(errno));
	chmod(path, 0660);

listening:
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	s->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->sigfd < 0 || s->epfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-r));
		goto fail;
	}
	ev.data.u32 = TAG_LISTEN;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev);
	ev.data.u32 = TAG_SIGNAL;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &ev);
	ev.data.u32 = TAG_ENGINE;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, engine_fd(e), &ev);
	*out = s;
	return 0;
fail:
	srv_close(s);
	return r;
}

/* ---- one connection */

static size_t pending(const struct conn *c)
{
	return c->len - c->off;
}

/* Has requests to serve, and room for their replies. */
static bool has_work(const struct conn *c)
{
	return c->fd >= 0 && c->lines && pending(c) <= SRV_OUT_CAP;
}

/* Read from a client only while it is not behind on its replies and has nothing to serve. */
static void conn_watch(struct srv *s, struct conn *c)
{
	struct epoll_event ev = { .data.u32 = TAG_CONN0 + (c - s->conns) };

	if (!c->eof && !c->lines && pending(c) <= SRV_OUT_CAP)
		ev.events |= EPOLLIN;
	if (pending(c))
		ev.events |= EPOLLOUT;
	if (ev.events != c->watching && !epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->watching = ev.events;
}

static void conn_close(struct srv *s, struct conn *c)
{
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	s->nconns--;
	if (c->cred.uid != 0)
		s->nonroot--;
	proto_reader_free(&c->rd);
	free(c->out);
	c->out = NULL;
	c->off = c->len = c->cap = 0;
}

/* Write what the socket takes now, never waiting; 0, or -errno when the peer is gone. */
static int conn_flush(struct conn *c, uint64_t now)
{
	while (pending(c)) {
		ssize_t n = send(c->fd, c->out + c->off, pending(c), MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return -errno;
		c->off += n;
		c->taken += n;
		c->active_ns = now;
	}
	/* a reader that takes a byte now and then does not count as moving */
	if (c->taken >= SRV_PROGRESS_BYTES || (!pending(c) && c->taken)) {
		c->progress_ns = now;
		c->taken = 0;
	}
	if (!pending(c)) {
		c->off = c->len = 0;
		if (c->cap > SRV_OUT_CAP) { /* a big reply is gone: so is its buffer */
			free(c->out);
			c->out = NULL;
			c->cap = 0;
		}
	}
	return 0;
}

/* Append @rep to the client's replies; 0 or -ENOMEM. */
static int conn_queue(struct conn *c, const cJSON *rep, uint64_t now)
{
	size_t n;
	char *line = rep ? proto_format(rep, &n) : NULL;

	if (!line)
		return -ENOMEM;
	if (!pending(c)) { /* the write timer runs from the first reply that waits */
		c->progress_ns = now;
		c->taken = 0;
		if (c->cap < n) { /* take the line as it is: a big reply is not copied */
			free(c->out);
			c->out = line;
			c->off = 0;
			c->len = c->cap = n;
			return 0;
		}
		c->off = c->len = 0;
	}
	if (c->off && c->cap - c->len < n) {
		memmove(c->out, c->out + c->off, pending(c));
		c->len -= c->off;
		c->off = 0;
	}
	if (GROW(c->out, c->cap, c->len + n)) {
		free(line);
		return -ENOMEM;
	}
	memcpy(c->out + c->len, line, n);
	c->len += n;
	free(line);
	return 0;
}

/* Say why, as far as the socket takes it at once, and close. */
static void conn_part(struct srv *s, struct conn *c, uint64_t now, const char *why)
{
	cJSON *rep = proto_error(1, "%s", why);

	if (!conn_queue(c, rep, now))
		conn_flush(c, now);
	cJSON_Delete(rep);
	pr_debug("closing the connection of uid %u pid %d: %s", c->cred.uid, c->cred.pid, why);
	conn_close(s, c);
}

static uint32_t conns_of(const struct srv *s, uid_t uid)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->o.max_clients; i++)
		n += s->conns[i].fd >= 0 && s->conns[i].cred.uid == uid;
	return n;
}

/* The connection limits and counters, in the reply to "status". */
static void add_connections(const struct srv *s, const struct conn *c, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "connections");

	if (!o)
		return;
	cJSON_AddNumberToObject(o, "clients", s->nconns);
	cJSON_AddNumberToObject(o, "yours", conns_of(s, c->cred.uid));
	cJSON_AddNumberToObject(o, "max_clients", s->o.max_clients);
	cJSON_AddNumberToObject(o, "root_reserved", SRV_ROOT_RESERVE);
	cJSON_AddNumberToObject(o, "per_user", s->o.per_user);
	cJSON_AddNumberToObject(o, "idle_timeout_s", s->o.idle_s);
	cJSON_AddNumberToObject(o, "request_timeout_s", s->o.request_s);
	cJSON_AddNumberToObject(o, "write_timeout_s", s->o.write_s);
	cJSON_AddNumberToObject(o, "output_cap_bytes", SRV_OUT_CAP);
#define ADD_COUNTER(f) cJSON_AddNumberToObject(o, #f, s->f);
	SRV_COUNTERS(ADD_COUNTER)
#undef ADD_COUNTER
}

/* The reply to one line: size, form and version checked here, the command by the engine. */
static cJSON *answer(struct srv *s, struct conn *c, int r, const char *line, size_t len)
{
	int fds[PROTO_MAX_FDS];
	char err[256];
	cJSON *req, *rep;

	if (r == -EMSGSIZE)
		return proto_error(2, "request too long (at most %d bytes)", PROTO_MAX_LINE);
	req = proto_parse_request(line, len, err, sizeof(err));
	if (!req)
		return proto_error(2, "%s", err);
	/* the descriptors passed just before this request are its own: what it does not keep
	 * is closed */
	c->cred.nfds = proto_reader_take_fds(&c->rd, fds, PROTO_MAX_FDS);
	c->cred.fds = fds;
	rep = engine_handle(s->e, &c->cred, req);
	for (int i = 0; i < c->cred.nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	c->cred.fds = NULL;
	c->cred.nfds = 0;
	if (proto_bool(rep, "ok", 0) && !strcmp(proto_str(req, "cmd", ""), "status"))
		add_connections(s, c, rep);
	cJSON_Delete(req);
	return rep;
}

/* Serve up to SRV_BURST of the client's requests, as far as its replies stay under the cap. */
static void conn_serve(struct srv *s, struct conn *c)
{
	uint64_t now = now_ns();

	for (int k = 0; k < SRV_BURST && pending(c) <= SRV_OUT_CAP; k++) {
		char *line = NULL;
		size_t len = 0;
		int r = proto_reader_next(&c->rd, &line, &len);
		cJSON *rep;

		if (r == 0) {
			c->lines = false;
			break;
		}
		if (r == 1 && !len)
			continue; /* an empty line carries descriptors for the next request */
		rep = answer(s, c, r, line, len);
		now = now_ns();
		r = conn_queue(c, rep, now);
		cJSON_Delete(rep);
		if (r) { /* no memory for the reply: the client would wait for it forever */
			conn_close(s, c);
			return;
		}
		c->active_ns = now;
		c->partial_ns = 0;
	}
	if (conn_flush(c, now)) {
		conn_close(s, c);
		return;
	}
	if (!c->lines && !proto_reader_partial(&c->rd))
		c->partial_ns = 0;
	else if (!c->lines && !c->partial_ns)
		c->partial_ns = now;
	if (c->eof && !c->lines && !pending(c)) {
		conn_close(s, c);
		return;
	}
	conn_watch(s, c);
}

/* Readiness of a client's socket: read or write, never wait. Requests are served later. */
static void conn_event(struct srv *s, struct conn *c, uint32_t events)
{
	uint64_t now = now_ns();

	if (events & (EPOLLERR | EPOLLHUP)) { /* gone both ways: its replies cannot arrive */
		conn_close(s, c);
		return;
	}
	if ((events & EPOLLOUT) && conn_flush(c, now)) {
		conn_close(s, c);
		return;
	}
	if ((events & EPOLLIN) && !c->lines) { /* more only once the requests held are served */
		int n = proto_reader_fill(&c->rd, c->fd);

		if (n > 0) {
			c->lines = true;
		} else if (n == -EPIPE) {
			c->eof = true;
		} else if (n < 0) {
			conn_close(s, c);
			return;
		}
	}
	if (c->eof && !c->lines && !pending(c)) {
		conn_close(s, c);
		return;
	}
	conn_watch(s, c);
}

/*
 * When a connection times out, and why: replies that do not move; part of a request without
 * the rest; nothing at all. A client with requests to serve waits for us, not we for it.
 */
enum expiry { EXP_NONE, EXP_WRITE, EXP_REQUEST, EXP_IDLE };

static uint64_t conn_deadline(const struct srv *s, const struct conn *c, enum expiry *why)
{
	if (pending(c)) {
		*why = EXP_WRITE;
		return c->progress_ns + s->o.write_s * NS_PER_S;
	}
	if (c->lines) {
		*why = EXP_NONE;
		return UINT64_MAX;
	}
	if (c->partial_ns) {
		*why = EXP_REQUEST;
		return c->partial_ns + s->o.request_s * NS_PER_S;
	}
	*why = EXP_IDLE;
	return c->active_ns + s->o.idle_s * NS_PER_S;
}

static void expire(struct srv *s)
{
	uint64_t now = now_ns();

	for (uint32_t i = 0; i < s->o.max_clients; i++) {
		struct conn *c = &s->conns[i];
		enum expiry why;
		char msg[128];

		if (c->fd < 0 || conn_deadline(s, c, &why) > now)
			continue;
		switch (why) {
		case EXP_WRITE:
			s->write_timeouts++;
			pr_debug("closing the connection of uid %u pid %d: %zu reply bytes unread for %u s",
				 c->cred.uid, c->cred.pid, pending(c), s->o.write_s);
			conn_close(s, c);
			break;
		case EXP_REQUEST:
			s->request_timeouts++;
			snprintf(msg, sizeof(msg),
				 "request incomplete after %u s: pcmond closed the connection",
				 s->o.request_s);
			conn_part(s, c, now, msg);
			break;
		case EXP_IDLE:
			s->idle_timeouts++;
			snprintf(msg, sizeof(msg), "no request for %u s: pcmond closed the idle connection",
				 s->o.idle_s);
			conn_part(s, c, now, msg);
			break;
		case EXP_NONE:
			break;
		}
	}
	if (s->accept_paused_ns && now >= s->accept_paused_ns) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = TAG_LISTEN };

		if (!epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev))
			s->accept_paused_ns = 0;
	}
}

/* How long the loop may sleep: until the next deadline. */
static int wait_ms(const struct srv *s)
{
	uint64_t next = s->accept_paused_ns ? s->accept_paused_ns : UINT64_MAX, now;

	for (uint32_t i = 0; i < s->o.max_clients; i++) {
		enum expiry why;

		if (s->conns[i].fd >= 0)
			next = MIN(next, conn_deadline(s, &s->conns[i], &why));
	}
	for (int i = 0; i < s->nwatch; i++) {
		int w = s->watch[i].timeout_ms ? s->watch[i].timeout_ms(s->watch[i].ctx) : -1;

		if (w >= 0)
			next = MIN(next, now_ns() + w * 1000000ULL);
	}
	if (next == UINT64_MAX)
		return -1;
	now = now_ns();
	return next <= now ? 0 : (int)MIN((next - now + 999999) / 1000000, 60 * 1000);
}

int srv_watch(struct srv *s, const struct srv_watch *w)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = TAG_WATCH };

	if (s->nwatch == SRV_MAX_WATCH)
		return -ENOSPC;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, w->fd, &ev))
		return -errno;
	s->watch[s->nwatch++] = *w;
	return 0;
}

/*
 * One turn of serving: clients in round robin from where the last turn stopped, each up to
 * SRV_BURST requests, until SRV_SLICE_MS is used. True when work is left for the next turn.
 */
static bool serve_turn(struct srv *s)
{
	uint64_t t0 = now_ns();
	uint32_t n = s->o.max_clients;
	bool left = false;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = (s->next + k) % n;
		struct conn *c = &s->conns[i];

		if (!has_work(c))
			continue;
		conn_serve(s, c);
		left |= has_work(c);
		if (now_ns() - t0 >= SRV_SLICE_MS * 1000000ULL) {
			s->next = (i + 1) % n;
			return true;
		}
	}
	return left;
}

/* ---- accepting */

/* NULL if @uid may have one more connection, else why not. */
static const char *admit(const struct srv *s, uid_t uid, char *why, size_t len)
{
	uint32_t users = s->o.max_clients - SRV_ROOT_RESERVE;

	if (s->nconns >= s->o.max_clients) {
		snprintf(why, len, "pcmond is busy (%u connections, the most it serves): try again later",
			 s->nconns);
		return why;
	}
	if (uid == 0)
		return NULL;
	if (conns_of(s, uid) >= s->o.per_user) {
		snprintf(why, len, "uid %u has %u connections to pcmond, the most per user: close one and try again",
			 uid, s->o.per_user);
		return why;
	}
	if (s->nonroot >= users) {
		snprintf(why, len, "pcmond is busy (%u connections; the last %u are kept for root): try again later",
			 s->nonroot, SRV_ROOT_RESERVE);
		return why;
	}
	return NULL;
}

/* One line saying why, and close. */
static void refuse(struct srv *s, int fd, uid_t uid, const char *why)
{
	cJSON *rep = proto_error(1, "%s", why);
	size_t n = 0;
	char *line = rep ? proto_format(rep, &n) : NULL, sink[4096];

	if (line && send(fd, line, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		pr_debug("cannot tell uid %u why it was refused: %s", uid, strerror(errno));
	/* read what the client sent already: the close then reads as an end, not a reset */
	for (int k = 0; k < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; k++)
		;
	close(fd);
	free(line);
	cJSON_Delete(rep);
	s->refused++;
	pr_debug("refused a connection of uid %u: %s", uid, why);
}

static void conn_open(struct srv *s, int fd, const struct ucred *cred)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct conn *c = NULL;

	for (uint32_t i = 0; i < s->o.max_clients && !c; i++)
		if (s->conns[i].fd < 0)
			c = &s->conns[i];
	if (!c) { /* admit() counted a free slot: cannot happen */
		close(fd);
		return;
	}
	ev.data.u32 = TAG_CONN0 + (c - s->conns);
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	*c = (struct conn){ .fd = fd, .watching = EPOLLIN, .active_ns = now_ns() };
	c->cred = (struct client){ .uid = cred->uid, .pid = cred->pid };
	proto_reader_init(&c->rd, PROTO_MAX_LINE);
	s->nconns++;
	if (cred->uid != 0)
		s->nonroot++;
}

static void on_accept(struct srv *s)
{
	for (int k = 0; k < SRV_ACCEPT_BURST; k++) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		char why[200];
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			       errno == ENOMEM)) {
			/* the connection waits in the backlog: look again in a second, not now */
			struct epoll_event ev = { .events = 0, .data.u32 = TAG_LISTEN };

			pr_warn("cannot accept a connection: %s (pausing 1 s)", strerror(errno));
			if (!epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev))
				s->accept_paused_ns = now_ns() + NS_PER_S;
			return;
		}
		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			close(fd);
			continue;
		}
		if (admit(s, cred.uid, why, sizeof(why)))
			refuse(s, fd, cred.uid, why);
		else
			conn_open(s, fd, &cred);
	}
}

/* ---- the loop */

int srv_run(struct srv *s)
{
	int nevs = s->o.max_clients + 3 + SRV_MAX_WATCH; /* every fd at once: none waits for the next turn */
	struct epoll_event *evs = calloc(nevs, sizeof(*evs));
	/* a first turn without waiting: called again after a reload, clients may have
	 * requests read and not yet served */
	bool busy = true;

	if (!evs)
		return -ENOMEM;
	for (;;) {
		int n = epoll_wait(s->epfd, evs, nevs, busy ? 0 : wait_ms(s));
		bool engine = busy, accept = false, reload = false;

		if (n < 0) {
			int r = -errno;

			if (r != -EINTR) {
				free(evs);
				return r;
			}
			n = 0;
		}
		/* the engine first, and in every turn while clients keep us busy: sampling and
		 * draining never wait behind requests */
		for (int i = 0; i < n; i++)
			engine |= evs[i].data.u32 == TAG_ENGINE;
		if (engine)
			engine_work(s->e);
		/* (their own events, or a deadline: each keeps its own time) */
		for (int i = 0; i < s->nwatch; i++)
			s->watch[i].work(s->watch[i].ctx);
		for (int i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u32;

			if (tag == TAG_LISTEN) {
				accept = true;
			} else if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				/* SIGHUP: this turn is finished first */
				while (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGHUP) {
						reload = true;
						continue;
					}
					pr_info("signal %u: stopping", si.ssi_signo);
					free(evs);
					return 0;
				}
			} else if (tag >= TAG_CONN0 && tag - TAG_CONN0 < s->o.max_clients) {
				struct conn *c = &s->conns[tag - TAG_CONN0];

				if (c->fd >= 0)
					conn_event(s, c, evs[i].events);
			}
		}
		if (accept) /* after the events: a slot freed and taken again gets none of them */
			on_accept(s);
		/* timeouts after the events, before serving: what a client sent or took while a
		 * long request of another held the loop counts for it, not against it */
		expire(s);
		busy = serve_turn(s);
		if (reload) {
			pr_info("SIGHUP: reloading");
			free(evs);
			return SRV_RELOAD;
		}
	}
}

void srv_close(struct srv *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; s->conns && i < s->o.max_clients; i++)
		if (s->conns[i].fd >= 0)
			conn_close(s, &s->conns[i]);
	free(s->conns);
	if (s->lfd >= 0) {
		close(s->lfd);
		if (!s->activated)
			unlink(s->path);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s);
}
