// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for pcmon_ticks_missed() (include/pcmon_sample.h): the timer ticks the kernel
 * missed between two ticks of one cpu-clock timer, as the sampling BPF program counts them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "pcmon_sample.h"

#define P 19000ull /* the timer of --interval 20 */
#define T0 54211767307261ull

static void test_next_tick_misses_none(void **state)
{
	(void)state;
	assert_int_equal(pcmon_ticks_missed(T0, T0 + P, P), 0);
}

static void test_late_tick_counts_those_passed(void **state)
{
	(void)state;
	/* hrtimer_forward_now() kept the grid: the two between were never fired */
	assert_int_equal(pcmon_ticks_missed(T0, T0 + 3 * P, P), 2);
	assert_int_equal(pcmon_ticks_missed(T0, T0 + 1000 * P, P), 999);
}

static void test_off_the_grid_is_a_new_timer(void **state)
{
	(void)state;
	/* started again (a new event, or another interval's slot): nothing missed */
	assert_int_equal(pcmon_ticks_missed(T0, T0 + 3 * P + 1, P), 0);
	assert_int_equal(pcmon_ticks_missed(T0, T0 + P / 2, P), 0);
}

static void test_nothing_known_before(void **state)
{
	(void)state;
	assert_int_equal(pcmon_ticks_missed(0, T0, P), 0);	 /* no tick yet */
	assert_int_equal(pcmon_ticks_missed(T0, T0, P), 0);	 /* the same tick */
	assert_int_equal(pcmon_ticks_missed(T0 + P, T0, P), 0); /* out of order */
	assert_int_equal(pcmon_ticks_missed(T0, T0 + 3 * P, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_tick_misses_none),
		cmocka_unit_test(test_late_tick_counts_those_passed),
		cmocka_unit_test(test_off_the_grid_is_a_new_timer),
		cmocka_unit_test(test_nothing_known_before),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
