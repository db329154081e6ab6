// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocates N blocks of 1 MiB and holds them, then frees them all, each step when told: it
 * prints "held" and waits for FILE.free, frees every block, prints "freed" and waits for
 * FILE.end. A watcher paused between the two sees the frees of blocks it sampled before.
 *
 *   allochold N FILE
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "workload.h"

static void wait_for(const char *base, const char *ext)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", base, ext);
	while (stat(path, &st))
		usleep(1000);
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	char **b = calloc(n + 1, sizeof(*b));

	if (argc < 3 || n <= 0 || !b)
		return 2;
	printf("{\"pid\": %d}\n", getpid());
	fflush(stdout);
	wait_for(argv[2], ".go");
	for (int i = 0; i < n; i++) {
		b[i] = malloc(1 << 20);
		memset(b[i], 1, 1 << 20);
	}
	printf("held\n");
	fflush(stdout);
	wait_for(argv[2], ".free");
	for (int i = 0; i < n; i++)
		free(b[i]);
	printf("freed\n");
	fflush(stdout);
	wait_for(argv[2], ".end");
	return 0;
}
