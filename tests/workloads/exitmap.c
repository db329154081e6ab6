// SPDX-License-Identifier: GPL-2.0-only
/*
 * Processes that live only to exit: "exitmap N MIB" touches MIB MiB of memory, then forks N
 * children one after another, each of which calls _exit() at once. A child's whole life is
 * the kernel tearing down the address space it got from its parent (the page tables of MIB
 * MiB), which takes milliseconds: a CPU-time sampler catches it only then, after its exit
 * began, with no user stack left to read and the user pc in _exit(). A profiler must count
 * those samples and name them, although the process was gone before anyone could read its
 * address map.
 *
 * The report gives the children's CPU time as the kernel accounted it to the reaped
 * children (rusage): what the samples of the children must add up to.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "workload.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	size_t bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 128) << 20;
	double children_cpu = 0;
	char *mem;

	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memset(mem, 1, bytes);
	for (int i = 0; i < n; i++) {
		struct rusage ru;
		int status;
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(0);
		if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status))
			return 1;
		children_cpu += ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
				ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	}
	printf("{\"children\": %d, \"children_cpu_s\": %.4f, \"pid\": %d}\n", n, children_cpu,
	       (int)getpid());
	return 0;
}
