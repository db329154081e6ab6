// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/pattern/pat.c: WHEN call patterns (docs/when.md).
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
#include <unistd.h>

#include "pat.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

#define MAXF 64

/* A stack written as "module/proc module/proc ..." outermost first; "-" stands for NULL. */
struct stack {
	struct pat_frame fr[MAXF];
	char buf[4096];
	size_t n;
};

static struct stack *stk(struct stack *s, const char *spec)
{
	size_t used = 0;

	s->n = 0;
	while (*spec) {
		const char *end, *slash;
		char *mod, *proc;
		size_t len;

		while (*spec == ' ')
			spec++;
		if (!*spec)
			break;
		end = strchr(spec, ' ');
		if (!end)
			end = spec + strlen(spec);
		len = (size_t)(end - spec);
		assert_true(used + len + 2 < sizeof(s->buf));
		assert_true(s->n < MAXF);
		memcpy(s->buf + used, spec, len);
		s->buf[used + len] = '\0';
		mod = s->buf + used;
		used += len + 1;
		slash = strchr(mod, '/');
		assert_non_null(slash);
		proc = (char *)slash + 1;
		*(char *)slash = '\0';
		s->fr[s->n].module = strcmp(mod, "-") ? mod : NULL;
		s->fr[s->n].proc = strcmp(proc, "-") ? proc : NULL;
		s->fr[s->n].base = NULL;
		s->n++;
		spec = end;
	}
	return s;
}

static struct pat *parse_ok(const char *text, unsigned flags)
{
	struct pat_error err = { 0 };
	struct pat *p = NULL;
	int rc = pat_parse(text, flags, &p, &err);

	if (rc)
		fail_msg("pattern '%s' rejected: column %d: %s", text, err.column, err.msg);
	assert_non_null(p);
	return p;
}

/* Match @pattern (with @flags) against the stack @spec. */
static int mf(const char *pattern, unsigned flags, const char *spec)
{
	struct stack s;
	struct pat *p = parse_ok(pattern, flags);
	int r;

	stk(&s, spec);
	r = pat_match(p, s.fr, s.n);

	pat_free(p);
	return r;
}

static int m(const char *pattern, const char *spec)
{
	return mf(pattern, 0, spec);
}

#define YES(pattern, spec) assert_int_not_equal(m(pattern, spec), PAT_NOMATCH)
#define NO(pattern, spec) assert_int_equal(m(pattern, spec), PAT_NOMATCH)

static void expect_error(const char *text, unsigned flags, int column, const char *msg)
{
	struct pat_error err = { .column = -7 };
	struct pat *p = (struct pat *)&err;
	int rc = pat_parse(text, flags, &p, &err);

	if (rc != -EINVAL)
		fail_msg("pattern '%s': expected -EINVAL, got %d", text, rc);
	assert_null(p);
	if (err.column != column || strcmp(err.msg, msg))
		fail_msg("pattern '%s': got column %d: %s\n  expected column %d: %s", text,
			 err.column, err.msg, column, msg);
}

static void expect_threads(const char *text, unsigned flags, size_t n, const char *const *want)
{
	struct pat *p = parse_ok(text, flags);
	char buf[1024];

	assert_int_equal(pat_nthreads(p), n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(pat_thread_str(p, i, buf, sizeof(buf)), 0);
		assert_string_equal(buf, want[i]);
	}
	pat_free(p);
}

/* ---------------------------------------------------------------------------------------- */
/* docs/when.md's examples */

static const char *const spec_threads[] = {
	"m.a->m.b->*->m.d",
	"m.a->m.b->*->m.e->*",
	"m.c->*->m.d",
	"m.c->m.e->*",
};

static void test_spec_expansion(void **state)
{
	char buf[256];
	struct pat *p;

	(void)state;
	expect_threads("(m.a->m.b->* | m.c) -> (*->m.d | m.e->*)", 0, 4, spec_threads);
	p = parse_ok("(m.a->m.b->* | m.c) -> (*->m.d | m.e->*)", 0);
	assert_int_equal(pat_str(p, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "m.a->m.b->*->m.d | m.a->m.b->*->m.e->* | m.c->*->m.d | "
				 "m.c->m.e->*");
	assert_int_equal(pat_has_colon(p), 0);
	pat_free(p);
}

/* Each expanded thread, alone and inside the whole pattern, against hand-made stacks. */
static void test_spec_expansion_matching(void **state)
{
	static const struct {
		const char *stack;
		bool want[4]; /* does spec_threads[i] match? */
	} cases[] = {
		{ "m/main m/a m/b m/d", { 1, 0, 0, 0 } },
		{ "m/a m/b m/x m/y m/d", { 1, 0, 0, 0 } },
		{ "m/a m/x m/b m/d", { 0, 0, 0, 0 } }, /* a, b not caller and callee */
		{ "m/a m/b m/d m/x", { 0, 0, 0, 0 } }, /* d is not the current procedure */
		{ "m/b m/a m/d", { 0, 0, 0, 0 } }, /* wrong order */
		{ "m/a m/b m/e", { 0, 1, 0, 0 } },
		{ "m/a m/b m/x m/e m/y", { 0, 1, 0, 0 } },
		{ "m/a m/b m/e m/d", { 1, 1, 0, 0 } },
		{ "m/a m/b m/x", { 0, 0, 0, 0 } },
		{ "m/a m/e m/b", { 0, 0, 0, 0 } },
		{ "m/c m/d", { 0, 0, 1, 0 } },
		{ "m/c m/x m/y m/d", { 0, 0, 1, 0 } },
		{ "m/d m/c", { 0, 0, 0, 0 } },
		{ "m/c m/e", { 0, 0, 0, 1 } },
		{ "m/c m/e m/x", { 0, 0, 0, 1 } },
		{ "m/c m/x m/e", { 0, 0, 0, 0 } },
		{ "m/c m/e m/d", { 0, 0, 1, 1 } },
		{ "x/a x/b x/d", { 0, 0, 0, 0 } }, /* wrong module */
		{ "m/- m/- m/-", { 0, 0, 0, 0 } },
		{ "", { 0, 0, 0, 0 } },
	};
	struct pat *all = parse_ok("(m.a->m.b->* | m.c) -> (*->m.d | m.e->*)", 0);
	struct pat *one[4];

	(void)state;
	for (int t = 0; t < 4; t++)
		one[t] = parse_ok(spec_threads[t], 0);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct stack s;
		struct pat_match_info info;
		int first = -1, r;

		stk(&s, cases[c].stack);
		for (int t = 0; t < 4; t++) {
			r = pat_match(one[t], s.fr, s.n);
			if (r != (cases[c].want[t] ? (int)s.n - 1 : PAT_NOMATCH))
				fail_msg("thread %s on '%s': got %d", spec_threads[t],
					 cases[c].stack, r);
			if (cases[c].want[t] && first < 0)
				first = t;
		}
		r = pat_match_ex(all, s.fr, s.n, &info);
		assert_int_equal(r, first >= 0 ? (int)s.n - 1 : PAT_NOMATCH);
		if (first >= 0)
			assert_int_equal(info.thread, (size_t)first);
	}
	for (int t = 0; t < 4; t++)
		pat_free(one[t]);
	pat_free(all);
}

static void test_spec_names(void **state)
{
	(void)state;
	YES("libc.mem*", "libc.so.6/memcpy");
	YES("libc.mem*", "libc.so.6/memset");
	NO("libc.mem*", "libc.so.6/strcpy");
	NO("libc.mem*", "myprog/memcpy");
	YES("libc.so.6.malloc", "libc.so.6/malloc");
	YES("libc.malloc", "libc.so.6/malloc");
	YES("f", "m/f.cold");
	YES("f", "m/f.isra.0");
	YES("f", "m/f.part.1");
	YES("f", "m/f.constprop.0");
	YES("ns::cls::m", "m/ns::cls::m");
	expect_error("main->foo->", 0, 12, "expected a name after '->'");
}

