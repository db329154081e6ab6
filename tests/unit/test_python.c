// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/python.c's pure parts (docs/python.md): the 3.11 location
 * table, the names Python frames get, and the layout read from the _Py_DebugOffsets that
 * CPython 3.13 and 3.14 publish.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "python.h"
#include "sym.h"

/*
 * The table CPython 3.11.2 made for
 *
 *	1 def f(n):
 *	2     s = 0
 *	3     for i in range(n):
 *	4         if i % 3:
 *	5             s += i
 *	6         else:
 *	7             s -= 1
 *	8     return s
 *
 * with the line of each code unit that co_positions() gives.
 */
static const uint8_t tab[] = {
	128, 0,	  216, 8,   9,	 128, 65,  221, 13,  18,  144, 49,  137, 88,  140, 88,	240,
	0,   4,	  5,   19,  240, 0,   4,   5,	19,  136, 1,   216, 11,	12,  136, 113, 137,
	53,  240, 0,   3,   9,	 19,  216, 12,	13,  144, 17,  137, 70,	136, 65,  136, 65,
	224, 12,  13,  144, 17,	 137, 70,  136, 65,  136, 65,  216, 11,	12,  128, 72,
};
static const int lines[] = { 1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
			     4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 8, 8 };

static void line_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_int_equal(py_line_of(tab, sizeof(tab), 1, (int)i * 2), lines[i]);
	/* not started yet: the first line */
	assert_int_equal(py_line_of(tab, sizeof(tab), 1, -2), 1);
	/* past the end */
	assert_int_equal(py_line_of(tab, sizeof(tab), 1, 1000), -1);
	/* a table that does not start at an entry */
	assert_int_equal(py_line_of((const uint8_t *)"\x01\x02", 2, 1, 0), -1);
}

static void line_table_forms(void **state)
{
	/* long form (14): line +300 as a signed varint (600: 0x58 | 0x40, 9), 2 units */
	static const uint8_t lng[] = { 0x80 | 14 << 3 | 1, 0x58 | 0x40, 9, 0, 1, 1 };
	/* no columns (13): -2; one-line forms (10-12): +0..+2; no location (15) */
	static const uint8_t mix[] = { 0x80 | 13 << 3, 5, 0x80 | 12 << 3, 0, 0,
				       0x80 | 15 << 3, 0x80 | 10 << 3 | 1, 0, 0 };

	(void)state;
	assert_int_equal(py_line_of(lng, sizeof(lng), 10, 0), 310);
	assert_int_equal(py_line_of(lng, sizeof(lng), 10, 2), 310);
	assert_int_equal(py_line_of(mix, sizeof(mix), 10, 0), 8);
	assert_int_equal(py_line_of(mix, sizeof(mix), 10, 2), 10);
	assert_int_equal(py_line_of(mix, sizeof(mix), 10, 4), -1);
	assert_int_equal(py_line_of(mix, sizeof(mix), 10, 6), 10);
	assert_int_equal(py_line_of(mix, sizeof(mix), 10, 8), 10);
}

/*
 * The line of each instruction of one function (a loop, a branch, a comprehension over two
 * lines, a jump of 300 lines), as 3.8's dis.findlinestarts() and 3.10's co_lines() give it,
 * against the function's own co_lnotab (3.8) and co_linetable (3.10).
 */
static const int old_lines[] = { 3, 3, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 8, 8,
				 8, 8, 8, 9, 9, 9, 10, 10, 10, 9, 9, 9, 312, 312, 312, 312, 312, 312 };

static void line_table_lnotab(void **state)
{
	static const uint8_t tab[] = { 0x00, 0x01, 0x04, 0x01, 0x0c, 0x01, 0x08, 0x01, 0x0a, 0x02,
				       0x0a, 0x01, 0x06, 0x01, 0x06, 0xff, 0x06, 0x7f, 0x00, 0x7f,
				       0x00, 0x31 };

	(void)state;
	for (size_t i = 0; i < sizeof(old_lines) / sizeof(old_lines[0]); i++)
		assert_int_equal(py_line_in(PY_LINES_LNOTAB, tab, sizeof(tab), 2, (int)i * 2),
				 old_lines[i]);
	/* an empty table: every instruction on the first line */
	assert_int_equal(py_line_lnotab(tab, 0, 7, 10), 7);
}

