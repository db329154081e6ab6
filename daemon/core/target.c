// SPDX-License-Identifier: GPL-2.0-only
#include <stdlib.h>

#include "inst.h"
#include "target.h"
#include "util.h"

struct target *target_new(uint32_t id)
{
	struct target *t = calloc(1, sizeof(*t));

	if (t) {
		t->id = id;
		t->exe_fd = -1;
		t->cgroup_fd = -1;
	}
	return t;
}

const char *target_state_name(enum target_state s)
{
	static const char *const names[] = { "running", "paused", "stopped", "exited" };

	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

const char *target_kind_name(enum target_kind k)
{
	static const char *const names[] = { [TARGET_PID] = "pid", [TARGET_CGROUP] = "cgroup",
					     [TARGET_ALL] = "all" };

	return (unsigned)k < ARRAY_SIZE(names) ? names[k] : "?";
}

double target_elapsed(const struct target *t)
{
	uint64_t end, paused = t->paused_ns;

	if (!t->start_ns)
		return t->elapsed_saved;
	end = t->end_ns ? t->end_ns : now_ns();
	if (t->state == TARGET_PAUSED)
		paused += end - t->pause_start;
	return t->elapsed_saved + (end - t->start_ns - MIN(paused, end - t->start_ns)) / 1e9;
}

void target_restart_clock(struct target *t)
{
	t->elapsed_saved = 0;
	t->paused_ns = 0;
	t->start_ns = now_ns();
	t->pause_start = t->start_ns;
	if (t->end_ns)
		t->end_ns = t->start_ns;
}

void target_facts_json(const struct target *t, cJSON *o)
{
	cJSON_AddNumberToObject(o, "id", t->id);
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddNumberToObject(o, "owner", t->owner);
	cJSON_AddStringToObject(o, "kind", target_kind_name(t->kind));
	if (t->kind == TARGET_PID)
		cJSON_AddNumberToObject(o, "pid", t->pid);
	cJSON_AddStringToObject(o, "state", target_state_name(t->state));
	cJSON_AddNumberToObject(o, "elapsed_s", target_elapsed(t));
	cJSON_AddNumberToObject(o, "start_wall", t->start_wall);
	cJSON_AddBoolToObject(o, "children", t->children);
	if (t->published)
		cJSON_AddBoolToObject(o, "published", true);
	if (t->root_exited)
		cJSON_AddNumberToObject(o, "wait_status", t->exit_status);
}
