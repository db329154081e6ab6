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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "format.h"
#include "pat.h"
#include "proto.h"
#include "util.h"

/* Options; each command names the ones it takes. */
enum {
	O_VIRTUAL = 1 << 0, O_REAL = 1 << 1, O_INTERVAL = 1 << 2, O_WHEN = 1 << 3,
	O_WHEN_FILE = 1 << 4, O_CRITICAL = 1 << 5, O_KERNEL = 1 << 6, O_UNWIND = 1 << 7,
	O_NO_INLINE = 1 << 8, O_NO_CHILDREN = 1 << 9, O_NAME = 1 << 10, O_ICASE = 1 << 11,
	O_PID = 1 << 12, O_CGROUP = 1 << 13, O_ALL = 1 << 14, O_SHALLOW = 1 << 15,
	O_DEEP = 1 << 16, O_TOP = 1 << 17, O_LINES = 1 << 18, O_JSON = 1 << 19,
};
#define O_SAMPLING (O_VIRTUAL | O_REAL | O_INTERVAL | O_WHEN | O_WHEN_FILE | O_CRITICAL | \
		    O_KERNEL | O_UNWIND | O_NO_INLINE | O_NO_CHILDREN | O_NAME | O_ICASE)
#define O_LISTING (O_SHALLOW | O_DEEP | O_TOP | O_WHEN | O_WHEN_FILE | O_CRITICAL | O_ICASE | \
		   O_NO_INLINE | O_JSON)

static const struct option long_opts[] = {
	{ "virtual", no_argument, NULL, 'V' },	     { "real", no_argument, NULL, 'R' },
	{ "interval", required_argument, NULL, 't' }, { "when", required_argument, NULL, 'w' },
	{ "when-file", required_argument, NULL, 'W' }, { "critical", required_argument, NULL, 'c' },
	{ "kernel", no_argument, NULL, 'k' },	     { "unwind", required_argument, NULL, 'u' },
	{ "no-inline", no_argument, NULL, 'I' },     { "no-children", no_argument, NULL, 'C' },
	{ "name", required_argument, NULL, 'n' },    { "ignore-case", no_argument, NULL, 'i' },
	{ "pid", required_argument, NULL, 'p' },     { "cgroup", required_argument, NULL, 'g' },
	{ "all", no_argument, NULL, 'a' },	     { "shallow", no_argument, NULL, 's' },
	{ "deep", no_argument, NULL, 'd' },	     { "top", required_argument, NULL, 'T' },
	{ "lines", required_argument, NULL, 'L' },   { "json", no_argument, NULL, 'j' },
	{ "socket", required_argument, NULL, 'S' },  { "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },	     {},
};

static const struct {
	int ch;
	unsigned bit;
} opt_bits[] = {
	{ 'V', O_VIRTUAL }, { 'R', O_REAL },	  { 't', O_INTERVAL },	  { 'w', O_WHEN },
	{ 'W', O_WHEN_FILE }, { 'c', O_CRITICAL }, { 'k', O_KERNEL },	  { 'u', O_UNWIND },
	{ 'I', O_NO_INLINE }, { 'C', O_NO_CHILDREN }, { 'n', O_NAME },	  { 'i', O_ICASE },
	{ 'p', O_PID },	    { 'g', O_CGROUP },	  { 'a', O_ALL },	  { 's', O_SHALLOW },
	{ 'd', O_DEEP },    { 'T', O_TOP },	  { 'L', O_LINES },	  { 'j', O_JSON },
};

struct args {
	unsigned seen;
	const char *cmd;
	cJSON *req;		/* the request being built */
	const char *target;	/* positional TARGET */
	char **argv_cmd;	/* run: the command */
	const char *socket;
	int json;
	struct list_view view;
	char *when_text;	/* owned when read from --when-file */
};

static const char *socket_path(const struct args *a)
{
	const char *env = getenv("PCMON_SOCKET");

	return a->socket ? a->socket : env && *env ? env : PCMON_DEFAULT_SOCKET;
}

/* ---- errors: one line on stderr (or {"error":...} with --json), then the exit status */

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
		char *s;

		cJSON_AddStringToObject(o, "error", msg);
		s = cJSON_PrintUnformatted(o);
		printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
		free(s);
		cJSON_Delete(o);
	}
	fprintf(stderr, "pcmon: %s\n", msg);
	return status;
}

static int parse_count(const char *opt, const char *s, long lo, long hi, long *out)
{
	if (parse_whole(s, lo, hi, out)) {
		fprintf(stderr, "pcmon: %s %s: expected a whole number from %ld to %ld\n", opt, s, lo,
			hi);
		return -EINVAL;
	}
	return 0;
}

