// SPDX-License-Identifier: GPL-2.0-only
/*
 * Loads libcritlib.so with dlopen, runs its code for SECS, then unloads it: the code a
 * profiler listed for the process is gone. Each step waits for a line on stdin once it has
 * printed where it is (a JSON line: the library's load address while it is mapped, then
 * "closed"), so that a test can look at the process in between.
 */
#include <dlfcn.h>
#include <string.h>

#include "workload.h"

static void step(const char *json)
{
	char line[16];

	printf("%s\n", json);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 1);
	void (*lib_work)(uint64_t);
	char path[4096], json[128];
	uint64_t chunk, end;
	Dl_info info;
	void *h;

	snprintf(path, sizeof(path), "%s", argv[0]);
	strcpy(strrchr(path, '/') ? strrchr(path, '/') + 1 : path, "libcritlib.so");
	chunk = calibrate(100000);
	h = dlopen(path, RTLD_NOW);
	lib_work = h ? (void (*)(uint64_t))dlsym(h, "lib_work") : NULL;
	if (!lib_work || !dladdr((void *)lib_work, &info)) {
		fprintf(stderr, "swapdl: %s\n", dlerror());
		return 1;
	}
	end = wall_ns() + secs * 1e9;
	while (wall_ns() < end)
		lib_work(chunk);
	snprintf(json, sizeof(json), "{\"base\": %llu, \"pc\": %llu}",
		 (unsigned long long)(uintptr_t)info.dli_fbase,
		 (unsigned long long)(uintptr_t)lib_work);
	step(json);
	dlclose(h);
	step("{\"closed\": 1}");
	return 0;
}
