/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The engine's settings (pcmond's options and configuration, or pcmon run's): made by the
 * engine's caller, lent to every instrument (struct inst_env, inst.h).
 */
#ifndef PCMON_ENGINE_OPTS_H
#define PCMON_ENGINE_OPTS_H

#include <stdbool.h>
#include <stdint.h>

struct engine_opts {
	const char *state_dir;	/* where results are kept across restarts; NULL: nowhere */
	uint32_t max_depth;	/* frames per stack wanted (0: 512) */
	uint32_t dwarf_stack;	/* most bytes of user stack a dwarf sample copies (0: 1 MiB) */
	uint32_t drain_ms;	/* how often the engine's timer ticks (0: 1000) */
	uint32_t counts_entries; /* sampling entries BPF holds between drains (0: 65536) */
	bool bpf_stats;		/* count BPF programs' runs and run time (all programs pay) */
	uint32_t user_targets;	/* targets one user other than root may have (0: 16) */
	uint64_t user_memory;	/* bytes of results the targets of one user may hold (0: 256 MiB) */
	const char *debuginfod;	/* debuginfod servers; NULL: $DEBUGINFOD_URLS; "": off */
	const char *cache_dir;	/* downloaded debug info goes under it (NULL: the current dir) */
	uint32_t object_idle_s;	/* objects unused this long are let go (0: 60) */
	uint64_t object_memory;	/* ... and more while the heap, less results and names, holds more (0: 64 MiB) */
	uint64_t cfi_tables;	/* bytes of CFI tables BPF may hold (0: none, stacks copied) */
};

/* pcmond's --cfi-tables, and what an engine of the CLI's own holds */
#define PCMON_CFI_TABLES_DEFAULT_MIB 64

#endif
