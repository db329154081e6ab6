/* SPDX-License-Identifier: GPL-2.0-only */
/* pcmon top: a live view of a target (top.c). */
#ifndef PCMON_TOP_H
#define PCMON_TOP_H

#include <cJSON.h>
#include <stdbool.h>

struct top_io {
	void *ctx;
	cJSON *(*call)(void *ctx, const cJSON *req);	/* a request to the engine */
	int engine_fd;		/* the embedded engine's fd to serve, or -1 */
	void (*work)(void *ctx);
	const char *target;	/* its id */
	double delay;		/* seconds between refreshes */
	bool batch;		/* text on stdout, no terminal */
	long iterations;	/* refreshes before it ends, 0: until q or a signal */
	bool deep;		/* sorted by deep count at first */
	const char *by;		/* --by: the procedures of each group, NULL: of all */
};

struct top_state {
	bool deep;		/* sorted by deep count, else shallow */
	bool frozen;		/* the screen is not refreshed (sampling goes on) */
	bool no_kernel;		/* kernel-mode samples charged to their system call's site */
};

/* 0, or 1 with the reason in @err. */
int top_run(struct top_io *io, char *err, size_t errlen);

#endif
