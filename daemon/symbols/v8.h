/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * v8_: JavaScript frames of V8 (Node) processes (docs/node.md). Finding a process's V8 and
 * the layout BPF reads its frames with, from the v8dbg_ constants its binary publishes
 * (v8_add(), v8.c); naming the SharedFunctionInfos those frames run from the process's
 * memory and putting the JavaScript frames in place of V8's machine code (v8_merge(),
 * v8_names.c).
 */
#ifndef PCMON_V8_SYM_H
#define PCMON_V8_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pcmon_v8.h"

struct sym;
struct v8;

/* The module JavaScript frames are procedures of: "js.jsphases.workA". */
#define V8_MODULE "js"
/* The V8 versions read, [V8_VERSION_FROM, V8_VERSION_TO) as major << 24 | minor << 16 | build. */
#define V8_VERSION(ma, mi, b) ((uint32_t)(ma) << 24 | (uint32_t)(mi) << 16 | (uint32_t)(b))
#define V8_VERSION_FROM V8_VERSION(11, 1, 204)
#define V8_VERSION_TO V8_VERSION(11, 4, 0)

/* The operand scales of a bytecode (single, double: after Wide, quadruple: after ExtraWide),
 * and the bytecodes a V8 has at most (198 in 11.3). */
#define V8_OPERAND_SCALES 3
#define V8_BYTECODES_MAX 256

/* One V8's layout: what BPF reads (o) and what the engine reads to name frames. */
struct v8_layout {
	uint32_t version;
	struct pcmon_v8offs o;
	uint16_t sfi_name_or_scope, sfi_script, script_name, script_source, script_line_ends;
	uint16_t str_length, str_chars, cons_first, cons_second, thin_actual, sliced_parent,
		 sliced_offset, ext_resource;
	uint16_t fixed_length;
	uint16_t type_first_nonstring, type_scope_info, type_script, type_fixed_array;
	uint16_t str_repr_mask, str_enc_mask, str_one_byte, str_cons, str_sliced, str_thin,
		 str_external;
	uint16_t scope_first_vars, scope_nlocals;
	/* code (not all published by 11.x: filled in by version, as V8's own layout has them) */
	uint16_t sfi_function_data;
	uint16_t type_bytecode_array, type_code;
	uint16_t code_deopt, code_spt, code_start, code_flags, code_size;
	uint16_t kind_mask, kind_interpreted, kind_baseline;
	uint16_t deopt_ninlined, deopt_literals, deopt_sfi, deopt_inlining;
	uint16_t bca_spt, bca_data;
	uint16_t cell_value, type_feedback_vector;
	/* each bytecode's length at each operand scale (V8's Bytecodes::kBytecodeSizes, read
	 * from the binary's symbol table): 0 bytecodes, baseline code's lines are not read */
	uint16_t nbytecodes;
	uint8_t bytecode_sizes[V8_OPERAND_SCALES][V8_BYTECODES_MAX];
};

/*
 * The layout from a binary's v8dbg_ constants (@names[i] = @values[i], @n of them) and its
 * version: 0; -ENOENT: not a V8 (no v8dbg_ constants); -ENOTSUP with @why: a V8 pcmon does
 * not read (its version, or a constant it lacks or that is out of bounds).
 */
int v8_layout(const char *const *names, const int64_t *values, size_t n, uint32_t version,
	      struct v8_layout *l, char *why, size_t wlen);

/*
 * What a ScopeInfo's slots (@w, @n words from its first field after the map) say: the word
 * index of the function's name (-1: none), and of its position info (start, end; -1: none).
 * -EINVAL if they cannot be what @l's V8 writes; @need, the words that must be read.
 */
struct v8_scope {
	int name, inferred, pos;
	unsigned int need;
};
int v8_scope_decode(const uint64_t *w, size_t n, const struct v8_layout *l, struct v8_scope *s);

/* A JavaScript frame's procedure: "SCRIPT.FUNCTION", SCRIPT the base name of @script without
 * its extension; "(anonymous:LINE)" for a function with no name. */
void v8_proc_name(const char *script, const char *fn, unsigned int line, char *out, size_t len);

/*
 * A source position table (@t, @len bytes: V8's deltas of code offset and source position,
 * each a zigzag VLQ): the source position of the last entry at or before code offset @off,
 * 0; -ENOENT if none is.
 */
int v8_spt_find(const uint8_t *t, size_t len, uint32_t off, int64_t *pos);
/* A source position's script offset (-1: none) and inlining id (-1: not inlined). */
static inline int32_t v8_pos_offset(int64_t pos)
{
	return (int32_t)((uint64_t)pos >> 1 & ((1u << 30) - 1)) - 1;
}
static inline int32_t v8_pos_inlining(int64_t pos)
{
	return (int32_t)((uint64_t)pos >> 31 & 0xffff) - 1;
}

