// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument's ops (inst.h): its engine-wide life, the fields of its start
 * request, of its listing and of its `mark` command; its streams (the dwarf ring and the
 * stacks ring), the process events it heeds (a CPython to look for), its part of `targets`
 * and `status`. The path of a sample from BPF into a target's aggregate: a frame-pointer
 * sample arrives in BPF's in-kernel aggregate and is drained every tick (on_entry); a
 * --unwind dwarf sample arrives as a record of registers and copied stack on a ring and is
 * unwound (on_dsample), both in sample_drain.c. Either way it is symbolized into one
 * agg_stack (sample_convert.c) and charged to its target. The parts share sample_int.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cfitab.h"
#include "cgpath.h"
#include "groups.h"
#include "lines.h"
#include "hotspot.h"
#include "probes.h"
#include "profil.h"
#include "python.h"
#include "v8.h"
#include "sample_int.h"
#include "sampler.h"
#include "slices.h"
#include "tail.h"

/* ---- the ops */

static void close_g(void *gp);

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	struct sampler_opts so = { .max_depth = env->opts->max_depth,
				   .dwarf_stack = env->opts->dwarf_stack,
				   .counts_entries = env->opts->counts_entries,
				   .procs = env->procs };
	struct sample_g *g = inst_g_new(env, sizeof(*g), err, errlen); /* env: its first member */
	int r;

	*gp = NULL;
	if (!g)
		return -ENOMEM;
	if (!(g->section_keys = itab_new()) || !(g->cgroups = cgpath_new(NULL))) {
		close_g(g);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	g->name_gen = 1; /* (0: a name slot never read) */
	g->py = py_new(env->sym);
	g->v8 = v8_new(env->sym);
	g->hs = hs_new(env->sym);
	if (!g->py || !g->v8 || !g->hs) {
		close_g(g);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = sampler_open(&so, &g->smp, err, errlen);
	if (r) {
		close_g(g);
		return r;
	}
	sampler_py_hook(g->smp, sample_convert_python_early, g);
	if (env->opts->cfi_tables) {
		g->cfi = cfitab_new(g->smp, env->sym, env->opts->cfi_tables);
		if (!g->cfi)
			pr_warn("dwarf stacks are unwound from their copies alone (no CFI tables)");
	}
	*gp = g;
	return 0;
}

static void close_g(void *gp)
{
	struct sample_g *g = gp;

	if (!g)
		return;
	free(g->scratch);
	free(g->upcs);
	free(g->ubps);
	while (g->npending)
		sample_drain_pending_drop(g, &g->pending[0]);
	free(g->pending);
	itab_free(g->section_keys);
	free(g->section_names);
	cgpath_free(g->cgroups);
	py_free(g->py);
	v8_free(g->v8);
	hs_free(g->hs);
	free(g->natlocs);
	free(g->mergelocs);
	probes_stop(g->probes);
	cfitab_free(g->cfi);
	sampler_close(g->smp);
	free(g);
}

static int fds(void *gp, int *out, int max)
{
	struct sample_g *g = gp;

	if (max < 2)
		return 0;
	out[0] = sampler_dsamples_fd(g->smp);
	out[1] = sampler_stacks_fd(g->smp);
	return 2;
}

/* The dwarf records and new stacks BPF streamed; true when a counts map is filling up. */
static bool stream(void *gp)
{
	struct sample_g *g = gp;

	g->name_gen++;
	py_next_gen(g->py);
	v8_next_gen(g->v8);
	sample_drain_clock(g);
	sampler_poll(g->smp, sample_drain_record, g);
	return sampler_drain_wanted(g->smp);
}

/*
 * A process of a target that reads Python frames is first sampled, or loads objects (a
 * libpython opened after the first sample): is there a CPython in it
 * (sample_convert_python_look(), unless one of its first samples made the engine look
 * already)?
 */
static void runtimes_look(struct sample_g *g, struct sample *sp, const struct pcmon_event *ev);

static void event(void *gp, struct target *t, void *st, const struct pcmon_event *ev)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	/*
	 * (An exec leaves the old image's entry: BPF reads no entry of another image, and the
	 * new image's may be there already, made by one of its first records, which stream in
	 * before this event is handled.)
	 */
	if (ev->type == PCMON_EV_EXIT) {
		sampler_py_set(g->smp, ev->pid, NULL);
		sampler_js_set(g->smp, ev->pid, NULL);
		sampler_jvm_set(g->smp, ev->pid, 0, false);
		py_exited(g->py, ev->pid, now_ns());
		v8_exited(g->v8, ev->pid, now_ns());
		hs_exited(g->hs, ev->pid, now_ns());
		cfitab_exited(g->cfi, ev->pid);
		return;
	}
	if (ev->type != PCMON_EV_SAMPLED && ev->type != PCMON_EV_DLOPEN)
		return;
	runtimes_look(g, sp, ev);
	/*
	 * Dwarf stacks walked in BPF from the start, but on a whole machine or cgroup, where most
	 * processes run too briefly to be worth their tables (cfitab.h); after the looks above,
	 * which the compiling would delay, and not for a V8 or a JVM, whose stacks are copied.
	 */
	if (!sp->dwarf || v8_is_v8(g->v8, ev->pid) ||
	    (sp->java && hs_is_jvm(g->hs, ev->pid, ev->epoch)))
		return;
	if (t->kind == TARGET_PID)
		cfitab_list(g->cfi, ev->pid, ev->epoch, false, now_ns());
	else if (ev->type == PCMON_EV_DLOPEN)
		cfitab_list(g->cfi, ev->pid, ev->epoch, true, now_ns());
}

