// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tail profiles: a tailed leg's instances, their samples held and filed (tail.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "tail.h"
#include "util.h"

const char *const tail_part_names[TAIL_PARTS] = { "tail", "body", "abandoned" };

/* ---- a map of nonzero 32-bit ids to records: open addressing, linear probing */

struct tmap {
	uint32_t *keys;		/* 0: free */
	void **vals;
	size_t cap, n;		/* cap: a power of 2 */
};

static struct tmap *tmap_new(void)
{
	return calloc(1, sizeof(struct tmap));
}

static size_t tmap_slot(const struct tmap *m, uint32_t k)
{
	return (size_t)(k * 2654435761u) & (m->cap - 1);
}

static void *tmap_get(const struct tmap *m, uint32_t k)
{
	if (!m->cap || !k)
		return NULL;
	for (size_t i = tmap_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k)
			return m->vals[i];
		if (!m->keys[i])
			return NULL;
	}
}

static int tmap_put(struct tmap *m, uint32_t k, void *v);

static int tmap_grow(struct tmap *m)
{
	struct tmap old = *m;
	size_t cap = m->cap ? m->cap * 2 : 64;

	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		*m = old;
		return -ENOMEM;
	}
	m->cap = cap;
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.keys[i])
			tmap_put(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
	return 0;
}

/* @k (not there) is @v. */
static int tmap_put(struct tmap *m, uint32_t k, void *v)
{
	size_t i;

	if ((m->n + 1) * 4 > m->cap * 3 && tmap_grow(m))
		return -ENOMEM;
	for (i = tmap_slot(m, k); m->keys[i]; i = (i + 1) & (m->cap - 1))
		;
	m->keys[i] = k;
	m->vals[i] = v;
	m->n++;
	return 0;
}

/* The entry at slot @i removed; the ones after it moved back where they belong. */
static void tmap_del_at(struct tmap *m, size_t i)
{
	size_t j = i;

	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->n--;
	for (;;) {
		size_t h;

		j = (j + 1) & (m->cap - 1);
		if (!m->keys[j])
			return;
		h = tmap_slot(m, m->keys[j]);
		/* j's entry stays if its home h lies cyclically in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = 0;
		m->vals[j] = NULL;
		i = j;
	}
}

static void tmap_free(struct tmap *m, void (*fn)(void *))
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] && fn)
			fn(m->vals[i]);
	free(m->keys);
	free(m->vals);
	free(m);
}

/* ---- records */

/* Samples held: groups of (stack id, count). */
struct held {
	uint32_t *stack;
	uint64_t *count;
	size_t n, cap;
};

enum { V_OPEN, V_DONE };

struct tinst {
	uint32_t id, slot;	/* slot: 1..., 0: not known yet (its set told, its end not) */
	int state;		/* V_OPEN, V_DONE */
	enum tail_part part;	/* V_DONE: where its samples go */
	uint64_t at;		/* when it ended (engine ns) */
	struct held held;
};

struct tset {
	uint32_t id;
	uint32_t inst[PCMON_TAIL_LEGS];
	uint64_t at;		/* when told */
};

struct orphan {			/* samples of a set not told yet */
	uint64_t at;		/* the first's arrival */
	struct held held;
};

static void held_free(struct held *h)
{
	free(h->stack);
	free(h->count);
	memset(h, 0, sizeof(*h));
}

static void inst_free(void *p)
{
	struct tinst *i = p;

	held_free(&i->held);
	free(i);
}

static void orphan_free(void *p)
{
	struct orphan *o = p;

	held_free(&o->held);
	free(o);
}

static int held_add(struct tails *t, struct held *h, uint32_t stack, uint64_t count)
{
	if (h->n && h->stack[h->n - 1] == stack) {
		h->count[h->n - 1] += count;
		return 0;
	}
	if (t->held >= TAIL_MAX_HELD) {
		t->overflow += count;
		return -ENOSPC;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 8;
		uint32_t *s = realloc(h->stack, cap * sizeof(*s));
		uint64_t *c = s ? realloc(h->count, cap * sizeof(*c)) : NULL;

		if (s)
			h->stack = s;
		if (!c) {
			t->overflow += count;
			return -ENOMEM;
		}
		h->count = c;
		h->cap = cap;
	}
	h->stack[h->n] = stack;
	h->count[h->n++] = count;
	t->held++;
	return 0;
}

/* ---- the tails */

struct tails *tails_new(struct agg *main)
{
	struct tails *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->main = main;
	t->sets = tmap_new();
	t->insts = tmap_new();
	t->orphans = tmap_new();
	if (!t->sets || !t->insts || !t->orphans) {
		tails_free(t);
		return NULL;
	}
	return t;
}

static void forget_all(struct tails *t)
{
	struct tmap *m[3] = { t->sets, t->insts, t->orphans };
	void (*fn[3])(void *) = { free, inst_free, orphan_free };

	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; m[k] && i < m[k]->cap; i++)
			if (m[k]->keys[i])
				fn[k](m[k]->vals[i]);
		if (m[k] && m[k]->cap) {
			memset(m[k]->keys, 0, m[k]->cap * sizeof(*m[k]->keys));
			memset(m[k]->vals, 0, m[k]->cap * sizeof(*m[k]->vals));
		}
		if (m[k])
			m[k]->n = 0;
	}
	t->held = 0;
}

