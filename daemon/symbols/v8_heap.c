// SPDX-License-Identifier: GPL-2.0-only
/*
 * Reading a V8 process's heap (docs/node.md): objects' types, strings (flat, cons, thin,
 * sliced, external), a script's source scanned for its lines, ScopeInfos, byte arrays; each
 * read bounded, with process_vm_readv(). The caches over them are v8_names.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "util.h"
#include "v8.h"
#include "v8_int.h"

/* ---- reading the heap */

int v8_mem_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };
	ssize_t n;

	if (!addr || addr > PCMON_JS_ADDR_MASK)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}

uint64_t v8_u64_at(const uint8_t *b, size_t off)
{
	uint64_t x;

	memcpy(&x, b + off, sizeof(x));
	return x;
}

bool v8_tagged(uint64_t w)
{
	return (w & 3) == 1 && w <= PCMON_JS_ADDR_MASK;
}

/* The instance type of heap object @obj (tagged), -1 if it cannot be read. */
int v8_type_of(uint32_t pid, const struct v8_layout *l, uint64_t obj)
{
	uint64_t map;
	uint16_t t;

	if (!v8_tagged(obj) || v8_mem_read(pid, obj - 1 + l->o.map, &map, sizeof(map)) ||
	    !v8_tagged(map) || v8_mem_read(pid, map - 1 + l->o.map_type, &t, sizeof(t)))
		return -1;
	return t;
}

/* UTF-16 units [@from, @from + @n) of string @obj (tagged) into @out: units read, or -errno. */
static int str_units(uint32_t pid, const struct v8_layout *l, uint64_t obj, uint32_t from,
		     uint32_t n, uint16_t *out, int depth)
{
	int t = v8_type_of(pid, l, obj), repr;
	int32_t len;
	uint64_t a, b;
	bool one;

	if (t < 0 || t >= l->type_first_nonstring || depth <= 0 ||
	    v8_mem_read(pid, obj - 1 + l->str_length, &len, sizeof(len)) || len < 0)
		return -EFAULT;
	if (from >= (uint32_t)len)
		return 0;
	if (n > (uint32_t)len - from)
		n = len - from;
	repr = t & l->str_repr_mask;
	one = (t & l->str_enc_mask) == l->str_one_byte;
	if (repr == l->str_thin)
		return v8_mem_read(pid, obj - 1 + l->thin_actual, &a, 8)
			       ? -EFAULT
			       : str_units(pid, l, a, from, n, out, depth - 1);
	if (repr == l->str_sliced) {
		if (v8_mem_read(pid, obj - 1 + l->sliced_parent, &a, 8) ||
		    v8_mem_read(pid, obj - 1 + l->sliced_offset, &b, 8) || (b & 1))
			return -EFAULT;
		return str_units(pid, l, a, from + (uint32_t)(b >> 32), n, out, depth - 1);
	}
	if (repr == l->str_cons) {
		int32_t flen;
		int got, more;

		if (v8_mem_read(pid, obj - 1 + l->cons_first, &a, 8) ||
		    v8_mem_read(pid, obj - 1 + l->cons_second, &b, 8) ||
		    v8_mem_read(pid, a - 1 + l->str_length, &flen, sizeof(flen)) || flen < 0)
			return -EFAULT;
		got = str_units(pid, l, a, from, n, out, depth - 1);
		if (got < 0 || (uint32_t)got == n)
			return got;
		more = str_units(pid, l, b, from + got > (uint32_t)flen ? from + got - flen : 0,
				 n - got, out + got, depth - 1);
		return more < 0 ? more : got + more;
	}
	if (repr == l->str_external) {
		/* (the resource's data, cached after its pointer) */
		if (v8_mem_read(pid, obj - 1 + l->ext_resource + 8, &a, 8) || !a)
			return -EFAULT;
	} else if (repr == 0) {
		a = obj - 1 + l->str_chars;
	} else {
		return -EINVAL;
	}
	if (one) {
		uint8_t raw[V8_NAME_MAX];

		if (n > sizeof(raw))
			n = sizeof(raw);
		if (v8_mem_read(pid, a + from, raw, n))
			return -EFAULT;
		for (uint32_t i = 0; i < n; i++)
			out[i] = raw[i];
		return n;
	}
	return v8_mem_read(pid, a + 2ull * from, out, 2ull * n) ? -EFAULT : (int)n;
}

/* String @obj (tagged) as UTF-8, at most V8_NAME_MAX units: 0, or -errno. */
int v8_str_read(uint32_t pid, const struct v8_layout *l, uint64_t obj, char *out, size_t len)
{
	uint16_t u[V8_NAME_MAX];
	int n = str_units(pid, l, obj, 0, V8_NAME_MAX, u, V8_CONS_DEPTH);
	size_t at = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n && at + 4 < len; i++) {
		uint32_t c = u[i];

		if (c < 0x80) {
			out[at++] = c;
		} else if (c < 0x800) {
			out[at++] = 0xc0 | c >> 6;
			out[at++] = 0x80 | (c & 0x3f);
		} else {
			out[at++] = 0xe0 | c >> 12;
			out[at++] = 0x80 | (c >> 6 & 0x3f);
			out[at++] = 0x80 | (c & 0x3f);
		}
	}
	out[at] = 0;
	return 0;
}

/*
 * The line ends of a script's source @src (a flat string: sequential or external), scanned
 * here: V8 computes its own (Script.line_ends) only when something asks for a line.
 */
