// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/util.c: the interning table, grow(), hash_bytes(), read_file(),
 * basename_of(), online_cpus(), the clocks and the logger.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* ---------------------------------------------------------------------------------------- */
/* Helpers */

/* A fresh temporary file holding @len bytes of @data; returns its path (static buffer). */
static const char *temp_file(const void *data, size_t len)
{
	static char path[256];
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, sizeof(path), "%s/pcmon-test-util-XXXXXX", dir && dir[0] ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	return path;
}

/*
 * Run @fn in a child process that is killed after @secs seconds; returns the child's exit
 * status, or 128 + signal when it did not exit normally (e.g. 142 for a hang: SIGALRM).
 */
static int in_child(int (*fn)(void), unsigned secs)
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(secs);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* ---------------------------------------------------------------------------------------- */
/* pidtab: against a plain array, through growth, deletions in the middle of runs, shrinking */

static void test_pidtab_model(void **state)
{
	enum { SPACE = 5000 };
	static void *model[SPACE];
	struct pidtab *t = pidtab_new();
	uint64_t rnd = 88172645463325252ull;
	uint32_t live = 0, peak = 0;

	(void)state;
	assert_non_null(t);
	assert_null(pidtab_get(t, 7));
	assert_null(pidtab_del(t, 7));
	for (int step = 0; step < 200000; step++) {
		uint32_t pid;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		/* pids clustered (runs collide) and, once, pid 0 and the largest */
		pid = step == 100 ? 0 : step == 101 ? SPACE - 1 : (uint32_t)(rnd >> 33) % SPACE;
		/* first fill, then empty: the table must come back down */
		if ((rnd & 15) < (step < 100000 ? 12u : 1u)) {
			void *v = (void *)(uintptr_t)(step + 1);

			live += !model[pid];
			model[pid] = v;
			assert_int_equal(pidtab_put(t, pid, v), 0);
		} else {
			assert_ptr_equal(pidtab_del(t, pid), model[pid]);
			live -= !!model[pid];
			model[pid] = NULL;
		}
		peak = MAX(peak, live);
		if (step % 997 == 0)
			for (uint32_t q = 0; q < SPACE; q++)
				assert_ptr_equal(pidtab_get(t, q), model[q]);
		assert_int_equal(pidtab_count(t), live);
	}
	assert_true(peak > SPACE / 2);
	/* (at most half full while filling; emptied to a few, an eighth full at least again) */
	assert_true(pidtab_bytes(t) <= 2 * sizeof(void *) * MAX(16u, 16 * live));
	{
		size_t it = 0, n = 0;

		while (pidtab_next(t, &it))
			n++;
		assert_int_equal(n, live);
	}
	for (uint32_t q = 0; q < SPACE; q++)
		if (model[q])
			assert_ptr_equal(pidtab_del(t, q), model[q]);
	assert_int_equal(pidtab_count(t), 0);
	pidtab_free(t);
}

/*
 * Exits let go after a delay, oldest first, against a model: a pid put again after its exit
 * (a new process) keeps its value; a value deleted by hand is not given back; the queue of
 * exits does not grow past what is pending.
 */
