// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/agg.c: per-target aggregates and the LIST computation (docs/sampling.md, sections
 * 1, 2, 5 and 7): shallow and deep counts, foreignPcs, kernel mode, unwalkable stacks,
 * off-CPU time in interrupts of t, open intervals, WHEN attribution, critical sections and
 * the order of the listing. Stacks are built from symbolized locations without ELF files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "pat.h"
#include "sym.h"
#include "util.h"

/* ---------------------------------------------------------------------------------------- */
/* Fixture */

#define MAXLOCS 64	/* locations in one test stack */
#define MAXTOK 4096	/* distinct frame tokens in one test */
#define MAXOWN 64	/* stacks and patterns owned by one test */

struct fx {
	struct sym *s;
	struct agg *a;
	struct agg_list l;
	struct itab *toks;	/* frame token -> index into loc[] */
	uint32_t loc[MAXTOK];
	struct agg_stack *own[MAXOWN];
	size_t nown;
	struct pat *pats[MAXOWN];
	size_t npats;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->s = sym_new(0);
	f->a = agg_new();
	f->toks = itab_new();
	if (!f->s || !f->a || !f->toks)
		return -1;
	*state = f;
	return 0;
}

/* Runs after a failed assertion too, so that a failing test reports no leaks. */
static int teardown(void **state)
{
	struct fx *f = *state;

	agg_list_free(&f->l);
	for (size_t i = 0; i < f->nown; i++)
		free(f->own[i]);
	for (size_t i = 0; i < f->npats; i++)
		pat_free(f->pats[i]);
	itab_free(f->toks);
	agg_free(f->a);
	sym_free(f->s);
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/*
 * The location of a frame token "module/procedure", interned once per distinct token:
 *   module "-" is anonymous memory (no module); procedure "?" is no known procedure;
 *   "prog/outer>mid>inner" is one location with an inline chain, outermost first as on the
 *   stack (sym_intern_loc takes it innermost first).
 */
static uint32_t loc_of(struct fx *f, const char *tok)
{
	char buf[256], *slash, *procs, *save, *p;
	const char *chain[16];
	size_t n = 0;
	uint32_t id, loc;
	int r;

	r = itab_str(f->toks, tok, &id);
	assert_true(r >= 0);
	assert_true(id < MAXTOK);
	if (!r)
		return f->loc[id];
	assert_true(strlen(tok) < sizeof(buf));
	strcpy(buf, tok);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = '\0';
	procs = slash + 1;
	if (strcmp(procs, "?")) {
		for (p = strtok_r(procs, ">", &save); p; p = strtok_r(NULL, ">", &save)) {
			assert_true(n < ARRAY_SIZE(chain));
			chain[n++] = p;
		}
		/* reverse: innermost first */
		for (size_t i = 0; i < n / 2; i++) {
			const char *t = chain[i];

			chain[i] = chain[n - 1 - i];
			chain[n - 1 - i] = t;
		}
	}
	assert_int_equal(sym_intern_loc(f->s, strcmp(buf, "-") ? buf : "", 0x1000 + 16 * id, chain,
					NULL, NULL, n, &loc),
			 0);
	f->loc[id] = loc;
	return loc;
}

/*
 * A stack from "tok tok ... | ktok ktok ...": user frames outermost first, then after "|"
 * kernel frames outermost first. Owned by the fixture.
 */
static struct agg_stack *mk(struct fx *f, uint32_t kind, uint32_t pid, uint32_t unwalk,
			    const char *spec)
{
	uint32_t locs[MAXLOCS];
	uint32_t nuser = 0, nkern = 0;
	char buf[2048], *tok, *save;
	bool kern = false;
	struct agg_stack *st;

	assert_true(strlen(spec) < sizeof(buf));
	strcpy(buf, spec);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (!strcmp(tok, "|")) {
			kern = true;
			continue;
		}
		assert_true(nuser + nkern < MAXLOCS);
		locs[nuser + nkern] = loc_of(f, tok);
		if (kern)
			nkern++;
		else
			nuser++;
	}
	st = calloc(1, agg_stack_size(nuser + nkern));
	assert_non_null(st);
	assert_true(f->nown < MAXOWN);
	f->own[f->nown++] = st;
	*st = (struct agg_stack){ .kind = kind, .pid = pid, .unwalk = unwalk, .nuser = nuser,
				  .nkern = nkern };
	memcpy(st->locs, locs, (nuser + nkern) * sizeof(uint32_t));
	return st;
}

static void add(struct fx *f, uint32_t kind, uint32_t unwalk, const char *spec, uint64_t count,
		uint64_t ns)
{
	assert_int_equal(agg_add(f->a, mk(f, kind, 1, unwalk, spec), count, ns), 0);
	/* the stack was copied: the fixture's buffer can go */
	free(f->own[--f->nown]);
}

/* A sample inside a section the program marked (PCMON_CRITICAL_BEGIN("@name")). */
static void add_marked(struct fx *f, const char *name, uint32_t kind, uint32_t unwalk,
		       const char *spec, uint64_t count, uint64_t ns)
{
	struct agg_stack *st = mk(f, kind, 1, unwalk, spec);

	assert_int_equal(sym_intern_str(f->s, name, &st->section), 0);
	assert_int_not_equal(st->section, 0);
	assert_int_equal(agg_add(f->a, st, count, ns), 0);
	free(f->own[--f->nown]);
}

static uint64_t marked(const struct fx *f, const char *name)
{
	for (size_t m = 0; m < f->l.nmarked; m++)
		if (!strcmp(sym_str(f->s, f->l.marked[m].name), name))
			return f->l.marked[m].count;
	return 0;
}

#define ON(f, spec, n) add((f), PCMON_KIND_ONCPU, AGG_WALK_OK, (spec), (n), 0)
#define KM(f, spec, n) add((f), PCMON_KIND_ONCPU_KMODE, AGG_WALK_OK, (spec), (n), 0)
#define BLOCKED(f, spec, ns) add((f), PCMON_KIND_OFF_BLOCKED, AGG_WALK_OK, (spec), 1, (ns))
#define RUNNABLE(f, spec, ns) add((f), PCMON_KIND_OFF_RUNNABLE, AGG_WALK_OK, (spec), 1, (ns))

static const struct pat *P(struct fx *f, const char *text)
{
	struct pat_error err = { 0 };
	struct pat *p = NULL;

	if (pat_parse(text, 0, &p, &err))
		fail_msg("pattern '%s' rejected: column %d: %s", text, err.column, err.msg);
	assert_true(f->npats < MAXOWN);
	f->pats[f->npats++] = p;
	return p;
}

static const char *full_name(struct fx *f, uint32_t proc)
{
	return sym_str(f->s, sym_proc(f->s, proc)->full);
}

static void dump_rows(struct fx *f, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < f->l.nrows && off < len; i++)
		off += snprintf(buf + off, len - off, " %s(%llu,%llu)",
				full_name(f, f->l.rows[i].proc),
				(unsigned long long)f->l.rows[i].shallow,
				(unsigned long long)f->l.rows[i].deep);
}

/*
 * agg_list() into the fixture, then the bookkeeping that must hold for every listing
 * (docs/sampling.md: "interrupts 1241 counted 1198 not matching WHEN 43", percentages of
 * counted samples, critical sections among them):
 *   interrupts = counted + not matching
 *   counted = critical (user-declared + marked + unwalkable) + sum of shallow + foreignPcs
 *   interrupts = on-CPU + off-CPU blocked + off-CPU runnable (all in interrupts of t)
 *   shallow <= deep <= counted for every procedure.
 */
