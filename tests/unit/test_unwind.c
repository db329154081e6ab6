// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for the unwinder's DWARF expression evaluator (daemon/symbols/unwind.c): the operations
 * CFI rules use, reads from the copied stack and their bounds, and malformed expressions; and
 * the CFI rows as BPF's tables say them (cfi_bpf_row(), daemon/symbols/sym_cfi.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dwarf.h>
#include <string.h>

#include "sym.h"
#include "unwind.h"

#define ALL ((1u << PCMON_NREGS) - 1)

static uint64_t regs[PCMON_NREGS];
static uint8_t stack[64];
static const uint64_t base = 0x7ffd0000;

static void setup_regs(void)
{
	for (int i = 0; i < PCMON_NREGS; i++)
		regs[i] = 1000 + i;
	regs[7] = base; /* rsp */
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)i;
}

#define OP(a) { .atom = (a) }
#define OP1(a, n) { .atom = (a), .number = (n) }
#define OP2(a, n, m) { .atom = (a), .number = (n), .number2 = (m) }

static bool run(const Dwarf_Op *ops, size_t n, uint32_t valid, uint64_t *out, bool *value)
{
	return unw_eval(ops, n, regs, valid, stack, base, sizeof(stack), 0xcfa0, out, value);
}

static void test_registers_and_constants(void **state)
{
	/* the PLT's rule: CFA = rsp + 8 + ((rip & 15) >= 11) * 8 */
	const Dwarf_Op plt[] = { OP1(DW_OP_breg7, 8), OP1(DW_OP_breg16, 0),  OP1(DW_OP_lit15, 0),
				 OP(DW_OP_and),		 OP1(DW_OP_lit11, 0), OP(DW_OP_ge),
				 OP1(DW_OP_lit3, 0),	 OP(DW_OP_shl),	      OP(DW_OP_plus) };
	const Dwarf_Op bregx[] = { OP2(DW_OP_bregx, 6, -16) };
	const Dwarf_Op consts[] = { OP1(DW_OP_consts, (Dwarf_Word)-5), OP1(DW_OP_plus_uconst, 7) };
	uint64_t v;
	bool value;

	(void)state;
	setup_regs();
	regs[16] = 0x401012; /* & 15 = 2 < 11 */
	assert_true(run(plt, 9, ALL, &v, &value));
	assert_int_equal(v, base + 8);
	assert_false(value);
	regs[16] = 0x40101c; /* & 15 = 12 >= 11 */
	assert_true(run(plt, 9, ALL, &v, &value));
	assert_int_equal(v, base + 16);
	assert_true(run(bregx, 1, ALL, &v, &value));
	assert_int_equal(v, regs[6] - 16);
	assert_true(run(consts, 2, ALL, &v, &value));
	assert_int_equal(v, 2);
}

static void test_stack_operations(void **state)
{
	const Dwarf_Op ops[] = { OP1(DW_OP_lit1, 0), OP1(DW_OP_lit2, 0), OP(DW_OP_swap),
				 OP(DW_OP_minus), OP(DW_OP_dup), OP(DW_OP_mul), OP(DW_OP_neg) };
	const Dwarf_Op cfa[] = { OP(DW_OP_call_frame_cfa), OP1(DW_OP_plus_uconst, 8),
				 OP(DW_OP_stack_value) };
	uint64_t v;
	bool value;

	(void)state;
	setup_regs();
	assert_true(run(ops, 7, ALL, &v, &value));
	assert_int_equal(v, (uint64_t)-1); /* 2 - 1 = 1, squared, negated */
	assert_true(run(cfa, 3, ALL, &v, &value));
	assert_int_equal(v, 0xcfa0 + 8);
	assert_true(value);
}

