// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon: the command line. It only speaks the protocol and formats replies; `pcmon run`
 * without a reachable pcmond links the engine in and serves itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "export.h"
#include "format.h"
#include "proto.h"
#include "top.h"
#include "util.h"

/* Options; each command names the ones it takes (commands[].opts). */
#define O_VIRTUAL      (1ULL << 0)
#define O_REAL         (1ULL << 1)
#define O_INTERVAL     (1ULL << 2)
#define O_WHEN         (1ULL << 3)
#define O_WHEN_FILE    (1ULL << 4)
#define O_CRITICAL     (1ULL << 5)
#define O_KERNEL       (1ULL << 6)
#define O_UNWIND       (1ULL << 7)
#define O_NO_INLINE    (1ULL << 8)
#define O_NO_CHILDREN  (1ULL << 9)
#define O_NAME         (1ULL << 10)
#define O_ICASE        (1ULL << 11)
#define O_PID          (1ULL << 12)
#define O_CGROUP       (1ULL << 13)
#define O_ALL          (1ULL << 14)
#define O_SHALLOW      (1ULL << 15)
#define O_DEEP         (1ULL << 16)
#define O_TOP          (1ULL << 17)
#define O_LINES        (1ULL << 18)
#define O_DEBUGINFOD   (1ULL << 20)
#define O_CACHE_DIR    (1ULL << 21)
#define O_NO_SAMPLE    (1ULL << 22)
#define O_COUNT        (1ULL << 23)
#define O_MAX_PROBES   (1ULL << 24)
#define O_CALLS        (1ULL << 25)
#define O_SORT         (1ULL << 26)
#define O_DURATION     (1ULL << 27)
#define O_NODE         (1ULL << 28)
#define O_LEG          (1ULL << 29)
#define O_HIST         (1ULL << 30)
#define O_GLOBAL       (1ULL << 31)
#define O_LINEAR       (1ULL << 32)
#define O_LOG          (1ULL << 33)
#define O_BUCKETS      (1ULL << 34)
#define O_SCALE        (1ULL << 35)
#define O_BASE         (1ULL << 36)
#define O_HIST_ARG     (1ULL << 37)
#define O_FORMAT       (1ULL << 38)
#define O_OUTPUT       (1ULL << 39)
#define O_TITLE        (1ULL << 40)
#define O_DELAY        (1ULL << 41)
#define O_BATCH        (1ULL << 42)
#define O_ITERATIONS   (1ULL << 43)
#define O_OFFSET       (1ULL << 44)
#define O_BUFSIZ       (1ULL << 45)
#define O_SOURCE_DIR   (1ULL << 46)

#define O_SAMPLING (O_VIRTUAL | O_REAL | O_INTERVAL | O_WHEN | O_WHEN_FILE | O_CRITICAL | \
		    O_KERNEL | O_UNWIND | O_NO_INLINE | O_NO_CHILDREN | O_NAME | O_ICASE | \
		    O_NO_SAMPLE | O_COUNT | O_MAX_PROBES | O_NODE | O_HIST_ARG | O_LEG | O_HIST)
#define O_LISTING (O_SHALLOW | O_DEEP | O_TOP | O_WHEN | O_WHEN_FILE | O_CRITICAL | O_ICASE | \
		   O_NO_INLINE | O_CALLS | O_SORT | O_LINES | O_SOURCE_DIR)

/* Where an option's value goes. */
enum opt_kind {
	OK_LOCAL,	/* the CLI's own, or more than one field: parse_args() */
	OK_TRUE,	/* request field := true */
	OK_FALSE,	/* request field := false */
	OK_STR,		/* request field := the value */
	OK_NUM,		/* request field := the value as a whole number (bounds: the engine's) */
	OK_APPEND,	/* request field: an array the value is appended to */
};

/*
 * Every option of the command line, once: getopt's table, --help's OPTS and the request
 * fields come from here. Values are checked by the engine, which names the option in its
 * error (proto_field.opt); the CLI only turns text into JSON.
 */
