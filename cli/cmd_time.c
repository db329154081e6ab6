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
#include <unistd.h>

#include "cli.h"
#include "diffdoc.h"
#include "diffstat.h"
#include "export.h"
#include "format.h"
#include "proto.h"
#include "session.h"
#include "util.h"

/* ---- pcmon save TARGET FILE */

static void with_slices(cJSON *req);

const struct opt save_opts[] = {
	OPT_ALL(window_opts),
	OPT_ALL(pattern_opts),
	OPT_ALL(tail_opts),
	{ "alloc", 0, NULL, OPT_TRUE, "alloc",
	  .help = "the allocations' stacks and table, for diff --alloc (docs/alloc.md)",
	  .excludes = "tail when when-file critical" },
	OPT_TABLE_END,
};

int cmd_save(struct cli *c)
{
	char *tmp = NULL, *js;
	cJSON *rep;
	FILE *f;
	int r;

	if (c->nwords != 2)
		return cli_fail(c, 2, "save: give TARGET and FILE");
	if (!cJSON_GetObjectItemCaseSensitive(c->req, "tail")) /* (a tail is not kept by time) */
		with_slices(c->req);
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
		return cli_fail(c, 1, "out of memory");
	}
	f = fopen(tmp, "w");
	r = !f || fprintf(f, "%s\n", js) < 0;
	if (f && fclose(f))
		r = 1;
	if (!r && rename(tmp, c->words[1]))
		r = 1;
	if (r) {
		r = cli_fail(c, 1, "%s: %s", c->words[1], strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	free(js);
	return r;
}

/* ---- pcmon diff A B */

#define DIFF_ALPHA 0.01
/* the procedures a side's timeline follows, for the dispersion (the engine's most) */
#define DIFF_SLICE_PROCS 64

static void fmt_ratio(char *buf, size_t len, double r)
{
	if (isinf(r))
		snprintf(buf, len, "inf");
	else if (r >= 99.95)
		snprintf(buf, len, "%.0f", r);
	else if (r >= 9.995)
		snprintf(buf, len, "%.1f", r);
	else
		snprintf(buf, len, "%.3f", r);
}

static void diff_header(FILE *f, const struct diffdoc *d)
{
	const struct dstat *st = &d->st;
	char buf[200], r[3][16];

	for (int k = 0; k < 2; k++)
		fprintf(f, "%c: %s, %.0f samples, %.1f s\n", k ? 'B' : 'A',
			diffdoc_side_name(&d->s[k], buf, sizeof(buf)), st->side[k].total, st->side[k].seconds);
	fprintf(f, "model: --per %s: %s (B/A %.3f)\n", dstat_model_name(st->model),
		dstat_model_text(st->model), st->scale);
	if (st->asked == DSTAT_AUTO) {
		if (!st->nbulk) {
			fprintf(f, "  (--per auto: too few procedures to choose by: the first)\n");
		} else {
			fprintf(f, "  chosen (--per auto): the median B/A of %zu procedures (within x%.3f) against each model's:",
				st->nbulk, st->bulk_se);
			for (int m = 0; m < DSTAT_MODELS; m++)
				if (st->tries[m].done)
					fprintf(f, " %s %.3f%s", dstat_model_name(m), st->tries[m].off,
						m < DSTAT_MODELS - 1 ? "," : "");
				else
					fprintf(f, " %s -%s", dstat_model_name(m), m < DSTAT_MODELS - 1 ? "," : "");
			fprintf(f, "\n");
		}
	}
	if (st->model != DSTAT_SAMPLE) {
		fmt_ratio(r[0], sizeof(r[0]), st->total.ratio);
		fmt_ratio(r[1], sizeof(r[1]), st->total.lo);
		fmt_ratio(r[2], sizeof(r[2]), st->total.hi);
		fprintf(f, "all samples: B/A %s [%s, %s] of what the model expects\n", r[0], r[1], r[2]);
	}
	switch (st->phi_from) {
	case DSTAT_SLICES:
		if (st->spread)
			fprintf(f, "noise: %.2f x Poisson and a spread of %.1f %% of each procedure's count a slice, from %zu slices; tests and intervals widened by it\n",
				st->phi, 100 * sqrt(st->sigma2), st->nslices);
		else
			fprintf(f, "noise: %.2f x Poisson, from %zu slices (fewer than %d a side: a large procedure's own spread is not told); tests and intervals widened by it\n",
				st->phi, st->nslices, DSTAT_SPREAD_SLICES);
		break;
	case DSTAT_PROCS:
		fprintf(f, "noise: %.2f x Poisson, from the spread of %zu procedures (no slices: a large procedure's own spread is not seen); tests and intervals widened by it\n",
			st->phi, st->npooled);
		break;
	case DSTAT_FIXED:
		fprintf(f, "noise: %.2f x Poisson, as asked\n", st->phi);
		break;
	default:
		fprintf(f, "noise: Poisson (no slices, too few procedures counted to tell more)\n");
	}
	fprintf(f, "beyond noise: +* grew, -* shrank (exact binomial tests, Holm at %g %% over %zu tests; intervals %g %%)\n\n",
		100 * st->alpha, st->family, 100 * st->level);
}

static void diff_table(FILE *f, const struct diffdoc *d, long top)
{
	const struct dstat *st = &d->st;
	double ta = st->side[0].total, tb = st->side[1].total;

	diff_header(f, d);
	fprintf(f, "   shallow%%: A      B    deep%%: A      B    change pp [%g %%]        B/A [%g %%]               p(adj)    procedure\n",
		100 * st->level, 100 * st->level);
	for (size_t i = 0; i < d->n && (!top || (long)i < top); i++) {
		const struct dstat_row *r = &st->rows[d->order[i]];
		int w = diffdoc_shown(r);
		const struct dstat_effect *e = &r->eff[w];
		const struct dstat_test *t = &st->tests[w ? r->dp : r->sh];
		char rt[3][16], ch[64], ra[64], p[16];

		fmt_ratio(rt[0], sizeof(rt[0]), e->ratio);
		fmt_ratio(rt[1], sizeof(rt[1]), e->lo);
		fmt_ratio(rt[2], sizeof(rt[2]), e->hi);
		snprintf(ch, sizeof(ch), "%+.2f [%+.2f, %+.2f]", e->pp, e->pp_lo, e->pp_hi);
		snprintf(ra, sizeof(ra), "%s [%s, %s]", rt[0], rt[1], rt[2]);
		if (r->whole)
			snprintf(p, sizeof(p), "whole");
		else
			snprintf(p, sizeof(p), "%.2g", t->p_adj);
		fprintf(f, "%s %9.2f %6.2f %9.2f %6.2f   %-25s %-22s  %-8s  %s%s%s\n",
			r->dir > 0 ? "+*" : r->dir < 0 ? "-*" : "  ", diffdoc_pct(r->a_sh, ta),
			diffdoc_pct(r->b_sh, tb), diffdoc_pct(r->a_dp, ta), diffdoc_pct(r->b_dp, tb), ch,
			ra, p, diffdoc_name(d, d->order[i]),
			r->dir > 0 ? "  (grew" : r->dir < 0 ? "  (shrank" : "",
			!r->dir ? "" : r->by ? ", deep)" : ")");
	}
	fprintf(f, "\n(change: of the shallow counts, or of the deep ones where they say more; whole: in %g %% of both sides' samples, not tested)\n",
		100 * DSTAT_WHOLE);
}

/* The differential flame graph's colours: by the procedure's verdict, paler where the
 * call path is in one side only. */
static int tint(void *ctx, const char *name, uint64_t a, uint64_t b, char *rgb, size_t len)
{
	const struct diffdoc *d = ctx;
	int64_t id = itab_find(d->names, name, strlen(name) + 1);
	const struct dstat_row *r = id >= 0 && (size_t)id < d->st.nrows ? &d->st.rows[id] : NULL;
	int dir = r ? r->dir : 0;

	if (!a || !b) /* a path one side does not have */
		snprintf(rgb, len, !a ? (dir > 0 ? "rgb(230,40,40)" : "rgb(245,175,175)")
				      : (dir < 0 ? "rgb(40,80,230)" : "rgb(170,185,245)"));
	else if (!dir)
		snprintf(rgb, len, "rgb(215,215,210)");
	else {
		int k = 90 + (int)fmin(fabs(r->eff[r->by].pp) * 15, 120);

		if (dir > 0)
			snprintf(rgb, len, "rgb(255,%d,%d)", 210 - k, 210 - k);
		else
			snprintf(rgb, len, "rgb(%d,%d,255)", 210 - k, 210 - k);
	}
	return 1;
}

static const char *diff_svg, *diff_title;
static long diff_top;
static const char *diff_alloc_value;
static enum dstat_model diff_per = DSTAT_AUTO;

static int opt_diff_top(struct cli *c, const char *val)
{
	if (parse_whole(val, 1, 1000000, &diff_top))
		return cli_fail(c, 2, "--top %s: expected a whole number from 1 to 1000000", val);
	return 0;
}

static int opt_per(struct cli *c, const char *val)
{
	if (dstat_model_parse(val, &diff_per))
		return cli_fail(c, 2, "--per %s: expected sample, second, run or auto", val);
	return 0;
}

const struct opt diff_opts[] = {
	{ "top", 0, "N", OPT_CALL, NULL, .help = "the first N rows", .fn = opt_diff_top },
	{ "per", 0, "sample|second|run|auto", OPT_CALL, NULL,
	  .help = "what did not change: the same share of the samples, CPU seconds a second, CPU seconds in all; auto (the default): of those the sides allow, the one under which the least changed",
	  .fn = opt_per },
	{ "svg", 0, "FILE", OPT_TEXT, NULL,
	  .help = "a differential flame graph: A and B merged, red grew, blue shrank",
	  .text = &diff_svg, .complete = COMPL_FILE },
	{ "title", 0, "T", OPT_TEXT, NULL, .help = "the SVG's title", .text = &diff_title },
	{ "alloc", 0, NULL, OPT_TRUE, "alloc",
	  .help = "the allocations': each procedure's bytes on the two sides, a z test of each (docs/alloc.md)",
	  .excludes = "per svg tail" },
	{ "alloc-value", 0, "inuse|alloc", OPT_TEXT, NULL,
	  .help = "with --alloc: the bytes live at each side's end (default), or allocated a second",
	  .text = &diff_alloc_value },
	OPT_ALL(pattern_opts),
	/* diff TARGET --tail LEG: its body (A) against its tail (B) */
	OPT_SOME(tail_opts, "tail"),
	OPT_TABLE_END,
};

/* diff and save ask for the slices with the stacks: the timeline of the procedures the
 * dispersion follows. */
static void with_slices(cJSON *req)
{
	req_set(req, "timeline", cJSON_CreateBool(1));
	req_set(req, "timeline_top", cJSON_CreateNumber(DIFF_SLICE_PROCS));
}

int cmd_diff(struct cli *c)
{
	struct diffdoc d;
	char err[256], title[512], buf[2][200];
	bool tail = cJSON_GetObjectItemCaseSensitive(c->req, "tail") != NULL;
	int r = 0;

	if (proto_bool(c->req, "alloc", 0)) {
		if (c->nwords != 2)
			return cli_fail(c, 2, "diff --alloc: give two sides A B: targets, TARGET@SINCE..UNTIL or files save --alloc wrote");
		return cmd_diff_alloc(c, diff_alloc_value, diff_top);
	}
	if (diff_alloc_value)
		return cli_fail(c, 2, "--alloc-value: with --alloc");

	if (tail && c->nwords != 1)
		return cli_fail(c, 2, "diff --tail LEG: give one target: its body (A) against its tail (B)");
	if (!tail && c->nwords != 2)
		return cli_fail(c, 2, "diff: give two sides A B: targets, TARGET@SINCE..UNTIL or saved files");
	/* a tail and its body are the samples of different instances: their shares compare,
	 * their times do not; and they are not kept by time (no slices) */
	if (diffdoc_init(&d, tail && diff_per == DSTAT_AUTO ? DSTAT_SAMPLE : diff_per, DIFF_ALPHA))
		return cli_fail(c, 1, "out of memory");
	if (!tail)
		with_slices(c->req);
	for (int k = 0; k < 2 && !r; k++) {
		cJSON *rep;

		if (tail)
			req_set(c->req, "tail_part", cJSON_CreateString(k ? "tail" : "body"));
		r = side_fetch(c, c->words[tail ? 0 : k], c->req, &rep);
		if (!r && (r = diffdoc_side(&d, k, rep, err, sizeof(err))))
			r = r == -EINVAL ? cli_fail(c, 1, "diff: %s: %s", c->words[k], err)
					 : cli_fail(c, 1, "out of memory");
	}
	if (!r && (r = diffdoc_run(&d, err, sizeof(err))))
		r = r == -ENOMEM ? cli_fail(c, 1, "out of memory") :
		    cli_fail(c, 1, "diff: %s (%s)", err,
			     !tail ? c->words[err[0] == 'B'] : err[0] == 'B' ? "the tail" : "the body");
	if (!r && diff_svg) {
		struct flame_tint ti = { tint, &d,
			"widths: the mean of A's and B's shares · red: grew beyond noise · blue: shrank beyond noise · grey: no change beyond noise · pale: a call path only in A (blue) or only in B (red)" };
		FILE *f = fopen(diff_svg, "w");

		snprintf(title, sizeof(title), "pcmon diff: %s -> %s",
			 diffdoc_side_name(&d.s[0], buf[0], sizeof(buf[0])),
			 diffdoc_side_name(&d.s[1], buf[1], sizeof(buf[1])));
		if (!f || export_flamegraph_diff(f, &d.s[0].p, &d.s[1].p, diff_title ? diff_title : title, &ti) ||
		    fclose(f))
			r = cli_fail(c, 1, "--svg %s: %s", diff_svg, strerror(errno));
	}
	if (!r) {
		if (c->json) {
			cJSON *o = diffdoc_json(&d, diff_top);
			char *js = cJSON_Print(o);

			printf("%s\n", js ? js : "{}");
			free(js);
			cJSON_Delete(o);
		} else {
			diff_table(stdout, &d, diff_top);
		}
	}
	diffdoc_free(&d);
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
	{ "alloc", 0, NULL, OPT_TRUE, "alloc",
	  .help = "the allocations': allocated and live bytes by slice (docs/alloc.md)" },
	{ "sort", 0, "inuse|alloc", OPT_STR, "sort",
	  .help = "with --alloc: follow what holds the most at the end (default) or allocated the most" },
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

/* As columns(), but each column the value of its last slice (a level, as live bytes, not a
 * flow); @n slices. */
static void columns_last(const cJSON *slices, const cJSON *vals, int n, double *col, int ncol)
{
	double t0 = proto_num(cJSON_GetArrayItem(slices, 0), "t0", 0);
	double t1 = proto_num(cJSON_GetArrayItem(slices, n - 1), "t1", 0);
	const cJSON *s;
	int i = 0;

	memset(col, 0, SPARK_COLS * sizeof(*col));
	cJSON_ArrayForEach(s, slices) {
		double mid = (proto_num(s, "t0", 0) + proto_num(s, "t1", 0)) / 2;
		int c = t1 > t0 ? (int)((mid - t0) / (t1 - t0) * ncol) : 0;
		const cJSON *v = cJSON_GetArrayItem(vals, i++);

		col[c < 0 ? 0 : c >= ncol ? ncol - 1 : c] = v ? v->valuedouble : 0;
	}
}

/* @v bytes as people read them */
static const char *mib(char *buf, size_t len, double v)
{
	snprintf(buf, len, "%.1f MiB", v / (1 << 20));
	return buf;
}

/* The allocations' timeline: allocated in each column, live at its end; then each followed
 * procedure's live bytes (allocated, --sort alloc), on the target's scale. */
static void alloc_timeline_table(FILE *f, const cJSON *rep, const cJSON *tl)
{
	const cJSON *sl = cJSON_GetObjectItemCaseSensitive(tl, "slices"), *p, *s;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	bool by_alloc = !strcmp(proto_str(tl, "sort", "inuse"), "alloc");
	double col[SPARK_COLS], max = 0, amax = 0, all = 0, end = 0;
	cJSON *a = cJSON_CreateArray(), *l = cJSON_CreateArray();
	char x[32], y[32];
	int n, nc;

	cJSON_ArrayForEach(s, sl) {
		cJSON_AddItemToArray(a, cJSON_CreateNumber(proto_num(s, "alloc_bytes", 0)));
		cJSON_AddItemToArray(l, cJSON_CreateNumber(proto_num(s, "inuse_bytes", 0)));
		all += proto_num(s, "alloc_bytes", 0);
		end = proto_num(s, "inuse_bytes", 0);
	}
	n = columns(sl, a, col, &nc);
	clock_text(x, sizeof(x), proto_num(cJSON_GetArrayItem(sl, 0), "t0", 0));
	clock_text(y, sizeof(y), proto_num(cJSON_GetArrayItem(sl, n - 1), "t1", 0));
	fprintf(f, "pcmon: target %.0f \"%s\", allocations, %s to %s, %d slice(s) in %d column(s)\n\n",
		proto_num(t, "id", 0), proto_str(t, "name", "?"), x, y, n, nc);
	for (int i = 0; i < nc; i++)
		amax = fmax(amax, col[i]);
	fprintf(f, "%-28.28s ", "allocated");
	spark(f, col, nc, amax, NULL);
	fprintf(f, "  %s in all\n", mib(x, sizeof(x), all));
	columns_last(sl, l, n, col, nc);
	for (int i = 0; i < nc; i++)
		max = fmax(max, col[i]);
	fprintf(f, "%-28.28s ", "live");
	spark(f, col, nc, max, NULL);
	fprintf(f, "  %s at the end\n", mib(x, sizeof(x), end));
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(tl, "procedures")) {
		const cJSON *vals = cJSON_GetObjectItemCaseSensitive(p, by_alloc ? "alloc_bytes"
										 : "inuse_bytes");
		double rmax = 0;

		if (by_alloc)
			columns(sl, vals, col, &nc);
		else
			columns_last(sl, vals, n, col, nc);
		for (int i = 0; i < nc; i++)
			rmax = fmax(rmax, col[i]);
		fprintf(f, "%-28.28s ", proto_str(p, "name", "?"));
		spark(f, col, nc, by_alloc ? amax : max, NULL);
		fprintf(f, "  %s\n", mib(x, sizeof(x), rmax));
	}
	{
		const cJSON *sm = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(rep, "alloc"), "summary");
		double lost = proto_num(sm, "ring_full", 0) + proto_num(sm, "records_lost", 0) +
			      proto_num(sm, "slices_lost", 0);

		if (lost)
			fprintf(f, "! %.0f sampled allocations or frees lost or not kept by time: the slices are short\n",
				lost);
	}
	fprintf(f, "\n(allocated: bytes allocated in each column; live: held at its end; rows: each "
		   "procedure's own %s bytes, on the %s row's scale, and its most)\n",
		by_alloc ? "allocated" : "live", by_alloc ? "allocated" : "live");
	cJSON_Delete(a);
	cJSON_Delete(l);
}

