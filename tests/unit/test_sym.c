// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/sym.c (docs/names.md, docs/lines.md): names of code without symbols from its FDE
 * ("module+0xSTART"), each frame's own line and its persistence (daemon/engine/store.c), and JIT
 * code named from /tmp/perf-PID.map, read as it grows. The live cases symbolize this very
 * process: a stripped copy of this binary mapped into it, and anonymous memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>

#include "agg.h"
#include "procmaps.h"
#include "sample.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

static const char *proc_full(const struct sym *s, uint32_t loc, uint32_t frame)
{
	const struct sym_loc *l = sym_loc(s, loc);

	assert_non_null(l);
	assert_true(frame < l->nframes);
	return sym_str(s, sym_proc(s, sym_frames(s, l)[frame])->full);
}

/* ---------------------------------------------------------------------------------------- */
/* Names */

static void test_cfi_name_reads_module_plus_offset(void **state)
{
	struct sym *s = sym_new(0);
	uint32_t p;

	(void)state;
	assert_non_null(s);
	assert_int_equal(sym_intern_proc(s, "liblzma.so.5", "+0x15b40", NULL, 0, &p), 0);
	assert_string_equal(sym_str(s, sym_proc(s, p)->full), "liblzma.so.5+0x15b40");
	assert_string_equal(sym_str(s, sym_proc(s, p)->name), "+0x15b40");
	assert_string_equal(sym_str(s, sym_proc(s, p)->module), "liblzma.so.5");
	assert_int_equal(sym_intern_proc(s, "libc.so.6", "malloc", NULL, 0, &p), 0);
	assert_string_equal(sym_str(s, sym_proc(s, p)->full), "libc.so.6.malloc");
	sym_free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* Per-frame lines */

static void test_frame_lines(void **state)
{
	const char *procs[] = { "leaf", "mid", "top" };
	const char *files[] = { "/src/a.h", "/src/a.c", NULL };
	const uint32_t lines[] = { 14, 19, 25 };
	const struct sym_line *fl;
	const struct sym_loc *l;
	struct sym *s = sym_new(0);
	uint32_t loc, loc2;

	(void)state;
	assert_int_equal(sym_intern_loc(s, "prog", 0x1000, procs, files, lines, 3, &loc), 0);
	l = sym_loc(s, loc);
	fl = sym_frame_lines(s, l);
	assert_int_equal(l->nframes, 3);
	assert_string_equal(sym_str(s, fl[0].file), "/src/a.h");
	assert_int_equal(fl[0].line, 14);
	assert_string_equal(sym_str(s, fl[1].file), "/src/a.c");
	assert_int_equal(fl[1].line, 19);
	assert_int_equal(fl[2].file, 0);
	assert_int_equal(fl[2].line, 25);
	/* the location's own line is its innermost frame's */
	assert_string_equal(sym_str(s, l->file), "/src/a.h");
	assert_int_equal(l->line, 14);
	/* no lines known */
	assert_int_equal(sym_intern_loc(s, "prog", 0x2000, procs, NULL, NULL, 2, &loc2), 0);
	l = sym_loc(s, loc2);
	fl = sym_frame_lines(s, l);
	assert_int_equal(fl[0].line + fl[1].line + fl[0].file + fl[1].file + l->line + l->file, 0);
	sym_free(s);
}

static void test_frame_lines_survive_a_restart(void **state)
{
	const char *procs[] = { "leaf", "mid", "top" }, *one[] = { "+0x1230" };
	const char *files[] = { "/src/a.h", "/src/a.c", "/src/a.c" };
	const uint32_t lines[] = { 14, 19, 25 };
	char dir[] = "/tmp/pcmon-test-sym-XXXXXX", path[4200];
	struct target *t = target_new(3), *targets[8] = { NULL };
	struct sym *s = sym_new(0), *s2 = sym_new(0);
	struct agg_stack *st = malloc(agg_stack_size(2));
	struct store *store = NULL;
	const struct agg_stack *got;
	const struct sym_line *fl;
	const struct sym_loc *l;
	uint32_t next = 1;
	uint64_t count, ns;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_true(t && s && s2 && st);
	*st = (struct agg_stack){ .kind = PCMON_KIND_ONCPU, .pid = 7, .nuser = 2 };
	assert_int_equal(sym_intern_loc(s, "stripped", 0x1234, one, NULL, NULL, 1, &st->locs[0]),
			 0);
	assert_int_equal(sym_intern_loc(s, "prog", 0x1000, procs, files, lines, 3, &st->locs[1]),
			 0);
	t->inst[INST_SAMPLE] = sample_new();
	assert_non_null(t->inst[INST_SAMPLE]);
	assert_int_equal(agg_add(sample_of(t)->agg, st, 5, 0), 0);
	snprintf(t->name, sizeof(t->name), "prog");
	sample_of(t)->interval_us = 1000;
	sample_of(t)->period_ns = 999000;
	assert_int_equal(store_open(dir, &store), 0);
	assert_int_equal(store_save(store, s, t, true), 0);

	store_load_all(store, s2, targets, 8, &next);
	store_close(store);
	assert_non_null(targets[3]);
	assert_int_equal(agg_count(sample_of(targets[3])->agg), 1);
	got = agg_get(sample_of(targets[3])->agg, 0, &count, &ns);
	assert_int_equal(count, 5);
	assert_string_equal(proc_full(s2, got->locs[0], 0), "stripped+0x1230");
	l = sym_loc(s2, got->locs[1]);
	fl = sym_frame_lines(s2, l);
	assert_int_equal(l->nframes, 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(sym_str(s2, fl[i].file), files[i]);
		assert_int_equal(fl[i].line, lines[i]);
	}
	assert_string_equal(proc_full(s2, got->locs[1], 1), "prog.mid");

	snprintf(path, sizeof(path), "%s/target-3.json", dir);
	unlink(path);
	rmdir(dir);
	target_free(targets[3]);
	target_free(t);
	free(st);
	sym_free(s);
	sym_free(s2);
}

/* ---------------------------------------------------------------------------------------- */
/* Code without symbols: named after its FDE */

__attribute__((noinline)) int fde_probe_a(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int fde_probe_b(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 2;
}

/* A function whose CFI is known to the byte: its rows are [0,1) CFA rsp+8; [1,4) CFA rsp+16,
 * rbp saved at CFA-16; [4,8) CFA rbp+16; [8,9) as [0,1) again. */
int cfi_probe(void);
__asm__(".text\n.globl cfi_probe\n.type cfi_probe,@function\ncfi_probe:\n.cfi_startproc\n"
	"push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n.cfi_def_cfa_register %rbp\nnop\nnop\nnop\n"
	"pop %rbp\n.cfi_def_cfa %rsp, 8\n.cfi_restore %rbp\nret\n.cfi_endproc\n"
	".size cfi_probe, .-cfi_probe\n");

struct self_info {
	uintptr_t bias;
	const ElfW(Phdr) *ph;
	size_t nph;
};

static int self_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct self_info *si = data;

	(void)size;
	si->bias = info->dlpi_addr;
	si->ph = info->dlpi_phdr;
	si->nph = info->dlpi_phnum;
	return 1; /* the first object is the program */
}

/* The file offset of ELF vaddr @v of this program. */
static uint64_t self_offset(const struct self_info *si, uint64_t v)
{
	for (size_t i = 0; i < si->nph; i++) {
		const ElfW(Phdr) *p = &si->ph[i];

		if (p->p_type == PT_LOAD && v >= p->p_vaddr && v < p->p_vaddr + p->p_filesz)
			return v - p->p_vaddr + p->p_offset;
	}
	fail_msg("vaddr %#" PRIx64 " in no PT_LOAD", v);
	return 0;
}

/*
 * A copy of this program at @path (a mkstemp() template), stripped of its symbols if
 * @strip, mapped whole with @prot; its size in @size.
 */
static uint8_t *map_copy(char *path, bool strip, int prot, size_t *size)
{
	struct stat st;
	char cmd[256];
	uint8_t *map;
	int fd;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	if (strip)
		snprintf(cmd, sizeof(cmd), "strip --strip-all -o %s /proc/%d/exe", path, getpid());
	else
		snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe %s", getpid(), path);
	assert_int_equal(system(cmd), 0);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0 && !fstat(fd, &st));
	map = mmap(NULL, st.st_size, prot, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	*size = st.st_size;
	return map;
}

static void test_stripped_code_named_by_fde(void **state)
{
	char path[] = "/tmp/pcmon-test-stripped-XXXXXX";
	int (*const fns[])(int) = { fde_probe_a, fde_probe_b };
	struct self_info si = { 0 };
	struct sym *s = sym_new(0);
	uint8_t *map;
	uint32_t loc;
	size_t size;

	(void)state;
	/* the stripped copy, mapped whole and executable: a file the sym_ code must name */
	map = map_copy(path, true, PROT_READ | PROT_EXEC, &size);
	dl_iterate_phdr(self_cb, &si);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++) {
		uint64_t v = (uintptr_t)fns[i] - si.bias;
		char want[128];

		/* a pc inside the function, not at its start */
		loc = sym_user(s, getpid(), 0, (uintptr_t)map + self_offset(&si, v) + 2, false);
		snprintf(want, sizeof(want), "%s+0x%" PRIx64, basename_of(path), v);
		assert_string_equal(proc_full(s, loc, 0), want);
		/* memoized: the same address is the same location */
		assert_int_equal(sym_user(s, getpid(), 0, (uintptr_t)map + self_offset(&si, v) + 2,
					  false),
				 loc);
	}
	/* the program itself still has its symbols */
	loc = sym_user(s, getpid(), 0, (uintptr_t)fde_probe_a + 2, false);
	assert_string_equal(proc_full(s, loc, 0), "test_sym.fde_probe_a");
	munmap(map, size);
	unlink(path);
	sym_free(s);
}

