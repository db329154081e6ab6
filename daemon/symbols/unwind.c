// SPDX-License-Identifier: GPL-2.0-only
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sym.h"
#include "unwind.h"
#include "util.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

static bool mem_read(struct unw_cursor *w, uint64_t addr, uint64_t *val)
{
	if (addr < w->base || addr + 8 > w->base + w->len || addr + 8 < addr) {
		if (addr >= w->base + w->len)
			w->short_read = true;
		return false;
	}
	memcpy(val, w->stack + (addr - w->base), 8);
	return true;
}

/* A DWARF expression, as CFI uses them: small, integer-only. */
static bool eval(struct unw_cursor *w, const Dwarf_Op *ops, size_t nops, uint64_t cfa, bool push_cfa,
		 uint64_t *out, bool *is_value)
{
	uint64_t st[16];
	int sp = 0;

#define PUSH(v)                          \
	do {                             \
		if (sp >= 16)            \
			return false;    \
		st[sp++] = (v);          \
	} while (0)
#define POP(v)                           \
	do {                             \
		if (sp <= 0)             \
			return false;    \
		(v) = st[--sp];          \
	} while (0)

	*is_value = false;
	if (push_cfa)
		PUSH(cfa);
	for (size_t i = 0; i < nops; i++) {
		uint8_t op = ops[i].atom;
		uint64_t a, b;

		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			PUSH(op - DW_OP_lit0);
		} else if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			unsigned reg = op - DW_OP_breg0;

			if (reg >= PCMON_NREGS || !(w->valid & (1u << reg)))
				return false;
			PUSH(w->r[reg] + (int64_t)ops[i].number);
		} else {
			switch (op) {
			case DW_OP_bregx:
				if (ops[i].number >= PCMON_NREGS || !(w->valid & (1u << ops[i].number)))
					return false;
				PUSH(w->r[ops[i].number] + (int64_t)ops[i].number2);
				break;
			case DW_OP_call_frame_cfa:
				PUSH(cfa);
				break;
			case DW_OP_const1u: case DW_OP_const2u: case DW_OP_const4u:
			case DW_OP_const8u: case DW_OP_constu:
			case DW_OP_const1s: case DW_OP_const2s: case DW_OP_const4s:
			case DW_OP_const8s: case DW_OP_consts:
				PUSH(ops[i].number);
				break;
			case DW_OP_plus_uconst:
				POP(a);
				PUSH(a + ops[i].number);
				break;
			case DW_OP_deref:
				POP(a);
				if (!mem_read(w, a, &b))
					return false;
				PUSH(b);
				break;
			case DW_OP_dup:
				POP(a);
				PUSH(a);
				PUSH(a);
				break;
			case DW_OP_drop:
				POP(a);
				break;
			case DW_OP_swap:
				POP(a);
				POP(b);
				PUSH(a);
				PUSH(b);
				break;
			case DW_OP_neg:
				POP(a);
				PUSH(-a);
				break;
			case DW_OP_not:
				POP(a);
				PUSH(~a);
				break;
			case DW_OP_stack_value:
				*is_value = true;
				break;
			case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and:
			case DW_OP_or: case DW_OP_xor: case DW_OP_shl: case DW_OP_shr:
			case DW_OP_shra: case DW_OP_ge: case DW_OP_gt: case DW_OP_le:
			case DW_OP_lt: case DW_OP_eq: case DW_OP_ne:
				POP(b);
				POP(a);
				switch (op) {
				case DW_OP_plus: a += b; break;
				case DW_OP_minus: a -= b; break;
				case DW_OP_mul: a *= b; break;
				case DW_OP_and: a &= b; break;
				case DW_OP_or: a |= b; break;
				case DW_OP_xor: a ^= b; break;
				case DW_OP_shl: a = b < 64 ? a << b : 0; break;
				case DW_OP_shr: a = b < 64 ? a >> b : 0; break;
				case DW_OP_shra: a = b < 64 ? (uint64_t)((int64_t)a >> b) : 0; break;
				case DW_OP_ge: a = (int64_t)a >= (int64_t)b; break;
				case DW_OP_gt: a = (int64_t)a > (int64_t)b; break;
				case DW_OP_le: a = (int64_t)a <= (int64_t)b; break;
				case DW_OP_lt: a = (int64_t)a < (int64_t)b; break;
				case DW_OP_eq: a = a == b; break;
				case DW_OP_ne: a = a != b; break;
				}
				PUSH(a);
				break;
			default:
				return false; /* not seen in CFI in practice */
			}
		}
	}
	if (sp < 1)
		return false;
	*out = st[sp - 1];
	return true;
