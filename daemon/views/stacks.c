// SPDX-License-Identifier: GPL-2.0-only
/*
 * stacks_: a listing's counted samples as symbolized stacks (stacks.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "stacks.h"
#include "sym.h"
#include "util.h"

struct stacks {
	const struct sym *s;
	const struct agg_list_opts *lo;
	struct groups_namer nm;	/* the instrument's names of processes, threads, cgroups */
	int by;			/* enum groups_by: each sample's group, -1: none */
	bool labels;		/* every sample's process name and cgroup (stacks_labels()) */
	int err;
	cJSON *profile, *objects, *functions, *locations, *samples;
	int32_t *obj_of;	/* sym module id -> index in objects, -1: not yet */
	size_t nobj_of;
	int32_t *fn_of;		/* sym procedure id -> index in functions, -1: not yet */
	size_t nfn_of;
	struct itab *loc_keys;	/* (sym location, innermost inline frame kept) -> index */
	struct obj_has {
		bool functions, filenames, lines;
	} *has;			/* per object: what its locations carry */
	size_t cap_has;
};

struct loc_key {
	uint32_t loc;	/* sym location id */
	uint32_t inl;	/* the innermost frame of its inline chain that was charged */
};

static const char *const kind_names[PCMON_KIND_MAX] = {
	[PCMON_KIND_ONCPU] = "on-cpu",
	[PCMON_KIND_ONCPU_KMODE] = "on-cpu",
	[PCMON_KIND_OFF_BLOCKED] = "blocked",
	[PCMON_KIND_OFF_RUNNABLE] = "runnable",
};

struct stacks *stacks_new(const struct sym *s, const struct agg_list_opts *lo,
			  const struct groups_namer *nm, int by)
{
	struct stacks *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->s = s;
	x->lo = lo;
	x->nm = *nm;
	x->by = by;
	x->nobj_of = sym_nmodules(s);
	x->nfn_of = sym_nprocs(s);
	x->obj_of = malloc((x->nobj_of + 1) * sizeof(*x->obj_of));
	x->fn_of = malloc((x->nfn_of + 1) * sizeof(*x->fn_of));
	x->loc_keys = itab_new();
	x->profile = cJSON_CreateObject();
	if (!x->obj_of || !x->fn_of || !x->loc_keys || !x->profile) {
		stacks_free(x);
		return NULL;
	}
	memset(x->obj_of, 0xff, (x->nobj_of + 1) * sizeof(*x->obj_of));
	memset(x->fn_of, 0xff, (x->nfn_of + 1) * sizeof(*x->fn_of));
	x->objects = cJSON_AddArrayToObject(x->profile, "objects");
	x->functions = cJSON_AddArrayToObject(x->profile, "functions");
	x->locations = cJSON_AddArrayToObject(x->profile, "locations");
	x->samples = cJSON_AddArrayToObject(x->profile, "samples");
	if (!x->samples) {
		stacks_free(x);
		return NULL;
	}
	return x;
}

void stacks_free(struct stacks *x)
{
	if (!x)
		return;
	cJSON_Delete(x->profile);
	itab_free(x->loc_keys);
	free(x->obj_of);
	free(x->fn_of);
	free(x->has);
	free(x);
}

