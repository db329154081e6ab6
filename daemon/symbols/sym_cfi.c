// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call-frame information for the unwinder (unw_), cached per object, and debug info that
 * arrives after its object was opened (dbginfo.c): the object's locations named again.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbginfo.h"
#include "sym_int.h"

/* The object's .eh_frame, read once (libdwfl owns and caches it). */
static void module_cfi(struct smod *m)
{
	if (m->cfi_tried || !m->mod)
		return;
	m->cfi_tried = true;
	m->eh_cfi = dwfl_module_eh_cfi(m->mod, &m->eh_bias);
}

/*
 * Its .debug_frame, read once, when .eh_frame did not say: it comes with the object's debug
 * info, which libdwfl loads whole (finding a separate file, inflating compressed sections:
 * 12 MB of a system-wide pcmond's heap on a machine of -g builds, for code .eh_frame covered).
 */
static Dwarf_CFI *module_dbg_cfi(struct smod *m)
{
	if (!m->dbg_cfi_tried && m->mod) {
		m->dbg_cfi_tried = true;
		m->dbg_cfi = dwfl_module_dwarf_cfi(m->mod, &m->dbg_bias);
		m->dw_asked = true;
	}
	return m->dbg_cfi;
}

/*
 * The CFI rows the unwinder asked for, by address. A build's compilers, sampled 100 times
 * a second, unwind through the same few thousand return addresses, and libdw finds the FDE
 * and runs its instructions again each time. Kept while the module is open (a row that
 * keeps libdw's frame points into its CFI: the module drops them with its other tables,
 * smod_drop_tables()), at most CFI_CACHE_MAX addresses a module, then begun again. Each
 * row is kept once: the addresses of a function's body share one, and most functions'
 * prologues say the same.
 */
#define CFI_CACHE_MAX 8192

static uint32_t cfi_hash(uint64_t key, uint32_t cap)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

/* @vaddr's slot, new (*fresh) or not; NULL if out of memory. */
static struct cfi_slot *cfi_cache_slot(struct smod *m, uint64_t vaddr, bool *fresh)
{
	uint64_t key = vaddr + 1;
	struct cfi_slot *c;
	uint32_t i;

	if (2 * (m->cfi_n + 1) > m->cfi_cap) {
		uint32_t cap = m->cfi_cap ? 2 * m->cfi_cap : 256;

		if (m->cfi_n >= CFI_CACHE_MAX) {
			smod_drop_cfi_cache(m);
			cap = 256;
		}
		c = calloc(cap, sizeof(*c));
		if (!c)
			return NULL;
		for (uint32_t k = 0; k < m->cfi_cap; k++) {
			if (!m->cfi_cache[k].key)
				continue;
			for (i = cfi_hash(m->cfi_cache[k].key, cap); c[i].key; i = (i + 1) & (cap - 1))
				;
			c[i] = m->cfi_cache[k];
		}
		free(m->cfi_cache);
		m->cfi_cache = c;
		m->cfi_cap = cap;
	}
	for (i = cfi_hash(key, m->cfi_cap); m->cfi_cache[i].key && m->cfi_cache[i].key != key;
	     i = (i + 1) & (m->cfi_cap - 1))
		;
	c = &m->cfi_cache[i];
	*fresh = !c->key;
	if (*fresh) {
		c->key = key;
		c->rule = CFI_NO_RULE;
		m->cfi_n++;
	}
	return c;
}

/* libdw's frame at @vaddr: .eh_frame first (what the program unwinds with), then .debug_frame. */
static Dwarf_Frame *cfi_lookup(struct smod *m, uint64_t vaddr)
{
	Dwarf_Frame *frame = NULL;

	module_cfi(m);
	if (m->eh_cfi && !dwarf_cfi_addrframe(m->eh_cfi, vaddr + m->bias - m->eh_bias, &frame))
		return frame;
	if (module_dbg_cfi(m) && !dwarf_cfi_addrframe(m->dbg_cfi, vaddr + m->bias - m->dbg_bias, &frame))
		return frame;
	return NULL;
}

#define REG_RSP 7

/* A register plus an offset, as libdw gives a CFA (DW_OP_bregx) or an expression might. */
static bool reg_offset(const Dwarf_Op *op, uint8_t *reg, int32_t *off)
{
	uint64_t r = op->atom == DW_OP_bregx ? op->number : (uint64_t)op->atom - DW_OP_breg0;
	int64_t o = (int64_t)(op->atom == DW_OP_bregx ? op->number2 : op->number);

	if (!(op->atom == DW_OP_bregx || (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31)) ||
	    r >= PCMON_NREGS || o < INT32_MIN || o > INT32_MAX)
		return false;
	*reg = (uint8_t)r;
	*off = (int32_t)o;
	return true;
}