#undef PUSH
#undef POP
}

/* What one step found. */
enum step {
	STEP_ROOT,	/* the return address is undefined: this frame has no caller */
	STEP_OK,	/* the caller's registers are in the walk */
	STEP_BROKEN,	/* the frame cannot be undone (see walk.short_read for why) */
};

/* The caller's registers @nr (bit per register in @nvalid) as a step found them: its rsp the
 * CFA, its pc what column @ra holds, which must be known. */
static enum step step_done(struct unw_cursor *w, uint64_t *nr, uint32_t nvalid, int ra,
			   uint64_t cfa)
{
	if (!(nvalid & (1u << ra)))
		return STEP_BROKEN; /* it has a rule, but the rule could not be followed */
	nr[REG_RSP] = cfa;
	nvalid |= 1u << REG_RSP;
	nr[REG_RA] = nr[ra];
	nvalid |= 1u << REG_RA;
	memcpy(w->r, nr, PCMON_NREGS * sizeof(*nr));
	w->valid = nvalid;
	return STEP_OK;
}

/*
 * One step with libdw's CFI frame of the current pc (a row that says more than a struct
 * cfi_rule can: see cfi_step() for the rest). Only an "undefined" rule for the return
 * address means the root: a return address that cannot be computed (its slot lies past the
 * copy, say) is a broken step, never a root, or cut-off stacks would pass for whole ones.
 */
static enum step frame_step(struct unw_cursor *w, Dwarf_Frame *frame, bool *signal_frame)
{
	uint64_t cfa, nr[PCMON_NREGS];
	uint32_t nvalid = 0;
	Dwarf_Op *ops, ops_mem[3];
	size_t nops;
	bool value;
	int ra;

	ra = dwarf_frame_info(frame, NULL, NULL, signal_frame);
	if (ra < 0 || ra >= PCMON_NREGS)
		return STEP_BROKEN;
	if (dwarf_frame_register(frame, ra, ops_mem, &ops, &nops))
		return STEP_BROKEN;
	if (nops == 0 && ops == ops_mem)
		return STEP_ROOT; /* DW_CFA_undefined: the outermost frame (_start, clone3) */
	if (dwarf_frame_cfa(frame, &ops, &nops) || !eval(w, ops, nops, 0, false, &cfa, &value))
		return STEP_BROKEN;
	for (int reg = 0; reg < PCMON_NREGS; reg++) {
		uint64_t v;

		if (reg == REG_RSP)
			continue; /* the caller's rsp is the CFA */
		if (sym_frame_register(frame, reg, ops_mem, &ops, &nops))
			continue; /* treat as undefined */
		if (nops == 0) {
			/* ops NULL: "same value", this frame left it alone; else "undefined" */
			if (!ops && (w->valid & (1u << reg))) {
				nr[reg] = w->r[reg];
				nvalid |= 1u << reg;
			}
			continue;
		}
		if (!eval(w, ops, nops, cfa, false, &v, &value))
			continue;
		if (!value && v < w->base && (w->valid & (1u << reg))) {
			/*
			 * A slot below the stack pointer is dead memory: this happens in an
			 * epilogue, after `pop %rbp`, where GCC's CFI still names the slot.
			 * The register holds what was popped from it.
			 */
			nr[reg] = w->r[reg];
			nvalid |= 1u << reg;
			continue;
		}
		if (!value && !mem_read(w, v, &v))
			continue;
		nr[reg] = v;
		nvalid |= 1u << reg;
	}
	return step_done(w, nr, nvalid, ra, cfa);
}

