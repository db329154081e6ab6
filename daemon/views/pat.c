// SPDX-License-Identifier: GPL-2.0-only
/*
 * pat - WHEN call patterns: lexer, recursive-descent parser, expansion into call threads, and
 * an exact matcher.
 *
 * Matching a call thread.  After expansion a thread is a sequence of names and stars with
 * adjacent stars merged, so it is a list of "blocks" (runs of names that must match consecutive
 * frames) separated by stars, with an implicit star in front and, unless the thread ends with
 * '*', its last block anchored at the innermost frame.  For such a thread a greedy placement is
 * exact: placing every block at its earliest fitting position decides whether the thread
 * matches, and placing blocks at their latest fitting position from the right gives the room
 * left for the blocks that follow.  The innermost frame the first colon primary can take in
 * any matching is then found by scanning its block's positions downwards between the earliest
 * end of the blocks before it and the latest start of the blocks after it.  Each block is
 * handled by exactly one of these three scans, and a scan tests each (primary, start position)
 * pair at most once, so a thread costs at most frames x primaries name tests: nothing is ever
 * backtracked.
 */
#include "demangle.h"
#include "pat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------------------------------- */
/* Characters */

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Characters that may start an unquoted name (and follow a "::" inside one). */
static bool is_name_start(unsigned char c)
{
	return is_alnum(c) || c == '_' || c == '$' || c == '@' || c == '~' || c == '*' ||
	       c == '?' || c == '.' || c >= 0x80;
}

/* ---------------------------------------------------------------------------------------- */
/* String matching */

static bool eq_n(const char *a, const char *b, size_t n, bool icase)
{
	if (!icase)
		return memcmp(a, b, n) == 0;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return false;
	return true;
}

/*
 * Glob with '*' (any run) and '?' (one byte).  On a mismatch only the most recent '*' is
 * retried, which is exact for this glob language and takes O(plen x slen) at worst.
 */
static bool glob_match(const char *p, size_t plen, const char *s, size_t slen, bool icase)
{
	size_t pi = 0, si = 0, star = NPOS, mark = 0;

	while (si < slen) {
		if (pi < plen && p[pi] == '*') {
			star = ++pi;
			mark = si;
		} else if (pi < plen &&
			   (p[pi] == '?' ||
			    (icase ? lower((unsigned char)p[pi]) == lower((unsigned char)s[si])
				   : p[pi] == s[si]))) {
			pi++;
			si++;
		} else if (star != NPOS) {
			pi = star;
			si = ++mark;
		} else {
			return false;
		}
	}
	while (pi < plen && p[pi] == '*')
		pi++;
	return pi == plen;
}

static bool str_match(const char *p, size_t plen, bool glob, const char *s, size_t slen, bool icase)
{
	if (glob)
		return glob_match(p, plen, s, slen, icase);
	return plen == slen && eq_n(p, s, plen, icase);
}

static const char *const clone_words[] = {
	"cold",	 "isra", "part",       "constprop",   "lto_priv",
	"clone", "llvm", "localalias", "specialized", "__uniq",
};

/*
 * Is s[0..len) a chain of compiler clone suffixes: one or more ".word" or ".word.digits",
 * e.g. ".cold", ".isra.0", ".constprop.0.isra.0", ".llvm.1234"?
 */
