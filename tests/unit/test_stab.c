// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/instruments/stab.c: the stacks the stacks ring sent, by key, as a
 * drain looks its entries' stacks up.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "stab.h"

/* A stack of @n frames whose frames say its key. */
static struct pcmon_stack *stack_of(uint64_t key, uint32_t n)
{
	static struct pcmon_stack st;

	st.len = PCMON_STACK_MAX; /* what the ring claims; the caller says how many it holds */
	for (uint32_t i = 0; i < n; i++)
		st.ip[i] = key * 1000 + i;
	return &st;
}

static void test_finds_what_it_kept_through_growth(void **state)
{
	struct stab t = { 0 };
	const struct pcmon_stack *got;

	(void)state;
	/* past the first table of slots (1024) and several growths of the arena */
	for (uint64_t k = 1; k <= 5000; k++)
		assert_int_equal(stab_add(&t, k * 7919, stack_of(k * 7919, k % 40), k % 40), 0);
	for (uint64_t k = 1; k <= 5000; k++) {
		got = stab_find(&t, k * 7919);
		assert_non_null(got);
		assert_int_equal(got->len, k % 40); /* cut after its frames */
		for (uint32_t i = 0; i < got->len; i++)
			assert_int_equal(got->ip[i], k * 7919 * 1000 + i);
	}
	assert_null(stab_find(&t, 3));	/* never sent */
	assert_null(stab_find(&t, 0));	/* no stack, by definition */
	stab_free(&t);
}

static void test_clear_forgets_and_keeps_room(void **state)
{
	struct stab t = { 0 };
	size_t cap;

	(void)state;
	for (uint64_t k = 1; k <= 2000; k++)
		assert_int_equal(stab_add(&t, k, stack_of(k, 3), 3), 0);
	cap = t.cap_arena;
	stab_clear(&t);
	assert_null(stab_find(&t, 5));
	assert_int_equal(t.cap_arena, cap);
	/* a key sent again after a drain is the new stack */
	assert_int_equal(stab_add(&t, 5, stack_of(6, 2), 2), 0);
	assert_int_equal(stab_find(&t, 5)->ip[1], 6001);
	stab_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finds_what_it_kept_through_growth),
		cmocka_unit_test(test_clear_forgets_and_keeps_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
