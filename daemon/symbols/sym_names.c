// SPDX-License-Identifier: GPL-2.0-only
/*
 * The names of code in an object: its ELF symbols, the functions its call-frame information
 * describes, and its DWARF lines and inline chains.
 */
#include <dwarf.h>
#include <inttypes.h>
#include <stdlib.h>

#include "sym_int.h"

/* A function's name: its linkage name (C++, Rust: demangled in sym_push_frame(), qualified and
 * with parameters, as the symbol table names it), else its plain name (C). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

/* ---- functions named by call-frame information */

/*
 * A DW_EH_PE-encoded value at *@p, whose format is the low nibble of @enc (how it applies,
 * pc-relative or absolute, is the caller's business); *@p moves past it. false when the
 * format is unknown or the value runs past @end. Little-endian data only (see read_fdes).
 */
static bool eh_value(const uint8_t **p, const uint8_t *end, uint8_t enc, unsigned asize,
		     uint64_t *val)
{
	const uint8_t *q = *p;
	unsigned n, shift = 0;
	uint64_t v = 0;

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		n = asize;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		do {
			if (q >= end || shift > 63)
				return false;
			v |= (uint64_t)(*q & 0x7f) << shift;
			shift += 7;
		} while (*q++ & 0x80);
		if ((enc & 0x0f) == DW_EH_PE_sleb128 && shift < 64 && (q[-1] & 0x40))
			v |= ~0ULL << shift;
		*p = q;
		*val = v;
		return true;
	default:
		return false;
	}
	if (end - q < (ptrdiff_t)n)
		return false;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)q[i] << (8 * i);
	if ((enc & DW_EH_PE_signed) && n < 8 && ((v >> (8 * n - 1)) & 1))
		v |= ~0ULL << (8 * n);
	*p = q + n;
	*val = v;
	return true;
}

/*
 * How the FDEs of @cie encode their initial location: the argument of its 'R' augmentation
 * (absolute pointers without one); -1 for an augmentation we cannot read past.
 */
static int cie_fde_encoding(const Dwarf_CIE *cie, unsigned asize)
{
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *end = d ? d + cie->augmentation_data_size : NULL;
	const char *a = cie->augmentation;
	uint64_t skip;

	if (a[0] != 'z')
		return a[0] ? -1 : DW_EH_PE_absptr;
	if (!d)
		return -1;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			return d < end ? *d : -1;
		case 'L': /* LSDA encoding: one byte */
			d++;
			break;
		case 'P': /* personality: its encoding, then the pointer */
			if (d >= end || (*d & 0x70) == DW_EH_PE_aligned)
				return -1;
			d++;
			if (!eh_value(&d, end, d[-1], asize, &skip))
				return -1;
			break;
		case 'S': /* signal frame, BTI, MTE: no data */
		case 'B':
		case 'G':
			break;
		default:
			return -1;
		}
	}
	return DW_EH_PE_absptr;
}

/*
 * Append to @m's table the code ranges of the FDEs in section @name of @elf, whose
 * addresses become ELF vaddrs of @m by adding @adj. .eh_frame initial locations are
 * usually pc-relative (DW_EH_PE_pcrel | sdata4); .debug_frame ones absolute.
 */
Elf_Scn *elf_section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *n;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type != SHT_NOBITS &&
		    (n = elf_strptr(elf, shstrndx, sh->sh_name)) && !strcmp(n, name))
			return scn;
	return NULL;
}

