// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon top [OPTS] (--pid PID | --cgroup DIR | --all): a target of its own, shown live by
 * top.c until q, then forgotten.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "proto.h"
#include "session.h"
#include "top.h"
#include "util.h"

static struct {
	double delay; /* seconds between refreshes; 0: 1 */
	bool batch;
	long iterations;
	bool deep;
} top;

static int opt_delay(struct cli *c, const char *val)
{
	char *end;

	top.delay = strtod(val, &end);
	if (*end || !(top.delay >= 0.1 && top.delay <= 3600))
		return cli_fail(c, 2, "--delay %s: expected seconds from 0.1 to 3600", val);
	return 0;
}

static int opt_iterations(struct cli *c, const char *val)
{
	if (parse_whole(val, 1, 1000000, &top.iterations))
		return cli_fail(c, 2, "--iterations %s: expected a whole number from 1 to 1000000",
			    val);
	return 0;
}

/* top(1)'s short options */
const struct opt top_opts[] = {
	OPT_ALL(sampling_opts),
	OPT_ALL(watch_opts),
	{ "delay", 'd', "SECS", OPT_CALL, NULL,
	  .help = "seconds between refreshes, 0.1 to 3600 (default 1)", .fn = opt_delay },
	{ "batch", 'b', NULL, OPT_FLAG, NULL, .help = "the screens as text on stdout",
	  .flag = &top.batch },
	{ "iterations", 'n', "N", OPT_CALL, NULL,
	  .help = "refreshes before it ends (default: until q)", .fn = opt_iterations },
	{ "deep", 0, NULL, OPT_FLAG, NULL, .help = "sorted by deep count at first",
	  .flag = &top.deep },
	OPT_SOME(listing_opts, "by"),
	OPT_TABLE_END,
};

static cJSON *top_call(void *ctx, const cJSON *req)
{
	return session_call(ctx, req);
}

static void top_work(void *ctx)
{
	engine_work(((struct session *)ctx)->e);
}

static int top_view(struct session *s, const char *id, void *ctx)
{
	struct top_io io = { .ctx = s,
			     .call = top_call,
			     .work = top_work,
			     .engine_fd = s->e ? engine_fd(s->e) : -1,
			     .target = id,
			     .delay = top.delay ? top.delay : 1,
			     .batch = top.batch,
			     .iterations = top.iterations,
			     .deep = top.deep,
			     .by = listing_by() };
	char err[512];
	int r = top_run(&io, err, sizeof(err));

	if (r)
		cli_fail(ctx, r, "top: %s", err);
	return r;
}

int cmd_top(struct cli *c)
{
	struct run r = { .view = top_view, .ctx = c, .fd = -1, .eo = { .debuginfod = "" } };
	int st;

	if (c->target)
		return cli_fail(c, 2,
			    "top: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    c->target);
	if (cli_seen(c, "pid") + cli_seen(c, "cgroup") + cli_seen(c, "all") != 1)
		return cli_fail(c, 2, "top: give exactly one of --pid PID, --cgroup DIR, --all");
	if (!top.batch && !isatty(STDOUT_FILENO))
		return cli_fail(c, 2, "top: stdout is not a terminal: use -b for text");
	if (cli_seen(c, "cgroup") &&
	    (st = open_for_request(c, "--cgroup", proto_str(c->req, "cgroup", ""),
				   O_RDONLY | O_DIRECTORY, "cgroup_fd", 0, &r.fd)))
		return st;
	if (!cli_seen(c, "kernel")) /* k switches kernel frames on and off: collect them */
		req_set(c->req, "kernel", cJSON_CreateBool(1));
	if (!proto_str(c->req, "name", NULL))
		req_set(c->req, "name", cJSON_CreateString("top"));
	return session_run(c, &r);
}
