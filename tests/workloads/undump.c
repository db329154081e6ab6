// SPDX-License-Identifier: GPL-2.0-only
/*
 * Spins in spin_mine, then makes itself non-dumpable (as ssh-agent and gpg-agent do to keep
 * their secrets) and spins in spin_secret: from then on only root may look into it.
 * argv: seconds for each half (default 1).
 */
#include <sys/prctl.h>

#include "workload.h"

static uint64_t chunk;

NOINLINE void spin_mine(void) { SPIN_BODY(chunk); }
NOINLINE void spin_secret(void) { SPIN_BODY(chunk); }

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 1);
	uint64_t end, c0, c1;

	chunk = calibrate(200000);
	printf("ready\n");
	fflush(stdout);
	/* wait for the go line, so that the watcher is attached before anything happens */
	if (getchar() == EOF)
		return 1;
	c0 = cpu_ns();
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		spin_mine();
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return 1;
	c1 = cpu_ns();
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		spin_secret();
	/* CPU seconds of each half, as measured here */
	printf("done %.4f %.4f\n", (c1 - c0) / 1e9, (cpu_ns() - c1) / 1e9);
	return 0;
}
