// SPDX-License-Identifier: GPL-2.0-only
/*
 * The call-counting instrument (docs/count.md): `--count PATTERN` puts an entry and a return
 * probe on every procedure the patterns name, in every object of the target's processes,
 * and keeps per procedure calls, self time and self+children time (bpf/count.bpf.c does the
 * accounting, per thread). Here: resolving the patterns (funcs.c), attaching (counter.c),
 * following new objects and images, the call table, and the state file's "calls" section.
 *
 * The probes' own cost, measured once per engine (counter_probe_cost()), is subtracted when
 * the table is made: C per activation from its self time, C per activation inside it from an
 * outermost activation's self+children time.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
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
#include "procs.h"
#include "stfile.h"
#include "sym.h"
#include "slices.h"
#include "target.h"
#include "timed.h"
#include "unwind.h"
#include "util.h"
#include "when.h"

#define COUNT_MAX_PROBES 1000	/* --max-probes default */
#define COUNT_MAX_CTX 256	/* context procedures a shadow-stack pattern may probe */

/* ---- settings */

void count_free(void *st)
{
	struct count *ct = st;

	if (!ct)
		return;
	for (size_t i = 0; i < ct->nfns; i++) {
		bpf_link__destroy(ct->fns[i].entry);
		bpf_link__destroy(ct->fns[i].ret);
		free(ct->fns[i].module);
		free(ct->fns[i].name);
	}
	free(ct->fns);
	for (size_t i = 0; i < ct->npats; i++) {
		free(ct->patterns[i]);
		pat_free(ct->pats[i]);
	}
	free(ct->patterns);
	free(ct->pats);
	free(ct->matched);
	free(ct->near);
	free(ct->objs);
	slices_free(ct->slices);
	for (size_t i = 0; i < ct->nctx; i++)
		pat_free(ct->ctx_pats[i]);
	free(ct->ctx_pats);
	pat_free(ct->when);
	free(ct->when_text);
	for (size_t i = 0; ct->stacks && i < itab_count(ct->stacks); i++)
		free(ct->stack_info[i].to);
	itab_free(ct->stacks);
	free(ct->stack_info);
	for (size_t i = 0; i < ct->ncharges; i++)
		free(ct->charges[i].to);
	free(ct->charges);
	free(ct->open);
	free(ct);
}

/*
 * The WHEN pattern @text (NULL: none), and how it is answered at the probes: from the shadow
 * stack if every name can be a probed procedure (each name alone, in ctx_pats, finds its
 * context procedures), else from the stack walked at each entry (attach() may still choose
 * the walk: a running process, names of too many procedures).
 */
int count_set_when(struct count *ct, const char *text, cJSON **rep)
{
	cJSON *req = cJSON_CreateObject();
	size_t nn;
	int r;

	if (!text) {
		cJSON_Delete(req);
		return 0;
	}
	cJSON_AddStringToObject(req, "when", text);
	cJSON_AddBoolToObject(req, "when_from_file", ct->when_file);
	r = when_compile(req, ct->icase, &ct->when, rep);
	cJSON_Delete(req);
	if (r || !(ct->when_text = strdup(text)))
		return r ? r : -ENOMEM;
	ct->when_mode = PCMON_CW_WALK;
	if (when_plan(ct->when, false, &ct->wpat, ct->when_why, sizeof(ct->when_why)))
		return 0;
	nn = pat_nnames(ct->when);
	ct->ctx_pats = calloc(nn + 1, sizeof(*ct->ctx_pats));
	if (!ct->ctx_pats)
		return -ENOMEM;
	for (size_t i = 0; i < nn; i++) {
		char name[PROTO_MAX_LINE];

		if (pat_name_str(ct->when, i, name, sizeof(name)) ||
		    pat_parse(name, ct->icase ? PAT_ICASE : 0, &ct->ctx_pats[ct->nctx], NULL))
			return 0; /* (cannot happen: a name parses as itself) the walk answers */
		ct->nctx++;
	}
	ct->when_mode = PCMON_CW_SHADOW;
	return 0;
}