/* Does @mod have a function named @name (version aside) at @value? */
static bool has_symbol_at(Dwfl_Module *mod, const char *name, GElf_Addr value)
{
	int n = dwfl_module_getsymtab(mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym gs;
		const char *nm = dwfl_module_getsym(mod, i, &gs, NULL);

		if (nm && gs.st_value == value && strlen(name) == strcspn(nm, "@") &&
		    !strncmp(nm, name, strlen(name)))
			return true;
	}
	return false;
}

/*
 * Our own sorted symbol table names addresses as dwfl_module_addrinfo() does (which scans
 * all symbols per call): libc's code, at addresses spread over it. Where several names
 * alias one function, ours is the public one ("free", not "__libc_free").
 */
static void test_symbols_named_as_libdwfl_names_them(void **state)
{
	static const Dwfl_Callbacks cbs = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
	};
	char *maps = read_file("/proc/self/maps", NULL), *line, *save, path[4096] = "";
	uint64_t start = 0, end = 0, pgoff = 0, bias;
	struct sym *s = sym_new(0);
	Dwfl_Module *mod;
	Dwfl *dwfl;
	size_t compared = 0, aliases = 0;

	(void)state;
	assert_non_null(maps);
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strstr(line, "/libc.so.6") && strstr(line, " r-xp ") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %4095s", &start,
			   &end, &pgoff, path) == 4)
			break;
	free(maps);
	assert_true(end > start);
	dwfl = dwfl_begin(&cbs);
	mod = dwfl_report_elf(dwfl, "libc", path, -1, 0, false);
	dwfl_report_end(dwfl, NULL, NULL);
	assert_non_null(mod);
	assert_non_null(dwfl_module_getelf(mod, &bias));
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	for (uint64_t pc = start; pc < end; pc += 997) {
		uint32_t loc = sym_user(s, getpid(), 0, pc, false);
		const struct sym_loc *l = sym_loc(s, loc);
		const char *ours = sym_str(s, sym_proc(s, sym_frames(s, l)[l->nframes - 1])->name);
		GElf_Off off;
		GElf_Sym gs;
		const char *want = dwfl_module_addrinfo(mod, l->addr + bias, &off, &gs, NULL, NULL,
							NULL);

		if (!want || (gs.st_size && off >= gs.st_size))
			continue;
		/* version suffixes are dropped ("clock_gettime@@GLIBC_2.17") */
		if (strlen(ours) == strcspn(want, "@") && !strncmp(ours, want, strlen(ours))) {
			compared++;
			continue;
		}
		/* an alias at the same address, no less public */
		assert_true(has_symbol_at(mod, ours, gs.st_value));
		assert_true(strspn(ours, "_") <= strspn(want, "_"));
		aliases++;
	}
	assert_true(compared > 100);
	assert_true(aliases < compared / 10);
	dwfl_end(dwfl);
	sym_free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* Address maps */

