// SPDX-License-Identifier: GPL-2.0-only
/*
 * Talking to an engine, and the profiling run of run, count and top (session.h).
 *
 * A run connects to pcmond, or runs an engine of its own when pcmond does not answer
 * (loaded only then: cli/engine_load.c); it starts a target from the command's request,
 * watches it (a command it launched, a process, or top's screen), then stops it, prints its
 * listing and forgets it, unless the target is to stay with pcmond.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"
#include "session.h"
#include "util.h"

const char *socket_path(const struct cli *c)
{
	const char *env = getenv("PCMON_SOCKET");

	return c->socket ? c->socket : env && *env ? env : PCMON_DEFAULT_SOCKET;
}

/* What to do about a connection to pcmond that failed with -@err. */
static const char *connect_advice(int err)
{
	switch (-err) {
	case EACCES:
	case EPERM: /* it runs: the socket is root's and group pcmon's */
		return "pcmond runs, but its socket is for root and group pcmon: join the group "
		       "('sudo usermod -aG pcmon $USER', then log in again) or use sudo";
	case ENOENT:
	case ECONNREFUSED:
		return "pcmond is not running: 'sudo systemctl start pcmond', or run 'sudo pcmond'";
	default:
		return "is PCMON_SOCKET or --socket right?";
	}
}

int session_connect(const struct cli *c, struct session *s)
{
	s->e = NULL;
	s->fd = proto_connect(socket_path(c));
	if (s->fd < 0)
		return cli_fail(c, 1, "cannot reach pcmond at %s: %s (%s)", socket_path(c),
			    strerror(-s->fd), connect_advice(s->fd));
	return 0;
}

void session_close(struct session *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	engine_free(s->e);
	s->e = NULL;
}