/*
 * The bytecode that baseline (Sparkplug) code runs at code offset @off: its bytecode offset
 * table @t (@tlen bytes of unsigned VLQs: the machine code's length for the function's entry,
 * then for each bytecode in turn) walked beside the bytecodes @bc (@n bytes), each as long
 * as @l's sizes say. 0 and *@boff (-1: the function's entry, before its first bytecode);
 * -ENOENT: past the table's end, or a bytecode or table pcmon cannot read.
 */
int v8_baseline_boff(const struct v8_layout *l, const uint8_t *t, size_t tlen,
		     const uint8_t *bc, size_t n, uint32_t off, int64_t *boff);

/* The 0-based line of source position @pos, from the positions of the line ends @ends. */
unsigned int v8_line_of(const uint32_t *ends, size_t n, uint32_t pos);

struct v8 *v8_new(struct sym *s);
void v8_free(struct v8 *v);
/* A new drain: cached SharedFunctionInfos are checked against the process again. */
void v8_next_gen(struct v8 *v);

/*
 * Find process @pid's V8 and keep it: 0 and *@out filled for BPF (its epoch left to the
 * caller); -ENOENT: no V8 in it; -ENOTSUP: a V8 pcmon does not read (@why says which).
 */
int v8_add(struct v8 *v, struct sym *s, uint32_t pid, uint32_t epoch, struct pcmon_v8proc *out,
	   char *why, size_t len);
/* True the first time it is asked about image @epoch of @pid (looked at once). */
bool v8_first_look(struct v8 *v, uint32_t pid, uint32_t epoch);
/* Was image @epoch of @pid looked at (v8_first_look() said so once)? */
bool v8_looked(const struct v8 *v, uint32_t pid, uint32_t epoch);
/* True the first time it is asked about @pid (said once per process). */
bool v8_tell_once(struct v8 *v, uint32_t pid);
/* Process @pid exited at @now (ns): what was read of it is forgotten V8_FORGET_NS later. */
#define V8_FORGET_NS (15 * 1000000000ull)
void v8_exited(struct v8 *v, uint32_t pid, uint64_t now);
bool v8_is_v8(struct v8 *v, uint32_t pid);
/* Processes it keeps anything of (looked at, running or exited less than V8_FORGET_NS ago). */
uint32_t v8_procs_kept(const struct v8 *v);

/* Read what names JavaScript frame @w (its PCMON_JS_FRAME_WORDS words) now, while @pid runs. */
int v8_frame_early(struct v8 *v, uint32_t pid, const uint64_t *w);

/*
 * Merge the JavaScript frames @jw (the words after a marker, @nj of them) into the native user
 * locations @nat (innermost first, pcs @pc, @nn of them), into @out (room for @nn +
 * @nj / PCMON_JS_FRAME_WORDS):
 * each frame goes where the native frame at its pc is, in place of V8's code, or after (as
 * its caller) a native frame that is not V8's. Returns how many were written; *@cut: 0, or
 * PCMON_JS_FAULT (a frame that could not be named: the stack is flagged).
 */
struct v8_merge_in {
	/* (the frames' words: PCMON_JS_FRAME_WORDS each) */
	const uint32_t *nat;
	const uint64_t *pc;
	uint32_t nn;
	const uint64_t *jw;
	uint32_t nj;
	uint32_t pid;
};
uint32_t v8_merge(struct v8 *v, const struct v8_merge_in *in, uint32_t *out, uint32_t *cut);

/*
 * A stack BPF read no JavaScript frames for, of a process found to run a V8 pcmon reads
 * (sampled before the engine looked at it), whose native locations @locs run V8's code:
 * JavaScript ran, and is missing (the stack is flagged js).
 */
bool v8_unread(struct v8 *v, uint32_t pid, const uint32_t *locs, uint32_t n);

/*
 * A --unwind dwarf record BPF read no JavaScript frame for (rbp held no frame pointer: code
 * without them, a system call's wrapper, was running): the frame whose frame pointer the
 * unwinder found to be @fp, at @pc, position @pos, read from the record's copy of the stack
 * (@len bytes from @sp), its JSFunction's SharedFunctionInfo and code read now (a function
 * moved since is not one any more: no frame). 0 and @w filled, or -ENOENT.
 */
int v8_frame_of_copy(struct v8 *v, uint32_t pid, uint64_t fp, uint64_t pc, uint32_t pos,
		     const uint8_t *stack, uint64_t sp, uint32_t len, uint64_t w[PCMON_JS_FRAME_WORDS]);

/* Counters for status. */
struct v8_stats {
	uint64_t named, unnamed, procs;
};
void v8_stats(const struct v8 *v, struct v8_stats *st);

#endif
