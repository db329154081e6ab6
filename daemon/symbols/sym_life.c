// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer made and freed. sym_new() makes the base's tables (sym.c); sym_free() frees
 * them and what every part built on them: objects, their tables and cached CFI frames, perf
 * maps, address maps, kallsyms. It stands on top of the parts (sym_int.h).
 */
#include <stdlib.h>
#include <unistd.h>

#include "sym_int.h"

struct sym *sym_new(unsigned flags)
{
	struct sym *s = calloc(1, sizeof(*s));
	uint32_t id;

	if (!s)
		return NULL;
	s->flags = flags;
	s->idle_ns = SYM_IDLE_NS;
	s->heap_budget = SYM_HEAP_BUDGET;
	s->strs = itab_new();
	s->mod_keys = itab_new();
	s->proc_keys = itab_new();
	s->loc_keys = itab_new();
	s->pmap_keys = itab_new();
	s->files = itab_new();
	if (!s->strs || !s->mod_keys || !s->proc_keys || !s->loc_keys || !s->pmap_keys ||
	    !s->files)
		goto fail;
	if (sym_intern_str(s, "", &id) || sym_add_module(s, "", "", &id) ||
	    sym_add_module(s, "[kernel]", "kernel", &id))
		goto fail;
	return s;
fail:
	sym_free(s);
	return NULL;
}

void sym_free(struct sym *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++) {
		smod_drop_tables(&s->mods[i]);
		if (s->mods[i].pin)
			close(s->mods[i].pin_fd);
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].path);
		free(s->mods[i].loads);
		if (s->mods[i].jit) {
			if (s->mods[i].jit->fd >= 0)
				close(s->mods[i].jit->fd);
			free(s->mods[i].jit->syms);
			free(s->mods[i].jit->names);
			free(s->mods[i].jit->pending);
			free(s->mods[i].jit);
		}
	}
	for (uint32_t i = 0; s->pmap_keys && i < itab_count(s->pmap_keys); i++)
		free(s->pmaps[i].r);
	itab_free(s->strs);
	itab_free(s->mod_keys);
	itab_free(s->proc_keys);
	itab_free(s->loc_keys);
	itab_free(s->pmap_keys);
	itab_free(s->files);
	free(s->file_mod);
	free(s->mods);
	free(s->procs);
	free(s->locs);
	free(s->frames);
	free(s->flines);
	free(s->pmaps);
	free(s->ksyms);
	free(s);
}