static void read_fdes_of(struct fde_range **fdes, size_t *nfdes, Elf *elf, const char *name,
			 bool eh, int64_t adj, size_t *cap)
{
	struct { Dwarf_Off off; int enc; } cies[32];
	size_t ncies = 0;
	const unsigned char *ident;
	unsigned asize;
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *d;
	Dwarf_Off off = 0, next;

	ident = elf ? (const unsigned char *)elf_getident(elf, NULL) : NULL;
	if (!ident || ident[EI_DATA] != ELFDATA2LSB)
		return; /* pcmon's architectures are little-endian; eh_value reads only that */
	asize = ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	scn = elf_section_named(elf, name, &sh);
	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !d->d_buf)
		return;
	for (; off < d->d_size; off = next) {
		Dwarf_CFI_Entry e, ce;
		const uint8_t *p;
		uint64_t start, len;
		int r = dwarf_next_cfi(ident, d, eh, off, &next, &e), enc = -1;
		size_t i;

		if (r > 0 || (r < 0 && (next == (Dwarf_Off)-1 || next <= off)))
			break;
		if (r < 0 || dwarf_cfi_cie_p(&e))
			continue;
		/* the FDE's CIE, usually one or a few per object: remembered */
		for (i = 0; i < ncies && cies[i].off != e.fde.CIE_pointer; i++)
			;
		if (i < ncies) {
			enc = cies[i].enc;
		} else {
			Dwarf_Off cnext;

			if (!dwarf_next_cfi(ident, d, eh, e.fde.CIE_pointer, &cnext, &ce) &&
			    dwarf_cfi_cie_p(&ce))
				enc = eh ? cie_fde_encoding(&ce.cie, asize) : DW_EH_PE_absptr;
			if (ncies < ARRAY_SIZE(cies))
				cies[ncies++] = (typeof(cies[0])){ e.fde.CIE_pointer, enc };
		}
		p = e.fde.start;
		if (enc < 0 || !eh_value(&p, e.fde.end, enc, asize, &start) ||
		    !eh_value(&p, e.fde.end, enc & 0x0f, asize, &len) || !len)
			continue;
		if ((enc & 0x70) == DW_EH_PE_pcrel)
			start += sh.sh_addr + (e.fde.start - (const uint8_t *)d->d_buf);
		else if ((enc & 0x70) != DW_EH_PE_absptr)
			continue; /* text- or data-relative: not used for code on Linux */
		if (GROW(*fdes, *cap, *nfdes + 1))
			return;
		(*fdes)[(*nfdes)++] = (struct fde_range){ start + adj, start + len + adj };
	}
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* @m's table of FDE code ranges, from .eh_frame and .debug_frame: built on first use. */
void smod_read_fdes(struct smod *m)
{
	GElf_Addr bias, dbias;
	Dwarf *dw;
	size_t cap = 0;
	Elf *elf;

	if (m->fdes_read || !m->mod)
		return;
	m->fdes_read = true;
	elf = dwfl_module_getelf(m->mod, &bias);
	read_fdes_of(&m->fdes, &m->nfdes, elf, ".eh_frame", true, 0, &cap);
	/* .debug_frame may be in separate debug info, whose addresses may differ by a bias */
	dw = dwfl_module_getdwarf(m->mod, &dbias);
	m->dw_asked = true;
	if (dw && dwarf_getelf(dw))
		read_fdes_of(&m->fdes, &m->nfdes, dwarf_getelf(dw), ".debug_frame", false,
			     (int64_t)(dbias - bias), &cap);
	if (m->nfdes)
		qsort(m->fdes, m->nfdes, sizeof(*m->fdes), fde_cmp);
}

/*
 * The code ranges of @m's .eh_frame FDEs alone, sorted, in *@out (the caller frees them):
 * their number. Its separate debug info is not read for them.
 */
size_t smod_eh_fdes(struct smod *m, struct fde_range **out)
{
	size_t n = 0, cap = 0;
	GElf_Addr bias;

	*out = NULL;
	if (!m->mod)
		return 0;
	read_fdes_of(out, &n, dwfl_module_getelf(m->mod, &bias), ".eh_frame", true, 0, &cap);
	if (n)
		qsort(*out, n, sizeof(**out), fde_cmp);
	return n;
}

/*
 * The start of the function that @m's call-frame information says covers @vaddr (an ELF
 * vaddr of the object): the initial location of the FDE whose range holds it. The FDE,
 * not the CFI row (dwarf_frame_info gives only the row's range), as a row starts after
 * every push and pop. false when no FDE covers @vaddr.
 */
static bool cfi_function_start(struct smod *m, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	size_t lo;

	smod_read_fdes(m);
	lo = sym_count_starting_by(m->fdes, m->nfdes, sizeof(*m->fdes), vaddr);
	/* FDEs do not overlap: only the last one starting at or below @vaddr can hold it */
	if (!lo || vaddr >= m->fdes[lo - 1].end)
		return false;
	*start = m->fdes[lo - 1].start;
	*end = m->fdes[lo - 1].end;
	return true;
}