void tails_free(struct tails *t)
{
	if (!t)
		return;
	forget_all(t);
	tmap_free(t->sets, NULL);
	tmap_free(t->insts, NULL);
	tmap_free(t->orphans, NULL);
	for (size_t i = 0; i < t->nlegs; i++) {
		for (int p = 0; p < TAIL_PARTS; p++)
			agg_free(t->leg[i].prof[p]);
		free(t->leg[i].hist);
	}
	free(t);
}

void tails_zero(struct tails *t)
{
	forget_all(t);
	t->overflow = t->unmatched = 0;
	for (size_t i = 0; i < t->nlegs; i++) {
		struct tail_leg *l = &t->leg[i];

		for (int p = 0; p < TAIL_PARTS; p++)
			agg_zero(l->prof[p]);
		memset(l->instances, 0, sizeof(l->instances));
		memset(l->samples, 0, sizeof(l->samples));
		l->decided_early = l->ndur = 0;
		if (l->hist)
			memset(l->hist, 0, TAIL_HBUCKETS * sizeof(*l->hist));
	}
}

size_t tails_bytes(const struct tails *t)
{
	size_t b = sizeof(*t) + t->held * 12;

	for (size_t i = 0; i < t->nlegs; i++) {
		for (int p = 0; p < TAIL_PARTS; p++)
			b += agg_bytes(t->leg[i].prof[p]);
		if (t->leg[i].hist)
			b += TAIL_HBUCKETS * sizeof(uint64_t);
	}
	return b + (t->sets->cap + t->insts->cap + t->orphans->cap) * 12;
}

int tail_parse(const char *spec, uint32_t *leg, uint64_t *ns, double *pct, const char **why)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = { { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	char *end;
	unsigned long id = strtoul(spec, &end, 10);
	double v;

	*ns = 0;
	*pct = 99;
	*why = "expected LEG[:THRESHOLD]: a leg's number, and a duration (5ms) or a percentile (p99)";
	if (end == spec || !id || id > 1000000 || (*end && *end != ':'))
		return -EINVAL;
	*leg = (uint32_t)id;
	if (!*end)
		return 0;
	spec = end + 1;
	if (*spec == 'p') {
		v = strtod(spec + 1, &end);
		if (end == spec + 1 || *end || !(v > 0 && v < 100)) {
			*why = "a percentile is p50 to p99.99: between 0 and 100";
			return -EINVAL;
		}
		*pct = v;
		return 0;
	}
	v = strtod(spec, &end);
	for (size_t i = 0; end != spec && i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].unit) && v > 0 && v * units[i].ns < 1e18) {
			*ns = (uint64_t)llround(v * units[i].ns);
			*pct = 0;
			return *ns ? 0 : -EINVAL;
		}
	*why = "a threshold is a duration with its unit (ns, us, ms, s) or a percentile (p99)";
	return -EINVAL;
}

