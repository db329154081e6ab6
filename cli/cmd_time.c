// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon timeline, save, diff: a target's samples over time (docs/diff.md). The timeline is
 * a listing asked with "timeline"; save writes a listing's stacks (the exports' profile) to
 * a file that needs nothing else; diff compares two sides, each a target, a window of one
 * (TARGET@SINCE..UNTIL) or a saved file, procedure by procedure, with the test of
 * daemon/views/diffstat.h.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "diffstat.h"
#include "export.h"
#include "format.h"
#include "proto.h"
#include "session.h"
#include "util.h"

/* ---- sides: a target, a window of one, or a saved file */

/* @spec names a saved file (a regular file there), not a target. */
static bool is_file(const char *spec)
{
	struct stat sb;

	return strchr(spec, '/') || (!stat(spec, &sb) && S_ISREG(sb.st_mode));
}

int side_fetch(struct cli *c, const char *spec, const cJSON *base, cJSON **rep)
{
	struct session s;
	char *t, *at, *dots;
	cJSON *req;
	int r;

	*rep = NULL;
	if (is_file(spec)) {
		char *text = read_file(spec, NULL);

		if (!text)
			return fail(c, 1, "%s: %s", spec, strerror(errno));
		*rep = cJSON_Parse(text);
		free(text);
		if (!*rep || !cJSON_GetObjectItemCaseSensitive(*rep, "profile")) {
			cJSON_Delete(*rep);
			*rep = NULL;
			return fail(c, 1, "%s: not a file pcmon save wrote", spec);
		}
		return 0;
	}
	t = strdup(spec);
	req = cJSON_Duplicate(base, 1);
	if (!t || !req) {
		free(t);
		cJSON_Delete(req);
		return fail(c, 1, "out of memory");
	}
	at = strchr(t, '@');
	if (at) {
		*at++ = '\0';
		dots = strstr(at, "..");
		if (!dots) {
			free(t);
			cJSON_Delete(req);
			return fail(c, 2, "%s: a window is TARGET@SINCE..UNTIL (-20m..-10m)", spec);
		}
		*dots = '\0';
		if (*at)
			req_set(req, "since", cJSON_CreateString(at));
		if (dots[2])
			req_set(req, "until", cJSON_CreateString(dots + 2));
	}
	req_cmd(req, "list");
	req_set(req, "target", cJSON_CreateString(t));
	req_set(req, "stacks", cJSON_CreateBool(1));
	free(t);
	r = session_connect(c, &s);
	if (!r) {
		*rep = session_call(&s, req);
		session_close(&s);
		if (!proto_bool(*rep, "ok", 0)) {
			r = show(c, *rep, NULL);
			cJSON_Delete(*rep);
			*rep = NULL;
		}
	}
	cJSON_Delete(req);
	return r;
}

/* ---- pcmon save TARGET FILE */

const struct opt save_opts[] = {
	OPT_ALL(window_opts),
	OPT_ALL(pattern_opts),
	OPT_TABLE_END,
};

