// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loads libcritlib.so with dlopen after start and calls lib_work (half of it marked); prints
 * the CPU share of the marked half, as the library timed it from inside the section.
 */
#include <dlfcn.h>
#include <string.h>

#include "workload.h"

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 3);
	char path[4096];
	void (*lib_work)(uint64_t);
	uint64_t chunk, end, *marked_ns, total0 = cpu_ns();
	void *h;

	/* the library sits next to this program */
	snprintf(path, sizeof(path), "%s", argv[0]);
	strcpy(strrchr(path, '/') ? strrchr(path, '/') + 1 : path, "libcritlib.so");
	/* the share is of the whole run, calibration included, as a profiler sees it */
	chunk = calibrate(100000);
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "crit_dlopen: %s\n", dlerror());
		return 1;
	}
	lib_work = (void (*)(uint64_t))dlsym(h, "lib_work");
	marked_ns = dlsym(h, "lib_marked_ns");
	if (!lib_work || !marked_ns) {
		fprintf(stderr, "crit_dlopen: %s\n", dlerror());
		return 1;
	}
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		lib_work(chunk);
	double total = cpu_ns() - total0;
	printf("{\"libsec\": %.5f, \"cpu_s\": %.4f}\n", *marked_ns / total, total / 1e9);
	return 0;
}
