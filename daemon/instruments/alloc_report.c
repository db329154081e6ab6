// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's part of a listing (alloc_int.h): its totals with their
 * standard errors, the procedures by the bytes they allocated and hold, each a view of the
 * stacks listed as sampling's are; and the profile the exports are made from, a sample per
 * stack with the four values of a Go heap profile (docs/alloc.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "alloc_int.h"
#include "groups.h"
#include "proto.h"
#include "stacks.h"
#include "stfile.h"
#include "sym.h"
#include "target.h"
#include "timed.h"
#include "util.h"

/* What a table or a profile is made of: by stack id, the A_* values (alloc_int.h). */
struct avals {
	double (*v)[A_N];
	size_t n;
};

/* A site's A_* values, added to @v (live figures below 0, by rounding, as 0). */
static void site_add(const struct alloc_site *s, double *v)
{
	v[A_ALLOC_BYTES] += s->alloc_bytes;
	v[A_ALLOC_OBJECTS] += s->alloc_objects;
	v[A_INUSE_BYTES] += fmax(s->inuse_bytes, 0);
	v[A_INUSE_OBJECTS] += fmax(s->inuse_objects, 0);
	v[A_ALLOC_VAR] += s->alloc_var;
	v[A_INUSE_VAR] += fmax(s->inuse_var, 0);
	v[A_SAMPLES] += s->samples;
}

/* The whole life's, from the sites. 0 or -ENOMEM. */
static int avals_whole(const struct alloc *a, struct avals *x)
{
	const struct alloc_site *s;
	size_t n;

	s = alloc_core_sites(a->core, &n);
	x->n = agg_count(a->stacks);
	if (!(x->v = calloc(x->n + 1, sizeof(*x->v))))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		site_add(&s[i], x->v[s[i].stack]);
	return 0;
}

struct wsum {
	struct avals *x;
	double unit;	/* a variance sum's unit */
	bool live;	/* the allocations less the frees, into the A_INUSE_*; else A_ALLOC_* */
};

static void wsum_row(void *ctx, const uint64_t *row)
{
	const struct wsum *c = ctx;
	const uint64_t *r = row + 1;
	double *v;

	if (row[0] >= c->x->n)
		return;
	v = c->x->v[row[0]];
	if (c->live) {
		v[A_INUSE_BYTES] += (double)r[AC_ALLOC_BYTES] - (double)r[AC_FREE_BYTES];
		v[A_INUSE_OBJECTS] += ((double)r[AC_ALLOC_MOBJ] - (double)r[AC_FREE_MOBJ]) / 1000;
		v[A_INUSE_VAR] += ((double)r[AC_ALLOC_VAR] - (double)r[AC_FREE_VAR]) * c->unit;
		return;
	}
	v[A_ALLOC_BYTES] += (double)r[AC_ALLOC_BYTES];
	v[A_ALLOC_OBJECTS] += (double)r[AC_ALLOC_MOBJ] / 1000;
	v[A_ALLOC_VAR] += (double)r[AC_ALLOC_VAR] * c->unit;
	v[A_SAMPLES] += (double)r[AC_SAMPLES];
}

/*
 * A window's, from the slices: what its slices allocated, and what was live at its end (every
 * slice up to it, allocations less frees: the end of the last slice taken). 0 or -ENOMEM.
 */
static int avals_window(const struct alloc *a, struct timed_window *w, struct avals *x)
{
	struct wsum c = { x, (double)a->var_unit, false };
	struct slices_span span;

	x->n = agg_count(a->stacks);
	if (!(x->v = calloc(x->n + 1, sizeof(*x->v))))
		return -ENOMEM;
	timed_window_take(w, a->slices, wsum_row, &c);
	c.live = true;
	slices_window(a->slices, 0, w->span.nslices ? w->span.t1 : w->until, wsum_row, &c, &span);
	for (size_t i = 0; i < x->n; i++) {
		x->v[i][A_INUSE_BYTES] = fmax(x->v[i][A_INUSE_BYTES], 0);
		x->v[i][A_INUSE_OBJECTS] = fmax(x->v[i][A_INUSE_OBJECTS], 0);
		x->v[i][A_INUSE_VAR] = fmax(x->v[i][A_INUSE_VAR], 0);
	}
	return 0;
}

static void avals_totals(const struct avals *x, double *v)
{
	memset(v, 0, A_N * sizeof(*v));
	for (size_t i = 0; i < x->n; i++)
		for (int k = 0; k < A_N; k++)
			v[k] += x->v[i][k];
}

void alloc_totals(const struct alloc *a, double *v)
{
	const struct alloc_site *s;
	size_t n;

	if (a->table_only) {
		memcpy(v, a->saved, A_N * sizeof(*v));
		return;
	}
	memset(v, 0, A_N * sizeof(*v));
	s = alloc_core_sites(a->core, &n);
	for (size_t i = 0; i < n; i++)
		site_add(&s[i], v);
}

/*
 * The measures a procedure is listed by, each a view of the stacks whose count is the
 * measure (objects in thousandths: a sample stands for a fraction more than one): the
 * A_* values but the samples.
 */
enum { M_ALLOC_BYTES = A_ALLOC_BYTES, M_ALLOC_OBJECTS = A_ALLOC_OBJECTS,
       M_INUSE_BYTES = A_INUSE_BYTES, M_INUSE_OBJECTS = A_INUSE_OBJECTS,
       M_ALLOC_VAR = A_ALLOC_VAR, M_INUSE_VAR = A_INUSE_VAR, M_N };
static const char *const m_names[M_N] = { "alloc_bytes", "alloc_objects", "inuse_bytes",
					  "inuse_objects", "alloc_bytes_stderr",
					  "inuse_bytes_stderr" };

struct prow {
	uint32_t proc;
	double self[M_N], deep[M_N];
};

struct by_bytes_ctx {
	bool alloc_first;
	const struct sym *s;
};

/* by live bytes, then allocated (--sort inuse, the default; alloc_first: the other way), then
 * deep, then by name: the same order whatever the procedures' ids (a target read back) */
static int by_bytes(const void *x, const void *y, void *arg)
{
	const struct prow *a = x, *b = y;
	const struct by_bytes_ctx *c = arg;
	int first = c->alloc_first ? M_ALLOC_BYTES : M_INUSE_BYTES;
	int then = first == M_ALLOC_BYTES ? M_INUSE_BYTES : M_ALLOC_BYTES;
	const struct sym_procinfo *pa, *pb;
	int r;

	if (a->self[first] != b->self[first])
		return a->self[first] < b->self[first] ? 1 : -1;
	if (a->self[then] != b->self[then])
		return a->self[then] < b->self[then] ? 1 : -1;
	if (a->deep[first] != b->deep[first])
		return a->deep[first] < b->deep[first] ? 1 : -1;
	pa = sym_proc(c->s, a->proc);
	pb = sym_proc(c->s, b->proc);
	if ((r = strcmp(sym_str(c->s, pa->name), sym_str(c->s, pb->name))))
		return r;
	return strcmp(sym_str(c->s, pa->module), sym_str(c->s, pb->module));
}

static struct prow *prow_of(struct prow **rows, size_t *n, size_t *cap, uint32_t proc)
{
	for (size_t i = 0; i < *n; i++)
		if ((*rows)[i].proc == proc)
			return &(*rows)[i];
	if (GROW(*rows, *cap, *n + 1))
		return NULL;
	(*rows)[*n] = (struct prow){ .proc = proc };
	return &(*rows)[(*n)++];
}

static int by_json_bytes(const void *x, const void *y, void *arg)
{
	const cJSON *a = *(const cJSON *const *)x, *b = *(const cJSON *const *)y;
	bool alloc_first = *(const bool *)arg;
	const char *k1 = alloc_first ? "alloc_bytes" : "inuse_bytes";
	const char *k2 = alloc_first ? "inuse_bytes" : "alloc_bytes";
	double a1 = proto_num(a, k1, 0), b1 = proto_num(b, k1, 0);

	if (a1 != b1)
		return a1 < b1 ? 1 : -1;
	a1 = proto_num(a, k2, 0);
	b1 = proto_num(b, k2, 0);
	return a1 < b1 ? 1 : a1 > b1 ? -1 : 0;
}

/* A table read back from a results file, in the order asked. */
static int saved_procedures_json(const struct alloc *a, bool alloc_first, cJSON *out)
{
	int n = cJSON_GetArraySize(a->saved_procs), k = 0;
	cJSON **rows = calloc(n + 1, sizeof(*rows)), *arr, *it;

	if (!rows)
		return -ENOMEM;
	cJSON_ArrayForEach(it, a->saved_procs)
		rows[k++] = it;
	qsort_r(rows, n, sizeof(*rows), by_json_bytes, &alloc_first);
	cJSON_AddStringToObject(out, "sort", alloc_first ? "alloc" : "inuse");
	arr = cJSON_AddArrayToObject(out, "procedures");
	for (int i = 0; arr && i < n; i++)
		if (!cJSON_AddItemToArray(arr, cJSON_Duplicate(rows[i], true)))
			arr = NULL;
	free(rows);
	return arr ? 0 : -ENOMEM;
}

/* The table by procedure of per-stack values @x. */
static int procedures_json(const struct alloc *a, const struct avals *x, const struct sym *s,
			   const struct list_req *lr, cJSON *out)
{
	struct prow *rows = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	cJSON *arr;

	for (int m = 0; m < M_N && !r; m++) {
		struct agg_list_opts o = { .no_inline = lr->no_inline > 0 };
		struct agg *v = agg_view(a->stacks);
		struct agg_list l;
		double scale = m == M_ALLOC_OBJECTS || m == M_INUSE_OBJECTS ? 1000 : 1;

		if (!v)
			return -ENOMEM;
		/* (the samples are independent: a sum's variance is the sum of theirs) */
		for (size_t i = 0; i < x->n; i++)
			if (x->v[i][m] > 0)
				agg_view_add(v, (uint32_t)i, (uint64_t)llround(x->v[i][m] * scale), 0);
		r = agg_list(v, s, &o, &l);
		for (size_t i = 0; !r && i < l.nrows; i++) {
			struct prow *p = prow_of(&rows, &n, &cap, l.rows[i].proc);

			if (!p) {
				r = -ENOMEM;
				break;
			}
			p->self[m] = l.rows[i].shallow / scale;
			p->deep[m] = l.rows[i].deep / scale;
		}
		if (!r)
			agg_list_free(&l);
		agg_free(v);
	}
	if (r) {
		free(rows);
		return r;
	}
	if (n) {
		struct by_bytes_ctx c = { lr->sort && !strcmp(lr->sort, "alloc"), s };

		qsort_r(rows, n, sizeof(*rows), by_bytes, &c);
	}
	cJSON_AddStringToObject(out, "sort", lr->sort && !strcmp(lr->sort, "alloc") ? "alloc"
										  : "inuse");
	arr = cJSON_AddArrayToObject(out, "procedures");
	for (size_t i = 0; i < n; i++) {
		const struct sym_procinfo *pi = sym_proc(s, rows[i].proc);
		cJSON *o = agg_proc_json(s, rows[i].proc);
		char key[32];

		for (int m = 0; m < M_N; m++) {
			bool var = m == M_ALLOC_VAR || m == M_INUSE_VAR;

			cJSON_AddNumberToObject(o, m_names[m], round(var ? sqrt(rows[i].self[m])
									 : rows[i].self[m]));
			snprintf(key, sizeof(key), "deep_%s", m_names[m]);
			cJSON_AddNumberToObject(o, key, round(var ? sqrt(rows[i].deep[m])
								  : rows[i].deep[m]));
		}
		if (pi->file)
			cJSON_AddStringToObject(o, "file", sym_str(s, pi->file));
		if (pi->line)
			cJSON_AddNumberToObject(o, "line", pi->line);
		cJSON_AddItemToArray(arr, o);
	}
	free(rows);
	return 0;
}

int alloc_procedures_json(const struct alloc *a, const struct sym *s, const struct list_req *lr,
			  cJSON *out)
{
	struct avals x;
	int r;

	if (a->saved_procs)
		return saved_procedures_json(a, lr->sort && !strcmp(lr->sort, "alloc"), out);
	if ((r = avals_whole(a, &x)))
		return r;
	r = procedures_json(a, &x, s, lr, out);
	free(x.v);
	return r;
}

/* ---- the profile the exports are made from (views/stacks.h, with four values a sample) */

static const char *const value_types[][2] = {
	{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
	{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
};

struct order {
	const struct agg *stacks;
	struct stacks *x;
	size_t next;		/* the stack the next visit is of, or after */
	uint32_t *ids;		/* each visit's stack */
	size_t n, cap;
	int err;
};

/* Each stack is visited once, in the order of its id (agg_list()): noted, for its values. */
static void order_visit(void *ctx, const struct agg_visit *v)
{
	struct order *o = ctx;
	uint64_t c, ns;

	stacks_visit(o->x, v);
	while (o->next < agg_count(o->stacks) && agg_get(o->stacks, o->next, &c, &ns) != v->st)
		o->next++;
	if (GROW(o->ids, o->cap, o->n + 1))
		o->err = -ENOMEM;
	else
		o->ids[o->n++] = (uint32_t)o->next;
}

static uint32_t no_name(const void *ctx, uint32_t id)
{
	(void)ctx;
	(void)id;
	return 0;
}

static uint32_t no_cgroup(const void *ctx, uint64_t id)
{
	(void)ctx;
	(void)id;
	return 0;
}

/*
 * "profile" as sampling's (stacks.h), a sample per stack with "count" its samples and
 * "values" [alloc_objects, alloc_space, inuse_objects, inuse_space]; the profile says
 * "value_types", "default_value" (inuse_space, as Go's heap profiles) and its period.
 */
static int profile_json(struct sym *sym, const struct target *t, const struct alloc *a,
			const struct avals *x, const struct list_req *lr, cJSON *rep)
{
	static const int of[4] = { A_ALLOC_OBJECTS, A_ALLOC_BYTES, A_INUSE_OBJECTS, A_INUSE_BYTES };
	const struct groups_namer nm = { no_name, no_name, no_cgroup, NULL };
	struct agg_list_opts lo = { .no_inline = lr->no_inline > 0 };
	struct order o = { .stacks = a->stacks };
	struct agg *v = agg_view(a->stacks);
	struct agg_list l;
	size_t k = 0;
	cJSON *prof, *it, *arr;
	int r = -ENOMEM;

	o.x = stacks_new(sym, &lo, &nm, -1);
	if (!v || !o.x)
		goto out;
	/* each stack with a value, its samples its count (at least 1: a block allocated before a
	 * window and live at its end has no sample in it) */
	for (size_t i = 0; i < x->n; i++)
		if (x->v[i][A_SAMPLES] > 0 || x->v[i][A_INUSE_BYTES] > 0)
			agg_view_add(v, (uint32_t)i, (uint64_t)fmax(x->v[i][A_SAMPLES], 1), 0);
	lo.visit = order_visit;
	lo.visit_ctx = &o;
	if ((r = agg_list(v, sym, &lo, &l)))
		goto out;
	agg_list_free(&l);
	if ((r = o.err) || (r = stacks_json(o.x, rep)))
		goto out;
	prof = cJSON_GetObjectItemCaseSensitive(rep, "profile");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(prof, "samples")) {
		if (k >= o.n)
			break;
		cJSON_DeleteItemFromObject(it, "kind"); /* (not a sample of time) */
		arr = cJSON_AddArrayToObject(it, "values");
		for (int m = 0; m < 4; m++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(round(x->v[o.ids[k]][of[m]])));
		k++;
	}
	arr = cJSON_AddArrayToObject(prof, "value_types");
	for (int m = 0; m < 4; m++) {
		cJSON *vt = cJSON_CreateArray();

		cJSON_AddItemToArray(vt, cJSON_CreateString(value_types[m][0]));
		cJSON_AddItemToArray(vt, cJSON_CreateString(value_types[m][1]));
		cJSON_AddItemToArray(arr, vt);
	}
	cJSON_AddStringToObject(prof, "default_value", "inuse_space");
	cJSON_AddStringToObject(prof, "period_type", "space");
	cJSON_AddNumberToObject(prof, "period", a->rate);
	cJSON_AddNumberToObject(prof, "start_wall", t->start_wall);
	r = 0;
out:
	free(o.ids);
	stacks_free(o.x);
	agg_free(v);
	return r;
}

/*
 * "alloc": {"summary": {"rate_bytes", "samples", "alloc_bytes", "alloc_bytes_stderr",
 * "alloc_objects", "inuse_bytes", "inuse_bytes_stderr", "inuse_objects", "calls",
 * "sampled_calls", "frees_unmatched", "live_full", "ring_full", "stack_errors",
 * "frees_lost", "records_lost", "probed_files"}, "procedures": [{"procedure", "module",
 * "name", "alloc_bytes", "deep_alloc_bytes", ... for alloc_objects, inuse_bytes,
 * inuse_objects, alloc_bytes_stderr, inuse_bytes_stderr, "file", "line"}]}, procedures by
 * live bytes, then allocated bytes (--sort alloc: the other way).
 */
int alloc_report_json(struct sym *sym, const struct target *t, const struct alloc *a,
		      const struct list_req *lr, cJSON *rep,
		      cJSON **err)
{
	const char *no = lr->by ? "--by" : lr->when ? "--when" : lr->ncritical ? "--critical" : NULL;
	/* the exports' profile: the allocations' only when they are asked for (--alloc), else
	 * the samples' are the profile (a target carrying both) */
	bool stacks = lr->stacks && lr->alloc;
	struct avals x = { 0 };
	struct timed_window w;
	cJSON *o, *s;
	double v[A_N];
	int r;

	if (timed_window_parse(lr, t->start_wall, &w, err))
		return -1;
	/* (a file with stacks has slices: but for a hand-made one, no window without them) */
	if ((w.on && !a->slices) || (stacks && a->table_only)) {
		*err = proto_error(1, "target %u \"%s\": its results file was written before pcmon kept allocations' stacks and times: %s",
				   t->id, t->name, stacks ? "it has a table only"
							      : "list it without --since/--until");
		return -1;
	}
	if (stacks && no) {
		*err = proto_error(2, "%s does not apply to --alloc yet: leave it out", no);
		return -1;
	}
	if (!a->table_only && (r = w.on ? avals_window(a, &w, &x) : avals_whole(a, &x)))
		goto oom;
	o = cJSON_AddObjectToObject(rep, "alloc");
	/* (the exports' profile, and the table with it: what diff --alloc compares) */
	if (stacks && profile_json(sym, t, a, &x, lr, rep))
		goto oom;
	if (a->table_only)
		alloc_totals(a, v);
	else
		avals_totals(&x, v);
	s = cJSON_AddObjectToObject(o, "summary");
	if (no) /* (the sampling table above applies it; this one is the target's whole life) */
		cJSON_AddStringToObject(s, "not_applied", no);
	cJSON_AddNumberToObject(s, "rate_bytes", a->rate);
	cJSON_AddNumberToObject(s, "samples", v[A_SAMPLES]);
	cJSON_AddNumberToObject(s, "alloc_bytes", round(v[A_ALLOC_BYTES]));
	cJSON_AddNumberToObject(s, "alloc_bytes_stderr", round(sqrt(v[A_ALLOC_VAR])));
	cJSON_AddNumberToObject(s, "alloc_objects", round(v[A_ALLOC_OBJECTS]));
	cJSON_AddNumberToObject(s, "inuse_bytes", round(v[A_INUSE_BYTES]));
	cJSON_AddNumberToObject(s, "inuse_bytes_stderr", round(sqrt(v[A_INUSE_VAR])));
	cJSON_AddNumberToObject(s, "inuse_objects", round(v[A_INUSE_OBJECTS]));
	/* (BPF's counters and what the engine lost: the whole life's, window or not) */
	cJSON_AddNumberToObject(s, "calls", a->bpf.entries);
	cJSON_AddNumberToObject(s, "sampled_calls", a->bpf.sampled);
	cJSON_AddNumberToObject(s, "frees_unmatched", a->bpf.frees_unmatched);
	cJSON_AddNumberToObject(s, "live_full", a->bpf.live_full);
	cJSON_AddNumberToObject(s, "ring_full", a->bpf.ring_full);
	cJSON_AddNumberToObject(s, "stack_errors", a->bpf.stack_errors);
	cJSON_AddNumberToObject(s, "frees_lost", a->frees_lost);
	cJSON_AddNumberToObject(s, "records_lost", a->records_lost);
	cJSON_AddNumberToObject(s, "slices_lost", a->slices_lost);
	cJSON_AddNumberToObject(s, "probed_files", a->probed_files);
	if (w.on)
		timed_window_json(&w, o);
	if (lr->timeline && (!a->slices || alloc_timeline_json(a, sym, lr, &w, o))) {
		if (a->slices)
			goto oom;
		free(x.v);
		*err = proto_error(1, "target %u \"%s\": its results file was written before pcmon kept allocations' times",
				   t->id, t->name);
		return -1;
	}
	if (a->table_only && !a->saved_procs) {
		cJSON_AddStringToObject(o, "procedures_not_saved",
					"read back from a results file that kept the totals only");
		return 0;
	}
	if (a->table_only ? alloc_procedures_json(a, sym, lr, o) : procedures_json(a, &x, sym, lr, o))
		goto oom;
	free(x.v);
	return 0;
oom:
	free(x.v);
	*err = proto_error(1, "out of memory");
	return -1;
}


/* ---- a table read back: each row checked, and built again from what was checked */

int alloc_procedures_load(struct sf_rd *rd, const cJSON *section, cJSON **out)
{
	const cJSON *arr, *it;
	cJSON *rows;
	int n, i = 0, r;

	*out = NULL;
	if ((r = sf_get_array(rd, section, "procedures", SF_OPTIONAL, 1 << 20, &arr, &n)) || !arr)
		return r;
	rows = cJSON_CreateArray();
	if (!rows)
		return sf_bad(rd, "procedures", "out of memory");
	cJSON_ArrayForEach(it, arr) {
		const char *str[3] = { 0 }, *file = NULL;
		static const char *const skeys[3] = { "procedure", "module", "name" };
		cJSON *o = cJSON_CreateObject();
		uint32_t line = 0;
		char key[32];

		if (!o || !cJSON_AddItemToArray(rows, o)) {
			cJSON_Delete(o);
			r = sf_bad(rd, "procedures", "out of memory");
			break;
		}
		if (!cJSON_IsObject(it)) {
			r = sf_not_object(rd, "procedures", i, it);
			break;
		}
		for (int k = 0; k < 3 && !r; k++)
			r = sf_get_str(rd, it, skeys[k], SF_ALWAYS, 4096, &str[k]);
		if (!r)
			r = sf_get_str(rd, it, "file", SF_OPTIONAL, 4096, &file);
		if (!r)
			r = sf_get_u32(rd, it, "line", SF_OPTIONAL, UINT32_MAX, &line);
		for (int k = 0; k < 3 && !r; k++)
			cJSON_AddStringToObject(o, skeys[k], str[k]);
		for (int m = 0; m < M_N && !r; m++) {
			for (int deep = 0; deep < 2 && !r; deep++) {
				double v;

				snprintf(key, sizeof(key), "%s%s", deep ? "deep_" : "", m_names[m]);
				r = sf_get_double(rd, it, key, SF_ALWAYS, 0, 1e30, &v);
				if (!r)
					cJSON_AddNumberToObject(o, key, v);
			}
		}
		if (!r && file)
			cJSON_AddStringToObject(o, "file", file);
		if (!r && line)
			cJSON_AddNumberToObject(o, "line", line);
		if (r)
			break;
		i++;
	}
	if (r) {
		cJSON_Delete(rows);
		return r;
	}
	*out = rows;
	return 0;
}
