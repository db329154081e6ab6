// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon diff --alloc A B (docs/alloc.md): each procedure's allocations on two sides (targets
 * or windows TARGET@SINCE..UNTIL), compared through their estimates and standard errors: a
 * z test of each procedure's own bytes, two-sided, Holm-corrected over the procedures at the
 * sampling diff's level. --alloc-value inuse (the default): the bytes live at each side's
 * end; alloc: the bytes allocated a second.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diffstat.h"
#include "proto.h"
#include "util.h"

#define ADIFF_ALPHA 0.01

struct arow {
	const char *proc;
	double v[2], se[2];	/* A's and B's bytes (a second, for alloc) and standard errors */
	struct dstat_test t;
};

/* A side's length in seconds: its window's, or its target's life. */
static double side_seconds(const cJSON *rep)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(rep, "alloc"), "window");

	if (w && proto_num(w, "to", 0) > proto_num(w, "from", 0))
		return proto_num(w, "to", 0) - proto_num(w, "from", 0);
	return proto_num(cJSON_GetObjectItemCaseSensitive(rep, "target"), "elapsed_s", 0);
}

static struct arow *row_of(struct arow **rows, size_t *n, size_t *cap, const char *proc)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*rows)[i].proc, proc))
			return &(*rows)[i];
	if (GROW(*rows, *cap, *n + 1))
		return NULL;
	(*rows)[*n] = (struct arow){ .proc = proc };
	return &(*rows)[(*n)++];
}

static int by_change(const void *x, const void *y)
{
	const struct arow *a = x, *b = y;
	double da = fabs(a->v[1] - a->v[0]), db = fabs(b->v[1] - b->v[0]);

	if (a->t.sig != b->t.sig)
		return a->t.sig ? -1 : 1;
	return da < db ? 1 : da > db ? -1 : strcmp(a->proc, b->proc);
}

static const char *verdict(const struct arow *r)
{
	return !r->t.tested ? "untested" : !r->t.sig ? "no change" : r->v[1] > r->v[0] ? "grew"
										       : "shrank";
}

static void bytes(char *buf, size_t len, double v)
{
	snprintf(buf, len, fabs(v) >= 1 << 20 ? "%.1f MiB" : "%.1f KiB",
		 v / (fabs(v) >= 1 << 20 ? 1 << 20 : 1 << 10));
}

static void table(FILE *f, struct arow *rows, size_t n, bool rate, const char *const *names,
		  int top)
{
	char a[32], b[32], d[32];

	fprintf(f, "pcmon diff --alloc: %s %s, A %s, B %s (z test of each procedure's own bytes, "
		   "Holm, alpha %.2g)\n\n",
		rate ? "bytes allocated a second" : "bytes live at the end", rate ? "in each" : "of each",
		names[0], names[1], ADIFF_ALPHA);
	fprintf(f, "%12s %12s %12s %7s %8s  %-9s  %s\n", "A", "B", "B - A", "z", "p (Holm)",
		"", "procedure");
	for (size_t i = 0; i < n && (top <= 0 || (int)i < top); i++) {
		bytes(a, sizeof(a), rows[i].v[0]);
		bytes(b, sizeof(b), rows[i].v[1]);
		bytes(d, sizeof(d), rows[i].v[1] - rows[i].v[0]);
		fprintf(f, "%12s %12s %12s %7.1f %8.3g  %-9s  %s\n", a, b, d, rows[i].t.z,
			rows[i].t.p_adj, verdict(&rows[i]), rows[i].proc);
	}
}

static cJSON *as_json(struct arow *rows, size_t n, bool rate, const char *const *names,
		      const double *secs)
{
	cJSON *o = cJSON_CreateObject(), *arr, *t;

	for (int k = 0; k < 2; k++) {
		cJSON *s = cJSON_AddObjectToObject(o, k ? "b" : "a");

		cJSON_AddStringToObject(s, "name", names[k]);
		cJSON_AddNumberToObject(s, "seconds", secs[k]);
	}
	cJSON_AddStringToObject(o, "value", rate ? "alloc" : "inuse");
	t = cJSON_AddObjectToObject(o, "test");
	cJSON_AddStringToObject(t, "name", "z test of each procedure's estimated bytes, two-sided, Holm-corrected");
	cJSON_AddNumberToObject(t, "alpha", ADIFF_ALPHA);
	arr = cJSON_AddArrayToObject(o, "procedures");
	for (size_t i = 0; i < n; i++) {
		cJSON *r = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, r);
		cJSON_AddStringToObject(r, "procedure", rows[i].proc);
		cJSON_AddNumberToObject(r, "a_bytes", round(rows[i].v[0]));
		cJSON_AddNumberToObject(r, "b_bytes", round(rows[i].v[1]));
		cJSON_AddNumberToObject(r, "a_bytes_stderr", round(rows[i].se[0]));
		cJSON_AddNumberToObject(r, "b_bytes_stderr", round(rows[i].se[1]));
		cJSON_AddNumberToObject(r, "z", rows[i].t.z);
		cJSON_AddNumberToObject(r, "p", rows[i].t.p);
		cJSON_AddNumberToObject(r, "p_adj", rows[i].t.p_adj);
		cJSON_AddBoolToObject(r, "significant", rows[i].t.sig);
		cJSON_AddStringToObject(r, "change", verdict(&rows[i]));
	}
	return o;
}

