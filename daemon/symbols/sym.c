// SPDX-License-Identifier: GPL-2.0-only
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <malloc.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dbginfo.h"
#include "procmaps.h"
#include "sym.h"
#include "demangle.h"
#include "util.h"

/*
 * A symbol of an object: [start, end) in its ELF vaddrs, end == start for a symbol without a
 * size, which may stand for code up to the end of its section [sec_start, sec_end). @name
 * points into libdwfl's copy of the symbol table (lives as long as the module).
 */
struct esym {
	uint64_t start, end;
	uint64_t reach;		/* the largest end of it and of the symbols sorted before it */
	uint64_t sec_start, sec_end;
	const char *name;
	uint32_t idx;		/* index in libdwfl's table: its order breaks ties */
	uint8_t bind;		/* 3 global, 2 weak, 1 local, 0 other: higher is preferred */
};

/* The code range [start, end) of one FDE, in the object's ELF vaddrs. */
struct fde_range {
	uint64_t start, end;
};

/* One line of a perf map: [start, end) is the code of the name at @name in jitmap.names. */
struct jit_sym {
	uint64_t start, end;
	uint32_t name, seq;	/* seq: line number, so a later line wins over an earlier one */
};

/*
 * A process's /tmp/perf-PID.map (node --perf-basic-prof, python -X perf, JVM agents), read as
 * it grows: whole lines up to @off are parsed. The file stays open while the process lives,
 * so what it appends up to its exit can still be read (sym_proc_final).
 */
struct jitmap {
	int fd;			/* -1 once the process is gone */
	uint64_t off;		/* bytes parsed */
	struct jit_sym *syms;	/* sorted by start, one per start */
	size_t n, cap;
	char *names;		/* NUL-terminated names, back to back */
	size_t names_len, names_cap;
	uint32_t seq;
	uint32_t *pending;	/* locations in its module that it does not name yet */
	size_t npending, cap_pending;
};

struct cfi_slot {
	uint64_t key;		/* the address + 1; 0: a free slot */
	Dwarf_Frame *frame;	/* NULL: no CFI covers it */
};

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
	struct cfi_slot *cfi_cache;	/* the frames asked for, by address (sym_cfi_frame()) */
	uint32_t cfi_cap, cfi_n;
	uint64_t unwinds, unwind_misses; /* frames unwound with its CFI, and without */
	bool fdes_read, syms_read;
	struct fde_range *fdes;	/* functions its CFI describes, sorted by start */
	size_t nfdes;
	struct esym *syms;	/* its symbols, sorted by start */
	size_t nsyms;
	int first_global;	/* libdwfl's table: locals before this index, globals from it */
	GElf_Phdr *loads;	/* PT_LOAD headers, to turn file offsets into vaddrs */
	size_t nloads;
	struct jitmap *jit;	/* a process's perf map: the module [jit] of that process */
	uint64_t used_ns;	/* last asked for (a new address, CFI, a map read that has it) */
	bool closed;		/* let go when idle (sym_close_idle): opened again on use */
	unsigned char bid[20];	/* its build-id, kept when closed (exports name objects by it) */
	uint8_t bid_len;
	uint32_t pin;		/* 1 + its entry in s->files while it holds its inode open, or 0 */
	int pin_fd;		/* ... by this descriptor, */
	struct timespec pin_mtime; /* the file's modification time and size then, */
	uint64_t pin_size;
	uint64_t pin_checked_ns; /* and when they were last looked at again */
};

static void cfi_cache_drop(struct smod *m);

/*
 * What identifies a module in mod_keys. Files: device, inode, modification time and size
 * (sym_proc_load). The vDSO: dev UINT64_MAX - 1. A process's perf map: dev UINT64_MAX - 2
 * and a number no other has. Modules of results loaded from disk: dev UINT64_MAX and a hash
 * of the name.
 */
struct mod_key {
	uint64_t dev, ino, mtime_ns, size;
};

struct region {
	uint64_t start, end, pgoff;
	uint32_t module;
	bool exec;		/* mapped executable when the map was read */
};

struct pmap {
	struct region *r;
	size_t n, cap;
	bool final;
	uint64_t final_ns;	/* when the process left the image (sym_proc_final()) */
	bool anon_code;		/* the last read found code in anonymous memory (a JIT) */
	bool scan_anon_code;	/* ... the read under way found some */
	uint64_t read_ns;	/* when /proc/PID/maps was last read: the map is as of then */
	uint64_t reread_ns;	/* when a miss may next read it (find_region) */
	uint64_t born_ns;	/* when its map was first read: about its exec */
	uint32_t jit_mod;	/* module of its perf map, 0 until one is found */
	uint64_t jit_try_ns;	/* when its perf map was last looked for or checked for growth */
	bool gone;		/* sampled, but gone before its map was read (proc_gone()) */
	bool forked;		/* a fork's child, not exec'd yet: of the image ppid, pepoch */
	uint32_t ppid, pepoch;
};

struct ksym {
	uint64_t addr;
	uint32_t name;
};

/* Objects no process has asked about for this long are let go (sym_close_idle()) ... */
#define SYM_IDLE_NS (60 * 1000000000ULL)
/* ... and, while the heap is over its budget, those not used for this long. */
#define SYM_BUSY_NS (5 * 1000000000ULL)
#define SYM_HEAP_BUDGET (64ULL << 20)

