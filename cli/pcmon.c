// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon: the command line. It only speaks the protocol and formats replies; run, count and
 * top without a reachable pcmond load the engine and serve themselves (session.c).
 *
 * This file is the command table and main(): each command is a cmd_*.c with its options
 * (cli.h); opt.c parses them, help.c writes --help and the bash completion from them.
 */
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "proto.h"
#include "util.h"

/* In this order a prefix is matched ("st" is ambiguous: start, stop, status). */
const struct command commands[] = {
	{ "run", cmd_run, run_opts, WORDS_CMD, "-- CMD [ARGS]",
	  "launch CMD watched from its first instruction, print LIST" },
	{ "start", cmd_start, start_opts, WORDS_TARGET, "(--pid PID | --cgroup DIR | --all)",
	  "start a target; prints its id" },
	{ "list", cmd_list, list_opts, WORDS_TARGET, "[TARGET]",
	  "the listing so far: every section (--calls: the call table alone;\n"
	  "--lines: where in PROC, by line)" },
	{ "count", cmd_count, count_opts, WORDS_LIST,
	  "PATTERN... (--pid PID [--duration SECS] | -- CMD [ARGS])",
	  "calls, self and self+children time of the procedures PATTERN names, in the\n"
	  "foreground" },
	{ "node", cmd_edit, node_opts, WORDS_LIST, "add TARGET NODE [--hist-arg N] | del TARGET ID",
	  "a probe node, while it runs" },
	{ "leg", cmd_edit, no_opts, WORDS_LIST, "add TARGET FROM TO | del TARGET ID | tail TARGET LEG [THRESHOLD]",
	  "a leg, while it runs" },
	{ "hist", cmd_edit, hist_opts, WORDS_LIST,
	  "add TARGET node|leg ID (--linear --buckets B --scale S --base B | --log)"
	  " | del TARGET node|leg ID",
	  "a histogram, while it runs" },
	{ "export", cmd_export, export_opts, WORDS_TARGET, "TARGET --format folded|pprof|json",
	  "the samples as stacks: folded (flamegraph.pl), pprof (go tool pprof), json" },
	{ "flamegraph", cmd_flamegraph, flamegraph_opts, WORDS_TARGET, "TARGET",
	  "an interactive SVG flame graph" },
	{ "timeline", cmd_timeline, timeline_opts, WORDS_TARGET, "TARGET",
	  "samples per time slice, of the target and its hottest procedures" },
	{ "save", cmd_save, save_opts, WORDS_LIST, "TARGET[@SINCE..UNTIL] FILE",
	  "the samples as a file that needs nothing else (for diff, export)" },
	{ "diff", cmd_diff, diff_opts, WORDS_LIST, "A B",
	  "what changed from A to B beyond sampling noise; each a TARGET,\n"
	  "TARGET@SINCE..UNTIL or a saved FILE" },
	{ "top", cmd_top, top_opts, WORDS_TARGET, "(--pid PID | --cgroup DIR | --all)",
	  "live hottest procedures; keys: s/d sort, space freeze, z zero, k kernel, q quit" },
	{ "profil", cmd_profil, profil_opts, WORDS_TARGET,
	  "TARGET --offset ADDR|MODULE+0xOFF|PROC --scale S", "profil(2)'s histogram" },
	{ "tables", cmd_tables, tables_opts, WORDS_TARGET, "TARGET",
	  "the node, leg and histogram tables of a target with nodes" },
	{ "stop", cmd_target, no_opts, WORDS_TARGET, "TARGET", "stop sampling; results kept" },
	{ "pause", cmd_target, no_opts, WORDS_TARGET, "TARGET", "stop counting for a while" },
	{ "resume", cmd_target, no_opts, WORDS_TARGET, "TARGET", "count again" },
	{ "zero", cmd_target, no_opts, WORDS_TARGET, "TARGET", "zero counts, keep settings" },
	{ "drop", cmd_target, no_opts, WORDS_TARGET, "TARGET",
	  "forget the target and its results" },
	{ "targets", cmd_targets, no_opts, WORDS_TARGET, "",
	  "every target: id, name, mode, state, samples, lost" },
	{ "status", cmd_status, no_opts, WORDS_TARGET, "",
	  "daemon version, uptime, BPF programs and their overhead" },
};

const size_t ncommands = ARRAY_SIZE(commands);

/* Before a command is known: any "--json" ahead of a "--". */
static bool json_anywhere(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

/*
 * The command @word names: its name in any case, or a prefix of exactly one name (a prefix
 * that fits two is an error naming both). 0, or the exit status.
 */
static int select_command(const struct cli *c, const char *word, const struct command **cmd)
{
	char matches[256] = "";
	int n = 0;

	for (size_t i = 0; i < ncommands; i++) {
		if (!strcasecmp(word, commands[i].name)) { /* an exact name always wins */
			*cmd = &commands[i];
			return 0;
		}
		if (!strncasecmp(word, commands[i].name, strlen(word))) {
			*cmd = &commands[i];
			n++;
			snprintf(matches + strlen(matches), sizeof(matches) - strlen(matches),
				 "%s%s", n > 1 ? ", " : "", commands[i].name);
		}
	}
	if (n == 0)
		return cli_fail(c, 2, "unknown command '%s' (see pcmon --help)", word);
	if (n > 1)
		return cli_fail(c, 2, "'%s' is ambiguous: it could be %s", word, matches);
	return 0;
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct cli c = { 0 };
	int r;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		help_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pcmon %s\n", PCMON_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--completion")) /* make writes the completion file with it */
		return help_completion(stdout, argc > 2 ? argv[2] : "");
	c.json = json_anywhere(argc, argv);
	if ((r = select_command(&c, argv[1], &cmd)))
		return r;
	r = cli_parse(&c, cmd, argc - 1, argv + 1);
	if (r == OPT_HELP) {
		help_command(stdout, cmd);
		r = 0;
	} else if (!r) {
		r = cmd->fn(&c);
	}
	cli_free(&c);
	return r;
}
