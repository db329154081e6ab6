/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The call counter's shadow stacks, one per thread (bpf/count.bpf.c), declared once for the
 * two objects that use them: the legs' counter shares the map (WHEN at nodes and legs).
 */
#ifndef PCMON_CSTACK_BPF_H
#define PCMON_CSTACK_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pcmon_cstack);
} cstack SEC(".maps");

#endif /* PCMON_CSTACK_BPF_H */