static void hex(char *out, const unsigned char *b, int n)
{
	for (int i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

/* The object a location is in: its index, -1 for none (anonymous memory) or no memory. */
static int object(struct stacks *x, uint32_t module)
{
	struct sym_module_info mi;
	char bid[2 * 64 + 1] = "";
	cJSON *o;
	int idx;

	if (module == SYM_MOD_UNKNOWN || module >= x->nobj_of)
		return -1;
	if (x->obj_of[module] >= 0)
		return x->obj_of[module];
	if (sym_module_info(x->s, module, &mi))
		return -1;
	idx = cJSON_GetArraySize(x->objects);
	if (GROW(x->has, x->cap_has, (size_t)idx + 1))
		return x->err = -ENOMEM, -1;
	x->has[idx] = (struct obj_has){ 0 };
	if (mi.build_id && mi.build_id_len <= 64)
		hex(bid, mi.build_id, mi.build_id_len);
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(x->objects, o))
		return cJSON_Delete(o), x->err = -ENOMEM, -1;
	cJSON_AddStringToObject(o, "name", module == SYM_MOD_KERNEL ? "[kernel.kallsyms]" : mi.name);
	cJSON_AddStringToObject(o, "path", mi.path ? mi.path : "");
	cJSON_AddStringToObject(o, "build_id", bid);
	cJSON_AddBoolToObject(o, "kernel", module == SYM_MOD_KERNEL);
	return x->obj_of[module] = idx;
}

/* A procedure's index in functions. Code no procedure covers is named "" (the CLI's
 * [foreign]); code named from call-frame information carries its module: "libc.so.6+0x15b40". */
static int function(struct stacks *x, uint32_t proc)
{
	const struct sym_procinfo *pi = sym_proc(x->s, proc);
	const char *name = sym_str(x->s, pi->name), *module = sym_str(x->s, pi->module);
	char buf[512];
	cJSON *f;
	int idx;

	if (proc < x->nfn_of && x->fn_of[proc] >= 0)
		return x->fn_of[proc];
	if (!strncmp(name, SYM_CFI_NAME_PREFIX, strlen(SYM_CFI_NAME_PREFIX))) {
		snprintf(buf, sizeof(buf), "%s%s", module, name);
		name = buf;
	}
	idx = cJSON_GetArraySize(x->functions);
	f = cJSON_CreateObject();
	if (!f || !cJSON_AddItemToArray(x->functions, f))
		return cJSON_Delete(f), x->err = -ENOMEM, 0;
	cJSON_AddStringToObject(f, "name", name);
	cJSON_AddStringToObject(f, "module", module);
	cJSON_AddStringToObject(f, "file", sym_str(x->s, pi->file));
	cJSON_AddNumberToObject(f, "line", pi->line);
	if (proc < x->nfn_of)
		x->fn_of[proc] = idx;
	return idx;
}

/* The location of frames inl.. of sym location @loc (its inline chain from frame @inl out). */
static int location(struct stacks *x, uint32_t loc, uint32_t inl, bool kernel)
{
	struct loc_key key = { loc, inl };
	const struct sym_loc *l = sym_loc(x->s, loc);
	const uint32_t *fr;
	const struct sym_line *ln;
	cJSON *o, *lines;
	char addr[24];
	uint32_t id;
	int obj, r;

	r = itab_intern(x->loc_keys, &key, sizeof(key), &id);
	if (r < 0)
		return x->err = r, 0;
	if (r == 0)
		return (int)id;
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(x->locations, o))
		return cJSON_Delete(o), x->err = -ENOMEM, 0;
	obj = object(x, l->module);
	cJSON_AddNumberToObject(o, "object", obj);
	snprintf(addr, sizeof(addr), "0x%" PRIx64, l->addr); /* 64 bits: more than a double holds */
	cJSON_AddStringToObject(o, "address", addr);
	cJSON_AddBoolToObject(o, "kernel", kernel);
	lines = cJSON_AddArrayToObject(o, "lines");
	fr = sym_frames(x->s, l);
	ln = sym_frame_lines(x->s, l);
	for (uint32_t j = inl; j < l->nframes && lines; j++) {
		int line[2] = { function(x, fr[j]), (int)ln[j].line };

		cJSON_AddItemToArray(lines, cJSON_CreateIntArray(line, 2));
		if (obj >= 0) {
			x->has[obj].functions |= sym_proc(x->s, fr[j])->name != 0;
			x->has[obj].filenames |= ln[j].file != 0;
			x->has[obj].lines |= ln[j].line != 0;
		}
	}
	return (int)id;
}

/*
 * The group of a sample (list --by): what the exports make its root frame ("group"), and
 * the label it adds to the pprof ones: its process's command name ("comm") or its cgroup
 * ("cgroup": the path, cgroup:ID if it was gone); "pid", "tid" and "thread" are there.
 */
static void add_group(struct stacks *x, const struct agg_stack *st, cJSON *o)
{
	char title[4200], gone[32]; /* (a cgroup's path is up to PATH_MAX) */
	uint32_t name;
	uint64_t key = groups_key(&x->nm, x->by, st, &name);
	const char *n = sym_str(x->s, name);

	groups_title(x->by, key, n, title, sizeof(title));
	cJSON_AddStringToObject(o, "group", title);
	if (x->by == GROUPS_PROCESS || x->by == GROUPS_COMM) {
		n = sym_str(x->s, x->nm.process(x->nm.ctx, st->pid));
		cJSON_AddStringToObject(o, "comm", n);
	} else if (x->by == GROUPS_CGROUP && key) {
		snprintf(gone, sizeof(gone), "cgroup:%" PRIu64, key);
		cJSON_AddStringToObject(o, "cgroup", n[0] ? n : gone);
	}
}