static void line_table_310(void **state)
{
	static const uint8_t tab[] = { 0x04, 0x01, 0x0c, 0x01, 0x08, 0x01, 0x0a, 0x01, 0x0a, 0x02,
				       0x06, 0x01, 0x06, 0x01, 0x06, 0xff, 0x00, 0x7f, 0x00, 0x7f,
				       0x0c, 0x31 };
	/* 4 bytes on line 11, 2 with no line (-128), 2 more of them (a delta of 0 goes on), 4
	 * on line 10 */
	static const uint8_t none[] = { 0x04, 0x01, 0x02, 0x80, 0x02, 0x00, 0x04, 0xff };

	(void)state;
	for (size_t i = 0; i < sizeof(old_lines) / sizeof(old_lines[0]); i++)
		assert_int_equal(py_line_in(PY_LINES_310, tab, sizeof(tab), 2, (int)i * 2),
				 old_lines[i]);
	assert_int_equal(py_line_310(none, sizeof(none), 10, 2), 11);
	assert_int_equal(py_line_310(none, sizeof(none), 10, 4), -1);
	assert_int_equal(py_line_310(none, sizeof(none), 10, 6), -1);
	assert_int_equal(py_line_310(none, sizeof(none), 10, 8), 10);
	assert_int_equal(py_line_310(none, sizeof(none), 10, 12), -1); /* past the end */
}

static void names(void **state)
{
	static const char *const cases[][3] = {
		{ "/usr/lib/python3.11/json/decoder.py", "JSONDecoder.raw_decode",
		  "json.decoder.JSONDecoder.raw_decode" },
		{ "/usr/lib/python3.11/json/__init__.py", "loads", "json.loads" },
		{ "/usr/lib/python3/dist-packages/yaml/reader.py", "Reader.peek",
		  "yaml.reader.Reader.peek" },
		{ "/venv/lib/python3.11/site-packages/req/api.py", "get", "req.api.get" },
		{ "/srv/app/pyphases.py", "worker.<locals>.f", "pyphases.worker.<locals>.f" },
		{ "app.py", "main", "app.main" },
		{ "<frozen importlib._bootstrap>", "_find_and_load",
		  "importlib._bootstrap._find_and_load" },
		{ "<string>", "<module>", "<string>.<module>" },
	};
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		py_proc_name(cases[i][0], cases[i][1], out, sizeof(out));
		assert_string_equal(out, cases[i][2]);
	}
}

/*
 * _Py_DebugOffsets as CPython publishes it at the start of _PyRuntime: every word by its
 * byte offset, the values what an x86-64 build would hold (sizes first in each struct). Laid
 * out by hand from the struct in CPython 3.13's Include/internal/pycore_runtime.h and 3.14's
 * Include/internal/pycore_debug_offsets.h, not from pcmon's own table.
 */
struct word {
	uint16_t at;
	uint64_t v;
};