static const struct opt {
	const char *name;
	int ch;			/* a short option where it has one; else a code above 255 */
	const char *arg;	/* its value in --help; NULL: it takes none */
	uint64_t bit;
	enum opt_kind kind;
	const char *field;
	const char *help;
} opts[] = {
	{ "virtual", 'V', NULL, O_VIRTUAL, OK_LOCAL, NULL, "count on-CPU time only (default)" },
	{ "real", 'R', NULL, O_REAL, OK_LOCAL, NULL, "count off-CPU time too (blocked, runnable)" },
	{ "interval", 't', "USEC", O_INTERVAL, OK_NUM, "interval_us", "sampling interval (default 10000)" },
	{ "when", 'w', "P", O_WHEN, OK_STR, "when", "count only samples whose stack matches P" },
	{ "when-file", 'W', "F", O_WHEN_FILE, OK_LOCAL, NULL, "the WHEN pattern read from file F" },
	{ "critical", 'c', "NAME=P", O_CRITICAL, OK_APPEND, "critical", "a critical section (repeatable)" },
	{ "kernel", 'k', NULL, O_KERNEL, OK_TRUE, "kernel", "kernel frames too" },
	{ "unwind", 'u', "METHOD", O_UNWIND, OK_STR, "unwind", "how user stacks are walked" },
	{ "no-inline", 'I', NULL, O_NO_INLINE, OK_TRUE, "no_inline", "inlined functions count as their caller" },
	{ "no-children", 'C', NULL, O_NO_CHILDREN, OK_FALSE, "children", "processes started later are not watched" },
	{ "no-sample", 'N', NULL, O_NO_SAMPLE, OK_TRUE, "no_sample", "no sampling instrument (docs/sampling.md)" },
	{ "count", 'x', "PATTERN", O_COUNT, OK_APPEND, "count", "count calls of the procedures PATTERN names (repeatable)" },
	{ "max-probes", 'M', "N", O_MAX_PROBES, OK_NUM, "max_probes", "refuse --count patterns naming more procedures (default 1000)" },
	{ "node", 'P', "NODE", O_NODE, OK_LOCAL, NULL, "a probe node: PROC, PROC%return, PROC+0xOFF, provider:name (repeatable)" },
	{ "hist-arg", 'H', "N", O_HIST_ARG, OK_LOCAL, NULL, "the --node before it records integer argument N (0-5)" },
	{ "leg", 'G', "FROM:TO", O_LEG, OK_APPEND, "legs", "a leg between two nodes (numbers, or '*')" },
	{ "hist", 'Y', "HIST", O_HIST, OK_APPEND, "hists", "node:ID|leg:ID,linear,BUCKETS,SCALE,BASE or node:ID|leg:ID,log" },
	{ "linear", 'e', NULL, O_LINEAR, OK_LOCAL, NULL, NULL },
	{ "log", 'f', NULL, O_LOG, OK_LOCAL, NULL, NULL },
	{ "buckets", 'b', "B", O_BUCKETS, OK_LOCAL, NULL, NULL },
	{ "scale", 'r', "S", O_SCALE, OK_LOCAL, NULL, NULL },
	{ "base", 'q', "B", O_BASE, OK_LOCAL, NULL, NULL },
	{ "track", 'Q', "none|successor|all", O_LEG, OK_STR, "track", "which node hits start a leg (default all)" },
	{ "add", 'Z', "none|successor", O_LEG, OK_STR, "add", "add the leg from a thread's last node (default none)" },
	{ "name", 'n', "NAME", O_NAME, OK_STR, "name", "the target's name" },
	{ "ignore-case", 'i', NULL, O_ICASE, OK_TRUE, "icase", "names in patterns ignore case" },
	{ "pid", 'p', "PID", O_PID, OK_NUM, "pid", NULL },
	{ "cgroup", 'g', "DIR", O_CGROUP, OK_STR, "cgroup", NULL },
	{ "all", 'a', NULL, O_ALL, OK_TRUE, "all", NULL },
	{ "shallow", 's', NULL, O_SHALLOW, OK_LOCAL, NULL, NULL },
	{ "deep", 'd', NULL, O_DEEP, OK_LOCAL, NULL, NULL },
	{ "top", 'T', "N", O_TOP, OK_LOCAL, NULL, NULL },
	{ "lines", 'L', "PROC", O_LINES, OK_LOCAL, NULL, NULL },
	{ "calls", 'A', NULL, O_CALLS, OK_LOCAL, NULL, NULL },
	{ "sort", 'O', "COLUMN", O_SORT, OK_LOCAL, NULL, NULL },
	{ "duration", 'U', "SECS", O_DURATION, OK_LOCAL, NULL, NULL },
	{ "json", 'j', NULL, O_GLOBAL, OK_LOCAL, NULL, NULL },
	{ "socket", 'S', "PATH", O_GLOBAL, OK_LOCAL, NULL, NULL },
	{ "verbose", 'v', NULL, O_GLOBAL, OK_LOCAL, NULL, NULL },
	{ "debuginfod", 'D', "URLS", O_DEBUGINFOD, OK_LOCAL, NULL, NULL },
	{ "cache-dir", 'K', "DIR", O_CACHE_DIR, OK_LOCAL, NULL, NULL },
	{ "format", 0x100, "FMT", O_FORMAT, OK_LOCAL, NULL, NULL },
	{ "output", 'o', "FILE", O_OUTPUT, OK_LOCAL, NULL, NULL },
	{ "title", 0x101, "T", O_TITLE, OK_LOCAL, NULL, NULL },
	{ "delay", 0x102, "SECS", O_DELAY, OK_LOCAL, NULL, NULL },
	{ "batch", 0x103, NULL, O_BATCH, OK_LOCAL, NULL, NULL },
	{ "iterations", 0x104, "N", O_ITERATIONS, OK_LOCAL, NULL, NULL },
	{ "offset", 0x105, "ADDR|PROC", O_OFFSET, OK_STR, "offset", NULL },
	{ "bufsiz", 0x106, "BYTES", O_BUFSIZ, OK_NUM, "bufsiz", NULL },
	{ "source-dir", 0x107, "DIR", O_SOURCE_DIR, OK_LOCAL, NULL, NULL },
	{ "help", 'h', NULL, O_GLOBAL, OK_LOCAL, NULL, NULL },
};

/* getopt_long's table, made from opts[] */
static struct option long_opts[ARRAY_SIZE(opts) + 1];

static void long_opts_init(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
		long_opts[i] = (struct option){ opts[i].name,
						opts[i].arg ? required_argument : no_argument, NULL,
						opts[i].ch };
}

static const struct opt *opt_of(int ch)
{
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++)
		if (opts[i].ch == ch)
			return &opts[i];
	return NULL;
}

/* Set request field @k to @v (a later option replaces an earlier one: one field, once). */
static void req_set(cJSON *req, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(req, k))
		cJSON_ReplaceItemInObjectCaseSensitive(req, k, v);
	else
		cJSON_AddItemToObject(req, k, v);
}

struct args {
	uint64_t seen;
	const char *cmd;
	cJSON *req;		/* the request being built */
	const char *target;	/* positional TARGET */
	char **argv_cmd;	/* run: the command */
	char **count_args;	/* count: the patterns; node, leg, hist: the words after the command */
	int ncount_args;
	const char *buckets, *scale, *base;	/* hist add --linear */
	bool calls;		/* list: the call table alone */
	const char *sort;	/* list: the call table's order */
	double duration;	/* count --pid: how long, 0: until the process exits or ^C */
	const char *format;	/* export: folded, pprof, json */
	const char *output;	/* export, flamegraph: the file (NULL: stdout) */
	const char *title;	/* flamegraph */
	double delay;		/* top: seconds between refreshes */
	bool batch;		/* top: text, no terminal */
	long iterations;	/* top: refreshes before it quits, 0 = until q */
	const char *lines;	/* list --lines PROC */
	const char **source_dirs; /* list --lines: where else sources are looked for */
	size_t nsource_dirs;
	const char *socket;
	const char *debuginfod;	/* run: its own engine's servers (NULL: $DEBUGINFOD_URLS) */
	const char *cache_dir;	/* run: where the embedded engine keeps what it fetches */
	int json;
	struct list_view view;
	char *when_text;	/* owned when read from --when-file */
};

static const char *socket_path(const struct args *a)
{
	const char *env = getenv("PCMON_SOCKET");

	return a->socket ? a->socket : env && *env ? env : PCMON_DEFAULT_SOCKET;
}

/*
 * ---- errors: the one place they are printed. One line on stderr, "pcmon: MESSAGE"; with
 * --json instead one JSON object on stdout, {"error": "MESSAGE"}, and nothing on stderr, so
 * that a script reading stdout gets one document whatever happened (bpftool's p_err).
 */

static int fail(const struct args *a, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(const struct args *a, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a && a->json) {
		cJSON *o = cJSON_CreateObject();
		char *s = NULL;

		if (o && cJSON_AddStringToObject(o, "error", msg))
			s = cJSON_PrintUnformatted(o);
		printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
		fflush(stdout);
		free(s);
		cJSON_Delete(o);
	} else {
		fprintf(stderr, "pcmon: %s\n", msg);
	}
	return status;
}

/*
 * Is --json among the options of this command line? Asked before parsing, so that every
 * error of the parse itself (one that comes before --json, too) is JSON. A first getopt
 * pass with the same option string sees the options exactly as the real one will.
 */
static bool json_asked(int argc, char **argv, const char *optstring)
{
	bool json = false;
	int c;

	optind = 0; /* full re-initialisation of GNU getopt */
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, long_opts, NULL)) != -1)
		json |= c == 'j';
	return json;
}

/* Before a command is known: any "--json" ahead of a "--". */
static bool json_anywhere(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			return true;
	return false;
}