/* What a visitor saw: every class's total, and per procedure what was charged to it. */
struct seen {
	uint64_t cls[AGG_C_PROC + 1];
	uint64_t *shallow;		/* by procedure id */
	uint32_t nprocs;
	const struct sym *s;
};

static void visit(void *ctx, const struct agg_visit *v)
{
	struct seen *sn = ctx;

	sn->cls[v->cls] += v->weight;
	assert_true(v->weight > 0);
	if (v->cls == AGG_C_PROC) {
		uint32_t p = v->procs[v->nframes - 1];
		const struct agg_frame_at *at = &v->at[v->nframes - 1];
		const struct sym_loc *l = sym_loc(sn->s, v->st->locs[at->loc]);

		assert_true(p < sn->nprocs);
		sn->shallow[p] += v->weight;
		/* the frame is the one its location lists at that inline position */
		assert_non_null(l);
		assert_true(at->inl < l->nframes);
		assert_int_equal(sym_frames(sn->s, l)[at->inl], p);
	} else if (v->cls == AGG_C_UNWALKABLE || v->cls == AGG_C_MARKED ||
		   v->cls == AGG_C_CRITICAL) {
		assert_null(v->procs);
	}
}

static struct agg_list *list(struct fx *f, const struct agg_list_opts *o)
{
	struct agg_list *l = &f->l;
	struct agg_list_opts vo = *o;
	struct seen sn = { .nprocs = sym_nprocs(f->s), .s = f->s };
	uint64_t crit = 0, shallow = 0, marked = 0, dcrit = 0;

	sn.shallow = calloc(sn.nprocs + 1, sizeof(*sn.shallow));
	assert_non_null(sn.shallow);
	vo.visit = visit;
	vo.visit_ctx = &sn;
	agg_list_free(l);
	assert_int_equal(agg_list(f->a, f->s, &vo, l), 0);
	/* the visitor saw exactly what the listing counted, charged the same way */
	for (size_t m = 0; m < l->nmarked; m++)
		marked += l->marked[m].count;
	for (size_t c = 0; c < o->ncrit && c < AGG_MAX_CRIT; c++)
		dcrit += l->crit[c];
	assert_int_equal(sn.cls[AGG_C_UNWALKABLE], l->unwalk[AGG_WALK_OK]);
	assert_int_equal(sn.cls[AGG_C_MARKED], marked);
	assert_int_equal(sn.cls[AGG_C_CRITICAL], dcrit);
	for (size_t i = 0; i < l->nrows; i++) {
		assert_int_equal(sn.shallow[l->rows[i].proc], l->rows[i].shallow);
		sn.cls[AGG_C_PROC] -= l->rows[i].shallow;
	}
	assert_int_equal(sn.cls[AGG_C_PROC], 0);
	assert_int_equal(sn.cls[AGG_C_FOREIGN], l->foreign);
	free(sn.shallow);
	for (size_t c = 0; c < o->ncrit && c < AGG_MAX_CRIT; c++)
		crit += l->crit[c];
	for (size_t m = 0; m < l->nmarked; m++)
		crit += l->marked[m].count;
	crit += l->unwalk[AGG_WALK_OK];
	assert_int_equal(l->unwalk[AGG_WALK_OK], l->unwalk[AGG_UNWALK_FAULT] +
						     l->unwalk[AGG_UNWALK_TRUNCATED] +
						     l->unwalk[AGG_UNWALK_LOST]);
	assert_int_equal(l->interrupts, l->counted + l->not_matching);
	assert_int_equal(l->interrupts, l->oncpu + l->off_blocked + l->off_runnable);
	assert_true(l->foreign <= l->counted);
	assert_true(l->kernel_mode <= l->oncpu);
	for (size_t i = 0; i < l->nrows; i++) {
		const struct agg_row *r = &l->rows[i];

		shallow += r->shallow;
		assert_true(r->shallow <= r->deep);
		assert_true(r->deep <= l->counted);
		assert_true(r->deep > 0);
		/* rows are procedures with a name */
		assert_int_not_equal(sym_proc(f->s, r->proc)->name, 0);
	}
	assert_int_equal(crit + shallow + l->foreign, l->counted);
	return l;
}

struct want {
	const char *name; /* "module.procedure" */
	uint64_t shallow, deep;
};

static void expect_rows(struct fx *f, const struct want *w, size_t n, int line)
{
	char got[2048];

	dump_rows(f, got, sizeof(got));
	if (f->l.nrows != n)
		fail_msg("line %d: %zu rows, expected %zu; got:%s", line, f->l.nrows, n, got);
	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < f->l.nrows; j++)
			if (!strcmp(full_name(f, f->l.rows[j].proc), w[i].name))
				break;
		if (j == f->l.nrows)
			fail_msg("line %d: no row for %s; got:%s", line, w[i].name, got);
		if (f->l.rows[j].shallow != w[i].shallow || f->l.rows[j].deep != w[i].deep)
			fail_msg("line %d: %s: shallow %llu deep %llu, expected %llu %llu; got:%s",
				 line, w[i].name,
				 (unsigned long long)f->l.rows[j].shallow,
				 (unsigned long long)f->l.rows[j].deep,
				 (unsigned long long)w[i].shallow, (unsigned long long)w[i].deep,
				 got);
	}
}

#define ROWS(f, ...)                                                     \
	do {                                                             \
		const struct want w_[] = { __VA_ARGS__ };                \
		expect_rows((f), w_, ARRAY_SIZE(w_), __LINE__);          \
	} while (0)

#define NO_ROWS(f) assert_int_equal((f)->l.nrows, 0)

/* The summary numbers of a listing, in one line for a readable failure. */
struct sums {
	uint64_t interrupts, counted, not_matching, foreign, kernel_mode, oncpu;
	uint64_t off_blocked, off_runnable;
};

static void expect_sums(const struct agg_list *l, struct sums w, int line)
{
	if (l->interrupts != w.interrupts || l->counted != w.counted ||
	    l->not_matching != w.not_matching || l->foreign != w.foreign ||
	    l->kernel_mode != w.kernel_mode || l->oncpu != w.oncpu ||
	    l->off_blocked != w.off_blocked || l->off_runnable != w.off_runnable)
		fail_msg("line %d: interrupts/counted/not_matching/foreign/kernel_mode/oncpu/"
			 "blocked/runnable = %llu/%llu/%llu/%llu/%llu/%llu/%llu/%llu, expected "
			 "%llu/%llu/%llu/%llu/%llu/%llu/%llu/%llu",
			 line, (unsigned long long)l->interrupts, (unsigned long long)l->counted,
			 (unsigned long long)l->not_matching, (unsigned long long)l->foreign,
			 (unsigned long long)l->kernel_mode, (unsigned long long)l->oncpu,
			 (unsigned long long)l->off_blocked, (unsigned long long)l->off_runnable,
			 (unsigned long long)w.interrupts, (unsigned long long)w.counted,
			 (unsigned long long)w.not_matching, (unsigned long long)w.foreign,
			 (unsigned long long)w.kernel_mode, (unsigned long long)w.oncpu,
			 (unsigned long long)w.off_blocked, (unsigned long long)w.off_runnable);
}

#define SUMS(l, ...) expect_sums((l), (struct sums){ __VA_ARGS__ }, __LINE__)

