/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where CPython 3.11 keeps what pcmon reads (docs/python.md): byte offsets into its structs
 * on x86-64, from the interpreter's own headers (python3.11-dev: Include/internal/
 * pycore_runtime.h, pycore_interp.h, pycore_frame.h, Include/cpython/pystate.h, code.h,
 * unicodeobject.h). tests/unit/pyoffsets_check.c checks every one against the installed
 * headers with offsetof() at build time (`make unit`).
 */
#ifndef PCMON_PYTHON_LAYOUTS_H
#define PCMON_PYTHON_LAYOUTS_H

/* _PyRuntimeState */
#define PY311_RT_INTERP_HEAD 40		/* .interpreters.head */
/* PyInterpreterState */
#define PY311_IS_THREADS_HEAD 16	/* .threads.head */
/* PyThreadState */
#define PY311_TS_NEXT 8
#define PY311_TS_CFRAME 56
#define PY311_TS_NATIVE_ID 160		/* .native_thread_id */
/* _PyCFrame */
#define PY311_CF_CURRENT 8		/* .current_frame */
/* _PyInterpreterFrame */
#define PY311_FR_CODE 32		/* .f_code */
#define PY311_FR_PREVIOUS 48
#define PY311_FR_PREV_INSTR 56
#define PY311_FR_IS_ENTRY 68
/* PyObject, PyVarObject, PyBytesObject */
#define PY311_OB_TYPE 8
#define PY311_OB_SIZE 16
#define PY311_BYTES_SVAL 32
/* PyCodeObject */
#define PY311_CO_FIRSTLINENO 72
#define PY311_CO_FILENAME 112
#define PY311_CO_NAME 120
#define PY311_CO_QUALNAME 128
#define PY311_CO_LINETABLE 136
#define PY311_CO_CODE 184		/* .co_code_adaptive: the first instruction */
/* PyASCIIObject, PyCompactUnicodeObject, PyUnicodeObject */
#define PY311_STR_LENGTH 16
#define PY311_STR_STATE 32		/* interned:2, kind:3, compact:1, ascii:1, ready:1 */
#define PY311_STR_ASCII_DATA 48		/* sizeof(PyASCIIObject) */
#define PY311_STR_COMPACT_DATA 72	/* sizeof(PyCompactUnicodeObject) */
#define PY311_STR_DATA_PTR 72		/* PyUnicodeObject.data.any (not compact) */

#endif
