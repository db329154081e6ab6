// SPDX-License-Identifier: GPL-2.0-only
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dbginfo.h"
#include "sym.h"
#include "util.h"

struct smod {
	char *path;		/* as mapped */
	uint32_t name;		/* string id of the basename */
	Dwfl *dwfl;		/* NULL until opened; one module reported at its own vaddrs */
	Dwfl_Module *mod;
	GElf_Addr bias;
	bool tried;
	bool usdt;		/* has pcmon's critical-section probes */
	bool cfi_tried;
	Dwarf_CFI *eh_cfi, *dbg_cfi;	/* call-frame information, owned by dwfl */
	Dwarf_Addr eh_bias, dbg_bias;
	uint64_t unwinds, unwind_misses; /* frames unwound with its CFI, and without */
	GElf_Phdr *loads;	/* PT_LOAD headers, to turn file offsets into vaddrs */
	size_t nloads;
};

struct region {
	uint64_t start, end, pgoff;
	uint32_t module;
};

struct pmap {
	struct region *r;
	size_t n, cap;
	bool final;
	uint64_t read_ns;	/* when /proc/PID/maps was last read */
};

struct ksym {
	uint64_t addr;
	uint32_t name;
};

struct sym {
	unsigned flags;
	struct itab *strs;	/* strings; id 0 is "" */
	struct itab *mod_keys;	/* (dev, ino, path) -> module id */
	struct smod *mods;
	size_t nmods, cap_mods;
	struct itab *proc_keys; /* (module str, name str) -> proc id */
	struct sym_procinfo *procs;
	size_t cap_procs;
	struct itab *loc_keys;	/* (module, addr) -> loc id */
	struct sym_loc *locs;
	size_t cap_locs;
	uint32_t *frames;
	size_t nframes, cap_frames;
	struct itab *pmap_keys; /* (pid, epoch) -> pmap */
	struct pmap *pmaps;
	size_t cap_pmaps;
	struct ksym *ksyms;	/* sorted */
	size_t nksyms;
	bool ksyms_loaded;
	struct sym_stats st;
	struct dbginfo *dbg;	/* debug info from debuginfod servers, or NULL (dbginfo.h) */
};

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

int sym_intern_str(struct sym *s, const char *str, uint32_t *id)
{
	return itab_str(s->strs, str ? str : "", id) < 0 ? -ENOMEM : 0;
}

const char *sym_str(const struct sym *s, uint32_t id)
{
	const char *p = itab_key(s->strs, id, NULL);

	return p ? p : "";
}

static uint32_t str_id(struct sym *s, const char *str)
{
	uint32_t id = 0;

	sym_intern_str(s, str, &id);
	return id;
}

static int add_module(struct sym *s, const char *path, const char *name, uint32_t *id)
{
	if (GROW(s->mods, s->cap_mods, s->nmods + 1))
		return -ENOMEM;
	s->mods[s->nmods] = (struct smod){ .path = strdup(path), .name = str_id(s, name) };
	*id = s->nmods++;
	return 0;
}

struct sym *sym_new(unsigned flags)
{
	struct sym *s = calloc(1, sizeof(*s));
	uint32_t id;

	if (!s)
		return NULL;
	s->flags = flags;
	s->strs = itab_new();
	s->mod_keys = itab_new();
	s->proc_keys = itab_new();
	s->loc_keys = itab_new();
	s->pmap_keys = itab_new();
	if (!s->strs || !s->mod_keys || !s->proc_keys || !s->loc_keys || !s->pmap_keys)
		goto fail;
	if (sym_intern_str(s, "", &id) || add_module(s, "", "", &id) ||
	    add_module(s, "[kernel]", "kernel", &id))
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
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].path);
		free(s->mods[i].loads);
	}
	for (uint32_t i = 0; s->pmap_keys && i < itab_count(s->pmap_keys); i++)
		free(s->pmaps[i].r);
	itab_free(s->strs);
	itab_free(s->mod_keys);
	itab_free(s->proc_keys);
	itab_free(s->loc_keys);
	itab_free(s->pmap_keys);
	free(s->mods);
	free(s->procs);
	free(s->locs);
	free(s->frames);
	free(s->pmaps);
	free(s->ksyms);
	free(s);
}

/* ---- procedures and locations */