struct sym {
	unsigned flags;
	struct itab *strs;	/* strings; id 0 is "" */
	struct itab *mod_keys;	/* (dev, ino, path) -> module id */
	struct itab *files;	/* (dev, ino) -> entry of file_mod (pin_file()) */
	uint32_t *file_mod;	/* the module holding that inode open now, or 0 */
	size_t cap_file_mod;
	struct smod *mods;
	size_t nmods, cap_mods;
	struct itab *proc_keys; /* (module str, name str) -> proc id */
	struct sym_procinfo *procs;
	size_t cap_procs;
	struct itab *loc_keys;	/* (module, addr) -> loc id */
	struct sym_loc *locs;
	size_t cap_locs;
	uint32_t *frames;	/* procedure ids of every location's frames */
	struct sym_line *flines; /* parallel to frames: each frame's own file and line */
	size_t nframes, cap_frames, cap_flines;
	struct itab *pmap_keys; /* (pid, epoch) -> pmap */
	struct pmap *pmaps;
	size_t cap_pmaps;
	struct ksym *ksyms;	/* sorted */
	size_t nksyms;
	bool ksyms_loaded;
	struct sym_stats st;
	uint64_t taken_ns;	/* sym_sample_taken() */
	struct dbginfo *dbg;	/* debug info from debuginfod servers, or NULL (dbginfo.h) */
	struct sym_proc_source src;	/* the engine's process map (sym_set_proc_source) */
	uint64_t idle_ns;	/* objects unused this long are let go (sym_close_idle) */
	uint64_t heap_budget;	/* ... and more while the heap holds more (0: no budget) */
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
		cfi_cache_drop(&s->mods[i]);
		if (s->mods[i].pin)
			close(s->mods[i].pin_fd);
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
		free(s->mods[i].path);
		free(s->mods[i].loads);
		free(s->mods[i].fdes);
		free(s->mods[i].syms);
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
	/* "module.procedure"; a name made from call-frame information reads "module+0xSTART" */
	sep = !module[0] || !strncmp(name, SYM_CFI_NAME_PREFIX, strlen(SYM_CFI_NAME_PREFIX)) ?
		      "" :
		      ".";
	if (asprintf(&full, "%s%s%s", module, sep, name[0] ? name : "?") < 0)
		return -ENOMEM;
	pi = &s->procs[*proc];
	*pi = (struct sym_procinfo){ .module = key[0], .name = key[1], .line = line, .file = fid };
	pi->full = str_id(s, full);
	free(full);
	/* a C++ name as a pattern writes it: no parameters (the string table may move) */
	name = sym_str(s, key[1]);
	if (strpbrk(name, "( ") && (full = malloc(strlen(name) + 1))) {
		uint32_t base = dm_base(name, full, strlen(name) + 1) ? str_id(s, full) : 0;

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

const char *sym_module_path(const struct sym *s, uint32_t module)
{
	return module < s->nmods ? s->mods[module].path : "";
}

/* Memory the heap holds now (malloc's own count), all of it: the budget's measure. */
static uint64_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

void sym_stats(const struct sym *s, struct sym_stats *st)
{
	*st = s->st;
	st->locs = itab_count(s->loc_keys);
	st->pmaps = itab_count(s->pmap_keys);
	st->modules = s->nmods;
	st->names_bytes = itab_bytes(s->strs) + itab_bytes(s->proc_keys) + itab_bytes(s->loc_keys) +
			  s->cap_procs * sizeof(*s->procs) + s->cap_locs * sizeof(*s->locs) +
			  s->cap_frames * sizeof(*s->frames) + s->cap_flines * sizeof(*s->flines);
	st->objects_bytes = itab_bytes(s->mod_keys) + s->cap_mods * sizeof(*s->mods) +
			    itab_bytes(s->pmap_keys) + s->cap_pmaps * sizeof(*s->pmaps) +
			    itab_bytes(s->files) + s->cap_file_mod * sizeof(*s->file_mod);
	for (size_t i = 0; i < s->nmods; i++) {
		const struct smod *m = &s->mods[i];

		st->objects_open += m->dwfl != NULL;
		/* (a cached CFI frame: about 300 bytes, libdw's) */
		st->objects_bytes += m->cfi_cap * sizeof(*m->cfi_cache) + m->cfi_n * 300 +
				     m->nsyms * sizeof(*m->syms) + m->nfdes * sizeof(*m->fdes) +
				     m->nloads * sizeof(*m->loads);
	}
	for (uint32_t i = 0; i < itab_count(s->pmap_keys); i++)
		st->objects_bytes += s->pmaps[i].cap * sizeof(*s->pmaps[i].r);
	st->heap_bytes = heap_in_use();
}

/*
 * Append a frame to the pool: procedure (@module, @name) declared at @file:@line, and the
 * frame's own position @where (the pc's line, or the call site of the inlined callee).
 * Callers pass names that may point into our own string table (module names, kernel
 * symbols), which interning can move: work on copies.
 */
static int push_frame(struct sym *s, const char *module, const char *name, const char *file,
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

/*
 * Files by device and inode while a module holds them open. No other file can have that
 * inode number until the module lets go of it, so a mapping of the same device and inode
 * is that module's: a map read then asks the kernel for neither its name nor its build-id
 * (add_vma()). Pinned only if what the module opened is the very inode mapped (@fd), not
 * the file now at its path or an overlay's view of it; held by a descriptor of our own.
 * A file written over in place keeps its inode but not its contents: at most once a second
 * a pinned file's modification time and size are looked at, and one that changed is let go
 * (its mappings are then told apart by build-id again).
 *
 * A module let go (module_close()) keeps its file held, up to PIN_CLOSED_MAX of them, the
 * least recently used let go first: a descriptor, no memory. Its mappings are still known
 * without asking, and it is opened again from that descriptor when a sample needs it, if
 * the process that mapped it is gone (a compiler first sampled as it exited).
 */
#define PIN_CHECK_NS 1000000000ULL
#define PIN_CLOSED_MAX 256

static void pin_file(struct sym *s, struct smod *m, int fd)
{
	const struct mod_key *k = itab_key(s->mod_keys, m - s->mods - (SYM_MOD_KERNEL + 1), NULL);
	struct stat st;
	uint32_t id;
	int own;

	if (m->pin || !k || !k->ino || k->dev >= UINT64_MAX - 2 || fstat(fd, &st) ||
	    st.st_ino != k->ino || k->dev != (((uint64_t)major(st.st_dev) << 32) | minor(st.st_dev)))
		return;
	if (itab_intern(s->files, (uint64_t[2]){ k->dev, k->ino }, 2 * sizeof(uint64_t), &id) < 0 ||
	    GROW(s->file_mod, s->cap_file_mod, id + 1) ||
	    (own = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return;
	s->file_mod[id] = m - s->mods;
	m->pin = id + 1;
	m->pin_fd = own;
	m->pin_mtime = st.st_mtim;
	m->pin_size = st.st_size;
	m->pin_checked_ns = now_ns();
}

static void unpin_file(struct sym *s, struct smod *m)
{
	if (!m->pin)
		return;
	s->file_mod[m->pin - 1] = 0;
	close(m->pin_fd);
	m->pin = 0;
}

/* The module holding the inode @ino of device @dev open, if one does (and it is unchanged). */
static bool pinned_file(struct sym *s, uint64_t dev, uint64_t ino, uint32_t *mod)
{
	int64_t id = itab_find(s->files, (uint64_t[2]){ dev, ino }, 2 * sizeof(uint64_t));
	uint64_t now = now_ns();
	struct smod *m;
	struct stat st;

	*mod = id >= 0 ? s->file_mod[id] : 0;
	if (!*mod)
		return false;
	m = &s->mods[*mod];
	if (m->pin_checked_ns + PIN_CHECK_NS < now) {
		if (fstat(m->pin_fd, &st) || st.st_size != (off_t)m->pin_size ||
		    st.st_mtim.tv_sec != m->pin_mtime.tv_sec ||
		    st.st_mtim.tv_nsec != m->pin_mtime.tv_nsec) {
			unpin_file(s, m);
			s->st.pins_changed++;
			return *mod = 0, false;
		}
		m->pin_checked_ns = now;
	}
	return true;
}

/* An object that cannot be read as it was: its new addresses stay unnamed (and say so). */
static void module_unreadable(struct sym *s, struct smod *m)
{
	unpin_file(s, m);
	cfi_cache_drop(m);
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
}

static void module_open(struct sym *s, struct smod *m, uint32_t pid, uint64_t start,
			uint64_t end)
{
	bool reopen = m->closed;
	char p[4200];
	size_t n;
	GElf_Ehdr eh;
	Elf *elf;
	int fd;

	m->tried = true;
	if (reopen) {
		m->closed = false;
		s->st.modules_reopened++;
	}
	/*
	 * The file it still holds (let go, then needed again); map_files, which survives deleted
	 * files and other mount namespaces; then the root view.
	 */
	snprintf(p, sizeof(p), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	if (m->pin)
		fd = fcntl(m->pin_fd, F_DUPFD_CLOEXEC, 0);
	else
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
	if (m->path[0] != '[')
		pin_file(s, m, fd);
	/* libdwfl takes ownership of fd */
	m->mod = dwfl_report_elf(m->dwfl, sym_str(s, m->name), m->path, fd, 0, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	dbginfo_attach(s->dbg, m->mod);
	if (!m->mod) {
		pr_debug("libdw cannot read %s: %s", m->path, dwfl_errmsg(-1));
		unpin_file(s, m); /* (it closed the file) */
		return;
	}
	elf = dwfl_module_getelf(m->mod, &m->bias);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		return;
	m->usdt = has_pcmon_probes(elf);
	{
		const unsigned char *b;
		GElf_Addr v;
		int n = dwfl_module_build_id(m->mod, &b, &v);

		m->bid_len = n > 0 && (size_t)n <= sizeof(m->bid) ? n : 0;
		if (reopen && (m->bid_len != (n > 0 ? (size_t)n : 0) || memcmp(m->bid, b, m->bid_len))) {
			/* by its path, another file now: what it names is not this object's */
			pr_debug("%s: not the object it was (build-id)", m->path);
			module_unreadable(s, m);
			return;
		}
		m->bid_len = n > 0 && (size_t)n <= sizeof(m->bid) ? n : 0;
		memcpy(m->bid, b, m->bid_len);
	}
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

/*
 * Objects no process has asked about for a while (SYM_IDLE_NS, sym_set_limits()) are let
 * go: their file mapping, libdw's state and the tables built from them. A build runs hundreds of programs (cc1, as, ld,
 * each a few MB of symbols and CFI) that are never seen again once it moves on. The names
 * their addresses resolved to stay (locations and procedures are kept); a process that maps
 * the object again opens it again (module_use()).
 */

/* The tables built from a module's Dwfl (symbols, functions, CFI): made again on next use. */
static void module_drop_tables(struct smod *m)
{
	cfi_cache_drop(m);
	free(m->syms);
	m->syms = NULL;
	m->nsyms = 0;
	m->syms_read = false;
	free(m->fdes);
	m->fdes = NULL;
	m->nfdes = 0;
	m->fdes_read = false;
	m->cfi_tried = false;
	m->eh_cfi = m->dbg_cfi = NULL;
}

/* At most PIN_CLOSED_MAX modules let go keep their files held: the least recently used go. */
static void pins_of_closed_bounded(struct sym *s)
{
	struct smod *lru = NULL;
	size_t n = 0;

	for (size_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++) {
		struct smod *m = &s->mods[i];

		if (!m->closed || !m->pin)
			continue;
		n++;
		if (!lru || m->used_ns < lru->used_ns)
			lru = m;
	}
	if (n > PIN_CLOSED_MAX)
		unpin_file(s, lru);
}

static void module_close(struct sym *s, struct smod *m)
{
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
	free(m->loads);
	m->loads = NULL;
	m->nloads = 0;
	module_drop_tables(m);
	m->tried = false;
	m->closed = true;
	s->st.modules_closed++;
	pins_of_closed_bounded(s);
}

void sym_close_idle(struct sym *s)
{
	uint64_t now = now_ns(), closed = s->st.modules_closed;

	for (size_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++) {
		struct smod *m = &s->mods[i];

		if (m->dwfl && !m->jit && m->used_ns + s->idle_ns < now)
			module_close(s, m);
	}
	/*
	 * Over the budget: the objects least recently used go first, down to those used in the
	 * last SYM_BUSY_NS (a build's compilers as they run: opening them again each time
	 * would cost more than it saves).
	 */
	while (s->heap_budget && heap_in_use() > s->heap_budget) {
		struct smod *lru = NULL;

		for (size_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++) {
			struct smod *m = &s->mods[i];

			if (m->dwfl && !m->jit && m->used_ns + SYM_BUSY_NS < now &&
			    (!lru || m->used_ns < lru->used_ns))
				lru = m;
		}
		if (!lru)
			break;
		module_close(s, lru);
		s->st.modules_over_budget++;
	}
	if (s->st.modules_closed != closed)
		malloc_trim(0); /* what the objects held goes back to the system */
}

void sym_set_limits(struct sym *s, uint64_t idle_ns, uint64_t heap_bytes)
{
	s->idle_ns = idle_ns ? idle_ns : SYM_IDLE_NS;
	s->heap_budget = heap_bytes ? heap_bytes : SYM_HEAP_BUDGET;
}

/* The module of region @r of process @pid, opened again if it was let go. */
static struct smod *module_use(struct sym *s, uint32_t pid, const struct region *r)
{
	struct smod *m = &s->mods[r->module];

	m->used_ns = now_ns();
	if (m->closed && !m->tried && r->exec)
		module_open(s, m, pid, r->start, r->end);
	return m;
}

/* A function's name: its linkage name (C++, Rust: demangled in push_frame(), qualified and
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
static void read_fdes_of(struct smod *m, Elf *elf, const char *name, bool eh, int64_t adj,
			 size_t *cap)
{
	struct { Dwarf_Off off; int enc; } cies[32];
	size_t ncies = 0, shstrndx;
	const unsigned char *ident;
	unsigned asize;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d = NULL;
	Dwarf_Off off = 0, next;

	ident = elf ? (const unsigned char *)elf_getident(elf, NULL) : NULL;
	if (!ident || ident[EI_DATA] != ELFDATA2LSB || elf_getshdrstrndx(elf, &shstrndx))
		return; /* pcmon's architectures are little-endian; eh_value reads only that */
	asize = ident[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(n, name)) {
			d = elf_getdata(scn, NULL);
			break;
		}
	}
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
		if (GROW(m->fdes, *cap, m->nfdes + 1))
			return;
		m->fdes[m->nfdes++] = (struct fde_range){ start + adj, start + len + adj };
	}
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* @m's table of FDE code ranges, from .eh_frame and .debug_frame: built on first use. */
static void read_fdes(struct smod *m)
{
	GElf_Addr bias, dbias;
	Dwarf *dw;
	size_t cap = 0;
	Elf *elf;

	if (m->fdes_read || !m->mod)
		return;
	m->fdes_read = true;
	elf = dwfl_module_getelf(m->mod, &bias);
	read_fdes_of(m, elf, ".eh_frame", true, 0, &cap);
	/* .debug_frame may be in separate debug info, whose addresses may differ by a bias */
	dw = dwfl_module_getdwarf(m->mod, &dbias);
	if (dw && dwarf_getelf(dw))
		read_fdes_of(m, dwarf_getelf(dw), ".debug_frame", false, (int64_t)(dbias - bias),
			     &cap);
	if (m->nfdes)
		qsort(m->fdes, m->nfdes, sizeof(*m->fdes), fde_cmp);
}

/*
 * In a table sorted by a uint64_t first member (a start address), how many entries start at
 * or below @v: the one that may cover @v, if any, is the last of them.
 */
_Static_assert(offsetof(struct fde_range, start) == 0 && offsetof(struct esym, start) == 0 &&
		       offsetof(struct jit_sym, start) == 0 && offsetof(struct ksym, addr) == 0,
	       "count_starting_by() reads the start at the front of each entry");

static size_t count_starting_by(const void *table, size_t n, size_t size, uint64_t v)
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

/*
 * The start of the function that @m's call-frame information says covers @vaddr (an ELF
 * vaddr of the object): the initial location of the FDE whose range holds it. The FDE,
 * not the CFI row (dwarf_frame_info gives only the row's range), as a row starts after
 * every push and pop. false when no FDE covers @vaddr.
 */
static bool cfi_function_start(struct smod *m, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	size_t lo;

	read_fdes(m);
	lo = count_starting_by(m->fdes, m->nfdes, sizeof(*m->fdes), vaddr);
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
static void read_syms(struct smod *m)
{
	size_t cap = 0;
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
		struct esym *e;

		if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
		    type == STT_FILE || type == STT_TLS || addr < m->bias)
			continue;
		if (GROW(m->syms, cap, m->nsyms + 1))
			break;
		e = &m->syms[m->nsyms++];
		*e = (struct esym){
			.start = addr - m->bias,
			.end = addr - m->bias + sym.st_size,
			.name = name,
			.idx = i,
			.bind = bind < (int)sizeof(binds) ? binds[bind] : 0,
		};
		/* a symbol without a size reaches no further than its section */
		if (!sym.st_size && shndx < SHN_LORESERVE && elf &&
		    (scn = elf_getscn(elf, shndx)) && gelf_getshdr(scn, &sh)) {
			e->sec_start = sh.sh_addr + sbias - m->bias;
			e->sec_end = e->sec_start + sh.sh_size;
		}
	}
	if (m->nsyms) /* qsort() must not be given a null table, even an empty one */
		qsort(m->syms, m->nsyms, sizeof(*m->syms), esym_cmp);
	for (size_t i = 0; i < m->nsyms; i++)
		m->syms[i].reach = MAX(m->syms[i].end, i ? m->syms[i - 1].reach : 0);
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
	if (best->start == e->start && best->end == e->end && best->bind == e->bind)
		return publicness(e->name) > publicness(best->name);
	return best->start == e->start &&
	       ((best->end > e->end && best->bind <= e->bind) ||
		(best->end >= e->end && best->bind < e->bind));
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
	lo = count_starting_by(m->syms, m->nsyms, sizeof(*m->syms), vaddr);
	if (!lo)
		return NULL;
	/* symbols at or below @vaddr, while one of them may still reach it */
	for (size_t i = lo; i-- > 0 && m->syms[i].reach > vaddr && nc < MAXC;)
		if (m->syms[i].end > vaddr)
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
		*end = best->end;
		return best->name;
	}
	min_label = m->syms[lo - 1].reach;
	for (size_t i = lo; i-- > 0 && m->syms[i].start >= min_label;) {
		const struct esym *e = &m->syms[i];

		if (e->end != e->start || vaddr < e->sec_start || vaddr >= e->sec_end)
			continue;
		if (best && best->start != e->start)
			break;
		if (!best || e->bind > best->bind)
			best = e;
	}
	return best ? best->name : NULL; /* a label: no extent */
}

/* The line in the caller where the inlined call @die was made: DW_AT_call_file/_line. */
static struct sym_line call_site(struct sym *s, Dwarf_Die *die)
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
		where.file = str_id(s, f);
	return where;
}

/*
 * Frames for address @a of module @m (dwfl address space), innermost first. The innermost
 * frame is at the line of @a; each frame outside an inlined callee is at the callee's call
 * site. With SYM_NO_INLINE only the function that holds the code is kept, at the line of
 * the outermost call site: where its own code stands.
 */
static int symbolize_elf(struct sym *s, struct smod *m, Dwarf_Addr a, struct sym_loc *l)
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
		where.file = file ? str_id(s, file) : 0;
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
			r = push_frame(s, sym_str(s, m->name), die_name(&chain[i]),
				       dwarf_decl_file(&chain[i]), iline, where);
			if (r)
				goto out;
		}
		where = call_site(s, &chain[i]);
	}
	/* no symbol and no DWARF: the function that the call-frame information knows */
	if (!name && cfi_function_start(m, a - m->bias, &start, &hi)) {
		snprintf(cfi_name, sizeof(cfi_name), SYM_CFI_NAME_PREFIX "%" PRIx64, start);
		name = cfi_name;
		lo = start;
	}
	r = push_frame(s, sym_str(s, m->name), name, decl_file, decl_line, where);
	if (!r && hi > lo && !s->procs[s->frames[s->nframes - 1]].hi)
		sym_set_proc_extent(s, s->frames[s->nframes - 1], lo, hi);
out:
	free(chain);
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
	if (s->nksyms)
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
	if (!s->nksyms)
		pr_warn("/proc/kallsyms shows no addresses (kernel.kptr_restrict?): kernel frames stay unnamed");
}

