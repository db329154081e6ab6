// SPDX-License-Identifier: GPL-2.0-only
/*
 * A target's call counting attached, and its life: the procedures the patterns name found in
 * the objects of its processes (funcs.c) and probed (counter.c), with what their probes cost;
 * the objects a new image or the dynamic linker maps searched too; the probes' cost measured
 * again as it stops; its totals zeroed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "count.h"
#include "count_int.h"
#include "counter.h"
#include "demangle.h"
#include "funcs.h"
#include "near.h"
#include "pat.h"
#include "proto.h"
#include "slices.h"
#include "sym.h"
#include "target.h"
#include "util.h"
#include "when.h"

#define COUNT_MAX_CTX 256	/* context procedures a shadow-stack pattern may probe */

static uint64_t fn_cookie(const struct target *t, const struct count *ct, const struct count_fn *fn)
{
	uint64_t c = count_cookie(t->id, fn - ct->fns, fn->xol);

	return fn->ctx ? c | PCMON_COUNT_CTX : c;
}

/* PCMON_CW_SHADOW: how @fn moves the pattern's state, into BPF before its probes attach. */
static int set_adv(struct count_g *g, const struct target *t, struct count *ct,
		   const struct count_fn *fn)
{
	struct pat_frame fr = { .module = fn->module, .proc = fn->name };
	char base[512];
	struct pcmon_wadv adv;

	if (ct->when_mode != PCMON_CW_SHADOW)
		return 0;
	if (strchr(fn->name, '(') && dm_base(fn->name, base, sizeof(base)))
		fr.base = base; /* a C++ name is also matched without its parameters */
	when_adv(ct->when, &ct->wpat, &fr, &adv);
	return counter_set_adv(g->ctr, fn_cookie(t, ct, fn), &adv);
}

static bool obj_seen(struct count *ct, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < ct->nobjs; i++)
		if (ct->objs[i].dev == dev && ct->objs[i].ino == ino)
			return true;
	return false;
}

/*
 * Probes on the procedures the patterns name in the objects process @pid maps that this
 * target has not searched yet. @late: the process is already running them (an object
 * loaded at start-up or by dlopen, found after the fact): calls before now are not seen.
 * 0, -ENOENT (nothing found and @must), or the error in *rep.
 */
