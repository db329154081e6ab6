/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Talking to an engine: pcmond's over its socket, or one of our own (cli/engine_load.c),
 * and the one profiling run that run, count and top share: a target from their request,
 * started, watched until it is over, its listing printed, forgotten if it was ours alone.
 */
#ifndef PCMON_SESSION_H
#define PCMON_SESSION_H

#include <cJSON.h>
#include <stdbool.h>

#include "cli.h"
#include "engine.h"

struct session {
	int fd;			/* connection to pcmond, or -1 */
	struct engine *e;	/* an engine of our own, or NULL */
};

/* pcmond's socket: --socket, else $PCMON_SOCKET, else the default. */
const char *socket_path(const struct cli *c);
/* pcmond, or an error saying how to start it. 0, or the exit status. */
int session_connect(const struct cli *c, struct session *s);
void session_close(struct session *s);
/* Send @req with @nfds descriptors (closed here, whatever happens); never NULL. */
cJSON *session_call_fds(struct session *s, const cJSON *req, int *fds, int nfds);
cJSON *session_call(struct session *s, const cJSON *req);

/* Send the command's request to pcmond and print the reply with @table: the exit status. */
int cli_ask(struct cli *c, void (*table)(FILE *, const cJSON *));

/*
 * Open the path option @opt names with our own rights, and name the descriptor in the
 * request's @field as @index: pcmond opens no path on a user's behalf. 0, or the status.
 */
int open_for_request(struct cli *c, const char *opt, const char *path, int flags,
		     const char *field, int index, int *fd);

/* A profiling run of c->req. What it watches until it is over is one of: */
struct run {
	char **argv;		/* a command, launched and held until the target is on... */
	int pid;		/* ...a process, until it exits, @duration seconds or ^C... */
	double duration;
	/* ...or whatever a live view shows, until it returns (its exit status) */
	int (*view)(struct session *s, const char *id, void *ctx);
	void *ctx;
	bool keep;		/* the target stays after its listing (pcmond's: list it again) */
	struct engine_opts eo;	/* an engine of our own, when pcmond does not answer */
	bool eo_given;		/* the user chose eo's settings: say that pcmond has its own */
	int fd;			/* sent with the start request as descriptor 0, or -1; closed */
	const char *output;	/* -o: the listing's file (else stdout, or stderr: session.c) */
	int exec_fd;		/* the launched command's exec: an errno comes if it failed */
};

/*
 * Connect to pcmond or run an engine of our own, start the target, watch, then stop it and
 * print its listing (not after a view), and drop it unless @keep. The exit status: a
 * launched command's own, when all went well.
 */
int session_run(struct cli *c, struct run *r);

#endif