/* Is there a runtime in the process whose frames a target reads (a JVM, a V8, a CPython)? */
static void runtimes_look(struct sample_g *g, struct sample *sp, const struct pcmon_event *ev)
{
	/* a JVM: its samples sent with their stacks, whatever --unwind (docs/java.md) */
	if (sp->java) {
		hs_loaded(g->hs, ev->pid, ev->epoch);
		if (hs_new_jvm(g->hs, ev->pid))
			sampler_jvm_set(g->smp, ev->pid, ev->epoch, true);
	}
	if (!sp->python)
		return;
	/* (a library loaded later may be the V8: libnode.so, dlopen'ed by an embedder) */
	if ((ev->type == PCMON_EV_SAMPLED && v8_first_look(g->v8, ev->pid, ev->epoch)) ||
	    (ev->type == PCMON_EV_DLOPEN && !v8_is_v8(g->v8, ev->pid)))
		sample_convert_js_look(g, ev->pid, ev->epoch);
	if (ev->type == PCMON_EV_SAMPLED && !py_first_look(g->py, ev->pid, ev->epoch))
		return;
	sample_convert_python_look(g, ev->pid, ev->epoch, ev->type == PCMON_EV_DLOPEN);
}

static size_t bytes(const void *st)
{
	const struct sample *sp = st;

	return agg_bytes(sp->agg) + slices_bytes(sp->slices) +
	       (sp->tails ? tails_bytes(sp->tails) : 0);
}

static void facts_json(void *g, const struct target *t, const void *st, cJSON *o)
{
	const struct sample *sp = st;

	(void)g;
	(void)t;
	cJSON_AddStringToObject(o, "mode", sample_mode_name(sp));
	cJSON_AddNumberToObject(o, "interval_us", sp->interval_us);
	cJSON_AddNumberToObject(o, "period_us", sp->period_ns / 1000);
	cJSON_AddBoolToObject(o, "kernel", sp->kernel);
	cJSON_AddBoolToObject(o, "python", sp->python);
	cJSON_AddBoolToObject(o, "java", sp->java);
	cJSON_AddStringToObject(o, "unwind", sp->unwind[0] ? sp->unwind : "fp");
	if (sp->when_text)
		cJSON_AddStringToObject(o, "when", sp->when_text);
	sample_slices_json(sp, o);
}

/* How the stacks counted were walked: samples unwalkable and cut short, by reason (for
 * /metrics; the listing says the same of what it lists). */
