// SPDX-License-Identifier: GPL-2.0-only
/*
 * Draining: BPF's counts maps every tick (on_entry), the dwarf ring as it fills
 * (on_dsample), each sample converted and charged to its target.
 */
#include <errno.h>
#include <stdlib.h>

#include "hotspot.h"
#include "python.h"
#include "v8.h"
#include "sample_int.h"
#include "sampler.h"
#include "slices.h"
#include "tail.h"

/*
 * Add @count samples of stack @st (NULL: it could not be built) to @t. A target whose owner
 * is over her memory allowance still counts the stacks it has, but keeps no new one: those
 * samples are lost, and counted as such.
 */
static void charge(struct sample_g *g, struct target *t, const struct agg_stack *st,
		   uint64_t count, uint64_t ns, uint32_t tset, uint64_t wall)
{
	struct sample *sp = sample_of(t);
	uint32_t id;
	int r = !st ? -ENOMEM
		: t->over_memory ? agg_bump_id(sp->agg, st, count, ns, &id)
				  : agg_add_id(sp->agg, st, count, ns, &id);

	if (!r) {
		sample_names_thread(g, sp, st);
		sample_names_cgroup(g, sp, st);
		uint64_t v[2] = { count, ns };

		/* the whole-life count has it: a slice that cannot is told in status */
		if (slices_add(sp->slices, id, v, wall))
			sp->slices_lost += count;
		/* taken while the thread had tailed legs open: theirs too */
		if (tset && sp->tails)
			tails_sample(sp->tails, tset, id, count, now_ns());
	}
	if (r == -ENOENT)
		sp->lost_memory += count;
	else if (r)
		sp->lost_oom += count;
	else
		sp->seen_samples += count;
	t->dirty = true;
}

/* ---- draining */

/*
 * How many of its target's slices before the one @wall is in entry @k was counted in (at
 * most 255: older ones are charged as if of that age, a drain's oldest).
 */
static uint8_t entry_age(void *ctx, const struct pcmon_key *k, uint64_t wall)
{
	struct sample_g *g = ctx;
	struct target *t = target_of(g, k->target);
	uint64_t now;

	if (!t)
		return 0;
	now = wall / sample_slice_len(sample_of(t));
	return k->slice < now ? (uint8_t)MIN(now - k->slice, 255u) : 0;
}

static void on_entry(void *ctx, const struct pcmon_key *k, const struct pcmon_val *v,
		     const struct pcmon_stack *us, const struct pcmon_stack *ks, uint64_t wall,
		     uint8_t age)
{
	struct sample_g *g = ctx;
	struct target *t = target_of(g, k->target);
	const struct agg_stack *st;
	uint64_t len;

	g->drained_entries++;
	if (!t)
		return; /* dropped while its last samples were in flight */
	st = sample_convert(g, k, us, ks);
	/* charged to the slice it was counted in, however late it is read */
	len = sample_slice_len(sample_of(t));
	charge(g, t, st, v->count, v->ns, k->tset, age ? (wall / len - age) * len : wall);
}

/* The time slice what is read now goes to (g->charge_wall). */
void sample_drain_clock(struct sample_g *g)
{
	g->charge_wall = slices_charge_wall(&g->last_drain_wall, wall_ns());
}

/* Read what BPF holds; false if it held nothing (no drain counted). */
static bool drain(struct sample_g *g)
{
	uint32_t entries, cap = sampler_capacity(g->smp);
	uint64_t t0 = now_ns(), took;

	g->name_gen++;
	py_next_gen(g->py);
	v8_next_gen(g->v8);
	sample_drain_clock(g);
	/* every sample taken before t0 is read after this: exited processes' maps may go */
	if (!sampler_pending(g->smp, &entries)) {
		sym_forget_final(g->env.sym, t0);
		return false;
	}
	sampler_drain(g->smp, entry_age, on_entry, g);
	sym_forget_final(g->env.sym, t0);
	g->first_drain = false; /* whatever asked for it: a save, a listing, the tick */
	took = now_ns() - t0;
	g->drains++;
	g->drain_ns += took;
	g->drain_max_ns = MAX(g->drain_max_ns, took);
	g->fill_max = MAX(g->fill_max, entries);
	if (entries >= cap / 2)
		g->drains_late++;
	g->last_drain_ns = t0;
	return true;
}

/*
 * The engine's tick (once a second, and when BPF says a counts map is an eighth full,
 * PCMON_DS_DRAIN): drain a map that is filling. A drain scans every bucket of both maps
 * whatever they hold, so the few stacks of a steady program wait in BPF, where each costs
 * nothing more however often it is counted, until the engine saves its results (every 5 s,
 * drain_all) or someone lists them (drain_all first: listings are always current). A flood
 * of new stacks is drained long before a map fills.
 */
/*
 * A time slice of a running target ended since the last tick: its samples are drained now,
 * charged to it (drain()), and slices coarsened. The engine's timer fires just after whole
 * seconds (engine_first_tick()), so a slice holds what was taken in it but for the few
 * milliseconds the tick comes after its end (docs/sampling.md, "Time slices").
 */