static void test_pidtab_exits(void **state)
{
	enum { SPACE = 3000, KEEP = 100 };
	static uint64_t exited[SPACE];	/* when, + 1; 0: running or not there */
	static uint32_t vals[SPACE];	/* the value's serial, 0: none */
	struct pidtab *t = pidtab_new();
	uint64_t rnd = 2463534242ull, now = 0;
	uint32_t serial = 0, pid, given = 0;
	void *v;

	(void)state;
	assert_null(pidtab_expire(t, 1000, &pid));
	assert_int_equal(pidtab_exited(t, 5, 1), 0); /* (nothing to keep) */
	for (int step = 0; step < 100000; step++) {
		uint32_t q;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 17;
		rnd ^= rnd << 5;
		q = (uint32_t)(rnd >> 8) % SPACE;
		now += rnd % 3;
		switch (rnd % 5) {
		case 0: case 1: /* a process of pid q starts (a new value, whatever was there) */
			vals[q] = ++serial;
			exited[q] = 0;
			assert_int_equal(pidtab_put(t, q, (void *)(uintptr_t)serial), 0);
			break;
		case 2: case 3: /* it exits */
			if (vals[q] && !exited[q]) {
				exited[q] = now + 1;
				assert_int_equal(pidtab_exited(t, q, now), 0);
			}
			break;
		default: /* its state let go by hand */
			assert_ptr_equal(pidtab_del(t, q), (void *)(uintptr_t)vals[q]);
			vals[q] = 0;
			exited[q] = 0;
		}
		while ((v = pidtab_expire(t, now - MIN(now, KEEP), &pid))) {
			assert_true(pid < SPACE);
			assert_ptr_equal(v, (void *)(uintptr_t)vals[pid]);
			assert_true(exited[pid] && exited[pid] - 1 < now - MIN(now, KEEP));
			vals[pid] = 0;
			exited[pid] = 0;
			given++;
		}
		/* nothing exited long enough ago is left */
		if (step % 499 == 0)
			for (q = 0; q < SPACE; q++) {
				assert_false(exited[q] && exited[q] - 1 < now - MIN(now, KEEP));
				assert_ptr_equal(pidtab_get(t, q), (void *)(uintptr_t)vals[q]);
			}
	}
	assert_true(given > 1000);
	/* the exit queue holds what is pending, not the whole history (~40,000 exits, 640 KB):
	 * slots for SPACE pids at most a quarter full, and twice SPACE exits queued */
	assert_true(pidtab_bytes(t) <= 4 * SPACE * 16 + 2 * SPACE * 16);
	pidtab_free(t);
}

/* ---------------------------------------------------------------------------------------- */
/* itab */

static void test_itab_basic(void **state)
{
	struct itab *t = itab_new();
	uint32_t id = 77;
	size_t len = 0;
	const char *k;

	(void)state;
	assert_non_null(t);
	assert_int_equal(itab_count(t), 0);
	assert_int_equal(itab_find(t, "a", 2), -1); /* empty table: no slots yet */
	assert_null(itab_key(t, 0, &len));

	assert_int_equal(itab_str(t, "alpha", &id), 1);
	assert_int_equal(id, 0);
	assert_int_equal(itab_str(t, "beta", &id), 1);
	assert_int_equal(id, 1);
	assert_int_equal(itab_str(t, "gamma", &id), 1);
	assert_int_equal(id, 2);
	/* same key, same id, not new */
	id = 77;
	assert_int_equal(itab_str(t, "beta", &id), 0);
	assert_int_equal(id, 1);
	id = 77;
	assert_int_equal(itab_str(t, "alpha", &id), 0);
	assert_int_equal(id, 0);
	assert_int_equal(itab_count(t), 3);

	/* itab_str counts the NUL: "beta" is 5 bytes, and "beta" without it is another key */
	k = itab_key(t, 1, &len);
	assert_non_null(k);
	assert_int_equal(len, 5);
	assert_memory_equal(k, "beta", 5);
	assert_int_equal(itab_find(t, "beta", 5), 1);
	assert_int_equal(itab_find(t, "beta", 4), -1);
	assert_int_equal(itab_find(t, "gamma", 6), 2);
	assert_int_equal(itab_find(t, "delta", 6), -1);
	assert_int_equal(itab_intern(t, "beta", 4, &id), 1);
	assert_int_equal(id, 3);
	assert_int_equal(itab_find(t, "beta", 4), 3);
	assert_int_equal(itab_find(t, "beta", 5), 1);

	/* len is optional; out of range ids give NULL */
	assert_string_equal(itab_key(t, 2, NULL), "gamma");
	assert_null(itab_key(t, 4, NULL));
	assert_null(itab_key(t, UINT32_MAX, NULL));
	assert_int_equal(itab_count(t), 4);
	itab_free(t);
	itab_free(NULL);
}

