// SPDX-License-Identifier: GPL-2.0-only
/*
 * OTLP profiles: the exports' profile as an ExportProfilesServiceRequest (opentelemetry-proto
 * v1.11.0), built as protobuf-c's generated structures and packed by libprotobuf-c.
 *
 * The format keeps whatever profiles share in one dictionary and refers to it by index,
 * entry 0 of each table being the empty value ("none"). Entries are deduplicated by value:
 * each table keys its entries by their fields, already indexes, as bytes (an itab gives
 * each distinct key a dense id: the entry's index). Entries are made only when a sample
 * that is sent needs them, so that none is orphaned.
 *
 * Every structure lives in one arena, freed at once after packing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "otlp.h"
#include "otlp_profiles.pb-c.h"
#include "proto.h"
#include "util.h"

/* protobuf-c's names carry the whole package */
#define PF(name) Opentelemetry__Proto__Profiles__V1development__##name
#define PF_INIT(NAME) OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__##NAME##__INIT
#define CM(name) Opentelemetry__Proto__Common__V1__##name
#define CM_INIT(NAME) OPENTELEMETRY__PROTO__COMMON__V1__##NAME##__INIT
#define ANY(CASE) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##CASE
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	otlp_request;

/* The attributes pcmon sets: OpenTelemetry's semantic conventions where one means the
 * same, else pcmon's own (docs/exports.md has the table). */
#define A_PID		"process.pid"
#define A_TID		"thread.id"
#define A_THREAD	"thread.name"
#define A_COMM		"pcmon.comm"
#define A_CGROUP	"pcmon.cgroup"
#define A_KIND		"pcmon.kind"
#define A_TARGET	"pcmon.target"
#define A_BUILD_ID	"process.executable.build_id.gnu"
#define A_FRAME_TYPE	"profile.frame.type"

/* ---- the arena */

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t d[];
};

#define CHUNK_SIZE (64u << 10)

/* A dictionary table: its entries and their identities. */
struct tab {
	struct itab *keys;	/* entry i's value as bytes, id i */
	void **v;
	size_t cap;
};

/* An aggregated sample: its identity and its two values (count, nanoseconds). */
struct osample {
	int32_t stack;
	int nattrs;
	int32_t *attrs;
	uint64_t count, ns;
};

struct enc {
	const struct xprof *p;
	struct chunk *ar;
	int err;
	struct tab str, map, loc, fn, attr, stack;
	struct itab *sample_keys;
	struct osample *samples;
	size_t cap_samples;
	uint8_t *key;		/* the key being built */
	size_t nkey, cap_key;
	int32_t *memo_map, *memo_loc, *memo_fn; /* the xprof's entries' indexes; 0: none yet */
	uint64_t *lo, *hi;	/* each object's address range, over its locations */
	int32_t *ids;		/* a sample's locations, or attributes */
	size_t cap_ids;
};

/* @n zeroed bytes that live as long as the encoder; NULL (and e->err) if there is no memory */
static void *az(struct enc *e, size_t n)
{
	struct chunk *c = e->ar;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_SIZE ? n : CHUNK_SIZE;

		c = calloc(1, sizeof(*c) + size);
		if (!c) {
			e->err = -ENOMEM;
			return NULL;
		}
		c->size = size;
		c->next = e->ar;
		e->ar = c;
	}
	c->used += n;
	return (char *)c->d + c->used - n;
}

/* a message of type T, initialised as protobuf-c wants it */
#define NEW(e, T, INIT)                            \
	({                                         \
		T *_m = az((e), sizeof(T));        \
		if (_m)                            \
			*_m = (T)INIT;             \
		_m;                                \
	})

static void *dup_mem(struct enc *e, const void *d, size_t len)
{
	void *c = az(e, len + 1);

	if (c)
		memcpy(c, d, len);
	return c;
}

/* ---- the dictionary */

static void key_reset(struct enc *e)
{
	e->nkey = 0;
}

static void key_u64(struct enc *e, uint64_t v)
{
	if (GROW(e->key, e->cap_key, e->nkey + sizeof(v))) {
		e->err = -ENOMEM;
		return;
	}
	memcpy(e->key + e->nkey, &v, sizeof(v));
	e->nkey += sizeof(v);
}