int sym_intern_proc(struct sym *s, const char *module, const char *name, const char *file,
		    uint32_t line, uint32_t *proc)
{
	uint32_t key[2], fid;
	struct sym_procinfo *pi;
	char *full;
	int r;

	/* the names may live in our own string table, which interning can move: ids first */
	key[0] = str_id(s, module);
	key[1] = str_id(s, name);
	fid = file ? str_id(s, file) : 0;
	r = itab_intern(s->proc_keys, key, sizeof(key), proc);
	if (r <= 0)
		return r;
	if (GROW(s->procs, s->cap_procs, *proc + 1))
		return -ENOMEM;
	module = sym_str(s, key[0]);
	name = sym_str(s, key[1]);
	if (asprintf(&full, "%s%s%s", module, module[0] ? "." : "", name[0] ? name : "?") < 0)
		return -ENOMEM;
	pi = &s->procs[*proc];
	*pi = (struct sym_procinfo){ .module = key[0], .name = key[1], .line = line, .file = fid };
	pi->full = str_id(s, full);
	free(full);
	s->st.procs++;
	return 0;
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

const char *sym_module_path(const struct sym *s, uint32_t module)
{
	return module < s->nmods ? s->mods[module].path : "";
}

void sym_stats(const struct sym *s, struct sym_stats *st)
{
	*st = s->st;
	st->locs = itab_count(s->loc_keys);
	st->modules = s->nmods;
}

/*
 * Callers pass names that may point into our own string table (module names, kernel
 * symbols), which interning can move: work on copies.
 */
static int push_frame(struct sym *s, const char *module, const char *name, const char *file,
		      uint32_t line)
{
	char *m = strdup(module), *n = NULL, *f = file ? strdup(file) : NULL, *at;
	uint32_t proc;
	int r = -ENOMEM;

	if (name) {
		/* dynsym names carry their version ("clock_gettime@@GLIBC_2.17"): drop it */
		at = strchr(name, '@');
		n = at && at != name ? strndup(name, at - name) : strdup(name);
	}
	if (m && (n || !name) && (f || !file))
		r = sym_intern_proc(s, m, n, f, line, &proc);
	free(m);
	free(n);
	free(f);
	if (r || GROW(s->frames, s->cap_frames, s->nframes + 1))
		return -ENOMEM;
	s->frames[s->nframes++] = proc;
	return 0;
}

/* ---- ELF objects */

/*
 * The vDSO has no file, but every process gets the same image from the kernel: ours. Copy it
 * into a memfd that libdw can read like any ELF file.
 */
static int vdso_fd(void)
{
	char *maps = read_file("/proc/self/maps", NULL), *line, *save;
	uint64_t start = 0, end = 0;
	int fd = -1;

	for (line = maps ? strtok_r(maps, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "[vdso]") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) == 2)
			break;
	free(maps);
	if (end <= start)
		return -1;
	fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd >= 0 && write(fd, (void *)(uintptr_t)start, end - start) != (ssize_t)(end - start)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Does @elf carry USDT probes of provider "pcmon" (include/pcmon/critical.h)? */
static bool has_pcmon_probes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".note.stapsdt") || !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const char *desc = (const char *)d->d_buf + doff;
			size_t addrs = 3 * (gelf_getclass(elf) == ELFCLASS64 ? 8 : 4);

			/* NT_STAPSDT: pc, base, semaphore, then "provider\0name\0args\0" */
			if (nh.n_type == 3 && nh.n_descsz >= addrs + 6 &&
			    !memcmp(desc + addrs, "pcmon", 6))
				return true;
		}
	}
	return false;
}

static void module_open(struct sym *s, struct smod *m, uint32_t pid, uint64_t start,
			uint64_t end)
{
	char p[4200];
	size_t n;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	m->tried = true;
	/* map_files survives deleted files and other mount namespaces; then the root view */
	snprintf(p, sizeof(p), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = !strcmp(m->path, "[vdso]") ? vdso_fd() : open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(p, sizeof(p), "/proc/%u/root%s", pid, m->path);
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		pr_debug("cannot open %s: %s", m->path, strerror(errno));
		return;
	}
	m->dwfl = dwfl_begin(s->dbg ? dbginfo_callbacks() : &dwfl_cbs);
	if (!m->dwfl) {
		close(fd);
		return;
	}
	/* libdwfl takes ownership of fd */
	m->mod = dwfl_report_elf(m->dwfl, sym_str(s, m->name), m->path, fd, 0, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	dbginfo_attach(s->dbg, m->mod);
	if (!m->mod) {
		pr_debug("libdw cannot read %s: %s", m->path, dwfl_errmsg(-1));
		return;
	}
	elf = dwfl_module_getelf(m->mod, &m->bias);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		return;
	m->usdt = has_pcmon_probes(elf);
	m->loads = calloc(n ? n : 1, sizeof(*m->loads));
	for (size_t i = 0; m->loads && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->nloads++] = ph;
	}
}

