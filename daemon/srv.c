// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine.h"
#include "proto.h"
#include "srv.h"
#include "util.h"

#define SRV_MAX_CLIENTS 64

struct conn {
	int fd;
	struct client cred;
	struct proto_reader rd;
};

struct srv {
	char path[108];
	int lfd, epfd, sigfd;
	struct engine *e;
	struct conn conns[SRV_MAX_CLIENTS];
};

/* epoll data: small integers for our own fds, conn index + 16 for clients */
enum { TAG_LISTEN = 1, TAG_SIGNAL, TAG_ENGINE, TAG_CONN0 = 16 };

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

int srv_open(const char *path, struct engine *e, struct srv **out, char *err, size_t errlen)
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
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		s->conns[i].fd = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	strcpy(sa.sun_path, path);

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
	    listen(s->lfd, 16)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(-r));
		goto fail;
	}
	/* group pcmon may talk to the daemon; the engine checks what each user may do */
	gr = getgrnam("pcmon");
	if (gr && chown(path, 0, gr->gr_gid))
		pr_warn("cannot give %s to group pcmon: %s", path, strerror(errno));
	chmod(path, 0660);

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

static void conn_close(struct srv *s, struct conn *c)
{
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	proto_reader_free(&c->rd);
}

static void on_accept(struct srv *s)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, i;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		close(fd);
		return;
	}
	for (i = 0; i < SRV_MAX_CLIENTS && s->conns[i].fd >= 0; i++)
		;
	if (i == SRV_MAX_CLIENTS) {
		cJSON *rep = proto_error(1, "pcmond is busy (%d clients): try again", SRV_MAX_CLIENTS);

		proto_send(fd, rep);
		cJSON_Delete(rep);
		close(fd);
		return;
	}
	s->conns[i].fd = fd;
	s->conns[i].cred = (struct client){ .uid = cred.uid, .pid = cred.pid };
	proto_reader_init(&s->conns[i].rd, PROTO_MAX_LINE);
	ev.data.u32 = TAG_CONN0 + i;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void on_conn(struct srv *s, struct conn *c)
{
	char *line, err[256];
	size_t len;
	int r;

	while ((r = proto_read_line(&c->rd, c->fd, &line, &len)) != 0) {
		cJSON *req, *rep;

		int fds[PROTO_MAX_FDS];

		if (r == -EMSGSIZE) {
			rep = proto_error(2, "request too long (at most %d bytes)", PROTO_MAX_LINE);
		} else if (r < 0) {
			conn_close(s, c);
			return;
		} else if (!len) {
			continue; /* carries descriptors for the next request: no reply */
		} else if (!(req = proto_parse_request(line, len, err, sizeof(err)))) {
			rep = proto_error(2, "%s", err);
		} else {
			c->cred.nfds = proto_reader_take_fds(&c->rd, fds, PROTO_MAX_FDS);
			c->cred.fds = fds;
			rep = engine_handle(s->e, &c->cred, req);
			cJSON_Delete(req);
			for (int i = 0; i < c->cred.nfds; i++)
				if (fds[i] >= 0)
					close(fds[i]);
			c->cred.fds = NULL;
			c->cred.nfds = 0;
		}
		r = rep ? proto_send(c->fd, rep) : -ENOMEM;
		cJSON_Delete(rep);
		if (r) {
			conn_close(s, c);
			return;
		}
	}
}

int srv_run(struct srv *s)
{
	struct epoll_event evs[16];

	for (;;) {
		int n = epoll_wait(s->epfd, evs, 16, -1);

		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u32;

			if (tag == TAG_LISTEN) {
				on_accept(s);
			} else if (tag == TAG_SIGNAL) {
				struct signalfd_siginfo si;

				if (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
					pr_info("signal %u: stopping", si.ssi_signo);
					return 0;
				}
			} else if (tag == TAG_ENGINE) {
				engine_work(s->e);
			} else if (tag - TAG_CONN0 < SRV_MAX_CLIENTS) {
				struct conn *c = &s->conns[tag - TAG_CONN0];

				if (c->fd >= 0)
					on_conn(s, c);
			}
		}
	}
}

void srv_close(struct srv *s)
{
	if (!s)
		return;
	for (int i = 0; i < SRV_MAX_CLIENTS; i++)
		if (s->conns[i].fd >= 0)
			conn_close(s, &s->conns[i]);
	if (s->lfd >= 0) {
		close(s->lfd);
		unlink(s->path);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	free(s);
}