int cmd_save(struct cli *c)
{
	char *tmp = NULL, *js;
	cJSON *rep;
	FILE *f;
	int r;

	if (c->nwords != 2)
		return fail(c, 2, "save: give TARGET and FILE");
	if ((r = side_fetch(c, c->words[0], c->req, &rep)))
		return r;
	cJSON_DeleteItemFromObject(rep, "v");
	cJSON_DeleteItemFromObject(rep, "ok");
	cJSON_AddStringToObject(rep, "saved_by", "pcmon " PCMON_VERSION);
	cJSON_AddNumberToObject(rep, "saved_at", wall_time());
	js = cJSON_PrintUnformatted(rep);
	cJSON_Delete(rep);
	if (!js || asprintf(&tmp, "%s.tmp.%d", c->words[1], (int)getpid()) < 0) {
		free(js);
		return fail(c, 1, "out of memory");
	}
	f = fopen(tmp, "w");
	r = !f || fprintf(f, "%s\n", js) < 0;
	if (f && fclose(f))
		r = 1;
	if (!r && rename(tmp, c->words[1]))
		r = 1;
	if (r) {
		r = fail(c, 1, "%s: %s", c->words[1], strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(js);
	return r;
}

/* ---- pcmon diff A B */

struct drow {
	const char *name;
	double a_sh, b_sh, a_dp, b_dp;
	struct dstat sh, dp;
	bool dp_own;		/* the deep counts differ from the shallow ones: a test of their own */
	double key;		/* the order */
};

struct dside {
	cJSON *rep;
	struct xprof p;
	double total;
};

struct diff {
	struct itab *names;
	struct drow *rows;
	size_t n, cap;
	struct dside s[2];
	double scale;
};

static struct drow *row_of(struct diff *d, const char *name)
{
	uint32_t id;
	int r = itab_str(d->names, name, &id);

	if (r < 0)
		return NULL;
	if (r == 1) {
		if (GROW(d->rows, d->cap, id + 1))
			return NULL;
		d->rows[id] = (struct drow){ .name = name };
		d->n = id + 1;
	}
	return &d->rows[id];
}

/* Side @k's samples into the rows: each sample's last frame (shallow), each frame once (deep). */
static int count_side(struct diff *d, int k)
{
	const struct xprof *p = &d->s[k].p;
	struct xframe *fr = NULL;
	struct drow **seen = NULL;
	size_t cap = 0, cap_seen = 0;
	int err = -ENOMEM;

	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		double w = (double)s->count;
		int n = xprof_frames(p, s, &fr, &cap), m = 0;

		if (n < 0 || GROW(seen, cap_seen, (size_t)n + 1))
			goto out;
		d->s[k].total += w;
		for (int j = 0; j < n; j++) {
			struct drow *r = row_of(d, fr[j].name);
			int q;

			if (!r)
				goto out;
			for (q = 0; q < m && seen[q] != r; q++)
				;
			if (q == m) {
				seen[m++] = r;
				*(k ? &r->b_dp : &r->a_dp) += w;
			}
			if (j == n - 1)
				*(k ? &r->b_sh : &r->a_sh) += w;
		}
	}
	err = 0;
out:
	free(fr);
	free(seen);
	return err;
}

static double pct(double a, double b)
{
	return b > 0 ? 100 * a / b : 0;
}

static int by_key(const void *x, const void *y)
{
	const struct drow *a = x, *b = y;

	if (a->key != b->key)
		return a->key > b->key ? -1 : 1;
	return strcmp(a->name, b->name);
}

#define DIFF_ALPHA 0.01

/* Counts, tests, the correction and the order. 0 or -ENOMEM. */
static int compare(struct diff *d)
{
	double *a = malloc((d->n + 1) * sizeof(*a)), *b = malloc((d->n + 1) * sizeof(*b));
	struct dstat **fam = malloc((2 * d->n + 1) * sizeof(*fam));
	size_t nf = 0;

	if (!a || !b || !fam) {
		free(a);
		free(b);
		free(fam);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->n; i++) {
		a[i] = d->rows[i].a_sh;
		b[i] = d->rows[i].b_sh;
	}
	/* shallow counts part every sample once: the bulk of the profile */
	d->scale = dstat_scale(a, b, d->n, d->s[0].total, d->s[1].total);
	for (size_t i = 0; i < d->n; i++) {
		struct drow *r = &d->rows[i];

		/* (a test not made changes nothing: p 1) */
		r->sh = (struct dstat){ .a = r->a_sh, .b = r->b_sh, .p = 1, .p_adj = 1 };
		r->dp = (struct dstat){ .a = r->a_dp, .b = r->b_dp, .p = 1, .p_adj = 1 };
		r->dp_own = r->a_dp != r->a_sh || r->b_dp != r->b_sh;
		if (r->a_sh + r->b_sh > 0) {
			dstat_test(&r->sh, d->scale);
			fam[nf++] = &r->sh;
		}
		if (r->dp_own) {
			dstat_test(&r->dp, d->scale);
			fam[nf++] = &r->dp;
		}
	}
	dstat_holm(fam, nf, DIFF_ALPHA);
	for (size_t i = 0; i < d->n; i++) {
		struct drow *r = &d->rows[i];

		if (!r->dp_own)
			r->dp = r->sh;
		r->key = fabs(r->dp.z) > fabs(r->sh.z) ? fabs(r->dp.z) : fabs(r->sh.z);
		if (r->sh.sig || r->dp.sig)
			r->key += 1e9; /* the significant ones first */
	}
	qsort(d->rows, d->n, sizeof(*d->rows), by_key);
	free(a);
	free(b);
	free(fam);
	return 0;
}

static int dir_of(const struct drow *r)
{
	const struct dstat *t = r->dp.sig && (!r->sh.sig || fabs(r->dp.z) > fabs(r->sh.z)) ? &r->dp
											: &r->sh;

	return !(r->sh.sig || r->dp.sig) ? 0 : t->z > 0 ? 1 : -1;
}

static const char *side_name(const struct dside *s, char *buf, size_t len)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(s->rep, "window");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s->rep, "target");
	char a[32], b[32];

	if (w && proto_num(w, "slices", 0)) {
		fmt_clock(a, sizeof(a), proto_num(w, "from", 0));
		fmt_clock(b, sizeof(b), proto_num(w, "to", 0));
		snprintf(buf, len, "target %.0f \"%s\" %s to %s", proto_num(t, "id", 0),
			 proto_str(t, "name", "?"), a, b);
	} else {
		snprintf(buf, len, "target %.0f \"%s\"", proto_num(t, "id", 0), proto_str(t, "name", "?"));
	}
	return buf;
}