/*
 * @frame's row as a rule: false if it says more than a rule can. libdw says a register's
 * rule as operations: none (undefined: @ops is ops_mem; same value: NULL), or the CFA, plus
 * an offset, as a value (DW_OP_stack_value) or an address.
 */
static bool regs_of(Dwarf_Frame *frame, struct cfi_rule *r);

static bool rule_of(Dwarf_Frame *frame, struct cfi_rule *r)
{
	Dwarf_Op *ops;
	size_t nops;
	int ra;

	memset(r, 0, sizeof(*r)); /* (padding too: rules are compared whole) */
	ra = dwarf_frame_info(frame, NULL, NULL, &r->signal);
	if (ra < 0 || ra >= PCMON_NREGS)
		return false;
	r->ra = (uint8_t)ra;
	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 ||
	    !reg_offset(ops, &r->cfa_reg, &r->cfa_off))
		return false;
	return regs_of(frame, r);
}

#define REG_RAX 0
#define REG_RBX 3

int sym_frame_register(Dwarf_Frame *frame, int reg, Dwarf_Op ops_mem[3], Dwarf_Op **ops,
		       size_t *nops)
{
	int err = dwarf_frame_register(frame, reg, ops_mem, ops, nops);

	/*
	 * Only the ABI's defaults are mended: no compiler or assembler writes DW_CFA_undefined
	 * for rbx or DW_CFA_same_value for rax, so a row that says so took libdw's default.
	 */
	if (!err && *nops == 0 && reg == REG_RBX && *ops == ops_mem)
		*ops = NULL;	/* same value */
	else if (!err && *nops == 0 && reg == REG_RAX && !*ops)
		*ops = ops_mem; /* undefined */
	return err;
}

/* The registers' rules of @frame into @r: false if one says more than a rule can. */
static bool regs_of(Dwarf_Frame *frame, struct cfi_rule *r)
{
	Dwarf_Op *ops, ops_mem[3];
	size_t nops;

	for (int reg = 0; reg < PCMON_NREGS; reg++) {
		int64_t off = 0;
		size_t i = 1;
		bool value;

		if (reg == REG_RSP || sym_frame_register(frame, reg, ops_mem, &ops, &nops))
			continue; /* CFI_NONE (the caller's rsp is the CFA) */
		if (nops == 0) {
			r->kind[reg] = ops ? CFI_UNDEF : CFI_SAME;
			continue;
		}
		if (ops[0].atom != DW_OP_call_frame_cfa)
			return false;
		if (i < nops && ops[i].atom == DW_OP_plus_uconst)
			off = (int64_t)ops[i++].number;
		value = i < nops && ops[i].atom == DW_OP_stack_value;
		i += value;
		if (i != nops || off < INT16_MIN || off > INT16_MAX)
			return false;
		r->kind[reg] = value ? CFI_VAL : CFI_AT;
		r->off[reg] = (int16_t)off;
	}
	return true;
}

/*
 * @r's index among @m's rules, added if new; CFI_NO_RULE if out of memory. Rules are
 * interned by their bytes: a row with libdw's frame differs from every other by its
 * pointer, and is never shared.
 */
static uint32_t rule_intern(struct smod *m, const struct cfi_rule *r)
{
	uint32_t id;
	int fresh;

	if (!m->rule_keys && !(m->rule_keys = itab_new()))
		return CFI_NO_RULE;
	/* (room first: an id interned is never taken back) */
	if (GROW(m->rules, m->rules_cap, (size_t)itab_count(m->rule_keys) + 1))
		return CFI_NO_RULE;
	fresh = itab_intern(m->rule_keys, r, sizeof(*r), &id);
	if (fresh < 0)
		return CFI_NO_RULE;
	if (fresh) {
		memcpy(&m->rules[id], r, sizeof(*r)); /* (padding too: rules are compared whole) */
		m->nrules = id + 1;
	}
	return id;
}

/* ---- tables for BPF (pcmon_sample.h, docs/stacks.md) */

#define REG_RBP 6
#define REG_RA 16

