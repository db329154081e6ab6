/* SPDX-License-Identifier: GPL-2.0-only */
/* target_: what is watched, its settings, its results, and how they read as JSON. */
#ifndef PCMON_TARGET_H
#define PCMON_TARGET_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agg.h"
#include "pcmon_bpf.h"

struct sampler;
struct pat;
struct sym;

enum target_kind { TARGET_PID, TARGET_CGROUP, TARGET_ALL };
enum target_state { TARGET_RUNNING, TARGET_PAUSED, TARGET_STOPPED, TARGET_EXITED };

struct target_crit {
	char *name;
	char *text;
	struct pat *pat;
};

struct target {
	uint32_t id;
	char name[64];
	char comm[64];
	uid_t owner;
	enum target_kind kind;
	enum target_state state;
	uint32_t pid;		/* TARGET_PID: the process given or launched */
	uint64_t cgroup_id;
	bool real, kernel, children, icase, no_inline;
	bool when_from_file;	/* when_text spans lines, ';'-terminated */
	bool dwarf;		/* user stacks unwound by the engine with CFI */
	char unwind[8];		/* as asked: fp, dwarf or auto */
	uint32_t flags;		/* PCMON_TF_* as given to BPF */
	uint64_t period_ns;
	char *when_text;
	struct pat *when;
	struct target_crit *crit;
	size_t ncrit;

	uint64_t start_ns, end_ns, paused_ns, pause_start;
	double start_wall;
	double elapsed_saved;	/* elapsed seconds of a target loaded from disk */
	int live;		/* processes of a TARGET_PID still alive */
	bool root_exited;
	int exit_status;	/* wait status of pid */

	struct agg *agg;
	uint64_t seen_samples;	/* drained from BPF (on-CPU samples + off-CPU switches) */
	uint64_t lost_oom;	/* could not be stored: out of memory */
	uint64_t handed_over;	/* processes it had picked up that a --pid target took */
	uint64_t lost_memory;	/* new stacks not kept: the owner was over her memory allowance */
	bool over_memory;	/* the owner is over it (as of the last drain) */
	struct pcmon_tstat lost_base;	/* BPF drop counters when started or zeroed */
	struct pcmon_tstat lost;	/* drops since, as last read */
	bool holds_period, holds_offcpu;
	bool dirty;		/* changed since last saved */
};

struct target *target_new(uint32_t id);
void target_free(struct target *t);
const char *target_state_name(enum target_state s);
double target_elapsed(const struct target *t);
uint64_t target_lost(const struct target *t);
void target_accumulate_lost(struct target *t, struct sampler *smp);
void target_zero(struct target *t, struct sampler *smp);

/* --critical NAME=PATTERN, as a JSON array of strings. */
int target_set_criticals(struct target *t, const cJSON *arr, cJSON **err);
/* The target's sections followed by those given at list time. */
int target_list_criticals(const struct target *t, const cJSON *arr, int icase,
			  struct agg_critical **out, size_t *n, cJSON **err);
void target_free_criticals(const struct target *t, struct agg_critical *c, size_t n);

cJSON *target_summary_json(const struct target *t);
void target_list_json(const struct target *t, const struct sym *s, struct agg_list *l,
		      const char *when, const struct agg_critical *crit, size_t ncrit, cJSON *out);

#endif
