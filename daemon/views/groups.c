// SPDX-License-Identifier: GPL-2.0-only
/*
 * groups_: a listing's counted samples by who took them (groups.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "groups.h"
#include "sym.h"
#include "util.h"

const char *const groups_by_names[GROUPS_BY_MAX] = {
#define GROUPS_BY_NAME(id, name) [GROUPS_##id] = #name,
	GROUPS_BY(GROUPS_BY_NAME)
#undef GROUPS_BY_NAME
};

uint64_t groups_key(const struct groups_namer *nm, int by, const struct agg_stack *st,
		    uint32_t *name)
{
	switch (by) {
	case GROUPS_PROCESS:
		*name = nm->process(nm->ctx, st->pid);
		return st->pid;
	case GROUPS_THREAD:
		*name = nm->thread(nm->ctx, st->tid);
		return st->tid;
	case GROUPS_CGROUP:
		*name = nm->cgroup(nm->ctx, st->cgroup);
		return st->cgroup;
	default: /* one command name, whoever ran it */
		*name = nm->process(nm->ctx, st->pid);
		return *name;
	}
}

int groups_by_parse(const char *name)
{
	for (int i = 0; name && i < GROUPS_BY_MAX; i++)
		if (!strcmp(name, groups_by_names[i]))
			return i;
	return -1;
}

struct groups {
	const struct sym *s;
	struct itab *keys;	/* group keys (uint64_t) -> index in all */
	struct group *all;
	size_t cap;
	struct itab *rows;	/* (group, procedure) pairs met ... */
	uint32_t *row_at;	/* ... and each one's index in its group's rows */
	size_t cap_row_at;
	struct itab *pids;	/* (group, pid) pairs met: each group's processes */
	uint32_t *stamp;	/* per procedure: the visit that last counted it deep */
	size_t cap_stamp;
	uint32_t visits;
	int err;
	bool sorted;
};

struct groups *groups_new(const struct sym *s)
{
	struct groups *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->s = s;
	g->keys = itab_new();
	g->rows = itab_new();
	g->pids = itab_new();
	if (!g->keys || !g->rows || !g->pids) {
		groups_free(g);
		return NULL;
	}
	return g;
}

void groups_free(struct groups *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; g->keys && i < itab_count(g->keys); i++)
		free(g->all[i].rows);
	free(g->all);
	itab_free(g->keys);
	itab_free(g->rows);
	free(g->row_at);
	itab_free(g->pids);
	free(g->stamp);
	free(g);
}

/* Procedure @proc's row in group @gi, made the first time; NULL: out of memory. */
static struct agg_row *row(struct groups *g, uint32_t gi, uint32_t proc)
{
	struct group *gr = &g->all[gi];
	uint32_t key[2] = { gi, proc }, id;
	int r;

	if (GROW(gr->rows, gr->cap_rows, gr->nrows + 1) ||
	    GROW(g->row_at, g->cap_row_at, (size_t)itab_count(g->rows) + 1) ||
	    (r = itab_intern(g->rows, key, sizeof(key), &id)) < 0) {
		g->err = -ENOMEM;
		return NULL;
	}
	if (r == 1) {
		g->row_at[id] = gr->nrows;
		gr->rows[gr->nrows++] = (struct agg_row){ .proc = proc };
	}
	return &gr->rows[g->row_at[id]];
}

void groups_add(struct groups *g, uint64_t key, uint32_t name, uint32_t pid,
		const struct agg_visit *v)
{
	uint32_t gi, pair[2];
	struct group *gr;
	struct agg_row *rw;
	int r;

	if (g->err || g->sorted)
		return;
	if (GROW(g->all, g->cap, (size_t)itab_count(g->keys) + 1) ||
	    (r = itab_intern(g->keys, &key, sizeof(key), &gi)) < 0) {
		g->err = -ENOMEM;
		return;
	}
	gr = &g->all[gi];
	if (r == 1)
		*gr = (struct group){ .key = key, .name = name, .pid = pid };
	pair[0] = gi;
	pair[1] = v->st->pid;
	r = itab_intern(g->pids, pair, sizeof(pair), &(uint32_t){ 0 });
	if (r < 0) {
		g->err = -ENOMEM;
		return;
	}
	gr->processes += r;
	gr->counted += v->weight;
	if (v->cls == AGG_C_FOREIGN)
		gr->foreign += v->weight;
	if (v->cls == AGG_C_PROC && (rw = row(g, gi, v->procs[v->nframes - 1])))
		rw->shallow += v->weight;
	if (v->cls != AGG_C_PROC && v->cls != AGG_C_FOREIGN)
		return;
	/* deep: every named procedure on the charged frames, once (as agg_list) */
	g->visits++;
	for (int j = 0; j < v->nframes; j++) {
		uint32_t p = v->procs[j];

		if (!sym_proc(g->s, p)->name)
			continue;
		if (p >= g->cap_stamp) {
			size_t old = g->cap_stamp;

			if (GROW(g->stamp, g->cap_stamp, (size_t)p + 1)) {
				g->err = -ENOMEM;
				return;
			}
			memset(g->stamp + old, 0, (g->cap_stamp - old) * sizeof(*g->stamp));
		}
		if (g->stamp[p] == g->visits)
			continue;
		g->stamp[p] = g->visits;
		if ((rw = row(g, gi, p)))
			rw->deep += v->weight;
	}
}

static int group_cmp(const void *x, const void *y, void *arg)
{
	const struct group *a = x, *b = y;
	const struct sym *s = arg;
	int c;

	if (a->counted != b->counted)
		return a->counted > b->counted ? -1 : 1;
	c = strcmp(sym_str(s, a->name), sym_str(s, b->name));
	return c ? c : a->key < b->key ? -1 : a->key > b->key;
}

int groups_sorted(struct groups *g, const struct group **out, size_t *n)
{
	*n = itab_count(g->keys);
	*out = g->all;
	if (g->err)
		return g->err;
	if (!g->sorted) { /* (which breaks what keys and rows index: nothing is added after) */
		for (size_t i = 0; i < *n; i++)
			agg_sort_rows(g->all[i].rows, g->all[i].nrows, 0, g->s);
		if (*n > 1)
			qsort_r(g->all, *n, sizeof(*g->all), group_cmp, (void *)g->s);
		g->sorted = true;
	}
	return 0;
}

void groups_title(enum groups_by by, uint64_t key, const char *name, char *buf, size_t len)
{
	const char *n = name && name[0] ? name : "?";

	switch (by) {
	case GROUPS_PROCESS:
	case GROUPS_THREAD:
		snprintf(buf, len, "%s %" PRIu64 " %s", groups_by_names[by], key, n);
		break;
	case GROUPS_CGROUP:
		if (name && name[0])
			snprintf(buf, len, "cgroup %s", name);
		else if (key)
			snprintf(buf, len, "cgroup cgroup:%" PRIu64, key);
		else
			snprintf(buf, len, "cgroup ?");
		break;
	default:
		snprintf(buf, len, "comm %s", n);
		break;
	}
}