/* File offset -> ELF virtual address; false if no PT_LOAD covers it. */
static bool offset_to_vaddr(const struct smod *m, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < m->nloads; i++) {
		const GElf_Phdr *ph = &m->loads[i];

		if (off >= ph->p_offset && off < ph->p_offset + ph->p_memsz) {
			*vaddr = off - ph->p_offset + ph->p_vaddr;
			return true;
		}
	}
	return false;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

/* Frames for address @a of module @m (dwfl address space), innermost first. */
static int symbolize_elf(struct sym *s, struct smod *m, Dwarf_Addr a, struct sym_loc *l)
{
	const char *name, *file = NULL;
	Dwarf_Die *scopes = NULL, *cu;
	Dwarf_Addr bias;
	GElf_Sym gsym;
	GElf_Off off;
	Dwfl_Line *ln;
	int nscopes = 0, line = 0, r = 0;
	const char *decl_file = NULL;
	int decl_line = 0;

	ln = dwfl_module_getsrc(m->mod, a);
	if (ln) {
		file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
		l->file = file ? str_id(s, file) : 0;
		l->line = line > 0 ? line : 0;
	}
	name = dwfl_module_addrinfo(m->mod, a, &off, &gsym, NULL, NULL, NULL);
	if (name && gsym.st_size && off >= gsym.st_size)
		name = NULL;

	cu = dwfl_module_addrdie(m->mod, a, &bias);
	if (cu)
		nscopes = dwarf_getscopes(cu, a - bias, &scopes);
	for (int i = 0; i < nscopes; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram) {
			decl_file = dwarf_decl_file(&scopes[i]);
			dwarf_decl_line(&scopes[i], &decl_line);
			if (!name)
				name = die_name(&scopes[i]);
			break;
		}
		if (tag != DW_TAG_inlined_subroutine || (s->flags & SYM_NO_INLINE))
			continue;
		{
			const char *ifile = dwarf_decl_file(&scopes[i]);
			int iline = 0;

			dwarf_decl_line(&scopes[i], &iline);
			r = push_frame(s, sym_str(s, m->name), die_name(&scopes[i]), ifile, iline);
			if (r)
				goto out;
			l->nframes++;
		}
	}
	r = push_frame(s, sym_str(s, m->name), name, decl_file, decl_line);
	if (!r)
		l->nframes++;
out:
	free(scopes);
	return r;
}

/* ---- kernel */

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_kallsyms(struct sym *s)
{
	size_t cap = 0;
	char *buf, *line, *save;

	s->ksyms_loaded = true;
	buf = read_file("/proc/kallsyms", NULL);
	if (!buf) {
		pr_warn("cannot read /proc/kallsyms: %s (kernel frames stay unnamed)", strerror(errno));
		return;
	}
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char type, name[256];
		uint64_t addr;

		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'W' && type != 'w')
			continue;
		if (GROW(s->ksyms, cap, s->nksyms + 1))
			break;
		s->ksyms[s->nksyms++] = (struct ksym){ .addr = addr, .name = str_id(s, name) };
	}
	free(buf);
	qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	if (!s->nksyms)
		pr_warn("/proc/kallsyms shows no addresses (kernel.kptr_restrict?): kernel frames stay unnamed");
}

static const char *ksym_name(struct sym *s, uint64_t a)
{
	size_t lo = 0, hi;

	if (!s->ksyms_loaded)
		load_kallsyms(s);
	hi = s->nksyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->ksyms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? sym_str(s, s->ksyms[lo - 1].name) : NULL;
}

/* ---- locations */

static uint32_t make_loc(struct sym *s, uint32_t module, uint64_t addr, uint64_t dwfl_addr)
{
	struct { uint64_t addr; uint32_t module, pad; } key = { addr, module, 0 };
	struct smod *m = &s->mods[module];
	struct sym_loc *l;
	uint32_t id;
	int r;

	r = itab_intern(s->loc_keys, &key, sizeof(key), &id);
	if (r == 0)
		return id;
	if (r < 0 || GROW(s->locs, s->cap_locs, id + 1))
		return 0; /* out of memory: the first location stands in */
	l = &s->locs[id];
	*l = (struct sym_loc){ .module = module, .addr = addr, .first = s->nframes };
	if (module == SYM_MOD_KERNEL)
		push_frame(s, "kernel", ksym_name(s, addr), NULL, 0);
	else if (m->mod)
		symbolize_elf(s, m, dwfl_addr, l);
	else
		push_frame(s, sym_str(s, m->name), NULL, NULL, 0);
	l->nframes = s->nframes - l->first;
	if (!l->nframes) {
		push_frame(s, sym_str(s, m->name), NULL, NULL, 0);
		l->nframes = 1;
	}
	return id;
}

