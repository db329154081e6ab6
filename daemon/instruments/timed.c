// SPDX-License-Identifier: GPL-2.0-only
/*
 * Time slices as the instruments share them (timed.h): settings from a start request, a
 * listing's window, and the slices' part of a results file section.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "inst.h"
#include "pcmon_procs.h"
#include "stfile.h"
#include "target.h"
#include "timed.h"
#include "util.h"

#define TIMED_MAX_ROWS (1 << 24)		/* rows of one slice in a file */
#define TIMED_MAX_MS 100000000000000ull		/* ms since the epoch: year 5138 */

void timed_default_cfg(struct slices_cfg *cfg)
{
	slices_cfg_parse(SLICES_DEFAULT, cfg, NULL, 0); /* (it parses) */
	cfg->budget = SLICES_DEFAULT_BUDGET;
}

int timed_cfg(const cJSON *req, struct slices_cfg *cfg, cJSON **rep)
{
	const char *spec = proto_str(req, "slices", NULL);
	double kib = proto_num(req, "slice_kib", -1);
	char err[160];

	timed_default_cfg(cfg);
	if (spec && slices_cfg_parse(spec, cfg, err, sizeof(err))) {
		*rep = proto_error(2, "--slices %s: %s", spec, err);
		return -1;
	}
	if (kib >= 0)
		cfg->budget = (uint64_t)kib << 10;
	return 0;
}

#define TIME_WORDS "a time is now, -15m (before now), +10s (after the target's start), HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]] or @EPOCH_SECONDS"

int timed_window_parse(const struct list_req *lr, double start_wall, struct timed_window *w,
		       cJSON **rep)
{
	const char *since = lr->since, *until = lr->until;
	uint64_t now = wall_ns(), start = (uint64_t)(start_wall * 1e9);

	*w = (struct timed_window){ .on = since || until, .until = UINT64_MAX };
	if (!w->on)
		return 0;
	if (since && slices_parse_time(since, now, start, &w->since)) {
		*rep = proto_error(2, "--since %s: " TIME_WORDS, since);
		return -1;
	}
	if (until && slices_parse_time(until, now, start, &w->until)) {
		*rep = proto_error(2, "--until %s: " TIME_WORDS, until);
		return -1;
	}
	if (w->since >= w->until) {
		*rep = proto_error(2, "--since %s --until %s: the window is empty", since ? since : "",
				   until ? until : "");
		return -1;
	}
	return 0;
}

void timed_window_take(struct timed_window *w, const struct slices *sl,
		       void (*fn)(void *ctx, const uint64_t *row), void *ctx)
{
	slices_window(sl, w->since, w->until, fn, ctx, &w->span);
	w->span.t1 = MIN(w->span.t1, wall_ns()); /* the open slice ends now */
}

uint64_t timed_window_ns(const struct timed_window *w)
{
	return w->span.t1 > w->span.t0 ? w->span.t1 - w->span.t0 : 0;
}

void timed_window_json(const struct timed_window *w, cJSON *o)
{
	cJSON *x;

	if (!w->on)
		return;
	x = cJSON_AddObjectToObject(o, "window");
	if (w->since)
		cJSON_AddNumberToObject(x, "since", w->since / 1e9);
	else
		cJSON_AddNullToObject(x, "since");
	if (w->until != UINT64_MAX)
		cJSON_AddNumberToObject(x, "until", w->until / 1e9);
	else
		cJSON_AddNullToObject(x, "until");
	if (w->span.nslices) {
		cJSON_AddNumberToObject(x, "from", w->span.t0 / 1e9);
		cJSON_AddNumberToObject(x, "to", w->span.t1 / 1e9);
	}
	cJSON_AddNumberToObject(x, "slices", w->span.nslices);
	cJSON_AddBoolToObject(x, "cut", w->span.cut);
}

void timed_facts_json(const struct slices *sl, cJSON *o)
{
	char spec[128];

	slices_cfg_format(&sl->cfg, spec, sizeof(spec));
	cJSON_AddStringToObject(o, "slices", spec);
	cJSON_AddNumberToObject(o, "slice_memory_kib", (double)(sl->cfg.budget >> 10));
	cJSON_AddNumberToObject(o, "slices_kept", sl->n);
	cJSON_AddNumberToObject(o, "slice_bytes", slices_bytes(sl));
	cJSON_AddNumberToObject(o, "slices_coarsened", sl->coarsened);
	/* merges the memory budget forced before the tiers would have */
	cJSON_AddNumberToObject(o, "slices_merged_early", sl->merged_early);
	if (sl->n) {
		cJSON_AddNumberToObject(o, "slices_from", sl->s[0].t0 / 1e9);
		cJSON_AddNumberToObject(o, "slices_to", sl->s[sl->n - 1].t1 / 1e9);
	}
}

/* ---- the results file */

void timed_save(struct sf_wr *w, const struct slices *sl, cJSON *o)
{
	cJSON *so = sf_chk(w, cJSON_AddObjectToObject(o, "slices"));
	struct sf_text x = { 0 };
	char spec[128];

	if (!so)
		return;
	slices_cfg_format(&sl->cfg, spec, sizeof(spec));
	sf_put_str(w, so, "spec", spec);
	sf_put_u64(w, so, "memory_kib", sl->cfg.budget >> 10);
	sf_put_u64(w, so, "merged_early", sl->merged_early);
	sf_put_u64(w, so, "coarsened", sl->coarsened);
	/* written as text: a tree would cost a node per number (stfile.h) */
	for (size_t i = 0; !w->oom && i < sl->n; i++) {
		const struct slice *sc = &sl->s[i];

		sf_text_lit(w, &x, i ? ",{\"t0\":" : "[{\"t0\":");
		sf_text_u64(w, &x, sc->t0 / 1000000);
		sf_text_lit(w, &x, ",\"t1\":");
		sf_text_u64(w, &x, (sc->t1 + 999999) / 1000000);
		sf_text_lit(w, &x, ",\"s\":[");
		for (uint32_t j = 0; j < sc->n; j++) {
			const uint64_t *row = slice_row(sl, sc, j);

			for (unsigned k = 0; k <= sl->width; k++) {
				if (j || k)
					sf_text_lit(w, &x, ",");
				sf_text_u64(w, &x, row[k]);
			}
		}
		sf_text_lit(w, &x, "]}");
	}
	sf_text_lit(w, &x, x.len ? "]" : "[]");
	sf_put_text(w, so, "list", &x);
}

