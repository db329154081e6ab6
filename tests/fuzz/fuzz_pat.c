// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for daemon/pattern/pat*.c: parse arbitrary text as a WHEN pattern, check the
 * error contract, check that canonical text parses back to itself, and match fixed stacks.
 *
 * Build: see the Makefile (daemon/pattern/pat*.c daemon/symbols/demangle.c, -liberty).
 * The first input byte selects the flags, the rest is the pattern text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pat.h"

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "fuzz_pat: check failed at line %d: %s\n", __LINE__, \
				#cond);                                                      \
			abort();                                                             \
		}                                                                            \
	} while (0)

static const struct pat_frame small[] = {
	{ "ld-linux-x86-64.so.2", "_start" },
	{ "libc.so.6", "__libc_start_main" },
	{ "myprog", "main" },
	{ "myprog", "f.cold" },
	{ "myprog", "ns::cls::m" },
	{ "libc.so.6", NULL },
	{ NULL, NULL },
	{ NULL, "a" },
	{ "kernel", "schedule" },
	{ "libstdc++.so.6", "operator new(unsigned long)", "operator new" },
	{ "m", "a" },
	{ "m", "b" },
	{ "m", "c.constprop.0.isra.0" },
	{ "[vdso]", "when" },
};

static struct pat_frame deep[300];

static void init_deep(void)
{
	static const char *const procs[] = { "a", "b", "f", "f.isra.0", "g", "when", NULL };

	if (deep[0].module)
		return;
	for (size_t i = 0; i < sizeof(deep) / sizeof(deep[0]); i++) {
		deep[i].module = i % 11 == 5 ? "libc.so.6" : "m";
		deep[i].proc = procs[(i * 7 + i / 5) % 7];
	}
	deep[0].proc = "main";
}

static size_t chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void check_match(const struct pat *p, const struct pat_frame *fr, size_t n)
{
	struct pat_match_info info;
	int r = pat_match_ex(p, fr, n, &info);

	CHECK(r == PAT_NOMATCH || r == PAT_ABOVE_ROOT || (r >= 0 && (size_t)r < n));
	CHECK(r == pat_match(p, fr, n));
	if (r != PAT_NOMATCH)
		CHECK(info.thread < pat_nthreads(p));
	/* the cost bound: frames x primaries per thread, primaries <= PAT_MAX_ELEMS in all */
	CHECK(info.name_tests <= (uint64_t)n * PAT_MAX_ELEMS);
}

static char buf[PAT_MAX_TEXT + 1], buf2[PAT_MAX_TEXT + 1];

/* The canonical text of thread @i parses back to one thread with the same text. */
static void check_thread(const struct pat *p, size_t i, unsigned flags)
{
	struct pat_error err;
	struct pat *q;

	CHECK(pat_thread_str(p, i, buf, sizeof(buf)) == 0);
	if (pat_parse(buf, flags & ~PAT_FROM_FILE, &q, &err)) {
		fprintf(stderr, "thread '%s' does not parse: %d: %s\n", buf, err.column, err.msg);
		abort();
	}
	CHECK(pat_nthreads(q) == 1);
	CHECK(pat_thread_str(q, 0, buf2, sizeof(buf2)) == 0);
	CHECK(strcmp(buf, buf2) == 0);
	pat_free(q);
}

/* Reparse canonical text; of a big expansion only some threads, to keep the fuzzer fast. */
static void check_roundtrip(const struct pat *p, unsigned flags)
{
	size_t n = pat_nthreads(p), step = n > 64 ? n / 64 : 1;
	struct pat_error err;
	struct pat *q;

	for (size_t i = 0; i < n; i += step)
		check_thread(p, i, flags);
	check_thread(p, n - 1, flags);
	if (n > 256 || pat_str(p, buf, sizeof(buf)))
		return; /* costly, or longer than the text limit */
	CHECK(pat_parse(buf, flags & ~PAT_FROM_FILE, &q, &err) == 0);
	CHECK(pat_nthreads(q) == n);
	CHECK(pat_str(q, buf2, sizeof(buf2)) == 0);
	CHECK(strcmp(buf, buf2) == 0);
	pat_free(q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pat_error err;
	struct pat *p = NULL;
	unsigned flags;
	char *text;
	int rc;

	if (size < 1)
		return 0;
	init_deep();
	flags = data[0] & (PAT_ICASE | PAT_FROM_FILE);
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	memset(&err, 0x55, sizeof(err));
	rc = pat_parse(text, flags, &p, &err);
	if (rc) {
		CHECK(rc == -EINVAL);
		CHECK(p == NULL);
		CHECK(err.column >= 1 && (size_t)err.column <= chars(text) + 1);
		CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
		CHECK(err.msg[0] != '\0');
		CHECK(err.msg[strlen(err.msg) - 1] != '.');
		free(text);
		return 0;
	}
	CHECK(p != NULL);
	CHECK(pat_nthreads(p) >= 1 && pat_nthreads(p) <= PAT_MAX_THREADS);
	check_roundtrip(p, flags);
	check_match(p, NULL, 0);
	for (size_t n = 1; n <= sizeof(small) / sizeof(small[0]); n++)
		check_match(p, small, n);
	check_match(p, small + 3, 4);
	check_match(p, deep, 40);
	check_match(p, deep, sizeof(deep) / sizeof(deep[0]));
	pat_free(p);
	free(text);
	return 0;
}