#define NKEYS 20000

static void test_itab_many(void **state)
{
	struct itab *t = itab_new();
	char key[32];
	uint32_t id;

	(void)state;
	assert_non_null(t);
	/* many rehashes (64 slots to 65536): ids stay dense, in insertion order */
	for (uint32_t i = 0; i < NKEYS; i++) {
		snprintf(key, sizeof(key), "key-%u", i * 7919u);
		assert_int_equal(itab_str(t, key, &id), 1);
		assert_int_equal(id, i);
	}
	assert_int_equal(itab_count(t), NKEYS);
	/* every id is stable across the rehashes: re-interning, finding, reading back */
	for (uint32_t i = 0; i < NKEYS; i++) {
		size_t len;
		const char *k;

		snprintf(key, sizeof(key), "key-%u", i * 7919u);
		id = UINT32_MAX;
		assert_int_equal(itab_str(t, key, &id), 0);
		assert_int_equal(id, i);
		assert_int_equal(itab_find(t, key, strlen(key) + 1), i);
		k = itab_key(t, i, &len);
		assert_int_equal(len, strlen(key) + 1);
		assert_string_equal(k, key);
	}
	assert_int_equal(itab_count(t), NKEYS);
	/* absent keys stay absent in a full table */
	for (uint32_t i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "key-%u", i * 7919u + 1);
		assert_int_equal(itab_find(t, key, strlen(key) + 1), -1);
	}
	itab_free(t);
}

/* A key read back from the table itself stays valid while interning it grows the arena. */
static void test_itab_key_from_own_arena(void **state)
{
	struct itab *t = itab_new();
	uint32_t first, id, again;
	char buf[32];

	(void)state;
	assert_non_null(t);
	assert_int_equal(itab_str(t, "libc.so.6", &first), 1);
	for (int i = 0; i < 5000; i++) {
		const char *own = itab_key(t, first, NULL);

		/* a new key built from the old one, then the old one itself, straight from the arena */
		snprintf(buf, sizeof(buf), "%s.%d", own, i);
		assert_true(itab_str(t, buf, &id) >= 0);
		assert_int_equal(itab_intern(t, itab_key(t, first, NULL), strlen("libc.so.6") + 1,
					     &again), 0);
		assert_int_equal(again, first);
	}
	assert_string_equal(itab_key(t, first, NULL), "libc.so.6");
	itab_free(t);

	/* an unseen key whose bytes sit in the arena, interned while the arena has to grow */
	{
		char big[3000];
		size_t len;

		t = itab_new();
		assert_non_null(t);
		memset(big, 'x', sizeof(big));
		assert_int_equal(itab_intern(t, big, sizeof(big), &first), 1);
		for (int i = 0; i < 8; i++) {
			const char *k = itab_key(t, itab_count(t) - 1, &len);

			/* one byte shorter: a new key, read from the arena the call will move */
			assert_int_equal(itab_intern(t, k, len - 1, &id), 1);
			assert_int_equal(id, i + 1);
		}
		for (uint32_t i = 0; i < itab_count(t); i++) {
			const char *k = itab_key(t, i, &len);

			assert_int_equal(len, sizeof(big) - i);
			for (size_t j = 0; j < len; j++)
				assert_int_equal(k[j], 'x');
		}
	}
	itab_free(t);
}

