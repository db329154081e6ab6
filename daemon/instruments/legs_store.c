// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe-node instrument's section of a results file (store.h has the file as a whole):
 * a target's "tables", its nodes and legs with their totals and histograms, the WHEN pattern
 * its hits were told apart by, and (format 5) the tables' time slices, rows by LEGS_KEY().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "legs.h"
#include "legs_int.h"
#include "proto.h"
#include "slices.h"
#include "stfile.h"
#include "timed.h"
#include "util.h"

static void put_hist(struct sf_wr *w, cJSON *o, const struct pcmon_hcfg *c,
		     const struct pcmon_hist *h)
{
	cJSON *x = sf_chk(w, cJSON_AddObjectToObject(o, "hist")), *b;

	if (!x)
		return;
	sf_put_num(w, x, "kind", c->kind);
	sf_put_num(w, x, "buckets", c->buckets);
	sf_put_u64(w, x, "scale", c->scale);
	sf_put_u64(w, x, "base", c->base);
	sf_put_u64(w, x, "under", h->under);
	sf_put_u64(w, x, "over", h->over);
	b = sf_chk(w, cJSON_AddArrayToObject(x, "b"));
	for (int i = 0; b && i <= PCMON_HIST_BUCKETS; i++)
		sf_push(w, b, cJSON_CreateNumber((double)h->b[i])); /* counts below 2^53 */
}

void legs_store_save(const struct target *t, const void *st, const struct sym *s,
		     struct sf_wr *w, cJSON *o)
{
	const struct legs *lg = st;
	cJSON *arr, *x;

	(void)t;
	(void)s;
	sf_put_num(w, o, "track", lg->track);
	sf_put_num(w, o, "add", lg->add);
	sf_put_num(w, o, "hit_cost_ns", lg->hit_cost_ns);
	sf_put_num(w, o, "stepped_extra_ns", lg->step_cost_ns);
	sf_put_num(w, o, "hit_err_ns", lg->hit_err_ns);
	sf_put_u64(w, o, "unplaced_steal_ns", lg->unplaced_steal_ns);
	if (lg->when_text) {
		sf_put_str(w, o, "when", lg->when_text);
		sf_put_bool(w, o, "when_from_file", lg->when_file);
		sf_put_bool(w, o, "icase", lg->icase);
	}
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "nodes"));
	for (size_t i = 0; arr && i < lg->nnodes && !w->oom; i++) {
		sf_push(w, arr, x = cJSON_CreateObject());
		if (w->oom)
			break;
		sf_put_str(w, x, "spec", lg->nodes[i].spec);
		sf_put_num(w, x, "arg", lg->nodes[i].arg);
		sf_put_u64(w, x, "hits", lg->nodes[i].hits);
		if (lg->when_text) {
			sf_put_u64(w, x, "not_matching", lg->nodes[i].other);
			sf_put_u64(w, x, "unknown", lg->nodes[i].unknown);
		}
		sf_put_num(w, x, "cost_ns", lg->nodes[i].cost_ns);
		sf_put_num(w, x, "cost_before_ns", lg->nodes[i].pre_ns);
		put_hist(w, x, &lg->nodes[i].hist, &lg->nodes[i].h);
	}
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "legs"));
	for (size_t i = 0; arr && i < lg->nlegs && !w->oom; i++) {
		const struct pcmon_leg *l = &lg->legs[i].stat;

		sf_push(w, arr, x = cJSON_CreateObject());
		if (w->oom)
			break;
		sf_put_num(w, x, "id", lg->legs[i].id);
		sf_put_num(w, x, "from", lg->legs[i].from);
		sf_put_num(w, x, "to", lg->legs[i].to);
		sf_put_bool(w, x, "added", !l->id);
#define PUT_LEG(f, need) sf_put_u64(w, x, #f, l->f);
		PCMON_LEG_FIELDS(PUT_LEG)
#undef PUT_LEG
		put_hist(w, x, &lg->legs[i].hist, &l->h);
	}
	/* rows by LEGS_KEY() (format 5) */
	if (lg->slices)
		timed_save(w, lg->slices, o);
}

/*
 * The tables' time slices (format 5); a file from before has none: its counts load as one
 * slice, the target's life (histograms as counted since they were set up).
 */