static const char *ksym_name(struct sym *s, uint64_t a)
{
	size_t lo;

	if (!s->ksyms_loaded)
		load_kallsyms(s);
	lo = count_starting_by(s->ksyms, s->nksyms, sizeof(*s->ksyms), a);
	return lo ? sym_str(s, s->ksyms[lo - 1].name) : NULL;
}

/* ---- locations */

/*
 * The location (@module, @addr), symbolized on first sight: from the module's ELF file at
 * @dwfl_addr, from kallsyms, or (JIT code) named @name.
 */
static uint32_t make_loc(struct sym *s, uint32_t module, uint64_t addr, uint64_t dwfl_addr,
			 const char *name)
{
	struct { uint64_t addr; uint32_t module, pad; } key = { addr, module, 0 };
	const struct sym_line nowhere = { 0, 0 };
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
		name = ksym_name(s, addr);
	if (m->mod)
		symbolize_elf(s, m, dwfl_addr, l);
	else
		push_frame(s, sym_str(s, m->name), name, NULL, 0, nowhere);
	l->nframes = s->nframes - l->first;
	if (!l->nframes) {
		push_frame(s, sym_str(s, m->name), NULL, NULL, 0, nowhere);
		l->nframes = 1;
	}
	return id;
}

uint32_t sym_kernel(struct sym *s, uint64_t pc, bool call_site)
{
	return make_loc(s, SYM_MOD_KERNEL, pc - call_site, 0, NULL);
}