static cJSON *diff_json(const struct diff *d, long top)
{
	cJSON *o = cJSON_CreateObject(), *arr, *x;
	char buf[200];

	for (int k = 0; k < 2; k++) {
		x = cJSON_AddObjectToObject(o, k ? "b" : "a");
		cJSON_AddStringToObject(x, "name", side_name(&d->s[k], buf, sizeof(buf)));
		cJSON_AddNumberToObject(x, "samples", d->s[k].total);
		if (cJSON_GetObjectItemCaseSensitive(d->s[k].rep, "window"))
			cJSON_AddItemToObject(x, "window", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(d->s[k].rep, "window"), 1));
	}
	x = cJSON_AddObjectToObject(o, "test");
	cJSON_AddStringToObject(x, "name", "conditional binomial against the profile's bulk scale, two-sided, Holm-corrected");
	cJSON_AddNumberToObject(x, "alpha", DIFF_ALPHA);
	cJSON_AddNumberToObject(x, "scale", d->scale);
	arr = cJSON_AddArrayToObject(o, "procedures");
	for (size_t i = 0; i < d->n && (!top || (long)i < top); i++) {
		const struct drow *r = &d->rows[i];
		int dir = dir_of(r);

		x = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, x);
		cJSON_AddStringToObject(x, "procedure", r->name);
		cJSON_AddNumberToObject(x, "a_shallow", r->a_sh);
		cJSON_AddNumberToObject(x, "b_shallow", r->b_sh);
		cJSON_AddNumberToObject(x, "a_deep", r->a_dp);
		cJSON_AddNumberToObject(x, "b_deep", r->b_dp);
		cJSON_AddNumberToObject(x, "a_shallow_pct", pct(r->a_sh, d->s[0].total));
		cJSON_AddNumberToObject(x, "b_shallow_pct", pct(r->b_sh, d->s[1].total));
		cJSON_AddNumberToObject(x, "shallow_pp", pct(r->b_sh, d->s[1].total) - pct(r->a_sh, d->s[0].total));
		cJSON_AddNumberToObject(x, "a_deep_pct", pct(r->a_dp, d->s[0].total));
		cJSON_AddNumberToObject(x, "b_deep_pct", pct(r->b_dp, d->s[1].total));
		cJSON_AddNumberToObject(x, "deep_pp", pct(r->b_dp, d->s[1].total) - pct(r->a_dp, d->s[0].total));
		cJSON_AddNumberToObject(x, "shallow_z", r->sh.z);
		cJSON_AddNumberToObject(x, "shallow_p_adj", r->sh.p_adj);
		cJSON_AddNumberToObject(x, "deep_z", r->dp.z);
		cJSON_AddNumberToObject(x, "deep_p_adj", r->dp.p_adj);
		cJSON_AddBoolToObject(x, "significant", r->sh.sig || r->dp.sig);
		cJSON_AddStringToObject(x, "change", dir > 0 ? "grew" : dir < 0 ? "shrank" : "");
	}
	return o;
}