/* ---------------------------------------------------------------------------------------- */
/* Name rules */

static void test_bare_name(void **state)
{
	(void)state;
	YES("malloc", "libc.so.6/malloc");
	YES("malloc", "-/malloc");
	NO("malloc", "libc.so.6/free");
	YES("malloc", "malloc/-"); /* a bare name is a procedure or a module */
	YES("malloc->*", "malloc/-");
	YES("libc", "libc.so.6/free"); /* module alias, any procedure */
	YES("libc", "libc.so.6/-");
	YES("libc.so.6", "libc.so.6/-");
	YES("myprog", "myprog/main");
	YES("kernel", "kernel/schedule");
	NO("libc", "libcrypto.so.3/free");
	NO("lib", "libc.so.6/free");
	NO("mallo", "libc.so.6/malloc");
	NO("malloc", "libc.so.6/-");
	NO("malloc", "-/-");
}

static void test_dotted_name(void **state)
{
	(void)state;
	YES("libc.so.6.malloc", "libc.so.6/malloc");
	NO("libc.so.6.malloc", "libc.so.6/free");
	NO("libc.so.6.malloc", "libc.so.7/malloc");
	NO("libc.so.6.malloc", "libc.so.6/-");
	NO("libc.so.6.malloc", "-/malloc");
	YES("libc.malloc", "libc.so.6/malloc");
	NO("libc.so.malloc", "libc.so.6/malloc"); /* "libc.so" is neither basename nor alias */
	NO("libc.so", "libc.so.6/free");
	YES("myprog.main", "myprog/main");
	NO("myprog.main", "other/main");
	YES("kernel.schedule", "kernel/schedule");
	YES("a.b.c", "a.b/c"); /* split a.b + c */
	YES("a.b.c", "a/b.c"); /* split a + b.c */
	YES("a.b.c", "x/a.b.c"); /* whole name as procedure */
	YES("a.b.c", "a.b.c/-"); /* whole name as module */
	YES("f.cold", "m/f.cold"); /* procedures with dots */
	NO("f.cold", "m/f");
	YES("m.f.cold", "m/f.cold");
	YES("ld-linux-x86-64.so.2._dl_start", "ld-linux-x86-64.so.2/_dl_start");
	YES("ld-linux-x86-64._dl_start", "ld-linux-x86-64.so.2/_dl_start");
	YES("libstdc++.operator_new", "libstdc++.so.6/operator_new");
}

/* Code without a symbol is named "+0xSTART" after its FDE: "module+0xSTART" names it. */
static void test_cfi_names(void **state)
{
	(void)state;
	YES("liblzma.so.5+0x15b40", "liblzma.so.5/+0x15b40");
	YES("liblzma+0x15b40", "liblzma.so.5/+0x15b40"); /* the module alias */
	YES("\"liblzma.so.5+0x15b40\"", "liblzma.so.5/+0x15b40"); /* quoted: still split */
	YES("\"+0x15b40\"", "liblzma.so.5/+0x15b40"); /* the procedure alone */
	YES("liblzma+0x15*", "liblzma.so.5/+0x15b40");
	YES("liblzma.*", "liblzma.so.5/+0x15b40");
	YES("main->liblzma+0x15b40", "xz/main liblzma.so.5/+0x15b40");
	NO("liblzma+0x15b40", "liblzma.so.5/+0x15b41");
	NO("liblzma+0x15b4", "liblzma.so.5/+0x15b40");
	NO("liblzma+0x15b40", "libz.so.1/+0x15b40");
	NO("liblzma+0x15b40", "liblzma.so.5/-");
	NO("liblzma+0x15b40", "-/+0x15b40");
	NO("m+f", "m/f"); /* the '+' belongs to the procedure */
	NO("lib*+0x10", "lib.x/f+0x10");
	YES("libstdc++.so.6", "libstdc++.so.6/-"); /* a '+' inside a module still works */
	YES("libstdc++.so.6+0x10", "libstdc++.so.6/+0x10");
}

static void test_globs(void **state)
{
	(void)state;
	YES("work_?", "m/work_1");
	NO("work_?", "m/work_12");
	NO("work_?", "m/work_");
	YES("*alloc", "libc.so.6/malloc");
	YES("*alloc", "libc.so.6/calloc");
	NO("*alloc", "libc.so.6/allocx");
	YES("lib*.malloc", "libc.so.6/malloc");
	YES("*.malloc", "libc.so.6/malloc");
	NO("*.malloc", "-/malloc");
	YES("libc.*", "libc.so.6/anything");
	YES("libc.*", "libc.so.6/-"); /* the whole name globs the module "libc.so.6" */
	YES("*.*", "m/f");
	NO("lib*malloc", "libc.so.6/malloc"); /* a glob never spans module and procedure */
	YES("a*b*c", "m/aXbYbZc");
	NO("a*b*c", "m/aXbYbZ");
	YES("?", "m/x");
	YES("?", "m/-"); /* the module "m" */
	NO("?", "mm/xx");
	YES("f*", "m/f.cold");
	YES("g?", "m/gx.cold"); /* globs also match clones */
	YES("ns::*", "m/ns::f");
	YES("ns::cls::*", "m/ns::cls::~cls");
	NO("ns::*", "m/other::f");
	YES("**->x", "m/x"); /* "**" is "*" */
}

