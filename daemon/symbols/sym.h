/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sym_: symbolization with elfutils libdw.
 *
 * A *location* is a code address made process-independent: (object file, address inside
 * it). Each location is symbolized once and yields one or more *frames* (procedure ids),
 * innermost first: inlined functions come before the function they were inlined into.
 * Each frame also carries its own source line (sym_frame_lines): the innermost frame the
 * line of the address, every outer frame the line of the call that was inlined into it.
 *
 * Procedures are (module basename, name). Code that no symbol covers is named after the
 * function the object's call-frame information says covers it: the name "+0xSTART", START
 * the FDE's first address as an ELF vaddr, so the full name reads "libfoo.so.1+0x15b40".
 * JIT code is named from the process's /tmp/perf-PID.map, in the module "[jit]". A
 * procedure with no name stands for code nothing covers (anonymous memory without a perf
 * map, an object with neither symbol nor FDE there): foreignPcs material.
 *
 * Per process, an address map snapshot from /proc/PID/maps, keyed by (pid, exec epoch), so
 * samples taken before an exec or after the process exited still resolve.
 */
#ifndef PCMON_SYM_H
#define PCMON_SYM_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "pcmon_bpf.h"

#define SYM_NO_INLINE 1u

#define SYM_MOD_UNKNOWN 0 /* anonymous / unmapped memory */
#define SYM_MOD_KERNEL 1

struct sym;

struct sym_loc {
	uint32_t module;	/* sym module id */
	uint32_t nframes;	/* >= 1 */
	uint64_t addr;		/* address inside the object (ELF vaddr), or absolute */
	uint32_t first;		/* index of the first frame in the frame pool */
	uint32_t file;		/* string id of the source file, 0 = unknown */
	uint32_t line;		/* source line, 0 = unknown */
};

struct sym_procinfo {
	uint32_t module;	/* string id of the module name ("libc.so.6", "kernel", "") */
	uint32_t name;		/* string id of the procedure name, 0 = nothing covers it */
	uint32_t file;		/* string id of the file of its entry, 0 = unknown */
	uint32_t line;
	uint32_t full;		/* string id of "module.procedure" ("module+0xSTART") */
	uint32_t base;		/* string id of the name without parameters (dm_base()), 0: none */
	uint64_t lo, hi;	/* its code [lo, hi) in its object's vaddrs; 0, 0: not known */
};

/* Where one frame of a location is: the pc's line (innermost), else its call site. */
struct sym_line {
	uint32_t file;		/* string id of the source file, 0 = unknown */
	uint32_t line;		/* 0 = unknown */
};

/* Prefix of the procedure names made from call-frame information ("+0x15b40"). */
#define SYM_CFI_NAME_PREFIX "+0x"
/* Module name of code named from a perf map (JIT). */
#define SYM_JIT_MODULE "[jit]"

struct sym *sym_new(unsigned flags);
void sym_free(struct sym *s);

/* Take (or retake) the address map of a live process as the map of its exec epoch. */
int sym_proc_load(struct sym *s, uint32_t pid, uint32_t epoch);
/* Retake it only if it was taken before @since_ns (the process loaded objects then). */
int sym_proc_reload(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t since_ns);
/* Take it unless it was taken after @ts, when the image was first sampled (a sample named
 * before its event came here took the map then). */
int sym_proc_sampled(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t ts);
/*
 * Process @pid was forked from @ppid running its image @pepoch: until it execs, its map is a
 * copy of that one, which names its pcs if it is gone before its own is read.
 */
void sym_proc_forked(struct sym *s, uint32_t pid, uint32_t ppid, uint32_t pepoch);
/* The process left this epoch (exec or exit): its map is final, no more re-reads. */
void sym_proc_final(struct sym *s, uint32_t pid, uint32_t epoch);
/* Let go of the maps of images left before @before_ns, whose samples have all been read. */
void sym_forget_final(struct sym *s, uint64_t before_ns);

/*
 * The addresses looked up next are of a sample taken at @ns (CLOCK_MONOTONIC; 0: unknown).
 * A pc that no mapping holds, or only one that was not executable, makes a living process's
 * map be read again at once if the map is older than the sample (a library mapped since,
 * ld.so at work after exec); with no time, a millisecond after the last read at the earliest.
 */