static void add_walk_reasons(const struct sample *sp, cJSON *o)
{
	uint64_t unwalk[AGG_UNWALK_MAX] = { 0 }, cut[AGG_UNWALK_MAX] = { 0 }, count, ns;
	cJSON *u, *c;

	for (size_t i = 0; i < agg_count(sp->agg); i++) {
		const struct agg_stack *st = agg_get(sp->agg, i, &count, &ns);

		if (st && st->unwalk && st->unwalk < AGG_UNWALK_MAX)
			unwalk[st->unwalk] += count;
		else if (st && (st->flags & AGG_SF_CUT_SHORT))
			cut[agg_cut_reason(st)] += count;
	}
	u = cJSON_AddObjectToObject(o, "unwalkable_by_reason");
	c = cJSON_AddObjectToObject(o, "cut_short_by_reason");
	for (int r = AGG_WALK_OK + 1; r < AGG_UNWALK_MAX; r++) {
		cJSON_AddNumberToObject(u, agg_unwalk_names[r], unwalk[r]);
		cJSON_AddNumberToObject(c, agg_unwalk_names[r], cut[r]);
	}
}

static void summary_json(void *g, const struct target *t, void *st, cJSON *o)
{
	struct sample *sp = st;

	sample_attach_lost(g, t, sp);
#define ADD_FACT(f, key, need, drop, name) \
	if (!drop)                         \
		cJSON_AddNumberToObject(o, #name, sp->f);
	SAMPLE_COUNT_FIELDS(ADD_FACT)
#undef ADD_FACT
	cJSON_AddNumberToObject(o, "lost", sample_lost(sp));
	cJSON_AddNumberToObject(o, "denied", sp->lost.denied);
	add_walk_reasons(sp, o);
	sample_lost_json(sp, cJSON_AddObjectToObject(o, "lost_by_reason")); /* (for /metrics) */
}

/* The counters of status part @part (SAMPLE_STATUS_FIELDS). */
static void add_status(const struct sample_g *g, int part, cJSON *o)
{
#define ADD_STATUS(f, key, unit, at) \
	if (at == part)              \
		cJSON_AddNumberToObject(o, #key, g->f / (unit));
	SAMPLE_STATUS_FIELDS(ADD_STATUS)
#undef ADD_STATUS
}

static void status_json(void *gp, cJSON *o)
{
	struct sample_g *g = gp;
	struct probes_stats ps;
	const char *how = sampler_blocked_stacks(g->smp);
	struct v8_stats vs;
	cJSON *c;

	cJSON_AddNumberToObject(o, "max_stack_depth", sampler_max_depth(g->smp));
	/* JavaScript frames (docs/node.md): named, or not (flagged js); V8 processes read */
	v8_stats(g->v8, &vs);
	cJSON_AddNumberToObject(o, "js_frames_named", vs.named);
	cJSON_AddNumberToObject(o, "js_frames_unnamed", vs.unnamed);
	cJSON_AddNumberToObject(o, "js_processes", vs.procs);
	cJSON_AddNumberToObject(o, "dwarf_stack_bytes", sampler_dwarf_stack(g->smp));
	sampler_backlog_json(g->smp, o);
	cfitab_json(g->cfi, o);
	cJSON_AddNumberToObject(o, "min_interval_us", (sampler_min_period_ns() + 999) / 1000);
	/* how REAL takes the stacks of threads blocked in system calls, while one samples */
	if (how)
		cJSON_AddStringToObject(o, "blocked_stacks", how);
	/* how long processes went with critical-section probes pending (docs/critical.md) */
	probes_stats(g->probes, &ps);
	c = cJSON_AddObjectToObject(o, "critical_probes");
#define ADD_PROBES(f, key, unit) cJSON_AddNumberToObject(c, #key, ps.f / (unit));
	PROBES_STATS_FIELDS(ADD_PROBES)
#undef ADD_PROBES
	sampler_programs_json(g->smp, cJSON_GetObjectItemCaseSensitive(o, "programs"));

	add_status(g, 1, o);
	{
		struct hs_stats hst;

		/* Java frames (docs/java.md) */
		hs_stats(g->hs, &hst);
		c = cJSON_AddObjectToObject(o, "java");
#define ADD_HS(f) cJSON_AddNumberToObject(c, #f, hst.f);
		HS_STATS_FIELDS(ADD_HS)
#undef ADD_HS
	}
	cJSON_AddNumberToObject(o, "drain_capacity", sampler_capacity(g->smp));
	add_status(g, 2, o);
}

#define F_BOOL(n) { .name = (n), .type = PT_BOOL }
#define F_STR(n, len) { .name = (n), .type = PT_STR, .max = (len) }
#define F_ENUM(n, v) { .name = (n), .type = PT_ENUM, .values = (v) }

static const struct proto_field fields[] = {
	F_BOOL("no_sample"),
	F_ENUM("mode", "real|virtual"),
	{ .name = "interval_us", .type = PT_UINT, .min = 1, .max = 60000000, .opt = "--interval" },
	{ .name = "unwind", .type = PT_ENUM, .values = "fp|dwarf|auto", .opt = "--unwind" },
	F_BOOL("kernel"),
	F_BOOL("no_inline"),
	F_BOOL("no_python"),
	F_BOOL("no_java"),
	F_STR("when", PROTO_MAX_LINE),
	F_BOOL("when_from_file"),
	F_BOOL("icase"),
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE },
	F_STR("slices", 127),
	{ .name = "slice_kib", .type = PT_UINT, .min = 0, .max = 1 << 22, .opt = "--slice-memory" },
};

/* What a list request may say about the samples: the pattern, and the view. */
static const struct proto_field list_fields[] = {
	F_STR("when", PROTO_MAX_LINE),
	F_BOOL("when_from_file"),
	F_BOOL("icase"),
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE },
	F_BOOL("no_inline"),
	F_BOOL("stacks"),
	F_BOOL("no_kernel"),
	{ .name = "by", .type = PT_ENUM, .values = GROUPS_BY_VALUES, .opt = "--by" },
	F_STR("lines", 512),
	F_STR("offset", 512),
	{ .name = "scale", .type = PT_UINT, .min = 0, .max = PROFIL_SCALE_MAX, .opt = "--scale" },
	{ .name = "bufsiz", .type = PT_UINT, .min = 2, .max = PCS_MAX_BUFSIZ, .opt = "--bufsiz" },
	F_STR("since", 64),
	F_STR("until", 64),
	F_BOOL("timeline"),
	{ .name = "timeline_top", .type = PT_UINT, .min = 0, .max = 1000, .opt = "--top" },
	{ .name = "timeline_procs", .type = PT_STRS, .max = 4096 },
	/* what came after a mark (sample_mark.c), and let the mark go */
	{ .name = "since_mark", .type = PT_UINT, .min = 1, .max = UINT32_MAX },
	F_BOOL("drop_mark"),
	F_BOOL("remark"),	/* ... or move it to now: windows back to back (push.c) */
	F_BOOL("labels"),	/* with stacks: every sample's comm and cgroup, the host */
	/* a tailed leg's profile (tail.h) */
	{ .name = "tail", .type = PT_UINT, .min = 1, .max = 1000000, .opt = "--tail" },
	{ .name = "tail_part", .type = PT_ENUM, .values = "tail|body|abandoned" },
};

static const struct proto_field mark_fields[] = {
	{ .name = "target", .type = PT_TARGET, .required = true },
	F_BOOL("at_start"),	/* the window starts with the target (a push's first) */
};

static const struct inst_cmd cmds[] = {
	{ "mark", sample_cmd_mark, mark_fields, ARRAY_SIZE(mark_fields) },
};

const struct inst_ops sample_ops = {
	.name = "sampling",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = sample_attach_wanted,
	.new = sample_attach_new,
	.attach = sample_attach_target,
	.set_active = sample_attach_set_active,
	.stop = sample_attach_stop,
	.zero = sample_attach_zero,
	.free = sample_free,
	.list_json = sample_list,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.list_check = sample_check_list,
	.cmds = cmds,
	.ncmds = ARRAY_SIZE(cmds),
	.event = event,
	.fds = fds,
	.stream = stream,
	.tick = sample_drain_tick,
	.sync = sample_drain_all,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.status_json = status_json,
	.save = sample_save,
	.load = sample_load,
};