cJSON *session_call_fds(struct session *s, const cJSON *req, int *fds, int nfds)
{
	cJSON *rep = NULL;
	int r;

	if (s->e) {
		struct client cl = { .uid = getuid(), .pid = getpid(), .fds = fds, .nfds = nfds };

		rep = engine_handle(s->e, &cl, req);
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

cJSON *session_call(struct session *s, const cJSON *req)
{
	return session_call_fds(s, req, NULL, 0);
}

int cli_ask(struct cli *c, void (*table)(FILE *, const cJSON *))
{
	struct session s;
	cJSON *rep;
	int r = session_connect(c, &s);

	if (r)
		return r;
	rep = session_call(&s, c->req);
	r = cli_show(c, rep, table);
	cJSON_Delete(rep);
	session_close(&s);
	return r;
}

int open_for_request(struct cli *c, const char *opt, const char *path, int flags, const char *field,
		     int index, int *fd)
{
	*fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (*fd < 0)
		return cli_fail(c, 1, "%s %s: %s", opt, path, strerror(errno));
	req_set(c->req, field, cJSON_CreateNumber(index));
	return 0;
}

/* ---- the profiling run */

/* PCMON_BPF_STATS=1: an engine of our own counts its BPF programs' runs (pcmond --bpf-stats). */
static bool env_bpf_stats(void)
{
	const char *v = getenv("PCMON_BPF_STATS");

	return v && !strcmp(v, "1");
}

/* pcmond's --cfi-tables MiB, for an engine of our own: PCMON_CFI_TABLES=MiB (0: none);
 * -EINVAL if it is not a number of MiB pcmond would take */
static int env_cfi_tables(uint64_t *bytes)
{
	const char *v = getenv("PCMON_CFI_TABLES");
	char *end;
	unsigned long mib;

	*bytes = (uint64_t)PCMON_CFI_TABLES_DEFAULT_MIB << 20;
	if (!v || !*v)
		return 0;
	errno = 0;
	mib = strtoul(v, &end, 10);
	if (*end || errno || *v == '-' || mib > 4096)
		return -EINVAL;
	*bytes = (uint64_t)mib << 20;
	return 0;
}

/*
 * The engine of our own runs in this thread: at the engine's priority, as pcmond (nice
 * ENGINE_NICE, where this process may take it and nobody chose another). Without it, the
 * engine waited its turn behind the watched program's spinning threads while the ring of
 * copied stacks filled, and lost a record now and then. The command runs at the CLI's own
 * priority again (launch()).
 */
static bool raised;

static void raise_priority(void)
{
	errno = 0;
	if (getpriority(PRIO_PROCESS, 0) != 0 || errno)
		return;
	raised = !setpriority(PRIO_PROCESS, 0, ENGINE_NICE);
}


/* pcmond when it answers, else an engine of our own. 0, or the exit status. */
static int open_engine(struct cli *c, struct session *s, struct run *r)
{
	char err[512];

	s->e = NULL;
	s->fd = proto_connect(socket_path(c));
	if (s->fd >= 0) {
		if (r->eo_given)
			fprintf(stderr,
				"pcmon: note: --debuginfod and --cache-dir set pcmon run's own engine; "
				"pcmond has its own (see pcmon status)\n");
		return 0;
	}
	/* pcmond runs but is not ours to reach: an engine of our own would not be either */
	if (s->fd == -EACCES || s->fd == -EPERM)
		return cli_fail(c, 1, "cannot reach pcmond at %s: %s (%s)", socket_path(c),
			    strerror(-s->fd), connect_advice(s->fd));
	r->eo.bpf_stats = env_bpf_stats();
	if (env_cfi_tables(&r->eo.cfi_tables))
		return cli_fail(c, 2, "PCMON_CFI_TABLES=%s: give the BPF unwind tables' size in MiB, "
			    "0 (none) to 4096", getenv("PCMON_CFI_TABLES"));
	if (engine_new(&r->eo, &s->e, err, sizeof(err)))
		return cli_fail(c, 1, "pcmond is not running (%s: %s), and pcmon's own engine cannot start: %s",
			    socket_path(c), strerror(-s->fd), err);
	raise_priority();
	return 0;
}

/* Idle while the target ran, pcmond may have closed the connection: a fresh one. */
static int reconnect(struct cli *c, struct session *s)
{
	if (s->e)
		return 0;
	close(s->fd);
	s->fd = proto_connect(socket_path(c));
	if (s->fd < 0)
		return cli_fail(c, 1, "cannot reach pcmond at %s again: %s (%s)", socket_path(c),
			    strerror(-s->fd), connect_advice(s->fd));
	return 0;
}

/* The environment as it is now, for the command: an engine of our own may set DEBUGINFOD_*. */
static char **env_copy(void)
{
	char **envp;
	size_t n;

	for (n = 0; environ[n]; n++)
		;
	envp = calloc(n + 1, sizeof(*envp));
	if (envp)
		memcpy(envp, environ, n * sizeof(*envp));
	return envp;
}

/* Where execvp() will find CMD, so pcmond can attach to its probes before it starts. */
static char *resolve_exe(const char *cmd)
{
	const char *path = getenv("PATH");
	char buf[4096], *dirs, *dir, *save;

	if (strchr(cmd, '/'))
		return realpath(cmd, NULL);
	dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	for (dir = dirs ? strtok_r(dirs, ":", &save) : NULL; dir;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, sizeof(buf), "%s/%s", *dir ? dir : ".", cmd);
		if (!access(buf, X_OK)) {
			free(dirs);
			return realpath(buf, NULL);
		}
	}
	free(dirs);
	return NULL;
}

/* The start request for the launched @child: its executable, opened by us, and its name. */
static void launch_req(struct cli *c, struct run *r, pid_t child)
{
	char *exe = resolve_exe(r->argv[0]);

	req_set(c->req, "pid", cJSON_CreateNumber(child));
	req_set(c->req, "exec_wait", cJSON_CreateBool(1));
	/* no executable to open is for execvp() to report, not us */
	if (exe) {
		r->fd = open(exe, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		req_set(c->req, "exe", cJSON_CreateString(exe));
		if (r->fd >= 0)
			req_set(c->req, "exe_fd", cJSON_CreateNumber(0));
	}
	free(exe);
	if (!proto_str(c->req, "name", NULL)) {
		char name[64];

		snprintf(name, sizeof(name), "%s", basename_of(r->argv[0]));
		str_sanitize(name, sizeof(name) - 1);
		req_set(c->req, "name", cJSON_CreateString(name));
	}
}

/*
 * Fork the command, held on pipe @go until the target is on: its first instruction is
 * watched. Its exec's errno, if it fails, comes back on r->exec_fd (closed by the exec).
 */
static int launch(struct cli *c, struct run *r, char **envp, pid_t *child, int *go)
{
	int p[2], e[2];

	if (pipe2(p, O_CLOEXEC))
		return cli_fail(c, 1, "pipe: %s", strerror(errno));
	if (pipe2(e, O_CLOEXEC)) {
		close(p[0]);
		close(p[1]);
		return cli_fail(c, 1, "pipe: %s", strerror(errno));
	}
	*child = fork();
	if (*child < 0) {
		close(p[0]);
		close(p[1]);
		close(e[0]);
		close(e[1]);
		return cli_fail(c, 1, "fork: %s", strerror(errno));
	}
	if (*child == 0) {
		char ch;
		int err;

		close(p[1]);
		close(e[0]);
		if (read(p[0], &ch, 1) != 1)
			_exit(127);
		if (raised) /* (it was 0: raising a nice value is always allowed) */
			setpriority(PRIO_PROCESS, 0, 0);
		execvpe(r->argv[0], r->argv, envp);
		err = errno;
		if (write(e[1], &err, sizeof(err)) != sizeof(err))
			_exit(126);
		_exit(127);
	}
	close(p[0]);
	close(e[1]);
	*go = p[1];
	r->exec_fd = e[0];
	signal(SIGINT, SIG_IGN); /* ^C reaches the command; we stay to print its profile */
	signal(SIGQUIT, SIG_IGN);
	launch_req(c, r, *child);
	return 0;
}

/* Start the target; its id into @id. 0, or the exit status (the engine's error shown). */
static int start_target(struct cli *c, struct session *s, struct run *r, char *id, size_t idlen)
{
	cJSON *rep;
	int st = 0;

	req_cmd(c->req, "start");
	rep = session_call_fds(s, c->req, &r->fd, r->fd >= 0);
	r->fd = -1; /* closed with the call */
	if (proto_bool(rep, "ok", 0))
		snprintf(id, idlen, "%.0f", proto_num(rep, "id", 0));
	else
		st = cli_show(c, rep, NULL);
	cJSON_Delete(rep);
	return st;
}

/* Serve our own engine, if any, until @child is gone; its wait status in @status. */
static void wait_child(struct session *s, pid_t child, int *status)
{
	int pidfd = syscall(SYS_pidfd_open, child, 0);

	if (s->e && pidfd >= 0) {
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
	while (waitpid(child, status, 0) < 0 && errno == EINTR)
		;
}

/* Let the held command go, and wait for it. */
static int release(struct cli *c, struct session *s, pid_t child, int *go, int *status)
{
	if (write(*go, "g", 1) != 1)
		return cli_fail(c, 1, "cannot release the command: %s", strerror(errno));
	close(*go);
	*go = -1;
	wait_child(s, child, status);
	return 0;
}

static volatile sig_atomic_t stop_asked;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_asked = 1;
}

/* count --pid: serve our own engine, if any, until the process exits, the time is up or ^C. */
static int wait_pid(struct cli *c, struct session *s, const struct run *r)
{
	/* counted from now: the start may have measured the probes' cost first */
	uint64_t until = r->duration ? now_ns() + (uint64_t)(r->duration * 1e9) : 0;

	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	if (!c->json)
		fprintf(stderr, "pcmon: counting in pid %d %s (^C to stop)\n", r->pid,
			r->duration ? "for the given time" : "until it exits");
	while (!stop_asked && (!until || now_ns() < until) && !kill(r->pid, 0)) {
		if (s->e) {
			struct pollfd p = { .fd = engine_fd(s->e), .events = POLLIN };

			if (poll(&p, 1, 50) > 0)
				engine_work(s->e);
		} else {
			usleep(50000);
		}
	}
	return 0;
}

/* Stop target @id and print its listing as the command's options ask. The exit status. */
static int stop_and_list(struct cli *c, struct session *s, const char *id)
{
	const char *when = proto_str(c->req, "when", NULL);
	cJSON *req = proto_request("stop"), *rep;
	int st;

	cJSON_AddStringToObject(req, "target", id);
	cJSON_Delete(session_call(s, req));
	req_cmd(req, "list");
	if (when)
		cJSON_AddStringToObject(req, "when", when);
	listing_req(req);
	rep = session_call(s, req);
	st = cli_show(c, rep, listing_table);
	cJSON_Delete(rep);
	cJSON_Delete(req);
	return st;
}

static void drop(struct session *s, const char *id)
{
	cJSON *req = proto_request("drop");

	cJSON_AddStringToObject(req, "target", id);
	cJSON_Delete(session_call(s, req));
	cJSON_Delete(req);
}

/* The launched command's exec failed: said, 127 (as a shell says it); else 0. */
static int exec_failed(struct cli *c, struct run *r)
{
	int err;

	if (r->exec_fd < 0 || read(r->exec_fd, &err, sizeof(err)) != sizeof(err))
		return 0;
	r->keep = false; /* nothing ran: no target to keep */
	return cli_fail(c, 127, "cannot run '%s': %s", r->argv[0], strerror(err));
}

/*
 * Where the listing of a launched command goes: -o FILE; else stdout, where the command
 * writes too, if it is a terminal (the listing comes after the command's output) and
 * --json's documents (a script asked for them); else stderr, as time(1) does, so that
 * `pcmon run -- prog > out` keeps the listing apart from the program's output.
 */
static int listing_stream(struct cli *c, const struct run *r, FILE **f)
{
	*f = NULL;
	if (r->output) {
		*f = fopen(r->output, "we");
		return *f ? 0 : cli_fail(c, 1, "-o %s: %s", r->output, strerror(errno));
	}
	if (r->argv && !c->json && !isatty(STDOUT_FILENO))
		*f = stderr;
	return 0;
}

/* Watch the started target @id until it is over; then its listing, but after a view. */
static int watch(struct cli *c, struct session *s, struct run *r, const char *id, pid_t child,
		 int *go)
{
	int st, status = 0;

	if (r->view)
		return r->view(s, id, r->ctx);
	st = r->argv ? release(c, s, child, go, &status) : wait_pid(c, s, r);
	if (!st && r->argv)
		st = exec_failed(c, r);
	if (!st)
		st = reconnect(c, s);
	if (!st)
		st = stop_and_list(c, s, id);
	if (!st && r->argv)
		st = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return st;
}

int session_run(struct cli *c, struct run *r)
{
	struct session s = { .fd = -1 };
	char id[16], **envp = NULL;
	pid_t child = -1;
	int st, go = -1;

	r->exec_fd = -1;
	if (r->argv && !(envp = env_copy())) {
		st = cli_fail(c, 1, "out of memory");
		goto out;
	}
	st = listing_stream(c, r, &c->out); /* (a file that cannot be written: before anything) */
	if (!st)
		st = open_engine(c, &s, r);
	if (!st && r->argv)
		st = launch(c, r, envp, &child, &go);
	if (!st && (st = start_target(c, &s, r, id, sizeof(id))) && child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (st)
		goto out;
	st = watch(c, &s, r, id, child, &go);
	/* the target was ours alone: gone with us */
	if (!r->keep && (s.e || s.fd >= 0))
		drop(&s, id);
out:
	free(envp);
	if (c->out && c->out != stderr && fclose(c->out) && !st)
		st = cli_fail(c, 1, "-o %s: %s", r->output, strerror(errno));
	c->out = NULL;
	if (r->exec_fd >= 0)
		close(r->exec_fd);
	if (go >= 0)
		close(go);
	if (r->fd >= 0)
		close(r->fd);
	session_close(&s);
	return st;
}