int tails_add_leg(struct tails *t, uint32_t id, uint32_t from, uint32_t to, uint64_t ns, double pct)
{
	struct tail_leg *l;

	if (t->nlegs >= PCMON_TAIL_LEGS)
		return -E2BIG;
	l = &t->leg[t->nlegs];
	*l = (struct tail_leg){ .id = id, .from = from, .to = to, .threshold_ns = ns, .pct = pct };
	for (int p = 0; p < TAIL_PARTS; p++)
		if (!(l->prof[p] = agg_new()))
			goto fail;
	if (!ns && !(l->hist = calloc(TAIL_HBUCKETS, sizeof(*l->hist))))
		goto fail;
	return (int)++t->nlegs;
fail:
	for (int p = 0; p < TAIL_PARTS; p++)
		agg_free(l->prof[p]);
	return -ENOMEM;
}

struct tail_leg *tails_leg(struct tails *t, uint32_t id)
{
	for (size_t i = 0; t && i < t->nlegs; i++)
		if (t->leg[i].id == id)
			return &t->leg[i];
	return NULL;
}

uint32_t tail_bucket(uint64_t v)
{
	uint32_t e;

	if (v < (1u << TAIL_SUB_BITS))
		return (uint32_t)v;
	e = 63 - (uint32_t)__builtin_clzll(v); /* >= TAIL_SUB_BITS */
	return ((e - TAIL_SUB_BITS + 1) << TAIL_SUB_BITS) |
	       (uint32_t)(v >> (e - TAIL_SUB_BITS) & ((1u << TAIL_SUB_BITS) - 1));
}

uint64_t tail_bucket_low(uint32_t b)
{
	uint32_t oct = b >> TAIL_SUB_BITS, sub = b & ((1u << TAIL_SUB_BITS) - 1);

	if (!oct)
		return sub;
	return (uint64_t)((1u << TAIL_SUB_BITS) | sub) << (oct - 1);
}

uint64_t tail_threshold(const struct tail_leg *l)
{
	uint64_t want, seen = 0;

	if (!l->hist)
		return l->threshold_ns;
	if (!l->ndur)
		return 0;
	/* the least duration at or above which (100 - pct) % of them are */
	want = (uint64_t)ceil(l->ndur * l->pct / 100.0);
	if (!want)
		want = 1;
	for (uint32_t b = 0; b < TAIL_HBUCKETS; b++) {
		uint64_t lo, hi;

		if (seen + l->hist[b] < want) {
			seen += l->hist[b];
			continue;
		}
		/* within the bucket, as if its durations were spread evenly over it */
		lo = tail_bucket_low(b);
		hi = b + 1 < TAIL_HBUCKETS ? tail_bucket_low(b + 1) : lo;
		return lo + (uint64_t)((double)(hi - lo) * (double)(want - seen - 1) /
				       (double)l->hist[b]);
	}
	return ~0ull;
}

/* The samples held for @i, filed where it went. */
static void file_sample(struct tails *t, struct tail_leg *l, enum tail_part part, uint32_t stack,
		 uint64_t count)
{
	uint64_t c, ns;
	const struct agg_stack *st = agg_get(t->main, stack, &c, &ns);

	if (!st || agg_add(l->prof[part], st, count, 0)) {
		t->unmatched += count;
		return;
	}
	l->samples[part] += count;
}

static void file_held(struct tails *t, struct tinst *i)
{
	struct tail_leg *l = &t->leg[i->slot - 1];

	for (size_t k = 0; k < i->held.n; k++)
		file_sample(t, l, i->part, i->held.stack[k], i->held.count[k]);
	t->held -= MIN(t->held, i->held.n);
	held_free(&i->held);
}

