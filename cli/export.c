// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exports: the profile of a `list` reply (daemon/stacks.h) read into arrays, its
 * samples as frames, folded stacks, and profile.proto written with an encoder of our own
 * (a few varints and length-delimited fields need no protobuf library) and gzipped by zlib.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
	cJSON_ArrayForEach(o, a) {
		struct xlocation *l = &p->locations[i++];
		const cJSON *lines = cJSON_GetObjectItemCaseSensitive(o, "lines"), *ln;
		int j = 0;

		l->object = (int)jnum(o, "object");
		l->address = strtoull(jstr(o, "address"), NULL, 16);
		l->kernel = jbool(o, "kernel");
		l->nlines = cJSON_GetArraySize(lines);
		l->lines = calloc(l->nlines + 1, sizeof(*l->lines));
		if (!l->lines || l->object < -1 || l->object >= p->nobjects || l->nlines < 1)
			goto bad;
		cJSON_ArrayForEach(ln, lines) {
			int *v, n = ints(ln, 1 << 30, &v);

			if (n != 2 || v[0] >= p->nfunctions) {
				free(v);
				goto bad;
			}
			l->lines[j][0] = v[0];
			l->lines[j++][1] = v[1];
			free(v);
		}
	}
	a = jarr(prof, "samples", &p->nsamples, (void **)&p->samples, sizeof(*p->samples));
	i = 0;
	cJSON_ArrayForEach(o, a) {
		struct xsample *s = &p->samples[i++];

		*s = (struct xsample){
			.count = (uint64_t)jnum(o, "count"), .ns = (uint64_t)jnum(o, "ns"),
			.kind = jstr(o, "kind"), .charged = jstr(o, "charged"),
			.section = jstr(o, "section"), .pid = (long)jnum(o, "pid"),
			.tid = (long)jnum(o, "tid"), .thread = jstr(o, "thread"),
		};
		if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "cut_short")))
			s->cut_short = jstr(o, "cut_short");
		s->nlocs = ints(cJSON_GetObjectItemCaseSensitive(o, "locations"), p->nlocations,
				&s->locs);
		if (s->nlocs < 0)
			goto bad;
	}
	if (!p->objects || !p->functions || !p->locations || !p->samples)
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

static const char *fname(const struct xprof *p, int fn)
{
	return p->functions[fn].name[0] ? p->functions[fn].name : "[foreign]";
}

int xprof_frames(const struct xprof *p, const struct xsample *s, struct xframe **out,
		 size_t *cap)
{
	size_t n = 2;

	for (int i = 0; i < s->nlocs; i++)
		n += p->locations[s->locs[i]].nlines;
	if (GROW(*out, *cap, n))
		return -1;
	n = 0;
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
				fname(p, fn),
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
					      [XF_FOREIGN] = "", [XF_TRUNCATED] = "" };
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
				t += sprintf(t, "[critical:%s]", fr[j].name);
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

/* ---- profile.proto: a protobuf encoder for the few wire types it uses */

struct pb {
	uint8_t *p;
	size_t n, cap;
	int err;
};

static void pb_raw(struct pb *b, const void *d, size_t len)
{
	if (b->err || GROW(b->p, b->cap, b->n + len)) {
		b->err = -ENOMEM;
		return;
	}
	memcpy(b->p + b->n, d, len);
	b->n += len;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t buf[10];
	size_t n = 0;

	do {
		buf[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	pb_raw(b, buf, n);
}

/* field @f, wire type 0 (varint); proto3 leaves zeros out */
static void pb_int(struct pb *b, int f, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)f << 3);
	pb_varint(b, v);
}

/* field @f, wire type 2 (length-delimited) */
static void pb_bytes(struct pb *b, int f, const void *d, size_t len)
{
	pb_varint(b, (uint64_t)f << 3 | 2);
	pb_varint(b, len);
	pb_raw(b, d, len);
}

/* a nested message, and then the message is empty again */
static void pb_msg(struct pb *b, int f, struct pb *m)
{
	if (m->err)
		b->err = m->err;
	pb_bytes(b, f, m->p, m->n);
	m->n = 0;
}

