/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * srv_: pcmond's socket server. One event loop: the listening socket, each client, the
 * engine's work fd and the signals that end the daemon. Requests are validated (size,
 * protocol version, command) before dispatch and answered with a status; a client can
 * never stop the loop:
 *
 * - the loop never waits on a client: sockets are non-blocking, each client's replies wait
 *   in its own output buffer; a client with more than SRV_OUT_CAP unread bytes is not read
 *   from until it drains (backpressure), and is closed when its replies do not move for
 *   write_s seconds (it takes less than SRV_PROGRESS_BYTES of them, and not the last);
 * - a connection is closed after idle_s seconds without a request, or request_s seconds
 *   after part of a request came without the rest (both with a line saying why);
 * - a non-root user may hold per_user connections; users together max_clients -
 *   SRV_ROOT_RESERVE: the last slots are root's, so root can always get in;
 * - the engine is served first in every turn of the loop, and clients take turns: at most
 *   SRV_BURST requests each, and a turn ends after SRV_SLICE_MS, so a flood of requests
 *   delays neither draining nor the other clients.
 *
 * SIGTERM and SIGINT end the loop; SIGHUP returns from it for the caller to reload its
 * configuration (pcmond.conf), and the loop goes on where it was when called again.
 */
#ifndef PCMON_SRV_H
#define PCMON_SRV_H

#include <stddef.h>
#include <stdint.h>

#define SRV_DEFAULT_MAX_CLIENTS 64
#define SRV_DEFAULT_PER_USER 16
#define SRV_DEFAULT_IDLE_S 60
#define SRV_DEFAULT_REQUEST_S 10
#define SRV_DEFAULT_WRITE_S 10
#define SRV_ROOT_RESERVE 8		/* connections only root may use */
#define SRV_MIN_CLIENTS (2 * SRV_ROOT_RESERVE)
#define SRV_MAX_CLIENTS 4096
#define SRV_OUT_CAP (1 << 20)		/* unread reply bytes past which a client is not read */
#define SRV_PROGRESS_BYTES (64 << 10)	/* reply bytes a reader must take per write_s */
#define SRV_BURST 8			/* requests served per client per turn */
#define SRV_SLICE_MS 10			/* a turn of serving clients ends after this */

struct engine;
struct srv;

struct srv_opts {
	uint32_t max_clients;	/* connections in all, SRV_MIN_CLIENTS..SRV_MAX_CLIENTS (0: 64) */
	uint32_t per_user;	/* connections one non-root user may hold (0: 16, at most
				   max_clients - SRV_ROOT_RESERVE) */
	uint32_t idle_s;	/* close a connection silent this long (0: 60) */
	uint32_t request_s;	/* ... holding part of a request this long (0: 10) */
	uint32_t write_s;	/* ... whose replies did not move for this long (0: 10) */
	int listen_fd;		/* a socket already listening (systemd's socket activation), or 0:
				   make one at the path */
};

int srv_open(const char *path, struct engine *e, const struct srv_opts *o, struct srv **out,
	     char *err, size_t errlen);
/* What srv_run() returns when SIGHUP came: reload, then call srv_run() again. */
#define SRV_RELOAD 1

/*
 * Another source of work for the loop (pcmond's HTTP server, its pushes): @work runs in
 * every turn of the loop, which @fd being readable or @timeout_ms (NULL or -1: none)
 * being due starts. SRV_MAX_WATCH at most.
 */
#define SRV_MAX_WATCH 4
struct srv_watch {
	int fd;
	void (*work)(void *ctx);
	int (*timeout_ms)(void *ctx);
	void *ctx;
};
int srv_watch(struct srv *s, const struct srv_watch *w);

/* Serve until a signal: 0 on a clean stop (SIGTERM, SIGINT), SRV_RELOAD for SIGHUP, -errno. */
int srv_run(struct srv *s);
void srv_close(struct srv *s);

#endif