/*
 * The index of the entry whose value is the key built, and whether it is new (*@fresh:
 * the caller fills v[index]). -1 if there is no memory. Indexes are int32 on the wire.
 */
static int32_t tab_put(struct enc *e, struct tab *t, const void *key, size_t len, bool *fresh)
{
	uint32_t id;
	int r;

	*fresh = false;
	if (e->err)
		return -1;
	r = itab_intern(t->keys, key, len, &id);
	if (r < 0 || id >= INT32_MAX || (r && GROW(t->v, t->cap, (size_t)id + 1))) {
		e->err = -ENOMEM;
		return -1;
	}
	if (r)
		t->v[id] = NULL;
	*fresh = r;
	return id;
}

/*
 * Strings are UTF-8 on the wire: anything else becomes '?' (names pcmon read elsewhere).
 * Kept in the arena: some are built on the stack (pseudo frames' names).
 */
static int32_t str_idx(struct enc *e, const char *s)
{
	size_t len = strlen(s);
	char *copy = NULL;
	int32_t i;
	bool fresh;

	if (!str_printable(s, len)) {
		if (!(copy = dup_mem(e, s, len)))
			return 0;
		str_sanitize(copy, len);
		s = copy;
	}
	i = tab_put(e, &e->str, s, len + 1, &fresh);
	if (i < 0)
		return 0;
	if (fresh && !(e->str.v[i] = copy ? copy : dup_mem(e, s, len)))
		return 0;
	return i;
}

enum { ATTR_NONE, ATTR_STR, ATTR_INT };

/* Attribute (@key, @v or @num): its index in the attribute table. */
static int32_t attr_idx(struct enc *e, const char *key, int kind, const char *v, int64_t num)
{
	int32_t k = kind ? str_idx(e, key) : 0, sv = kind == ATTR_STR ? str_idx(e, v) : 0, i;
	PF(KeyValueAndUnit) *a;
	bool fresh;

	key_reset(e);
	key_u64(e, k);
	key_u64(e, kind);
	key_u64(e, kind == ATTR_STR ? (uint64_t)sv : (uint64_t)num);
	i = tab_put(e, &e->attr, e->key, e->nkey, &fresh);
	if (i < 0 || !fresh)
		return i < 0 ? 0 : i;
	if (!(a = NEW(e, PF(KeyValueAndUnit), PF_INIT(KEY_VALUE_AND_UNIT))))
		return 0;
	a->key_strindex = k;
	if (kind) { /* (the zero entry has no value at all) */
		if (!(a->value = NEW(e, CM(AnyValue), CM_INIT(ANY_VALUE))))
			return 0;
		if (kind == ATTR_STR) {
			/* the string by index: the dictionary's way (v1.10), every one once */
			a->value->value_case = ANY(STRING_VALUE_STRINDEX);
			a->value->string_value_strindex = sv;
		} else {
			a->value->value_case = ANY(INT_VALUE);
			a->value->int_value = num;
		}
	}
	e->attr.v[i] = a;
	return i;
}

static int32_t *dup_ids(struct enc *e, const int32_t *ids, int n)
{
	return n ? dup_mem(e, ids, n * sizeof(*ids)) : NULL;
}

static int32_t fn_idx(struct enc *e, int32_t name, int32_t file, int64_t line)
{
	PF(Function) *f;
	int32_t i;
	bool fresh;

	key_reset(e);
	key_u64(e, name);
	key_u64(e, file);
	key_u64(e, line);
	i = tab_put(e, &e->fn, e->key, e->nkey, &fresh);
	if (i < 0 || !fresh)
		return i < 0 ? 0 : i;
	if (!(f = NEW(e, PF(Function), PF_INIT(FUNCTION))))
		return 0;
	/* pcmon's names are demangled, and it keeps no other: no system name */
	f->name_strindex = name;
	f->filename_strindex = file;
	f->start_line = line;
	e->fn.v[i] = f;
	return i;
}

