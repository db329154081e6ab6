// SPDX-License-Identifier: GPL-2.0-only
/*
 * The options several commands share, defined once: the start request's (run, start, top
 * take them all, count a few: the OPTS of --help), the patterns a listing applies (list and
 * the exports; the start request stores them with its target) and what a target watches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "util.h"

static int opt_when_file(struct cli *c, const char *val)
{
	free(c->when_text);
	c->when_text = read_file(val, NULL);
	if (!c->when_text)
		return cli_fail(c, 2, "--when-file %s: %s", val, strerror(errno));
	req_set(c->req, "when", cJSON_CreateString(c->when_text));
	req_set(c->req, "when_from_file", cJSON_CreateBool(1));
	return 0;
}

const struct opt pattern_opts[] = {
	{ "when", 0, "P", OPT_STR, "when",
	  .help = "count only samples, calls, node hits whose stack matches P",
	  .excludes = "when-file" },
	{ "when-file", 0, "F", OPT_CALL, NULL, .help = "the WHEN pattern read from file F",
	  .fn = opt_when_file, .complete = COMPL_FILE },
	{ "critical", 0, "NAME=P", OPT_APPEND, "critical",
	  .help = "a critical section (repeatable)" },
	{ "ignore-case", 'i', NULL, OPT_TRUE, "icase", .help = "names in patterns ignore case" },
	{ "no-inline", 0, NULL, OPT_TRUE, "no_inline",
	  .help = "inlined functions count as their caller" },
	OPT_TABLE_END,
};

/* A tailed leg's profiles in place of the target's (docs/tail.md). */
const struct opt tail_opts[] = {
	{ "tail", 0, "LEG", OPT_NUM, "tail",
	  .help = "the samples of leg LEG's slow instances (started with --tail LEG)" },
	{ "body", 0, NULL, OPT_CONST, "tail_part", .value = "body",
	  .help = "with --tail: those of its other instances" },
	{ "abandoned", 0, NULL, OPT_CONST, "tail_part", .value = "abandoned",
	  .help = "with --tail: those of its abandoned instances", .excludes = "body" },
	OPT_TABLE_END,
};

/* A listing's window of time, answered from the target's time slices (docs/sampling.md). */
const struct opt window_opts[] = {
	{ "since", 0, "TIME", OPT_STR, "since",
	  .help = "samples from TIME on: -15m, +10s (after the start), 14:03, @EPOCH" },
	{ "until", 0, "TIME", OPT_STR, "until", .help = "samples before TIME (as --since)" },
	OPT_TABLE_END,
};

/* --node NODE: the next node of the request's table */
static int opt_node(struct cli *c, const char *val)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->req, "nodes"), *n;

	if (!arr)
		arr = cJSON_AddArrayToObject(c->req, "nodes");
	n = cJSON_CreateObject();
	cJSON_AddStringToObject(n, "spec", val);
	cJSON_AddItemToArray(arr, n);
	return 0;
}

int hist_arg_value(struct cli *c, const char *val, long *v)
{
	if (parse_whole(val, 0, 1L << 30, v))
		return cli_fail(c, 2, "--hist-arg %s: expected a whole number", val);
	return 0;
}

/* --hist-arg N: for the --node given last */
static int opt_hist_arg(struct cli *c, const char *val)
{
	cJSON *nodes = cJSON_GetObjectItemCaseSensitive(c->req, "nodes");
	cJSON *last = cJSON_GetArrayItem(nodes, cJSON_GetArraySize(nodes) - 1);
	long v;
	int r;

	if ((r = hist_arg_value(c, val, &v)))
		return r;
	if (!last)
		return cli_fail(c, 2, "--hist-arg %s: give it after the --node it applies to", val);
	req_set(last, "arg", cJSON_CreateNumber(v));
	return 0;
}