static bool wanted(const cJSON *req)
{
	return cJSON_GetObjectItemCaseSensitive(req, "count") != NULL;
}

static int new_state(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, "count"), *it;
	struct count *ct = calloc(1, sizeof(*ct));
	const char *mode = proto_str(req, "mode", NULL);
	int n = cJSON_GetArraySize(arr);
	struct slices_cfg cfg;

	(void)gp;
	(void)c;
	if (timed_cfg(req, &cfg, rep)) {
		free(ct);
		return -EINVAL;
	}
	if (!ct || !(ct->slices = slices_new(&cfg, COUNT_WIDTH)) ||
	    !(ct->patterns = calloc(n + 1, sizeof(char *))) ||
	    !(ct->pats = calloc(n + 1, sizeof(struct pat *))) ||
	    !(ct->matched = calloc(n + 1, sizeof(bool))) ||
	    !(ct->near = calloc(n + 1, sizeof(*ct->near)))) {
		count_free(ct);
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	/* wall time unless asked: a call profile is about where the time goes, waits included */
	ct->virt = mode && !strcmp(mode, "virtual");
	ct->max_probes = proto_num(req, "max_probes", COUNT_MAX_PROBES);
	cJSON_ArrayForEach(it, arr) {
		struct pat_error pe = { 0 };
		int r = pat_parse(it->valuestring, proto_bool(req, "icase", 0) ? PAT_ICASE : 0,
				  &ct->pats[ct->npats], &pe);

		if (r) {
			*rep = r == -EINVAL ? proto_error(2, "--count %s: column %d: %s", it->valuestring,
							  pe.column, pe.msg)
					    : proto_error(1, "out of memory");
			count_free(ct);
			return r;
		}
		near_init(&ct->near[ct->npats], it->valuestring);
		ct->patterns[ct->npats++] = strdup(it->valuestring);
	}
	if (!ct->npats) {
		count_free(ct);
		*rep = proto_error(2, "--count: give a procedure pattern");
		return -EINVAL;
	}
	ct->icase = proto_bool(req, "icase", 0);
	ct->when_file = proto_bool(req, "when_from_file", 0);
	if (count_set_when(ct, proto_str(req, "when", NULL), rep)) {
		count_free(ct);
		return -EINVAL;
	}
	*out = ct;
	return 0;
}

/* ---- attaching */

uint64_t count_cookie(uint32_t target, size_t i, bool xol)
{
	return PCMON_COUNT_COOKIE(target, (uint32_t)i | (xol ? PCMON_COUNT_XOL : 0));
}

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

static int attach(void *gp, struct target *t, void *st, cJSON **rep)
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
static void event(void *gp, struct target *t, void *st, const struct pcmon_event *ev)
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

static void set_active(void *g, struct target *t, void *st, bool active)
{
	(void)g;
	(void)t;
	(void)st;
	(void)active; /* BPF reads the target's flags (tcfg) */
}

/* ---- the totals (read from BPF and classed: count_when.c) */

struct count_charge *count_charge(struct count *ct, uint32_t fn, const char *to)
{
	struct count_charge *ch;

	for (size_t i = 0; i < ct->ncharges; i++)
		if (ct->charges[i].fn == fn && !strcmp(ct->charges[i].to, to))
			return &ct->charges[i];
	if (GROW(ct->charges, ct->cap_charges, ct->ncharges + 1))
		return NULL;
	ch = &ct->charges[ct->ncharges];
	*ch = (struct count_charge){ .fn = fn, .to = strdup(to) };
	if (!ch->to)
		return NULL;
	ct->ncharges++;
	return ch;
}