/* Validate a pattern here, so that a bad one stops everything before it starts. */
static int check_pattern(const char *opt, const char *text, unsigned flags)
{
	struct pat_error pe = { 0 };
	struct pat *p = NULL;
	int r = pat_parse(text, flags, &p, &pe);

	pat_free(p);
	if (r == -EINVAL) {
		if (flags & PAT_FROM_FILE) {
			int line, col;

			pat_error_location(text, pe.column, &line, &col);
			fprintf(stderr, "pcmon: %s: line %d, column %d: %s\n", opt, line, col, pe.msg);
		} else {
			fprintf(stderr, "pcmon: %s: column %d: %s\n", opt, pe.column, pe.msg);
		}
		return 2;
	}
	return r ? 1 : 0;
}

static int parse_args(int argc, char **argv, const char *cmd, unsigned allowed, struct args *a)
{
	cJSON *crit = NULL;
	unsigned flags = 0;
	int c;

	optind = 1;
	opterr = 0;
	a->req = proto_request(cmd);
	/* run stops at the command; the others take options anywhere */
	while ((c = getopt_long(argc, argv, !strcmp(cmd, "run") ? "+iv" : "-iv", long_opts,
				NULL)) != -1) {
		unsigned bit = 0;
		long v;

		for (size_t k = 0; k < ARRAY_SIZE(opt_bits); k++)
			if (opt_bits[k].ch == c)
				bit = opt_bits[k].bit;
		if (bit && !(allowed & bit)) {
			fprintf(stderr, "pcmon %s: %s is not an option of %s (see pcmon --help)\n", cmd,
				argv[optind - 1], cmd);
			return 2;
		}
		a->seen |= bit;
		switch (c) {
		case 1: /* a positional argument */
			if (a->target) {
				fprintf(stderr, "pcmon %s: unexpected argument '%s'\n", cmd, optarg);
				return 2;
			}
			a->target = optarg;
			break;
		case 'V':
		case 'R':
			cJSON_DeleteItemFromObject(a->req, "mode");
			cJSON_AddStringToObject(a->req, "mode", c == 'R' ? "real" : "virtual");
			break;
		case 't':
			if (parse_count("--interval", optarg, 1, 60000000, &v))
				return 2;
			cJSON_AddNumberToObject(a->req, "interval_us", v);
			break;
		case 'w':
			cJSON_DeleteItemFromObject(a->req, "when");
			cJSON_AddStringToObject(a->req, "when", optarg);
			break;
		case 'W':
			free(a->when_text);
			a->when_text = read_file(optarg, NULL);
			if (!a->when_text) {
				fprintf(stderr, "pcmon: --when-file %s: %s\n", optarg, strerror(errno));
				return 2;
			}
			flags |= PAT_FROM_FILE;
			cJSON_DeleteItemFromObject(a->req, "when");
			cJSON_AddStringToObject(a->req, "when", a->when_text);
			cJSON_AddBoolToObject(a->req, "when_from_file", 1);
			break;
		case 'c':
			if (!crit)
				crit = cJSON_AddArrayToObject(a->req, "critical");
			cJSON_AddItemToArray(crit, cJSON_CreateString(optarg));
			break;
		case 'k':
			cJSON_AddBoolToObject(a->req, "kernel", 1);
			break;
		case 'u':
			if (strcmp(optarg, "fp") && strcmp(optarg, "dwarf") && strcmp(optarg, "auto")) {
				fprintf(stderr, "pcmon: --unwind %s: use fp, dwarf or auto\n", optarg);
				return 2;
			}
			cJSON_AddStringToObject(a->req, "unwind", optarg);
			break;
		case 'I':
			cJSON_AddBoolToObject(a->req, "no_inline", 1);
			break;
		case 'C':
			cJSON_AddBoolToObject(a->req, "children", 0);
			break;
		case 'n':
			cJSON_AddStringToObject(a->req, "name", optarg);
			break;
		case 'i':
			if (!(allowed & O_ICASE)) {
				fprintf(stderr, "pcmon %s: -i is not an option of %s\n", cmd, cmd);
				return 2;
			}
			flags |= PAT_ICASE;
			cJSON_AddBoolToObject(a->req, "icase", 1);
			break;
		case 'p':
			if (parse_count("--pid", optarg, 1, 4194304, &v))
				return 2;
			cJSON_AddNumberToObject(a->req, "pid", v);
			break;
		case 'g':
			cJSON_AddStringToObject(a->req, "cgroup", optarg);
			break;
		case 'a':
			cJSON_AddBoolToObject(a->req, "all", 1);
			break;
		case 's':
			a->view.shallow = 1;
			break;
		case 'd':
			a->view.deep = 1;
			break;
		case 'T':
			if (parse_count("--top", optarg, 1, 1000000000, &a->view.top))
				return 2;
			break;
		case 'L':
			fprintf(stderr, "pcmon: --lines is not available yet in this pcmon\n");
			return 2;
		case 'j':
			a->json = 1;
			break;
		case 'S':
			a->socket = optarg;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			return -1;
		default:
			fprintf(stderr, "pcmon %s: unknown option '%s' (see pcmon --help)\n", cmd,
				argv[optind - 1]);
			return 2;
		}
	}
	if ((a->seen & O_VIRTUAL) && (a->seen & O_REAL)) {
		fprintf(stderr, "pcmon: --virtual and --real exclude each other: give one\n");
		return 2;
	}
	if ((a->seen & O_WHEN) && (a->seen & O_WHEN_FILE)) {
		fprintf(stderr, "pcmon: --when and --when-file exclude each other: give one\n");
		return 2;
	}
	if (proto_str(a->req, "when", NULL)) {
		int r = check_pattern((a->seen & O_WHEN_FILE) ? "--when-file" : "--when",
				      proto_str(a->req, "when", ""), flags);

		if (r)
			return r;
	}
	if (crit) {
		const cJSON *it;

		cJSON_ArrayForEach(it, crit) {
			const char *eq = strchr(it->valuestring, '=');
			char opt[160];

			if (!eq || eq == it->valuestring) {
				fprintf(stderr, "pcmon: --critical '%s': expected NAME=PATTERN\n",
					it->valuestring);
				return 2;
			}
			snprintf(opt, sizeof(opt), "--critical %.*s", (int)(eq - it->valuestring),
				 it->valuestring);
			if (check_pattern(opt, eq + 1, flags & PAT_ICASE))
				return 2;
		}
	}
	if (!strcmp(cmd, "run")) {
		if (optind >= argc) {
			fprintf(stderr, "pcmon run: no command: pcmon run [OPTIONS] -- CMD [ARGS]\n");
			return 2;
		}
		a->argv_cmd = argv + optind;
	}
	if (a->target)
		cJSON_AddStringToObject(a->req, "target", a->target);
	return 0;
}

