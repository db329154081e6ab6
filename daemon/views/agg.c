// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "near.h"
#include "pat.h"
#include "util.h"

const char *const agg_unwalk_names[AGG_UNWALK_MAX] = {
	[AGG_WALK_OK] = "unwalkable",
#define UNWALK_NAME(id, name, cuts) [AGG_UNWALK_##id] = #name,
	AGG_UNWALK_REASONS(UNWALK_NAME)
#undef UNWALK_NAME
};

struct agg_val {
	uint64_t count, ns;
};

struct agg {
	struct itab *keys;
	struct agg_val *vals;
	size_t cap;
	uint64_t gen;		/* bumped by agg_zero(): snapshots before it count for nothing */
	bool view;	/* agg_view(): the keys are another's */
};

struct agg *agg_new(void)
{
	struct agg *a = calloc(1, sizeof(*a));

	if (a && !(a->keys = itab_new())) {
		free(a);
		a = NULL;
	}
	return a;
}

void agg_free(struct agg *a)
{
	if (!a)
		return;
	if (!a->view)
		itab_free(a->keys);
	free(a->vals);
	free(a);
}

void agg_zero(struct agg *a)
{
	itab_free(a->keys);
	a->keys = itab_new();
	free(a->vals);
	a->vals = NULL;
	a->cap = 0;
	a->gen++;
}

/*
 * Snapshots: a stack's id in the table never changes, and counts only grow, so what was
 * counted since a snapshot is each entry's counts less the snapshot's (entries past the
 * snapshot's end are new).
 */
int agg_snapshot(const struct agg *a, struct agg_snap *s)
{
	size_t n = agg_count(a);

	s->gen = a->gen;
	s->n = n;
	s->vals = n ? malloc(n * sizeof(*s->vals)) : NULL;
	if (n && !s->vals)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s->vals[i] = (struct agg_snap_val){ a->vals[i].count, a->vals[i].ns };
	return 0;
}

void agg_snap_empty(const struct agg *a, struct agg_snap *s)
{
	*s = (struct agg_snap){ .gen = a->gen };
}

void agg_snap_free(struct agg_snap *s)
{
	free(s->vals);
	s->vals = NULL;
	s->n = 0;
}

struct agg *agg_since(const struct agg *a, const struct agg_snap *s)
{
	struct agg *d = agg_new();
	size_t n = agg_count(a), base = s->gen == a->gen ? s->n : 0;

	for (size_t i = 0; d && i < n; i++) {
		uint64_t count = a->vals[i].count, ns = a->vals[i].ns;
		const struct agg_stack *st = itab_key(a->keys, i, NULL);

		if (i < base) {
			count -= MIN(count, s->vals[i].count);
			ns -= MIN(ns, s->vals[i].ns);
		}
		if ((count || ns) && agg_add(d, st, count, ns)) {
			agg_free(d);
			d = NULL;
		}
	}
	return d;
}

int agg_add(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns)
{
	uint32_t id;

	return agg_add_id(a, st, count, ns, &id);
}

int agg_add_id(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns,
	       uint32_t *idp)
{
	uint32_t id;
	int r;

	if (!a->keys)
		return -ENOMEM;
	r = itab_intern(a->keys, st, agg_stack_size(st->nuser + st->nkern), &id);
	if (r < 0)
		return r;
	if (r == 1) {
		if (GROW(a->vals, a->cap, id + 1))
			return -ENOMEM;
		a->vals[id] = (struct agg_val){ 0 };
	}
	a->vals[id].count += count;
	a->vals[id].ns += ns;
	*idp = id;
	return 0;
}

int agg_bump_id(struct agg *a, const struct agg_stack *st, uint64_t count, uint64_t ns,
		uint32_t *idp)
{
	int64_t id = a->keys ? itab_find(a->keys, st, agg_stack_size(st->nuser + st->nkern)) : -1;

	if (id < 0)
		return -ENOENT;
	a->vals[id].count += count;
	a->vals[id].ns += ns;
	*idp = (uint32_t)id;
	return 0;
}

struct agg *agg_view(const struct agg *a)
{
	struct agg *v = calloc(1, sizeof(*v));
	size_t n = agg_count(a);

	if (!v)
		return NULL;
	v->keys = a->keys;
	v->view = true;
	v->cap = n;
	v->vals = calloc(n + 1, sizeof(*v->vals));
	if (!v->vals) {
		free(v);
		return NULL;
	}
	return v;
}

void agg_view_add(struct agg *v, uint32_t id, uint64_t count, uint64_t ns)
{
	if (id < v->cap) {
		v->vals[id].count += count;
		v->vals[id].ns += ns;
	}
}