/* The string table: strings once each, "" first. */
struct strtab {
	const char **s;
	uint32_t n, cap;
	uint32_t *slot;		/* open addressing: index + 1, 0 = empty */
	uint32_t nslots;
	int err;
};

static uint32_t str_id(struct strtab *t, const char *s)
{
	uint32_t h;

	if (t->n * 2 >= t->nslots) { /* grow and rehash */
		uint32_t ns = t->nslots ? t->nslots * 2 : 1024, *slot = calloc(ns, sizeof(*slot));

		if (!slot)
			return t->err = -ENOMEM, 0;
		for (uint32_t i = 0; i < t->n; i++) {
			for (h = hash_bytes(t->s[i], strlen(t->s[i])) & (ns - 1); slot[h];
			     h = (h + 1) & (ns - 1))
				;
			slot[h] = i + 1;
		}
		free(t->slot);
		t->slot = slot;
		t->nslots = ns;
	}
	for (h = hash_bytes(s, strlen(s)) & (t->nslots - 1); t->slot[h]; h = (h + 1) & (t->nslots - 1))
		if (!strcmp(t->s[t->slot[h] - 1], s))
			return t->slot[h] - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap;

		if (GROW(t->s, cap, t->n + 1))
			return t->err = -ENOMEM, 0;
		t->cap = cap;
	}
	t->s[t->n] = s;
	t->slot[h] = ++t->n;
	return t->n - 1;
}

enum { /* profile.proto field numbers */
	P_SAMPLE_TYPE = 1, P_SAMPLE, P_MAPPING, P_LOCATION, P_FUNCTION, P_STRING_TABLE,
	P_TIME_NANOS = 9, P_DURATION_NANOS, P_PERIOD_TYPE, P_PERIOD, P_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1, VT_UNIT,
	S_LOCATION_ID = 1, S_VALUE, S_LABEL,
	L_KEY = 1, L_STR, L_NUM,
	M_ID = 1, M_START, M_LIMIT, M_OFFSET, M_FILENAME, M_BUILD_ID, M_HAS_FUNCTIONS,
	M_HAS_FILENAMES, M_HAS_LINE_NUMBERS, M_HAS_INLINE_FRAMES,
	LOC_ID = 1, LOC_MAPPING_ID, LOC_ADDRESS, LOC_LINE,
	LN_FUNCTION_ID = 1, LN_LINE,
	F_ID = 1, F_NAME, F_SYSTEM_NAME, F_FILENAME, F_START_LINE,
};

static void value_type(struct pb *b, int f, struct pb *m, struct strtab *st, const char *type,
		       const char *unit)
{
	pb_int(m, VT_TYPE, str_id(st, type));
	pb_int(m, VT_UNIT, str_id(st, unit));
	pb_msg(b, f, m);
}

static void packed(struct pb *b, int f, struct pb *m, const uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		pb_varint(m, v[i]);
	pb_msg(b, f, m);
}

/* The label (key, str) or (key, num) of a sample. */
static void label(struct pb *b, struct pb *m, struct strtab *st, const char *key,
		  const char *str, int64_t num)
{
	pb_int(m, L_KEY, str_id(st, key));
	if (str)
		pb_int(m, L_STR, str_id(st, str));
	else
		pb_int(m, L_NUM, (uint64_t)num);
	pb_msg(b, S_LABEL, m);
}

/*
 * Samples charged to a section, or to foreignPcs above the root, have no location of
 * their own; pprof wants one, so each such name gets a function and a location, with ids
 * after the real ones.
 */
struct pseudo {
	const char **names;
	size_t n, cap;
};

static uint64_t pseudo_id(const struct xprof *p, struct pseudo *ps, const char *name)
{
	size_t i;

	for (i = 0; i < ps->n && strcmp(ps->names[i], name); i++)
		;
	if (i == ps->n) {
		if (GROW(ps->names, ps->cap, ps->n + 1) || !(ps->names[ps->n] = strdup(name)))
			return 0;
		ps->n++;
	}
	return p->nlocations + 1 + i;
}