int cmd_diff_alloc(struct cli *c, const char *value, int top)
{
	bool rate = value && !strcmp(value, "alloc");
	const char *key = rate ? "alloc_bytes" : "inuse_bytes";
	char skey[48];
	cJSON *rep[2] = { NULL, NULL };
	struct arow *rows = NULL;
	struct dstat_test **tests = NULL;
	size_t n = 0, cap = 0, nt = 0;
	double secs[2];
	int r = 0;

	if (value && strcmp(value, "alloc") && strcmp(value, "inuse"))
		return cli_fail(c, 2, "--alloc-value %s: give inuse (live at each end) or alloc (allocated a second)",
				value);
	snprintf(skey, sizeof(skey), "%s_stderr", key);
	for (int k = 0; k < 2 && !r; k++) {
		const cJSON *procs, *it;

		r = side_fetch(c, c->words[k], c->req, &rep[k]);
		procs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(rep[k], "alloc"),
							 "procedures");
		if (!r && !procs) {
			r = cli_fail(c, 1, "diff --alloc: %s: no allocation table (a target started with --alloc, or a file save --alloc wrote)",
				     c->words[k]);
			break;
		}
		secs[k] = side_seconds(rep[k]);
		if (!r && rate && !(secs[k] > 0))
			r = cli_fail(c, 1, "diff --alloc: %s: its length is not known", c->words[k]);
		cJSON_ArrayForEach(it, procs) {
			struct arow *w = r ? NULL : row_of(&rows, &n, &cap, proto_str(it, "procedure", "?"));

			if (!r && !w)
				r = cli_fail(c, 1, "out of memory");
			if (r)
				break;
			w->v[k] = proto_num(it, key, 0) / (rate ? secs[k] : 1);
			w->se[k] = proto_num(it, skey, 0) / (rate ? secs[k] : 1);
		}
	}
	if (!r && !(tests = malloc((n + 1) * sizeof(*tests))))
		r = cli_fail(c, 1, "out of memory");
	for (size_t i = 0; !r && i < n; i++) {
		struct arow *w = &rows[i];
		double se = sqrt(w->se[0] * w->se[0] + w->se[1] * w->se[1]);

		/* (no variance on either side: nothing sampled, nothing to test) */
		w->t.tested = se > 0;
		w->t.z = se > 0 ? (w->v[1] - w->v[0]) / se : 0;
		w->t.p = se > 0 ? erfc(fabs(w->t.z) / sqrt(2)) : 1;
		w->t.p_adj = 1;
		if (w->t.tested)
			tests[nt++] = &w->t;
	}
	for (int k = 0; !r && k < 2; k++) { /* (what a side missed makes its bytes short: said) */
		const cJSON *sm = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(rep[k], "alloc"), "summary");
		double lost = proto_num(sm, "ring_full", 0) + proto_num(sm, "records_lost", 0) +
			      proto_num(sm, "slices_lost", 0) + proto_num(sm, "live_full", 0);

		if (lost)
			fprintf(stderr, "pcmon: diff --alloc: %s: %.0f sampled allocations or frees lost or not kept (ring_full, records_lost, slices_lost, live_full): its figures are short\n",
				c->words[k], lost);
	}
	if (!r) {
		const char *names[2] = { c->words[0], c->words[1] };

		dstat_holm(tests, nt, ADIFF_ALPHA);
		qsort(rows, n, sizeof(*rows), by_change);
		if (c->json) {
			cJSON *o = as_json(rows, n, rate, names, secs);
			char *js = cJSON_Print(o);

			printf("%s\n", js ? js : "{}");
			free(js);
			cJSON_Delete(o);
		} else {
			table(stdout, rows, n, rate, names, top);
		}
	}
	free(tests);
	free(rows);
	cJSON_Delete(rep[0]);
	cJSON_Delete(rep[1]);
	return r;
}