/* ---------------------------------------------------------------------------------------- */
/* Storage */

static void test_add_get(void **state)
{
	struct fx *f = *state;
	struct agg_stack *a = mk(f, PCMON_KIND_ONCPU, 10, AGG_WALK_OK, "prog/main prog/a");
	struct agg_stack *b = mk(f, PCMON_KIND_ONCPU, 10, AGG_WALK_OK, "prog/main prog/b");
	struct agg_stack *k = mk(f, PCMON_KIND_ONCPU_KMODE, 10, AGG_WALK_OK,
				 "prog/main prog/a | kernel/vfs_read");
	const struct agg_stack *g;
	uint64_t count = 99, ns = 99;

	assert_int_equal(agg_count(f->a), 0);
	assert_null(agg_get(f->a, 0, &count, &ns));
	assert_int_equal(agg_add(f->a, a, 3, 0), 0);
	assert_int_equal(agg_add(f->a, a, 2, 7), 0);	/* same key: summed */
	a->pid = 11;
	assert_int_equal(agg_add(f->a, a, 1, 0), 0);	/* another pid: another entry */
	a->pid = 10;
	a->kind = PCMON_KIND_OFF_BLOCKED;
	assert_int_equal(agg_add(f->a, a, 1, 1000), 0); /* another kind */
	a->kind = PCMON_KIND_ONCPU;
	a->unwalk = AGG_UNWALK_TRUNCATED;
	assert_int_equal(agg_add(f->a, a, 4, 0), 0);	/* another walk outcome */
	a->unwalk = AGG_WALK_OK;
	assert_int_equal(agg_add(f->a, b, 6, 0), 0);	/* other locations */
	assert_int_equal(agg_add(f->a, k, 8, 0), 0);	/* kernel locations too */
	assert_int_equal(agg_add(f->a, a, 10, 3), 0);	/* the first again */
	assert_int_equal(agg_count(f->a), 6);
	a->section = 1;
	assert_int_equal(agg_add(f->a, a, 1, 0), 0);	/* inside a marked section */
	a->section = 0;
	assert_int_equal(agg_count(f->a), 7);

	g = agg_get(f->a, 0, &count, &ns);
	assert_non_null(g);
	assert_int_equal(count, 15);
	assert_int_equal(ns, 10);
	assert_int_equal(g->kind, PCMON_KIND_ONCPU);
	assert_int_equal(g->pid, 10);
	assert_int_equal(g->unwalk, AGG_WALK_OK);
	assert_int_equal(g->nuser, 2);
	assert_int_equal(g->nkern, 0);
	assert_memory_equal(g->locs, a->locs, 2 * sizeof(uint32_t));
	assert_ptr_not_equal(g, a); /* a copy */

	g = agg_get(f->a, 1, &count, &ns);
	assert_int_equal(g->pid, 11);
	assert_int_equal(count, 1);
	g = agg_get(f->a, 2, &count, &ns);
	assert_int_equal(g->kind, PCMON_KIND_OFF_BLOCKED);
	assert_int_equal(count, 1);
	assert_int_equal(ns, 1000);
	g = agg_get(f->a, 3, &count, &ns);
	assert_int_equal(g->unwalk, AGG_UNWALK_TRUNCATED);
	assert_int_equal(count, 4);
	g = agg_get(f->a, 5, &count, &ns);
	assert_int_equal(g->kind, PCMON_KIND_ONCPU_KMODE);
	assert_int_equal(g->nuser, 2);
	assert_int_equal(g->nkern, 1);
	assert_memory_equal(g->locs, k->locs, 3 * sizeof(uint32_t));
	assert_int_equal(count, 8);
	g = agg_get(f->a, 6, &count, &ns);
	assert_int_equal(g->section, 1);
	assert_int_equal(count, 1);
	assert_null(agg_get(f->a, 7, &count, &ns));
}

static void test_zero(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main prog/a", 5);
	BLOCKED(f, "prog/main prog/sleep", 30000);
	l = list(f, &o);
	SUMS(l, .interrupts = 8, .counted = 8, .oncpu = 5, .off_blocked = 3);
	agg_zero(f->a);
	assert_int_equal(agg_count(f->a), 0);
	l = list(f, &o);
	SUMS(l, 0);
	assert_int_equal(l->off_blocked_ns, 0);
	NO_ROWS(f);
	/* counting starts over */
	ON(f, "prog/main prog/a", 2);
	assert_int_equal(agg_count(f->a), 1);
	l = list(f, &o);
	SUMS(l, .interrupts = 2, .counted = 2, .oncpu = 2);
	ROWS(f, { "prog.main", 0, 2 }, { "prog.a", 2, 2 });
	agg_zero(f->a);
	agg_zero(f->a); /* twice is fine */
	assert_int_equal(agg_count(f->a), 0);
}

static void test_empty(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l = list(f, &o);

	SUMS(l, 0);
	NO_ROWS(f);
	for (int i = 0; i < AGG_UNWALK_MAX; i++)
		assert_int_equal(l->unwalk[i], 0);
}

/* ---------------------------------------------------------------------------------------- */
/* Shallow and deep */

static void test_simple_stack(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main prog/a prog/b", 10);
	ON(f, "prog/main prog/a", 4);
	ON(f, "prog/main prog/c", 1);
	assert_int_equal(agg_add(f->a, mk(f, PCMON_KIND_ONCPU, 2, 0, "prog/main prog/a prog/b"),
				 5, 0),
			 0); /* the same stack in another process */
	ON(f, "prog/main libc.so.6/write", 2);
	l = list(f, &o);
	SUMS(l, .interrupts = 22, .counted = 22, .oncpu = 22);
	ROWS(f, { "prog.main", 0, 22 }, { "prog.a", 4, 19 }, { "prog.b", 15, 15 },
	     { "prog.c", 1, 1 }, { "libc.so.6.write", 2, 2 });
}

static void test_recursion(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main prog/a prog/b prog/a prog/b prog/leaf", 7);
	ON(f, "prog/main prog/a prog/a prog/a", 2);
	ON(f, "prog/main prog/b", 1);
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 10, .oncpu = 10);
	/* deep counts once per sample however deep the recursion */
	ROWS(f, { "prog.main", 0, 10 }, { "prog.a", 2, 9 }, { "prog.b", 1, 8 },
	     { "prog.leaf", 7, 7 });
}

static void test_inline_chain(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	/* one location, inline chain outer > mid > inner: inner is the current procedure */
	ON(f, "prog/main prog/outer>mid>inner", 6);
	/* an inline chain in a caller's location */
	ON(f, "prog/main prog/work>helper prog/leaf", 3);
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 9, .oncpu = 9);
	ROWS(f, { "prog.main", 0, 9 }, { "prog.outer", 0, 6 }, { "prog.mid", 0, 6 },
	     { "prog.inner", 6, 6 }, { "prog.work", 0, 3 }, { "prog.helper", 0, 3 },
	     { "prog.leaf", 3, 3 });

	/* the order on the stack, as WHEN sees it: outermost first, innermost last */
	o.when = P(f, "prog.main->prog.outer->prog.mid->prog.inner");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 6, .not_matching = 3, .oncpu = 9);
	o.when = P(f, "prog.work->prog.helper->prog.leaf");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 3, .not_matching = 6, .oncpu = 9);
	o.when = P(f, "prog.inner->prog.mid | prog.mid->prog.outer | prog.leaf->prog.helper");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .not_matching = 9, .oncpu = 9);
	NO_ROWS(f);
	/* ':inner' charges the procedure inner was inlined into */
	o.when = P(f, ":prog.inner");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 6, .not_matching = 3, .oncpu = 9);
	ROWS(f, { "prog.main", 0, 6 }, { "prog.outer", 0, 6 }, { "prog.mid", 6, 6 });
}

