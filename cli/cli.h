/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The command line's frame: every command declares its options in a table (struct opt);
 * one parser walks the tables (opt.c), and --help, each command's --help and the bash
 * completion are written from the same tables (help.c), so none of them can say something
 * the parser does not do. Each command lives in a cmd_*.c of its own; cli/pcmon.c holds
 * the command table and main().
 */
#ifndef PCMON_CLI_H
#define PCMON_CLI_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli;

/* What an option does with its value (or with its being there). */
enum opt_kind {
	OPT_END,	/* ends a table */
	OPT_INCLUDE,	/* the options of table .include (only those .only names, if set) */
	OPT_TRUE,	/* request .field := true */
	OPT_FALSE,	/* request .field := false */
	OPT_CONST,	/* request .field := the string .value */
	OPT_STR,	/* request .field := the value */
	OPT_NUM,	/* request .field := the value as a whole number (bounds: the engine's) */
	OPT_APPEND,	/* request .field: an array the value is appended to */
	OPT_FLAG,	/* *.flag := true: the CLI's own */
	OPT_TEXT,	/* *.text := the value: the CLI's own */
	OPT_CALL,	/* .fn(c, value): 0, or the exit status (OPT_HELP: print help) */
};

/* What the bash completion offers for an option's value (an .arg "a|b|c": those words). */
enum opt_compl { COMPL_NONE, COMPL_FILE, COMPL_DIR, COMPL_PID };

/*
 * One option of a command. A table row gives the first five members in order, then .help
 * and those that apply by name. An option of one name means the same to every command that
 * takes it (opt.c checks that its value and letter agree); it may set another field.
 */
struct opt {
	const char *name;	/* --NAME */
	char ch;		/* -CH is the same option; 0: none */
	const char *arg;	/* its value as the help names it; NULL: it takes none */
	enum opt_kind kind;
	const char *field;	/* the request field it sets */
	const char *help;
	const char *value;	/* OPT_CONST */
	bool *flag;		/* OPT_FLAG */
	const char **text;	/* OPT_TEXT */
	int (*fn)(struct cli *c, const char *val);	/* OPT_CALL */
	const char *excludes;	/* the name of an option that may not be given with this one */
	enum opt_compl complete;
	const struct opt *include;	/* OPT_INCLUDE */
	const char *only;	/* OPT_INCLUDE: the names taken from it, space-separated */
};

#define OPT_ALL(t)	 { .kind = OPT_INCLUDE, .include = (t) }
#define OPT_SOME(t, names) { .kind = OPT_INCLUDE, .include = (t), .only = (names) }
#define OPT_TABLE_END	 { .kind = OPT_END }

/* An option's callback asked for help: not an exit status. */
#define OPT_HELP (-1)

/* The most options one command takes, its tables flattened, the global ones included. */
#define OPT_MAX 64

/* What a command does with the words that are not options. */
enum cmd_words {
	WORDS_TARGET,	/* one word is the TARGET; a second one is an error */
	WORDS_LIST,	/* every word, in order (count's patterns; node, leg, hist: add|del ...) */
	WORDS_CMD,	/* the options end at the first word: it and the rest are a command */
};

struct command {
	const char *name;
	int (*fn)(struct cli *c);
	const struct opt *opts;
	enum cmd_words words;
	/*
	 * Its words, and the options it needs, as the synopsis shows them after the others
	 * (an option named here is not listed again); where it says TARGET, the bash
	 * completion offers the targets' names.
	 */
	const char *usage;
	const char *help;	/* what it does: a line or a few */
};

/* The command table (pcmon.c). */
extern const struct command commands[];
extern const size_t ncommands;

/*
 * Tables several commands include (shared_opts.c; global_opts and no_opts: opt.c): the
 * options every command takes, those of none beyond them, the start request's (the OPTS
 * of --help), the patterns a listing applies, and what a target watches.
 */
extern const struct opt global_opts[], no_opts[];
extern const struct opt sampling_opts[], pattern_opts[], watch_opts[], window_opts[];
extern const struct opt tail_opts[];

