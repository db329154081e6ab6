// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer's base, its tables: strings, procedures, locations and the frames of each
 * (inline chains), modules; its stats. The other sym*.c fill them (sym_int.h), and it calls
 * none of them.
 */
#include <errno.h>
#include <malloc.h>

#include "demangle.h"
#include "sym_int.h"

/*
 * Names come from whatever the machine runs: a symbol table or a file name in Latin-1, an
 * object read while a build still writes it. What is not printable UTF-8 is kept with '?'
 * in its place, so that every listing, export and page is valid UTF-8 (a system-wide
 * listing beside a build once held a 0xf7 byte, and JSON readers refused the whole of it).
 */
int sym_intern_str(struct sym *s, const char *str, uint32_t *id)
{
	size_t len;
	char *fixed;
	int r;

	str = str ? str : "";
	len = strlen(str);
	if (str_printable(str, len))
		return itab_str(s->strs, str, id) < 0 ? -ENOMEM : 0;
	if (!(fixed = strdup(str)))
		return -ENOMEM;
	str_sanitize(fixed, len);
	r = itab_str(s->strs, fixed, id) < 0 ? -ENOMEM : 0;
	free(fixed);
	return r;
}

const char *sym_str(const struct sym *s, uint32_t id)
{
	const char *p = itab_key(s->strs, id, NULL);

	return p ? p : "";
}

uint32_t sym_str_id(struct sym *s, const char *str)
{
	uint32_t id = 0;

	sym_intern_str(s, str, &id);
	return id;
}

int sym_add_module(struct sym *s, const char *path, const char *name, uint32_t *id)
{
	if (GROW(s->mods, s->cap_mods, s->nmods + 1))
		return -ENOMEM;
	s->mods[s->nmods] = (struct smod){ .path = strdup(path), .name = sym_str_id(s, name) };
	*id = s->nmods++;
	return 0;
}

/* ---- procedures and locations */

int sym_intern_proc(struct sym *s, const char *module, const char *name, const char *file,
		    uint32_t line, uint32_t *proc)
{
	uint32_t key[2], fid;
	struct sym_procinfo *pi;
	const char *sep;
	char *full;
	int r;

	/* the names may live in our own string table, which interning can move: ids first */
	key[0] = sym_str_id(s, module);
	key[1] = sym_str_id(s, name);
	fid = file ? sym_str_id(s, file) : 0;
	r = itab_intern(s->proc_keys, key, sizeof(key), proc);
	if (r <= 0)
		return r;
	if (GROW(s->procs, s->cap_procs, *proc + 1))
		return -ENOMEM;
	module = sym_str(s, key[0]);
	name = sym_str(s, key[1]);
	/* "module.procedure"; a name made from call-frame information reads "module+0xSTART" */
	sep = !module[0] || !strncmp(name, SYM_CFI_NAME_PREFIX, strlen(SYM_CFI_NAME_PREFIX)) ?
		      "" :
		      ".";
	if (asprintf(&full, "%s%s%s", module, sep, name[0] ? name : "?") < 0)
		return -ENOMEM;
	pi = &s->procs[*proc];
	*pi = (struct sym_procinfo){ .module = key[0], .name = key[1], .line = line, .file = fid };
	pi->full = sym_str_id(s, full);
	free(full);
	/* a C++ name as a pattern writes it: no parameters (the string table may move) */
	name = sym_str(s, key[1]);
	if (strpbrk(name, "( ") && (full = malloc(strlen(name) + 1))) {
		uint32_t base = dm_base(name, full, strlen(name) + 1) ? sym_str_id(s, full) : 0;

		s->procs[*proc].base = base;
		free(full);
	}
	s->st.procs++;
	return 0;
}

void sym_set_proc_extent(struct sym *s, uint32_t proc, uint64_t lo, uint64_t hi)
{
	if (proc < itab_count(s->proc_keys)) {
		s->procs[proc].lo = lo;
		s->procs[proc].hi = hi;
	}
}

void sym_set_proc_file(struct sym *s, uint32_t proc, const char *file, uint32_t line)
{
	uint32_t fid;

	if (proc >= itab_count(s->proc_keys) || s->procs[proc].file || !file)
		return;
	fid = sym_str_id(s, file);
	s->procs[proc].file = fid;
	s->procs[proc].line = line;
}

const struct sym_procinfo *sym_proc(const struct sym *s, uint32_t proc)
{
	return proc < itab_count(s->proc_keys) ? &s->procs[proc] : NULL;
}

uint32_t sym_nprocs(const struct sym *s)
{
	return itab_count(s->proc_keys);
}