/* ---- JIT code: perf maps */

static int jit_sym_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Parse the lines "START SIZE name" (hex, "0x" optional) of @buf[0..len); a line without its
 * newline yet is left for the next read. Returns the bytes consumed.
 */
static size_t jit_parse(struct jitmap *j, char *buf, size_t len)
{
	size_t done = 0;

	for (char *nl; done < len && (nl = memchr(buf + done, '\n', len - done));) {
		char *line = buf + done, *end;
		uint64_t start, size;
		size_t n;

		*nl = '\0';
		done = nl + 1 - buf;
		start = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		line = end;
		size = strtoull(line, &end, 16);
		if (end == line || *end != ' ' || !size || start + size < start)
			continue;
		line = end + 1;
		n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (!n || GROW(j->syms, j->cap, j->n + 1) ||
		    GROW(j->names, j->names_cap, j->names_len + n + 1))
			continue;
		memcpy(j->names + j->names_len, line, n + 1);
		j->syms[j->n++] = (struct jit_sym){ start, start + size, j->names_len, j->seq++ };
		j->names_len += n + 1;
	}
	return done;
}

/*
 * Read what the perf map gained since the last read. Code moves and is freed: a line for a
 * start that an earlier line had replaces it (the older text is left in names). Returns
 * whether anything was added.
 */
static bool jit_read(struct jitmap *j)
{
	enum { CHUNK = 1 << 20 };
	size_t before = j->n, out = 0;
	struct stat st;
	char *buf;

	if (j->fd < 0 || fstat(j->fd, &st))
		return false;
	if ((uint64_t)st.st_size < j->off) {
		/* rewritten from the start (another process of that pid): forget the old one */
		j->off = j->n = j->names_len = 0;
		before = 0;
	}
	if ((uint64_t)st.st_size == j->off)
		return false;
	/* a megabyte at a time (a JVM's map reaches hundreds): whole lines, the rest next round */
	buf = malloc(CHUNK + 1);
	while (buf && j->off < (uint64_t)st.st_size) {
		ssize_t got = pread(j->fd, buf, MIN((uint64_t)CHUNK, st.st_size - j->off), j->off);
		size_t used;

		if (got <= 0)
			break;
		buf[got] = '\0';
		used = jit_parse(j, buf, got);
		if (!used)
			break; /* a line longer than a chunk, or one still being written */
		j->off += used;
	}
	free(buf);
	if (j->n == before)
		return false;
	if (j->n)
		qsort(j->syms, j->n, sizeof(*j->syms), jit_sym_cmp);
	for (size_t i = 0; i < j->n; i++) {
		if (out && j->syms[out - 1].start == j->syms[i].start)
			out--; /* same start: the later line (sorted after it) wins */
		j->syms[out++] = j->syms[i];
	}
	j->n = out;
	return true;
}

