/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * counter_: the call-counting instrument's BPF side in userspace (bpf/count.bpf.c). Loads
 * it once, on the first target that counts, sharing the process maps (procs.h); attaches a
 * procedure's entry and return probes; reads the totals and the open activations; and
 * measures what one entry and return probe cost on this machine.
 */
#ifndef PCMON_COUNTER_H
#define PCMON_COUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pcmon_count.h"

struct bpf_link;
struct counter;
struct procs;

int counter_open(struct procs *p, struct counter **out, char *err, size_t errlen);
void counter_close(struct counter *c);

/*
 * Probes at file offset @off of @path (the procedure's entry) for @cookie: the entry probe
 * and its return probe, in every process that maps the file (BPF keeps to the target's).
 */
int counter_attach(struct counter *c, const char *path, uint64_t off, uint64_t cookie,
		   struct bpf_link **entry, struct bpf_link **ret);

/* Target @target's settings: its times wall (REAL) or its threads' CPU time (virt), and how
 * its WHEN pattern tells calls apart. The first VIRTUAL target attaches the scheduler hook
 * that stops a thread's clock off CPU; counter_target_done() on the last lets it go. */
int counter_target_cfg(struct counter *c, uint32_t target, const struct pcmon_ccfg *cfg);
void counter_target_done(struct counter *c, uint32_t target);
/* The threads' shadow stacks (task storage), for another BPF object to read (legs.bpf.c). */
int counter_shadow_fd(const struct counter *c);
/* The threads' clocks (bpf/vclock.bpf.h), kept by the scheduler hook while a target holds it
 * (counter_target_cfg()): the legs take the time preempted at their probes from them. */
int counter_clock_fd(const struct counter *c);
/* PCMON_CW_SHADOW: how the procedure of @cookie moves the pattern's state. */
int counter_set_adv(struct counter *c, uint64_t cookie, const struct pcmon_wadv *adv);
/* PCMON_CW_WALK: the user stack of id @id, innermost first, 0-terminated, into @ips (at
 * least PCMON_COUNT_STACK_DEPTH). 0 or -errno. */
int counter_stack(struct counter *c, uint32_t id, uint64_t *ips, size_t n);

/* Each total of target @target: its key, and its CPUs' parts summed. 0 or -errno. */
int counter_stats(struct counter *c, uint32_t target,
		  void (*cb)(void *ctx, const struct pcmon_ckey *k, const struct pcmon_cstat *s),
		  void *ctx);
/* Forget every total of target @target (zero, drop). */
void counter_clear(struct counter *c, uint32_t target);
/* How often a thread of target @target was found running, or switched out again, with no
 * switch in seen: its clock made up from the kernel's count of its CPU time then. */
uint64_t counter_clock_repairs(const struct counter *c, uint32_t target);
/* Steal of @target's threads that could not be placed in the rows of its calls (ns). */
uint64_t counter_unplaced_steal(const struct counter *c, uint32_t target);
/* Each open activation's key, one call per activation. */
void counter_open_activations(struct counter *c,
			      void (*cb)(void *ctx, const struct pcmon_ckey *k), void *ctx);

/*
 * What the probes cost here, in ns, by the kind of the entry's probe ([0] emulated by the
 * kernel, on a push; [1] stepped out of line), measured on each CPU (the first
 * COUNTER_COST_CPUS this process may run on), a few rounds on each:
 */
struct counter_cost {
	double pair[2];		/* an entry and its return probe: the rounds' median */
	double in[2];		/* ... the part between the two clock readings BPF takes (the
				 * rest lies in the caller's time, before and after the call) */
	double spread[2];	/* how far a round strayed from the median, at most */
	double ret;		/* of pair[0], what the return probe costs */
	int cpus;		/* the CPUs it was measured on */
};
#define COUNTER_COST_CPUS 8

/* The probes' cost (measured once, then kept). 0, or -errno (not measured). */
int counter_probe_cost(struct counter *c, struct counter_cost *out);
/* ... measured again now (kept for the next targets too). 0, or -errno (not measured). */
int counter_probe_cost_again(struct counter *c, struct counter_cost *out);

/*
 * @s added into @to: sums, the largest maximum (with its activations), and the smallest
 * minimum of those that closed some activation.
 */
static inline void counter_stat_add(struct pcmon_cstat *to, const struct pcmon_cstat *s)
{
	struct pcmon_cstat was = *to;

#define COUNTER_ADD_CSTAT(f, need) to->f += s->f;
	PCMON_CSTAT_FIELDS(COUNTER_ADD_CSTAT)
#undef COUNTER_ADD_CSTAT
	to->max_ns = was.max_ns;
	to->max_acts = was.max_acts;
	to->max_acts_xol = was.max_acts_xol;
	to->max_steal_ns = was.max_steal_ns;
	if (s->max_unplaced_ns > was.max_unplaced_ns)
		to->max_unplaced_ns = s->max_unplaced_ns;
	if (s->closed && (s->max_ns > was.max_ns || !was.closed)) {
		to->max_ns = s->max_ns;
		to->max_acts = s->max_acts;
		to->max_acts_xol = s->max_acts_xol;
		to->max_steal_ns = s->max_steal_ns;
	}
	to->min_ns = was.min_ns;
	to->min_acts = was.min_acts;
	to->min_acts_xol = was.min_acts_xol;
	to->min_steal_ns = was.min_steal_ns;
	if (s->closed && (!was.closed || s->min_ns < was.min_ns)) {
		to->min_ns = s->min_ns;
		to->min_acts = s->min_acts;
		to->min_acts_xol = s->min_acts_xol;
		to->min_steal_ns = s->min_steal_ns;
	}
}

struct counter_prog_stats {
	uint64_t run_cnt, run_time_ns;
};
/* The kernel's run-time statistics of the entry and return programs together, for every
 * target (the calibration's runs left out). */
void counter_prog_stats(struct counter *c, struct counter_prog_stats *out);

#endif
