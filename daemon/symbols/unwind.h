/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * unw_: unwinding a copied user stack with the call-frame information (.eh_frame, else
 * .debug_frame) of the objects the pcs fall in, as libdw reads it (kept as rows, struct
 * cfi_rule), for --unwind dwarf.
 * CFI is cached per object (sym_) and shared by every process that maps it; memory reads
 * are served from the copy, so a process that has exited still unwinds.
 */
#ifndef PCMON_UNWIND_H
#define PCMON_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "pcmon_bpf.h"

struct sym;

/*
 * Why a walk stopped. Only UNW_END_ROOT is a whole stack: the outermost frame's CFI says its
 * return address is undefined, as glibc marks _start and clone3 (the x86-64 ABI's way of
 * saying "no caller"). Everything else is a stack cut short, and says where it was cut.
 */
enum unw_end {
	UNW_END_ROOT = 0,	/* the outermost frame says there is no caller */
	UNW_END_TRUNCATED,	/* a read fell past the end of the copied stack */
	UNW_END_DEPTH,		/* the stack has more frames than the maximum depth */
	UNW_END_NOCFI,		/* code without CFI whose frame-pointer chain ends or breaks */
	UNW_END_FAULT,		/* a bad frame: unreadable rule, a caller below its callee */
};

/*
 * A walk in progress, for walkers of their own that hand native frames to the CFI walk
 * (hotspot_unwind.c): r[16] is the current frame's pc, r[7] its stack pointer.
 */
struct unw_cursor {
	uint64_t r[PCMON_NREGS];
	uint32_t valid;		/* bit per register */
	const uint8_t *stack;
	uint64_t base;		/* address of stack[0] */
	uint32_t len;
	bool short_read;	/* a read fell past the end of the copy */
	bool after_signal;	/* r[16] is exact (the first frame, or after a signal frame) */
	struct sym *s;
	uint32_t pid, epoch;
	uint64_t start_sp;
};
void unw_init(struct unw_cursor *c, struct sym *s, uint32_t pid, uint32_t epoch,
	      const __u64 regs[PCMON_NREGS], uint64_t start_sp, const uint8_t *stack, uint32_t len);
/*
 * One step of the CFI walk from the cursor's frame, the @n-th one walked: 1, the caller is
 * in the cursor; 0, the walk ended there, *@end says why.
 */
int unw_step(struct unw_cursor *c, uint32_t n, enum unw_end *end);
/* A word of the copied stack: false if @addr is not in the copy (short_read if past it). */
bool unw_read(struct unw_cursor *c, uint64_t addr, uint64_t *val);
/* The caller a walker of its own found: @pc a return address, its stack and frame pointer. */
void unw_set_caller(struct unw_cursor *c, uint64_t pc, uint64_t sp, uint64_t bp, bool bp_known);

/*
 * Walk from @regs (DWARF numbering) over @stack, a copy of @len bytes of user memory that
 * starts at regs[7] (rsp). @start_sp is the process's initial stack pointer (0: unknown):
 * code without CFI whose frame sits exactly there is the entry point (the dynamic linker's
 * _start has no CFI), a root. Fills @pcs innermost first with at most @max pcs and returns
 * their number; *@end says why the walk stopped.
 */
int unw_walk(struct sym *s, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
	     uint64_t start_sp, const uint8_t *stack, uint32_t len, __u64 *pcs, uint32_t max,
	     enum unw_end *end);
/* The same, and in @bps (room for @max) each frame's rbp as the walk found it (0: not
 * known): a V8 frame's frame pointer (docs/node.md). */
int unw_walk_bp(struct sym *s, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
		uint64_t start_sp, const uint8_t *stack, uint32_t len, __u64 *pcs, __u64 *bps,
		uint32_t max, enum unw_end *end);

/*
 * Evaluate a CFI expression (the rules' DWARF operations) over registers @regs (bit i of
 * @valid: regs[i] is known) and the copied stack @stack of @len bytes at address @base;
 * DW_OP_call_frame_cfa yields @cfa. *@is_value: DW_OP_stack_value ended it (the result is
 * the register's value, not where it is saved). False if it cannot be evaluated.
 */
bool unw_eval(const Dwarf_Op *ops, size_t nops, const uint64_t regs[PCMON_NREGS],
	      uint32_t valid, const uint8_t *stack, uint64_t base, uint32_t len, uint64_t cfa,
	      uint64_t *out, bool *is_value);

/*
 * Is the function around @pc in (pid, epoch) an outermost frame (its CFI leaves the return
 * address undefined)? @call_site: @pc is a return address, look it up at the call.
 */
bool unw_is_root(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site);

#endif