/* An exiting process's maps read empty before its exit is reported: keep the last ones. */
static void test_maps_of_an_exiting_process_are_kept(void **state)
{
	struct sym *s = sym_new(0);
	siginfo_t si;
	pid_t child;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		pause();
		_exit(0);
	}
	assert_int_equal(sym_proc_load(s, child, 0), 0);
	assert_string_equal(proc_full(s, sym_user(s, child, 0, (uintptr_t)fde_probe_a + 2, false),
				      0),
			    "test_sym.fde_probe_a");
	/* a zombie: dead, not reaped, its address space gone */
	kill(child, SIGKILL);
	assert_int_equal(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(sym_proc_load(s, child, 0), 0);
	/* an address not seen before still resolves, from the maps read while it lived */
	assert_string_equal(proc_full(s, sym_user(s, child, 0, (uintptr_t)fde_probe_b + 2, false),
				      0),
			    "test_sym.fde_probe_b");
	waitpid(child, NULL, 0);
	sym_free(s);
}

/* What a process "mapped as it exited": this process's code (a fork's is the same). */
struct exit_noted {
	struct procmaps_vma v[64];
	int n;
	bool unheld;		/* one more mapping, of a file no module holds */
};

static int note_vma(void *ctx, struct procmaps_vma *v)
{
	struct exit_noted *x = ctx;

	if (x->n < 63)
		x->v[x->n++] = (struct procmaps_vma){ .start = v->start, .end = v->end,
						      .pgoff = v->pgoff, .dev = v->dev,
						      .ino = v->ino, .exec = true };
	return 0;
}

