// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/fleet/otlp.c: a profile as `pcmon export --format json` has it,
 * read by xprof_load(), encoded, and decoded again by protobuf-c's generated unpacker:
 * every field, every dictionary index followed, each table's entry 0 the zero value, no
 * entry twice, none unreferenced; samples of one identity added up; the size limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp.h"
#include "otlp_profiles.pb-c.h"
#include "proto.h"

#define PF(name) Opentelemetry__Proto__Profiles__V1development__##name
#define CM(name) Opentelemetry__Proto__Common__V1__##name
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	request_t;

#define BUILD_ID "0123456789abcdef0123456789abcdef01234567"

/*
 * Objects: the program, the kernel. Functions: main, work, inl (inlined into work), one no
 * procedure covers, a kernel one, one only a sample without ticks reaches. Samples: two of
 * one identity (A, B), one with comm, cgroup and --by's group and a kernel leaf (C), a
 * critical section's (D), foreignPcs' above the root (E), one cut short (F), none (G).
 */
static const char *reply_json =
	"{\"target\": {\"name\": \"mytarget\", \"mode\": \"REAL\", \"elapsed_s\": 2.5},"
	" \"summary\": {\"counted\": 17},"
	" \"profile\": {\"period_ns\": 1000000, \"start_wall\": 1700000000.5,"
	"  \"objects\": ["
	"   {\"name\": \"crit\", \"path\": \"/usr/bin/crit\", \"build_id\": \"" BUILD_ID "\","
	"    \"has_functions\": true, \"has_filenames\": true, \"has_line_numbers\": true},"
	"   {\"name\": \"[kernel.kallsyms]\", \"path\": \"\", \"build_id\": \"\", \"kernel\": true}],"
	"  \"functions\": ["
	"   {\"name\": \"main\", \"module\": \"crit\", \"file\": \"crit.c\", \"line\": 10},"
	"   {\"name\": \"work\", \"module\": \"crit\", \"file\": \"crit.c\", \"line\": 20},"
	"   {\"name\": \"inl\", \"module\": \"crit\", \"file\": \"crit.c\", \"line\": 30},"
	"   {\"name\": \"\", \"module\": \"\", \"file\": \"\", \"line\": 0},"
	"   {\"name\": \"do_syscall_64\", \"module\": \"kernel\", \"file\": \"\", \"line\": 0},"
	"   {\"name\": \"unused\", \"module\": \"crit\", \"file\": \"other.c\", \"line\": 50}],"
	"  \"locations\": ["
	"   {\"object\": 0, \"address\": \"1000\", \"lines\": [[0, 12]]},"
	"   {\"object\": 0, \"address\": \"1100\", \"lines\": [[2, 31], [1, 22]]},"
	"   {\"object\": 1, \"address\": \"ffffffff81000000\", \"kernel\": true, \"lines\": [[4, 0]]},"
	"   {\"object\": -1, \"address\": \"7000\", \"lines\": [[3, 0]]},"
	"   {\"object\": 0, \"address\": \"1200\", \"lines\": [[5, 51]]}],"
	"  \"samples\": ["
	"   {\"count\": 5, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\", \"pid\": 100,"
	"    \"tid\": 101, \"thread\": \"worker\", \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\","
	"    \"locations\": [1, 0]},"
	"   {\"count\": 3, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\", \"pid\": 100,"
	"    \"tid\": 102, \"thread\": \"w\xff" "2\", \"group\": \"comm crit\", \"comm\": \"crit\","
	"    \"cgroup\": \"/sys/fs/cgroup/app\", \"locations\": [2, 1, 0]},"
	"   {\"count\": 2, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\", \"pid\": 100,"
	"    \"tid\": 101, \"thread\": \"worker\", \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\","
	"    \"locations\": [1, 0]},"
	"   {\"count\": 4, \"ns\": 4000000, \"kind\": \"blocked\", \"charged\": \"critical\","
	"    \"section\": \"lockA\", \"pid\": 100, \"tid\": 101, \"thread\": \"worker\","
	"    \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\", \"locations\": [1, 0]},"
	"   {\"count\": 1, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"foreign\", \"pid\": 100,"
	"    \"tid\": 0, \"thread\": \"\", \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\","
	"    \"locations\": []},"
	"   {\"count\": 2, \"ns\": 0, \"kind\": \"runnable\", \"charged\": \"procedure\", \"pid\": 100,"
	"    \"tid\": 101, \"thread\": \"worker\", \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\","
	"    \"cut_short\": \"no frame pointer\", \"locations\": [3]},"
	"   {\"count\": 0, \"ns\": 0, \"kind\": \"on-cpu\", \"charged\": \"procedure\", \"pid\": 100,"
	"    \"tid\": 101, \"thread\": \"worker\", \"group\": \"\", \"comm\": \"\", \"cgroup\": \"\","
	"    \"locations\": [4, 0]}]}}";