/* ---- talking to an engine: pcmond's, or our own */

struct session {
	int fd;			/* connection to pcmond, or -1 */
	struct engine *e;	/* embedded engine, or NULL */
};

static cJSON *call(struct session *s, const cJSON *req)
{
	cJSON *rep = NULL;
	int r;

	if (s->e) {
		struct client c = { .uid = getuid(), .pid = getpid() };

		return engine_handle(s->e, &c, req);
	}
	r = proto_call(s->fd, req, &rep);
	if (r)
		return proto_error(1, "lost the connection to pcmond: %s", strerror(-r));
	return rep;
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
	if (!proto_bool(rep, "ok", 0))
		return fail(a, proto_num(rep, "status", 1), "%s",
			    proto_str(rep, "error", "pcmond sent a malformed reply"));
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

static void list_table(FILE *f, const cJSON *rep)
{
	fmt_list(f, rep, cur_view);
}

/* ---- commands */

static int cmd_simple(struct args *a)
{
	struct session s;
	cJSON *rep;
	int r;

	if (!a->target && strcmp(a->cmd, "targets") && strcmp(a->cmd, "status") &&
	    strcmp(a->cmd, "list"))
		return fail(a, 2, "pcmon %s: which target? give its id or name (see pcmon targets)",
			    a->cmd);
	r = connect_daemon(a, &s);
	if (r)
		return r;
	rep = call(&s, a->req);
	cur_view = &a->view;
	if (!strcmp(a->cmd, "list"))
		r = show(a, rep, list_table);
	else if (!strcmp(a->cmd, "targets"))
		r = show(a, rep, fmt_targets);
	else if (!strcmp(a->cmd, "status"))
		r = show(a, rep, fmt_status);
	else
		r = show(a, rep, NULL);
	cJSON_Delete(rep);
	close(s.fd);
	return r;
}

static int cmd_start(struct args *a)
{
	struct session s;
	cJSON *rep;
	int r;

	if (a->target)
		return fail(a, 2, "pcmon start: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    a->target);
	if (!!(a->seen & O_PID) + !!(a->seen & O_CGROUP) + !!(a->seen & O_ALL) != 1)
		return fail(a, 2, "pcmon start: give exactly one of --pid PID, --cgroup DIR, --all");
	r = connect_daemon(a, &s);
	if (r)
		return r;
	rep = call(&s, a->req);
	r = show(a, rep, NULL);
	if (!r && !a->json) {
		printf("%.0f\n", proto_num(rep, "id", 0));
		fprintf(stderr, "pcmon: started target %.0f \"%s\", %s t=%.0fus\n",
			proto_num(rep, "id", 0), proto_str(rep, "name", ""), proto_str(rep, "mode", ""),
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
	int go[2], status = 0, r;
	char errbuf[512];
	cJSON *rep, *req;
	pid_t child;

	s.fd = proto_connect(socket_path(a));
	if (s.fd < 0) {
		struct engine_opts eo = { 0 };

		r = engine_new(&eo, &s.e, errbuf, sizeof(errbuf));
		if (r)
			return fail(a, 1, "pcmond is not running and the embedded engine failed: %s",
				    errbuf);
	}
	if (pipe2(go, O_CLOEXEC))
		return fail(a, 1, "pipe: %s", strerror(errno));
	child = fork();
	if (child < 0)
		return fail(a, 1, "fork: %s", strerror(errno));
	if (child == 0) {
		char c;

		close(go[1]);
		/* held here until sampling is on, so the first instruction is watched */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(a->argv_cmd[0], a->argv_cmd);
		fprintf(stderr, "pcmon: cannot run '%s': %s\n", a->argv_cmd[0], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	signal(SIGINT, SIG_IGN); /* ^C reaches the command; we stay to print its profile */
	signal(SIGQUIT, SIG_IGN);

	cJSON_AddNumberToObject(a->req, "pid", child);
	cJSON_AddBoolToObject(a->req, "exec_wait", 1);
	{
		char *exe = resolve_exe(a->argv_cmd[0]);

		if (exe)
			cJSON_AddStringToObject(a->req, "exe", exe);
		free(exe);
	}
	if (!proto_str(a->req, "name", NULL))
		cJSON_AddStringToObject(a->req, "name", basename_of(a->argv_cmd[0]));
	cJSON_ReplaceItemInObject(a->req, "cmd", cJSON_CreateString("start"));
	rep = call(&s, a->req);
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
	rep = call(&s, req);
	cur_view = &a->view;
	r = show(a, rep, list_table);
	cJSON_Delete(rep);
	cJSON_Delete(req);
	if (!r)
		r = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	if (go[1] >= 0)
		close(go[1]);
	if (s.fd >= 0)
		close(s.fd);
	engine_free(s.e);
	return r;
}

static const struct command {
	const char *name;
	int (*fn)(struct args *);
	unsigned opts;
	const char *help;
} commands[] = {
	{ "run", cmd_run, O_SAMPLING | O_SHALLOW | O_DEEP | O_TOP | O_JSON,
	  "run   [OPTS] -- CMD [ARGS]   launch CMD watched from its first instruction, print LIST" },
	{ "start", cmd_start, O_SAMPLING | O_PID | O_CGROUP | O_ALL | O_JSON,
	  "start [OPTS] (--pid PID | --cgroup DIR | --all)   start a target; prints its id" },
	{ "list", cmd_simple, O_LISTING,
	  "list  [TARGET] [--shallow|--deep] [--top N] [--when P] [--critical N=P] [--json]" },
	{ "stop", cmd_simple, O_JSON, "stop   TARGET   stop sampling; results kept" },
	{ "pause", cmd_simple, O_JSON, "pause  TARGET   stop counting for a while" },
	{ "resume", cmd_simple, O_JSON, "resume TARGET   count again" },
	{ "zero", cmd_simple, O_JSON, "zero   TARGET   zero counts, keep settings" },
	{ "drop", cmd_simple, O_JSON, "drop   TARGET   forget the target and its results" },
	{ "targets", cmd_simple, O_JSON, "targets        every target: id, name, mode, state, samples, lost" },
	{ "status", cmd_simple, O_JSON, "status         daemon version, uptime, BPF programs and their overhead" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pcmon COMMAND [ARGS]   (any unambiguous prefix of a command)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  pcmon %s\n", commands[i].help);
	fprintf(f, "\nOPTS: --virtual|--real  --interval USEC  --when P  --when-file F  --critical NAME=P\n"
		   "      --kernel  --unwind fp|auto  --no-inline  --no-children  --name NAME  -i\n"
		   "Every command takes --socket PATH (or $PCMON_SOCKET; default %s).\n"
		   "See pcmon(1).\n",
		PCMON_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct args a = { 0 };
	char matches[256] = "";
	int r, n = 0;

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
	if (n == 0)
		return fail(NULL, 2, "unknown command '%s' (see pcmon --help)", argv[1]);
	if (n > 1)
		return fail(NULL, 2, "'%s' is ambiguous: it could be %s", argv[1], matches);

	a.cmd = cmd->name;
	r = parse_args(argc - 1, argv + 1, cmd->name, cmd->opts, &a);
	if (r == -1) {
		usage(stdout);
		r = 0;
	} else if (r == 0) {
		r = cmd->fn(&a);
	}
	cJSON_Delete(a.req);
	free(a.when_text);
	return r;
}