void agg_view_clear(struct agg *v)
{
	memset(v->vals, 0, v->cap * sizeof(*v->vals));
}

size_t agg_bytes(const struct agg *a)
{
	return itab_bytes(a->keys) + a->cap * sizeof(*a->vals);
}

size_t agg_count(const struct agg *a)
{
	/* a view counts the stacks there were when it was made */
	return a->view ? a->cap : a->keys ? itab_count(a->keys) : 0;
}

const struct agg_stack *agg_get(const struct agg *a, size_t i, uint64_t *count, uint64_t *ns)
{
	const struct agg_stack *st = itab_key(a->keys, i, NULL);

	if (st) {
		*count = a->vals[i].count;
		*ns = a->vals[i].ns;
	}
	return st;
}

uint64_t agg_ns_to_interrupts(uint64_t ns, uint64_t period_ns)
{
	return period_ns ? (ns + period_ns / 2) / period_ns : 0;
}

/* Procedure frames of a stack, outermost first, for matching and charging. */
struct frames {
	uint32_t *proc;
	struct agg_frame_at *at;	/* where each frame came from */
	struct pat_frame *pf;
	size_t n, cap, cap_pf;
};

static int expand(const struct sym *s, const struct agg_stack *st, int kernel, int no_inline,
		  struct frames *f)
{
	uint32_t nlocs = st->nuser + (kernel ? st->nkern : 0);

	f->n = 0;
	for (uint32_t i = 0; i < nlocs; i++) {
		const struct sym_loc *l = sym_loc(s, st->locs[i]);
		const uint32_t *fr;

		if (!l)
			continue;
		fr = sym_frames(s, l);
		if (f->n + l->nframes > f->cap) {
			size_t cap = f->cap;

			if (GROW(f->proc, cap, f->n + l->nframes) ||
			    GROW(f->at, f->cap, f->n + l->nframes))
				return -ENOMEM;
		}
		/* a location lists its inline chain innermost first; the stack runs outermost first */
		for (uint32_t j = l->nframes; j-- > 0;) {
			f->at[f->n] = (struct agg_frame_at){ .loc = i, .inl = j };
			f->proc[f->n++] = fr[j];
			if (no_inline)
				break; /* the outermost is the real function */
		}
	}
	return 0;
}

static int pat_frames(const struct sym *s, struct frames *f)
{
	if (GROW(f->pf, f->cap_pf, f->n + 1))
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++)
		f->pf[i] = agg_proc_frame(s, f->proc[i]);
	return 0;
}

struct pat_frame agg_proc_frame(const struct sym *s, uint32_t proc)
{
	const struct sym_procinfo *pi = sym_proc(s, proc);
	const char *m = sym_str(s, pi->module);

	return (struct pat_frame){ .module = m[0] ? m : NULL,
				   .proc = pi->name ? sym_str(s, pi->name) : NULL,
				   .base = pi->base ? sym_str(s, pi->base) : NULL };
}

/* Each procedure on @a's stacks (kernel frames too), once: a bitmap of sym_nprocs() bits. */
static uint64_t *procs_seen(const struct agg *a, const struct sym *s)
{
	uint64_t *seen = calloc(sym_nprocs(s) / 64 + 1, sizeof(*seen));
	struct frames f = { 0 };

	for (size_t i = 0; seen && i < agg_count(a); i++) {
		const struct agg_stack *st = itab_key(a->keys, i, NULL);

		if (expand(s, st, 1, 0, &f)) {
			free(seen);
			seen = NULL;
			break;
		}
		for (size_t k = 0; k < f.n; k++)
			seen[f.proc[k] / 64] |= 1ULL << (f.proc[k] % 64);
	}
	free(f.proc);
	free(f.at);
	return seen;
}

cJSON *agg_names_unseen_json(const struct agg *a, const struct sym *s,
			     const struct pat *const *pats, size_t npats, const char *const *texts)
{
	uint64_t *seen = procs_seen(a, s);
	uint32_t nprocs = sym_nprocs(s);
	cJSON *out = NULL;

	for (size_t k = 0; seen && k < npats; k++) {
		for (size_t name = 0; pats[k] && name < pat_nnames(pats[k]); name++) {
			struct near nr;
			char text[NEAR_NAME_MAX];
			bool found = false;
			cJSON *o;

			for (uint32_t i = 0; i < nprocs && !found; i++) {
				struct pat_frame pf;

				if (!(seen[i / 64] & (1ULL << (i % 64))))
					continue;
				pf = agg_proc_frame(s, i);
				found = pf.proc && pat_name_match(pats[k], name, &pf);
			}
			if (found)
				continue;
			if (texts && pat_nnames(pats[k]) == 1)
				snprintf(text, sizeof(text), "%s", texts[k]);
			else if (pat_name_str(pats[k], name, text, sizeof(text)))
				continue;
			near_init(&nr, text);
			for (uint32_t i = 0; i < nprocs; i++) {
				const struct sym_procinfo *pi = sym_proc(s, i);

				if (seen[i / 64] & (1ULL << (i % 64)))
					near_offer(&nr, sym_str(s, pi->name), sym_str(s, pi->full));
			}
			if (!out && !(out = cJSON_CreateArray()))
				break;
			o = cJSON_CreateObject();
			cJSON_AddItemToArray(out, o);
			cJSON_AddStringToObject(o, "name", text);
			cJSON_AddItemToObject(o, "near", near_json(&nr));
		}
	}
	free(seen);
	return out;
}

