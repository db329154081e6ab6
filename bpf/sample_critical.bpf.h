/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The critical sections a program marks with PCMON_CRITICAL_BEGIN/END (USDT probes of
 * provider "pcmon"): which one each thread is in. Part of sample.bpf.c.
 */
#ifndef PCMON_SAMPLE_CRITICAL_BPF_H
#define PCMON_SAMPLE_CRITICAL_BPF_H

/* ---- PCMON_CRITICAL_BEGIN/END (include/pcmon/critical.h), attached per object */

static __always_inline struct pcmon_crit *crit_of_current(bool create)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct pcmon_proc *p = bpf_map_lookup_elem(&procs, &(__u32){ id >> 32 });

	if (!p)
		return NULL;
	return bpf_task_storage_get(&crit, bpf_get_current_task_btf(), NULL,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/*
 * A section is known by the address of its name: reading the string here could fail (its page
 * may never have been touched), while the engine reads it from the object file at leisure.
 */
SEC("usdt")
int BPF_USDT(crit_begin, const char *name)
{
	struct pcmon_crit *c = crit_of_current(true);

	if (!c)
		return 0;
	if (c->depth < PCMON_SECTION_NEST)
		c->hash[c->depth & (PCMON_SECTION_NEST - 1)] = (__u64)name ?: 1;
	c->depth++;
	return 0;
}

SEC("usdt")
int BPF_USDT(crit_end)
{
	struct pcmon_crit *c = crit_of_current(false);

	/* an END whose BEGIN came before pcmon attached leaves the depth at 0 */
	if (!c || !c->depth)
		return 0;
	c->depth--;
	/* (its probe's trap, next time: current_section()) */
	if (c->depth < PCMON_SECTION_NEST)
		c->end_pc[c->depth & (PCMON_SECTION_NEST - 1)] = PT_REGS_IP(ctx);
	return 0;
}

#endif /* PCMON_SAMPLE_CRITICAL_BPF_H */
