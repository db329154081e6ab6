// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/symbols/hotspot*.c (docs/java.md): HotSpot's compressed ints, line
 * number tables and debug-info scopes as the JVM encodes them, the names Java frames get,
 * and the layout read by name from the tables a real libjvm.so publishes (each JDK under
 * /usr/lib/jvm, loaded with dlopen in a child of its own, which runs its static
 * initializers: what a JVM's memory holds. Skipped when there is none.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hotspot.h"

/* CompressedWriteStream::write_int as JDK 17 (@x1 false) and 21 on (UNSIGNED5) write it. */
static size_t put_int(uint8_t *b, uint32_t v, bool x1)
{
	const uint32_t x = x1, l = 192 - x;
	size_t n = 0;

	for (int i = 0; i < 4 && v >= l; i++) {
		b[n++] = (uint8_t)(x + l + ((v - l) % 64));
		v = (v - l) / 64;
	}
	b[n++] = (uint8_t)(v + x);
	return n;
}

static size_t put_signed(uint8_t *b, int32_t v, bool x1)
{
	return put_int(b, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31), x1);
}

static void compressed_ints(void **state)
{
	static const uint32_t vals[] = { 0, 1, 100, 190, 191, 192, 193, 255, 256, 1000, 12345,
					 70000, 1u << 20, 123456789, 0x7fffffff };
	(void)state;
	for (int x1 = 0; x1 < 2; x1++) {
		uint8_t buf[256];
		size_t len = 0;
		struct hs_stream s = { .buf = buf, .x1 = x1 };

		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			len += put_int(buf + len, vals[i], x1);
		len += put_signed(buf + len, -5, x1);
		len += put_signed(buf + len, 7, x1);
		s.len = len;
		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
			assert_int_equal(hs_read_int(&s), vals[i]);
		assert_int_equal(hs_read_signed(&s), -5);
		assert_int_equal(hs_read_signed(&s), 7);
		assert_false(s.bad);
		assert_int_equal(s.pos, len);
		hs_read_int(&s);
		assert_true(s.bad); /* past the end */
	}
	/* a 0 byte is no int in UNSIGNED5 */
	{
		uint8_t z = 0;
		struct hs_stream s = { .buf = &z, .len = 1, .x1 = true };

		hs_read_int(&s);
		assert_true(s.bad);
	}
}

/* A line number table as javac's LineNumberTable becomes one (CompressedLineNumberWriteStream). */
static size_t put_pair(uint8_t *b, int *bci, int *line, int nbci, int nline, bool x1)
{
	int db = nbci - *bci, dl = nline - *line;
	size_t n = 0;

	*bci = nbci;
	*line = nline;
	if (db >= 0 && db < 32 && dl >= 0 && dl < 8) {
		b[0] = (uint8_t)(db << 3 | dl);
		return 1;
	}
	b[n++] = 0xff;
	n += put_signed(b + n, db, x1);
	n += put_signed(b + n, dl, x1);
	return n;
}

static void line_tables(void **state)
{
	(void)state;
	for (int x1 = 0; x1 < 2; x1++) {
		uint8_t tab[64];
		int bci = 0, line = 0;
		size_t n = 0, cut;

		n += put_pair(tab + n, &bci, &line, 0, 12, x1);	/* 0: line 12 */
		n += put_pair(tab + n, &bci, &line, 5, 13, x1);	/* 5: 13 */
		cut = n;
		n += put_pair(tab + n, &bci, &line, 40, 11, x1); /* 40: back to 11 (a loop) */
		n += put_pair(tab + n, &bci, &line, 300, 90, x1); /* far */
		tab[n++] = 0;
		assert_int_equal(hs_line_of(tab, n, x1, 0), 12);
		assert_int_equal(hs_line_of(tab, n, x1, 4), 12);
		assert_int_equal(hs_line_of(tab, n, x1, 5), 13);
		assert_int_equal(hs_line_of(tab, n, x1, 39), 13);
		assert_int_equal(hs_line_of(tab, n, x1, 40), 11);
		assert_int_equal(hs_line_of(tab, n, x1, 299), 11);
		assert_int_equal(hs_line_of(tab, n, x1, 1000), 90);
		/* cut off: what was read still answers */
		assert_int_equal(hs_line_of(tab, cut, x1, 7), 13);
		/* none */
		assert_int_equal(hs_line_of(tab + n - 1, 1, x1, 3), -1);
	}
}

