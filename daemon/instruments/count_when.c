// SPDX-License-Identifier: GPL-2.0-only
/*
 * Calls classed by the target's WHEN pattern (docs/when.md, "At probes"): by the class BPF
 * gave them from the shadow stack, or by the stack walked at their entry, read back, named
 * through its process's map and matched, once; with a ':', by the frame the match charges
 * too. BPF's totals are read into the state here (count_when_collect()), each by its class,
 * and the activations still open with them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "count_int.h"
#include "counter.h"
#include "pat.h"
#include "slices.h"
#include "sym.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

/*
 * Did the walk of @ips (0-terminated, innermost first) stop before the outermost frame,
 * @outer the last one it named? A walk at a probe, where the C library is usually built
 * without frame pointers, ends in its start-up (__libc_start_call_main for the main thread,
 * start_thread for the others): above those is only the start-up itself (__libc_start_main
 * and _start, clone3), the same on every stack, and such a walk is taken as whole.
 */
static bool cut_short(struct sym *sy, const struct pcmon_ckey *k, const uint64_t *ips, size_t max,
		      const char *outer)
{
	static const char *const startup[] = { "__libc_start_call_main", "__libc_start_main",
					       "start_thread", "clone3", "clone", "_start" };
	size_t n = 0;

	while (n < max && ips[n])
		n++;
	if (n == max)
		return true;
	for (size_t i = 0; outer && i < ARRAY_SIZE(startup); i++)
		if (!strcmp(outer, startup[i]))
			return false;
	return !unw_is_root(sy, k->tgid, k->epoch, ips[n - 1], n > 1);
}

/*
 * A walked stack named through its process's map and matched: its class (unknown if cut
 * short and not matching), and (*to, with a ':') the frame the match charges.
 */
static enum count_cls match_stack(struct count *ct, struct counter *c, struct sym *sy,
				  const struct pcmon_ckey *k, char **to, bool *named)
{
	uint64_t ips[PCMON_COUNT_STACK_DEPTH];
	struct pat_frame pf[PCMON_COUNT_STACK_DEPTH * 4];
	size_t n = 0;
	int r;

	*to = NULL;
	*named = false;
	if (!c || !sy || counter_stack(c, k->cls, ips, ARRAY_SIZE(ips)))
		return COUNT_UNKNOWN;
	/* innermost first, each pc's inline chain innermost first: reversed at the end */
	for (size_t i = 0; i < ARRAY_SIZE(ips) && ips[i] && n < ARRAY_SIZE(pf); i++) {
		const struct sym_loc *l = sym_loc(sy, sym_user(sy, k->tgid, k->epoch, ips[i], i > 0));
		const uint32_t *fr = l ? sym_frames(sy, l) : NULL;

		for (uint32_t j = 0; fr && j < l->nframes && n < ARRAY_SIZE(pf); j++) {
			const struct sym_procinfo *pi = sym_proc(sy, fr[j]);
			const char *m = sym_str(sy, pi->module);

			pf[n++] = (struct pat_frame){ .module = m[0] ? m : NULL,
						     .proc = pi->name ? sym_str(sy, pi->name) : NULL,
						     .base = pi->base ? sym_str(sy, pi->base) : NULL };
		}
	}
	/* the innermost frame is the probed procedure: unnamed, the map was not there */
	if (!n || !pf[0].proc)
		return COUNT_UNKNOWN;
	*named = true;
	for (size_t i = 0; i < n / 2; i++) {
		struct pat_frame x = pf[i];

		pf[i] = pf[n - 1 - i];
		pf[n - 1 - i] = x;
	}
	r = pat_match(ct->when, pf, n);
	/* a walk cut short may have left out the frames that would match: a match on what it
	 * walked holds for the whole stack (each thread may begin anywhere), a miss does not */
	if (r == PAT_NOMATCH)
		return cut_short(sy, k, ips, ARRAY_SIZE(ips), pf[0].proc) ? COUNT_UNKNOWN
									   : COUNT_OTHER;
	if (pat_has_colon(ct->when)) {
		/* charged as a sample would be: a frame without a name is foreignPcs */
		if (r >= 0 && pf[r].proc && pf[r].module) {
			size_t len = strlen(pf[r].module) + strlen(pf[r].proc) + 2;

			if ((*to = malloc(len)))
				snprintf(*to, len, "%s.%s", pf[r].module, pf[r].proc);
		} else {
			*to = strdup("foreignPcs");
		}
	}
	return COUNT_MATCH;
}

/* What is known of the stack of key @k (a stack id), named and matched the first time;
 * NULL if it cannot be told (now: a later listing may). */
static const struct count_stack *stack_of(struct count *ct, struct counter *c, struct sym *s,
					  const struct pcmon_ckey *k)
{
	uint32_t key[3] = { k->cls, k->tgid, k->epoch }, id;
	enum count_cls cls;
	bool named;
	int64_t have;
	char *to;

	if (!ct->stacks && !(ct->stacks = itab_new()))
		return NULL;
	have = itab_find(ct->stacks, key, sizeof(key));
	if (have >= 0)
		return &ct->stack_info[have];
	cls = match_stack(ct, c, s, k, &to, &named);
	/* a stack not read or named now may be later (another listing): not remembered */
	if (!named || GROW(ct->stack_info, ct->cap_info, itab_count(ct->stacks) + 1) ||
	    itab_intern(ct->stacks, key, sizeof(key), &id) < 0) {
		free(to);
		return NULL;
	}
	ct->stack_info[id] = (struct count_stack){ .cls = cls, .to = to };
	return &ct->stack_info[id];
}

