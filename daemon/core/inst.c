// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <stdlib.h>

#include "inst.h"

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
