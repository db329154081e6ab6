// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pat.h"
#include "proto.h"
#include "sampler.h"
#include "sym.h"
#include "target.h"
#include "util.h"

struct target *target_new(uint32_t id)
{
	struct target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->id = id;
	t->agg = agg_new();
	if (!t->agg) {
		free(t);
		return NULL;
	}
	return t;
}

void target_free(struct target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncrit; i++) {
		free(t->crit[i].name);
		free(t->crit[i].text);
		pat_free(t->crit[i].pat);
	}
	free(t->crit);
	free(t->when_text);
	pat_free(t->when);
	agg_free(t->agg);
	free(t);
}

const char *target_state_name(enum target_state s)
{
	static const char *const names[] = { "running", "paused", "stopped", "exited" };

	return s < ARRAY_SIZE(names) ? names[s] : "?";
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

uint64_t target_lost(const struct target *t)
{
	return t->lost.lost_counts_full + t->lost.lost_offcpu_full + t->lost.lost_ring_full +
	       t->lost_oom + t->lost_memory;
}

void target_accumulate_lost(struct target *t, struct sampler *smp)
{
	struct pcmon_tstat now;

	if (!t->holds_period)
		return; /* released: the BPF counters belong to nobody now */
	sampler_tstat(smp, t->id, &now);
	t->lost.lost_counts_full = now.lost_counts_full - t->lost_base.lost_counts_full;
	t->lost.lost_offcpu_full = now.lost_offcpu_full - t->lost_base.lost_offcpu_full;
	t->lost.lost_ring_full = now.lost_ring_full - t->lost_base.lost_ring_full;
	t->lost.denied = now.denied - t->lost_base.denied;
}

void target_zero(struct target *t, struct sampler *smp)
{
	agg_zero(t->agg);
	t->seen_samples = t->lost_oom = t->lost_memory = 0;
	memset(&t->lost, 0, sizeof(t->lost));
	if (t->holds_period)
		sampler_tstat(smp, t->id, &t->lost_base);
	t->elapsed_saved = 0;
	t->paused_ns = 0;
	t->start_ns = now_ns();
	t->pause_start = t->start_ns;
	if (t->end_ns)
		t->end_ns = t->start_ns;
}

/* ---- critical sections */

static int parse_critical(const char *spec, int icase, char **name, struct pat **pat, cJSON **err)
{
	const char *eq = strchr(spec, '=');
	struct pat_error pe = { 0 };
	int r;

	if (!eq || eq == spec) {
		*err = proto_error(2, "--critical '%s': expected NAME=PATTERN", spec);
		return -EINVAL;
	}
	r = pat_parse(eq + 1, icase ? PAT_ICASE : 0, pat, &pe);
	if (r) {
		*err = r == -EINVAL ? proto_error(2, "--critical %.*s: column %d: %s", (int)(eq - spec),
						  spec, pe.column, pe.msg)
				    : proto_error(1, "out of memory");
		return r;
	}
	*name = strndup(spec, eq - spec);
	return 0;
}

int target_set_criticals(struct target *t, const cJSON *arr, cJSON **err)
{
	const cJSON *it;
	size_t cap = 0;

	cJSON_ArrayForEach(it, arr) {
		struct target_crit c = { 0 };

		if (!cJSON_IsString(it)) {
			*err = proto_error(2, "--critical: expected NAME=PATTERN strings");
			return -EINVAL;
		}
		if (t->ncrit >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(it->valuestring, t->icase, &c.name, &c.pat, err))
			return -EINVAL;
		c.text = strdup(strchr(it->valuestring, '=') + 1);
		if (GROW(t->crit, cap, t->ncrit + 1)) {
			pat_free(c.pat);
			free(c.name);
			free(c.text);
			*err = proto_error(1, "out of memory");
			return -ENOMEM;
		}
		t->crit[t->ncrit++] = c;
	}
	return 0;
}

int target_list_criticals(const struct target *t, const cJSON *arr, int icase,
			  struct agg_critical **out, size_t *n, cJSON **err)
{
	struct agg_critical *c = calloc(t->ncrit + cJSON_GetArraySize(arr) + 1, sizeof(*c));
	const cJSON *it;

	*out = c;
	*n = 0;
	if (!c) {
		*err = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->ncrit; i++)
		c[(*n)++] = (struct agg_critical){ t->crit[i].name, t->crit[i].pat };
	cJSON_ArrayForEach(it, arr) {
		char *name;
		struct pat *p;

		if (!cJSON_IsString(it)) {
			*err = proto_error(2, "--critical: expected NAME=PATTERN strings");
			return -EINVAL;
		}
		if (*n >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(it->valuestring, icase, &name, &p, err))
			return -EINVAL;
		c[(*n)++] = (struct agg_critical){ name, p };
	}
	return 0;
}

void target_free_criticals(const struct target *t, struct agg_critical *c, size_t n)
{
	for (size_t i = t->ncrit; i < n; i++) {
		free((char *)c[i].name);
		pat_free((struct pat *)c[i].pat);
	}
	free(c);
}

/* ---- JSON */

static const char *mode_name(const struct target *t)
{
	return t->real ? "REAL" : "VIRTUAL";
}

static void add_target_facts(const struct target *t, cJSON *o)
{
	cJSON_AddNumberToObject(o, "id", t->id);
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "kind", t->kind == TARGET_PID    ? "pid"
					   : t->kind == TARGET_CGROUP ? "cgroup"
								      : "all");
	if (t->kind == TARGET_PID)
		cJSON_AddNumberToObject(o, "pid", t->pid);
	cJSON_AddStringToObject(o, "mode", mode_name(t));
	cJSON_AddNumberToObject(o, "interval_us", t->period_ns / 1000);
	cJSON_AddStringToObject(o, "state", target_state_name(t->state));
	cJSON_AddNumberToObject(o, "elapsed_s", target_elapsed(t));
	cJSON_AddBoolToObject(o, "kernel", t->kernel);
	cJSON_AddStringToObject(o, "unwind", t->unwind[0] ? t->unwind : "fp");
	cJSON_AddBoolToObject(o, "children", t->children);
	if (t->root_exited)
		cJSON_AddNumberToObject(o, "wait_status", t->exit_status);
	if (t->when_text)
		cJSON_AddStringToObject(o, "when", t->when_text);
}