uint32_t sym_kernel(struct sym *s, uint64_t pc, bool call_site)
{
	return make_loc(s, SYM_MOD_KERNEL, pc - call_site, 0);
}

/* ---- process address maps */

static struct pmap *pmap_get(struct sym *s, uint32_t pid, uint32_t epoch, bool create)
{
	uint32_t key[2] = { pid, epoch }, id;
	int64_t f;
	int r;

	if (!create) {
		f = itab_find(s->pmap_keys, key, sizeof(key));
		return f < 0 ? NULL : &s->pmaps[f];
	}
	r = itab_intern(s->pmap_keys, key, sizeof(key), &id);
	if (r < 0 || GROW(s->pmaps, s->cap_pmaps, id + 1))
		return NULL;
	if (r)
		memset(&s->pmaps[id], 0, sizeof(s->pmaps[id]));
	return &s->pmaps[id];
}

int sym_proc_load(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, true);
	char path[64], *buf, *line, *save;

	if (!pm)
		return -ENOMEM;
	if (pm->final)
		return 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	buf = read_file(path, NULL);
	if (!buf)
		return -errno;
	s->st.maps_reads++;
	pm->read_ns = now_ns();
	pm->n = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		uint64_t start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], mf[64];
		int pos = 0;
		/* a file: device and inode, and its change time and size, as inode numbers of
		 * deleted files come back for new ones */
		struct { uint64_t dev, ino, ctime_ns, size; } mkey = { 0 };
		struct stat st;
		const char *file;
		uint32_t mod;
		int r;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start,
			   &end, perms, &pgoff, &maj, &min, &ino, &pos) < 7)
			continue;
		file = line + pos;
		if (!ino && strcmp(file, "[vdso]"))
			continue; /* only file-backed mappings (and the vDSO) name code and strings */
		mkey.dev = ino ? ((uint64_t)maj << 32) | min : UINT64_MAX - 1;
		mkey.ino = ino;
		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
		if (ino && !stat(mf, &st)) {
			mkey.ctime_ns = st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec;
			mkey.size = st.st_size;
		}
		r = itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod);
		if (r < 0)
			break;
		mod += SYM_MOD_KERNEL + 1; /* file modules follow the two fixed ones */
		if (r == 1 && add_module(s, file, basename_of(file), &mod))
			break;
		/* code is read now, while the process lives; data files only if ever asked */
		if (!s->mods[mod].tried && perms[2] == 'x')
			module_open(s, &s->mods[mod], pid, start, end);
		if (GROW(pm->r, pm->cap, pm->n + 1))
			break;
		pm->r[pm->n++] = (struct region){ start, end, pgoff, mod };
	}
	free(buf);
	return 0;
}

void sym_proc_final(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);

	if (pm)
		pm->final = true;
}

static const struct region *pmap_find(const struct pmap *pm, uint64_t pc)
{
	for (size_t i = 0; pm && i < pm->n; i++)
		if (pc >= pm->r[i].start && pc < pm->r[i].end)
			return &pm->r[i];
	return NULL;
}

/* The mapping of @addr in (pid, epoch); a miss re-reads the map of a live process. */
static const struct region *find_region(struct sym *s, uint32_t pid, uint32_t epoch,
					uint64_t addr)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, addr);

	/*
	 * New code mapped since the last look (the libraries right after exec, dlopen): look
	 * again while we can. Not more than once a millisecond: addresses in anonymous memory
	 * (JIT) miss every time.
	 */
	if (!r && (!pm || (!pm->final && now_ns() - pm->read_ns > 1000000))) {
		s->st.maps_misses++;
		if (!sym_proc_load(s, pid, epoch))
			r = pmap_find(pmap_get(s, pid, epoch, false), addr);
	}
	return r;
}