void cfi_bpf_row(const struct cfi_rule *r, struct pcmon_cfi_row *row)
{
	memset(row, 0, sizeof(*row));
	if (!r || r->frame || r->signal || r->ra != REG_RA)
		return; /* PCMON_CFI_NONE */
	if (r->kind[REG_RA] == CFI_UNDEF) {
		row->kind = PCMON_CFI_ROOT;
		return;
	}
	if (r->kind[REG_RA] != CFI_AT || r->off[REG_RA] != -8 ||
	    (r->cfa_reg != REG_RSP && r->cfa_reg != REG_RBP))
		return;
	switch (r->kind[REG_RBP]) {
	case CFI_NONE:
	case CFI_SAME:
		break;
	case CFI_AT:
		if (!r->off[REG_RBP])
			return;
		row->rbp_off = r->off[REG_RBP];
		break;
	default:
		return;
	}
	row->cfa_off = r->cfa_off;
	row->kind = r->cfa_reg == REG_RSP ? PCMON_CFI_RSP : PCMON_CFI_RBP;
}

/*
 * A PLT entry's CFA, as binutils writes it for .plt and .plt.sec: rsp + 8, and 8 more once
 * the entry has pushed its index, i.e. from byte @*from of each 16: DW_OP_breg7 8,
 * DW_OP_breg16 0, DW_OP_lit15, DW_OP_and, DW_OP_lit<from>, DW_OP_ge, DW_OP_lit3, DW_OP_shl,
 * DW_OP_plus.
 */
