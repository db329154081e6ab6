/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * profil_: the cell arithmetic of profil(2) (docs/lines.md). With @scale a 16-bit fixed-point
 * fraction, a pc falls in cell (((pc - offset) * scale) >> 16) / 2 of a buffer of 2-byte
 * cells: 0x10000 is one cell per 2 bytes of code, 0x8000 one per 4. As in 4.2BSD, scale 2
 * puts the whole region from @offset in cell 0, and scale 0 or 1 turns profiling off.
 * pcmon's cells are 64-bit; the arithmetic is the kernel's.
 */
#ifndef PCMON_PROFIL_H
#define PCMON_PROFIL_H

#include <stdbool.h>
#include <stdint.h>

#define PROFIL_SCALE_MAX 0x10000
#define PROFIL_OFF(scale) ((scale) < 2)

/* The cell of @pc in a buffer of @ncells cells: true, or false if it is outside. */
bool profil_cell(uint64_t pc, uint64_t offset, uint32_t scale, uint64_t ncells, uint64_t *cell);
/* The pcs cell @i covers: [*lo, *hi); scale 2's cell 0 reaches to UINT64_MAX. */
void profil_cell_range(uint64_t i, uint64_t offset, uint32_t scale, uint64_t *lo, uint64_t *hi);
/* How many cells cover @len bytes of code from the offset. */
uint64_t profil_cells_for(uint64_t len, uint32_t scale);

#endif
