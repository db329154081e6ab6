// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/v8.c's pure parts (docs/node.md): the layout from the v8dbg_
 * constants a node binary publishes (node 20's own values) and the version check, a
 * ScopeInfo's slots, source position tables, lines and the names JavaScript frames get.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sym.h"
#include "v8.h"

/* What node 20.20.2 (V8 11.3.244.8) publishes of what pcmon reads, and two types beside. */
static const struct {
	const char *name;
	int64_t value;
} node20[] = {
	{ "v8dbg_class_HeapObject__map__Map", 0 },
	{ "v8dbg_class_Map__instance_type__uint16_t", 12 },
	{ "v8dbg_class_JSFunction__shared__SharedFunctionInfo", 24 },
	{ "v8dbg_off_fp_function", -16 },
	{ "v8dbg_off_fp_context", -8 },
	{ "v8dbg_off_fp_bytecode_offset", -40 },
	{ "v8dbg_class_SharedFunctionInfo__name_or_scope_info__Object", 16 },
	{ "v8dbg_class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32 },
	{ "v8dbg_class_Script__name__Object", 16 },
	{ "v8dbg_class_Script__source__Object", 8 },
	{ "v8dbg_class_Script__line_ends__Object", 56 },
	{ "v8dbg_class_String__length__int32_t", 12 },
	{ "v8dbg_class_SeqOneByteString__chars__char", 16 },
	{ "v8dbg_class_ConsString__first__String", 16 },
	{ "v8dbg_class_ConsString__second__String", 24 },
	{ "v8dbg_class_ThinString__actual__String", 16 },
	{ "v8dbg_class_SlicedString__parent__String", 16 },
	{ "v8dbg_class_SlicedString__offset__SMI", 24 },
	{ "v8dbg_class_ExternalString__resource__Object", 16 },
	{ "v8dbg_class_FixedArrayBase__length__SMI", 8 },
	{ "v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 262 },
	{ "v8dbg_FirstNonstringType", 128 },
	{ "v8dbg_type_ScopeInfo__SCOPE_INFO_TYPE", 261 },
	{ "v8dbg_StringRepresentationMask", 7 },
	{ "v8dbg_StringEncodingMask", 8 },
	{ "v8dbg_OneByteStringTag", 8 },
	{ "v8dbg_ConsStringTag", 1 },
	{ "v8dbg_SlicedStringTag", 3 },
	{ "v8dbg_ThinStringTag", 5 },
	{ "v8dbg_ExternalStringTag", 2 },
	{ "v8dbg_scopeinfo_idx_first_vars", 3 },
	{ "v8dbg_scopeinfo_idx_ncontextlocals", 2 },
	{ "v8dbg_HeapObjectTag", 1 },
	{ "v8dbg_SmiShiftSize", 31 },
	{ "v8dbg_TaggedSize", 8 },
	{ "v8dbg_class_SharedFunctionInfo__function_data__Object", 8 },
	{ "v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE", 191 },
	{ "v8dbg_class_Code__deoptimization_data__FixedArray", 16 },
	{ "v8dbg_class_Code__source_position_table__ByteArray", 24 },
	{ "v8dbg_CodeKindFieldMask", 15 },
	{ "v8dbg_CodeKindInterpretedFunction", 10 },
	{ "v8dbg_CodeKindBaseline", 11 },
	{ "v8dbg_DeoptimizationDataInlinedFunctionCountIndex", 1 },
	{ "v8dbg_DeoptimizationDataSharedFunctionInfoIndex", 6 },
	{ "v8dbg_class_BytecodeArray__data__uintptr_t", 54 },
	{ "v8dbg_type_JSAtomicsCondition__JS_ATOMICS_CONDITION_TYPE", 2097 },
	{ "v8dbg_type_JSFunction__JS_FUNCTION_TYPE", 2066 },
	{ "v8dbg_type_JSBoundFunction__JS_BOUND_FUNCTION_TYPE", 2064 },
	{ "v8dbg_type_Script__SCRIPT_TYPE", 167 },
	{ "v8dbg_type_FixedArray__FIXED_ARRAY_TYPE", 175 },
	{ "v8dbg_type_Code__CODE_TYPE", 245 },
	{ "v8dbg_class_JSFunction__raw_feedback_cell__FeedbackCell", 40 },
	{ "v8dbg_class_FeedbackCell__value__HeapObject", 8 },
	{ "v8dbg_type_FeedbackVector__FEEDBACK_VECTOR_TYPE", 249 },
	{ "v8dbg_off_fp_bytecode_array", -32 },
	{ "v8dbg_frametype_InterpretedFrame", 13 },
};
#define N20 (sizeof(node20) / sizeof(node20[0]))

static const uint32_t v11_3 = V8_VERSION(11, 3, 244);

/* The table, with entry @drop left out (-1: none) or @patch set to @value. */
static int layout_of(int drop, int patch, int64_t value, uint32_t version, struct v8_layout *l,
		     char *why)
{
	const char *names[N20 + 1];
	int64_t values[N20 + 1];
	size_t n = 0;

	for (size_t i = 0; i < N20; i++) {
		if ((int)i == drop)
			continue;
		names[n] = node20[i].name;
		values[n++] = (int)i == patch ? value : node20[i].value;
	}
	return v8_layout(names, values, n, version, l, why, 200);
}

static int index_of(const char *name)
{
	for (size_t i = 0; i < N20; i++)
		if (!strcmp(node20[i].name, name))
			return i;
	fail_msg("no %s in the table", name);
	return -1;
}

static void layout_node20(void **state)
{
	struct v8_layout l;
	char why[200] = "";

	(void)state;
	assert_int_equal(layout_of(-1, -1, 0, v11_3, &l, why), 0);
	assert_int_equal(l.version, v11_3);
	/* BPF's: frame slots below the frame pointer, the objects on the way to the SFI */
	assert_int_equal(l.o.fp_function, 16);
	assert_int_equal(l.o.fp_context, 8);
	assert_int_equal(l.o.fp_bytecode_offset, 40);
	assert_int_equal(l.o.map, 0);
	assert_int_equal(l.o.map_type, 12);
	assert_int_equal(l.o.fn_shared, 24);
	assert_int_equal(l.o.fn_code, 48);
	assert_int_equal(l.o.fn_feedback, 40);
	assert_int_equal(l.o.fp_bytecode_array, 32);
	assert_int_equal(l.cell_value, 8);
	assert_int_equal(l.type_feedback_vector, 249);
	assert_int_equal(l.o.type_sfi, 262);
	/* JSFunction and its 14 subtypes, none of them a type published */
	assert_int_equal(l.o.type_fn_lo, 2066);
	assert_int_equal(l.o.type_fn_hi, 2080);
	/* the engine's */
	assert_int_equal(l.sfi_name_or_scope, 16);
	assert_int_equal(l.sfi_script, 32);
	assert_int_equal(l.script_source, 8);
	assert_int_equal(l.type_scope_info, 261);
	assert_int_equal(l.code_spt, 24);
	assert_int_equal(l.code_start, 40);
	assert_int_equal(l.code_flags, 48);
	assert_int_equal(l.code_size, 56);
	assert_int_equal(l.deopt_literals, 2);
	assert_int_equal(l.deopt_inlining, 7);
	assert_int_equal(l.bca_spt, 32);
	assert_int_equal(l.bca_data, 54);
}

static void layout_refused(void **state)
{
	struct v8_layout l;
	char why[200];

	(void)state;
	/* versions: 11.1.204 to 11.3 */
	assert_int_equal(layout_of(-1, -1, 0, V8_VERSION(11, 1, 204), &l, why), 0);
	assert_int_equal(layout_of(-1, -1, 0, V8_VERSION(11, 1, 203), &l, why), -ENOTSUP);
	assert_non_null(strstr(why, "11.1.203"));
	assert_int_equal(layout_of(-1, -1, 0, V8_VERSION(11, 4, 0), &l, why), -ENOTSUP);
	assert_non_null(strstr(why, "does not read"));
	assert_int_equal(layout_of(-1, -1, 0, V8_VERSION(10, 2, 154), &l, why), -ENOTSUP);
	/* a constant missing is named */
	assert_int_equal(layout_of(index_of("v8dbg_class_Map__instance_type__uint16_t"), -1, 0,
				   v11_3, &l, why), -ENOTSUP);
	assert_non_null(strstr(why, "v8dbg_class_Map__instance_type__uint16_t"));
	/* a frame slot out of BPF's window, or not a word's */
	assert_int_equal(layout_of(-1, index_of("v8dbg_off_fp_function"), -72, v11_3, &l, why),
			 -ENOTSUP);
	assert_int_equal(layout_of(-1, index_of("v8dbg_off_fp_function"), -12, v11_3, &l, why),
			 -ENOTSUP);
	/* an offset beyond a header the engine reads */
	assert_int_equal(layout_of(-1, index_of("v8dbg_class_Script__source__Object"), 4096, v11_3,
				   &l, why), -ENOTSUP);
	assert_non_null(strstr(why, "Script__source"));
	/* another tagging scheme (pointer compression) */
	assert_int_equal(layout_of(-1, index_of("v8dbg_TaggedSize"), 4, v11_3, &l, why), -ENOTSUP);
	/* no v8dbg_ constant at all: not a V8 */
	{
		const char *names[1] = { "main" };
		int64_t values[1] = { 0 };

		assert_int_equal(v8_layout(names, values, 1, v11_3, &l, why, sizeof(why)), -ENOENT);
	}
	/* a type published inside JSFunction's range ends it there */
	assert_int_equal(layout_of(-1, index_of("v8dbg_type_Code__CODE_TYPE"), 2070, v11_3, &l,
				   why), 0);
	assert_int_equal(l.o.type_fn_hi, 2069);
}

static uint64_t smi(int64_t v)
{
	return (uint64_t)v << 32;
}

static void scope_info(void **state)
{
	struct v8_layout l;
	struct v8_scope s;
	uint64_t w[200] = { 0 };
	char why[200];

	(void)state;
	assert_int_equal(layout_of(-1, -1, 0, v11_3, &l, why), 0);
	/* a function scope with two context locals, a name (UNUSED: 3) and an inferred name */
	w[0] = smi(2 | 3 << 12 | 1 << 14);
	w[1] = smi(1);
	w[2] = smi(2);
	w[3] = w[4] = 0x1001; /* the locals' names */
	w[5] = w[6] = smi(0); /* their infos */
	w[7] = 0x2001;	/* the function's name, then its slot */
	w[8] = smi(0);
	w[9] = 0x3001;	/* inferred */
	w[10] = smi(100);
	w[11] = smi(250);
	assert_int_equal(v8_scope_decode(w, 3, &l, &s), 0);
	assert_int_equal(s.need, 12); /* (read that many, and ask again) */
	assert_int_equal(v8_scope_decode(w, 12, &l, &s), 0);
	assert_int_equal(s.name, 7);
	assert_int_equal(s.inferred, 9);
	assert_int_equal(s.pos, 10);
	/* a saved class variable before the name */
	w[0] = smi(2 | 1 << 10 | 1 << 12);
	assert_int_equal(v8_scope_decode(w, 13, &l, &s), 0);
	assert_int_equal(s.name, 8);
	assert_int_equal(s.pos, 10);
	/* no name (an anonymous function), no inferred name */
	w[0] = smi(2);
	w[7] = smi(100);
	w[8] = smi(250);
	assert_int_equal(v8_scope_decode(w, 9, &l, &s), 0);
	assert_int_equal(s.name, -1);
	assert_int_equal(s.inferred, -1);
	assert_int_equal(s.pos, 7);
	/* 75 locals or more: their names in one hash table */
	w[2] = smi(80);
	assert_int_equal(v8_scope_decode(w, 3, &l, &s), 0);
	assert_int_equal(s.pos, 3 + 1 + 80);
	assert_int_equal(s.need, 3 + 1 + 80 + 2);
	/* what V8 does not write: a position after its end, flags not a Smi, a scope type */
	w[2] = smi(2);
	w[7] = smi(300);
	assert_int_equal(v8_scope_decode(w, 9, &l, &s), -EINVAL);
	w[0] = 0x4001;
	assert_int_equal(v8_scope_decode(w, 9, &l, &s), -EINVAL);
	w[0] = smi(12);
	assert_int_equal(v8_scope_decode(w, 9, &l, &s), -EINVAL);
	/* a block scope: no position info */
	w[0] = smi(6);
	assert_int_equal(v8_scope_decode(w, 9, &l, &s), 0);
	assert_int_equal(s.pos, -1);
}

/* V8's encoding of a source position table, entries of (code offset, position, statement). */
static size_t put(uint8_t *b, size_t at, int64_t v)
{
	uint64_t z = (uint64_t)v << 1 ^ (uint64_t)(v >> 63);

	do {
		uint8_t c = z & 0x7f;

		z >>= 7;
		b[at++] = c | (z ? 0x80 : 0);
	} while (z);
	return at;
}

static size_t table(uint8_t *b, const int64_t (*e)[3], size_t n)
{
	int64_t code = 0, pos = 0;
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t d = e[i][0] - code;

		at = put(b, at, e[i][2] ? d : -d - 1);
		at = put(b, at, e[i][1] - pos);
		code = e[i][0];
		pos = e[i][1];
	}
	return at;
}

/* A source position: script offset @off, inlining @id (-1: not inlined). */
static int64_t spos(int32_t off, int32_t id)
{
	return (int64_t)((uint64_t)(off + 1) << 1 | (uint64_t)(id + 1) << 31);
}

static void source_positions(void **state)
{
	const int64_t e[][3] = {
		{ 0, spos(914, -1), 1 },   { 40, spos(951, -1), 0 },  { 149, spos(865, 0), 1 },
		{ 207, spos(826, 2), 0 },  { 4000, spos(70000, 1), 1 }, { 4001, spos(3, -1), 0 },
	};
	uint8_t b[128];
	size_t n = table(b, e, sizeof(e) / sizeof(e[0]));
	int64_t pos;

	(void)state;
	assert_int_equal(v8_spt_find(b, n, 0, &pos), 0);
	assert_int_equal(v8_pos_offset(pos), 914);
	assert_int_equal(v8_pos_inlining(pos), -1);
	assert_int_equal(v8_spt_find(b, n, 39, &pos), 0);
	assert_int_equal(v8_pos_offset(pos), 914);
	assert_int_equal(v8_spt_find(b, n, 150, &pos), 0);
	assert_int_equal(v8_pos_offset(pos), 865);
	assert_int_equal(v8_pos_inlining(pos), 0);
	assert_int_equal(v8_spt_find(b, n, 3999, &pos), 0);
	assert_int_equal(v8_pos_inlining(pos), 2);
	assert_int_equal(v8_spt_find(b, n, 4000, &pos), 0);
	assert_int_equal(v8_pos_offset(pos), 70000);
	assert_int_equal(v8_pos_inlining(pos), 1);
	assert_int_equal(v8_spt_find(b, n, 1u << 30, &pos), 0);
	assert_int_equal(v8_pos_offset(pos), 3);
	/* none at or before: a table starting further in, an empty one, one cut in a number */
	{
		const int64_t late[][3] = { { 10, spos(5, -1), 1 } };

		n = table(b, late, 1);
		assert_int_equal(v8_spt_find(b, n, 9, &pos), -ENOENT);
		assert_int_equal(v8_spt_find(b, 0, 9, &pos), -ENOENT);
		b[0] = 0x80;
		assert_int_equal(v8_spt_find(b, 1, 20, &pos), -ENOENT);
	}
	/* no position: -1 */
	assert_int_equal(v8_pos_offset(0), -1);
	assert_int_equal(v8_pos_inlining(0), -1);
}

static void lines_and_names(void **state)
{
	const uint32_t ends[] = { 10, 20, 30 };
	char out[256];

	(void)state;
	assert_int_equal(v8_line_of(ends, 3, 0), 0);
	assert_int_equal(v8_line_of(ends, 3, 10), 0); /* (the newline ends its line) */
	assert_int_equal(v8_line_of(ends, 3, 11), 1);
	assert_int_equal(v8_line_of(ends, 3, 30), 2);
	assert_int_equal(v8_line_of(ends, 3, 31), 3);
	v8_proc_name("/srv/app/jsphases.js", "workA", 12, out, sizeof(out));
	assert_string_equal(out, "jsphases.workA");
	v8_proc_name("/srv/app/lib.mjs", "", 7, out, sizeof(out));
	assert_string_equal(out, "lib.(anonymous:7)");
	v8_proc_name("node:internal/timers", "listOnTimeout", 500, out, sizeof(out));
	assert_string_equal(out, "timers.listOnTimeout");
	v8_proc_name("node:events", "emit", 500, out, sizeof(out));
	assert_string_equal(out, "events.emit");
	v8_proc_name("", "f", 1, out, sizeof(out));
	assert_string_equal(out, "(unknown).f");
	v8_proc_name("x.cjs", NULL, 3, out, sizeof(out));
	assert_string_equal(out, "x.(anonymous:3)");
}

/* An unsigned VLQ of @v at @b: its length. */
static size_t uvlq_put(uint8_t *b, uint64_t v)
{
	size_t n = 0;

	do {
		b[n] = v & 0x7f;
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

/*
 * Baseline code's bytecode offset table walked beside its bytecodes: the function's entry,
 * each bytecode's machine code in turn (the scaled operands of Wide and ExtraWide prefixes
 * counted), and what cannot be read refused, not guessed.
 */
static void baseline_offsets(void **state)
{
	struct v8_layout l = { .nbytecodes = 8 };
	/* bytecodes 4..7 take 1, 2, 3, 5 bytes; scaled: 1, 3, 5, 9 and 1, 5, 9, 17 */
	const uint8_t single[8] = { 1, 1, 1, 1, 1, 2, 3, 5 }, twice[8] = { 1, 1, 1, 1, 1, 3, 5, 9 },
		      four[8] = { 1, 1, 1, 1, 1, 5, 9, 17 };
	/* at 0: 5 (2 bytes); at 2: 6 (3); at 5: Wide 7 (1 + 9); at 15: ExtraWide 5 (1 + 5);
	 * at 21: 4 (1) */
	const uint8_t bc[] = { 5, 0, 6, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 1, 5, 0, 0, 0, 0, 4 };
	/* machine code: the entry 300 bytes (two VLQ bytes), then 10, 200, 4, 0, 7 */
	const uint64_t lens[] = { 300, 10, 200, 4, 0, 7 };
	uint8_t t[32];
	size_t tl = 0;
	int64_t b;

	(void)state;
	memcpy(l.bytecode_sizes[0], single, 8);
	memcpy(l.bytecode_sizes[1], twice, 8);
	memcpy(l.bytecode_sizes[2], four, 8);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		tl += uvlq_put(t + tl, lens[i]);
	/* the entry; then [300, 310) bytecode 0, [310, 510) 2, [510, 514) Wide 5, ExtraWide 15
	 * no machine code of its own, [514, 521) 21 */
	{
		static const int64_t want[][2] = { { 0, -1 }, { 299, -1 }, { 300, 0 }, { 309, 0 },
						   { 310, 2 }, { 509, 2 }, { 510, 5 }, { 514, 21 },
						   { 520, 21 } };

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			assert_int_equal(v8_baseline_boff(&l, t, tl, bc, sizeof(bc),
							  (uint32_t)want[i][0], &b), 0);
			assert_int_equal(b, want[i][1]);
		}
	}
	/* past the table's end */
	assert_int_equal(v8_baseline_boff(&l, t, tl, bc, sizeof(bc), 521, &b), -ENOENT);
	/* a bytecode the sizes do not know, a prefix at the very end, no sizes at all */
	{
		uint8_t odd[] = { 5, 0, 9 }, cut[] = { 5, 0, 0 };

		assert_int_equal(v8_baseline_boff(&l, t, tl, odd, sizeof(odd), 400, &b), -ENOENT);
		assert_int_equal(v8_baseline_boff(&l, t, tl, cut, sizeof(cut), 400, &b), -ENOENT);
		l.nbytecodes = 0;
		assert_int_equal(v8_baseline_boff(&l, t, tl, bc, sizeof(bc), 300, &b), -ENOENT);
	}
}

/*
 * A machine's churn of processes, each looked at, warned about and gone: what is kept of
 * them is let go V8_FORGET_NS after each exit, and nothing of them is said twice meanwhile.
 */
static void churn_leaves_nothing(void **state)
{
	enum { N = 200000, STEP_NS = 1000000 }; /* an exit a millisecond, 200 s */
	struct sym *s = sym_new(0);
	struct v8 *v = s ? v8_new(s) : NULL;
	uint32_t most = 0;

	(void)state;
	assert_non_null(v);
	for (uint32_t pid = 1; pid <= N; pid++) {
		assert_true(v8_first_look(v, pid, 0));
		assert_false(v8_first_look(v, pid, 0));
		assert_true(v8_looked(v, pid, 0));
		assert_true(v8_first_look(v, pid, 1)); /* an exec */
		assert_false(v8_first_look(v, pid, 0)); /* the old image's samples, late */
		assert_true(v8_tell_once(v, pid));
		assert_false(v8_tell_once(v, pid));
		assert_false(v8_is_v8(v, pid));
		v8_exited(v, pid, (uint64_t)pid * STEP_NS);
		/* an exited process is still known (its samples stream in after its exit) */
		if (pid > 10)
			assert_false(v8_tell_once(v, pid - 10));
		if (v8_procs_kept(v) > most)
			most = v8_procs_kept(v);
	}
	/* kept: those that exited within V8_FORGET_NS of the last exit, and a few */
	assert_true(most <= V8_FORGET_NS / STEP_NS + 2);
	assert_true(most >= V8_FORGET_NS / STEP_NS);
	assert_false(v8_looked(v, 1, 0)); /* forgotten long ago */
	assert_true(v8_first_look(v, 1, 0));
	v8_free(v);
	sym_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(churn_leaves_nothing),
		cmocka_unit_test(layout_node20),
		cmocka_unit_test(layout_refused),
		cmocka_unit_test(scope_info),
		cmocka_unit_test(source_positions),
		cmocka_unit_test(lines_and_names),
		cmocka_unit_test(baseline_offsets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