static void diff_table(FILE *f, const struct diff *d, long top)
{
	char buf[200];

	fprintf(f, "A: %s, %.0f samples\n", side_name(&d->s[0], buf, sizeof(buf)), d->s[0].total);
	fprintf(f, "B: %s, %.0f samples\n", side_name(&d->s[1], buf, sizeof(buf)), d->s[1].total);
	fprintf(f, "beyond noise: * (binomial test against the profile's bulk, Holm at %g %%; B/A scale %.3f)\n\n",
		100 * DIFF_ALPHA, d->scale);
	fprintf(f, "   shallow%%: A      B       pp    deep%%: A      B       pp  p(adj)    procedure\n");
	for (size_t i = 0; i < d->n && (!top || (long)i < top); i++) {
		const struct drow *r = &d->rows[i];
		int dir = dir_of(r);
		double p = fmin(r->sh.p_adj, r->dp.p_adj);

		fprintf(f, "%s %9.2f %6.2f %+8.2f %9.2f %6.2f %+8.2f  %-8.2g  %s%s\n",
			dir > 0 ? "+*" : dir < 0 ? "-*" : "  ", pct(r->a_sh, d->s[0].total),
			pct(r->b_sh, d->s[1].total),
			pct(r->b_sh, d->s[1].total) - pct(r->a_sh, d->s[0].total),
			pct(r->a_dp, d->s[0].total), pct(r->b_dp, d->s[1].total),
			pct(r->b_dp, d->s[1].total) - pct(r->a_dp, d->s[0].total), p, r->name,
			dir > 0 ? "  (grew)" : dir < 0 ? "  (shrank)" : "");
	}
}

/* The differential flame graph: B's widths; red grew, blue shrank, grey did not change. */
static int tint(void *ctx, const char *name, char *rgb, size_t len)
{
	struct diff *d = ctx;
	int64_t id = itab_find(d->names, name, strlen(name) + 1);
	const struct drow *r = NULL;

	for (size_t i = 0; id >= 0 && i < d->n; i++)
		if (!strcmp(d->rows[i].name, name))
			r = &d->rows[i];
	if (!r || !dir_of(r)) {
		snprintf(rgb, len, "rgb(215,215,210)");
	} else {
		double pp = fabs(pct(r->b_dp, d->s[1].total) - pct(r->a_dp, d->s[0].total));
		int k = 90 + (int)fmin(pp * 15, 120);

		if (dir_of(r) > 0)
			snprintf(rgb, len, "rgb(255,%d,%d)", 210 - k, 210 - k);
		else
			snprintf(rgb, len, "rgb(%d,%d,255)", 210 - k, 210 - k);
	}
	return 1;
}

static const char *diff_svg, *diff_title;
static long diff_top;

static int opt_diff_top(struct cli *c, const char *val)
{
	if (parse_whole(val, 1, 1000000, &diff_top))
		return fail(c, 2, "--top %s: expected a whole number from 1 to 1000000", val);
	return 0;
}

const struct opt diff_opts[] = {
	{ "top", 0, "N", OPT_CALL, NULL, .help = "the first N rows", .fn = opt_diff_top },
	{ "svg", 0, "FILE", OPT_TEXT, NULL,
	  .help = "a differential flame graph: B's widths, red grew, blue shrank",
	  .text = &diff_svg, .complete = COMPL_FILE },
	{ "title", 0, "T", OPT_TEXT, NULL, .help = "the SVG's title", .text = &diff_title },
	OPT_ALL(pattern_opts),
	OPT_TABLE_END,
};

