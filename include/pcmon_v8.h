/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JavaScript frames of V8 (Node) processes (docs/node.md): what BPF needs to find a V8
 * thread's JavaScript frames in its frame-pointer chain at sample time, and how it hands them
 * to the engine. Shared by bpf/sample.bpf.c and daemon/symbols/v8*.c. Plain __u16/__u32/__u64
 * only: compiled by clang -target bpf and gcc.
 *
 * A sample of a registered process (v8procs) carries its JavaScript frames after its native
 * ones, in the same stack record and before any Python marker: a marker word (PCMON_JS_MARK |
 * enum pcmon_js_status), then four words per JavaScript frame, innermost first. No word
 * after the marker has its top bit set, so none reads as a marker of either kind.
 */
#ifndef PCMON_V8_H
#define PCMON_V8_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Frames of the chain walked per sample at most, and JavaScript frames kept of them. */
#define PCMON_JS_CHAIN_MAX 128
#define PCMON_JS_FRAMES_MAX 31
/* Words a JavaScript frame takes, and the JavaScript part of a stack at most (its marker). */
#define PCMON_JS_FRAME_WORDS 4
#define PCMON_JS_WORDS_MAX (1 + PCMON_JS_FRAME_WORDS * PCMON_JS_FRAMES_MAX)

#define PCMON_JS_MARK 0xfffd000000000000ULL
#define PCMON_JS_MARK_MASK 0xffffffffffff0000ULL

/* How the walk after a marker ended. */
enum pcmon_js_status {
	PCMON_JS_OK = 0,	/* at the chain's end */
	PCMON_JS_FAULT,		/* a frame that looked like JavaScript could not be read whole */
	PCMON_JS_DEPTH,		/* more than PCMON_JS_CHAIN_MAX frames, or PCMON_JS_FRAMES_MAX */
};
/*
 * (A process not looked at yet, its first milliseconds, has no v8procs entry: its stacks
 * carry no marker, and the engine flags those whose native frames run V8's code.)
 */

/*
 * A frame's first word: the pc it is at (user space: 47 bits) and its position in the
 * frame-pointer chain (0: the innermost, at the sampled pc); the second: its
 * SharedFunctionInfo's address (untagged) and, for an interpreted frame, the bytecode offset
 * it is at as the frame keeps it, plus one (0: not interpreted, PCMON_JS_BOFF_FAR: too far to
 * say); the third, the code its function had then (a tagged Code: the engine checks the pc
 * is in it, and reads what it inlined); the fourth, its function's feedback cell (tagged:
 * where the code a running loop was replaced with is, on-stack replacement). The third's bits
 * from PCMON_JS_RET_SHIFT, for the innermost frame whose pc is not in its code (a builtin that
 * code called, which made no frame of its own): where in the code the call returns to, plus
 * one, a return address found at the top of the stack (0: none, or past PCMON_JS_RET_MAX).
 */
#define PCMON_JS_ADDR_MASK ((1ULL << 47) - 1)
#define PCMON_JS_POS_SHIFT 48
#define PCMON_JS_POS_MASK 0xffULL
#define PCMON_JS_BOFF_SHIFT 48
#define PCMON_JS_BOFF_FAR 0x7fffu
#define PCMON_JS_RET_SHIFT 47
#define PCMON_JS_RET_MAX 0xffffULL
/* Words at the top of the stack looked at for that return address: the top one alone (a
 * builtin that pushed nothing yet), where no stale return address of the frame can be. */
#define PCMON_JS_RET_WORDS 1
/* (set on the outermost frame's last word: a stack ending with it wakes the engine soon) */
#define PCMON_JS_OUTERMOST (1ULL << 47)

static inline __u64 pcmon_js_pc_word(__u64 pc, __u32 pos)
{
	return (pc & PCMON_JS_ADDR_MASK) | ((__u64)(pos & PCMON_JS_POS_MASK) << PCMON_JS_POS_SHIFT);
}

static inline __u64 pcmon_js_sfi_word(__u64 sfi, __u64 boff1)
{
	if (boff1 > PCMON_JS_BOFF_FAR)
		boff1 = PCMON_JS_BOFF_FAR;
	return (sfi & PCMON_JS_ADDR_MASK) | boff1 << PCMON_JS_BOFF_SHIFT;
}

/*
 * Where things are in one V8's frames and objects (the engine fills them from the v8dbg_
 * constants the binary publishes: daemon/symbols/v8.c). Frame slots are byte offsets from
 * the frame pointer, within [-PCMON_JS_WIN_BELOW, 0).
 */
#define PCMON_JS_WIN_BELOW 64
struct pcmon_v8offs {
	__u16 fp_function;	/* -v8dbg_off_fp_function: the frame's JSFunction */
	__u16 fp_context;	/* -v8dbg_off_fp_context: its context, or a frame type marker */
	__u16 fp_bytecode_offset; /* -v8dbg_off_fp_bytecode_offset (interpreted frames) */
	__u16 map;		/* HeapObject.map */
	__u16 map_type;		/* Map.instance_type, a __u16 */
	__u16 fn_shared;	/* JSFunction.shared */
	__u16 type_fn_lo;	/* the JSFunction instance types, [lo, hi] */
	__u16 type_fn_hi;
	__u16 type_sfi;		/* SHARED_FUNCTION_INFO_TYPE */
	__u16 fn_code;		/* JSFunction.code */
	__u16 fn_feedback;	/* JSFunction.raw_feedback_cell */
	__u16 fp_bytecode_array; /* -v8dbg_off_fp_bytecode_array (interpreted frames) */
	__u16 code_start;	/* Code's instruction start (a __u64) */
	__u16 code_size;	/* and its instructions' length (an int) */
};

/* A process the engine looked at for a V8 (v8procs, by tgid). */
struct pcmon_v8proc {
	__u32 epoch;		/* the image it was looked at in: a later exec is looked at again */
	__u32 version;		/* major << 24 | minor << 16 | build; 0: none pcmon reads */
	struct pcmon_v8offs o;
};

#endif /* PCMON_V8_H */
