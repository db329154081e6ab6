/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * conf_: pcmond's configuration file, /etc/pcmon/pcmond.conf (docs/service.md, pcmond(8)).
 * INI, read with inih (Debian's libinih): a [daemon] section whose keys are pcmond's options
 * (the command line overrides them), and [target NAME] sections, each the start request of a
 * target pcmond starts itself, as root, when it starts and when SIGHUP reloads the file.
 *
 * Reading checks everything that can be checked without BPF: every key known, every value
 * of its type and range as the engine's start fields say (engine_start_field(), proto_check),
 * one watch per target. Each error is one line, "FILE:LINE: [SECTION] KEY: what is wrong";
 * a file with any error is refused whole. Applying compares the file with the one in force
 * and tells the engine, through engine_handle() as a client would, what to stop and start.
 */
#ifndef PCMON_CONF_H
#define PCMON_CONF_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"
#include "pcmon_procs.h"
#include "pcmon_sample.h"
#include "srv.h"

#define CONF_DEFAULT_PATH "/etc/pcmon/pcmond.conf"
#define CONF_MAX_LINE 4096	/* longest line read, newline included */
#define CONF_MAX_ERRORS 50	/* errors told about one file; past them, how many more */
/* a target's name in [target NAME]: letters, digits, '.', '-', '_' (inih keeps section
 * names of at most 49 bytes, "target " included) */
#define CONF_MAX_NAME 42

enum conf_kind { CONF_NUM, CONF_STR, CONF_FLAG };

/*
 * pcmond's settings: each is an option (--max-stack N, --bpf-stats) and a key of [daemon]
 * (max-stack = N, bpf-stats = yes). None changes while pcmond runs: a reload that finds one
 * changed says it waits for a restart.
 * X(id, name, short option or 0, kind, min, max, unit of a number)
 */
#define CONF_DAEMON_SETTINGS(X)                                                               \
	X(SOCKET, "socket", 's', CONF_STR, 0, 0, NULL)                                        \
	X(STATE_DIR, "state-dir", 'd', CONF_STR, 0, 0, NULL)                                  \
	X(MAX_STACK, "max-stack", 'm', CONF_NUM, 1, 512, "frames")                            \
	X(DWARF_STACK, "dwarf-stack", 'D', CONF_NUM, 1024, PCMON_DWARF_STACK_MAX, "bytes")    \
	X(USER_TARGETS, "user-targets", 'T', CONF_NUM, 1,                                     \
	  PCMON_MAX_TARGETS - 1 - ENGINE_ROOT_RESERVE, "targets")                            \
	X(USER_MEMORY, "user-memory", 'M', CONF_NUM, 1, 1 << 20, "MiB")                       \
	X(DEBUGINFOD, "debuginfod", 'U', CONF_STR, 0, 0, NULL)                                \
	X(CACHE_DIR, "cache-dir", 'C', CONF_STR, 0, 0, NULL)                                  \
	X(MAX_CLIENTS, "max-clients", 0, CONF_NUM, SRV_MIN_CLIENTS, SRV_MAX_CLIENTS,          \
	  "connections")                                                                      \
	X(MAX_USER_CLIENTS, "max-user-clients", 0, CONF_NUM, 1,                               \
	  SRV_MAX_CLIENTS - SRV_ROOT_RESERVE, "connections")                                  \
	X(IDLE_TIMEOUT, "idle-timeout", 0, CONF_NUM, 1, 86400, "seconds")                     \
	X(REQUEST_TIMEOUT, "request-timeout", 0, CONF_NUM, 1, 3600, "seconds")                \
	X(WRITE_TIMEOUT, "write-timeout", 0, CONF_NUM, 1, 3600, "seconds")                    \
	X(DRAIN_ENTRIES, "drain-entries", 0, CONF_NUM, 1024, 1048576, "entries")              \
	X(BPF_STATS, "bpf-stats", 0, CONF_FLAG, 0, 1, NULL)                                   \
	X(OBJECT_IDLE, "object-idle", 0, CONF_NUM, 1, 86400, "seconds")                       \
	X(OBJECT_MEMORY, "object-memory", 0, CONF_NUM, 16, 1 << 20, "MiB")                    \
	X(CFI_TABLES, "cfi-tables", 0, CONF_NUM, 0, 4096, "MiB")                              \
	X(HTTP, "http", 0, CONF_STR, 0, 0, NULL)                                              \
	X(HTTP_TOKEN_FILE, "http-token-file", 0, CONF_STR, 0, 0, NULL)                        \
	X(HTTP_TLS_CERT, "http-tls-cert", 0, CONF_STR, 0, 0, NULL)                            \
	X(HTTP_TLS_KEY, "http-tls-key", 0, CONF_STR, 0, 0, NULL)                              \
	X(PUSH, "push", 0, CONF_STR, 0, 0, NULL)                                              \
	X(OTLP, "otlp", 0, CONF_STR, 0, 0, NULL)                                              \
	X(PUSH_INTERVAL, "push-interval", 0, CONF_NUM, 1, 3600, "seconds")

#define CONF_ID(id, ...) CONF_##id,
enum conf_setting_id { CONF_DAEMON_SETTINGS(CONF_ID) CONF_NSETTINGS };
#undef CONF_ID

struct conf_setting {
	const char *name;
	int short_opt;
	enum conf_kind kind;
	long min, max;
	const char *unit;
};
extern const struct conf_setting conf_settings[CONF_NSETTINGS];

/* The settings given, on the command line or in [daemon]. */
struct conf_daemon {
	struct conf_value {
		bool set;
		int line;	/* in the file; 0: the command line */
		uint32_t num;	/* CONF_NUM; CONF_FLAG: 0 or 1 */
		char *str;	/* CONF_STR (malloc'ed) */
	} v[CONF_NSETTINGS];
};

/*
 * Setting @name (an option's or a key's) to @value (a flag: yes/no, true/false, on/off,
 * 1/0). 0; -ENOENT: no such setting; -EINVAL with what is wrong in @why ("\"abc\" is not a
 * number of frames"); -ENOMEM.
 */
int conf_daemon_set(struct conf_daemon *d, const char *name, const char *value, int line,
		    char *why, size_t whylen);
/* Settings @d has not got taken from @from (the file's, under the command line's). */
int conf_daemon_merge(struct conf_daemon *d, const struct conf_daemon *from);
/* What no single setting can say: max-user-clients within max-clients. 0, or -EINVAL and @why
 * (the setting at fault: *bad). */
int conf_daemon_check(const struct conf_daemon *d, enum conf_setting_id *bad, char *why,
		      size_t whylen);
/* The engine's and the server's options from @d (strings point into @d); defaults elsewhere. */
void conf_daemon_opts(const struct conf_daemon *d, struct engine_opts *eo, struct srv_opts *so,
		      const char **sock);
void conf_daemon_free(struct conf_daemon *d);

/* A [target NAME] section. */
struct conf_target {
	char name[CONF_MAX_NAME + 1];
	int line;		/* of its [target NAME] line */
	cJSON *req;		/* the start request it makes, "name" included */
	uint32_t id;		/* the target it started (or keeps), 0: none */
};

struct conf {
	char *path;
	struct conf_daemon d;	/* [daemon] */
	struct conf_target *targets;
	size_t ntargets;
	char **errors;		/* one line each, "FILE:LINE: ...", in the order of their lines */
	int *error_lines;	/* their lines (0: the file as a whole) */
	size_t nerrors, more_errors;
};

/*
 * Read the file at @path: never NULL but when out of memory; its errors are in ->errors.
 * A file that does not exist is an error when @required, else an empty configuration.
 */
struct conf *conf_read(const char *path, bool required);
/* The same from an open stream, named @path in messages (the tests). */
struct conf *conf_parse(FILE *f, const char *path);
void conf_free(struct conf *c);
/* The section of target @name, NULL if none. */
struct conf_target *conf_find(const struct conf *c, const char *name);

/*
 * What to do to go from @old (NULL: nothing in force, as at start) to @new, given the
 * targets the engine has (as `targets` lists them, for root). A section unchanged whose
 * target still exists keeps it, whatever its state; a removed section's target is stopped,
 * and kept; a changed section's is stopped, and a new one started; a new section's target is
 * started, unless root has a running or paused target of its name (not started: a target
 * is not doubled). Before a start, root's stopped targets of the name are renamed NAME@ID,
 * so that the name means the target the file describes. In order: the stops, the renames,
 * the starts of cgroup targets, then those of all targets. @new's ids are set for the
 * targets it keeps.
 */
enum conf_op { CONF_STOP, CONF_RENAME, CONF_START, CONF_KEEP, CONF_BLOCKED };
struct conf_step {
	enum conf_op op;
	uint32_t id;			/* STOP, RENAME, KEEP: the target; BLOCKED: the one
					   in the way */
	struct conf_target *t;		/* START, KEEP, BLOCKED, RENAME: the section; STOP:
					   the section if changed, NULL if removed */
	const char *why;		/* STOP: "removed" or "changed" */
	char name[64];			/* STOP: the section's name; RENAME: the new name */
};
struct conf_seen {
	uint32_t id;
	const char *name;
	uint32_t owner;
	bool live;			/* running or paused */
};
int conf_plan(const struct conf *old, struct conf *new, const struct conf_seen *seen,
	      size_t nseen, struct conf_step **steps, size_t *nsteps);

/*
 * Do it, through engine_handle() as root: @new's targets started, stopped and renamed as
 * conf_plan() says, each step logged. @new's ids are set. Returns how many steps failed.
 */
int conf_apply(struct engine *e, const struct conf *old, struct conf *new);
/* A reload: [daemon] settings that changed in @new (and the command line does not set), each
 * logged as waiting for a restart. */
void conf_daemon_changes(const struct conf *old, const struct conf *new,
			 const struct conf_daemon *cmdline);

#endif
