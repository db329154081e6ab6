// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's commands on targets: a request looked up and its fields checked, the target
 * it names found (an id, a name, or the caller's newest), and list, stop, pause, resume,
 * zero, drop and rename done; start, targets and status are in engine_start.c and
 * engine_status.c, an instrument's own commands in the instrument. Above engine.c, which
 * keeps the targets and the loop and never calls up into here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbginfo.h"
#include "engine_int.h"
#include "procs.h"
#include "proto.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Resolve the "target" argument: an id, or a name; absent means the caller's newest. */
static struct target *find_target(struct engine *e, const struct client *c, const cJSON *req,
				  cJSON **err)
{
	const cJSON *num = cJSON_GetObjectItemCaseSensitive(req, "target");
	const char *arg = proto_str(req, "target", NULL);
	struct target *found = NULL;
	char idbuf[24];

	if (cJSON_IsNumber(num)) { /* an id given as a number is as good as its text */
		snprintf(idbuf, sizeof(idbuf), "%.0f", num->valuedouble);
		arg = idbuf;
	}

	if (!arg) {
		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			struct target *t = e->targets[i];

			if (t && engine_may_access(c, t) && (!found || t->start_wall > found->start_wall))
				found = t;
		}
		if (!found)
			*err = proto_error(1, "no targets: start one with 'pcmon start --pid PID' or 'pcmon run -- CMD'");
		return found;
	}
	if (all_digits(arg)) {
		long id = strtol(arg, NULL, 10);

		if (id > 0 && id < PCMON_MAX_TARGETS && e->targets[id] &&
		    engine_may_access(c, e->targets[id]))
			return e->targets[id];
	} else {
		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			struct target *t = e->targets[i];

			if (!t || !engine_may_access(c, t) || strcmp(t->name, arg))
				continue;
			if (found) { /* every id that has the name */
				char ids[PCMON_MAX_TARGETS * 5] = "";
				size_t at = 0;

				for (int k = 1; k < PCMON_MAX_TARGETS && at < sizeof(ids); k++)
					if (e->targets[k] && engine_may_access(c, e->targets[k]) &&
					    !strcmp(e->targets[k]->name, arg))
						at += snprintf(ids + at, sizeof(ids) - at, "%s%u",
							       at ? ", " : "", k);
				*err = proto_error(2, "target name '%s' is ambiguous (ids %s): use the id",
						   arg, ids);
				return NULL;
			}
			found = t;
		}
		if (found)
			return found;
	}
	*err = proto_error(1, "no target '%s': 'pcmon targets' lists them", arg);
	return NULL;
}

/*
 * list: the target's facts, then each instrument's part (sampling's summary and procedures,
 * the call table, the probe-node tables); a field such as "calls" asks for one part alone.
 */
static cJSON *cmd_list(struct engine *e, const struct client *c, const cJSON *req)
{
	struct list_req lr;
	struct target *t;
	cJSON *rep = NULL, *err = NULL, *tj;
	int only = -1;

	if (list_req_parse(req, &lr))
		return proto_error(1, "out of memory");
	for_each_inst(i) {
		const struct inst_ops *ops = inst_table[i];

		if (ops->list_check && ops->list_check(&lr, &rep))
			goto out;
		if (only < 0 && ops->only && proto_bool(req, ops->only, 0))
			only = i;
	}
	t = find_target(e, c, req, &rep);
	if (!t)
		goto out;
	if (only >= 0 && !t->inst[only]) {
		rep = proto_error(1, "target %u \"%s\" %s", t->id, t->name, inst_table[only]->missing);
		goto out;
	}
	engine_target_sync(e, t);
	rep = proto_ok();
	tj = cJSON_AddObjectToObject(rep, "target");
	target_facts_json(t, tj);
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->facts_json(e->g[i], t, t->inst[i], tj);
	for_each_inst(i) {
		if (!t->inst[i] || !inst_table[i]->list_json || (only >= 0 && i != only))
			continue;
		if (inst_table[i]->list_json(e->g[i], t, t->inst[i], &lr, rep, &err)) {
			cJSON_Delete(rep);
			rep = err ? err : proto_error(1, "out of memory while listing");
			break;
		}
	}
out:
	list_req_free(&lr);
	return rep;
}

static cJSON *cmd_simple(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *cmd = proto_str(req, "cmd", "");
	struct target *t;
	cJSON *rep = NULL;

	t = find_target(e, c, req, &rep);
	if (!t)
		return rep;
	if (e->forget_hook && (!strcmp(cmd, "drop") || !strcmp(cmd, "zero")))
		e->forget_hook(e->forget_ctx, t->id, !strcmp(cmd, "drop"));
	if (!strcmp(cmd, "stop")) {
		engine_target_stop(e, t);
	} else if (!strcmp(cmd, "drop")) {
		engine_target_stop(e, t);
		e->targets[t->id] = NULL;
		store_remove(e->store, t->id);
		target_free(t);
		return proto_ok();
	} else if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume")) {
		bool pause = !strcmp(cmd, "pause");

		if (t->state != (pause ? TARGET_RUNNING : TARGET_PAUSED))
			return proto_error(1, "target %u is %s: only a %s target can be %sd", t->id,
					   target_state_name(t->state), pause ? "running" : "paused",
					   cmd);
		t->flags = pause ? t->flags & ~PCMON_TF_ACTIVE : t->flags | PCMON_TF_ACTIVE;
		engine_target_activate(e, t);
		if (pause)
			t->pause_start = now_ns();
		else
			t->paused_ns += now_ns() - t->pause_start;
		t->state = pause ? TARGET_PAUSED : TARGET_RUNNING;
	} else if (!strcmp(cmd, "zero")) {
		engine_target_sync(e, t); /* what BPF holds is before the zero */
		for_each_inst(i)
			if (t->inst[i])
				inst_table[i]->zero(e->g[i], t, t->inst[i]);
		target_restart_clock(t);
	}
	t->dirty = true;
	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", t->id);
	cJSON_AddStringToObject(rep, "state", target_state_name(t->state));
	return rep;
}

