// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "demangle.h"
#include "funcs.h"
#include "near.h"
#include "pat.h"
#include "util.h"

static int scan_object(const char *path, const char *module, const struct stat *st,
		       const struct pat *pat, struct func **out, size_t *n, size_t *cap,
		       struct near *nr);

/* The file offset of ELF address @vaddr: through the PT_LOAD segment that holds it. */
static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Does a uprobe at file offset @off step its instruction out of line? The kernel emulates a
 * push of a register (what a frame-pointer prologue starts with), and steps most else.
 */
static bool stepped_bytes(const unsigned char *b)
{
	if (b[0] >= 0x50 && b[0] <= 0x57)
		return false;			/* push %rax..%rdi */
	return !(b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57); /* push %r8..%r15 */
}

static bool stepped(int fd, uint64_t off)
{
	unsigned char b[2] = { 0 };

	return pread(fd, b, sizeof(b), off) != sizeof(b) || stepped_bytes(b);
}

bool funcs_stepped(const char *path, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool r = fd < 0 || stepped(fd, off);

	if (fd >= 0)
		close(fd);
	return r;
}

/* The length of an instruction at @b that sets the flags and nothing else, 0 if it is not
 * one of those a function may start with: test of two registers, a byte compared in memory
 * (glibc's memalign asks whether malloc is set up so). */
static unsigned flags_only(const unsigned char *b)
{
	if ((b[0] & 0xf0) == 0x40 && b[1] == 0x85 && (b[2] & 0xc0) == 0xc0)
		return 3;			/* test %r64, %r64 */
	if (b[0] == 0x85 && (b[1] & 0xc0) == 0xc0)
		return 2;			/* test %r32, %r32 */
	if (b[0] == 0x80 && b[1] == 0x3d)
		return 7;			/* cmpb $imm8, disp32(%rip) */
	return 0;
}

static bool is_jcc(const unsigned char *b)
{
	return (b[0] >= 0x70 && b[0] <= 0x7f) || (b[0] == 0x0f && b[1] >= 0x80 && b[1] <= 0x8f);
}

uint64_t funcs_emulated_at(const char *path, uint64_t off)
{
	unsigned char b[16] = { 0 };
	unsigned at = 0, n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool got = fd >= 0 && pread(fd, b, sizeof(b), off) == sizeof(b);

	if (fd >= 0)
		close(fd);
#if defined(__x86_64__)
	if (!got)
		return off;
	if (b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
		at = 4;				/* endbr64: nothing but a landing mark */
	if ((n = flags_only(b + at)) && is_jcc(b + at + n))
		return off + at + n;		/* the jump, which the kernel emulates */
	return off + (at && !stepped_bytes(b + at) ? at : 0);
#else
	(void)got;
	(void)at;
	(void)n;
	return off;
#endif
}

static bool have(const struct func *f, size_t n, dev_t dev, ino_t ino, uint64_t vaddr)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].dev == dev && f[i].ino == ino && f[i].vaddr == vaddr)
			return true;
	return false;
}

int funcs_offsets(const char *path, const char *const *names, size_t n, uint64_t *off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), found = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -errno;
	memset(off, 0, n * sizeof(*off));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const char *raw;
			size_t len;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value ||
			    !(raw = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			len = strcspn(raw, "@"); /* (a dynamic symbol's version) */
			for (size_t k = 0; k < n; k++)
				if (names[k] && !off[k] && strlen(names[k]) == len &&
				    !strncmp(raw, names[k], len) &&
				    !vaddr_to_offset(elf, sym.st_value, &off[k]))
					found++;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return found;
}

int funcs_find_file(const char *path, const char *module, const struct pat *pat,
		    struct func **out, size_t *n, size_t *cap)
{
	struct stat st;

	elf_version(EV_CURRENT);
	if (stat(path, &st))
		return -errno;
	return scan_object(path, module, &st, pat, out, n, cap, NULL);
}

/* The functions of one object that @pat names. */
static int scan_object(const char *path, const char *module, const struct stat *st,
		       const struct pat *pat, struct func **out, size_t *n, size_t *cap,
		       struct near *nr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;

	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)) && !r) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !r; i++) {
			struct pat_frame fr = { .module = module };
			struct func f = { 0 };
			char *own = NULL, *base = NULL, *at;
			const char *raw;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			raw = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!raw || !*raw)
				continue;
			/* dynamic symbols carry their version: matched and named without it; C++
			 * and Rust names demangled, as listings show them */
			at = strchr(raw, '@');
			if (at && !(own = strndup(raw, at - raw)))
				return -ENOMEM;
			fr.proc = own ? own : raw;
			if (dm_is_mangled(fr.proc)) {
				char *d = dm_demangle(fr.proc);

				if (d) {
					free(own);
					fr.proc = own = d;
					base = malloc(strlen(d) + 1);
					if (base && dm_base(d, base, strlen(d) + 1))
						fr.base = base;
				}
			}
			if (pat_match(pat, &fr, 1) == PAT_NOMATCH) {
				if (nr) {
					char full[NEAR_NAME_MAX];

					snprintf(full, sizeof(full), "%s.%s", module, fr.proc);
					near_offer(nr, fr.proc, full);
				}
			} else if (!have(*out, *n, st->st_dev, st->st_ino, sym.st_value) &&
			    !vaddr_to_offset(elf, sym.st_value, &f.offset)) {
				f.path = strdup(path);
				f.module = strdup(module);
				f.name = strdup(fr.proc);
				f.dev = st->st_dev;
				f.ino = st->st_ino;
				f.vaddr = sym.st_value;
				f.xol = stepped(fd, f.offset);
				if (!f.path || !f.module || !f.name || GROW(*out, *cap, *n + 1)) {
					funcs_free(&f, 1);
					r = -ENOMEM;
				} else {
					(*out)[(*n)++] = f;
				}
			}
			free(own);
			free(base);
		}
	}
	elf_end(elf);
	close(fd);
	return r;
}