int v8_scan_source(uint32_t pid, const struct v8_layout *l, uint64_t src, uint32_t **out,
		   uint32_t *nout)
{
	int t = v8_type_of(pid, l, src), repr;
	uint8_t buf[64 << 10];
	int32_t len;
	uint64_t a;
	uint32_t unit, n = 0, *ends = NULL;
	size_t cap = 0;

	if (t < 0 || t >= l->type_first_nonstring ||
	    v8_mem_read(pid, src - 1 + l->str_length, &len, sizeof(len)) || len < 0)
		return -EFAULT;
	repr = t & l->str_repr_mask;
	unit = (t & l->str_enc_mask) == l->str_one_byte ? 1 : 2;
	if (repr == l->str_thin)
		return v8_mem_read(pid, src - 1 + l->thin_actual, &a, 8)
			       ? -EFAULT
			       : v8_scan_source(pid, l, a, out, nout);
	if (repr == l->str_external) {
		if (v8_mem_read(pid, src - 1 + l->ext_resource + 8, &a, 8) || !a)
			return -EFAULT;
	} else if (repr == 0) {
		a = src - 1 + l->str_chars;
	} else {
		return -EINVAL;
	}
	if ((uint64_t)len * unit > V8_SOURCE_MAX)
		return -E2BIG;
	for (uint64_t at = 0; at < (uint64_t)len * unit;) {
		size_t chunk = MIN(sizeof(buf), (uint64_t)len * unit - at);

		if (v8_mem_read(pid, a + at, buf, chunk)) {
			free(ends);
			return -EFAULT;
		}
		for (size_t i = 0; i + unit <= chunk; i += unit) {
			uint16_t c = unit == 1 ? buf[i] : (uint16_t)(buf[i] | buf[i + 1] << 8);

			if (c != '\n')
				continue;
			if (GROW(ends, cap, n + 1)) {
				free(ends);
				return -ENOMEM;
			}
			ends[n++] = (at + i) / unit;
		}
		at += chunk;
	}
	if (GROW(ends, cap, n + 1)) {
		free(ends);
		return -ENOMEM;
	}
	ends[n++] = len; /* the last line's end */
	*out = ends;
	*nout = n;
	return 0;
}

/* The name and start position of the function whose name or ScopeInfo is @nos. */
void v8_fn_name(uint32_t pid, const struct v8_layout *l, uint64_t nos, char *name, size_t len,
		int64_t *start)
{
	uint64_t w[V8_SCOPE_WORDS];
	struct v8_scope sc;
	int t = v8_type_of(pid, l, nos);
	size_t n = l->scope_first_vars;

	name[0] = 0;
	*start = -1;
	if (t >= 0 && t < l->type_first_nonstring) {
		v8_str_read(pid, l, nos, name, len);
		return;
	}
	if (t != l->type_scope_info)
		return;
	/* the header, then exactly the words the flags say are there: no more (a ScopeInfo
	 * may end the last page of the heap that is mapped) */
	for (int pass = 0; pass < 2; pass++) {
		if (v8_mem_read(pid, nos - 1 + 8, w, n * 8) || v8_scope_decode(w, n, l, &sc))
			return;
		if (sc.need <= n)
			break;
		if (sc.need > V8_SCOPE_WORDS)
			return;
		n = sc.need;
	}
	if (sc.need > n)
		return;
	if (sc.pos >= 0)
		*start = (int64_t)w[sc.pos] >> 32;
	if (sc.name >= 0 && v8_tagged(w[sc.name]))
		v8_str_read(pid, l, w[sc.name], name, len);
}

/* The bytes of array @ba (tagged) of process @pid from @data on, as many as its length says
 * and at most @max: malloc'ed, or NULL. */
static uint8_t *array_bytes(uint32_t pid, const struct v8_layout *l, uint64_t ba, size_t data,
			    uint32_t max, uint32_t *n)
{
	uint64_t len;
	uint8_t *b;

	*n = 0;
	if (!v8_tagged(ba) || v8_mem_read(pid, ba - 1 + l->fixed_length, &len, sizeof(len)) ||
	    (len & 1))
		return NULL;
	len = (int64_t)len >> 32;
	if (!len || len > max || !(b = malloc(len)))
		return NULL;
	if (v8_mem_read(pid, ba - 1 + data, b, len)) {
		free(b);
		return NULL;
	}
	*n = len;
	return b;
}

uint8_t *v8_byte_array(uint32_t pid, const struct v8_layout *l, uint64_t ba, uint32_t max,
		       uint32_t *n)
{
	return array_bytes(pid, l, ba, (size_t)l->fixed_length + 8, max, n);
}

uint8_t *v8_baseline_bytecodes(uint32_t pid, const struct v8_layout *l, uint64_t code,
			       uint32_t *n)
{
	uint64_t ba;

	*n = 0;
	/* (baseline code's bytecode is where optimized code has its deopt data) */
	if (v8_mem_read(pid, code - 1 + l->code_deopt, &ba, sizeof(ba)) ||
	    v8_type_of(pid, l, ba) != l->type_bytecode_array)
		return NULL;
	return array_bytes(pid, l, ba, l->bca_data, V8_SPT_MAX, n);
}

/* The source position table of the bytecode of function data @fd (tagged). */
uint8_t *v8_bytecode_spt(uint32_t pid, const struct v8_layout *l, uint64_t fd, uint32_t *n)
{
	int t = v8_type_of(pid, l, fd);
	uint64_t spt;

	*n = 0;
	if (t == l->type_code && v8_mem_read(pid, fd - 1 + l->code_deopt, &fd, sizeof(fd)))
		return NULL; /* (baseline code: its bytecode is where optimized code has its deopt data) */
	if (t == l->type_code)
		t = v8_type_of(pid, l, fd);
	if (t != l->type_bytecode_array || v8_mem_read(pid, fd - 1 + l->bca_spt, &spt, sizeof(spt)))
		return NULL;
	return v8_byte_array(pid, l, spt, V8_SPT_MAX, n);
}
