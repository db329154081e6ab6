/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * py_: CPython frames (docs/python.md). Finding a process's interpreter and the offsets BPF
 * reads its threads' frame chains with (py_find()), naming the code objects those frames
 * run from the process's memory (py_frame_loc()), and putting the Python frames in place of
 * the interpreter's C frames that run them (py_merge()).
 */
#ifndef PCMON_PYTHON_SYM_H
#define PCMON_PYTHON_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pcmon_python.h"

struct sym;
struct py;

/*
 * One CPython version's layout, byte offsets: what BPF reads (pcmon_pyoffs) and what the
 * engine reads to name code objects. Built in for 3.8 to 3.12 (python_layouts.h); read from the
 * interpreter's _Py_DebugOffsets for 3.13 on (py_layout_published()).
 */
struct py_layout {
	uint32_t from, to;	/* PY_VERSION_HEX in [from, to) */
	struct pcmon_pyoffs o;
	uint16_t ob_type, ob_size, bytes_sval;
	uint16_t co_firstlineno, co_filename, co_qualname, co_linetable;
	uint16_t co_hdr;	/* bytes of a code object read to check and name it */
	uint16_t str_length, str_state, str_ascii, str_compact, str_ptr;
	/* the basic sizes of its code and str objects (0: not checked): a build whose
	 * PyCode_Type or PyUnicode_Type says otherwise is not laid out as the table says */
	uint16_t code_size, str_size, frame_size;
	uint8_t lines;		/* enum py_lines: its code objects' line table */
};
/* How a version's code objects map an instruction to its line. */
enum py_lines {
	PY_LINES_LOCATIONS,	/* 3.11 on: co_linetable, the location table */
	PY_LINES_LNOTAB,	/* 3.8, 3.9: co_lnotab */
	PY_LINES_310,		/* 3.10: co_linetable, a format of its own */
};
/* The most a code object's header (co_hdr) or a str's header read can be. */
#define PY_CODE_HDR_MAX 512
#define PY_STR_HDR_MAX 128

/*
 * CPython 3.13 on publishes the offsets of its structs in _Py_DebugOffsets, the first member
 * of _PyRuntime (its first 8 bytes the cookie "xdebugpy"), so that tools outside the process
 * need no table of their own. The layout of @buf (the @len bytes read at _PyRuntime, up to
 * PY_DEBUG_OFFSETS_MAX) into *@l, for version @version (Py_Version): 0, or -ENOTSUP with
 * @why (no cookie, another version than Py_Version says, a free-threaded build, an offset
 * out of its struct or beyond what pcmon reads in one go).
 */
#define PY_DEBUG_OFFSETS_MAX 1024
int py_layout_published(const uint8_t *buf, size_t len, uint32_t version, struct py_layout *l,
			char *why, size_t wlen);

/* The module Python frames are procedures of: "py.json.decoder.JSONDecoder.raw_decode". */
#define PY_MODULE "py"
/* The C function that runs Python frames, whose activations they replace. */
#define PY_EVAL_FN "_PyEval_EvalFrameDefault"

struct py *py_new(struct sym *s);
void py_free(struct py *p);

/*
 * Find process @pid's interpreter and keep it: 0 and *@out filled for BPF (its epoch left to
 * the caller); -ENOENT: no CPython in it; -ENOTSUP: a CPython pcmon has no offsets for;
 * -EPROTO: one pcmon has a table for, whose build is not laid out as the table says
 * (@why says which); -EAGAIN: none yet, but it runs a python* executable with no
 * interpreter in it, whose libpython the dynamic linker has not mapped yet (py_set_pending()).
 */
struct sym;
int py_add(struct py *p, struct sym *s, uint32_t pid, uint32_t epoch, struct pcmon_pyproc *out,
	   char *why, size_t len);