/* The same step with a row as sym_cfi_rule() keeps it: what frame_step() does, rule by rule. */
static enum step cfi_step(struct unw_cursor *w, const struct cfi_rule *rule, bool *signal_frame)
{
	uint64_t cfa, nr[PCMON_NREGS];
	uint32_t nvalid = 0;

	if (rule->frame)
		return frame_step(w, rule->frame, signal_frame);
	*signal_frame = rule->signal;
	if (rule->kind[rule->ra] == CFI_UNDEF)
		return STEP_ROOT; /* DW_CFA_undefined: the outermost frame (_start, clone3) */
	if (!(w->valid & (1u << rule->cfa_reg)))
		return STEP_BROKEN;
	cfa = w->r[rule->cfa_reg] + (int64_t)rule->cfa_off;
	for (int reg = 0; reg < PCMON_NREGS; reg++) {
		uint64_t v = cfa + (int64_t)rule->off[reg];

		switch (rule->kind[reg]) {
		case CFI_SAME:
			if (!(w->valid & (1u << reg)))
				continue;
			v = w->r[reg];
			break;
		case CFI_AT:
			if (v < w->base && (w->valid & (1u << reg)))
				v = w->r[reg]; /* a dead slot below the stack pointer: frame_step() */
			else if (!mem_read(w, v, &v))
				continue;
			break;
		case CFI_VAL:
			break;
		default:
			continue;
		}
		nr[reg] = v;
		nvalid |= 1u << reg;
	}
	return step_done(w, nr, nvalid, rule->ra, cfa);
}

/*
 * Code without CFI (JIT, hand-written assembly): follow the frame pointer once. A zero frame
 * pointer ends the chain, but without CFI nothing says this is the outermost frame: the
 * caller reports such a stack as cut short (no CFI), not as whole.
 */
static enum step fp_step(struct unw_cursor *w)
{
	uint64_t bp = w->r[REG_RBP], ra, nbp;

	if (!(w->valid & (1u << REG_RBP)) || !bp || !mem_read(w, bp + 8, &ra) ||
	    !mem_read(w, bp, &nbp) || !ra)
		return STEP_BROKEN;
	w->r[REG_RA] = ra;
	w->r[REG_RBP] = nbp;
	w->r[REG_RSP] = bp + 16;
	w->valid = (1u << REG_RA) | (1u << REG_RBP) | (1u << REG_RSP);
	return STEP_OK;
}

bool unw_eval(const Dwarf_Op *ops, size_t nops, const uint64_t regs[PCMON_NREGS],
	      uint32_t valid, const uint8_t *stack, uint64_t base, uint32_t len, uint64_t cfa,
	      uint64_t *out, bool *is_value)
{
	struct unw_cursor w = { .valid = valid, .stack = stack, .base = base, .len = len };

	memcpy(w.r, regs, sizeof(w.r));
	return eval(&w, ops, nops, cfa, false, out, is_value);
}

bool unw_is_root(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site)
{
	const struct cfi_rule *rule;
	Dwarf_Op *ops, ops_mem[3];
	size_t nops;
	bool root = false;
	int ra;

	if (sym_cfi_rule(s, pid, epoch, pc - call_site, &rule))
		return false;
	if (!rule->frame)
		return rule->kind[rule->ra] == CFI_UNDEF;
	ra = dwarf_frame_info(rule->frame, NULL, NULL, NULL);
	if (ra >= 0 && !dwarf_frame_register(rule->frame, ra, ops_mem, &ops, &nops))
		root = nops == 0 && ops == ops_mem;
	return root;
}