static void scopes(void **state)
{
	uint8_t d[64];
	size_t n = 1; /* (offset 0 is "no scope") */
	uint32_t sender, mi, outer;
	int bci;

	(void)state;
	d[0] = 0;
	/* the outer scope: no sender, method 2, bci 17; the inner: sender the outer, method 1, bci 3 */
	outer = n;
	n += put_int(d + n, 0, false);
	n += put_int(d + n, 2, false);
	n += put_int(d + n, 17 + 1, false); /* (bci - InvocationEntryBci) */
	{
		uint32_t inner = n;

		n += put_int(d + n, outer, false);
		n += put_int(d + n, 1, false);
		n += put_int(d + n, 3 + 1, false);
		assert_true(hs_scope_at(d, n, false, inner, -1, &sender, &mi, &bci));
		assert_int_equal(sender, outer);
		assert_int_equal(mi, 1);
		assert_int_equal(bci, 3);
		assert_true(hs_scope_at(d, n, false, sender, -1, &sender, &mi, &bci));
		assert_int_equal(sender, 0);
		assert_int_equal(mi, 2);
		assert_int_equal(bci, 17);
		assert_false(hs_scope_at(d, n, false, n + 3, -1, &sender, &mi, &bci));
		assert_false(hs_scope_at(d, inner + 2, false, inner, -1, &sender, &mi, &bci));
	}
}

static void names(void **state)
{
	char out[64];

	(void)state;
	hs_proc_name("java/util/HashMap$Node", 22, "getKey", 6, out, sizeof(out));
	assert_string_equal(out, "java.util.HashMap$Node.getKey");
	hs_proc_name("Phases", 6, "alpha", 5, out, sizeof(out));
	assert_string_equal(out, "Phases.alpha");
	hs_proc_name("Phases", 6, "lambda$main$0", 13, out, 10);
	assert_string_equal(out, "Phases.la");
}

/* ---- a real libjvm.so's published tables */

static int self_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (!addr)
		return -14;
	memcpy(buf, (const void *)addr, len);
	return 0;
}

/* In a child: load @path and read its tables; exit 0 if all is as expected. */
static int check_jvm(const char *path)
{
	struct hs_rd rd = { self_read, NULL };
	struct hs_tables t = { 0 };
	struct hs_layout l;
	char why[200];
	uint64_t v;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int r;

	if (!h) {
		fprintf(stderr, "%s: %s\n", path, dlerror());
		return 2;
	}
	for (int i = 0; i < HS_NTABLES; i++) {
		t.table[i] = (uint64_t)dlsym(h, hs_table_syms[i]);
		for (int k = 0; k < 8; k++)
			if (hs_shape_syms[i][k])
				t.shape[i][k] = (uint64_t)dlsym(h, hs_shape_syms[i][k]);
	}
	r = hs_layout_read(&rd, &t, &l, why, sizeof(why));
	if (r) {
		fprintf(stderr, "%s: %s\n", path, why);
		return 1;
	}
	fprintf(stderr, "%s: JDK %u, scopes %d, CodeBlob::_frame_size at %u, nmethod::_method at %u, "
		"HeapBlock %u bytes, ConstMethod %u bytes\n", path, l.version, l.scopes,
		l.cb_frame_size, l.nm_method, l.hb_size, l.cm_size);
#define CHECK(c)                                                  \
	do {                                                      \
		if (!(c)) {                                       \
			fprintf(stderr, "%s: not so: %s\n", path, #c); \
			return 1;                                 \
		}                                                 \
	} while (0)
	CHECK(l.version && l.cb_frame_size != HS_NONE && l.cm_has_lines != HS_NONE);
	CHECK(!hs_lookup(&rd, &t, "CodeBlob", "_frame_size", &v) && v == l.cb_frame_size);
	CHECK(!hs_lookup(&rd, &t, "Method", NULL, &v) && v); /* a type's size */
	CHECK(hs_lookup(&rd, &t, "NoSuchType", "_x", &v));
	/* what the JDKs pcmon decodes compiled frames of must say so */
	CHECK(!(l.version >= 11 && l.version < 23) || l.scopes);
	CHECK(l.version != 17 || (l.hb_size == 16 && l.if_sender_sp == -1 && !l.unsigned5_x1));
	return 0;
}

static void published_tables(void **state)
{
	glob_t g;
	int checked = 0, failed = 0;
	char seen[4096] = "";

	(void)state;
	if (glob("/usr/lib/jvm/*/lib/server/libjvm.so", 0, NULL, &g)) {
		skip();
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char real[4096];
		int st;
		pid_t pid;

		/* (java-17-openjdk-amd64 and java-1.17.0-openjdk-amd64 are the same JDK) */
		if (!realpath(g.gl_pathv[i], real) || !strcmp(real, seen))
			continue;
		snprintf(seen, sizeof(seen), "%s", real);
		pid = fork();
		if (pid == 0)
			_exit(check_jvm(real));
		assert_true(pid > 0);
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		if (WEXITSTATUS(st) == 2)
			continue; /* (could not be loaded here) */
		failed += WEXITSTATUS(st) != 0;
		checked++;
	}
	globfree(&g);
	assert_int_equal(failed, 0);
	if (!checked)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(compressed_ints),
		cmocka_unit_test(line_tables),
		cmocka_unit_test(scopes),
		cmocka_unit_test(names),
		cmocka_unit_test(published_tables),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
