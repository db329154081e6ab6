// SPDX-License-Identifier: GPL-2.0-only
/*
 * The listing's options (--shallow, --deep, --top, --by, --calls, --sort, --lines,
 * --source-dir): what they add to a listing request and how the reply is printed. Shared by
 * list (cmd_list.c) and by the commands that end with a listing (run, count: session.c).
 */
#include <stdlib.h>

#include <string.h>

#include "cli.h"
#include "format.h"
#include "proto.h"
#include "util.h"

/* What the listing options asked. */
static struct {
	struct list_view view;
	bool calls;	   /* the call table alone */
	const char *sort;  /* the call table's order */
	const char *by;	   /* groups: process, comm, thread or cgroup */
	const char **dirs; /* --lines: where else sources are looked for */
	size_t ndirs;
} ls;

static int opt_top(struct cli *c, const char *val)
{
	if (parse_whole(val, 1, 1000000000, &ls.view.top))
		return cli_fail(c, 2, "--top %s: expected a whole number from 1 to 1000000000", val);
	return 0;
}

static int opt_source_dir(struct cli *c, const char *val)
{
	size_t cap = ls.ndirs;

	if (GROW(ls.dirs, cap, ls.ndirs + 1))
		return cli_fail(c, 1, "out of memory");
	ls.dirs[ls.ndirs++] = val;
	return 0;
}

const struct opt listing_opts[] = {
	{ "shallow", 0, NULL, OPT_FLAG, NULL, .help = "the table by shallow count alone",
	  .flag = &ls.view.shallow },
	{ "deep", 0, NULL, OPT_FLAG, NULL, .help = "the table by deep count alone",
	  .flag = &ls.view.deep },
	{ "top", 0, "N", OPT_CALL, NULL,
	  .help = "the first N rows of each table (and with --by, of groups)", .fn = opt_top },
	{ "by", 0, "process|comm|cgroup|thread", OPT_TEXT, NULL,
	  .help = "who took the samples: each one's share, then its procedures", .text = &ls.by },
	{ "calls", 0, NULL, OPT_FLAG, NULL, .help = "the call table alone", .flag = &ls.calls },
	{ "alloc", 0, NULL, OPT_TRUE, "alloc", .help = "the allocation table alone",
	  .excludes = "calls" },
	{ "sort", 0, "self|calls|total|avg|alloc|inuse", OPT_TEXT, NULL,
	  .help = "the call table's order (default self), or the allocation table's (default inuse)",
	  .text = &ls.sort },
	{ "lines", 0, "PROC", OPT_STR, "lines",
	  .help = "where in PROC the time goes, by source line" },
	{ "source-dir", 0, "DIR", OPT_CALL, NULL,
	  .help = "where else --lines looks for sources (repeatable)", .fn = opt_source_dir,
	  .complete = COMPL_DIR },
	OPT_TABLE_END,
};

void listing_req(cJSON *req)
{
	if (ls.calls)
		req_set(req, "calls", cJSON_CreateBool(1));
	if (ls.sort)
		req_set(req, "sort", cJSON_CreateString(ls.sort));
	if (ls.by)
		req_set(req, "by", cJSON_CreateString(ls.by));
}

const char *listing_by(void)
{
	return ls.by;
}

int listing_calls_only(struct cli *c)
{
	ls.calls = true;
	if (ls.sort && (!strcmp(ls.sort, "alloc") || !strcmp(ls.sort, "inuse")))
		return cli_fail(c, 2, "--sort %s: the call table sorts by self, calls, total or avg",
				ls.sort);
	return 0;
}

void listing_table(FILE *f, const cJSON *rep)
{
	if (cJSON_GetObjectItemCaseSensitive(rep, "lines"))
		fmt_lines(f, rep, ls.dirs, ls.ndirs);
	else
		fmt_listing(f, rep, &ls.view);
}
