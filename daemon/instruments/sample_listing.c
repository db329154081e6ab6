// SPDX-License-Identifier: GPL-2.0-only
/*
 * A listing taken (struct sample_listing, sample.h): the target a request names, and what
 * agg_list() needs to read its samples as the request asks: its WHEN pattern, its critical
 * sections, the window it asks (sample_time.c), the off-CPU intervals still open (BPF's, and
 * those of --unwind dwarf targets the engine holds). Every view over the samples starts with
 * sample_listing_begin() and ends with sample_listing_end().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pat.h"
#include "proto.h"
#include "sample_int.h"
#include "sampler.h"
#include "target.h"
#include "when.h"

void sample_listing_end(struct sample_listing *ls)
{
	for (size_t i = 0; i < ls->nextra; i++)
		free((void *)ls->extra[i].st);
	free(ls->extra);
	if (ls->sp)
		sample_free_criticals(ls->sp, ls->crit, ls->ncrit);
	pat_free(ls->when);
	agg_free(ls->view);
	memset(ls, 0, sizeof(*ls));
}

/* Keep a copy of @st as an open interval of @ns so far. */
static int add_extra(struct sample_listing *ls, const struct agg_stack *st, uint64_t ns)
{
	size_t sz = agg_stack_size(st->nuser + st->nkern);
	void *copy;

	if (GROW(ls->extra, ls->cap_extra, ls->nextra + 1) || !(copy = malloc(sz)))
		return -ENOMEM;
	memcpy(copy, st, sz);
	ls->extra[ls->nextra++] = (struct agg_extra){ .st = copy, .ns = ns };
	return 0;
}

struct open_ctx {
	struct sample_g *g;
	struct sample_listing *ls;
	uint64_t now;
	int err;
};

static void on_open_interval(void *ctx, const struct pcmon_offcpu *o,
			     const struct pcmon_dsample *d, size_t dlen)
{
	struct open_ctx *oc = ctx;
	const struct pcmon_key *k = o ? &o->key : &d->h.key;
	uint64_t ts = o ? o->ts : d->h.ts;
	struct agg_stack *st;

	/*
	 * Dwarf intervals whose stack was sent are the engine's own (g->pending); one whose
	 * stack is taken later (as its system call returns) has a copy the iterator made just
	 * now, unwound here like any other.
	 */
	if (k->target != oc->ls->t->id || ts >= oc->now || oc->err ||
	    (o && o->dwarf && o->lazy == PCMON_LAZY_NO))
		return;
	if (d)
		st = sample_convert_dwarf(oc->g, d, dlen);
	else
		st = sample_convert(oc->g, &o->key, &o->urec.st,
				    oc->ls->sp->kernel ? &o->krec.st : NULL);
	if (!st || add_extra(oc->ls, st, oc->now - ts))
		oc->err = -ENOMEM;
}

int sample_check_listing(const struct list_req *lr, cJSON **rep)
{
	const struct sample none = { 0 };
	struct agg_critical *crit = NULL;
	struct pat *when = NULL;
	size_t ncrit = 0;
	int r;

	r = when_compile(lr->when, lr->when_from_file, false, &when, rep);
	pat_free(when);
	if (!r)
		r = sample_list_criticals(&none, lr->critical, lr->ncritical, false, &crit, &ncrit,
					  rep);
	sample_free_criticals(&none, crit, ncrit);
	return r ? -1 : 0;
}

int sample_listing_begin(void *gp, struct target *t, const struct list_req *lr,
			 struct sample_listing *ls, cJSON **rep)
{
	struct sample_g *g = gp;
	struct sample *sp = sample_of(t);
	const char *wtext = lr->when;
	int icase;

	memset(ls, 0, sizeof(*ls));
	if (!sp) {
		*rep = proto_error(1, "target %u \"%s\" does not sample (it was started with --no-sample)",
				   t->id, t->name);
		return -1;
	}
	icase = lr->icase >= 0 ? lr->icase : sp->icase;
	if (when_compile(wtext, lr->when_from_file, icase, &ls->when, rep))
		return -1;
	ls->t = t;
	ls->sp = sp;
	if (sample_window_begin(ls, lr, rep))
		goto fail;
	if (sample_list_criticals(sp, lr->critical, lr->ncritical, icase, &ls->crit, &ls->ncrit,
				  rep))
		goto fail;
	/* open intervals are now's: in a window that reaches now */
	if (sp->real && (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED) &&
	    (!ls->windowed || ls->until >= wall_ns())) {
		struct open_ctx oc = { .g = g, .ls = ls, .now = now_ns() };

		sampler_open_intervals(g->smp, on_open_interval, &oc);
		for (size_t i = 0; i < g->npending && !oc.err; i++) {
			struct pending *p = &g->pending[i];

			if (p->target == t->id && p->ts < oc.now)
				oc.err = add_extra(ls, p->st, oc.now - p->ts);
		}
		if (oc.err) {
			*rep = proto_error(1, "out of memory while listing");
			goto fail;
		}
	}
	ls->when_text = wtext ? wtext : sp->when_text;
	ls->lo.period_ns = sp->period_ns;
	ls->lo.when = wtext ? ls->when : sp->when;
	ls->lo.kernel = sp->kernel && !lr->no_kernel;
	ls->lo.no_inline = lr->no_inline >= 0 ? lr->no_inline : sp->no_inline;
	ls->lo.extra = ls->extra;
	ls->lo.nextra = ls->nextra;
	ls->lo.crit = ls->crit;
	ls->lo.ncrit = ls->ncrit;
	sample_attach_lost(g, t, sp);
	return 0;
fail:
	sample_listing_end(ls);
	return -1;
}
