// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/engine/store.c: results in the state directory (docs/service.md).
 *
 * A save and a load give the same target; real format-1 and format-2 files written by
 * earlier pcmonds load and list as they did; a file that is truncated, mistyped, out of range or
 * inconsistent is refused whole, naming its field, and never UB (these run under UBSan);
 * a save that fails leaves the previous file, no temporary file, and says so; stale
 * temporary files go at start; a refused file is set aside, not overwritten.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agg.h"
#include "count.h"
#include "pat.h"
#include "sample.h"
#include "stfile.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

#define FIXTURE_V1 "tests/fixtures/store/format1/target-2.json"
#define FIXTURE_V2 "tests/fixtures/store/format2/target-1.json"
#define FIXTURE_V4 "tests/fixtures/store/format4/target-1.json"
#define FIXTURE_V5 "tests/fixtures/store/format5/target-1.json"

#define S(t) sample_of(t)
/* A field of the sampling section of a format-3 file. */
#define SECTION(o, k) cJSON_GetObjectItem(cJSON_GetObjectItem((o), "sampling"), (k))

struct fx {
	char dir[64];
	struct sym *s, *s2;	/* where targets are saved from, and loaded into */
	struct store *st;
	struct target *t;	/* the sample target */
	struct target *loaded[PCMON_MAX_TARGETS];
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	log_verbosity = LOG_ERR; /* refused files warn; the tests check why */
	snprintf(f->dir, sizeof(f->dir), "/tmp/pcmon-store-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->s = sym_new(0);
	f->s2 = sym_new(0);
	if (!f->s || !f->s2 || store_open(f->dir, &f->st))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		target_free(f->loaded[i]);
	target_free(f->t);
	store_close(f->st);
	sym_free(f->s);
	sym_free(f->s2);
	nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* ---------------------------------------------------------------------------------------- */
/* A target with one of everything */

static uint32_t loc(struct sym *s, const char *module, uint64_t addr, const char *inner,
		    const char *outer, const char *file, uint32_t line)
{
	const char *frames[2] = { inner, outer }, *files[2] = { file, file };
	uint32_t lines[2] = { line, line ? line + 10 : 0 }, id;

	/* the outer frame of an inline chain: its call site, ten lines further */
	assert_int_equal(sym_intern_loc(s, module, addr, frames, files, lines, outer ? 2 : 1, &id),
			 0);
	return id;
}

static void add(struct target *t, uint32_t kind, uint32_t unwalk, uint32_t cut, uint32_t section,
		const uint32_t *locs, uint32_t nuser, uint32_t nkern, uint64_t count, uint64_t ns)
{
	struct agg_stack *st = calloc(1, agg_stack_size(nuser + nkern));

	assert_non_null(st);
	*st = (struct agg_stack){ .kind = kind, .pid = 4242, .unwalk = unwalk, .flags = cut ? AGG_SF_CUT(cut) : 0,
				  .section = section, .nuser = nuser, .nkern = nkern };
	if (nuser + nkern)
		memcpy(st->locs, locs, (nuser + nkern) * sizeof(*locs));
	assert_int_equal(agg_add(S(t)->agg, st, count, ns), 0);
	free(st);
}

#define BIG_NS ((1ULL << 53) + 1) /* not a double */
#define BIG_CGROUP ((1ULL << 53) + 3)

static struct target *sample(struct sym *s, uint32_t id)
{
	struct target *t = target_new(id);
	struct sample *sp = sample_new();
	cJSON *crit = cJSON_Parse("[\"alloc=*->prog.my_alloc->*\", \"io=*->libc.so.6.read\"]");
	cJSON *err = NULL;
	uint32_t proc, gc, L[8];

	assert_non_null(t);
	assert_non_null(sp);
	t->inst[INST_SAMPLE] = sp;
	snprintf(t->name, sizeof(t->name), "sample \"quoted\" é");
	snprintf(t->comm, sizeof(t->comm), "prog");
	t->owner = 1000;
	t->kind = TARGET_PID;
	t->pid = 4242;
	S(t)->real = S(t)->kernel = t->children = S(t)->icase = true;
	S(t)->interval_us = 250;
	S(t)->period_ns = 249000; /* (the timers', off the interval) */
	snprintf(S(t)->unwind, sizeof(S(t)->unwind), "dwarf");
	S(t)->dwarf = true;
	S(t)->when_text = strdup("Prog.main->*");
	assert_int_equal(pat_parse(S(t)->when_text, PAT_ICASE, &S(t)->when, NULL), 0);
	assert_int_equal(sample_set_criticals(S(t), crit, &err), 0);
	cJSON_Delete(crit);
	t->state = TARGET_EXITED;
	t->elapsed_saved = 12.345678901234567;
	t->start_wall = 1795469337.575378;
	t->root_exited = true;
	t->exit_status = 9; /* killed by SIGKILL */
	S(t)->seen_samples = 123456;
	S(t)->lost.lost_counts_full = 1;
	S(t)->lost.lost_offcpu_full = 2;
	S(t)->lost_oom = 3;
	S(t)->lost.lost_ring_full = 4;

	/* procedures with their file and line, as libdw gives them */
	assert_int_equal(sym_intern_proc(s, "prog", "main", "prog.c", 10, &proc), 0);
	assert_int_equal(sym_intern_proc(s, "prog", "outer", "prog.c", 20, &proc), 0);
	assert_int_equal(sym_intern_proc(s, "prog", "inner", "inner.h", 3, &proc), 0);
	L[0] = loc(s, "libc.so.6", 0x29d90, "__libc_start_call_main", NULL, NULL, 0);
	L[1] = loc(s, "prog", 0x1189, "main", NULL, "prog.c", 12);
	L[2] = loc(s, "prog", 0x11a0, "inner", "outer", "inner.h", 5); /* inlined */
	L[3] = loc(s, "", 0x7f0000001000, NULL, NULL, NULL, 0);	      /* anonymous memory */
	/* two kernel addresses a double cannot tell apart */
	L[4] = loc(s, "kernel", 0xffffffff81234567, "schedule", NULL, NULL, 0);
	L[5] = loc(s, "kernel", 0xffffffff81234568, "__schedule", NULL, NULL, 0);
	L[6] = loc(s, "libc.so.6", 0x1147d0, "read", NULL, NULL, 0);
	assert_int_equal(sym_intern_str(s, "gc", &gc), 0);

	add(t, PCMON_KIND_ONCPU, AGG_WALK_OK, 0, 0, (uint32_t[]){ L[0], L[1], L[2] }, 3, 0, 100, 0);
	add(t, PCMON_KIND_ONCPU_KMODE, AGG_WALK_OK, 0, 0, (uint32_t[]){ L[0], L[1], L[4], L[5] }, 2,
	    2, 7, 0);
	add(t, PCMON_KIND_OFF_BLOCKED, AGG_WALK_OK, 0, 0,
	    (uint32_t[]){ L[0], L[1], L[6], L[5], L[4] }, 3, 2, 3, BIG_NS);
	add(t, PCMON_KIND_OFF_RUNNABLE, AGG_WALK_OK, 0, 0, (uint32_t[]){ L[0], L[1] }, 2, 0, 2,
	    5000000000ULL);
	add(t, PCMON_KIND_ONCPU, AGG_UNWALK_TRUNCATED, 0, 0, (uint32_t[]){ L[2] }, 1, 0, 4, 0);
	add(t, PCMON_KIND_ONCPU, AGG_WALK_OK, AGG_UNWALK_FP_CHAIN, 0, (uint32_t[]){ L[1], L[2] }, 2, 0, 5, 0);
	add(t, PCMON_KIND_ONCPU, AGG_WALK_OK, AGG_UNWALK_TRUNCATED, 0, (uint32_t[]){ L[1], L[3] }, 2, 0, 3, 0);
	add(t, PCMON_KIND_ONCPU, AGG_WALK_OK, 0, gc, (uint32_t[]){ L[0], L[1] }, 2, 0, 6, 0);
	add(t, PCMON_KIND_ONCPU, AGG_WALK_OK, 0, 0, (uint32_t[]){ L[0], L[3] }, 2, 0, 1, 0);
	add(t, PCMON_KIND_ONCPU, AGG_UNWALK_FAULT, 0, 0, NULL, 0, 0, 2, 0);
	/* a thread of the process, in a cgroup (list --by), each named */
	{
		struct agg_stack *st = calloc(1, agg_stack_size(2));
		uint32_t n;

		assert_non_null(st);
		*st = (struct agg_stack){ .kind = PCMON_KIND_ONCPU, .pid = 4242, .tid = 4243,
					  .cgroup = BIG_CGROUP, .nuser = 2 };
		st->locs[0] = L[0];
		st->locs[1] = L[1];
		assert_int_equal(agg_add(S(t)->agg, st, 9, 0), 0);
		free(st);
		assert_int_equal(sym_intern_str(s, "worker", &n), 0);
		assert_int_equal(sample_name_thread(S(t), 4243, n), 0);
		assert_int_equal(sym_intern_str(s, "prog", &n), 0);
		assert_int_equal(sample_names_set(&S(t)->processes, 4242, n), 0);
		assert_int_equal(sym_intern_str(s, "/system.slice/prog.service", &n), 0);
		assert_int_equal(sample_names_set(&S(t)->cgroups, BIG_CGROUP, n), 0);
	}
	return t;
}

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

static char *path_in(struct fx *f, const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", f->dir, name);
	return buf[i];
}

static bool exists(const char *path)
{
	struct stat sb;

	return !lstat(path, &sb);
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static char *slurp(const char *path, size_t *len)
{
	char *text = read_file(path, len);

	assert_non_null(text);
	return text;
}

/* The listing of a target as `pcmon list` computes it. */
static void list(const struct sym *s, const struct target *t, struct agg_list *l)
{
	struct agg_list_opts lo = { .period_ns = S(t)->period_ns, .when = S(t)->when,
				    .kernel = S(t)->kernel, .no_inline = S(t)->no_inline };
	struct agg_critical *crit;
	cJSON *err = NULL;
	size_t n;

	assert_int_equal(sample_list_criticals(S(t), NULL, 0, S(t)->icase, &crit, &n, &err), 0);
	lo.crit = crit;
	lo.ncrit = n;
	assert_int_equal(agg_list(S(t)->agg, s, &lo, l), 0);
	sample_free_criticals(S(t), crit, n);
}

static const struct agg_row *row(const struct sym *s, const struct agg_list *l, const char *full)
{
	for (size_t i = 0; i < l->nrows; i++)
		if (!strcmp(sym_str(s, sym_proc(s, l->rows[i].proc)->full), full))
			return &l->rows[i];
	return NULL;
}

/* Same listing from two symbol tables: totals, and each procedure's counts. */
static void assert_same_listing(const struct sym *s1, const struct target *t1,
				const struct sym *s2, const struct target *t2)
{
	struct agg_list a, b;

	list(s1, t1, &a);
	list(s2, t2, &b);
	assert_int_equal(a.interrupts, b.interrupts);
	assert_int_equal(a.counted, b.counted);
	assert_int_equal(a.not_matching, b.not_matching);
	assert_int_equal(a.foreign, b.foreign);
	assert_int_equal(a.kernel_mode, b.kernel_mode);
	assert_int_equal(a.off_blocked_ns, b.off_blocked_ns);
	assert_int_equal(a.off_runnable_ns, b.off_runnable_ns);
	assert_memory_equal(a.cut, b.cut, sizeof(a.cut));
	assert_memory_equal(a.unwalk, b.unwalk, sizeof(a.unwalk));
	assert_memory_equal(a.crit, b.crit, sizeof(a.crit));
	assert_int_equal(a.nmarked, b.nmarked);
	assert_int_equal(a.nrows, b.nrows);
	for (size_t i = 0; i < a.nrows; i++) {
		const struct sym_procinfo *p = sym_proc(s1, a.rows[i].proc);
		const struct agg_row *r = row(s2, &b, sym_str(s1, p->full));
		const struct sym_procinfo *q;

		assert_non_null(r);
		assert_int_equal(r->shallow, a.rows[i].shallow);
		assert_int_equal(r->deep, a.rows[i].deep);
		q = sym_proc(s2, r->proc);
		assert_string_equal(sym_str(s2, q->file), sym_str(s1, p->file));
		assert_int_equal(q->line, p->line);
	}
	agg_list_free(&a);
	agg_list_free(&b);
}

static void load_all(struct fx *f)
{
	uint32_t next = 1;

	store_load_all(f->st, f->s2, f->loaded, PCMON_MAX_TARGETS, &next);
}

static int nloaded(struct fx *f)
{
	int n = 0;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		n += f->loaded[i] != NULL;
	return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Round trip */

static void test_round_trip(void **state)
{
	struct fx *f = *state;
	struct target *t;
	char *a, *b, *text;
	const struct sym_loc *k1, *k2;
	uint64_t count, ns, big = 0;
	uint32_t proc;

	f->t = sample(f->s, 7);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	assert_true(exists(path_in(f, "target-7.json")));
	assert_false(exists(path_in(f, "target-7.json.tmp")));
	text = slurp(path_in(f, "target-7.json"), NULL);
	assert_non_null(strstr(text, "\"format\":5"));
	assert_non_null(strstr(text, "\"kind\":\"pid\""));
	assert_non_null(strstr(text, "\"state\":\"exited\""));
	assert_non_null(strstr(text, "\"k\":\"off_blocked\""));
	assert_non_null(strstr(text, "\"u\":\"truncated\""));
	assert_non_null(strstr(text, "\"a\":\"0xffffffff81234567\""));
	assert_non_null(strstr(text, "\"ns\":\"9007199254740993\""));
	free(text);

	load_all(f);
	t = f->loaded[7];
	assert_non_null(t);
	assert_int_equal(nloaded(f), 1);
	assert_string_equal(t->name, f->t->name);
	assert_string_equal(t->comm, "prog");
	assert_int_equal(t->owner, 1000);
	assert_int_equal(t->kind, TARGET_PID);
	assert_int_equal(t->pid, 4242);
	assert_true(S(t)->real && S(t)->kernel && t->children && S(t)->icase && !S(t)->no_inline);
	assert_int_equal(S(t)->period_ns, 249000);
	assert_int_equal(S(t)->interval_us, 250);
	assert_string_equal(S(t)->unwind, "dwarf");
	assert_string_equal(S(t)->when_text, "Prog.main->*");
	assert_non_null(S(t)->when);
	assert_int_equal(S(t)->ncrit, 2);
	assert_string_equal(S(t)->crit[1].name, "io");
	assert_string_equal(S(t)->crit[1].text, "*->libc.so.6.read");
	assert_int_equal(t->state, TARGET_EXITED);
	assert_true(target_elapsed(t) == f->t->elapsed_saved);
	assert_true(t->start_wall == f->t->start_wall);
	assert_true(t->root_exited);
	assert_int_equal(t->exit_status, 9);
	assert_int_equal(S(t)->seen_samples, 123456);
	assert_int_equal(sample_lost(S(t)), 10);
	assert_int_equal(agg_count(S(t)->agg), agg_count(S(f->t)->agg));

	/* what a double would have merged, or rounded, is exact */
	for (size_t i = 0; i < agg_count(S(t)->agg); i++) {
		const struct agg_stack *st = agg_get(S(t)->agg, i, &count, &ns);

		if (st->kind == PCMON_KIND_ONCPU_KMODE) {
			k1 = sym_loc(f->s2, st->locs[2]);
			k2 = sym_loc(f->s2, st->locs[3]);
			assert_int_equal(k1->addr, 0xffffffff81234567ULL);
			assert_int_equal(k2->addr, 0xffffffff81234568ULL);
			proc = sym_frames(f->s2, k2)[0];
			assert_string_equal(sym_str(f->s2, sym_proc(f->s2, proc)->name),
					    "__schedule");
		}
		if (st->kind == PCMON_KIND_OFF_BLOCKED)
			big = ns;
	}
	assert_int_equal(big, BIG_NS);
	/* threads, processes and cgroups keep their names */
	assert_string_equal(sym_str(f->s2, sample_thread_name(S(t), 4243)), "worker");
	assert_string_equal(sym_str(f->s2, sample_process_name(S(t), 4242)), "prog");
	assert_string_equal(sym_str(f->s2, sample_cgroup_name(S(t), BIG_CGROUP)),
			    "/system.slice/prog.service");
	for (size_t i = 0, seen = 0; i < agg_count(S(t)->agg) || !seen; i++) {
		const struct agg_stack *st = agg_get(S(t)->agg, i, &count, &ns);

		assert_non_null(st);
		if (st->tid == 4243) {
			assert_int_equal(st->cgroup, BIG_CGROUP);
			assert_int_equal(count, 9);
			seen = 1;
		}
	}

	/* the same listing, procedures' files and lines included; the same file once saved again */
	assert_same_listing(f->s, f->t, f->s2, t);
	a = store_render(f->s, f->t);
	b = store_render(f->s2, t);
	assert_non_null(a);
	assert_non_null(b);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* A running target is listed as stopped after a restart, with what was saved. */
static void test_running_loads_stopped(void **state)
{
	struct fx *f = *state;

	f->t = sample(f->s, 3);
	f->t->state = TARGET_PAUSED;
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	load_all(f);
	assert_non_null(f->loaded[3]);
	assert_int_equal(f->loaded[3]->state, TARGET_STOPPED);
}

/* ---------------------------------------------------------------------------------------- */
/* Format 1: a real file from the pcmond before format 2 */

static void test_format1_fixture_loads(void **state)
{
	struct fx *f = *state;
	size_t len;
	char *text = slurp(FIXTURE_V1, &len);
	struct target *t;
	struct agg_list l;
	uint64_t count, ns, sum = 0;
	char *a, *b;

	write_text(path_in(f, "target-2.json"), text, len);
	free(text);
	load_all(f);
	t = f->loaded[2];
	assert_non_null(t);
	assert_true(exists(path_in(f, "target-2.json"))); /* not rewritten until it changes */
	assert_string_equal(t->name, "crit");
	assert_int_equal(t->kind, TARGET_PID);
	assert_int_equal(t->pid, 13793);
	assert_true(S(t)->real && S(t)->kernel && t->children && !S(t)->icase);
	assert_int_equal(S(t)->period_ns, 2000000);
	assert_string_equal(S(t)->unwind, "auto");
	assert_string_equal(S(t)->when_text, "*->main->*");
	assert_int_equal(S(t)->ncrit, 1);
	assert_string_equal(S(t)->crit[0].name, "alloc");
	assert_int_equal(t->state, TARGET_EXITED);
	assert_true(t->root_exited);
	assert_int_equal(t->exit_status, 0);
	assert_int_equal(S(t)->seen_samples, 515);
	assert_int_equal(sample_lost(S(t)), 0);
	/*
	 * The file has 21 stacks; format 1 wrote kernel addresses as doubles, and two pairs of
	 * them differ only in addresses rounded to the same double: each pair is one stack now,
	 * with the counts of both.
	 */
	assert_int_equal(agg_count(S(t)->agg), 19);
	for (size_t i = 0; i < agg_count(S(t)->agg); i++) {
		agg_get(S(t)->agg, i, &count, &ns);
		sum += count;
	}
	assert_int_equal(sum, 515);

	/* what `pcmon list 2` showed before the restart, from the daemon that wrote the file */
	list(f->s2, t, &l);
	assert_int_equal(l.interrupts, 680);
	assert_int_equal(l.counted, 653);
	assert_int_equal(l.not_matching, 27);
	assert_int_equal(l.kernel_mode, 24);
	assert_int_equal(l.oncpu, 147);
	assert_int_equal(l.off_runnable, 533);
	assert_int_equal(l.off_runnable_ns, 1067631451);
	assert_int_equal(l.unwalk[AGG_WALK_OK], 653);
	assert_int_equal(l.unwalk[AGG_UNWALK_NOCFI], 653);
	assert_int_equal(l.crit[0], 0);
	agg_list_free(&l);

	/* saved again, it is a file of the current format that loads the same */
	a = store_render(f->s2, t);
	assert_non_null(a);
	assert_non_null(strstr(a, "\"format\":5"));
	assert_int_equal(store_parse(a, strlen(a), 2, f->s, &f->t, (char[128]){ 0 }, 128), 0);
	b = store_render(f->s, f->t);
	assert_string_equal(a, b);
	assert_same_listing(f->s2, t, f->s, f->t);
	free(a);
	free(b);
}

/* Format 2: a real file from the pcmond before instruments had sections */
static void test_format2_fixture_loads(void **state)
{
	struct fx *f = *state;
	size_t len;
	char *text = slurp(FIXTURE_V2, &len), *a, *b;
	struct target *t;
	struct agg_list l;
	uint64_t gc = 0, mark = 0;

	write_text(path_in(f, "target-1.json"), text, len);
	free(text);
	load_all(f);
	t = f->loaded[1];
	assert_non_null(t);
	assert_string_equal(t->name, "crit2");
	assert_int_equal(t->kind, TARGET_PID);
	assert_true(t->children);
	assert_int_equal(t->state, TARGET_EXITED);
	assert_non_null(S(t));
	assert_true(S(t)->real && S(t)->kernel && !S(t)->icase);
	assert_int_equal(S(t)->period_ns, 2000000);
	assert_string_equal(S(t)->unwind, "auto");
	assert_string_equal(S(t)->when_text, "*->main->*");
	assert_int_equal(S(t)->ncrit, 1);
	assert_int_equal(S(t)->seen_samples, 1614);

	/* what `pcmon run` printed from the daemon that wrote the file */
	list(f->s2, t, &l);
	assert_int_equal(l.interrupts, 1560);
	assert_int_equal(l.counted, 1558);
	assert_int_equal(l.not_matching, 2);
	assert_int_equal(l.kernel_mode, 57);
	assert_int_equal(l.off_blocked, 0);
	assert_int_equal(l.off_runnable, 51);
	assert_int_equal(l.marks_pending, 2);
	for (size_t i = 0; i < l.nmarked; i++) {
		const char *name = sym_str(f->s2, l.marked[i].name);

		gc += strcmp(name, "gc") ? 0 : l.marked[i].count;
		mark += strcmp(name, "mark") ? 0 : l.marked[i].count;
	}
	assert_int_equal(gc, 253);
	assert_int_equal(mark, 135);
	agg_list_free(&l);

	/* saved again, it is a file of the current format that loads the same */
	a = store_render(f->s2, t);
	assert_non_null(a);
	assert_non_null(strstr(a, "\"format\":5"));
	assert_int_equal(store_parse(a, strlen(a), 1, f->s, &f->t, (char[128]){ 0 }, 128), 0);
	b = store_render(f->s, f->t);
	assert_string_equal(a, b);
	assert_same_listing(f->s2, t, f->s, f->t);
	free(a);
	free(b);
}

/*
 * Formats 4 and 5: real files (beside each, replies.json holds what the pcmond that wrote it
 * answered; test_store.py asks again). Here: each loads; saved again, its call table has
 * slices of rows as wide as its totals (format 4: the totals as one slice; format 5 as first
 * written: rows without the fields added since, widened), whose calls add up to each
 * procedure's; and that file loads the same.
 */
static void fixture_saved_again(struct fx *f, const char *path, const char *name)
{
	size_t len;
	char *text = slurp(path, &len), *a, *b;
	struct target *t;
	cJSON *o, *calls, *fns, *it;
	uint64_t sum[8] = { 0 };
	int nfns, nrows = 0;

	write_text(path_in(f, "target-1.json"), text, len);
	free(text);
	load_all(f);
	t = f->loaded[1];
	assert_non_null(t);
	assert_string_equal(t->name, name);
	assert_int_equal(t->state, TARGET_EXITED);
	a = store_render(f->s2, t);
	assert_non_null(a);
	assert_non_null(strstr(a, "\"format\":5"));
	o = cJSON_Parse(a);
	calls = cJSON_GetObjectItem(o, "calls");
	fns = cJSON_GetObjectItem(calls, "procedures");
	nfns = cJSON_GetArraySize(fns);
	assert_true(nfns > 0 && nfns <= 8);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetObjectItem(calls, "slices"), "list")) {
		const cJSON *row = cJSON_GetObjectItem(it, "s");
		int n = cJSON_GetArraySize(row);

		assert_int_equal(n % (1 + COUNT_WIDTH), 0);
		for (int k = 0; k < n; k += 1 + COUNT_WIDTH, nrows++) {
			int id = (int)cJSON_GetArrayItem(row, k)->valuedouble;

			assert_true(id >= 0 && id < nfns);
			sum[id] += (uint64_t)cJSON_GetArrayItem(row, k + 1)->valuedouble;
		}
	}
	assert_true(nrows >= nfns);
	for (int i = 0; i < nfns; i++)
		assert_int_equal(
			sum[i],
			cJSON_GetObjectItem(cJSON_GetArrayItem(fns, i), "calls")->valuedouble);
	cJSON_Delete(o);
	assert_int_equal(store_parse(a, strlen(a), 1, f->s, &f->t, (char[128]){ 0 }, 128), 0);
	b = store_render(f->s, f->t);
	assert_string_equal(a, b);
	assert_same_listing(f->s2, t, f->s, f->t);
	free(a);
	free(b);
}

static void test_format4_fixture_loads(void **state)
{
	fixture_saved_again(*state, FIXTURE_V4, "fixture4");
}

static void test_format5_fixture_loads(void **state)
{
	fixture_saved_again(*state, FIXTURE_V5, "fixture5");
}

/* Fields added during format 1's life may be missing from its files. */
static void test_format1_optional_fields(void **state)
{
	struct fx *f = *state;
	char *text = slurp(FIXTURE_V1, NULL), *out, why[256];
	cJSON *o = cJSON_Parse(text);
	const char *gone[] = { "when_from_file", "no_inline", "unwind", "lost_ring_full" };

	assert_non_null(o);
	for (size_t i = 0; i < ARRAY_SIZE(gone); i++)
		cJSON_DeleteItemFromObjectCaseSensitive(o, gone[i]);
	for (cJSON *st = cJSON_GetObjectItem(o, "stacks")->child; st; st = st->next) {
		cJSON_DeleteItemFromObjectCaseSensitive(st, "u");
		cJSON_DeleteItemFromObjectCaseSensitive(st, "s");
	}
	out = cJSON_PrintUnformatted(o);
	assert_int_equal(store_parse(out, strlen(out), 2, f->s, &f->t, why, sizeof(why)), 0);
	assert_string_equal(S(f->t)->unwind, "fp");
	free(out);
	free(text);
	cJSON_Delete(o);
}

/* ---------------------------------------------------------------------------------------- */
/* Refused files */

/* @text with the value at @path ("stacks.0.l.1") replaced by @json, or removed if NULL. */
static char *mutate(const char *text, const char *path, const char *json)
{
	cJSON *root = cJSON_Parse(text), *parent = NULL, *cur = root, *val = NULL;
	char buf[128], *save, *key = NULL, *out;

	assert_non_null(root);
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		assert_non_null(cur);
		parent = cur;
		key = k;
		cur = cJSON_IsArray(cur) ? cJSON_GetArrayItem(cur, atoi(k))
					 : cJSON_GetObjectItemCaseSensitive(cur, k);
	}
	if (json) {
		val = cJSON_CreateRaw(json); /* as written: 1e400 too */
		assert_non_null(val);
	}
	if (cJSON_IsArray(parent)) {
		if (val)
			cJSON_ReplaceItemInArray(parent, atoi(key), val);
		else
			cJSON_DeleteItemFromArray(parent, atoi(key));
	} else if (val && cur) {
		cJSON_ReplaceItemInObjectCaseSensitive(parent, key, val);
	} else if (val) {
		cJSON_AddItemToObject(parent, key, val);
	} else {
		cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
	}
	out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	assert_non_null(out);
	return out;
}

/* Refused, naming @why, leaving nothing: no target, nothing new in the symbol tables. */
static void assert_refused(struct fx *f, const char *text, size_t len, uint32_t id, const char *why)
{
	struct sym_stats before, after;
	uint32_t nprocs = sym_nprocs(f->s2);
	struct target *t = (struct target *)1;
	char msg[512];
	int r;

	sym_stats(f->s2, &before);
	r = store_parse(text, len, id, f->s2, &t, msg, sizeof(msg));
	if (r != -EINVAL || (why && !strstr(msg, why)))
		fail_msg("wanted a refusal with \"%s\", got %d \"%s\" for %.300s", why ? why : "",
			 r, msg, text);
	assert_null(t);
	sym_stats(f->s2, &after);
	assert_int_equal(after.locs, before.locs);
	assert_int_equal(sym_nprocs(f->s2), nprocs);
}

struct bad_case {
	const char *path, *json, *why;
};

static const struct bad_case bad_v3[] = {
	{ "format", "6", "format: 6: this pcmond reads formats 1 to 5 (written by a newer" },
	{ "format", "0", "format: 0:" },
	{ "format", NULL, "format: missing" },
	{ "format", "\"3\"", "format: a string where a whole number belongs" },
	{ "id", "\"7\"", "id: a string where" },
	{ "id", "0", "id: 0 is not a target id" },
	{ "id", "256", "id: 256 is more than 255" },
	{ "id", "8", "id: 8, but the file is named for target 7" },
	{ "name", "5", "name: a number where a string belongs" },
	{ "name", "\"0123456789012345678901234567890123456789012345678901234567890123\"",
	  "name: longer than 63 bytes" },
	{ "comm", NULL, "comm: missing" },
	{ "owner", "-1", "owner: -1 is negative" },
	{ "owner", "4294967295", "owner: 4294967295 is more than 4294967294" },
	{ "kind", "0", "kind: a number where a name belongs" },
	{ "kind", "\"process\"", "kind: unknown value \"process\"" },
	{ "pid", "3.5", "pid: 3.5 is not a whole number" },
	{ "pid", "4194305", "pid: 4194305 is more than 4194304" },
	{ "sampling.real", "1", "sampling.real: a number where true or false belongs" },
	{ "children", "null", "children: null where true or false belongs" },
	{ "sampling.interval_us", "0", "sampling.interval_us: 0 is not an interval" },
	{ "sampling.interval_us", "60000001", "sampling.interval_us: 60000001 is more than 60000000" },
	{ "sampling.when", "\"main->\"", "sampling.when: column" },
	{ "sampling.when", "[]", "sampling.when: an array where a string belongs" },
	{ "sampling.unwind", "\"lbr\"", "sampling.unwind: unknown method \"lbr\"" },
	{ "sampling.unwind", NULL, "sampling.unwind: missing" },
	{ "sampling.critical", "\"a=b\"", "sampling.critical: a string where an array belongs" },
	{ "sampling.critical", "[\"nameonly\"]", "sampling.critical: --critical 'nameonly': expected NAME=PATTERN" },
	{ "sampling.critical", "[\"a=b\", 7]", "sampling.critical[1]: a number where a string NAME=PATTERN belongs" },
	{ "state", "\"zombie\"", "state: unknown value \"zombie\"" },
	{ "state", "2", "state: a number where a name belongs" },
	{ "elapsed_s", "-1", "elapsed_s: -1 is not in [0, 1e+09]" },
	/* (its end in nanoseconds would not fit a u64: the fuzzer's find) */
	{ "start_wall", "2.1e10", "start_wall: 2.1e+10 is not in [0, 1e+10]" },
	{ "elapsed_s", "1e400", "elapsed_s: inf is not in" },
	{ "elapsed_s", "\"3\"", "elapsed_s: a string where a number belongs" },
	{ "start_wall", "-0.5", "start_wall: -0.5 is not in" },
	{ "root_exited", "\"yes\"", "root_exited: a string where true or false" },
	{ "wait_status", "65536", "wait_status: 65536 is more than 65535" },
	{ "sampling.seen", "-5", "sampling.seen: -5 is negative" },
	{ "sampling.seen", "9007199254740993", "sampling.seen: 9007199254740992 is too large to be exact" },
	{ "sampling.seen", "1e300", "sampling.seen: 1.0000000000000001e+300 does not fit 64 bits" },
	{ "sampling.seen", "\"18446744073709551616\"",
	  "sampling.seen: \"18446744073709551616\" does not fit 64 bits" },
	{ "sampling.seen", "\"12a\"", "sampling.seen: \"12a\" is not a whole number" },
	{ "sampling.seen", "\"\"", "sampling.seen: empty string" },
	{ "sampling.seen", "\"-1\"", "sampling.seen: \"-1\" is not a whole number" },
	{ "sampling.lost_oom", NULL, "sampling.lost_oom: missing" },
	{ "sampling.lost_ring_full", NULL, "sampling.lost_ring_full: missing" },
	{ "sampling.lost_counts_full", "0.25", "sampling.lost_counts_full: 0.25 is not a whole number" },
	{ "sampling.procs", "{}", "procs: an object where an array belongs" },
	{ "sampling.procs", NULL, "sampling.procs: missing" },
	{ "sampling.procs.0", "3", "sampling.procs[0]: a number where an object belongs" },
	{ "sampling.procs.0.m", "null", "sampling.procs[0].m: null where a string belongs" },
	{ "sampling.procs.0.n", NULL, "sampling.procs[0].n: missing" },
	{ "sampling.procs.1.line", "-3", "sampling.procs[1].line: -3 is negative" },
	{ "sampling.procs.1.file", "false", "sampling.procs[1].file: a boolean where a string belongs" },
	{ "sampling.locs", NULL, "sampling.locs: missing" },
	{ "sampling.locs.0", "[]", "sampling.locs[0]: an array where an object belongs" },
	{ "sampling.locs.0.a", "12", "sampling.locs[0].a: a number where a hex string belongs" },
	{ "sampling.locs.0.a", "\"0x\"", "sampling.locs[0].a: \"0x\" has no digits" },
	{ "sampling.locs.0.a", "\"0x1ffffffffffffffff\"",
	  "sampling.locs[0].a: \"0x1ffffffffffffffff\" is not a 64-bit" },
	{ "sampling.locs.0.a", "\"0xfg\"", "sampling.locs[0].a: \"0xfg\" is not a 64-bit hex number" },
	{ "sampling.locs.0.a", "\"4096\"", "sampling.locs[0].a: \"4096\" does not start with 0x" },
	{ "sampling.locs.0.f", "[]", "sampling.locs[0].f: a location has at least one frame" },
	{ "sampling.locs.0.f", "{}", "locs[0].f: an object where an array belongs" },
	{ "sampling.locs.0.f.0", "99999", "sampling.locs[0].f[0]: 99999 is more than" },
	{ "sampling.locs.0.f.0", "-1", "sampling.locs[0].f[0]: -1 is negative" },
	{ "sampling.locs.0.f.0", "\"main\"", "sampling.locs[0].f[0]: a string where a procedure index belongs" },
	{ "sampling.locs.0.line", "4294967296", "sampling.locs[0].line: 4294967296 is more than 4294967295" },
	{ "sampling.stacks", NULL, "sampling.stacks: missing" },
	{ "sampling.stacks", "7", "sampling.stacks: a number where an array belongs" },
	{ "sampling.stacks.0", "[]", "sampling.stacks[0]: an array where an object belongs" },
	{ "sampling.stacks.0.k", "\"idle\"", "sampling.stacks[0].k: unknown value \"idle\"" },
	{ "sampling.stacks.0.k", "1", "sampling.stacks[0].k: a number where a name belongs" },
	{ "sampling.stacks.0.k", NULL, "sampling.stacks[0].k: missing" },
	{ "sampling.stacks.0.u", "\"unwalkable\"", "sampling.stacks[0].u: unknown value \"unwalkable\"" },
	{ "sampling.stacks.0.u", "5", "sampling.stacks[0].u: a number where a name belongs" },
	{ "sampling.stacks.0.p", "4194305", "sampling.stacks[0].p: 4194305 is more than 4194304" },
	{ "sampling.stacks.0.c", "-1", "sampling.stacks[0].c: -1 is negative" },
	{ "sampling.stacks.0.c", "1.5", "sampling.stacks[0].c: 1.5 is not a whole number" },
	{ "sampling.stacks.0.c", "9007199254740992",
	  "sampling.stacks[0].c: 9007199254740992 is too large to be exact" },
	{ "sampling.stacks.0.c", "1e300", "sampling.stacks[0].c: 1.0000000000000001e+300 does not fit 64 bits" },
	{ "sampling.stacks.0.c", "true", "sampling.stacks[0].c: a boolean where a whole number belongs" },
	{ "sampling.stacks.0.c", NULL, "sampling.stacks[0].c: missing" },
	{ "sampling.stacks.0.ns", "\"-5\"", "sampling.stacks[0].ns: \"-5\" is not a whole number" },
	{ "sampling.stacks.0.ns", "-1e-300", "sampling.stacks[0].ns: -1e-300 is negative" },
	{ "sampling.stacks.0.nu", "4", "sampling.stacks[0].nu: 4 is more than 3" },
	{ "sampling.stacks.0.nu", "-1", "sampling.stacks[0].nu: -1 is negative" },
	{ "sampling.stacks.0.l", "\"0\"", "sampling.stacks[0].l: a string where an array belongs" },
	{ "sampling.stacks.0.l.0", "99999", "sampling.stacks[0].l[0]: 99999 is more than" },
	{ "sampling.stacks.0.l.1", "-1", "sampling.stacks[0].l[1]: -1 is negative" },
	{ "sampling.stacks.0.l.1", "0.5", "sampling.stacks[0].l[1]: 0.5 is not a whole number" },
	{ "sampling.stacks.0.l.2", "null", "sampling.stacks[0].l[2]: null where a location index belongs" },
	{ "sampling.stacks.0.s", "\"\"", "sampling.stacks[0].s: empty section name" },
	{ "sampling.stacks.0.s", "3", "sampling.stacks[0].s: a number where a string belongs" },
	{ "children", NULL, "children: missing" },
	/* an instrument's fields are named with its section */
	{ "sampling.stacks.0.cs", "1", "sampling.stacks[0].cs: a number where true or false belongs" },
	/* threads, processes and cgroups (list --by) */
	{ "sampling.stacks.10.cg", "-1", "sampling.stacks[10].cg: -1 is negative" },
	{ "sampling.stacks.10.t", "4194305", "sampling.stacks[10].t: 4194305 is more than" },
	{ "sampling.threads", "{}", "sampling.threads: an object where an array belongs" },
	{ "sampling.threads.0.n", NULL, "sampling.threads[0].n: missing" },
	{ "sampling.processes.0", "3", "sampling.processes[0]: a number where an object belongs" },
	{ "sampling.processes.0.p", "4194305", "sampling.processes[0].p: 4194305 is more than" },
	{ "sampling.cgroups.0.id", "\"x\"", "sampling.cgroups[0].id: \"x\" is not a whole number" },
	{ "sampling.cgroups.0.path", "5", "sampling.cgroups[0].path: a number where a string" },
	{ "sampling.stacks.8.c", "\"18446744073709551615\"",
	  "sampling.stacks[8].c: the counts of the stacks add up to more than 64 bits" },
	{ "sampling.stacks.3.ns", "\"18446744073709551615\"",
	  "sampling.stacks[3].ns: the times of the stacks add up to more than 64 bits" },
	{ "sampling.interval_us", "0", "sampling.interval_us: 0 is not an interval" },
	{ "sampling.unwind", NULL, "sampling.unwind: missing" },
	{ "sampling.when", "\"*->(\"", "sampling.when: column" },
	{ "sampling", "[]", "sampling: an array where an object belongs" },
	{ "sampling", NULL, "file: no instrument's results in it" },
	/* a bad section beside a good sampling one: refused whole, no name of it kept */
	{ "calls", "{\"patterns\":5}", "calls.patterns: a number where an array belongs" },
	{ "tables", "[]", "tables: an array where an object belongs" },
};

/* Format 2: sampling's fields at the top level (a real file, FIXTURE_V2). */
static const struct bad_case bad_v2[] = {
	{ "stacks.0.cs", "1", "stacks[0].cs: a number where true or false belongs" },
	{ "stacks.0.k", "3", "stacks[0].k: a number where a name belongs" },
	{ "unwind", NULL, "unwind: missing" },
	{ "interval_us", NULL, "interval_us: missing" },
	{ "locs.0.a", "4096", "locs[0].a: a number where a hex string belongs" },
	{ "procs.0.m", NULL, "procs[0].m: missing" },
	{ "format", "6", "format: 6: this pcmond reads formats 1 to 5" },
};

static const struct bad_case bad_v1[] = {
	{ "stacks.0.c", "-1", "stacks[0].c: -1 is negative" }, /* the audit's: it loaded as 2^64 */
	{ "stacks.0.c", "1e17", "stacks[0].c: 1e+17 is too large to be exact" },
	{ "stacks.0.c", "1e20", "stacks[0].c: 1e+20 does not fit 64 bits" },
	{ "stacks.0.c", "\"5\"", "stacks[0].c: a string where a whole number belongs" },
	{ "seen", "-515", "seen: -515 is negative" },
	{ "kind", "3", "kind: 3 is more than 2" },
	{ "kind", "-1", "kind: -1 is negative" },
	{ "kind", "\"pid\"", "kind: a string where a number belongs" },
	{ "state", "4", "state: 4 is more than 3" },
	{ "state", "2.5", "state: 2.5 is not a whole number" },
	{ "stacks.0.k", "4", "stacks[0].k: 4 is more than 3" },
	{ "stacks.0.u", "6", "stacks[0].u: 6 is more than 5" },
	{ "stacks.0.u", "-1", "stacks[0].u: -1 is negative" },
	{ "stacks.0.ns", "-1", "stacks[0].ns: -1 is negative" },
	{ "stacks.0.ns", "1.8446744073709552e19",
	  "stacks[0].ns: 1.8446744073709552e+19 does not fit 64 bits" },
	{ "stacks.0.nu", "7", "stacks[0].nu: 7 is more than 6" },
	{ "stacks.0.l.0", "41", "stacks[0].l[0]: 41 is more than 40" },
	{ "stacks.0.l.0", "-1", "stacks[0].l[0]: -1 is negative" },
	{ "locs.0.a", "1.8446744073709552e19",
	  "locs[0].a: 1.8446744073709552e+19 does not fit 64 bits" },
	{ "locs.0.a", "-4096", "locs[0].a: -4096 is negative" },
	{ "locs.0.a", "\"0x1000\"", "locs[0].a: a string where a number belongs" },
	{ "locs.0.m", NULL, "locs[0].m: missing" },
	{ "locs.0.f.0", "3", "locs[0].f[0]: a number where a procedure name belongs" },
	{ "locs.0.f", "[]", "locs[0].f: a location has at least one frame" },
	{ "name", NULL, "name: missing" },
	{ "critical", NULL, "critical: missing" },
	{ "when", "\"*->(\"", "when: column" },
	{ "id", "3", "id: 3, but the file is named for target 2" },
};

static void run_bad(struct fx *f, const char *base, uint32_t id, const struct bad_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *text = mutate(base, c[i].path, c[i].json);

		assert_refused(f, text, strlen(text), id, c[i].why);
		free(text);
	}
}

static void test_refused_fields_format3(void **state)
{
	struct fx *f = *state;
	char *base, why[256];

	f->t = sample(f->s, 7);
	base = store_render(f->s, f->t);
	assert_non_null(base);
	assert_int_equal(store_parse(base, strlen(base), 7, f->s2, &f->loaded[7], why, sizeof(why)),
			 0);
	run_bad(f, base, 7, bad_v3, ARRAY_SIZE(bad_v3));
	free(base);
}

static void test_refused_fields_format2(void **state)
{
	struct fx *f = *state;
	char *base = slurp(FIXTURE_V2, NULL);

	run_bad(f, base, 1, bad_v2, ARRAY_SIZE(bad_v2));
	free(base);
}

static void test_refused_fields_format1(void **state)
{
	struct fx *f = *state;
	char *base = slurp(FIXTURE_V1, NULL);

	run_bad(f, base, 2, bad_v1, ARRAY_SIZE(bad_v1));
	free(base);
}

/* A location's inline chain is in one object; stacks and frames have a size. */
static void test_refused_shapes(void **state)
{
	struct fx *f = *state;
	char *base, *text;
	cJSON *o, *l, *fr;

	f->t = sample(f->s, 7);
	base = store_render(f->s, f->t);
	o = cJSON_Parse(base);
	/* the inline location (two frames): make its outer frame a libc procedure (index 0) */
	for (cJSON *x = SECTION(o, "locs")->child; x; x = x->next) {
		fr = cJSON_GetObjectItem(x, "f");
		if (cJSON_GetArraySize(fr) == 2) {
			cJSON_ReplaceItemInArray(fr, 1, cJSON_CreateNumber(0));
			break;
		}
	}
	text = cJSON_PrintUnformatted(o);
	assert_refused(f, text, strlen(text), 7,
		       "procedure of module \"libc.so.6\" in a location of \"prog\"");
	free(text);
	cJSON_Delete(o);

	/* absurd sizes: a stack of 9000 locations, a location of 5000 frames */
	o = cJSON_Parse(base);
	l = cJSON_GetObjectItem(cJSON_GetArrayItem(SECTION(o, "stacks"), 0), "l");
	for (int i = 0; i < 9000; i++)
		cJSON_AddItemToArray(l, cJSON_CreateNumber(0));
	text = cJSON_PrintUnformatted(o);
	assert_refused(f, text, strlen(text), 7, "stacks[0].l: 9003 entries, more than 8192");
	free(text);
	cJSON_Delete(o);
	o = cJSON_Parse(base);
	fr = cJSON_GetObjectItem(cJSON_GetArrayItem(SECTION(o, "locs"), 0), "f");
	for (int i = 0; i < 5000; i++)
		cJSON_AddItemToArray(fr, cJSON_CreateNumber(0));
	text = cJSON_PrintUnformatted(o);
	assert_refused(f, text, strlen(text), 7, "locs[0].f: 5001 entries, more than 4096");
	free(text);
	cJSON_Delete(o);
	free(base);
}

/* Not JSON, not an object, cut anywhere: refused, never UB. */
static void test_refused_truncated(void **state)
{
	struct fx *f = *state;
	const char *files[2];
	char *v2, *v1 = slurp(FIXTURE_V1, NULL);

	f->t = sample(f->s, 7);
	v2 = store_render(f->s, f->t);
	files[0] = v2;
	files[1] = v1;
	for (int k = 0; k < 2; k++) {
		size_t n = strlen(files[k]);

		for (size_t len = 0; len < n; len++) {
			/* a copy of exactly len bytes, so that ASan sees any read past it */
			char *cut = malloc(len ? len : 1);

			memcpy(cut, files[k], len);
			assert_refused(f, cut, len, 0, "file: not JSON");
			free(cut);
		}
	}
	assert_refused(f, "", 0, 0, "file: not JSON");
	assert_refused(f, "[]", 2, 0, "file: an array where an object belongs");
	assert_refused(f, "null", 4, 0, "file: null where an object belongs");
	assert_refused(f, "{} {}", 5, 0, "file: bytes after the JSON object (at byte 3 of 5)");
	assert_refused(f, "{}\0{}", 5, 0, "file: bytes after the JSON object");
	assert_refused(f, "{}", 2, 0, "format: missing");
	assert_refused(f, "{\"format\":2}", 12, 0, "id: missing");
	free(v1);
	free(v2);
}

/* store_load_all: a refused file is reported and set aside, not overwritten later. */
static void test_refused_file_set_aside(void **state)
{
	struct fx *f = *state;
	char *good, *bad;
	size_t len;

	f->t = sample(f->s, 5);
	good = store_render(f->s, f->t);
	bad = mutate(good, "sampling.stacks.0.c", "-1");
	write_text(path_in(f, "target-5.json"), bad, strlen(bad));
	write_text(path_in(f, "target-6.json"), good, strlen(good)); /* id 5 inside: refused */
	load_all(f);
	assert_int_equal(nloaded(f), 0);
	assert_false(exists(path_in(f, "target-5.json")));
	assert_true(exists(path_in(f, "target-5.json.rejected")));
	assert_true(exists(path_in(f, "target-6.json.rejected")));
	free(good);
	good = slurp(path_in(f, "target-5.json.rejected"), &len);
	assert_string_equal(good, bad); /* kept as it was */
	/* a second refused file of the same id does not replace the first */
	write_text(path_in(f, "target-5.json"), "{", 1);
	load_all(f);
	assert_true(exists(path_in(f, "target-5.json.rejected.1")));
	assert_true(exists(path_in(f, "target-5.json.rejected")));
	/* names that are not ours are left alone */
	write_text(path_in(f, "target-0.json"), "x", 1);
	write_text(path_in(f, "target-07.json"), "x", 1);
	write_text(path_in(f, "target-256.json"), "x", 1);
	load_all(f);
	assert_true(exists(path_in(f, "target-0.json")));
	assert_true(exists(path_in(f, "target-07.json")));
	assert_true(exists(path_in(f, "target-256.json")));
	free(good);
	free(bad);
}

/* ---------------------------------------------------------------------------------------- */
/* Saving */

static cJSON *target_report(struct fx *f, uint32_t id)
{
	cJSON *o = cJSON_CreateObject();

	store_target_json(f->st, id, o);
	return o;
}

static cJSON *status_report(struct fx *f)
{
	cJSON *o = cJSON_CreateObject();

	store_status_json(f->st, 5000000000ULL, o);
	return o;
}

/* The temporary file cannot be made: the previous results stay, the owner is told. */
static void test_save_failure_keeps_previous(void **state)
{
	struct fx *f = *state;
	char *before, *after;
	cJSON *rep, *st;

	f->t = sample(f->s, 4);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	before = slurp(path_in(f, "target-4.json"), NULL);
	rep = target_report(f, 4);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "saved")));
	assert_null(cJSON_GetObjectItem(rep, "save_error"));
	cJSON_Delete(rep);

	S(f->t)->seen_samples++;
	assert_int_equal(mkdir(path_in(f, "target-4.json.tmp"), 0700), 0);
	assert_int_equal(store_save(f->st, f->s, f->t, true), -EISDIR);
	after = slurp(path_in(f, "target-4.json"), NULL);
	assert_string_equal(before, after);
	free(after);
	rep = target_report(f, 4);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "saved")));
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "save_error")),
			       "target-4.json.tmp: Is a directory"));
	cJSON_Delete(rep);
	rep = status_report(f);
	st = cJSON_GetObjectItem(rep, "store");
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "unsaved_targets")), 1);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "save_failures")), 1);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "saves")), 1);
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "interval_s")), 5);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(st, "last_error")),
			       "target 4: cannot create"));
	cJSON_Delete(rep);

	/* the obstacle goes: the retry saves, the last error stays in status as history */
	assert_int_equal(rmdir(path_in(f, "target-4.json.tmp")), 0);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	after = slurp(path_in(f, "target-4.json"), NULL);
	assert_string_not_equal(before, after);
	rep = target_report(f, 4);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "saved")));
	cJSON_Delete(rep);
	rep = status_report(f);
	st = cJSON_GetObjectItem(rep, "store");
	assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "unsaved_targets")), 0);
	assert_non_null(cJSON_GetObjectItem(st, "last_error"));
	cJSON_Delete(rep);
	free(before);
	free(after);
}