enum count_cls count_class_of(struct count *ct, struct counter *c, struct sym *s,
			      const struct pcmon_ckey *k)
{
	const struct count_stack *st;

	switch (k->cls) {
	case PCMON_CLS_ALL:
	case PCMON_CLS_MATCH:
		return COUNT_MATCH;
	case PCMON_CLS_NOMATCH:
		return COUNT_OTHER;
	}
	if (k->cls >= PCMON_CLS_LOWEST)
		return COUNT_UNKNOWN;
	st = stack_of(ct, c, s, k);
	return st ? st->cls : COUNT_UNKNOWN;
}

/* The charge of key @k's calls (a matching stack with a ':'), or NULL. */
static struct count_charge *charge_of(struct count *ct, const struct pcmon_ckey *k)
{
	const struct count_stack *st;
	uint32_t key[3] = { k->cls, k->tgid, k->epoch };
	int64_t have;

	if (k->cls >= PCMON_CLS_LOWEST || !ct->stacks ||
	    (have = itab_find(ct->stacks, key, sizeof(key))) < 0)
		return NULL;
	st = &ct->stack_info[have];
	return st->cls == COUNT_MATCH && st->to ? count_charge(ct, PCMON_COUNT_FN(k->cookie), st->to)
						: NULL;
}

static void add_stat(struct pcmon_cstat *to, const struct pcmon_cstat *s)
{
	counter_stat_add(to, s);
	to->calls += s->closed; /* BPF counts a call when it closes it (count.bpf.c) */
}

struct fold {
	struct count_g *g;
	struct count *ct;
};

/* One of BPF's totals into its procedure's class. */
static void fold_stat(void *ctx, const struct pcmon_ckey *k, const struct pcmon_cstat *s)
{
	struct fold *fo = ctx;
	struct count *ct = fo->ct;
	uint32_t i = PCMON_COUNT_FN(k->cookie);
	struct count_charge *ch;
	enum count_cls cls;
	uint64_t calls;

	if (i >= ct->nfns)
		return;
	cls = count_class_of(ct, fo->g->ctr, fo->g->env.sym, k);
	add_stat(&ct->fns[i].by[cls], s);
	if (cls == COUNT_MATCH && (ch = charge_of(ct, k)))
		add_stat(&ch->s, s);
	if (cls != COUNT_UNKNOWN)
		return;
	calls = s->calls + s->closed;
	if (k->cls == PCMON_CLS_NOSTACK)
		ct->unknown.not_kept += calls;
	else if (k->cls < PCMON_CLS_LOWEST && stack_of(ct, NULL, NULL, k))
		ct->unknown.cut_short += calls; /* named and remembered: only a cut leaves it unknown */
	else if (k->cls < PCMON_CLS_LOWEST)
		ct->unknown.unresolved += calls;
	else if (ct->when_mode == PCMON_CW_WALK)
		ct->unknown.unwalked += calls;
	else
		ct->unknown.too_deep += calls;
}

/*
 * The totals BPF holds, into the state (after which the probes may go), and what the
 * matching calls' totals gained since the last read into the time slice it is charged to
 * (closed calls only: the open ones are added after, and are not kept by time).
 */
void count_when_collect(struct count_g *g, const struct target *t, struct count *ct)
{
	struct fold fo = { g, ct };
	uint64_t wall;

	if (!g->ctr || ct->detached)
		return;
	wall = slices_charge_wall(&ct->last_read, wall_ns());
	count_clear_totals(ct);
	counter_stats(g->ctr, t->id, fold_stat, &fo);
	ct->clock_repairs = counter_clock_repairs(g->ctr, t->id);
	ct->unplaced_steal_ns = counter_unplaced_steal(g->ctr, t->id);
	for (size_t i = 0; i < ct->nfns; i++) {
		struct pcmon_cstat closed = ct->fns[i].stat;

		count_fold(ct, i, &closed, wall);
	}
	/* the calls still open are entries too (read after the totals: one that closes in
	 * between is counted once, when the next listing reads it) */
	if (GROW(ct->open, ct->cap_open, ct->nfns * COUNT_NCLS + 1))
		return;
	memset(ct->open, 0, ct->cap_open * sizeof(*ct->open));
	{
		struct count_open oc = { .target = t->id, .n = ct->nfns, .ct = ct,
					 .open = ct->open, .ctr = g->ctr, .sym = g->env.sym };

		counter_open_activations(g->ctr, count_tally_open, &oc);
	}
	for (size_t i = 0; i < ct->nfns; i++)
		for (int c = 0; c < COUNT_NCLS; c++)
			ct->fns[i].by[c].calls += ct->open[i * COUNT_NCLS + c];
}

void count_tally_open(void *ctx, const struct pcmon_ckey *k)
{
	struct count_open *oc = ctx;
	uint32_t fn = PCMON_COUNT_FN(k->cookie);
	struct count_charge *ch;

	/* every thread's open activations of every target come by: this target's only, and
	 * by procedure whatever its probe's kind (the XOL bit is not part of the index) */
	if (PCMON_COUNT_TARGET(k->cookie) != oc->target || fn >= oc->n)
		return;
	oc->open[fn * COUNT_NCLS + (oc->ct ? count_class_of(oc->ct, oc->ctr, oc->sym, k) : COUNT_MATCH)]++;
	if (oc->ct && (ch = charge_of(oc->ct, k))) {
		ch->open++;
		ch->s.calls++;
	}
}
