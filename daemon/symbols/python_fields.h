/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CPython struct fields pcmon reads (docs/python.md), one line each, for the version whose
 * headers this is compiled against (Py_BUILD_CORE: the internal ones too). Two programs
 * include it: daemon/symbols/python_layouts.sh prints each as a PY3<minor>_<NAME> define
 * into python_layouts.h, and tests/unit/pyoffsets_check.c checks those defines against
 * the headers with _Static_assert (`make unit`, for every version whose headers are here).
 *
 * OFF(NAME, type, member): offsetof(type, member); SIZE(NAME, type): sizeof(type);
 * VAL(NAME, expression): a constant of the headers (an enum's value).
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#endif
#if PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>	/* _PyRuntimeState, PyInterpreterState (3.8) */
#else
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#endif

#define PY_FIELDS                                                                   \
	OFF(RT_INTERP_HEAD, _PyRuntimeState, interpreters.head)                       \
	PY_FIELDS_THREADS                                                             \
	OFF(TS_NEXT, PyThreadState, next)                                             \
	OFF(TS_INTERP, PyThreadState, interp)                                         \
	OFF(TS_THREAD_ID, PyThreadState, thread_id)                                   \
	PY_FIELDS_FRAME                                                               \
	OFF(OB_TYPE, PyObject, ob_type)                                               \
	OFF(OB_SIZE, PyVarObject, ob_size)                                            \
	OFF(BYTES_SVAL, PyBytesObject, ob_sval)                                       \
	OFF(TYPE_BASICSIZE, PyTypeObject, tp_basicsize)                               \
	OFF(CO_FIRSTLINENO, PyCodeObject, co_firstlineno)                             \
	OFF(CO_FILENAME, PyCodeObject, co_filename)                                   \
	OFF(CO_NAME, PyCodeObject, co_name)                                           \
	PY_FIELDS_CODE                                                                \
	OFF(STR_LENGTH, PyASCIIObject, length)                                        \
	OFF(STR_STATE, PyASCIIObject, state)                                          \
	SIZE(STR_ASCII_DATA, PyASCIIObject)                                           \
	SIZE(STR_COMPACT_DATA, PyCompactUnicodeObject)                                \
	OFF(STR_DATA_PTR, PyUnicodeObject, data)                                      \
	SIZE(STR_SIZE, PyUnicodeObject)	/* PyUnicode_Type.tp_basicsize */

#if PY_VERSION_HEX < 0x030b0000
/* 3.8-3.10: a chain of PyFrameObject from PyThreadState.frame; thread_id is pthread_self() */
#define PY_FIELDS_THREADS OFF(IS_THREADS_HEAD, PyInterpreterState, tstate_head)
#define PY_FIELDS_FRAME                                                             \
	OFF(TS_FRAME, PyThreadState, frame)                                           \
	OFF(FR_CODE, PyFrameObject, f_code)                                           \
	OFF(FR_PREVIOUS, PyFrameObject, f_back)                                       \
	OFF(FR_LASTI, PyFrameObject, f_lasti)                                         \
	SIZE(FRAME_SIZE, PyFrameObject)	/* PyFrame_Type.tp_basicsize */
#else
#define PY_FIELDS_THREADS                                                           \
	OFF(IS_THREADS_HEAD, PyInterpreterState, threads.head)                        \
	OFF(TS_NATIVE_ID, PyThreadState, native_thread_id)
#if PY_VERSION_HEX < 0x030d0000
/* 3.11, 3.12: PyThreadState.cframe->current_frame, a chain of _PyInterpreterFrame */
#define PY_FIELDS_CUR                                                               \
	OFF(TS_CFRAME, PyThreadState, cframe)                                         \
	OFF(CF_CURRENT, _PyCFrame, current_frame)                                     \
	OFF(FR_CODE, _PyInterpreterFrame, f_code)                                     \
	OFF(FR_PREV_INSTR, _PyInterpreterFrame, prev_instr)
#else
/* 3.13: PyThreadState.current_frame; f_executable, instr_ptr */
#define PY_FIELDS_CUR                                                               \
	OFF(TS_CURRENT_FRAME, PyThreadState, current_frame)                           \
	OFF(FR_CODE, _PyInterpreterFrame, f_executable)                               \
	OFF(FR_PREV_INSTR, _PyInterpreterFrame, instr_ptr)
#endif
#if PY_VERSION_HEX < 0x030c0000
/* 3.11: the frame an activation of the evaluation loop was entered with says so */
#define PY_FIELDS_ENTRY OFF(FR_IS_ENTRY, _PyInterpreterFrame, is_entry)
#else
/* 3.12 on: each activation starts with a shim frame of its own, owned by the C stack */
#define PY_FIELDS_ENTRY                                                             \
	OFF(FR_OWNER, _PyInterpreterFrame, owner)                                     \
	VAL(FRAME_OWNED_BY_CSTACK, FRAME_OWNED_BY_CSTACK)
#endif
#define PY_FIELDS_FRAME                                                             \
	PY_FIELDS_CUR                                                                 \
	OFF(FR_PREVIOUS, _PyInterpreterFrame, previous)                               \
	PY_FIELDS_ENTRY
#endif

#if PY_VERSION_HEX < 0x030a0000
/* 3.8, 3.9: no qualified name; co_lnotab */
#define PY_FIELDS_CODE                                                              \
	OFF(CO_LINETABLE, PyCodeObject, co_lnotab)                                    \
	SIZE(CODE_SIZE, PyCodeObject)	/* PyCode_Type.tp_basicsize */
#elif PY_VERSION_HEX < 0x030b0000
/* 3.10: no qualified name; co_linetable, a format of its own */
#define PY_FIELDS_CODE                                                              \
	OFF(CO_LINETABLE, PyCodeObject, co_linetable)                                 \
	SIZE(CODE_SIZE, PyCodeObject)
#else
/* 3.11 on: the instructions are in the code object; its basic size stops before them */
#define PY_FIELDS_CODE                                                              \
	OFF(CO_QUALNAME, PyCodeObject, co_qualname)                                   \
	OFF(CO_LINETABLE, PyCodeObject, co_linetable)                                 \
	OFF(CO_CODE, PyCodeObject, co_code_adaptive)                                  \
	OFF(CODE_SIZE, PyCodeObject, co_code_adaptive)
#endif
