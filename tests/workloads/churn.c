// SPDX-License-Identifier: GPL-2.0-only
/*
 * Process churn, as a build or a shell script makes it: "churn N MS IDLE" runs N short-lived
 * workers one after another, each a fresh exec of this program that burns MS milliseconds of
 * CPU in churn_work() and exits, and between them IDLE sleepers, each a fresh exec too, that
 * sleep 2 ms and exit without running long enough to be sampled (a sleeping process is off
 * CPU: a CPU-time sampler never sees it).
 *
 * The report gives the workers' CPU time as the kernel accounted it to the reaped children
 * (rusage), the part of it their loops burnt (each loops until its own clock has run MS
 * milliseconds), and how many processes of each kind ran: a profiler of the whole tree must
 * name the loops' samples churn_work, and should do no work for the sleepers beyond seeing
 * them come and go. The rest of a worker's time is its exec, its loading and its exit: a few
 * milliseconds, many more on a machine whose page-table work is costly and busy (a virtual
 * machine with a build beside).
 */
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "workload.h"

NOINLINE static void churn_work(uint64_t iters)
{
	SPIN_BODY(iters);
	BARRIER();
}

/* A worker: @ms of CPU (by its own clock) in churn_work(), @per_ms iterations a ms. */
static int worker(double ms, uint64_t per_ms)
{
	uint64_t end = cpu_ns() + ms * 1e6;

	while (cpu_ns() < end)
		churn_work(per_ms / 4 + 1);
	return 0;
}

static pid_t spawn(const char *role, const char *ms, const char *per_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl("/proc/self/exe", "churn", role, ms, per_ms, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static double reap(pid_t pid)
{
	struct rusage ru;
	int status;

	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		exit(1);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	char arg[32], per_ms[32];
	int n, idle;
	double ms, worker_cpu = 0;

	if (argc == 4 && !strcmp(argv[1], "worker"))
		return worker(atof(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "sleeper")) {
		struct timespec ts = { 0, 2000000 };

		nanosleep(&ts, NULL);
		return 0;
	}
	n = argc > 1 ? atoi(argv[1]) : 100;
	ms = argc > 2 ? atof(argv[2]) : 20;
	idle = argc > 3 ? atoi(argv[3]) : 200;
	snprintf(arg, sizeof(arg), "%g", ms);
	snprintf(per_ms, sizeof(per_ms), "%llu", (unsigned long long)calibrate(1000000));
	for (int i = 0, j = 0; i < n || j < idle;) {
		if (i < n && (j >= idle || (int64_t)i * idle <= (int64_t)j * n)) {
			worker_cpu += reap(spawn("worker", arg, per_ms));
			i++;
		} else {
			reap(spawn("sleeper", "0", "0"));
			j++;
		}
	}
	printf("{\"workers\": %d, \"sleepers\": %d, \"worker_cpu_s\": %.4f, "
	       "\"worker_loop_cpu_s\": %.4f}\n",
	       n, idle, worker_cpu, n * ms / 1e3);
	return 0;
}