int cmd_diff(struct cli *c)
{
	struct diff d = { 0 };
	char err[256];
	int r = 0;

	if (c->nwords != 2)
		return fail(c, 2, "diff: give two sides A B: targets, TARGET@SINCE..UNTIL or saved files");
	d.names = itab_new();
	if (!d.names)
		return fail(c, 1, "out of memory");
	for (int k = 0; k < 2 && !r; k++) {
		r = side_fetch(c, c->words[k], c->req, &d.s[k].rep);
		if (!r && xprof_load(&d.s[k].p, d.s[k].rep, err, sizeof(err)))
			r = fail(c, 1, "diff: %s: %s", c->words[k], err);
		if (!r && count_side(&d, k))
			r = fail(c, 1, "out of memory");
	}
	if (!r && compare(&d))
		r = fail(c, 1, "out of memory");
	if (!r && diff_svg) {
		struct flame_tint ti = { tint, &d,
			"B's samples · red: grew beyond noise · blue: shrank beyond noise · grey: no change beyond noise" };
		FILE *f = fopen(diff_svg, "w");

		if (!f || export_flamegraph_tinted(f, &d.s[1].p, diff_title, &ti) || fclose(f))
			r = fail(c, 1, "--svg %s: %s", diff_svg, strerror(errno));
	}
	if (!r) {
		if (c->json) {
			cJSON *o = diff_json(&d, diff_top);
			char *js = cJSON_Print(o);

			printf("%s\n", js ? js : "{}");
			free(js);
			cJSON_Delete(o);
		} else {
			diff_table(stdout, &d, diff_top);
		}
	}
	for (int k = 0; k < 2; k++) {
		if (d.s[k].p.rep)
			xprof_free(&d.s[k].p);
		cJSON_Delete(d.s[k].rep);
	}
	free(d.rows);
	itab_free(d.names);
	return r;
}

/* ---- pcmon timeline TARGET */

static const char *tl_svg;
static bool tl_shallow;	/* rows of shallow counts (else deep: the procedure on the stack) */

static int opt_proc(struct cli *c, const char *val)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(c->req, "timeline_procs");

	if (!arr)
		arr = cJSON_AddArrayToObject(c->req, "timeline_procs");
	cJSON_AddItemToArray(arr, cJSON_CreateString(val));
	return 0;
}

const struct opt timeline_opts[] = {
	{ "top", 0, "N", OPT_NUM, "timeline_top", .help = "the N hottest procedures (default 5)" },
	{ "proc", 0, "P", OPT_CALL, NULL,
	  .help = "procedure P too, named as --when names one (repeatable)", .fn = opt_proc },
	{ "shallow", 0, NULL, OPT_FLAG, NULL,
	  .help = "rows of shallow counts (default: deep, the procedure anywhere on the stack)",
	  .flag = &tl_shallow },
	{ "svg", 0, "FILE", OPT_TEXT, NULL, .help = "the timeline as an SVG", .text = &tl_svg,
	  .complete = COMPL_FILE },
	OPT_SOME(pattern_opts, "when when-file ignore-case critical no-inline"),
	OPT_ALL(window_opts),
	OPT_TABLE_END,
};

#define SPARK_COLS 60

/* Slices onto at most SPARK_COLS columns of equal time from the first slice to the last. */
static int columns(const cJSON *slices, const cJSON *vals, double *col, int *ncol)
{
	int n = cJSON_GetArraySize(slices), i = 0;
	double t0 = proto_num(cJSON_GetArrayItem(slices, 0), "t0", 0);
	double t1 = proto_num(cJSON_GetArrayItem(slices, n - 1), "t1", 0);
	const cJSON *s;

	*ncol = n < SPARK_COLS ? n : SPARK_COLS;
	memset(col, 0, SPARK_COLS * sizeof(*col));
	cJSON_ArrayForEach(s, slices) {
		double mid = (proto_num(s, "t0", 0) + proto_num(s, "t1", 0)) / 2;
		int c = t1 > t0 ? (int)((mid - t0) / (t1 - t0) * *ncol) : 0;
		const cJSON *v = cJSON_GetArrayItem(vals, i++);

		c = c < 0 ? 0 : c >= *ncol ? *ncol - 1 : c;
		col[c] += v ? v->valuedouble : 0;
	}
	return n;
}

