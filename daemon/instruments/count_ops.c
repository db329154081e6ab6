// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call-counting instrument's ops (inst.h): its engine-wide life, the fields of its start
 * request and of its listing; its part of `list` (the call table, BPF's totals read first)
 * and of `targets`; the totals read into the time slices as each slice ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "count_int.h"
#include "counter.h"
#include "procs.h"
#include "proto.h"
#include "slices.h"
#include "target.h"
#include "timed.h"
#include "util.h"

static bool wanted(const cJSON *req)
{
	return cJSON_GetObjectItemCaseSensitive(req, "count") != NULL;
}

static void set_active(void *g, struct target *t, void *st, bool active)
{
	(void)g;
	(void)t;
	(void)st;
	(void)active; /* BPF reads the target's flags (tcfg) */
}

static size_t bytes(const void *st)
{
	const struct count *ct = st;

	return sizeof(*ct) + ct->cap_fns * sizeof(*ct->fns) + slices_bytes(ct->slices);
}

static struct slices *count_slices(void *st, uint64_t *last_read)
{
	struct count *ct = st;

	*last_read = ct->last_read;
	return ct->slices;
}

static void count_read(void *g, const struct target *t, void *st)
{
	count_when_collect(g, t, st);
}

/*
 * The totals stay in BPF until asked for, but for the time slices: when a slice of a
 * running target ends, what the totals gained in it is read and charged to it (the engine's
 * tick comes just after whole seconds, as for sampling), and the slices are coarsened.
 */
static const struct timed_reader reader = { INST_COUNT, count_slices, count_read };

static void tick(void *g)
{
	timed_tick_targets(g, &reader);
}

/* Before a save or a listing: every target's totals, read. */
static void sync_all(void *g)
{
	timed_sync_targets(g, &reader);
}

static void facts_json(void *g, const struct target *t, const void *st, cJSON *o)
{
	const struct count *ct = st;
	cJSON *arr = cJSON_AddArrayToObject(o, "count");

	(void)g;
	(void)t;
	for (size_t i = 0; i < ct->npats; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(ct->patterns[i]));
}

static void summary_json(void *gp, const struct target *t, void *st, cJSON *o)
{
	struct count *ct = st;
	uint64_t calls = 0;

	count_when_collect(gp, t, ct);
	for (size_t i = 0; i < ct->nfns; i++)
		for (int c = 0; c < COUNT_NCLS; c++)
			calls += ct->fns[i].by[c].calls;
	cJSON_AddNumberToObject(o, "calls", calls);
	cJSON_AddNumberToObject(o, "probed", ct->nfns);
}

/* ---- the call table (its JSON: count_report.c) */

static int list_json(void *gp, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		     cJSON **err)
{
	struct count_g *g = gp;
	struct count *ct = st;
	struct counter_prog_stats ps, *pps = NULL;
	struct timed_window w;
	uint64_t *open;
	const char *when = lr->when;
	bool other = when && (!ct->when_text || strcmp(when, ct->when_text));
	int r;

	/* the totals are by the pattern given at start; the walk's stacks are not kept
	 * named, and the shadow stack's state held the start's pattern only */
	if (other && lr->calls) {
		*err = proto_error(2, "--when: calls are classed at start, by the pattern given then (%s): give it to pcmon count, or with --count",
				   ct->when_text ? ct->when_text : "none");
		return -1;
	}
	if (timed_window_parse(lr, t->start_wall, &w, err))
		return -1;
	count_when_collect(g, t, ct);
	if (w.on) {
		/* a window's calls: the matching ones (the classes are not kept by time) */
		r = count_window_json(ct, &w, lr->sort, rep);
	} else {
		/* open now: as count_when_collect() read them; none once detached */
		open = calloc(ct->nfns * COUNT_NCLS + 1, sizeof(*open));
		if (!open)
			return -ENOMEM;
		if (!ct->detached && ct->open)
			memcpy(open, ct->open, ct->nfns * COUNT_NCLS * sizeof(*open));
		if (g->ctr && procs_bpf_stats(g->env.procs)) {
			counter_prog_stats(g->ctr, &ps);
			pps = &ps;
		}
		r = count_report_json(ct, open, pps, lr->sort, rep);
		free(open);
	}
	if (!r && other)
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(rep, "calls"), "list_when",
					"not applied: calls are classed at start, by the pattern given then");
	return r;
}

/* ---- the ops */

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	/* struct count_g starts with its struct inst_env */
	*gp = inst_g_new(env, sizeof(struct count_g), err, errlen);
	return *gp ? 0 : -ENOMEM;
}

static void close_g(void *gp)
{
	struct count_g *g = gp;

	if (!g)
		return;
	counter_close(g->ctr);
	free(g);
}

static const struct proto_field fields[] = {
	{ .name = "count", .type = PT_STRS, .max = PROTO_MAX_LINE, .opt = "--count" },
	{ .name = "max_probes", .type = PT_UINT, .min = 1, .max = 100000, .opt = "--max-probes" },
};

static const struct proto_field list_fields[] = {
	{ .name = "calls", .type = PT_BOOL },
	/* (alloc and inuse order the allocation table: the call table keeps its default) */
	{ .name = "sort", .type = PT_ENUM, .values = "self|calls|total|avg|alloc|inuse",
	  .opt = "--sort" },
};

const struct inst_ops count_ops = {
	.name = "calls",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = wanted,
	.new = count_new,
	.attach = count_attach_target,
	.set_active = set_active,
	.stop = count_attach_stop,
	.zero = count_attach_zero,
	.free = count_free,
	.event = count_attach_event,
	.prompt_events = true,
	.list_json = list_json,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.only = "calls",
	.missing = "counts no calls (start it with --count PATTERN)",
	.tick = tick,
	.sync = sync_all,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.save = count_store_save,
	.load = count_store_load,
};
