// SPDX-License-Identifier: GPL-2.0-only
/* pcmond: the pcmon daemon. Loads the BPF programs once and serves targets over a socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "engine.h"
#include "http.h"
#include "push.h"
#include "pcmon_bpf.h"
#include "pcmon_sample.h"
#include "proto.h"
#include "srv.h"
#include "util.h"

/*
 * systemd's readiness protocol (sd_notify(3)): one datagram, "READY=1", to the socket
 * $NOTIFY_SOCKET names (a leading '@' is the abstract namespace). Nothing without it.
 */
static void notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		pr_warn("cannot tell systemd %s: %s", state, strerror(errno));
	if (fd >= 0)
		close(fd);
}

/*
 * systemd's socket activation (sd_listen_fds(3)): the listening socket is fd 3 when
 * $LISTEN_PID is ours and $LISTEN_FDS is 1. 0: none passed; -1: passed, but not one.
 */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int fd;

	if (!pid || !fds || strtol(pid, NULL, 10) != getpid())
		return 0;
	fd = strcmp(fds, "1") ? -1 : 3;
	unsetenv("LISTEN_PID"); /* not for the processes pcmond starts */
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	return fd;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pcmond [--config FILE] [--check-config] [--socket PATH] [--state-dir DIR]\n"
		"              [--foreground] [--max-stack N] [--dwarf-stack N] [--user-targets N]\n"
		"              [--user-memory MiB] [--debuginfod URLS] [--cache-dir DIR]\n"
		"              [--max-clients N] [--max-user-clients N] [--idle-timeout S]\n"
		"              [--request-timeout S] [--write-timeout S] [--drain-entries N]\n"
		"              [--bpf-stats] [--object-idle S] [--object-memory MiB]\n"
		"              [--cfi-tables MiB]\n"
		"              [--http ADDR:PORT] [--push URL] [--otlp URL] [--push-interval S]\n"
		"              [--http-token-file FILE] [--http-tls-cert FILE --http-tls-key FILE]\n"
		"              [-v]\n"
		"  --config FILE     settings and targets to start (default\n"
		"                    %s; the options below override its\n"
		"                    [daemon] section; SIGHUP reads it again)\n"
		"  --check-config    check the file (and the options) and exit: 0 if good\n"
		"  --socket PATH     listen here (default %s)\n"
		"  --state-dir DIR   keep results here across restarts (default %s)\n"
		"  --foreground      do not detach (as under systemd)\n"
		"  --max-stack N     frames per stack, up to 512 (default 512; raises\n"
		"                    kernel.perf_event_max_stack to it if lower)\n"
		"  --dwarf-stack N   most bytes of user stack a --unwind dwarf sample copies,\n"
		"                    1024 to 8388608 (default 1048576; each sample copies only\n"
		"                    what its thread's stack holds; a deeper stack keeps the\n"
		"                    frames walked and is counted as cut short)\n"
		"  --user-targets N  targets one user other than root may have (default 16;\n"
		"                    32 of the 255 are root's alone)\n"
		"  --user-memory MiB results the targets of one user may hold (default 256);\n"
		"                    past it, new stacks are lost and counted (memory_limit)\n"
		"  --debuginfod URLS fetch debug info missing here from these debuginfod servers\n"
		"                    (space-separated; default $DEBUGINFOD_URLS; none: off)\n"
		"  --cache-dir DIR   keep fetched debug info here (default %s)\n"
		"  --max-clients N   connections in all, %d to %d (default %d; the last %d\n"
		"                    are kept for root)\n"
		"  --max-user-clients N\n"
		"                    connections one user other than root may hold\n"
		"                    (default %d)\n"
		"  --idle-timeout S  close a connection without a request for S seconds\n"
		"                    (default %d)\n"
		"  --request-timeout S\n"
		"                    close one that sent part of a request and not the rest\n"
		"                    within S seconds (default %d)\n"
		"  --write-timeout S close one that takes less than %d KiB of its replies\n"
		"                    in S seconds (default %d; it is not read from while\n"
		"                    more than %d KiB of replies wait)\n"
		"  --drain-entries N sampling entries BPF holds between two drains, 1024 to\n"
		"                    1048576 (default 65536; a drain comes when an eighth\n"
		"                    are used; past all of them samples are lost and counted)\n"
		"  --bpf-stats       count BPF programs' runs and run time for status (every\n"
		"                    BPF program on the machine then pays two clock reads)\n"
		"  --object-idle S   let go of an object file no sample needed for S seconds\n"
		"                    (default 60; its names stay with the results)\n"
		"  --object-memory MiB\n"
		"                    while pcmond's heap, less results and names, holds more,\n"
		"                    let go of the objects least recently used (not in the\n"
		"                    last 5 s; default 64)\n"
		"  --cfi-tables MiB  walk dwarf stacks in BPF, with call-frame tables of at\n"
		"                    most MiB (default 64; 0: none, every dwarf stack is copied)\n"
		"  --http ADDR:PORT  serve published targets' profiles (/debug/pprof/profile),\n"
		"                    /metrics and /healthz over HTTP; PORT alone: on 127.0.0.1\n"
		"  --http-token-file FILE\n"
		"                    every request must carry this bearer token (mode 0600)\n"
		"  --push URL        every --push-interval, send published targets' windows to\n"
		"                    Grafana Pyroscope at URL (POST URL/ingest, pprof)\n"
		"  --otlp URL        ... and to an OpenTelemetry collector (OTLP/HTTP profiles,\n"
		"                    POST URL/v1development/profiles)\n"
		"  --push-interval S seconds between windows (default 15)\n"
		"  --http-tls-cert FILE, --http-tls-key FILE\n"
		"                    HTTPS with this PEM certificate and key; an address other\n"
		"                    than loopback needs them and a token\n"
		"  -v, --verbose     log more (twice: libbpf debug output)\n",
		CONF_DEFAULT_PATH, PCMON_DEFAULT_SOCKET, PCMON_DEFAULT_STATE_DIR, PCMON_DEFAULT_CACHE_DIR, SRV_MIN_CLIENTS, SRV_MAX_CLIENTS,
		SRV_DEFAULT_MAX_CLIENTS, SRV_ROOT_RESERVE, SRV_DEFAULT_PER_USER, SRV_DEFAULT_IDLE_S,
		SRV_DEFAULT_REQUEST_S, SRV_PROGRESS_BYTES / 1024, SRV_DEFAULT_WRITE_S,
		SRV_OUT_CAP / 1024);
}

