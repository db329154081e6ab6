// SPDX-License-Identifier: GPL-2.0-only
/*
 * What pcmon says about its own command line, written from the option tables the parser
 * walks (cli.h): `pcmon --help`, `pcmon COMMAND --help` and the bash completion (`pcmon
 * --completion bash`, which make writes to the installed file). None of them is written by
 * hand, so none can offer an option the parser refuses or miss one it takes.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine.h"
#include "proto.h"
#include "util.h"

#define WIDTH  92 /* where a synopsis wraps */
#define INDENT 14 /* its continuation lines, and what a command does */
#define LEFT   28 /* an option's column in a list of options */

/* An option's value as the help names it: an enumeration's as the engine accepts them. */
static const char *arg_text(const struct opt *o)
{
	const struct proto_field *pf = NULL;

	if (o->arg && o->kind == OPT_STR && o->field)
		pf = engine_start_field(o->field);
	return pf && pf->type == PT_ENUM ? pf->values : o->arg;
}

/* "-i|--ignore-case", "--when P" */
static void opt_left(char *buf, size_t len, const struct opt *o)
{
	const char *arg = arg_text(o);
	char ch[4] = "";

	if (o->ch)
		snprintf(ch, sizeof(ch), "-%c|", o->ch);
	snprintf(buf, len, "%s--%s%s%s", ch, o->name, arg ? " " : "", arg ? arg : "");
}

static void opt_line(FILE *f, const struct opt *o)
{
	char left[96];

	opt_left(left, sizeof(left), o);
	if (strlen(left) > LEFT) /* its help on a line of its own, in the column */
		fprintf(f, "  %s\n  %-*s %s\n", left, LEFT, "", o->help ? o->help : "");
	else
		fprintf(f, "  %-*s %s\n", LEFT, left, o->help ? o->help : "");
}

/* Does @t include every option of @group (the OPTS of --help)? */
static bool takes_all(const struct opt *t, const struct opt *group)
{
	for (; t->kind != OPT_END; t++)
		if (t->kind == OPT_INCLUDE && t->include == group && !t->only)
			return true;
	return false;
}

static bool in(const struct opt *const *list, int n, const struct opt *o)
{
	for (int i = 0; i < n; i++)
		if (list[i] == o)
			return true;
	return false;
}

/* Does the command's usage spell out option --@name itself ("(--pid PID | --all)")? */
static bool in_usage(const char *usage, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = usage; (p = strstr(p, "--")); p += 2)
		if (!strncmp(p + 2, name, n) &&
		    !strchr("abcdefghijklmnopqrstuvwxyz-", p[2 + n] ? p[2 + n] : ' '))
			return true;
	return false;
}

/* A synopsis being written: it wraps at WIDTH, continuing at INDENT. */
struct line {
	FILE *f;
	int col;
	bool wrapped;
};

static void put(struct line *l, const char *item)
{
	int n = strlen(item);

	if (l->col + 1 + n > WIDTH && l->col > INDENT) {
		l->col = fprintf(l->f, "\n%*s", INDENT, "") - 1;
		l->wrapped = true;
	} else {
		fputc(' ', l->f);
		l->col++;
	}
	l->col += fprintf(l->f, "%s", item);
}

/* Its options (an exclusive pair as one: [--when P|--when-file F]), OPTS for the group. */
static void put_opts(struct line *l, const struct command *cmd)
{
	const struct opt *o[OPT_MAX], *group[OPT_MAX];
	int n = opt_flatten(cmd->opts, NULL, o, 0), ng = 0;
	bool done[OPT_MAX] = { false };
	char item[200], left[96];

	if (takes_all(cmd->opts, sampling_opts)) {
		ng = opt_flatten(sampling_opts, NULL, group, 0);
		put(l, "[OPTS]");
	}
	for (int i = 0; i < n; i++) {
		if (done[i] || in(group, ng, o[i]) || in_usage(cmd->usage, o[i]->name))
			continue;
		opt_left(left, sizeof(left), o[i]);
		snprintf(item, sizeof(item), "[%s", left);
		for (int j = i + 1; o[i]->excludes && j < n; j++) {
			if (strcmp(o[j]->name, o[i]->excludes))
				continue;
			opt_left(left, sizeof(left), o[j]);
			snprintf(item + strlen(item), sizeof(item) - strlen(item), "|%s", left);
			done[j] = true;
		}
		strcat(item, "]");
		put(l, item);
	}
}

/*
 * The usage, wrapped between its parts: not inside a group, "(--pid PID | --all)" or
 * "[ARGS]", nor after a "--".
 */
static void put_usage(struct line *l, const char *usage)
{
	char part[200];
	size_t n = 0;
	int depth = 0;

	for (const char *p = usage;; p++) {
		if (*p && (*p != ' ' || depth || (n == 2 && !strncmp(part, "--", 2)))) {
			depth += (*p == '(' || *p == '[') - (*p == ')' || *p == ']');
			if (n < sizeof(part) - 1)
				part[n++] = *p;
			continue;
		}
		part[n] = '\0';
		if (n)
			put(l, part);
		n = 0;
		if (!*p)
			break;
	}
}