struct fx {
	cJSON *rep;
	struct xprof p;
	uint8_t *body;
	size_t len;
	request_t *rq;
	PF(ProfilesDictionary) *d;
};

static int setup(void **state)
{
	struct otlp_meta m = { .host_name = "h1", .start_unix_nano = 1700000001000000000ull,
			       .duration_nano = 1000000000 };
	struct fx *f = calloc(1, sizeof(*f));
	char err[256] = "";

	if (!f || !(f->rep = cJSON_Parse(reply_json)) ||
	    xprof_load(&f->p, f->rep, err, sizeof(err)) ||
	    otlp_encode(&f->p, &m, &f->body, &f->len, err, sizeof(err))) {
		fprintf(stderr, "setup: %s\n", err);
		return -1;
	}
	f->rq = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, f->len, f->body);
	if (!f->rq || !f->rq->dictionary)
		return -1;
	f->d = f->rq->dictionary;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		f->rq, NULL);
	free(f->body);
	xprof_free(&f->p);
	cJSON_Delete(f->rep);
	free(f);
	return 0;
}

/* ---- following the indexes, each checked against its table */

static const char *str(const struct fx *f, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < f->d->n_string_table);
	return f->d->string_table[i];
}

static PF(KeyValueAndUnit) *attr(const struct fx *f, int32_t i)
{
	assert_true(i > 0 && (size_t)i < f->d->n_attribute_table);
	return f->d->attribute_table[i];
}

/* The value of attribute @key among @n indexes @idx as text ("" if absent; ints in decimal). */
static const char *attr_of(const struct fx *f, const int32_t *idx, size_t n, const char *key)
{
	static char buf[64];

	for (size_t i = 0; i < n; i++) {
		PF(KeyValueAndUnit) *a = attr(f, idx[i]);

		assert_int_equal(a->unit_strindex, 0);
		if (strcmp(str(f, a->key_strindex), key))
			continue;
		assert_non_null(a->value);
		if (a->value->value_case ==
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
			return str(f, a->value->string_value_strindex);
		assert_int_equal(a->value->value_case,
				 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE);
		snprintf(buf, sizeof(buf), "%lld", (long long)a->value->int_value);
		return buf;
	}
	return "";
}

/* Stack @i as "fn:line+fn:line@mapping;..." leaf first (lines innermost first). */
static const char *stack_text(const struct fx *f, int32_t i)
{
	static char buf[1024];
	PF(Stack) *s;
	size_t n = 0;

	assert_true(i > 0 && (size_t)i < f->d->n_stack_table);
	s = f->d->stack_table[i];
	buf[0] = '\0';
	for (size_t j = 0; j < s->n_location_indices; j++) {
		int32_t li = s->location_indices[j];
		PF(Location) *l;

		assert_true(li > 0 && (size_t)li < f->d->n_location_table);
		l = f->d->location_table[li];
		assert_true(l->mapping_index >= 0 && (size_t)l->mapping_index < f->d->n_mapping_table);
		for (size_t k = 0; k < l->n_lines; k++) {
			int32_t fi = l->lines[k]->function_index;

			assert_true(fi > 0 && (size_t)fi < f->d->n_function_table);
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s:%lld", k ? "+" : j ? ";" : "",
				      str(f, f->d->function_table[fi]->name_strindex),
				      (long long)l->lines[k]->line);
		}
		n += snprintf(buf + n, sizeof(buf) - n, "@%s",
			      str(f, f->d->mapping_table[l->mapping_index]->filename_strindex));
		assert_true(n < sizeof(buf));
	}
	return buf;
}