static int attach_process(struct count_g *g, struct target *t, struct count *ct, uint32_t pid,
			  bool late, cJSON **rep)
{
	char exe_path[64];
	struct func *f = NULL;
	size_t n = 0, cap = 0, objects = 0, counted = 0;
	size_t npats = ct->npats + (ct->when_mode == PCMON_CW_SHADOW ? ct->nctx : 0);
	int r = 0;

	snprintf(exe_path, sizeof(exe_path), "/proc/self/fd/%d", t->exe_fd);
	/* the counted procedures first: one the pattern also names is counted, not context */
	for (size_t p = 0; p < npats && !r; p++) {
		const struct pat *pat = p < ct->npats ? ct->pats[p] : ct->ctx_pats[p - ct->npats];
		size_t before = n;

		if (p == ct->npats)
			counted = n;
		if (pid)
			r = funcs_find_near(pid, pat, &f, &n, &cap, p < ct->npats ? &objects : NULL,
					    p < ct->npats && ct->near && !ct->matched[p] ? &ct->near[p]
										: NULL);
		else /* the file the held process is about to exec */
			r = funcs_find_file(exe_path, t->exe_name, pat, &f, &n, &cap);
		if (p < ct->npats)
			ct->matched[p] |= n > before;
	}
	if (ct->nctx == 0 || ct->when_mode != PCMON_CW_SHADOW)
		counted = n;
	/* names of many procedures (a module, a wide glob) cost a probe each on every call of
	 * any: past COUNT_MAX_CTX, the stack is walked instead (before any probe is on) */
	if (!r && ct->when_mode == PCMON_CW_SHADOW && !ct->nfns && n - counted > COUNT_MAX_CTX) {
		ct->when_mode = PCMON_CW_WALK;
		snprintf(ct->when_why, sizeof(ct->when_why),
			 "its names name %zu procedures, more than %d to probe", n - counted,
			 COUNT_MAX_CTX);
		funcs_free(f + counted, n - counted);
		n = counted;
	}
	if (!pid)
		objects = 1;
	if (r) {
		if (rep)
			*rep = proto_error(1, "--count: cannot read the objects of pid %u: %s", pid,
					   strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < n && !r; i++) {
		struct count_fn *fn;

		if (obj_seen(ct, f[i].dev, f[i].ino))
			continue; /* searched already: its probes are on */
		if (ct->nfns >= ct->max_probes) {
			if (rep)
				*rep = proto_error(2, "--count: the patterns name %zu procedures or more, more than --max-probes %u: name fewer",
						   ct->nfns + 1, ct->max_probes);
			r = -E2BIG;
			break;
		}
		if (GROW(ct->fns, ct->cap_fns, ct->nfns + 1)) {
			r = -ENOMEM;
			break;
		}
		fn = &ct->fns[ct->nfns];
		*fn = (struct count_fn){ .module = strdup(f[i].module), .name = strdup(f[i].name),
					 .vaddr = f[i].vaddr, .late = late, .xol = f[i].xol,
					 .ctx = i >= counted };
		ct->ctx_late |= fn->ctx && late;
		r = set_adv(g, t, ct, fn);
		if (!r)
			r = counter_attach(g->ctr, f[i].path, f[i].offset, fn_cookie(t, ct, fn),
					   &fn->entry, &fn->ret);
		if (r) {
			if (rep)
				*rep = proto_error(1, "--count: cannot probe %s.%s: %s", f[i].module,
						   f[i].name, strerror(-r));
			free(fn->module);
			free(fn->name);
			break;
		}
		ct->nfns++;
	}
	/* an object is searched once per target: its probes serve every process mapping it */
	for (size_t i = 0; i < n && !r; i++) {
		if (obj_seen(ct, f[i].dev, f[i].ino))
			continue;
		if (GROW(ct->objs, ct->cap_objs, ct->nobjs + 1)) {
			r = -ENOMEM;
			break;
		}
		ct->objs[ct->nobjs].dev = f[i].dev;
		ct->objs[ct->nobjs++].ino = f[i].ino;
	}
	ct->searched += objects;
out:
	funcs_free(f, n);
	free(f);
	return r;
}

/* The target's settings in BPF: its clock and how its calls are classed. */
static int set_cfg(struct count_g *g, const struct target *t, const struct count *ct)
{
	struct pcmon_ccfg cfg = { .virt = ct->virt, .when = ct->when ? ct->when_mode : 0,
				  .wpat = ct->wpat };

	return counter_target_cfg(g->ctr, t->id, &cfg);
}

/*
 * The probes' cost as measured (@c), for @ct's times. Where a pair's cost falls, between
 * the call and its caller: the calibration's inner part (BPF's readings of empty calls,
 * less the bare call), give or take half of it. Flat calls of 100 ns to 100 us, at
 * real-time priority (nothing preempting them), came out 50-250 ns a call above their
 * own clock, which misses the call and its last reading: the whole inner part is taken.
 */
static void cost_set(struct count *ct, const struct counter_cost *c)
{
	ct->cost_ns = c->pair[0];
	ct->cost_xol_ns = c->pair[1];
	for (int k = 0; k < 2; k++) {
		ct->in_ns[k] = c->in[k];
		ct->split_err_ns[k] = c->in[k] / 2;
		ct->spread_ns[k] = c->spread[k];
	}
	ct->ret_ns = c->ret;
	ct->cost_cpus = c->cpus;
}

int count_attach_target(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct count_g *g = gp;
	struct count *ct = st;
	struct counter_cost cost;
	int r;

	if (t->kind != TARGET_PID) {
		*rep = proto_error(2, "--count needs --pid or a command: a cgroup's or every task's objects are not known in advance");
		return -EINVAL;
	}
	if (!g->ctr) {
		r = counter_open(g->env.procs, &g->ctr, g->err, sizeof(g->err));
		if (r) {
			*rep = proto_error(1, "%s", g->err);
			return r;
		}
	}
	r = counter_probe_cost(g->ctr, &cost);
	cost_set(ct, &cost);
	if (r)
		pr_warn("call counting: cannot measure the probes' cost (%s): times include it",
			strerror(-r));
	/* a running process has entered procedures before their probes were on: the shadow
	 * stack does not hold them, its stacks are walked */
	if (ct->when_mode == PCMON_CW_SHADOW && !t->exec_wait) {
		ct->when_mode = PCMON_CW_WALK;
		snprintf(ct->when_why, sizeof(ct->when_why),
			 "the process was running before the probes were on");
	}
	r = set_cfg(g, t, ct);
	if (r) {
		*rep = proto_error(1, "--count%s: cannot set up BPF: %s", ct->virt ? " --virtual" : "",
				   strerror(-r));
		return r;
	}
	/* pcmon run: the process is held before exec: the command's own file is probed now,
	 * its libraries as the dynamic linker maps them (count_event) */
	if (t->exec_wait && t->exe_fd < 0) {
		*rep = proto_error(1, "--count: cannot look into the command's file before it runs");
		return -ENOENT;
	}
	r = attach_process(g, t, ct, t->exec_wait ? 0 : t->pid, false, rep);
	if (!r && ct->when_mode == PCMON_CW_WALK)
		r = set_cfg(g, t, ct); /* attach_process() may have chosen the walk */
	/* a command's libraries are not loaded yet: what its patterns name there is found as
	 * the dynamic linker maps them, and a pattern that never names anything is said so in
	 * the table; a running process has everything it has loaded to search now */
	if (!r && !ct->nfns && !t->exec_wait) {
		char near[4 * NEAR_NAME_MAX] = "";

		near_text(&ct->near[0], near, sizeof(near));
		*rep = proto_error(1, "--count: no procedure matches %s%s in the %zu objects of pid %u%s",
				   ct->patterns[0], ct->npats > 1 ? " (or the other patterns)" : "",
				   ct->searched, t->pid, near);
		r = -ENOENT;
	}
	return r;
}

/* A new image, or objects the dynamic linker mapped: search them too (a command's own file
 * was searched before it started, and is not searched again). */
void count_attach_event(void *gp, struct target *t, void *st, const struct pcmon_event *ev)
{
	struct count_g *g = gp;
	struct count *ct = st;

	if (!g->ctr || (t->state != TARGET_RUNNING && t->state != TARGET_PAUSED))
		return;
	/* the process runs on while its event comes here: what is probed now was running */
	if (ev->type == PCMON_EV_EXEC || ev->type == PCMON_EV_DLOPEN)
		attach_process(g, t, ct, ev->pid, true, NULL);
	if (!ct->when || ct->when_mode != PCMON_CW_WALK)
		return;
	/* the walked stacks are named through the process's address map: taken as it maps
	 * objects, and its stacks classed before an exit (or exec) lets the map go */
	if (ev->type == PCMON_EV_FORK || ev->type == PCMON_EV_EXEC)
		sym_proc_load(g->env.sym, ev->pid, ev->epoch);
	else if (ev->type == PCMON_EV_DLOPEN)
		sym_proc_reload(g->env.sym, ev->pid, ev->epoch, ev->ts);
	else if (ev->type == PCMON_EV_EXIT)
		count_when_collect(g, t, ct);
}

/*
 * The probes' cost as measured when the target started and again as it stops: the
 * machine's load changed in between, and so did what a hit costs. Their mean, and a spread
 * that reaches both.
 */
static void cost_again(struct count_g *g, struct count *ct)
{
	struct counter_cost a = { .pair = { ct->cost_ns, ct->cost_xol_ns }, .ret = ct->ret_ns,
				  .cpus = ct->cost_cpus }, b;

	if (!ct->cost_cpus || counter_probe_cost_again(g->ctr, &b))
		return;
	for (int k = 0; k < 2; k++) {
		a.in[k] = (ct->in_ns[k] + b.in[k]) / 2;
		a.spread[k] = MAX(ct->spread_ns[k], b.spread[k]) + fabs(a.pair[k] - b.pair[k]) / 2;
		a.pair[k] = (a.pair[k] + b.pair[k]) / 2;
	}
	a.ret = (a.ret + b.ret) / 2;
	cost_set(ct, &a);
}

void count_attach_stop(void *gp, struct target *t, void *st)
{
	struct count_g *g = gp;
	struct count *ct = st;

	count_when_collect(g, t, ct);
	if (g->ctr && !ct->detached)
		cost_again(g, ct);
	for (size_t i = 0; i < ct->nfns; i++) {
		bpf_link__destroy(ct->fns[i].entry);
		bpf_link__destroy(ct->fns[i].ret);
		ct->fns[i].entry = ct->fns[i].ret = NULL;
	}
	if (g->ctr && !ct->detached) {
		counter_clear(g->ctr, t->id);
		counter_target_done(g->ctr, t->id);
	}
	ct->detached = true;
}

void count_attach_zero(void *gp, struct target *t, void *st)
{
	struct count_g *g = gp;
	struct count *ct = st;

	if (g->ctr && !ct->detached)
		counter_clear(g->ctr, t->id);
	count_clear_totals(ct);
	ct->clock_repairs = 0;
	ct->unplaced_steal_ns = 0;
	for (size_t i = 0; i < ct->nfns; i++)
		memset(&ct->fns[i].charged, 0, sizeof(ct->fns[i].charged));
	slices_zero(ct->slices);
	ct->slices_lost = 0;
}
