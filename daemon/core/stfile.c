// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stfile.h"
#include "util.h"

/* ---- writing */

cJSON *sf_chk(struct sf_wr *w, cJSON *x)
{
	if (!x)
		w->oom = true;
	return x;
}

void sf_put_str(struct sf_wr *w, cJSON *o, const char *k, const char *v)
{
	sf_chk(w, cJSON_AddStringToObject(o, k, v));
}

void sf_put_bool(struct sf_wr *w, cJSON *o, const char *k, bool v)
{
	sf_chk(w, cJSON_AddBoolToObject(o, k, v));
}

/*
 * A number that reads back as the very same double. cJSON prints 15 digits whenever they
 * read back within an ulp or so: one double in ten came back different, and a probe cost
 * saved so gave every procedure's time, computed from it, other last digits after a restart.
 */
void sf_put_num(struct sf_wr *w, cJSON *o, const char *k, double v)
{
	char buf[32];

	/* whole numbers below 10^15 (line numbers, ids, ...) have 15 digits at most: exact */
	if (!isfinite(v) || (v == trunc(v) && fabs(v) < 1e15)) {
		sf_chk(w, cJSON_AddNumberToObject(o, k, v));
		return;
	}
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, sizeof(buf), "%.*g", digits, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	sf_chk(w, cJSON_AddRawToObject(o, k, buf));
}