/* ---- tests */

static void test_resource_and_scope(void **state)
{
	struct fx *f = *state;
	PF(ResourceProfiles) *rp;
	Opentelemetry__Proto__Resource__V1__Resource *res;
	CM(InstrumentationScope) *sc;
	static const char *const want[][2] = {
		{ "host.name", "h1" }, { "service.name", "mytarget" }, { "process.pid", NULL },
	};

	assert_int_equal(f->rq->n_resource_profiles, 1);
	rp = f->rq->resource_profiles[0];
	res = rp->resource;
	assert_non_null(res);
	assert_int_equal(res->n_attributes, 3);
	for (size_t i = 0; i < 3; i++) {
		CM(KeyValue) *kv = res->attributes[i];

		assert_string_equal(kv->key, want[i][0]);
		assert_int_equal(kv->key_strindex, 0);
		if (want[i][1]) {
			assert_int_equal(kv->value->value_case,
					 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE);
			assert_string_equal(kv->value->string_value, want[i][1]);
		} else {
			assert_int_equal(kv->value->value_case,
					 OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE);
			assert_int_equal(kv->value->int_value, 100);
		}
	}
	assert_int_equal(rp->n_scope_profiles, 1);
	sc = rp->scope_profiles[0]->scope;
	assert_string_equal(sc->name, "pcmon");
	assert_string_equal(sc->version, PCMON_VERSION);
	assert_int_equal(rp->scope_profiles[0]->n_profiles, 2);
}

static void test_profiles(void **state)
{
	struct fx *f = *state;
	PF(Profile) **pr = f->rq->resource_profiles[0]->scope_profiles[0]->profiles;
	static const char *const types[2][2] = { { "samples", "count" }, { "wall", "nanoseconds" } };

	for (int k = 0; k < 2; k++) {
		assert_string_equal(str(f, pr[k]->sample_type->type_strindex), types[k][0]);
		assert_string_equal(str(f, pr[k]->sample_type->unit_strindex), types[k][1]);
		/* REAL: a tick per millisecond of wall time */
		assert_string_equal(str(f, pr[k]->period_type->type_strindex), "wall");
		assert_string_equal(str(f, pr[k]->period_type->unit_strindex), "nanoseconds");
		assert_int_equal(pr[k]->period, 1000000);
		assert_int_equal(pr[k]->time_unix_nano, 1700000001000000000ull);
		assert_int_equal(pr[k]->duration_nano, 1000000000);
		assert_int_equal(pr[k]->profile_id.len, 0);
		assert_int_equal(pr[k]->n_attribute_indices, 0);
	}
}

