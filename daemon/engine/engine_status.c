// SPDX-License-Identifier: GPL-2.0-only
/*
 * The daemon's figures: `targets` (each target a client may see, with every instrument's
 * settings and totals) and `status` (the daemon, its symbols, its BPF programs, and each
 * instrument's engine-wide figures), with what one user may hold.
 */
#include <stdio.h>
#include <unistd.h>

#include "dbginfo.h"
#include "engine_int.h"
#include "procs.h"
#include "store.h"
#include "sym.h"
#include "util.h"

/*
 * targets: "current" (default true) reads what BPF holds first, so that the totals are up to
 * date; false is for a caller that wants only which targets there are (pcmond's HTTP server
 * and pusher, about to list one since a mark, which reads BPF itself: a drain scans every
 * bucket of the counts maps, and one a scrape is enough).
 */
const struct proto_field engine_targets_fields[ENGINE_NTARGETS_FIELDS] = {
	{ .name = "current", .type = PT_BOOL },
};

static cJSON *targets_list(struct engine *e, const struct client *c, bool current)
{
	cJSON *rep = proto_ok(), *arr = cJSON_AddArrayToObject(rep, "targets"), *o;

	if (current)
		engine_sync_all(e); /* counts wait in BPF until asked for */
	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (!t || !engine_may_access(c, t))
			continue;
		size_t bytes = 0;

		o = cJSON_CreateObject();
		target_facts_json(t, o);
		for_each_inst(k) {
			if (!t->inst[k])
				continue;
			inst_table[k]->facts_json(e->g[k], t, t->inst[k], o);
			inst_table[k]->summary_json(e->g[k], t, t->inst[k], o);
			bytes += inst_table[k]->bytes(t->inst[k]);
		}
		cJSON_AddNumberToObject(o, "memory_bytes", (double)bytes);
		store_target_json(e->store, t->id, o); /* "saved", "save_error" */
		cJSON_AddItemToArray(arr, o);
	}
	return rep;
}

/* What one user may hold, and what @c holds now. */
static void add_limits(struct engine *e, const struct client *c, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "limits");
	uint32_t mine = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		mine += e->targets[i] && e->targets[i]->owner == c->uid;
	cJSON_AddNumberToObject(o, "targets_per_user", e->o.user_targets);
	cJSON_AddNumberToObject(o, "memory_per_user_bytes", (double)e->o.user_memory);
	cJSON_AddNumberToObject(o, "targets_reserved_for_root", ENGINE_ROOT_RESERVE);
	cJSON_AddNumberToObject(o, "your_targets", mine);
	cJSON_AddNumberToObject(o, "your_memory_bytes", (double)engine_user_bytes(e, c->uid));
}

void engine_status_hook(struct engine *e, void (*fn)(void *ctx, cJSON *rep), void *ctx)
{
	e->status_hook = fn;
	e->status_ctx = ctx;
}

void engine_forget_hook(struct engine *e, void (*fn)(void *ctx, uint32_t id, bool drop),
			void *ctx)
{
	e->forget_hook = fn;
	e->forget_ctx = ctx;
}

static cJSON *status(struct engine *e)
{
	struct pcmon_gstat gs;
	struct sym_stats ss;
	cJSON *rep = proto_ok(), *o;
	int ntargets = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		ntargets += e->targets[i] != NULL;
	procs_gstat(e->procs, &gs);
	sym_stats(e->sym, &ss);
	cJSON_AddStringToObject(rep, "version", PCMON_VERSION);
	cJSON_AddNumberToObject(rep, "pid", getpid());
	cJSON_AddNumberToObject(rep, "uptime_s", (now_ns() - e->started_ns) / 1e9);
	cJSON_AddNumberToObject(rep, "targets", ntargets);
#define ADD_GSTAT(f, status) if (status) cJSON_AddNumberToObject(rep, #f, gs.f);
	PCMON_GSTAT_FIELDS(ADD_GSTAT)
#undef ADD_GSTAT
	o = cJSON_AddObjectToObject(rep, "symbols");
#define ADD_SYM(f, status, key) if (status) cJSON_AddNumberToObject(o, #key, ss.f);
	SYM_STATS_FIELDS(ADD_SYM)
#undef ADD_SYM
	dbginfo_status_json(e->dbg, rep);
	if (e->status_hook)
		e->status_hook(e->status_ctx, rep);
	/* how each object's frames are unwound: with its CFI (dwarf), or by frame pointer */
	o = cJSON_AddArrayToObject(rep, "objects");
	for (uint32_t m = 0; m < sym_nmodules(e->sym); m++) {
		struct sym_module_info mi;
		cJSON *x;

		if (sym_module_info(e->sym, m, &mi) || !mi.path[0] || (!mi.cfi_known && !mi.usdt))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", mi.path);
		cJSON_AddStringToObject(x, "unwind", mi.eh_frame || mi.debug_frame ? "dwarf" : "fp");
		cJSON_AddStringToObject(x, "cfi", mi.eh_frame ? ".eh_frame" : mi.debug_frame ? ".debug_frame" : "none");
		cJSON_AddNumberToObject(x, "frames_unwound", mi.unwinds);
		cJSON_AddNumberToObject(x, "frames_without_cfi", mi.unwind_misses);
		cJSON_AddBoolToObject(x, "critical_probes", mi.usdt);
		cJSON_AddItemToArray(o, x);
	}
	/* without statistics the kernel counts no runs: say so rather than show zeros */
	cJSON_AddBoolToObject(rep, "bpf_stats", procs_bpf_stats(e->procs));
	procs_programs_json(e->procs, cJSON_AddArrayToObject(rep, "programs"));
	for_each_inst(i)
		if (inst_table[i]->status_json)
			inst_table[i]->status_json(e->g[i], rep);
	/* saves, how often, and the last save error */
	store_status_json(e->store, engine_save_interval_ns(e), rep);
	return rep;
}

cJSON *engine_cmd_targets(struct engine *e, const struct client *c, const cJSON *req)
{
	return targets_list(e, c, proto_bool(req, "current", true));
}

/*
 * status. A user other than root sees the daemon's own figures and her targets, but not the
 * paths of the objects other users' processes map, nor their targets.
 */
cJSON *engine_cmd_status(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = status(e);

	(void)req;
	if (!rep)
		return NULL;
	if (c->uid != 0) {
		int mine = 0;

		for (int i = 1; i < PCMON_MAX_TARGETS; i++)
			mine += e->targets[i] && e->targets[i]->owner == c->uid;
		cJSON_DeleteItemFromObjectCaseSensitive(rep, "objects");
		/* the last save error names another user's target and path; hers are in
		 * `pcmon targets` (saved, save_error) */
		{
			cJSON *st = cJSON_GetObjectItemCaseSensitive(rep, "store");

			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error");
			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error_age_s");
			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error_wall");
		}
		cJSON_ReplaceItemInObjectCaseSensitive(rep, "targets", cJSON_CreateNumber(mine));
	}
	add_limits(e, c, rep);
	return rep;
}

