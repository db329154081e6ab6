// SPDX-License-Identifier: GPL-2.0-only
/*
 * Spins in spin_here until killed or for the given seconds: a process to attach to.
 * Usage: spinner [SECS [CHUNK_NS]]   (CHUNK_NS: one call's work, default 200000)
 */
#include "workload.h"

static uint64_t chunk;

NOINLINE void spin_here(void) { SPIN_BODY(chunk); }

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 30);
	uint64_t end;

	chunk = calibrate(argc > 2 ? atof(argv[2]) : 200000);
	end = wall_ns() + secs * 1e9;
	printf("ready\n");
	fflush(stdout);
	while (wall_ns() < end)
		spin_here();
	return 0;
}
