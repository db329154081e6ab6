// SPDX-License-Identifier: GPL-2.0-only
/*
 * Call-frame information for the unwinder (unw_), cached per object, and debug info that
 * arrives after its object was opened (dbginfo.c): the object's locations named again.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "dbginfo.h"
#include "sym_int.h"

/* The object's call-frame information, read once (libdwfl owns and caches it). */
static void module_cfi(struct smod *m)
{
	if (m->cfi_tried || !m->mod)
		return;
	m->cfi_tried = true;
	m->eh_cfi = dwfl_module_eh_cfi(m->mod, &m->eh_bias);
	m->dbg_cfi = dwfl_module_dwarf_cfi(m->mod, &m->dbg_bias);
	m->dw_asked = true;
}

/*
 * The CFI frames the unwinder asked for, by address. A build's compilers, sampled 100 times
 * a second, unwind through the same few thousand return addresses, and libdw finds the FDE
 * and runs its instructions again each time. Kept while the module is open (a frame points
 * into its CFI: the module drops them with its other tables, smod_drop_tables()), at most
 * CFI_CACHE_MAX a module, then begun again.
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
		c->frame = NULL;
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
	if (m->dbg_cfi && !dwarf_cfi_addrframe(m->dbg_cfi, vaddr + m->bias - m->dbg_bias, &frame))
		return frame;
	return NULL;
}

int sym_cfi_frame(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, Dwarf_Frame **frame)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, pc);
	uint64_t vaddr, now;
	struct cfi_slot *c;
	struct jitmap *j;
	struct smod *m;
	bool fresh;

	*frame = NULL;
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
		c->frame = cfi_lookup(m, vaddr);
	*frame = c->frame;
	if (!*frame) {
		m->unwind_misses++;
		return -ENOENT;
	}
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