/* A directory where the results go: the rename fails, the temporary file is removed. */
static void test_save_directory_in_the_way(void **state)
{
	struct fx *f = *state;
	cJSON *rep;

	f->t = sample(f->s, 9);
	assert_int_equal(mkdir(path_in(f, "target-9.json"), 0700), 0);
	assert_int_equal(store_save(f->st, f->s, f->t, true), -EISDIR);
	assert_false(exists(path_in(f, "target-9.json.tmp")));
	rep = target_report(f, 9);
	assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "save_error")),
			       "cannot rename"));
	cJSON_Delete(rep);
	/* at start it is no results file: left alone, reported */
	load_all(f);
	assert_int_equal(nloaded(f), 0);
	assert_true(exists(path_in(f, "target-9.json")));
	assert_int_equal(rmdir(path_in(f, "target-9.json")), 0);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	load_all(f);
	assert_non_null(f->loaded[9]);
}

/* The state directory is gone: it is made again at the next save. */
static void test_save_recreates_directory(void **state)
{
	struct fx *f = *state;

	f->t = sample(f->s, 1);
	assert_int_equal(rmdir(f->dir), 0);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	assert_true(exists(path_in(f, "target-1.json")));
}

/* Stale temporary files of a save cut short go at start; other things stay. */
static void test_stale_tmp_removed(void **state)
{
	struct fx *f = *state;

	write_text(path_in(f, "target-3.json.tmp"), "{\"format\":2,", 12);
	write_text(path_in(f, "target-12.json.tmp"), "", 0);
	assert_int_equal(mkdir(path_in(f, "target-4.json.tmp"), 0700), 0);
	write_text(path_in(f, "notes.tmp"), "x", 1);
	load_all(f);
	assert_false(exists(path_in(f, "target-3.json.tmp")));
	assert_false(exists(path_in(f, "target-12.json.tmp")));
	assert_true(exists(path_in(f, "target-4.json.tmp")));
	assert_true(exists(path_in(f, "notes.tmp")));
	assert_int_equal(nloaded(f), 0);
}