/* @count samples of @stack in set @s. */
static void to_set(struct tails *t, const struct tset *s, uint32_t stack, uint64_t count)
{
	for (int k = 0; k < PCMON_TAIL_LEGS; k++) {
		struct tinst *i;

		if (!s->inst[k])
			continue;
		i = tmap_get(t->insts, s->inst[k]);
		if (!i) {
			t->unmatched += count;
			continue;
		}
		if (i->state == V_DONE && i->slot >= 1 && i->slot <= t->nlegs)
			file_sample(t, &t->leg[i->slot - 1], i->part, stack, count);
		else
			held_add(t, &i->held, stack, count);
	}
}

static struct tinst *inst_get(struct tails *t, uint32_t id);

void tails_sample(struct tails *t, uint32_t set, uint32_t stack, uint64_t count, uint64_t now)
{
	struct tset *s;
	struct orphan *o;
	struct tinst *i;

	if (!t || !set)
		return;
	if (!(set & PCMON_TAIL_MULTI)) { /* a set of one instance, by the instance's id */
		i = inst_get(t, set);
		if (!i)
			t->overflow += count;
		else if (i->state == V_DONE && i->slot >= 1 && i->slot <= t->nlegs)
			file_sample(t, &t->leg[i->slot - 1], i->part, stack, count);
		else
			held_add(t, &i->held, stack, count);
		return;
	}
	s = tmap_get(t->sets, set);
	if (s) {
		to_set(t, s, stack, count);
		return;
	}
	/* its set is not told yet: the events' ring is read after the samples' */
	o = tmap_get(t->orphans, set);
	if (!o) {
		o = calloc(1, sizeof(*o));
		if (!o || tmap_put(t->orphans, set, o)) {
			free(o);
			t->unmatched += count;
			return;
		}
		o->at = now;
	}
	held_add(t, &o->held, stack, count);
}

static struct tinst *inst_get(struct tails *t, uint32_t id)
{
	struct tinst *i = tmap_get(t->insts, id);

	if (i)
		return i;
	i = calloc(1, sizeof(*i));
	if (!i || tmap_put(t->insts, id, i)) {
		free(i);
		return NULL;
	}
	i->id = id;
	return i;
}

/* Where an instance of leg @l that took @dur ns goes. */
static enum tail_part part_of(struct tail_leg *l, uint64_t dur)
{
	uint64_t thr;

	if (l->hist) {
		/* by the durations before it: the first instances are not their own yardstick */
		thr = tail_threshold(l);
		if (l->ndur < TAIL_PCT_MIN)
			l->decided_early++;
		l->hist[MIN(tail_bucket(dur), TAIL_HBUCKETS - 1)]++;
		l->ndur++;
		if (!thr)
			return TAIL_BODY;
	} else {
		thr = l->threshold_ns;
	}
	return dur >= thr ? TAIL_SLOW : TAIL_BODY;
}

void tails_event(struct tails *t, const struct pcmon_tail_ev *e, uint64_t now)
{
	struct tinst *i;
	struct tset *s;
	struct orphan *o;

	if (!t)
		return;
	switch (e->type) {
	case PCMON_TAIL_SET:
		if (tmap_get(t->sets, e->set))
			return;
		s = calloc(1, sizeof(*s));
		if (!s || tmap_put(t->sets, e->set, s)) {
			free(s);
			return;
		}
		s->id = e->set;
		s->at = now;
		memcpy(s->inst, e->inst, sizeof(s->inst));
		for (int k = 0; k < PCMON_TAIL_LEGS; k++)
			if (s->inst[k])
				inst_get(t, s->inst[k]);
		o = tmap_get(t->orphans, e->set);
		if (o) { /* the samples that came first */
			t->held -= MIN(t->held, o->held.n);
			for (size_t k = 0; k < o->held.n; k++)
				to_set(t, s, o->held.stack[k], o->held.count[k]);
			for (size_t k = 0; k < t->orphans->cap; k++)
				if (t->orphans->keys[k] == e->set) {
					tmap_del_at(t->orphans, k);
					break;
				}
			orphan_free(o);
		}
		break;
	case PCMON_TAIL_END:
	case PCMON_TAIL_ABANDON:
		if (e->slot < 1 || e->slot > t->nlegs || !(i = inst_get(t, e->inst[0])) ||
		    i->state == V_DONE)
			return;
		i->slot = e->slot;
		i->state = V_DONE;
		i->at = now;
		i->part = e->type == PCMON_TAIL_ABANDON ? TAIL_ABANDONED
							: part_of(&t->leg[e->slot - 1], e->dur);
		t->leg[e->slot - 1].instances[i->part]++;
		file_held(t, i);
		break;
	}
}