static int32_t map_idx(struct enc *e, uint64_t start, uint64_t limit, int32_t file, int32_t attr)
{
	PF(Mapping) *m;
	int32_t i;
	bool fresh;

	key_reset(e);
	key_u64(e, start);
	key_u64(e, limit);
	key_u64(e, file);
	key_u64(e, attr);
	i = tab_put(e, &e->map, e->key, e->nkey, &fresh);
	if (i < 0 || !fresh)
		return i < 0 ? 0 : i;
	if (!(m = NEW(e, PF(Mapping), PF_INIT(MAPPING))))
		return 0;
	m->memory_start = start;
	m->memory_limit = limit;
	m->filename_strindex = file;
	if (attr) {
		m->n_attribute_indices = 1;
		m->attribute_indices = dup_ids(e, &attr, 1);
	}
	e->map.v[i] = m;
	return i;
}

/* A location: @n (function, line) pairs in @lines, innermost first. */
static int32_t loc_idx(struct enc *e, int32_t map, uint64_t address, const int32_t (*lines)[2],
		       int n, int32_t attr)
{
	PF(Location) *l;
	int32_t i;
	bool fresh;

	key_reset(e);
	key_u64(e, map);
	key_u64(e, address);
	key_u64(e, attr);
	for (int j = 0; j < n; j++) {
		key_u64(e, lines[j][0]);
		key_u64(e, lines[j][1]);
	}
	i = tab_put(e, &e->loc, e->key, e->nkey, &fresh);
	if (i < 0 || !fresh)
		return i < 0 ? 0 : i;
	if (!(l = NEW(e, PF(Location), PF_INIT(LOCATION))))
		return 0;
	l->mapping_index = map;
	l->address = address;
	if (n && !(l->lines = az(e, n * sizeof(*l->lines))))
		return 0;
	for (int j = 0; j < n; j++) {
		if (!(l->lines[j] = NEW(e, PF(Line), PF_INIT(LINE))))
			return 0;
		l->lines[j]->function_index = lines[j][0];
		l->lines[j]->line = lines[j][1];
	}
	l->n_lines = n;
	if (attr) {
		l->n_attribute_indices = 1;
		l->attribute_indices = dup_ids(e, &attr, 1);
	}
	e->loc.v[i] = l;
	return i;
}

static int32_t stack_idx(struct enc *e, const int32_t *locs, int n)
{
	PF(Stack) *s;
	int32_t i;
	bool fresh;

	static const int32_t none[1];

	/* (the zero entry's key is empty, but a key is never NULL: itab copies it) */
	i = tab_put(e, &e->stack, n ? locs : none, n * sizeof(*locs), &fresh);
	if (i < 0 || !fresh)
		return i < 0 ? 0 : i;
	if (!(s = NEW(e, PF(Stack), PF_INIT(STACK))))
		return 0;
	s->n_location_indices = n;
	s->location_indices = dup_ids(e, locs, n);
	e->stack.v[i] = s;
	return i;
}

/* ---- from the xprof */

/* Object @o's mapping, made at its first use. */
static int32_t object_map(struct enc *e, int o)
{
	const struct xobject *ob = &e->p->objects[o];
	int32_t attr = 0;

	if (e->memo_map[o])
		return e->memo_map[o];
	if (ob->build_id[0])
		attr = attr_idx(e, A_BUILD_ID, ATTR_STR, ob->build_id, 0);
	/* the kernel is named as perf and pprof name it; a file by its path */
	return e->memo_map[o] = map_idx(e, e->lo[o], e->hi[o],
					str_idx(e, ob->kernel || !ob->path[0] ? ob->name : ob->path),
					attr);
}

static int32_t xfn(struct enc *e, int fn)
{
	const struct xfunction *f = &e->p->functions[fn];

	if (!e->memo_fn[fn])
		e->memo_fn[fn] = fn_idx(e, str_idx(e, xprof_fname(e->p, fn)), str_idx(e, f->file),
					f->line);
	return e->memo_fn[fn];
}