static void test_itab_binary(void **state)
{
	static const unsigned char k0[] = { 0 }, k00[] = { 0, 0 }, k000[] = { 0, 0, 0 };
	static const unsigned char k01[] = { 0, 1 }, k10[] = { 1, 0 };
	static const unsigned char big[] = { 'a', 0, 'b', 0, 0, 'c', 0xff, 0, 0x80, 0 };
	struct {
		const void *p;
		size_t len;
	} keys[] = {
		{ "", 0 }, { k0, 1 }, { k00, 2 }, { k000, 3 }, { k01, 2 }, { k10, 2 },
		{ big, sizeof(big) }, { big, sizeof(big) - 1 }, { big, 1 }, { "a\0", 2 },
	};
	struct itab *t = itab_new();
	uint32_t id;

	(void)state;
	assert_non_null(t);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		assert_int_equal(itab_intern(t, keys[i].p, keys[i].len, &id), 1);
		assert_int_equal(id, i);
	}
	assert_int_equal(itab_count(t), ARRAY_SIZE(keys));
	/* { big, 1 } is the 1-byte key "a", whatever memory it is read from */
	assert_int_equal(itab_intern(t, "a", 1, &id), 0);
	assert_int_equal(id, 8);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		size_t len = 99;
		const void *k = itab_key(t, i, &len);

		assert_int_equal(itab_find(t, keys[i].p, keys[i].len), i);
		assert_int_equal(len, keys[i].len);
		if (len)
			assert_memory_equal(k, keys[i].p, len);
		/* keys are 8-byte aligned so that callers may read structs in place */
		assert_int_equal((uintptr_t)k % 8, 0);
	}
	itab_free(t);
}

static void test_itab_binary_dup(void **state)
{
	struct itab *t = itab_new();
	uint32_t a, b, c;

	(void)state;
	assert_int_equal(itab_intern(t, "a\0b", 3, &a), 1);
	assert_int_equal(itab_intern(t, "a\0c", 3, &b), 1);
	assert_int_equal(itab_intern(t, "a", 1, &c), 1);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(c, 2);
	assert_int_equal(itab_intern(t, "a\0b", 3, &b), 0);
	assert_int_equal(b, 0);
	assert_int_equal(itab_count(t), 3);
	itab_free(t);
}

static void test_itab_struct_keys(void **state)
{
	struct k {
		uint64_t addr;
		uint32_t mod, pad;
	} key;
	struct itab *t = itab_new();
	uint32_t id;

	(void)state;
	/* odd-sized keys interleaved with struct keys: every key still reads back aligned */
	for (uint32_t i = 0; i < 3000; i++) {
		char s[8];

		key = (struct k){ .addr = (uint64_t)i << 40 | i, .mod = i % 7 };
		assert_int_equal(itab_intern(t, &key, sizeof(key), &id), 1);
		assert_int_equal(id, 2 * i);
		snprintf(s, sizeof(s), "%u", i % 1000 + 1000 * (i / 1000 + 10));
		assert_int_equal(itab_intern(t, s, strlen(s), &id), 1);
		assert_int_equal(id, 2 * i + 1);
	}
	for (uint32_t i = 0; i < 3000; i++) {
		const struct k *p = itab_key(t, 2 * i, NULL);

		assert_int_equal((uintptr_t)p % 8, 0);
		assert_int_equal(p->addr, (uint64_t)i << 40 | i);
		assert_int_equal(p->mod, i % 7);
	}
	itab_free(t);
}

/* ---------------------------------------------------------------------------------------- */
/* grow */