/* The name the perf map gives @pc, or NULL. */
static const char *jit_name(const struct jitmap *j, uint64_t pc)
{
	size_t lo = count_starting_by(j->syms, j->n, sizeof(*j->syms), pc);

	/*
	 * The last start at or below @pc, else one a little before it whose code spans a
	 * newer, smaller one: a few steps back are enough for how JIT compilers reuse memory.
	 */
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 8; steps++)
		if (pc < j->syms[i].end)
			return j->names + j->syms[i].name;
	return NULL;
}

/* The pid of @pid inside its own pid namespace: the one in its perf map's name. */
static uint32_t ns_pid(uint32_t pid)
{
	char path[64], *buf, *line;
	uint32_t nspid = pid;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	buf = read_file(path, NULL);
	line = buf ? strstr(buf, "\nNSpid:") : NULL;
	if (line) {
		/* "NSpid:\t4242\t7": the last number is the innermost namespace's */
		char *end = strchr(line + 1, '\n'), *tab = NULL;

		if (end)
			*end = '\0';
		for (char *t = line + 1; (t = strchr(t, '\t')); t++)
			tab = t;
		if (tab)
			nspid = strtoul(tab + 1, NULL, 10);
	}
	free(buf);
	return nspid;
}

/* Open (pid, epoch)'s perf map, as the process sees it, and make it its module [jit]. */
static int jit_open(struct sym *s, struct pmap *pm, uint32_t pid)
{
	struct mod_key mkey = { UINT64_MAX - 2, 0, 0, 0 };
	char path[128], root[64];
	struct jitmap *j;
	uint32_t mod;
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", pid, ns_pid(pid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(root, sizeof(root), "/proc/%u/root/", pid);
	if (fd < 0 && access(root, F_OK)) {
		struct stat st;
		double born;

		/*
		 * The process is gone (its samples can be drained after it): its perf map is
		 * still in /tmp, if it ran in our mount namespace. Not a leftover of an earlier
		 * process with that pid: it must have been written since this one was first seen.
		 */
		born = wall_time() - (double)(now_ns() - pm->born_ns) / 1e9;
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_mtim.tv_sec + 1 < born)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -ENOENT;
	j = calloc(1, sizeof(*j));
	/* each process's perf map is a module of its own: a key no other module has */
	mkey.ino = s->nmods;
	r = j ? itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod) : -ENOMEM;
	if (r != 1 || add_module(s, path, SYM_JIT_MODULE, &mod)) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	s->mods[mod].jit = j;
	pm->jit_mod = mod;
	pr_debug("reading JIT symbols of pid %u from %s", pid, path);
	return 0;
}

/*
 * Name the locations of @mod (a perf map) still waiting for their line: a JIT writes a line
 * when it has compiled the code, and the samples in it may come before it reaches the file.
 * The frame is renamed in place, so samples already stored get the name too.
 */
static void jit_resolve(struct sym *s, uint32_t mod)
{
	struct jitmap *j = s->mods[mod].jit;
	size_t out = 0;

	for (size_t i = 0; i < j->npending; i++) {
		const struct sym_loc *l = &s->locs[j->pending[i]];
		const char *name = jit_name(j, l->addr);
		uint32_t proc;

		if (!name || sym_intern_proc(s, SYM_JIT_MODULE, name, NULL, 0, &proc) < 0)
			j->pending[out++] = j->pending[i];
		else
			s->frames[l->first] = proc;
	}
	j->npending = out;
}

/* Read what the perf map of @mod gained; name what waited for it. */
static void jit_refresh(struct sym *s, uint32_t mod)
{
	if (jit_read(s->mods[mod].jit))
		jit_resolve(s, mod);
}

/* (pid, epoch)'s perf map, opened on first need: an attempt at most every 100 ms. */
static struct jitmap *jit_map(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t now)
{
	if (!pm->jit_mod) {
		if (now - pm->jit_try_ns < 100000000)
			return NULL;
		pm->jit_try_ns = now;
		if (jit_open(s, pm, pid))
			return NULL;
		jit_refresh(s, pm->jit_mod);
		if (pm->final) {
			/* found after the process left: complete, nothing more to wait for */
			close(s->mods[pm->jit_mod].jit->fd);
			s->mods[pm->jit_mod].jit->fd = -1;
		}
	}
	return s->mods[pm->jit_mod].jit;
}

/* The name @j gives @pc; if none, after looking for new lines (a stat, at most once a ms). */
static const char *jit_lookup(struct sym *s, struct pmap *pm, struct jitmap *j, uint64_t pc,
			      uint64_t now)
{
	const char *name = jit_name(j, pc);

	if (!name && now - pm->jit_try_ns >= 1000000) {
		pm->jit_try_ns = now;
		jit_refresh(s, pm->jit_mod);
		name = jit_name(j, pc);
	}
	return name;
}

/*
 * The location of @pc, outside every file mapping of (pid, epoch), in its perf map's module.
 * Each address is symbolized once: a pc the map does not name yet (@create: it is in no file
 * either) gets a location without a name, named when the map grows (jit_resolve).
 */