static int exit_maps_of(void *ctx, uint32_t pid, uint32_t epoch, struct procmaps_vma *v,
			int max)
{
	struct exit_noted *x = ctx;
	int n = MIN(x->n, max);

	(void)pid, (void)epoch;
	if (!x->n)
		return -ENOENT;
	memcpy(v, x->v, n * sizeof(*v));
	if (x->unheld && n < max)
		v[n++] = (struct procmaps_vma){ .start = 0x1000, .end = 0x2000, .dev = 1,
						.ino = 1, .exec = true };
	return n;
}

/*
 * An image sampled and gone before its map was read (a process first sampled as it exits)
 * is named from what BPF noted it mapped at its exit, for the files pcmond holds open (let
 * go or not); a file it does not hold stays unnamed and is counted; with nothing noted,
 * nothing is named, but a fork's child that had no map of its own has its parent's.
 */
/* A child forked from here that exited at once, reaped: its map was never read. */
static pid_t gone_child(void)
{
	pid_t child = fork();

	assert_true(child >= 0);
	if (!child)
		_exit(0);
	assert_int_equal(waitpid(child, NULL, 0), child);
	return child;
}

/* The procedure that names pc @pc in (the gone) @pid, or NULL: none does. */
static const char *named_in(struct sym *s, pid_t pid, uintptr_t pc)
{
	const struct sym_loc *l;
	uint32_t loc;

	assert_int_equal(sym_proc_load(s, pid, 0), -ENOENT);
	loc = sym_user(s, pid, 0, pc + 2, false);
	l = sym_loc(s, loc);
	assert_non_null(l);
	return sym_proc(s, sym_frames(s, l)[0])->name ? proc_full(s, loc, 0) : NULL;
}