/* ---- symbols */

static int esym_cmp(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * @m's symbols (every table libdwfl knows: .symtab, .dynsym, its separate debug file and
 * MiniDebugInfo), sorted, built on first use. dwfl_module_addrinfo() scans every symbol on
 * every call: on node's 100k symbols that is 9 ms per address, seconds of drain time.
 */
/* The slot in @m->secs of section [@start, @end), added if new; UINT32_MAX if it cannot be. */
static uint32_t sec_slot(struct smod *m, uint64_t start, uint64_t end, size_t *cap)
{
	/* (few: the sections labels are in, .text, .plt and their like) */
	for (uint32_t i = m->nsecs; i-- > 0;)
		if (m->secs[i].start == start && m->secs[i].end == end)
			return i;
	if (GROW(m->secs, *cap, (size_t)m->nsecs + 1))
		return UINT32_MAX;
	m->secs[m->nsecs] = (struct esec){ start, end };
	return m->nsecs++;
}

/* The end of @e: a label has no extent. */
static uint64_t esym_end(const struct esym *e)
{
	return e->start + (e->sized ? e->size : 0);
}

/*
 * Is the section of symbol @sym (of @elf) code? Data symbols (STT_OBJECT) name no sampled
 * address unless they are in code: a large library has tens of thousands, left out.
 */
static bool in_code(Elf *elf, GElf_Word shndx)
{
	Elf_Scn *scn;
	GElf_Shdr sh;

	return shndx < SHN_LORESERVE && elf && (scn = elf_getscn(elf, shndx)) &&
	       gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR);
}

static void read_syms(struct smod *m)
{
	size_t cap = 0, cap_secs = 0;
	int n;

	if (m->syms_read || !m->mod)
		return;
	m->syms_read = true;
	n = dwfl_module_getsymtab(m->mod);
	m->first_global = dwfl_module_getsymtab_first_global(m->mod);
	for (int i = 1; i < n; i++) {
		static const uint8_t binds[] = { [STB_LOCAL] = 1, [STB_GLOBAL] = 3,
						 [STB_WEAK] = 2 };
		GElf_Sym sym;
		GElf_Addr addr, sbias;
		GElf_Word shndx;
		GElf_Shdr sh;
		Elf_Scn *scn;
		Elf *elf;
		const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, &elf,
							   &sbias);
		int type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
		uint32_t slot = 0;
		struct esym *e;

		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS || addr < m->bias ||
		    (unsigned)i >= 1u << 29 || sym.st_size > UINT32_MAX)
			continue;
		if ((type == STT_OBJECT || type == STT_COMMON) && !in_code(elf, shndx))
			continue;
		/* a symbol without a size reaches no further than its section */
		if (!sym.st_size) {
			if (shndx >= SHN_LORESERVE || !elf || !(scn = elf_getscn(elf, shndx)) ||
			    !gelf_getshdr(scn, &sh))
				slot = sec_slot(m, 0, 0, &cap_secs);
			else
				slot = sec_slot(m, sh.sh_addr + sbias - m->bias,
						sh.sh_addr + sbias - m->bias + sh.sh_size, &cap_secs);
			if (slot == UINT32_MAX)
				break;
		}
		if (GROW(m->syms, cap, m->nsyms + 1))
			break;
		e = &m->syms[m->nsyms++];
		*e = (struct esym){
			.start = addr - m->bias,
			.name = name,
			.size = sym.st_size ? (uint32_t)sym.st_size : slot,
			.sized = sym.st_size != 0,
			.idx = i,
			.bind = bind < (int)sizeof(binds) ? binds[bind] : 0,
		};
	}
	if (m->nsyms) /* qsort() must not be given a null table, even an empty one */
		qsort(m->syms, m->nsyms, sizeof(*m->syms), esym_cmp);
	for (size_t i = 0; i < m->nsyms; i++)
		m->syms[i].reach = MAX(esym_end(&m->syms[i]), i ? m->syms[i - 1].reach : 0);
}

