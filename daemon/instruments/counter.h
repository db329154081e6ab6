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

/* Target @target's times: wall (REAL) or its threads' CPU time (@virt). The first VIRTUAL
 * target attaches the scheduler hook that stops a thread's clock off CPU; put() the last. */
int counter_target_mode(struct counter *c, uint32_t target, bool virt);
void counter_target_done(struct counter *c, uint32_t target);

int counter_stat(struct counter *c, uint64_t cookie, struct pcmon_cstat *out);
/* Forget every total of target @target (zero, drop). */
void counter_clear(struct counter *c, uint32_t target);
/* Each open activation's cookie, one call per activation. */
void counter_open_activations(struct counter *c, void (*cb)(void *ctx, uint64_t cookie),
			      void *ctx);

/* What one entry probe plus one return probe cost here, in ns (measured once, then kept):
 * on an instruction the kernel emulates (a push), and on one it steps out of line. 0, or
 * -errno (not measured). */
int counter_probe_cost(struct counter *c, double *emulated, double *stepped);

struct counter_prog_stats {
	uint64_t run_cnt, run_time_ns;
};
/* The kernel's run-time statistics of the entry and return programs together, for every
 * target (the calibration's runs left out). */
void counter_prog_stats(struct counter *c, struct counter_prog_stats *out);

#endif
