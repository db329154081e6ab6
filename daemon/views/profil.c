// SPDX-License-Identifier: GPL-2.0-only
/*
 * profil_: profil(2)'s cells (profil.h). A pc is in cell i when
 * i * 2^17 <= (pc - offset) * scale < (i + 1) * 2^17, the formula's two shifts made one.
 */
#include "profil.h"

#define CELL_UNITS (1ULL << 17) /* ">> 16" then "/ 2" */

bool profil_cell(uint64_t pc, uint64_t offset, uint32_t scale, uint64_t ncells, uint64_t *cell)
{
	unsigned __int128 x;

	if (PROFIL_OFF(scale) || scale > PROFIL_SCALE_MAX || pc < offset || !ncells)
		return false;
	if (scale == 2) {
		*cell = 0;
		return true;
	}
	x = (unsigned __int128)(pc - offset) * scale / CELL_UNITS;
	if (x >= ncells)
		return false;
	*cell = (uint64_t)x;
	return true;
}

/* The first distance from the offset that lands in cell @i: ceil(i * 2^17 / scale). */
static uint64_t cell_start(uint64_t i, uint32_t scale)
{
	unsigned __int128 u = (unsigned __int128)i * CELL_UNITS;

	return (uint64_t)((u + scale - 1) / scale);
}

void profil_cell_range(uint64_t i, uint64_t offset, uint32_t scale, uint64_t *lo, uint64_t *hi)
{
	if (scale == 2) {
		*lo = offset;
		*hi = UINT64_MAX;
		return;
	}
	*lo = offset + cell_start(i, scale);
	*hi = offset + cell_start(i + 1, scale);
}

uint64_t profil_cells_for(uint64_t len, uint32_t scale)
{
	if (PROFIL_OFF(scale) || !len)
		return 0;
	if (scale == 2)
		return 1;
	return (uint64_t)((unsigned __int128)(len - 1) * scale / CELL_UNITS) + 1;
}