void tails_expire(struct tails *t, uint64_t now)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->orphans->cap;) {
		struct orphan *o = t->orphans->vals[k];

		if (t->orphans->keys[k] && now - o->at > TAIL_KEEP_NS) {
			for (size_t j = 0; j < o->held.n; j++)
				t->unmatched += o->held.count[j];
			t->held -= MIN(t->held, o->held.n);
			orphan_free(o);
			tmap_del_at(t->orphans, k);
			continue; /* another may have moved into k */
		}
		k++;
	}
	for (size_t k = 0; k < t->insts->cap;) {
		struct tinst *i = t->insts->vals[k];

		if (t->insts->keys[k] && i->state == V_DONE && now - i->at > TAIL_KEEP_NS) {
			inst_free(i);
			tmap_del_at(t->insts, k);
			continue;
		}
		k++;
	}
	for (size_t k = 0; k < t->sets->cap;) {
		struct tset *s = t->sets->vals[k];
		bool open = false;

		for (int j = 0; t->sets->keys[k] && j < PCMON_TAIL_LEGS; j++)
			open |= s->inst[j] && tmap_get(t->insts, s->inst[j]);
		if (t->sets->keys[k] && !open && now - s->at > TAIL_KEEP_NS) {
			free(s);
			tmap_del_at(t->sets, k);
			continue;
		}
		k++;
	}
}

void tail_leg_json(const struct tails *t, const struct tail_leg *l, cJSON *o)
{
	uint64_t n = 0;

	for (int p = 0; p < TAIL_PARTS; p++)
		n += l->instances[p];
	cJSON_AddNumberToObject(o, "leg", l->id);
	cJSON_AddNumberToObject(o, "threshold_ns", (double)tail_threshold(l));
	if (l->hist) {
		char pct[32];

		snprintf(pct, sizeof(pct), "p%g", l->pct);
		cJSON_AddStringToObject(o, "threshold", pct);
		cJSON_AddNumberToObject(o, "decided_early", (double)l->decided_early);
	}
	cJSON_AddNumberToObject(o, "instances", (double)n);
	cJSON_AddNumberToObject(o, "slow_instances", (double)l->instances[TAIL_SLOW]);
	cJSON_AddNumberToObject(o, "body_instances", (double)l->instances[TAIL_BODY]);
	cJSON_AddNumberToObject(o, "abandoned_instances", (double)l->instances[TAIL_ABANDONED]);
	cJSON_AddNumberToObject(o, "tail_samples", (double)l->samples[TAIL_SLOW]);
	cJSON_AddNumberToObject(o, "body_samples", (double)l->samples[TAIL_BODY]);
	cJSON_AddNumberToObject(o, "abandoned_samples", (double)l->samples[TAIL_ABANDONED]);
	cJSON_AddNumberToObject(o, "held_groups", (double)t->held);
	cJSON_AddNumberToObject(o, "overflow_samples", (double)t->overflow);
	cJSON_AddNumberToObject(o, "unmatched_samples", (double)t->unmatched);
	cJSON_AddNumberToObject(o, "lost_events", (double)t->lost_events);
}
