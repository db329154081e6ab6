// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon export --format pprof: profile.proto, written with an encoder of our own (a few
 * varints and length-delimited fields need no protobuf library) and gzipped by zlib.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export.h"
#include "util.h"

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

int export_gzip(FILE *f, const void *d, size_t len)
{
	z_stream z = { 0 };
	uint8_t buf[65536];
	int r;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)d;
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

/* One profile being encoded: the message, two scratch messages for its parts, the strings. */
struct enc {
	const struct xprof *p;
	struct pb b, m, m2;
	struct strtab st;
	struct pseudo ps;
	uint64_t *ids;		/* a sample's location ids */
	size_t cap_ids;
};

/*
 * Sample @s: its locations (a pseudo one first for a section's; with --by, one last for its
 * group, the root), values and labels (with --by, its group's: comm, cgroup).
 */
static int enc_sample(struct enc *e, const struct xsample *s)
{
	const struct xprof *p = e->p;
	bool own = !strcmp(s->charged, "critical") || !strcmp(s->charged, "unwalkable") ||
		   (!strcmp(s->charged, "foreign") && !s->nlocs);
	/* off-CPU time is the nanoseconds measured, on-CPU the interrupts' worth; a profile of
	 * values has its own */
	uint64_t v[XPROF_MAX_VALUES] = { s->count, s->ns ? s->ns : s->count * (uint64_t)p->period_ns };
	int nv = p->nvalues ? p->nvalues : 2;
	uint64_t *ids;
	int n = 0;

	if (GROW(e->ids, e->cap_ids, (size_t)s->nlocs + 3))
		return -ENOMEM;
	ids = e->ids;
	if (own) {
		char name[96];

		if (!strcmp(s->charged, "foreign"))
			snprintf(name, sizeof(name), "[foreign]");
		else
			snprintf(name, sizeof(name), "[critical:%s]", s->section);
		if (!(ids[n++] = pseudo_id(p, &e->ps, name)))
			return -ENOMEM;
	}
	for (int j = 0; j < s->nlocs; j++)
		ids[n++] = s->locs[j] + 1;
	if (s->cut_short && !own && !(ids[n++] = pseudo_id(p, &e->ps, XF_TRUNCATED_NAME)))
		return -ENOMEM;
	if (s->group[0]) {
		char *root;

		if (asprintf(&root, "[%s]", s->group) < 0)
			return -ENOMEM;
		ids[n] = pseudo_id(p, &e->ps, root);
		free(root);
		if (!ids[n++])
			return -ENOMEM;
	}
	packed(&e->m, S_LOCATION_ID, &e->m2, ids, n);
	for (int k = 0; k < p->nvalues; k++)
		v[k] = (uint64_t)llround(s->values[k]);
	packed(&e->m, S_VALUE, &e->m2, v, nv);
	label(&e->m, &e->m2, &e->st, "pid", NULL, s->pid);
	if (s->tid)
		label(&e->m, &e->m2, &e->st, "tid", NULL, s->tid);
	if (s->thread[0])
		label(&e->m, &e->m2, &e->st, "thread", s->thread, 0);
	if (s->kind[0]) /* (an allocation's has none) */
		label(&e->m, &e->m2, &e->st, "kind", s->kind, 0);
	if (e->p->host && e->p->host[0]) {
		label(&e->m, &e->m2, &e->st, "host", e->p->host, 0);
		label(&e->m, &e->m2, &e->st, "target", e->p->target, 0);
	}
	if (s->comm[0])
		label(&e->m, &e->m2, &e->st, "comm", s->comm, 0);
	if (s->cgroup[0])
		label(&e->m, &e->m2, &e->st, "cgroup", s->cgroup, 0);
	pb_msg(&e->b, P_SAMPLE, &e->m);
	return 0;
}

/* pprof takes the first mapping for the program: the object most stacks start in. */
static int main_object(const struct xprof *p, uint64_t *weight)
{
	int main_obj = 0;

	for (int i = 0; i < p->nsamples; i++) {
		const struct xsample *s = &p->samples[i];
		int obj = s->nlocs ? p->locations[s->locs[s->nlocs - 1]].object : -1;

		if (obj >= 0 && !p->objects[obj].kernel)
			weight[obj] += s->count;
	}
	for (int i = 0; i < p->nobjects; i++)
		main_obj = weight[i] > weight[main_obj] ? i : main_obj;
	return main_obj;
}

