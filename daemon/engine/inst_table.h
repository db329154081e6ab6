/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * inst_table: every instrument a target can carry, by enum inst_id (target.h). The one
 * place that names them all: the engine reaches each through its inst_ops (inst.h).
 */
#ifndef PCMON_INST_TABLE_H
#define PCMON_INST_TABLE_H

#include "target.h"

struct inst_ops;

extern const struct inst_ops *const inst_table[INST_MAX];

/* A target and its instruments' states. */
void target_free(struct target *t);

#endif