static const struct word dbg313[] = {
	{ 8, 0x030d03f0 }, { 16, 0 },
	/* runtime_state: size, finalizing, interpreters_head */
	{ 24, 0x19a40 }, { 32, 0x338 }, { 40, 0x348 },
	/* interpreter_state: size, id, next, threads_head, gc, imports_modules, sysdict,
	 * builtins, ceval_gil, gil_runtime_state, _enabled, _locked, _holder */
	{ 48, 0x30fd8 }, { 56, 8 }, { 64, 0 }, { 72, 0x1c88 }, { 80, 0x1cb0 }, { 88, 0x2f0 },
	{ 96, 0x2a0 }, { 104, 0x2b0 }, { 112, 0x30 }, { 120, 0x3a0 }, { 128, 0 }, { 136, 0x3a8 },
	{ 144, 0x3b0 },
	/* thread_state: size, prev, next, interp, current_frame, thread_id, native_thread_id,
	 * datastack_chunk, status */
	{ 152, 0x1b8 }, { 160, 0 }, { 168, 8 }, { 176, 16 }, { 184, 72 }, { 192, 144 },
	{ 200, 152 }, { 208, 160 }, { 216, 40 },
	/* interpreter_frame: size, previous, executable, instr_ptr, localsplus, owner */
	{ 224, 80 }, { 232, 8 }, { 240, 0 }, { 248, 56 }, { 256, 72 }, { 264, 70 },
	/* code_object: size, filename, name, qualname, linetable, firstlineno, argcount,
	 * localsplusnames, localspluskinds, co_code_adaptive */
	{ 272, 208 }, { 280, 112 }, { 288, 120 }, { 296, 128 }, { 304, 136 }, { 312, 68 },
	{ 320, 52 }, { 328, 96 }, { 336, 104 }, { 344, 200 },
	/* pyobject, type_object, tuple_object, list_object, dict_object, float_object */
	{ 352, 16 }, { 360, 8 }, { 368, 920 }, { 376, 24 }, { 384, 88 }, { 392, 168 },
	{ 400, 32 }, { 408, 24 }, { 416, 16 }, { 424, 40 }, { 432, 24 }, { 440, 16 },
	{ 448, 48 }, { 456, 32 }, { 464, 40 }, { 472, 24 }, { 480, 16 },
	/* long_object, bytes_object: size, ob_size, ob_sval; unicode_object: size, state,
	 * length, asciiobject_size; gc */
	{ 488, 32 }, { 496, 16 }, { 504, 24 }, { 512, 40 }, { 520, 16 }, { 528, 32 },
	{ 536, 72 }, { 544, 32 }, { 552, 16 }, { 560, 40 }, { 568, 400 }, { 576, 12 },
};

static const struct word dbg314[] = {
	{ 8, 0x030e02f0 }, { 16, 0 },
	{ 24, 0x1b340 }, { 32, 0x338 }, { 40, 0x350 },
	/* interpreter_state: ..., threads_head, threads_main, gc, ... */
	{ 48, 0x33000 }, { 56, 8 }, { 64, 0 }, { 72, 0x1d90 }, { 80, 0x1d98 }, { 88, 0x1dc0 },
	{ 96, 0x300 }, { 104, 0x2a8 }, { 112, 0x2b8 }, { 120, 0x30 }, { 128, 0x3b0 }, { 136, 0 },
	{ 144, 0x3b8 }, { 152, 0x3c0 },
	{ 160, 0x1d0 }, { 168, 0 }, { 176, 8 }, { 184, 16 }, { 192, 72 }, { 200, 152 },
	{ 208, 160 }, { 216, 168 }, { 224, 40 },
	/* interpreter_frame: size, previous, executable, instr_ptr, localsplus, owner,
	 * stackpointer */
	{ 232, 80 }, { 240, 8 }, { 248, 0 }, { 256, 56 }, { 264, 80 }, { 272, 74 }, { 280, 64 },
	{ 288, 224 }, { 296, 112 }, { 304, 120 }, { 312, 128 }, { 320, 136 }, { 328, 68 },
	{ 336, 52 }, { 344, 96 }, { 352, 104 }, { 360, 216 },
	{ 368, 16 }, { 376, 8 }, { 384, 928 }, { 392, 24 }, { 400, 88 }, { 408, 168 },
	{ 416, 32 }, { 424, 24 }, { 432, 16 }, { 440, 40 }, { 448, 24 }, { 456, 16 },
	/* set_object: size, used, table, mask */
	{ 464, 200 }, { 472, 24 }, { 480, 40 }, { 488, 32 },
	{ 496, 48 }, { 504, 32 }, { 512, 40 }, { 520, 24 }, { 528, 16 },
	{ 536, 32 }, { 544, 16 }, { 552, 24 }, { 560, 40 }, { 568, 16 }, { 576, 32 },
	{ 584, 40 }, { 592, 32 }, { 600, 16 }, { 608, 40 }, { 616, 400 }, { 624, 12 },
	/* gen_object, debugger_support */
	{ 632, 136 }, { 640, 48 }, { 648, 80 }, { 656, 67 },
	{ 664, 32 }, { 672, 0x1a8 }, { 680, 0x5a0 }, { 688, 0 }, { 696, 4 }, { 704, 512 },
};

