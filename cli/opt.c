// SPDX-License-Identifier: GPL-2.0-only
/*
 * The option parser: every command's table, walked (cli.h). getopt_long reads the command
 * line with one table made of every option of every command, so that an option of another
 * command is told apart from a misspelt one ("--pid is not an option of list" against
 * "unknown option"); the command's own table then says what the option does. Values are
 * checked by the engine, which names the option in its error (proto_field.opt): the CLI
 * only turns text into JSON.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "proto.h"
#include "util.h"

static int opt_json(struct cli *c, const char *val)
{
	(void)val;
	c->json = true;
	return 0;
}

static int opt_socket(struct cli *c, const char *val)
{
	c->socket = val;
	return 0;
}

static int opt_verbose(struct cli *c, const char *val)
{
	(void)c;
	(void)val;
	log_verbosity++;
	return 0;
}

static int opt_help(struct cli *c, const char *val)
{
	(void)c;
	(void)val;
	return OPT_HELP;
}

const struct opt global_opts[] = {
	{ "json", 0, NULL, OPT_CALL, NULL,
	  .help = "one JSON document on stdout (errors too: {\"error\": ...})", .fn = opt_json },
	{ "verbose", 'v', NULL, OPT_CALL, NULL, .help = "say more on stderr (twice: debug detail)",
	  .fn = opt_verbose },
	{ "socket", 0, "PATH", OPT_CALL, NULL,
	  .help = "pcmond's socket (or $PCMON_SOCKET; default " PCMON_DEFAULT_SOCKET ")",
	  .fn = opt_socket, .complete = COMPL_FILE },
	{ "help", 'h', NULL, OPT_CALL, NULL, .help = "the command's options", .fn = opt_help },
	OPT_TABLE_END,
};

const struct opt no_opts[] = { OPT_TABLE_END };

/* Is @name one of the space-separated @names? */
static bool named(const char *names, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = names; (p = strstr(p, name)); p += n)
		if ((p == names || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
	return false;
}

int opt_flatten(const struct opt *t, const char *only, const struct opt **out, int n)
{
	for (; t->kind != OPT_END; t++) {
		if (t->kind == OPT_INCLUDE) {
			n = opt_flatten(t->include, only ? only : t->only, out, n);
			continue;
		}
		if (only && !named(only, t->name))
			continue;
		if (n == OPT_MAX) { /* the tables are the program's: no user gets here */
			fprintf(stderr, "pcmon: more than %d options for one command\n", OPT_MAX);
			abort();
		}
		out[n++] = t;
	}
	return n;
}

/*
 * ---- getopt's table: every option of every command once, the global ones first. A long
 * option's code is its short letter, else 0x100 + its place here. (The short letters getopt
 * is given are the command's own: a letter of another command's is unknown.)
 */
#define ALL_MAX 160

static const struct opt *all[ALL_MAX];
static struct option longs[ALL_MAX + 1];
static int nall;

/* Two rows of one name disagree, or two names share a letter: the tables are wrong. */
static void all_check(const struct opt *a, const struct opt *b)
{
	bool same = !strcmp(a->name, b->name);

	if (same ? (!a->arg != !b->arg || a->ch != b->ch) : (a->ch && a->ch == b->ch)) {
		fprintf(stderr, "pcmon: the option tables disagree on --%s and --%s\n", a->name,
			b->name);
		abort();
	}
}

static void all_add(const struct opt *o)
{
	for (int i = 0; i < nall; i++) {
		all_check(all[i], o);
		if (!strcmp(all[i]->name, o->name))
			return;
	}
	if (nall == ALL_MAX) {
		fprintf(stderr, "pcmon: more than %d options\n", ALL_MAX);
		abort();
	}
	all[nall] = o;
	longs[nall] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL,
				       o->ch ? o->ch : 0x100 + nall };
	nall++;
}

