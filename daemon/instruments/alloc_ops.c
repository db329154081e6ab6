// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's ops (inst.h, alloc.h): the start request's fields, the
 * allocator's functions probed in each object a target's processes map, the ring of sampled
 * allocations and frees read as it fills, and its part of `list`: what was allocated and
 * what is live, by procedure, with the estimates' standard errors (docs/alloc.md).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "agg.h"
#include "alloc.h"
#include "alloc_core.h"
#include "allocator.h"
#include "groups.h"
#include "procmaps.h"
#include "stacks.h"
#include "proto.h"
#include "stfile.h"
#include "sym.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

struct alloc_g {
	struct inst_env env;	/* (first: inst_g_new()) */
	struct allocator *al;	/* opened with the first target that watches allocations */
	struct agg_stack *st;	/* a record's stack, as it is built */
	__u64 pcs[PCMON_STACK_MAX]; /* ... its pcs */
	char err[256];
};

static struct alloc *alloc_of(const struct target *t)
{
	return t->inst[INST_ALLOC];
}

/* ---- the start request */

static bool wanted(const cJSON *req)
{
	return proto_bool(req, "alloc", 0);
}

static void alloc_free_state(void *st)
{
	struct alloc *a = st;

	if (!a)
		return;
	agg_free(a->stacks);
	alloc_core_free(a->core);
	free(a);
}

static struct alloc *alloc_state(uint64_t rate)
{
	struct alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->rate = rate;
	a->stacks = agg_new();
	a->core = alloc_core_new(rate);
	if (!a->stacks || !a->core) {
		alloc_free_state(a);
		return NULL;
	}
	return a;
}

static int alloc_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	(void)gp;
	(void)c;
	*out = alloc_state(proto_num(req, "alloc_rate", ALLOC_RATE_DEFAULT));
	if (!*out) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* ---- probes */

struct probe_ctx {
	struct alloc_g *g;
	struct alloc *a;
	uint32_t pid;
};

/* Each executable file the process maps, probed once (those without an allocator: none). */
static int probe_vma(void *ctx, struct procmaps_vma *v)
{
	struct probe_ctx *pc = ctx;
	char path[4096 + 64];
	int r;

	if (!v->name)
		return PROCMAPS_ASK;
	if (v->name[0] != '/')
		return 0;
	/* through the process's root: the file it maps, whatever its mount namespace */
	snprintf(path, sizeof(path), "/proc/%u/root%s", pc->pid, v->name);
	r = allocator_probe_file(pc->g->al, path, pc->pid, NULL);
	if (!r)
		pc->a->probed_files++;
	else if (r != -ENOENT)
		pr_warn("--alloc: cannot probe the allocator in %s: %s", v->name, strerror(-r));
	return 0;
}

static void probe_process(struct alloc_g *g, struct alloc *a, uint32_t pid)
{
	struct probe_ctx pc = { g, a, pid };

	procmaps_walk(pid, PROCMAPS_EXEC_FILES | PROCMAPS_ON_ASK, probe_vma, &pc);
}