int timed_read(struct sf_rd *rd, const cJSON *o, unsigned width, uint64_t nids,
	       struct slices *sl, const uint32_t *idmap)
{
	return timed_read_narrow(rd, o, width, width, nids, sl, idmap);
}

int timed_read_narrow(struct sf_rd *rd, const cJSON *o, unsigned width, unsigned fwidth,
		      uint64_t nids, struct slices *sl, const uint32_t *idmap)
{
	const cJSON *so = cJSON_GetObjectItemCaseSensitive(o, "slices"), *arr, *it;
	unsigned rw = 1 + fwidth;
	uint64_t kib = 0, prev = 0, *rows = NULL;
	const char *spec;
	struct slices_cfg cfg;
	char why[128];
	int r, n, i = 0;

	if (fwidth > width)
		return -EINVAL;
	if (!so)
		return 1;
	if (!cJSON_IsObject(so))
		return sf_wrong_type(rd, "slices", so, "an object");
	snprintf(rd->at, sizeof(rd->at), "slices.");
	if ((r = sf_get_str(rd, so, "spec", SF_ALWAYS, 127, &spec)) ||
	    (r = sf_get_u64x(rd, so, "memory_kib", SF_ALWAYS, 1 << 22, false, &kib)) ||
	    (r = sf_get_array(rd, so, "list", SF_ALWAYS, TIMED_MAX_ROWS, &arr, &n)))
		return r;
	if (slices_cfg_parse(spec, &cfg, why, sizeof(why)))
		return sf_bad(rd, "spec", "%s", why);
	if (sl) {
		cfg.budget = kib << 10;
		sl->cfg = cfg;
		sf_get_u64(rd, so, "merged_early", SF_OPTIONAL, &sl->merged_early);
		sf_get_u64(rd, so, "coarsened", SF_OPTIONAL, &sl->coarsened);
	}
	cJSON_ArrayForEach(it, arr) {
		uint64_t t0 = 0, t1 = 0, v;
		const cJSON *ents, *x;
		int ne, k = 0;

		snprintf(rd->at, sizeof(rd->at), "slices.list[%d].", i++);
		if (!cJSON_IsObject(it))
			return sf_not_object(rd, "slices.list", i - 1, it);
		if ((r = sf_get_u64x(rd, it, "t0", SF_ALWAYS, TIMED_MAX_MS, false, &t0)) ||
		    (r = sf_get_u64x(rd, it, "t1", SF_ALWAYS, TIMED_MAX_MS, false, &t1)) ||
		    (r = sf_get_array(rd, it, "s", SF_ALWAYS, INT32_MAX, &ents, &ne)))
			return r;
		if (t1 <= t0 || t0 < prev)
			return sf_bad(rd, "t1", "slices run forward in time, each ending after it starts");
		prev = t0;
		if (ne % rw)
			return sf_bad(rd, "s", "rows of an id and %u sums", fwidth);
		if (sl && !(rows = calloc(ne / rw * (1 + width) + 1, sizeof(*rows))))
			return -ENOMEM;
		cJSON_ArrayForEach(x, ents) {
			bool id = !(k % rw);

			r = sf_item_u64(rd, "s", x, id && nids ? nids - 1 : UINT64_MAX, &v);
			if (!r && id && !nids)
				r = sf_bad(rd, "s", "nothing to count");
			if (r) {
				free(rows);
				return r;
			}
			/* the file's row k / rw, sum k % rw - 1, at its place in a row of @width */
			if (sl)
				rows[k / rw * (1 + width) + k % rw] = id && idmap ? idmap[v] : v;
			k++;
		}
		if (sl) {
			r = slices_push(sl, t0 * 1000000, t1 * 1000000, rows, ne / rw);
			free(rows);
			rows = NULL;
			if (r)
				return r;
		}
	}
	rd->at[0] = '\0';
	return 0;
}

int timed_one_slice(const struct sf_rd *rd, struct slices *sl, const uint64_t *rows, uint32_t n)
{
	uint64_t t0 = (uint64_t)(rd->t_start * 1e9), t1 = (uint64_t)(rd->t_end * 1e9);

	if (!n)
		return 0;
	return slices_push(sl, t0, MAX(t1, t0 + 1), rows, n);
}

void timed_tick_targets(void *g, const struct timed_reader *r)
{
	struct target **targets = ((struct inst_env *)g)->targets;
	uint64_t now = wall_ns(), last_read;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = targets[i];
		void *st = t ? t->inst[r->inst] : NULL;
		struct slices *sl = st ? r->slices(st, &last_read) : NULL;

		if (!sl)
			continue;
		if (t->state == TARGET_RUNNING && slices_ended(sl, last_read, now))
			r->read(g, t, st);
		if (slices_tick(sl, now))
			t->dirty = true;
	}
}

void timed_sync_targets(void *g, const struct timed_reader *r)
{
	struct target **targets = ((struct inst_env *)g)->targets;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		if (targets[i] && targets[i]->inst[r->inst])
			r->read(g, targets[i], targets[i]->inst[r->inst]);
}