/* An option that sets a request field, as opts[] says. 0, or the exit status. */
static int set_field(struct args *a, const struct opt *o, const char *val)
{
	cJSON *arr;
	long v;

	switch (o->kind) {
	case OK_TRUE:
	case OK_FALSE:
		req_set(a->req, o->field, cJSON_CreateBool(o->kind == OK_TRUE));
		break;
	case OK_STR:
		req_set(a->req, o->field, cJSON_CreateString(val));
		break;
	case OK_NUM:
		/* text into a number; what numbers are allowed is the engine's to say */
		if (parse_whole(val, 0, 1L << 53, &v))
			return fail(a, 2, "--%s %s: expected a whole number", o->name, val);
		req_set(a->req, o->field, cJSON_CreateNumber(v));
		break;
	case OK_APPEND:
		arr = cJSON_GetObjectItemCaseSensitive(a->req, o->field);
		if (!arr)
			arr = cJSON_AddArrayToObject(a->req, o->field);
		cJSON_AddItemToArray(arr, cJSON_CreateString(val));
		break;
	case OK_LOCAL:
		break;
	}
	return 0;
}

static int parse_args(int argc, char **argv, const char *cmd, uint64_t allowed, struct args *a)
{
	/* run stops at the command; the others take options anywhere (count's up to "--") */
	const char *optstring = !strcmp(cmd, "run") ? "+:iv" : "-:ivo:";
	int c, r;

	a->json = json_asked(argc, argv, optstring);
	optind = 0;
	opterr = 0;
	a->req = proto_request(cmd);
	a->count_args = calloc(argc + 1, sizeof(char *));
	if (!a->count_args)
		return fail(a, 1, "out of memory");
	while ((c = getopt_long(argc, argv, optstring, long_opts, NULL)) != -1) {
		const struct opt *o = opt_of(c);

		if (o && !(o->bit & (allowed | O_GLOBAL)))
			return fail(a, 2, "%s: %s is not an option of %s (see pcmon --help)", cmd,
				    argv[optind - 1], cmd);
		if (o) {
			a->seen |= o->bit;
			if ((r = set_field(a, o, optarg)))
				return r;
		}
		switch (c) {
		case 1: /* a positional argument */
			if (!strcmp(cmd, "count") || !strcmp(cmd, "node") || !strcmp(cmd, "leg") ||
			    !strcmp(cmd, "hist")) {
				a->count_args[a->ncount_args++] = optarg;
				break;
			}
			if (a->target)
				return fail(a, 2, "%s: unexpected argument '%s'", cmd, optarg);
			a->target = optarg;
			break;
		case 'V':
		case 'R':
			req_set(a->req, "mode", cJSON_CreateString(c == 'R' ? "real" : "virtual"));
			break;
		case 'W':
			free(a->when_text);
			a->when_text = read_file(optarg, NULL);
			if (!a->when_text)
				return fail(a, 2, "--when-file %s: %s", optarg, strerror(errno));
			req_set(a->req, "when", cJSON_CreateString(a->when_text));
			req_set(a->req, "when_from_file", cJSON_CreateBool(1));
			break;
		case 's':
			a->view.shallow = 1;
			break;
		case 'P': {
			cJSON *arr = cJSON_GetObjectItemCaseSensitive(a->req, "nodes"), *n;

			if (!arr)
				arr = cJSON_AddArrayToObject(a->req, "nodes");
			n = cJSON_CreateObject();
			cJSON_AddStringToObject(n, "spec", optarg);
			cJSON_AddItemToArray(arr, n);
			break;
		}
		case 'H': {
			cJSON *last = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a->req, "nodes"),
							 cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a->req, "nodes")) - 1);
			long v;

			if (parse_whole(optarg, 0, 1L << 30, &v))
				return fail(a, 2, "--hist-arg %s: expected a whole number", optarg);
			if (!strcmp(cmd, "node")) /* pcmon node add TARGET NODE --hist-arg N */
				last = a->req;
			else if (!last)
				return fail(a, 2, "--hist-arg %s: give it after the --node it applies to", optarg);
			req_set(last, "arg", cJSON_CreateNumber(v));
			break;
		}
		case 'A':
			a->calls = true;
			break;
		case 'b':
			a->buckets = optarg;
			break;
		case 'r':
			a->scale = optarg;
			break;
		case 'q':
			a->base = optarg;
			break;
		case 'O':
			a->sort = optarg;
			break;
		case 'U': {
			char *end;

			a->duration = strtod(optarg, &end);
			if (*end || !(a->duration > 0))
				return fail(a, 2, "--duration %s: expected a number of seconds", optarg);
			break;
		}
		case 'd':
			a->view.deep = 1;
			break;
		case 0x100:
			a->format = optarg;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 0x101:
			a->title = optarg;
			break;
		case 0x102: {
			char *end;

			a->delay = strtod(optarg, &end);
			if (*end || !(a->delay >= 0.1 && a->delay <= 3600))
				return fail(a, 2, "--delay %s: expected seconds from 0.1 to 3600", optarg);
			break;
		}
		case 0x103:
			a->batch = true;
			break;
		case 0x104:
			if (parse_whole(optarg, 1, 1000000, &a->iterations))
				return fail(a, 2, "--iterations %s: expected a whole number from 1 to 1000000",
					    optarg);
			break;
		case 'T':
			if (parse_whole(optarg, 1, 1000000000, &a->view.top))
				return fail(a, 2, "--top %s: expected a whole number from 1 to 1000000000",
					    optarg);
			break;
		case 'L':
			a->lines = optarg;
			req_set(a->req, "lines", cJSON_CreateString(optarg));
			break;
		case 0x107: {
			size_t cap = a->nsource_dirs;

			if (GROW(a->source_dirs, cap, a->nsource_dirs + 1))
				return fail(a, 1, "out of memory");
			a->source_dirs[a->nsource_dirs++] = optarg;
			break;
		}
		case 'j':
			a->json = 1;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'D':
			a->debuginfod = optarg;
			break;
		case 'K':
			a->cache_dir = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			return -1;
		case ':':
			return fail(a, 2, "%s: %s needs a value (see pcmon --help)", cmd,
				    argv[optind - 1]);
		case '?':
			return fail(a, 2, "%s: unknown option '%s' (see pcmon --help)", cmd,
				    argv[optind - 1]);
		}
	}
	/* two options for one field: which one was meant is for the user to say */
	if ((a->seen & O_VIRTUAL) && (a->seen & O_REAL))
		return fail(a, 2, "--virtual and --real exclude each other: give one");
	if ((a->seen & O_WHEN) && (a->seen & O_WHEN_FILE))
		return fail(a, 2, "--when and --when-file exclude each other: give one");
	if (!strcmp(cmd, "run")) {
		if (optind >= argc)
			return fail(a, 2, "run: no command: pcmon run [OPTIONS] -- CMD [ARGS]");
		a->argv_cmd = argv + optind;
	}
	if (!strcmp(cmd, "count")) {
		if (optind < argc)
			a->argv_cmd = argv + optind; /* after "--" */
		if (!!a->argv_cmd + !!(a->seen & O_PID) != 1)
			return fail(a, 2, "count: give --pid PID or -- CMD [ARGS]");
		if (a->argv_cmd && a->duration)
			return fail(a, 2, "count: --duration goes with --pid (a command is counted until it exits)");
	}
	if (a->target)
		req_set(a->req, "target", cJSON_CreateString(a->target));
	return 0;
}

