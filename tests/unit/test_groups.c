// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/groups.c (pcmon list --by): the samples of a listing charged to
 * groups as agg_list() charges them, each group's shallow and deep counts as LIST's, the
 * groups' counted samples adding up to the listing's, and the order: by counted samples,
 * then by name. Stacks are built from symbolized locations without ELF files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "groups.h"
#include "pat.h"
#include "sym.h"
#include "util.h"

#define MAXLOCS 16

struct fx {
	struct sym *s;
	struct agg *a;
	struct agg_list l;
	struct groups *g;
	struct itab *toks;	/* frame name -> location */
	uint32_t loc[64];
	enum groups_by by;
	struct pat *when;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->s = sym_new(0);
	f->a = agg_new();
	f->g = f->s ? groups_new(f->s) : NULL;
	f->toks = itab_new();
	if (!f->s || !f->a || !f->g || !f->toks)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	agg_list_free(&f->l);
	groups_free(f->g);
	itab_free(f->toks);
	pat_free(f->when);
	agg_free(f->a);
	sym_free(f->s);
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* The location of procedure @name of module prog ("?": code no procedure covers). */
static uint32_t loc_of(struct fx *f, const char *name)
{
	const char *procs[1] = { name };
	uint32_t id;
	int r = itab_str(f->toks, name, &id);

	assert_true(r >= 0 && id < ARRAY_SIZE(f->loc));
	if (r == 1)
		assert_int_equal(sym_intern_loc(f->s, "prog", 0x1000 + 16 * id, procs, NULL, NULL,
						strcmp(name, "?") ? 1 : 0, &f->loc[id]),
				 0);
	return f->loc[id];
}

/* @count on-CPU samples of thread @tid of @pid in cgroup @cg, at "outer inner ..." */
static void add_section(struct fx *f, uint32_t pid, uint32_t tid, uint64_t cg, const char *spec,
			uint64_t count, const char *section)
{
	struct agg_stack *st = calloc(1, agg_stack_size(MAXLOCS));
	char buf[256], *tok, *save;

	assert_non_null(st);
	*st = (struct agg_stack){ .kind = PCMON_KIND_ONCPU, .pid = pid, .tid = tid, .cgroup = cg };
	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		assert_true(st->nuser < MAXLOCS);
		st->locs[st->nuser++] = loc_of(f, tok);
	}
	if (section)
		assert_int_equal(sym_intern_str(f->s, section, &st->section), 0);
	if (!st->nuser)
		st->unwalk = AGG_UNWALK_FAULT;
	assert_int_equal(agg_add(f->a, st, count, 0), 0);
	free(st);
}

static void add(struct fx *f, uint32_t pid, uint32_t tid, uint64_t cg, const char *spec,
		uint64_t count)
{
	add_section(f, pid, tid, cg, spec, count, NULL);
}

/* The names the engine would know: "p<pid>" for a process (p1 and p2 share "shared"),
 * "t<tid>" for a thread, "/cg<id>" for a cgroup. */
static uint32_t name(struct fx *f, const char *fmt, uint64_t n)
{
	char buf[32];
	uint32_t id;

	if (strchr(fmt, '%'))
		snprintf(buf, sizeof(buf), fmt, (unsigned long long)n);
	else
		snprintf(buf, sizeof(buf), "%s", fmt);
	assert_int_equal(sym_intern_str(f->s, buf, &id), 0);
	return id;
}

static void visit(void *ctx, const struct agg_visit *v)
{
	struct fx *f = ctx;
	const struct agg_stack *st = v->st;
	uint32_t comm = st->pid <= 2 ? name(f, "shared", 0) : name(f, "p%llu", st->pid);

	switch (f->by) {
	case GROUPS_PROCESS:
		groups_add(f->g, st->pid, comm, st->pid, v);
		break;
	case GROUPS_THREAD:
		groups_add(f->g, st->tid, name(f, "t%llu", st->tid), st->pid, v);
		break;
	case GROUPS_CGROUP:
		groups_add(f->g, st->cgroup, name(f, "/cg%llu", st->cgroup), st->pid, v);
		break;
	default:
		groups_add(f->g, comm, comm, st->pid, v);
		break;
	}
}

