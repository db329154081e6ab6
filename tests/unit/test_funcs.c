// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/instruments/funcs.c's reading of a function's first instructions:
 * whether the kernel steps a probe's instruction out of line, and where past the entry a
 * probe sees the same registers and stack at one trap (funcs_emulated_at()), on the byte
 * patterns glibc's allocator functions start with.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "funcs.h"

#define AT 4096 /* where the function starts in the file */

/* A file holding @code at AT, padded with int3; its path in @path. */
static void write_code(char *path, const unsigned char *code, size_t n)
{
	unsigned char buf[AT + 64];
	int fd;

	snprintf(path, 64, "/tmp/pcmon-funcs-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = 0xcc;
	for (size_t i = 0; i < n; i++)
		buf[AT + i] = code[i];
	assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	close(fd);
}

static void check(const unsigned char *code, size_t n, uint64_t want_skip, bool want_stepped)
{
	char path[64];

	write_code(path, code, n);
	assert_int_equal(funcs_emulated_at(path, AT), AT + want_skip);
	assert_int_equal(funcs_stepped(path, AT), want_stepped);
	unlink(path);
}

static void test_push_is_emulated_where_it_is(void **state)
{
	static const unsigned char malloc_[] = { 0x41, 0x54, 0x55, 0x53 }; /* push %r12 ... */
	static const unsigned char push_rbp[] = { 0x55, 0x48, 0x89, 0xe5 };

	(void)state;
	check(malloc_, sizeof(malloc_), 0, false);
	check(push_rbp, sizeof(push_rbp), 0, false);
}

static void test_test_then_jump_is_probed_at_the_jump(void **state)
{
	/* glibc 2.36's free: test %rdi,%rdi; je ... */
	static const unsigned char free_[] = { 0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0, 0, 0, 0x55 };
	/* test %edi,%edi; js (short) */
	static const unsigned char test32[] = { 0x85, 0xff, 0x78, 0x10, 0x55 };
	/* memalign: cmpb $0x0,disp32(%rip); je */
	static const unsigned char memalign_[] = { 0x80, 0x3d, 0x71, 0x0e, 0x14, 0, 0, 0x74, 0x2f };

	(void)state;
	check(free_, sizeof(free_), 3, true);
	check(test32, sizeof(test32), 2, true);
	check(memalign_, sizeof(memalign_), 7, true);
}

static void test_landing_mark_skipped(void **state)
{
	static const unsigned char endbr_push[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57 };
	static const unsigned char endbr_test_jcc[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x85, 0xff,
							0x74, 0x05 };
	static const unsigned char endbr_mov[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xf8 };

	(void)state;
	check(endbr_push, sizeof(endbr_push), 4, true);
	check(endbr_test_jcc, sizeof(endbr_test_jcc), 7, true);
	check(endbr_mov, sizeof(endbr_mov), 0, true); /* (nothing gained: left at the entry) */
}

static void test_nothing_skipped_that_changes_registers(void **state)
{
	/* a test not followed by a jump: the probe stays at the entry */
	static const unsigned char test_mov[] = { 0x48, 0x85, 0xff, 0x48, 0x89, 0xf8 };
	/* posix_memalign: cmpb, then a push (the compare's flags are used later) */
	static const unsigned char cmp_push[] = { 0x80, 0x3d, 1, 2, 0x14, 0, 0, 0x41, 0x55 };
	/* test of memory, not of registers */
	static const unsigned char test_mem[] = { 0x48, 0x85, 0x07, 0x74, 0x05 };
	static const unsigned char mov[] = { 0x48, 0x89, 0xf8, 0xc3 };

	(void)state;
	check(test_mov, sizeof(test_mov), 0, true);
	check(cmp_push, sizeof(cmp_push), 0, true);
	check(test_mem, sizeof(test_mem), 0, true);
	check(mov, sizeof(mov), 0, true);
}

static void test_unreadable_file_left_alone(void **state)
{
	(void)state;
	assert_int_equal(funcs_emulated_at("/nonexistent/pcmon", AT), AT);
	assert_true(funcs_stepped("/nonexistent/pcmon", AT));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_push_is_emulated_where_it_is),
		cmocka_unit_test(test_test_then_jump_is_probed_at_the_jump),
		cmocka_unit_test(test_landing_mark_skipped),
		cmocka_unit_test(test_nothing_skipped_that_changes_registers),
		cmocka_unit_test(test_unreadable_file_left_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