void sym_sample_taken(struct sym *s, uint64_t ns);

/* Objects mapped by (pid, epoch) that carry pcmon critical-section probes. */
void sym_proc_usdt(struct sym *s, uint32_t pid, uint32_t epoch,
		   void (*cb)(void *ctx, const char *path), void *ctx);

bool sym_file_has_probes(const char *path);
bool sym_fd_has_probes(int fd);
/* A string at @addr in process (pid, epoch): from its object file, else from the process. */
int sym_user_string(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t addr, char *buf,
		    size_t len);

/* Location of a user pc in process (pid, epoch); @call_site: pc is a return address. */
uint32_t sym_user(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site);
uint32_t sym_kernel(struct sym *s, uint64_t pc, bool call_site);
bool sym_kernel_is_tracer(struct sym *s, uint64_t pc);

const struct sym_loc *sym_loc(const struct sym *s, uint32_t loc);
const uint32_t *sym_frames(const struct sym *s, const struct sym_loc *l);
/* Per frame of @l, parallel to sym_frames(): the frame's own file and line. */
const struct sym_line *sym_frame_lines(const struct sym *s, const struct sym_loc *l);
const struct sym_procinfo *sym_proc(const struct sym *s, uint32_t proc);
uint32_t sym_nprocs(const struct sym *s);
const char *sym_str(const struct sym *s, uint32_t id); /* "" for 0 */
/* Intern a procedure by names (for results loaded from disk). */
int sym_intern_proc(struct sym *s, const char *module, const char *name, const char *file,
		    uint32_t line, uint32_t *proc);
/*
 * Intern a location with given frames, innermost first (results loaded from disk, tests):
 * @n procedure names (NULL: no name), and per frame its file (NULL: unknown) and line (0);
 * @files and @lines may be NULL for none known.
 */
int sym_intern_loc(struct sym *s, const char *module, uint64_t addr, const char *const *procs,
		   const char *const *files, const uint32_t *lines, size_t n, uint32_t *loc);
int sym_intern_str(struct sym *s, const char *str, uint32_t *id);
/* A procedure's file and first line, if it has none yet (one interned from results loaded
 * from disk, named again by a runtime that knows them: docs/java.md). */
void sym_set_proc_file(struct sym *s, uint32_t proc, const char *file, uint32_t line);
/* Where a procedure's code is (symbolization finds it; results loaded from disk say it). */
void sym_set_proc_extent(struct sym *s, uint32_t proc, uint64_t lo, uint64_t hi);
/* The directory @vaddr of @module's compilation unit was compiled in (DW_AT_comp_dir): where
 * its line table's relative file names are; NULL if not known or the object is not open. */
const char *sym_comp_dir(const struct sym *s, uint32_t module, uint64_t vaddr);
/* Up to @len bytes of code at @vaddr of @module, from its file: how many, or -ENOENT (the
 * object is not open: results loaded from disk, or no such address). */
int sym_code_bytes(const struct sym *s, uint32_t module, uint64_t vaddr, void *buf, size_t len);

/*
 * What one row of an object's call-frame information says, as the unwinder reads it: the
 * CFA is a register plus an offset, and each register is not known (CFI_NONE, CFI_UNDEF:
 * the row says so), left alone (CFI_SAME), saved at CFA + off (CFI_AT), or CFA + off itself
 * (CFI_VAL). A row that says more (a DWARF expression, a register kept in another) keeps
 * libdw's frame in @frame, read as it is; the rest is then unused. Rows are kept once per
 * object however many addresses share them: libdw's frame is 200-300 bytes an address.
 */
enum cfi_kind { CFI_NONE, CFI_UNDEF, CFI_SAME, CFI_AT, CFI_VAL };
struct cfi_rule {
	Dwarf_Frame *frame;
	int32_t cfa_off;
	uint8_t cfa_reg;
	uint8_t ra;		/* the return address's column */
	bool signal;		/* a signal frame's row */
	uint8_t kind[PCMON_NREGS];
	int16_t off[PCMON_NREGS];
};