static bool plt_cfa(Dwarf_Frame *frame, uint8_t *from)
{
	static const uint8_t want[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };
	Dwarf_Op *ops;
	size_t nops;

	if (dwarf_frame_cfa(frame, &ops, &nops) || nops != ARRAY_SIZE(want) ||
	    ops[0].number != 8 || ops[1].number != 0 || ops[4].atom < DW_OP_lit0 ||
	    ops[4].atom > DW_OP_lit15)
		return false;
	for (size_t i = 0; i < nops; i++)
		if (want[i] && ops[i].atom != want[i])
			return false;
	*from = (uint8_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

struct rows {
	struct pcmon_cfi_row *r;
	size_t n, cap;
};

/* Row @row from @pc on: the same as the last one is no row, at the last one's pc replaces it. */
static int rows_add(struct rows *t, uint64_t pc, const struct pcmon_cfi_row *row)
{
	struct pcmon_cfi_row *last = t->n ? &t->r[t->n - 1] : NULL;

	if (last && last->pc == pc) {
		*last = *row;
		last->pc = (uint32_t)pc;
		if (t->n > 1 && !memcmp(&t->r[t->n - 2].cfa_off, &last->cfa_off,
					sizeof(*row) - offsetof(struct pcmon_cfi_row, cfa_off)))
			t->n--;
		return 0;
	}
	if (last && !memcmp(&last->cfa_off, &row->cfa_off,
			    sizeof(*row) - offsetof(struct pcmon_cfi_row, cfa_off)))
		return 0;
	if (GROW(t->r, t->cap, t->n + 1))
		return -ENOMEM;
	t->r[t->n] = *row;
	t->r[t->n++].pc = (uint32_t)pc;
	return 0;
}

/* The rows of FDE [@start, @end) of @cfi (an object's .eh_frame, at its ELF vaddrs). */
static int fde_rows(Dwarf_CFI *cfi, uint64_t start, uint64_t end, struct rows *t)
{
	static const struct pcmon_cfi_row none;
	uint64_t a = start;
	int err = 0;

	while (a < end && !err) {
		struct pcmon_cfi_row row;
		Dwarf_Frame *frame = NULL;
		Dwarf_Addr rs, re;
		struct cfi_rule r;

		if (dwarf_cfi_addrframe(cfi, a, &frame) ||
		    dwarf_frame_info(frame, &rs, &re, NULL) < 0 || re <= a) {
			free(frame);
			return rows_add(t, a, &none); /* (the rest of it: the engine unwinds it) */
		}
		if (rule_of(frame, &r)) {
			cfi_bpf_row(&r, &row);
		} else {
			memset(&row, 0, sizeof(row));
			/* (the registers as in any row: the return address at CFA - 8) */
			memset(&r, 0, sizeof(r));
			if (plt_cfa(frame, &row.arg) && regs_of(frame, &r) &&
			    r.kind[REG_RA] == CFI_AT && r.off[REG_RA] == -8 &&
			    (r.kind[REG_RBP] == CFI_NONE || r.kind[REG_RBP] == CFI_SAME))
				row.kind = PCMON_CFI_PLT;
		}
		free(frame);
		err = rows_add(t, a, &row);
		a = MIN(re, end);
	}
	return err;
}

int sym_cfi_table(struct sym *s, uint32_t module, struct pcmon_cfi_row **out, uint32_t *nout)
{
	static const struct pcmon_cfi_row none;
	struct smod *m = module < s->nmods ? &s->mods[module] : NULL;
	struct rows t = { 0 };
	struct fde_range *f;
	uint64_t covered = 0;
	Dwarf_CFI *cfi;
	GElf_Addr bias;
	size_t nf;
	int err = 0;

	*out = NULL;
	*nout = 0;
	if (!m || module == SYM_MOD_KERNEL)
		return -ENOENT;
	if (!m->mod && m->closed)
		smod_open(s, m, 0, 0, 0);
	/*
	 * A CFI of its own, from the object's file alone, ended once the rows are made: libdw
	 * keeps every CIE and FDE a CFI parsed (all of them, here) until it is ended, and the
	 * module's (module_cfi()) would also read its separate debug info for .debug_frame.
	 */
	cfi = m->mod ? dwarf_getcfi_elf(dwfl_module_getelf(m->mod, &bias)) : NULL;
	if (!cfi)
		return -ENOENT;
	m->used_ns = now_coarse_ns();
	nf = smod_eh_fdes(m, &f);
	for (size_t i = 0; i < nf && !err; i++) {
		if (f[i].start < covered)
			continue; /* (overlapping FDEs: the first one's rows hold) */
		if (f[i].end > UINT32_MAX) {
			err = -E2BIG;
			break;
		}
		err = fde_rows(cfi, f[i].start, f[i].end, &t);
		if (!err)
			err = rows_add(&t, f[i].end, &none);
		covered = f[i].end;
	}
	free(f);
	dwarf_cfi_end(cfi);
	if (!err && !t.n)
		err = -ENOENT;
	if (err) {
		free(t.r);
		return err;
	}
	*out = t.r;
	*nout = (uint32_t)t.n;
	return 0;
}

/* The rule at @vaddr: CFI_NO_RULE if no CFI covers it (or out of memory). */
static uint32_t cfi_rule_at(struct smod *m, uint64_t vaddr)
{
	Dwarf_Frame *frame = cfi_lookup(m, vaddr);
	struct cfi_rule r;
	uint32_t id;

	if (!frame)
		return CFI_NO_RULE;
	if (rule_of(frame, &r)) {
		free(frame);
	} else {
		memset(&r, 0, sizeof(r));
		r.frame = frame;
	}
	id = rule_intern(m, &r);
	if (id == CFI_NO_RULE)
		free(r.frame);
	return id;
}

int sym_cfi_rule(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc,
		 const struct cfi_rule **rule)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, pc);
	uint64_t vaddr, now;
	struct cfi_slot *c;
	struct jitmap *j;
	struct smod *m;
	bool fresh;

	*rule = NULL;
	if (!r && pm) {
		/* JIT code has no CFI: known as such, it needs no new look at the address map */
		now = now_ns();
		j = jit_map(s, pm, pid, now);
		if (j && jit_lookup(s, pm, j, pc, now))
			return -ENOENT;
		r = pmap_region(s, pid, epoch, pc, true);
	} else if (!r || !r->exec) {
		r = pmap_region(s, pid, epoch, pc, true);
	}
	if (!r)
		return -ENOENT;
	m = smod_use(s, pid, r);
	if (!m->mod || !smod_vaddr(m, pc - r->start + r->pgoff, &vaddr)) {
		m->unwind_misses++;
		return -ENOENT;
	}
	c = cfi_cache_slot(m, vaddr, &fresh);
	if (!c)
		return -ENOMEM;
	if (fresh)
		c->rule = cfi_rule_at(m, vaddr);
	if (c->rule == CFI_NO_RULE) {
		m->unwind_misses++;
		return -ENOENT;
	}
	*rule = &m->rules[c->rule];
	m->unwinds++;
	return 0;
}

/* ---- debug info that arrives after its module was opened (dbginfo.c) */

/*
 * Debug info for build-id @bid arrived: report each module with that build-id again in a
 * new Dwfl, whose callbacks find the file, and symbolize its locations again, so that the
 * samples already taken list under the new names. Returns how many modules changed.
 */
