/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stacks_: a listing's counted samples as symbolized stacks, the view the exports are made
 * from (pprof, folded, flamegraph, json; docs/exports.md). It sees each charge of agg_list()
 * through the visitor, so WHEN, critical sections and --no-inline apply exactly as in LIST:
 * the samples of a section are its own stack `[critical:NAME]`, and the frames of a
 * procedure's samples end at the frame LIST charged.
 *
 * The reply's "profile" object, deduplicated the way profile.proto is:
 *   objects:   [{name, path, build_id, kernel}]
 *   functions: [{name, module, file, line}]               line: where it starts
 *   locations: [{object, address ("0x..."), kernel, lines: [[function, line], ...]}]
 *              lines innermost first: the inline chain, the function itself last
 *   samples:   [{count, ns, kind, pid, tid, thread, charged, section, locations: [leaf first]}]
 *              with --by also group (its root frame: "comm NAME", "process PID NAME", ...)
 *              and, by process or comm, comm; by cgroup, cgroup (its path)
 */
#ifndef PCMON_STACKS_H
#define PCMON_STACKS_H

#include <cJSON.h>

#include "agg.h"

struct stacks;

struct groups_namer;

/* For a listing with options @lo (its declared sections name the samples charged to them;
 * @nm names the processes, threads and cgroups), each sample with its group when @by (enum
 * groups_by) is not -1. */
/* Each sample names its process and cgroup too, --by or not (pcmond's HTTP exports). */
void stacks_labels(struct stacks *x);
struct stacks *stacks_new(const struct sym *s, const struct agg_list_opts *lo,
			  const struct groups_namer *nm, int by);
void stacks_free(struct stacks *x);
/* The visitor for agg_list_opts.visit (ctx: the stacks). */
void stacks_visit(void *ctx, const struct agg_visit *v);
/* Move "profile" into @out; -ENOMEM if a visit or this ran out of memory. */
int stacks_json(struct stacks *x, cJSON *out);

#endif