static void test_maps_noted_at_exit_name_an_image_never_read(void **state)
{
	struct exit_noted noted = { .unheld = true };
	struct sym *s = sym_new(0);
	struct sym_stats st;
	pid_t child;

	(void)state;
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0); /* our objects opened, held */
	assert_int_equal(procmaps_walk(getpid(), PROCMAPS_EXEC_FILES, note_vma, &noted), 0);
	sym_set_proc_source(s, &(struct sym_proc_source){ .exit_maps = exit_maps_of,
							  .ctx = &noted });
	assert_string_equal(named_in(s, gone_child(), (uintptr_t)fde_probe_a), "test_sym.fde_probe_a");
	sym_stats(s, &st);
	assert_int_equal(st.maps_too_late, 1);
	assert_int_equal(st.maps_at_exit, 1);
	assert_int_equal(st.maps_at_exit_unheld, 1);
	/* objects let go keep their files held: known, and opened again from them */
	sym_set_limits(s, 1, 0);
	usleep(1000);
	sym_close_idle(s, 0);
	sym_stats(s, &st);
	assert_int_equal(st.objects_open, 0);
	assert_string_equal(named_in(s, gone_child(), (uintptr_t)fde_probe_b), "test_sym.fde_probe_b");
	sym_stats(s, &st);
	assert_int_equal(st.maps_at_exit, 2);
	assert_true(st.modules_reopened >= 1);
	/* nothing noted: its pcs stay foreign */
	noted.n = 0;
	assert_null(named_in(s, gone_child(), (uintptr_t)fde_probe_a));
	sym_stats(s, &st);
	assert_int_equal(st.maps_too_late, 3);
	assert_int_equal(st.maps_at_exit, 2);
	/* nothing noted, but a fork's child: named from its parent's map */
	child = gone_child();
	sym_proc_forked(s, child, getpid(), 0);
	assert_string_equal(named_in(s, child, (uintptr_t)fde_probe_a), "test_sym.fde_probe_a");
	sym_stats(s, &st);
	assert_int_equal(st.maps_of_parent, 1);
	sym_free(s);
}

/*
 * Code mapped right after the map was read (ld.so loading libraries after exec): a sample
 * taken in it after that read makes the map be read again at once, not a millisecond later
 * (a sample of unknown time would find nothing: the time between two reads of a map is for
 * JIT code, which no read finds); a frame in it unwinds with its CFI.
 */
static void test_code_mapped_after_the_last_read(void **state)
{
	struct self_info si = { 0 };
	struct sym *s = sym_new(0);
	const struct cfi_rule *rule = NULL;
	uint64_t pc, taken;
	struct stat st;
	uint8_t *map;
	int fd;

	(void)state;
	dl_iterate_phdr(self_cb, &si);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	/* this program mapped once more, whole: the same file, a new address */
	fd = open("/proc/self/exe", O_RDONLY);
	assert_true(fd >= 0 && !fstat(fd, &st));
	map = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	taken = now_ns();
	pc = (uintptr_t)map + self_offset(&si, (uintptr_t)fde_probe_a - si.bias) + 2;
	sym_sample_taken(s, taken);
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, pc, &rule), 0);
	assert_string_equal(proc_full(s, sym_user(s, getpid(), 0, pc, false), 0),
			    "test_sym.fde_probe_a");
	sym_sample_taken(s, 0);
	munmap(map, st.st_size);
	sym_free(s);
}

/* A name that is not printable UTF-8 (a Latin-1 symbol, an object read mid-write) is kept
 * with '?' for each bad byte: listings and exports stay valid UTF-8. */
static void test_names_kept_as_utf8(void **state)
{
	struct sym *s = sym_new(0);
	uint32_t proc, id;

	(void)state;
	assert_int_equal(sym_intern_proc(s, "lib\xf7x.so", "caf\xe9_\xc3\xa9t\xc3", NULL, 0,
					 &proc), 0);
	assert_string_equal(sym_str(s, sym_proc(s, proc)->full), "lib?x.so.caf?_\xc3\xa9t?");
	assert_int_equal(sym_intern_str(s, "ok \xe2\x82\xac", &id), 0);
	assert_string_equal(sym_str(s, id), "ok \xe2\x82\xac");
	sym_free(s);
}

/*
 * The unwinder's rows, each kept once: the CFA and the saved registers as the CFI says, the
 * addresses of one row and rows that say the same sharing one rule.
 */
