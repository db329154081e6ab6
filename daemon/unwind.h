/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * unw_: unwinding a copied user stack with the call-frame information (.eh_frame, else
 * .debug_frame) of the objects the pcs fall in, as libdw reads it, for --unwind dwarf.
 * CFI is cached per object (sym_) and shared by every process that maps it; memory reads
 * are served from the copy, so a process that has exited still unwinds.
 */
#ifndef PCMON_UNWIND_H
#define PCMON_UNWIND_H

#include <stdint.h>

#include "pcmon_bpf.h"

struct sym;

enum unw_end {
	UNW_END_ROOT = 0,	/* the outermost frame says there is no caller */
	UNW_END_TRUNCATED,	/* the copied stack or the depth ran out first */
	UNW_END_FAULT,		/* no rule to go on (no CFI, no frame pointer), or a bad frame */
};

/*
 * Walk from @regs (DWARF numbering) over @stack, a copy of @len bytes of user memory that
 * starts at regs[7] (rsp). Fills @pcs innermost first with at most @max pcs and returns
 * their number; *@end says why the walk stopped.
 */
int unw_walk(struct sym *s, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
	     const uint8_t *stack, uint32_t len, __u64 *pcs, uint32_t max, enum unw_end *end);

#endif
