// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/views/profil.c: profil(2)'s cell formula, the range each cell covers,
 * how many cells cover a procedure, and the special scales (0 and 1 off, 2 one cell).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "profil.h"

/* The formula as docs/lines.md writes it, in 64 bits (the tests' pcs keep the product small). */
static uint64_t formula(uint64_t pc, uint64_t offset, uint32_t scale)
{
	return (((pc - offset) * scale) >> 16) / 2;
}

static const uint32_t scales[] = { 0x10000, 0x8000, 0x4000, 0x1234, 0xffff, 3, 7 };

static void test_cell_is_the_formula(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
		for (uint64_t pc = 0x400000; pc < 0x400000 + 5000; pc++) {
			uint64_t c, want = formula(pc, 0x400000, scales[k]);
			bool in = profil_cell(pc, 0x400000, scales[k], 1000, &c);

			assert_int_equal(in, want < 1000);
			if (in)
				assert_int_equal(c, want);
		}
	}
}

static void test_cell_ranges_hold_their_pcs(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
		for (uint64_t i = 0; i < 300; i++) {
			uint64_t lo, hi, c;

			profil_cell_range(i, 0x1000, scales[k], &lo, &hi);
			if (lo == hi) /* a scale above 0x10000 could leave cells empty: none here */
				fail();
			assert_true(profil_cell(lo, 0x1000, scales[k], 1 << 20, &c));
			assert_int_equal(c, i);
			assert_true(profil_cell(hi - 1, 0x1000, scales[k], 1 << 20, &c));
			assert_int_equal(c, i);
			assert_true(profil_cell(hi, 0x1000, scales[k], 1 << 20, &c));
			assert_int_equal(c, i + 1);
			if (lo > 0x1000) {
				assert_true(profil_cell(lo - 1, 0x1000, scales[k], 1 << 20, &c));
				assert_int_equal(c, i - 1);
			}
		}
	}
}

static void test_one_cell_per_two_or_four_bytes(void **state)
{
	uint64_t lo, hi;

	(void)state;
	profil_cell_range(10, 0x1000, 0x10000, &lo, &hi);
	assert_int_equal(lo, 0x1000 + 20);
	assert_int_equal(hi, 0x1000 + 22);
	profil_cell_range(10, 0x1000, 0x8000, &lo, &hi);
	assert_int_equal(lo, 0x1000 + 40);
	assert_int_equal(hi, 0x1000 + 44);
	assert_int_equal(profil_cells_for(100, 0x10000), 50);
	assert_int_equal(profil_cells_for(101, 0x10000), 51);
	assert_int_equal(profil_cells_for(100, 0x8000), 25);
	assert_int_equal(profil_cells_for(1, 0x8000), 1);
}

static void test_cells_for_covers_exactly(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(scales) / sizeof(scales[0]); k++) {
		for (uint64_t len = 1; len < 3000; len += 7) {
			uint64_t n = profil_cells_for(len, scales[k]), c;

			/* the last byte is in the last cell, and no cell is left over */
			assert_true(profil_cell(0x1000 + len - 1, 0x1000, scales[k], n, &c));
			assert_int_equal(c, n - 1);
		}
	}
}

static void test_special_scales(void **state)
{
	uint64_t c = 99, lo, hi;

	(void)state;
	assert_false(profil_cell(0x2000, 0x1000, 0, 100, &c));
	assert_false(profil_cell(0x2000, 0x1000, 1, 100, &c));
	assert_int_equal(profil_cells_for(4096, 0), 0);
	assert_int_equal(profil_cells_for(4096, 1), 0);
	/* 2: everything from the offset in cell 0, however far */
	assert_true(profil_cell(0x1000, 0x1000, 2, 1, &c));
	assert_int_equal(c, 0);
	assert_true(profil_cell(0x7fffffff0000, 0x1000, 2, 1, &c));
	assert_int_equal(c, 0);
	assert_false(profil_cell(0xfff, 0x1000, 2, 1, &c));
	assert_int_equal(profil_cells_for(1 << 30, 2), 1);
	profil_cell_range(0, 0x1000, 2, &lo, &hi);
	assert_int_equal(lo, 0x1000);
	assert_int_equal(hi, UINT64_MAX);
	/* below the offset, past the buffer, a scale out of range: outside */
	assert_false(profil_cell(0x0fff, 0x1000, 0x10000, 100, &c));
	assert_false(profil_cell(0x1000 + 200, 0x1000, 0x10000, 100, &c));
	assert_false(profil_cell(0x1000, 0x1000, 0x10001, 100, &c));
	assert_false(profil_cell(0x1000, 0x1000, 0x10000, 0, &c));
	/* 64-bit distances do not wrap: a pc far above still lands by the formula */
	assert_true(profil_cell(0x1000 + (1ULL << 40), 0x1000, 0x10000, 1ULL << 40, &c));
	assert_int_equal(c, 1ULL << 39);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cell_is_the_formula),
		cmocka_unit_test(test_cell_ranges_hold_their_pcs),
		cmocka_unit_test(test_one_cell_per_two_or_four_bytes),
		cmocka_unit_test(test_cells_for_covers_exactly),
		cmocka_unit_test(test_special_scales),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