const struct opt *const *opt_all(int *n)
{
	const struct opt *t[OPT_MAX];

	if (!nall) {
		for (int j = 0, k = opt_flatten(global_opts, NULL, t, 0); j < k; j++)
			all_add(t[j]);
		for (size_t i = 0; i < ncommands; i++)
			for (int j = 0, k = opt_flatten(commands[i].opts, NULL, t, 0); j < k; j++)
				all_add(t[j]);
	}
	*n = nall;
	return all;
}

static const struct opt *by_code(int code)
{
	if (code >= 0x100)
		return code - 0x100 < nall ? all[code - 0x100] : NULL;
	for (int i = 0; i < nall; i++)
		if (all[i]->ch == code)
			return all[i];
	return NULL;
}

/* ---- the request */

void req_set(cJSON *req, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(req, k))
		cJSON_ReplaceItemInObjectCaseSensitive(req, k, v);
	else
		cJSON_AddItemToObject(req, k, v);
}

void req_cmd(cJSON *req, const char *cmd)
{
	cJSON_ReplaceItemInObject(req, "cmd", cJSON_CreateString(cmd));
}

/* ---- parsing */

/* The command's own option of that name: its place in c->opts, or -1. */
static int own(const struct cli *c, const char *name)
{
	for (int i = 0; i < c->nopts; i++)
		if (!strcmp(c->opts[i]->name, name))
			return i;
	return -1;
}

bool cli_seen(const struct cli *c, const char *name)
{
	int i = own(c, name);

	return i >= 0 && c->seen[i];
}

/* Whether @val is one of the words of @arg ("a|b|c"); any value if @arg names no choices. */
static bool one_of(const char *arg, const char *val)
{
	size_t n = strlen(val);

	if (!arg || !strchr(arg, '|'))
		return true;
	for (const char *w = arg; w; w = strchr(w, '|') ? strchr(w, '|') + 1 : NULL)
		if (!strncmp(w, val, n) && (w[n] == '|' || !w[n]))
			return true;
	return false;
}

/* What option @o does with @val. 0, or the exit status. */
static int set(struct cli *c, const struct opt *o, const char *val)
{
	cJSON *arr;
	long v;

	switch (o->kind) {
	case OPT_TRUE:
	case OPT_FALSE:
		req_set(c->req, o->field, cJSON_CreateBool(o->kind == OPT_TRUE));
		return 0;
	case OPT_CONST:
		req_set(c->req, o->field, cJSON_CreateString(o->value));
		return 0;
	case OPT_STR:
		req_set(c->req, o->field, cJSON_CreateString(val));
		return 0;
	case OPT_NUM:
		/* text into a number; what numbers are allowed is the engine's to say */
		if (parse_whole(val, 0, 1L << 53, &v))
			return cli_fail(c, 2, "--%s %s: expected a whole number", o->name, val);
		req_set(c->req, o->field, cJSON_CreateNumber(v));
		return 0;
	case OPT_APPEND:
		arr = cJSON_GetObjectItemCaseSensitive(c->req, o->field);
		if (!arr)
			arr = cJSON_AddArrayToObject(c->req, o->field);
		cJSON_AddItemToArray(arr, cJSON_CreateString(val));
		return 0;
	case OPT_FLAG:
		*o->flag = true;
		return 0;
	case OPT_TEXT:
		/* the CLI's own values are used late (a listing after a run): checked now */
		if (!one_of(o->arg, val))
			return cli_fail(c, 2, "--%s %s: give one of %s", o->name, val, o->arg);
		*o->text = val;
		return 0;
	case OPT_CALL:
		return o->fn(c, val);
	case OPT_END:
	case OPT_INCLUDE:
		break;
	}
	return 0;
}

/* Option @code as getopt returned it, typed as @typed. */
static int option(struct cli *c, int code, const char *val, const char *typed)
{
	const struct opt *o = by_code(code);
	int i = o ? own(c, o->name) : -1;

	if (i < 0)
		return cli_fail(c, 2, "%s: %s is not an option of %s (see pcmon --help)", c->cmd->name,
			    typed, c->cmd->name);
	c->seen[i] = true;
	return set(c, c->opts[i], val);
}