/* A new drain: cached code objects are checked against the process's memory again. */
void py_next_gen(struct py *p);
/* Process @pid is gone: all that was kept of it goes (its code objects, looks, warnings). */
void py_forget(struct py *p, uint32_t pid);
/*
 * Process @pid exited at @now (ns): its samples still in BPF are named from what was read
 * while it ran, and it is forgotten PY_FORGET_NS later.
 */
#define PY_FORGET_NS (30 * 1000000000ull)
void py_exited(struct py *p, uint32_t pid, uint64_t now);
/* Processes kept (looked at, and not yet forgotten). */
uint32_t py_procs_kept(const struct py *p);
/* True the first time it is asked about image @epoch of @pid (looked at once; the last two
 * images of a process are remembered). */
bool py_first_look(struct py *p, uint32_t pid, uint32_t epoch);
/* True the first time it is asked about @pid (a warning said once per process). */
bool py_tell_once(struct py *p, uint32_t pid);
/*
 * Image @epoch of @pid runs a Python launcher whose libpython was not loaded when it was
 * looked at (py_add() said -EAGAIN: the dynamic linker was still at work): look again, at
 * most PY_LOOK_TRIES times (@on false: found, or given up); false once they are spent.
 * py_look_pending() is true while a look is owed, each call one of them.
 */
#define PY_LOOK_TRIES 500
bool py_set_pending(struct py *p, uint32_t pid, uint32_t epoch, bool on);
bool py_look_pending(struct py *p, uint32_t pid, uint32_t epoch);
/* @pid runs a CPython pcmon has no offsets for (py_add() said -ENOTSUP): its samples keep
 * their native frames, unflagged, as said once in the log. */
void py_set_unsupported(struct py *p, uint32_t pid);
bool py_unsupported(const struct py *p, uint32_t pid);

/* Read the code object of Python frame @word of process @pid now, while it runs: 0, or
 * -EFAULT. */
int py_code_early(struct py *p, uint32_t pid, uint64_t word);
/* The location (sym.h) of the Python frame @word of process @pid: 0, or -errno (the code
 * object could not be read). */
int py_frame_loc(struct py *p, uint32_t pid, uint64_t word, uint32_t *loc);

/* Is @pid a process whose interpreter was found (and not forgotten since)? */
bool py_is_python(struct py *p, uint32_t pid);
/* Does one of the native user locations @locs run Python code (an activation of PY_EVAL_FN)? */
bool py_runs_eval(struct py *p, const uint32_t *locs, uint32_t n);

/*
 * Merge @pw (the words after a stack's marker, and the marker's status) into the native
 * user locations @nat (innermost first, @nn of them), into @out (room for @nn + @np):
 * each activation of PY_EVAL_FN gets the Python frames it runs. Returns how many locations
 * were written; *@cut is how the chain ended (enum pcmon_py_status): not PCMON_PY_OK, the
 * stack is cut short there.
 */
struct py_merge_in {
	const uint32_t *nat;
	uint32_t nn;
	const uint64_t *pw;	/* the frames, innermost first */
	uint32_t np;
	uint32_t status;	/* enum pcmon_py_status */
	uint32_t pid;
};
uint32_t py_merge(struct py *p, const struct py_merge_in *in, uint32_t *out, uint32_t *cut);

/* Pure parts, unit-tested. */
/*
 * The line of the instruction at byte offset @addr of a code object whose first line is
 * @firstlineno, from its 3.11 location table @tab: -1 when the table says it has none.
 */
int py_line_of(const uint8_t *tab, size_t len, int firstlineno, int addr);
/* The same from 3.8 and 3.9's co_lnotab, 3.10's co_linetable; of either kind (enum py_lines). */
int py_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int addr);
int py_line_310(const uint8_t *tab, size_t len, int firstlineno, int addr);
int py_line_in(int kind, const uint8_t *tab, size_t len, int firstlineno, int addr);
/*
 * A Python frame's procedure name: the module its @file is (the path under a directory of
 * sys.path, dots for slashes, no ".py" or "/__init__"), a dot, its @qualname.
 */
void py_proc_name(const char *file, const char *qualname, char *out, size_t len);

#endif
