// SPDX-License-Identifier: GPL-2.0-only
/*
 * pat - WHEN call patterns (pat.h): a compiled pattern, printed, freed and read. It is
 * parsed in pat_parse.c, expanded in pat_expand.c and matched in pat_match.c.
 */
#include "pat_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void *pat_grow(void *arr, size_t *cap, size_t need, size_t size)
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

/* ---------------------------------------------------------------------------------------- */
/* Errors: the parser's (pat_parse.c) and its expansion's (pat_expand.c), which report alike */

static int column_of(const char *text, size_t pos)
{
	int col = 1;

	for (size_t i = 0; i < pos && text[i]; i++)
		if (((unsigned char)text[i] & 0xc0) != 0x80)
			col++;
	return col;
}

int parse_fail(struct parser *ps, size_t pos, const char *fmt, ...)
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

void pat_free_names(struct pat_name *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i].s);
	free(names);
}

void pat_free(struct pat *p)
{
	if (!p)
		return;
	pat_free_names(p->names, p->nnames);
	free(p->splits);
	free(p->elems);
	free(p->blocks);
	free(p->threads);
	free(p);
}

/* Is the first token the keyword WHEN rather than a name "when"? */

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
	return p && name < p->nnames && match_name(p, &p->names[name], f);
}

int pat_name_str(const struct pat *p, size_t name, char *buf, size_t len)
{
	struct sbuf sb = { .buf = buf, .len = len };

	if (!p || name >= p->nnames || (!buf && len))
		return -EINVAL;
	sb_name(&sb, &p->names[name]);
	return sb_finish(&sb);
}
