/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * funcs_: the procedures a name pattern (docs/when.md: module.proc, globs) names in the objects
 * a process maps, with where their code starts in each file: where call counting puts its
 * probes. Symbols come from the object's own .symtab and .dynsym (libelf), read through
 * /proc/PID/map_files so that containers and replaced files resolve.
 */
#ifndef PCMON_FUNCS_H
#define PCMON_FUNCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct near;
struct pat;

struct func {
	char *path;		/* a path to the file that stays valid (/proc/PID/map_files/...) */
	dev_t dev;
	ino_t ino;
	char *module;		/* the file's basename, as procedures are named */
	char *name;
	uint64_t vaddr;		/* its start as an ELF address (as nm prints it) */
	uint64_t offset;	/* ... and as a file offset (where a uprobe goes) */
	bool xol;		/* its first instruction is one the kernel steps out of line
				 * (not a push, which a uprobe emulates): a dearer probe */
};

/*
 * Every procedure of process @pid that @pat names, once per (file, start). Appends to *out
 * (*n entries, *cap allocated). @objects, if not NULL, gets the number of objects searched.
 * 0 or -errno (no such process).
 */
int funcs_find(uint32_t pid, const struct pat *pat, struct func **out, size_t *n, size_t *cap,
	       size_t *objects);
/*
 * The same, and every function it does not name offered to @nr (near.h), if not NULL: the
 * names nearest a pattern that named nothing, for its error.
 */
int funcs_find_near(uint32_t pid, const struct pat *pat, struct func **out, size_t *n,
		    size_t *cap, size_t *objects, struct near *nr);
/* The same for one file, @module its name (a command about to be exec'ed). */
int funcs_find_file(const char *path, const char *module, const struct pat *pat,
		    struct func **out, size_t *n, size_t *cap);
/*
 * The addresses where source line @file:@line starts a statement in the object @path (its
 * DWARF line table; every copy of an inlined line), as funcs named "FILE:LINE". @file
 * matches a source path's last components. 0, -ENODATA (no DWARF), or -errno.
 */
int funcs_find_line(const char *path, const char *module, const char *file, int line,
		    struct func **out, size_t *n, size_t *cap);
void funcs_free(struct func *f, size_t n);
/*
 * The file offsets of the functions named exactly @names[0..n) (NULL: none asked) in the
 * object @path, in one pass over its symbol tables: @off[k], 0 where it has none. The number
 * found, or -errno.
 */
int funcs_offsets(const char *path, const char *const *names, size_t n, uint64_t *off);

/* Does a uprobe at file offset @off of @path step its instruction out of line? */
bool funcs_stepped(const char *path, uint64_t off);
/*
 * Where a probe of the function at file offset @off of @path sees what one at its entry
 * would (its arguments, its stack) and the kernel emulates the instruction rather than
 * stepping it out of line, which costs a second trap (10 us a call against 0.5 on this
 * project's machine): past a landing mark, and past a test or compare whose conditional jump
 * follows (glibc's free starts with test %rdi, %rdi). @off when nothing is skipped.
 */
uint64_t funcs_emulated_at(const char *path, uint64_t off);

#endif