/* --no-inline: a location counts as the function its code is in, the outermost of its chain. */
static void test_no_inline(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000, .no_inline = 1 };
	struct agg_list *l;

	ON(f, "prog/main prog/outer>mid>inner", 6);
	ON(f, "prog/main prog/work>helper prog/leaf", 3);
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 9, .oncpu = 9);
	ROWS(f, { "prog.main", 0, 9 }, { "prog.outer", 6, 6 }, { "prog.work", 0, 3 },
	     { "prog.leaf", 3, 3 });
	/* patterns see the same stack */
	o.when = P(f, "prog.main->prog.work->prog.leaf");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 3, .not_matching = 6, .oncpu = 9);
	o.when = P(f, "prog.inner | prog.helper->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .not_matching = 9, .oncpu = 9);
	o.when = P(f, ":prog.outer");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 6, .not_matching = 3, .oncpu = 9);
	ROWS(f, { "prog.main", 6, 6 });
}

static void test_foreign(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	const char *const unnamed[] = { NULL };
	struct agg_stack *st;
	struct agg_list *l;
	uint32_t loc;

	ON(f, "prog/main prog/a -/?", 5);	/* anonymous memory (JIT) */
	ON(f, "prog/main libjit.so/?", 2);	/* a module, but no covering symbol */
	ON(f, "prog/main -/? prog/cb", 4);	/* called back from JIT code */
	ON(f, "-/?", 1);			/* nothing known at all */
	/* a location whose frame has a NULL procedure name */
	assert_int_equal(sym_intern_loc(f->s, "prog", 0xdead0, unnamed, NULL, NULL, 1, &loc), 0);
	st = mk(f, PCMON_KIND_ONCPU, 1, AGG_WALK_OK, "prog/main prog/main");
	st->locs[1] = loc;
	assert_int_equal(agg_add(f->a, st, 3, 0), 0);

	l = list(f, &o);
	SUMS(l, .interrupts = 15, .counted = 15, .foreign = 11, .oncpu = 15);
	/* callers of foreign code still get deep counts; no row for unnamed code */
	ROWS(f, { "prog.main", 0, 14 }, { "prog.a", 0, 5 }, { "prog.cb", 4, 4 });
}

static void test_empty_user_stack(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "", 4);
	ON(f, "prog/main", 1);
	l = list(f, &o);
	SUMS(l, .interrupts = 5, .counted = 5, .foreign = 4, .oncpu = 5);
	ROWS(f, { "prog.main", 1, 1 });
	/* '*' matches the empty stack, whose current procedure is above the root: foreign */
	o.when = P(f, "*");
	l = list(f, &o);
	SUMS(l, .interrupts = 5, .counted = 5, .foreign = 4, .oncpu = 5);
	ROWS(f, { "prog.main", 1, 1 });
	o.when = P(f, "prog.main");
	l = list(f, &o);
	SUMS(l, .interrupts = 5, .counted = 1, .not_matching = 4, .oncpu = 5);
}

/* ---------------------------------------------------------------------------------------- */
/* Kernel mode */

static void test_kernel_mode(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	KM(f, "prog/main prog/rd | kernel/entry_SYSCALL_64 kernel/ksys_read kernel/vfs_read", 6);
	ON(f, "prog/main prog/work", 4);
	KM(f, "| kernel/worker_thread kernel/process_one", 1); /* no user stack */

	/* without --kernel: kernel frames ignored, the sample goes to the system-call site */
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .counted = 11, .foreign = 1, .kernel_mode = 7, .oncpu = 11);
	ROWS(f, { "prog.main", 0, 10 }, { "prog.rd", 6, 6 }, { "prog.work", 4, 4 });

	/* with --kernel: kernel frames appended, innermost kernel frame current */
	o.kernel = 1;
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .counted = 11, .kernel_mode = 7, .oncpu = 11);
	ROWS(f, { "prog.main", 0, 10 }, { "prog.rd", 0, 6 }, { "prog.work", 4, 4 },
	     { "kernel.entry_SYSCALL_64", 0, 6 }, { "kernel.ksys_read", 0, 6 },
	     { "kernel.vfs_read", 6, 6 }, { "kernel.worker_thread", 0, 1 },
	     { "kernel.process_one", 1, 1 });
}

static void test_kernel_when(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	KM(f, "prog/main prog/rd | kernel/entry_SYSCALL_64 kernel/ksys_read kernel/vfs_read", 6);
	ON(f, "prog/main prog/work", 4);
	KM(f, "| kernel/worker_thread kernel/process_one", 1);

	/* patterns see kernel frames only with --kernel */
	o.when = P(f, "kernel.vfs_read");
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .not_matching = 11, .kernel_mode = 7, .oncpu = 11);
	o.kernel = 1;
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .counted = 6, .not_matching = 5, .kernel_mode = 7, .oncpu = 11);
	ROWS(f, { "prog.main", 0, 6 }, { "prog.rd", 0, 6 }, { "kernel.entry_SYSCALL_64", 0, 6 },
	     { "kernel.ksys_read", 0, 6 }, { "kernel.vfs_read", 6, 6 });

	/* the system-call site is current without --kernel, not with it */
	o.when = P(f, "prog.rd");
	o.kernel = 0;
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .counted = 6, .not_matching = 5, .kernel_mode = 7, .oncpu = 11);
	ROWS(f, { "prog.main", 0, 6 }, { "prog.rd", 6, 6 });
	o.kernel = 1;
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .not_matching = 11, .kernel_mode = 7, .oncpu = 11);

	/* 'rd:' charges the system-call site even with kernel frames on the stack */
	o.when = P(f, "prog.rd:->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 11, .counted = 6, .not_matching = 5, .kernel_mode = 7, .oncpu = 11);
	ROWS(f, { "prog.main", 0, 6 }, { "prog.rd", 6, 6 });
}

/* ---------------------------------------------------------------------------------------- */
/* Unwalkable stacks */