static bool several_processes(const struct xprof *p)
{
	for (int i = 1; i < p->nsamples; i++)
		if (p->samples[i].pid != p->samples[0].pid)
			return true;
	return false;
}

/* A mapping per object, over the addresses it has locations at; their ids into @map_id. */
static int enc_mappings(struct enc *e, int *map_id)
{
	const struct xprof *p = e->p;
	uint64_t *lo = calloc(p->nobjects + 1, sizeof(*lo)), *hi = calloc(p->nobjects + 1, sizeof(*hi));
	uint64_t *weight = calloc(p->nobjects + 1, sizeof(*weight));
	int main_obj, base = 0, r = -ENOMEM;

	if (!lo || !hi || !weight)
		goto out;
	for (int i = 0; i < p->nlocations; i++) { /* each object's address range */
		const struct xlocation *l = &p->locations[i];

		if (l->object < 0)
			continue;
		if (!hi[l->object] || l->address < lo[l->object])
			lo[l->object] = l->address;
		if (l->address + 1 > hi[l->object])
			hi[l->object] = l->address + 1;
	}
	main_obj = main_object(p, weight);
	/*
	 * Samples of several processes (a system-wide or cgroup target) have no one program:
	 * the first mapping, which pprof names the profile's "File", is the target's name, over
	 * no address, rather than the busiest process's object.
	 */
	if (several_processes(p)) {
		pb_int(&e->m, M_ID, 1);
		pb_int(&e->m, M_FILENAME, str_id(&e->st, p->target && p->target[0] ? p->target : "?"));
		pb_msg(&e->b, P_MAPPING, &e->m);
		base = 1;
	}
	for (int k = 0; k < p->nobjects; k++) {
		int i = k == 0 ? main_obj : k <= main_obj ? k - 1 : k;
		const struct xobject *o = &p->objects[i];

		map_id[i] = base + k + 1;
		pb_int(&e->m, M_ID, base + k + 1);
		pb_int(&e->m, M_START, lo[i]);
		pb_int(&e->m, M_LIMIT, hi[i]);
		pb_int(&e->m, M_FILENAME,
		       str_id(&e->st, o->kernel ? o->name : o->path[0] ? o->path : o->name));
		pb_int(&e->m, M_BUILD_ID, str_id(&e->st, o->build_id));
		pb_int(&e->m, M_HAS_FUNCTIONS, o->has_functions);
		pb_int(&e->m, M_HAS_FILENAMES, o->has_filenames);
		pb_int(&e->m, M_HAS_LINE_NUMBERS, o->has_lines);
		pb_int(&e->m, M_HAS_INLINE_FRAMES, 1);
		pb_msg(&e->b, P_MAPPING, &e->m);
	}
	r = 0;
out:
	free(lo);
	free(hi);
	free(weight);
	return r;
}

/* The locations, with their lines (an inline chain: several); then the pseudo ones. */
static void enc_locations(struct enc *e, const int *map_id)
{
	const struct xprof *p = e->p;

	for (int i = 0; i < p->nlocations; i++) {
		const struct xlocation *l = &p->locations[i];

		pb_int(&e->m, LOC_ID, i + 1);
		pb_int(&e->m, LOC_MAPPING_ID, l->object >= 0 ? map_id[l->object] : 0);
		pb_int(&e->m, LOC_ADDRESS, l->address);
		for (int j = 0; j < l->nlines; j++) {
			pb_int(&e->m2, LN_FUNCTION_ID, l->lines[j][0] + 1);
			pb_int(&e->m2, LN_LINE, l->lines[j][1]);
			pb_msg(&e->m, LOC_LINE, &e->m2);
		}
		pb_msg(&e->b, P_LOCATION, &e->m);
	}
	for (size_t i = 0; i < e->ps.n; i++) {
		pb_int(&e->m, LOC_ID, p->nlocations + 1 + i);
		pb_int(&e->m2, LN_FUNCTION_ID, p->nfunctions + 1 + i);
		pb_msg(&e->m, LOC_LINE, &e->m2);
		pb_msg(&e->b, P_LOCATION, &e->m);
	}
}