static int gzip_out(FILE *f, const uint8_t *d, size_t len)
{
	z_stream z = { 0 };
	uint8_t buf[65536];
	int r;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (uint8_t *)d;
	z.avail_in = len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		r = deflate(&z, Z_FINISH);
		if (r == Z_STREAM_ERROR ||
		    fwrite(buf, 1, sizeof(buf) - z.avail_out, f) != sizeof(buf) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (r != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

int export_pprof(FILE *f, const struct xprof *p, char *err, size_t errlen)
{
	bool wall = !strcmp(p->mode, "REAL");
	struct pb b = { 0 }, m = { 0 }, m2 = { 0 };
	struct strtab st = { 0 };
	struct pseudo ps = { 0 };
	uint64_t *lo = calloc(p->nobjects + 1, sizeof(*lo)), *hi = calloc(p->nobjects + 1, sizeof(*hi));
	uint64_t *weight = calloc(p->nobjects + 1, sizeof(*weight));
	int *map_id = calloc(p->nobjects + 1, sizeof(*map_id)), main_obj = 0;
	uint64_t *ids = NULL;
	size_t cap_ids = 0;
	int r = -ENOMEM;

	if (!lo || !hi || !weight || !map_id)
		goto out;
	str_id(&st, "");
	value_type(&b, P_SAMPLE_TYPE, &m, &st, "samples", "count");
	value_type(&b, P_SAMPLE_TYPE, &m, &st, wall ? "wall" : "cpu", "nanoseconds");

	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		bool own = !strcmp(s->charged, "critical") || !strcmp(s->charged, "unwalkable") ||
			   (!strcmp(s->charged, "foreign") && !s->nlocs);
		/* off-CPU time is the nanoseconds measured, on-CPU the interrupts' worth */
		uint64_t v[2] = { s->count, s->ns ? s->ns : s->count * (uint64_t)p->period_ns };
		int n = 0;

		if (!s->count)
			continue;
		if (GROW(ids, cap_ids, (size_t)s->nlocs + 2))
			goto out;
		if (own) {
			char name[96];

			if (!strcmp(s->charged, "foreign"))
				snprintf(name, sizeof(name), "[foreign]");
			else
				snprintf(name, sizeof(name), "[critical:%s]", s->section);
			if (!(ids[n++] = pseudo_id(p, &ps, name)))
				goto out;
		}
		for (int j = 0; j < s->nlocs; j++)
			ids[n++] = s->locs[j] + 1;
		if (s->cut_short && !own && !(ids[n++] = pseudo_id(p, &ps, XF_TRUNCATED_NAME)))
			goto out;
		packed(&m, S_LOCATION_ID, &m2, ids, n);
		packed(&m, S_VALUE, &m2, v, 2);
		label(&m, &m2, &st, "pid", NULL, s->pid);
		if (s->tid)
			label(&m, &m2, &st, "tid", NULL, s->tid);
		if (s->thread[0])
			label(&m, &m2, &st, "thread", s->thread, 0);
		label(&m, &m2, &st, "kind", s->kind, 0);
		pb_msg(&b, P_SAMPLE, &m);
	}
	for (int i = 0; i < p->nlocations; i++) { /* each object's address range */
		const struct xlocation *l = &p->locations[i];

		if (l->object < 0)
			continue;
		if (!hi[l->object] || l->address < lo[l->object])
			lo[l->object] = l->address;
		if (l->address + 1 > hi[l->object])
			hi[l->object] = l->address + 1;
	}
	/* pprof takes the first mapping for the program: the object most stacks start in */
	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		int obj = s->nlocs ? p->locations[s->locs[s->nlocs - 1]].object : -1;

		if (obj >= 0 && !p->objects[obj].kernel)
			weight[obj] += s->count;
	}
	for (int i = 0; i < p->nobjects; i++)
		main_obj = weight[i] > weight[main_obj] ? i : main_obj;
	for (int k = 0; k < p->nobjects; k++) {
		int i = k == 0 ? main_obj : k <= main_obj ? k - 1 : k;
		const struct xobject *o = &p->objects[i];

		map_id[i] = k + 1;
		pb_int(&m, M_ID, k + 1);
		pb_int(&m, M_START, lo[i]);
		pb_int(&m, M_LIMIT, hi[i]);
		pb_int(&m, M_FILENAME, str_id(&st, o->kernel ? o->name : o->path[0] ? o->path : o->name));
		pb_int(&m, M_BUILD_ID, str_id(&st, o->build_id));
		pb_int(&m, M_HAS_FUNCTIONS, o->has_functions);
		pb_int(&m, M_HAS_FILENAMES, o->has_filenames);
		pb_int(&m, M_HAS_LINE_NUMBERS, o->has_lines);
		pb_int(&m, M_HAS_INLINE_FRAMES, 1);
		pb_msg(&b, P_MAPPING, &m);
	}
	for (int i = 0; i < p->nlocations; i++) {
		const struct xlocation *l = &p->locations[i];

		pb_int(&m, LOC_ID, i + 1);
		pb_int(&m, LOC_MAPPING_ID, l->object >= 0 ? map_id[l->object] : 0);
		pb_int(&m, LOC_ADDRESS, l->address);
		for (int j = 0; j < l->nlines; j++) {
			pb_int(&m2, LN_FUNCTION_ID, l->lines[j][0] + 1);
			pb_int(&m2, LN_LINE, l->lines[j][1]);
			pb_msg(&m, LOC_LINE, &m2);
		}
		pb_msg(&b, P_LOCATION, &m);
	}
	for (size_t i = 0; i < ps.n; i++) {
		pb_int(&m, LOC_ID, p->nlocations + 1 + i);
		pb_int(&m2, LN_FUNCTION_ID, p->nfunctions + 1 + i);
		pb_msg(&m, LOC_LINE, &m2);
		pb_msg(&b, P_LOCATION, &m);
	}
	for (int i = 0; i < p->nfunctions; i++) {
		const struct xfunction *fn = &p->functions[i];

		pb_int(&m, F_ID, i + 1);
		pb_int(&m, F_NAME, str_id(&st, fname(p, i)));
		pb_int(&m, F_SYSTEM_NAME, str_id(&st, fname(p, i)));
		pb_int(&m, F_FILENAME, str_id(&st, fn->file));
		pb_int(&m, F_START_LINE, fn->line);
		pb_msg(&b, P_FUNCTION, &m);
	}
	for (size_t i = 0; i < ps.n; i++) {
		pb_int(&m, F_ID, p->nfunctions + 1 + i);
		pb_int(&m, F_NAME, str_id(&st, ps.names[i]));
		pb_msg(&b, P_FUNCTION, &m);
	}
	pb_int(&b, P_TIME_NANOS, (uint64_t)(p->start_wall * 1e9));
	pb_int(&b, P_DURATION_NANOS, (uint64_t)(p->elapsed_s * 1e9));
	value_type(&b, P_PERIOD_TYPE, &m, &st, wall ? "wall" : "cpu", "nanoseconds");
	pb_int(&b, P_PERIOD, (uint64_t)p->period_ns);
	pb_int(&b, P_DEFAULT_SAMPLE_TYPE, str_id(&st, "samples"));
	/* the string table last: every string is in it by now */
	for (uint32_t i = 0; i < st.n; i++)
		pb_bytes(&b, P_STRING_TABLE, st.s[i], strlen(st.s[i]));
	r = b.err ? b.err : m.err ? m.err : m2.err ? m2.err : st.err;
	if (!r)
		r = gzip_out(f, b.p, b.n);
	if (r)
		snprintf(err, errlen, "cannot write the profile: %s", strerror(-r));
out:
	for (size_t i = 0; i < ps.n; i++)
		free((char *)ps.names[i]);
	free(ps.names);
	free(ids);
	free(st.s);
	free(st.slot);
	free(b.p);
	free(m.p);
	free(m2.p);
	free(lo);
	free(hi);
	free(weight);
	free(map_id);
	return r;
}