const struct sym_loc *sym_loc(const struct sym *s, uint32_t loc)
{
	return loc < itab_count(s->loc_keys) ? &s->locs[loc] : NULL;
}

const uint32_t *sym_frames(const struct sym *s, const struct sym_loc *l)
{
	return s->frames + l->first;
}

const struct sym_line *sym_frame_lines(const struct sym *s, const struct sym_loc *l)
{
	return s->flines + l->first;
}

/* Memory the heap holds now (malloc's own count), all of it: the budget's measure. */
uint64_t sym_heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

uint64_t sym_names_bytes(const struct sym *s)
{
	return itab_bytes(s->strs) + itab_bytes(s->proc_keys) + itab_bytes(s->loc_keys) +
	       s->cap_procs * sizeof(*s->procs) + s->cap_locs * sizeof(*s->locs) +
	       s->cap_frames * sizeof(*s->frames) + s->cap_flines * sizeof(*s->flines);
}

void sym_stats(const struct sym *s, struct sym_stats *st)
{
	*st = s->st;
	st->locs = itab_count(s->loc_keys);
	st->pmaps = itab_count(s->pmap_keys);
	st->modules = s->nmods;
	st->names_bytes = sym_names_bytes(s);
	st->objects_bytes = itab_bytes(s->mod_keys) + s->cap_mods * sizeof(*s->mods) +
			    itab_bytes(s->pmap_keys) + s->cap_pmaps * sizeof(*s->pmaps) +
			    itab_bytes(s->files) + s->cap_file_mod * sizeof(*s->file_mod);
	for (size_t i = 0; i < s->nmods; i++) {
		const struct smod *m = &s->mods[i];

		st->objects_open += m->dwfl != NULL;
		/* (a row kept as libdw's frame: about 300 bytes more, libdw's) */
		for (uint32_t k = 0; k < m->nrules; k++)
			st->objects_bytes += m->rules[k].frame ? 300 : 0;
		st->objects_bytes += m->cfi_cap * sizeof(*m->cfi_cache) +
				     m->rules_cap * sizeof(*m->rules) +
				     (m->rule_keys ? itab_bytes(m->rule_keys) : 0) +
				     m->nsyms * sizeof(*m->syms) + m->nsecs * sizeof(*m->secs) +
				     m->nfdes * sizeof(*m->fdes) +
				     m->nloads * sizeof(*m->loads);
	}
	for (uint32_t i = 0; i < itab_count(s->pmap_keys); i++)
		st->objects_bytes += s->pmaps[i].cap * sizeof(*s->pmaps[i].r);
	st->heap_bytes = sym_heap_in_use();
}

/*
 * Append a frame to the pool: procedure (@module, @name) declared at @file:@line, and the
 * frame's own position @where (the pc's line, or the call site of the inlined callee).
 * Callers pass names that may point into our own string table (module names, kernel
 * symbols), which interning can move: work on copies.
 */
int sym_push_frame(struct sym *s, const char *module, const char *name, const char *file,
		   uint32_t line, struct sym_line where)
{
	char *m = strdup(module), *n = NULL, *f = file ? strdup(file) : NULL, *at;
	uint32_t proc;
	int r = -ENOMEM;

	if (name) {
		/* dynsym names carry their version ("clock_gettime@@GLIBC_2.17"): drop it */
		at = strchr(name, '@');
		n = at && at != name ? strndup(name, at - name) : strdup(name);
		/* C++ and Rust names as people read them */
		if (n && dm_is_mangled(n)) {
			char *d = dm_demangle(n);

			if (d) {
				free(n);
				n = d;
			}
		}
	}
	if (m && (n || !name) && (f || !file))
		r = sym_intern_proc(s, m, n, f, line, &proc);
	free(m);
	free(n);
	free(f);
	if (r || GROW(s->frames, s->cap_frames, s->nframes + 1) ||
	    GROW(s->flines, s->cap_flines, s->nframes + 1))
		return -ENOMEM;
	s->flines[s->nframes] = where;
	s->frames[s->nframes++] = proc;
	return 0;
}

/*
 * In a table sorted by a uint64_t first member (a start address), how many entries start at
 * or below @v: the one that may cover @v, if any, is the last of them.
 */
_Static_assert(offsetof(struct fde_range, start) == 0 && offsetof(struct esym, start) == 0 &&
		       offsetof(struct jit_sym, start) == 0 && offsetof(struct ksym, addr) == 0,
	       "sym_count_starting_by() reads the start at the front of each entry");