const struct opt sampling_opts[] = {
	{ "virtual", 0, NULL, OPT_CONST, "mode",
	  .help = "CPU time only (sampling's default)", .value = "virtual", .excludes = "real" },
	{ "real", 0, NULL, OPT_CONST, "mode",
	  .help = "wall time: off-CPU too, blocked or runnable (call counting's default)",
	  .value = "real" },
	{ "interval", 0, "USEC", OPT_NUM, "interval_us",
	  .help = "sampling interval (default 10000)" },
	OPT_ALL(pattern_opts),
	{ "kernel", 0, NULL, OPT_TRUE, "kernel", .help = "kernel frames too" },
	{ "unwind", 0, "METHOD", OPT_STR, "unwind", .help = "how user stacks are walked" },
	{ "no-python", 0, NULL, OPT_TRUE, "no_python",
	  .help = "CPython processes list their interpreter's C frames (docs/python.md)" },
	{ "no-java", 0, NULL, OPT_TRUE, "no_java",
	  .help = "HotSpot JVMs list their native frames only (docs/java.md)" },
	{ "no-children", 0, NULL, OPT_FALSE, "children",
	  .help = "processes started later are not watched" },
	{ "no-sample", 0, NULL, OPT_TRUE, "no_sample",
	  .help = "no sampling instrument (docs/sampling.md)" },
	{ "count", 0, "PATTERN", OPT_APPEND, "count",
	  .help = "count calls of the procedures PATTERN names (repeatable)" },
	{ "max-probes", 0, "N", OPT_NUM, "max_probes",
	  .help = "refuse patterns naming more than N procedures (default 1000)" },
	{ "alloc", 0, NULL, OPT_TRUE, "alloc",
	  .help = "watch allocations: sampled by bytes, live until freed (docs/alloc.md)" },
	{ "alloc-rate", 0, "BYTES", OPT_NUM, "alloc_rate",
	  .help = "mean bytes allocated between samples (default 524288)" },
	{ "alloc-functions", 0, "ROLE=NAME,...", OPT_STR, "alloc_functions",
	  .help = "another allocator's functions in place of glibc's (malloc=je_malloc,free=je_free)" },
	{ "node", 0, "NODE", OPT_CALL, NULL,
	  .help = "a probe node: PROC, PROC%return, PROC+0xOFF, FILE:LINE, provider:name (repeatable)",
	  .fn = opt_node },
	{ "hist-arg", 0, "N", OPT_CALL, NULL,
	  .help = "the --node before it records integer argument N (0-5)", .fn = opt_hist_arg },
	{ "leg", 0, "FROM:TO", OPT_APPEND, "legs",
	  .help = "a leg between two nodes (numbers, or '*')" },
	{ "hist", 0, "HIST", OPT_APPEND, "hists",
	  .help = "node:ID|leg:ID,linear,BUCKETS,SCALE,BASE or node:ID|leg:ID,log" },
	{ "track", 0, "none|successor|all", OPT_STR, "track",
	  .help = "which node hits start a leg (default all)" },
	{ "add", 0, "none|successor", OPT_STR, "add",
	  .help = "add the leg from a thread's last node (default none)" },
	{ "tail", 0, "LEG[:THRESHOLD]", OPT_APPEND, "tails",
	  .help = "profile leg LEG's instances slower than THRESHOLD apart (5ms, p99: default)" },
	{ "name", 0, "NAME", OPT_STR, "name", .help = "the target's name" },
	{ "slices", 0, "LEN[,LEN@AGE]...", OPT_STR, "slices",
	  .help = "time slices, coarser with age (default 10s,1m@1h,10m@1d)" },
	{ "slice-memory", 0, "KIB", OPT_NUM, "slice_kib",
	  .help = "the slices' memory; beyond it the oldest merge (default 4096)" },
	OPT_TABLE_END,
};

const struct opt watch_opts[] = {
	{ "pid", 0, "PID", OPT_NUM, "pid", .help = "watch process PID", .complete = COMPL_PID },
	{ "cgroup", 0, "DIR", OPT_STR, "cgroup", .help = "watch the processes of cgroup DIR",
	  .complete = COMPL_DIR },
	{ "all", 0, NULL, OPT_TRUE, "all", .help = "watch every process" },
	OPT_TABLE_END,
};