void stacks_labels(struct stacks *x)
{
	x->labels = true;
}

/* Every sample's process name and cgroup path, as the groups of --by name them. */
static void add_labels(struct stacks *x, const struct agg_stack *st, cJSON *o)
{
	char gone[32];
	const char *n;

	if (!cJSON_GetObjectItemCaseSensitive(o, "comm"))
		cJSON_AddStringToObject(o, "comm", sym_str(x->s, x->nm.process(x->nm.ctx, st->pid)));
	if (!st->cgroup || cJSON_GetObjectItemCaseSensitive(o, "cgroup"))
		return;
	n = sym_str(x->s, x->nm.cgroup(x->nm.ctx, st->cgroup));
	snprintf(gone, sizeof(gone), "cgroup:%" PRIu64, st->cgroup);
	cJSON_AddStringToObject(o, "cgroup", n[0] ? n : gone);
}

void stacks_visit(void *ctx, const struct agg_visit *v)
{
	static const char *const charged[] = {
		[AGG_C_UNWALKABLE] = "unwalkable", [AGG_C_MARKED] = "critical",
		[AGG_C_CRITICAL] = "critical", [AGG_C_FOREIGN] = "foreign",
		[AGG_C_PROC] = "procedure",
	};
	struct stacks *x = ctx;
	const struct agg_stack *st = v->st;
	int *locs = NULL, nlocs = 0;
	cJSON *o;

	if (x->err)
		return;
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(x->samples, o)) {
		cJSON_Delete(o);
		x->err = -ENOMEM;
		return;
	}
	cJSON_AddNumberToObject(o, "count", (double)v->weight);
	cJSON_AddNumberToObject(o, "ns", (double)v->ns);
	cJSON_AddStringToObject(o, "kind", st->kind < PCMON_KIND_MAX ? kind_names[st->kind] : "?");
	cJSON_AddNumberToObject(o, "pid", st->pid);
	if (st->tid) {
		cJSON_AddNumberToObject(o, "tid", st->tid);
		cJSON_AddStringToObject(o, "thread", sym_str(x->s, x->nm.thread(x->nm.ctx, st->tid)));
	}
	if (x->by >= 0)
		add_group(x, st, o);
	if (x->labels)
		add_labels(x, st, o);
	cJSON_AddStringToObject(o, "charged", charged[v->cls]);
	if (st->flags & AGG_SF_CUT_SHORT) /* its outer frames are missing, and why */
		cJSON_AddStringToObject(o, "cut_short", agg_unwalk_names[agg_cut_reason(st)]);
	switch (v->cls) {
	case AGG_C_UNWALKABLE:
		cJSON_AddStringToObject(o, "section", "unwalkable");
		cJSON_AddStringToObject(o, "reason", st->unwalk < AGG_UNWALK_MAX ?
						     agg_unwalk_names[st->unwalk] : "?");
		break;
	case AGG_C_MARKED:
		cJSON_AddStringToObject(o, "section", sym_str(x->s, v->arg));
		break;
	case AGG_C_CRITICAL:
		cJSON_AddStringToObject(o, "section", x->lo->crit[v->arg].name);
		break;
	default:
		break;
	}
	/* the charged frames run outermost first; a location is a run of frames from one pc */
	if (v->nframes > 0 && !(locs = malloc(v->nframes * sizeof(*locs)))) {
		x->err = -ENOMEM;
		return;
	}
	for (int j = v->nframes - 1; j >= 0; j--) {
		uint32_t at = v->at[j].loc;

		if (j + 1 < v->nframes && v->at[j + 1].loc == at)
			continue; /* an outer frame of the location just taken */
		locs[nlocs++] = location(x, st->locs[at], v->at[j].inl, at >= st->nuser);
	}
	cJSON_AddItemToObject(o, "locations", nlocs ? cJSON_CreateIntArray(locs, nlocs)
						    : cJSON_CreateArray());
	free(locs);
}

int stacks_json(struct stacks *x, cJSON *out)
{
	int i = 0;
	cJSON *o;

	if (x->err)
		return x->err;
	cJSON_ArrayForEach(o, x->objects) {
		cJSON_AddBoolToObject(o, "has_functions", x->has[i].functions);
		cJSON_AddBoolToObject(o, "has_filenames", x->has[i].filenames);
		cJSON_AddBoolToObject(o, "has_line_numbers", x->has[i].lines);
		i++;
	}
	cJSON_AddItemToObject(out, "profile", x->profile);
	x->profile = NULL;
	return 0;
}
