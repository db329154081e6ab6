/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pat - WHEN call patterns (docs/when.md): parser and matcher.
 *
 * A pattern is parsed once into an immutable struct pat, expanded into "call threads" (no
 * parentheses, no alternatives), and matched against symbolized stacks.  Matching is exact and
 * takes O(frames x primaries) name tests per thread; it never allocates (it uses at most 16 KiB
 * of stack).  A parsed pattern may be shared by any number of threads.  The language and every
 * rule the spec leaves open are described in docs/when.md.
 */
#ifndef PCMON_PAT_H
#define PCMON_PAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pat_frame {
	const char *module; /* ELF basename ("libc.so.6", "myprog", "kernel"); NULL if unknown */
	const char *proc; /* procedure ("malloc", "f.cold", "ns::cls::m(int)"); NULL if no symbol */
	const char *base; /* C++: the procedure without parameters ("ns::cls::m"); NULL if none */
};

/* A compiled pattern: immutable after pat_parse(), safe to share between threads. */
struct pat;

struct pat_error {
	int column; /* 1-based, in characters (UTF-8 code points) from the start of the text */
	char msg[160]; /* lowercase, no trailing period: "expected a name after '->'" */
};

#define PAT_ICASE 1u /* -i: names match ASCII-case-insensitively */
#define PAT_FROM_FILE 2u /* --when-file: a pattern spanning several lines must end with ';' */

/* Limits; exceeding one is a parse error that names it. */
#define PAT_MAX_TEXT 65536 /* bytes of pattern text */
#define PAT_MAX_DEPTH 64 /* nesting of parentheses */
#define PAT_MAX_THREADS 4096 /* expanded call threads */
#define PAT_MAX_ELEMS 65536 /* primaries summed over all expanded call threads */

/*
 * Parse @text.  Returns 0 and sets *@out, -EINVAL with *@err filled in (if @err is not NULL)
 * for a bad pattern or bad arguments, or -ENOMEM (err->column 0, err->msg "out of memory").
 * *@out is NULL on any error.
 */
int pat_parse(const char *text, unsigned flags, struct pat **out, struct pat_error *err);
void pat_free(struct pat *p);

/*
 * Convert a column of struct pat_error (counted over the whole text) into a line and a column
 * within that line, both 1-based, for patterns read from a file.
 */
void pat_error_location(const char *text, int column, int *line, int *line_column);

#define PAT_NOMATCH (-1)
#define PAT_ABOVE_ROOT (-2)

/*
 * frames[0] is the outermost frame (root, e.g. _start), frames[n-1] the innermost (current).
 * Returns PAT_NOMATCH; PAT_ABOVE_ROOT when a ':' charges the caller of the root, or when a
 * pattern made only of '*' matches an empty stack (the caller counts it as foreignPcs); else
 * the index (0..n-1) of the frame to treat as the current procedure (n-1 when no colon applies).
 * Among matching threads, in expansion order, the first one with a colon decides.  Stacks of
 * more than INT32_MAX frames never match.
 */
int pat_match(const struct pat *p, const struct pat_frame *frames, size_t n);

struct pat_match_info {
	size_t thread; /* expanded thread that decided the result (if it matched) */
	uint64_t name_tests; /* steps of the matching scans (a cost measure, for tests) */
};

/* pat_match() that also reports which thread decided and what it cost; @info may be NULL. */
int pat_match_ex(const struct pat *p, const struct pat_frame *frames, size_t n,
		 struct pat_match_info *info);

/* Number of expanded call threads (at least 1). */
size_t pat_nthreads(const struct pat *p);

/*
 * Canonical text of expanded thread @i, e.g. "m.a->m.b->*->m.d": no blanks, adjacent '*'
 * merged, names as written (quoted names stay quoted).  It parses back to the same thread.
 * Returns 0, -EINVAL for a bad @i, or -ERANGE if @len is too small (@buf then holds as much
 * as fits, NUL-terminated, when @len > 0).
 */
int pat_thread_str(const struct pat *p, size_t i, char *buf, size_t len);

/* Canonical text of the whole pattern: the threads joined by " | ".  Returns as above. */
int pat_str(const struct pat *p, char *buf, size_t len);

/* 1 if any thread carries an attribution colon, else 0. */
int pat_has_colon(const struct pat *p);

/*
 * The expansion taken apart, for matchers of their own (a shadow stack of probed procedures,
 * daemon/pattern/when.c). Thread @i has pat_thread_len() primaries, outermost first;
 * pat_thread_prim() gives primary @k as the index of its name (0 ... pat_nnames() - 1) or
 * PAT_STAR_PRIM. A thread whose last primary is a name is anchored at the innermost frame;
 * every thread may begin anywhere (the implicit leading '*').
 */
#define PAT_STAR_PRIM (-1L)
size_t pat_nnames(const struct pat *p);
size_t pat_thread_len(const struct pat *p, size_t i);
long pat_thread_prim(const struct pat *p, size_t i, size_t k);
/* Does name @name match frame @f, by the rules of docs/when.md (module, clones, globs, -i)? */
bool pat_name_match(const struct pat *p, size_t name, const struct pat_frame *f);
/* Name @name as text that parses back to it (quoted if it was). Returns as pat_str(). */
int pat_name_str(const struct pat *p, size_t name, char *buf, size_t len);

#endif /* PCMON_PAT_H */
