// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tail profiles in the results file: the "tails" array of the sampling section
 * (sample_store.c). Each tailed leg: its number and nodes, its threshold, its counts, the
 * durations' histogram (sparse: [bucket, count] pairs) and its three profiles, each a list
 * of [stack, count] pairs, a stack by its index in the section's "stacks" (every stack of a
 * tail is one of the target's). Samples held for instances still open are not kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "agg.h"
#include "stfile.h"
#include "tail.h"
#include "util.h"

static cJSON *json_pair(uint64_t a, uint64_t b)
{
	cJSON *p = cJSON_CreateArray();

	if (p && (!cJSON_AddItemToArray(p, cJSON_CreateNumber((double)a)) ||
		  !cJSON_AddItemToArray(p, cJSON_CreateNumber((double)b)))) {
		cJSON_Delete(p);
		p = NULL;
	}
	return p;
}

static void put_counts(struct sf_wr *w, cJSON *o, const char *k, const uint64_t *v)
{
	cJSON *arr = sf_chk(w, cJSON_AddArrayToObject(o, k));

	for (int p = 0; arr && p < TAIL_PARTS; p++)
		sf_push(w, arr, cJSON_CreateNumber((double)MIN(v[p], SF_EXACT_MAX)));
}

void tail_save(const struct tails *t, struct sf_wr *w, cJSON *o)
{
	cJSON *arr;

	if (!t || !t->nlegs)
		return;
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "tails"));
	for (size_t i = 0; arr && !w->oom && i < t->nlegs; i++) {
		const struct tail_leg *l = &t->leg[i];
		cJSON *x = cJSON_CreateObject(), *h;

		sf_push(w, arr, x);
		if (w->oom)
			return;
		sf_put_u64(w, x, "leg", l->id);
		sf_put_u64(w, x, "from", l->from);
		sf_put_u64(w, x, "to", l->to);
		sf_put_u64(w, x, "threshold_ns", l->threshold_ns);
		sf_put_num(w, x, "pct", l->pct);
		sf_put_u64(w, x, "decided_early", l->decided_early);
		put_counts(w, x, "instances", l->instances);
		put_counts(w, x, "samples", l->samples);
		h = sf_chk(w, cJSON_AddArrayToObject(x, "hist"));
		for (uint32_t b = 0; h && l->hist && b < TAIL_HBUCKETS; b++)
			if (l->hist[b])
				sf_push(w, h, json_pair(b, MIN(l->hist[b], SF_EXACT_MAX)));
		for (int p = 0; p < TAIL_PARTS && !w->oom; p++) {
			cJSON *pa = sf_chk(w, cJSON_AddArrayToObject(x, tail_part_names[p]));

			for (size_t k = 0; pa && k < agg_count(l->prof[p]); k++) {
				uint64_t c, ns;
				const struct agg_stack *st = agg_get(l->prof[p], k, &c, &ns);
				uint32_t id;

				/* its index in "stacks": its id in the target's aggregate (a count
				 * of 0 adds nothing) */
				if (!agg_bump_id(t->main, st, 0, 0, &id))
					sf_push(w, pa, json_pair(id, MIN(c, SF_EXACT_MAX)));
			}
		}
	}
}

/* An array of [a, b] pairs, a < @amax, into @fn. */
static int read_pairs(struct sf_rd *rd, const cJSON *o, const char *key, uint64_t amax,
		      int (*fn)(void *ctx, uint64_t a, uint64_t b), void *ctx)
{
	const cJSON *arr, *it;
	int n, i = 0, r;

	if ((r = sf_get_array(rd, o, key, SF_ALWAYS, 1 << 24, &arr, &n)))
		return r;
	if (n && !amax)
		return sf_bad(rd, key, "names stacks, and the section has none");
	cJSON_ArrayForEach(it, arr) {
		uint64_t a, b;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2)
			return sf_bad(rd, key, "item %d is not a pair [index, count]", i);
		if ((r = sf_item_u64(rd, key, cJSON_GetArrayItem(it, 0), amax - 1, &a)) ||
		    (r = sf_item_u64(rd, key, cJSON_GetArrayItem(it, 1), SF_EXACT_MAX, &b)))
			return r;
		if ((r = fn(ctx, a, b)))
			return r;
		i++;
	}
	return 0;
}

