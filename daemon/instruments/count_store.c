// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call-counting instrument's section of a results file (store.h has the file as a
 * whole): a target's "calls", its patterns, the probes' measured cost, the WHEN pattern its
 * calls were classed by, and per probed procedure its totals (with a pattern, by class, and
 * by the frame a ':' charged); and (format 5) the call table's time slices, a row per
 * procedure by its index in "procedures".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "count_int.h"
#include "pat.h"
#include "proto.h"
#include "slices.h"
#include "stfile.h"
#include "timed.h"
#include "util.h"

/* A procedure's calls of a class other than matching: its object's key. */
static const char *const cls_keys[COUNT_NCLS] = { [COUNT_OTHER] = "not_matching",
						  [COUNT_UNKNOWN] = "unknown" };

static void put_stat(struct sf_wr *w, cJSON *x, const struct pcmon_cstat *s)
{
#define PUT_CSTAT(f, need) sf_put_u64(w, x, #f, s->f);
	PCMON_CSTAT_FIELDS(PUT_CSTAT)
#undef PUT_CSTAT
}

/* Procedure @fn's calls by the frame a ':' charged (none without one). */
static void put_charges(struct sf_wr *w, cJSON *x, const struct count *ct, size_t fn)
{
	cJSON *arr = NULL;

	for (size_t k = 0; k < ct->ncharges && !w->oom; k++) {
		const struct count_charge *c = &ct->charges[k];
		cJSON *y;

		if (c->fn != fn || !c->s.calls)
			continue;
		if (!arr && !(arr = sf_chk(w, cJSON_AddArrayToObject(x, "charged_to"))))
			return;
		sf_push(w, arr, y = cJSON_CreateObject());
		if (w->oom)
			return;
		sf_put_str(w, y, "to", c->to);
		put_stat(w, y, &c->s);
	}
}

void count_store_save(const struct target *t, const void *st, const struct sym *s,
		      struct sf_wr *w, cJSON *o)
{
	const struct count *ct = st;
	cJSON *arr;

	(void)t;
	(void)s;
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "patterns"));
	for (size_t i = 0; arr && i < ct->npats; i++)
		sf_push(w, arr, cJSON_CreateString(ct->patterns[i]));
	sf_put_num(w, o, "probe_cost_ns", ct->cost_ns);
	sf_put_num(w, o, "stepped_probe_cost_ns", ct->cost_xol_ns);
	sf_put_num(w, o, "probe_cost_inner_ns", ct->in_ns[0]);
	sf_put_num(w, o, "stepped_probe_cost_inner_ns", ct->in_ns[1]);
	sf_put_num(w, o, "probe_cost_spread_ns", ct->spread_ns[0]);
	sf_put_num(w, o, "stepped_probe_cost_spread_ns", ct->spread_ns[1]);
	sf_put_num(w, o, "probe_cost_split_err_ns", ct->split_err_ns[0]);
	sf_put_num(w, o, "stepped_probe_cost_split_err_ns", ct->split_err_ns[1]);
	sf_put_num(w, o, "return_probe_cost_ns", ct->ret_ns);
	sf_put_u64(w, o, "probe_cost_cpus", ct->cost_cpus);
	sf_put_bool(w, o, "virtual", ct->virt);
	sf_put_u64(w, o, "clock_repairs", ct->clock_repairs);
	sf_put_u64(w, o, "unplaced_steal_ns", ct->unplaced_steal_ns);
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "unmatched"));
	for (size_t i = 0; arr && i < ct->npats; i++)
		if (!ct->matched[i])
			sf_push(w, arr, cJSON_CreateString(ct->patterns[i]));
	sf_put_num(w, o, "objects_searched", ct->searched);
	if (ct->when_text) {
		sf_put_str(w, o, "when", ct->when_text);
		sf_put_bool(w, o, "when_from_file", ct->when_file);
		sf_put_bool(w, o, "icase", ct->icase);
		sf_put_str(w, o, "when_method", ct->when_mode == PCMON_CW_SHADOW ? "shadow" : "walk");
		sf_put_str(w, o, "when_why", ct->when_why);
		sf_put_bool(w, o, "context_late", ct->ctx_late);
#define PUT_UNKNOWN(f) sf_put_u64(w, o, "unknown_" #f, ct->unknown.f);
		COUNT_UNKNOWN_REASONS(PUT_UNKNOWN)
#undef PUT_UNKNOWN
	}
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "procedures"));
	for (size_t i = 0; arr && i < ct->nfns && !w->oom; i++) {
		const struct count_fn *fn = &ct->fns[i];
		cJSON *x = cJSON_CreateObject();
		char addr[24];

		sf_push(w, arr, x);
		if (w->oom)
			break;
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)fn->vaddr);
		sf_put_str(w, x, "m", fn->module);
		sf_put_str(w, x, "n", fn->name);
		sf_put_str(w, x, "a", addr);
		sf_put_bool(w, x, "late", fn->late);
		sf_put_bool(w, x, "xol", fn->xol);
		put_stat(w, x, &fn->stat);
		if (!ct->when_text)
			continue;
		sf_put_bool(w, x, "context", fn->ctx);
		for (int c = COUNT_OTHER; c < COUNT_NCLS && !w->oom; c++) {
			cJSON *y = sf_chk(w, cJSON_AddObjectToObject(x, cls_keys[c]));

			if (y)
				put_stat(w, y, &fn->by[c]);
		}
		put_charges(w, x, ct, i);
	}
	/* each procedure by its index in "procedures" (format 5) */
	if (ct->slices) {
		sf_put_u64(w, o, "slice_width", COUNT_WIDTH);
		timed_save(w, ct->slices, o);
	}
}