/* ---- talking to an engine: pcmond's, or our own */

struct session {
	int fd;			/* connection to pcmond, or -1 */
	struct engine *e;	/* embedded engine, or NULL */
};

/* Send @req with @nfds descriptors (closed here, whatever happens) and return the reply. */
static cJSON *call_fds(struct session *s, const cJSON *req, int *fds, int nfds)
{
	cJSON *rep = NULL;
	int r;

	if (s->e) {
		struct client c = { .uid = getuid(), .pid = getpid(), .fds = fds, .nfds = nfds };

		rep = engine_handle(s->e, &c, req);
	} else {
		r = proto_call_fds(s->fd, req, fds, nfds, &rep);
		if (r)
			rep = proto_error(1, "lost the connection to pcmond: %s", strerror(-r));
	}
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rep;
}

static cJSON *call(struct session *s, const cJSON *req)
{
	return call_fds(s, req, NULL, 0);
}

/*
 * Open the path option @opt names with our own rights, and name the descriptor in the
 * request's @field: pcmond opens no path on a user's behalf. 0, or the exit status.
 */
static int open_for_request(struct args *a, const char *opt, const char *path, int flags,
			    const char *field, int index, int *fd)
{
	*fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0)
		return fail(a, 1, "%s %s: %s", opt, path, strerror(errno));
	req_set(a->req, field, cJSON_CreateNumber(index));
	return 0;
}

static int connect_daemon(const struct args *a, struct session *s)
{
	s->e = NULL;
	s->fd = proto_connect(socket_path(a));
	if (s->fd < 0)
		return fail(a, 1, "cannot reach pcmond at %s: %s (start it: 'systemctl start pcmond', or run 'pcmond' as root)",
			    socket_path(a), strerror(-s->fd));
	return 0;
}

/* Print a reply: JSON as is (without the envelope), or a table; returns the exit status. */
static int show(const struct args *a, cJSON *rep, void (*table)(FILE *, const cJSON *))
{
	char esc[1024];

	/* an error may quote a name someone else chose: escaped for the terminal */
	if (!proto_bool(rep, "ok", 0))
		return fail(a, proto_num(rep, "status", 1), "%s",
			    a->json ? proto_str(rep, "error", "pcmond sent a malformed reply")
				    : str_escape(proto_str(rep, "error", "pcmond sent a malformed reply"),
						 esc, sizeof(esc)));
	if (a->json) {
		char *s;

		cJSON_DeleteItemFromObject(rep, "v");
		cJSON_DeleteItemFromObject(rep, "ok");
		s = cJSON_Print(rep);
		printf("%s\n", s ? s : "{}");
		free(s);
	} else if (table) {
		table(stdout, rep);
	}
	return 0;
}

static const struct list_view *cur_view;

static const struct args *cur_args;

static void list_table(FILE *f, const cJSON *rep)
{
	if (cJSON_GetObjectItemCaseSensitive(rep, "lines"))
		fmt_lines(f, rep, cur_args->source_dirs, cur_args->nsource_dirs);
	else
		fmt_listing(f, rep, cur_view);
}

/* ---- commands */

/* Send the request to pcmond and print the reply with @table: the exit status. */
static int ask(struct args *a, void (*table)(FILE *, const cJSON *))
{
	struct session s;
	cJSON *rep;
	int r = connect_daemon(a, &s);

	if (r)
		return r;
	rep = call(&s, a->req);
	r = show(a, rep, table);
	cJSON_Delete(rep);
	close(s.fd);
	return r;
}

/* What a list request says about the call table: alone, in which order. */
static void list_options(const struct args *a, cJSON *req)
{
	if (a->calls)
		req_set(req, "calls", cJSON_CreateBool(1));
	if (a->sort)
		req_set(req, "sort", cJSON_CreateString(a->sort));
}

/* PCMON_BPF_STATS=1: an engine of our own counts its BPF programs' runs (pcmond --bpf-stats). */
static bool env_bpf_stats(void)
{
	const char *v = getenv("PCMON_BPF_STATS");

	return v && !strcmp(v, "1");
}

static int cmd_simple(struct args *a)
{
	if (!strcmp(a->cmd, "tables")) {
		/* the listing's tables section alone */
		cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("list"));
		req_set(a->req, "tables", cJSON_CreateBool(1));
		a->cmd = "list";
	}
	if (!a->target && strcmp(a->cmd, "targets") && strcmp(a->cmd, "status") &&
	    strcmp(a->cmd, "list"))
		return fail(a, 2, "%s: which target? give its id or name (see pcmon targets)",
			    a->cmd);
	if (!strcmp(a->cmd, "list"))
		list_options(a, a->req);
	cur_view = &a->view;
	cur_args = a;
	return ask(a, !strcmp(a->cmd, "list")	   ? list_table :
		      !strcmp(a->cmd, "targets") ? fmt_targets :
		      !strcmp(a->cmd, "status")  ? fmt_status :
						   NULL);
}

