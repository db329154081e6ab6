// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/demangle.c: C++ and Rust names demangled as perf prints them, the
 * names without parameters that patterns match, and mangled names in patterns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "pat.h"

static void expect_demangled(const char *mangled, const char *want)
{
	char *d = dm_demangle(mangled);

	if (!want) {
		assert_null(d);
		return;
	}
	assert_non_null(d);
	assert_string_equal(d, want);
	free(d);
}

static void test_demangle(void **state)
{
	(void)state;
	expect_demangled("_Z14bitmap_set_bitP11bitmap_headi", "bitmap_set_bit(bitmap_head*, int)");
	expect_demangled("_ZNSt6vectorIiSaIiEE9push_backERKi",
			 "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect_demangled("_Z3fooi.cold", "foo(int) [clone .cold]");
	/* Rust: legacy (its hash is dropped) and v0 */
	expect_demangled("_ZN4core3fmt5write17h6b6e2bd4c3d2ba31E", "core::fmt::write");
	expect_demangled("_RNvCs1234_7mycrate3foo", "mycrate::foo");
	/* C names, and things that only look mangled, stay as they are */
	expect_demangled("main", NULL);
	expect_demangled("_start", NULL);
	expect_demangled("_Zzz", NULL);
	expect_demangled(NULL, NULL);
}

static void expect_base(const char *name, const char *want)
{
	char out[256];
	bool differs = dm_base(name, out, sizeof(out));

	if (!want) {
		assert_false(differs);
		return;
	}
	assert_true(differs);
	assert_string_equal(out, want);
}

static void test_base(void **state)
{
	(void)state;
	expect_base("bitmap_set_bit(bitmap_head*, int)", "bitmap_set_bit");
	expect_base("std::vector<int, std::allocator<int> >::push_back(int const&)",
		    "std::vector<int, std::allocator<int> >::push_back");
	expect_base("ns::cls::get() const", "ns::cls::get");
	expect_base("ns::cls::move() &&", "ns::cls::move");
	expect_base("void ns::f<int>(int)", "ns::f<int>");
	expect_base("foo(int) [clone .isra.0] [clone .cold]", "foo.isra.0.cold");
	expect_base("ns::operator new(unsigned long)", "ns::operator new");
	expect_base("operator<<(std::ostream&, int)", "operator<<");
	expect_base("ns::functor::operator()(int)", "ns::functor::operator()");
	expect_base("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper");
	expect_base("main", NULL);
	expect_base("core::fmt::write", NULL);
	/* not a parameter list after a name: left whole */
	expect_base("(x)", NULL);
	/* too small a buffer: refused, nothing written past it */
	{
		char small[4] = "abc";

		assert_false(dm_base("f(int)", small, sizeof(small)));
	}
}

static int match(const char *pattern, const char *module, const char *proc)
{
	struct pat_error pe;
	struct pat *p = NULL;
	char base[256];
	struct pat_frame fr = { module, proc, dm_base(proc, base, sizeof(base)) ? base : NULL };
	int r;

	assert_int_equal(pat_parse(pattern, 0, &p, &pe), 0);
	r = pat_match(p, &fr, 1) != PAT_NOMATCH;
	pat_free(p);
	return r;
}

static void test_patterns_match_cxx_names(void **state)
{
	const char *f = "bitmap_set_bit(bitmap_head*, int)";

	(void)state;
	/* the name without its parameters, in full (quoted), or mangled */
	assert_true(match("bitmap_set_bit", "prog", f));
	assert_true(match("prog.bitmap_set_bit", "prog", f));
	assert_true(match("\"bitmap_set_bit(bitmap_head*, int)\"", "prog", f));
	assert_true(match("_Z14bitmap_set_bitP11bitmap_headi", "prog", f));
	assert_true(match("prog._Z14bitmap_set_bitP11bitmap_headi", "prog", f));
	assert_true(match("bitmap_*", "prog", f));
	assert_false(match("other._Z14bitmap_set_bitP11bitmap_headi", "prog", f));
	assert_false(match("bitmap_set", "prog", f));
	/* qualified names, and clones as for C */
	assert_true(match("ns::cls::get", "prog", "ns::cls::get() const"));
	assert_true(match("foo", "prog", "foo(int) [clone .cold]"));
	assert_true(match("_Z3fooi", "prog", "foo(int)"));
	assert_false(match("_Z3fooi", "prog", "foo(long)"));
	/* template arguments need no quotes; a '>' after '-' is still an arrow */
	assert_true(match("geo::Grid<int>::sum", "prog", "geo::Grid<int>::sum(int) const"));
	assert_true(match("std::map<int, long>::at", "prog", "std::map<int, long>::at(int const&)"));
	assert_false(match("geo::Grid<long>::sum", "prog", "geo::Grid<int>::sum(int) const"));
}

static void test_template_names_parse(void **state)
{
	struct pat_frame fr[2] = { { "prog", "geo::Grid<int>::sum(int) const", "geo::Grid<int>::sum" },
				   { "prog", "leaf()", "leaf" } };
	struct pat_error pe;
	struct pat *p = NULL;
	char text[128];

	(void)state;
	assert_int_equal(pat_parse("geo::Grid<int>::sum->leaf", 0, &p, &pe), 0);
	assert_int_not_equal(pat_match(p, fr, 2), PAT_NOMATCH);
	assert_int_equal(pat_str(p, text, sizeof(text)), 0);
	assert_string_equal(text, "geo::Grid<int>::sum->leaf");
	pat_free(p);
	assert_int_equal(pat_parse("geo::Grid<int->leaf", 0, &p, &pe), -EINVAL);
	assert_int_equal(pe.column, 10);
	assert_non_null(strstr(pe.msg, "'<' not closed"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_base),
		cmocka_unit_test(test_patterns_match_cxx_names),
		cmocka_unit_test(test_template_names_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