/*
 * Detach from the terminal, as daemon(3) does, before anything is set up: the process that
 * serves must be the one that made its threads (a fork keeps only the caller's) and its signal
 * descriptor (which wakes an epoll only in the process that added it). The command waits until
 * pcmond serves (detach_done()), and exits with pcmond's status and message if it could not.
 * Returns the descriptor detach_done() writes to, or -errno.
 */
static int detach_begin(void)
{
	int st = 0, p[2];
	ssize_t n;
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int r = -errno;

		close(p[0]);
		close(p[1]);
		return r;
	}
	if (pid) {
		close(p[1]);
		while ((n = read(p[0], &c, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		/* (the pipe closed unwritten: pcmond exited, having said why on stderr) */
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				_exit(1);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
	}
	close(p[0]);
	setsid();
	return p[1];
}

/* pcmond serves: the terminal let go, and the command that started it told. */
static void detach_done(int fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (chdir("/"))
		pr_warn("cannot change to /: %s", strerror(errno));
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	if (write(fd, "", 1) != 1)
		pr_warn("cannot tell the command that started pcmond: %s", strerror(errno));
	close(fd);
}

/*
 * On a machine kept busy by many runnable threads, the scheduler shares a CPU evenly: pcmond
 * at the default priority waited its turn behind each of 256 spinning threads for every step
 * of a command, seconds in all. pcmond works in short bursts, so a higher priority (nice
 * -10, what the service unit also asks) costs the others little and makes it answer at once.
 * An administrator's own choice (a nice value other than 0) is left alone. Before any
 * thread starts: on Linux each thread has its own nice value, and new threads inherit it.
 */
static void raise_priority(void)
{
	int cur;

	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno || cur != 0)
		return;
	if (setpriority(PRIO_PROCESS, 0, ENGINE_NICE))
		pr_info("cannot raise the scheduling priority (nice %d): %s", ENGINE_NICE,
			strerror(errno));
}

/* The options: pcmond's settings (conf_settings[], also the keys of [daemon]) and these. */
enum {
	OPT_CONFIG = 256,
	OPT_CHECK_CONFIG,
	OPT_SETTING, /* + the setting's index */
};

static const struct option own_opts[] = {
	{ "foreground", no_argument, NULL, 'f' },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
};

struct args {
	struct conf_daemon cmdline;	/* the settings given as options */
	const char *config;		/* --config FILE, NULL: the default */
	bool check, foreground;
};

/* 0, 1 to exit 0 (--help, --version), or 2 for a usage error (said). */
static int parse_args(int argc, char **argv, struct args *a)
{
	struct option opts[ARRAY_SIZE(own_opts) + CONF_NSETTINGS + 1] = { 0 };
	char shorts[64] = "fvhV", why[160];
	size_t n = 0, ns = strlen(shorts);
	int c;

	for (size_t i = 0; i < ARRAY_SIZE(own_opts); i++)
		opts[n++] = own_opts[i];
	for (int i = 0; i < CONF_NSETTINGS; i++) {
		const struct conf_setting *cs = &conf_settings[i];

		opts[n++] = (struct option){ cs->name,
					     cs->kind == CONF_FLAG ? no_argument : required_argument,
					     NULL, OPT_SETTING + i };
		if (cs->short_opt) {
			shorts[ns++] = cs->short_opt;
			shorts[ns++] = ':';
		}
	}
	while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
		int i = c - OPT_SETTING;

		for (int k = 0; k < CONF_NSETTINGS && c < OPT_SETTING; k++)
			if (c == conf_settings[k].short_opt)
				i = k;
		if (i >= 0 && i < CONF_NSETTINGS) {
			int r = conf_daemon_set(&a->cmdline, conf_settings[i].name,
						optarg ? optarg : "yes", 0, why, sizeof(why));

			if (r) {
				fprintf(stderr, "pcmond: --%s: %s\n", conf_settings[i].name,
					r == -ENOMEM ? "out of memory" : why);
				return 2;
			}
			continue;
		}
		switch (c) {
		case 'f':
			a->foreground = true;
			break;
		case OPT_CONFIG:
			a->config = optarg;
			break;
		case OPT_CHECK_CONFIG:
			a->check = true;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("pcmond %s\n", PCMON_VERSION);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "pcmond: unexpected argument '%s' (see pcmond --help)\n", argv[optind]);
		return 2;
	}
	return 0;
}