static void test_deref_reads_the_copy_only(void **state)
{
	const Dwarf_Op in[] = { OP1(DW_OP_breg7, 8), OP(DW_OP_deref) };
	const Dwarf_Op past[] = { OP1(DW_OP_breg7, 60), OP(DW_OP_deref) };
	const Dwarf_Op below[] = { OP1(DW_OP_breg7, (Dwarf_Word)-8), OP(DW_OP_deref) };
	uint64_t v, want;
	bool value;

	(void)state;
	setup_regs();
	memcpy(&want, stack + 8, 8);
	assert_true(run(in, 2, ALL, &v, &value));
	assert_int_equal(v, want);
	assert_false(run(past, 2, ALL, &v, &value)); /* 4 of its 8 bytes lie past the copy */
	assert_false(run(below, 2, ALL, &v, &value));
}

static void test_malformed_expressions(void **state)
{
	const Dwarf_Op underflow[] = { OP(DW_OP_plus) };
	const Dwarf_Op unknown_reg[] = { OP1(DW_OP_breg3, 0) };
	const Dwarf_Op unsupported[] = { OP1(DW_OP_lit1, 0), OP(DW_OP_xderef) };
	Dwarf_Op overflow[20];
	uint64_t v;
	bool value;

	(void)state;
	setup_regs();
	assert_false(run(underflow, 1, ALL, &v, &value));
	assert_false(run(NULL, 0, ALL, &v, &value));		/* an empty stack at the end */
	assert_false(run(unknown_reg, 1, ALL & ~(1u << 3), &v, &value)); /* rbx not known */
	assert_false(run(unsupported, 2, ALL, &v, &value));
	for (int i = 0; i < 20; i++)
		overflow[i] = (Dwarf_Op)OP1(DW_OP_lit1, 0);
	assert_false(run(overflow, 20, ALL, &v, &value));	/* deeper than its 16 slots */
}

/* A row as libdw's frames give them: CFA = @reg + @off, the return address at CFA - 8. */
static struct cfi_rule row(uint8_t reg, int32_t off)
{
	struct cfi_rule r;

	memset(&r, 0, sizeof(r));
	r.cfa_reg = reg;
	r.cfa_off = off;
	r.ra = 16;
	r.kind[16] = CFI_AT;
	r.off[16] = -8;
	return r;
}

static void test_bpf_rows(void **state)
{
	struct pcmon_cfi_row b;
	struct cfi_rule r;
	int frame;

	(void)state;
	/* a function's body after push rbp; mov rbp, rsp: CFA = rbp + 16, rbp saved at CFA - 16 */
	r = row(6, 16);
	r.kind[6] = CFI_AT;
	r.off[6] = -16;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_RBP);
	assert_int_equal(b.cfa_off, 16);
	assert_int_equal(b.rbp_off, -16);
	/* a big frame off rsp (64 KiB and more: past 16 bits), rbp left as it is */
	r = row(7, 65560);
	r.kind[6] = CFI_SAME;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_RSP);
	assert_int_equal(b.cfa_off, 65560);
	assert_int_equal(b.rbp_off, 0);
	/* _start, clone3: no caller, whatever the CFA */
	r = row(7, 8);
	r.kind[16] = CFI_UNDEF;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_ROOT);
	/* what the rows cannot say is left to the engine: a CFA in another register (DRAP:
	 * r10), a return address elsewhere, rbp kept as a value, a signal frame, an expression */
	r = row(10, 0);
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
	r = row(7, 16);
	r.off[16] = -16;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
	r = row(7, 16);
	r.kind[6] = CFI_VAL;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
	r = row(7, 16);
	r.signal = true;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
	r = row(7, 16);
	r.frame = (Dwarf_Frame *)&frame;
	cfi_bpf_row(&r, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
	cfi_bpf_row(NULL, &b);
	assert_int_equal(b.kind, PCMON_CFI_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers_and_constants),
		cmocka_unit_test(test_stack_operations),
		cmocka_unit_test(test_deref_reads_the_copy_only),
		cmocka_unit_test(test_malformed_expressions),
		cmocka_unit_test(test_bpf_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