static void test_unwalkable(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_critical crit[] = { { "everything", NULL } };
	struct agg_list *l;

	add(f, PCMON_KIND_ONCPU, AGG_UNWALK_FAULT, "", 3, 0);
	add(f, PCMON_KIND_ONCPU, AGG_UNWALK_TRUNCATED, "prog/main prog/a prog/b", 2, 0);
	add(f, PCMON_KIND_ONCPU_KMODE, AGG_UNWALK_LOST, "", 1, 0);
	add(f, PCMON_KIND_OFF_BLOCKED, AGG_UNWALK_FAULT, "", 1, 25000); /* 2.5 t -> 3 */
	ON(f, "prog/main prog/a", 4);

	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 13, .kernel_mode = 1, .oncpu = 10, .off_blocked = 3);
	assert_int_equal(l->off_blocked_ns, 25000);
	assert_int_equal(l->unwalk[AGG_WALK_OK], 9);
	assert_int_equal(l->unwalk[AGG_UNWALK_FAULT], 6);
	assert_int_equal(l->unwalk[AGG_UNWALK_TRUNCATED], 2);
	assert_int_equal(l->unwalk[AGG_UNWALK_LOST], 1);
	/* the truncated stack's frames get nothing, not even deep */
	ROWS(f, { "prog.main", 0, 4 }, { "prog.a", 4, 4 });

	/* unwalkable is decided before WHEN (no pattern can test a stack we do not have) ... */
	o.when = P(f, "prog.nothing");
	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 9, .not_matching = 4, .kernel_mode = 1, .oncpu = 10,
	     .off_blocked = 3);
	assert_int_equal(l->unwalk[AGG_WALK_OK], 9);
	o.when = NULL;
	crit[0].pat = P(f, "*");
	o.crit = crit;
	o.ncrit = 1;
	/* ... and before user-declared sections */
	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 13, .kernel_mode = 1, .oncpu = 10, .off_blocked = 3);
	assert_int_equal(l->crit[0], 4);
	assert_int_equal(l->unwalk[AGG_WALK_OK], 9);
	NO_ROWS(f);

	assert_string_equal(agg_unwalk_names[AGG_WALK_OK], "unwalkable");
	assert_string_equal(agg_unwalk_names[AGG_UNWALK_FAULT], "fault");
	assert_string_equal(agg_unwalk_names[AGG_UNWALK_TRUNCATED], "truncated");
	assert_string_equal(agg_unwalk_names[AGG_UNWALK_LOST], "lost");
}

/* ---------------------------------------------------------------------------------------- */
/* Off-CPU time (REAL) */

static void test_ns_to_interrupts(void **state)
{
	(void)state;
	assert_int_equal(agg_ns_to_interrupts(0, 10000), 0);
	assert_int_equal(agg_ns_to_interrupts(4999, 10000), 0);
	assert_int_equal(agg_ns_to_interrupts(5000, 10000), 1); /* half rounds up */
	assert_int_equal(agg_ns_to_interrupts(10000, 10000), 1);
	assert_int_equal(agg_ns_to_interrupts(14999, 10000), 1);
	assert_int_equal(agg_ns_to_interrupts(15000, 10000), 2);
	assert_int_equal(agg_ns_to_interrupts(25001, 10000), 3);
	assert_int_equal(agg_ns_to_interrupts(7, 3), 2);	/* 2.33 */
	assert_int_equal(agg_ns_to_interrupts(8, 3), 3);	/* 2.67 */
	assert_int_equal(agg_ns_to_interrupts(1, 1), 1);
	assert_int_equal(agg_ns_to_interrupts(12345, 0), 0);	/* no period: nothing */
	/* 12.41 s of blocked time at the default t = 10 ms */
	assert_int_equal(agg_ns_to_interrupts(12410000000ULL, 10000000ULL), 1241);
	assert_int_equal(agg_ns_to_interrupts(12414999999ULL, 10000000ULL), 1241);
	assert_int_equal(agg_ns_to_interrupts(12415000000ULL, 10000000ULL), 1242);
	/* a year of off-CPU time does not overflow */
	assert_int_equal(agg_ns_to_interrupts(31536000000000000ULL, 10000000ULL), 3153600000ULL);
}

static void test_offcpu_list(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	/* two intervals on one stack are summed, then rounded: 7000 + 7999 = 14999 -> 1 */
	BLOCKED(f, "prog/main prog/sleep", 7000);
	BLOCKED(f, "prog/main prog/sleep", 7999);
	/* the switch count is not a weight: 15000 ns -> 2 whatever the count */
	add(f, PCMON_KIND_OFF_BLOCKED, AGG_WALK_OK, "prog/main prog/wait", 3, 15000);
	RUNNABLE(f, "prog/main prog/work", 4999); /* rounds to nothing: no trace */
	RUNNABLE(f, "prog/main prog/spin", 25001);
	ON(f, "prog/main prog/work", 2);
	l = list(f, &o);
	SUMS(l, .interrupts = 8, .counted = 8, .oncpu = 2, .off_blocked = 3, .off_runnable = 3);
	assert_int_equal(l->off_blocked_ns, 29999);
	assert_int_equal(l->off_runnable_ns, 30000);
	ROWS(f, { "prog.main", 0, 8 }, { "prog.sleep", 1, 1 }, { "prog.wait", 2, 2 },
	     { "prog.spin", 3, 3 }, { "prog.work", 2, 2 });

	/* the same nanoseconds at another t */
	o.period_ns = 5000;
	l = list(f, &o);
	/* 14999 -> 3, 15000 -> 3, 4999 -> 1, 25001 -> 5 */
	SUMS(l, .interrupts = 14, .counted = 14, .oncpu = 2, .off_blocked = 6, .off_runnable = 6);
	ROWS(f, { "prog.main", 0, 14 }, { "prog.sleep", 3, 3 }, { "prog.wait", 3, 3 },
	     { "prog.spin", 5, 5 }, { "prog.work", 3, 3 });
}

static void test_offcpu_when_crit(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[1] = { { "lock", NULL } };
	struct agg_list_opts o = { .period_ns = 10000, .crit = crit, .ncrit = 1 };
	struct agg_list *l;

	BLOCKED(f, "prog/main prog/lock prog/futex", 42000);	/* 4 */
	BLOCKED(f, "prog/main prog/read", 18000);		/* 2 */
	RUNNABLE(f, "prog/init prog/x", 9999);			/* 1 */
	crit[0].pat = P(f, "*->prog.lock->*");
	o.when = P(f, "prog.main->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 7, .counted = 6, .not_matching = 1, .off_blocked = 6,
	     .off_runnable = 1);
	assert_int_equal(l->crit[0], 4);
	ROWS(f, { "prog.main", 0, 2 }, { "prog.read", 2, 2 });
}

/* ---------------------------------------------------------------------------------------- */
/* Open intervals */

static void test_extra(void **state)
{
	struct fx *f = *state;
	struct agg_extra ex[4];
	struct agg_list_opts o = { .period_ns = 10000, .extra = ex, .nextra = 4 };
	struct agg_list *l;

	BLOCKED(f, "prog/main prog/sleep", 10000);
	ex[0] = (struct agg_extra){ mk(f, PCMON_KIND_OFF_BLOCKED, 1, 0, "prog/main prog/poll"),
				    30000 };
	ex[1] = (struct agg_extra){ mk(f, PCMON_KIND_OFF_RUNNABLE, 1, 0, "prog/main prog/spin"),
				    10000 };
	/* an on-CPU stack has no open interval weight */
	ex[2] = (struct agg_extra){ mk(f, PCMON_KIND_ONCPU, 1, 0, "prog/main prog/work"), 999999 };
	/* deep once per sample in an open interval too */
	ex[3] = (struct agg_extra){
		mk(f, PCMON_KIND_OFF_BLOCKED, 1, 0, "prog/main prog/a prog/a prog/sleep"), 20000
	};
	l = list(f, &o);
	SUMS(l, .interrupts = 7, .counted = 7, .off_blocked = 6, .off_runnable = 1);
	assert_int_equal(l->off_blocked_ns, 60000);
	assert_int_equal(l->off_runnable_ns, 10000);
	ROWS(f, { "prog.main", 0, 7 }, { "prog.sleep", 3, 3 }, { "prog.poll", 3, 3 },
	     { "prog.spin", 1, 1 }, { "prog.a", 0, 2 });
	/* extras are transient: not stored, and listing again gives the same numbers */
	assert_int_equal(agg_count(f->a), 1);
	l = list(f, &o);
	SUMS(l, .interrupts = 7, .counted = 7, .off_blocked = 6, .off_runnable = 1);
	o.nextra = 0;
	l = list(f, &o);
	SUMS(l, .interrupts = 1, .counted = 1, .off_blocked = 1);
	ROWS(f, { "prog.main", 0, 1 }, { "prog.sleep", 1, 1 });
}