void unw_init(struct unw_cursor *c, struct sym *s, uint32_t pid, uint32_t epoch,
	      const __u64 regs[PCMON_NREGS], uint64_t start_sp, const uint8_t *stack, uint32_t len)
{
	*c = (struct unw_cursor){ .stack = stack, .base = regs[REG_RSP], .len = len, .s = s,
				  .pid = pid, .epoch = epoch, .start_sp = start_sp,
				  .after_signal = true /* the first pc is exact, not a return address */ };
	memcpy(c->r, regs, sizeof(c->r));
	c->valid = (1u << PCMON_NREGS) - 1;
}

bool unw_read(struct unw_cursor *c, uint64_t addr, uint64_t *val)
{
	return mem_read(c, addr, val);
}

void unw_set_caller(struct unw_cursor *c, uint64_t pc, uint64_t sp, uint64_t bp, bool bp_known)
{
	c->r[REG_RA] = pc;
	c->r[REG_RSP] = sp;
	c->r[REG_RBP] = bp;
	c->valid = (1u << REG_RA) | (1u << REG_RSP) | (bp_known ? 1u << REG_RBP : 0);
	c->after_signal = false;
}

int unw_step(struct unw_cursor *c, uint32_t n, enum unw_end *end)
{
	uint64_t pc = c->r[REG_RA], sp = c->r[REG_RSP];
	const struct cfi_rule *rule = NULL;
	bool sig = false, cfi;
	enum step r;

	/* a return address is one past the call: look the caller's frame up at the call */
	cfi = sym_cfi_rule(c->s, c->pid, c->epoch, c->after_signal ? pc : pc - 1, &rule) == 0;
	if (cfi) {
		r = cfi_step(c, rule, &sig);
	} else if (c->start_sp && sp == c->start_sp) {
		r = STEP_ROOT; /* the entry point's frame: the kernel put rsp here at exec */
	} else if (n == 1 && sym_thread_entry(c->s, c->pid, c->epoch, pc)) {
		r = STEP_ROOT; /* a new thread that has not yet run user code */
	} else {
		r = fp_step(c);
	}
	if (r == STEP_ROOT) {
		*end = UNW_END_ROOT;
		return 0;
	}
	if (r == STEP_BROKEN) {
		*end = c->short_read ? UNW_END_TRUNCATED : cfi ? UNW_END_FAULT : UNW_END_NOCFI;
		return 0;
	}
	/* the stack grows down: a caller's frame is above its callee's */
	if (c->r[REG_RSP] <= sp && !sig) {
		*end = UNW_END_FAULT;
		return 0;
	}
	c->after_signal = sig;
	return 1;
}

int unw_walk(struct sym *s, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
	     uint64_t start_sp, const uint8_t *stack, uint32_t len, __u64 *pcs, uint32_t max,
	     enum unw_end *end)
{
	return unw_walk_bp(s, pid, epoch, regs, start_sp, stack, len, pcs, NULL, max, end);
}

int unw_walk_bp(struct sym *s, uint32_t pid, uint32_t epoch, const __u64 regs[PCMON_NREGS],
		uint64_t start_sp, const uint8_t *stack, uint32_t len, __u64 *pcs, __u64 *bps,
		uint32_t max, enum unw_end *end)
{
	struct unw_cursor c;
	uint32_t n = 0;

	unw_init(&c, s, pid, epoch, regs, start_sp, stack, len);
	for (;;) {
		if (n == max) {
			*end = UNW_END_DEPTH;
			return n;
		}
		if (bps) /* (the frame's rbp, as its callees left it: 0 if not known) */
			bps[n] = c.valid & (1u << REG_RBP) ? c.r[REG_RBP] : 0;
		pcs[n++] = c.r[REG_RA];
		if (!unw_step(&c, n, end))
			return n;
	}
}