/* pcmon drop: the file goes, and so does the target's save error. */
static void test_remove(void **state)
{
	struct fx *f = *state;
	cJSON *rep;

	f->t = sample(f->s, 2);
	assert_int_equal(store_save(f->st, f->s, f->t, true), 0);
	assert_int_equal(store_remove(f->st, 2), 0);
	assert_false(exists(path_in(f, "target-2.json")));
	assert_int_equal(store_remove(f->st, 2), 0); /* nothing there: fine */

	assert_int_equal(mkdir(path_in(f, "target-2.json.tmp"), 0700), 0);
	assert_true(store_save(f->st, f->s, f->t, true) < 0);
	assert_int_equal(store_remove(f->st, 2), 0);
	rep = target_report(f, 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "saved")));
	cJSON_Delete(rep);
	load_all(f);
	assert_int_equal(nloaded(f), 0);
}

/* Without a state directory (pcmon run's own engine) nothing is saved or reported. */
static void test_no_store(void **state)
{
	struct fx *f = *state;
	cJSON *o = cJSON_CreateObject();

	f->t = sample(f->s, 1);
	assert_int_equal(store_save(NULL, f->s, f->t, true), 0);
	assert_int_equal(store_remove(NULL, 1), 0);
	store_target_json(NULL, 1, o);
	store_status_json(NULL, 0, o);
	assert_null(o->child);
	cJSON_Delete(o);
}