/* Each sample: its stack, values and attributes; A and B one sample, G none. */
static void test_samples(void **state)
{
	struct fx *f = *state;
	PF(Profile) **pr = f->rq->resource_profiles[0]->scope_profiles[0]->profiles;
	static const struct {
		const char *stack;
		int64_t count, ns;
		const char *kind, *tid, *thread, *comm, *cgroup;
	} want[] = {
		{ "inl:31+work:22@/usr/bin/crit;main:12@/usr/bin/crit", 7, 7000000, "on-cpu", "101",
		  "worker", "", "" },
		{ "do_syscall_64:0@[kernel.kallsyms];inl:31+work:22@/usr/bin/crit;main:12@/usr/bin/crit;"
		  "[comm crit]:0@",
		  3, 3000000, "on-cpu", "102", "w?2", "crit", "/sys/fs/cgroup/app" },
		{ "[critical:lockA]:0@;inl:31+work:22@/usr/bin/crit;main:12@/usr/bin/crit", 4, 4000000,
		  "blocked", "101", "worker", "", "" },
		{ "[foreign]:0@", 1, 1000000, "on-cpu", "", "", "", "" },
		{ "[foreign]:0@;[truncated]:0@", 2, 2000000, "runnable", "101", "worker", "", "" },
	};
	int64_t total = 0;

	assert_int_equal(pr[0]->n_samples, 5);
	assert_int_equal(pr[1]->n_samples, 5);
	for (size_t i = 0; i < 5; i++) {
		PF(Sample) *s = pr[0]->samples[i], *t = pr[1]->samples[i];
		const int32_t *a = s->attribute_indices;
		size_t n = s->n_attribute_indices;

		assert_string_equal(stack_text(f, s->stack_index), want[i].stack);
		assert_int_equal(s->n_values, 1);
		assert_int_equal(s->values[0], want[i].count);
		assert_int_equal(s->n_timestamps_unix_nano, 0);
		assert_int_equal(s->link_index, 0);
		total += s->values[0];
		/* the nanoseconds' profile: the same samples */
		assert_int_equal(t->stack_index, s->stack_index);
		assert_int_equal(t->n_attribute_indices, n);
		assert_memory_equal(t->attribute_indices, a, n * sizeof(*a));
		assert_int_equal(t->n_values, 1);
		assert_int_equal(t->values[0], want[i].ns);

		assert_string_equal(attr_of(f, a, n, "process.pid"), "100");
		assert_string_equal(attr_of(f, a, n, "thread.id"), want[i].tid);
		assert_string_equal(attr_of(f, a, n, "thread.name"), want[i].thread);
		assert_string_equal(attr_of(f, a, n, "pcmon.comm"), want[i].comm);
		assert_string_equal(attr_of(f, a, n, "pcmon.cgroup"), want[i].cgroup);
		assert_string_equal(attr_of(f, a, n, "pcmon.kind"), want[i].kind);
		assert_string_equal(attr_of(f, a, n, "pcmon.target"), "mytarget");
		for (size_t j = 0; j < n; j++) /* a key once per sample */
			for (size_t k = j + 1; k < n; k++)
				assert_int_not_equal(attr(f, a[j])->key_strindex,
						     attr(f, a[k])->key_strindex);
	}
	assert_int_equal(total, f->p.counted);
}

static void test_mappings_functions_locations(void **state)
{
	struct fx *f = *state;
	bool crit = false, kernel = false, work = false;

	for (size_t i = 1; i < f->d->n_mapping_table; i++) {
		PF(Mapping) *m = f->d->mapping_table[i];
		const char *name = str(f, m->filename_strindex);

		if (!strcmp(name, "/usr/bin/crit")) {
			/* over its locations' addresses, the unsent sample's included */
			assert_int_equal(m->memory_start, 0x1000);
			assert_int_equal(m->memory_limit, 0x1201);
			assert_string_equal(attr_of(f, m->attribute_indices, m->n_attribute_indices,
						    "process.executable.build_id.gnu"),
					    BUILD_ID);
			crit = true;
		} else {
			assert_string_equal(name, "[kernel.kallsyms]");
			assert_int_equal(m->n_attribute_indices, 0); /* no build-id known */
			kernel = true;
		}
		assert_int_equal(m->file_offset, 0);
	}
	assert_true(crit && kernel);
	assert_int_equal(f->d->n_mapping_table, 3);
	for (size_t i = 1; i < f->d->n_location_table; i++) {
		PF(Location) *l = f->d->location_table[i];
		const char *type = attr_of(f, l->attribute_indices, l->n_attribute_indices,
					   "profile.frame.type");

		if (l->mapping_index && l->address >= 0xffffffff80000000ull)
			assert_string_equal(type, "kernel");
		else if (l->address)
			assert_string_equal(type, "native");
		else /* a pseudo frame: no code, no type */
			assert_int_equal(l->n_attribute_indices, 0);
	}
	for (size_t i = 1; i < f->d->n_function_table; i++) {
		PF(Function) *fn = f->d->function_table[i];

		assert_int_equal(fn->system_name_strindex, 0);
		if (!strcmp(str(f, fn->name_strindex), "work")) {
			assert_string_equal(str(f, fn->filename_strindex), "crit.c");
			assert_int_equal(fn->start_line, 20);
			work = true;
		}
	}
	assert_true(work);
}