/* A command line, parsed: what its command's function receives. */
struct cli {
	const struct command *cmd;
	cJSON *req;		/* the request its options built; "cmd" is the command's name */
	bool json;		/* --json: replies and errors are JSON on stdout */
	FILE *out;		/* where cli_show() prints replies: NULL, stdout */
	const char *socket;	/* --socket */
	const char *target;	/* WORDS_TARGET: the word, or NULL */
	char **words;		/* WORDS_LIST: the words */
	int nwords;
	char **argv_cmd;	/* the words after "--" (WORDS_CMD: from the first word), or NULL */
	/* the parser's: the command's options, flattened, and which were given */
	const struct opt *opts[OPT_MAX];
	bool seen[OPT_MAX];
	int nopts;
	char *when_text;	/* --when-file's contents */
};

/* opt.c: the parser. 0, OPT_HELP, or the exit status of a usage error (printed). */
int cli_parse(struct cli *c, const struct command *cmd, int argc, char **argv);
void cli_free(struct cli *c);
/* Was option --@name given? */
bool cli_seen(const struct cli *c, const char *name);
/* Every option of every command, one of each name, the global ones first: how many in @n. */
const struct opt *const *opt_all(int *n);
/* @t's options (only those @only names, if set) after the @n in @out: how many now. */
int opt_flatten(const struct opt *t, const char *only, const struct opt **out, int n);
/* --hist-arg's value, as node and --node take it. 0, or the exit status. */
int hist_arg_value(struct cli *c, const char *val, long *v);
/* Set request field @k to @v (a later option replaces an earlier one: one field, once). */
void req_set(cJSON *req, const char *k, cJSON *v);
/* The request goes to the engine as command @cmd (export asks "list", run "start" ...). */
void req_cmd(cJSON *req, const char *cmd);

/* help.c: what pcmon --help, pcmon CMD --help and pcmon --completion bash print. */
void help_usage(FILE *f);
void help_command(FILE *f, const struct command *cmd);
int help_completion(FILE *f, const char *shell);

/*
 * out.c: the one place errors are printed. One line on stderr, "pcmon: MESSAGE"; with
 * --json instead one JSON object on stdout, {"error": "MESSAGE"}, and nothing on stderr.
 * Returns @status.
 */
int cli_fail(const struct cli *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A reply: JSON as it is (without the envelope), or a table by @table; the exit status. */
int cli_show(const struct cli *c, cJSON *rep, void (*table)(FILE *, const cJSON *));

/* cmd_list.c: the listing's options and their effect, for list, run and count. */
extern const struct opt listing_opts[];
/* Add what the listing options ask to a list request (the call table alone, its order, the
 * groups). */
void listing_req(cJSON *req);
/* --by: what the samples are grouped by, NULL if not asked. */
const char *listing_by(void);
/* count: the call table alone (its --sort: one of its own columns); 0, or cli_fail()'s. */
int listing_calls_only(struct cli *c);
/* A list reply as the options ask: per line (--lines), or every section. */
void listing_table(FILE *f, const cJSON *rep);

/*
 * cmd_time.c: the listing of side @spec with its stacks, asked with the options of @base
 * (patterns, --since, --until): TARGET, TARGET@SINCE..UNTIL (either may be empty), or a
 * file written by pcmon save. 0, or the exit status (printed).
 */
int side_fetch(struct cli *c, const char *spec, const cJSON *base, cJSON **rep);

/* The commands. */
int cmd_run(struct cli *c);
int cmd_count(struct cli *c);
int cmd_top(struct cli *c);
int cmd_start(struct cli *c);
int cmd_target(struct cli *c);
int cmd_list(struct cli *c);
int cmd_tables(struct cli *c);
int cmd_profil(struct cli *c);
int cmd_export(struct cli *c);
int cmd_flamegraph(struct cli *c);
int cmd_edit(struct cli *c);
int cmd_targets(struct cli *c);
int cmd_status(struct cli *c);
int cmd_timeline(struct cli *c);
int cmd_save(struct cli *c);
int cmd_diff(struct cli *c);
/* diff --alloc (cmd_adiff.c): @value "inuse" (NULL) or "alloc"; @top rows (0: all). */
int cmd_diff_alloc(struct cli *c, const char *value, int top);

/* Each command's options (a command with none beyond the global ones has no_opts). */
extern const struct opt run_opts[], count_opts[], top_opts[], start_opts[];
extern const struct opt list_opts[], profil_opts[], export_opts[], flamegraph_opts[];
extern const struct opt tables_opts[];
extern const struct opt node_opts[], hist_opts[];
extern const struct opt timeline_opts[], save_opts[], diff_opts[];

#endif
