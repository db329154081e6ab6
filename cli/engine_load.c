// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine, loaded only when a command needs one of its own.
 *
 * Most commands only talk to pcmond: they should start as fast as any small program, and on
 * a loaded machine a process waits for the CPU in proportion to the CPU it has used (the
 * scheduler's lag), so each library mapped at start-up costs there many times what it costs
 * on a quiet one. The engine — libbpf, libdw, libelf, zlib and all of daemon/ — is therefore
 * a private library, pcmon-engine.so, opened here when `pcmon run`, `count` or `top` finds
 * no pcmond (or when --help wants the engine's option values).
 *
 * These functions stand in for engine.h's: the first engine_new() opens the library and
 * later calls go to it. It is looked for beside the executable (the build tree: bin/) and
 * in ../lib/pcmon/ from it (an installed pcmon, whatever the prefix). The sanitizer build
 * links the engine in and leaves this file out.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "proto.h"
#include "util.h"

#define ENGINE_SO "pcmon-engine.so"

static struct {
	int (*new)(const struct engine_opts *, struct engine **, char *, size_t);
	void (*free)(struct engine *);
	int (*fd)(struct engine *);
	void (*work)(struct engine *);
	cJSON *(*handle)(struct engine *, const struct client *, const cJSON *);
	const struct proto_field *(*start_field)(const char *);
	int *log_verbosity;
} lib;

static int try_open(const char *dir, const char *rel, void **h, char *err, size_t errlen)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s%s", dir, rel, ENGINE_SO);
	*h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (*h)
		return 0;
	if (access(path, F_OK) == 0) /* there, but broken: say why, not "not found" */
		snprintf(err, errlen, "%s", dlerror());
	return -ENOENT;
}

static int find(char *err, size_t errlen)
{
	const char *version;
	const struct dl_sym syms[] = {
		{ "engine_free", &lib.free },
		{ "engine_fd", &lib.fd },
		{ "engine_work", &lib.work },
		{ "engine_handle", &lib.handle },
		{ "engine_start_field", &lib.start_field },
		{ "log_verbosity", &lib.log_verbosity },
		{ "engine_version", &version },
		{ "engine_new", &lib.new }, /* last: it says "loaded" */
	};
	char exe[PATH_MAX], *slash;
	ssize_t n;
	void *h;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(err, errlen, "cannot find pcmon's own path in /proc/self/exe: %s",
			 n < 0 ? strerror(errno) : "empty");
		return -ENOENT;
	}
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	*slash = '\0';
	snprintf(err, errlen, "%s not found beside %.160s/pcmon nor in %.160s/../lib/pcmon (reinstall pcmon)",
		 ENGINE_SO, exe, exe);
	if (try_open(exe, "", &h, err, errlen) && try_open(exe, "../lib/pcmon/", &h, err, errlen))
		return -ENOENT;
	if (!dl_bind(h, syms, ARRAY_SIZE(syms))) {
		snprintf(err, errlen, "%s is not this pcmon's engine (reinstall pcmon)", ENGINE_SO);
		return -ENOENT;
	}
	if (strcmp(version, PCMON_VERSION)) {
		snprintf(err, errlen, "%s is version %.32s, pcmon %s (reinstall pcmon)", ENGINE_SO,
			 version, PCMON_VERSION);
		lib.new = NULL;
		dlclose(h);
		return -ENOENT;
	}
	return 0;
}

/* 0 once the library is open; else -errno with the reason in @err (tried once). */
static int load(char *err, size_t errlen)
{
	static char why[512];
	static int r = 1;

	if (r > 0)
		r = find(why, sizeof(why));
	if (r)
		snprintf(err, errlen, "%s", why);
	return r;
}

int engine_new(const struct engine_opts *o, struct engine **out, char *err, size_t errlen)
{
	int r = load(err, errlen);

	if (r)
		return r;
	*lib.log_verbosity = log_verbosity; /* -v, given to the CLI's copy of util.c */
	return lib.new(o, out, err, errlen);
}

void engine_free(struct engine *e)
{
	if (e)
		lib.free(e);
}

int engine_fd(struct engine *e)
{
	return lib.fd(e);
}

void engine_work(struct engine *e)
{
	lib.work(e);
}

cJSON *engine_handle(struct engine *e, const struct client *c, const cJSON *req)
{
	return lib.handle(e, c, req);
}

const struct proto_field *engine_start_field(const char *name)
{
	char err[512];

	return load(err, sizeof(err)) ? NULL : lib.start_field(name);
}