static int cmd_start(struct args *a)
{
	struct session s;
	cJSON *rep;
	int r, fd = -1;
	char esc[256];

	if (a->target)
		return fail(a, 2, "start: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    a->target);
	if ((a->seen & O_CGROUP) &&
	    (r = open_for_request(a, "--cgroup", proto_str(a->req, "cgroup", ""),
				  O_RDONLY | O_DIRECTORY, "cgroup_fd", 0, &fd)))
		return r;
	r = connect_daemon(a, &s);
	if (r) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	rep = call_fds(&s, a->req, &fd, fd >= 0);
	r = show(a, rep, NULL);
	if (!r && !a->json) {
		printf("%.0f\n", proto_num(rep, "id", 0));
		fprintf(stderr, "pcmon: started target %.0f \"%s\", %s t=%.0fus\n",
			proto_num(rep, "id", 0), str_escape(proto_str(rep, "name", ""), esc, sizeof(esc)),
			proto_str(rep, "mode", ""),
			proto_num(rep, "interval_us", 0));
	}
	cJSON_Delete(rep);
	close(s.fd);
	return r;
}

static int wait_child(struct session *s, pid_t child, int *status)
{
	int pidfd = syscall(SYS_pidfd_open, child, 0);

	if (s->e && pidfd >= 0) {
		/* serve our own engine until the child is gone */
		struct pollfd p[2] = { { .fd = engine_fd(s->e), .events = POLLIN },
				       { .fd = pidfd, .events = POLLIN } };

		for (;;) {
			if (poll(p, 2, -1) < 0 && errno != EINTR)
				break;
			if (p[0].revents)
				engine_work(s->e);
			if (p[1].revents)
				break;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(child, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/*
 * Where the embedded engine keeps debug info fetched from debuginfod servers:
 * $XDG_CACHE_HOME/pcmon, else pcmond's directory for root, else ~/.cache/pcmon.
 */
static char *default_cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *dir = NULL;

	if (xdg && *xdg)
		return asprintf(&dir, "%s/pcmon", xdg) < 0 ? NULL : dir;
	if (geteuid() == 0 || !home || !*home)
		return strdup(PCMON_DEFAULT_CACHE_DIR);
	return asprintf(&dir, "%s/.cache/pcmon", home) < 0 ? NULL : dir;
}

/* Where execvp() will find CMD, so pcmond can attach to its probes before it starts. */
static char *resolve_exe(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096], *dirs, *dir, *save;

	if (strchr(cmd, '/'))
		return realpath(cmd, NULL);
	dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir; dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/%s", *dir ? dir : ".", cmd);
		if (!access(buf, X_OK)) {
			free(dirs);
			return realpath(buf, NULL);
		}
	}
	free(dirs);
	return NULL;
}

static int cmd_run(struct args *a)
{
	struct session s = { .fd = -1 };
	int go[2] = { -1, -1 }, status = 0, r, exe_fd = -1;
	char errbuf[512], **envp;
	cJSON *rep, *req;
	pid_t child;
	size_t n;

	/* the command gets our environment as it is now: the engine may set DEBUGINFOD_* */
	for (n = 0; environ[n]; n++)
		;
	envp = calloc(n + 1, sizeof(*envp));
	if (!envp)
		return fail(a, 1, "out of memory");
	memcpy(envp, environ, n * sizeof(*envp));
	s.fd = proto_connect(socket_path(a));
	if (s.fd < 0) {
		char *cache = a->cache_dir ? NULL : default_cache_dir();
		struct engine_opts eo = { .debuginfod = a->debuginfod,
					  .cache_dir = a->cache_dir ? a->cache_dir : cache,
					  .bpf_stats = env_bpf_stats() };

		r = engine_new(&eo, &s.e, errbuf, sizeof(errbuf));
		free(cache);
		if (r) {
			free(envp);
			return fail(a, 1, "pcmond is not running and the embedded engine failed: %s",
				    errbuf);
		}
	} else if (a->debuginfod || a->cache_dir) {
		fprintf(stderr, "pcmon: note: --debuginfod and --cache-dir set pcmon run's own engine; "
				"pcmond has its own (see pcmon status)\n");
	}
	if (pipe2(go, O_CLOEXEC)) {
		r = fail(a, 1, "pipe: %s", strerror(errno));
		goto out;
	}
	child = fork();
	if (child < 0) {
		r = fail(a, 1, "fork: %s", strerror(errno));
		goto out;
	}
	if (child == 0) {
		char c;

		close(go[1]);
		/* held here until sampling is on, so the first instruction is watched */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvpe(a->argv_cmd[0], a->argv_cmd, envp);
		fprintf(stderr, "pcmon: cannot run '%s': %s\n", a->argv_cmd[0], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	signal(SIGINT, SIG_IGN); /* ^C reaches the command; we stay to print its profile */
	signal(SIGQUIT, SIG_IGN);

	req_set(a->req, "pid", cJSON_CreateNumber(child));
	req_set(a->req, "exec_wait", cJSON_CreateBool(1));
	{
		char *exe = resolve_exe(a->argv_cmd[0]);

		/* no executable to open is for execvp() to report, not us */
		if (exe) {
			exe_fd = open(exe, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
			req_set(a->req, "exe", cJSON_CreateString(exe));
			if (exe_fd >= 0)
				req_set(a->req, "exe_fd", cJSON_CreateNumber(0));
		}
		free(exe);
	}
	if (!proto_str(a->req, "name", NULL)) {
		char name[64];

		snprintf(name, sizeof(name), "%s", basename_of(a->argv_cmd[0]));
		str_sanitize(name, sizeof(name) - 1);
		req_set(a->req, "name", cJSON_CreateString(name));
	}
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("start"));
	rep = call_fds(&s, a->req, &exe_fd, exe_fd >= 0);
	if (!proto_bool(rep, "ok", 0)) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		r = show(a, rep, NULL);
		cJSON_Delete(rep);
		goto out;
	}
	{
		char id[16];

		snprintf(id, sizeof(id), "%.0f", proto_num(rep, "id", 0));
		req = proto_request("stop");
		cJSON_AddStringToObject(req, "target", id);
	}
	cJSON_Delete(rep);
	if (write(go[1], "g", 1) != 1) {
		cJSON_Delete(req);
		r = fail(a, 1, "cannot release the command: %s", strerror(errno));
		goto out;
	}
	close(go[1]);
	go[1] = -1;
	wait_child(&s, child, &status);

	if (!s.e) { /* idle while the command ran, the connection may be closed: a fresh one */
		close(s.fd);
		s.fd = proto_connect(socket_path(a));
		if (s.fd < 0) {
			cJSON_Delete(req);
			r = fail(a, 1, "cannot reach pcmond at %s again: %s", socket_path(a),
				 strerror(-s.fd));
			goto out;
		}
	}
	rep = call(&s, req);
	cJSON_Delete(rep);
	cJSON_ReplaceItemInObject(req, "cmd", cJSON_CreateString("list"));
	if (proto_str(a->req, "when", NULL))
		cJSON_AddStringToObject(req, "when", proto_str(a->req, "when", ""));
	list_options(a, req);
	rep = call(&s, req);
	cur_view = &a->view;
	r = show(a, rep, list_table);
	cJSON_Delete(rep);
	cJSON_Delete(req);
	if (!r)
		r = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	free(envp);
	if (go[1] >= 0)
		close(go[1]);
	if (s.fd >= 0)
		close(s.fd);
	engine_free(s.e);
	return r;
}

static volatile sig_atomic_t count_stop;

static void on_count_signal(int sig)
{
	(void)sig;
	count_stop = 1;
}

/* Start counting in process --pid, wait, print the table, forget the target. */
static int count_pid(struct args *a)
{
	struct session s = { .fd = -1 };
	cJSON *rep, *req;
	int r, pid = proto_num(a->req, "pid", 0);
	uint64_t until;
	char id[16], errbuf[512];

	/* pcmond when it answers, else an engine of our own (as pcmon run) */
	s.fd = proto_connect(socket_path(a));
	if (s.fd < 0) {
		struct engine_opts eo = { .debuginfod = "", .bpf_stats = env_bpf_stats() };

		if (engine_new(&eo, &s.e, errbuf, sizeof(errbuf)))
			return fail(a, 1, "pcmond is not running and the embedded engine failed: %s",
				    errbuf);
	}
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("start"));
	rep = call(&s, a->req);
	if (!proto_bool(rep, "ok", 0)) {
		r = show(a, rep, NULL);
		goto out_rep;
	}
	snprintf(id, sizeof(id), "%.0f", proto_num(rep, "id", 0));
	cJSON_Delete(rep);
	/* counted from now: the start may have measured the probes' cost first */
	until = a->duration ? now_ns() + (uint64_t)(a->duration * 1e9) : 0;
	signal(SIGINT, on_count_signal);
	signal(SIGTERM, on_count_signal);
	if (!a->json)
		fprintf(stderr, "pcmon: counting in pid %d %s (^C to stop)\n", pid,
			a->duration ? "for the given time" : "until it exits");
	while (!count_stop && (!until || now_ns() < until) && !kill(pid, 0)) {
		if (s.e) {
			struct pollfd p = { .fd = engine_fd(s.e), .events = POLLIN };

			if (poll(&p, 1, 50) > 0)
				engine_work(s.e);
		} else {
			usleep(50000);
		}
	}
	req = proto_request("stop");
	cJSON_AddStringToObject(req, "target", id);
	cJSON_Delete(call(&s, req));
	cJSON_ReplaceItemInObject(req, "cmd", cJSON_CreateString("list"));
	list_options(a, req);
	rep = call(&s, req);
	cur_view = &a->view;
	r = show(a, rep, list_table);
	cJSON_Delete(rep);
	cJSON_ReplaceItemInObject(req, "cmd", cJSON_CreateString("drop"));
	cJSON_DeleteItemFromObject(req, "calls");
	cJSON_DeleteItemFromObject(req, "sort");
	cJSON_Delete(call(&s, req));
	cJSON_Delete(req);
	rep = NULL;
out_rep:
	cJSON_Delete(rep);
	if (s.fd >= 0)
		close(s.fd);
	engine_free(s.e);
	return r;
}

/*
 * pcmon node add TARGET NODE [--hist-arg N] | node del TARGET ID
 * pcmon leg add TARGET FROM TO | leg del TARGET ID
 * pcmon hist add TARGET node|leg ID (--linear --buckets B --scale S --base B | --log)
 * pcmon hist del TARGET node|leg ID
 * The probe-node tables of a running target; the engine checks the values.
 */
static int cmd_edit(struct args *a)
{
	const char *w[5] = { NULL };
	bool hist = !strcmp(a->cmd, "hist"), add;
	int need;
	struct session s;
	cJSON *rep;
	long id;
	int r;

	for (int i = 0; i < a->ncount_args && i < 5; i++)
		w[i] = a->count_args[i];
	add = w[0] && !strcmp(w[0], "add");
	need = hist ? 4 : add && !strcmp(a->cmd, "leg") ? 4 : 3;
	if (!w[0] || (strcmp(w[0], "add") && strcmp(w[0], "del")) || a->ncount_args != need)
		return fail(a, 2, "%s: see pcmon --help for %s add|del", a->cmd, a->cmd);
	req_set(a->req, "op", cJSON_CreateString(w[0]));
	req_set(a->req, "target", cJSON_CreateString(w[1]));
	if (!strcmp(a->cmd, "node") && add) {
		req_set(a->req, "spec", cJSON_CreateString(w[2]));
	} else if (!strcmp(a->cmd, "leg") && add) {
		req_set(a->req, "from", cJSON_CreateString(w[2]));
		req_set(a->req, "to", cJSON_CreateString(w[3]));
	} else {
		const char *idw = hist ? w[3] : w[2];

		if (parse_whole(idw, 1, 1000000, &id))
			return fail(a, 2, "%s %s: %s is not a number", a->cmd, w[0], idw);
		req_set(a->req, "id", cJSON_CreateNumber(id));
		if (hist)
			req_set(a->req, "on", cJSON_CreateString(w[2]));
	}
	if (hist && add) {
		char spec[160];

		if (!!(a->seen & O_LINEAR) + !!(a->seen & O_LOG) != 1)
			return fail(a, 2, "hist add: give --linear --buckets B --scale S --base B, or --log");
		if (a->seen & O_LOG)
			snprintf(spec, sizeof(spec), "%s:%s,log", w[2], w[3]);
		else
			snprintf(spec, sizeof(spec), "%s:%s,linear,%s,%s,%s", w[2], w[3],
				 a->buckets ? a->buckets : "?", a->scale ? a->scale : "?",
				 a->base ? a->base : "0");
		req_set(a->req, "hist", cJSON_CreateString(spec));
		cJSON_DeleteItemFromObject(a->req, "id");
	}
	r = connect_daemon(a, &s);
	if (r)
		return r;
	rep = call(&s, a->req);
	r = show(a, rep, NULL);
	if (!r && !a->json && add && !hist)
		printf("%.0f\n", proto_num(rep, "id", 0));
	cJSON_Delete(rep);
	close(s.fd);
	return r;
}

/*
 * pcmon count PATTERN... (--pid PID [--duration S] | -- CMD): a target with call counting
 * only, in the foreground: the table when the command exits, at --duration, or at ^C.
 */
static int cmd_count(struct args *a)
{
	cJSON *pats = cJSON_GetObjectItemCaseSensitive(a->req, "count");

	for (int i = 0; i < a->ncount_args; i++) {
		if (!pats)
			pats = cJSON_AddArrayToObject(a->req, "count");
		cJSON_AddItemToArray(pats, cJSON_CreateString(a->count_args[i]));
	}
	if (!pats)
		return fail(a, 2, "count: give at least one procedure pattern (see pcmon --help)");
	req_set(a->req, "no_sample", cJSON_CreateBool(1));
	a->calls = true;
	if (a->argv_cmd)
		return cmd_run(a);
	return count_pid(a);
}

/* Where an export goes: -o FILE (replaced only once it is whole), else stdout. */
struct out {
	FILE *f;
	char *tmp;
};

static int out_open(struct args *a, struct out *o, bool binary)
{
	o->tmp = NULL;
	if (!a->output || !strcmp(a->output, "-")) {
		if (binary && isatty(STDOUT_FILENO))
			return fail(a, 2, "%s: the output is binary: give -o FILE, or redirect it", a->cmd);
		o->f = stdout;
		return 0;
	}
	if (asprintf(&o->tmp, "%s.tmp.%d", a->output, (int)getpid()) < 0)
		return fail(a, 1, "out of memory");
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		int r = fail(a, 1, "-o %s: %s", a->output, strerror(errno));

		free(o->tmp);
		return r;
	}
	return 0;
}

/* Finish the output: @err < 0 throws a partial file away. 0, or the exit status. */
static int out_close(struct args *a, struct out *o, int err)
{
	if (o->f == stdout)
		return fflush(stdout) || err ? fail(a, 1, "%s: cannot write: %s", a->cmd,
						   strerror(err ? -err : errno)) : 0;
	if (fclose(o->f) && !err)
		err = -errno;
	if (!err && rename(o->tmp, a->output))
		err = -errno;
	if (err)
		unlink(o->tmp);
	free(o->tmp);
	return err ? fail(a, 1, "-o %s: %s", a->output, strerror(-err)) : 0;
}

/* The samples of TARGET as stacks: the listing with its profile (daemon/stacks.h). */
static int fetch_profile(struct args *a, cJSON **rep, struct xprof *p)
{
	struct session s;
	char err[256];
	int r;

	if (!a->target)
		return fail(a, 2, "%s: which target? give its id or name (see pcmon targets)", a->cmd);
	r = connect_daemon(a, &s);
	if (r)
		return r;
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("list"));
	req_set(a->req, "stacks", cJSON_CreateBool(1));
	*rep = call(&s, a->req);
	close(s.fd);
	if (!proto_bool(*rep, "ok", 0)) {
		r = show(a, *rep, NULL);
		cJSON_Delete(*rep);
		return r;
	}
	if (xprof_load(p, *rep, err, sizeof(err))) {
		cJSON_Delete(*rep);
		return fail(a, 1, "%s: target %s: %s", a->cmd, a->target, err);
	}
	return 0;
}

