/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * metrics_: pcmond's health in the Prometheus text exposition format (GET /metrics), made
 * from what `pcmon status` and `pcmon targets` say. Names and units by Prometheus's
 * conventions: pcmon_ prefix, _total for counters, base units (_seconds, _bytes).
 */
#ifndef PCMON_METRICS_H
#define PCMON_METRICS_H

#include <cJSON.h>
#include <stdint.h>

/* What the HTTP server and pushers count themselves. */
struct metrics_extra {
	uint64_t rss_bytes;
	uint64_t http_requests, http_refused, http_unauthorized;
	uint64_t windows_open;
};

/* The exposition of @status and @targets (replies of the commands), malloc'd; NULL: no memory. */
char *metrics_text(const cJSON *status, const cJSON *targets, const struct metrics_extra *x);

#endif
