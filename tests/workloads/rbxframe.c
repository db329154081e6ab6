// SPDX-License-Identifier: GPL-2.0-only
/*
 * main -> rbx_frame -> spin_leaf. rbx_frame keeps its CFA in rbx while it realigns the stack
 * (as glibc's _dl_runtime_resolve does around every lazily bound call), and spin_leaf never
 * touches rbx: its call-frame information says nothing about rbx, which the x86-64 psABI
 * reads as "rbx holds what the caller left in it". A walk that takes the unsaid for
 * "undefined" cannot find rbx_frame's caller. Prints the share of its CPU time in spin_leaf.
 */
#include "workload.h"

static uint64_t chunk;
static uint64_t ns_leaf;

void rbx_frame(void);

/* (rbx untouched: test_unwind.py checks its disassembly) */
NOINLINE void spin_leaf(void)
{
	SPIN_BODY(chunk);
}

__asm__(".text\n"
	".globl rbx_frame\n"
	".type rbx_frame, @function\n"
	"rbx_frame:\n"
	".cfi_startproc\n"
	"	push %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbx, -16\n"
	"	mov %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"	and $-64, %rsp\n"
	"	call spin_leaf\n"
	"	mov %rbx, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"	pop %rbx\n"
	".cfi_restore %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"	ret\n"
	".cfi_endproc\n"
	".size rbx_frame, .-rbx_frame\n");

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 1.5);
	uint64_t end, t0, total0 = cpu_ns();

	chunk = calibrate(1000000); /* 1 ms a call: the clock reads around it cost a thousandth */
	end = cpu_ns() + secs * 1e9;
	while (cpu_ns() < end) {
		t0 = cpu_ns();
		rbx_frame();
		ns_leaf += cpu_ns() - t0;
	}
	printf("{\"spin_leaf\": %.4f}\n", ns_leaf / (double)(cpu_ns() - total0));
	return 0;
}