uint32_t sym_debuginfo_arrived(struct sym *s, const unsigned char *bid, size_t len)
{
	uint32_t changed = 0;

	for (uint32_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++) {
		struct smod *m = &s->mods[i];
		const unsigned char *b;
		Dwfl_Module *mod = NULL;
		GElf_Addr v;
		Dwfl *dwfl;
		int fd;

		/* let go (idle, or over the memory budget) before its debug info came: opened
		 * again to take it, from the file it holds or its path */
		if (!m->mod && m->closed && m->bid_len == len && !memcmp(m->bid, bid, len))
			smod_open(s, m, 0, 0, 0);
		if (!m->mod || dwfl_module_build_id(m->mod, &b, &v) != (int)len ||
		    memcmp(b, bid, len))
			continue;
		fd = dbginfo_reopen(m->mod, m->path);
		dwfl = fd >= 0 ? dwfl_begin(dbginfo_callbacks()) : NULL;
		if (dwfl) {
			mod = dwfl_report_elf(dwfl, sym_str(s, m->name), m->path, fd, 0, false);
			dwfl_report_end(dwfl, NULL, NULL);
		} else if (fd >= 0) {
			close(fd);
		}
		if (!mod) {
			pr_warn("cannot open %s again with its debug info: %s", m->path,
				dwfl_errmsg(-1));
			dwfl_end(dwfl);
			continue;
		}
		dbginfo_attach(s->dbg, mod);
		/* held open now is what was opened again: the same inode, or a copy */
		smod_unpin(s, m);
		smod_pin(s, m, fd);
		dwfl_end(m->dwfl); /* the CFI came from it: read again on next use */
		m->dwfl = dwfl;
		m->mod = mod;
		dwfl_module_getelf(mod, &m->bias);
		/* symbol and function tables name the old Dwfl's strings, and the debug file may
		 * bring a full symbol table and .debug_frame: built again on next use */
		smod_drop_tables(m);
		for (uint32_t id = 0; id < itab_count(s->loc_keys); id++) {
			struct sym_loc *l = &s->locs[id], old = *l;
			bool mapped = false;

			/* only addresses that are ELF vaddrs: those names_loc() symbolized */
			for (size_t k = 0; l->module == i && k < m->nloads && !mapped; k++)
				mapped = l->addr >= m->loads[k].p_vaddr &&
					 l->addr < m->loads[k].p_vaddr + m->loads[k].p_memsz;
			if (!mapped)
				continue;
			*l = (struct sym_loc){ .module = i, .addr = old.addr, .first = s->nframes };
			names_symbolize(s, m, l->addr + m->bias, l);
			l->nframes = s->nframes - l->first;
			if (!l->nframes)
				*l = old; /* out of memory: keep what it had */
		}
		changed++;
	}
	return changed;
}

uint64_t sym_eh_frame_bytes(struct sym *s, uint32_t module)
{
	struct smod *m = module < s->nmods && module != SYM_MOD_KERNEL ? &s->mods[module] : NULL;
	GElf_Addr bias;
	GElf_Shdr sh;

	if (m && !m->mod && m->closed)
		smod_open(s, m, 0, 0, 0);
	return m && m->mod && elf_section_named(dwfl_module_getelf(m->mod, &bias), ".eh_frame", &sh)
		       ? sh.sh_size : 0;
}

/* ---- the code a process maps, for BPF's tables */

int sym_code_maps(struct sym *s, uint32_t pid, uint32_t epoch, bool reread, sym_code_cb cb,
		  void *ctx)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	int r;

	if (reread || !pm || !pm->n) {
		r = sym_proc_load(s, pid, epoch);
		if (r)
			return r;
		pm = pmap_get(s, pid, epoch, false);
	}
	if (!pm || pm->final || pm->gone)
		return -ESRCH;
	for (size_t i = 0; i < pm->n; i++) {
		const struct region *g = &pm->r[i];
		struct smod *m;
		uint64_t v;

		if (!g->exec || g->module <= SYM_MOD_KERNEL || g->module >= s->nmods)
			continue;
		m = &s->mods[g->module];
		if (m->jit)
			continue;
		if (!m->mod && m->closed)
			smod_open(s, m, pid, g->start, g->end);
		if (!m->mod || !smod_vaddr(m, g->pgoff, &v))
			continue;
		cb(ctx, g->start, g->end, g->pgoff, g->start - v, g->module);
	}
	return 0;
}
