// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call-counting instrument (docs/count.md): `--count PATTERN` puts an entry and a return
 * probe on every procedure the patterns name, in every object of the target's processes,
 * and keeps per procedure calls, self time and self+children time (bpf/count.bpf.c does the
 * accounting, per thread). Here, the base the instrument's other parts call into: a target's
 * state, made from the start request (its patterns, its WHEN pattern) and freed, its
 * procedures' cookies, their totals and the rows of their time slices. Resolving the
 * patterns (funcs.c), attaching (counter.c) and following new objects and images are in
 * count_attach.c, classing calls by WHEN in count_when.c, the call table in count_report.c,
 * the state file's "calls" section in count_store.c; the parts share count_int.h.
 *
 * The probes' own cost, measured once per engine (counter_probe_cost()), is subtracted when
 * the table is made: C per activation from its self time, C per activation inside it from an
 * outermost activation's self+children time.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "count.h"
#include "count_int.h"
#include "near.h"
#include "pat.h"
#include "proto.h"
#include "slices.h"
#include "timed.h"
#include "util.h"
#include "when.h"

#define COUNT_MAX_PROBES 1000	/* --max-probes default */

/* ---- settings */

void count_free(void *st)
{
	struct count *ct = st;

	if (!ct)
		return;
	for (size_t i = 0; i < ct->nfns; i++) {
		bpf_link__destroy(ct->fns[i].entry);
		bpf_link__destroy(ct->fns[i].ret);
		free(ct->fns[i].module);
		free(ct->fns[i].name);
	}
	free(ct->fns);
	for (size_t i = 0; i < ct->npats; i++) {
		free(ct->patterns[i]);
		pat_free(ct->pats[i]);
	}
	free(ct->patterns);
	free(ct->pats);
	free(ct->matched);
	free(ct->near);
	free(ct->objs);
	slices_free(ct->slices);
	for (size_t i = 0; i < ct->nctx; i++)
		pat_free(ct->ctx_pats[i]);
	free(ct->ctx_pats);
	pat_free(ct->when);
	free(ct->when_text);
	for (size_t i = 0; ct->stacks && i < itab_count(ct->stacks); i++)
		free(ct->stack_info[i].to);
	itab_free(ct->stacks);
	free(ct->stack_info);
	for (size_t i = 0; i < ct->ncharges; i++)
		free(ct->charges[i].to);
	free(ct->charges);
	free(ct->open);
	free(ct);
}

/*
 * The WHEN pattern @text (NULL: none), and how it is answered at the probes: from the shadow
 * stack if every name can be a probed procedure (each name alone, in ctx_pats, finds its
 * context procedures), else from the stack walked at each entry (count_attach_target() may
 * still choose the walk: a running process, names of too many procedures).
 */
int count_set_when(struct count *ct, const char *text, cJSON **rep)
{
	size_t nn;
	int r;

	if (!text)
		return 0;
	r = when_compile(text, ct->when_file, ct->icase, &ct->when, rep);
	if (r || !(ct->when_text = strdup(text)))
		return r ? r : -ENOMEM;
	ct->when_mode = PCMON_CW_WALK;
	if (when_plan(ct->when, false, &ct->wpat, ct->when_why, sizeof(ct->when_why)))
		return 0;
	nn = pat_nnames(ct->when);
	ct->ctx_pats = calloc(nn + 1, sizeof(*ct->ctx_pats));
	if (!ct->ctx_pats)
		return -ENOMEM;
	for (size_t i = 0; i < nn; i++) {
		char name[PROTO_MAX_LINE];

		if (pat_name_str(ct->when, i, name, sizeof(name)) ||
		    pat_parse(name, ct->icase ? PAT_ICASE : 0, &ct->ctx_pats[ct->nctx], NULL))
			return 0; /* (cannot happen: a name parses as itself) the walk answers */
		ct->nctx++;
	}
	ct->when_mode = PCMON_CW_SHADOW;
	return 0;
}