static void test_cfi_rows_kept_once(void **state)
{
	const struct cfi_rule *r0, *r8, *r1, *r4, *r5;
	uintptr_t f = (uintptr_t)cfi_probe;
	struct sym *s = sym_new(0);

	(void)state;
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	sym_sample_taken(s, now_ns());
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, f, &r0), 0);
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, f + 8, &r8), 0);
	assert_ptr_equal(r0, r8); /* (no rule added between: r0 still stands) */
	assert_null(r0->frame);
	assert_int_equal(r0->cfa_reg, 7);
	assert_int_equal(r0->cfa_off, 8);
	assert_int_equal(r0->ra, 16);
	assert_int_equal(r0->kind[16], CFI_AT);
	assert_int_equal(r0->off[16], -8);
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, f + 1, &r1), 0);
	assert_int_equal(r1->cfa_reg, 7);
	assert_int_equal(r1->cfa_off, 16);
	assert_int_equal(r1->kind[6], CFI_AT);
	assert_int_equal(r1->off[6], -16);
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, f + 4, &r4), 0);
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, f + 5, &r5), 0);
	assert_ptr_equal(r4, r5);
	assert_int_equal(r4->cfa_reg, 6);
	assert_int_equal(r4->cfa_off, 16);
	assert_int_equal(r4->kind[6], CFI_AT);
	sym_sample_taken(s, 0);
	sym_free(s);
}

/*
 * ld.so maps an object whole and read-only, then its code executable over it: a read of the
 * map in between finds the object, but not its code. A pc there is not taken for code of a
 * mapping that was not executable: the map is read again and the frame unwinds.
 */
static void test_code_made_executable_after_the_last_read(void **state)
{
	char path[] = "/tmp/pcmon-test-copy-XXXXXX";
	struct self_info si = { 0 };
	struct sym *s = sym_new(0);
	const struct cfi_rule *rule = NULL;
	uint8_t *map;
	uint64_t pc;
	size_t size;

	(void)state;
	/* a file of its own: an object no executable mapping has opened yet */
	map = map_copy(path, false, PROT_READ, &size);
	dl_iterate_phdr(self_cb, &si);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	assert_int_equal(mprotect(map, size, PROT_READ | PROT_EXEC), 0);
	pc = (uintptr_t)map + self_offset(&si, (uintptr_t)fde_probe_b - si.bias) + 2;
	sym_sample_taken(s, now_ns());
	assert_int_equal(sym_cfi_rule(s, getpid(), 0, pc, &rule), 0);
	sym_sample_taken(s, 0);
	munmap(map, size);
	unlink(path);
	sym_free(s);
}

/*
 * A file an object holds open is known by device and inode at the next read, without the
 * kernel's name or build-id for it; written over in place (the same inode, new contents),
 * it is let go within a second, and its mappings are told apart by build-id again.
 */
static void test_file_written_over_in_place_is_let_go(void **state)
{
	char path[] = "/tmp/pcmon-test-inplace-XXXXXX";
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000 } };
	struct sym *s = sym_new(0);
	struct sym_stats before, after;
	uint8_t *map;
	size_t size;

	(void)state;
	map = map_copy(path, false, PROT_READ | PROT_EXEC, &size);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0); /* the copy opened, held */
	sym_stats(s, &before);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	sym_stats(s, &after);
	assert_true(after.maps_pinned > before.maps_pinned);
	assert_int_equal(after.pins_changed, 0);
	/* written over: its modification time moves (no need to change its bytes) */
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	usleep(1100 * 1000);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	sym_stats(s, &after);
	assert_int_equal(after.pins_changed, 1);
	munmap(map, size);
	unlink(path);
	sym_free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* JIT code: perf maps */

