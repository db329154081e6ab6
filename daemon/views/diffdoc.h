/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * diffdoc_: the diff of two profiles, A and B, each a listing with its stacks (the exports'
 * profile) and its timeline, as pcmon diff fetches them from the engine or a saved file:
 * their procedures counted into the statistics (diffstat.h, docs/diff.md), the test run, and
 * its document, the JSON pcmon diff --json prints.
 */
#ifndef PCMON_DIFFDOC_H
#define PCMON_DIFFDOC_H

#include <stddef.h>

#include <cJSON.h>

#include "diffstat.h"
#include "export.h"

struct itab;

struct diffdoc_side {
	cJSON *rep;		/* the listing (owned) */
	struct xprof p;		/* its profile */
};

struct diffdoc {
	struct itab *names;	/* procedure names: the statistics' ids */
	struct diffdoc_side s[2];
	struct dstat st;
	size_t *order, n;	/* the rows to show, in order */
};

/* 0, or -ENOMEM. */
int diffdoc_init(struct diffdoc *d, enum dstat_model per, double alpha);
/* Side @k is listing @rep (taken over, freed by diffdoc_free()): 0, -EINVAL with @err (not a
 * profile), or -ENOMEM. */
int diffdoc_side(struct diffdoc *d, int k, cJSON *rep, char *err, size_t errlen);
/* The test, once both sides are in: 0, -EINVAL with @err (a side it refuses: the text
 * starts with "A" or "B"), or -ENOMEM. */
int diffdoc_run(struct diffdoc *d, char *err, size_t errlen);
/* The document: the sides, the test, the first @top rows (0: all). NULL if out of memory. */
cJSON *diffdoc_json(const struct diffdoc *d, long top);
void diffdoc_free(struct diffdoc *d);

/* What its text and pictures need too. */
const char *diffdoc_name(const struct diffdoc *d, size_t id);
const char *diffdoc_side_name(const struct diffdoc_side *s, char *buf, size_t len);
double diffdoc_pct(double a, double b);
/* The effect a row is shown with: 0 its shallow, 1 its deep. */
int diffdoc_shown(const struct dstat_row *r);

#endif