int count_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, "count"), *it;
	struct count *ct = calloc(1, sizeof(*ct));
	const char *mode = proto_str(req, "mode", NULL);
	int n = cJSON_GetArraySize(arr);
	struct slices_cfg cfg;

	(void)gp;
	(void)c;
	if (timed_cfg(req, &cfg, rep)) {
		free(ct);
		return -EINVAL;
	}
	if (!ct || !(ct->slices = slices_new(&cfg, COUNT_WIDTH)) ||
	    !(ct->patterns = calloc(n + 1, sizeof(char *))) ||
	    !(ct->pats = calloc(n + 1, sizeof(struct pat *))) ||
	    !(ct->matched = calloc(n + 1, sizeof(bool))) ||
	    !(ct->near = calloc(n + 1, sizeof(*ct->near)))) {
		count_free(ct);
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	/* wall time unless asked: a call profile is about where the time goes, waits included */
	ct->virt = mode && !strcmp(mode, "virtual");
	ct->max_probes = proto_num(req, "max_probes", COUNT_MAX_PROBES);
	cJSON_ArrayForEach(it, arr) {
		struct pat_error pe = { 0 };
		int r = pat_parse(it->valuestring, proto_bool(req, "icase", 0) ? PAT_ICASE : 0,
				  &ct->pats[ct->npats], &pe);

		if (r) {
			*rep = r == -EINVAL ? proto_error(2, "--count %s: column %d: %s", it->valuestring,
							  pe.column, pe.msg)
					    : proto_error(1, "out of memory");
			count_free(ct);
			return r;
		}
		near_init(&ct->near[ct->npats], it->valuestring);
		ct->patterns[ct->npats++] = strdup(it->valuestring);
	}
	if (!ct->npats) {
		count_free(ct);
		*rep = proto_error(2, "--count: give a procedure pattern");
		return -EINVAL;
	}
	ct->icase = proto_bool(req, "icase", 0);
	ct->when_file = proto_bool(req, "when_from_file", 0);
	if (count_set_when(ct, proto_str(req, "when", NULL), rep)) {
		count_free(ct);
		return -EINVAL;
	}
	*out = ct;
	return 0;
}

/* ---- a procedure's cookie, and its totals (read from BPF and classed: count_when.c) */

uint64_t count_cookie(uint32_t target, size_t i, bool xol)
{
	return PCMON_COUNT_COOKIE(target, (uint32_t)i | (xol ? PCMON_COUNT_XOL : 0));
}

struct count_charge *count_charge(struct count *ct, uint32_t fn, const char *to)
{
	struct count_charge *ch;

	for (size_t i = 0; i < ct->ncharges; i++)
		if (ct->charges[i].fn == fn && !strcmp(ct->charges[i].to, to))
			return &ct->charges[i];
	if (GROW(ct->charges, ct->cap_charges, ct->ncharges + 1))
		return NULL;
	ch = &ct->charges[ct->ncharges];
	*ch = (struct count_charge){ .fn = fn, .to = strdup(to) };
	if (!ch->to)
		return NULL;
	ct->ncharges++;
	return ch;
}

/* Every total of @ct to 0 (its settings and the stacks it knows stay). */
void count_clear_totals(struct count *ct)
{
	for (size_t i = 0; i < ct->nfns; i++)
		memset(ct->fns[i].by, 0, sizeof(ct->fns[i].by));
	for (size_t i = 0; i < ct->ncharges; i++) {
		memset(&ct->charges[i].s, 0, sizeof(ct->charges[i].s));
		ct->charges[i].open = 0;
	}
	memset(&ct->unknown, 0, sizeof(ct->unknown));
}

/* ---- the totals by time: a row of the time slices per procedure */

/* @s as a row's sums, in PCMON_CSTAT_FIELDS order (count_report.c adds them back) */
static void stat_words(const struct pcmon_cstat *s, uint64_t *v)
{
	size_t k = 0;

#define WORD(f, need) v[k++] = s->f;
	PCMON_CSTAT_FIELDS(WORD)
#undef WORD
}

/* The words of a row that are extremes, not sums (and what the extremes hold): to 0. */
static void zero_extremes(uint64_t *v)
{
	static const size_t at[] = {
		offsetof(struct pcmon_cstat, max_ns),  offsetof(struct pcmon_cstat, max_acts),
		offsetof(struct pcmon_cstat, max_acts_xol), offsetof(struct pcmon_cstat, min_ns),
		offsetof(struct pcmon_cstat, min_acts), offsetof(struct pcmon_cstat, min_acts_xol),
		offsetof(struct pcmon_cstat, min_steal_ns), offsetof(struct pcmon_cstat, max_steal_ns),
		offsetof(struct pcmon_cstat, max_unplaced_ns),
	};

	for (size_t k = 0; k < ARRAY_SIZE(at); k++)
		v[at[k] / sizeof(__u64)] = 0;
}

void count_row(const struct pcmon_cstat *s, uint64_t *v)
{
	stat_words(s, v);
	zero_extremes(v); /* not sums: a window has none */
}

int count_fold(struct count *ct, size_t i, const struct pcmon_cstat *s, uint64_t wall)
{
	struct count_fn *fn = &ct->fns[i];
	uint64_t now[COUNT_WIDTH], was[COUNT_WIDTH];
	bool any = false, reset = false;
	int r = 0;

	stat_words(s, now);
	stat_words(&fn->charged, was);
	zero_extremes(now); /* not sums: neither grows nor resets */
	zero_extremes(was);
	for (size_t k = 0; k < COUNT_WIDTH; k++)
		reset |= now[k] < was[k];
	for (size_t k = 0; k < COUNT_WIDTH; k++) {
		now[k] -= reset ? 0 : was[k];
		any |= now[k] != 0;
	}
	if (any && ct->slices && slices_add(ct->slices, i, now, wall)) {
		ct->slices_lost += now[offsetof(struct pcmon_cstat, calls) / sizeof(__u64)];
		r = -ENOMEM;
	}
	fn->stat = *s;
	fn->charged = *s;
	return r;
}
