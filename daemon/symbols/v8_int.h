/* SPDX-License-Identifier: GPL-2.0-only */
/* What v8.c lends v8_names.c. */
#ifndef PCMON_V8_INT_H
#define PCMON_V8_INT_H

#include "v8.h"

#include <stdbool.h>

/* The layout of the V8 in the ELF object open at @fd (v8_layout()'s returns). */
int v8_layout_of_file(int fd, struct v8_layout *l, char *why, size_t wlen);

/* ---- v8_heap.c: reading a process's heap, each read bounded */

/* Longest name read, in UTF-16 units; a source scanned for its lines, in bytes. */
#define V8_NAME_MAX 256
#define V8_SOURCE_MAX (64u << 20)
#define V8_CONS_DEPTH 8
/* Words of a ScopeInfo read at most (its header, locals, then names and positions). */
#define V8_SCOPE_WORDS 256
/* Bytes of a source position table read at most. */
#define V8_SPT_MAX (1u << 20)

/* @len bytes at @addr of process @pid: 0, or -errno (a user address only). */
int v8_mem_read(uint32_t pid, uint64_t addr, void *buf, size_t len);
uint64_t v8_u64_at(const uint8_t *b, size_t off);
/* Is @w a tagged pointer to a heap object (in user space)? */
bool v8_tagged(uint64_t w);
/* The instance type of heap object @obj (tagged), -1 if it cannot be read. */
int v8_type_of(uint32_t pid, const struct v8_layout *l, uint64_t obj);
/* String @obj (tagged) as UTF-8, at most V8_NAME_MAX units: 0, or -errno. */
int v8_str_read(uint32_t pid, const struct v8_layout *l, uint64_t obj, char *out, size_t len);
/* The line ends of a flat source string @src (tagged), scanned: *@out malloc'ed, 0; -errno. */
int v8_scan_source(uint32_t pid, const struct v8_layout *l, uint64_t src, uint32_t **out,
		   uint32_t *nout);
/* The name and start position (-1: none) of the function whose name or ScopeInfo is @nos. */
void v8_fn_name(uint32_t pid, const struct v8_layout *l, uint64_t nos, char *name, size_t len,
		int64_t *start);
/* A ByteArray @ba (tagged) of @pid, at most @max bytes: malloc'ed, or NULL. */
uint8_t *v8_byte_array(uint32_t pid, const struct v8_layout *l, uint64_t ba, uint32_t max,
		       uint32_t *n);
/* The bytecodes baseline code @code (tagged) was compiled from: malloc'ed, or NULL. */
uint8_t *v8_baseline_bytecodes(uint32_t pid, const struct v8_layout *l, uint64_t code,
			       uint32_t *n);
/* The source position table of the bytecode of function data @fd (tagged), or NULL. */
uint8_t *v8_bytecode_spt(uint32_t pid, const struct v8_layout *l, uint64_t fd, uint32_t *n);

#endif