static void test_grow(void **state)
{
	int *arr = NULL, *old;
	size_t cap = 0;

	(void)state;
	assert_int_equal(GROW(arr, cap, 0), 0);
	assert_null(arr);
	assert_int_equal(cap, 0);
	assert_int_equal(GROW(arr, cap, 1), 0);
	assert_non_null(arr);
	assert_int_equal(cap, 16);
	for (int i = 0; i < 16; i++)
		arr[i] = i * 3;
	old = arr;
	assert_int_equal(GROW(arr, cap, 16), 0); /* fits: untouched */
	assert_ptr_equal(arr, old);
	assert_int_equal(cap, 16);
	assert_int_equal(GROW(arr, cap, 17), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(GROW(arr, cap, 1000), 0);
	assert_int_equal(cap, 1024);
	assert_int_equal(GROW(arr, cap, 1024), 0);
	assert_int_equal(cap, 1024);
	assert_int_equal(GROW(arr, cap, 1025), 0);
	assert_int_equal(cap, 2048);
	for (int i = 0; i < 16; i++)
		assert_int_equal(arr[i], i * 3);
	arr[2047] = 5; /* the whole capacity is usable (ASan checks) */
	free(arr);

	/* a capacity that is not a power of two doubles from where it is */
	arr = malloc(10 * sizeof(*arr));
	cap = 10;
	assert_int_equal(GROW(arr, cap, 11), 0);
	assert_int_equal(cap, 20);
	assert_int_equal(GROW(arr, cap, 81), 0);
	assert_int_equal(cap, 160);
	arr[159] = 1;
	free(arr);
}

/*
 * A need whose byte size overflows size_t cannot be met: grow() must say -ENOMEM, not
 * allocate a wrapped-around size (here 2^62 elements of 8 bytes = 2^65 bytes = 0 mod 2^64)
 * and report a capacity the buffer does not have.
 */
static void test_grow_overflow_bytes(void **state)
{
	uint64_t *arr = NULL;
	size_t cap = 0;
	int r;

	(void)state;
	r = grow((void **)&arr, &cap, ((size_t)1 << 61) + 1, sizeof(*arr));
	if (r == 0) {
		free(arr);
		fail_msg("grow(2^61 + 1 elements of 8 bytes) returned 0 with cap %zu: the byte "
			 "size wrapped around", cap);
	}
	assert_int_equal(r, -ENOMEM);
	assert_null(arr);
	assert_int_equal(cap, 0);
}

static int grow_huge_child(void)
{
	uint16_t *arr = NULL;
	size_t cap = 0;

	/* doubling a capacity past SIZE_MAX / 2 wraps it to 0: it must not loop forever */
	return grow((void **)&arr, &cap, SIZE_MAX, sizeof(*arr)) == -ENOMEM && !arr && !cap ? 0 : 1;
}

static void test_grow_overflow_count(void **state)
{
	int st;

	(void)state;
	st = in_child(grow_huge_child, 2);
	if (st == 128 + SIGALRM)
		fail_msg("grow(need = SIZE_MAX) did not return within 2 s (capacity doubling "
			 "overflowed to 0)");
	assert_int_equal(st, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* hash_bytes */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_hash_basic(void **state)
{
	char buf[64] __attribute__((aligned(8)));
	char key[48];
	uint64_t h;

	(void)state;
	assert_int_equal(hash_bytes("hello", 5), hash_bytes("hello", 5));
	assert_int_not_equal(hash_bytes("hello", 5), hash_bytes("hellp", 5));
	assert_int_not_equal(hash_bytes("hello", 5), hash_bytes("hello", 4));
	/* a trailing NUL makes another key */
	assert_int_not_equal(hash_bytes("abc", 3), hash_bytes("abc", 4));
	assert_int_not_equal(hash_bytes("", 0), hash_bytes("", 1));
	assert_int_not_equal(hash_bytes("\0\0\0\0\0\0\0\0", 8), hash_bytes("\0\0\0\0\0\0\0", 7));
	/* zero bytes depend on nothing but the length */
	assert_int_equal(hash_bytes(NULL, 0), hash_bytes("x", 0));

	/* unaligned input hashes like aligned input, for every offset and length */
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (char)(i * 37 + 11);
	for (size_t len = 0; len <= 40; len++) {
		h = hash_bytes(key, len);
		for (size_t off = 1; off < 8; off++) {
			memcpy(buf + off, key, len);
			assert_int_equal(hash_bytes(buf + off, len), h);
		}
	}
}

static void test_hash_bit_flips(void **state)
{
	unsigned char key[40];

	(void)state;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 101 + 3);
	/* every single-bit change of every length 1..40 changes the hash (word and tail bytes) */
	for (size_t len = 1; len <= sizeof(key); len++) {
		uint64_t h = hash_bytes(key, len);

		for (size_t bit = 0; bit < len * 8; bit++) {
			key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
			if (hash_bytes(key, len) == h)
				fail_msg("flipping bit %zu of a %zu-byte key left its hash "
					 "unchanged", bit, len);
			key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		}
	}
}

#define NHASH 100000

static void test_hash_spread(void **state)
{
	uint64_t *h = malloc(NHASH * sizeof(*h));
	unsigned buckets[256] = { 0 };
	char key[32];

	(void)state;
	assert_non_null(h);
	for (uint32_t i = 0; i < NHASH; i++) {
		snprintf(key, sizeof(key), "key-%u", i);
		h[i] = hash_bytes(key, strlen(key));
		if (i < 4096)
			buckets[h[i] & 255]++;
	}
	/* 100000 distinct keys, 64-bit hashes: no collision expected (p ~ 3e-10) */
	qsort(h, NHASH, sizeof(*h), cmp_u64);
	for (uint32_t i = 1; i < NHASH; i++)
		assert_int_not_equal(h[i], h[i - 1]);
	/* itab uses the low bits: 4096 similar keys into 256 buckets, 16 expected in each */
	for (int b = 0; b < 256; b++)
		if (buckets[b] < 2 || buckets[b] > 40)
			fail_msg("low byte %d of hash_bytes got %u of 4096 keys (16 expected)", b,
				 buckets[b]);
	free(h);
}

/* ---------------------------------------------------------------------------------------- */
/* read_file */

static void test_read_file(void **state)
{
	const char *path;
	size_t len = 99;
	char *s;

	(void)state;
	path = temp_file("hello\nworld", 11);
	s = read_file(path, &len);
	assert_non_null(s);
	assert_int_equal(len, 11);
	assert_string_equal(s, "hello\nworld");
	free(s);
	s = read_file(path, NULL); /* the length is optional */
	assert_non_null(s);
	assert_string_equal(s, "hello\nworld");
	free(s);
	unlink(path);

	/* empty file: an empty string, not NULL */
	path = temp_file("", 0);
	len = 99;
	s = read_file(path, &len);
	assert_non_null(s);
	assert_int_equal(len, 0);
	assert_int_equal(s[0], '\0');
	free(s);
	unlink(path);

	/* exactly one read buffer (4096 bytes) */
	{
		char b[4096];

		memset(b, 'x', sizeof(b));
		path = temp_file(b, sizeof(b));
		s = read_file(path, &len);
		assert_non_null(s);
		assert_int_equal(len, 4096);
		assert_memory_equal(s, b, 4096);
		assert_int_equal(s[4096], '\0');
		free(s);
		unlink(path);
	}
}

static void test_read_file_binary_large(void **state)
{
	size_t n = 300001, len = 0;
	unsigned char *data = malloc(n);
	const char *path;
	char *s;

	(void)state;
	assert_non_null(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 7 + (i >> 9)); /* NULs included */
	path = temp_file(data, n);
	s = read_file(path, &len);
	assert_non_null(s);
	assert_int_equal(len, n);
	assert_memory_equal(s, data, n);
	assert_int_equal(s[n], '\0');
	free(s);
	free(data);
	unlink(path);
}

static void test_read_file_errors(void **state)
{
	const char *dir = getenv("TMPDIR");
	char path[256];

	(void)state;
	errno = 0;
	assert_null(read_file("/nonexistent/pcmon/no-such-file", NULL));
	assert_int_equal(errno, ENOENT);
	/* a directory opens but cannot be read */
	snprintf(path, sizeof(path), "%s/pcmon-test-dir-XXXXXX", dir && dir[0] ? dir : "/tmp");
	assert_non_null(mkdtemp(path));
	errno = 0;
	assert_null(read_file(path, NULL));
	assert_int_equal(errno, EISDIR);
	rmdir(path);
}

static void test_read_file_proc(void **state)
{
	size_t len = 0;
	char *s;
	char want[32];

	(void)state;
	/* procfs files report size 0: read_file must read until EOF, not trust st_size */
	s = read_file("/proc/self/stat", &len);
	assert_non_null(s);
	snprintf(want, sizeof(want), "%d (", (int)getpid());
	assert_true(len > strlen(want));
	assert_int_equal(strncmp(s, want, strlen(want)), 0);
	assert_int_equal(strlen(s), len);
	free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* basename_of, online_cpus, clocks, log */

static void test_basename(void **state)
{
	const char *p = "/usr/lib/x86_64-linux-gnu/libc.so.6";

	(void)state;
	assert_string_equal(basename_of(p), "libc.so.6");
	assert_ptr_equal(basename_of(p), p + strlen("/usr/lib/x86_64-linux-gnu/"));
	assert_string_equal(basename_of("myprog"), "myprog");
	assert_ptr_equal(basename_of(p + 5), p + 26); /* the result points into the argument */
	assert_string_equal(basename_of("./a.out"), "a.out");
	assert_string_equal(basename_of("/bin"), "bin");
	assert_string_equal(basename_of("/"), "");
	assert_string_equal(basename_of("dir/"), "");
	assert_string_equal(basename_of(""), "");
	assert_string_equal(basename_of("[vdso]"), "[vdso]");
	assert_string_equal(basename_of("/memfd:jit (deleted)"), "memfd:jit (deleted)");
}

static void test_online_cpus(void **state)
{
	bool *mask = (bool *)1;
	int n = -1, on = 0;
	long want = sysconf(_SC_NPROCESSORS_ONLN);
	int cpu = sched_getcpu();

	(void)state;
	assert_int_equal(online_cpus(&mask, &n), 0);
	assert_non_null(mask);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		on += mask[i];
	assert_int_equal(on, want);
	assert_true(n >= on);
	assert_true(mask[n - 1]); /* n is one past the highest online CPU */
	if (cpu >= 0) {
		assert_true(cpu < n);
		assert_true(mask[cpu]); /* the CPU running this test is online */
	}
	free(mask);
}

static void test_clocks(void **state)
{
	uint64_t a = now_ns(), b;
	struct timespec ts = { 0, 2000000 };
	double w = wall_time();
	time_t t = time(NULL);

	(void)state;
	nanosleep(&ts, NULL);
	b = now_ns();
	assert_true(b >= a + 2000000);
	assert_true(b - a < 5000000000ULL);
	assert_true(w > 1.5e9); /* after 2017 */
	assert_true(w - (double)t < 2.0 && (double)t - w < 2.0);
}

static void test_log(void **state)
{
	const char *path = temp_file("", 0);
	int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_TRUNC);
	int saved_verbosity = log_verbosity;
	char *s;

	(void)state;
	assert_true(saved >= 0 && fd >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	log_verbosity = LOG_WARN;
	pr_err("failed %d", 3);
	pr_warn("%s", "careful");
	pr_info("hidden");
	pr_debug("hidden too");
	log_verbosity = LOG_DEBUG;
	pr_debug("shown at %s", "-v");
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	log_verbosity = saved_verbosity;

	s = read_file(path, NULL);
	assert_non_null(s);
	assert_string_equal(s, "pcmon: error: failed 3\n"
			       "pcmon: warning: careful\n"
			       "pcmon: debug: shown at -v\n");
	free(s);
	unlink(path);
}


/* ---- text from others */

static void test_utf8_len(void **state)
{
	(void)state;
	assert_int_equal(utf8_len("a"), 1);
	assert_int_equal(utf8_len("\xc3\xa9"), 2);		/* é */
	assert_int_equal(utf8_len("\xe2\x82\xac"), 3);		/* € */
	assert_int_equal(utf8_len("\xf0\x9f\x98\x80"), 4);	/* an emoji */
	assert_int_equal(utf8_len("\x1b"), 0);			/* ESC */
	assert_int_equal(utf8_len("\n"), 0);
	assert_int_equal(utf8_len("\x7f"), 0);			/* DEL */
	assert_int_equal(utf8_len("\xc2\x9b"), 0);		/* CSI, a C1 control */
	assert_int_equal(utf8_len("\xff"), 0);
	assert_int_equal(utf8_len("\x80"), 0);			/* a lone continuation */
	assert_int_equal(utf8_len("\xc0\xaf"), 0);		/* overlong '/' */
	assert_int_equal(utf8_len("\xe0\x80\xaf"), 0);		/* overlong */
	assert_int_equal(utf8_len("\xed\xa0\x80"), 0);		/* a surrogate */
	assert_int_equal(utf8_len("\xf4\x90\x80\x80"), 0);	/* past U+10FFFF */
	assert_int_equal(utf8_len("\xe2\x82"), 0);		/* cut short */
}

static void test_str_printable(void **state)
{
	(void)state;
	assert_true(str_printable("my prog-1.2 \xc3\xa9", 63));
	assert_false(str_printable("a\nb", 63));
	assert_false(str_printable("a\x1b[2J", 63));
	assert_false(str_printable("\xff", 63));
	assert_true(str_printable("abcd", 4));
	assert_false(str_printable("abcde", 4));
	assert_true(str_printable("", 4));
}

static void test_str_escape(void **state)
{
	char out[32];

	(void)state;
	assert_string_equal(str_escape("ok \xc3\xa9", out, sizeof(out)), "ok \xc3\xa9");
	assert_string_equal(str_escape("a\x1b[2Jb\xff", out, sizeof(out)), "a\\x1b[2Jb\\xff");
	/* cut on a boundary: never half an escape or half a character */
	assert_string_equal(str_escape("ab\x1b", out, 6), "ab");
	assert_string_equal(str_escape("a\xe2\x82\xac", out, 4), "a");
	assert_string_equal(str_escape("abc", out, 1), "");
}

static void test_str_sanitize(void **state)
{
	char s[32];

	(void)state;
	strcpy(s, "x\x1b[2Jy\xff");
	str_sanitize(s, 31);
	assert_string_equal(s, "x?[2Jy?");
	strcpy(s, "\xc3\xa9\xc3\xa9\xc3\xa9");
	str_sanitize(s, 5); /* 5 bytes: two characters, not two and a half */
	assert_string_equal(s, "\xc3\xa9\xc3\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pidtab_model),
		cmocka_unit_test(test_pidtab_exits),
		cmocka_unit_test(test_itab_basic),
		cmocka_unit_test(test_itab_many),
		cmocka_unit_test(test_itab_binary),
		cmocka_unit_test(test_itab_key_from_own_arena),
		cmocka_unit_test(test_itab_binary_dup),
		cmocka_unit_test(test_itab_struct_keys),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_grow_overflow_bytes),
		cmocka_unit_test(test_grow_overflow_count),
		cmocka_unit_test(test_hash_basic),
		cmocka_unit_test(test_hash_bit_flips),
		cmocka_unit_test(test_hash_spread),
		cmocka_unit_test(test_read_file),
		cmocka_unit_test(test_read_file_binary_large),
		cmocka_unit_test(test_read_file_errors),
		cmocka_unit_test(test_read_file_proc),
		cmocka_unit_test(test_basename),
		cmocka_unit_test(test_online_cpus),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_log),
		cmocka_unit_test(test_utf8_len),
		cmocka_unit_test(test_str_printable),
		cmocka_unit_test(test_str_escape),
		cmocka_unit_test(test_str_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
