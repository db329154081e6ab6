// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/ring.c: a BPF ring buffer's records read through one mapping
 * of its data. A ring of 64 bytes in memory laid out as the kernel writes it (an 8-byte
 * header, its length with the busy and discard bits, then the record, padded to 8) stands for
 * the map: records in order, discarded ones skipped, the one that runs past the end put
 * together whole, a record still reserved stops the read, a callback's error stops it after
 * its record.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <linux/bpf.h>
#include <string.h>

#include "ring.h"

#define SIZE 64

struct fx {
	unsigned long cons, prod;
	unsigned char data[SIZE];
	char got[8][32];	/* the records the callback saw, as strings */
	int n, fail_at;
	struct ring r;
};

static int on_rec(void *ctx, void *data, size_t len)
{
	struct fx *f = ctx;

	assert_true(len < sizeof(f->got[0]) && f->n < 8);
	memcpy(f->got[f->n], data, len);
	f->got[f->n][len] = 0;
	return ++f->n == f->fail_at ? -5 : 0;
}

/* A record of @s at the producer's position, with @flags in its header. */
static void put(struct fx *f, const char *s, uint32_t flags)
{
	size_t len = strlen(s), at = f->prod & (SIZE - 1);
	uint32_t hdr[2] = { (uint32_t)len | flags, 0 };

	memcpy(f->data + at, hdr, sizeof(hdr));
	for (size_t i = 0; i < len; i++)
		f->data[(at + BPF_RINGBUF_HDR_SZ + i) & (SIZE - 1)] = (unsigned char)s[i];
	f->prod += (BPF_RINGBUF_HDR_SZ + len + 7) & ~7UL;
}

static void init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	ring_init(&f->r, &f->cons, &f->prod, f->data, SIZE, on_rec, f);
}

static void test_records_in_order_discarded_skipped(void **state)
{
	struct fx f;

	(void)state;
	init(&f);
	put(&f, "alpha", 0);
	put(&f, "dropped", BPF_RINGBUF_DISCARD_BIT);
	put(&f, "beta", 0);
	assert_int_equal(ring_consume(&f.r), 2);
	assert_string_equal(f.got[0], "alpha");
	assert_string_equal(f.got[1], "beta");
	assert_int_equal(f.cons, f.prod);
	assert_int_equal(ring_consume(&f.r), 0);
	ring_release(&f.r);
}

static void test_record_past_the_end_whole(void **state)
{
	struct fx f;

	(void)state;
	init(&f);
	/* 40 bytes read, so the next record starts at 40 and its 20 bytes run from 48 past 63 */
	f.cons = f.prod = 40;
	put(&f, "0123456789abcdefghij", 0);
	put(&f, "after", 0);
	assert_int_equal(ring_consume(&f.r), 2);
	assert_string_equal(f.got[0], "0123456789abcdefghij");
	assert_string_equal(f.got[1], "after");
	assert_int_equal(f.cons, 40 + 32 + 16);
	ring_release(&f.r);
}

static void test_reserved_record_stops_the_read(void **state)
{
	struct fx f;
	unsigned long busy;

	(void)state;
	init(&f);
	put(&f, "one", 0);
	busy = f.prod;
	put(&f, "two", BPF_RINGBUF_BUSY_BIT);
	put(&f, "three", 0);
	assert_int_equal(ring_consume(&f.r), 1);
	assert_int_equal(f.cons, busy);
	/* submitted: the rest follows */
	*(uint32_t *)(f.data + (busy & (SIZE - 1))) &= ~BPF_RINGBUF_BUSY_BIT;
	assert_int_equal(ring_consume(&f.r), 2);
	assert_string_equal(f.got[2], "three");
	ring_release(&f.r);
}

static void test_callback_error_stops_after_its_record(void **state)
{
	struct fx f;

	(void)state;
	init(&f);
	f.fail_at = 1;
	put(&f, "first", 0);
	put(&f, "second", 0);
	assert_int_equal(ring_consume(&f.r), -5);
	assert_int_equal(f.cons, 16);
	f.fail_at = 0;
	assert_int_equal(ring_consume(&f.r), 1);
	assert_string_equal(f.got[1], "second");
	ring_release(&f.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_in_order_discarded_skipped),
		cmocka_unit_test(test_record_past_the_end_whole),
		cmocka_unit_test(test_reserved_record_stops_the_read),
		cmocka_unit_test(test_callback_error_stops_after_its_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