/*
 * dwarf_frame_register() for register @reg of @frame, with the x86-64 psABI's defaults for
 * a register the row does not mention: callee-saved ones (rbx, rbp, r12-r15) keep their
 * value, others are undefined. (libdw's defaults for x86-64, elfutils up to at least
 * 0.188, name rax as callee-saved in place of rbx: a leaf that had not saved rbx yet left
 * it undefined, and a caller whose CFA is rbx-based, the dynamic linker's
 * _dl_runtime_resolve, could not be stepped out of.)
 */
int sym_frame_register(Dwarf_Frame *frame, int reg, Dwarf_Op ops_mem[3], Dwarf_Op **ops,
		       size_t *nops);

/*
 * The CFI row for @pc in (pid, epoch): 0, or -ENOENT (no object or no CFI covers it). The
 * row is the symbolizer's (cached): good until its next call, and not to be freed.
 */
int sym_cfi_rule(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc,
		 const struct cfi_rule **rule);

/*
 * Module @module's .eh_frame compiled into rows for BPF to unwind with (pcmon_sample.h):
 * sorted by pc, *@nout of them in *@out (the caller frees them). -ENOENT if it has no
 * .eh_frame, -E2BIG if its code is not within 4 GiB of vaddr 0, -ENOMEM.
 */
struct pcmon_cfi_row;
int sym_cfi_table(struct sym *s, uint32_t module, struct pcmon_cfi_row **out, uint32_t *nout);
/* The size of module @module's .eh_frame in its file (0: none, or it cannot be opened). */
uint64_t sym_eh_frame_bytes(struct sym *s, uint32_t module);
/* A CFI row as BPF's tables say it: PCMON_CFI_NONE if they cannot (cfi_rule.frame set, a
 * signal frame, a CFA not at rsp or rbp, a return address not at CFA - 8). */
void cfi_bpf_row(const struct cfi_rule *r, struct pcmon_cfi_row *row);

/*
 * The executable mappings of objects in process @pid (image @epoch), as last read (@reread:
 * read again now): @cb gets each one's addresses, file offset, the bias that turns them into
 * its object's vaddrs (vaddr = address - bias) and its module. -ESRCH if the process has left the image.
 */
typedef void (*sym_code_cb)(void *ctx, uint64_t start, uint64_t end, uint64_t pgoff,
			    uint64_t bias, uint32_t module);
int sym_code_maps(struct sym *s, uint32_t pid, uint32_t epoch, bool reread, sym_code_cb cb,
		  void *ctx);

/*
 * Is @pc, which no CFI covers, the first user instruction of a thread the kernel has just
 * created? It is when it follows a `syscall` in an object that otherwise has CFI: glibc's
 * clone and clone3 end their FDE before the system call on purpose, the child's frame being
 * new. Such a thread has no other user frame yet.
 */
bool sym_thread_entry(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc);

struct sym_module_info {
	const char *path;
	const char *name;		/* as procedures are prefixed: "libc.so.6", "kernel" */
	const unsigned char *build_id;	/* NULL: not known (not opened, or loaded from disk) */
	int build_id_len;
	bool opened, eh_frame, debug_frame, cfi_known, usdt;
	uint64_t unwinds, unwind_misses;
};
int sym_module_info(const struct sym *s, uint32_t module, struct sym_module_info *out);
uint32_t sym_nmodules(const struct sym *s);

/* Separate debug info from debuginfod servers (dbginfo.h); NULL: local lookups only. */
struct dbginfo;
void sym_set_dbginfo(struct sym *s, struct dbginfo *d);
/*
 * What the symbolizer asks the engine's process map about processes:
 * @epoch: the exec epoch process @pid runs now: 0 and *@epoch, or -errno when not known. A
 *   map is then never read for an image the process has left.
 * @exit_maps: what image @epoch of @pid mapped for execution from files as it exited (as
 *   PROCMAPS_EXEC_FILES without names): the number of mappings put in @v (at most @max),
 *   or -errno when not noted. An image gone before its map was read is named from that.
 */