/* pcmon export TARGET --format folded|pprof|json [-o FILE] [--when P] */
static int cmd_export(struct args *a)
{
	const char *fmt = a->format ? a->format : "";
	bool pprof = !strcmp(fmt, "pprof");
	struct xprof p;
	struct out o;
	cJSON *rep;
	char err[256] = "";
	int r;

	if (strcmp(fmt, "folded") && !pprof && strcmp(fmt, "json"))
		return fail(a, 2, "export: --format folded, pprof or json");
	r = fetch_profile(a, &rep, &p);
	if (r)
		return r;
	r = out_open(a, &o, pprof);
	if (!r) {
		int e;

		if (pprof) {
			e = export_pprof(o.f, &p, err, sizeof(err));
		} else if (!strcmp(fmt, "folded")) {
			e = export_folded(o.f, &p);
		} else { /* the listing's facts and the stacks, for scripts */
			char *js;

			cJSON_DeleteItemFromObject(rep, "v");
			cJSON_DeleteItemFromObject(rep, "ok");
			cJSON_DeleteItemFromObject(rep, "procedures");
			cJSON_DeleteItemFromObject(rep, "deep_order");
			js = cJSON_Print(rep);
			e = js && fprintf(o.f, "%s\n", js) > 0 ? 0 : -ENOMEM;
			free(js);
		}
		r = out_close(a, &o, e);
	}
	xprof_free(&p);
	cJSON_Delete(rep);
	return r;
}

