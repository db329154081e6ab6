// SPDX-License-Identifier: GPL-2.0-only
/*
 * The line of an instruction from a code object's line table, in each encoding CPython has
 * used (python.h, py_line_in()): 3.8 and 3.9's co_lnotab, 3.10's co_linetable, and the
 * location table of 3.11 on. Pure functions, apart from reading any process.
 */
#include <stddef.h>
#include <stdint.h>

#include "python.h"

/* ---- the 3.11 location table (Objects/locations.md in CPython's sources) */

static int varint(const uint8_t *t, size_t len, size_t *i)
{
	unsigned int v = 0, shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 28)
			return 0;
		b = t[(*i)++];
		v |= (unsigned int)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int svarint(const uint8_t *t, size_t len, size_t *i)
{
	unsigned int v = varint(t, len, i);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/*
 * Each entry starts with a byte whose top bit is set: bits 3-6 its kind, bits 0-2 how many
 * code units (of two bytes) it covers, less one. Kind 15 has no line; 14 (long) and 13 (no
 * columns) carry a signed line delta; 10-12 a delta of 0-2; the short forms 0-9 stay on the
 * line. The other bytes of an entry (columns, end lines) are skipped.
 */
int py_line_of(const uint8_t *tab, size_t len, int firstlineno, int addr)
{
	int line = firstlineno, start = 0;
	size_t i = 0;

	if (addr < 0)
		return firstlineno;
	while (i < len) {
		uint8_t b = tab[i++];
		int kind = b >> 3 & 15, end = start + ((b & 7) + 1) * 2, delta = 0;
		size_t next;

		if (!(b & 128))
			return -1; /* not at an entry: a table we cannot read */
		if (kind == 13 || kind == 14) {
			size_t j = i;

			delta = svarint(tab, len, &j);
		} else if (kind >= 10 && kind <= 12) {
			delta = kind - 10;
		}
		line += delta;
		for (next = i; next < len && !(tab[next] & 128); next++)
			;
		if (addr < end)
			return kind == 15 ? -1 : line;
		i = next;
		start = end;
	}
	return -1;
}

/*
 * 3.8, 3.9: co_lnotab, pairs of bytes: how far the next line's code starts (bytes, unsigned)
 * and how many lines on it is (signed: a loop's test comes back up). An instruction is on the
 * line reached by the pairs that start at or before it (Objects/lnotab_notes.txt).
 */
int py_line_lnotab(const uint8_t *tab, size_t len, int firstlineno, int addr)
{
	int line = firstlineno, at = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		at += tab[i];
		if (at > addr)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

/*
 * 3.10: co_linetable, pairs of bytes: a range of code (bytes, unsigned) and the line delta
 * of that range (signed), -128 for a range with no line. A pair with a delta of 0 goes on with
 * the range before it, whether it had a line or not (Objects/lnotab_notes.txt of 3.10).
 */
int py_line_310(const uint8_t *tab, size_t len, int firstlineno, int addr)
{
	int line = firstlineno, start = 0;
	bool has = true;

	if (addr < 0)
		return firstlineno;
	for (size_t i = 0; i + 1 < len; i += 2) {
		int8_t d = (int8_t)tab[i + 1];
		int end = start + tab[i];

		if (d == -128) {
			has = false;
		} else if (d) {
			line += d;
			has = true;
		}
		if (addr < end)
			return has ? line : -1;
		start = end;
	}
	return -1;
}

int py_line_in(int kind, const uint8_t *tab, size_t len, int firstlineno, int addr)
{
	switch (kind) {
	case PY_LINES_LNOTAB:
		return py_line_lnotab(tab, len, firstlineno, addr);
	case PY_LINES_310:
		return py_line_310(tab, len, firstlineno, addr);
	default:
		return py_line_of(tab, len, firstlineno, addr);
	}
}