static void append(const char *path, const char *fmt, ...)
{
	FILE *f = fopen(path, "a");
	va_list ap;

	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

static const char *name_at(struct sym *s, uint64_t pc, const char **module)
{
	uint32_t loc = sym_user(s, getpid(), 0, pc, false);
	const struct sym_procinfo *pi = sym_proc(s, sym_frames(s, sym_loc(s, loc))[0]);

	*module = sym_str(s, pi->module);
	return pi->name ? sym_str(s, pi->name) : NULL;
}

static void test_jit_perf_map(void **state)
{
	struct sym *s = sym_new(0);
	char path[64];
	const char *mod, *name;
	uint8_t *code = mmap(NULL, 65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t a = (uintptr_t)code;
	uint32_t loc;

	(void)state;
	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	/* format of node --perf-basic-prof: hex without 0x, the name is the rest of the line */
	append(path, "%" PRIx64 " 40 LazyCompile:*hot /tmp/x.js:1\n", a);
	append(path, "0x%" PRIx64 " 0x20 Builtin: with 0x\n", a + 0x40);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);

	name = name_at(s, a + 0x10, &mod);
	assert_string_equal(mod, SYM_JIT_MODULE);
	assert_non_null(name);
	assert_string_equal(name, "LazyCompile:*hot /tmp/x.js:1");
	assert_string_equal(name_at(s, a + 0x5f, &mod), "Builtin: with 0x");
	loc = sym_user(s, getpid(), 0, a + 0x10, false);
	assert_int_equal(sym_user(s, getpid(), 0, a + 0x10, false), loc);

	/* not in the map yet: foreignPcs material, no name */
	loc = sym_user(s, getpid(), 0, a + 0x100, false);
	assert_null(name_at(s, a + 0x100, &mod));
	assert_string_equal(mod, SYM_JIT_MODULE);
	/* the map grows, with a line still being written: only whole lines count */
	append(path, "%" PRIx64 " 10 second\n%" PRIx64 " 10 thi", a + 0x100, a + 0x200);
	pause_ms(3);
	assert_string_equal(name_at(s, a + 0x104, &mod), "second");
	/* the location seen before its line came is named now, samples stored with it too */
	assert_string_equal(proc_full(s, loc, 0), "[jit].second");
	assert_int_equal(sym_user(s, getpid(), 0, a + 0x100, false), loc);
	pause_ms(3);
	assert_null(name_at(s, a + 0x204, &mod));
	append(path, "rd\n");
	pause_ms(3);
	assert_string_equal(name_at(s, a + 0x204, &mod), "third");
	/* code replaced at a start already seen: new addresses get the newer name */
	append(path, "%" PRIx64 " 40 LazyCompile:*hot2 /tmp/x.js:9\n", a);
	pause_ms(3);
	sym_proc_final(s, getpid(), 0);
	assert_string_equal(name_at(s, a + 0x20, &mod), "LazyCompile:*hot2 /tmp/x.js:9");
	assert_string_equal(mod, SYM_JIT_MODULE);

	unlink(path);
	munmap(code, 65536);
	sym_free(s);
}

/* A map of many megabytes (a JVM's) is read a chunk at a time, lines across chunks whole. */
static void test_jit_big_perf_map(void **state)
{
	struct sym *s = sym_new(0);
	uint8_t *code = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64];
	const char *mod;
	FILE *f;

	(void)state;
	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	/* 3 MB of lines elsewhere (a kernel address: never this process's memory) */
	for (unsigned i = 0; i < 100000; i++)
		fprintf(f, "ffffffffff%06x 10 LazyCompile:~filler_%u /srv/app/lib/module.js:%u\n",
			i * 16, i, i);
	fprintf(f, "%" PRIxPTR " 100 LazyCompile:*after_3MB /srv/app/x.js:1\n", (uintptr_t)code);
	fclose(f);
	assert_int_equal(sym_proc_load(s, getpid(), 0), 0);
	assert_string_equal(name_at(s, (uintptr_t)code + 8, &mod),
			    "LazyCompile:*after_3MB /srv/app/x.js:1");
	unlink(path);
	munmap(code, 4096);
	sym_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cfi_name_reads_module_plus_offset),
		cmocka_unit_test(test_frame_lines),
		cmocka_unit_test(test_frame_lines_survive_a_restart),
		cmocka_unit_test(test_stripped_code_named_by_fde),
		cmocka_unit_test(test_symbols_named_as_libdwfl_names_them),
		cmocka_unit_test(test_maps_of_an_exiting_process_are_kept),
		cmocka_unit_test(test_maps_noted_at_exit_name_an_image_never_read),
		cmocka_unit_test(test_code_mapped_after_the_last_read),
		cmocka_unit_test(test_code_made_executable_after_the_last_read),
		cmocka_unit_test(test_cfi_rows_kept_once),
		cmocka_unit_test(test_names_kept_as_utf8),
		cmocka_unit_test(test_file_written_over_in_place_is_let_go),
		cmocka_unit_test(test_jit_perf_map),
		cmocka_unit_test(test_jit_big_perf_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