uint32_t sym_user(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site)
{
	const struct region *r = find_region(s, pid, epoch, pc);
	struct smod *m;
	uint64_t vaddr;

	pc -= call_site;
	if (!r)
		return make_loc(s, SYM_MOD_UNKNOWN, pc, 0);
	m = &s->mods[r->module];
	if (!m->mod || !offset_to_vaddr(m, pc - r->start + r->pgoff, &vaddr))
		return make_loc(s, r->module, pc - r->start + r->pgoff, 0);
	return make_loc(s, r->module, vaddr, vaddr + m->bias);
}

int sym_intern_loc(struct sym *s, const char *module, uint64_t addr, const char *const *procs,
		   size_t n, const char *file, uint32_t line, uint32_t *loc)
{
	struct { uint64_t dev, ino, ctime_ns, size; } mkey = { UINT64_MAX, hash_bytes(module, strlen(module)), 0, 0 };
	struct { uint64_t addr; uint32_t module, pad; } lkey;
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
		if (r == 1 && add_module(s, module, module, &mod))
			return -ENOMEM;
	}
	lkey = (typeof(lkey)){ addr, mod, 0 };
	r = itab_intern(s->loc_keys, &lkey, sizeof(lkey), loc);
	if (r <= 0)
		return r;
	if (GROW(s->locs, s->cap_locs, *loc + 1))
		return -ENOMEM;
	l = &s->locs[*loc];
	*l = (struct sym_loc){ .module = mod, .addr = addr, .first = s->nframes, .line = line };
	l->file = file ? str_id(s, file) : 0;
	for (size_t i = 0; i < n; i++)
		if (push_frame(s, module, procs[i], NULL, 0))
			return -ENOMEM;
	if (!n && push_frame(s, module, NULL, NULL, 0))
		return -ENOMEM;
	l->nframes = s->nframes - l->first;
	return 0;
}

void sym_proc_usdt(struct sym *s, uint32_t pid, uint32_t epoch,
		   void (*cb)(void *ctx, const char *path), void *ctx)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	char path[4200];

	for (size_t i = 0; pm && i < pm->n; i++) {
		const struct smod *m = &s->mods[pm->r[i].module];

		if (!m->usdt)
			continue;
		/* the object as this process sees it (it may live in another mount namespace) */
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		cb(ctx, access(path, R_OK) ? m->path : path);
	}
}

bool sym_fd_has_probes(int fd)
{
	Elf *elf;
	bool r;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	r = elf && has_pcmon_probes(elf);
	elf_end(elf);
	return r;
}

bool sym_file_has_probes(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool r;

	if (fd < 0)
		return false;
	r = sym_fd_has_probes(fd);
	close(fd);
	return r;
}

/* Read a NUL-terminated string from an object's file, at ELF virtual address @vaddr. */
static int elf_string(const struct smod *m, uint64_t vaddr, char *buf, size_t len)
{
	GElf_Addr bias;
	Elf *elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	Elf_Scn *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || vaddr < sh.sh_addr ||
		    vaddr >= sh.sh_addr + sh.sh_size || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		off = vaddr - sh.sh_addr;
		n = strnlen((const char *)d->d_buf + off, MIN(len - 1, d->d_size - off));
		memcpy(buf, (const char *)d->d_buf + off, n);
		buf[n] = '\0';
		return 0;
	}
	return -ENOENT;
}

int sym_user_string(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t addr, char *buf,
		    size_t len)
{
	const struct region *r = find_region(s, pid, epoch, addr);
	struct iovec local = { buf, len - 1 }, remote = { (void *)(uintptr_t)addr, len - 1 };
	uint64_t vaddr;

	if (!len)
		return -EINVAL;
	if (r && offset_to_vaddr(&s->mods[r->module], addr - r->start + r->pgoff, &vaddr) &&
	    !elf_string(&s->mods[r->module], vaddr, buf, len))
		return 0;
	/* not in an object file (built at run time): ask the process, if it still lives */
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) > 0) {
		buf[len - 1] = '\0';
		buf[strnlen(buf, len - 1)] = '\0';
		return 0;
	}
	return -ENOENT;
}

/* ---- call-frame information, for unw_ */