size_t sym_count_starting_by(const void *table, size_t n, size_t size, uint64_t v)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t start;

		memcpy(&start, (const char *)table + mid * size, sizeof(start));
		if (start <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- locations */

/* What identifies a location in loc_keys: (module, address). */
struct loc_key {
	uint64_t addr;
	uint32_t module, pad;
};

/* The location (@module, @addr) if it is known, else -1. */
int64_t sym_loc_find(const struct sym *s, uint32_t module, uint64_t addr)
{
	struct loc_key key = { addr, module, 0 };

	return itab_find(s->loc_keys, &key, sizeof(key));
}

/*
 * The location (@module, @addr) in *@loc: 1 if it is new, its frames to come (sym_push_frame(),
 * then sym_loc_done()), 0 if it was known; -ENOMEM and *@loc 0 (the first location stands in).
 */
int sym_loc_new(struct sym *s, uint32_t module, uint64_t addr, uint32_t *loc)
{
	struct loc_key key = { addr, module, 0 };
	int r = itab_intern(s->loc_keys, &key, sizeof(key), loc);

	if (r < 0 || (r && GROW(s->locs, s->cap_locs, *loc + 1))) {
		*loc = 0;
		return -ENOMEM;
	}
	if (r)
		s->locs[*loc] =
			(struct sym_loc){ .module = module, .addr = addr, .first = s->nframes };
	return r;
}

/*
 * A new location's frames are those pushed since sym_loc_new(); with none, one named @name
 * (NULL: nothing covers it).
 */
void sym_loc_done(struct sym *s, uint32_t loc, const char *name)
{
	struct sym_loc *l = &s->locs[loc];

	l->nframes = s->nframes - l->first;
	if (!l->nframes) {
		sym_push_frame(s, sym_str(s, s->mods[l->module].name), name, NULL, 0,
			       (struct sym_line){ 0, 0 });
		l->nframes = 1;
	}
}

int sym_intern_loc(struct sym *s, const char *module, uint64_t addr, const char *const *procs,
		   const char *const *files, const uint32_t *lines, size_t n, uint32_t *loc)
{
	struct mod_key mkey = { UINT64_MAX, hash_bytes(module, strlen(module)), 0, 0 };
	struct sym_loc *l;
	uint32_t mod;
	int r;

	if (!strcmp(module, "kernel")) {
		mod = SYM_MOD_KERNEL;
	} else if (!module[0]) {
		mod = SYM_MOD_UNKNOWN;
	} else {
		r = itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod);
		if (r < 0)
			return r;
		mod += SYM_MOD_KERNEL + 1;
		if (r == 1 && sym_add_module(s, module, module, &mod))
			return -ENOMEM;
	}
	r = sym_loc_new(s, mod, addr, loc);
	if (r <= 0)
		return r;
	l = &s->locs[*loc];
	for (size_t i = 0; i < n; i++) {
		struct sym_line where = {
			.file = files && files[i] ? sym_str_id(s, files[i]) : 0,
			.line = lines ? lines[i] : 0,
		};

		if (sym_push_frame(s, module, procs[i], NULL, 0, where))
			return -ENOMEM;
	}
	if (!n && sym_push_frame(s, module, NULL, NULL, 0, (struct sym_line){ 0, 0 }))
		return -ENOMEM;
	l->nframes = s->nframes - l->first;
	/* the location's own line is its innermost frame's */
	l->file = s->flines[l->first].file;
	l->line = s->flines[l->first].line;
	return 0;
}

int sym_module_info(const struct sym *s, uint32_t module, struct sym_module_info *out)
{
	const struct smod *m;

	if (module >= s->nmods)
		return -ENOENT;
	m = &s->mods[module];
	*out = (struct sym_module_info){
		.path = m->path,
		.name = sym_str(s, m->name),
		.opened = m->mod != NULL || m->closed, /* (closed: it was) */
		.eh_frame = m->eh_cfi != NULL,
		.debug_frame = m->dbg_cfi != NULL,
		.cfi_known = m->cfi_tried,
		.unwinds = m->unwinds,
		.unwind_misses = m->unwind_misses,
		.usdt = m->usdt,
	};
	if (m->mod) {
		GElf_Addr v;
		int n = dwfl_module_build_id(m->mod, &out->build_id, &v);

		out->build_id_len = n > 0 ? n : 0;
		if (n <= 0)
			out->build_id = NULL;
	} else if (m->bid_len) {
		out->build_id = m->bid; /* (closed: as it was read) */
		out->build_id_len = m->bid_len;
	}
	return 0;
}

uint32_t sym_nmodules(const struct sym *s)
{
	return s->nmods;
}

void sym_set_proc_source(struct sym *s, const struct sym_proc_source *src)
{
	s->src = *src;
}

void sym_set_dbginfo(struct sym *s, struct dbginfo *d)
{
	s->dbg = d;
}
