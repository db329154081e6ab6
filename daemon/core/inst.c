// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "count.h"
#include "inst.h"
#include "legs.h"
#include "sample.h"
#include "target.h"

/* Every instrument a target can carry, by enum inst_id (target.h). */
const struct inst_ops *const inst_table[INST_MAX] = {
	[INST_SAMPLE] = &sample_ops,
	[INST_COUNT] = &count_ops,
	[INST_LEGS] = &legs_ops,
};

void *inst_g_new(const struct inst_env *env, size_t size, char *err, size_t errlen)
{
	struct inst_env *g = calloc(1, size);

	if (!g) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*g = *env;
	return g;
}
