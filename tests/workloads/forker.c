// SPDX-License-Identifier: GPL-2.0-only
/* The parent spins in parent_work while a child, forked after start, spins in child_work. */
#include <sys/wait.h>
#include <unistd.h>

#include "workload.h"

static uint64_t chunk;

NOINLINE void parent_work(void) { SPIN_BODY(chunk); }
NOINLINE void child_work(void) { SPIN_BODY(chunk); }

static void spin_for(void (*fn)(void), double secs)
{
	uint64_t end = wall_ns() + secs * 1e9;

	while (wall_ns() < end)
		fn();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	int status;
	pid_t pid;

	chunk = calibrate(200000);
	pid = fork();
	if (pid == 0) {
		spin_for(child_work, secs);
		_exit(0);
	}
	spin_for(parent_work, secs);
	waitpid(pid, &status, 0);
	printf("{\"child\": %d}\n", pid);
	return 0;
}
