// SPDX-License-Identifier: GPL-2.0-only
/*
 * Three child processes of different command names (burn-a, burn-b, burn-c: prctl's
 * PR_SET_NAME), each burning its own amount of CPU in burn(), 1 : 2 : 3 of SECS in all
 * (argument 1, default 2), at the same time. Each child prints its own CPU time (the
 * process CPU clock, which starts at its fork) as a JSON line {"comm", "pid", "cpu_s"};
 * the parent waits for them and prints {"children": 3, "pid": PID}. Argument 2 "-": the
 * parent forks them once it reads a line on stdin (a profiler watching it by then).
 *
 * With PCMON_TEST_CGROUPS="DIR:DIR:DIR" child i first moves itself into cgroup DIR i (it
 * writes 0 to DIR/cgroup.procs), so that each cgroup holds one child's samples.
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "workload.h"

#define NCHILD 3

static uint64_t chunk;

NOINLINE void burn(void)
{
	uint64_t n = jittered(chunk);

	SPIN_BODY(n);
}

/* Child @i's cgroup from PCMON_TEST_CGROUPS, moved into; 0, or -1 (said on stderr). */
static int join_cgroup(int i)
{
	const char *list = getenv("PCMON_TEST_CGROUPS");
	char dir[512], path[600];
	FILE *f;
	int k = 0;

	if (!list)
		return 0;
	for (const char *p = list; k <= i; k++) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (k == i) {
			snprintf(dir, sizeof(dir), "%.*s", (int)n, p);
			break;
		}
		if (!end)
			return fprintf(stderr, "comms: no cgroup for child %d\n", i), -1;
		p = end + 1;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	if (!f || fputs("0\n", f) < 0 || fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

static void child(int i, double cpu_s)
{
	char comm[16];
	uint64_t until = cpu_s * 1e9;

	snprintf(comm, sizeof(comm), "burn-%c", 'a' + i);
	prctl(PR_SET_NAME, comm);
	if (join_cgroup(i))
		_exit(1);
	while (cpu_ns() < until)
		burn();
	printf("{\"comm\": \"%s\", \"pid\": %d, \"cpu_s\": %.6f}\n", comm, (int)getpid(),
	       cpu_ns() / 1e9);
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	int status, failed = 0;
	char line[16];
	pid_t pid[NCHILD];

	chunk = calibrate(200000);
	if (argc > 2 && !strcmp(argv[2], "-") && !fgets(line, sizeof(line), stdin))
		return 1;
	fflush(stdout);
	for (int i = 0; i < NCHILD; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			child(i, secs * (i + 1) / 6);
		if (pid[i] < 0)
			return 1;
	}
	for (int i = 0; i < NCHILD; i++)
		if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	printf("{\"children\": %d, \"pid\": %d}\n", NCHILD - failed, (int)getpid());
	return failed ? 1 : 0;
}