/* "pcmon CMD [OPTS] [--opt ARG]... USAGE", then what it does. */
static void synopsis(FILE *f, const char *lead, const struct command *cmd)
{
	struct line l = { f, fprintf(f, "%spcmon %s", lead, cmd->name), false };
	const char *h = cmd->help, *nl;

	put_opts(&l, cmd);
	put_usage(&l, cmd->usage);
	/* a short one on the same line, as a table */
	nl = strchrnul(h, '\n');
	if (!l.wrapped && l.col + 3 + (nl - h) <= WIDTH) {
		fprintf(f, "   %.*s", (int)(nl - h), h);
		h = *nl ? nl + 1 : nl;
	}
	for (; *h; h = *nl ? nl + 1 : nl) {
		nl = strchrnul(h, '\n');
		fprintf(f, "\n%*s%.*s", INDENT, "", (int)(nl - h), h);
	}
	fputc('\n', f);
}

static void globals(FILE *f)
{
	fprintf(f, "\nEvery command takes:\n");
	for (const struct opt *o = global_opts; o->kind != OPT_END; o++)
		opt_line(f, o);
}

void help_usage(FILE *f)
{
	fprintf(f, "usage: pcmon COMMAND [ARGS]   (any unambiguous prefix of a command)\n\n");
	for (size_t i = 0; i < ncommands; i++)
		synopsis(f, "  ", &commands[i]);
	fprintf(f, "\nOPTS:\n");
	for (const struct opt *o = sampling_opts; o->kind != OPT_END; o++) {
		const struct opt *t[OPT_MAX];
		int n = o->kind == OPT_INCLUDE ? opt_flatten(o->include, o->only, t, 0) : 1;

		for (int i = 0; i < n; i++)
			opt_line(f, o->kind == OPT_INCLUDE ? t[i] : o);
	}
	globals(f);
	fprintf(f, "\npcmon COMMAND --help: the command's own options. See pcmon(1).\n");
}

/* The words of the sample listing, after the help of the commands that print one. */
static const char listing_terms[] =
	"The listing's words (docs/sampling.md):\n"
	"  VIRTUAL t=10000us  CPU time: a sample every t microseconds a thread runs (REAL: wall\n"
	"                     time, off-CPU too); t is the interval pcmon got\n"
	"  interrupts         samples taken; counted: those charged; not matching WHEN: those\n"
	"                     --when left out\n"
	"  shallow, deep      samples with the procedure running; with it anywhere on the stack\n"
	"                     (once a sample, however deep the recursion)\n"
	"  foreignPcs         samples whose pc is in no known procedure (JIT code, no symbols)\n"
	"  kernel-mode        samples taken while the thread was in the kernel\n"
	"  off-CPU blocked,   REAL: samples of the time threads waited, blocked (sleep, I/O,\n"
	"  runnable           locks) or runnable (preempted), in periods of t\n"
	"  lost               samples that could not be kept (each drop counted, by reason)\n"
	"  stacks cut short   walked short of their root: outer frames' deep counts are lower\n"
	"                     bounds (by reason)\n"
	"  ticks missed       timer ticks the kernel fired too late for and moved past: no\n"
	"                     sample stands for their time (shown when not 0)\n"
	"  critical sections  samples charged to a named section (--critical), or unwalkable:\n"
	"                     not even the innermost frame could be placed\n"
	"  kernel.[NAME]      a kernel thread (kworker, kswapd ...): no user stack, by nature\n"
	"  --by groups        GROUP NAME: N counted (P% of all), its processes; then its\n"
	"                     tables: % of the group's samples, %all of all of them\n";

/* Does a command of options @o print the sample listing? It takes the listing's --shallow. */
static bool prints_listing(const struct opt *const *o, int n)
{
	for (const struct opt *l = listing_opts; l->kind != OPT_END; l++)
		if (l->name && !strcmp(l->name, "shallow"))
			return in(o, n, l);
	return false;
}

void help_command(FILE *f, const struct command *cmd)
{
	const struct opt *o[OPT_MAX], *group[OPT_MAX];
	int n = opt_flatten(cmd->opts, NULL, o, 0), ng = 0;

	synopsis(f, "usage: ", cmd);
	if (takes_all(cmd->opts, sampling_opts))
		ng = opt_flatten(sampling_opts, NULL, group, 0);
	if (n > ng)
		fprintf(f, "\n");
	for (int i = 0; i < n; i++)
		if (!in(group, ng, o[i]))
			opt_line(f, o[i]);
	if (ng) {
		fprintf(f, "\nOPTS:\n");
		for (int i = 0; i < ng; i++)
			opt_line(f, group[i]);
	}
	if (prints_listing(o, n))
		fprintf(f, "\n%s", listing_terms);
	globals(f);
}

/* ---- bash completion */

/* An .arg of lowercase words between '|' is an enumeration: those words, space-separated. */
static bool enum_words(const struct opt *o, char *buf, size_t len)
{
	const char *arg = arg_text(o);

	if (!arg || !strchr(arg, '|') || strspn(arg, "abcdefghijklmnopqrstuvwxyz|") != strlen(arg))
		return false;
	snprintf(buf, len, "%s", arg);
	for (char *p = buf; (p = strchr(p, '|'));)
		*p = ' ';
	return true;
}

