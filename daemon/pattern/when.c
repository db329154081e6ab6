// SPDX-License-Identifier: GPL-2.0-only
/*
 * WHEN patterns at probes (docs/when.md): the request's pattern, and its shadow-stack form.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "when.h"

int when_compile(const char *text, bool file, bool icase, struct pat **out, cJSON **err)
{
	struct pat_error pe = { 0 };
	int r, line, col;

	*out = NULL;
	if (!text)
		return 0;
	r = pat_parse(text, (icase ? PAT_ICASE : 0) | (file ? PAT_FROM_FILE : 0), out, &pe);
	if (r == -EINVAL && file) {
		pat_error_location(text, pe.column, &line, &col);
		*err = proto_error(2, "--when-file: line %d, column %d: %s", line, col, pe.msg);
	} else if (r == -EINVAL) {
		*err = proto_error(2, "--when: column %d: %s", pe.column, pe.msg);
	} else if (r) {
		*err = proto_error(1, "--when: %s", strerror(-r));
	}
	return r;
}

int when_plan(const struct pat *p, bool colon_ok, struct pcmon_wpat *w, char *why, size_t whylen)
{
	size_t nt = pat_nthreads(p);
	char th[256];

	memset(w, 0, sizeof(*w));
	if (pat_has_colon(p) && !colon_ok) {
		snprintf(why, whylen, "':' charges a frame the shadow stack may not hold");
		return -EINVAL;
	}
	if (nt > PCMON_WHEN_THREADS) {
		snprintf(why, whylen, "more than %d call threads", PCMON_WHEN_THREADS);
		return -EINVAL;
	}
	for (size_t t = 0; t < nt; t++) {
		size_t len = pat_thread_len(p, t), names = 0;

		for (size_t k = 0; k < len; k++) {
			if (pat_thread_prim(p, t, k) == PAT_STAR_PRIM)
				continue;
			if (k && pat_thread_prim(p, t, k - 1) != PAT_STAR_PRIM) {
				pat_thread_str(p, t, th, sizeof(th));
				snprintf(why, whylen, "'%s' names a direct call", th);
				return -EINVAL;
			}
			names++;
		}
		if (names > PCMON_WHEN_NAMES) {
			snprintf(why, whylen, "a call thread of more than %d names",
				 PCMON_WHEN_NAMES);
			return -EINVAL;
		}
		w->nnames[t] = names;
		w->anchored[t] = len && pat_thread_prim(p, t, len - 1) != PAT_STAR_PRIM;
	}
	w->nthreads = nt;
	return 0;
}

void when_adv(const struct pat *p, const struct pcmon_wpat *w, const struct pat_frame *f,
	      struct pcmon_wadv *a)
{
	memset(a, 0, sizeof(*a));
	for (size_t t = 0; t < w->nthreads; t++) {
		size_t len = pat_thread_len(p, t), j = 0;

		for (size_t k = 0; k < len; k++) {
			long nm = pat_thread_prim(p, t, k);

			if (nm == PAT_STAR_PRIM)
				continue;
			if (pat_name_match(p, nm, f))
				a->adv[t] |= 1u << j;
			j++;
		}
	}
}