/* How public a name looks: fewer leading underscores, then a default version ("free@@GLIBC",
 * or none) over a compatibility one ("cfree@GLIBC"); higher is more public. */
static int publicness(const char *name)
{
	const char *at = strchr(name, '@');
	int u = 0;

	while (name[u] == '_')
		u++;
	return -2 * u - (at && at[1] != '@');
}

/*
 * Is @e, met after @best in libdwfl's table order, the better name for an address both
 * hold? The closer start, else the stronger binding, else (same start) the smaller size,
 * else the name users know: aliases of one function ("free" and "__libc_free") differ only
 * in how public they look (publicness()).
 */
static bool esym_better(const struct esym *e, const struct esym *best)
{
	if (!best)
		return true;
	if (best->start < e->start || best->bind < e->bind)
		return true;
	if (best->start == e->start && esym_end(best) == esym_end(e) && best->bind == e->bind)
		return publicness(e->name) > publicness(best->name);
	return best->start == e->start &&
	       ((esym_end(best) > esym_end(e) && best->bind <= e->bind) ||
		(esym_end(best) >= esym_end(e) && best->bind < e->bind));
}

/*
 * The symbol that covers @vaddr, chosen as dwfl_module_addrinfo() chooses, so names do not
 * change with the lookup: among symbols whose [start, end) holds it the global and weak
 * ones first, then the local ones (esym_better() decides, in table order); without one,
 * the closest symbol without a size below it in the same section, above the end of every
 * sized symbol below it (hand-written assembly). NULL if none.
 */
static const char *sym_name_at(struct smod *m, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	enum { MAXC = 64 };
	const struct esym *cand[MAXC], *best = NULL;
	size_t lo, nc = 0;
	bool found_global;
	uint64_t min_label;

	read_syms(m);
	lo = sym_count_starting_by(m->syms, m->nsyms, sizeof(*m->syms), vaddr);
	if (!lo)
		return NULL;
	/* symbols at or below @vaddr, while one of them may still reach it */
	for (size_t i = lo; i-- > 0 && m->syms[i].reach > vaddr && nc < MAXC;)
		if (esym_end(&m->syms[i]) > vaddr)
			cand[nc++] = &m->syms[i];
	/* in table order (few: insertion sort), globals, then locals if no global holds it */
	for (size_t c = 1; c < nc; c++)
		for (size_t k = c; k > 0 && cand[k - 1]->idx > cand[k]->idx; k--) {
			const struct esym *t = cand[k];

			cand[k] = cand[k - 1];
			cand[k - 1] = t;
		}
	for (size_t c = 0; c < nc; c++)
		if ((int)cand[c]->idx >= m->first_global && esym_better(cand[c], best))
			best = cand[c];
	found_global = best;
	for (size_t c = 0; c < nc && !found_global; c++)
		if ((int)cand[c]->idx < m->first_global && esym_better(cand[c], best))
			best = cand[c];
	if (best) {
		*start = best->start;
		*end = esym_end(best);
		return best->name;
	}
	min_label = m->syms[lo - 1].reach;
	for (size_t i = lo; i-- > 0 && m->syms[i].start >= min_label;) {
		const struct esym *e = &m->syms[i];

		if (e->sized || vaddr < m->secs[e->size].start || vaddr >= m->secs[e->size].end)
			continue;
		if (best && best->start != e->start)
			break;
		if (!best || e->bind > best->bind)
			best = e;
	}
	return best ? best->name : NULL; /* a label: no extent */
}

/* The line in the caller where the inlined call @die was made: DW_AT_call_file/_line. */
static struct sym_line die_call_site(struct sym *s, Dwarf_Die *die)
{
	struct sym_line where = { 0, 0 };
	Dwarf_Attribute a;
	Dwarf_Files *files;
	Dwarf_Word w;
	Dwarf_Die cu;
	size_t nfiles;
	const char *f;

	if (dwarf_attr(die, DW_AT_call_line, &a) && !dwarf_formudata(&a, &w))
		where.line = w;
	/* the file is an index into the line table's files of the DIE's own unit */
	if (dwarf_attr(die, DW_AT_call_file, &a) && !dwarf_formudata(&a, &w) &&
	    dwarf_diecu(die, &cu, NULL, NULL) && !dwarf_getsrcfiles(&cu, &files, &nfiles) &&
	    w < nfiles && (f = dwarf_filesrc(files, w, NULL, NULL)))
		where.file = sym_str_id(s, f);
	return where;
}

