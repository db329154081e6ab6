// SPDX-License-Identifier: GPL-2.0-only
/*
 * An object mapped by some process (struct smod): opened with libdwfl on first need, its file
 * held open while it may change under us, let go when idle, read at its ELF vaddrs.
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "dbginfo.h"
#include "procmaps.h"
#include "sym_int.h"

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

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

void smod_pin(struct sym *s, struct smod *m, int fd)
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

void smod_unpin(struct sym *s, struct smod *m)
{
	if (!m->pin)
		return;
	s->file_mod[m->pin - 1] = 0;
	close(m->pin_fd);
	m->pin = 0;
}

/* The module holding the inode @ino of device @dev open, if one does (and it is unchanged). */
bool smod_pinned(struct sym *s, uint64_t dev, uint64_t ino, uint32_t *mod)
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
			smod_unpin(s, m);
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
	smod_unpin(s, m);
	smod_drop_cfi_cache(m);
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
}

void smod_open(struct sym *s, struct smod *m, uint32_t pid, uint64_t start,
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
		smod_pin(s, m, fd);
	/* libdwfl takes ownership of fd */
	m->mod = dwfl_report_elf(m->dwfl, sym_str(s, m->name), m->path, fd, 0, false);
	dwfl_report_end(m->dwfl, NULL, NULL);
	dbginfo_attach(s->dbg, m->mod);
	if (!m->mod) {
		pr_debug("libdw cannot read %s: %s", m->path, dwfl_errmsg(-1));
		smod_unpin(s, m); /* (it closed the file) */
		return;
	}
	elf = dwfl_module_getelf(m->mod, &m->bias);
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &n))
		return;
	m->usdt = has_pcmon_probes(elf);
	{
		const unsigned char *b = NULL;
		GElf_Addr v;
		int n = dwfl_module_build_id(m->mod, &b, &v);
		/* (none: 0, and b is left as it was) */
		size_t len = n > 0 && (size_t)n <= sizeof(m->bid) && b ? (size_t)n : 0;

		if (reopen && (m->bid_len != len || (len && memcmp(m->bid, b, len)))) {
			/* by its path, another file now: what it names is not this object's */
			pr_debug("%s: not the object it was (build-id)", m->path);
			module_unreadable(s, m);
			return;
		}
		m->bid_len = len;
		if (len)
			memcpy(m->bid, b, len);
	}
	m->loads = calloc(n ? n : 1, sizeof(*m->loads));
	for (size_t i = 0; m->loads && i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD)
			m->loads[m->nloads++] = ph;
	}
}

/* File offset -> ELF virtual address; false if no PT_LOAD covers it. */
bool smod_vaddr(const struct smod *m, uint64_t off, uint64_t *vaddr)
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
 * the object again opens it again (smod_use()).
 */

/* The CFI rows cached for the unwinder (sym_cfi_rule()): libdw's frames among them point
 * into the Dwfl's CFI. */
void smod_drop_cfi_cache(struct smod *m)
{
	for (uint32_t i = 0; i < m->nrules; i++)
		free(m->rules[i].frame);
	free(m->rules);
	itab_free(m->rule_keys);
	free(m->cfi_cache);
	m->rules = NULL;
	m->rule_keys = NULL;
	m->cfi_cache = NULL;
	m->cfi_cap = m->cfi_n = m->nrules = m->rules_cap = 0;
}

/* The tables built from a module's Dwfl (symbols, functions, CFI): made again on next use. */
void smod_drop_tables(struct smod *m)
{
	smod_drop_cfi_cache(m);
	free(m->syms);
	m->syms = NULL;
	m->nsyms = 0;
	free(m->secs);
	m->secs = NULL;
	m->nsecs = 0;
	m->syms_read = false;
	free(m->fdes);
	m->fdes = NULL;
	m->nfdes = 0;
	m->fdes_read = false;
	m->cfi_tried = m->dbg_cfi_tried = false;
	m->eh_cfi = m->dbg_cfi = NULL;
	m->dw_asked = false;
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
		smod_unpin(s, lru);
}

static void module_close(struct sym *s, struct smod *m)
{
	dwfl_end(m->dwfl);
	m->dwfl = NULL;
	m->mod = NULL;
	free(m->loads);
	m->loads = NULL;
	m->nloads = 0;
	smod_drop_tables(m);
	m->tried = false;
	m->closed = true;
	s->st.modules_closed++;
	pins_of_closed_bounded(s);
}

/* The mapping @addr lies in (procmaps_at()'s callback). */
static int vma_of(void *ctx, struct procmaps_vma *v)
{
	*(struct procmaps_vma *)ctx = *v;
	return 0;
}

/*
 * Let pcmond's pages of ELF image @elf go: libdwfl has libelf map an object's file (private,
 * copy on write) and reading its symbol table, string table and CFI touches most of it,
 * megabytes a large library, which then count in pcmond's resident memory for as long as
 * the object is open. They are the file's, in the page cache: the names and frames read
 * later fault back the few they need. Only a private mapping of a file that starts at the
 * image, and in it only pages that are still the file's (/proc/self/pagemap: not copied on
 * a write, which letting go would undo); memory libelf read a file into (it does when it
 * cannot map it) has no file, and is left alone. Returns the bytes let go.
 */