int sym_cfi_frame(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, Dwarf_Frame **frame)
{
	const struct region *r = find_region(s, pid, epoch, pc);
	struct smod *m;
	uint64_t vaddr;

	*frame = NULL;
	if (!r)
		return -ENOENT;
	m = &s->mods[r->module];
	if (!m->mod || !offset_to_vaddr(m, pc - r->start + r->pgoff, &vaddr)) {
		m->unwind_misses++;
		return -ENOENT;
	}
	if (!m->cfi_tried) {
		m->cfi_tried = true;
		m->eh_cfi = dwfl_module_eh_cfi(m->mod, &m->eh_bias);
		m->dbg_cfi = dwfl_module_dwarf_cfi(m->mod, &m->dbg_bias);
	}
	/* .eh_frame first (it is what the program unwinds with), then .debug_frame */
	if (m->eh_cfi && !dwarf_cfi_addrframe(m->eh_cfi, vaddr + m->bias - m->eh_bias, frame)) {
		m->unwinds++;
		return 0;
	}
	if (m->dbg_cfi && !dwarf_cfi_addrframe(m->dbg_cfi, vaddr + m->bias - m->dbg_bias, frame)) {
		m->unwinds++;
		return 0;
	}
	m->unwind_misses++;
	return -ENOENT;
}

/* Copy @len bytes of an object's file at ELF virtual address @vaddr. */
static int elf_bytes(const struct smod *m, uint64_t vaddr, void *buf, size_t len)
{
	GElf_Addr bias;
	Elf *elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	Elf_Scn *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || vaddr < sh.sh_addr ||
		    vaddr + len > sh.sh_addr + sh.sh_size || !(d = elf_getdata(scn, NULL)) ||
		    !d->d_buf || vaddr - sh.sh_addr + len > d->d_size)
			continue;
		memcpy(buf, (const char *)d->d_buf + (vaddr - sh.sh_addr), len);
		return 0;
	}
	return -ENOENT;
}

bool sym_thread_entry(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc)
{
	const struct region *r = find_region(s, pid, epoch, pc);
	static const uint8_t syscall_insn[2] = { 0x0f, 0x05 };
	uint8_t code[2];
	uint64_t vaddr;
	struct smod *m;

	if (!r)
		return false;
	m = &s->mods[r->module];
	return m->mod && m->eh_cfi && offset_to_vaddr(m, pc - r->start + r->pgoff, &vaddr) &&
	       !elf_bytes(m, vaddr - 2, code, 2) && !memcmp(code, syscall_insn, 2);
}

int sym_module_info(const struct sym *s, uint32_t module, struct sym_module_info *out)
{
	const struct smod *m;

	if (module >= s->nmods)
		return -ENOENT;
	m = &s->mods[module];
	*out = (struct sym_module_info){
		.path = m->path,
		.opened = m->mod != NULL,
		.eh_frame = m->eh_cfi != NULL,
		.debug_frame = m->dbg_cfi != NULL,
		.cfi_known = m->cfi_tried,
		.unwinds = m->unwinds,
		.unwind_misses = m->unwind_misses,
		.usdt = m->usdt,
	};
	return 0;
}

uint32_t sym_nmodules(const struct sym *s)
{
	return s->nmods;
}

/* Frames of the tracing machinery itself (BPF programs, the tracepoint's call into them). */
bool sym_kernel_is_tracer(struct sym *s, uint64_t pc)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_",
						 "perf_trace_", "trace_call_bpf", "__traceiter_",
						 "bpf_trampoline_" };
	const char *name = ksym_name(s, pc);

	for (size_t i = 0; name && i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* ---- debug info that arrives after its module was opened (dbginfo.c) */

void sym_set_dbginfo(struct sym *s, struct dbginfo *d)
{
	s->dbg = d;
}

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
		dwfl_end(m->dwfl); /* the CFI came from it: read again on next use */
		m->dwfl = dwfl;
		m->mod = mod;
		dwfl_module_getelf(mod, &m->bias);
		m->cfi_tried = false;
		m->eh_cfi = m->dbg_cfi = NULL;
		for (uint32_t id = 0; id < itab_count(s->loc_keys); id++) {
			struct sym_loc *l = &s->locs[id], old = *l;
			bool mapped = false;

			/* only addresses that are ELF vaddrs: those make_loc symbolized */
			for (size_t k = 0; l->module == i && k < m->nloads && !mapped; k++)
				mapped = l->addr >= m->loads[k].p_vaddr &&
					 l->addr < m->loads[k].p_vaddr + m->loads[k].p_memsz;
			if (!mapped)
				continue;
			*l = (struct sym_loc){ .module = i, .addr = old.addr, .first = s->nframes };
			symbolize_elf(s, m, l->addr + m->bias, l);
			l->nframes = s->nframes - l->first;
			if (!l->nframes)
				*l = old; /* out of memory: keep what it had */
		}
		changed++;
	}
	return changed;
}