/*
 * docs/sampling.md: off-CPU nanoseconds are summed per stack, then rounded; an interval still
 * open is counted up to the listing. So an open interval on a stored stack joins that
 * stack's sum: 4000 ns stored + 4000 ns open = 8000 ns = 1 interrupt of 10000 ns, exactly
 * as if the interval had just closed (agg_add would have made it 8000 ns on one entry).
 */
static void test_extra_joins_stored_stack(void **state)
{
	struct fx *f = *state;
	struct agg_extra ex[1];
	struct agg_list_opts o = { .period_ns = 10000, .extra = ex, .nextra = 1 };
	struct agg_list *l;

	BLOCKED(f, "prog/main prog/sleep", 4000);
	ex[0] = (struct agg_extra){ mk(f, PCMON_KIND_OFF_BLOCKED, 1, 0, "prog/main prog/sleep"),
				    4000 };
	l = list(f, &o);
	SUMS(l, .interrupts = 1, .counted = 1, .off_blocked = 1);
	assert_int_equal(l->off_blocked_ns, 8000);
	ROWS(f, { "prog.main", 0, 1 }, { "prog.sleep", 1, 1 });
}

/* Two threads of one process blocked on the same stack: 6000 + 6000 ns = 1 interrupt, not 2. */
static void test_extras_same_stack_summed(void **state)
{
	struct fx *f = *state;
	struct agg_extra ex[2];
	struct agg_list_opts o = { .period_ns = 10000, .extra = ex, .nextra = 2 };
	struct agg_list *l;

	ex[0] = (struct agg_extra){ mk(f, PCMON_KIND_OFF_BLOCKED, 1, 0, "prog/main prog/poll"),
				    6000 };
	ex[1] = (struct agg_extra){ mk(f, PCMON_KIND_OFF_BLOCKED, 1, 0, "prog/main prog/poll"),
				    6000 };
	l = list(f, &o);
	SUMS(l, .interrupts = 1, .counted = 1, .off_blocked = 1);
	assert_int_equal(l->off_blocked_ns, 12000);
	ROWS(f, { "prog.main", 0, 1 }, { "prog.poll", 1, 1 });
}

/* ---------------------------------------------------------------------------------------- */
/* WHEN */

static void test_when_attribution(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main prog/mid prog/leaf", 5);
	ON(f, "prog/main prog/other", 3);
	ON(f, "prog/main prog/mid prog/leaf2", 2);

	/* ':leaf' charges leaf's caller; the rest does not match */
	o.when = P(f, ":prog.leaf");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 5, .not_matching = 5, .oncpu = 10);
	ROWS(f, { "prog.main", 0, 5 }, { "prog.mid", 5, 5 });

	/* 'mid:' makes mid current: its callees get nothing */
	o.when = P(f, "prog.mid:->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 7, .not_matching = 3, .oncpu = 10);
	ROWS(f, { "prog.main", 0, 7 }, { "prog.mid", 7, 7 });

	/* a colon above the root charges foreignPcs */
	o.when = P(f, ":prog.main->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 10, .foreign = 10, .oncpu = 10);
	NO_ROWS(f);

	/* no colon: the current frame */
	o.when = P(f, "prog.main->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 10, .oncpu = 10);
	ROWS(f, { "prog.main", 0, 10 }, { "prog.mid", 0, 7 }, { "prog.leaf", 5, 5 },
	     { "prog.other", 3, 3 }, { "prog.leaf2", 2, 2 });

	o.when = P(f, "leaf | other");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .counted = 8, .not_matching = 2, .oncpu = 10);
	ROWS(f, { "prog.main", 0, 8 }, { "prog.mid", 0, 5 }, { "prog.leaf", 5, 5 },
	     { "prog.other", 3, 3 });

	/* names are case-sensitive */
	o.when = P(f, "prog.Leaf");
	l = list(f, &o);
	SUMS(l, .interrupts = 10, .not_matching = 10, .oncpu = 10);
}

static void test_when_colon_recursion(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main prog/f prog/f prog/f prog/g", 4);
	/* the innermost f is charged: deep(f) once, g nothing */
	o.when = P(f, "prog.f:->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 4, .counted = 4, .oncpu = 4);
	ROWS(f, { "prog.main", 0, 4 }, { "prog.f", 4, 4 });
	/* ':g' charges the innermost f as well */
	o.when = P(f, ":prog.g");
	l = list(f, &o);
	ROWS(f, { "prog.main", 0, 4 }, { "prog.f", 4, 4 });
	/* 'main->:f->*' charges main (the caller of the f right under main) */
	o.when = P(f, "prog.main->:prog.f->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 4, .counted = 4, .oncpu = 4);
	ROWS(f, { "prog.main", 4, 4 });
}

static void test_when_colon_on_foreign(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main -/? prog/cb", 4);
	ON(f, "prog/main prog/x prog/cb", 1);
	/* ':cb' charges cb's caller; here that is JIT code: foreignPcs, main still deep */
	o.when = P(f, ":prog.cb");
	l = list(f, &o);
	SUMS(l, .interrupts = 5, .counted = 5, .foreign = 4, .oncpu = 5);
	ROWS(f, { "prog.main", 0, 5 }, { "prog.x", 1, 1 });
}

/* ---------------------------------------------------------------------------------------- */
/* Critical sections */

static void test_critical(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[3] = { { "gc", NULL }, { "io", NULL }, { "all", NULL } };
	struct agg_list_opts o = { .period_ns = 10000, .crit = crit, .ncrit = 3 };
	struct agg_list *l;

	ON(f, "prog/main prog/gc prog/write", 2);
	ON(f, "prog/main prog/write", 3);
	ON(f, "prog/main prog/work", 4);
	crit[0].pat = P(f, "prog.gc->*");
	crit[1].pat = P(f, "*->prog.write");
	crit[2].pat = P(f, "prog.main->*");

	/* first match wins; a critical sample is in no procedure's counts, not even deep */
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 9, .oncpu = 9);
	assert_int_equal(l->crit[0], 2);
	assert_int_equal(l->crit[1], 3);
	assert_int_equal(l->crit[2], 4);
	NO_ROWS(f);

	o.ncrit = 2;
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 9, .oncpu = 9);
	assert_int_equal(l->crit[0], 2);
	assert_int_equal(l->crit[1], 3);
	assert_int_equal(l->crit[2], 0);
	ROWS(f, { "prog.main", 0, 4 }, { "prog.work", 4, 4 });

	/* the order of the declarations decides */
	crit[0] = (struct agg_critical){ "io", crit[1].pat };
	crit[1] = (struct agg_critical){ "gc", P(f, "prog.gc->*") };
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 9, .oncpu = 9);
	assert_int_equal(l->crit[0], 5);
	assert_int_equal(l->crit[1], 0);
}

