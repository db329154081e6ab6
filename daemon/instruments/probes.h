/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * probes_: critical-section probes (include/pcmon/critical.h) attached off the engine's loop.
 *
 * After an exec or a dynamic-linker event, when a process joins a --cgroup or --all target
 * on first sight, and at the fork of a process whose probes were pending, BPF flags the process's samples (PCMON_KF_MARKS_PENDING) and sends the event on
 * its own ring. A thread reads that ring, looks at what the process has mapped, attaches the
 * probes of the objects that carry them, and acknowledges the event to BPF, which stops
 * flagging. The thread is there because the engine's loop can be busy for a long time with
 * one sample — unwinding and symbolizing in an object seen for the first time take tens to
 * hundreds of milliseconds — and a dlopen's probes must not wait for that.
 */
#ifndef PCMON_PROBES_H
#define PCMON_PROBES_H

#include <stddef.h>
#include <stdint.h>

struct procs;
struct sampler;
struct probes;

/* Start the thread (in the process that serves: pcmond detaches before it sets up). */
int probes_start(struct sampler *smp, struct procs *procs, struct probes **out, char *err, size_t errlen);
/* Stop and join the thread; before sampler_close(). NULL is fine. */
void probes_stop(struct probes *p);

/*
 * The probe thread's counters, defined once: X(field, key, unit) — `pcmon status` reports
 * each in "critical_probes" as @key, in @unit of the field (1e6: ns as ms).
 */
#define PROBES_STATS_FIELDS(X)                                                             \
	/* events handled */                                                               \
	X(events, events, 1)                                                               \
	/* ... of which acknowledged (probes all attached) */                              \
	X(acked, acknowledged, 1)                                                          \
	/* the longest time from an event to its acknowledgement */                        \
	X(lag_max_ns, lag_ms_max, 1e6)                                                     \
	/* distinct files looked into */                                                   \
	X(objects, objects_checked, 1)

struct probes_stats {
#define PROBES_STATS_FIELD(f, key, unit) uint64_t f;
	PROBES_STATS_FIELDS(PROBES_STATS_FIELD)
#undef PROBES_STATS_FIELD
};
void probes_stats(struct probes *p, struct probes_stats *out);

#endif