/*
 * rename: a target's new name, checked as start checks one. pcmond gives a stored target
 * of a name its configuration file starts again a name of its own (docs/service.md).
 */
static cJSON *cmd_rename(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *name = proto_str(req, "name", "");
	struct target *t;
	cJSON *rep = NULL;

	t = find_target(e, c, req, &rep);
	if (!t)
		return rep;
	if (!*name || !str_printable(name, sizeof(t->name) - 1))
		return proto_error(2, "--name: use printable characters, at most %zu bytes",
				   sizeof(t->name) - 1);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->dirty = true;
	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", t->id);
	cJSON_AddStringToObject(rep, "name", t->name);
	return rep;
}

#define F_BOOL(n) { .name = (n), .type = PT_BOOL }
#define F_UINT(n, lo, hi) { .name = (n), .type = PT_UINT, .min = (lo), .max = (hi) }
#define F_STR(n, len) { .name = (n), .type = PT_STR, .max = (len) }
#define F_ENUM(n, v) { .name = (n), .type = PT_ENUM, .values = (v) }
#define F_TARGET(req) { .name = "target", .type = PT_TARGET, .required = (req) }
#define F_WHEN F_STR("when", PROTO_MAX_LINE), F_BOOL("when_from_file"), F_BOOL("icase"), \
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE }

static const struct proto_field target_fields[] = { F_TARGET(true) };
static const struct proto_field rename_fields[] = {
	F_TARGET(true),
	{ .name = "name", .type = PT_STR, .max = 4096, .required = true, .opt = "--name" },
};

typedef cJSON *cmd_fn(struct engine *e, const struct client *c, const cJSON *req);

#define CMD(name, fn, fields) { name, fn, fields, ARRAY_SIZE(fields) }
#define CMD0(name, fn) { name, fn, NULL, 0 }
static const struct command {
	const char *name;
	cmd_fn *fn;
	const struct proto_field *fields;
	size_t nfields;
} commands[] = {
	CMD0("start", engine_cmd_start),	/* e->start_fields */
	CMD0("list", cmd_list),		/* e->list_fields */
	CMD("stop", cmd_simple, target_fields),
	CMD("pause", cmd_simple, target_fields),
	CMD("resume", cmd_simple, target_fields),
	CMD("zero", cmd_simple, target_fields),
	CMD("drop", cmd_simple, target_fields),
	CMD("rename", cmd_rename, rename_fields),
	{ "targets", engine_cmd_targets, engine_targets_fields, ENGINE_NTARGETS_FIELDS },
	CMD0("status", engine_cmd_status),
};

/* A command an instrument brings: the target it names, handed to the instrument. */
static cJSON *inst_command(struct engine *e, const struct client *c, const cJSON *req, int i,
			   const struct inst_cmd *ic)
{
	char err[160];
	cJSON *rep = NULL;
	struct target *t;

	if (proto_check(req, ic->fields, ic->nfields, err, sizeof(err)))
		return proto_error(2, "%s: %s", ic->name, err);
	t = find_target(e, c, req, &rep);
	return t ? ic->fn(e->g[i], t, req) : rep;
}

/*
 * One request: the command is looked up and every field checked against its table before
 * anything is done, so a wrong type or an unknown field is an error naming it, never a
 * default quietly put in its place.
 */
cJSON *engine_handle(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *cmd = proto_str(req, "cmd", "");
	const struct command *k = NULL;
	char err[160];
	cJSON *rep;

	for (size_t i = 0; i < ARRAY_SIZE(commands) && !k; i++)
		if (!strcmp(cmd, commands[i].name))
			k = &commands[i];
	for_each_inst(i) {
		for (size_t j = 0; j < inst_table[i]->ncmds && !k; j++) {
			if (strcmp(cmd, inst_table[i]->cmds[j].name))
				continue;
			rep = inst_command(e, c, req, i, &inst_table[i]->cmds[j]);
			return rep ? rep : proto_error(1, "out of memory");
		}
	}
	if (!k)
		return proto_error(2, "unknown command '%.64s'", cmd);
	if (k->fn == engine_cmd_start ? proto_check(req, e->start_fields, e->nstart_fields, err, sizeof(err))
	    : k->fn == cmd_list ? proto_check(req, e->list_fields, e->nlist_fields, err, sizeof(err))
				: proto_check(req, k->fields, k->nfields, err, sizeof(err)))
		return proto_error(2, "%s: %s", cmd, err);
	rep = k->fn(e, c, req);
	return rep ? rep : proto_error(1, "out of memory");
}