cJSON *target_summary_json(const struct target *t)
{
	cJSON *o = cJSON_CreateObject();

	add_target_facts(t, o);
	cJSON_AddNumberToObject(o, "samples", t->seen_samples);
	cJSON_AddNumberToObject(o, "lost", target_lost(t));
	cJSON_AddNumberToObject(o, "denied", t->lost.denied);
	return o;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * a / b : 0;
}

void target_list_json(const struct target *t, const struct sym *s, struct agg_list *l,
		      const char *when, const struct agg_critical *crit, size_t ncrit, cJSON *out)
{
	cJSON *tj = cJSON_AddObjectToObject(out, "target"), *sum, *arr, *o;
	struct agg_row *deep;
	uint32_t *pos;
	size_t n = l->nrows;

	add_target_facts(t, tj);
	sum = cJSON_AddObjectToObject(out, "summary");
	cJSON_AddNumberToObject(sum, "interrupts", l->interrupts);
	cJSON_AddNumberToObject(sum, "counted", l->counted);
	cJSON_AddNumberToObject(sum, "not_matching", l->not_matching);
	cJSON_AddNumberToObject(sum, "foreign", l->foreign);
	cJSON_AddNumberToObject(sum, "kernel_mode", l->kernel_mode);
	cJSON_AddNumberToObject(sum, "cut_short", l->cut_short);
	cJSON_AddNumberToObject(sum, "oncpu", l->oncpu);
	cJSON_AddNumberToObject(sum, "off_blocked", l->off_blocked);
	cJSON_AddNumberToObject(sum, "off_runnable", l->off_runnable);
	cJSON_AddNumberToObject(sum, "off_blocked_ns", l->off_blocked_ns);
	cJSON_AddNumberToObject(sum, "off_runnable_ns", l->off_runnable_ns);
	cJSON_AddNumberToObject(sum, "lost", target_lost(t));
	cJSON_AddNumberToObject(sum, "denied", t->lost.denied);
	cJSON_AddNumberToObject(sum, "handed_over", t->handed_over);
	o = cJSON_AddObjectToObject(sum, "lost_by_reason");
	cJSON_AddNumberToObject(o, "counts_map_full", t->lost.lost_counts_full);
	cJSON_AddNumberToObject(o, "offcpu_map_full", t->lost.lost_offcpu_full);
	cJSON_AddNumberToObject(o, "out_of_memory", t->lost_oom);
	cJSON_AddNumberToObject(o, "memory_limit", t->lost_memory);
	cJSON_AddNumberToObject(o, "sample_ring_full", t->lost.lost_ring_full);
	if (when)
		cJSON_AddStringToObject(sum, "when", when);
	cJSON_AddNumberToObject(sum, "marks_pending", l->marks_pending);

	arr = cJSON_AddArrayToObject(sum, "critical");
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", "unwalkable");
	cJSON_AddNumberToObject(o, "count", l->unwalk[AGG_WALK_OK]);
	cJSON_AddNumberToObject(o, "percent", pct(l->unwalk[AGG_WALK_OK], l->counted));
	{
		cJSON *r = cJSON_AddObjectToObject(o, "reasons");

		for (int i = 1; i < AGG_UNWALK_MAX; i++)
			cJSON_AddNumberToObject(r, agg_unwalk_names[i], l->unwalk[i]);
	}
	cJSON_AddItemToArray(arr, o);
	for (size_t i = 0; i < ncrit && i < AGG_MAX_CRIT; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", crit[i].name);
		cJSON_AddNumberToObject(o, "count", l->crit[i]);
		cJSON_AddNumberToObject(o, "percent", pct(l->crit[i], l->counted));
		cJSON_AddItemToArray(arr, o);
	}

	for (size_t i = 0; i < l->nmarked; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", sym_str(s, l->marked[i].name));
		cJSON_AddNumberToObject(o, "count", l->marked[i].count);
		cJSON_AddNumberToObject(o, "percent", pct(l->marked[i].count, l->counted));
		cJSON_AddBoolToObject(o, "marked", 1);
		cJSON_AddItemToArray(arr, o);
	}

	agg_sort_rows(l->rows, n, 0, s);
	arr = cJSON_AddArrayToObject(out, "procedures");
	for (size_t i = 0; i < n; i++) {
		const struct sym_procinfo *pi = sym_proc(s, l->rows[i].proc);

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "procedure", sym_str(s, pi->full));
		cJSON_AddStringToObject(o, "module", sym_str(s, pi->module));
		cJSON_AddStringToObject(o, "name", sym_str(s, pi->name));
		cJSON_AddNumberToObject(o, "shallow", l->rows[i].shallow);
		cJSON_AddNumberToObject(o, "deep", l->rows[i].deep);
		cJSON_AddNumberToObject(o, "shallow_pct", pct(l->rows[i].shallow, l->counted));
		cJSON_AddNumberToObject(o, "deep_pct", pct(l->rows[i].deep, l->counted));
		if (pi->file)
			cJSON_AddStringToObject(o, "file", sym_str(s, pi->file));
		if (pi->line)
			cJSON_AddNumberToObject(o, "line", pi->line);
		cJSON_AddItemToArray(arr, o);
	}
	/* the deep table's order, as indices into "procedures" */
	arr = cJSON_AddArrayToObject(out, "deep_order");
	deep = malloc((n ? n : 1) * sizeof(*deep));
	pos = calloc(sym_nprocs(s) + 1, sizeof(*pos));
	if (deep && pos) {
		for (size_t i = 0; i < n; i++)
			pos[l->rows[i].proc] = i;
		if (n)
			memcpy(deep, l->rows, n * sizeof(*deep));
		agg_sort_rows(deep, n, 1, s);
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(pos[deep[i].proc]));
	}
	free(deep);
	free(pos);
}
