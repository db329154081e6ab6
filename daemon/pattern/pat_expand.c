// SPDX-License-Identifier: GPL-2.0-only
/*
 * WHEN call patterns: the syntax tree expanded into call threads (each alternative its own),
 * and those built into the compiled struct pat.
 */
#include "pat_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Expansion */

/* Number of threads and primaries (an upper bound: before merging stars) a node expands to. */
int expand_count(struct parser *ps, uint32_t idx, uint64_t *threads, uint64_t *elems)
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
		err = expand_count(ps, ch, &cc, &ce);
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
			return parse_fail(ps, ps->nodes[ch].pos,
					  "pattern expands to more than %d call threads",
					  PAT_MAX_THREADS);
		if (e > PAT_MAX_ELEMS)
			return parse_fail(ps, ps->nodes[ch].pos,
					  "pattern expands to more than %d primaries in total",
					  PAT_MAX_ELEMS);
	}
	*threads = c;
	*elems = e;
	return 0;
}

void expand_free(struct tlist *tl)
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
	x = pat_grow(dst->e, &dst->cap_e, dst->ne + na + nb, sizeof(*dst->e));
	if (!x)
		return -ENOMEM;
	dst->e = x;
	x = pat_grow(dst->off, &dst->cap_t, dst->n + 1, sizeof(*dst->off));
	if (!x)
		return -ENOMEM;
	dst->off = x;
	x = pat_grow(dst->len, &dst->cap_t2, dst->n + 1, sizeof(*dst->len));
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

int expand_threads(struct parser *ps, uint32_t idx, struct tlist *out)
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
		err = expand_threads(ps, ch, &part);
		if (err)
			goto cleanup;
		if (n->kind == N_ALT || ch == n->child) {
			for (size_t j = 0; j < part.n && !err; j++)
				err = tl_append(&acc, NULL, 0, &part, j);
		} else {
			for (size_t i = 0; i < acc.n && !err; i++)
				for (size_t j = 0; j < part.n && !err; j++)
					err = tl_append(&next, &acc, i, &part, j);
			expand_free(&acc);
			acc = next;
			memset(&next, 0, sizeof(next));
		}
		expand_free(&part);
		if (err)
			goto cleanup;
	}
	*out = acc;
	return 0;
cleanup:
	expand_free(&acc);
	expand_free(&part);
	expand_free(&next);
	return err;
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
	return parse_fail(ps, second->colon_pos,
			  "more than one ':' in call thread '%s' (a thread charges one frame)", buf);
}

int expand_build(struct parser *ps, struct tlist *tl, struct pat *p)
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
