/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of the probe-node instrument share, and no other file includes: the
 * engine-wide state (struct legs_g) and the functions one part calls in another.
 *
 *   legs.c         the base: a target's tables (legs.h), made from a request, parsed, freed
 *   legs_report.c  the tables as JSON, `pcmon tables` (legs.h: legs_tables_json() ...)
 *   legs_store.c   the tables as a section of the results file (legs_store_)
 *   legs_attach.c  BPF, and a target's life there: attached, configured, read, stopped,
 *                  zeroed (legs_attach_)
 *   legs_edit.c    pcmon node|leg|hist add|del on a running target (legs_edit())
 *   legs_ops.c     the ops table, the instrument's engine-wide life, its listing
 *
 * legs.c is the base: every other part calls into it, and it calls none of them; a part
 * calls only those above it in this list. So that legs.c can include this file for its own
 * declarations, legs.h is not included here: its types are only named.
 */
#ifndef PCMON_LEGS_INT_H
#define PCMON_LEGS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "inst.h"

struct counter;
struct ring;
struct legs;
struct legs_bpf;
struct legs_leg;

/* Engine-wide: the BPF programs every target's nodes share. */
struct legs_g {
	struct inst_env env;
	struct legs_bpf *skel;	/* loaded on the first target with nodes */
	struct counter *ctr;	/* for the probes' measured cost */
	struct ring *tail_rb;	/* tail profiles' records (tail_events), from the first */
	char err[256];
};

/* legs.c */
void legs_drop_context(struct legs *lg);
void legs_free(void *st);
int legs_new_slices(struct legs *lg, const cJSON *req, cJSON **rep);
int legs_parse_hist(struct legs *lg, const char *spec, cJSON **rep);
bool legs_full(const struct legs *lg, const struct legs_leg *l, const char *spec, cJSON **rep);
int legs_parse_legs(struct legs *lg, const cJSON *arr, cJSON **rep);
int legs_set_when(struct legs *lg, const cJSON *req, cJSON **rep);
int legs_parse_tails(struct legs *lg, const cJSON *arr, cJSON **rep);
int legs_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep);
uint32_t legs_next_leg_id(const struct legs *lg);

/* legs_store.c */
void legs_store_save(const struct target *t, const void *st, const struct sym *s,
		     struct sf_wr *w, cJSON *o);
int legs_store_load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out);

/* legs_attach.c */
int legs_attach_target(void *gp, struct target *t, void *st, cJSON **rep);
int legs_attach_node(struct legs_g *g, struct target *t, struct legs *lg, size_t i, cJSON **rep);
int legs_attach_configure(struct legs_g *g, struct target *t, struct legs *lg, bool reset);
int legs_attach_index(struct legs_g *g, const struct target *t, const struct legs *lg, bool all);
void legs_attach_hists(struct legs_g *g, struct target *t, struct legs *lg);
void legs_attach_collect(struct legs_g *g, const struct target *t, struct legs *lg);
void legs_attach_stop(void *gp, struct target *t, void *st);
void legs_attach_zero(void *gp, struct target *t, void *st);
void legs_attach_tails_read(struct legs_g *g);
int legs_attach_tails(struct legs_g *g, struct target *t, struct legs *lg, cJSON **rep);

/* legs_edit.c */
cJSON *legs_edit(void *gp, struct target *t, const cJSON *req);

#endif /* PCMON_LEGS_INT_H */
