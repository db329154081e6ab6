// SPDX-License-Identifier: GPL-2.0-only
/* pcmond: the pcmon daemon. Loads the BPF programs once and serves targets over a socket. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
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
		"usage: pcmond [--socket PATH] [--state-dir DIR] [--foreground] [--max-stack N]\n"
		"              [--dwarf-stack N] [--user-targets N] [--user-memory MiB]\n"
		"              [--debuginfod URLS] [--cache-dir DIR] [--max-clients N]\n"
		"              [--max-user-clients N] [--idle-timeout S] [--request-timeout S]\n"
		"              [--write-timeout S] [--drain-entries N] [--bpf-stats] [-v]\n"
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
		"  -v, --verbose     log more (twice: libbpf debug output)\n",
		PCMON_DEFAULT_SOCKET, PCMON_DEFAULT_STATE_DIR, PCMON_DEFAULT_CACHE_DIR, SRV_MIN_CLIENTS, SRV_MAX_CLIENTS,
		SRV_DEFAULT_MAX_CLIENTS, SRV_ROOT_RESERVE, SRV_DEFAULT_PER_USER, SRV_DEFAULT_IDLE_S,
		SRV_DEFAULT_REQUEST_S, SRV_PROGRESS_BYTES / 1024, SRV_DEFAULT_WRITE_S,
		SRV_OUT_CAP / 1024);
}

/* A whole number in [lo, hi] for option @opt, or a one-line error. */
static int parse_range(const char *opt, const char *arg, long lo, long hi, const char *unit,
		       uint32_t *out)
{
	long v;

	if (parse_whole(arg, lo, hi, &v)) {
		fprintf(stderr, "pcmond: %s %s: give a number of %s from %ld to %ld\n", opt, arg, unit,
			lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Options with no short form. */
enum {
	OPT_MAX_CLIENTS = 256,
	OPT_MAX_USER_CLIENTS,
	OPT_IDLE_TIMEOUT,
	OPT_REQUEST_TIMEOUT,
	OPT_WRITE_TIMEOUT,
	OPT_DRAIN_ENTRIES,
	OPT_BPF_STATS,
};

/*
 * On a machine kept busy by many runnable threads, the scheduler shares a CPU evenly: pcmond
 * at the default priority waited its turn behind each of 256 spinning threads for every step
 * of a command, seconds in all. pcmond works in short bursts, so a higher priority (nice
 * -10, what the service unit also asks) costs the others little and makes it answer at once.
 * An administrator's own choice (a nice value other than 0) is left alone. Before any
 * thread starts: on Linux each thread has its own nice value, and new threads inherit it.
 */
#define PCMOND_NICE (-10)

static void raise_priority(void)
{
	int cur;

	errno = 0;
	cur = getpriority(PRIO_PROCESS, 0);
	if (errno || cur != 0)
		return;
	if (setpriority(PRIO_PROCESS, 0, PCMOND_NICE))
		pr_info("cannot raise the scheduling priority (nice %d): %s", PCMOND_NICE,
			strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "max-stack", required_argument, NULL, 'm' },
		{ "dwarf-stack", required_argument, NULL, 'D' },
		{ "user-targets", required_argument, NULL, 'T' },
		{ "user-memory", required_argument, NULL, 'M' },
		{ "debuginfod", required_argument, NULL, 'U' },
		{ "cache-dir", required_argument, NULL, 'C' },
		{ "max-clients", required_argument, NULL, OPT_MAX_CLIENTS },
		{ "max-user-clients", required_argument, NULL, OPT_MAX_USER_CLIENTS },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ "request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT },
		{ "write-timeout", required_argument, NULL, OPT_WRITE_TIMEOUT },
		{ "drain-entries", required_argument, NULL, OPT_DRAIN_ENTRIES },
		{ "bpf-stats", no_argument, NULL, OPT_BPF_STATS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{},
	};
	const char *sock = PCMON_DEFAULT_SOCKET;
	struct engine_opts eo = { .state_dir = PCMON_DEFAULT_STATE_DIR,
				  .cache_dir = PCMON_DEFAULT_CACHE_DIR };
	struct srv_opts so = { 0 };
	struct engine *e = NULL;
	struct srv *s = NULL;
	bool foreground = false;
	char err[512];
	int c, r;

	while ((c = getopt_long(argc, argv, "s:d:fm:D:T:M:U:C:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'd':
			eo.state_dir = optarg;
			break;
		case 'f':
			foreground = true;
			break;
		case 'm':
			if (parse_range("--max-stack", optarg, 1, 512, "frames", &eo.max_depth))
				return 2;
			break;
		case 'D':
			if (parse_range("--dwarf-stack", optarg, 1024, PCMON_DWARF_STACK_MAX, "bytes", &eo.dwarf_stack))
				return 2;
			break;
		case 'T':
			if (parse_range("--user-targets", optarg, 1, PCMON_MAX_TARGETS - 1 - ENGINE_ROOT_RESERVE,
					"targets", &eo.user_targets))
				return 2;
			break;
		case 'M': {
			uint32_t mib;

			if (parse_range("--user-memory", optarg, 1, 1 << 20, "MiB", &mib))
				return 2;
			eo.user_memory = (uint64_t)mib << 20;
			break;
		}
		case 'U':
			eo.debuginfod = optarg;
			break;
		case 'C':
			eo.cache_dir = optarg;
			break;
		case OPT_MAX_CLIENTS:
			if (parse_range("--max-clients", optarg, SRV_MIN_CLIENTS, SRV_MAX_CLIENTS,
					"connections", &so.max_clients))
				return 2;
			break;
		case OPT_MAX_USER_CLIENTS:
			if (parse_range("--max-user-clients", optarg, 1,
					SRV_MAX_CLIENTS - SRV_ROOT_RESERVE, "connections", &so.per_user))
				return 2;
			break;
		case OPT_IDLE_TIMEOUT:
			if (parse_range("--idle-timeout", optarg, 1, 86400, "seconds", &so.idle_s))
				return 2;
			break;
		case OPT_REQUEST_TIMEOUT:
			if (parse_range("--request-timeout", optarg, 1, 3600, "seconds", &so.request_s))
				return 2;
			break;
		case OPT_DRAIN_ENTRIES:
			if (parse_range("--drain-entries", optarg, 1024, 1048576, "entries",
					&eo.counts_entries))
				return 2;
			break;
		case OPT_BPF_STATS:
			eo.bpf_stats = true;
			break;
		case OPT_WRITE_TIMEOUT:
			if (parse_range("--write-timeout", optarg, 1, 3600, "seconds", &so.write_s))
				return 2;
			break;
		case 'v':
			log_verbosity++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("pcmond %s\n", PCMON_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (so.per_user &&
	    so.per_user > (so.max_clients ? so.max_clients : SRV_DEFAULT_MAX_CLIENTS) - SRV_ROOT_RESERVE) {
		fprintf(stderr, "pcmond: --max-user-clients %u: at most --max-clients less the %d kept for root\n",
			so.per_user, SRV_ROOT_RESERVE);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "pcmond: unexpected argument '%s' (see pcmond --help)\n", argv[optind]);
		return 2;
	}
	if (geteuid() != 0)
		fprintf(stderr, "pcmond: warning: not root; loading BPF will likely fail\n");
	raise_priority();

	r = engine_new(&eo, &e, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pcmond: %s\n", err);
		return 1;
	}
	so.listen_fd = activated_fd();
	if (so.listen_fd < 0) {
		fprintf(stderr, "pcmond: systemd passed more than one socket: pcmond.socket passes one\n");
		engine_free(e);
		return 1;
	}
	r = srv_open(sock, e, &so, &s, err, sizeof(err));
	if (r) {
		fprintf(stderr, "pcmond: %s\n", err);
		engine_free(e);
		return 1;
	}
	if (!foreground && daemon(0, 0)) {
		fprintf(stderr, "pcmond: cannot detach: %s\n", strerror(errno));
		r = 1;
		goto out;
	}
	pr_info("pcmond %s serving %s%s, results in %s", PCMON_VERSION, sock,
		so.listen_fd ? " (socket from systemd)" : "", eo.state_dir);
	notify("READY=1");
	r = srv_run(s) ? 1 : 0;
	notify("STOPPING=1");
out:
	engine_flush(e, true);
	srv_close(s);
	engine_free(e);
	return r;
}
