// SPDX-License-Identifier: GPL-2.0-only
/*
 * HotSpot's compressed encodings, decoded from bytes read out of a JVM: its streams of ints
 * (debug info of compiled code, line number tables) and method names. Pure, unit-tested.
 */
#include <stdio.h>
#include <string.h>

#include "hotspot.h"

static int next_byte(struct hs_stream *s)
{
	if (s->pos >= s->len) {
		s->bad = true;
		return -1;
	}
	return s->buf[s->pos++];
}

/*
 * Up to JDK 20 (CompressedReadStream): a byte below 192 is the value; else each further byte
 * adds its value times 64, 64², ... until one below 192 (five bytes at most). From JDK 21
 * (UNSIGNED5) every byte is one more than that, so that no byte is 0, and the bound is 191.
 */
uint32_t hs_read_int(struct hs_stream *s)
{
	const int x = s->x1 ? 1 : 0, lim = 192 - x;
	int b = next_byte(s), shift = 6;
	uint32_t sum;

	if (b < 0 || b < x) {
		s->bad = true;
		return 0;
	}
	sum = b - x;
	if ((int)sum < lim)
		return sum;
	for (int i = 1; i < 5; i++, shift += 6) {
		b = next_byte(s);
		if (b < 0 || b < x) {
			s->bad = true;
			return 0;
		}
		sum += (uint32_t)(b - x) << shift;
		if (b < lim + x)
			break;
	}
	return sum;
}

int32_t hs_read_signed(struct hs_stream *s)
{
	uint32_t v = hs_read_int(s);

	return (int32_t)((v >> 1) ^ -(v & 1));
}

/*
 * A pair a byte (bci += b >> 3, line += b & 7), or 0xff and two signed ints; 0 ends the
 * table. The line of @bci is that of the pair at @bci, else of the last pair before it.
 */
int hs_line_of(const uint8_t *tab, size_t len, bool x1, int bci)
{
	struct hs_stream s = { .buf = tab, .len = len, .x1 = x1 };
	int b = 0, line = 0, best_bci = 0, best = -1;

	for (;;) {
		int next = next_byte(&s);

		if (next <= 0)
			break;
		if (next == 0xff) {
			b += hs_read_signed(&s);
			line += hs_read_signed(&s);
			if (s.bad)
				break;
		} else {
			b += next >> 3;
			line += next & 7;
		}
		if (b == bci)
			return line;
		if (b < bci && b >= best_bci) {
			best_bci = b;
			best = line;
		}
	}
	return best;
}

bool hs_scope_at(const uint8_t *data, size_t len, bool x1, uint32_t offset, int entry_bci,
		 uint32_t *sender, uint32_t *method_index, int *bci)
{
	struct hs_stream s = { .buf = data, .len = len, .pos = offset, .x1 = x1 };

	if (offset >= len)
		return false;
	*sender = hs_read_int(&s);
	*method_index = hs_read_int(&s);
	*bci = (int)hs_read_int(&s) + entry_bci;
	return !s.bad && *sender < len;
}

void hs_proc_name(const char *klass, size_t klen, const char *method, size_t mlen, char *out,
		  size_t len)
{
	size_t at = 0;

	if (!len)
		return;
	for (size_t i = 0; i < klen && at + 1 < len; i++)
		out[at++] = klass[i] == '/' ? '.' : klass[i];
	if (at + 1 < len)
		out[at++] = '.';
	for (size_t i = 0; i < mlen && at + 1 < len; i++)
		out[at++] = method[i];
	out[at] = 0;
}