/* xprof location @x's index, made at its first use. */
static int32_t xloc(struct enc *e, int x)
{
	const struct xlocation *l = &e->p->locations[x];
	int32_t (*lines)[2], map = 0;

	if (e->memo_loc[x])
		return e->memo_loc[x];
	if (!(lines = calloc(l->nlines + 1, sizeof(*lines)))) {
		e->err = -ENOMEM;
		return 0;
	}
	for (int j = 0; j < l->nlines; j++) {
		lines[j][0] = xfn(e, l->lines[j][0]);
		lines[j][1] = l->lines[j][1];
	}
	if (l->object >= 0)
		map = object_map(e, l->object);
	e->memo_loc[x] = loc_idx(e, map, l->address, (const int32_t (*)[2])lines, l->nlines,
				 attr_idx(e, A_FRAME_TYPE, ATTR_STR,
					  l->kernel ? "kernel" : "native", 0));
	free(lines);
	return e->memo_loc[x];
}

/*
 * A frame that is no code: a critical section, code above the root no procedure covers, the
 * part of a stack not walked, the group of --by. A function of that name, at no address,
 * as the pprof export has them (docs/exports.md).
 */
static int32_t pseudo_loc(struct enc *e, const char *name)
{
	int32_t line[1][2] = { { fn_idx(e, str_idx(e, name), 0, 0), 0 } };

	return loc_idx(e, 0, 0, (const int32_t (*)[2])line, 1, 0);
}