static cJSON *top_call(void *ctx, const cJSON *req)
{
	return call(ctx, req);
}

static void top_work(void *ctx)
{
	engine_work(((struct session *)ctx)->e);
}

/* pcmon top [OPTS] (--pid PID | --cgroup DIR | --all): a target of its own, shown live. */
static int cmd_top(struct args *a)
{
	struct session s = { .fd = -1 };
	struct top_io io = { .ctx = &s, .call = top_call, .work = top_work, .engine_fd = -1,
			     .delay = a->delay ? a->delay : 1, .batch = a->batch,
			     .iterations = a->iterations, .deep = a->view.deep };
	char errbuf[512], id[16];
	cJSON *rep, *req;
	int r, fd = -1;

	if (a->target)
		return fail(a, 2, "top: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    a->target);
	if (!a->batch && !isatty(STDOUT_FILENO))
		return fail(a, 2, "top: stdout is not a terminal: use -b for text");
	if ((a->seen & O_CGROUP) &&
	    (r = open_for_request(a, "--cgroup", proto_str(a->req, "cgroup", ""),
				  O_RDONLY | O_DIRECTORY, "cgroup_fd", 0, &fd)))
		return r;
	/* pcmond when it answers, else an engine of our own (as pcmon run) */
	s.fd = proto_connect(socket_path(a));
	if (s.fd < 0) {
		struct engine_opts eo = { .debuginfod = "", .bpf_stats = env_bpf_stats() };

		if (engine_new(&eo, &s.e, errbuf, sizeof(errbuf))) {
			if (fd >= 0)
				close(fd);
			return fail(a, 1, "pcmond is not running and the embedded engine failed: %s",
				    errbuf);
		}
		io.engine_fd = engine_fd(s.e);
	}
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("start"));
	if (!(a->seen & O_KERNEL)) /* k switches kernel frames on and off: collect them */
		req_set(a->req, "kernel", cJSON_CreateBool(1));
	if (!proto_str(a->req, "name", NULL))
		req_set(a->req, "name", cJSON_CreateString("top"));
	rep = call_fds(&s, a->req, &fd, fd >= 0);
	if (!proto_bool(rep, "ok", 0)) {
		r = show(a, rep, NULL);
		cJSON_Delete(rep);
		goto out;
	}
	snprintf(id, sizeof(id), "%.0f", proto_num(rep, "id", 0));
	cJSON_Delete(rep);
	io.target = id;
	r = top_run(&io, errbuf, sizeof(errbuf));
	if (r)
		fail(a, r, "top: %s", errbuf);
	/* the target was top's own: gone with it */
	req = proto_request("drop");
	cJSON_AddStringToObject(req, "target", id);
	cJSON_Delete(call(&s, req));
	cJSON_Delete(req);
out:
	if (s.fd >= 0)
		close(s.fd);
	engine_free(s.e);
	return r;
}

/* pcmon profil TARGET --offset ADDR|PROC --scale S [--bufsiz BYTES]: docs/lines.md */
static int cmd_profil(struct args *a)
{
	unsigned long scale;
	char *end;

	if (!a->target)
		return fail(a, 2, "profil: which target? give its id or name (see pcmon targets)");
	if (!(a->seen & O_OFFSET) || !a->scale)
		return fail(a, 2, "profil: give --offset ADDR|MODULE+0xOFF|PROC and --scale S (0x10000: a cell per 2 bytes)");
	scale = strtoul(a->scale, &end, 0);
	if (*end || end == a->scale || scale > 0x10000)
		return fail(a, 2, "--scale %s: expected 0 to 0x10000 (65536)", a->scale);
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("list"));
	req_set(a->req, "scale", cJSON_CreateNumber(scale));
	return ask(a, fmt_profil);
}

/* pcmon flamegraph TARGET [-o FILE.svg] [--when P] [--title T] */
static int cmd_flamegraph(struct args *a)
{
	struct xprof p;
	struct out o;
	cJSON *rep;
	int r;

	r = fetch_profile(a, &rep, &p);
	if (r)
		return r;
	r = out_open(a, &o, false);
	if (!r)
		r = out_close(a, &o, export_flamegraph(o.f, &p, a->title));
	xprof_free(&p);
	cJSON_Delete(rep);
	return r;
}