static void test_critical_and_when(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[2] = { { "gc", NULL }, { "io", NULL } };
	struct agg_list_opts o = { .period_ns = 10000, .crit = crit, .ncrit = 2 };
	struct agg_list *l;

	ON(f, "prog/main prog/gc prog/write", 2);
	ON(f, "prog/main prog/write", 3);
	ON(f, "prog/main prog/work", 4);
	crit[0].pat = P(f, "prog.gc->*");
	crit[1].pat = P(f, "*->prog.write");

	/* sections apply only to samples that match WHEN */
	o.when = P(f, "prog.main->prog.work");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 4, .not_matching = 5, .oncpu = 9);
	assert_int_equal(l->crit[0], 0);
	assert_int_equal(l->crit[1], 0);
	ROWS(f, { "prog.main", 0, 4 }, { "prog.work", 4, 4 });

	o.ncrit = 1;
	o.when = P(f, "*->prog.write");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 5, .not_matching = 4, .oncpu = 9);
	assert_int_equal(l->crit[0], 2);
	ROWS(f, { "prog.main", 0, 3 }, { "prog.write", 3, 3 });

	/* a WHEN colon does not keep a sample out of a section */
	o.when = P(f, ":prog.write");
	l = list(f, &o);
	SUMS(l, .interrupts = 9, .counted = 5, .not_matching = 4, .oncpu = 9);
	assert_int_equal(l->crit[0], 2);
	ROWS(f, { "prog.main", 3, 3 });
}

/* Sections marked by the program (critical.h): per name, in no procedure's counts. */
static void test_marked_sections(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[1] = { { "all", NULL } };
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	add_marked(f, "gc", PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main prog/gc_run", 3, 0);
	add_marked(f, "gc", PCMON_KIND_OFF_BLOCKED, AGG_WALK_OK, "prog/main prog/gc_wait", 1,
		   20000); /* 2 */
	add_marked(f, "io", PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main prog/write", 2, 0);
	/* the same stack outside any section is another entry */
	ON(f, "prog/main prog/write", 1);
	ON(f, "prog/main prog/work", 4);
	/* a stack that cannot be walked is unwalkable, whatever section it was in */
	add_marked(f, "gc", PCMON_KIND_ONCPU, AGG_UNWALK_FAULT, "", 1, 0);

	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 13, .oncpu = 11, .off_blocked = 2);
	assert_int_equal(l->nmarked, 2);
	assert_int_equal(marked(f, "gc"), 5);
	assert_int_equal(marked(f, "io"), 2);
	assert_int_equal(l->unwalk[AGG_WALK_OK], 1);
	ROWS(f, { "prog.main", 0, 5 }, { "prog.write", 1, 1 }, { "prog.work", 4, 4 });

	/* a marked section wins over a user-declared one */
	crit[0].pat = P(f, "*");
	o.crit = crit;
	o.ncrit = 1;
	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 13, .oncpu = 11, .off_blocked = 2);
	assert_int_equal(marked(f, "gc"), 5);
	assert_int_equal(marked(f, "io"), 2);
	assert_int_equal(l->crit[0], 5);
	NO_ROWS(f);

	/* marked sections apply to samples that match WHEN */
	o.ncrit = 0;
	o.when = P(f, "prog.main->prog.work | *->prog.write");
	l = list(f, &o);
	SUMS(l, .interrupts = 13, .counted = 8, .not_matching = 5, .oncpu = 11, .off_blocked = 2);
	assert_int_equal(l->nmarked, 1);
	assert_int_equal(marked(f, "gc"), 0);
	assert_int_equal(marked(f, "io"), 2);
	ROWS(f, { "prog.main", 0, 5 }, { "prog.write", 1, 1 }, { "prog.work", 4, 4 });
}

/* A sample taken while the probes of just-loaded objects were pending (AGG_SF_MARKS_PENDING). */
static void add_pending(struct fx *f, const char *section, uint32_t kind, uint32_t unwalk,
			const char *spec, uint64_t count, uint64_t ns)
{
	struct agg_stack *st = mk(f, kind, 1, unwalk, spec);

	st->flags = AGG_SF_MARKS_PENDING;
	if (section)
		assert_int_equal(sym_intern_str(f->s, section, &st->section), 0);
	assert_int_equal(agg_add(f->a, st, count, ns), 0);
	free(f->own[--f->nown]);
}

/*
 * marks_pending: the counted samples that a marked section may be missing — pending, and
 * charged to a procedure, foreignPcs or a declared section; not those already in a marked
 * section, not unwalkable ones (charged there whatever), not those WHEN leaves out.
 */
