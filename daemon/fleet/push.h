/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * push_: pcmond sends each published target's latest window to Grafana Pyroscope (--push
 * URL: POST URL/ingest, pprof) and to an OpenTelemetry collector (--otlp URL: OTLP/HTTP,
 * POST URL/v1development/profiles), every --push-interval seconds (docs/fleet.md).
 *
 * The engine's loop only cuts the windows and encodes them (a listing of what came since
 * the last one, the mark moved in the same step so that no sample falls between two). A
 * target's first window starts with the target; its last is cut before `zero` or `drop`
 * forgets its counts, or as pcmond stops, which sends what is queued for PUSH_FINISH_S; a
 * thread of its own sends them with libcurl, gzipped, with retries and backoff, from a
 * bounded queue. A slow or absent receiver changes nothing but counters: windows that
 * find the queue full, or fail every try, are dropped and counted.
 */
#ifndef PCMON_PUSH_H
#define PCMON_PUSH_H

#include <stdint.h>

struct engine;
struct push;

#define PUSH_DEFAULT_INTERVAL_S 15
#define PUSH_QUEUE 16		/* windows waiting to be sent, all receivers together */
#define PUSH_TRIES 3		/* a window is tried this many times (backoff 1 s, 2 s) */
#define PUSH_TIMEOUT_S 10	/* one try may take this long */
#define PUSH_FINISH_S 5		/* pcmond stopping sends what is queued for this long */

struct push_opts {
	const char *pyroscope;	/* base URL, or NULL */
	const char *otlp;	/* base URL, or NULL */
	uint32_t interval_s;	/* 0: PUSH_DEFAULT_INTERVAL_S */
};

#define PUSH_COUNTERS(X)                                                                   \
	X(windows)   /* windows cut and queued */                                          \
	X(sent)      /* requests a receiver accepted (2xx) */                              \
	X(retries)   /* tries after a failed one */                                        \
	X(failed)    /* windows dropped after every try failed */                          \
	X(dropped)   /* windows dropped: the queue was full */                             \
	X(too_large) /* windows not sent: over the receiver's size limit */               \
	X(gaps)      /* a target's window could not start or went: samples not sent */    \
	X(unsent)    /* windows still queued when pcmond stopped (PUSH_FINISH_S) */

struct push_stats {
#define PUSH_FIELD(f) uint64_t f;
	PUSH_COUNTERS(PUSH_FIELD)
#undef PUSH_FIELD
	uint64_t queued;	/* waiting now */
	uint64_t targets;	/* published targets with a window under way */
};

int push_open(struct engine *e, const struct push_opts *o, struct push **out, char *err,
	      size_t errlen);
void push_close(struct push *p);
/* A timer: readable when windows are due; push_work() cuts and queues them. */
int push_fd(struct push *p);
void push_work(struct push *p);
void push_stats(struct push *p, struct push_stats *st);

#endif
