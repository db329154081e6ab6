/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * srv_: pcmond's socket server. One event loop: the listening socket, each client, the
 * engine's work fd and the signals that end the daemon. Requests are validated (size,
 * protocol version, command) before dispatch and answered with a status; a client can
 * never stop the loop.
 */
#ifndef PCMON_SRV_H
#define PCMON_SRV_H

struct engine;
struct srv;

int srv_open(const char *path, struct engine *e, struct srv **out, char *err, size_t errlen);
/* Serve until SIGTERM/SIGINT; 0 on a clean stop. */
int srv_run(struct srv *s);
void srv_close(struct srv *s);

#endif
