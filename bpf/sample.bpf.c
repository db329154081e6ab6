// SPDX-License-Identifier: GPL-2.0-only
/*
 * The sampling instrument's kernel side: timer samples (cpu-clock perf events) and off-CPU
 * intervals (sched_switch), charged to targets and aggregated in-kernel, and the marked
 * critical sections (USDT) they are taken in. Which target a task belongs to comes from the
 * shared process maps (procs.bpf.h, kept by procs.bpf.c).
 *
 * Counts are double-buffered: `gen` selects which of two counts maps the programs write. The
 * engine flips `gen`, waits for an RCU grace period (every program that could have read the
 * old value has then returned) and drains the idle map with nothing in flight, so no sample
 * is lost or counted twice.
 *
 * A counts key names its stacks by a 64-bit hash of their frames. The frames go to the
 * engine through a ring buffer, once per key and buffer: when a key is new to the map being
 * written, its stacks are sent tagged with that map's number, so by the time the engine
 * drains a map it has every stack the map's keys name, and forgets them after. A ring costs
 * neither a lock nor an allocation per stack, and carries only the frames a stack has; a
 * hash map of stacks cost both, once to store and once to delete, for every stack.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "pcmon_sample.h"
#include "procs.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "sample_maps.bpf.h"
#include "sample_v8.bpf.h"
#include "sample_python.bpf.h"
#include "sample_dwarf.bpf.h"
#include "sample_cfi.bpf.h"
#include "sample_real.bpf.h"
#include "sample_critical.bpf.h"

/*
 * The set of tailed-leg instances the thread has open (pcmon_tail.h), 0: none. Costs a
 * sample one array read while no target tails a leg.
 */
static __always_inline __u32 tail_set(struct task_struct *task, __u32 target)
{
	struct pcmon_pglobal *pg;
	struct pcmon_tailth *th;
	__u32 zero = 0, *gen;

	pg = bpf_map_lookup_elem(&pglobal, &zero);
	if (!pg || !pg->ntailed || !task->bpf_storage)
		return 0;
	th = bpf_task_storage_get(&tailth, task, NULL, 0);
	gen = bpf_map_lookup_elem(&tailgen, &target);
	return th && gen && th->target == target && th->gen == *gen ? th->set : 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), missed;
	struct pcmon_key key = {};
	struct pcmon_gstat *gs;
	struct pcmon_proc *p;
	struct pcmon_tcfg *cfg;
	struct scratch *sc;
	__u32 zero = 0;
	bool own;

	missed = ticks_missed(ctx, bpf_get_current_task_btf(), &own);
	gs = gstats();
	if (gs) {
		gs->samples_seen++;
		gs->ticks_missed += missed;
	}
	p = proc_of(id >> 32);
	if (!p || (p->flags & PCMON_PF_EXEC_WAIT)) {
		if (real_on)
			tick_for_unwatched(ctx);
		return 0;
	}
	cfg = active_cfg(p->target);
	if (!cfg || cfg->period_ns != ctx->sample_period)
		return 0;
	if (!may_watch(bpf_get_current_task_btf(), cfg, p->target))
		return 0;
	if ((cfg->flags & PCMON_TF_REAL) && tick_not_ours(ctx, bpf_get_current_task_btf(), p->target))
		return 0;
	note_sampled(p, id >> 32);
	if (own) {
		struct pcmon_tstat *ts = bpf_map_lookup_elem(&tstat, &p->target);

		if (ts)
			ts->ticks_missed += missed;
	}
	sc = bpf_map_lookup_elem(&scratch_map, &zero);
	if (!sc)
		return 0;

	key.target = p->target;
	key.pid = id >> 32;
	key.tid = (__u32)id;
	note_thread(key.tid, bpf_get_current_task_btf());
	key.epoch = p->epoch;
	key.kind = (__s64)PT_REGS_IP(&ctx->regs) < 0 ? PCMON_KIND_ONCPU_KMODE : PCMON_KIND_ONCPU;
	key.section = current_section(bpf_get_current_task_btf(), key.kind == PCMON_KIND_ONCPU_KMODE);
	key.flags = marks_pending(p);
	key.cgroup = bpf_get_current_cgroup_id();
	key.tset = tail_set(bpf_get_current_task_btf(), p->target);
	key.slice = slice_stamp(cfg->slice_ns);
	if ((cfg->flags & PCMON_TF_DWARF) ? !dwarf_walked(bpf_get_current_task_btf(), &key,
							 &sc->urec.st) : is_jvm(key.pid, key.epoch)) {
		emit_dwarf(ctx, bpf_get_current_task_btf(), &key, PCMON_DS_SAMPLE, 0, 0,
			   cfg->flags & PCMON_TF_KERNEL);
		return 0;
	}
	if (!(cfg->flags & PCMON_TF_DWARF))
		key.uerr = capture_user(ctx, &key, &sc->urec.st);
	if (!key.uerr)
		py_append(bpf_get_current_task_btf(), &key, key.tid, &sc->urec.st);
	sc->krec.st.len = 0;
	if (cfg->flags & PCMON_TF_KERNEL)
		key.kerr = capture(ctx, &sc->krec.st, 0);
	sc->urec.key = stack_hash(&sc->urec.st);
	sc->krec.key = stack_hash(&sc->krec.st);
	record_current(&key, &sc->urec, &sc->krec, 0);
	return 0;
}