static int load_slices(struct sf_rd *rd, const cJSON *o, struct legs *lg)
{
	struct pcmon_node n = { 0 };
	int r;

	if (legs_new_slices(lg, NULL, NULL))
		return -ENOMEM;
	r = timed_read(rd, o, 1, LEGS_MAX_KEY, lg->slices, NULL);
	if (r <= 0)
		return r;
	/* fold what was loaded as if BPF had just counted it all (charged to one instant),
	 * then stretch that one slice over the target's life */
	lg->charge_wall = (uint64_t)(rd->t_start * 1e9);
	for (size_t i = 0; i < lg->nnodes; i++) {
		n.hits = lg->nodes[i].hits;
		n.h = lg->nodes[i].h;
		legs_fold_node(lg, i, &n);
	}
	for (size_t i = 0; i < lg->nlegs; i++) {
		struct pcmon_leg l = lg->legs[i].stat;

		if (legs_fold_leg(lg, lg->legs[i].from, lg->legs[i].to, &l))
			return -ENOMEM;
	}
	if (lg->slices->n) {
		struct slice *s = &lg->slices->s[0];
		uint64_t t1 = (uint64_t)(rd->t_end * 1e9);

		slices_tick(lg->slices, UINT64_MAX / 2); /* closed (no tier merges: one slice) */
		s->t0 = (uint64_t)(rd->t_start * 1e9);
		s->t1 = MAX(t1, s->t0 + 1);
	}
	return 0;
}

static int get_hist(struct sf_rd *rd, const cJSON *o, struct pcmon_hcfg *c, struct pcmon_hist *h)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "hist"), *b, *it;
	uint32_t kind = 0, buckets = 0;
	uint64_t v, scale = 0, base = 0;
	int r, n, i = 0;

	if (!cJSON_IsObject(x))
		return sf_bad(rd, "hist", "missing");
	if ((r = sf_get_u32(rd, x, "kind", SF_ALWAYS, PCMON_HIST_LOG, &kind)) ||
	    (r = sf_get_u32(rd, x, "buckets", SF_ALWAYS, PCMON_HIST_BUCKETS, &buckets)) ||
	    (r = sf_get_u64(rd, x, "scale", SF_ALWAYS, &scale)) ||
	    (r = sf_get_u64(rd, x, "base", SF_ALWAYS, &base)) ||
	    (r = sf_get_u64(rd, x, "under", SF_ALWAYS, &v)))
		return r;
	c->scale = scale;
	c->base = base;
	h->under = v;
	if ((r = sf_get_u64(rd, x, "over", SF_ALWAYS, &v)) ||
	    (r = sf_get_array(rd, x, "b", SF_ALWAYS, PCMON_HIST_BUCKETS + 1, &b, &n)))
		return r;
	h->over = v;
	c->kind = kind;
	c->buckets = buckets;
	cJSON_ArrayForEach(it, b) {
		int r = sf_item_u64(rd, "b", it, UINT64_MAX, &v);

		if (r)
			return r;
		h->b[i++] = v;
	}
	return 0;
}

/* Which files have a leg's total (PCMON_LEG_FIELDS @need). */
enum { LEG_ALWAYS, LEG_OPTIONAL, LEG_NET };

/* A leg's total @name, 0 when the file need not have it; @net: the file's times are net. */
static int get_leg_total(struct sf_rd *rd, const cJSON *o, const char *name, int need, bool net,
			 __u64 *v)
{
	uint64_t u = 0;
	int r = 0;

	if (need != LEG_NET || net)
		r = sf_get_u64(rd, o, name, need == LEG_OPTIONAL ? SF_OPTIONAL : SF_ALWAYS, &u);
	*v = u;
	return r;
}

/* The pattern a target's hits were told apart by (none in older files). */
static int load_when(struct sf_rd *rd, const cJSON *o, struct legs *lg)
{
	const char *when = NULL;
	cJSON *req, *err = NULL;
	int r;

	if ((r = sf_get_str(rd, o, "when", SF_OPTIONAL, PROTO_MAX_LINE, &when)) || !when)
		return r;
	if ((r = sf_get_bool(rd, o, "when_from_file", SF_ALWAYS, &lg->when_file)) ||
	    (r = sf_get_bool(rd, o, "icase", SF_ALWAYS, &lg->icase)))
		return r;
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "when", when);
	cJSON_AddBoolToObject(req, "when_from_file", lg->when_file);
	cJSON_AddBoolToObject(req, "icase", lg->icase);
	r = legs_set_when(lg, req, &err);
	cJSON_Delete(req);
	cJSON_Delete(err);
	return r ? sf_bad(rd, "when", "not a WHEN pattern nodes take") : 0;
}