/* Each error of @c on its own line (to stderr, or to the log): true if there were any. */
static bool conf_errors(const struct conf *c, bool log)
{
	for (size_t i = 0; i < c->nerrors; i++) {
		if (log)
			pr_err("%s", c->errors[i]);
		else
			fprintf(stderr, "%s\n", c->errors[i]);
	}
	if (c->more_errors && log)
		pr_err("%s: %zu more errors", c->path, c->more_errors);
	else if (c->more_errors)
		fprintf(stderr, "%s: %zu more errors\n", c->path, c->more_errors);
	return c->nerrors > 0;
}

/*
 * SIGHUP: the file read again. One with errors is refused whole and nothing changes;
 * otherwise the targets follow it (conf_apply()), and [daemon] settings that changed wait
 * for a restart.
 */
static void reload(struct engine *e, struct conf **cur, const struct args *a)
{
	struct conf *n;

	notify("RELOADING=1");
	n = conf_read((*cur)->path, a->config != NULL);
	if (!n) {
		pr_err("%s: not reloaded: out of memory", (*cur)->path);
	} else if (conf_errors(n, true)) {
		pr_err("%s: not reloaded: %zu errors; nothing changed", n->path,
		       n->nerrors + n->more_errors);
		conf_free(n);
	} else {
		conf_daemon_changes(*cur, n, &a->cmdline);
		conf_apply(e, *cur, n);
		pr_info("%s: reloaded: %zu targets", n->path, n->ntargets);
		conf_free(*cur);
		*cur = n;
	}
	notify("READY=1");
}

