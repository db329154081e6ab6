/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * procs_: the userspace half of the shared process-lifecycle BPF object (bpf/procs.bpf.c).
 * Loads it once, keeps its programs attached (fork, exec, exit, the dynamic linker), and
 * owns the maps every instrument's programs read to find a task's target: an instrument's
 * object takes them over before it loads (procs_share()).
 */
#ifndef PCMON_PROCS_USER_H
#define PCMON_PROCS_USER_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "pcmon_procs.h"

struct bpf_object;
struct bpf_program;
struct procs;


/*
 * 0 or -errno; on failure @err gets a one-line reason saying what to do. @bpf_stats: turn on
 * the kernel's run-time statistics of BPF programs while open (every program pays for them).
 */
int procs_open(bool bpf_stats, struct procs **out, char *err, size_t errlen);
void procs_close(struct procs *p);

/* Make @obj (opened, not loaded) use the shared maps it declares (procs.bpf.h). */
int procs_share(struct procs *p, struct bpf_object *obj, char *err, size_t errlen);

/*
 * Lifecycle events (struct pcmon_event: fork, exec, objects loaded, exit): the descriptor to
 * poll, and the consumer, which hands each to @cb.
 */
int procs_events_fd(struct procs *p);
typedef void (*procs_event_cb)(void *ctx, const struct pcmon_event *ev);
int procs_poll(struct procs *p, procs_event_cb cb, void *ctx);
/* The probe events ring (critical-section probes pending, probes.h). */
int procs_probe_events_fd(struct procs *p);
/* Files whose critical-section probes are in place (struct pcmon_file_key: change time) */
int procs_probe_files_fd(struct procs *p);

/* BPF's view of target @id (pcmon_tcfg); clear: forget it and its processes and cgroups. */
int procs_target_set(struct procs *p, uint32_t id, const struct pcmon_tcfg *cfg);
void procs_target_clear(struct procs *p, uint32_t id);
int procs_proc_add(struct procs *p, uint32_t tgid, uint32_t target, uint32_t flags,
		   uint32_t *had);
int procs_proc_epoch(struct procs *p, uint32_t tgid, uint32_t *epoch);
/* What image @epoch of @tgid mapped for execution as it exited (on_exit, procs.bpf.c): at
 * most @max into @v, how many; or -errno (none noted). */
struct procmaps_vma;
int procs_exit_maps(struct procs *p, uint32_t tgid, uint32_t epoch, struct procmaps_vma *v,
		    int max);
int procs_cgroup_add(struct procs *p, uint64_t cgid, uint32_t target);
void procs_all_set(struct procs *p, uint32_t target);
void procs_tstat(struct procs *p, uint32_t target, struct pcmon_tstat *sum);
void procs_gstat(struct procs *p, struct pcmon_gstat *sum);
int procs_probes_ack(struct procs *p, uint32_t tgid, uint32_t seq);

/* Whether BPF programs' runs and run time are being counted (bpf_stats, or the sysctl). */
bool procs_bpf_stats(const struct procs *p);
/* The lifecycle programs' entries in status's "programs" array. */
void procs_programs_json(struct procs *p, cJSON *arr);
/* One program's entry in such an array (its run-time statistics), for every object's. */
void procs_program_json(struct bpf_program *prog, bool attached, cJSON *arr);

/* Tailed legs of all targets, more or fewer by @delta (BPF's pglobal.tails: while 0, samples
 * do not look for a thread's tailed instances, pcmon_tail.h). */
void procs_tails(struct procs *p, int delta);
/* Target @target's tails start or stop: what threads hold of its tails before is stale. */
void procs_tail_gen(struct procs *p, uint32_t target);

#endif