static bool is_clone_chain(const char *s, size_t len)
{
	size_t i = 0;

	if (len < 2)
		return false;
	while (i < len) {
		size_t w, k;
		bool known = false;

		if (s[i] != '.')
			return false;
		w = ++i;
		while (i < len && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
			i++;
		for (k = 0; k < sizeof(clone_words) / sizeof(clone_words[0]); k++) {
			if (strlen(clone_words[k]) == i - w &&
			    !memcmp(clone_words[k], s + w, i - w)) {
				known = true;
				break;
			}
		}
		if (!known)
			return false;
		if (i + 1 < len && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
			size_t j = i + 1;

			while (j < len && s[j] >= '0' && s[j] <= '9')
				j++;
			if (j == len || s[j] == '.')
				i = j;
		}
	}
	return true;
}

/* Procedure part @p against a frame's procedure, including its compiler clones. */
static bool proc_match(const char *p, size_t plen, bool glob, bool icase, const char *fp)
{
	size_t len = strlen(fp);

	if (str_match(p, plen, glob, fp, len, icase))
		return true;
	if (!glob)
		return plen < len && fp[plen] == '.' && is_clone_chain(fp + plen, len - plen) &&
		       eq_n(p, fp, plen, icase);
	for (const char *d = memchr(fp + 1, '.', len - (len > 0)); d;
	     d = memchr(d + 1, '.', len - (size_t)(d + 1 - fp))) {
		size_t k = (size_t)(d - fp);

		if (is_clone_chain(d, len - k) && glob_match(p, plen, fp, k, icase))
			return true;
	}
	return false;
}

/* Module part @p against a frame's module: its full basename or the part before its first dot. */
static bool module_match(const char *p, size_t plen, bool glob, bool icase, const char *fm)
{
	size_t len = strlen(fm);
	const char *dot;

	if (str_match(p, plen, glob, fm, len, icase))
		return true;
	dot = memchr(fm, '.', len);
	return dot && str_match(p, plen, glob, fm, (size_t)(dot - fm), icase);
}

static bool name_match(const struct pat *p, const struct pat_name *nm, const struct pat_frame *f)
{
	bool icase = p->flags & PAT_ICASE;

	const char *procs[2] = { f->proc, f->base }; /* a C++ name: in full, or without parameters */

	if (f->module && module_match(nm->s, nm->len, nm->glob, icase, f->module))
		return true;
	for (int k = 0; k < 2 && procs[k]; k++) {
		if (proc_match(nm->s, nm->len, nm->glob, icase, procs[k]))
			return true;
		for (uint32_t i = 0; f->module && i < nm->nsplit; i++) {
			uint32_t d = p->splits[nm->split0 + i] & ~SPLIT_PLUS;
			uint32_t pr = p->splits[nm->split0 + i] & SPLIT_PLUS ? d : d + 1;

			if (module_match(nm->s, d, nm->glob, icase, f->module) &&
			    proc_match(nm->s + pr, nm->len - pr, nm->glob, icase, procs[k]))
				return true;
		}
	}
	return false;
}

/* ---------------------------------------------------------------------------------------- */
/* Matching */

/*
 * Threads expanded from one pattern share their names, so with several threads the result of
 * each (name, frame) test is remembered for the duration of one pat_match() call, in a buffer
 * on the stack when names x frames fit in it (matching never allocates).
 */
#define MEMO_BYTES 16384

struct mctx {
	const struct pat *p;
	const struct pat_frame *fr;
	size_t n;
	uint64_t tests;
	uint8_t *memo; /* names x frames, 0 unknown, 1 no, 2 yes; NULL: no memo */
	uint8_t *any; /* per name: does it match any frame?  Same coding */
};

static bool test_name(struct mctx *m, uint32_t name, size_t f)
{
	uint8_t *v;

	if (!m->memo)
		return name_match(m->p, &m->p->names[name], &m->fr[f]);
	v = &m->memo[(size_t)name * m->n + f];
	if (!*v)
		*v = name_match(m->p, &m->p->names[name], &m->fr[f]) ? 2 : 1;
	return *v == 2;
}

/* With a memo: false if some name of thread @t matches no frame at all. */
static bool names_present(struct mctx *m, const struct pat_thread *t)
{
	if (!m->memo)
		return true;
	for (uint32_t k = 0; k < t->nelem; k++) {
		uint32_t name = m->p->elems[t->elem0 + k].name;
		uint8_t *v = &m->any[name];

		if (name == STAR_NAME)
			continue;
		for (size_t f = 0; !*v && f < m->n; f++)
			if (test_name(m, name, f))
				*v = 2;
		if (!*v)
			*v = 1;
		if (*v == 1)
			return false;
	}
	return true;
}

static bool block_at(struct mctx *m, const struct pat_block *b, size_t s)
{
	for (uint32_t j = 0; j < b->len; j++) {
		m->tests++;
		if (!test_name(m, m->p->elems[b->first + j].name, s + j))
			return false;
	}
	return true;
}

/* Earliest start >= lo of block @b (at n - len if @anchored); NPOS if none. */
static size_t first_fit(struct mctx *m, const struct pat_block *b, size_t lo, bool anchored)
{
	if (b->len > m->n)
		return NPOS;
	if (anchored)
		return m->n - b->len >= lo && block_at(m, b, m->n - b->len) ? m->n - b->len : NPOS;
	for (size_t s = lo; s + b->len <= m->n; s++)
		if (block_at(m, b, s))
			return s;
	return NPOS;
}

/* Latest start s >= lo with s + len <= hi of block @b (only n - len if @anchored); NPOS if none. */
static size_t last_fit(struct mctx *m, const struct pat_block *b, size_t lo, size_t hi,
		       bool anchored)
{
	size_t s;

	if (b->len > hi || hi - b->len < lo)
		return NPOS;
	if (anchored) {
		s = m->n - b->len;
		return s + b->len <= hi && s >= lo && block_at(m, b, s) ? s : NPOS;
	}
	for (s = hi - b->len + 1; s-- > lo;)
		if (block_at(m, b, s))
			return s;
	return NPOS;
}

/* Does thread @t match?  If so, *charged is the frame to charge (or PAT_ABOVE_ROOT). */
static bool match_thread(struct mctx *m, const struct pat_thread *t, int *charged)
{
	const struct pat_block *b = &m->p->blocks[t->block0];
	uint32_t k = t->nblock, c = t->has_colon ? t->colon_block : k;
	size_t lo = 0, hi = m->n, s, j;

	if (!names_present(m, t))
		return false;
	for (uint32_t i = 0; i < c; i++) {
		s = first_fit(m, &b[i], lo, t->anchored && i == k - 1);
		if (s == NPOS)
			return false;
		lo = s + b[i].len;
	}
	if (!t->has_colon) {
		*charged = m->n ? (int)m->n - 1 : PAT_ABOVE_ROOT;
		return true;
	}
	for (uint32_t i = k; --i > c;) {
		s = last_fit(m, &b[i], lo, hi, t->anchored && i == k - 1);
		if (s == NPOS)
			return false;
		hi = s;
	}
	s = last_fit(m, &b[c], lo, hi, t->anchored && c == k - 1);
	if (s == NPOS)
		return false;
	j = s + t->colon_off;
	if (t->colon_kind == COLON_AFTER)
		*charged = (int)j;
	else
		*charged = j ? (int)j - 1 : PAT_ABOVE_ROOT;
	return true;
}

int pat_match_ex(const struct pat *p, const struct pat_frame *frames, size_t n,
		 struct pat_match_info *info)
{
	struct mctx m = { .p = p, .fr = frames, .n = n };
	uint8_t memo[MEMO_BYTES];
	size_t first = NPOS;
	int charged, ret = PAT_NOMATCH;

	if (info) {
		info->thread = 0;
		info->name_tests = 0;
	}
	if (!p || (n && !frames) || n > (size_t)INT32_MAX)
		return PAT_NOMATCH;
	if (p->nthreads > 1 && p->nnames <= MEMO_BYTES / (n + 1)) {
		memset(memo, 0, p->nnames * (n + 1));
		m.memo = memo;
		m.any = memo + p->nnames * n;
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct pat_thread *t = &p->threads[i];

		if (first != NPOS && (!p->any_colon || i > p->last_colon_thread))
			break;
		if (first != NPOS && !t->has_colon)
			continue;
		if (!match_thread(&m, t, &charged))
			continue;
		if (t->has_colon) {
			first = i;
			ret = charged;
			break;
		}
		first = i;
		ret = charged;
	}
	if (info) {
		info->thread = first == NPOS ? 0 : first;
		info->name_tests = m.tests;
	}
	return ret;
}

int pat_match(const struct pat *p, const struct pat_frame *frames, size_t n)
{
	return pat_match_ex(p, frames, n, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* Lexer */

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

static int column_of(const char *text, size_t pos)
{
	int col = 1;

	for (size_t i = 0; i < pos && text[i]; i++)
		if (((unsigned char)text[i] & 0xc0) != 0x80)
			col++;
	return col;
}

__attribute__((format(printf, 3, 4))) static int fail(struct parser *ps, size_t pos,
						      const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return -EINVAL;
	ps->failed = true;
	if (ps->err) {
		ps->err->column = column_of(ps->text, pos);
		va_start(ap, fmt);
		vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A piece of the text for a message: at most 40 bytes, or 36 cut at a character and "...". */
static const char *excerpt(char *buf, size_t size, const char *s, size_t len)
{
	const char *more = "";

	if (len > 40) {
		len = 36;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
		more = "...";
	}
	snprintf(buf, size, "%.*s%s", (int)len, s, more);
	return buf;
}

static int lex_quoted(struct parser *ps, size_t start, struct tok *t, bool report)
{
	static const char escapes[] = "(only \\\" and \\\\ are allowed)";
	const char *s = ps->text;
	size_t i = start + 1;

	for (;;) {
		if (i >= ps->len || s[i] == '\n' || s[i] == '\r')
			return report ? fail(ps, start, "unterminated quote") : -EINVAL;
		if (s[i] == '"')
			break;
		if (s[i] == '\\') {
			if (i + 1 >= ps->len) {
				i++; /* reported as unterminated above */
				continue;
			}
			if (s[i + 1] != '"' && s[i + 1] != '\\') {
				if (!report)
					return -EINVAL;
				if ((unsigned char)s[i + 1] > 0x20 &&
				    (unsigned char)s[i + 1] < 0x7f)
					return fail(ps, i,
						    "unknown escape '\\%c' in quoted name %s",
						    s[i + 1], escapes);
				return fail(ps, i, "unknown escape in quoted name %s", escapes);
			}
			i += 2;
			continue;
		}
		i++;
	}
	if (i == start + 1)
		return report ? fail(ps, start, "empty quoted name") : -EINVAL;
	t->kind = T_NAME;
	t->quoted = true;
	t->end = i + 1;
	return 0;
}

static int lex_name(struct parser *ps, size_t start, struct tok *t, bool report)
{
	const char *s = ps->text;
	size_t i = start, k, angle = 0, open_at = 0;
	bool stars_only = true;

	while (i < ps->len) {
		unsigned char c = (unsigned char)s[i];
		unsigned char c1 = i + 1 < ps->len ? (unsigned char)s[i + 1] : 0;

		if (is_name_start(c) || c == '+' || (c == '-' && c1 != '>')) {
			i++;
		} else if (c == '<' || (c == '>' && angle) || (angle && (c == ',' || c == ' '))) {
			/* C++ template arguments: "geo::Grid<int>::sum", "std::map<int, int>::at" */
			if (c == '<' && !angle++)
				open_at = i;
			angle -= c == '>';
			i++;
		} else if (c == ':' && c1 == ':' && i + 2 < ps->len &&
			   is_name_start((unsigned char)s[i + 2]) && s[i + 2] != '.') {
			i += 2;
			stars_only = false;
			continue;
		} else {
			break;
		}
		if (c != '*')
			stars_only = false;
	}
	t->end = i;
	t->quoted = false;
	if (angle)
		return report ? fail(ps, open_at, "'<' not closed in a name (quote the name)") :
				-EINVAL;
	if (stars_only) {
		t->kind = T_STAR;
		return 0;
	}
	t->kind = T_NAME;
	if (s[start] == '.')
		return report ? fail(ps, start, "a name cannot start with '.'") : -EINVAL;
	if (s[i - 1] == '.' && !report)
		return -EINVAL;
	if (s[i - 1] == '.' && i < ps->len && s[i] == '"')
		return fail(ps, i - 1, "a name cannot end with '.' (quote the whole name)");
	if (s[i - 1] == '.')
		return fail(ps, i - 1, "a name cannot end with '.'");
	for (k = start; k + 1 < i; k++)
		if (s[k] == '.' && s[k + 1] == '.')
			return report ? fail(ps, k, "a name cannot contain '..'") : -EINVAL;
	return 0;
}

/* Lex one token at byte offset @pos.  With !@report, errors are returned but not recorded. */
static int lex_at(struct parser *ps, size_t pos, struct tok *t, bool report)
{
	const char *s = ps->text;
	unsigned char c;

	while (pos < ps->len && is_space((unsigned char)s[pos]))
		pos++;
	t->pos = pos;
	t->end = pos + 1;
	t->quoted = false;
	if (pos >= ps->len) {
		t->kind = T_END;
		t->end = pos;
		return 0;
	}
	c = (unsigned char)s[pos];
	switch (c) {
	case '(':
		t->kind = T_LPAREN;
		return 0;
	case ')':
		t->kind = T_RPAREN;
		return 0;
	case '|':
		t->kind = T_BAR;
		return 0;
	case ';':
		t->kind = T_SEMI;
		return 0;
	case ':':
		t->kind = T_COLON;
		return 0;
	case '"':
		return lex_quoted(ps, pos, t, report);
	case '-':
		if (pos + 1 < ps->len && s[pos + 1] == '>') {
			t->kind = T_ARROW;
			t->end = pos + 2;
			return 0;
		}
		return report ? fail(ps, pos, "unexpected '-' (did you mean '->'?)") : -EINVAL;
	case '>':
		return report ? fail(ps, pos, "unexpected '>' (did you mean '->'?)") : -EINVAL;
	case '\'':
		return report ? fail(ps, pos, "names are quoted with '\"', not with '''") : -EINVAL;
	default:
		break;
	}
	if (is_name_start(c))
		return lex_name(ps, pos, t, report);
	if (!report)
		return -EINVAL;
	if (c > 0x20 && c < 0x7f)
		return fail(ps, pos, "unexpected character '%c'", c);
	return fail(ps, pos, "unexpected character '\\x%02x'", c);
}

static int peek(struct parser *ps, struct tok *t)
{
	int err;

	if (!ps->have_tok) {
		err = lex_at(ps, ps->pos, &ps->tok, true);
		if (err)
			return err;
		ps->have_tok = true;
	}
	*t = ps->tok;
	return 0;
}

static void consume(struct parser *ps)
{
	ps->pos = ps->tok.end;
	ps->have_tok = false;
	if (ps->tok.kind != T_END)
		ps->last_end = ps->tok.end;
}

/* ---------------------------------------------------------------------------------------- */
/* Parser */

static void *grow(void *arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(arr, ncap * size);
	if (n)
		*cap = ncap;
	return n;
}

static int new_node(struct parser *ps, uint8_t kind, size_t pos, uint32_t *idx)
{
	struct node *nodes = grow(ps->nodes, &ps->cap_nodes, ps->nnodes + 1, sizeof(*nodes));

	if (!nodes)
		return -ENOMEM;
	ps->nodes = nodes;
	nodes[ps->nnodes] = (struct node){
		.kind = kind,
		.pos = (uint32_t)pos,
		.name = NONE,
		.child = NONE,
		.last = NONE,
		.next = NONE,
	};
	*idx = (uint32_t)ps->nnodes++;
	return 0;
}

static void add_child(struct parser *ps, uint32_t parent, uint32_t child)
{
	struct node *p = &ps->nodes[parent];

	if (p->last == NONE)
		p->child = child;
	else
		ps->nodes[p->last].next = child;
	p->last = child;
}

/*
 * A mangled C++ or Rust name in a pattern ("_Z3fooi", "prog._Z3fooi") stands for the
 * procedure as listings name it: demangled here, once. NULL if @s holds no mangled name (or
 * memory ran out: it is then matched as written).
 */
static char *demangled(const char *s)
{
	char *d = NULL, *dp;

	if (dm_is_mangled(s))
		d = dm_demangle(s);
	for (const char *dot = strchr(s, '.'); !d && dot; dot = strchr(dot + 1, '.')) {
		if (!dm_is_mangled(dot + 1) || !(dp = dm_demangle(dot + 1)))
			continue;
		if (asprintf(&d, "%.*s.%s", (int)(dot - s), s, dp) < 0)
			d = NULL;
		free(dp);
		break;
	}
	if (d && strlen(d) > 65535) { /* names are at most 64 KiB (SPLIT_PLUS) */
		free(d);
		d = NULL;
	}
	return d;
}

/* Record the name of token @t and return a N_NAME node for it. */
static int new_name(struct parser *ps, const struct tok *t, uint32_t *idx)
{
	struct pat_name *names, *nm;
	const char *raw = ps->text + t->pos;
	size_t rlen = t->end - t->pos, len = 0;
	bool quoted;
	char *s, *d;
	int err;

	names = grow(ps->names, &ps->cap_names, ps->nnames + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	ps->names = names;
	s = malloc(rlen + 1);
	if (!s)
		return -ENOMEM;
	if (t->quoted) {
		for (size_t i = 1; i + 1 < rlen; i++) {
			if (raw[i] == '\\')
				i++;
			s[len++] = raw[i];
		}
	} else {
		memcpy(s, raw, rlen);
		len = rlen;
	}
	s[len] = '\0';
	quoted = t->quoted;
	if ((quoted || !strpbrk(s, "*?")) && (d = demangled(s))) {
		free(s);
		s = d;
		len = strlen(s);
		quoted = true; /* a demangled name is printed quoted: it parses back the same */
	}
	nm = &names[ps->nnames];
	*nm = (struct pat_name){
		.s = s,
		.len = (uint32_t)len,
		.quoted = quoted,
		.glob = !quoted && strpbrk(s, "*?"),
		.split0 = (uint32_t)ps->nsplits,
	};
	ps->nnames++;
	for (size_t d = 1; d + 1 < len; d++) {
		uint32_t *splits;

		if (s[d] != '.' && s[d] != '+')
			continue;
		splits = grow(ps->splits, &ps->cap_splits, ps->nsplits + 1, sizeof(*splits));
		if (!splits)
			return -ENOMEM;
		ps->splits = splits;
		splits[ps->nsplits++] = (uint32_t)d | (s[d] == '+' ? SPLIT_PLUS : 0);
		nm->nsplit++;
	}
	err = new_node(ps, N_NAME, t->pos, idx);
	if (!err)
		ps->nodes[*idx].name = (uint32_t)(ps->nnames - 1);
	return err;
}

static bool starts_primary(enum tok_kind k)
{
	return k == T_NAME || k == T_STAR || k == T_LPAREN || k == T_COLON;
}

enum ctx {
	CTX_START,
	CTX_LPAREN,
	CTX_BAR,
	CTX_ARROW
};

/* @t does not start a primary where one is needed after @ctx (the '(' at @lparen). */
static int no_primary(struct parser *ps, const struct tok *t, enum ctx ctx, size_t lparen)
{
	switch (t->kind) {
	case T_END:
	case T_SEMI:
		if (ctx == CTX_START)
			return fail(ps, t->pos, "empty pattern");
		if (ctx == CTX_LPAREN)
			return fail(ps, lparen, "unbalanced parenthesis: '(' is never closed");
		break;
	case T_RPAREN:
		if (ctx == CTX_START)
			return fail(ps, t->pos,
				    "unbalanced parenthesis: ')' without a matching '('");
		if (ctx == CTX_LPAREN)
			return fail(ps, t->pos, "empty parentheses");
		break;
	case T_BAR:
		if (ctx == CTX_START || ctx == CTX_LPAREN)
			return fail(ps, t->pos, "empty alternative before '|'");
		if (ctx == CTX_BAR)
			return fail(ps, t->pos,
				    "empty alternative between '|' and '|' (write a single '|')");
		break;
	case T_ARROW:
		if (ctx != CTX_ARROW)
			return fail(ps, t->pos, "expected a name before '->'");
		break;
	default:
		break;
	}
	if (ctx == CTX_BAR)
		return fail(ps, t->pos, "empty alternative after '|'");
	return fail(ps, t->pos, "expected a name after '->'");
}

static int parse_alt(struct parser *ps, int depth, enum ctx ctx, size_t lparen, uint32_t *out);

static int parse_primary(struct parser *ps, int depth, uint32_t *out)
{
	struct tok t, u;
	size_t lp, cp;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	switch (t.kind) {
	case T_LPAREN:
		if (depth >= PAT_MAX_DEPTH)
			return fail(ps, t.pos, "parentheses nested more than %d deep",
				    PAT_MAX_DEPTH);
		lp = t.pos;
		consume(ps);
		err = parse_alt(ps, depth + 1, CTX_LPAREN, lp, out);
		if (err)
			return err;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind != T_RPAREN)
			return fail(ps, lp, "unbalanced parenthesis: '(' is never closed");
		consume(ps);
		ps->nodes[*out].pos = (uint32_t)lp;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return fail(ps, t.pos, "':' must be next to a name, not ')'");
		return 0;
	case T_STAR:
		consume(ps);
		err = peek(ps, &u);
		if (err)
			return err;
		if (u.kind == T_COLON)
			return fail(ps, u.pos, "':' must be next to a name, not '*'");
		return new_node(ps, N_STAR, t.pos, out);
	case T_COLON:
		cp = t.pos;
		consume(ps);
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return fail(ps, t.pos,
				    "stray ':' (a name takes at most one ':' before it)");
		if (t.kind == T_STAR)
			return fail(ps, cp, "':' must be next to a name, not '*'");
		if (t.kind == T_LPAREN)
			return fail(ps, cp, "':' must be next to a name, not '('");
		if (t.kind != T_NAME)
			return fail(ps, t.pos, "expected a name after ':'");
		consume(ps);
		err = new_name(ps, &t, out);
		if (err)
			return err;
		ps->nodes[*out].pos = (uint32_t)cp;
		ps->nodes[*out].colon = COLON_BEFORE;
		ps->nodes[*out].colon_pos = (uint32_t)cp;
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind == T_COLON)
			return fail(ps, t.pos, "a name cannot have ':' on both sides");
		return 0;
	case T_NAME:
		consume(ps);
		err = new_name(ps, &t, out);
		if (err)
			return err;
		err = peek(ps, &u);
		if (err || u.kind != T_COLON)
			return err;
		consume(ps);
		ps->nodes[*out].colon = COLON_AFTER;
		ps->nodes[*out].colon_pos = (uint32_t)u.pos;
		err = peek(ps, &u);
		if (err)
			return err;
		if (u.kind == T_COLON)
			return fail(ps, u.pos, "stray ':' (a name takes at most one ':' after it)");
		return 0;
	default:
		return fail(ps, t.pos, "expected a name"); /* callers check starts_primary() */
	}
}

static int parse_seq(struct parser *ps, int depth, uint32_t *out)
{
	char buf[48];
	uint32_t child;
	struct tok t;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	err = new_node(ps, N_SEQ, t.pos, out);
	if (err)
		return err;
	for (;;) {
		err = parse_primary(ps, depth, &child);
		if (err)
			return err;
		add_child(ps, *out, child);
		err = peek(ps, &t);
		if (err)
			return err;
		switch (t.kind) {
		case T_ARROW:
			consume(ps);
			err = peek(ps, &t);
			if (err)
				return err;
			if (!starts_primary(t.kind))
				return no_primary(ps, &t, CTX_ARROW, 0);
			continue;
		case T_BAR:
		case T_END:
		case T_SEMI:
			return 0;
		case T_RPAREN:
			if (depth == 0)
				return fail(ps, t.pos,
					    "unbalanced parenthesis: ')' without a matching '('");
			return 0;
		case T_NAME:
			excerpt(buf, sizeof(buf), ps->text + t.pos, t.end - t.pos);
			if (t.quoted)
				return fail(ps, t.pos, "missing '->' before name %s%s", buf,
					    t.end - t.pos > 40 ? "\"" : "");
			return fail(ps, t.pos, "missing '->' before name '%s'", buf);
		case T_STAR:
			return fail(ps, t.pos, "missing '->' before '*'");
		case T_LPAREN:
			return fail(ps, t.pos, "missing '->' before '('");
		default:
			return fail(ps, t.pos, "stray ':'");
		}
	}
}

static int parse_alt(struct parser *ps, int depth, enum ctx ctx, size_t lparen, uint32_t *out)
{
	uint32_t child;
	struct tok t;
	int err;

	err = peek(ps, &t);
	if (err)
		return err;
	err = new_node(ps, N_ALT, t.pos, out);
	if (err)
		return err;
	for (;;) {
		if (!starts_primary(t.kind))
			return no_primary(ps, &t, ctx, lparen);
		err = parse_seq(ps, depth, &child);
		if (err)
			return err;
		add_child(ps, *out, child);
		err = peek(ps, &t);
		if (err)
			return err;
		if (t.kind != T_BAR)
			return 0;
		consume(ps);
		err = peek(ps, &t);
		if (err)
			return err;
		ctx = CTX_BAR;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* Expansion */

/* Number of threads and primaries (an upper bound: before merging stars) a node expands to. */
static int count(struct parser *ps, uint32_t idx, uint64_t *threads, uint64_t *elems)
{
	const struct node *n = &ps->nodes[idx];
	uint64_t c, e, cc, ce;
	int err;

	if (n->kind == N_NAME || n->kind == N_STAR) {
		*threads = *elems = 1;
		return 0;
	}
	c = n->kind == N_SEQ ? 1 : 0;
	e = 0;
	for (uint32_t ch = n->child; ch != NONE; ch = ps->nodes[ch].next) {
		err = count(ps, ch, &cc, &ce);
		if (err)
			return err;
		/* c, cc <= PAT_MAX_THREADS and e, ce <= PAT_MAX_ELEMS: no overflow */
		if (n->kind == N_SEQ) {
			e = e * cc + ce * c;
			c *= cc;
		} else {
			e += ce;
			c += cc;
		}
		if (c > PAT_MAX_THREADS)
			return fail(ps, ps->nodes[ch].pos,
				    "pattern expands to more than %d call threads",
				    PAT_MAX_THREADS);
		if (e > PAT_MAX_ELEMS)
			return fail(ps, ps->nodes[ch].pos,
				    "pattern expands to more than %d primaries in total",
				    PAT_MAX_ELEMS);
	}
	*threads = c;
	*elems = e;
	return 0;
}

/* A list of threads: thread i is e[off[i] .. off[i] + len[i]). */
struct tlist {
	struct pat_elem *e;
	size_t ne, cap_e;
	uint32_t *off, *len;
	size_t n, cap_t, cap_t2;
};

static void tl_free(struct tlist *tl)
{
	free(tl->e);
	free(tl->off);
	free(tl->len);
	memset(tl, 0, sizeof(*tl));
}

/* Append to @dst the concatenation of thread @i of @a (if @a) and thread @j of @b. */
static int tl_append(struct tlist *dst, const struct tlist *a, size_t i, const struct tlist *b,
		     size_t j)
{
	size_t na = a ? a->len[i] : 0, nb = b->len[j];
	const struct pat_elem *eb = b->e + b->off[j];
	void *x;

	if (na && nb && a->e[a->off[i] + na - 1].name == STAR_NAME && eb->name == STAR_NAME) {
		eb++;
		nb--;
	}
	x = grow(dst->e, &dst->cap_e, dst->ne + na + nb, sizeof(*dst->e));
	if (!x)
		return -ENOMEM;
	dst->e = x;
	x = grow(dst->off, &dst->cap_t, dst->n + 1, sizeof(*dst->off));
	if (!x)
		return -ENOMEM;
	dst->off = x;
	x = grow(dst->len, &dst->cap_t2, dst->n + 1, sizeof(*dst->len));
	if (!x)
		return -ENOMEM;
	dst->len = x;
	if (na)
		memcpy(dst->e + dst->ne, a->e + a->off[i], na * sizeof(*dst->e));
	memcpy(dst->e + dst->ne + na, eb, nb * sizeof(*dst->e));
	dst->off[dst->n] = (uint32_t)dst->ne;
	dst->len[dst->n] = (uint32_t)(na + nb);
	dst->ne += na + nb;
	dst->n++;
	return 0;
}

static int expand(struct parser *ps, uint32_t idx, struct tlist *out)
{
	const struct node *n = &ps->nodes[idx];
	struct tlist acc = { 0 }, part = { 0 }, next = { 0 };
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (n->kind == N_NAME || n->kind == N_STAR) {
		struct pat_elem el = {
			.name = n->kind == N_STAR ? STAR_NAME : n->name,
			.colon = n->colon,
			.colon_pos = n->colon_pos,
		};
		struct tlist one = {
			.e = &el, .ne = 1, .off = &(uint32_t){ 0 }, .len = &(uint32_t){ 1 }, .n = 1
		};

		return tl_append(out, NULL, 0, &one, 0);
	}
	for (uint32_t ch = n->child; ch != NONE; ch = ps->nodes[ch].next) {
		err = expand(ps, ch, &part);
		if (err)
			goto cleanup;
		if (n->kind == N_ALT || ch == n->child) {
			for (size_t j = 0; j < part.n && !err; j++)
				err = tl_append(&acc, NULL, 0, &part, j);
		} else {
			for (size_t i = 0; i < acc.n && !err; i++)
				for (size_t j = 0; j < part.n && !err; j++)
					err = tl_append(&next, &acc, i, &part, j);
			tl_free(&acc);
			acc = next;
			memset(&next, 0, sizeof(next));
		}
		tl_free(&part);
		if (err)
			goto cleanup;
	}
	*out = acc;
	return 0;
cleanup:
	tl_free(&acc);
	tl_free(&part);
	tl_free(&next);
	return err;
}

/* ---------------------------------------------------------------------------------------- */
/* Printing */

struct sbuf {
	char *buf;
	size_t len, pos;
	bool overflow;
};

static void sb_putc(struct sbuf *sb, char c)
{
	if (sb->pos + 1 < sb->len)
		sb->buf[sb->pos++] = c;
	else
		sb->overflow = true;
}

static void sb_puts(struct sbuf *sb, const char *s)
{
	while (*s)
		sb_putc(sb, *s++);
}

static void sb_name(struct sbuf *sb, const struct pat_name *nm)
{
	if (!nm->quoted) {
		sb_puts(sb, nm->s);
		return;
	}
	sb_putc(sb, '"');
	for (uint32_t c = 0; c < nm->len; c++) {
		if (nm->s[c] == '"' || nm->s[c] == '\\')
			sb_putc(sb, '\\');
		sb_putc(sb, nm->s[c]);
	}
	sb_putc(sb, '"');
}

static void sb_thread(struct sbuf *sb, const struct pat *p, size_t i)
{
	const struct pat_thread *t = &p->threads[i];

	for (uint32_t k = 0; k < t->nelem; k++) {
		const struct pat_elem *e = &p->elems[t->elem0 + k];

		if (k)
			sb_puts(sb, "->");
		if (e->name == STAR_NAME) {
			sb_putc(sb, '*');
			continue;
		}
		if (e->colon == COLON_BEFORE)
			sb_putc(sb, ':');
		sb_name(sb, &p->names[e->name]);
		if (e->colon == COLON_AFTER)
			sb_putc(sb, ':');
	}
}

static int sb_finish(struct sbuf *sb)
{
	if (sb->len)
		sb->buf[sb->pos] = '\0';
	return sb->overflow ? -ERANGE : 0;
}

int pat_thread_str(const struct pat *p, size_t i, char *buf, size_t len)
{
	struct sbuf sb = { .buf = buf, .len = len };

	if (!p || i >= p->nthreads || (!buf && len))
		return -EINVAL;
	sb_thread(&sb, p, i);
	return sb_finish(&sb);
}

int pat_str(const struct pat *p, char *buf, size_t len)
{
	struct sbuf sb = { .buf = buf, .len = len };

	if (!p || (!buf && len))
		return -EINVAL;
	for (size_t i = 0; i < p->nthreads; i++) {
		if (i)
			sb_puts(&sb, " | ");
		sb_thread(&sb, p, i);
	}
	return sb_finish(&sb);
}

/* ---------------------------------------------------------------------------------------- */
/* Building */

/* Thread @i of @p has a second colon, @second. */
static int two_colons(struct parser *ps, const struct pat *p, size_t i,
		      const struct pat_elem *second)
{
	char buf[64];

	if (pat_thread_str(p, i, buf, sizeof(buf)) == -ERANGE)
		memcpy(buf + sizeof(buf) - 4, "...", 4);
	return fail(ps, second->colon_pos,
		    "more than one ':' in call thread '%s' (a thread charges one frame)", buf);
}

static int build(struct parser *ps, struct tlist *tl, struct pat *p)
{
	size_t nb = 0;

	p->names = ps->names;
	p->nnames = ps->nnames;
	p->splits = ps->splits;
	ps->names = NULL;
	ps->splits = NULL;
	ps->nnames = 0;

	p->elems = tl->e;
	p->nelems = tl->ne;
	tl->e = NULL;
	p->threads = calloc(tl->n, sizeof(*p->threads));
	p->blocks = calloc(tl->ne ? tl->ne : 1, sizeof(*p->blocks));
	if (!p->threads || !p->blocks)
		return -ENOMEM;
	p->nthreads = tl->n;
	for (size_t i = 0; i < tl->n; i++) {
		struct pat_thread *t = &p->threads[i];
		const struct pat_elem *second = NULL;

		t->elem0 = tl->off[i];
		t->nelem = tl->len[i];
		t->block0 = (uint32_t)nb;
		t->anchored = p->elems[t->elem0 + t->nelem - 1].name != STAR_NAME;
		for (uint32_t k = 0; k < t->nelem; k++) {
			const struct pat_elem *e = &p->elems[t->elem0 + k];
			struct pat_block *b;

			if (e->name == STAR_NAME)
				continue;
			if (k == 0 || e[-1].name == STAR_NAME) {
				b = &p->blocks[nb++];
				b->first = t->elem0 + k;
				b->len = 0;
				t->nblock++;
			} else {
				b = &p->blocks[nb - 1];
			}
			if (e->colon != COLON_NONE && t->has_colon && !second) {
				second = e;
			} else if (e->colon != COLON_NONE && !t->has_colon) {
				t->has_colon = true;
				t->colon_kind = e->colon;
				t->colon_block = t->nblock - 1;
				t->colon_off = b->len;
			}
			b->len++;
		}
		if (second)
			return two_colons(ps, p, i, second);
		if (t->has_colon) {
			p->any_colon = true;
			p->last_colon_thread = i;
		}
	}
	p->nblocks = nb;
	return 0;
}

static void free_names(struct pat_name *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i].s);
	free(names);
}

void pat_free(struct pat *p)
{
	if (!p)
		return;
	free_names(p->names, p->nnames);
	free(p->splits);
	free(p->elems);
	free(p->blocks);
	free(p->threads);
	free(p);
}

/* Is the first token the keyword WHEN rather than a name "when"? */
static bool is_keyword(struct parser *ps)
{
	struct tok t, u;

	if (lex_at(ps, 0, &t, false) || t.kind != T_NAME || t.quoted || t.end - t.pos != 4 ||
	    !eq_n(ps->text + t.pos, "when", 4, true))
		return false;
	if (lex_at(ps, t.end, &u, false))
		return false;
	if (u.kind == T_NAME || u.kind == T_STAR || u.kind == T_LPAREN)
		return true;
	if (u.kind != T_COLON)
		return false;
	return !lex_at(ps, u.end, &t, false) && t.kind == T_NAME;
}

static int parse_all(struct parser *ps, struct pat **out)
{
	struct tlist tl = { 0 };
	uint64_t nthreads, nelems;
	struct pat *p = NULL;
	uint32_t root;
	struct tok t;
	int err;

	if (ps->len > PAT_MAX_TEXT)
		return fail(ps, 0, "pattern is longer than %d bytes", PAT_MAX_TEXT);
	if (is_keyword(ps)) {
		lex_at(ps, 0, &t, false);
		ps->pos = t.end;
		ps->first_pos = t.pos;
	}
	err = peek(ps, &t);
	if (err)
		return err;
	if (ps->pos == 0)
		ps->first_pos = t.pos;
	err = parse_alt(ps, 0, CTX_START, 0, &root);
	if (err)
		return err;
	err = peek(ps, &t);
	if (err)
		return err;
	if (t.kind == T_SEMI) {
		size_t i = t.end;

		while (i < ps->len && is_space((unsigned char)ps->text[i]))
			i++;
		if (i < ps->len)
			return fail(ps, i, "unexpected text after ';'");
	} else if ((ps->flags & PAT_FROM_FILE) &&
		   memchr(ps->text + ps->first_pos, '\n', ps->last_end - ps->first_pos)) {
		return fail(ps, t.pos, "a pattern spanning several lines must end with ';'");
	}
	err = count(ps, root, &nthreads, &nelems);
	if (err)
		return err;
	err = expand(ps, root, &tl);
	if (err)
		goto cleanup;
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = -ENOMEM;
		goto cleanup;
	}
	p->flags = ps->flags;
	err = build(ps, &tl, p);
	if (err)
		goto cleanup;
	*out = p;
	p = NULL;
cleanup:
	tl_free(&tl);
	pat_free(p);
	return err;
}

int pat_parse(const char *text, unsigned flags, struct pat **out, struct pat_error *err)
{
	struct parser ps = { .text = text ? text : "", .flags = flags, .err = err };
	int ret;

	if (err) {
		err->column = 0;
		err->msg[0] = '\0';
	}
	if (!out)
		return fail(&ps, 0, "no place to store the pattern");
	*out = NULL;
	if (flags & ~(PAT_ICASE | PAT_FROM_FILE))
		return fail(&ps, 0, "unknown flags 0x%x", flags);
	while (ps.len <= PAT_MAX_TEXT && ps.text[ps.len])
		ps.len++;
	ret = parse_all(&ps, out);
	free(ps.nodes);
	free_names(ps.names, ps.nnames);
	free(ps.splits);
	if (ret == -ENOMEM && err) {
		err->column = 0;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
	}
	return ret;
}

void pat_error_location(const char *text, int column, int *line, int *line_column)
{
	int l = 1, c = 1, col = 1;

	for (size_t i = 0; text && text[i] && col < column; i++) {
		if (((unsigned char)text[i] & 0xc0) == 0x80)
			continue;
		col++;
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else {
			c++;
		}
	}
	if (line)
		*line = l;
	if (line_column)
		*line_column = c;
}

size_t pat_nthreads(const struct pat *p)
{
	return p ? p->nthreads : 0;
}

int pat_has_colon(const struct pat *p)
{
	return p && p->any_colon;
}

size_t pat_nnames(const struct pat *p)
{
	return p ? p->nnames : 0;
}

size_t pat_thread_len(const struct pat *p, size_t i)
{
	return p && i < p->nthreads ? p->threads[i].nelem : 0;
}

long pat_thread_prim(const struct pat *p, size_t i, size_t k)
{
	const struct pat_elem *e;

	if (!p || i >= p->nthreads || k >= p->threads[i].nelem)
		return PAT_STAR_PRIM;
	e = &p->elems[p->threads[i].elem0 + k];
	return e->name == STAR_NAME ? PAT_STAR_PRIM : (long)e->name;
}

bool pat_name_match(const struct pat *p, size_t name, const struct pat_frame *f)
{
	return p && name < p->nnames && name_match(p, &p->names[name], f);
}

int pat_name_str(const struct pat *p, size_t name, char *buf, size_t len)
{
	struct sbuf sb = { .buf = buf, .len = len };

	if (!p || name >= p->nnames || (!buf && len))
		return -EINVAL;
	sb_name(&sb, &p->names[name]);
	return sb_finish(&sb);
}