static void lay_out(uint8_t *buf, size_t len, const struct word *w, size_t n)
{
	memset(buf, 0, len);
	memcpy(buf, "xdebugpy", 8);
	for (size_t i = 0; i < n; i++)
		memcpy(buf + w[i].at, &w[i].v, sizeof(w[i].v));
}

static void debug_offsets_313(void **state)
{
	uint8_t buf[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;
	char why[200] = "";

	(void)state;
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0x030d03f0, &l, why, sizeof(why)), 0);
	assert_int_equal(l.from, 0x030d03f0);
	assert_int_equal(l.o.rt_interp_head, 0x348);
	assert_int_equal(l.o.is_threads_head, 0x1c88);
	assert_int_equal(l.o.ts_next, 8);
	assert_int_equal(l.o.ts_native_id, 152);
	/* no _PyCFrame: the current frame is the thread state's own */
	assert_int_equal(l.o.ts_cframe, PCMON_PY_NO_CFRAME);
	assert_int_equal(l.o.cf_current, 72);
	/* the frame's window: f_executable at 0 to owner at 70 */
	assert_int_equal(l.o.fr_lo, 0);
	assert_int_equal(l.o.fr_size, 72);
	assert_int_equal(l.o.fr_code, 0);
	assert_int_equal(l.o.fr_previous, 8);
	assert_int_equal(l.o.fr_prev_instr, 56);
	assert_int_equal(l.o.fr_is_entry, 70);
	assert_int_equal(l.o.fr_shim_owner, 3);
	assert_int_equal(l.o.co_code, 200);
	assert_int_equal(l.co_hdr, 200);
	assert_int_equal(l.co_filename, 112);
	assert_int_equal(l.co_qualname, 128);
	assert_int_equal(l.co_linetable, 136);
	assert_int_equal(l.co_firstlineno, 68);
	assert_int_equal(l.ob_type, 8);
	assert_int_equal(l.ob_size, 16);
	assert_int_equal(l.bytes_sval, 32);
	assert_int_equal(l.str_state, 32);
	assert_int_equal(l.str_length, 16);
	assert_int_equal(l.str_ascii, 40);
	assert_int_equal(l.str_compact, 56);
	assert_int_equal(l.str_ptr, 56);
	/* Py_Version unknown (0): the structure's own version is taken */
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0, &l, why, sizeof(why)), 0);
}

static void debug_offsets_314(void **state)
{
	uint8_t buf[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;
	char why[200] = "";

	(void)state;
	lay_out(buf, sizeof(buf), dbg314, sizeof(dbg314) / sizeof(dbg314[0]));
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0x030e02f0, &l, why, sizeof(why)), 0);
	assert_int_equal(l.o.rt_interp_head, 0x350);
	/* threads.main follows threads.head: head is still word 3 */
	assert_int_equal(l.o.is_threads_head, 0x1d90);
	assert_int_equal(l.o.ts_next, 8);
	assert_int_equal(l.o.cf_current, 72);
	assert_int_equal(l.o.ts_native_id, 160);
	/* owner at 74 (stackpointer at 64 is not read): 75 bytes, rounded to 80 */
	assert_int_equal(l.o.fr_lo, 0);
	assert_int_equal(l.o.fr_size, 80);
	assert_int_equal(l.o.fr_is_entry, 74);
	assert_int_equal(l.o.fr_prev_instr, 56);
	assert_int_equal(l.o.co_code, 216);
	assert_int_equal(l.co_qualname, 128);
	assert_int_equal(l.co_linetable, 136);
	/* the set group moved bytes and str: read after it */
	assert_int_equal(l.ob_type, 8);
	assert_int_equal(l.ob_size, 16);
	assert_int_equal(l.bytes_sval, 32);
	assert_int_equal(l.str_state, 32);
	assert_int_equal(l.str_ascii, 40);
}