static bool jit_user(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t pc, bool create,
		     uint32_t *loc)
{
	struct { uint64_t addr; uint32_t module, pad; } key = { pc, 0, 0 };
	uint64_t now = now_ns();
	struct jitmap *j = jit_map(s, pm, pid, now);
	const char *name;
	int64_t found;

	if (!j)
		return false;
	key.module = pm->jit_mod;
	found = itab_find(s->loc_keys, &key, sizeof(key));
	if (found >= 0 && sym_proc(s, s->frames[s->locs[found].first])->name) {
		*loc = found;
		return true;
	}
	/* unnamed yet: new lines may name it (and rename its location) */
	name = jit_lookup(s, pm, j, pc, now);
	if (found >= 0) {
		/* still unnamed: a file the address map has yet to show comes first */
		if (!create && !sym_proc(s, s->frames[s->locs[found].first])->name)
			return false;
		*loc = found;
		return true;
	}
	if (!name && !create)
		return false;
	*loc = make_loc(s, pm->jit_mod, pc, 0, name);
	if (!name && !GROW(j->pending, j->cap_pending, j->npending + 1))
		j->pending[j->npending++] = *loc;
	return true;
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

/* What add_vma() adds a mapping to. */
struct vma_ctx {
	struct sym *s;
	struct pmap *pm;
	uint32_t pid;
	uint64_t dev, ino;	/* the file of the last mapping added, */
	uint32_t mod;		/* and its module */
};

/* A mapping of module @mod into the map being read; code new to us is read now. */
static int add_region(struct vma_ctx *c, const struct procmaps_vma *v, uint32_t mod)
{
	struct sym *s = c->s;
	struct pmap *pm = c->pm;

	/*
	 * Code new to us is read now, while the process lives (its file may be gone by the time
	 * its samples are named); data files only if ever asked. An object let go waits until a
	 * sample needs it (module_use()): a build maps the same dozen libraries into every
	 * compiler it runs, and opening each again at every exec was most of what the budget
	 * saved, spent again. Reading a map is not using its objects: only samples count.
	 */
	if (!s->mods[mod].tried && !s->mods[mod].closed && v->exec) {
		s->mods[mod].used_ns = now_ns();
		module_open(s, &s->mods[mod], c->pid, v->start, v->end);
	}
	if (GROW(pm->r, pm->cap, pm->n + 1))
		return -ENOMEM;
	pm->r[pm->n++] = (struct region){ v->start, v->end, v->pgoff, mod, v->exec };
	c->dev = v->dev;
	c->ino = v->ino;
	c->mod = mod;
	return 0;
}

/*
 * A mapping into the map being read. Its file is a module identified by device, inode and
 * build-id, so that each object is opened and read once for every process that maps it. A
 * file without a build-id is told apart by its modification time and size, as inode numbers
 * of deleted files come back for new ones (not its change time, which unlinking moves: a
 * program deleted while it runs stays one module).
 *
 * Each mapping comes first as the kernel has it without a name or build-id. A file a module
 * holds open (pin_file()), or the file of the mapping before (the pieces of one object come
 * together), needs neither; others, and anonymous code (a JIT's, the vDSO), are asked again.
 */
static int add_vma(void *ctx, struct procmaps_vma *v)
{
	struct vma_ctx *c = ctx;
	struct sym *s = c->s;
	struct mod_key mkey = { 0 };
	size_t flen;
	uint32_t mod;
	int r;

	if (!v->name) {
		if (!v->ino)
			return v->exec ? PROCMAPS_ASK : 0;
		if (v->dev == c->dev && v->ino == c->ino)
			return add_region(c, v, c->mod);
		if (pinned_file(s, v->dev, v->ino, &mod)) {
			s->st.maps_pinned++;
			return add_region(c, v, mod);
		}
		return PROCMAPS_ASK;
	}
	if (!v->ino) {
		c->pm->scan_anon_code |= v->exec && v->name[0] != '[';
		if (strcmp(v->name, "[vdso]"))
			return 0; /* only file-backed mappings (and the vDSO) name code and strings */
	}
	/* the kernel marks a file unlinked since it was mapped; map_files still opens it */
	flen = strlen(v->name);
	if (flen > 10 && !strcmp(v->name + flen - 10, " (deleted)"))
		v->name[flen - 10] = '\0';
	mkey.dev = v->ino ? v->dev : UINT64_MAX - 1;
	mkey.ino = v->ino;
	if (v->ino && v->bid_len) {
		mkey.mtime_ns = hash_bytes(v->bid, v->bid_len);
		mkey.size = UINT64_MAX; /* (a build-id, not a size) */
	} else if (v->ino && !v->exec) {
		/*
		 * Not code, no build-id: a data file (the locale archive every process maps, a
		 * cache), read for nothing; its identity is not worth a stat() a process.
		 */
		return 0;
	} else if (v->ino) {
		char mf[64];
		struct stat st;

		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, c->pid, v->start,
			 v->end);
		s->st.file_stats++;
		if (!stat(mf, &st)) {
			mkey.mtime_ns = st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
			mkey.size = st.st_size;
		}
	}
	r = itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod);
	if (r < 0)
		return r;
	mod += SYM_MOD_KERNEL + 1; /* file modules follow the two fixed ones */
	if (r == 1 && add_module(s, v->name, basename_of(v->name), &mod))
		return -ENOMEM;
	return add_region(c, v, mod);
}

/*
 * Events come in batches: the process may have exec'd since this image was sampled. Its map
 * now is the next image's; this one's is gone, and stays as it was last read.
 */
static bool image_gone(struct sym *s, uint32_t pid, uint32_t epoch)
{
	uint32_t live;

	if (!s->src.epoch || s->src.epoch(s->src.ctx, pid, &live) || live == epoch)
		return false;
	sym_proc_final(s, pid, epoch);
	return true;
}

static void proc_gone(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch, bool sure);

int sym_proc_load(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, true);
	size_t old_n;
	int r;

	if (!pm)
		return -ENOMEM;
	if (pm->final || image_gone(s, pid, epoch)) {
		proc_gone(s, pm, pid, epoch, true);
		return 0;
	}
	s->st.maps_reads++;
	pm->read_ns = now_ns();
	if (!pm->born_ns)
		pm->born_ns = pm->read_ns;
	old_n = pm->n;
	pm->n = 0;
	pm->scan_anon_code = false;
	r = procmaps_walk(pid, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			  &(struct vma_ctx){ .s = s, .pm = pm, .pid = pid });
	/*
	 * A process on its way out has no address space left: its maps read empty before its
	 * exit is reported. Keep what it had, for the samples it left.
	 */
	if (!pm->n) {
		pm->n = old_n;
		proc_gone(s, pm, pid, epoch, true);
	}
	if (r)
		return r;
	pm->reread_ns = now_ns() + 1000000;
	/* code in anonymous memory: a JIT; find its perf map while the process is there */
	pm->anon_code = pm->scan_anon_code;
	if (pm->anon_code)
		jit_map(s, pm, pid, now_ns());
	return 0;
}

int sym_proc_files(struct sym *s, uint32_t pid, uint32_t epoch,
		   int (*cb)(void *ctx, const char *path, uint64_t start, uint64_t end,
			     uint64_t pgoff),
		   void *ctx)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	int r = 0;

	for (size_t i = 0; pm && i < pm->n && !r; i++) {
		const struct region *g = &pm->r[i];

		if (g->module > SYM_MOD_KERNEL && g->module < s->nmods && s->mods[g->module].path)
			r = cb(ctx, s->mods[g->module].path, g->start, g->end, g->pgoff);
	}
	return r;
}

int sym_proc_reload(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t since_ns)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);

	return pm && pm->read_ns < since_ns ? sym_proc_load(s, pid, epoch) : 0;
}

int sym_proc_sampled(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t ts)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);

	return pm && pm->n && pm->read_ns > ts ? 0 : sym_proc_load(s, pid, epoch);
}

void sym_sample_taken(struct sym *s, uint64_t ns)
{
	s->taken_ns = ns;
}

void sym_proc_forked(struct sym *s, uint32_t pid, uint32_t ppid, uint32_t pepoch)
{
	struct pmap *pm = pmap_get(s, pid, 0, true);

	if (pm && !pm->n) {
		pm->forked = true;
		pm->ppid = ppid;
		pm->pepoch = pepoch;
	}
}

void sym_proc_final(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	struct jitmap *j = pm && pm->jit_mod ? s->mods[pm->jit_mod].jit : NULL;

	if (pm && !pm->final) {
		pm->final = true;
		pm->final_ns = now_ns();
	}
	/* its perf map is complete: read its last lines and let the file go */
	if (j && j->fd >= 0) {
		jit_refresh(s, pm->jit_mod);
		close(j->fd);
		j->fd = -1;
	}
}

/*
 * Address maps of images left before @before_ns (CLOCK_MONOTONIC) are let go: every sample
 * of theirs was taken before that and has been symbolized since (the caller drained them).
 * The names resolved stay with the locations. The table is rebuilt without them once they
 * are a quarter of it, so that a machine that runs processes by the thousand holds the
 * maps of the live ones only.
 */
void sym_forget_final(struct sym *s, uint64_t before_ns)
{
	uint32_t n = itab_count(s->pmap_keys), dead = 0, id;
	struct pmap *pmaps;
	struct itab *keys;


	for (uint32_t i = 0; i < n; i++)
		dead += s->pmaps[i].final && s->pmaps[i].final_ns < before_ns;
	if (dead < 64 || dead < n / 4)
		return;
	keys = itab_new();
	pmaps = calloc(n - dead + 1, sizeof(*pmaps));
	if (!keys || !pmaps) {
		itab_free(keys);
		free(pmaps);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pmap *pm = &s->pmaps[i];
		size_t len;
		const void *key = itab_key(s->pmap_keys, i, &len);

		if (pm->final && pm->final_ns < before_ns) {
			free(pm->r);
			s->st.pmaps_freed++;
			continue;
		}
		if (itab_intern(keys, key, len, &id) < 0) { /* cannot happen: room was made */
			free(pm->r);
			continue;
		}
		pmaps[id] = *pm;
	}
	itab_free(s->pmap_keys);
	free(s->pmaps);
	s->pmap_keys = keys;
	s->pmaps = pmaps;
	s->cap_pmaps = n - dead + 1;
}