static void tick_slices(struct sample_g *g)
{
	uint64_t wall = wall_ns(), boundary = 0;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = target_of(g, i);
		uint64_t len;

		if (!t || t->state != TARGET_RUNNING)
			continue;
		len = sample_slice_len(sample_of(t));
		if (wall / len != g->last_tick_wall / len)
			boundary = MAX(boundary, wall - wall % len);
	}
	g->last_tick_wall = wall;
	if (boundary && drain(g))
		g->drains_slice++;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = target_of(g, i);

		if (t && slices_tick(sample_of(t)->slices, wall))
			t->dirty = true;
	}
}

static void jvm_found(void *ctx, uint32_t pid, uint32_t epoch)
{
	struct sample_g *g = ctx;

	sampler_jvm_set(g->smp, pid, epoch, true);
}

void sample_drain_tick(void *gp)
{
	struct sample_g *g = gp;
	uint32_t entries;

	tick_slices(g);
	/* JVMs still starting, whose samples wait in BPF (--unwind fp): looked at again */
	hs_look_pending(g->hs, jvm_found, g);

	/*
	 * A new target's first samples are drained at once, so that the costliest naming (its
	 * objects opened, their symbols sorted, their debug info read) is done before anyone
	 * asks: a listing on a machine busy with hundreds of threads waited 0.6 s for it.
	 */
	if (!sampler_pending(g->smp, &entries))
		return;
	if (g->first_drain && drain(g))
		g->drains_first++;
	else if (entries >= sampler_capacity(g->smp) / 8 && drain(g))
		g->drains_filling++;
}

/* Everything BPF holds: the pair being written (the other is empty between drains). */
void sample_drain_all(void *g)
{
	drain(g);
}

static struct pending *pending_find(struct sample_g *g, uint32_t tid)
{
	for (size_t i = 0; i < g->npending; i++)
		if (g->pending[i].tid == tid)
			return &g->pending[i];
	return NULL;
}

/* @count samples of stack @st taken as @kind (a copy: @st stays as it is). */
static void charge_kind(struct sample_g *g, struct target *t, const struct agg_stack *st,
			uint32_t kind, uint64_t count)
{
	size_t sz = agg_stack_size(st->nuser + st->nkern);
	struct agg_stack *c = malloc(sz);

	if (!c) {
		sample_of(t)->lost_oom += count;
		return;
	}
	memcpy(c, st, sz);
	c->kind = kind;
	charge(g, t, c, count, 0, 0, g->charge_wall);
	free(c);
}

void sample_drain_pending_drop(struct sample_g *g, struct pending *p)
{
	free(p->st);
	*p = g->pending[--g->npending];
}

static void on_dsample(struct sample_g *g, struct target *t, const struct pcmon_dhdr *h,
		       const void *data, size_t len)
{
	struct agg_stack *st;
	struct pending *p;
	size_t sz;

	switch (h->type) {
	case PCMON_DS_SAMPLE:
		charge(g, t, sample_convert_dwarf(g, data, len), 1, 0, h->key.tset, g->charge_wall);
		break;
	case PCMON_DS_OFF:
		charge(g, t, sample_convert_dwarf(g, data, len), 1, h->ns, 0, g->charge_wall);
		break;
	case PCMON_DS_OWED:
		charge(g, t, sample_convert_dwarf(g, data, len), h->ns, 0, 0, g->charge_wall);
		break;
	case PCMON_DS_OFF_START:
		st = sample_convert_dwarf(g, data, len);
		p = pending_find(g, h->tid);
		if (p)
			sample_drain_pending_drop(g, p); /* its end was lost with a full ring: counted there */
		sz = st ? agg_stack_size(st->nuser + st->nkern) : 0;
		if (!st || GROW(g->pending, g->cap_pending, g->npending + 1)) {
			sample_of(t)->lost_oom++;
			return;
		}
		p = &g->pending[g->npending];
		*p = (struct pending){ .tid = h->tid, .target = t->id, .ts = h->ts, .st = malloc(sz) };
		if (!p->st) {
			sample_of(t)->lost_oom++;
			return;
		}
		memcpy(p->st, st, sz);
		g->npending++;
		break;
	case PCMON_DS_OWED_END:
		p = pending_find(g, h->tid);
		if (p)
			charge_kind(g, t, p->st, h->key.kind, h->ns);
		break;
	case PCMON_DS_OFF_END:
		p = pending_find(g, h->tid);
		if (!p)
			return; /* its start was lost with a full ring: counted there */
		charge(g, t, p->st, 1, h->ns, 0, g->charge_wall);
		sample_drain_pending_drop(g, p);
		break;
	}
}

void sample_drain_record(void *gp, const void *data, size_t len)
{
	struct sample_g *g = gp;
	const struct pcmon_dhdr *h = data;
	struct target *t = len >= sizeof(*h) ? target_of(g, h->key.target) : NULL;

	if (!t)
		return;
	g->name_fresh = h->type != PCMON_DS_SAMPLE;
	on_dsample(g, t, h, data, len);
	g->name_fresh = false;
}