int legs_store_load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out)
{
	const cJSON *nodes, *legs, *it;
	struct legs *lg = calloc(1, sizeof(*lg));
	double cost = 0;
	int r, nn, nl, i = 0;

	(void)s;
	*out = NULL;
	if (!lg)
		return -ENOMEM;
	lg->detached = true;
	if ((r = sf_get_u32(rd, o, "track", SF_ALWAYS, PCMON_TRACK_NONE, &lg->track)) ||
	    (r = sf_get_u32(rd, o, "add", SF_ALWAYS, 1, &lg->add)) ||
	    (r = sf_get_double(rd, o, "hit_cost_ns", SF_ALWAYS, 0, 1e9, &cost)) ||
	    (r = sf_get_double(rd, o, "stepped_extra_ns", SF_OPTIONAL, 0, 1e9, &lg->step_cost_ns)) ||
	    (r = sf_get_double(rd, o, "hit_err_ns", SF_OPTIONAL, 0, 1e9, &lg->hit_err_ns)) ||
	    (r = sf_get_u64(rd, o, "unplaced_steal_ns", SF_OPTIONAL, &lg->unplaced_steal_ns)) ||
	    (r = sf_get_array(rd, o, "nodes", SF_ALWAYS, 65536, &nodes, &nn)) ||
	    (r = sf_get_array(rd, o, "legs", SF_ALWAYS, 1 << 20, &legs, &nl)) ||
	    (r = load_when(rd, o, lg)))
		goto fail;
	lg->hit_cost_ns = cost;
	r = -ENOMEM;
	lg->nodes = calloc(nn + 1, sizeof(*lg->nodes));
	lg->legs = calloc(nl + 1, sizeof(*lg->legs));
	if (!lg->nodes || !lg->legs)
		goto fail;
	lg->cap_legs = nl + 1;
	cJSON_ArrayForEach(it, nodes) {
		struct legs_node *n = &lg->nodes[lg->nnodes];
		const char *spec = NULL;

		snprintf(rd->at, sizeof(rd->at), "nodes[%d].", i++);
		if ((r = sf_get_str(rd, it, "spec", SF_ALWAYS, 4096, &spec)) ||
		    (r = sf_get_u32(rd, it, "arg", SF_ALWAYS, 7, &n->arg)) ||
		    (r = sf_get_u64(rd, it, "hits", SF_ALWAYS, &n->hits)) ||
		    (r = sf_get_u64(rd, it, "not_matching", SF_OPTIONAL, &n->other)) ||
		    (r = sf_get_u64(rd, it, "unknown", SF_OPTIONAL, &n->unknown)) ||
		    /* (files from before each node had its cost: one hit's, in the header) */
		    (r = sf_get_u32(rd, it, "cost_ns", SF_OPTIONAL, UINT32_MAX, &n->cost_ns)) ||
		    (r = sf_get_u32(rd, it, "cost_before_ns", SF_OPTIONAL, UINT32_MAX, &n->pre_ns)) ||
		    (r = get_hist(rd, it, &n->hist, &n->h)))
			goto fail;
		if (!cJSON_GetObjectItemCaseSensitive(it, "cost_ns"))
			n->cost_ns = (uint32_t)lg->hit_cost_ns;
		n->spec = strdup(spec);
		lg->nnodes++;
	}
	i = 0;
	cJSON_ArrayForEach(it, legs) {
		struct legs_leg *l = &lg->legs[lg->nlegs];
		struct pcmon_leg *tot = &l->stat;
		bool added = false;
		/* files from before probe_hits held gross totals, one hit's cost in each leg */
		bool net = cJSON_GetObjectItemCaseSensitive(it, "probe_hits") != NULL;

		snprintf(rd->at, sizeof(rd->at), "legs[%d].", i++);
		if ((r = sf_get_u32(rd, it, "id", SF_ALWAYS, UINT32_MAX, &l->id)) ||
		    (r = sf_get_u32(rd, it, "from", SF_ALWAYS, nn, &l->from)) ||
		    (r = sf_get_u32(rd, it, "to", SF_ALWAYS, nn, &l->to)) ||
		    (r = sf_get_bool(rd, it, "added", SF_ALWAYS, &added)))
			goto fail;
#define GET_LEG(f, need)                                                \
	if ((r = get_leg_total(rd, it, #f, LEG_##need, net, &tot->f))) \
		goto fail;
		PCMON_LEG_FIELDS(GET_LEG)
#undef GET_LEG
		if ((r = get_hist(rd, it, &l->hist, &tot->h)))
			goto fail;
		if (!net) {
			double cost = lg->hit_cost_ns * (double)tot->count;

			tot->probe_hits = tot->count;
			tot->probe_ns = cost;
			tot->total_ns =
				(double)tot->total_ns > cost ? tot->total_ns - (uint64_t)cost : 0;
		}
		tot->id = added ? 0 : l->id;
		lg->nlegs++;
	}
	rd->at[0] = '\0';
	if ((r = load_slices(rd, o, lg)))
		goto fail;
	*out = lg;
	return 0;
fail:
	legs_free(lg);
	return r;
}
