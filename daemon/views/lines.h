/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * pcs_: where inside procedures the time goes: the per-line listing (docs/lines.md) and
 * profil's histogram (docs/lines.md), both from the innermost user pc of every counted sample a
 * listing charges to a procedure or to foreignPcs (a critical section's samples are the
 * section's, as in LIST). A kernel-mode sample's innermost user pc is its system call's
 * site. The pcs are gathered through agg_list's visitor, so --when applies first.
 */
#ifndef PCMON_LINES_H
#define PCMON_LINES_H

#include <cJSON.h>

#include "agg.h"

struct pcs;

struct pcs *pcs_new(const struct sym *s);
void pcs_free(struct pcs *x);
void pcs_visit(void *ctx, const struct agg_visit *v);

/*
 * "lines" for procedure @proc ("module.name" or "name") into @out: its samples by source
 * line, hottest first, each line with its addresses, their counts and up to 16 bytes of
 * code. 0, or -1 with the error in *err.
 */
int pcs_lines_json(struct pcs *x, const char *proc, uint64_t counted, cJSON *out, cJSON **err);

/*
 * "profil" into @out: @offset is "module+0xOFF", an address of the program @program, or a
 * procedure; @bufsiz 0: just cover the procedure. 0, or -1 with the error in *err.
 */
int pcs_profil_json(struct pcs *x, const char *offset, uint32_t scale, uint64_t bufsiz,
		    const char *program, cJSON *out, cJSON **err);

#define PCS_MAX_BUFSIZ (2u << 20) /* 1 Mi cells */

#endif