static void test_marks_pending(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[1] = { { "lock", NULL } };
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;

	ON(f, "prog/main lib/marked", 10);
	add_marked(f, "libsec", PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main lib/marked", 20, 0);
	add_pending(f, NULL, PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main lib/marked", 3, 0);
	add_pending(f, "libsec", PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main lib/marked", 4, 0);
	add_pending(f, NULL, PCMON_KIND_ONCPU, AGG_UNWALK_FAULT, "", 2, 0);
	add_pending(f, NULL, PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/main -/?", 1, 0);
	add_pending(f, NULL, PCMON_KIND_OFF_BLOCKED, AGG_WALK_OK, "prog/main lib/lock", 1, 25000);
	add_pending(f, NULL, PCMON_KIND_ONCPU, AGG_WALK_OK, "prog/init prog/x", 5, 0);

	l = list(f, &o);
	SUMS(l, .interrupts = 48, .counted = 48, .foreign = 1, .oncpu = 45, .off_blocked = 3);
	assert_int_equal(marked(f, "libsec"), 24);
	/* 3 lib.marked + 1 foreign + 3 blocked (25 us of t = 10 us) + 5 prog.x */
	assert_int_equal(l->marks_pending, 12);
	ROWS(f, { "prog.main", 0, 17 }, { "lib.marked", 13, 13 }, { "lib.lock", 3, 3 },
	     { "prog.init", 0, 5 }, { "prog.x", 5, 5 });

	/* in a declared section: still maybe in a marked one, which comes first */
	crit[0].pat = P(f, "*->lib.lock");
	o.crit = crit;
	o.ncrit = 1;
	l = list(f, &o);
	assert_int_equal(l->crit[0], 3);
	assert_int_equal(l->marks_pending, 12);

	/* WHEN leaves some out: they are not counted, so not pending either */
	o.ncrit = 0;
	o.when = P(f, "prog.main->*");
	l = list(f, &o);
	SUMS(l, .interrupts = 48, .counted = 43, .not_matching = 5, .foreign = 1, .oncpu = 45,
	     .off_blocked = 3);
	assert_int_equal(l->marks_pending, 7);
}

/* Every kind of sample at once, with exact numbers: the accounting identity of section 7. */
static void test_accounting(void **state)
{
	struct fx *f = *state;
	struct agg_critical crit[1] = { { "lock", NULL } };
	struct agg_list_opts o = { .period_ns = 10000, .crit = crit, .ncrit = 1 };
	struct agg_list *l;

	ON(f, "prog/main prog/work", 10);
	ON(f, "prog/main prog/spin_lock", 3);
	KM(f, "prog/main prog/rd | kernel/vfs_read", 4);
	ON(f, "prog/init prog/x", 2);
	BLOCKED(f, "prog/main prog/sleep", 52000);	/* 5 */
	RUNNABLE(f, "prog/main prog/work", 15000);	/* 2 */
	BLOCKED(f, "prog/init prog/x", 10000);		/* 1 */
	add(f, PCMON_KIND_ONCPU, AGG_UNWALK_TRUNCATED, "prog/main prog/work", 1, 0);
	add(f, PCMON_KIND_OFF_BLOCKED, AGG_UNWALK_FAULT, "", 1, 9000); /* 1 */
	ON(f, "prog/main -/?", 2);
	o.when = P(f, "prog.main->*");
	crit[0].pat = P(f, "*->prog.spin_lock->*");

	l = list(f, &o);
	SUMS(l, .interrupts = 31, .counted = 28, .not_matching = 3, .foreign = 2,
	     .kernel_mode = 4, .oncpu = 22, .off_blocked = 7, .off_runnable = 2);
	assert_int_equal(l->crit[0], 3);
	assert_int_equal(l->unwalk[AGG_WALK_OK], 2);
	assert_int_equal(l->unwalk[AGG_UNWALK_FAULT], 1);
	assert_int_equal(l->unwalk[AGG_UNWALK_TRUNCATED], 1);
	assert_int_equal(l->off_blocked_ns, 71000);
	assert_int_equal(l->off_runnable_ns, 15000);
	ROWS(f, { "prog.main", 0, 23 }, { "prog.work", 12, 12 }, { "prog.rd", 4, 4 },
	     { "prog.sleep", 5, 5 });
}

/* ---------------------------------------------------------------------------------------- */
/* Sorting */

static uint32_t proc_id(struct fx *f, const char *module, const char *name)
{
	uint32_t id;

	assert_true(sym_intern_proc(f->s, module, name, NULL, 0, &id) >= 0);
	return id;
}

static void expect_order(struct fx *f, const struct agg_row *rows, size_t n,
			 const char *const *names)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(full_name(f, rows[i].proc), names[i]))
			fail_msg("row %zu is %s, expected %s", i, full_name(f, rows[i].proc),
				 names[i]);
}

static void test_sort_rows(void **state)
{
	struct fx *f = *state;
	struct agg_row rows[] = {
		{ proc_id(f, "m", "d"), 5, 9 },	   { proc_id(f, "m", "a"), 5, 5 },
		{ proc_id(f, "m", "e"), 0, 12 },   { proc_id(f, "beta", "a"), 5, 9 },
		{ proc_id(f, "m", "c"), 7, 1 },	   { proc_id(f, "m", "b"), 5, 9 },
		{ proc_id(f, "alpha", "z"), 5, 9 }, { proc_id(f, "m", "f"), 6, 9 },
	};
	static const char *const by_shallow[] = {
		"m.c", "m.f", "alpha.z", "beta.a", "m.b", "m.d", "m.a", "m.e",
	};
	static const char *const by_deep[] = {
		"m.e", "m.f", "alpha.z", "beta.a", "m.b", "m.d", "m.a", "m.c",
	};

	agg_sort_rows(rows, ARRAY_SIZE(rows), 0, f->s);
	expect_order(f, rows, ARRAY_SIZE(rows), by_shallow);
	agg_sort_rows(rows, ARRAY_SIZE(rows), 1, f->s);
	expect_order(f, rows, ARRAY_SIZE(rows), by_deep);
	/* sorting a sorted array changes nothing */
	agg_sort_rows(rows, ARRAY_SIZE(rows), 1, f->s);
	expect_order(f, rows, ARRAY_SIZE(rows), by_deep);
	agg_sort_rows(rows, 0, 0, f->s);
	agg_sort_rows(rows, 1, 0, f->s);
	expect_order(f, rows, 1, by_deep);
}

static void test_sort_rows_wide(void **state)
{
	struct fx *f = *state;
	/* counts beyond 32 bits compare as numbers, not truncated */
	struct agg_row rows[] = {
		{ proc_id(f, "m", "r"), 0x100000001ULL, 0 },
		{ proc_id(f, "m", "q"), 1, 1ULL << 33 },
		{ proc_id(f, "m", "p"), 1ULL << 33, 1 },
	};
	static const char *const by_shallow[] = { "m.p", "m.r", "m.q" };
	static const char *const by_deep[] = { "m.q", "m.p", "m.r" };

	agg_sort_rows(rows, ARRAY_SIZE(rows), 0, f->s);
	expect_order(f, rows, ARRAY_SIZE(rows), by_shallow);
	agg_sort_rows(rows, ARRAY_SIZE(rows), 1, f->s);
	expect_order(f, rows, ARRAY_SIZE(rows), by_deep);
}

static void test_list_sorted(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	/* c and write tie at 2/2: the name decides, "libc.so.6.write" < "prog.c" */
	static const char *const by_shallow[] = {
		"prog.b", "prog.a", "libc.so.6.write", "prog.c", "prog.main",
	};
	static const char *const by_deep[] = {
		"prog.main", "prog.a", "prog.b", "libc.so.6.write", "prog.c",
	};
	struct agg_list *l;

	ON(f, "prog/main prog/a prog/b", 15);
	ON(f, "prog/main prog/a", 4);
	ON(f, "prog/main prog/c", 2);
	ON(f, "prog/main libc.so.6/write", 2);
	l = list(f, &o);
	ROWS(f, { "prog.main", 0, 23 }, { "prog.a", 4, 19 }, { "prog.b", 15, 15 },
	     { "prog.c", 2, 2 }, { "libc.so.6.write", 2, 2 });
	agg_sort_rows(l->rows, l->nrows, 0, f->s);
	expect_order(f, l->rows, l->nrows, by_shallow);
	agg_sort_rows(l->rows, l->nrows, 1, f->s);
	expect_order(f, l->rows, l->nrows, by_deep);
}

/* ---------------------------------------------------------------------------------------- */
/* Scale */

static void test_many_stacks(void **state)
{
	struct fx *f = *state;
	struct agg_list_opts o = { .period_ns = 10000 };
	struct agg_list *l;
	char spec[64];
	const struct agg_row *top;

	for (int i = 0; i < 2000; i++) {
		snprintf(spec, sizeof(spec), "prog/main prog/f%d", i);
		ON(f, spec, i + 1);
	}
	assert_int_equal(agg_count(f->a), 2000);
	l = list(f, &o);
	SUMS(l, .interrupts = 2001000, .counted = 2001000, .oncpu = 2001000);
	assert_int_equal(l->nrows, 2001);
	agg_sort_rows(l->rows, l->nrows, 0, f->s);
	top = &l->rows[0];
	assert_string_equal(full_name(f, top->proc), "prog.f1999");
	assert_int_equal(top->shallow, 2000);
	assert_string_equal(full_name(f, l->rows[1999].proc), "prog.f0");
	assert_string_equal(full_name(f, l->rows[2000].proc), "prog.main");
	agg_sort_rows(l->rows, l->nrows, 1, f->s);
	assert_string_equal(full_name(f, l->rows[0].proc), "prog.main");
	assert_int_equal(l->rows[0].deep, 2001000);
	assert_int_equal(l->rows[0].shallow, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_add_get),
		T(test_zero),
		T(test_empty),
		T(test_simple_stack),
		T(test_recursion),
		T(test_inline_chain),
		T(test_no_inline),
		T(test_foreign),
		T(test_empty_user_stack),
		T(test_kernel_mode),
		T(test_kernel_when),
		T(test_unwalkable),
		T(test_ns_to_interrupts),
		T(test_offcpu_list),
		T(test_offcpu_when_crit),
		T(test_extra),
		T(test_extra_joins_stored_stack),
		T(test_extras_same_stack_summed),
		T(test_when_attribution),
		T(test_when_colon_recursion),
		T(test_when_colon_on_foreign),
		T(test_critical),
		T(test_critical_and_when),
		T(test_marked_sections),
		T(test_marks_pending),
		T(test_accounting),
		T(test_sort_rows),
		T(test_sort_rows_wide),
		T(test_list_sorted),
		T(test_many_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