static void test_clones(void **state)
{
	static const char *const yes[] = {
		"m/f.cold",
		"m/f.isra.0",
		"m/f.part.1",
		"m/f.constprop.0",
		"m/f.lto_priv.0",
		"m/f.constprop.0.isra.0",
		"m/f.isra.0.cold",
		"m/f.cold.3",
		"m/f.llvm.12345",
		"m/f.clone.2",
		"m/f.localalias",
		"m/f.specialized.1",
		"m/f.__uniq.987654321",
		"m/f.part.0.lto_priv.0",
	};
	static const char *const no[] = {
		"m/f.foo",   "m/fo.cold", "m/g.cold",  "m/f.cold.x", "m/f.",   "m/f.isra.0x",
		"m/f.cold.", "m/f..cold", "m/ff.cold", "m/f_cold",   "m/cold",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (m("f", yes[i]) != 0)
			fail_msg("f should match %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (m("f", no[i]) != PAT_NOMATCH)
			fail_msg("f should not match %s", no[i]);
	YES("f.constprop.0", "m/f.constprop.0.isra.0");
	NO("f.isra.0", "m/f.constprop.0.isra.0");
	YES("m.f", "m/f.cold");
	YES("f?", "m/fx.part.0");
	NO("F", "m/f.cold");
}

static void test_clones_icase(void **state)
{
	(void)state;
	assert_int_equal(mf("F", PAT_ICASE, "m/f.cold"), 0);
	assert_int_equal(mf("F", 0, "m/f.cold"), PAT_NOMATCH);
}

static void test_cxx(void **state)
{
	(void)state;
	YES("ns::cls::m", "m/ns::cls::m");
	NO("ns::cls::m", "m/ns::cls::n");
	YES("ns::cls::~cls", "m/ns::cls::~cls");
	YES("m.ns::cls::m", "m/ns::cls::m");
	YES("ns::f", "m/ns::f.cold");
	/* "::" inside a name is not an attribution colon */
	assert_int_equal(m("a::b->*", "m/x m/a::b m/y"), 2);
	assert_int_equal(m("a::b:->*", "m/x m/a::b m/y"), 1);
	assert_int_equal(m(":a::b->*", "m/x m/a::b m/y"), 0);
	expect_error(":a::b:", 0, 6, "a name cannot have ':' on both sides");
}

static void test_quoted(void **state)
{
	struct pat_frame fr[2] = { { "libstdc++.so.6", "operator new(unsigned long)", NULL },
				   { "m", "a*b", NULL } };
	struct pat *p;

	(void)state;
	p = parse_ok("\"operator new(unsigned long)\"->*", 0);
	assert_int_equal(pat_match(p, fr, 2), 1);
	pat_free(p);
	p = parse_ok("\"libstdc++.operator new(unsigned long)\"->*", 0);
	assert_int_equal(pat_match(p, fr, 2), 1);
	pat_free(p);
	p = parse_ok("\"a*b\"", 0); /* literal, no glob */
	assert_int_equal(pat_match(p, fr, 2), 1);
	pat_free(p);
	YES("\"a*b\"", "m/a*b");
	NO("\"a*b\"", "m/axxb");
	YES("a*b", "m/axxb");
	YES("\"libc.so.6.malloc\"", "libc.so.6/malloc"); /* quoted names still split */
	YES("\"libc.malloc\"", "libc.so.6/malloc");
	YES("\"f\"", "m/f.cold");
	YES("\"a\\\"b\"", "m/a\"b");
	YES("\"a\\\\b\"", "m/a\\b");
	YES("\"[vdso]\"", "[vdso]/-");
	{
		struct pat_frame sp[3] = { { "m", "x_y", NULL }, { "m", "x y", NULL }, { "m", "z", NULL } };

		p = parse_ok(":\"x y\"->*", 0);
		assert_int_equal(pat_match(p, sp, 3), 0);
		pat_free(p);
	}
	assert_int_equal(mf("\"A*B\"", PAT_ICASE, "m/a*b"), 0);
	assert_int_equal(mf("\"A*B\"", PAT_ICASE, "m/axb"), PAT_NOMATCH);
	expect_threads("\"a b\" -> \"q\\\"\\\\\"", 0, 1,
		       (const char *const[]){ "\"a b\"->\"q\\\"\\\\\"" });
}

static void test_icase(void **state)
{
	(void)state;
	assert_int_equal(mf("MALLOC", PAT_ICASE, "libc.so.6/malloc"), 0);
	assert_int_equal(mf("MALLOC", 0, "libc.so.6/malloc"), PAT_NOMATCH);
	assert_int_equal(mf("LIBC.Malloc", PAT_ICASE, "libc.so.6/malloc"), 0);
	assert_int_equal(mf("LIBC.Malloc", 0, "libc.so.6/malloc"), PAT_NOMATCH);
	assert_int_equal(mf("MEM*", PAT_ICASE, "libc.so.6/memcpy"), 0);
	assert_int_equal(mf("Libc", PAT_ICASE, "LIBC.SO.6/-"), 0);
	assert_int_equal(mf("main", PAT_ICASE, "m/MAIN"), 0);
	assert_int_equal(mf("main", 0, "m/MAIN"), PAT_NOMATCH);
}

static void test_keyword(void **state)
{
	static const char *const f_only[] = { "f" };
	static const char *const ab[] = { "a", "b" };
	static const char *const when_x[] = { "when->x" };

	(void)state;
	expect_threads("WHEN f", 0, 1, f_only);
	expect_threads("when f", 0, 1, f_only);
	expect_threads("When\n\tf ;", 0, 1, f_only);
	expect_threads("wHeN (a|b)", 0, 2, ab);
	expect_threads("when \"f\"", 0, 1, (const char *const[]){ "\"f\"" });
	expect_threads("when *", 0, 1, (const char *const[]){ "*" });
	expect_threads("when :f", 0, 1, (const char *const[]){ ":f" });
	expect_threads("WHEN: f", 0, 1, (const char *const[]){ ":f" });
	/* "when" that cannot be the keyword is a name */
	expect_threads("when", 0, 1, (const char *const[]){ "when" });
	expect_threads("when;", 0, 1, (const char *const[]){ "when" });
	expect_threads("when->x", 0, 1, when_x);
	expect_threads("when | x", 0, 2, (const char *const[]){ "when", "x" });
	expect_threads("when:->x", 0, 1, (const char *const[]){ "when:->x" });
	expect_threads("when:", 0, 1, (const char *const[]){ "when:" });
	expect_threads("when when", 0, 1, (const char *const[]){ "when" });
	expect_threads("\"when\" ", 0, 1, (const char *const[]){ "\"when\"" });
	YES("when", "m/when");
	assert_int_equal(m("WHEN main->*", "m/main m/f"), 1);
	expect_error("when a b", 0, 8, "missing '->' before name 'b'");
	expect_error("when ;x", 0, 7, "unexpected text after ';'");
}

static void test_semicolon_and_lines(void **state)
{
	static const char *const t[] = { "main->*->f" };
	int line, col;

	(void)state;
	expect_threads("main->*->f;", 0, 1, t);
	expect_threads("main->*->f ; \n\t ", 0, 1, t);
	expect_threads("main\n  ->\t*\r\n  -> f\n", 0, 1, t);
	expect_threads("WHEN main\n  -> *\n  -> f;\n", PAT_FROM_FILE, 1, t);
	expect_threads("main->*->f\n", PAT_FROM_FILE, 1, t);
	expect_threads("  main->*->f;  ", PAT_FROM_FILE, 1, t);
	expect_error("main\n  -> *\n  -> f\n", PAT_FROM_FILE, 20,
		     "a pattern spanning several lines must end with ';'");
	expect_error("when\nf", PAT_FROM_FILE, 7,
		     "a pattern spanning several lines must end with ';'");
	expect_error("main\n  -> *\n  -> f; g\n", 0, 21, "unexpected text after ';'");
	pat_error_location("main\n  -> *\n  -> f; g\n", 21, &line, &col);
	assert_int_equal(line, 3);
	assert_int_equal(col, 9);
	pat_error_location("ab", 1, &line, &col);
	assert_int_equal(line, 1);
	assert_int_equal(col, 1);
	pat_error_location("é\nb", 3, &line, &col);
	assert_int_equal(line, 2);
	assert_int_equal(col, 1);
}

static void test_null_frames(void **state)
{
	(void)state;
	YES("jit", "jit/-"); /* proc NULL: only its module */
	NO("f", "m/-");
	NO("m.f", "m/-");
	YES("m", "m/-");
	YES("f", "-/f"); /* module NULL: only its procedure */
	NO("m.f", "-/f");
	NO("m", "-/f");
	NO("x", "-/-"); /* both NULL: only '*' */
	YES("*", "-/-");
	YES("a->*->b", "m/a -/- -/- m/b");
	NO("a->b", "m/a -/- m/b");
	YES("a->*", "m/a -/-"); /* returns n - 1, a frame with no procedure */
	assert_int_equal(m("a->*", "m/a -/-"), 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Thread structure and attribution */

static void test_thread_shape(void **state)
{
	(void)state;
	/* a thread may begin anywhere */
	assert_int_equal(m("f->g", "m/main m/f m/g"), 2);
	assert_int_equal(m("g", "m/main m/f m/g"), 2);
	assert_int_equal(m("main->g", "m/main m/f m/g"), PAT_NOMATCH);
	assert_int_equal(m("main->*->g", "m/main m/f m/g"), 2);
	assert_int_equal(m("*->main->f->g", "m/main m/f m/g"), 2);
	/* unless it ends with '*', its last primary is the current procedure */
	assert_int_equal(m("f", "m/main m/f m/g"), PAT_NOMATCH);
	assert_int_equal(m("f->*", "m/main m/f m/g"), 2);
	assert_int_equal(m("f->*", "m/main m/f"), 1); /* '*' matches zero frames */
	assert_int_equal(m("main->*->f->*", "m/main m/f"), 1);
	assert_int_equal(m("main->*->*->f", "m/main m/f"), 1);
	assert_int_equal(m("main->f->*->g->*->h", "m/main m/f m/g m/h"), 3);
	assert_int_equal(m("main->f->*->g->*->h", "m/main m/f m/h m/g"), PAT_NOMATCH);
	/* '*' alone */
	assert_int_equal(m("*", "m/main m/f"), 1);
	assert_int_equal(m("*", ""), PAT_ABOVE_ROOT);
	assert_int_equal(m("(*)->(*)", ""), PAT_ABOVE_ROOT);
	assert_int_equal(m("f", ""), PAT_NOMATCH);
	assert_int_equal(m("f->*", ""), PAT_NOMATCH);
	/* names in longer blocks */
	assert_int_equal(m("f->f->g", "m/f m/f m/f m/g"), 3);
	assert_int_equal(m("f->f->f->f->g", "m/f m/f m/f m/g"), PAT_NOMATCH);
	assert_int_equal(m("f->g->*->f->g", "m/f m/g m/f m/g"), 3);
	assert_int_equal(m("f->g->*->f->g", "m/f m/g m/g"), PAT_NOMATCH); /* no overlap */
}

static void test_canonical(void **state)
{
	(void)state;
	expect_threads("*->*->a", 0, 1, (const char *const[]){ "*->a" });
	expect_threads("a->(*)->(*->b)", 0, 1, (const char *const[]){ "a->*->b" });
	expect_threads("a -> ( b | * ) -> *", 0, 2, (const char *const[]){ "a->b->*", "a->*" });
	expect_threads("((a))", 0, 1, (const char *const[]){ "a" });
	expect_threads("a | a", 0, 2, (const char *const[]){ "a", "a" });
	expect_threads(" : a -> b ", 0, 1, (const char *const[]){ ":a->b" });
	expect_threads("a -> b : ", 0, 1, (const char *const[]){ "a->b:" });
	expect_error(" : a -> b : ", 0, 11,
		     "more than one ':' in call thread ':a->b:' (a thread charges one frame)");
}

static void test_attribution(void **state)
{
	const char *s = "m/main m/f m/g m/h";

	(void)state;
	assert_int_equal(m("f:->*", s), 1);
	assert_int_equal(m("main->f:->*", s), 1);
	assert_int_equal(m(":g->*", s), 1);
	assert_int_equal(m("main->f->:g->h", s), 1);
	assert_int_equal(m("main->f->g->h:", s), 3);
	assert_int_equal(m(":main->*", s), PAT_ABOVE_ROOT);
	assert_int_equal(m("main:->*", s), 0);
	assert_int_equal(m("h", s), 3); /* no colon: the current frame */
	assert_int_equal(m(":h", s), 2);
	assert_int_equal(m("f:->g", s), PAT_NOMATCH);
	/* the first colon of the first matching thread, in expansion order */
	assert_int_equal(m("x: | f:->* | g:->*", s), 1);
	assert_int_equal(m("g:->* | f:->*", s), 2);
	assert_int_equal(m("(f: | g:)->*", s), 1);
	assert_int_equal(m("(g: | f:)->*", s), 2);
	assert_int_equal(m("main->(x | f:)->*", s), 1);
	assert_int_equal(m("(main | f)->(g: | h)->*", s), 2);
	/* a colon-less thread that matches first does not hide a later colon */
	assert_int_equal(m("* | f:->*", s), 1);
	assert_int_equal(m("h | :g->*", s), 1);
	assert_int_equal(m("h | x:->*", s), 3);
}

static void test_attribution_info(void **state)
{
	struct stack st;
	struct pat_match_info info;
	struct pat *p = parse_ok("x:->* | h | f:->* | g:->*", 0);

	(void)state;
	stk(&st, "m/main m/f m/g m/h");
	assert_int_equal(pat_match_ex(p, st.fr, st.n, &info), 1);
	assert_int_equal(info.thread, 2);
	assert_true(info.name_tests > 0);
	stk(&st, "m/main m/h");
	assert_int_equal(pat_match_ex(p, st.fr, st.n, &info), 1);
	assert_int_equal(info.thread, 1);
	stk(&st, "m/main m/y");
	assert_int_equal(pat_match_ex(p, st.fr, st.n, &info), PAT_NOMATCH);
	assert_int_equal(pat_has_colon(p), 1);
	assert_int_equal(pat_match_ex(p, st.fr, st.n, NULL), PAT_NOMATCH);
	pat_free(p);
}

static void test_attribution_recursion(void **state)
{
	const char *s = "m/main m/f m/f m/f m/g";

	(void)state;
	assert_int_equal(m("f:->*", s), 3);
	assert_int_equal(m("f:->*->g", s), 3);
	assert_int_equal(m("f:->g", s), 3);
	assert_int_equal(m("f:->f->*", s), 2);
	assert_int_equal(m("f:->*->f->*", s), 2);
	assert_int_equal(m("f:->*->f->*->f->*", s), 1);
	assert_int_equal(m("f:->*->f->*->f->*->f->*", s), PAT_NOMATCH);
	assert_int_equal(m(":f->*", s), 2);
	assert_int_equal(m("main->f:->*", s), 1);
	assert_int_equal(m("main->*->f:->*->f->g", s), 2);
	assert_int_equal(m("main->*->:f->*->f->g", s), 1);
	assert_int_equal(m("*->f:->*->f->*", "m/f m/x m/f m/y m/f m/z"), 2);
	/* ':' on the root charges above it only when no inner matching exists */
	assert_int_equal(m(":f->*", "m/f m/g m/f"), 1);
	assert_int_equal(m(":f->*->g", "m/f m/g"), PAT_ABOVE_ROOT);
	assert_int_equal(m(":f->g", "m/f m/g"), PAT_ABOVE_ROOT);
	assert_int_equal(m(":f", "m/f"), PAT_ABOVE_ROOT);
	assert_int_equal(m("f:", "m/f"), 0);
	/* the colon's block is found between what comes before and after it */
	assert_int_equal(m("a->*->b:->c->*->d", "m/a m/b m/c m/b m/c m/x m/d"), 3);
	assert_int_equal(m("a->*->b:->c->*->c->d", "m/a m/b m/c m/b m/c m/d"), 1);
	assert_int_equal(m("a->*->b:->c->*->d", "m/a m/b m/c m/d m/b m/c"), PAT_NOMATCH);
}

/* ---------------------------------------------------------------------------------------- */
/* Errors */

static void test_errors(void **state)
{
	static const struct {
		const char *text;
		int column;
		const char *msg;
	} e[] = {
		{ "", 1, "empty pattern" },
		{ "   ", 4, "empty pattern" },
		{ ";", 1, "empty pattern" },
		{ "WHEN", 0, NULL }, /* a name: no error */
		{ "a->", 4, "expected a name after '->'" },
		{ "a->|b", 4, "expected a name after '->'" },
		{ "a->->b", 4, "expected a name after '->'" },
		{ "(a->)", 5, "expected a name after '->'" },
		{ "a->;", 4, "expected a name after '->'" },
		{ "->a", 1, "expected a name before '->'" },
		{ "(->a)", 2, "expected a name before '->'" },
		{ "a|->b", 3, "expected a name before '->'" },
		{ "a||b", 3, "empty alternative between '|' and '|' (write a single '|')" },
		{ "|a", 1, "empty alternative before '|'" },
		{ "(|a)", 2, "empty alternative before '|'" },
		{ "a|", 3, "empty alternative after '|'" },
		{ "(a|)", 4, "empty alternative after '|'" },
		{ "a| ;", 4, "empty alternative after '|'" },
		{ "()", 2, "empty parentheses" },
		{ "a->( )", 6, "empty parentheses" },
		{ "(a", 1, "unbalanced parenthesis: '(' is never closed" },
		{ "x->(a|(b)", 4, "unbalanced parenthesis: '(' is never closed" },
		{ "(", 1, "unbalanced parenthesis: '(' is never closed" },
		{ "(a;", 1, "unbalanced parenthesis: '(' is never closed" },
		{ "a)", 2, "unbalanced parenthesis: ')' without a matching '('" },
		{ ")", 1, "unbalanced parenthesis: ')' without a matching '('" },
		{ "(a))", 4, "unbalanced parenthesis: ')' without a matching '('" },
		{ "\"abc", 1, "unterminated quote" },
		{ "a->\"b\nc\"", 4, "unterminated quote" },
		{ "\"a\\", 1, "unterminated quote" },
		{ "\"a\\nb\"", 3,
		  "unknown escape '\\n' in quoted name (only \\\" and \\\\ are allowed)" },
		{ "\"a\\\tb\"", 3,
		  "unknown escape in quoted name (only \\\" and \\\\ are allowed)" },
		{ "\"\"", 1, "empty quoted name" },
		{ "::a", 2, "stray ':' (a name takes at most one ':' before it)" },
		{ "a::", 3, "stray ':' (a name takes at most one ':' after it)" },
		{ "a: :b", 4, "stray ':' (a name takes at most one ':' after it)" },
		{ "a:::b", 3, "stray ':' (a name takes at most one ':' after it)" },
		{ ":a:", 3, "a name cannot have ':' on both sides" },
		{ "x->: a :->y", 8, "a name cannot have ':' on both sides" },
		{ ":*", 1, "':' must be next to a name, not '*'" },
		{ "*:", 2, "':' must be next to a name, not '*'" },
		{ "a->*  :", 7, "':' must be next to a name, not '*'" },
		{ "a->:(b)", 4, "':' must be next to a name, not '('" },
		{ "(a):", 4, "':' must be next to a name, not ')'" },
		{ ":", 2, "expected a name after ':'" },
		{ ":->a", 2, "expected a name after ':'" },
		{ "a:->b:", 6,
		  "more than one ':' in call thread 'a:->b:' (a thread charges one frame)" },
		{ ":a->b:", 6,
		  "more than one ':' in call thread ':a->b:' (a thread charges one frame)" },
		{ "(a:|b)->(c:|d)", 11,
		  "more than one ':' in call thread 'a:->c:' (a thread charges one frame)" },
		{ "a b", 3, "missing '->' before name 'b'" },
		{ "a \"b c\"", 3, "missing '->' before name \"b c\"" },
		{ "\"a\"b", 4, "missing '->' before name 'b'" },
		{ "a *", 3, "missing '->' before '*'" },
		{ "a (b)", 3, "missing '->' before '('" },
		{ "(a)(b)", 4, "missing '->' before '('" },
		{ "a & b", 3, "unexpected character '&'" },
		{ "a,b", 2, "unexpected character ','" },
		{ "a\x01", 2, "unexpected character '\\x01'" },
		{ "a - b", 3, "unexpected '-' (did you mean '->'?)" },
		{ "a > b", 3, "unexpected '>' (did you mean '->'?)" },
		{ "a=>b", 2, "unexpected character '='" },
		{ "+a", 1, "unexpected character '+'" },
		{ "'a'", 1, "names are quoted with '\"', not with '''" },
		{ "a; b", 4, "unexpected text after ';'" },
		{ "a;;", 3, "unexpected text after ';'" },
		{ "libc.", 5, "a name cannot end with '.'" },
		{ "libc.\"operator new\"", 5, "a name cannot end with '.' (quote the whole name)" },
		{ "x->.a", 4, "a name cannot start with '.'" },
		{ "a..b", 2, "a name cannot contain '..'" },
		{ "\xc3\xa9->b &", 6, "unexpected character '&'" }, /* columns count characters */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		if (e[i].msg) {
			expect_error(e[i].text, 0, e[i].column, e[i].msg);
		} else {
			pat_free(parse_ok(e[i].text, 0));
		}
	}
	/* the same messages with a leading keyword point further right */
	expect_error("WHEN a->", 0, 9, "expected a name after '->'");
}

static void test_error_args(void **state)
{
	struct pat_error err;
	struct pat *p = NULL;

	(void)state;
	assert_int_equal(pat_parse("a", 0, NULL, &err), -EINVAL);
	assert_int_equal(pat_parse("a", 0x80, &p, &err), -EINVAL);
	assert_null(p);
	assert_string_equal(err.msg, "unknown flags 0x80");
	assert_int_equal(pat_parse(NULL, 0, &p, &err), -EINVAL);
	assert_string_equal(err.msg, "empty pattern");
	assert_int_equal(pat_parse("a->", 0, &p, NULL), -EINVAL); /* err may be NULL */
	assert_int_equal(pat_parse("a", 0, &p, NULL), 0);
	pat_free(p);
	pat_free(NULL);
	assert_int_equal(pat_match(NULL, NULL, 0), PAT_NOMATCH);
	assert_int_equal(pat_nthreads(NULL), 0);
	assert_int_equal(pat_has_colon(NULL), 0);
}

static void test_limits(void **state)
{
	char *text = malloc(PAT_MAX_TEXT + 64);
	size_t len = 0;
	struct pat *p;
	char *tail;

	(void)state;
	assert_non_null(text);
	/* 12 groups of 2 = 4096 threads: accepted */
	for (int i = 0; i < 12; i++)
		len += (size_t)sprintf(text + len, "%s(a|b)", i ? "->" : "");
	p = parse_ok(text, 0);
	assert_int_equal(pat_nthreads(p), 4096);
	pat_free(p);
	/* the 13th group is refused, at its column */
	sprintf(text + len, "->(a|b)");
	expect_error(text, 0, (int)len + 3, "pattern expands to more than 4096 call threads");
	/* too many alternatives */
	len = 0;
	for (int i = 0; i < 4097; i++)
		len += (size_t)sprintf(text + len, "%sa", i ? "|" : "");
	expect_error(text, 0, (int)len, "pattern expands to more than 4096 call threads");
	/* long threads: 2048 threads of 11 x 4 primaries */
	len = 0;
	for (int i = 0; i < 12; i++)
		len += (size_t)sprintf(text + len, "%s(a->b->c->d|e)", i ? "->" : "");
	tail = strrchr(text, '(');
	expect_error(text, 0, (int)(tail - text) + 1,
		     "pattern expands to more than 65536 primaries in total");
	/* nesting */
	len = 0;
	for (int i = 0; i < PAT_MAX_DEPTH; i++)
		text[len++] = '(';
	text[len++] = 'a';
	for (int i = 0; i < PAT_MAX_DEPTH; i++)
		text[len++] = ')';
	text[len] = '\0';
	pat_free(parse_ok(text, 0));
	memmove(text + 1, text, len + 1);
	text[0] = '(';
	strcat(text, ")");
	expect_error(text, 0, PAT_MAX_DEPTH + 1, "parentheses nested more than 64 deep");
	/* text length */
	memset(text, ' ', PAT_MAX_TEXT);
	text[0] = 'a';
	text[PAT_MAX_TEXT] = '\0';
	pat_free(parse_ok(text, 0));
	text[PAT_MAX_TEXT] = ' ';
	text[PAT_MAX_TEXT + 1] = '\0';
	expect_error(text, 0, 1, "pattern is longer than 65536 bytes");
	free(text);
}

static void test_str_buffers(void **state)
{
	struct pat *p = parse_ok("(main|x)->*->foo", 0);
	char buf[64];

	(void)state;
	assert_int_equal(pat_thread_str(p, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "main->*->foo");
	assert_int_equal(pat_thread_str(p, 0, buf, 13), 0);
	assert_int_equal(pat_thread_str(p, 0, buf, 12), -ERANGE);
	assert_string_equal(buf, "main->*->fo");
	assert_int_equal(pat_thread_str(p, 0, NULL, 0), -ERANGE);
	assert_int_equal(pat_thread_str(p, 2, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(pat_thread_str(NULL, 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(pat_str(p, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "main->*->foo | x->*->foo");
	assert_int_equal(pat_str(p, buf, 5), -ERANGE);
	assert_string_equal(buf, "main");
	pat_free(p);
}

/* ---------------------------------------------------------------------------------------- */
/* Property test: pat_match against a slow reference on random patterns and stacks */

static unsigned long long rng_state;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)((rng_state >> 33) % n);
}

/* The reference: written from docs/when.md independently of pat.c, slow and simple. */

static bool ref_icase;

static bool ref_ceq(char a, char b)
{
	if (ref_icase) {
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
	}
	return a == b;
}

static bool ref_glob(const char *p, const char *s)
{
	if (!*p)
		return !*s;
	if (*p == '*')
		return ref_glob(p + 1, s) || (*s && ref_glob(p, s + 1));
	if (*s && (*p == '?' || ref_ceq(*p, *s)))
		return ref_glob(p + 1, s + 1);
	return false;
}

static bool ref_str(const char *p, bool quoted, const char *s)
{
	if (!quoted)
		return ref_glob(p, s);
	while (*p && *s && ref_ceq(*p, *s)) {
		p++;
		s++;
	}
	return !*p && !*s;
}

static const char *const ref_words[] = { "cold",  "isra", "part",	"constprop",   "lto_priv",
					 "clone", "llvm", "localalias", "specialized", "__uniq" };

/* Is s a (possibly empty, if !need) chain of ".word" / ".word.digits"? */
static bool ref_chain(const char *s, bool need)
{
	if (!*s)
		return !need;
	if (*s != '.')
		return false;
	for (size_t w = 0; w < sizeof(ref_words) / sizeof(ref_words[0]); w++) {
		size_t l = strlen(ref_words[w]);
		const char *r = s + 1 + l;

		if (strncmp(s + 1, ref_words[w], l))
			continue;
		if (ref_chain(r, false))
			return true;
		if (r[0] == '.' && r[1] >= '0' && r[1] <= '9') {
			r++;
			while (*r >= '0' && *r <= '9')
				r++;
			if (ref_chain(r, false))
				return true;
		}
	}
	return false;
}

static bool ref_proc(const char *p, bool quoted, const char *fp)
{
	char pre[256];
	size_t len = strlen(fp);

	for (size_t k = len; k >= 1; k--) {
		if (!ref_chain(fp + k, false))
			continue;
		memcpy(pre, fp, k);
		pre[k] = '\0';
		if (ref_str(p, quoted, pre))
			return true;
	}
	return false;
}

static bool ref_mod(const char *p, bool quoted, const char *fm)
{
	char pre[256];
	const char *dot = strchr(fm, '.');

	if (ref_str(p, quoted, fm))
		return true;
	if (!dot)
		return false;
	memcpy(pre, fm, (size_t)(dot - fm));
	pre[dot - fm] = '\0';
	return ref_str(p, quoted, pre);
}

static bool ref_name(const char *n, bool quoted, const struct pat_frame *f)
{
	char mod[256];

	if (f->proc && ref_proc(n, quoted, f->proc))
		return true;
	if (f->module && ref_mod(n, quoted, f->module))
		return true;
	for (size_t i = 1; n[i]; i++) {
		/* at a '.' (dropped) or a '+' (kept by the procedure: "m+0x10") */
		if ((n[i] != '.' && n[i] != '+') || !n[i + 1] || !f->module || !f->proc)
			continue;
		memcpy(mod, n, i);
		mod[i] = '\0';
		if (ref_mod(mod, quoted, f->module) &&
		    ref_proc(n + i + (n[i] == '.'), quoted, f->proc))
			return true;
	}
	return false;
}

/* Pattern names for random patterns: as written, decoded, quoted? */
static const struct {
	const char *text, *name;
	bool quoted;
} pool[] = {
	{ "a", "a", false },
	{ "b", "b", false },
	{ "c", "c", false },
	{ "d", "d", false },
	{ "m", "m", false },
	{ "libc", "libc", false },
	{ "m.a", "m.a", false },
	{ "libc.b", "libc.b", false },
	{ "a*", "a*", false },
	{ "?", "?", false },
	{ "kernel", "kernel", false },
	{ "c.d", "c.d", false },
	{ "libc.so.6.a", "libc.so.6.a", false },
	{ "\"a\"", "a", true },
	{ "\"c.d\"", "c.d", true },
	{ "A", "A", false },
	{ "*.b", "*.b", false },
	{ "lib.x.c", "lib.x.c", false },
	{ "a.cold", "a.cold", false },
	{ "lib*", "lib*", false },
	{ "\"a*\"", "a*", true },
	{ "x::y", "x::y", false },
	{ "m+0x10", "m+0x10", false },
	{ "\"+0x10\"", "+0x10", true },
	{ "lib+0x1*", "lib+0x1*", false },
};
#define NPOOL (sizeof(pool) / sizeof(pool[0]))

static const struct pat_frame alphabet[] = {
	{ "m", "a", NULL },
	{ "m", "b", NULL },
	{ "m", "c", NULL },
	{ "libc.so.6", "a", NULL },
	{ "libc.so.6", "b", NULL },
	{ "kernel", "c", NULL },
	{ "m", "a.cold", NULL },
	{ "m", "b.isra.0", NULL },
	{ "lib.x", "c.d", NULL },
	{ "m", "c.d", NULL },
	{ NULL, "a", NULL },
	{ "m", NULL, NULL },
	{ NULL, NULL, NULL },
	{ "libc.so.6", NULL, NULL },
	{ "m", "A", NULL },
	{ "m", "a*", NULL },
	{ "d", "x::y", NULL },
	{ "lib.x", "c", NULL },
	{ "kernel", "a.cold.1", NULL },
	{ "m", "+0x10", NULL },
	{ "lib.x", "+0x10", NULL },
};
#define NALPHA (sizeof(alphabet) / sizeof(alphabet[0]))

/* Generated pattern: an AST rendered as text and expanded by the generator itself. */
#define GSTAR (-1)
#define MAXE 96

struct gthread {
	int n;
	short e[MAXE]; /* GSTAR, or pool index * 4 + colon (0 none, 1 before, 2 after) */
};

struct glist {
	int n;
	struct gthread *t;
};

struct gen {
	char text[4096];
	size_t len;
	int ncolons;
};

static void gputs(struct gen *g, const char *s)
{
	size_t l = strlen(s);

	assert_true(g->len + l + 1 < sizeof(g->text));
	memcpy(g->text + g->len, s, l + 1);
	g->len += l;
}

static void gspace(struct gen *g)
{
	static const char *const sp[] = { "", "", "", " ", "  ", "\n", "\t" };

	gputs(g, sp[rnd(7)]);
}

static void gl_add(struct glist *l, const struct gthread *a, const struct gthread *b)
{
	struct gthread *t;
	int j = 0;

	l->t = realloc(l->t, (size_t)(l->n + 1) * sizeof(*l->t));
	assert_non_null(l->t);
	t = &l->t[l->n++];
	t->n = 0;
	if (a) {
		memcpy(t->e, a->e, (size_t)a->n * sizeof(a->e[0]));
		t->n = a->n;
	}
	if (t->n && b->n && t->e[t->n - 1] == GSTAR && b->e[0] == GSTAR)
		j = 1;
	assert_true(t->n + b->n - j <= MAXE);
	for (; j < b->n; j++)
		t->e[t->n++] = b->e[j];
}

static struct glist gen_alt(struct gen *g, int depth);

static struct glist gen_prim(struct gen *g, int depth)
{
	struct glist l = { 0 };
	struct gthread t = { .n = 1 };
	unsigned r = rnd(10);

	if (depth < 2 && r < 2) {
		gputs(g, "(");
		gspace(g);
		l = gen_alt(g, depth + 1);
		gspace(g);
		gputs(g, ")");
		return l;
	}
	if (r < 4) {
		t.e[0] = GSTAR;
		gputs(g, "*");
	} else {
		unsigned k = rnd(NPOOL), c = rnd(14);

		c = c == 0 ? 1 : c == 1 ? 2 : 0;
		if (c == 1) {
			gputs(g, ":");
			gspace(g);
		}
		gputs(g, pool[k].text);
		if (c == 2) {
			gspace(g);
			gputs(g, ":");
		}
		t.e[0] = (short)(k * 4 + c);
	}
	gl_add(&l, NULL, &t);
	return l;
}

static struct glist gen_seq(struct gen *g, int depth)
{
	struct glist acc = { 0 };
	unsigned n = 1 + rnd(4);

	for (unsigned i = 0; i < n; i++) {
		struct glist part, next = { 0 };

		if (i) {
			gspace(g);
			gputs(g, "->");
			gspace(g);
		}
		part = gen_prim(g, depth);
		if (!i) {
			acc = part;
			continue;
		}
		for (int a = 0; a < acc.n; a++)
			for (int b = 0; b < part.n; b++)
				gl_add(&next, &acc.t[a], &part.t[b]);
		free(acc.t);
		free(part.t);
		acc = next;
	}
	return acc;
}

static struct glist gen_alt(struct gen *g, int depth)
{
	struct glist acc = { 0 };
	unsigned n = 1 + rnd(depth < 2 ? 3 : 1);

	for (unsigned i = 0; i < n; i++) {
		struct glist part;

		if (i) {
			gspace(g);
			gputs(g, "|");
			gspace(g);
		}
		part = gen_seq(g, depth);
		for (int b = 0; b < part.n; b++)
			gl_add(&acc, NULL, &part.t[b]);
		free(part.t);
	}
	return acc;
}

static void gthread_str(const struct gthread *t, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (int i = 0; i < t->n; i++) {
		int e = t->e[i];

		pos += (size_t)snprintf(buf + pos, len - pos, "%s", i ? "->" : "");
		if (e == GSTAR) {
			pos += (size_t)snprintf(buf + pos, len - pos, "*");
			continue;
		}
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s%s", e % 4 == 1 ? ":" : "",
					pool[e / 4].text, e % 4 == 2 ? ":" : "");
	}
}

static int gcolons(const struct gthread *t)
{
	int c = 0;

	for (int i = 0; i < t->n; i++)
		c += t->e[i] != GSTAR && t->e[i] % 4 != 0;
	return c;
}

/* All matchings of t->e[i..] from frame f; records the best frame of the first colon. */
static bool ref_rec(const struct gthread *t, int i, size_t f, const struct pat_frame *fr, size_t n,
		    int colon_frame, int *best)
{
	bool any = false;
	int e;

	if (i == t->n) {
		if (f != n)
			return false;
		if (colon_frame > *best)
			*best = colon_frame;
		return true;
	}
	e = t->e[i];
	if (e == GSTAR) {
		for (size_t k = f; k <= n; k++)
			any |= ref_rec(t, i + 1, k, fr, n, colon_frame, best);
		return any;
	}
	if (f >= n || !ref_name(pool[e / 4].name, pool[e / 4].quoted, &fr[f]))
		return false;
	if (e % 4 && colon_frame == -100)
		colon_frame = e % 4 == 2 ? (int)f : (int)f - 1;
	return ref_rec(t, i + 1, f + 1, fr, n, colon_frame, best);
}

static int ref_match(const struct glist *l, const struct pat_frame *fr, size_t n, size_t *which)
{
	int first = -1;

	for (int i = 0; i < l->n; i++) {
		const struct gthread *t = &l->t[i];
		int best = -1000;
		bool ok = false;

		if (first >= 0 && !gcolons(t))
			continue;
		for (size_t s = 0; s <= n; s++) /* the implicit leading '*' */
			ok |= ref_rec(t, 0, s, fr, n, -100, &best);
		if (!ok)
			continue;
		if (gcolons(t)) {
			*which = (size_t)i;
			return best < 0 ? PAT_ABOVE_ROOT : best;
		}
		if (first < 0)
			first = i;
	}
	if (first < 0)
		return PAT_NOMATCH;
	*which = (size_t)first;
	return n ? (int)n - 1 : PAT_ABOVE_ROOT;
}

static void check_roundtrip(const struct pat *p, unsigned flags)
{
	char buf[8192], buf2[8192];
	struct pat *q;

	for (size_t i = 0; i < pat_nthreads(p); i++) {
		assert_int_equal(pat_thread_str(p, i, buf, sizeof(buf)), 0);
		q = parse_ok(buf, flags);
		assert_int_equal(pat_nthreads(q), 1);
		assert_int_equal(pat_thread_str(q, 0, buf2, sizeof(buf2)), 0);
		assert_string_equal(buf, buf2);
		pat_free(q);
	}
	if (pat_str(p, buf, sizeof(buf)))
		return;
	q = parse_ok(buf, flags);
	assert_int_equal(pat_nthreads(q), pat_nthreads(p));
	assert_int_equal(pat_str(q, buf2, sizeof(buf2)), 0);
	assert_string_equal(buf, buf2);
	pat_free(q);
}

static void test_property_reference(void **state)
{
	int npat = 0, nerr = 0, nmatch = 0, ncases = 0, ncolon = 0, nabove = 0;

	(void)state;
	rng_state = 20240611;
	for (int iter = 0; iter < 3000; iter++) {
		struct gen g = { .len = 0 };
		struct glist l;
		struct pat_error err;
		struct pat *p = NULL;
		unsigned flags = rnd(4) == 0 ? PAT_ICASE : 0;
		bool bad = false;
		char buf[8192], want[8192];
		int rc;

		if (rnd(4) == 0)
			gputs(&g, rnd(2) ? "WHEN " : "when\n");
		l = gen_alt(&g, 0);
		if (rnd(3) == 0) {
			gspace(&g);
			gputs(&g, ";");
		}
		for (int i = 0; i < l.n; i++)
			bad |= gcolons(&l.t[i]) > 1;
		rc = pat_parse(g.text, flags, &p, &err);
		if (bad) {
			if (rc != -EINVAL || strncmp(err.msg, "more than one ':'", 17))
				fail_msg("'%s': expected a colon error, got %d %s", g.text, rc,
					 err.msg);
			nerr++;
			free(l.t);
			continue;
		}
		if (rc)
			fail_msg("'%s' rejected: column %d: %s", g.text, err.column, err.msg);
		npat++;
		assert_int_equal(pat_nthreads(p), (size_t)l.n);
		for (int i = 0; i < l.n; i++) {
			gthread_str(&l.t[i], want, sizeof(want));
			assert_int_equal(pat_thread_str(p, i, buf, sizeof(buf)), 0);
			if (strcmp(buf, want))
				fail_msg("'%s' thread %d: got %s, want %s", g.text, i, buf, want);
		}
		check_roundtrip(p, flags);
		ref_icase = flags & PAT_ICASE;
		for (int s = 0; s < 20; s++) {
			struct pat_frame fr[12];
			struct pat_match_info info;
			size_t n = rnd(13), which = 0;
			int got, exp;

			for (size_t k = 0; k < n; k++)
				fr[k] = alphabet[rnd(NALPHA)];
			exp = ref_match(&l, fr, n, &which);
			got = pat_match_ex(p, fr, n, &info);
			ncases++;
			if (got != exp || (exp != PAT_NOMATCH && info.thread != which)) {
				char st[1024];
				size_t pos = 0;

				for (size_t k = 0; k < n; k++)
					pos += (size_t)snprintf(st + pos, sizeof(st) - pos,
								" %s/%s",
								fr[k].module ? fr[k].module : "-",
								fr[k].proc ? fr[k].proc : "-");
				fail_msg("'%s' (flags %u) on [%s]: got %d (thread %zu), want %d "
					 "(thread %zu)",
					 g.text, flags, st, got, info.thread, exp, which);
			}
			nmatch += got != PAT_NOMATCH;
			nabove += got == PAT_ABOVE_ROOT;
			ncolon += got != PAT_NOMATCH && pat_has_colon(p) && got != (int)n - 1;
		}
		pat_free(p);
		free(l.t);
	}
	print_message("%d patterns, %d rejected for two colons, %d stacks: %d matched, %d by a "
		      "colon, %d above the root\n",
		      npat, nerr, ncases, nmatch, ncolon, nabove);
	/* the generator must exercise every outcome */
	assert_true(npat > 2000);
	assert_true(nerr > 20);
	assert_true(nmatch > ncases / 10);
	assert_true(nmatch < ncases * 9 / 10);
	assert_true(ncolon > 500);
	assert_true(nabove > 50);
}

/* Random text from the pattern alphabet: never crashes, and what parses round-trips. */
static void test_property_garbage(void **state)
{
	static const char *const bits[] = {
		"a",	"b",	"m.a",	    "*", "?",	  ":",	  "::", "->", "-", ">",
		"|",	"(",	")",	    ";", " ",	  "\n",	  "\"", "\\", ".", "when",
		"WHEN", "x::y", "\xc3\xa9", "&", "\"q\"", "lib*", "\t", "+",  "'",
	};
	int ok = 0, bad = 0;

	(void)state;
	rng_state = 77;
	for (int iter = 0; iter < 20000; iter++) {
		char text[256];
		size_t len = 0;
		unsigned n = rnd(16);
		struct pat_error err;
		struct pat *p = NULL;
		int rc, nchars = 0;

		for (unsigned i = 0; i < n; i++) {
			const char *b = bits[rnd(sizeof(bits) / sizeof(bits[0]))];

			memcpy(text + len, b, strlen(b));
			len += strlen(b);
		}
		text[len] = '\0';
		for (size_t i = 0; i < len; i++)
			nchars += ((unsigned char)text[i] & 0xc0) != 0x80;
		rc = pat_parse(text, rnd(4), &p, &err);
		if (rc == 0) {
			ok++;
			check_roundtrip(p, 0);
			pat_free(p);
			continue;
		}
		bad++;
		assert_int_equal(rc, -EINVAL);
		assert_null(p);
		assert_true(err.column >= 1 && err.column <= nchars + 1);
		assert_true(err.msg[0] != '\0');
		assert_true(err.msg[strlen(err.msg) - 1] != '.');
	}
	assert_true(ok > 1000);
	assert_true(bad > 1000);
}

/* ---------------------------------------------------------------------------------------- */
/* Cost: the matcher is bounded by frames x names name tests per thread */

static void check_cost(const char *pattern, const struct pat_frame *fr, size_t n, int want)
{
	struct pat *p = parse_ok(pattern, 0);
	struct pat_match_info info;
	uint64_t bound = 0;
	int r;

	for (size_t i = 0; i < pat_nthreads(p); i++) {
		char buf[4096];
		size_t names = 0;

		assert_int_equal(pat_thread_str(p, i, buf, sizeof(buf)), 0);
		for (char *s = strtok(buf, "->"); s; s = strtok(NULL, "->"))
			names += strcmp(s, "*") != 0;
		bound += names * n;
	}
	r = pat_match_ex(p, fr, n, &info);
	assert_int_equal(r, want);
	if (info.name_tests > bound)
		fail_msg("%s: %llu name tests, bound %llu", pattern,
			 (unsigned long long)info.name_tests, (unsigned long long)bound);
	pat_free(p);
}

static void test_performance_bound(void **state)
{
	enum {
		N = 1000
	};
	struct pat_frame *fr = calloc(N, sizeof(*fr));
	char text[2048];
	size_t len = 0;

	(void)state;
	assert_non_null(fr);
	alarm(120); /* only a safety net against a hang: the assertions count work, not time */
	fr[0] = (struct pat_frame){ "prog", "main", NULL };
	for (int i = 1; i < N - 1; i++)
		fr[i] = (struct pat_frame){ "prog", i % 3 ? "f" : "g", NULL };
	fr[N - 1] = (struct pat_frame){ "libc.so.6", "malloc", NULL };

	/* 40 primaries, a star between every two */
	len = (size_t)sprintf(text, "main");
	for (int i = 0; i < 38; i++)
		len += (size_t)sprintf(text + len, "->*->%s", i % 2 ? "g" : "f");
	sprintf(text + len, "->*->malloc");
	check_cost(text, fr, N, N - 1);

	/* same with the first colon on a primary deep inside: innermost choice */
	len = (size_t)sprintf(text, "main");
	for (int i = 0; i < 38; i++)
		len += (size_t)sprintf(text + len, "->*->%s%s", i == 5 ? ":" : "",
				       i % 2 ? "g" : "f");
	sprintf(text + len, "->*->malloc");
	/*
	 * ":g" is followed by 16 pairs "f, g"; placed innermost they take f at 995 - 3k and g at
	 * 996 - 3k, so the last f a pair can start at is 950 and the innermost g before is 948.
	 */
	check_cost(text, fr, N, 947);

	/* a block of consecutive names that recursion makes nearly match everywhere */
	len = (size_t)sprintf(text, "main->*");
	for (int i = 0; i < 12; i++)
		len += (size_t)sprintf(text + len, "->f->f->g");
	sprintf(text + len, "->f->f->f->*->malloc");
	check_cost(text, fr, N, PAT_NOMATCH);

	/* many alternatives */
	check_cost("(main|f|g)->*->(f|g|x)->(f|g|y)->*->(f->g|g->f|x)->*->(malloc:|free:)", fr, N,
		   N - 1);
	check_cost("(x|y|z|w)->*->(f|g)->(f|g)->(f|g)->(f|g)->(f|g)->*->(:q|:r)", fr, N,
		   PAT_NOMATCH);
	alarm(0);
	free(fr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_expansion),
		cmocka_unit_test(test_spec_expansion_matching),
		cmocka_unit_test(test_spec_names),
		cmocka_unit_test(test_bare_name),
		cmocka_unit_test(test_dotted_name),
		cmocka_unit_test(test_cfi_names),
		cmocka_unit_test(test_globs),
		cmocka_unit_test(test_clones),
		cmocka_unit_test(test_clones_icase),
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_quoted),
		cmocka_unit_test(test_icase),
		cmocka_unit_test(test_keyword),
		cmocka_unit_test(test_semicolon_and_lines),
		cmocka_unit_test(test_null_frames),
		cmocka_unit_test(test_thread_shape),
		cmocka_unit_test(test_canonical),
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_attribution_info),
		cmocka_unit_test(test_attribution_recursion),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_args),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_str_buffers),
		cmocka_unit_test(test_property_reference),
		cmocka_unit_test(test_property_garbage),
		cmocka_unit_test(test_performance_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