/* List by @by; the groups' counted samples add up to the listing's, each procedure's
 * counts over the groups to its counts in the listing. */
static const struct group *list(struct fx *f, enum groups_by by, size_t *n)
{
	struct agg_list_opts lo = { .period_ns = 1000, .when = f->when, .visit = visit,
				    .visit_ctx = f };
	const struct group *gs;
	uint64_t sum = 0;

	f->by = by;
	assert_int_equal(agg_list(f->a, f->s, &lo, &f->l), 0);
	assert_int_equal(groups_sorted(f->g, &gs, n), 0);
	for (size_t i = 0; i < *n; i++) {
		sum += gs[i].counted;
		assert_true(i == 0 || gs[i - 1].counted >= gs[i].counted);
	}
	assert_int_equal(sum, f->l.counted);
	for (size_t r = 0; r < f->l.nrows; r++) {
		uint64_t shallow = 0, deep = 0;

		for (size_t i = 0; i < *n; i++)
			for (size_t j = 0; j < gs[i].nrows; j++)
				if (gs[i].rows[j].proc == f->l.rows[r].proc) {
					shallow += gs[i].rows[j].shallow;
					deep += gs[i].rows[j].deep;
				}
		assert_int_equal(shallow, f->l.rows[r].shallow);
		assert_int_equal(deep, f->l.rows[r].deep);
	}
	return gs;
}

static const struct agg_row *row(struct fx *f, const struct group *gr, const char *proc)
{
	for (size_t j = 0; j < gr->nrows; j++)
		if (!strcmp(sym_str(f->s, sym_proc(f->s, gr->rows[j].proc)->name), proc))
			return &gr->rows[j];
	return NULL;
}

#define ASSERT_ROW(f, gr, proc, sh, dp)                             \
	do {                                                        \
		const struct agg_row *r_ = row((f), (gr), (proc));  \
		assert_non_null(r_);                                \
		assert_int_equal(r_->shallow, (sh));                \
		assert_int_equal(r_->deep, (dp));                   \
	} while (0)

/* By process: each its own counts, the busiest first; rows sorted as LIST's. */
static void test_by_process(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	add(f, 3, 3, 10, "main work", 60);
	add(f, 4, 4, 10, "main other", 30);
	add(f, 4, 5, 11, "main work leaf", 10);
	add(f, 4, 5, 11, "main work", 5);
	gs = list(f, GROUPS_PROCESS, &n);
	assert_int_equal(n, 2);
	assert_int_equal(gs[0].key, 3);
	assert_int_equal(gs[0].counted, 60);
	assert_int_equal(gs[0].processes, 1);
	assert_int_equal(gs[1].key, 4);
	assert_int_equal(gs[1].pid, 4);
	assert_int_equal(gs[1].counted, 45);
	ASSERT_ROW(f, &gs[1], "other", 30, 30);
	ASSERT_ROW(f, &gs[1], "leaf", 10, 10);
	ASSERT_ROW(f, &gs[1], "work", 5, 15);
	ASSERT_ROW(f, &gs[1], "main", 0, 45);
	assert_string_equal(sym_str(f->s, sym_proc(f->s, gs[1].rows[0].proc)->name), "other");
	assert_null(row(f, &gs[0], "other"));
}

/* By comm: the processes of one name make one group, and it says how many. */
static void test_by_comm_merges_processes(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	add(f, 1, 1, 10, "main work", 20);
	add(f, 2, 2, 10, "main work", 25);
	add(f, 3, 3, 10, "main work", 40);
	gs = list(f, GROUPS_COMM, &n);
	assert_int_equal(n, 2);
	assert_string_equal(sym_str(f->s, gs[0].name), "shared");
	assert_int_equal(gs[0].counted, 45);
	assert_int_equal(gs[0].processes, 2);
	ASSERT_ROW(f, &gs[0], "work", 45, 45);
	assert_string_equal(sym_str(f->s, gs[1].name), "p3");
	assert_int_equal(gs[1].processes, 1);
}