int agg_list(const struct agg *a, const struct sym *s, const struct agg_list_opts *o,
	     struct agg_list *out)
{
	uint32_t nprocs = sym_nprocs(s);
	uint64_t *shallow = NULL, *deep = NULL;
	uint32_t *stamp = NULL;
	struct frames f = { 0 };
	size_t n = agg_count(a), total, rows_cap = 0, marked_cap = 0, xcap = 0;
	struct itab *xkeys = NULL;	/* open intervals on stacks not stored, merged by stack */
	uint64_t *extra_ns = NULL, *xns = NULL;
	struct agg_visit v;
	int err = -ENOMEM;

/* hand a group of counted samples to the caller's visitor, if any */
#define VISIT(cls_, arg_) do { \
		v.cls = (cls_); \
		v.arg = (arg_); \
		if (o->visit) \
			o->visit(o->visit_ctx, &v); \
	} while (0)

	memset(out, 0, sizeof(*out));
	shallow = calloc(nprocs + 1, sizeof(*shallow));
	deep = calloc(nprocs + 1, sizeof(*deep));
	stamp = calloc(nprocs + 1, sizeof(*stamp));
	extra_ns = calloc(n + 1, sizeof(*extra_ns));
	xkeys = itab_new();
	if (!shallow || !deep || !stamp || !extra_ns || !xkeys)
		goto cleanup;
	/* an open interval adds to its stack's nanoseconds before rounding (sum per stack) */
	for (size_t e = 0; e < o->nextra; e++) {
		const struct agg_stack *st = o->extra[e].st;
		size_t sz = agg_stack_size(st->nuser + st->nkern);
		int64_t id = n ? itab_find(a->keys, st, sz) : -1;
		uint32_t xid;
		int r;

		if (id >= 0) {
			extra_ns[id] += o->extra[e].ns;
			continue;
		}
		r = itab_intern(xkeys, st, sz, &xid);
		if (r < 0 || GROW(xns, xcap, xid + 1))
			goto cleanup;
		if (r == 1)
			xns[xid] = 0;
		xns[xid] += o->extra[e].ns;
	}
	total = n + itab_count(xkeys);

	for (size_t i = 0; i < total; i++) {
		const struct agg_stack *st;
		uint64_t count = 0, ns = 0, w;
		int charge;

		if (i < n) {
			st = agg_get(a, i, &count, &ns);
			ns += extra_ns[i];
		} else {
			st = itab_key(xkeys, i - n, NULL);
			count = 0;
			ns = xns[i - n];
		}
		switch (st->kind) {
		case PCMON_KIND_OFF_BLOCKED:
		case PCMON_KIND_OFF_RUNNABLE:
			w = agg_ns_to_interrupts(ns, o->period_ns);
			if (st->kind == PCMON_KIND_OFF_BLOCKED) {
				out->off_blocked += w;
				out->off_blocked_ns += ns;
			} else {
				out->off_runnable += w;
				out->off_runnable_ns += ns;
			}
			break;
		case PCMON_KIND_ONCPU_KMODE:
			out->kernel_mode += count;
			/* fall through */
		default:
			w = count;
			out->oncpu += count;
			break;
		}
		if (!w)
			continue;
		out->interrupts += w;

		v = (struct agg_visit){ .st = st, .weight = w, .ns = ns };
		if (st->unwalk != AGG_WALK_OK) {
			VISIT(AGG_C_UNWALKABLE, 0);
			out->counted += w;
			out->unwalk[AGG_WALK_OK] += w;
			out->unwalk[st->unwalk < AGG_UNWALK_MAX ? st->unwalk : AGG_UNWALK_FAULT] += w;
			continue;
		}
		if (expand(s, st, o->kernel, o->no_inline, &f) || pat_frames(s, &f))
			goto cleanup;

		charge = f.n ? (int)f.n - 1 : PAT_ABOVE_ROOT;
		if (o->when) {
			charge = pat_match(o->when, f.pf, f.n);
			if (charge == PAT_NOMATCH) {
				out->not_matching += w;
				continue;
			}
		}
		out->counted += w;
		if (st->flags & AGG_SF_CUT_SHORT) {
			out->cut[AGG_WALK_OK] += w;
			out->cut[agg_cut_reason(st)] += w;
		}
		if (st->section) { /* marked by the program itself */
			size_t m;

			for (m = 0; m < out->nmarked && out->marked[m].name != st->section; m++)
				;
			if (m == out->nmarked) {
				if (GROW(out->marked, marked_cap, m + 1))
					goto cleanup;
				out->marked[out->nmarked++] = (struct agg_marked){ st->section, 0 };
			}
			out->marked[m].count += w;
			VISIT(AGG_C_MARKED, st->section);
			continue;
		}
		if (st->flags & AGG_SF_MARKS_PENDING)
			out->marks_pending += w;
		{
			size_t c;

			for (c = 0; c < o->ncrit && c < AGG_MAX_CRIT; c++)
				if (pat_match(o->crit[c].pat, f.pf, f.n) != PAT_NOMATCH)
					break;
			if (c < o->ncrit && c < AGG_MAX_CRIT) {
				out->crit[c] += w;
				VISIT(AGG_C_CRITICAL, c);
				continue;
			}
		}
		v.procs = f.proc;
		v.at = f.at;
		v.nframes = charge + 1;
		if (charge < 0) { /* a colon pointed above the root */
			out->foreign += w;
			VISIT(AGG_C_FOREIGN, 0);
			continue;
		}
		if (sym_proc(s, f.proc[charge])->name) {
			shallow[f.proc[charge]] += w;
			VISIT(AGG_C_PROC, 0);
		} else {
			out->foreign += w;
			VISIT(AGG_C_FOREIGN, 0);
		}
		/* deep: every named procedure on the charged stack, once per sample */
		for (int j = 0; j <= charge; j++) {
			uint32_t p = f.proc[j];

			if (stamp[p] == i + 1 || !sym_proc(s, p)->name)
				continue;
			stamp[p] = i + 1;
			deep[p] += w;
		}
	}

	for (uint32_t p = 0; p < nprocs; p++) {
		if (!shallow[p] && !deep[p])
			continue;
		if (GROW(out->rows, rows_cap, out->nrows + 1))
			goto cleanup;
		out->rows[out->nrows++] = (struct agg_row){ p, shallow[p], deep[p] };
	}
	err = 0;