/* The regions of @pm are in address order and do not overlap: the first that ends after @pc. */
static size_t pmap_after(const struct pmap *pm, uint64_t pc)
{
	size_t lo = 0, hi = pm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->r[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct region *pmap_find(const struct pmap *pm, uint64_t pc)
{
	size_t i = pm ? pmap_after(pm, pc) : 0;

	return pm && i < pm->n && pm->r[i].start <= pc ? &pm->r[i] : NULL;
}

/* @g into @pm, in place of the regions it overlaps (what was there before is gone). */
static int pmap_insert(struct pmap *pm, const struct region *g)
{
	size_t i = pmap_after(pm, g->start), k = i;

	while (k < pm->n && pm->r[k].start < g->end)
		k++;
	if (k == i && GROW(pm->r, pm->cap, pm->n + 1))
		return -ENOMEM;
	memmove(&pm->r[i + 1], &pm->r[k], (pm->n - k) * sizeof(*pm->r));
	pm->r[i] = *g;
	pm->n = pm->n + 1 - (k - i);
	return 0;
}

/*
 * A fork's child that exec'd (or exited) before its map was read had its parent's: the map
 * read of the parent's image, or else the parent's map as it is now, if the parent still
 * runs that image (a make or a shell waits for its child). Not a map of the parent's own:
 * nothing here adds to the maps that @pm may be one of.
 */
static void parent_map(struct sym *s, struct pmap *pm)
{
	struct pmap *parent = pmap_get(s, pm->ppid, pm->pepoch, false);
	uint32_t live;

	if (parent && parent->n && !GROW(pm->r, pm->cap, parent->n)) {
		memcpy(pm->r, parent->r, parent->n * sizeof(*pm->r));
		pm->n = parent->n;
	} else if (s->src.epoch && !s->src.epoch(s->src.ctx, pm->ppid, &live) &&
		   live == pm->pepoch) {
		s->st.maps_reads++;
		procmaps_walk(pm->ppid, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			      &(struct vma_ctx){ .s = s, .pm = pm, .pid = pm->ppid });
	}
	s->st.maps_of_parent += pm->n > 0;
}

/*
 * Image @epoch of @pid was sampled and is gone before its map was read, or before a pc
 * outside the mappings read could be looked up: most often it was first sampled as it
 * exited (the kernel tears a compiler's address space down for some milliseconds), or just
 * before. BPF noted what it mapped for execution as it exited; the files pcmond holds open
 * are known by device and inode, and name those mappings. Others stay unnamed, and their
 * pcs are foreignPcs. A fork's child that exec'd first, sampled in its execve, had its
 * parent's map. Once per image; not @sure that it is gone (a query found nothing at an
 * address), only if BPF noted its exit.
 */
static void proc_gone(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch, bool sure)
{
	struct procmaps_vma v[64];
	size_t had = pm->n;
	uint32_t mod;
	int n;

	if (pm->gone)
		return;
	n = s->src.exit_maps ? s->src.exit_maps(s->src.ctx, pid, epoch, v, ARRAY_SIZE(v)) : -1;
	if (n < 0 && !sure)
		return;
	pm->gone = true;
	s->st.maps_too_late += !had;
	if (!pm->final) { /* (its exit may have come first: let it be forgotten all the same) */
		pm->final = true;
		pm->final_ns = now_ns();
	}
	for (int i = 0; i < n; i++) {
		if (pmap_find(pm, v[i].start)) /* what was read stays */
			continue;
		if (!pinned_file(s, v[i].dev, v[i].ino, &mod)) {
			s->st.maps_at_exit_unheld++;
			continue;
		}
		if (pmap_insert(pm, &(struct region){ v[i].start, v[i].end, v[i].pgoff, mod, true }))
			break;
	}
	if (pm->n > had)
		s->st.maps_at_exit++;
	if (n < 0 && pm->forked && !pm->n)
		parent_map(s, pm);
}

/*
 * The one mapping @addr lies in, added to @pm: a pc outside every mapping read (the
 * libraries ld.so mapped after the process was first sampled, a dlopen) costs a query at
 * that address, not a walk of the whole map. 0, or 1 if no mapping of a file covers it.
 */
static int proc_load_at(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch,
			uint64_t addr)
{
	struct pmap one = { 0 };
	int r;

	if (image_gone(s, pid, epoch)) {
		proc_gone(s, pm, pid, epoch, true);
		return !pmap_find(pm, addr);
	}
	r = procmaps_at(pid, addr, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			&(struct vma_ctx){ .s = s, .pm = &one, .pid = pid });
	s->st.maps_queries++;
	pm->reread_ns = now_ns() + 1000000;
	if (!r && one.n) {
		r = pmap_insert(pm, &one.r[0]);
	} else {
		/* no file's mapping there (an exiting process has none), or no map to open */
		proc_gone(s, pm, pid, epoch, r == -ENOENT || r == -ESRCH);
		r = pmap_find(pm, addr) ? 0 : r < 0 ? r : 1;
	}
	if (one.scan_anon_code && !pm->anon_code) {
		/* code in anonymous memory: a JIT; find its perf map while the process is there */
		pm->anon_code = true;
		jit_map(s, pm, pid, now_ns());
	}
	free(one.r);
	return r;
}

/*
 * The mapping of @addr in (pid, epoch); a miss looks the address up in the map of a live
 * process (the whole map if none was read yet). For @code
 * (a pc), a mapping that was not executable is a miss too: ld.so maps an object whole and
 * read-only, then its code over it, and a read in between finds the first.
 */
static const struct region *find_region(struct sym *s, uint32_t pid, uint32_t epoch,
					uint64_t addr, bool code)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, addr), *again;

	/*
	 * New code mapped since the last look (the libraries right after exec, dlopen): look
	 * again while we can, at once if the sample was taken after that look (the new code
	 * was mapped by then), else a millisecond after the last look ended at the earliest:
	 * addresses in anonymous memory (JIT) miss every time.
	 */
	if ((!r || (code && !r->exec)) &&
	    (!pm || (!pm->final && ((s->taken_ns > pm->read_ns && !pm->anon_code) ||
				    now_ns() > pm->reread_ns)))) {
		s->st.maps_misses++;
		if (pm && pm->n ? !proc_load_at(s, pm, pid, epoch, addr) :
				  !sym_proc_load(s, pid, epoch))
			r = (again = pmap_find(pmap_get(s, pid, epoch, false), addr)) ? again : r;
	}
	return r;
}

