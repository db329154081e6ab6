// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe-node instrument (docs/legs.md): nodes are probe points, legs the code a thread runs
 * between two nodes, histograms on a node's argument or a leg's time. BPF does the per-thread
 * work (bpf/legs.bpf.c); here, the base the instrument's other parts call into: a target's
 * tables, made from the start request (the specs parsed) and freed, and the pure parts
 * (legs.h): a hit's cost, a leg's times, the index of legs BPF is given, BPF's counts folded
 * into the tables and their time slices. Resolving nodes to addresses (funcs.c) and attaching
 * are in legs_attach.c, the Mesa tool's report, `pcmon tables`, in legs_report.c; the parts
 * share legs_int.h.
 *
 * What a probe hit costs is measured with the call counter's calibration (counter.c): a leg's
 * time holds about one hit (the end of its from node's probe and the start of its to node's),
 * which is subtracted from every completed leg.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "legs.h"
#include "legs_int.h"
#include "tail.h"
#include "pat.h"
#include "proto.h"
#include "slices.h"
#include "timed.h"
#include "util.h"
#include "when.h"

/* ---- settings */

void legs_drop_context(struct legs *lg)
{
	for (size_t i = 0; i < lg->nctx_links; i++)
		bpf_link__destroy(lg->ctx_links[i]);
	lg->nctx_links = 0;
}

void legs_free(void *st)
{
	struct legs *lg = st;

	if (!lg)
		return;
	for (size_t i = 0; i < lg->nnodes; i++) {
		for (size_t k = 0; k < lg->nodes[i].nlinks; k++)
			bpf_link__destroy(lg->nodes[i].links[k]);
		free(lg->nodes[i].links);
		free(lg->nodes[i].spec);
	}
	free(lg->nodes);
	free(lg->legs);
	slices_free(lg->slices);
	legs_drop_context(lg);
	free(lg->ctx_links);
	pat_free(lg->when);
	free(lg->when_text);
	free(lg);
}

/* The tables' slices, as the start request says (or the defaults: @req NULL). */
int legs_new_slices(struct legs *lg, const cJSON *req, cJSON **rep)
{
	struct slices_cfg cfg;

	timed_default_cfg(&cfg);
	if (req && timed_cfg(req, &cfg, rep))
		return -EINVAL;
	lg->slices = slices_new(&cfg, 1);
	if (!lg->slices) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* "3", or "*": a node number of @lg, or PCMON_ANY_NODE. */
static int node_ref(const struct legs *lg, const char *s, size_t len, uint32_t *out)
{
	char buf[16];
	long v;

	if (len == 1 && s[0] == '*') {
		*out = PCMON_ANY_NODE;
		return 0;
	}
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (parse_whole(buf, 1, lg->nnodes, &v))
		return -EINVAL;
	*out = v;
	return 0;
}

/* "node:ID,linear,BUCKETS,SCALE,BASE" or "node:ID,log" (and leg:ID). */
int legs_parse_hist(struct legs *lg, const char *spec, cJSON **rep)
{
	char kind[8] = "", shape[8] = "";
	unsigned long id = 0, b = 0, sc = 0, base = 0;
	struct pcmon_hcfg h = { 0 };
	int n = sscanf(spec, "%7[a-z]:%lu,%7[a-z],%lu,%lu,%lu", kind, &id, shape, &b, &sc, &base);

	if (n >= 3 && !strcmp(shape, "log") && n == 3)
		h.kind = PCMON_HIST_LOG;
	else if (n == 6 && !strcmp(shape, "linear") && b >= 1 && b <= PCMON_HIST_BUCKETS && sc >= 1)
		h = (struct pcmon_hcfg){ PCMON_HIST_LINEAR, b, sc, base };
	else
		goto bad;
	if (!strcmp(kind, "node") && id >= 1 && id <= lg->nnodes) {
		if (!lg->nodes[id - 1].arg) {
			*rep = proto_error(2, "--hist %s: node %lu records no argument (give it --hist-arg N)",
					   spec, id);
			return -EINVAL;
		}
		lg->nodes[id - 1].hist = h;
		return 0;
	}
	for (size_t i = 0; !strcmp(kind, "leg") && i < lg->nlegs; i++) {
		if (lg->legs[i].id == id) {
			lg->legs[i].hist = h;
			return 0;
		}
	}
bad:
	*rep = proto_error(2, "--hist %s: expected node:ID|leg:ID,linear,BUCKETS,SCALE,BASE or node:ID|leg:ID,log (BUCKETS 1-%d, an existing node or leg)",
			   spec, PCMON_HIST_BUCKETS);
	return -EINVAL;
}

/*
 * Would @l overflow what --track all keeps per node (PCMON_NODE_LEGS legs start, and end,
 * at one node or at '*') or per target (PCMON_TARGET_LEGS)? Then it is refused, in words.
 */
bool legs_full(const struct legs *lg, const struct legs_leg *l, const char *spec, cJSON **rep)
{
	size_t from = 0, to = 0, all = 0;

	for (size_t i = 0; i < lg->nlegs; i++) {
		if (!lg->legs[i].stat.id)
			continue; /* added by --add successor: not tracked on its own */
		all++;
		from += lg->legs[i].from == l->from;
		to += lg->legs[i].to == l->to;
	}
	if (all >= PCMON_TARGET_LEGS)
		*rep = proto_error(2, "--leg %s: a target's table holds at most %d legs", spec,
				   PCMON_TARGET_LEGS);
	else if (from >= PCMON_NODE_LEGS || to >= PCMON_NODE_LEGS)
		*rep = proto_error(2, "--leg %s: at most %d legs may start, and %d end, at one node",
				   spec, PCMON_NODE_LEGS, PCMON_NODE_LEGS);
	else
		return false;
	return true;
}

/* Legs "FROM:TO" appended to @lg, numbered after its others. 0, or the error in *rep. */
int legs_parse_legs(struct legs *lg, const cJSON *arr, cJSON **rep)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		const char *colon = strchr(it->valuestring, ':');
		struct legs_leg l = { .id = lg->nlegs + 1 };

		if (!colon || node_ref(lg, it->valuestring, colon - it->valuestring, &l.from) ||
		    node_ref(lg, colon + 1, strlen(colon + 1), &l.to) ||
		    (l.from == PCMON_ANY_NODE && l.to == PCMON_ANY_NODE)) {
			*rep = proto_error(2, "--leg %s: expected FROM:TO, node numbers 1-%zu or '*' (not both)",
					   it->valuestring, lg->nnodes);
			return -EINVAL;
		}
		l.stat.min_ns = ~0ULL;
		l.stat.id = l.id;
		if (legs_full(lg, &l, it->valuestring, rep))
			return -EINVAL;
		if (GROW(lg->legs, lg->cap_legs, lg->nlegs + 1)) {
			*rep = proto_error(1, "out of memory");
			return -ENOMEM;
		}
		lg->legs[lg->nlegs++] = l;
	}
	return 0;
}

