/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dbginfo_: separate debug info that this machine does not have, fetched from debuginfod
 * servers (opt-in: $DEBUGINFOD_URLS, or pcmond/pcmon run --debuginfod URL).
 *
 * libdwfl asks for an object's debug file through the Dwfl callbacks given here. They look
 * where libdwfl's standard callback looks (by build-id under /usr/lib/debug/.build-id, by
 * .gnu_debuglink next to the object, in its .debug/ and under /usr/lib/debug), but never
 * ask a server themselves: libdwfl's own callback would, synchronously, on the thread that
 * symbolizes, which is the engine's. When nothing is found, the build-id goes on a bounded
 * queue; one worker thread fetches with libdebuginfod into pcmon's cache directory and
 * signals an eventfd. The engine thread then collects what arrived (dbginfo_collect) and
 * symbolizes that object's locations again (sym_debuginfo_arrived), so samples already
 * taken list under the better names.
 *
 * Each build-id is fetched at most once at a time; a failure is remembered and retried only
 * after a delay that grows with each failure. The engine thread never waits for the worker:
 * they share a mutex held only to move a few words, never across I/O.
 */
#ifndef PCMON_DBGINFO_H
#define PCMON_DBGINFO_H

#include <cJSON.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>

#define DBGINFO_QUEUE_MAX 256	/* build-ids waiting for the worker; more are retried later */
#define DBGINFO_TIMEOUT_S "10"	/* $DEBUGINFOD_TIMEOUT when the environment has none */
#define DBGINFO_STATUS_MAX 100	/* build-ids listed by `pcmon status --json` */

struct dbginfo;

struct dbginfo_opts {
	const char *urls;	/* servers, space-separated; NULL: $DEBUGINFOD_URLS; "": off */
	const char *cache_dir;	/* pcmon's cache directory: downloads go to its debuginfod/ */
};

/*
 * Start fetching if servers are configured: *out is NULL when they are not (debuginfod is
 * off: no thread, no network, and $DEBUGINFOD_URLS is unset so that no libdwfl lookup of
 * this process asks a server either). A client that cannot start is a warning, not an
 * error: profiling goes on with the debug info found locally.
 */
int dbginfo_new(const struct dbginfo_opts *o, struct dbginfo **out);
/* Stops the worker (an ongoing download is aborted) and frees everything. */
void dbginfo_free(struct dbginfo *d);
/* Readable when fetches have ended: call dbginfo_collect(). */
int dbginfo_fd(const struct dbginfo *d);

/* The callbacks for a Dwfl whose modules are then given to dbginfo_attach(). */
const Dwfl_Callbacks *dbginfo_callbacks(void);
/* Let the callbacks of @mod use @d (NULL: local lookups only). */
void dbginfo_attach(struct dbginfo *d, Dwfl_Module *mod);
/*
 * A fresh descriptor of @mod's main file, to report it again in a new Dwfl: @path when it is
 * still that file (same build-id), else a memfd copy of the image libdwfl has. -errno.
 */
int dbginfo_reopen(Dwfl_Module *mod, const char *path);

/*
 * Object @file (build-id @bid) lacks debug info that no local place has: fetch it, unless
 * that is under way, or failed and its retry time has not come. The callbacks call it.
 */
void dbginfo_want(struct dbginfo *d, const unsigned char *bid, size_t len, const char *file);
/* Engine thread: hand each debug file that arrived to @fn, never blocking. */
typedef void dbginfo_arrived_fn(void *ctx, const unsigned char *bid, size_t len);
void dbginfo_collect(struct dbginfo *d, dbginfo_arrived_fn *fn, void *ctx);
/* Engine thread, now and then: queue again the failures whose retry time has come. */
void dbginfo_tick(struct dbginfo *d);

/* The fetcher's counters, defined once: X(type, field) gives the struct and pcmon status's
 * "debuginfod" numbers, each named as its field. */
#define DBGINFO_STATS_FIELDS(X)                                                            \
	X(unsigned long, fetched)    /* debug files that arrived */                        \
	X(unsigned long, failed)     /* build-ids whose last fetch failed (to retry) */    \
	X(unsigned long, pending)    /* queued or being fetched */                         \
	X(unsigned long, requests)   /* fetches started, retries included */               \
	X(unsigned long, queue_full) /* times a build-id found the queue full */           \
	X(double, fetch_ms_total)                                                          \
	X(double, fetch_ms_max)

struct dbginfo_stats {
#define DBGINFO_STATS_FIELD(type, f) type f;
	DBGINFO_STATS_FIELDS(DBGINFO_STATS_FIELD)
#undef DBGINFO_STATS_FIELD
};
void dbginfo_stats(struct dbginfo *d, struct dbginfo_stats *st);
/* The "debuginfod" object of `pcmon status` (d may be NULL: off). */
void dbginfo_status_json(struct dbginfo *d, cJSON *parent);

#endif