/*
 * One row of bars, @col against @max (the busiest column's samples: every row on the same
 * scale, so that a column of few samples draws short bars, not full ones). A column that
 * holds samples but fewer than a twentieth of the busiest one's is drawn '·' in @thin's row.
 */
static void spark(FILE *f, const double *col, int n, double max, const double *thin)
{
	static const char *const bars[] = { " ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };

	for (int i = 0; i < n; i++) {
		if (thin && thin[i] > 0 && thin[i] < max / 20)
			fputs("·", f);
		else
			fputs(bars[max > 0 ? (int)ceil(fmin(col[i] / max, 1) * 8) : 0], f);
	}
}

static void timeline_table(FILE *f, const cJSON *rep)
{
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(rep, "timeline");
	const cJSON *sl = cJSON_GetObjectItemCaseSensitive(tl, "slices"), *p, *s;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	double col[SPARK_COLS], counted[SPARK_COLS], all = 0, busiest = 0;
	char a[32], b[32];
	int n, nc;

	if (!cJSON_GetArraySize(sl)) {
		fprintf(f, "pcmon: target %.0f \"%s\": no time slice\n", proto_num(t, "id", 0),
			proto_str(t, "name", "?"));
		return;
	}
	{
		cJSON *c = cJSON_CreateArray();

		cJSON_ArrayForEach(s, sl) {
			cJSON_AddItemToArray(c, cJSON_CreateNumber(proto_num(s, "counted", 0)));
			all += proto_num(s, "counted", 0);
		}
		n = columns(sl, c, counted, &nc);
		cJSON_Delete(c);
	}
	fmt_clock(a, sizeof(a), proto_num(cJSON_GetArrayItem(sl, 0), "t0", 0));
	fmt_clock(b, sizeof(b), proto_num(cJSON_GetArrayItem(sl, n - 1), "t1", 0));
	fprintf(f, "pcmon: target %.0f \"%s\", %s to %s, %d slice(s) in %d column(s)\n",
		proto_num(t, "id", 0), proto_str(t, "name", "?"), a, b, n, nc);
	fmt_unseen(f, cJSON_GetObjectItemCaseSensitive(tl, "timeline_unseen"), "--proc");
	for (int i = 0; i < nc; i++)
		busiest = fmax(busiest, counted[i]);
	fprintf(f, "\n%-28.28s %7s  ", "samples", "");
	spark(f, counted, nc, busiest, counted);
	fprintf(f, "  %.0f\n", all);
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(tl, "procedures")) {
		const cJSON *vals = cJSON_GetObjectItemCaseSensitive(p, tl_shallow ? "shallow" : "deep");
		double tot = 0;
		const cJSON *v;

		cJSON_ArrayForEach(v, vals)
			tot += v->valuedouble;
		columns(sl, vals, col, &nc);
		fprintf(f, "%-28.28s %6.1f%%  ", proto_str(p, "name", "?"), all ? 100 * tot / all : 0);
		spark(f, col, nc, busiest, NULL);
		fputc('\n', f);
	}
	fprintf(f, "\n(rows: the procedure's %s samples in each column, on the scale of the busiest "
		   "column's; %%: of all samples; · a column of under a twentieth of the busiest's samples)\n",
		tl_shallow ? "shallow (running)" : "deep (anywhere on the stack)");
}