/* Every total of @ct to 0 (its settings and the stacks it knows stay). */
void count_clear_totals(struct count *ct)
{
	for (size_t i = 0; i < ct->nfns; i++)
		memset(ct->fns[i].by, 0, sizeof(ct->fns[i].by));
	for (size_t i = 0; i < ct->ncharges; i++) {
		memset(&ct->charges[i].s, 0, sizeof(ct->charges[i].s));
		ct->charges[i].open = 0;
	}
	memset(&ct->unknown, 0, sizeof(ct->unknown));
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

static void stop(void *gp, struct target *t, void *st)
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

static void zero(void *gp, struct target *t, void *st)
{
	struct count_g *g = gp;
	struct count *ct = st;

	if (g->ctr && !ct->detached)
		counter_clear(g->ctr, t->id);
	count_clear_totals(ct);
	ct->clock_repairs = 0;
	for (size_t i = 0; i < ct->nfns; i++)
		memset(&ct->fns[i].charged, 0, sizeof(ct->fns[i].charged));
	slices_zero(ct->slices);
	ct->slices_lost = 0;
}

static size_t bytes(const void *st)
{
	const struct count *ct = st;

	return sizeof(*ct) + ct->cap_fns * sizeof(*ct->fns) + slices_bytes(ct->slices);
}

static struct count *count_of(struct count_g *g, int id, struct target **t)
{
	*t = g->env.targets[id];
	return *t ? (*t)->inst[INST_COUNT] : NULL;
}

/*
 * The totals stay in BPF until asked for, but for the time slices: when a slice of a
 * running target ends, what the totals gained in it is read and charged to it (the engine's
 * tick comes just after whole seconds, as for sampling), and the slices are coarsened.
 */
static void tick(void *gp)
{
	struct count_g *g = gp;
	uint64_t now = wall_ns();

	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t;
		struct count *ct = count_of(g, i, &t);

		if (!ct)
			continue;
		if (t->state == TARGET_RUNNING && slices_ended(ct->slices, ct->last_read, now))
			count_when_collect(g, t, ct);
		if (slices_tick(ct->slices, now))
			t->dirty = true;
	}
}

/* Before a save or a listing: every target's totals, read. */
static void sync_all(void *gp)
{
	struct count_g *g = gp;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t;
		struct count *ct = count_of(g, i, &t);

		if (ct)
			count_when_collect(g, t, ct);
	}
}

static void facts_json(void *g, const struct target *t, const void *st, cJSON *o)
{
	const struct count *ct = st;
	cJSON *arr = cJSON_AddArrayToObject(o, "count");

	(void)g;
	(void)t;
	for (size_t i = 0; i < ct->npats; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(ct->patterns[i]));
}

static void summary_json(void *gp, const struct target *t, void *st, cJSON *o)
{
	struct count *ct = st;
	uint64_t calls = 0;

	count_when_collect(gp, t, ct);
	for (size_t i = 0; i < ct->nfns; i++)
		for (int c = 0; c < COUNT_NCLS; c++)
			calls += ct->fns[i].by[c].calls;
	cJSON_AddNumberToObject(o, "calls", calls);
	cJSON_AddNumberToObject(o, "probed", ct->nfns);
}

/* ---- the totals by time: a row of the time slices per procedure */

/* @s as a row's sums, in PCMON_CSTAT_FIELDS order (count_report.c adds them back) */
static void stat_words(const struct pcmon_cstat *s, uint64_t *v)
{
	size_t k = 0;

#define WORD(f, need) v[k++] = s->f;
	PCMON_CSTAT_FIELDS(WORD)
#undef WORD
}

/* The words of a row that are extremes, not sums (and what the extremes hold): to 0. */
static void zero_extremes(uint64_t *v)
{
	static const size_t at[] = {
		offsetof(struct pcmon_cstat, max_ns),  offsetof(struct pcmon_cstat, max_acts),
		offsetof(struct pcmon_cstat, max_acts_xol), offsetof(struct pcmon_cstat, min_ns),
		offsetof(struct pcmon_cstat, min_acts), offsetof(struct pcmon_cstat, min_acts_xol),
	};

	for (size_t k = 0; k < ARRAY_SIZE(at); k++)
		v[at[k] / sizeof(__u64)] = 0;
}

void count_row(const struct pcmon_cstat *s, uint64_t *v)
{
	stat_words(s, v);
	zero_extremes(v); /* not sums: a window has none */
}

