/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the parts of WHEN call patterns (pat.h) share, and no other file includes: the
 * compiled pattern, the parser's tokens and syntax tree, the expanded thread list.
 *
 *   pat.c         a compiled pattern: printing, freeing, its accessors (pat_)
 *   pat_parse.c   lexer and recursive-descent parser: text to a syntax tree (parse_)
 *   pat_expand.c  the tree expanded into call threads, built into a struct pat (expand_)
 *   pat_match.c   the exact matcher of a stack against the threads (match_)
 */
#ifndef PCMON_PAT_INT_H
#define PCMON_PAT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pat.h"

#define NONE UINT32_MAX /* no node, no index */
#define NPOS SIZE_MAX /* no position */
#define STAR_NAME UINT32_MAX

enum colon_kind {
	COLON_NONE = 0,
	COLON_BEFORE = 1, /* ":name": charge the caller of the matched frame */
	COLON_AFTER = 2, /* "name:": charge the matched frame */
};

struct pat_name {
	char *s; /* unquoted: as written; quoted: decoded */
	uint32_t len;
	bool quoted; /* matched literally, printed quoted */
	bool glob; /* contains '*' or '?' and is not quoted */
	uint32_t split0, nsplit; /* where it splits into module + procedure, in pat->splits */
};

/*
 * A name splits into module + procedure at a '.', which belongs to neither side, or at a '+',
 * which begins the procedure: code without a symbol is named "+0xSTART" after its FDE, and
 * written after its module as "liblzma.so.5+0x15b40" (daemon/symbols/sym.h). Splits at a '+' carry
 * this bit (names are at most 65536 bytes long).
 */
#define SPLIT_PLUS 0x80000000u

struct pat_elem {
	uint32_t name; /* index into pat->names, or STAR_NAME */
	uint32_t colon_pos; /* byte offset of the colon, for errors */
	uint8_t colon; /* enum colon_kind */
};

struct pat_block {
	uint32_t first; /* index into pat->elems of its first name */
	uint32_t len;
};

struct pat_thread {
	uint32_t elem0, nelem;
	uint32_t block0, nblock;
	bool anchored; /* does not end with '*': the last block is at the innermost frame */
	bool has_colon;
	uint8_t colon_kind;
	uint32_t colon_block; /* relative to block0 */
	uint32_t colon_off; /* offset of the colon primary within its block */
};

struct pat {
	unsigned flags;
	struct pat_name *names;
	size_t nnames;
	uint32_t *splits;
	struct pat_elem *elems;
	size_t nelems;
	struct pat_block *blocks;
	size_t nblocks;
	struct pat_thread *threads;
	size_t nthreads;
	size_t last_colon_thread; /* valid when any_colon */
	bool any_colon;
};

enum tok_kind {
	T_END,
	T_NAME,
	T_STAR,
	T_COLON,
	T_ARROW,
	T_BAR,
	T_LPAREN,
	T_RPAREN,
	T_SEMI,
};

struct tok {
	enum tok_kind kind;
	size_t pos, end; /* byte offsets; a quoted name's span includes its quotes */
	bool quoted;
};

enum node_kind {
	N_NAME,
	N_STAR,
	N_SEQ,
	N_ALT
};

struct node {
	uint8_t kind;
	uint8_t colon;
	uint32_t pos; /* first byte */
	uint32_t colon_pos;
	uint32_t name; /* N_NAME: index into parser names */
	uint32_t child, last, next;
};

struct parser {
	const char *text;
	size_t len;
	unsigned flags;
	struct pat_error *err;
	bool failed;

	size_t pos; /* lexer position */
	struct tok tok;
	bool have_tok;
	size_t first_pos, last_end; /* span of the pattern's tokens */

	struct node *nodes;
	size_t nnodes, cap_nodes;
	struct pat_name *names;
	size_t nnames, cap_names;
	uint32_t *splits;
	size_t nsplits, cap_splits;
};

/* A list of threads: thread i is e[off[i] .. off[i] + len[i]). */
struct tlist {
	struct pat_elem *e;
	size_t ne, cap_e;
	uint32_t *off, *len;
	size_t n, cap_t, cap_t2;
};

/* pat.c */
void *pat_grow(void *arr, size_t *cap, size_t need, size_t size);
void pat_free_names(struct pat_name *names, size_t n);

/* pat_parse.c */
__attribute__((format(printf, 3, 4))) int parse_fail(struct parser *ps, size_t pos,
						       const char *fmt, ...);

/* pat_expand.c */
int expand_count(struct parser *ps, uint32_t idx, uint64_t *threads, uint64_t *elems);
void expand_free(struct tlist *tl);
int expand_threads(struct parser *ps, uint32_t idx, struct tlist *out);
int expand_build(struct parser *ps, struct tlist *tl, struct pat *p);

/* pat_match.c */
bool match_eq_n(const char *a, const char *b, size_t n, bool icase);
bool match_name(const struct pat *p, const struct pat_name *nm, const struct pat_frame *f);

#endif /* PCMON_PAT_INT_H */