/*
 * The request's WHEN pattern. A hit decides at once whether it counts and starts legs, so
 * the pattern is answered from the shadow stack, which its names must fit (docs/when.md,
 * "At probes"); a ':' changes nothing here (a hit is not charged to a frame).
 */
int legs_set_when(struct legs *lg, const cJSON *req, cJSON **rep)
{
	const char *text = proto_str(req, "when", NULL);
	char why[200];

	if (!text)
		return 0;
	lg->icase = proto_bool(req, "icase", 0);
	lg->when_file = proto_bool(req, "when_from_file", 0);
	if (when_compile(text, lg->when_file, lg->icase, &lg->when, rep))
		return -EINVAL;
	if (when_plan(lg->when, true, &lg->wpat, why, sizeof(why))) {
		*rep = proto_error(2, "--when with nodes: %s; a node decides at its hit, from the procedures pcmon probes for the pattern: join names with '*'",
				   why);
		return -EINVAL;
	}
	lg->when_text = strdup(text);
	return lg->when_text ? 0 : -ENOMEM;
}

/* --tail LEG[:THRESHOLD]: legs of the table, tracked on their own (--track all). */
int legs_parse_tails(struct legs *lg, const cJSON *arr, cJSON **rep)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr) {
		struct legs_tail *lt = &lg->tails[lg->ntails];
		const char *why;
		bool found = false;

		if (lg->ntails >= PCMON_TAIL_LEGS) {
			*rep = proto_error(2, "--tail: at most %d legs a target", PCMON_TAIL_LEGS);
			return -E2BIG;
		}
		if (tail_parse(it->valuestring, &lt->leg, &lt->ns, &lt->pct, &why)) {
			*rep = proto_error(2, "--tail %s: %s", it->valuestring, why);
			return -EINVAL;
		}
		for (size_t i = 0; i < lg->nlegs; i++)
			found |= lg->legs[i].id == lt->leg && lg->legs[i].from != PCMON_ANY_NODE &&
				 lg->legs[i].to != PCMON_ANY_NODE;
		for (size_t i = 0; i < lg->ntails; i++)
			if (lg->tails[i].leg == lt->leg) {
				*rep = proto_error(2, "--tail %s: leg %u is tailed already",
						   it->valuestring, lt->leg);
				return -EINVAL;
			}
		if (!found) {
			*rep = proto_error(2, "--tail %s: no leg %u between two nodes (--leg FROM:TO; not from or to '*')",
					   it->valuestring, lt->leg);
			return -ENOENT;
		}
		if (lg->track != PCMON_TRACK_ALL) {
			*rep = proto_error(2, "--tail needs --track all (each leg tracked on its own)");
			return -EINVAL;
		}
		lg->ntails++;
	}
	return 0;
}