struct procmaps_vma;
struct sym_proc_source {
	int (*epoch)(void *ctx, uint32_t pid, uint32_t *epoch);
	int (*exit_maps)(void *ctx, uint32_t pid, uint32_t epoch, struct procmaps_vma *v, int max);
	void *ctx;
};
void sym_set_proc_source(struct sym *s, const struct sym_proc_source *src);
/* The debug file of build-id @bid arrived: symbolize its modules' locations again. */
uint32_t sym_debuginfo_arrived(struct sym *s, const unsigned char *bid, size_t len);

/*
 * The symbolizer's counters, defined once: X(field, status, key) — @status 1: `pcmon status`
 * reports it in "symbols" as @key.
 */
#define SYM_STATS_FIELDS(X)                                                                \
	X(modules, 1, modules)       /* objects known */                                   \
	X(locs, 1, locations)        /* distinct code addresses symbolized */              \
	X(procs, 1, procedures)      /* distinct procedures */                             \
	X(maps_reads, 1, maps_reads) /* reads of a process's address map */                \
	X(maps_misses, 1, maps_misses) /* pcs outside every mapping read: looked up again */ \
	X(maps_queries, 1, maps_queries) /* ... each by a query at its address, not a read */ \
	X(maps_too_late, 1, maps_too_late) /* images sampled, gone before their map was read */ \
	X(maps_at_exit, 1, maps_at_exit) /* ... named from what they mapped as they exited */ \
	X(maps_at_exit_unheld, 1, maps_at_exit_unheld) /* ... mappings of files not held */ \
	X(maps_of_parent, 1, maps_of_parent) /* ... a fork's child, named from its parent's */ \
	X(file_stats, 1, file_stats) /* files without a build-id, told apart by stat() */  \
	X(maps_pinned, 1, maps_pinned) /* mappings of a file held open: no name, build-id */ \
	X(pins_changed, 1, files_changed_in_place) /* ... let go: written over in place */ \
	X(pmaps, 1, processes)       /* address maps held (processes and exec images) */   \
	X(pmaps_freed, 1, processes_forgotten) /* ... let go after their samples drained */ \
	X(modules_closed, 1, objects_closed)     /* objects let go when idle for a minute */ \
	X(modules_reopened, 1, objects_reopened) /* ... and opened again when used again */ \
	X(modules_over_budget, 1, objects_over_budget) /* ... closed early: over the budget */ \
	X(objects_open, 1, objects_open)   /* objects open now (libdw's state, file mapped) */ \
	X(file_pages_given, 1, file_pages_given) /* their files' pages let go, read again on use */ \
	X(names_bytes, 1, names_bytes)     /* locations, procedures, strings: kept for good */ \
	X(objects_bytes, 1, objects_bytes) /* our tables of open objects and address maps */ \
	X(heap_bytes, 1, heap_bytes)       /* the process's heap in use: what the budget reads */

struct sym_stats {
#define SYM_STATS_FIELD(f, status, key) uint64_t f;
	SYM_STATS_FIELDS(SYM_STATS_FIELD)
#undef SYM_STATS_FIELD
};
void sym_stats(const struct sym *s, struct sym_stats *st);
/*
 * Objects no process has used for @idle_ns are let go (their names stay), and while pcmond's
 * heap, less the targets' results and the names kept, holds more than @heap_bytes, of those
 * not used in the last 5 s, the least recently used. 0: the default (60 s, 64 MiB).
 */
void sym_set_limits(struct sym *s, uint64_t idle_ns, uint64_t heap_bytes);
/*
 * Each file mapping of (pid, epoch) as its map was last read (sym_proc_load()), in address
 * order: @cb(ctx, path, start, end, file offset) until it returns nonzero (returned).
 */
int sym_proc_files(struct sym *s, uint32_t pid, uint32_t epoch,
		   int (*cb)(void *ctx, const char *path, uint64_t start, uint64_t end,
			     uint64_t pgoff),
		   void *ctx);
/*
 * Let go of the objects idle that long, and over the budget (the engine's timer calls it):
 * the heap less @kept, what letting objects go cannot free (the targets' results), and less
 * the names kept for good.
 */
void sym_close_idle(struct sym *s, uint64_t kept);

#endif