/* @path made absolute: pcmond moves to / when it detaches, and reads the file again. */
static char *absolute(const char *path)
{
	char cwd[4096], *abs;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	return asprintf(&abs, "%s/%s", cwd, path) < 0 ? NULL : abs;
}

static void http_work_cb(void *h)
{
	http_work(h);
}

static int http_timeout_cb(void *h)
{
	return http_timeout_ms(h);
}

/* --http: the HTTP server, in the socket server's loop (docs/fleet.md). */
static int serve_http(const struct conf_daemon *set, struct engine *e, struct srv *s,
		      struct http **out)
{
	const struct conf_value *v = set->v;
	struct http_opts o = {
		.listen = v[CONF_HTTP].str,
		.token_file = v[CONF_HTTP_TOKEN_FILE].set ? v[CONF_HTTP_TOKEN_FILE].str : NULL,
		.tls_cert = v[CONF_HTTP_TLS_CERT].set ? v[CONF_HTTP_TLS_CERT].str : NULL,
		.tls_key = v[CONF_HTTP_TLS_KEY].set ? v[CONF_HTTP_TLS_KEY].str : NULL,
	};
	char err[512];
	int r = http_open(e, &o, out, err, sizeof(err));

	if (!r)
		r = srv_watch(s, &(struct srv_watch){ http_fd(*out), http_work_cb, http_timeout_cb,
						      *out });
	if (r)
		fprintf(stderr, "pcmond: %s\n", r == -EINVAL ? err : strerror(-r));
	return r;
}

static void push_work_cb(void *p)
{
	push_work(p);
}

/* What the pushes counted, in `pcmon status` (and so in /metrics). */
static void push_status(void *p, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "push");
	struct push_stats st;

	push_stats(p, &st);
#define ADD_PUSH(f) cJSON_AddNumberToObject(o, #f, st.f);
	PUSH_COUNTERS(ADD_PUSH)
#undef ADD_PUSH
	cJSON_AddNumberToObject(o, "queued", st.queued);
	cJSON_AddNumberToObject(o, "targets", st.targets);
}

/* --push, --otlp: windows of published targets sent every --push-interval (docs/fleet.md). */
static int start_push(const struct conf_daemon *set, struct engine *e, struct srv *s,
		      struct push **out)
{
	const struct conf_value *v = set->v;
	struct push_opts o = {
		.pyroscope = v[CONF_PUSH].set ? v[CONF_PUSH].str : NULL,
		.otlp = v[CONF_OTLP].set ? v[CONF_OTLP].str : NULL,
		.interval_s = v[CONF_PUSH_INTERVAL].set ? v[CONF_PUSH_INTERVAL].num : 0,
	};
	char err[512];
	int r = push_open(e, &o, out, err, sizeof(err));

	if (!r)
		r = srv_watch(s, &(struct srv_watch){ push_fd(*out), push_work_cb, NULL, *out });
	if (!r)
		engine_status_hook(e, push_status, *out);
	if (r)
		fprintf(stderr, "pcmond: %s\n", r == -EINVAL ? err : strerror(-r));
	return r;
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	struct conf_daemon set = { 0 };
	struct engine_opts eo = { 0 };
	struct srv_opts so = { 0 };
	enum conf_setting_id bad;
	struct conf *conf = NULL;
	struct engine *e = NULL;
	struct srv *s = NULL;
	struct http *h = NULL;
	struct push *pu = NULL;
	const char *sock, *given;
	char err[512], *path;
	int r, ready_fd = -1;