/* By thread and by cgroup; equal counts go by name, then by key. */
static void test_by_thread_and_cgroup_ties(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	add(f, 3, 9, 12, "main work", 10);
	add(f, 3, 8, 11, "main work", 10);
	add(f, 3, 7, 11, "main other", 10);
	gs = list(f, GROUPS_THREAD, &n);
	assert_int_equal(n, 3);
	assert_string_equal(sym_str(f->s, gs[0].name), "t7");
	assert_string_equal(sym_str(f->s, gs[2].name), "t9");
	assert_int_equal(gs[2].pid, 3);
}

static void test_by_cgroup(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	add(f, 3, 9, 12, "main work", 10);
	add(f, 4, 8, 11, "main work", 10);
	add(f, 3, 7, 11, "main other", 10);
	gs = list(f, GROUPS_CGROUP, &n);
	assert_int_equal(n, 2);
	assert_string_equal(sym_str(f->s, gs[0].name), "/cg11");
	assert_int_equal(gs[0].counted, 20);
	assert_int_equal(gs[0].processes, 2);
	ASSERT_ROW(f, &gs[0], "main", 0, 20);
	assert_int_equal(gs[1].key, 12);
}

/* Sections' and unwalkable samples count in their group, with no procedure; foreignPcs too,
 * with deep counts for the named frames above. */
static void test_sections_and_foreign(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	add_section(f, 3, 3, 10, "main work", 7, "gc");
	add(f, 3, 3, 10, "", 2);
	add(f, 3, 3, 10, "main ?", 4);
	add(f, 4, 4, 10, "main work", 1);
	gs = list(f, GROUPS_PROCESS, &n);
	assert_int_equal(n, 2);
	assert_int_equal(gs[0].counted, 13);
	assert_int_equal(gs[0].foreign, 4);
	ASSERT_ROW(f, &gs[0], "main", 0, 4);
	assert_null(row(f, &gs[0], "work"));
}

/* WHEN first, as in LIST: what does not match is in no group. */
static void test_when_applies_first(void **state)
{
	struct fx *f = *state;
	const struct group *gs;
	size_t n;

	assert_int_equal(pat_parse("*->prog.work", 0, &f->when, NULL), 0);
	add(f, 3, 3, 10, "main work", 6);
	add(f, 4, 4, 10, "main other", 9);
	gs = list(f, GROUPS_PROCESS, &n);
	assert_int_equal(n, 1);
	assert_int_equal(gs[0].key, 3);
	assert_int_equal(f->l.not_matching, 9);
}

static void test_names_and_titles(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(groups_by_parse("comm"), GROUPS_COMM);
	assert_int_equal(groups_by_parse("cgroup"), GROUPS_CGROUP);
	assert_int_equal(groups_by_parse("sym"), -1);
	assert_int_equal(groups_by_parse(NULL), -1);
	groups_title(GROUPS_PROCESS, 1234, "burner", buf, sizeof(buf));
	assert_string_equal(buf, "process 1234 burner");
	groups_title(GROUPS_THREAD, 1235, "", buf, sizeof(buf));
	assert_string_equal(buf, "thread 1235 ?");
	groups_title(GROUPS_COMM, 77, "burner", buf, sizeof(buf));
	assert_string_equal(buf, "comm burner");
	groups_title(GROUPS_CGROUP, 4711, "/system.slice/foo.service", buf, sizeof(buf));
	assert_string_equal(buf, "cgroup /system.slice/foo.service");
	groups_title(GROUPS_CGROUP, 4711, "", buf, sizeof(buf));
	assert_string_equal(buf, "cgroup cgroup:4711");
	groups_title(GROUPS_CGROUP, 0, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "cgroup ?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_by_process),		   T(test_by_comm_merges_processes),
		T(test_by_thread_and_cgroup_ties), T(test_by_cgroup),
		T(test_sections_and_foreign),	   T(test_when_applies_first),
		T(test_names_and_titles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
