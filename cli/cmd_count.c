// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon count PATTERN... (--pid PID [--duration S] | -- CMD): a target with call counting
 * only (docs/count.md), in the foreground: the call table when the command exits, at
 * --duration, or at ^C.
 */
#include <stdlib.h>

#include "cli.h"
#include "proto.h"
#include "session.h"

static double duration; /* --pid: how long; 0: until the process exits or ^C */
static const char *output;	/* -o */

static int opt_duration(struct cli *c, const char *val)
{
	char *end;

	duration = strtod(val, &end);
	if (*end || !(duration > 0))
		return cli_fail(c, 2, "--duration %s: expected a number of seconds", val);
	return 0;
}

const struct opt count_opts[] = {
	OPT_SOME(sampling_opts, "virtual real ignore-case max-probes"),
	OPT_SOME(pattern_opts, "when when-file"),
	OPT_SOME(watch_opts, "pid"),
	{ "duration", 0, "SECS", OPT_CALL, NULL,
	  .help = "with --pid: count this long (default: until it exits)", .fn = opt_duration },
	OPT_SOME(listing_opts, "sort"),
	{ "output", 'o', "FILE", OPT_TEXT, NULL,
	  .help = "the table into FILE (default: stdout if a terminal or --pid, else stderr)",
	  .text = &output, .complete = COMPL_FILE },
	OPT_TABLE_END,
};

int cmd_count(struct cli *c)
{
	struct run r = { .fd = -1, .eo = { .debuginfod = "" }, .duration = duration, .output = output };
	cJSON *pats = NULL;

	if (!!c->argv_cmd + cli_seen(c, "pid") != 1)
		return cli_fail(c, 2, "count: give --pid PID or -- CMD [ARGS]");
	if (c->argv_cmd && duration)
		return cli_fail(c, 2, "count: --duration goes with --pid (a command is counted until it exits)");
	for (int i = 0; i < c->nwords; i++) {
		if (!pats)
			pats = cJSON_AddArrayToObject(c->req, "count");
		cJSON_AddItemToArray(pats, cJSON_CreateString(c->words[i]));
	}
	if (!pats)
		return cli_fail(c, 2, "count: give at least one procedure pattern (see pcmon --help)");
	req_set(c->req, "no_sample", cJSON_CreateBool(1));
	if (listing_calls_only(c))
		return 2; /* (said) */
	/* a command or a process, counted in the foreground: its target is gone with the table */
	r.argv = c->argv_cmd;
	r.pid = proto_num(c->req, "pid", 0);
	return session_run(c, &r);
}