/* Entry 0 the zero value; no entry twice (packed alike); every entry referenced. */
static void test_dictionary_tables(void **state)
{
	struct fx *f = *state;
	PF(ProfilesDictionary) *d = f->d;
	struct {
		const char *name;
		ProtobufCMessage **v;
		size_t n;
	} tabs[] = {
		{ "mapping", (ProtobufCMessage **)d->mapping_table, d->n_mapping_table },
		{ "location", (ProtobufCMessage **)d->location_table, d->n_location_table },
		{ "function", (ProtobufCMessage **)d->function_table, d->n_function_table },
		{ "attribute", (ProtobufCMessage **)d->attribute_table, d->n_attribute_table },
		{ "stack", (ProtobufCMessage **)d->stack_table, d->n_stack_table },
	};
	PF(Profile) **pr = f->rq->resource_profiles[0]->scope_profiles[0]->profiles;
	bool *used[5], *sused = calloc(d->n_string_table, sizeof(bool));
	uint8_t a[512], b[512];

	assert_non_null(sused);
	for (size_t t = 0; t < 5; t++) {
		assert_true(tabs[t].n >= 1);
		/* the zero value packs to nothing */
		assert_int_equal(protobuf_c_message_get_packed_size(tabs[t].v[0]), 0);
		for (size_t i = 0; i < tabs[t].n; i++) {
			size_t la = protobuf_c_message_pack(tabs[t].v[i], a);

			assert_true(la < sizeof(a));
			for (size_t j = i + 1; j < tabs[t].n; j++) {
				size_t lb = protobuf_c_message_pack(tabs[t].v[j], b);

				if (la == lb && !memcmp(a, b, la))
					fail_msg("%s table: entries %zu and %zu alike", tabs[t].name, i, j);
			}
		}
		assert_non_null(used[t] = calloc(tabs[t].n, sizeof(bool)));
	}
	assert_string_equal(d->string_table[0], "");
	for (size_t i = 0; i < d->n_string_table; i++)
		for (size_t j = i + 1; j < d->n_string_table; j++)
			assert_string_not_equal(d->string_table[i], d->string_table[j]);
	assert_int_equal(d->n_link_table, 1);
	assert_int_equal(d->link_table[0]->trace_id.len, 16);
	assert_int_equal(d->link_table[0]->span_id.len, 8);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(d->link_table[0]->trace_id.data[i], 0);

	/* the references: from the samples down, and the profiles' value types */
	used[0][0] = used[1][0] = used[2][0] = used[3][0] = used[4][0] = sused[0] = true;
	for (int k = 0; k < 2; k++) {
		sused[pr[k]->sample_type->type_strindex] = sused[pr[k]->sample_type->unit_strindex] = true;
		sused[pr[k]->period_type->type_strindex] = sused[pr[k]->period_type->unit_strindex] = true;
		for (size_t i = 0; i < pr[k]->n_samples; i++) {
			PF(Sample) *s = pr[k]->samples[i];

			used[4][s->stack_index] = true;
			for (size_t j = 0; j < s->n_attribute_indices; j++)
				used[3][s->attribute_indices[j]] = true;
		}
	}
	for (size_t i = 1; i < d->n_stack_table; i++)
		for (size_t j = 0; j < d->stack_table[i]->n_location_indices; j++)
			used[1][d->stack_table[i]->location_indices[j]] = true;
	for (size_t i = 1; i < d->n_location_table; i++) {
		PF(Location) *l = d->location_table[i];

		used[0][l->mapping_index] = true;
		for (size_t j = 0; j < l->n_lines; j++)
			used[2][l->lines[j]->function_index] = true;
		for (size_t j = 0; j < l->n_attribute_indices; j++)
			used[3][l->attribute_indices[j]] = true;
	}
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		sused[d->mapping_table[i]->filename_strindex] = true;
		for (size_t j = 0; j < d->mapping_table[i]->n_attribute_indices; j++)
			used[3][d->mapping_table[i]->attribute_indices[j]] = true;
	}
	for (size_t i = 1; i < d->n_function_table; i++) {
		sused[d->function_table[i]->name_strindex] = true;
		sused[d->function_table[i]->filename_strindex] = true;
	}
	for (size_t i = 1; i < d->n_attribute_table; i++) {
		PF(KeyValueAndUnit) *a = d->attribute_table[i];

		sused[a->key_strindex] = true;
		if (a->value->value_case ==
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX)
			sused[a->value->string_value_strindex] = true;
	}
	for (size_t t = 0; t < 5; t++) {
		for (size_t i = 0; i < tabs[t].n; i++)
			if (!used[t][i])
				fail_msg("%s table: entry %zu is no one's", tabs[t].name, i);
		free(used[t]);
	}
	for (size_t i = 0; i < d->n_string_table; i++) {
		if (!sused[i])
			fail_msg("string %zu (%s) is no one's", i, d->string_table[i]);
		assert_null(strstr(d->string_table[i], "unused")); /* G's function: not sent */
	}
	free(sused);
	/* [foreign] by its location and as a pseudo frame: one function */
	/* main, work, inl, do_syscall_64, [foreign]; [critical:lockA], [truncated], [comm crit] */
	assert_int_equal(d->n_function_table, 1 + 5 + 3);
}