/* The functions; then one for each pseudo location. */
static void enc_functions(struct enc *e)
{
	const struct xprof *p = e->p;

	for (int i = 0; i < p->nfunctions; i++) {
		const struct xfunction *fn = &p->functions[i];

		pb_int(&e->m, F_ID, i + 1);
		pb_int(&e->m, F_NAME, str_id(&e->st, xprof_fname(p, i)));
		pb_int(&e->m, F_SYSTEM_NAME, str_id(&e->st, xprof_fname(p, i)));
		pb_int(&e->m, F_FILENAME, str_id(&e->st, fn->file));
		pb_int(&e->m, F_START_LINE, fn->line);
		pb_msg(&e->b, P_FUNCTION, &e->m);
	}
	for (size_t i = 0; i < e->ps.n; i++) {
		pb_int(&e->m, F_ID, p->nfunctions + 1 + i);
		pb_int(&e->m, F_NAME, str_id(&e->st, e->ps.names[i]));
		pb_msg(&e->b, P_FUNCTION, &e->m);
	}
}

/* The whole profile into e->b. 0, or -errno. */
static int enc_profile(struct enc *e)
{
	const struct xprof *p = e->p;
	bool wall = !strcmp(p->mode, "REAL");
	int *map_id = calloc(p->nobjects + 1, sizeof(*map_id)), r = -ENOMEM;

	if (!map_id)
		return -ENOMEM;
	str_id(&e->st, "");
	if (p->nvalues) { /* as Go's heap profiles: alloc_objects ... inuse_space */
		for (int k = 0; k < p->nvalues; k++)
			value_type(&e->b, P_SAMPLE_TYPE, &e->m, &e->st, p->value_type[k],
				   p->value_unit[k]);
	} else {
		value_type(&e->b, P_SAMPLE_TYPE, &e->m, &e->st, "samples", "count");
		value_type(&e->b, P_SAMPLE_TYPE, &e->m, &e->st, wall ? "wall" : "cpu",
			   "nanoseconds");
	}
	for (int i = 0; i < p->nsamples; i++)
		if ((p->nvalues || p->samples[i].count) && (r = enc_sample(e, &p->samples[i])))
			goto out;
	if ((r = enc_mappings(e, map_id)))
		goto out;
	enc_locations(e, map_id);
	enc_functions(e);
	pb_int(&e->b, P_TIME_NANOS, (uint64_t)(p->start_wall * 1e9));
	pb_int(&e->b, P_DURATION_NANOS, (uint64_t)(p->elapsed_s * 1e9));
	if (p->nvalues) {
		value_type(&e->b, P_PERIOD_TYPE, &e->m, &e->st, p->period_type, "bytes");
		pb_int(&e->b, P_PERIOD, (uint64_t)p->period);
		pb_int(&e->b, P_DEFAULT_SAMPLE_TYPE, str_id(&e->st, p->default_value));
	} else {
		value_type(&e->b, P_PERIOD_TYPE, &e->m, &e->st, wall ? "wall" : "cpu",
			   "nanoseconds");
		pb_int(&e->b, P_PERIOD, (uint64_t)p->period_ns);
		pb_int(&e->b, P_DEFAULT_SAMPLE_TYPE, str_id(&e->st, "samples"));
	}
	/* the string table last: every string is in it by now */
	for (uint32_t i = 0; i < e->st.n; i++)
		pb_bytes(&e->b, P_STRING_TABLE, e->st.s[i], strlen(e->st.s[i]));
	r = e->b.err ? e->b.err : e->m.err ? e->m.err : e->m2.err ? e->m2.err : e->st.err;
out:
	free(map_id);
	return r;
}

int export_pprof(FILE *f, const struct xprof *p, char *err, size_t errlen)
{
	struct enc e = { .p = p };
	int r = enc_profile(&e);

	if (!r)
		r = export_gzip(f, e.b.p, e.b.n);
	if (r)
		snprintf(err, errlen, "cannot write the profile: %s", strerror(-r));
	for (size_t i = 0; i < e.ps.n; i++)
		free((char *)e.ps.names[i]);
	free(e.ps.names);
	free(e.ids);
	free(e.st.s);
	free(e.st.slot);
	free(e.b.p);
	free(e.m.p);
	free(e.m2.p);
	return r;
}
