// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "slices.h"
#include "util.h"

/* ---- settings */

int slices_parse_dur(const char *s, uint64_t *ns)
{
	uint64_t total = 0;

	if (!*s)
		return -1;
	while (*s) {
		char *end;
		unsigned long long v;
		uint64_t unit;

		if (!isdigit((unsigned char)*s))
			return -1;
		v = strtoull(s, &end, 10);
		switch (*end) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: return -1;
		}
		if (v > 100ull * 365 * 86400 / unit)
			return -1;
		total += v * unit;
		s = end + 1;
	}
	if (total > 100ull * 365 * 86400)
		return -1;
	*ns = total * NS_PER_S;
	return 0;
}

int slices_cfg_parse(const char *spec, struct slices_cfg *cfg, char *err, size_t errlen)
{
	char buf[128], *save = NULL, *tok;
	int n = 0;

	if (strlen(spec) >= sizeof(buf)) {
		snprintf(err, errlen, "too long");
		return -1;
	}
	strcpy(buf, spec);
	memset(cfg->tier, 0, sizeof(cfg->tier));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *at = strchr(tok, '@');
		struct slices_tier *t = &cfg->tier[n];

		if (n == SLICES_MAX_TIERS) {
			snprintf(err, errlen, "at most %d tiers", SLICES_MAX_TIERS);
			return -1;
		}
		if (at)
			*at++ = '\0';
		if (slices_parse_dur(tok, &t->len_ns) || !t->len_ns) {
			snprintf(err, errlen, "'%s': a length is whole seconds (10s, 1m, 1h)", tok);
			return -1;
		}
		if (!n != !at) {
			snprintf(err, errlen, n ? "'%s': give the age at which slices become this long (1m@1h)"
						: "the first length has no age (10s,1m@1h)", tok);
			return -1;
		}
		if (at && (slices_parse_dur(at, &t->age_ns) || t->age_ns <= cfg->tier[n - 1].age_ns)) {
			snprintf(err, errlen, "'%s': ages are durations, each larger than the one before", at);
			return -1;
		}
		if (n && t->len_ns % cfg->tier[n - 1].len_ns) {
			snprintf(err, errlen, "'%s': each length is a multiple of the one before", tok);
			return -1;
		}
		n++;
	}
	if (!n) {
		snprintf(err, errlen, "give at least a length (10s)");
		return -1;
	}
	cfg->ntiers = n;
	return 0;
}

static void put_dur(char *buf, size_t len, uint64_t ns)
{
	uint64_t s = ns / NS_PER_S;

	if (s && !(s % 86400))
		snprintf(buf, len, "%llud", (unsigned long long)(s / 86400));
	else if (s && !(s % 3600))
		snprintf(buf, len, "%lluh", (unsigned long long)(s / 3600));
	else if (s && !(s % 60))
		snprintf(buf, len, "%llum", (unsigned long long)(s / 60));
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
}

void slices_cfg_format(const struct slices_cfg *cfg, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < cfg->ntiers && at < len; i++) {
		char l[24], a[24];

		put_dur(l, sizeof(l), cfg->tier[i].len_ns);
		put_dur(a, sizeof(a), cfg->tier[i].age_ns);
		at += snprintf(buf + at, len - at, "%s%s%s%s", i ? "," : "", l, i ? "@" : "",
			       i ? a : "");
	}
}

/* ---- the slices */

struct slices *slices_new(const struct slices_cfg *cfg, unsigned width)
{
	struct slices *sl;

	if (!width || width > SLICES_MAX_WIDTH)
		return NULL;
	sl = calloc(1, sizeof(*sl));
	if (sl) {
		sl->cfg = *cfg;
		sl->width = width;
	}
	return sl;
}

void slices_zero(struct slices *sl)
{
	for (size_t i = 0; i < sl->n; i++)
		free(sl->s[i].e);
	free(sl->s);
	free(sl->at);
	sl->s = NULL;
	sl->at = NULL;
	sl->n = sl->cap = sl->cap_at = sl->cap_open = 0;
	sl->open = false;
	sl->merged_early = sl->coarsened = 0;
}

void slices_free(struct slices *sl)
{
	if (!sl)
		return;
	slices_zero(sl);
	free(sl);
}

/* a row's bytes */
static size_t row_size(const struct slices *sl)
{
	return (1 + sl->width) * sizeof(uint64_t);
}

