/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of the call-counting instrument share, and no other file includes: the
 * engine-wide state (struct count_g) and the functions one part calls in another.
 *
 *   count.c          the base: a target's state (count.h), made from a request, freed
 *   count_report.c   the call table as JSON, its times less the probes' cost (count.h)
 *   count_store.c    the call table as a section of the results file (count_store_)
 *   count_when.c     calls classed by the WHEN pattern, BPF's totals read (count_when_)
 *   count_attach.c   a target attached, new objects searched, stopped, zeroed (count_attach_)
 *   count_ops.c      the ops table, the instrument's engine-wide life, its listing
 *
 * count.c is the base: every other part calls into it, and it calls none of them; a part
 * calls only those above it in this list. So that count.c can include this file for its own
 * declarations, count.h is not included here: its types are only named.
 */
#ifndef PCMON_COUNT_INT_H
#define PCMON_COUNT_INT_H

#include "inst.h"

struct count;
struct counter;

/* Engine-wide: the call counter every target that counts shares. */
struct count_g {
	struct inst_env env;
	struct counter *ctr;	/* loaded on the first target that counts */
	char err[256];		/* ... or why it could not be */
};

/* count.c */
void count_free(void *st);
int count_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep);
void count_clear_totals(struct count *ct);

/* count_store.c */
void count_store_save(const struct target *t, const void *st, const struct sym *s,
		      struct sf_wr *w, cJSON *o);
int count_store_load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out);

/* count_when.c */
void count_when_collect(struct count_g *g, const struct target *t, struct count *ct);

/* count_attach.c */
int count_attach_target(void *gp, struct target *t, void *st, cJSON **rep);
void count_attach_event(void *gp, struct target *t, void *st, const struct pcmon_event *ev);
void count_attach_stop(void *gp, struct target *t, void *st);
void count_attach_zero(void *gp, struct target *t, void *st);

#endif /* PCMON_COUNT_INT_H */