int legs_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(req, "nodes"), *it;
	const char *track = proto_str(req, "track", "all"), *add = proto_str(req, "add", "none");
	struct legs *lg = calloc(1, sizeof(*lg));
	int n = cJSON_GetArraySize(nodes);

	(void)gp;
	(void)c;
	if (!lg || !(lg->nodes = calloc(n + 1, sizeof(*lg->nodes)))) {
		legs_free(lg);
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	lg->track = !strcmp(track, "successor") ? PCMON_TRACK_SUCCESSOR
		    : !strcmp(track, "none")    ? PCMON_TRACK_NONE
						: PCMON_TRACK_ALL;
	lg->add = !strcmp(add, "successor");
	if (legs_new_slices(lg, req, rep)) {
		legs_free(lg);
		return -EINVAL;
	}
	cJSON_ArrayForEach(it, nodes) {
		const char *spec = proto_str(it, "spec", NULL);

		if (!cJSON_IsObject(it) || !spec || !*spec) {
			*rep = proto_error(2, "--node: expected {\"spec\": NODE, [\"arg\": N]}");
			goto fail;
		}
		lg->nodes[lg->nnodes].spec = strdup(spec);
		lg->nodes[lg->nnodes++].arg = cJSON_GetObjectItemCaseSensitive(it, "arg")
						      ? (uint32_t)proto_num(it, "arg", 0) + 1
						      : 0;
	}
	if (legs_parse_legs(lg, cJSON_GetObjectItemCaseSensitive(req, "legs"), rep))
		goto fail;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(req, "hists"))
		if (legs_parse_hist(lg, it->valuestring, rep))
			goto fail;
	if (legs_set_when(lg, req, rep))
		goto fail;
	if (legs_parse_tails(lg, cJSON_GetObjectItemCaseSensitive(req, "tails"), rep))
		goto fail;
	*out = lg;
	return 0;
fail:
	legs_free(lg);
	return -EINVAL;
}

/* ---- costs, times, the index of legs, BPF's counts folded (legs.h's pure parts) */

void legs_node_cost(struct legs *lg, size_t i, bool xol)
{
	lg->nodes[i].cost_ns = (uint32_t)(lg->hit_cost_ns + (xol ? lg->step_cost_ns : 0) + 0.5);
	lg->nodes[i].pre_ns = (uint32_t)(lg->hit_cost_ns / 2 + 0.5);
}

void legs_index(const struct legs *lg, struct pcmon_nlegs *nl, size_t nn, struct pcmon_tlegs *tl)
{
	for (size_t i = 0; i < lg->nlegs && tl->n < PCMON_TARGET_LEGS; i++) {
		const struct legs_leg *l = &lg->legs[i];

		if (!l->stat.id || l->from >= nn || l->to >= nn)
			continue;
		if (nl[l->from].nfrom < PCMON_NODE_LEGS)
			nl[l->from].from_to[nl[l->from].nfrom++] = l->to;
		if (nl[l->to].nto < PCMON_NODE_LEGS)
			nl[l->to].to_from[nl[l->to].nto++] = l->from;
		tl->l[tl->n++] = (struct pcmon_tleg){ l->from, l->to };
	}
}

void legs_calibrate(struct legs *lg, double emulated, double stepped)
{
	/* one hit: half an entry-and-return pair, as the call counter measures it */
	lg->hit_cost_ns = emulated / 2;
	lg->step_cost_ns = stepped > emulated ? stepped - emulated : 0;
}

void legs_calibrate_err(struct legs *lg, double spread)
{
	/* a hit's spread (half a pair's), and where a hit's cost falls, before or after its
	 * clock reading, taken as half and half: give or take half a hit */
	lg->hit_err_ns = spread / 2 + lg->hit_cost_ns / 2;
}

void legs_leg_times(const struct legs *lg, const struct pcmon_leg *s, struct legs_times *t)
{
	double n = (double)s->count, total = (double)s->total_ns;

	/* each leg holds its ends' parts (one hit) and the hits inside */
	t->total_err = lg->hit_err_ns * (n + (double)s->probe_hits);
	/* what the hypervisor stole during the legs is in their time, and in its error: some
	 * may have been at the probes */
	t->total_err += (double)s->stolen_ns;
	/* and what was stolen around a hit that cannot be placed on one side of it */
	t->total_err += (double)lg->unplaced_steal_ns;
	t->total = MAX(total, 0);
	t->avg = n ? t->total / n : 0;
	t->avg_err = n ? t->total_err / n : 0;
	t->max = n ? MIN(MAX((double)s->max_ns, t->avg), t->total) : 0;
	t->min = n ? MIN((double)s->min_ns, t->avg) : 0;
	/* the extremes: one leg, with at least its ends' hit, and what was stolen in it */
	t->max_err = n ? lg->hit_err_ns + (double)(s->max_steal_ns + lg->unplaced_steal_ns) : 0;
	t->min_err = n ? lg->hit_err_ns + (double)(s->min_steal_ns + lg->unplaced_steal_ns) : 0;
}