static int by_id(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* The open slice is closed: its entries sorted and trimmed, the index cleared. */
static void close_open(struct slices *sl)
{
	struct slice *s;
	void *e;

	if (!sl->open)
		return;
	s = &sl->s[sl->n - 1];
	for (uint32_t i = 0; i < s->n; i++)
		sl->at[*slice_row(sl, s, i)] = 0;
	qsort(s->e, s->n, row_size(sl), by_id);
	e = s->n ? realloc(s->e, s->n * row_size(sl)) : NULL;
	if (e || !s->n) {
		if (!s->n)
			free(s->e);
		s->e = e;
	}
	sl->open = false;
	sl->cap_open = 0;
}

int slices_add(struct slices *sl, uint32_t id, const uint64_t *v, uint64_t wall)
{
	uint64_t len = sl->cfg.tier[0].len_ns, *row;
	struct slice *s;

	if (sl->open && wall >= sl->s[sl->n - 1].t1)
		close_open(sl);
	if (!sl->open) {
		if (GROW(sl->s, sl->cap, sl->n + 1))
			return -ENOMEM;
		s = &sl->s[sl->n++];
		s->t0 = wall - wall % len;
		s->t1 = s->t0 + len;
		s->n = 0;
		s->e = NULL;
		sl->open = true;
	}
	s = &sl->s[sl->n - 1];
	if (id >= sl->cap_at) {
		size_t old = sl->cap_at;

		if (GROW(sl->at, sl->cap_at, (size_t)id + 1))
			return -ENOMEM;
		memset(sl->at + old, 0, (sl->cap_at - old) * sizeof(*sl->at));
	}
	if (!sl->at[id]) {
		if (grow((void **)&s->e, &sl->cap_open, s->n + 1, row_size(sl)))
			return -ENOMEM;
		row = slice_row(sl, s, s->n);
		memset(row, 0, row_size(sl));
		row[0] = id;
		sl->at[id] = ++s->n;
	}
	row = slice_row(sl, s, sl->at[id] - 1);
	for (unsigned k = 0; k < sl->width; k++)
		row[1 + k] += v[k];
	return 0;
}

int slices_push(struct slices *sl, uint64_t t0, uint64_t t1, const uint64_t *rows, uint32_t n)
{
	struct slice *s;

	close_open(sl);
	if (GROW(sl->s, sl->cap, sl->n + 1))
		return -ENOMEM;
	s = &sl->s[sl->n];
	*s = (struct slice){ .t0 = t0, .t1 = t1, .n = n };
	if (n) {
		s->e = malloc(n * row_size(sl));
		if (!s->e)
			return -ENOMEM;
		memcpy(s->e, rows, n * row_size(sl));
		qsort(s->e, n, row_size(sl), by_id);
	}
	sl->n++;
	return 0;
}

uint64_t slices_charge_wall(uint64_t *last, uint64_t now)
{
	uint64_t second = now - now % NS_PER_S;
	uint64_t at = *last < second && now - second < SLICES_LATE_NS ? second - 1 : now;

	*last = now;
	return at;
}

/* Slice @i + 1 merged into slice @i (both closed). 0 or -ENOMEM (nothing changed). */
static int merge_next(struct slices *sl, size_t i)
{
	struct slice *a = &sl->s[i], *b = &sl->s[i + 1];
	size_t rs = row_size(sl), w = sl->width;
	uint64_t *m = malloc(((size_t)a->n + b->n + 1) * rs), *d;
	uint32_t x = 0, y = 0, k = 0;

	if (!m)
		return -ENOMEM;
	while (x < a->n || y < b->n) {
		const uint64_t *ra = x < a->n ? slice_row(sl, a, x) : NULL;
		const uint64_t *rb = y < b->n ? slice_row(sl, b, y) : NULL;

		d = m + (size_t)k++ * (1 + w);
		if (!rb || (ra && ra[0] < rb[0])) {
			memcpy(d, ra, rs);
			x++;
		} else if (!ra || rb[0] < ra[0]) {
			memcpy(d, rb, rs);
			y++;
		} else {
			memcpy(d, ra, rs);
			for (size_t j = 1; j <= w; j++)
				d[j] += rb[j];
			x++;
			y++;
		}
	}
	free(a->e);
	free(b->e);
	a->e = realloc(m, (k ? k : 1) * rs);
	if (!a->e)
		a->e = m;
	a->n = k;
	a->t0 = MIN(a->t0, b->t0);
	a->t1 = MAX(a->t1, b->t1);
	memmove(b, b + 1, (sl->n - i - 2) * sizeof(*b));
	sl->n--;
	return 0;
}

/* The tier a slice ending at @t1 belongs to at @now. */
static int tier_of(const struct slices_cfg *cfg, uint64_t t1, uint64_t now)
{
	uint64_t age = now > t1 ? now - t1 : 0;
	int k = 0;

	while (k + 1 < cfg->ntiers && age >= cfg->tier[k + 1].age_ns)
		k++;
	return k;
}

size_t slices_bytes(const struct slices *sl)
{
	size_t b = sl->cap * sizeof(*sl->s) + sl->cap_at * sizeof(*sl->at);

	for (size_t i = 0; i < sl->n; i++)
		b += (sl->open && i == sl->n - 1 ? sl->cap_open : sl->s[i].n) * row_size(sl);
	return b;
}

size_t slices_tick(struct slices *sl, uint64_t now)
{
	size_t closed, merges = 0;

	if (sl->open && now >= sl->s[sl->n - 1].t1)
		close_open(sl);
	closed = sl->n - sl->open;
	/* two neighbours old enough for a coarser tier, in the same slice of that tier */
	for (size_t i = 0; i + 1 < closed;) {
		const struct slice *a = &sl->s[i], *b = &sl->s[i + 1];
		int k = tier_of(&sl->cfg, b->t1, now);
		uint64_t len = sl->cfg.tier[k].len_ns;

		if (k > 0 && a->t0 / len == (b->t1 - 1) / len && (a->t1 - 1) / len == b->t0 / len &&
		    !merge_next(sl, i)) {
			closed--;
			merges++;
			sl->coarsened++;
			continue;
		}
		i++;
	}
	while (sl->cfg.budget && closed >= 2 && slices_bytes(sl) > sl->cfg.budget &&
	       !merge_next(sl, 0)) {
		closed--;
		merges++;
		sl->merged_early++;
	}
	return merges;
}

void slices_window(const struct slices *sl, uint64_t since, uint64_t until,
		   void (*fn)(void *ctx, const uint64_t *row), void *ctx, struct slices_span *span)
{
	*span = (struct slices_span){ 0 };
	for (size_t i = 0; i < sl->n; i++) {
		const struct slice *s = &sl->s[i];

		if (!slice_in(s, since, until))
			continue;
		if (!span->nslices++) {
			span->t0 = s->t0;
			span->t1 = s->t1;
		}
		span->t0 = MIN(span->t0, s->t0);
		span->t1 = MAX(span->t1, s->t1);
		for (uint32_t j = 0; j < s->n; j++)
			fn(ctx, slice_row(sl, s, j));
	}
	span->cut = span->nslices && (span->t0 < since || span->t1 > until);
}

/* ---- times as users write them */

int slices_parse_time(const char *s, uint64_t now, uint64_t start, uint64_t *out)
{
	struct tm tm = { 0 };
	const char *end;
	uint64_t d;
	time_t tt;

	if (!strcmp(s, "now")) {
		*out = now;
		return 0;
	}
	if (s[0] == '-' || s[0] == '+') {
		if (slices_parse_dur(s + 1, &d))
			return -1;
		if (s[0] == '-')
			*out = d < now ? now - d : 0;
		else
			*out = start + d;
		return 0;
	}
	if (s[0] == '@' || (isdigit((unsigned char)s[0]) && !strpbrk(s, ":-T "))) {
		char *e;
		double v = strtod(s + (s[0] == '@'), &e);

		if (*e || e == s + (s[0] == '@') || v < 0 || v > 1e11)
			return -1;
		*out = (uint64_t)(v * 1e9);
		return 0;
	}
	if (strchr(s, '-')) { /* a date, and perhaps a time */
		end = strptime(s, "%Y-%m-%d", &tm);
		if (!end)
			return -1;
		if (*end == 'T' || *end == ' ')
			end++;
		else if (*end)
			return -1;
	} else { /* a time today */
		time_t t = (time_t)(now / NS_PER_S);

		localtime_r(&t, &tm);
		end = s;
	}
	if (*end) {
		const char *e2 = strptime(end, "%H:%M:%S", &tm);

		if (!e2 || *e2) {
			tm.tm_sec = 0;
			e2 = strptime(end, "%H:%M", &tm);
		}
		if (!e2 || *e2)
			return -1;
	} else {
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	}
	tm.tm_isdst = -1;
	tt = mktime(&tm);
	if (tt == (time_t)-1 || tt < 0)
		return -1;
	*out = (uint64_t)tt * NS_PER_S;
	return 0;
}