static void debug_offsets_refused(void **state)
{
	uint8_t buf[PY_DEBUG_OFFSETS_MAX];
	struct py_layout l;
	char why[200];
	uint64_t v;

	(void)state;
	/* no cookie: an interpreter that publishes nothing */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0x030d03f0, &l, why, sizeof(why)),
			 -ENOTSUP);
	assert_non_null(strstr(why, "no _Py_DebugOffsets"));
	/* another version than Py_Version */
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0x030e00f0, &l, why, sizeof(why)),
			 -ENOTSUP);
	/* older than 3.13 */
	v = 0x030c00f0;
	memcpy(buf + 8, &v, 8);
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0, &l, why, sizeof(why)), -ENOTSUP);
	/* free-threaded */
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	v = 1;
	memcpy(buf + 16, &v, 8);
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0, &l, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "free-threaded"));
	/* a field outside its struct: threads_head past PyInterpreterState's size */
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	v = 0x40000;
	memcpy(buf + 72, &v, 8);
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0, &l, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "threads_head"));
	/* a frame whose fields span more than BPF reads in one go */
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	v = 200;
	memcpy(buf + 224, &v, 8); /* its size */
	v = 120;
	memcpy(buf + 264, &v, 8); /* owner */
	assert_int_equal(py_layout_published(buf, sizeof(buf), 0, &l, why, sizeof(why)), -ENOTSUP);
	/* cut short */
	lay_out(buf, sizeof(buf), dbg313, sizeof(dbg313) / sizeof(dbg313[0]));
	assert_int_equal(py_layout_published(buf, 300, 0, &l, why, sizeof(why)), -ENOTSUP);
}

/*
 * A machine's churn of processes, each looked at, warned about and gone: what is kept of
 * them is let go PY_FORGET_NS after each exit, and nothing of them is said twice meanwhile.
 */
static void churn_leaves_nothing(void **state)
{
	enum { N = 200000, STEP_NS = 1000000 }; /* an exit a millisecond, 200 s */
	struct sym *s = sym_new(0);
	struct py *p = s ? py_new(s) : NULL;
	uint32_t most = 0;

	(void)state;
	assert_non_null(p);
	for (uint32_t pid = 1; pid <= N; pid++) {
		uint64_t now = (uint64_t)pid * STEP_NS;

		assert_true(py_first_look(p, pid, 0));
		assert_false(py_first_look(p, pid, 0));
		assert_true(py_first_look(p, pid, 1)); /* an exec */
		assert_false(py_first_look(p, pid, 0)); /* the old image's samples, late */
		assert_true(py_tell_once(p, pid));
		assert_false(py_tell_once(p, pid));
		if (pid % 2)
			py_set_unsupported(p, pid);
		assert_int_equal(py_unsupported(p, pid), pid % 2);
		assert_false(py_is_python(p, pid));
		py_exited(p, pid, now);
		/* an exited process is still known (its samples stream in after its exit) */
		if (pid > 10)
			assert_false(py_tell_once(p, pid - 10));
		if (py_procs_kept(p) > most)
			most = py_procs_kept(p);
	}
	/* kept: those that exited within PY_FORGET_NS of the last exit, and a few */
	assert_true(most <= PY_FORGET_NS / STEP_NS + 2);
	assert_true(most >= PY_FORGET_NS / STEP_NS);
	assert_true(py_first_look(p, 1, 0)); /* forgotten long ago: a new process */
	py_free(p);
	sym_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(churn_leaves_nothing),
		cmocka_unit_test(line_table),
		cmocka_unit_test(line_table_forms),
		cmocka_unit_test(line_table_lnotab),
		cmocka_unit_test(line_table_310),
		cmocka_unit_test(names),
		cmocka_unit_test(debug_offsets_313),
		cmocka_unit_test(debug_offsets_314),
		cmocka_unit_test(debug_offsets_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
