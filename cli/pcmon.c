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
	O_DEBUGINFOD = 1 << 20, O_CACHE_DIR = 1 << 21,
};
#define O_SAMPLING (O_VIRTUAL | O_REAL | O_INTERVAL | O_WHEN | O_WHEN_FILE | O_CRITICAL | \
		    O_KERNEL | O_UNWIND | O_NO_INLINE | O_NO_CHILDREN | O_NAME | O_ICASE)
#define O_LISTING (O_SHALLOW | O_DEEP | O_TOP | O_WHEN | O_WHEN_FILE | O_CRITICAL | O_ICASE | \
		   O_NO_INLINE | O_JSON)

/* Set request field @k to @v (a later option replaces an earlier one: one field, once). */
static void req_set(cJSON *req, const char *k, cJSON *v)
{
	if (cJSON_GetObjectItemCaseSensitive(req, k))
		cJSON_ReplaceItemInObjectCaseSensitive(req, k, v);
	else
		cJSON_AddItemToObject(req, k, v);
}

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
	{ "debuginfod", required_argument, NULL, 'D' },
	{ "cache-dir", required_argument, NULL, 'K' },
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
	{ 'D', O_DEBUGINFOD }, { 'K', O_CACHE_DIR },
};

struct args {
	unsigned seen;
	const char *cmd;
	cJSON *req;		/* the request being built */
	const char *target;	/* positional TARGET */
	char **argv_cmd;	/* run: the command */
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

static int parse_count(const struct args *a, const char *opt, const char *s, long lo, long hi,
		       long *out)
{
	if (parse_whole(s, lo, hi, out))
		return fail(a, 2, "%s %s: expected a whole number from %ld to %ld", opt, s, lo, hi);
	return 0;
}

/* Validate a pattern here, so that a bad one stops everything before it starts. */
static int check_pattern(const struct args *a, const char *opt, const char *text, unsigned flags)
{
	struct pat_error pe = { 0 };
	struct pat *p = NULL;
	int r = pat_parse(text, flags, &p, &pe);

	pat_free(p);
	if (r == -EINVAL) {
		if (flags & PAT_FROM_FILE) {
			int line, col;

			pat_error_location(text, pe.column, &line, &col);
			return fail(a, 2, "%s: line %d, column %d: %s", opt, line, col, pe.msg);
		}
		return fail(a, 2, "%s: column %d: %s", opt, pe.column, pe.msg);
	}
	return r ? fail(a, 1, "%s: %s", opt, strerror(-r)) : 0;
}

/* The stack walkers --unwind names: what the parser accepts and --help shows. */
static const char *const unwind_methods[] = { "fp", "dwarf", "auto" };

static bool unwind_known(const char *m)
{
	for (size_t i = 0; i < ARRAY_SIZE(unwind_methods); i++)
		if (!strcmp(m, unwind_methods[i]))
			return true;
	return false;
}

/* "fp|dwarf|auto" (sep "|") or "fp, dwarf or auto" (sep ", ", last " or ") */
static void unwind_list(char *buf, size_t len, const char *sep, const char *last)
{
	size_t n = ARRAY_SIZE(unwind_methods), at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++)
		at += snprintf(buf + at, len - at, "%s%s", i == 0 ? "" : i + 1 == n ? last : sep,
			       unwind_methods[i]);
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

static int parse_args(int argc, char **argv, const char *cmd, unsigned allowed, struct args *a)
{
	/* run stops at the command; the others take options anywhere */
	const char *optstring = !strcmp(cmd, "run") ? "+:iv" : "-:iv";
	cJSON *crit = NULL;
	unsigned flags = 0;
	int c;

	a->json = json_asked(argc, argv, optstring);
	optind = 0;
	opterr = 0;
	a->req = proto_request(cmd);
	while ((c = getopt_long(argc, argv, optstring, long_opts, NULL)) != -1) {
		unsigned bit = 0;
		long v;

		for (size_t k = 0; k < ARRAY_SIZE(opt_bits); k++)
			if (opt_bits[k].ch == c)
				bit = opt_bits[k].bit;
		if (bit && !(allowed & bit))
			return fail(a, 2, "%s: %s is not an option of %s (see pcmon --help)", cmd,
				    argv[optind - 1], cmd);
		a->seen |= bit;
		switch (c) {
		case 1: /* a positional argument */
			if (a->target)
				return fail(a, 2, "%s: unexpected argument '%s'", cmd, optarg);
			a->target = optarg;
			break;
		case 'V':
		case 'R':
			cJSON_DeleteItemFromObject(a->req, "mode");
			req_set(a->req, "mode", cJSON_CreateString(c == 'R' ? "real" : "virtual"));
			break;
		case 't':
			if (parse_count(a, "--interval", optarg, 1, 60000000, &v))
				return 2;
			req_set(a->req, "interval_us", cJSON_CreateNumber(v));
			break;
		case 'w':
			cJSON_DeleteItemFromObject(a->req, "when");
			req_set(a->req, "when", cJSON_CreateString(optarg));
			break;
		case 'W':
			free(a->when_text);
			a->when_text = read_file(optarg, NULL);
			if (!a->when_text)
				return fail(a, 2, "--when-file %s: %s", optarg, strerror(errno));
			flags |= PAT_FROM_FILE;
			cJSON_DeleteItemFromObject(a->req, "when");
			req_set(a->req, "when", cJSON_CreateString(a->when_text));
			req_set(a->req, "when_from_file", cJSON_CreateBool(1));
			break;
		case 'c':
			if (!crit)
				crit = cJSON_AddArrayToObject(a->req, "critical");
			cJSON_AddItemToArray(crit, cJSON_CreateString(optarg));
			break;
		case 'k':
			req_set(a->req, "kernel", cJSON_CreateBool(1));
			break;
		case 'u':
			if (!unwind_known(optarg)) {
				char known[64];

				unwind_list(known, sizeof(known), ", ", " or ");
				return fail(a, 2, "--unwind %s: use %s", optarg, known);
			}
			req_set(a->req, "unwind", cJSON_CreateString(optarg));
			break;
		case 'I':
			req_set(a->req, "no_inline", cJSON_CreateBool(1));
			break;
		case 'C':
			req_set(a->req, "children", cJSON_CreateBool(0));
			break;
		case 'n':
			req_set(a->req, "name", cJSON_CreateString(optarg));
			break;
		case 'i':
			if (!(allowed & O_ICASE))
				return fail(a, 2, "%s: -i is not an option of %s", cmd, cmd);
			flags |= PAT_ICASE;
			req_set(a->req, "icase", cJSON_CreateBool(1));
			break;
		case 'p':
			if (parse_count(a, "--pid", optarg, 1, 4194304, &v))
				return 2;
			req_set(a->req, "pid", cJSON_CreateNumber(v));
			break;
		case 'g':
			req_set(a->req, "cgroup", cJSON_CreateString(optarg));
			break;
		case 'a':
			req_set(a->req, "all", cJSON_CreateBool(1));
			break;
		case 's':
			a->view.shallow = 1;
			break;
		case 'd':
			a->view.deep = 1;
			break;
		case 'T':
			if (parse_count(a, "--top", optarg, 1, 1000000000, &a->view.top))
				return 2;
			break;
		case 'L':
			return fail(a, 2, "--lines is not available yet in this pcmon");
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
		default:
			return fail(a, 2, "%s: unknown option '%s' (see pcmon --help)", cmd,
				    argv[optind - 1]);
		}
	}
	if ((a->seen & O_VIRTUAL) && (a->seen & O_REAL))
		return fail(a, 2, "--virtual and --real exclude each other: give one");
	if ((a->seen & O_WHEN) && (a->seen & O_WHEN_FILE))
		return fail(a, 2, "--when and --when-file exclude each other: give one");
	if (proto_str(a->req, "when", NULL)) {
		int r = check_pattern(a, (a->seen & O_WHEN_FILE) ? "--when-file" : "--when",
				      proto_str(a->req, "when", ""), flags);

		if (r)
			return r;
	}
	if (crit) {
		const cJSON *it;

		cJSON_ArrayForEach(it, crit) {
			const char *eq = strchr(it->valuestring, '=');
			char opt[160];

			if (!eq || eq == it->valuestring)
				return fail(a, 2, "--critical '%s': expected NAME=PATTERN",
					    it->valuestring);
			snprintf(opt, sizeof(opt), "--critical %.*s", (int)(eq - it->valuestring),
				 it->valuestring);
			if (check_pattern(a, opt, eq + 1, flags & PAT_ICASE))
				return 2;
		}
	}
	if (!strcmp(cmd, "run")) {
		if (optind >= argc)
			return fail(a, 2, "run: no command: pcmon run [OPTIONS] -- CMD [ARGS]");
		a->argv_cmd = argv + optind;
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
		return fail(a, 2, "%s: which target? give its id or name (see pcmon targets)",
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
	int r, fd = -1;
	char esc[256];

	if (a->target)
		return fail(a, 2, "start: unexpected argument '%s' (use --pid PID, --cgroup DIR or --all)",
			    a->target);
	if (!!(a->seen & O_PID) + !!(a->seen & O_CGROUP) + !!(a->seen & O_ALL) != 1)
		return fail(a, 2, "start: give exactly one of --pid PID, --cgroup DIR, --all");
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
					  .cache_dir = a->cache_dir ? a->cache_dir : cache };

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

static const struct command {
	const char *name;
	int (*fn)(struct args *);
	unsigned opts;
	const char *help;
} commands[] = {
	{ "run", cmd_run,
	  O_SAMPLING | O_SHALLOW | O_DEEP | O_TOP | O_JSON | O_DEBUGINFOD | O_CACHE_DIR,
	  "run   [OPTS] [--shallow|--deep] [--top N] -- CMD [ARGS]\n"
	  "              launch CMD watched from its first instruction, print LIST;\n"
	  "              without pcmond: --debuginfod URLS (default $DEBUGINFOD_URLS) --cache-dir DIR" },
	{ "start", cmd_start, O_SAMPLING | O_PID | O_CGROUP | O_ALL | O_JSON,
	  "start [OPTS] (--pid PID | --cgroup DIR | --all)   start a target; prints its id" },
	{ "list", cmd_simple, O_LISTING,
	  "list  [TARGET] [--shallow|--deep] [--top N] [--when P|--when-file F] [-i]\n"
	  "              [--critical N=P] [--no-inline]   the listing so far" },
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
	char unwind[64];

	unwind_list(unwind, sizeof(unwind), "|", "|");
	fprintf(f, "usage: pcmon COMMAND [ARGS]   (any unambiguous prefix of a command)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  pcmon %s\n", commands[i].help);
	fprintf(f, "\nOPTS: --virtual|--real  --interval USEC  --when P  --when-file F  --critical NAME=P\n"
		   "      --kernel  --unwind %s  --no-inline  --no-children  --name NAME\n"
		   "      -i|--ignore-case (names in patterns)\n"
		   "Every command takes --json (errors too: {\"error\": ...} on stdout), -v|--verbose,\n"
		   "and --socket PATH (or $PCMON_SOCKET; default %s).\n"
		   "See pcmon(1).\n",
		unwind, PCMON_DEFAULT_SOCKET);
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
	a.json = json_anywhere(argc, argv);
	if (n == 0)
		return fail(&a, 2, "unknown command '%s' (see pcmon --help)", argv[1]);
	if (n > 1)
		return fail(&a, 2, "'%s' is ambiguous: it could be %s", argv[1], matches);

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
