/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * when_: WHEN patterns as every instrument takes them (docs/when.md): the request's pattern
 * compiled once with the same errors everywhere, and, for the probe instruments (call
 * counting, nodes and legs), how a pattern is answered at a probe: from the shadow stack of
 * probed procedures (pcmon_when.h), or from the stack walked there and matched here.
 */
#ifndef PCMON_WHEN_H
#define PCMON_WHEN_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "pat.h"
#include "pcmon_when.h"

/*
 * The pattern @text (NULL: none, *out NULL), read from a file if @from_file (errors by line
 * and column), names ignoring case if @icase. 0, or -errno with the one-line error in *err
 * ("--when: column 12: expected a name after '->'").
 */
int when_compile(const char *text, bool from_file, bool icase, struct pat **out, cJSON **err);

/*
 * Can the shadow stack answer @p (names joined through '*' only, at most PCMON_WHEN_THREADS
 * threads of PCMON_WHEN_NAMES names; no ':' unless @colon_ok: which frame a ':' charges is
 * not known there, only whether the stack matches)? 0 with @w filled in, or -EINVAL with
 * @why saying what needs the stack walked ("'a->b' names a direct call").
 */
int when_plan(const struct pat *p, bool colon_ok, struct pcmon_wpat *w, char *why, size_t whylen);

/* How procedure @f moves each thread of @p (planned as @w). */
void when_adv(const struct pat *p, const struct pcmon_wpat *w, const struct pat_frame *f,
	      struct pcmon_wadv *a);

#endif