/* One band per row: bars per slice, the share of the slice's samples; titles give numbers. */
static int timeline_svg(FILE *f, const cJSON *rep)
{
	const cJSON *tl = cJSON_GetObjectItemCaseSensitive(rep, "timeline");
	const cJSON *sl = cJSON_GetObjectItemCaseSensitive(tl, "slices"), *s;
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(tl, "procedures");
	int n = cJSON_GetArraySize(sl), rows = cJSON_GetArraySize(procs) + 1, r = 0;
	double t0 = proto_num(cJSON_GetArrayItem(sl, 0), "t0", 0);
	double t1 = proto_num(cJSON_GetArrayItem(sl, n > 0 ? n - 1 : 0), "t1", 1), maxc = 0;
	const double W = 1200, L = 220, R = 20, BAND = 60;

	cJSON_ArrayForEach(s, sl)
		maxc = fmax(maxc, proto_num(s, "counted", 0));
	if (t1 <= t0)
		t1 = t0 + 1;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"%.0f\" height=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		W, 40 + rows * BAND + 30);
	fputs("<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }"
	      " rect.b:hover { stroke: #000; stroke-width: 0.5; }</style>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f8f8f4\"/>\n", W,
		40 + rows * BAND + 30);
	fprintf(f, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">pcmon timeline: target %.0f &quot;%s&quot;</text>\n",
		W / 2, proto_num(cJSON_GetObjectItemCaseSensitive(rep, "target"), "id", 0),
		proto_str(cJSON_GetObjectItemCaseSensitive(rep, "target"), "comm", "?"));
	for (r = 0; r < rows; r++) {
		const cJSON *pr = r ? cJSON_GetArrayItem(procs, r - 1) : NULL;
		const cJSON *vals = pr ? cJSON_GetObjectItemCaseSensitive(pr, tl_shallow ? "shallow"
											   : "deep")
				       : NULL;
		double y = 40 + r * BAND;
		int i = 0;

		fprintf(f, "<text x=\"10\" y=\"%.0f\">%s</text>\n", y + BAND / 2,
			pr ? proto_str(pr, "name", "?") : "samples");
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#999\"/>\n", L,
			y + BAND - 4, W - R, y + BAND - 4);
		cJSON_ArrayForEach(s, sl) {
			const cJSON *v = cJSON_GetArrayItem(vals, i++);
			double c = proto_num(s, "counted", 0), val = pr ? (v ? v->valuedouble : 0) : c;
			double share = pr ? (c > 0 ? val / c : 0) : 1;
			double frac = maxc > 0 ? val / maxc : 0; /* (one scale: the busiest slice) */
			double x0 = L + (W - L - R) * (proto_num(s, "t0", 0) - t0) / (t1 - t0);
			double x1 = L + (W - L - R) * (proto_num(s, "t1", 0) - t0) / (t1 - t0);
			double h = (BAND - 10) * frac;

			fprintf(f, "<rect class=\"b\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>%.0f samples%s%.1f%%</title></rect>\n",
				x0, y + BAND - 4 - h, fmax(x1 - x0 - 0.5, 0.5), h,
				pr ? "rgb(220,90,40)" : "rgb(90,120,200)", val, pr ? ", " : "",
				100 * share);
		}
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" style=\"font-size:10px;fill:#555\">bars: each slice (its width its time), its samples against the busiest slice's; procedures: their %s samples (titles: share of the slice)</text>\n",
		L, 40 + rows * BAND + 20, tl_shallow ? "shallow" : "deep");
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}

int cmd_timeline(struct cli *c)
{
	struct session s;
	cJSON *rep;
	int r;

	if (!c->target)
		return fail(c, 2, "timeline: which target? give its id or name (see pcmon targets)");
	req_cmd(c->req, "list");
	req_set(c->req, "timeline", cJSON_CreateBool(1));
	if ((r = session_connect(c, &s)))
		return r;
	rep = session_call(&s, c->req);
	session_close(&s);
	if (tl_svg && proto_bool(rep, "ok", 0)) {
		FILE *f = fopen(tl_svg, "w");

		if (!f || timeline_svg(f, rep) || fclose(f)) {
			cJSON_Delete(rep);
			return fail(c, 1, "--svg %s: %s", tl_svg, strerror(errno));
		}
	}
	r = show(c, rep, timeline_table);
	cJSON_Delete(rep);
	return r;
}