/*
 * A number saved reads back as the same double: a probe cost that came back an ulp off gave
 * each procedure's time other last digits after a restart (cJSON's own printing rounds one
 * double in ten so). Whole numbers stay plain.
 */
static void test_numbers_read_back_exactly(void **state)
{
	struct sf_rd rd = { .format = 3 };
	char why[128];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	int off = 0;

	(void)state;
	rd.why = why;
	rd.whylen = sizeof(why);
	for (int i = 0; i < 20000; i++) {
		struct sf_wr w = { 0 };
		cJSON *o = cJSON_CreateObject(), *back;
		double v, got = -1;
		char *text;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v = (double)(x >> 11) / (double)(1ULL << 53) * 3000.0; /* a cost in ns, say */
		sf_put_num(&w, o, "v", v);
		assert_false(w.oom);
		text = cJSON_PrintUnformatted(o);
		back = cJSON_Parse(text);
		assert_int_equal(sf_get_double(&rd, back, "v", SF_ALWAYS, 0, 1e9, &got), 0);
		off += got != v;
		free(text);
		cJSON_Delete(o);
		cJSON_Delete(back);
	}
	assert_int_equal(off, 0);
	{
		struct sf_wr w = { 0 };
		cJSON *o = cJSON_CreateObject();
		char *text;

		sf_put_num(&w, o, "line", 1234);
		text = cJSON_PrintUnformatted(o);
		assert_string_equal(text, "{\"line\":1234}");
		free(text);
		cJSON_Delete(o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_round_trip),
		T(test_numbers_read_back_exactly),
		T(test_running_loads_stopped),
		T(test_format1_fixture_loads),
		T(test_format2_fixture_loads),
		T(test_format4_fixture_loads),
		T(test_format5_fixture_loads),
		T(test_format1_optional_fields),
		T(test_refused_fields_format3),
		T(test_refused_fields_format2),
		T(test_refused_fields_format1),
		T(test_refused_shapes),
		T(test_refused_truncated),
		T(test_refused_file_set_aside),
		T(test_save_failure_keeps_previous),
		T(test_save_directory_in_the_way),
		T(test_save_recreates_directory),
		T(test_stale_tmp_removed),
		T(test_remove),
		T(test_no_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