/* The option as typed: the word before its value, when the value was a word of its own. */
static const char *typed(char **argv)
{
	return optarg && optind >= 2 && optarg == argv[optind - 1] ? argv[optind - 2]
								   : argv[optind - 1];
}

static int word(struct cli *c, char *w)
{
	if (c->cmd->words == WORDS_LIST) {
		c->words[c->nwords++] = w;
		return 0;
	}
	if (c->target)
		return cli_fail(c, 2, "%s: unexpected argument '%s'", c->cmd->name, w);
	c->target = w;
	return 0;
}

/*
 * Is --json among the options of this command line? Asked before parsing, so that every
 * error of the parse itself (one that comes before --json, too) is JSON. A first getopt
 * pass with the same option string sees the options exactly as the real one will.
 */
static bool json_asked(int argc, char **argv, const char *optstring)
{
	bool json = false;
	int code;

	optind = 0; /* full re-initialisation of GNU getopt */
	opterr = 0;
	while ((code = getopt_long(argc, argv, optstring, longs, NULL)) != -1) {
		const struct opt *o = by_code(code);

		json |= o && o->fn == opt_json;
	}
	return json;
}

/* Two options for one field: which one was meant is for the user to say. */
static int exclusions(const struct cli *c)
{
	for (int i = 0; i < c->nopts; i++) {
		const char *x = c->opts[i]->excludes;

		if (c->seen[i] && x && cli_seen(c, x))
			return cli_fail(c, 2, "--%s and --%s exclude each other: give one",
				    c->opts[i]->name, x);
	}
	return 0;
}

/*
 * getopt's option string for the command: run stops at the command ("+"), the others take
 * options anywhere up to "--" and their words in order ("-"); then the command's letters.
 */
static void optstring_of(const struct cli *c, char *s, size_t len)
{
	size_t n = snprintf(s, len, "%s", c->cmd->words == WORDS_CMD ? "+:" : "-:");

	for (int i = 0; i < c->nopts && n < len; i++)
		if (c->opts[i]->ch)
			n += snprintf(s + n, len - n, "%c%s", c->opts[i]->ch,
				      c->opts[i]->arg ? ":" : "");
}

int cli_parse(struct cli *c, const struct command *cmd, int argc, char **argv)
{
	char optstring[2 * OPT_MAX + 3];
	int code, r, n;

	opt_all(&n);
	c->cmd = cmd;
	c->nopts = opt_flatten(cmd->opts, NULL, c->opts, 0);
	c->nopts = opt_flatten(global_opts, NULL, c->opts, c->nopts);
	optstring_of(c, optstring, sizeof(optstring));
	c->json = json_asked(argc, argv, optstring);
	optind = 0;
	opterr = 0;
	c->req = proto_request(cmd->name);
	c->words = calloc(argc + 1, sizeof(*c->words));
	if (!c->req || !c->words)
		return cli_fail(c, 1, "out of memory");
	while ((code = getopt_long(argc, argv, optstring, longs, NULL)) != -1) {
		if (code == 1) /* a word */
			r = word(c, optarg);
		else if (code == ':')
			r = cli_fail(c, 2, "%s: %s needs a value (see pcmon --help)", cmd->name,
				 argv[optind - 1]);
		else if (code == '?')
			r = cli_fail(c, 2, "%s: unknown option '%s' (see pcmon --help)", cmd->name,
				 argv[optind - 1]);
		else
			r = option(c, code, optarg, typed(argv));
		if (r)
			return r;
	}
	if ((r = exclusions(c)))
		return r;
	if (optind < argc)
		c->argv_cmd = argv + optind;
	if (c->target)
		req_set(c->req, "target", cJSON_CreateString(c->target));
	return 0;
}

void cli_free(struct cli *c)
{
	cJSON_Delete(c->req);
	free(c->words);
	free(c->when_text);
}
