// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/target.c: a target's clock (paused time does not count, zero starts
 * it again, a loaded target keeps its saved time), its names, its facts as JSON, and that
 * freeing it frees the instruments it carries (ASan would report the leak).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "sample.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

#define S 1000000000ULL

static void test_elapsed_without_pauses(void **state)
{
	struct target *t = target_new(1);
	uint64_t now = now_ns();

	(void)state;
	assert_non_null(t);
	/* ran 10 s, of which 3 s paused, and ended */
	t->start_ns = now - 20 * S;
	t->end_ns = now - 10 * S;
	t->paused_ns = 3 * S;
	t->state = TARGET_STOPPED;
	assert_true(target_elapsed(t) > 6.999 && target_elapsed(t) < 7.001);
	/* paused now, since 4 s: that counts as paused too */
	t->end_ns = 0;
	t->state = TARGET_PAUSED;
	t->pause_start = now_ns() - 4 * S;
	assert_true(target_elapsed(t) > 12.99 && target_elapsed(t) < 13.01);
	/* loaded from disk: its saved time, nothing more */
	t->start_ns = 0;
	t->elapsed_saved = 42.5;
	assert_true(target_elapsed(t) == 42.5);
	target_free(t);
}

static void test_restart_clock(void **state)
{
	struct target *t = target_new(1);

	(void)state;
	t->start_ns = now_ns() - 50 * S;
	t->paused_ns = 5 * S;
	t->elapsed_saved = 7;
	t->end_ns = now_ns() - S; /* stopped: zero leaves it stopped, at 0 s */
	target_restart_clock(t);
	assert_true(target_elapsed(t) == 0);
	target_free(t);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(target_state_name(TARGET_RUNNING), "running");
	assert_string_equal(target_state_name(TARGET_EXITED), "exited");
	assert_string_equal(target_state_name((enum target_state)9), "?");
	assert_string_equal(target_kind_name(TARGET_CGROUP), "cgroup");
	assert_string_equal(target_kind_name((enum target_kind)-1), "?");
}

static void test_facts_json(void **state)
{
	struct target *t = target_new(3);
	cJSON *o = cJSON_CreateObject();

	(void)state;
	snprintf(t->name, sizeof(t->name), "web");
	t->owner = 1000;
	t->kind = TARGET_PID;
	t->pid = 77;
	t->children = true;
	t->state = TARGET_EXITED;
	t->root_exited = true;
	t->exit_status = 256;
	target_facts_json(t, o);
	assert_int_equal(proto_num(o, "id", 0), 3);
	assert_string_equal(proto_str(o, "name", ""), "web");
	assert_int_equal(proto_num(o, "owner", -1), 1000);
	assert_string_equal(proto_str(o, "kind", ""), "pid");
	assert_int_equal(proto_num(o, "pid", 0), 77);
	assert_string_equal(proto_str(o, "state", ""), "exited");
	assert_int_equal(proto_num(o, "wait_status", 0), 256);
	/* what it watches only: the instruments add their own facts */
	assert_null(cJSON_GetObjectItem(o, "mode"));
	cJSON_Delete(o);
	/* a cgroup target has no pid; one still running no wait status */
	o = cJSON_CreateObject();
	t->kind = TARGET_CGROUP;
	t->root_exited = false;
	target_facts_json(t, o);
	assert_null(cJSON_GetObjectItem(o, "pid"));
	assert_null(cJSON_GetObjectItem(o, "wait_status"));
	cJSON_Delete(o);
	target_free(t);
}

static void test_free_frees_instruments(void **state)
{
	struct target *t = target_new(1);
	struct sample *sp = sample_new();
	struct agg_stack st = { .kind = PCMON_KIND_ONCPU, .pid = 1 };

	(void)state;
	assert_non_null(sp);
	assert_int_equal(agg_add(sp->agg, &st, 3, 0), 0);
	sp->when_text = strdup("*");
	t->inst[INST_SAMPLE] = sp;
	assert_ptr_equal(sample_of(t), sp);
	target_free(t); /* LeakSanitizer checks */
	target_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elapsed_without_pauses),
		cmocka_unit_test(test_restart_clock),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_facts_json),
		cmocka_unit_test(test_free_frees_instruments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
