// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exports: the profile of a `list` reply (daemon/views/stacks.h) read into arrays, its
 * samples as frames, and folded stacks. profile.proto is pprof.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "util.h"

/* ---- the profile of a reply */

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool jbool(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* The items of array @k of @o as a C array of @size-byte elements (zeroed). */
static const cJSON *jarr(const cJSON *o, const char *k, int *n, void **out, size_t size)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);

	*n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
	*out = calloc(*n + 1, size);
	return *out && cJSON_IsArray(a) ? a : NULL;
}

/* An int array [i, ...] whose entries are all in [0, bound). */
static int ints(const cJSON *a, int bound, int **out)
{
	int n = cJSON_GetArraySize(a), i = 0;
	const cJSON *v;

	*out = calloc(n + 1, sizeof(**out));
	if (!*out || !cJSON_IsArray(a))
		return -1;
	cJSON_ArrayForEach(v, a) {
		if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= bound)
			return -1;
		(*out)[i++] = v->valueint;
	}
	return n;
}

/* Location @o, its objects and functions read: 0, or -1 if it names others. */
static int load_location(const struct xprof *p, const cJSON *o, struct xlocation *l)
{
	const cJSON *lines = cJSON_GetObjectItemCaseSensitive(o, "lines"), *ln;
	int j = 0;

	l->object = (int)jnum(o, "object");
	l->address = strtoull(jstr(o, "address"), NULL, 16);
	l->kernel = jbool(o, "kernel");
	l->nlines = cJSON_GetArraySize(lines);
	l->lines = calloc(l->nlines + 1, sizeof(*l->lines));
	if (!l->lines || l->object < -1 || l->object >= p->nobjects || l->nlines < 1)
		return -1;
	cJSON_ArrayForEach(ln, lines) {
		int *v, n = ints(ln, 1 << 30, &v);

		if (n != 2 || v[0] >= p->nfunctions) {
			free(v);
			return -1;
		}
		l->lines[j][0] = v[0];
		l->lines[j++][1] = v[1];
		free(v);
	}
	return 0;
}

/* A profile of values: their types, and each sample's. -1 if malformed. */
static int load_values(struct xprof *p, const cJSON *prof)
{
	const cJSON *vt = cJSON_GetObjectItemCaseSensitive(prof, "value_types"), *it;
	int n = 0;

	if (!vt)
		return 0;
	cJSON_ArrayForEach(it, vt) {
		if (n == XPROF_MAX_VALUES || !cJSON_IsString(cJSON_GetArrayItem(it, 0)) ||
		    !cJSON_IsString(cJSON_GetArrayItem(it, 1)))
			return -1;
		p->value_type[n] = cJSON_GetArrayItem(it, 0)->valuestring;
		p->value_unit[n++] = cJSON_GetArrayItem(it, 1)->valuestring;
	}
	p->nvalues = n;
	p->default_value = jstr(prof, "default_value");
	p->period_type = jstr(prof, "period_type");
	p->period = jnum(prof, "period");
	for (int i = 0; i < p->nsamples; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(prof, "samples"), i),
			"values");

		if (cJSON_GetArraySize(v) != n)
			return -1;
		for (int k = 0; k < n; k++) {
			const cJSON *x = cJSON_GetArrayItem(v, k);

			if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0))
				return -1;
			p->samples[i].values[k] = x->valuedouble;
		}
	}
	return 0;
}

int xprof_pick_value(struct xprof *p, const char *name, char *err, size_t errlen)
{
	int k = -1;

	if (!p->nvalues) {
		if (!name)
			return 0;
		snprintf(err, errlen, "the profile has no values to pick from: its samples are counted");
		return -1;
	}
	if (!name)
		name = p->default_value;
	for (int i = 0; i < p->nvalues; i++)
		if (!strcmp(p->value_type[i], name))
			k = i;
	if (k < 0) {
		int n = snprintf(err, errlen, "no value %s: it has", name);

		for (int i = 0; i < p->nvalues && n > 0 && (size_t)n < errlen; i++)
			n += snprintf(err + n, errlen - n, " %s", p->value_type[i]);
		return -1;
	}
	for (int i = 0; i < p->nsamples; i++)
		p->samples[i].count = (uint64_t)llround(p->samples[i].values[k]);
	return 0;
}