/* A histogram's counts since its zero @h0. */
static void hist_sub(struct pcmon_hist *h, const struct pcmon_hist *h0)
{
	h->under -= h0->under;
	h->over -= h0->over;
	for (size_t i = 0; i < ARRAY_SIZE(h->b); i++)
		h->b[i] -= h0->b[i];
}

/* What @v gained over @was, raw, as row @key of the slice of lg->charge_wall. */
static void charge(struct legs *lg, uint64_t key, uint64_t v, uint64_t was, bool reset)
{
	uint64_t d = reset ? v : v - was;

	if (d && lg->slices && key <= UINT32_MAX)
		slices_add(lg->slices, (uint32_t)key, &d, lg->charge_wall);
}

static void charge_hist(struct legs *lg, uint64_t slot, uint32_t field,
			const struct pcmon_hist *h, const struct pcmon_hist *was, bool reset)
{
	charge(lg, LEGS_KEY(slot, field), h->under, was->under, reset);
	charge(lg, LEGS_KEY(slot, field + 1), h->over, was->over, reset);
	for (uint32_t b = 0; b < ARRAY_SIZE(h->b); b++)
		charge(lg, LEGS_KEY(slot, field + 2 + b), h->b[b], was->b[b], reset);
}

void legs_fold_node(struct legs *lg, size_t i, const struct pcmon_node *n)
{
	struct legs_node *nd = &lg->nodes[i];
	bool reset = n->hits < nd->c_hits; /* zeroed since */

	charge(lg, LEGS_KEY(LEGS_NODE_SLOT(i), 0), n->hits, nd->c_hits, reset);
	charge_hist(lg, LEGS_NODE_SLOT(i), LEGS_NODE_HIST, &n->h, &nd->c_h, reset);
	nd->c_hits = n->hits;
	nd->c_h = n->h;
	lg->nodes[i].hits = n->hits;
	lg->nodes[i].other = n->other;
	lg->nodes[i].unknown = n->unknown;
	lg->nodes[i].h = n->h;
	hist_sub(&lg->nodes[i].h, &lg->nodes[i].h0);
}

/*
 * The number of a new leg: after the highest (after a `leg del` the numbers have a hole, and
 * the count of legs is a number some leg may still have).
 */
uint32_t legs_next_leg_id(const struct legs *lg)
{
	uint32_t id = 0;

	for (size_t i = 0; i < lg->nlegs; i++)
		id = MAX(id, lg->legs[i].id);
	return id + 1;
}

int legs_fold_leg(struct legs *lg, uint32_t from, uint32_t to, const struct pcmon_leg *l)
{
	size_t i;

	for (i = 0; i < lg->nlegs && !(lg->legs[i].from == from && lg->legs[i].to == to); i++)
		;
	if (i == lg->nlegs) { /* --add successor added it: numbered after the others */
		if (GROW(lg->legs, lg->cap_legs, lg->nlegs + 1))
			return -ENOMEM;
		lg->legs[i] = (struct legs_leg){ .id = legs_next_leg_id(lg), .from = from, .to = to };
		lg->nlegs++;
	}
	{
		struct legs_leg *lp = &lg->legs[i];
		uint64_t slot = LEGS_LEG_SLOT(lp->id);
		bool reset = l->count < lp->c.count || l->abandoned < lp->c.abandoned;
		uint32_t k = 0;

#define LEG_FIELDS_COUNT(f, need) +1
		_Static_assert(LEGS_LEG_FIELD(0 PCMON_LEG_FIELDS(LEG_FIELDS_COUNT)) < 128,
			       "a leg's fields and histogram fit LEGS_KEY()'s 7 bits");
#undef LEG_FIELDS_COUNT
#define CHARGE_LEG(f, need)                                                       \
	if (strcmp(#f, "min_ns") && strcmp(#f, "max_ns") && strcmp(#f, "min_steal_ns") && \
	    strcmp(#f, "max_steal_ns"))                                          \
		charge(lg, LEGS_KEY(slot, LEGS_LEG_FIELD(k)), l->f, lp->c.f, reset); \
	k++;
		PCMON_LEG_FIELDS(CHARGE_LEG)
#undef CHARGE_LEG
		charge_hist(lg, slot, LEGS_LEG_HIST, &l->h, &lp->c.h, reset);
		lp->c = *l;
	}
	lg->legs[i].stat = *l;
	hist_sub(&lg->legs[i].stat.h, &lg->legs[i].h0);
	return 0;
}
