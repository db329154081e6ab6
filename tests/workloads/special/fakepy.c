// SPDX-License-Identifier: GPL-2.0-only
/*
 * A stand-in for a CPython pcmon has no table for (tests/integration/test_python.py): a C
 * program that spins in spin_here() for SECONDS and carries the symbols pcmon looks an
 * interpreter up by, _PyRuntime, Py_Version (3.99.0) and PyCode_Type. Its file must be named
 * python* for pcmon to look (the test copies it). Built twice (Makefile): fakepy publishes
 * nothing at _PyRuntime, fakepy_published (-DPUBLISH) starts _PyRuntime with a
 * _Py_DebugOffsets laid out as CPython 3.14 does, whose offsets point into this program's
 * zeroed state (no interpreter yet): pcmon takes the layout and finds no thread to read.
 *
 * usage: fakepy SECONDS
 */
#include "../workload.h"

#define WORDS 96

const unsigned int Py_Version = 0x036300f0;
uint64_t PyCode_Type[32];

#ifdef PUBLISH
/* "xdebugpy" as a little-endian word, then version, free_threaded, then each struct's
 * group of words (sizes first): runtime, interpreter, thread, frame, code, object, type,
 * tuple, list, set, dict, float, long, bytes, unicode, gc (pycore_debug_offsets.h, 3.14) */
uint64_t _PyRuntime[1024] = {
	0x7970677562656478ull, 0x036300f0, 0,
	/* runtime_state */ 8192, 0x338, 0x350,
	/* interpreter_state */ 4096, 8, 0, 0x100, 0x108, 0x110, 0x118, 0x120, 0x128, 0x130,
	0x138, 0, 0x140, 0x148,
	/* thread_state */ 0x1d0, 0, 8, 16, 72, 152, 160, 168, 40,
	/* interpreter_frame */ 80, 8, 0, 56, 80, 74, 64,
	/* code_object */ 224, 112, 120, 128, 136, 68, 52, 96, 104, 216,
	/* pyobject */ 16, 8,
	/* type_object */ 928, 24, 88, 168,
	/* tuple_object */ 32, 24, 16,
	/* list_object */ 40, 24, 16,
	/* set_object */ 200, 24, 40, 32,
	/* dict_object */ 48, 32, 40,
	/* float_object */ 24, 16,
	/* long_object */ 32, 16, 24,
	/* bytes_object */ 40, 16, 32,
	/* unicode_object */ 40, 32, 16, 40,
	/* gc */ 400, 12,
};
#else
uint64_t _PyRuntime[1024] = { 1 };
#endif

static volatile uint64_t sink;

NOINLINE static void spin_here(double seconds)
{
	uint64_t end = wall_ns() + (uint64_t)(seconds * 1e9);

	while (wall_ns() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	spin_here(seconds);
	printf("{\"runtime\": %llu, \"version\": %u, \"code_type\": %llu}\n",
	       (unsigned long long)_PyRuntime[0], Py_Version, (unsigned long long)PyCode_Type[0]);
	return 0;
}
