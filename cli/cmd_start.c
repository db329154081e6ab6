// SPDX-License-Identifier: GPL-2.0-only
/*
 * A target's life in pcmond: pcmon start, and stop, pause, resume, zero, drop. (run, count
 * and top start a target of their own and see it through: session.c.)
 */
#include <fcntl.h>
#include <unistd.h>

#include "cli.h"
#include "proto.h"
#include "session.h"
#include "util.h"

const struct opt start_opts[] = {
	OPT_ALL(sampling_opts),
	OPT_ALL(watch_opts),
	{ "publish", 0, NULL, OPT_TRUE, "publish",
	  .help = "serve it over pcmond's HTTP server (root only: docs/fleet.md)" },
	{ "program", 0, "PATH", OPT_STR, "exe", .complete = COMPL_FILE,
	  .help = "with --cgroup or --all: the program file --node names procedures of" },
	OPT_TABLE_END,
};

/* pcmon start [OPTS] (--pid PID | --cgroup DIR | --all): prints the new target's id */
int cmd_start(struct cli *c)
{
	struct session s;
	cJSON *rep;
	int r = 0, fd[2], nfd = 0;
	char esc[256];

	if (c->target)
		return cli_fail(c, 2, "start: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    c->target);
	/* what pcmond is to look into, opened here with the caller's rights */
	if (cli_seen(c, "cgroup") &&
	    !(r = open_for_request(c, "--cgroup", proto_str(c->req, "cgroup", ""),
				   O_RDONLY | O_DIRECTORY, "cgroup_fd", nfd, &fd[nfd])))
		nfd++;
	if (!r && cli_seen(c, "program") &&
	    !(r = open_for_request(c, "--program", proto_str(c->req, "exe", ""), O_RDONLY,
				   "exe_fd", nfd, &fd[nfd])))
		nfd++;
	if (!r)
		r = session_connect(c, &s);
	if (r) {
		while (nfd)
			close(fd[--nfd]);
		return r;
	}
	rep = session_call_fds(&s, c->req, fd, nfd);
	r = cli_show(c, rep, NULL);
	if (!r && !c->json) {
		printf("%.0f\n", proto_num(rep, "id", 0));
		fprintf(stderr, "pcmon: started target %.0f \"%s\"", proto_num(rep, "id", 0),
			str_escape(proto_str(rep, "name", ""), esc, sizeof(esc)));
		/* what it carries: sampling's mode and interval, the allocations' rate */
		if (proto_str(rep, "mode", NULL))
			fprintf(stderr, ", %s t=%.0fus", proto_str(rep, "mode", ""),
				proto_num(rep, "interval_us", 0));
		if (cJSON_GetObjectItemCaseSensitive(rep, "alloc_rate"))
			fprintf(stderr, ", allocations sampled every %.0f bytes",
				proto_num(rep, "alloc_rate", 0));
		fputc('\n', stderr);
	}
	cJSON_Delete(rep);
	session_close(&s);
	return r;
}

/* pcmon stop|pause|resume|zero|drop TARGET: the request says it all */
int cmd_target(struct cli *c)
{
	if (!c->target)
		return cli_fail(c, 2, "%s: which target? give its id or name (see pcmon targets)",
			    c->cmd->name);
	return cli_ask(c, NULL);
}