int count_fold(struct count *ct, size_t i, const struct pcmon_cstat *s, uint64_t wall)
{
	struct count_fn *fn = &ct->fns[i];
	uint64_t now[COUNT_WIDTH], was[COUNT_WIDTH];
	bool any = false, reset = false;
	int r = 0;

	stat_words(s, now);
	stat_words(&fn->charged, was);
	zero_extremes(now); /* not sums: neither grows nor resets */
	zero_extremes(was);
	for (size_t k = 0; k < COUNT_WIDTH; k++)
		reset |= now[k] < was[k];
	for (size_t k = 0; k < COUNT_WIDTH; k++) {
		now[k] -= reset ? 0 : was[k];
		any |= now[k] != 0;
	}
	if (any && ct->slices && slices_add(ct->slices, i, now, wall)) {
		ct->slices_lost += now[offsetof(struct pcmon_cstat, calls) / sizeof(__u64)];
		r = -ENOMEM;
	}
	fn->stat = *s;
	fn->charged = *s;
	return r;
}

/* ---- the call table (its JSON: count_report.c) */

static int list_json(void *gp, struct target *t, void *st, const cJSON *req, cJSON *rep,
		     cJSON **err)
{
	struct count_g *g = gp;
	struct count *ct = st;
	struct counter_prog_stats ps, *pps = NULL;
	struct timed_window w;
	uint64_t *open;
	const char *when = proto_str(req, "when", NULL);
	bool other = when && (!ct->when_text || strcmp(when, ct->when_text));
	int r;

	/* the totals are by the pattern given at start; the walk's stacks are not kept
	 * named, and the shadow stack's state held the start's pattern only */
	if (other && proto_bool(req, "calls", 0)) {
		*err = proto_error(2, "--when: calls are classed at start, by the pattern given then (%s): give it to pcmon count, or with --count",
				   ct->when_text ? ct->when_text : "none");
		return -1;
	}
	if (timed_window_parse(req, t->start_wall, &w, err))
		return -1;
	count_when_collect(g, t, ct);
	if (w.on) {
		/* a window's calls: the matching ones (the classes are not kept by time) */
		r = count_window_json(ct, &w, proto_str(req, "sort", "self"), rep);
	} else {
		/* open now: as count_when_collect() read them; none once detached */
		open = calloc(ct->nfns * COUNT_NCLS + 1, sizeof(*open));
		if (!open)
			return -ENOMEM;
		if (!ct->detached && ct->open)
			memcpy(open, ct->open, ct->nfns * COUNT_NCLS * sizeof(*open));
		if (g->ctr && procs_bpf_stats(g->env.procs)) {
			counter_prog_stats(g->ctr, &ps);
			pps = &ps;
		}
		r = count_report_json(ct, open, pps, proto_str(req, "sort", "self"), rep);
		free(open);
	}
	if (!r && other)
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(rep, "calls"), "list_when",
					"not applied: calls are classed at start, by the pattern given then");
	return r;
}

/* ---- the ops */

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	/* struct count_g starts with its struct inst_env */
	*gp = inst_g_new(env, sizeof(struct count_g), err, errlen);
	return *gp ? 0 : -ENOMEM;
}

static void close_g(void *gp)
{
	struct count_g *g = gp;

	if (!g)
		return;
	counter_close(g->ctr);
	free(g);
}

static const struct proto_field fields[] = {
	{ .name = "count", .type = PT_STRS, .max = PROTO_MAX_LINE, .opt = "--count" },
	{ .name = "max_probes", .type = PT_UINT, .min = 1, .max = 100000, .opt = "--max-probes" },
};

static const struct proto_field list_fields[] = {
	{ .name = "calls", .type = PT_BOOL },
	{ .name = "sort", .type = PT_ENUM, .values = "self|calls|total|avg", .opt = "--sort" },
};

const struct inst_ops count_ops = {
	.name = "calls",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = wanted,
	.new = new_state,
	.attach = attach,
	.set_active = set_active,
	.stop = stop,
	.zero = zero,
	.free = count_free,
	.event = event,
	.prompt_events = true,
	.list_json = list_json,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.only = "calls",
	.missing = "counts no calls (start it with --count PATTERN)",
	.tick = tick,
	.sync = sync_all,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.save = count_store_save,
	.load = count_store_load,
};