int xprof_load(struct xprof *p, const cJSON *rep, char *err, size_t errlen)
{
	const cJSON *prof = cJSON_GetObjectItemCaseSensitive(rep, "profile");
	const cJSON *tgt = cJSON_GetObjectItemCaseSensitive(rep, "target");
	const cJSON *a, *o;
	int i;

	memset(p, 0, sizeof(*p));
	p->rep = rep;
	if (!cJSON_IsObject(prof)) {
		snprintf(err, errlen, "the target has no samples to export (it was started with --no-sample)");
		return -1;
	}
	p->target = jstr(tgt, "name");
	p->mode = jstr(tgt, "mode");
	p->elapsed_s = jnum(tgt, "elapsed_s");
	p->counted = jnum(cJSON_GetObjectItemCaseSensitive(rep, "summary"), "counted");
	p->period_ns = jnum(prof, "period_ns");
	p->start_wall = jnum(prof, "start_wall");
	p->host = jstr(prof, "host");
	if (cJSON_GetObjectItemCaseSensitive(prof, "duration_s")) /* a window of the target */
		p->elapsed_s = jnum(prof, "duration_s");

	a = jarr(prof, "objects", &p->nobjects, (void **)&p->objects, sizeof(*p->objects));
	i = 0;
	cJSON_ArrayForEach(o, a) {
		p->objects[i++] = (struct xobject){
			.name = jstr(o, "name"), .path = jstr(o, "path"),
			.build_id = jstr(o, "build_id"), .kernel = jbool(o, "kernel"),
			.has_functions = jbool(o, "has_functions"),
			.has_filenames = jbool(o, "has_filenames"),
			.has_lines = jbool(o, "has_line_numbers"),
		};
	}
	a = jarr(prof, "functions", &p->nfunctions, (void **)&p->functions, sizeof(*p->functions));
	i = 0;
	cJSON_ArrayForEach(o, a) {
		p->functions[i++] = (struct xfunction){
			.name = jstr(o, "name"), .module = jstr(o, "module"), .file = jstr(o, "file"),
			.line = (long)jnum(o, "line"),
		};
	}
	a = jarr(prof, "locations", &p->nlocations, (void **)&p->locations, sizeof(*p->locations));
	i = 0;
	cJSON_ArrayForEach(o, a)
		if (load_location(p, o, &p->locations[i++]))
			goto bad;
	a = jarr(prof, "samples", &p->nsamples, (void **)&p->samples, sizeof(*p->samples));
	i = 0;
	cJSON_ArrayForEach(o, a) {
		struct xsample *s = &p->samples[i++];

		*s = (struct xsample){
			.count = (uint64_t)jnum(o, "count"), .ns = (uint64_t)jnum(o, "ns"),
			.kind = jstr(o, "kind"), .charged = jstr(o, "charged"),
			.section = jstr(o, "section"), .pid = (long)jnum(o, "pid"),
			.tid = (long)jnum(o, "tid"), .thread = jstr(o, "thread"),
			.group = jstr(o, "group"), .comm = jstr(o, "comm"),
			.cgroup = jstr(o, "cgroup"),
		};
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "cut_short")))
			s->cut_short = jstr(o, "cut_short");
		s->nlocs = ints(cJSON_GetObjectItemCaseSensitive(o, "locations"), p->nlocations,
				&s->locs);
		if (s->nlocs < 0)
			goto bad;
	}
	if (!p->objects || !p->functions || !p->locations || !p->samples || load_values(p, prof))
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "the reply's profile is malformed (sample or location %d)", i);
	xprof_free(p);
	return -1;
}

void xprof_free(struct xprof *p)
{
	for (int i = 0; p->locations && i < p->nlocations; i++)
		free(p->locations[i].lines);
	for (int i = 0; p->samples && i < p->nsamples; i++)
		free(p->samples[i].locs);
	free(p->objects);
	free(p->functions);
	free(p->locations);
	free(p->samples);
	memset(p, 0, sizeof(*p));
}

/* ---- frames */

