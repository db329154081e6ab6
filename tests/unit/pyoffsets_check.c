// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CPython 3.11 offsets pcmon reads frames with (daemon/symbols/python_layouts.h),
 * checked against the interpreter's own headers (python3.11-dev) when `make unit` compiles
 * this file: a layout that moved fails the build, not a profile.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>

#include "python_layouts.h"

#if PY_VERSION_HEX < 0x030b00f0 || PY_VERSION_HEX >= 0x030c0000
#error "these are the offsets of CPython 3.11: build with its headers (-I/usr/include/python3.11)"
#endif

#define CHECK(type, field, want) \
	_Static_assert(offsetof(type, field) == (want), #type "." #field " moved")

CHECK(_PyRuntimeState, interpreters.head, PY311_RT_INTERP_HEAD);
CHECK(PyInterpreterState, threads.head, PY311_IS_THREADS_HEAD);
CHECK(PyThreadState, next, PY311_TS_NEXT);
CHECK(PyThreadState, cframe, PY311_TS_CFRAME);
CHECK(PyThreadState, native_thread_id, PY311_TS_NATIVE_ID);
CHECK(_PyCFrame, current_frame, PY311_CF_CURRENT);
CHECK(_PyInterpreterFrame, f_code, PY311_FR_CODE);
CHECK(_PyInterpreterFrame, previous, PY311_FR_PREVIOUS);
CHECK(_PyInterpreterFrame, prev_instr, PY311_FR_PREV_INSTR);
CHECK(_PyInterpreterFrame, is_entry, PY311_FR_IS_ENTRY);
CHECK(PyObject, ob_type, PY311_OB_TYPE);
CHECK(PyVarObject, ob_size, PY311_OB_SIZE);
CHECK(PyBytesObject, ob_sval, PY311_BYTES_SVAL);
CHECK(PyCodeObject, co_firstlineno, PY311_CO_FIRSTLINENO);
CHECK(PyCodeObject, co_filename, PY311_CO_FILENAME);
CHECK(PyCodeObject, co_name, PY311_CO_NAME);
CHECK(PyCodeObject, co_qualname, PY311_CO_QUALNAME);
CHECK(PyCodeObject, co_linetable, PY311_CO_LINETABLE);
CHECK(PyCodeObject, co_code_adaptive, PY311_CO_CODE);
CHECK(PyASCIIObject, length, PY311_STR_LENGTH);
CHECK(PyASCIIObject, state, PY311_STR_STATE);
CHECK(PyUnicodeObject, data, PY311_STR_DATA_PTR);
_Static_assert(sizeof(PyASCIIObject) == PY311_STR_ASCII_DATA, "PyASCIIObject's size changed");
_Static_assert(sizeof(PyCompactUnicodeObject) == PY311_STR_COMPACT_DATA,
	       "PyCompactUnicodeObject's size changed");
/* the frame window BPF reads in one go holds every field it needs */
_Static_assert(PY311_FR_IS_ENTRY - PY311_FR_CODE < 48 && PY311_FR_PREV_INSTR - PY311_FR_CODE <= 40,
	       "a frame's fields no longer fit PCMON_PY_FRAME_WINDOW");