static int add_id(struct enc *e, int n, int32_t id)
{
	if (GROW(e->ids, e->cap_ids, (size_t)n + 1)) {
		e->err = -ENOMEM;
		return n;
	}
	e->ids[n] = id;
	return n + 1;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* The stack of @s, leaf first, as the pprof export draws it (pprof.c's enc_sample()). */
static int32_t sample_stack(struct enc *e, const struct xsample *s)
{
	bool own = !strcmp(s->charged, "critical") || !strcmp(s->charged, "unwalkable") ||
		   (!strcmp(s->charged, "foreign") && !s->nlocs);
	int n = 0;

	if (own) { /* the section's (or foreignPcs') own frame: the leaf */
		char name[160];

		if (!strcmp(s->charged, "foreign"))
			snprintf(name, sizeof(name), "[foreign]");
		else
			snprintf(name, sizeof(name), "[critical:%s]", s->section);
		n = add_id(e, n, pseudo_loc(e, name));
	}
	for (int j = 0; j < s->nlocs; j++)
		n = add_id(e, n, xloc(e, s->locs[j]));
	if (s->cut_short && !own)
		n = add_id(e, n, pseudo_loc(e, XF_TRUNCATED_NAME));
	if (s->group[0]) { /* --by: the group at the root */
		char *root;

		if (asprintf(&root, "[%s]", s->group) < 0) {
			e->err = -ENOMEM;
			return 0;
		}
		n = add_id(e, n, pseudo_loc(e, root));
		free(root);
	}
	return e->err ? 0 : stack_idx(e, e->ids, n);
}

/* @s added to the sample of its identity (stack, attributes): made, or added up. */
static void add_sample(struct enc *e, const struct xsample *s)
{
	const struct xprof *p = e->p;
	int32_t stack = sample_stack(e, s);
	struct osample *o;
	int n = 0;
	uint32_t id;
	int r;

	n = add_id(e, n, attr_idx(e, A_PID, ATTR_INT, NULL, s->pid));
	if (s->tid)
		n = add_id(e, n, attr_idx(e, A_TID, ATTR_INT, NULL, s->tid));
	if (s->thread[0])
		n = add_id(e, n, attr_idx(e, A_THREAD, ATTR_STR, s->thread, 0));
	if (s->comm[0])
		n = add_id(e, n, attr_idx(e, A_COMM, ATTR_STR, s->comm, 0));
	if (s->cgroup[0])
		n = add_id(e, n, attr_idx(e, A_CGROUP, ATTR_STR, s->cgroup, 0));
	n = add_id(e, n, attr_idx(e, A_KIND, ATTR_STR, s->kind, 0));
	if (p->target[0])
		n = add_id(e, n, attr_idx(e, A_TARGET, ATTR_STR, p->target, 0));
	if (e->err)
		return;
	/* the identity is the set of attributes: in one order */
	qsort(e->ids, n, sizeof(*e->ids), cmp_i32);
	key_reset(e);
	key_u64(e, stack);
	for (int j = 0; j < n; j++)
		key_u64(e, e->ids[j]);
	if (e->err)
		return;
	r = itab_intern(e->sample_keys, e->key, e->nkey, &id);
	if (r < 0 || (r && GROW(e->samples, e->cap_samples, (size_t)id + 1))) {
		e->err = -ENOMEM;
		return;
	}
	o = &e->samples[id];
	if (r) {
		*o = (struct osample){ .stack = stack, .nattrs = n, .attrs = dup_ids(e, e->ids, n) };
		if (!o->attrs)
			return;
	}
	/* off-CPU samples carry the nanoseconds measured, on-CPU ones their ticks' worth */
	o->count += s->count;
	o->ns += s->ns ? s->ns : s->count * (uint64_t)p->period_ns;
}

/* ---- the request */

static CM(KeyValue) *kv(struct enc *e, const char *key, const char *str, int64_t num)
{
	CM(KeyValue) *k = NEW(e, CM(KeyValue), CM_INIT(KEY_VALUE));

	if (!k || !(k->value = NEW(e, CM(AnyValue), CM_INIT(ANY_VALUE))))
		return NULL;
	k->key = (char *)key;
	if (str) {
		k->value->value_case = ANY(STRING_VALUE);
		k->value->string_value = (char *)str;
	} else {
		k->value->value_case = ANY(INT_VALUE);
		k->value->int_value = num;
	}
	return k;
}

/* The resource: this host, the target as the service, its process if it has one. */
static PF(ResourceProfiles) *resource(struct enc *e, const struct otlp_meta *m)
{
	const struct xprof *p = e->p;
	PF(ResourceProfiles) *rp = NEW(e, PF(ResourceProfiles), PF_INIT(RESOURCE_PROFILES));
	Opentelemetry__Proto__Resource__V1__Resource *res;
	CM(KeyValue) **a = az(e, 3 * sizeof(*a));
	const char *host = m->host_name, *svc = m->service_name;
	char *name = az(e, 256);
	long pid = -1;
	size_t n = 0;

	res = NEW(e, Opentelemetry__Proto__Resource__V1__Resource,
		  OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT);
	if (!rp || !res || !a || !name)
		return NULL;
	if (!host) {
		if (gethostname(name, 255))
			strcpy(name, "unknown");
		host = name;
	}
	if (!svc)
		svc = p->target[0] ? p->target : "pcmon";
	for (int i = 0; i < p->nsamples && pid != -2; i++) /* -2: several */
		if (p->samples[i].count)
			pid = pid == -1 || pid == p->samples[i].pid ? p->samples[i].pid : -2;
	a[n++] = kv(e, "host.name", str_printable(host, 255) ? host : "?", 0);
	a[n++] = kv(e, "service.name", str_printable(svc, 255) ? svc : "?", 0);
	if (pid >= 0)
		a[n++] = kv(e, "process.pid", NULL, pid);
	for (size_t i = 0; i < n; i++)
		if (!a[i])
			return NULL;
	res->n_attributes = n;
	res->attributes = a;
	rp->resource = res;
	return rp;
}

/* One of the two profiles: @ns, the nanoseconds' (else the counts'). */
static PF(Profile) *profile(struct enc *e, const struct otlp_meta *m, bool ns, size_t nsamples)
{
	const struct xprof *p = e->p;
	const char *clock = strcmp(p->mode, "REAL") ? "cpu" : "wall";
	PF(Profile) *pr = NEW(e, PF(Profile), PF_INIT(PROFILE));
	PF(ValueType) *st = NEW(e, PF(ValueType), PF_INIT(VALUE_TYPE));
	PF(ValueType) *pt = NEW(e, PF(ValueType), PF_INIT(VALUE_TYPE));

	if (!pr || !st || !pt || !(pr->samples = az(e, (nsamples + 1) * sizeof(*pr->samples))))
		return NULL;
	st->type_strindex = str_idx(e, ns ? clock : "samples");
	st->unit_strindex = str_idx(e, ns ? "nanoseconds" : "count");
	pr->sample_type = st;
	/* a tick every period_ns of CPU (or, REAL, wall) time */
	pt->type_strindex = str_idx(e, clock);
	pt->unit_strindex = str_idx(e, "nanoseconds");
	pr->period_type = pt;
	pr->period = (int64_t)p->period_ns;
	if (m->start_unix_nano || m->duration_nano) {
		pr->time_unix_nano = m->start_unix_nano;
		pr->duration_nano = m->duration_nano;
	} else {
		pr->time_unix_nano = (uint64_t)(p->start_wall * 1e9);
		pr->duration_nano = (uint64_t)(p->elapsed_s * 1e9);
	}
	for (size_t i = 0; i < nsamples; i++) {
		const struct osample *o = &e->samples[i];
		PF(Sample) *s = NEW(e, PF(Sample), PF_INIT(SAMPLE));
		int64_t *v = az(e, sizeof(*v));

		if (!s || !v)
			return NULL;
		s->stack_index = o->stack;
		s->n_attribute_indices = o->nattrs;
		s->attribute_indices = o->attrs;
		*v = (int64_t)(ns ? o->ns : o->count);
		s->n_values = 1;
		s->values = v;
		pr->samples[i] = s;
	}
	pr->n_samples = nsamples;
	return pr;
}

/* Table @t's entries as the dictionary's array of them (element size: a pointer's). */
static void *entries(struct enc *e, struct tab *t, size_t *n)
{
	void **a;

	*n = itab_count(t->keys);
	if (!(a = az(e, (*n + 1) * sizeof(*a))))
		return NULL;
	memcpy(a, t->v, *n * sizeof(*a));
	return a;
}

static PF(ProfilesDictionary) *dictionary(struct enc *e)
{
	PF(ProfilesDictionary) *d = NEW(e, PF(ProfilesDictionary), PF_INIT(PROFILES_DICTIONARY));
	PF(Link) *l = NEW(e, PF(Link), PF_INIT(LINK));
	size_t n;

	if (!d || !l)
		return NULL;
	/* no link: [0] alone, with ids of the lengths strict decoders check */
	l->trace_id = (ProtobufCBinaryData){ 16, az(e, 16) };
	l->span_id = (ProtobufCBinaryData){ 8, az(e, 8) };
	d->link_table = az(e, sizeof(*d->link_table));
	if (!l->trace_id.data || !l->span_id.data || !d->link_table)
		return NULL;
	d->link_table[0] = l;
	d->n_link_table = 1;
	d->mapping_table = entries(e, &e->map, &n);
	d->n_mapping_table = n;
	d->location_table = entries(e, &e->loc, &n);
	d->n_location_table = n;
	d->function_table = entries(e, &e->fn, &n);
	d->n_function_table = n;
	d->string_table = entries(e, &e->str, &n);
	d->n_string_table = n;
	d->attribute_table = entries(e, &e->attr, &n);
	d->n_attribute_table = n;
	d->stack_table = entries(e, &e->stack, &n);
	d->n_stack_table = n;
	return e->err ? NULL : d;
}

static otlp_request *request(struct enc *e, const struct otlp_meta *m)
{
	otlp_request *rq = NEW(e, otlp_request,
			       OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT);
	PF(ScopeProfiles) *sp = NEW(e, PF(ScopeProfiles), PF_INIT(SCOPE_PROFILES));
	CM(InstrumentationScope) *sc = NEW(e, CM(InstrumentationScope),
					   CM_INIT(INSTRUMENTATION_SCOPE));
	size_t nsamples = itab_count(e->sample_keys);
	PF(ResourceProfiles) *rp;

	if (!rq || !sp || !sc || !(rp = resource(e, m)))
		return NULL;
	sc->name = "pcmon";
	sc->version = PCMON_VERSION;
	sp->scope = sc;
	/* the counts first: what a tool shows by default, LIST's numbers */
	if (!(sp->profiles = az(e, 2 * sizeof(*sp->profiles))) ||
	    !(sp->profiles[0] = profile(e, m, false, nsamples)) ||
	    !(sp->profiles[1] = profile(e, m, true, nsamples)))
		return NULL;
	sp->n_profiles = 2;
	if (!(rp->scope_profiles = az(e, sizeof(*rp->scope_profiles))) ||
	    !(rq->resource_profiles = az(e, sizeof(*rq->resource_profiles))))
		return NULL;
	rp->scope_profiles[0] = sp;
	rp->n_scope_profiles = 1;
	rq->resource_profiles[0] = rp;
	rq->n_resource_profiles = 1;
	/* last: every string and attribute is in by now */
	rq->dictionary = dictionary(e);
	return rq->dictionary ? rq : NULL;
}

/* Every table's entry 0, the zero value, first; each object's address range. */
static int enc_init(struct enc *e)
{
	const struct xprof *p = e->p;
	struct tab *tabs[] = { &e->str, &e->map, &e->loc, &e->fn, &e->attr, &e->stack };

	for (size_t i = 0; i < sizeof(tabs) / sizeof(tabs[0]); i++)
		if (!(tabs[i]->keys = itab_new()))
			return -ENOMEM;
	if (!(e->sample_keys = itab_new()) ||
	    !(e->memo_map = calloc(p->nobjects + 1, sizeof(*e->memo_map))) ||
	    !(e->memo_loc = calloc(p->nlocations + 1, sizeof(*e->memo_loc))) ||
	    !(e->memo_fn = calloc(p->nfunctions + 1, sizeof(*e->memo_fn))) ||
	    !(e->lo = calloc(p->nobjects + 1, sizeof(*e->lo))) ||
	    !(e->hi = calloc(p->nobjects + 1, sizeof(*e->hi))))
		return -ENOMEM;
	str_idx(e, "");
	map_idx(e, 0, 0, 0, 0);
	fn_idx(e, 0, 0, 0);
	loc_idx(e, 0, 0, NULL, 0, 0);
	attr_idx(e, NULL, ATTR_NONE, NULL, 0);
	stack_idx(e, NULL, 0);
	for (int i = 0; i < p->nlocations; i++) {
		const struct xlocation *l = &p->locations[i];

		if (l->object < 0)
			continue;
		if (!e->hi[l->object] || l->address < e->lo[l->object])
			e->lo[l->object] = l->address;
		if (l->address + 1 > e->hi[l->object])
			e->hi[l->object] = l->address + 1;
	}
	return e->err;
}

static void enc_free(struct enc *e)
{
	struct tab *tabs[] = { &e->str, &e->map, &e->loc, &e->fn, &e->attr, &e->stack };

	for (size_t i = 0; i < sizeof(tabs) / sizeof(tabs[0]); i++) {
		itab_free(tabs[i]->keys);
		free(tabs[i]->v);
	}
	itab_free(e->sample_keys);
	free(e->samples);
	free(e->key);
	free(e->memo_map);
	free(e->memo_loc);
	free(e->memo_fn);
	free(e->lo);
	free(e->hi);
	free(e->ids);
	while (e->ar) {
		struct chunk *c = e->ar;

		e->ar = c->next;
		free(c);
	}
}

int otlp_encode(const struct xprof *p, const struct otlp_meta *m, uint8_t **out, size_t *len,
		char *err, size_t errlen)
{
	size_t max = m->max_bytes ? m->max_bytes : OTLP_MAX_BYTES_DEFAULT, size;
	struct enc e = { .p = p };
	otlp_request *rq = NULL;
	int r;

	*out = NULL;
	*len = 0;
	r = enc_init(&e);
	for (int i = 0; !r && i < p->nsamples; i++) {
		if (p->samples[i].count) /* (as the pprof export: no tick, no sample) */
			add_sample(&e, &p->samples[i]);
		r = e.err;
	}
	if (!r && !(rq = request(&e, m)))
		r = e.err ? e.err : -ENOMEM;
	if (r) {
		snprintf(err, errlen, "cannot encode the profile: %s", strerror(-r));
		goto out;
	}
	size = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(rq);
	if (size > max) {
		snprintf(err, errlen, "the profile is %zu bytes in OTLP, over the limit of %zu", size,
			 max);
		r = -E2BIG;
		goto out;
	}
	if (!(*out = malloc(size ? size : 1))) {
		snprintf(err, errlen, "cannot encode the profile: %s", strerror(ENOMEM));
		r = -ENOMEM;
		goto out;
	}
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(rq, *out);
out:
	enc_free(&e);
	return r;
}