static int alloc_attach(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct alloc_g *g = gp;
	struct alloc *a = st;
	int r;

	if (t->kind != TARGET_PID) {
		*rep = proto_error(2, "--alloc needs --pid or a command: give one (a cgroup's or every process's allocations are not watched yet)");
		return -EINVAL;
	}
	if (!g->al) {
		struct epoll_event ev = { .events = EPOLLIN };

		if ((r = allocator_open(g->env.procs, &g->al, g->err, sizeof(g->err)))) {
			*rep = proto_error(1, "--alloc: %s", g->err);
			return r;
		}
		/* the ring wakes the engine as records come (else it is read once a second) */
		ev.data.fd = allocator_fd(g->al);
		if (epoll_ctl(g->env.epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
			pr_warn("--alloc: the ring is read once a second: %s", strerror(errno));
	}
	r = allocator_target(g->al, t->id, a->rate, false);
	if (r) {
		*rep = proto_error(1, "--alloc: cannot set up BPF: %s", strerror(-r));
		return r;
	}
	/*
	 * A command is held before its exec, a copy of pcmon: the allocator it maps now (our
	 * libc) is, but for a container or a static program, the one its exec maps, and is
	 * probed before it runs. Another is probed as the dynamic linker maps it
	 * (alloc_event()), the command's first allocations unseen.
	 */
	probe_process(g, a, t->pid);
	return 0;
}

/* ---- records */

#define ALLOC_CFI_FRAMES 4

/*
 * The pcs of @r's stack into @pcs (at most PCMON_STACK_MAX): the frame-pointer walk BPF
 * made, its first frames unwound again by their CFI from the registers and the top of the
 * stack it copied. A caller that keeps no frame pointer (libstdc++'s operator new) is
 * skipped by the first and not by the second: the CFI's frames are taken until one of
 * them is the walk's, and the walk from there.
 */
static uint32_t record_pcs(struct alloc_g *g, const struct pcmon_arec *r, __u64 *pcs)
{
	uint32_t n = MIN(r->nip, PCMON_STACK_MAX), nu, k, j;
	__u64 u[ALLOC_CFI_FRAMES];
	enum unw_end end;

	memcpy(pcs, r->ip, n * sizeof(*pcs));
	if (!n || !r->ulen)
		return n;
	nu = unw_walk(g->env.sym, r->pid, r->epoch, r->regs, 0, r->ustack,
		      MIN(r->ulen, PCMON_ALLOC_TOP), u, ALLOC_CFI_FRAMES, &end);
	if (nu < 2 || u[0] != pcs[0])
		return n;
	for (k = 1; k < nu; k++)
		for (j = 1; j < n; j++)
			if (u[k] == pcs[j])
				goto join;
	return n; /* (no frame in common: the walk's stack is kept) */
join:
	if (k == j) /* nothing skipped */
		return n;
	/* u[0..k) then the walk from j: k - j frames more (or fewer, if the walk had extra) */
	if (n - j + k > PCMON_STACK_MAX)
		n = PCMON_STACK_MAX - k + j;
	memmove(pcs + k, pcs + j, (n - j) * sizeof(*pcs));
	memcpy(pcs, u, k * sizeof(*pcs));
	return n - j + k;
}

/* A sampled allocation's stack, named: outermost first, as sampling's. */
static struct agg_stack *record_stack(struct alloc_g *g, const struct pcmon_arec *r)
{
	uint32_t n = record_pcs(g, r, g->pcs);
	struct agg_stack *st = g->st;

	memset(st, 0, agg_stack_size(0));
	st->kind = PCMON_KIND_ONCPU;
	st->pid = r->pid;
	st->tid = r->tid;
	st->nuser = n;
	/* (every pc is a return address: the return of the allocator's function, then each
	 * caller's; their call sites are named) */
	for (uint32_t i = 0; i < n; i++)
		st->locs[n - 1 - i] = sym_user(g->env.sym, r->pid, r->epoch, g->pcs[i], true);
	if (!n)
		st->unwalk = AGG_UNWALK_FAULT;
	else if (n >= PCMON_STACK_MAX)
		st->flags |= AGG_SF_CUT(AGG_UNWALK_DEPTH);
	else if (!sym_thread_entry(g->env.sym, r->pid, r->epoch, g->pcs[n - 1]))
		st->flags |= AGG_SF_CUT(AGG_UNWALK_FP_CHAIN);
	return st;
}

static void on_rec(void *ctx, const struct pcmon_arec *r)
{
	struct alloc_g *g = ctx;
	struct target *t = r->target < PCMON_MAX_TARGETS ? g->env.targets[r->target] : NULL;
	struct alloc *a = t ? alloc_of(t) : NULL;
	uint32_t id;

	if (!a)
		return; /* dropped while its records were in flight */
	if (r->kind == PCMON_AREC_FREE) {
		/* (a block sampled before a zero is no longer tracked: its free is not lost) */
		if (!alloc_core_free_block(a->core, r->id) && r->id >= a->zeroed_after)
			a->frees_lost++;
		return;
	}
	a->last_id = MAX(a->last_id, r->id);
	if (agg_add_id(a->stacks, record_stack(g, r), 1, 0, &id) ||
	    alloc_core_alloc(a->core, r->id, id, r->size))
		a->records_lost++;
	t->dirty = true;
}

static void read_ring(struct alloc_g *g)
{
	if (g->al)
		allocator_poll(g->al, on_rec, g);
}

static bool stream(void *gp)
{
	read_ring(gp);
	return false;
}

/* ---- the target's life */

static void alloc_event(void *gp, struct target *t, void *st, const struct pcmon_event *ev)
{
	struct alloc_g *g = gp;

	if (!g->al)
		return;
	/*
	 * The probes are each process's: a child gets its own as it is seen (the breakpoints
	 * it inherited go as it hits them unwatched: its first allocations are not seen).
	 */
	if ((ev->type == PCMON_EV_EXEC || ev->type == PCMON_EV_DLOPEN ||
	     ev->type == PCMON_EV_FORK) &&
	    (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED))
		probe_process(g, st, ev->pid);
	/* its records were read before its events: its blocks still live stay live (at exit),
	 * and leave BPF's table with its probes */
	else if (ev->type == PCMON_EV_EXIT)
		allocator_forget_pid(g->al, ev->pid);
}

static void set_active(void *gp, struct target *t, void *st, bool active)
{
	struct alloc_g *g = gp;
	struct alloc *a = st;

	if (g->al && !a->stopped)
		allocator_target(g->al, t->id, a->rate, !active);
}

static void alloc_stop(void *gp, struct target *t, void *st)
{
	struct alloc_g *g = gp;
	struct alloc *a = st;

	read_ring(g);
	if (g->al)
		allocator_target(g->al, t->id, 0, false);
	a->stopped = true;
}

static void alloc_zero(void *gp, struct target *t, void *st)
{
	struct alloc *a = st;
	struct alloc_core *core = alloc_core_new(a->rate);

	(void)t;
	read_ring(gp);
	if (!core)
		return; /* (kept as it was: out of memory) */
	alloc_core_free(a->core);
	a->core = core;
	agg_zero(a->stacks);
	a->frees_lost = a->records_lost = 0;
	a->zeroed_after = a->last_id + 1;
}

static size_t bytes(const void *st)
{
	const struct alloc *a = st;
	size_t n;

	alloc_core_sites(a->core, &n);
	return sizeof(*a) + agg_bytes(a->stacks) + n * sizeof(struct alloc_site);
}

/* ---- totals and the listing */

enum { A_ALLOC_BYTES, A_ALLOC_OBJECTS, A_INUSE_BYTES, A_INUSE_OBJECTS, A_ALLOC_VAR, A_INUSE_VAR,
       A_SAMPLES, A_N };

static void totals(const struct alloc *a, double *v)
{
	const struct alloc_site *s;
	size_t n;

	if (a->loaded) {
		memcpy(v, a->saved, A_N * sizeof(*v));
		return;
	}
	memset(v, 0, A_N * sizeof(*v));
	s = alloc_core_sites(a->core, &n);
	for (size_t i = 0; i < n; i++) {
		v[A_ALLOC_BYTES] += s[i].alloc_bytes;
		v[A_ALLOC_OBJECTS] += s[i].alloc_objects;
		v[A_INUSE_BYTES] += fmax(s[i].inuse_bytes, 0);
		v[A_INUSE_OBJECTS] += fmax(s[i].inuse_objects, 0);
		v[A_ALLOC_VAR] += s[i].alloc_var;
		v[A_INUSE_VAR] += fmax(s[i].inuse_var, 0);
		v[A_SAMPLES] += s[i].samples;
	}
}

static void summary_json(void *gp, const struct target *t, void *st, cJSON *o)
{
	double v[A_N];

	read_ring(gp);
	(void)t;
	totals(st, v);
	cJSON_AddNumberToObject(o, "alloc_bytes", round(v[A_ALLOC_BYTES]));
	cJSON_AddNumberToObject(o, "inuse_bytes", round(v[A_INUSE_BYTES]));
}

static void facts_json(void *gp, const struct target *t, const void *st, cJSON *o)
{
	(void)gp;
	(void)t;
	cJSON_AddNumberToObject(o, "alloc_rate", ((const struct alloc *)st)->rate);
}

/*
 * The measures a procedure is listed by, each a view of the stacks whose count is the
 * measure (objects in thousandths: a sample stands for a fraction more than one).
 */
enum { M_ALLOC_BYTES, M_ALLOC_OBJECTS, M_INUSE_BYTES, M_INUSE_OBJECTS, M_ALLOC_VAR, M_INUSE_VAR,
       M_N };
static const char *const m_names[M_N] = { "alloc_bytes", "alloc_objects", "inuse_bytes",
					  "inuse_objects", "alloc_bytes_stderr",
					  "inuse_bytes_stderr" };

struct prow {
	uint32_t proc;
	double self[M_N], deep[M_N];
};

/* by live bytes, then allocated (--sort inuse, the default); @arg: by allocated first */
static int by_bytes(const void *x, const void *y, void *arg)
{
	const struct prow *a = x, *b = y;
	int first = *(const bool *)arg ? M_ALLOC_BYTES : M_INUSE_BYTES;
	int then = first == M_ALLOC_BYTES ? M_INUSE_BYTES : M_ALLOC_BYTES;

	if (a->self[first] != b->self[first])
		return a->self[first] < b->self[first] ? 1 : -1;
	if (a->self[then] != b->self[then])
		return a->self[then] < b->self[then] ? 1 : -1;
	return a->proc < b->proc ? -1 : a->proc > b->proc;
}

static struct prow *prow_of(struct prow **rows, size_t *n, size_t *cap, uint32_t proc)
{
	for (size_t i = 0; i < *n; i++)
		if ((*rows)[i].proc == proc)
			return &(*rows)[i];
	if (GROW(*rows, *cap, *n + 1))
		return NULL;
	(*rows)[*n] = (struct prow){ .proc = proc };
	return &(*rows)[(*n)++];
}

static int procedures_json(const struct alloc *a, const struct sym *s, const struct list_req *lr,
			   cJSON *out)
{
	const struct alloc_site *sites;
	struct prow *rows = NULL;
	size_t nsites, n = 0, cap = 0;
	int r = 0;
	cJSON *arr;

	sites = alloc_core_sites(a->core, &nsites);
	for (int m = 0; m < M_N && !r; m++) {
		struct agg_list_opts o = { .no_inline = lr->no_inline > 0 };
		struct agg *v = agg_view(a->stacks);
		struct agg_list l;
		double scale = m == M_ALLOC_OBJECTS || m == M_INUSE_OBJECTS ? 1000 : 1;

		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < nsites; i++) {
			/* (the samples are independent: a sum's variance is the sum of theirs) */
			const double x[M_N] = { sites[i].alloc_bytes, sites[i].alloc_objects,
						sites[i].inuse_bytes, sites[i].inuse_objects,
						sites[i].alloc_var, sites[i].inuse_var };

			agg_view_add(v, sites[i].stack, (uint64_t)llround(fmax(x[m], 0) * scale), 0);
		}
		r = agg_list(v, s, &o, &l);
		for (size_t i = 0; !r && i < l.nrows; i++) {
			struct prow *p = prow_of(&rows, &n, &cap, l.rows[i].proc);

			if (!p) {
				r = -ENOMEM;
				break;
			}
			p->self[m] = l.rows[i].shallow / scale;
			p->deep[m] = l.rows[i].deep / scale;
		}
		if (!r)
			agg_list_free(&l);
		agg_free(v);
	}
	if (r) {
		free(rows);
		return r;
	}
	if (n) {
		bool alloc_first = lr->sort && !strcmp(lr->sort, "alloc");

		qsort_r(rows, n, sizeof(*rows), by_bytes, &alloc_first);
	}
	cJSON_AddStringToObject(out, "sort", lr->sort && !strcmp(lr->sort, "alloc") ? "alloc"
										  : "inuse");
	arr = cJSON_AddArrayToObject(out, "procedures");
	for (size_t i = 0; i < n; i++) {
		const struct sym_procinfo *pi = sym_proc(s, rows[i].proc);
		cJSON *o = cJSON_CreateObject();
		char key[32];

		cJSON_AddStringToObject(o, "procedure", sym_str(s, pi->full));
		cJSON_AddStringToObject(o, "module", sym_str(s, pi->module));
		cJSON_AddStringToObject(o, "name", sym_str(s, pi->name));
		for (int m = 0; m < M_N; m++) {
			bool var = m == M_ALLOC_VAR || m == M_INUSE_VAR;

			cJSON_AddNumberToObject(o, m_names[m], round(var ? sqrt(rows[i].self[m])
									 : rows[i].self[m]));
			snprintf(key, sizeof(key), "deep_%s", m_names[m]);
			cJSON_AddNumberToObject(o, key, round(var ? sqrt(rows[i].deep[m])
								  : rows[i].deep[m]));
		}
		if (pi->file)
			cJSON_AddStringToObject(o, "file", sym_str(s, pi->file));
		if (pi->line)
			cJSON_AddNumberToObject(o, "line", pi->line);
		cJSON_AddItemToArray(arr, o);
	}
	free(rows);
	return 0;
}

/* ---- the profile the exports are made from (views/stacks.h, with four values a sample) */

static const char *const value_types[][2] = {
	{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
	{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
};

struct order {
	const struct agg *stacks;
	struct stacks *x;
	size_t next;		/* the stack the next visit is of, or after */
	uint32_t *ids;		/* each visit's stack */
	size_t n, cap;
	int err;
};

/* Each stack is visited once, in the order of its id (agg_list()): noted, for its values. */
static void order_visit(void *ctx, const struct agg_visit *v)
{
	struct order *o = ctx;
	uint64_t c, ns;

	stacks_visit(o->x, v);
	while (o->next < agg_count(o->stacks) && agg_get(o->stacks, o->next, &c, &ns) != v->st)
		o->next++;
	if (GROW(o->ids, o->cap, o->n + 1))
		o->err = -ENOMEM;
	else
		o->ids[o->n++] = (uint32_t)o->next;
}

static uint32_t no_name(const void *ctx, uint32_t id)
{
	(void)ctx;
	(void)id;
	return 0;
}

static uint32_t no_cgroup(const void *ctx, uint64_t id)
{
	(void)ctx;
	(void)id;
	return 0;
}

/*
 * "profile" as sampling's (stacks.h), a sample per stack with "count" its samples and
 * "values" [alloc_objects, alloc_space, inuse_objects, inuse_space]; the profile says
 * "value_types", "default_value" (inuse_space, as Go's heap profiles) and its period.
 */
static int profile_json(struct alloc_g *g, const struct target *t, const struct alloc *a,
			const struct list_req *lr, cJSON *rep)
{
	const struct groups_namer nm = { no_name, no_name, no_cgroup, NULL };
	struct agg_list_opts lo = { .no_inline = lr->no_inline > 0 };
	struct order o = { .stacks = a->stacks };
	const struct alloc_site *sites;
	double (*vals)[4] = NULL;
	struct agg *v = agg_view(a->stacks);
	struct agg_list l;
	size_t nsites, k = 0;
	cJSON *prof, *it, *arr;
	int r = -ENOMEM;

	sites = alloc_core_sites(a->core, &nsites);
	o.x = stacks_new(g->env.sym, &lo, &nm, -1);
	vals = calloc(agg_count(a->stacks) + 1, sizeof(*vals));
	if (!v || !o.x || !vals)
		goto out;
	for (size_t i = 0; i < nsites; i++) {
		const struct alloc_site *si = &sites[i];

		agg_view_add(v, si->stack, si->samples, 0);
		vals[si->stack][0] = si->alloc_objects;
		vals[si->stack][1] = si->alloc_bytes;
		vals[si->stack][2] = fmax(si->inuse_objects, 0);
		vals[si->stack][3] = fmax(si->inuse_bytes, 0);
	}
	lo.visit = order_visit;
	lo.visit_ctx = &o;
	if ((r = agg_list(v, g->env.sym, &lo, &l)))
		goto out;
	agg_list_free(&l);
	if ((r = o.err) || (r = stacks_json(o.x, rep)))
		goto out;
	prof = cJSON_GetObjectItemCaseSensitive(rep, "profile");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(prof, "samples")) {
		if (k >= o.n)
			break;
		cJSON_DeleteItemFromObject(it, "kind"); /* (not a sample of time) */
		arr = cJSON_AddArrayToObject(it, "values");
		for (int m = 0; m < 4; m++)
			cJSON_AddItemToArray(arr, cJSON_CreateNumber(round(vals[o.ids[k]][m])));
		k++;
	}
	arr = cJSON_AddArrayToObject(prof, "value_types");
	for (int m = 0; m < 4; m++) {
		cJSON *vt = cJSON_CreateArray();

		cJSON_AddItemToArray(vt, cJSON_CreateString(value_types[m][0]));
		cJSON_AddItemToArray(vt, cJSON_CreateString(value_types[m][1]));
		cJSON_AddItemToArray(arr, vt);
	}
	cJSON_AddStringToObject(prof, "default_value", "inuse_space");
	cJSON_AddStringToObject(prof, "period_type", "space");
	cJSON_AddNumberToObject(prof, "period", a->rate);
	cJSON_AddNumberToObject(prof, "start_wall", t->start_wall);
	r = 0;
out:
	free(vals);
	free(o.ids);
	stacks_free(o.x);
	agg_free(v);
	return r;
}

/*
 * "alloc": {"summary": {"rate_bytes", "samples", "alloc_bytes", "alloc_bytes_stderr",
 * "alloc_objects", "inuse_bytes", "inuse_bytes_stderr", "inuse_objects", "calls",
 * "sampled_calls", "frees_unmatched", "live_full", "ring_full", "stack_errors",
 * "frees_lost", "records_lost", "probed_files"}, "procedures": [{"procedure", "module",
 * "name", "alloc_bytes", "deep_alloc_bytes", ... for alloc_objects, inuse_bytes,
 * inuse_objects, alloc_bytes_stderr, inuse_bytes_stderr, "file", "line"}]}, procedures by
 * live bytes, then allocated bytes (--sort alloc: the other way).
 */
static int list_json(void *gp, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		     cJSON **err)
{
	struct alloc_g *g = gp;
	struct alloc *a = st;
	struct pcmon_astat bs = { 0 };
	cJSON *o = cJSON_AddObjectToObject(rep, "alloc"), *s;
	double v[A_N];

	read_ring(g);
	if (lr->stacks) { /* the exports' profile */
		const char *no = lr->by ? "--by" : lr->since || lr->until ? "--since/--until" :
				 lr->when ? "--when" : lr->ncritical ? "--critical" : NULL;

		if (no) {
			*err = proto_error(2, "%s does not apply to --alloc yet: leave it out", no);
			return -1;
		}
		if (a->loaded) {
			*err = proto_error(1, "target %u \"%s\": its allocations' stacks are not kept in its results file: export them before pcmond stops",
					   t->id, t->name);
			return -1;
		}
		return profile_json(g, t, a, lr, rep) ? -1 : 0;
	}
	if (g->al && !a->loaded)
		allocator_stats(g->al, t->id, &bs);
	totals(a, v);
	s = cJSON_AddObjectToObject(o, "summary");
	cJSON_AddNumberToObject(s, "rate_bytes", a->rate);
	cJSON_AddNumberToObject(s, "samples", v[A_SAMPLES]);
	cJSON_AddNumberToObject(s, "alloc_bytes", round(v[A_ALLOC_BYTES]));
	cJSON_AddNumberToObject(s, "alloc_bytes_stderr", round(sqrt(v[A_ALLOC_VAR])));
	cJSON_AddNumberToObject(s, "alloc_objects", round(v[A_ALLOC_OBJECTS]));
	cJSON_AddNumberToObject(s, "inuse_bytes", round(v[A_INUSE_BYTES]));
	cJSON_AddNumberToObject(s, "inuse_bytes_stderr", round(sqrt(v[A_INUSE_VAR])));
	cJSON_AddNumberToObject(s, "inuse_objects", round(v[A_INUSE_OBJECTS]));
	cJSON_AddNumberToObject(s, "calls", bs.entries);
	cJSON_AddNumberToObject(s, "sampled_calls", bs.sampled);
	cJSON_AddNumberToObject(s, "frees_unmatched", bs.frees_unmatched);
	cJSON_AddNumberToObject(s, "live_full", bs.live_full);
	cJSON_AddNumberToObject(s, "ring_full", bs.ring_full);
	cJSON_AddNumberToObject(s, "stack_errors", bs.stack_errors);
	cJSON_AddNumberToObject(s, "frees_lost", a->frees_lost);
	cJSON_AddNumberToObject(s, "records_lost", a->records_lost);
	cJSON_AddNumberToObject(s, "probed_files", a->probed_files);
	if (a->loaded) {
		cJSON_AddStringToObject(o, "procedures_not_saved",
					"read back from a results file, which keeps the totals only");
		return 0;
	}
	return procedures_json(a, g->env.sym, lr, o);
}

/* ---- results files: the settings and totals (docs/alloc.md) */

static const char *const saved_names[A_N] = { "alloc_bytes", "alloc_objects", "inuse_bytes",
					      "inuse_objects", "alloc_var", "inuse_var",
					      "samples" };

static void save(const struct target *t, const void *st, const struct sym *s, struct sf_wr *w,
		 cJSON *section)
{
	const struct alloc *a = st;
	double v[A_N];

	(void)t;
	(void)s;
	totals(a, v);
	sf_put_u64(w, section, "rate", a->rate);
	for (int i = 0; i < A_N; i++)
		sf_put_num(w, section, saved_names[i], v[i]);
}

static int load(struct sf_rd *rd, const cJSON *section, struct sym *s, void **out)
{
	uint32_t rate;
	struct alloc *a;
	int r;

	(void)s;
	if ((r = sf_get_u32(rd, section, "rate", SF_ALWAYS, 1u << 30, &rate)))
		return r;
	a = alloc_state(rate);
	if (!a)
		return sf_bad(rd, "alloc", "out of memory");
	for (int i = 0; i < A_N && !r; i++)
		r = sf_get_double(rd, section, saved_names[i], SF_ALWAYS, 0, 1e30, &a->saved[i]);
	if (r) {
		alloc_free_state(a);
		return r;
	}
	a->loaded = a->stopped = true;
	*out = a;
	return 0;
}

/* ---- the ops */

static int open_g(struct inst_env *env, void **gp, char *err, size_t errlen)
{
	struct alloc_g *g = inst_g_new(env, sizeof(struct alloc_g), err, errlen);

	if (g && !(g->st = malloc(agg_stack_size(PCMON_STACK_MAX)))) {
		free(g);
		g = NULL;
		snprintf(err, errlen, "out of memory");
	}
	*gp = g;
	return g ? 0 : -ENOMEM;
}

static void close_g(void *gp)
{
	struct alloc_g *g = gp;

	if (!g)
		return;
	allocator_close(g->al);
	free(g->st);
	free(g);
}

static void tick(void *gp)
{
	read_ring(gp);
}

static const struct proto_field fields[] = {
	{ .name = "alloc", .type = PT_BOOL, .opt = "--alloc" },
	{ .name = "alloc_rate", .type = PT_UINT, .min = 1, .max = 1u << 30,
	  .opt = "--alloc-rate" },
};

static const struct proto_field list_fields[] = {
	{ .name = "alloc", .type = PT_BOOL, .opt = "--alloc" },
};

const struct inst_ops alloc_ops = {
	.name = "alloc",
	.fields = fields,
	.nfields = ARRAY_SIZE(fields),
	.open = open_g,
	.close = close_g,
	.wanted = wanted,
	.new = alloc_new,
	.attach = alloc_attach,
	.set_active = set_active,
	.stop = alloc_stop,
	.zero = alloc_zero,
	.free = alloc_free_state,
	.event = alloc_event,
	.prompt_events = true,
	.list_json = list_json,
	.list_fields = list_fields,
	.nlist_fields = ARRAY_SIZE(list_fields),
	.only = "alloc",
	.missing = "watches no allocations (start it with --alloc)",
	.stream = stream,
	.tick = tick,
	.sync = tick,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.save = save,
	.load = load,
};
