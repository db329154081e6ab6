// SPDX-License-Identifier: GPL-2.0-only
/*
 * The matcher of WHEN call patterns (pat.h): a stack's frames against a pattern's threads.
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
#include "pat_int.h"

#include <string.h>

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* ---------------------------------------------------------------------------------------- */
/* String matching */

bool match_eq_n(const char *a, const char *b, size_t n, bool icase)
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
	return plen == slen && match_eq_n(p, s, plen, icase);
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
		       match_eq_n(p, fp, plen, icase);
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

bool match_name(const struct pat *p, const struct pat_name *nm, const struct pat_frame *f)
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
		return match_name(m->p, &m->p->names[name], &m->fr[f]);
	v = &m->memo[(size_t)name * m->n + f];
	if (!*v)
		*v = match_name(m->p, &m->p->names[name], &m->fr[f]) ? 2 : 1;
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
