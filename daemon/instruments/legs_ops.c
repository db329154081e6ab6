// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe-node instrument's ops (inst.h): its engine-wide life, the fields of its start
 * request, of its listing and of its commands; its part of `list` (the tables, BPF's counts
 * read first) and of `targets`; the counts read into the time slices as each slice ends.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "counter.h"
#include "legs.h"
#include "legs.skel.h"
#include "legs_int.h"
#include "proto.h"
#include "ring.h"
#include "sample.h"
#include "tail.h"
#include "slices.h"
#include "target.h"
#include "timed.h"
#include "util.h"

static bool wanted(const cJSON *req)
{
	return cJSON_GetObjectItemCaseSensitive(req, "nodes") != NULL;
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
	const struct legs *lg = st;

	return sizeof(*lg) + lg->nnodes * sizeof(*lg->nodes) + lg->cap_legs * sizeof(*lg->legs) +
	       (lg->slices ? slices_bytes(lg->slices) : 0);
}

static struct slices *legs_slices(void *st, uint64_t *last_read)
{
	struct legs *lg = st;

	*last_read = lg->last_read;
	return lg->slices;
}

static void legs_read(void *g, const struct target *t, void *st)
{
	legs_attach_collect(g, t, st);
}

/*
 * The counts stay in BPF until asked for, but for the time slices: when a slice of a
 * running target ends, what they gained in it is read and charged to it (as call counting
 * does), and the slices are coarsened.
 */
static const struct timed_reader reader = { INST_LEGS, legs_slices, legs_read };

static void tick(void *gp)
{
	struct legs_g *g = gp;

	timed_tick_targets(g, &reader);
	/* tail profiles: what is known of instances long ended, forgotten */
	for (int i = 0; g->tail_rb && i < PCMON_MAX_TARGETS; i++) {
		struct target *t = g->env.targets[i];

		if (t && sample_of(t) && sample_of(t)->tails)
			tails_expire(sample_of(t)->tails, now_ns());
	}
}

/* The tails' events, read as they come (before the samples drain). */
static bool stream(void *gp)
{
	legs_attach_tails_read(gp);
	return false;
}

/* Before a save or a listing: every target's counts, read. */
static void sync_all(void *g)
{
	timed_sync_targets(g, &reader);
}

static void facts_json(void *g, const struct target *t, const void *st, cJSON *o)
{
	const struct legs *lg = st;

	(void)g;
	(void)t;
	cJSON_AddNumberToObject(o, "nodes", lg->nnodes);
}

static void summary_json(void *gp, const struct target *t, void *st, cJSON *o)
{
	struct legs *lg = st;
	uint64_t hits = 0;

	legs_attach_collect(gp, t, lg);
	for (size_t i = 0; i < lg->nnodes; i++)
		hits += lg->nodes[i].hits;
	cJSON_AddNumberToObject(o, "node_hits", hits);
}

static int list_json(void *gp, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		     cJSON **err)
{
	struct legs_g *g = gp;
	struct legs *lg = st;
	struct counter_prog_stats ps = { 0 };
	struct timed_window w;
	const char *when = lr->when;
	bool other = when && (!lg->when_text || strcmp(when, lg->when_text));
	int r;

	/* hits are told apart when they happen, by the pattern given at start */
	if (other && lr->tables) {
		*err = proto_error(2, "--when: node hits are told apart at start, by the pattern given then (%s): give it with --node",
				   lg->when_text ? lg->when_text : "none");
		return -1;
	}
	if (timed_window_parse(lr, t->start_wall, &w, err))
		return -1;
	legs_attach_collect(g, t, lg);
	if (w.on) {
		r = legs_window_json(lg, &w, rep);
		goto out;
	}
	if (g->skel) {
		struct bpf_program *progs[] = { g->skel->progs.node_hit, g->skel->progs.node_return,
						g->skel->progs.node_usdt };

		for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
			struct bpf_prog_info info = {};
			__u32 len = sizeof(info);

			if (!bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len)) {
				ps.run_cnt += info.run_cnt;
				ps.run_time_ns += info.run_time_ns;
			}
		}
	}
	r = legs_tables_json(lg, target_elapsed(t) * 1e9, g->skel ? &ps : NULL, rep);
out:
	if (!r && other)
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(rep, "tables"), "list_when",
					"not applied: hits are told apart at start, by the pattern given then");
	return r;
}

/* ---- the ops */

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	/* struct legs_g starts with its struct inst_env */
	*gp = inst_g_new(env, sizeof(struct legs_g), err, errlen);
	return *gp ? 0 : -ENOMEM;
}

static void close_g(void *gp)
{
	struct legs_g *g = gp;

	if (!g)
		return;
	ring_free(g->tail_rb);
	legs_bpf__destroy(g->skel);
	counter_close(g->ctr);
	free(g);
}

static const struct proto_field fields[] = {
	{ .name = "nodes", .type = PT_NODES, .max = PROTO_MAX_LINE, .opt = "--node" },
	{ .name = "legs", .type = PT_STRS, .max = 64, .opt = "--leg" },
	{ .name = "hists", .type = PT_STRS, .max = 128, .opt = "--hist" },
	{ .name = "track", .type = PT_ENUM, .values = "none|successor|all", .opt = "--track" },
	{ .name = "add", .type = PT_ENUM, .values = "none|successor", .opt = "--add" },
	{ .name = "tails", .type = PT_STRS, .max = 64, .opt = "--tail" },
};

static const struct proto_field list_fields[] = {
	{ .name = "tables", .type = PT_BOOL },
};

/* pcmon node|leg|hist add|del TARGET ...: the tables, edited while the target runs */
static const struct proto_field edit_fields[] = {
	{ .name = "target", .type = PT_TARGET, .required = true },
	{ .name = "op", .type = PT_ENUM, .values = "add|del|tail", .required = true },
	{ .name = "spec", .type = PT_STR, .max = 4096 },
	{ .name = "arg", .type = PT_UINT, .min = 0, .max = 5 },
	{ .name = "id", .type = PT_UINT, .min = 1, .max = 1000000 },
	{ .name = "from", .type = PT_STR, .max = 16 },
	{ .name = "to", .type = PT_STR, .max = 16 },
	{ .name = "hist", .type = PT_STR, .max = 128 },
	{ .name = "on", .type = PT_ENUM, .values = "node|leg" },
};

static const struct inst_cmd cmds[] = {
	{ "node", legs_edit, edit_fields, ARRAY_SIZE(edit_fields) },
	{ "leg", legs_edit, edit_fields, ARRAY_SIZE(edit_fields) },
	{ "hist", legs_edit, edit_fields, ARRAY_SIZE(edit_fields) },
};

const struct inst_ops legs_ops = {
	.name = "tables",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = wanted,
	.new = legs_new,
	.attach = legs_attach_target,
	.set_active = set_active,
	.stop = legs_attach_stop,
	.zero = legs_attach_zero,
	.free = legs_free,
	.list_json = list_json,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.only = "tables",
	.missing = "has no nodes (start it with --node NODE)",
	.cmds = cmds,
	.ncmds = ARRAY_SIZE(cmds),
	.stream = stream,
	.tick = tick,
	.sync = sync_all,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.save = legs_store_save,
	.load = legs_store_load,
};
