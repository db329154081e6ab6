// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/python.c's pure parts (docs/python.md): the 3.11 location
 * table and the names Python frames get.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "python.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(line_table),
		cmocka_unit_test(line_table_forms),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
