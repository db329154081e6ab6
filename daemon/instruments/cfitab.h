/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cfitab_: the CFI tables BPF walks --unwind dwarf stacks with (bpf/sample_cfi.bpf.h). An
 * object's .eh_frame is compiled into a table once (sym_cfi_table()) and shared by every
 * process that maps it; a process's mappings with a table are listed for BPF once its
 * samples keep coming copied (the first ones, or ones that met code without a table). The
 * tables' rows are held in the kernel, at most a budget of bytes.
 */
#ifndef PCMON_CFITAB_H
#define PCMON_CFITAB_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

struct cfitab;
struct sampler;
struct sym;

/* Tables of at most @budget bytes of rows; NULL when out of memory. */
struct cfitab *cfitab_new(struct sampler *smp, struct sym *sym, uint64_t budget);
void cfitab_free(struct cfitab *t);

/* A sample of process @pid (image @epoch) came copied, at @now_ns: list its mappings anew
 * once enough of them did (at most every 50 ms a process, doubling up to 2 s), or at its
 * first (@eager: a target watches it by itself, and its big objects are compiled too). */
void cfitab_copied(struct cfitab *t, uint32_t pid, uint32_t epoch, bool eager, uint64_t now_ns);
/* ... or list it now: a process a target watches by itself, first sampled (its samples are
 * not left to fill the ring with copies first), or (@again) one listed before that mapped
 * new code. */
void cfitab_list(struct cfitab *t, uint32_t pid, uint32_t epoch, bool again, uint64_t now_ns);
/* Process @pid exited: its list goes. */
void cfitab_exited(struct cfitab *t, uint32_t pid);

/* Objects with a table, their rows and bytes, processes listed, what could not be. */
void cfitab_json(const struct cfitab *t, cJSON *o);

#endif