const char *xprof_fname(const struct xprof *p, int fn)
{
	return p->functions[fn].name[0] ? p->functions[fn].name : "[foreign]";
}

int xprof_frames(const struct xprof *p, const struct xsample *s, struct xframe **out,
		 size_t *cap)
{
	size_t n = 3;

	for (int i = 0; i < s->nlocs; i++)
		n += p->locations[s->locs[i]].nlines;
	if (GROW(*out, *cap, n))
		return -1;
	n = 0;
	if (s->group[0]) /* --by: who took it, at the root */
		(*out)[n++] = (struct xframe){ s->group, XF_GROUP };
	if (!strcmp(s->charged, "critical") || !strcmp(s->charged, "unwalkable")) {
		/* a section's samples are its own, as in LIST: no procedure's */
		(*out)[n++] = (struct xframe){ s->section, XF_CRITICAL };
		return n;
	}
	if (s->cut_short) /* what was not walked stands as one frame, so widths add up */
		(*out)[n++] = (struct xframe){ XF_TRUNCATED_NAME, XF_TRUNCATED };
	for (int i = s->nlocs - 1; i >= 0; i--) {
		const struct xlocation *l = &p->locations[s->locs[i]];

		for (int j = l->nlines - 1; j >= 0; j--) {
			int fn = l->lines[j][0];

			(*out)[n++] = (struct xframe){
				xprof_fname(p, fn),
				!p->functions[fn].name[0] ? XF_FOREIGN :
				l->kernel		  ? XF_KERNEL :
				j < l->nlines - 1	  ? XF_INLINE :
							    XF_USER,
			};
		}
	}
	if (!strcmp(s->charged, "foreign") && (!n || (*out)[n - 1].type != XF_FOREIGN))
		(*out)[n++] = (struct xframe){ "[foreign]", XF_FOREIGN }; /* charged above the root */
	return n;
}

/* ---- folded */

struct fline {
	char *text;
	uint64_t count;
};

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

int export_folded(FILE *f, const struct xprof *p)
{
	static const char *const suffix[] = { [XF_USER] = "", [XF_KERNEL] = "_[k]",
					      [XF_INLINE] = "_[i]", [XF_CRITICAL] = "",
					      [XF_FOREIGN] = "", [XF_TRUNCATED] = "",
					      [XF_GROUP] = "" };
	struct fline *lines = calloc(p->nsamples + 1, sizeof(*lines));
	struct xframe *fr = NULL;
	size_t cap = 0, nl = 0;
	int err = -ENOMEM;

	if (!lines)
		return -ENOMEM;
	for (int i = 0; i < p->nsamples; i++) {
		int n = xprof_frames(p, &p->samples[i], &fr, &cap);
		size_t len = 1;
		char *t;

		if (n < 0)
			goto out;
		if (!p->samples[i].count)
			continue;
		for (int j = 0; j < n; j++)
			len += strlen(fr[j].name) + 24;
		t = lines[nl].text = malloc(len);
		if (!t)
			goto out;
		t[0] = '\0';
		for (int j = 0; j < n; j++) {
			if (fr[j].type == XF_CRITICAL)
				t += sprintf(t, "%s[critical:%s]", j ? ";" : "", fr[j].name);
			else if (fr[j].type == XF_GROUP)
				t += sprintf(t, "[%s]", fr[j].name); /* (the root) */
			else
				t += sprintf(t, "%s%s%s", j ? ";" : "", fr[j].name, suffix[fr[j].type]);
		}
		lines[nl++].count = p->samples[i].count;
	}
	/* one line per distinct stack: samples of several processes or kinds merge */
	qsort(lines, nl, sizeof(*lines), fline_cmp);
	for (size_t i = 0; i < nl;) {
		uint64_t c = 0;
		size_t j;

		for (j = i; j < nl && !strcmp(lines[j].text, lines[i].text); j++)
			c += lines[j].count;
		fprintf(f, "%s %llu\n", lines[i].text, (unsigned long long)c);
		i = j;
	}
	err = ferror(f) ? -EIO : 0;
out:
	for (size_t i = 0; i <= nl && i < (size_t)p->nsamples; i++)
		free(lines[i].text);
	free(lines);
	free(fr);
	return err;
}