/* An option's names as a case pattern: "--output|-o". */
static void case_names(FILE *f, const struct opt *o, bool first)
{
	fprintf(f, "%s--%s", first ? "" : "|", o->name);
	if (o->ch)
		fprintf(f, "|-%c", o->ch);
}

/* What the value of each option completes to (by the word before it): nothing, at least. */
static void compl_values(FILE *f)
{
	static const char *const how[] = {
		[COMPL_FILE] = "compgen -f -- \"$cur\"",
		[COMPL_DIR] = "compgen -d -- \"$cur\"",
		[COMPL_PID] = "compgen -W \"$(ps -eo pid= 2>/dev/null)\" -- \"$cur\"",
	};
	const struct opt *const *all;
	char words[256];
	int n, nothing = 0;

	all = opt_all(&n);
	fprintf(f, "\tcase $prev in\n");
	for (int i = 0; i < n; i++) {
		const struct opt *o = all[i];

		if (o->complete != COMPL_NONE) {
			fprintf(f, "\t");
			case_names(f, o, true);
			fprintf(f, ")\n\t\tCOMPREPLY=($(%s))\n\t\treturn ;;\n", how[o->complete]);
		} else if (enum_words(o, words, sizeof(words))) {
			fprintf(f, "\t");
			case_names(f, o, true);
			fprintf(f,
				")\n\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
				"\t\treturn ;;\n",
				words);
		}
	}
	for (int i = 0; i < n; i++) {
		if (!all[i]->arg || all[i]->complete != COMPL_NONE ||
		    enum_words(all[i], words, sizeof(words)))
			continue;
		if (!nothing++)
			fprintf(f, "\t");
		case_names(f, all[i], nothing == 1);
	}
	if (nothing)
		fprintf(f, ")\n\t\treturn ;;\n");
	fprintf(f, "\tesac\n");
}

/* Each command's options, when the word begins with a dash. */
static void compl_options(FILE *f)
{
	fprintf(f, "\tif [[ $cur == -* ]]; then\n\t\tcase $cmd in\n");
	for (size_t i = 0; i < ncommands; i++) {
		const struct opt *o[OPT_MAX];
		int n = opt_flatten(commands[i].opts, NULL, o, 0);

		n = opt_flatten(global_opts, NULL, o, n);
		fprintf(f, "\t\t%s) words=\"", commands[i].name);
		for (int j = 0; j < n; j++)
			fprintf(f, "%s--%s", j ? " " : "", o[j]->name);
		fprintf(f, "\" ;;\n");
	}
	fprintf(f, "\t\tesac\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
		   "\t\treturn\n\tfi\n");
}

static void compl_names(FILE *f, bool target_only)
{
	for (size_t i = 0, n = 0; i < ncommands; i++)
		if (!target_only || strstr(commands[i].usage, "TARGET"))
			fprintf(f, "%s%s", n++ ? (target_only ? "|" : " ") : "", commands[i].name);
}

int help_completion(FILE *f, const char *shell)
{
	if (strcmp(shell, "bash"))
		return cli_fail(NULL, 2, "--completion %s: the shells are: bash", shell);
	fprintf(f,
		"# SPDX-License-Identifier: GPL-2.0-only\n"
		"# bash completion for pcmon, written by `pcmon --completion bash` from its option\n"
		"# tables (make writes it; edit the tables, not this). Target names and ids come\n"
		"# from `pcmon targets --json` where a TARGET goes.\n"
		"_pcmon()\n{\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		"\tlocal cmds=\"");
	compl_names(f, false);
	fprintf(f, "\"\n\tlocal word=${COMP_WORDS[1],,} cmd= c n=0 words\n\n"
		   "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
		   "\t\tCOMPREPLY=($(compgen -W \"$cmds --help --version\" -- \"$cur\"))\n"
		   "\t\treturn\n\tfi\n"
		   "\t# the command as pcmon finds it: its name, or the one name it begins\n"
		   "\tfor c in $cmds; do\n"
		   "\t\tif [ \"$c\" = \"$word\" ]; then cmd=$c; n=1; break; fi\n"
		   "\t\tcase $c in \"$word\"*) cmd=$c; n=$((n + 1)) ;; esac\n"
		   "\tdone\n"
		   "\t[ \"$n\" -eq 1 ] || return\n");
	compl_values(f);
	compl_options(f);
	fprintf(f, "\tcase $cmd in\n\t");
	compl_names(f, true);
	fprintf(f,
		")\n"
		"\t\twords=$(pcmon targets --json 2>/dev/null |\n"
		"\t\t\tsed -n 's/^[[:space:]]*\"\\(id\\|name\\)\":[[:space:]]*\"\\{0,1\\}\\([^\",]*\\)\"\\{0,1\\},\\{0,1\\}$/\\2/p')\n"
		"\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\")) ;;\n"
		"\tesac\n}\n"
		"complete -F _pcmon pcmon\n");
	return 0;
}