/*
 * Frames for address @a of module @m (dwfl address space), innermost first. The innermost
 * frame is at the line of @a; each frame outside an inlined callee is at the callee's call
 * site. With SYM_NO_INLINE only the function that holds the code is kept, at the line of
 * the outermost call site: where its own code stands.
 */
int names_symbolize(struct sym *s, struct smod *m, Dwarf_Addr a, struct sym_loc *l)
{
	const char *name, *file, *decl_file = NULL;
	Dwarf_Die *scopes = NULL, *chain = NULL, *cu;
	struct sym_line where = { 0, 0 };
	char cfi_name[32];
	uint64_t start;
	Dwarf_Addr bias;
	Dwfl_Line *ln;
	int nchain = 0, line = 0, decl_line = 0, r;
	uint64_t lo = 0, hi = 0; /* the function's code, in the object's vaddrs */

	ln = dwfl_module_getsrc(m->mod, a);
	if (ln) {
		file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
		where.file = file ? sym_str_id(s, file) : 0;
		where.line = line > 0 ? line : 0;
	}
	l->file = where.file;
	l->line = where.line;
	name = sym_name_at(m, a - m->bias, &lo, &hi);

	/*
	 * dwarf_getscopes() gives the innermost scope, but above an inlined instance it goes on
	 * with the scopes of the callee's abstract definition; the DIEs that physically hold
	 * the code (each inlined call inside its caller, up to the subprogram) come from
	 * dwarf_getscopes_die() on that innermost scope.
	 */
	cu = dwfl_module_addrdie(m->mod, a, &bias);
	m->dw_asked = true;
	if (cu && dwarf_getscopes(cu, a - bias, &scopes) > 0)
		nchain = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0; i < nchain; i++) {
		int tag = dwarf_tag(&chain[i]), iline = 0;

		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr dlo, dhi;

			decl_file = dwarf_decl_file(&chain[i]);
			dwarf_decl_line(&chain[i], &decl_line);
			if (!name) {
				name = die_name(&chain[i]);
				if (!dwarf_lowpc(&chain[i], &dlo) && !dwarf_highpc(&chain[i], &dhi))
					lo = dlo + bias - m->bias, hi = dhi + bias - m->bias;
			}
			break;
		}
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (!(s->flags & SYM_NO_INLINE)) {
			dwarf_decl_line(&chain[i], &iline);
			r = sym_push_frame(s, sym_str(s, m->name), die_name(&chain[i]),
					   dwarf_decl_file(&chain[i]), iline, where);
			if (r)
				goto out;
		}
		where = die_call_site(s, &chain[i]);
	}
	/* no symbol and no DWARF: the function that the call-frame information knows */
	if (!name && cfi_function_start(m, a - m->bias, &start, &hi)) {
		snprintf(cfi_name, sizeof(cfi_name), SYM_CFI_NAME_PREFIX "%" PRIx64, start);
		name = cfi_name;
		lo = start;
	}
	r = sym_push_frame(s, sym_str(s, m->name), name, decl_file, decl_line, where);
	if (!r && hi > lo && !s->procs[s->frames[s->nframes - 1]].hi)
		sym_set_proc_extent(s, s->frames[s->nframes - 1], lo, hi);
out:
	free(chain);
	free(scopes);
	return r;
}

/*
 * The location (@module, @addr), symbolized on first sight from the object's file at @a
 * (libdwfl's address of it); unnamed if the object is not open, or there is none
 * (SYM_MOD_UNKNOWN).
 */
uint32_t names_loc(struct sym *s, uint32_t module, uint64_t addr, Dwarf_Addr a)
{
	struct smod *m = &s->mods[module];
	uint32_t loc;

	if (sym_loc_new(s, module, addr, &loc) > 0) {
		if (m->mod)
			names_symbolize(s, m, a, &s->locs[loc]);
		sym_loc_done(s, loc, NULL);
	}
	return loc;
}
