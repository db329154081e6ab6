/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * target_: what is watched (a process and its descendants, a cgroup, every task), who owns
 * it, and where it is in its life. What it collects belongs to its instruments (inst.h).
 */
#ifndef PCMON_TARGET_H
#define PCMON_TARGET_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum target_kind { TARGET_PID, TARGET_CGROUP, TARGET_ALL };
enum target_state { TARGET_RUNNING, TARGET_PAUSED, TARGET_STOPPED, TARGET_EXITED };

/* Instruments a target can carry: inst_table[] (inst_table.c) in this order. */
enum inst_id { INST_SAMPLE, INST_COUNT, INST_LEGS, INST_ALLOC, INST_MAX };

struct target {
	uint32_t id;
	char name[64];
	char comm[64];
	bool name_is_comm;	/* no --name: the name follows its process's exec */
	uid_t owner;
	enum target_kind kind;
	enum target_state state;
	uint32_t pid;		/* TARGET_PID: the process given or launched */
	uint64_t cgroup_id;
	int cgroup_fd;		/* TARGET_CGROUP: its directory, for its processes' list (else -1) */
	bool children;		/* descendants started later are watched too */
	bool published;		/* served over pcmond's HTTP server (root's, docs/fleet.md) */
	bool exec_wait;		/* pcmon run: the process is held before its exec */
	int exe_fd;		/* ... and the file it will exec, while it starts; a --cgroup or
				 * --all target's --program, for its life (nodes added later are
				 * found there); else -1 */
	const char *exe_name;	/* ... its name */
	char *program;		/* the --program file's name (owned: exe_name points here) */
	uint32_t flags;		/* PCMON_TF_ACTIVE, PCMON_TF_CHILDREN as given to BPF */

	uint64_t start_ns, end_ns, paused_ns, pause_start;
	double start_wall;
	double elapsed_saved;	/* elapsed seconds of a target loaded from disk */
	int live;		/* processes of a TARGET_PID still alive */
	bool root_exited;
	int exit_status;	/* wait status of pid */
	uint64_t handed_over;	/* processes it had picked up that a --pid target took */
	bool over_memory;	/* the owner is over her memory allowance (as of the last drain):
				 * instruments keep counting what they have, and keep nothing new */
	bool dirty;		/* changed since last saved */

	/* each instrument's state (NULL: the target does not carry it), by enum inst_id */
	void *inst[INST_MAX];
};

struct target *target_new(uint32_t id);
const char *target_state_name(enum target_state s);
const char *target_kind_name(enum target_kind k);
double target_elapsed(const struct target *t);
/* Zero: the clock starts again now (the instruments zero their own results). */
void target_restart_clock(struct target *t);
/* id, name, owner, kind, pid, state, elapsed, children, wait status. */
void target_facts_json(const struct target *t, cJSON *o);

#endif