static int read_stat(struct sf_rd *rd, const cJSON *o, struct pcmon_cstat *s)
{
	struct pcmon_cstat v = { 0 };
	uint64_t u;
	int r;

#define GET_CSTAT(f, need)                               \
	if ((r = sf_get_u64(rd, o, #f, SF_##need, &u)))  \
		return r;                                \
	v.f = u;
	PCMON_CSTAT_FIELDS(GET_CSTAT)
#undef GET_CSTAT
	*s = v;
	return 0;
}

/* A row's sums before the first OPTIONAL field of PCMON_CSTAT_FIELDS (they come last). */
#define CSTAT_IS_ALWAYS	      1
#define CSTAT_IS_OPTIONAL     0
#define CSTAT_ALWAYS(f, need) +CSTAT_IS_##need
#define COUNT_WIDTH_ALWAYS    (0 PCMON_CSTAT_FIELDS(CSTAT_ALWAYS))

/*
 * The call table's time slices (format 5); a file from before has none: its totals load as
 * one slice, the target's life. The rows are as wide as the totals the file's procedures
 * carry: a format-5 file written before the OPTIONAL fields were (self_ctx: --when at
 * probes) has rows of the ALWAYS fields only.
 */
static int load_slices(struct sf_rd *rd, const cJSON *o, const cJSON *fns, struct count *ct)
{
	const cJSON *fn0 = cJSON_GetArrayItem(fns, 0);
	bool narrow = fn0 && !cJSON_GetObjectItemCaseSensitive(fn0, "self_ctx");
	uint64_t *rows, width = narrow ? COUNT_WIDTH_ALWAYS : COUNT_WIDTH_V5;
	int r;

	/* a file from before the unplaced steal, the steal, the minimum and the callees were
	 * kept has rows of fewer sums, the first ones (COUNT_WIDTH_UNPLACED, _STEAL, _V5, or
	 * the ALWAYS ones before --when at probes): read at that width, padded with zeros */
	if ((r = sf_get_u64(rd, o, "slice_width", SF_OPTIONAL, &width)))
		return r;
	if (width != COUNT_WIDTH_ALWAYS && width != COUNT_WIDTH_V5 && width != COUNT_WIDTH_STEAL &&
	    width != COUNT_WIDTH_UNPLACED && width != COUNT_WIDTH)
		return sf_bad(rd, "slice_width", "%u, %u, %u, %u or %u sums",
			      (unsigned)COUNT_WIDTH_ALWAYS, (unsigned)COUNT_WIDTH_V5,
			      (unsigned)COUNT_WIDTH_STEAL, (unsigned)COUNT_WIDTH_UNPLACED,
			      (unsigned)COUNT_WIDTH);
	r = timed_read_narrow(rd, o, COUNT_WIDTH, (unsigned)width, ct->nfns, ct->slices, NULL);
	if (r <= 0)
		return r;
	rows = calloc(ct->nfns * (1 + COUNT_WIDTH) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < ct->nfns; i++) {
		rows[i * (1 + COUNT_WIDTH)] = i;
		count_row(&ct->fns[i].stat, rows + i * (1 + COUNT_WIDTH) + 1);
	}
	r = timed_one_slice(rd, ct->slices, rows, ct->nfns);
	free(rows);
	return r;
}

/* The pattern a target's calls were classed by, and how. */
static int load_when(struct sf_rd *rd, const cJSON *o, struct count *ct, const char *when)
{
	const char *method = NULL, *why = NULL;
	cJSON *none = NULL;
	uint64_t u;
	int r;

	if ((r = sf_get_bool(rd, o, "when_from_file", SF_ALWAYS, &ct->when_file)) ||
	    (r = sf_get_bool(rd, o, "icase", SF_ALWAYS, &ct->icase)) ||
	    (r = sf_get_str(rd, o, "when_method", SF_ALWAYS, 16, &method)) ||
	    (r = sf_get_str(rd, o, "when_why", SF_ALWAYS, sizeof(ct->when_why) - 1, &why)) ||
	    (r = sf_get_bool(rd, o, "context_late", SF_ALWAYS, &ct->ctx_late)))
		return r;
#define GET_UNKNOWN(f)                                                           \
	if ((r = sf_get_u64(rd, o, "unknown_" #f, SF_ALWAYS, &u)))             \
		return r;                                                        \
	ct->unknown.f = u;
	COUNT_UNKNOWN_REASONS(GET_UNKNOWN)
#undef GET_UNKNOWN
	if (count_set_when(ct, when, &none)) {
		cJSON_Delete(none);
		return sf_bad(rd, "when", "not a WHEN pattern");
	}
	ct->when_mode = strcmp(method, "shadow") ? PCMON_CW_WALK : PCMON_CW_SHADOW;
	snprintf(ct->when_why, sizeof(ct->when_why), "%s", why);
	return 0;
}

/* A procedure's calls that did not match, or could not be told, and those a ':' charged. */
static int load_classes(struct sf_rd *rd, const cJSON *x, struct count *ct, struct count_fn *fn)
{
	const cJSON *arr, *it;
	int r, n;

	if ((r = sf_get_bool(rd, x, "context", SF_ALWAYS, &fn->ctx)) ||
	    (r = sf_get_array(rd, x, "charged_to", SF_OPTIONAL, 1 << 20, &arr, &n)))
		return r;
	for (int c = COUNT_OTHER; c < COUNT_NCLS; c++) {
		const cJSON *y = cJSON_GetObjectItemCaseSensitive(x, cls_keys[c]);

		if (!cJSON_IsObject(y))
			return sf_bad(rd, cls_keys[c], "expected an object");
		if ((r = read_stat(rd, y, &fn->by[c])))
			return r;
	}
	cJSON_ArrayForEach(it, arr) {
		const char *to = NULL;
		struct count_charge *ch;

		if (!cJSON_IsObject(it))
			return sf_bad(rd, "charged_to", "expected an object");
		if ((r = sf_get_str(rd, it, "to", SF_ALWAYS, 4096, &to)))
			return r;
		ch = count_charge(ct, fn - ct->fns, to);
		if (!ch)
			return -ENOMEM;
		if ((r = read_stat(rd, it, &ch->s)))
			return r;
	}
	return 0;
}

int count_store_load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out)
{
	const cJSON *pats, *fns, *it, *um;
	struct slices_cfg cfg;
	struct count *ct;
	double cost = 0, cost_xol = 0;
	uint64_t searched = 0, cpus = 0;
	const char *when = NULL;
	bool virt = false;
	int r, np, nf, nu, i = 0;

	(void)s;
	*out = NULL;
	if ((r = sf_get_array(rd, o, "patterns", SF_ALWAYS, 4096, &pats, &np)) ||
	    (r = sf_get_array(rd, o, "procedures", SF_ALWAYS, 1 << 20, &fns, &nf)) ||
	    (r = sf_get_double(rd, o, "probe_cost_ns", SF_ALWAYS, 0, 1e9, &cost)) ||
	    (r = sf_get_double(rd, o, "stepped_probe_cost_ns", SF_ALWAYS, 0, 1e9, &cost_xol)))
		return r;
	if ((r = sf_get_bool(rd, o, "virtual", SF_ALWAYS, &virt)) ||
	    (r = sf_get_u64(rd, o, "objects_searched", SF_ALWAYS, &searched)) ||
	    (r = sf_get_str(rd, o, "when", SF_OPTIONAL, PROTO_MAX_LINE, &when)))
		return r;
	ct = calloc(1, sizeof(*ct));
	timed_default_cfg(&cfg); /* the file's own, if it has slices */
	if (!ct || !(ct->slices = slices_new(&cfg, COUNT_WIDTH)) ||
	    !(ct->patterns = calloc(np + 1, sizeof(char *))) ||
	    !(ct->pats = calloc(np + 1, sizeof(struct pat *))) ||
	    !(ct->matched = calloc(np + 1, sizeof(bool))) ||
	    !(ct->fns = calloc(nf + 1, sizeof(*ct->fns)))) {
		count_free(ct);
		return -ENOMEM;
	}
	ct->cap_fns = nf + 1;
	ct->cost_ns = cost;
	ct->cost_xol_ns = cost_xol;
	/* a file from before the split: the whole pair was taken as inside, with no spread */
	ct->in_ns[0] = cost;
	ct->in_ns[1] = cost_xol;
	if ((r = sf_get_double(rd, o, "probe_cost_inner_ns", SF_OPTIONAL, 0, 1e9, &ct->in_ns[0])) ||
	    (r = sf_get_double(rd, o, "stepped_probe_cost_inner_ns", SF_OPTIONAL, 0, 1e9, &ct->in_ns[1])) ||
	    (r = sf_get_double(rd, o, "probe_cost_spread_ns", SF_OPTIONAL, 0, 1e9, &ct->spread_ns[0])) ||
	    (r = sf_get_double(rd, o, "stepped_probe_cost_spread_ns", SF_OPTIONAL, 0, 1e9, &ct->spread_ns[1])) ||
	    (r = sf_get_double(rd, o, "return_probe_cost_ns", SF_OPTIONAL, 0, 1e9, &ct->ret_ns)) ||
	    (r = sf_get_double(rd, o, "probe_cost_split_err_ns", SF_OPTIONAL, 0, 1e9, &ct->split_err_ns[0])) ||
	    (r = sf_get_double(rd, o, "stepped_probe_cost_split_err_ns", SF_OPTIONAL, 0, 1e9, &ct->split_err_ns[1])) ||
	    (r = sf_get_u64(rd, o, "probe_cost_cpus", SF_OPTIONAL, &cpus)) ||
	    (r = sf_get_u64(rd, o, "clock_repairs", SF_OPTIONAL, &ct->clock_repairs)) ||
	    (r = sf_get_u64(rd, o, "unplaced_steal_ns", SF_OPTIONAL, &ct->unplaced_steal_ns))) {
		count_free(ct);
		return r;
	}
	ct->cost_cpus = (int)MIN(cpus, 4096);
	ct->virt = virt;
	ct->searched = searched; /* the table's "no procedure matched X in the N objects searched" */
	ct->detached = true;
	if (when && (r = load_when(rd, o, ct, when))) {
		count_free(ct);
		return r;
	}
	cJSON_ArrayForEach(it, pats) {
		if (!cJSON_IsString(it) || pat_parse(it->valuestring, 0, &ct->pats[ct->npats], NULL)) {
			count_free(ct);
			return sf_bad(rd, "patterns", "not a procedure pattern");
		}
		ct->patterns[ct->npats] = strdup(it->valuestring);
		ct->matched[ct->npats++] = true;
	}
	if ((r = sf_get_array(rd, o, "unmatched", SF_ALWAYS, 4096, &um, &nu))) {
		count_free(ct);
		return r;
	}
	cJSON_ArrayForEach(it, um)
		for (size_t k = 0; k < ct->npats; k++)
			if (cJSON_IsString(it) && !strcmp(it->valuestring, ct->patterns[k]))
				ct->matched[k] = false;
	cJSON_ArrayForEach(it, fns) {
		struct count_fn *fn = &ct->fns[ct->nfns];
		const char *m = NULL, *n = NULL;
		uint64_t a = 0;
		bool late = false, xol = false;

		if (!cJSON_IsObject(it)) {
			count_free(ct);
			return sf_not_object(rd, "procedures", i, it);
		}
		snprintf(rd->at, sizeof(rd->at), "procedures[%d].", i++);
		if ((r = sf_get_str(rd, it, "m", SF_ALWAYS, 4096, &m)) ||
		    (r = sf_get_str(rd, it, "n", SF_ALWAYS, 4096, &n)) ||
		    (r = sf_get_addr(rd, it, "a", &a)) ||
		    (r = sf_get_bool(rd, it, "late", SF_ALWAYS, &late)) ||
		    (r = sf_get_bool(rd, it, "xol", SF_ALWAYS, &xol)) ||
		    (r = read_stat(rd, it, &fn->stat)) ||
		    (when && (r = load_classes(rd, it, ct, fn)))) {
			count_free(ct);
			return r;
		}
		fn->module = strdup(m);
		fn->name = strdup(n);
		fn->vaddr = a;
		fn->late = late;
		fn->xol = xol;
		fn->charged = fn->stat;
		ct->nfns++;
	}
	rd->at[0] = '\0';
	if ((r = load_slices(rd, o, fns, ct))) {
		count_free(ct);
		return r;
	}
	*out = ct;
	return 0;
}