int funcs_find(uint32_t pid, const struct pat *pat, struct func **out, size_t *n, size_t *cap,
	       size_t *objects)
{
	return funcs_find_near(pid, pat, out, n, cap, objects, NULL);
}

int funcs_find_near(uint32_t pid, const struct pat *pat, struct func **out, size_t *n,
		    size_t *cap, size_t *objects, struct near *nr)
{
	char mpath[64], *maps, *line, *save;
	struct { dev_t dev; ino_t ino; } seen[256];
	size_t nseen = 0;
	int r = 0;

	elf_version(EV_CURRENT);
	snprintf(mpath, sizeof(mpath), "/proc/%u/maps", pid);
	maps = read_file(mpath, NULL);
	if (!maps)
		return -errno;
	for (line = strtok_r(maps, "\n", &save); line && !r; line = strtok_r(NULL, "\n", &save)) {
		unsigned long start, end;
		char perms[8], path[128], *file = strchr(line, '/');
		struct stat st;
		bool dup = false;

		if (!file || sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 || perms[2] != 'x')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx", pid, start, end);
		if (stat(path, &st))
			continue;
		for (size_t i = 0; i < nseen && !dup; i++)
			dup = seen[i].dev == st.st_dev && seen[i].ino == st.st_ino;
		if (dup || nseen == ARRAY_SIZE(seen))
			continue;
		seen[nseen].dev = st.st_dev;
		seen[nseen++].ino = st.st_ino;
		r = scan_object(path, basename_of(file), &st, pat, out, n, cap, nr);
		if (r == -ENOENT || r == -EACCES)
			r = 0; /* gone, or not ours to read: searched, nothing found */
	}
	free(maps);
	if (objects)
		*objects = nseen;
	return r;
}

void funcs_free(struct func *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(f[i].path);
		free(f[i].module);
		free(f[i].name);
	}
}

/* Does source path @name end with @file, at a path component? */
static bool same_file(const char *name, const char *file)
{
	size_t n = strlen(name), f = strlen(file);

	return n >= f && !strcmp(name + n - f, file) && (n == f || name[n - f - 1] == '/');
}

int funcs_find_line(const char *path, const char *module, const char *file, int line,
		    struct func **out, size_t *n, size_t *cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	Dwarf *dw;
	Dwarf_Off off = 0, next;
	size_t hsize;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(dw = dwarf_begin(fd, DWARF_C_READ))) {
		close(fd);
		return -ENODATA; /* no DWARF: no lines to go by */
	}
	while (!r && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t nl;
		int prev_line = -1;
		const char *prev_file = NULL;

		if (!dwarf_offdie(dw, off + hsize, &cu) || dwarf_getsrclines(&cu, &lines, &nl)) {
			off = next;
			continue;
		}
		for (size_t i = 0; i < nl && !r; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i);
			const char *name = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
			Dwarf_Addr addr;
			int lineno = 0;
			bool stmt = false, end = false;
			struct func f = { 0 };

			if (!l || !name || dwarf_lineno(l, &lineno) || dwarf_lineaddr(l, &addr) ||
			    dwarf_linebeginstatement(l, &stmt) || dwarf_lineendsequence(l, &end))
				continue;
			/* a statement's first row: where the line starts, in each copy of it */
			if (!end && stmt && lineno == line && same_file(name, file) &&
			    !(prev_line == line && prev_file && !strcmp(prev_file, name)) &&
			    !have(*out, *n, st.st_dev, st.st_ino, addr)) {
				Elf *elf = dwarf_getelf(dw);

				if (!vaddr_to_offset(elf, addr, &f.offset)) {
					char nm[64];

					snprintf(nm, sizeof(nm), "%s:%d", file, line);
					f.path = strdup(path);
					f.module = strdup(module);
					f.name = strdup(nm);
					f.dev = st.st_dev;
					f.ino = st.st_ino;
					f.vaddr = addr;
					f.xol = true;
					if (!f.path || !f.module || !f.name || GROW(*out, *cap, *n + 1)) {
						funcs_free(&f, 1);
						r = -ENOMEM;
					} else {
						(*out)[(*n)++] = f;
					}
				}
			}
			prev_line = end ? -1 : lineno;
			prev_file = name;
		}
		off = next;
	}
	dwarf_end(dw);
	close(fd);
	return r;
}