/* A few bytes per entry: the strings once, indexes small. */
static void test_size(void **state)
{
	struct fx *f = *state;

	assert_int_equal(
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(
			f->rq),
		f->len);
	assert_true(f->len > 300 && f->len < 1500);
}

static void test_limit_and_window(void **state)
{
	struct fx *f = *state;
	struct otlp_meta m = { .max_bytes = 100, .service_name = "svc" };
	request_t *rq;
	uint8_t *body;
	char err[256];
	size_t len;

	assert_int_equal(otlp_encode(&f->p, &m, &body, &len, err, sizeof(err)), -E2BIG);
	assert_null(body);
	assert_non_null(strstr(err, "over the limit"));
	/* no window given: the profile's own */
	m.max_bytes = 0;
	assert_int_equal(otlp_encode(&f->p, &m, &body, &len, err, sizeof(err)), 0);
	rq = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, body);
	assert_non_null(rq);
	assert_string_equal(rq->resource_profiles[0]->resource->attributes[1]->value->string_value,
			    "svc");
	assert_int_equal(rq->resource_profiles[0]->scope_profiles[0]->profiles[0]->time_unix_nano,
			 1700000000500000000ull);
	assert_int_equal(rq->resource_profiles[0]->scope_profiles[0]->profiles[0]->duration_nano,
			 2500000000ull);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		rq, NULL);
	free(body);
}

/* A profile without samples: a request all the same, its tables holding entry 0 alone. */
static void test_empty(void **state)
{
	(void)state;
	cJSON *rep = cJSON_Parse("{\"target\": {\"name\": \"t\", \"mode\": \"CPU\"},"
				 " \"profile\": {\"period_ns\": 1000000, \"objects\": [],"
				 " \"functions\": [], \"locations\": [], \"samples\": []}}");
	struct otlp_meta m = { .host_name = "h" };
	struct xprof p;
	request_t *rq;
	uint8_t *body;
	char err[256];
	size_t len;

	assert_non_null(rep);
	assert_int_equal(xprof_load(&p, rep, err, sizeof(err)), 0);
	assert_int_equal(otlp_encode(&p, &m, &body, &len, err, sizeof(err)), 0);
	rq = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
		NULL, len, body);
	assert_non_null(rq);
	assert_int_equal(rq->resource_profiles[0]->scope_profiles[0]->profiles[0]->n_samples, 0);
	assert_int_equal(rq->resource_profiles[0]->resource->n_attributes, 2); /* no process */
	assert_int_equal(rq->dictionary->n_stack_table, 1);
	assert_int_equal(rq->dictionary->n_location_table, 1);
	assert_string_equal(rq->dictionary->string_table[
		rq->resource_profiles[0]->scope_profiles[0]->profiles[1]->sample_type->type_strindex],
		"cpu");
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
		rq, NULL);
	free(body);
	xprof_free(&p);
	cJSON_Delete(rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resource_and_scope),
		cmocka_unit_test(test_profiles),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_mappings_functions_locations),
		cmocka_unit_test(test_dictionary_tables),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_limit_and_window),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