uint32_t sym_user(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, pc);
	struct smod *m;
	uint64_t vaddr;
	uint32_t loc;

	/*
	 * Not in a file: JIT code named by the perf map, before re-reading the address map; a pc
	 * the map does not name yet, only once the address map has it in no file either.
	 */
	if (!r && pm && jit_user(s, pm, pid, pc - call_site, false, &loc))
		return loc;
	if (!r || !r->exec) {
		r = find_region(s, pid, epoch, pc, true);
		pm = pmap_get(s, pid, epoch, false); /* reading the map may add pmaps */
	}
	if (!r && pm && jit_user(s, pm, pid, pc - call_site, true, &loc))
		return loc;
	pc -= call_site;
	if (!r)
		return make_loc(s, SYM_MOD_UNKNOWN, pc, 0, NULL);
	m = module_use(s, pid, r);
	if (!m->mod || !offset_to_vaddr(m, pc - r->start + r->pgoff, &vaddr))
		return make_loc(s, r->module, pc - r->start + r->pgoff, 0, NULL);
	loc = make_loc(s, r->module, vaddr, vaddr + m->bias, NULL);
	/*
	 * A call is always inside a function, so a return address whose call site lies in no
	 * function was not one: the pc the kernel left at a fault on the first instruction of
	 * a function (an innermost frame sampled in kernel mode). Take the pc itself.
	 */
	if (call_site && !sym_proc(s, s->frames[s->locs[loc].first])->name &&
	    pc + 1 < r->end && offset_to_vaddr(m, pc + 1 - r->start + r->pgoff, &vaddr))
		loc = make_loc(s, r->module, vaddr, vaddr + m->bias, NULL);
	return loc;
}

int sym_intern_loc(struct sym *s, const char *module, uint64_t addr, const char *const *procs,
		   const char *const *files, const uint32_t *lines, size_t n, uint32_t *loc)
{
	struct mod_key mkey = { UINT64_MAX, hash_bytes(module, strlen(module)), 0, 0 };
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
	*l = (struct sym_loc){ .module = mod, .addr = addr, .first = s->nframes };
	for (size_t i = 0; i < n; i++) {
		struct sym_line where = {
			.file = files && files[i] ? str_id(s, files[i]) : 0,
			.line = lines ? lines[i] : 0,
		};

		if (push_frame(s, module, procs[i], NULL, 0, where))
			return -ENOMEM;
	}
	if (!n && push_frame(s, module, NULL, NULL, 0, (struct sym_line){ 0, 0 }))
		return -ENOMEM;
	l->nframes = s->nframes - l->first;
	/* the location's own line is its innermost frame's */
	l->file = s->flines[l->first].file;
	l->line = s->flines[l->first].line;
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

/*
 * The bytes of an object's file at ELF virtual address @vaddr, in the section holding it, and
 * in *@avail how many the section has from there; NULL if no section with contents holds it.
 */
static const char *elf_at(const struct smod *m, uint64_t vaddr, size_t *avail)
{
	GElf_Addr bias;
	Elf *elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : NULL;
	Elf_Scn *scn = NULL;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || vaddr < sh.sh_addr ||
		    vaddr >= sh.sh_addr + sh.sh_size || !(d = elf_getdata(scn, NULL)) ||
		    !d->d_buf || vaddr - sh.sh_addr >= d->d_size)
			continue;
		*avail = d->d_size - (vaddr - sh.sh_addr);
		return (const char *)d->d_buf + (vaddr - sh.sh_addr);
	}
	return NULL;
}

/* Read a NUL-terminated string from an object's file, at ELF virtual address @vaddr. */
static int elf_string(const struct smod *m, uint64_t vaddr, char *buf, size_t len)
{
	size_t avail, n;
	const char *p = elf_at(m, vaddr, &avail);

	if (!p)
		return -ENOENT;
	n = strnlen(p, MIN(len - 1, avail));
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

int sym_user_string(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t addr, char *buf,
		    size_t len)
{
	const struct region *r = find_region(s, pid, epoch, addr, false);
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

/* The object's call-frame information, read once (libdwfl owns and caches it). */
static void module_cfi(struct smod *m)
{
	if (m->cfi_tried || !m->mod)
		return;
	m->cfi_tried = true;
	m->eh_cfi = dwfl_module_eh_cfi(m->mod, &m->eh_bias);
	m->dbg_cfi = dwfl_module_dwarf_cfi(m->mod, &m->dbg_bias);
}

/*
 * The CFI frames the unwinder asked for, by address. A build's compilers, sampled 100 times
 * a second, unwind through the same few thousand return addresses, and libdw finds the FDE
 * and runs its instructions again each time. Kept while the module is open (a frame points
 * into its CFI), at most CFI_CACHE_MAX a module, then begun again.
 */
#define CFI_CACHE_MAX 8192

static void cfi_cache_drop(struct smod *m)
{
	for (uint32_t i = 0; i < m->cfi_cap; i++)
		free(m->cfi_cache[i].frame);
	free(m->cfi_cache);
	m->cfi_cache = NULL;
	m->cfi_cap = m->cfi_n = 0;
}

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
			cfi_cache_drop(m);
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
	uint64_t vaddr, now = now_ns();
	struct cfi_slot *c;
	struct jitmap *j;
	struct smod *m;
	bool fresh;

	*frame = NULL;
	if (!r && pm) {
		/* JIT code has no CFI: known as such, it needs no new look at the address map */
		j = jit_map(s, pm, pid, now);
		if (j && jit_lookup(s, pm, j, pc, now))
			return -ENOENT;
		r = find_region(s, pid, epoch, pc, true);
	} else if (!r || !r->exec) {
		r = find_region(s, pid, epoch, pc, true);
	}
	if (!r)
		return -ENOENT;
	m = module_use(s, pid, r);
	if (!m->mod || !offset_to_vaddr(m, pc - r->start + r->pgoff, &vaddr)) {
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

/* Copy @len bytes of an object's file at ELF virtual address @vaddr. */
static int elf_bytes(const struct smod *m, uint64_t vaddr, void *buf, size_t len)
{
	size_t avail;
	const char *p = elf_at(m, vaddr, &avail);

	if (!p || avail < len)
		return -ENOENT;
	memcpy(buf, p, len);
	return 0;
}

const char *sym_comp_dir(const struct sym *s, uint32_t module, uint64_t vaddr)
{
	const struct smod *m = module < s->nmods && module > SYM_MOD_KERNEL ? &s->mods[module] : NULL;
	Dwarf_Attribute a;
	Dwarf_Addr bias;
	Dwarf_Die *cu = m && m->mod ? dwfl_module_addrdie(m->mod, vaddr + m->bias, &bias) : NULL;

	return cu && dwarf_attr(cu, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;
}

int sym_code_bytes(const struct sym *s, uint32_t module, uint64_t vaddr, void *buf, size_t len)
{
	const struct smod *m = module < s->nmods && module > SYM_MOD_KERNEL ? &s->mods[module] : NULL;
	size_t avail;
	const char *p = m && m->mod ? elf_at(m, vaddr, &avail) : NULL;

	if (!p)
		return -ENOENT;
	len = MIN(len, avail);
	memcpy(buf, p, len);
	return (int)len;
}

bool sym_thread_entry(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc)
{
	const struct region *r = find_region(s, pid, epoch, pc, true);
	static const uint8_t syscall_insn[2] = { 0x0f, 0x05 };
	uint8_t code[2];
	uint64_t vaddr;
	struct smod *m;

	if (!r)
		return false;
	m = module_use(s, pid, r);
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

void sym_set_proc_source(struct sym *s, const struct sym_proc_source *src)
{
	s->src = *src;
}

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
		/* held open now is what was opened again: the same inode, or a copy */
		unpin_file(s, m);
		pin_file(s, m, fd);
		dwfl_end(m->dwfl); /* the CFI came from it: read again on next use */
		m->dwfl = dwfl;
		m->mod = mod;
		dwfl_module_getelf(mod, &m->bias);
		/* symbol and function tables name the old Dwfl's strings, and the debug file may
		 * bring a full symbol table and .debug_frame: built again on next use */
		module_drop_tables(m);
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