static uint64_t elf_pages_go(Elf *elf, int pagemap)
{
	enum { BATCH = 512 };
	const uint64_t present = 1ULL << 63, file = 1ULL << 61;
	uint64_t e[BATCH], len, n, given = 0, run = 0;
	long page = sysconf(_SC_PAGESIZE);
	struct procmaps_vma v = { 0 };
	size_t size = 0;
	char *p = elf ? elf_rawfile(elf, &size) : NULL;

	if (!p || !size || page <= 0 || pagemap < 0 || ((uintptr_t)p & (page - 1)) ||
	    procmaps_at(getpid(), (uintptr_t)p, 0, vma_of, &v) || !v.ino || v.shared ||
	    v.start != (uintptr_t)p)
		return 0;
	len = MIN(((uint64_t)size + page - 1) & ~(uint64_t)(page - 1), v.end - v.start);
	n = len / page;
	for (uint64_t i = 0; i < n; i += BATCH) {
		uint64_t k = MIN((uint64_t)BATCH, n - i);
		off_t at = (off_t)(((uintptr_t)p / page + i) * sizeof(e[0]));

		if (pread(pagemap, e, k * sizeof(e[0]), at) != (ssize_t)(k * sizeof(e[0])))
			break;
		/* runs of the file's own pages, each let go as a whole */
		for (uint64_t j = 0; j <= k; j++) {
			if (j < k && (e[j] & (present | file)) == (present | file)) {
				run++;
				continue;
			}
			if (run && !madvise(p + (i + j - run) * page, run * page, MADV_DONTNEED))
				given += run * page;
			run = 0;
		}
	}
	return given;
}

/* The pages of @m's files (the object, and its debug file if libdwfl was asked for it). */
static void smod_pages_go(struct sym *s, struct smod *m, int pagemap)
{
	GElf_Addr bias;
	Dwarf_Addr dbias;
	Dwarf *dw;
	Elf *elf = dwfl_module_getelf(m->mod, &bias);

	s->st.file_pages_given += elf_pages_go(elf, pagemap);
	/* (asked before: libdwfl answers from what it kept, and loads nothing) */
	dw = m->dw_asked ? dwfl_module_getdwarf(m->mod, &dbias) : NULL;
	if (dw && dwarf_getelf(dw) != elf)
		s->st.file_pages_given += elf_pages_go(dwarf_getelf(dw), pagemap);
}

/* The pages of every open object's files (smod_pages_go()). */
static void pages_go(struct sym *s, uint64_t now)
{
	int pagemap;

	s->pages_ns = now;
	/* (a kernel without the query reads a process's whole map as text for each: no) */
	if (!procmaps_can_query() || (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0)
		return;
	for (size_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++)
		if (s->mods[i].mod && !s->mods[i].jit)
			smod_pages_go(s, &s->mods[i], pagemap);
	close(pagemap);
}

/*
 * Over the budget (the heap less @kept): the objects least recently used go first, down to
 * those used in the last SYM_BUSY_NS (a build's compilers as they run: opening them again each time would cost more
 * than it saves). Looked at once a second: malloc counts its heap by walking its free lists.
 */
static void close_over_budget(struct sym *s, uint64_t now, uint64_t kept)
{
	if (!s->heap_budget || now - s->budget_ns < 1000000000ULL)
		return;
	s->budget_ns = now;
	/* (what no object's letting go frees: a long system-wide target's results and names
	 * outgrow any budget, and every object would be let go and opened again for ever) */
	kept += sym_names_bytes(s);
	while (sym_heap_in_use() > s->heap_budget + kept) {
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
}

void sym_close_idle(struct sym *s, uint64_t kept)
{
	uint64_t now = now_ns(), closed = s->st.modules_closed;

	if (now - s->pages_ns >= MIN(SYM_PAGES_NS, s->idle_ns / 2))
		pages_go(s, now);
	for (size_t i = SYM_MOD_KERNEL + 1; i < s->nmods; i++) {
		struct smod *m = &s->mods[i];

		if (m->dwfl && !m->jit && m->used_ns + s->idle_ns < now)
			module_close(s, m);
	}
	close_over_budget(s, now, kept);
	if (s->st.modules_closed != closed)
		malloc_trim(0); /* what the objects held goes back to the system */
}

void sym_set_limits(struct sym *s, uint64_t idle_ns, uint64_t heap_bytes)
{
	s->idle_ns = idle_ns ? idle_ns : SYM_IDLE_NS;
	s->heap_budget = heap_bytes ? heap_bytes : SYM_HEAP_BUDGET;
}

/* The module of region @r of process @pid, opened again if it was let go. */
struct smod *smod_use(struct sym *s, uint32_t pid, const struct region *r)
{
	struct smod *m = &s->mods[r->module];

	m->used_ns = now_coarse_ns(); /* (at every frame named: its age is told in seconds) */
	if (m->closed && !m->tried && r->exec)
		smod_open(s, m, pid, r->start, r->end);
	return m;
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
int smod_string(const struct smod *m, uint64_t vaddr, char *buf, size_t len)
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

/* Copy @len bytes of an object's file at ELF virtual address @vaddr. */
int smod_bytes(const struct smod *m, uint64_t vaddr, void *buf, size_t len)
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