/* Exact: a number below 2^53, a decimal string from there on. */
void sf_put_u64(struct sf_wr *w, cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	if (v <= SF_EXACT_MAX) {
		sf_put_num(w, o, k, (double)v);
		return;
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	sf_put_str(w, o, k, buf);
}

void sf_push(struct sf_wr *w, cJSON *arr, cJSON *x)
{
	if (!sf_chk(w, x) || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		w->oom = true;
	}
}

void sf_text_raw(struct sf_wr *w, struct sf_text *t, const char *s, size_t n)
{
	if (w->oom || grow((void **)&t->p, &t->cap, t->len + n + 1, 1)) {
		w->oom = true;
		return;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void sf_text_str(struct sf_wr *w, struct sf_text *t, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	sf_text_lit(w, t, "\"");
	for (; *s; s++) {
		unsigned char c = *s;
		char esc[6] = { '\\', c, 0 };
		size_t n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sf_text_raw(w, t, run, s - run);
		run = s + 1;
		if (c < 0x20) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			n = 6;
		}
		sf_text_raw(w, t, esc, n);
	}
	sf_text_raw(w, t, run, s - run);
	sf_text_lit(w, t, "\"");
}

void sf_text_u64(struct sf_wr *w, struct sf_text *t, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	bool quote = v > SF_EXACT_MAX;

	do {
		*--p = '0' + v % 10;
		v /= 10;
	} while (v);
	if (quote)
		sf_text_lit(w, t, "\"");
	sf_text_raw(w, t, p, buf + sizeof(buf) - p);
	if (quote)
		sf_text_lit(w, t, "\"");
}

void sf_put_text(struct sf_wr *w, cJSON *o, const char *k, struct sf_text *t)
{
	if (!w->oom)
		sf_chk(w, cJSON_AddRawToObject(o, k, t->p ? t->p : "[]"));
	free(t->p);
	*t = (struct sf_text){ 0 };
}

/* ---- reading */

int sf_bad(struct sf_rd *rd, const char *field, const char *fmt, ...)
{
	int n = snprintf(rd->why, rd->whylen, "%s%s%s%s: ", rd->section ? rd->section : "",
			 rd->section ? "." : "", rd->at, field);
	va_list ap;

	if (n >= 0 && (size_t)n < rd->whylen) {
		va_start(ap, fmt);
		vsnprintf(rd->why + n, rd->whylen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static const char *type_name(const cJSON *x)
{
	return cJSON_IsNumber(x)   ? "a number"
	       : cJSON_IsString(x) ? "a string"
	       : cJSON_IsBool(x)   ? "a boolean"
	       : cJSON_IsNull(x)   ? "null"
	       : cJSON_IsArray(x)  ? "an array"
	       : cJSON_IsObject(x) ? "an object"
				   : "invalid";
}

/* The field, or NULL when it may be and is absent (then 0 is returned too). */
static int field(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, const cJSON **x)
{
	*x = cJSON_GetObjectItemCaseSensitive(o, name);
	if (!*x && (need == SF_ALWAYS || (need == SF_SINCE2 && rd->format >= 2)))
		return sf_bad(rd, name, "missing");
	return 0;
}

int sf_wrong_type(struct sf_rd *rd, const char *name, const cJSON *x, const char *want)
{
	return sf_bad(rd, name, "%s where %s belongs", type_name(x), want);
}

int sf_get_bool(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, bool *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsBool(x))
		return sf_wrong_type(rd, name, x, "true or false");
	*v = cJSON_IsTrue(x);
	return 0;
}

int sf_get_str(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, size_t max,
		   const char **v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsString(x) || !x->valuestring)
		return sf_wrong_type(rd, name, x, "a string");
	if (strnlen(x->valuestring, max + 1) > max)
		return sf_bad(rd, name, "longer than %zu bytes", max);
	*v = x->valuestring;
	return 0;
}

/* A whole number, in [0, max]. @loose: format 1 wrote it as a double, maybe rounded. */
int sf_num_u64(struct sf_rd *rd, const char *name, const cJSON *x, uint64_t max, bool loose,
		   uint64_t *v)
{
	double d = x->valuedouble;

	if (!(d >= 0))
		return sf_bad(rd, name, "%g is negative", d);
	if (d != floor(d))
		return sf_bad(rd, name, "%g is not a whole number", d);
	if (d >= 18446744073709551616.0)
		return sf_bad(rd, name, "%.17g does not fit 64 bits", d);
	if (d > (double)SF_EXACT_MAX && !(loose && rd->format == 1))
		return sf_bad(rd, name, "%.17g is too large to be exact (2^53 or more)", d);
	*v = (uint64_t)d;
	if (*v > max)
		return sf_bad(rd, name, "%llu is more than %llu", (unsigned long long)*v,
			   (unsigned long long)max);
	return 0;
}

/* Format 2: a 64-bit value from 2^53 on, as decimal digits. */
static int str_u64(struct sf_rd *rd, const char *name, const char *s, uint64_t max, uint64_t *v)
{
	uint64_t n = 0;
	const char *p = s;

	if (!*p)
		return sf_bad(rd, name, "empty string where a number belongs");
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return sf_bad(rd, name, "\"%.24s\" is not a whole number", s);
		if (n > (UINT64_MAX - (*p - '0')) / 10)
			return sf_bad(rd, name, "\"%.24s\" does not fit 64 bits", s);
		n = n * 10 + (*p - '0');
	}
	if (n > max)
		return sf_bad(rd, name, "%llu is more than %llu", (unsigned long long)n,
			   (unsigned long long)max);
	*v = n;
	return 0;
}

int sf_item_u64(struct sf_rd *rd, const char *name, const cJSON *x, uint64_t max, uint64_t *v)
{
	if (cJSON_IsNumber(x))
		return sf_num_u64(rd, name, x, max, false, v);
	if (cJSON_IsString(x) && x->valuestring && rd->format >= 2)
		return str_u64(rd, name, x->valuestring, max, v);
	return sf_wrong_type(rd, name, x, "a whole number");
}

int sf_get_u64x(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
		    uint64_t max, bool loose, uint64_t *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (cJSON_IsNumber(x))
		return sf_num_u64(rd, name, x, max, loose, v);
	if (cJSON_IsString(x) && x->valuestring && rd->format >= 2)
		return str_u64(rd, name, x->valuestring, max, v);
	return sf_wrong_type(rd, name, x, "a whole number");
}

/* A count or a sum of nanoseconds: a whole number; format 2 writes big ones as strings. */
int sf_get_u64(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, uint64_t *v)
{
	return sf_get_u64x(rd, o, name, need, UINT64_MAX, false, v);
}

int sf_get_u32(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, uint32_t max,
		   uint32_t *v)
{
	const cJSON *x;
	uint64_t n;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsNumber(x))
		return sf_wrong_type(rd, name, x, "a whole number");
	r = sf_num_u64(rd, name, x, max, false, &n);
	if (!r)
		*v = (uint32_t)n;
	return r;
}

int sf_get_double(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, double lo,
		      double hi, double *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (!cJSON_IsNumber(x))
		return sf_wrong_type(rd, name, x, "a number");
	if (!(x->valuedouble >= lo && x->valuedouble <= hi))
		return sf_bad(rd, name, "%g is not in [%g, %g]", x->valuedouble, lo, hi);
	*v = x->valuedouble;
	return 0;
}

/* An enumeration: its name (format 2), its number (format 1). Names may have holes (NULL). */
int sf_get_enum(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
		    const char *const *names, uint32_t n, uint32_t *v)
{
	const cJSON *x;
	int r = field(rd, o, name, need, &x);

	if (r || !x)
		return r;
	if (rd->format == 1) {
		uint64_t u;

		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a number");
		r = sf_num_u64(rd, name, x, n - 1, false, &u);
		if (!r)
			*v = (uint32_t)u;
		return r;
	}
	if (!cJSON_IsString(x) || !x->valuestring)
		return sf_wrong_type(rd, name, x, "a name");
	for (uint32_t i = 0; i < n; i++) {
		if (names[i] && !strcmp(names[i], x->valuestring)) {
			*v = i;
			return 0;
		}
	}
	return sf_bad(rd, name, "unknown value \"%.40s\"", x->valuestring);
}

/* A code address: "0x..." (format 2), a number (format 1, rounded above 2^53). */
int sf_get_addr(struct sf_rd *rd, const cJSON *o, const char *name, uint64_t *v)
{
	const cJSON *x;
	const char *p;
	uint64_t a = 0;
	int r = field(rd, o, name, SF_ALWAYS, &x), n = 0;

	if (r)
		return r;
	if (rd->format == 1) {
		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a number");
		return sf_num_u64(rd, name, x, UINT64_MAX, true, v);
	}
	if (!cJSON_IsString(x) || !x->valuestring)
		return sf_wrong_type(rd, name, x, "a hex string");
	p = x->valuestring;
	if (strncmp(p, "0x", 2))
		return sf_bad(rd, name, "\"%.24s\" does not start with 0x", p);
	for (p += 2; *p; p++, n++) {
		int d = *p >= '0' && *p <= '9'	 ? *p - '0'
			: *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
			: *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
						 : -1;

		if (d < 0 || n >= 16)
			return sf_bad(rd, name, "\"%.24s\" is not a 64-bit hex number",
				   x->valuestring);
		a = a << 4 | (uint64_t)d;
	}
	if (!n)
		return sf_bad(rd, name, "\"0x\" has no digits");
	*v = a;
	return 0;
}

int sf_get_array(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, int max,
		     const cJSON **arr, int *n)
{
	int r = field(rd, o, name, need, arr);

	*n = 0;
	if (r || !*arr)
		return r;
	if (!cJSON_IsArray(*arr))
		return sf_wrong_type(rd, name, *arr, "an array");
	*n = cJSON_GetArraySize(*arr);
	if (*n > max)
		return sf_bad(rd, name, "%d entries, more than %d", *n, max);
	return 0;
}


int sf_not_object(struct sf_rd *rd, const char *arr, int i, const cJSON *x)
{
	char name[32];

	rd->at[0] = '\0';
	snprintf(name, sizeof(name), "%s[%d]", arr, i);
	return sf_wrong_type(rd, name, x, "an object");
}
