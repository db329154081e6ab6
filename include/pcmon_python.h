/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Python frames (docs/python.md): what BPF needs to read a CPython thread's frame chain at
 * sample time, and how it hands the frames to the engine. Shared by bpf/sample.bpf.c and
 * daemon/symbols/python.c. Plain __u16/__u32/__u64 only: compiled by clang -target bpf and gcc.
 *
 * A sample of a registered process (pyprocs) carries its Python frames after its native
 * ones, in the same stack record: a marker word (PCMON_PY_MARK | enum pcmon_py_status), then
 * one word per frame, innermost first. Native pcs are user addresses (below 2^47), so no
 * native frame reads as a marker, and a stack's hash, its key in the counts map and its trip
 * down the stacks ring are the ones every stack has.
 */
#ifndef PCMON_PYTHON_H
#define PCMON_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Python frames read per sample at most; a deeper chain is cut (PCMON_PY_DEPTH). */
#define PCMON_PY_FRAMES_MAX 128
/* Threads of a process looked through for the current one's state (then remembered). */
#define PCMON_PY_THREADS_MAX 256

#define PCMON_PY_MARK 0xfffe000000000000ULL
#define PCMON_PY_MARK_MASK 0xffffffffffff0000ULL

/* How the chain after a marker ended. */
enum pcmon_py_status {
	PCMON_PY_OK = 0,	/* at the thread's first frame */
	PCMON_PY_FAULT,		/* a read failed (a frame freed under the sampler, a page out) */
	PCMON_PY_DEPTH,		/* more frames than PCMON_PY_FRAMES_MAX (or room in the record) */
	/*
	 * No frame follows: the engine had not yet said whether the process runs a CPython
	 * (no pyprocs entry for its image: its first milliseconds, until PCMON_EV_SAMPLED is
	 * handled), or the thread's state was not on the interpreter's list (a C thread, or one
	 * the interpreter had not listed yet). The engine flags those of a CPython process that
	 * ran Python code (AGG_UNWALK_PYTHON_UNKNOWN) and drops the marker of the others.
	 */
	PCMON_PY_UNKNOWN,
	PCMON_PY_NOSTATE,
};

/*
 * A frame's word: its code object's address (user space: 47 bits), whether the interpreter
 * was entered at that frame (one C activation of the evaluation loop runs the frames up to
 * and including such one), and the index of the instruction it is at, plus one (0: not
 * started yet; PCMON_PY_INSTR_FAR: too far into the code to say).
 */
#define PCMON_PY_CODE_MASK ((1ULL << 47) - 1)
#define PCMON_PY_ENTRY (1ULL << 47)
#define PCMON_PY_INSTR_SHIFT 48
#define PCMON_PY_INSTR_FAR 0xffffu

static inline __u64 pcmon_py_word(__u64 code, int entry, __u64 instr1)
{
	if (instr1 > PCMON_PY_INSTR_FAR)
		instr1 = PCMON_PY_INSTR_FAR;
	return (code & PCMON_PY_CODE_MASK) | (entry ? PCMON_PY_ENTRY : 0) |
	       instr1 << PCMON_PY_INSTR_SHIFT;
}

/*
 * Where things are in one CPython version's structs, byte offsets (the engine fills them
 * from its table, or from the offsets the interpreter publishes: daemon/symbols/python.c).
 * A frame's fields are read in one go: the fr_size bytes (at most PCMON_PY_FRAME_WINDOW)
 * from fr_lo hold them all.
 */
#define PCMON_PY_FRAME_WINDOW 96
#define PCMON_PY_FRAME_SHORT 48	/* read instead when fr_size is no more (3.11) */
#define PCMON_PY_FRAME_MID 80	/* ... or this (3.10, 3.12, 3.13) */
/* ts_cframe when the thread state points at its current frame itself (3.13 on) */
#define PCMON_PY_NO_CFRAME 0xffff
struct pcmon_pyoffs {
	__u16 rt_interp_head;	/* _PyRuntimeState.interpreters.head */
	__u16 is_threads_head;	/* PyInterpreterState.threads.head */
	__u16 ts_next;		/* PyThreadState.next */
	__u16 ts_native_id;	/* PyThreadState.native_thread_id (the kernel's tid), or
				 * .thread_id (PCMON_PYF_PTHREAD_ID) */
	__u16 ts_cframe;	/* PyThreadState.cframe (3.11, 3.12), or PCMON_PY_NO_CFRAME */
	__u16 cf_current;	/* _PyCFrame.current_frame; PyThreadState.current_frame (3.13),
				 * .frame (3.8-3.10) */
	__u16 fr_lo;		/* start of the frame's window */
	__u16 fr_size;		/* its length, 8 to PCMON_PY_FRAME_WINDOW */
	__u16 fr_code;		/* _PyInterpreterFrame.f_code (f_executable), from fr_lo */
	__u16 fr_previous;	/* .previous (PyFrameObject.f_back), from fr_lo */
	__u16 fr_prev_instr;	/* .prev_instr (instr_ptr; PyFrameObject.f_lasti), from fr_lo */
	__u16 fr_is_entry;	/* .is_entry (3.11) or .owner (3.13), a byte, from fr_lo */
	/*
	 * 0: fr_is_entry is a flag, set on the frame an activation of the evaluation loop was
	 * entered with (3.11). Else fr_is_entry is the frame's owner, and a frame owned by this
	 * value or more is the activation's own shim on the C stack (3.13 on): not a Python
	 * function, and the frame before it (inner) is the one it was entered with.
	 */
	__u16 fr_shim_owner;
	__u16 co_code;		/* PyCodeObject.co_code_adaptive: the first instruction */
	__u16 flags;		/* PCMON_PYF_* */
};
/*
 * A CPython pcmon has a table for whose build is not laid out as it says (runtime 0): its
 * samples are marked PCMON_PY_UNKNOWN, so that those that ran Python code are flagged
 * (python_unknown) rather than read wrong or silently native.
 */
#define PCMON_PYF_UNREADABLE 0x1
/*
 * 3.8-3.10: the frames are PyFrameObjects, each run by an activation of the evaluation loop
 * of its own (every one an entry frame), at the instruction f_lasti says, an int at
 * fr_prev_instr: an index (3.10), or a byte offset (PCMON_PYF_LASTI_BYTES: 3.8, 3.9), -1
 * before the first.
 */
#define PCMON_PYF_LASTI 0x2
#define PCMON_PYF_LASTI_BYTES 0x4
/*
 * 3.8-3.10: a thread state has no native_thread_id; its thread_id is the thread's
 * pthread_self(), with glibc and musl on x86-64 the thread's fs base (what the kernel keeps
 * in thread.fsbase), which ts_native_id then names.
 */
#define PCMON_PYF_PTHREAD_ID 0x8

/*
 * A process the engine looked at for an interpreter (pyprocs, by tgid): runtime 0 says it has
 * none pcmon can read (no CPython, or a version with no offsets), so BPF leaves it alone.
 */
struct pcmon_pyproc {
	__u32 epoch;		/* the image it was looked at in: a later exec is looked at again */
	__u32 version;		/* PY_VERSION_HEX */
	__u64 runtime;		/* address of _PyRuntime, 0: none */
	struct pcmon_pyoffs o;
};

/* A thread's state, once found (task storage): good while it names the thread. */
struct pcmon_pythread {
	__u64 tstate;		/* 0: none found */
	__u64 runtime;
	__u64 miss_until;	/* none found: not looked for again before (ns) */
	__u32 epoch;
	__u32 pad;
};

#endif /* PCMON_PYTHON_H */