static const struct command {
	const char *name;
	int (*fn)(struct args *);
	uint64_t opts;
	const char *help;
} commands[] = {
	{ "run", cmd_run, O_SAMPLING | O_SHALLOW | O_DEEP | O_TOP | O_DEBUGINFOD | O_CACHE_DIR,
	  "run   [OPTS] [--shallow|--deep] [--top N] -- CMD [ARGS]\n"
	  "              launch CMD watched from its first instruction, print LIST;\n"
	  "              without pcmond: --debuginfod URLS (default $DEBUGINFOD_URLS) --cache-dir DIR" },
	{ "start", cmd_start, O_SAMPLING | O_PID | O_CGROUP | O_ALL,
	  "start [OPTS] (--pid PID | --cgroup DIR | --all)   start a target; prints its id" },
	{ "list", cmd_simple, O_LISTING,
	  "list  [TARGET] [--shallow|--deep] [--top N] [--when P|--when-file F] [-i]\n"
	  "              [--critical N=P] [--no-inline] [--calls] [--sort self|calls|total|avg]\n"
	  "              [--lines PROC [--source-dir DIR]]   --lines: where in PROC, by line\n"
	  "              the listing so far: every section (--calls: the call table alone)" },
	{ "count", cmd_count, O_MAX_PROBES | O_PID | O_DURATION | O_SORT | O_ICASE | O_VIRTUAL | O_REAL,
	  "count [--real|--virtual] [--max-probes N] [--sort self|calls|total|avg] [-i] PATTERN...\n"
	  "              (--pid PID [--duration SECS] | -- CMD [ARGS])   calls, self and\n"
	  "              self+children time of the procedures PATTERN names, in the foreground" },
	{ "node", cmd_edit, O_HIST_ARG,
	  "node  add TARGET NODE [--hist-arg N] | node del TARGET ID   a probe node, while it runs" },
	{ "leg", cmd_edit, 0, "leg   add TARGET FROM TO | leg del TARGET ID   a leg, while it runs" },
	{ "hist", cmd_edit, O_LINEAR | O_LOG | O_BUCKETS | O_SCALE | O_BASE,
	  "hist  add TARGET node|leg ID (--linear --buckets B --scale S --base B | --log)\n"
	  "              | hist del TARGET node|leg ID   a histogram, while it runs" },
	{ "export", cmd_export, O_FORMAT | O_OUTPUT | O_WHEN | O_WHEN_FILE | O_CRITICAL | O_ICASE | O_NO_INLINE,
	  "export TARGET --format folded|pprof|json [-o|--output FILE] [--when P|--when-file F]\n"
	  "              [-i] [--critical N=P] [--no-inline]   the samples as stacks: folded\n"
	  "              (flamegraph.pl), pprof (go tool pprof), json" },
	{ "flamegraph", cmd_flamegraph, O_OUTPUT | O_TITLE | O_WHEN | O_WHEN_FILE | O_CRITICAL | O_ICASE | O_NO_INLINE,
	  "flamegraph TARGET [-o|--output FILE.svg] [--title T] [--when P|--when-file F] [-i]\n"
	  "              [--critical N=P] [--no-inline]   an interactive SVG flame graph" },
	{ "top", cmd_top, O_SAMPLING | O_PID | O_CGROUP | O_ALL | O_DELAY | O_BATCH | O_ITERATIONS | O_DEEP,
	  "top   [OPTS] [-d|--delay SECS] [-b|--batch] [-n|--iterations N] [--deep]\n"
	  "              (--pid PID | --cgroup DIR | --all)\n"
	  "              live hottest procedures; keys: s/d sort, space freeze, z zero, k kernel, q quit" },
	{ "profil", cmd_profil, O_OFFSET | O_SCALE | O_BUFSIZ | O_WHEN | O_WHEN_FILE | O_ICASE | O_CRITICAL,
	  "profil TARGET --offset ADDR|MODULE+0xOFF|PROC --scale S [--bufsiz BYTES]\n"
	  "              [--when P|--when-file F] [-i] [--critical N=P]   profil(2)'s histogram" },
	{ "tables", cmd_simple, 0,
	  "tables TARGET   the node, leg and histogram tables of a target with nodes" },
	{ "stop", cmd_simple, 0, "stop   TARGET   stop sampling; results kept" },
	{ "pause", cmd_simple, 0, "pause  TARGET   stop counting for a while" },
	{ "resume", cmd_simple, 0, "resume TARGET   count again" },
	{ "zero", cmd_simple, 0, "zero   TARGET   zero counts, keep settings" },
	{ "drop", cmd_simple, 0, "drop   TARGET   forget the target and its results" },
	{ "targets", cmd_simple, 0, "targets        every target: id, name, mode, state, samples, lost" },
	{ "status", cmd_simple, 0, "status         daemon version, uptime, BPF programs and their overhead" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pcmon COMMAND [ARGS]   (any unambiguous prefix of a command)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  pcmon %s\n", commands[i].help);
	fprintf(f, "\nOPTS:\n");
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		const struct opt *o = &opts[i];
		/* an enumeration's values as the engine accepts them */
		const struct proto_field *pf = o->field ? engine_start_field(o->field) : NULL;
		char left[64];

		if (!(o->bit & O_SAMPLING))
			continue;
		snprintf(left, sizeof(left), "%s--%s%s%s", o->ch == 'i' ? "-i|" : "", o->name,
			 o->arg ? " " : "", pf && pf->type == PT_ENUM ? pf->values : o->arg ? o->arg : "");
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
	fprintf(f, "\nEvery command takes --json (errors too: {\"error\": ...} on stdout), -v|--verbose,\n"
		   "and --socket PATH (or $PCMON_SOCKET; default %s).\n"
		   "See pcmon(1).\n",
		PCMON_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct args a = { 0 };
	char matches[256] = "";
	int r, n = 0;

	long_opts_init();
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("pcmon %s\n", PCMON_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!strcasecmp(argv[1], commands[i].name)) { /* an exact name always wins */
			cmd = &commands[i];
			n = 1;
			break;
		}
		if (!strncasecmp(argv[1], commands[i].name, strlen(argv[1]))) {
			cmd = &commands[i];
			n++;
			snprintf(matches + strlen(matches), sizeof(matches) - strlen(matches), "%s%s",
				 n > 1 ? ", " : "", commands[i].name);
		}
	}
	a.json = json_anywhere(argc, argv);
	if (n == 0)
		return fail(&a, 2, "unknown command '%s' (see pcmon --help)", argv[1]);
	if (n > 1)
		return fail(&a, 2, "'%s' is ambiguous: it could be %s", argv[1], matches);

	a.cmd = cmd->name;
	if (!strcmp(cmd->name, "top")) /* top(1)'s short options */
		for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
			argv[i] = !strcmp(argv[i], "-d") ? "--delay" : !strcmp(argv[i], "-b") ? "--batch"
				: !strcmp(argv[i], "-n") ? "--iterations" : argv[i];
	r = parse_args(argc - 1, argv + 1, cmd->name, cmd->opts, &a);
	if (r == -1) {
		usage(stdout);
		r = 0;
	} else if (r == 0) {
		r = cmd->fn(&a);
	}
	cJSON_Delete(a.req);
	free(a.when_text);
	free(a.count_args);
	free(a.source_dirs);
	return r;
}