cleanup:
	if (err)
		agg_list_free(out);
	free(shallow);
	free(deep);
	free(stamp);
	free(f.proc);
	free(f.at);
	free(f.pf);
	free(extra_ns);
	free(xns);
	itab_free(xkeys);
	return err;
#undef VISIT
}

void agg_list_free(struct agg_list *l)
{
	free(l->rows);
	free(l->marked);
	l->rows = NULL;
	l->marked = NULL;
	l->nrows = l->nmarked = 0;
}

struct sort_arg {
	const struct sym *s;
	int by_deep;
};

static int row_cmp(const void *x, const void *y, void *arg)
{
	const struct agg_row *a = x, *b = y;
	const struct sym *s = ((struct sort_arg *)arg)->s;
	int by_deep = ((struct sort_arg *)arg)->by_deep;
	uint64_t a1 = by_deep ? a->deep : a->shallow, b1 = by_deep ? b->deep : b->shallow;
	uint64_t a2 = by_deep ? a->shallow : a->deep, b2 = by_deep ? b->shallow : b->deep;

	if (a1 != b1)
		return a1 > b1 ? -1 : 1;
	if (a2 != b2)
		return a2 > b2 ? -1 : 1;
	return strcmp(sym_str(s, sym_proc(s, a->proc)->full), sym_str(s, sym_proc(s, b->proc)->full));
}

void agg_sort_rows(struct agg_row *rows, size_t n, int by_deep, const struct sym *s)
{
	struct sort_arg arg = { s, by_deep };

	if (n > 1)
		qsort_r(rows, n, sizeof(*rows), row_cmp, &arg);
}

cJSON *agg_proc_json(const struct sym *s, uint32_t proc)
{
	const struct sym_procinfo *pi = sym_proc(s, proc);
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "procedure", sym_str(s, pi->full));
	cJSON_AddStringToObject(o, "module", sym_str(s, pi->module));
	cJSON_AddStringToObject(o, "name", sym_str(s, pi->name));
	return o;
}
