// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument (docs/sampling.md): timer samples of a target's threads, their
 * stacks symbolized into an aggregate (agg.h) that every view reads. Here, the base the
 * instrument's other parts call into: a target's state (sample.h), made and freed, the
 * samples it lost, its critical sections (--critical), the names of the unwinding methods.
 * Settings from a request and a target's life in BPF are in sample_attach.c, draining BPF
 * in sample_drain.c, the ops table in sample_ops.c; the parts share sample_int.h, which
 * this file does not include: it calls none of them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pat.h"
#include "proto.h"
#include "sample.h"
#include "slices.h"
#include "tail.h"
#include "util.h"

const char *const sample_unwind_names[3] = { "fp", "dwarf", "auto" };

struct sample *sample_new(void)
{
	struct sample *sp = calloc(1, sizeof(*sp));
	struct slices_cfg cfg;

	slices_cfg_parse(SLICES_DEFAULT, &cfg, NULL, 0); /* (it parses) */
	cfg.budget = SLICES_DEFAULT_BUDGET;
	/* a stack's samples and off-CPU nanoseconds */
	if (sp && (!(sp->agg = agg_new()) || !(sp->slices = slices_new(&cfg, 2)) ||
		   !(sp->threads.keys = itab_new()) ||
		   !(sp->processes.keys = itab_new()) || !(sp->cgroups.keys = itab_new()))) {
		sample_free(sp);
		sp = NULL;
	}
	if (sp)
		sp->python = true;
	return sp;
}

static void names_free(struct sample_names *n)
{
	itab_free(n->keys);
	free(n->names);
	free(n->read);
}

/* The windows open on the samples (sample_mark.c): their snapshots. */
static void marks_free(struct sample_marks *m)
{
	for (int i = 0; m && i < SAMPLE_MARKS; i++)
		agg_snap_free(&m->m[i].snap);
	free(m);
}

void sample_free(void *st)
{
	struct sample *sp = st;

	if (!sp)
		return;
	for (size_t i = 0; i < sp->ncrit; i++) {
		free(sp->crit[i].name);
		free(sp->crit[i].text);
		pat_free(sp->crit[i].pat);
	}
	free(sp->crit);
	free(sp->when_text);
	pat_free(sp->when);
	tails_free(sp->tails);
	agg_free(sp->agg);
	marks_free(sp->marks);
	slices_free(sp->slices);
	names_free(&sp->threads);
	names_free(&sp->processes);
	names_free(&sp->cgroups);
	free(sp);
}

void sample_lost_json(const struct sample *sp, cJSON *o)
{
	/* the engine's drops, then BPF's */
#define ADD_OWN(f, key, need, drop, name) \
	if (drop)                         \
		cJSON_AddNumberToObject(o, #name, sp->f);
	SAMPLE_COUNT_FIELDS(ADD_OWN)
#undef ADD_OWN
#define ADD_BPF(f, since, drop, name) \
	if (drop)                     \
		cJSON_AddNumberToObject(o, #name, sp->lost.f);
	PCMON_TSTAT_FIELDS(ADD_BPF)
#undef ADD_BPF
}

uint64_t sample_lost(const struct sample *sp)
{
	uint64_t n = 0;

#define ADD_OWN(f, key, need, drop, name) n += drop ? sp->f : 0;
	SAMPLE_COUNT_FIELDS(ADD_OWN)
#undef ADD_OWN
#define ADD_LOST(f, since, drop, name) n += drop ? sp->lost.f : 0;
	PCMON_TSTAT_FIELDS(ADD_LOST)
#undef ADD_LOST
	return n;
}

const char *sample_mode_name(const struct sample *sp)
{
	return sp->real ? "REAL" : "VIRTUAL";
}

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

int sample_set_criticals(struct sample *sp, const cJSON *arr, cJSON **err)
{
	const cJSON *it;
	size_t cap = 0;

	cJSON_ArrayForEach(it, arr) {
		struct sample_crit c = { 0 };

		if (!cJSON_IsString(it)) {
			*err = proto_error(2, "--critical: expected NAME=PATTERN strings");
			return -EINVAL;
		}
		if (sp->ncrit >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(it->valuestring, sp->icase, &c.name, &c.pat, err))
			return -EINVAL;
		c.text = strdup(strchr(it->valuestring, '=') + 1);
		if (GROW(sp->crit, cap, sp->ncrit + 1)) {
			pat_free(c.pat);
			free(c.name);
			free(c.text);
			*err = proto_error(1, "out of memory");
			return -ENOMEM;
		}
		sp->crit[sp->ncrit++] = c;
	}
	return 0;
}

int sample_list_criticals(const struct sample *sp, const char *const *specs, size_t nspecs,
			  int icase, struct agg_critical **out, size_t *n, cJSON **err)
{
	struct agg_critical *c = calloc(sp->ncrit + nspecs + 1, sizeof(*c));

	*out = c;
	*n = 0;
	if (!c) {
		*err = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < sp->ncrit; i++)
		c[(*n)++] = (struct agg_critical){ sp->crit[i].name, sp->crit[i].pat };
	for (size_t i = 0; i < nspecs; i++) {
		char *name;
		struct pat *p;

		if (*n >= AGG_MAX_CRIT) {
			*err = proto_error(2, "--critical: at most %d sections", AGG_MAX_CRIT);
			return -EINVAL;
		}
		if (parse_critical(specs[i], icase, &name, &p, err))
			return -EINVAL;
		c[(*n)++] = (struct agg_critical){ name, p };
	}
	return 0;
}

void sample_free_criticals(const struct sample *sp, struct agg_critical *c, size_t n)
{
	for (size_t i = sp->ncrit; i < n; i++) {
		free((char *)c[i].name);
		pat_free((struct pat *)c[i].pat);
	}
	free(c);
}
