/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of the symbolizer (sym*.c) share, and no other file includes: the tables
 * of struct sym, the objects (struct smod) and the process address maps (struct pmap).
 *
 *   sym.c         the base: strings, procedures, locations and their frames, modules, stats (sym_)
 *   sym_elf.c     objects: opening, pinning their files, letting them go with the tables
 *                 built from them, their bytes (smod_)
 *   sym_names.c   names in an object: ELF symbols, functions of its CFI, DWARF lines; the
 *                 locations of its code (names_)
 *   sym_kernel.c  kallsyms, the locations of kernel code (ksym_)
 *   sym_jit.c     JIT code named by perf maps, its locations (jit_)
 *   sym_maps.c    process address maps: reading, lookups, fork, exit; a user pc's location (pmap_)
 *   sym_cfi.c     call-frame information for the unwinder, debug info that comes late (cfi_)
 *   sym_life.c    struct sym made, and freed with what every part holds
 *
 * sym.c is the base: every other part calls into it, and it calls none of them; a part
 * calls only those above it in this list.
 */
#ifndef PCMON_SYM_INT_H
#define PCMON_SYM_INT_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sym.h"
#include "util.h"

/*
 * A symbol of an object: [start, start + size) in its ELF vaddrs, or (no size) a label that
 * may stand for code up to the end of its section, m->secs[sec]. @name points into libdwfl's
 * copy of the symbol table (lives as long as the module). 32 bytes: a large library has
 * hundreds of thousands.
 */
struct esym {
	uint64_t start;
	uint64_t reach;		/* the largest end of it and of the symbols sorted before it */
	const char *name;
	uint32_t size;		/* sized: its size (at most 4 GiB - 1); a label: its section */
	uint32_t idx : 29;	/* index in libdwfl's table: its order breaks ties */
	uint32_t sized : 1;
	uint32_t bind : 2;	/* 3 global, 2 weak, 1 local, 0 other: higher is preferred */
};

/* A section that labels (symbols without a size) are in: [start, end) in ELF vaddrs. */
struct esec {
	uint64_t start, end;
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
	uint32_t rule;		/* its row in the module's rules; CFI_NO_RULE: no CFI covers it */
};
#define CFI_NO_RULE UINT32_MAX

struct smod {
	char *path;		/* as mapped */
	uint32_t name;		/* string id of the basename */
	Dwfl *dwfl;		/* NULL until opened; one module reported at its own vaddrs */
	Dwfl_Module *mod;
	GElf_Addr bias;
	bool tried;
	bool usdt;		/* has pcmon's critical-section probes */
	bool cfi_tried, dbg_cfi_tried;	/* .eh_frame asked for; .debug_frame (when it did not say) */
	Dwarf_CFI *eh_cfi, *dbg_cfi;	/* call-frame information, owned by dwfl */
	Dwarf_Addr eh_bias, dbg_bias;
	struct cfi_slot *cfi_cache;	/* the rows asked for, by address (sym_cfi_rule()) */
	uint32_t cfi_cap, cfi_n;
	struct cfi_rule *rules;	/* ... each row once */
	uint32_t nrules;
	size_t rules_cap;
	struct itab *rule_keys;	/* ... their ids, by their bytes */
	uint64_t unwinds, unwind_misses; /* frames unwound with its CFI, and without */
	bool fdes_read, syms_read;
	bool dw_asked;		/* libdwfl was asked for its debug info (then loaded, or not) */
	struct fde_range *fdes;	/* functions its CFI describes, sorted by start */
	size_t nfdes;
	struct esym *syms;	/* its symbols, sorted by start */
	size_t nsyms;
	struct esec *secs;	/* the sections its labels are in */
	uint32_t nsecs;
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
	uint64_t reread_ns;	/* when a miss may next read it (pmap_region) */
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
/* How often the pages of open objects' files are let go (sym_close_idle(); half the idle
 * time if less). */
#define SYM_PAGES_NS (10 * 1000000000ULL)

struct sym {
	unsigned flags;
	struct itab *strs;	/* strings; id 0 is "" */
	struct itab *mod_keys;	/* (dev, ino, path) -> module id */
	struct itab *files;	/* (dev, ino) -> entry of file_mod (smod_pin()) */
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
	uint64_t pages_ns;	/* when open objects' file pages were last let go */
	uint64_t budget_ns;	/* when the heap was last held against its budget */
};

/* sym.c */
uint32_t sym_str_id(struct sym *s, const char *str);
int sym_add_module(struct sym *s, const char *path, const char *name, uint32_t *id);
uint64_t sym_heap_in_use(void);
/* The names kept for good: locations, procedures, strings (names_bytes in status). */
uint64_t sym_names_bytes(const struct sym *s);
int sym_push_frame(struct sym *s, const char *module, const char *name, const char *file,
		   uint32_t line, struct sym_line where);
size_t sym_count_starting_by(const void *table, size_t n, size_t size, uint64_t v);
int64_t sym_loc_find(const struct sym *s, uint32_t module, uint64_t addr);
int sym_loc_new(struct sym *s, uint32_t module, uint64_t addr, uint32_t *loc);
void sym_loc_done(struct sym *s, uint32_t loc, const char *name);

/* sym_elf.c */
void smod_pin(struct sym *s, struct smod *m, int fd);
void smod_unpin(struct sym *s, struct smod *m);
bool smod_pinned(struct sym *s, uint64_t dev, uint64_t ino, uint32_t *mod);
void smod_open(struct sym *s, struct smod *m, uint32_t pid, uint64_t start,
	       uint64_t end);
bool smod_vaddr(const struct smod *m, uint64_t off, uint64_t *vaddr);
void smod_drop_cfi_cache(struct smod *m);
void smod_read_fdes(struct smod *m);
size_t smod_eh_fdes(struct smod *m, struct fde_range **out);
/* @elf's section named @name, with contents (*@sh its header); NULL if none. */
Elf_Scn *elf_section_named(Elf *elf, const char *name, GElf_Shdr *sh);
void smod_drop_tables(struct smod *m);
struct smod *smod_use(struct sym *s, uint32_t pid, const struct region *r);
int smod_string(const struct smod *m, uint64_t vaddr, char *buf, size_t len);
int smod_bytes(const struct smod *m, uint64_t vaddr, void *buf, size_t len);

/* sym_names.c */
int names_symbolize(struct sym *s, struct smod *m, Dwarf_Addr a, struct sym_loc *l);
uint32_t names_loc(struct sym *s, uint32_t module, uint64_t addr, Dwarf_Addr a);

/* sym_kernel.c */
const char *ksym_name(struct sym *s, uint64_t a);

/* sym_jit.c */
void jit_refresh(struct sym *s, uint32_t mod);
struct jitmap *jit_map(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t now);
const char *jit_lookup(struct sym *s, struct pmap *pm, struct jitmap *j, uint64_t pc,
		       uint64_t now);
bool jit_user(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t pc, bool create,
	      uint32_t *loc);

/* sym_maps.c */
struct pmap *pmap_get(struct sym *s, uint32_t pid, uint32_t epoch, bool create);
const struct region *pmap_find(const struct pmap *pm, uint64_t pc);
const struct region *pmap_region(struct sym *s, uint32_t pid, uint32_t epoch,
				 uint64_t addr, bool code);

#endif /* PCMON_SYM_INT_H */