	r = parse_args(argc, argv, &a);
	if (r) {
		conf_daemon_free(&a.cmdline);
		return r == 1 ? 0 : 2;
	}
	/* --check-config names the file as given; pcmond, as it will read it again */
	given = a.config ? a.config : CONF_DEFAULT_PATH;
	path = a.check ? strdup(given) : absolute(given);
	conf = path ? conf_read(path, a.config != NULL) : NULL;
	free(path);
	if (!conf || conf_errors(conf, false)) {
		if (!conf)
			fprintf(stderr, "pcmond: out of memory\n");
		r = 1;
		goto out;
	}
	/* the command line first, the file's [daemon] for the rest */
	if (conf_daemon_merge(&set, &a.cmdline) || conf_daemon_merge(&set, &conf->d)) {
		fprintf(stderr, "pcmond: out of memory\n");
		r = 1;
		goto out;
	}
	if (conf_daemon_check(&set, &bad, err, sizeof(err))) {
		if (set.v[bad].line)
			fprintf(stderr, "%s:%d: [daemon] %s: %s\n", conf->path, set.v[bad].line,
				conf_settings[bad].name, err);
		else
			fprintf(stderr, "pcmond: --%s: %s\n", conf_settings[bad].name, err);
		r = a.check || set.v[bad].line ? 1 : 2;
		goto out;
	}
	if (a.check) {
		printf("%s: good: %zu target%s", conf->path, conf->ntargets,
		       conf->ntargets == 1 ? "" : "s");
		for (size_t i = 0; i < conf->ntargets; i++)
			printf("%s%s", i ? ", " : " (", conf->targets[i].name);
		printf("%s\n", conf->ntargets ? ")" : "");
		r = 0;
		goto out;
	}
	conf_daemon_opts(&set, &eo, &so, &sock);
	/* (systemd's socket is for this process: asked before any fork) */
	so.listen_fd = activated_fd();
	if (so.listen_fd < 0) {
		fprintf(stderr, "pcmond: systemd passed more than one socket: pcmond.socket passes one\n");
		r = 1;
		goto out;
	}
	if (!a.foreground && (ready_fd = detach_begin()) < 0) {
		fprintf(stderr, "pcmond: cannot detach: %s\n", strerror(-ready_fd));
		r = 1;
		goto out;
	}
	if (geteuid() != 0)
		fprintf(stderr, "pcmond: warning: not root; loading BPF will likely fail\n");
	raise_priority();

	r = engine_new(&eo, &e, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pcmond: %s\n", err);
		r = 1;
		goto out;
	}
	r = srv_open(sock, e, &so, &s, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pcmond: %s\n", err);
		r = 1;
		goto out;
	}
	if (set.v[CONF_HTTP].set && (r = serve_http(&set, e, s, &h))) {
		r = 1;
		goto out;
	}
	if ((set.v[CONF_PUSH].set || set.v[CONF_OTLP].set) && (r = start_push(&set, e, s, &pu))) {
		r = 1;
		goto out;
	}
	pr_info("pcmond %s serving %s%s, results in %s", PCMON_VERSION, sock,
		so.listen_fd ? " (socket from systemd)" : "", eo.state_dir);
	/* the file's targets, before systemd hears that pcmond is up */
	conf_apply(e, NULL, conf);
	notify("READY=1");
	if (ready_fd >= 0)
		detach_done(ready_fd);
	while ((r = srv_run(s)) == SRV_RELOAD)
		reload(e, &conf, &a);
	r = r ? 1 : 0;
	notify("STOPPING=1");
out:
	if (e)
		engine_quiesce(e);
	push_close(pu); /* the last windows (and the engine's status asks it: before the engine) */
	if (e)
		engine_flush(e, true);
	http_close(h);
	srv_close(s);
	engine_free(e);
	conf_free(conf);
	conf_daemon_free(&set);
	conf_daemon_free(&a.cmdline);
	return r;
}
