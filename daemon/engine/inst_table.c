// SPDX-License-Identifier: GPL-2.0-only
/* The instruments a target can carry, and what frees their states. */
#include <stdlib.h>
#include <unistd.h>

#include "alloc.h"
#include "count.h"
#include "inst.h"
#include "inst_table.h"
#include "legs.h"
#include "sample.h"
#include "target.h"

const struct inst_ops *const inst_table[INST_MAX] = {
	[INST_SAMPLE] = &sample_ops,
	[INST_COUNT] = &count_ops,
	[INST_LEGS] = &legs_ops,
	[INST_ALLOC] = &alloc_ops,
};

void target_free(struct target *t)
{
	if (!t)
		return;
	for (int i = 0; i < INST_MAX; i++)
		if (t->inst[i])
			inst_table[i]->free(t->inst[i]);
	if (t->cgroup_fd >= 0)
		close(t->cgroup_fd);
	if (t->exe_fd >= 0)
		close(t->exe_fd);
	free(t->program);
	free(t);
}