static int read_counts(struct sf_rd *rd, const cJSON *o, const char *key, uint64_t *v)
{
	const cJSON *arr;
	int n, r;

	if ((r = sf_get_array(rd, o, key, SF_ALWAYS, TAIL_PARTS, &arr, &n)))
		return r;
	if (n != TAIL_PARTS)
		return sf_bad(rd, key, "expected %d counts (tail, body, abandoned)", TAIL_PARTS);
	for (int p = 0; p < TAIL_PARTS; p++)
		if ((r = sf_item_u64(rd, key, cJSON_GetArrayItem(arr, p), SF_EXACT_MAX, &v[p])))
			return r;
	return 0;
}

struct fill {
	struct tails *t;
	struct tail_leg *l;
	int part;
	const uint32_t *sid;
};

static int add_hist(void *ctx, uint64_t b, uint64_t n)
{
	struct fill *f = ctx;

	if (f->l->hist) {
		f->l->hist[b] += n;
		f->l->ndur += n;
	}
	return 0;
}

static int add_stack(void *ctx, uint64_t idx, uint64_t n)
{
	struct fill *f = ctx;
	uint64_t c, ns;
	const struct agg_stack *st = agg_get(f->t->main, f->sid[idx], &c, &ns);

	return st ? agg_add(f->l->prof[f->part], st, n, 0) : -ENOMEM;
}

int tail_load(struct sf_rd *rd, const cJSON *o, struct agg *main, const uint32_t *sid,
	      int nstacks, struct tails **out)
{
	const cJSON *arr, *it;
	struct tails *t = NULL;
	int n, i = 0, r;

	*out = NULL;
	if ((r = sf_get_array(rd, o, "tails", SF_OPTIONAL, PCMON_TAIL_LEGS, &arr, &n)) || !arr)
		return r;
	if (!(t = tails_new(main)))
		return -ENOMEM;
	cJSON_ArrayForEach(it, arr) {
		uint64_t leg = 0, from = 0, to = 0, ns = 0;
		double pct = 0;
		struct fill f = { .t = t, .sid = sid };
		int slot;

		snprintf(rd->at, sizeof(rd->at), "tails[%d].", i++);
		if ((r = sf_get_u64x(rd, it, "leg", SF_ALWAYS, 1000000, false, &leg)) ||
		    (r = sf_get_u64x(rd, it, "from", SF_ALWAYS, UINT32_MAX, false, &from)) ||
		    (r = sf_get_u64x(rd, it, "to", SF_ALWAYS, UINT32_MAX, false, &to)) ||
		    (r = sf_get_u64(rd, it, "threshold_ns", SF_ALWAYS, &ns)) ||
		    (r = sf_get_double(rd, it, "pct", SF_ALWAYS, 0, 100, &pct)))
			goto out;
		if (!ns == !(pct > 0)) {
			r = sf_bad(rd, "pct", "a tail has a duration or a percentile, one of them");
			goto out;
		}
		if ((slot = tails_add_leg(t, (uint32_t)leg, (uint32_t)from, (uint32_t)to, ns, pct)) < 0) {
			r = slot;
			goto out;
		}
		f.l = &t->leg[slot - 1];
		if ((r = sf_get_u64(rd, it, "decided_early", SF_ALWAYS, &f.l->decided_early)) ||
		    (r = read_counts(rd, it, "instances", f.l->instances)) ||
		    (r = read_counts(rd, it, "samples", f.l->samples)) ||
		    (r = read_pairs(rd, it, "hist", TAIL_HBUCKETS, add_hist, &f)))
			goto out;
		for (f.part = 0; f.part < TAIL_PARTS; f.part++)
			if ((r = read_pairs(rd, it, tail_part_names[f.part], (uint64_t)nstacks,
					    add_stack, &f)))
				goto out;
	}
	rd->at[0] = '\0';
	*out = t;
	t = NULL;
out:
	tails_free(t);
	return r;
}