static void timeline_table(FILE *f, const cJSON *rep)
{
	const cJSON *atl = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(rep, "alloc"), "timeline");
	const cJSON *tl = atl ? atl : cJSON_GetObjectItemCaseSensitive(rep, "timeline");
	const cJSON *sl = cJSON_GetObjectItemCaseSensitive(tl, "slices"), *p, *s;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	double col[SPARK_COLS], counted[SPARK_COLS], all = 0, busiest = 0;
	char a[32], b[32];
	int n, nc;

	if (atl && cJSON_GetArraySize(sl)) {
		alloc_timeline_table(f, rep, atl);
		return;
	}
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
	clock_text(a, sizeof(a), proto_num(cJSON_GetArrayItem(sl, 0), "t0", 0));
	clock_text(b, sizeof(b), proto_num(cJSON_GetArrayItem(sl, n - 1), "t1", 0));
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
		return cli_fail(c, 2, "timeline: which target? give its id or name (see pcmon targets)");
	if (tl_svg && proto_bool(c->req, "alloc", 0))
		return cli_fail(c, 2, "--svg: not with --alloc yet: give the text timeline, or --json");
	if (proto_bool(c->req, "alloc", 0) && cJSON_GetObjectItemCaseSensitive(c->req, "timeline_procs"))
		return cli_fail(c, 2, "--proc: not with --alloc yet: --top N follows the procedures that hold the most");
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
			return cli_fail(c, 1, "--svg %s: %s", tl_svg, strerror(errno));
		}
	}
	r = cli_show(c, rep, timeline_table);
	cJSON_Delete(rep);
	return r;
}
