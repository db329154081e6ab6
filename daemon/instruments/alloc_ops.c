// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's ops (inst.h, alloc.h): the start request's fields, the
 * allocator's functions probed in each object a target's processes map, the ring of sampled
 * allocations and frees read as it fills (their stacks named), the target's life and its
 * results file; its part of `list` is alloc_report.c's (docs/alloc.md).
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agg.h"
#include "alloc_core.h"
#include "alloc_int.h"
#include "allocator.h"
#include "procmaps.h"
#include "proto.h"
#include "slices.h"
#include "stackfile.h"
#include "stfile.h"
#include "sym.h"
#include "target.h"
#include "timed.h"
#include "unwind.h"
#include "util.h"


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
	alloc_functions_free(a->names);
	pidtab_free(a->members);
	cJSON_Delete(a->saved_procs);
	slices_free(a->slices);
	agg_free(a->stacks);
	alloc_core_free(a->core);
	free(a);
}

/* A target's state; @cfg: its slices' settings (NULL: read back, no slices). */
static struct alloc *alloc_state(uint64_t rate, const struct slices_cfg *cfg)
{
	struct alloc *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->rate = rate;
	a->var_unit = alloc_var_unit(rate);
	a->stacks = agg_new();
	a->core = alloc_core_new(rate);
	a->slices = cfg ? slices_new(cfg, AC_N) : NULL;
	if (!a->stacks || !a->core || (cfg && !a->slices)) {
		alloc_free_state(a);
		return NULL;
	}
	return a;
}

static int alloc_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const char *fns = proto_str(req, "alloc_functions", NULL);
	struct slices_cfg cfg;
	struct alloc *a;
	char err[256];
	int r;

	(void)gp;
	(void)c;
	if (timed_cfg(req, &cfg, rep))
		return -EINVAL;
	a = alloc_state(proto_num(req, "alloc_rate", ALLOC_RATE_DEFAULT), &cfg);
	if (!a) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	/* another allocator's functions, in place of glibc's */
	if (fns && (r = alloc_parse_functions(fns, a->names, err, sizeof(err)))) {
		*rep = r == -EINVAL ? proto_error(2, "%s", err) : proto_error(1, "out of memory");
		alloc_free_state(a);
		return r;
	}
	a->named = fns != NULL;
	*out = a;
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
	r = allocator_probe_file(pc->g->al, path, pc->pid,
				 pc->a->named ? (const char *const *)pc->a->names : NULL);
	if (!r)
		pc->a->probed_files++;
	else if (r < 0 && r != -ENOENT) /* (1: probed before) */
		pr_warn("--alloc: cannot probe the allocator in %s: %s", v->name, strerror(-r));
	return 0;
}

static void probe_process(struct alloc_g *g, struct alloc *a, uint32_t pid)
{
	struct probe_ctx pc = { g, a, pid };

	procmaps_walk(pid, PROCMAPS_EXEC_FILES | PROCMAPS_ON_ASK, probe_vma, &pc);
}

static int by_pid(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * A --cgroup target's processes, as its cgroup.procs lists them now: each new one probed
 * (those it forks later are probed as pcmon sees them fork, and found here too), each gone
 * let go. Read at the start and once a second.
 */
static void probe_members(struct alloc_g *g, struct target *t, struct alloc *a)
{
	uint32_t *now = NULL, pid;
	size_t n = 0, cap = 0, it = 0, ngone = 0;
	FILE *f = NULL;
	int fd;

	if (t->cgroup_fd < 0 || !a->members)
		return;
	fd = openat(t->cgroup_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !(f = fdopen(fd, "r")))
		close(fd);
	while (f && fscanf(f, "%u", &pid) == 1) {
		if (GROW(now, cap, n + 1))
			break;
		now[n++] = pid;
	}
	if (f)
		fclose(f);
	else
		return; /* (the cgroup is gone: its processes too, as their exits say) */
	qsort(now, n, sizeof(*now), by_pid);
	for (size_t i = 0; i < n; i++) /* (each its own pid as its value) */
		if (now[i] && !pidtab_get(a->members, now[i]) &&
		    !pidtab_put(a->members, now[i], (void *)(uintptr_t)now[i]))
			probe_process(g, a, now[i]);
	/* a member no longer listed exited or moved out */
	for (void *v; (v = pidtab_next(a->members, &it));) {
		pid = (uint32_t)(uintptr_t)v;
		if (!bsearch(&pid, now, n, sizeof(*now), by_pid) && !GROW(now, cap, n + 1 + ngone))
			now[n + ngone++] = pid;
	}
	for (size_t i = 0; i < ngone; i++) {
		pidtab_del(a->members, now[n + i]);
		/* (one that moved out keeps its probes: another target may watch it too; the
		 * process's exit lets them go) */
		if (kill((pid_t)now[n + i], 0) && errno == ESRCH)
			allocator_forget_pid(g->al, now[n + i]);
	}
	free(now);
}

static int alloc_attach(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct alloc_g *g = gp;
	struct alloc *a = st;
	int r;

	if (t->kind == TARGET_ALL) {
		*rep = proto_error(2, "--alloc watches a process or a cgroup, not every process: each would trap on every allocator call (give --pid, a command or --cgroup)");
		return -EINVAL;
	}
	if (t->kind == TARGET_CGROUP && !(a->members = pidtab_new())) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
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
	if (t->kind == TARGET_CGROUP)
		probe_members(g, t, a);
	else
		probe_process(g, a, t->pid);
	/* named functions may be the command's own: its file, probed before it runs too */
	if (t->exec_wait && a->named && t->exe_fd >= 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", t->exe_fd);
		if (!allocator_probe_file(g->al, path, t->pid, (const char *const *)a->names))
			a->probed_files++;
	}
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

/* A record's row, charged to its stack in the slice of the record's own time. */
static void charge(struct alloc_g *g, struct alloc *a, const struct pcmon_arec *r, uint32_t stack,
		   const struct alloc_weight *w, bool freed)
{
	uint64_t row[AC_N];

	alloc_row(w, freed, a->var_unit, row);
	if (a->slices && slices_add(a->slices, stack, row, r->ts + g->wall_minus_mono))
		a->slices_lost++;
}

static void on_rec(void *ctx, const struct pcmon_arec *r)
{
	struct alloc_g *g = ctx;
	struct target *t = r->target < PCMON_MAX_TARGETS ? g->env.targets[r->target] : NULL;
	struct alloc *a = t ? alloc_of(t) : NULL;
	struct alloc_weight w;
	uint32_t id;

	if (!a)
		return; /* dropped while its records were in flight */
	if (r->kind == PCMON_AREC_FREE) {
		/* (a block sampled before a zero is no longer tracked: its free is not lost) */
		if (alloc_core_free_block(a->core, r->id, &id, &w))
			charge(g, a, r, id, &w, true);
		else if (r->id >= a->zeroed_after)
			a->frees_lost++;
		return;
	}
	a->last_id = MAX(a->last_id, r->id);
	if (agg_add_id(a->stacks, record_stack(g, r), 1, 0, &id) ||
	    alloc_core_alloc(a->core, r->id, id, r->size)) {
		a->records_lost++;
		return;
	}
	alloc_weigh(r->size, a->rate, &w);
	charge(g, a, r, id, &w, false);
	t->dirty = true;
}

static void read_ring(struct alloc_g *g)
{
	if (!g->al)
		return;
	/* (records carry BPF's clock, the monotonic one; slices are by the wall's) */
	g->wall_minus_mono = wall_ns() - now_ns();
	allocator_poll(g->al, on_rec, g);
}

static bool stream(void *gp)
{
	read_ring(gp);
	return false;
}

/* BPF's counters of target @t kept in @a: read as the ring is (a stopped target's are what
 * they were at its stop, a target read back from a file has its file's) */
static void keep_stats(struct alloc_g *g, const struct target *t, struct alloc *a)
{
	if (g->al && !a->stopped)
		allocator_stats(g->al, t->id, &a->bpf);
}

static void keep_all_stats(struct alloc_g *g)
{
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = g->env.targets[i];

		if (t && alloc_of(t))
			keep_stats(g, t, alloc_of(t));
	}
}

/* (before a results file is written, too) */
static void stream_sync(void *gp)
{
	read_ring(gp);
	keep_all_stats(gp);
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
	else if (ev->type == PCMON_EV_EXIT) {
		allocator_forget_pid(g->al, ev->pid);
		if (((struct alloc *)st)->members)
			pidtab_del(((struct alloc *)st)->members, ev->pid);
	}
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
	keep_stats(g, t, a);
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
	if (a->slices)
		slices_zero(a->slices);
	a->frees_lost = a->records_lost = a->slices_lost = 0;
	a->zeroed_after = a->last_id + 1;
}

static size_t bytes(const void *st)
{
	const struct alloc *a = st;
	size_t n;

	alloc_core_sites(a->core, &n);
	return sizeof(*a) + agg_bytes(a->stacks) + n * sizeof(struct alloc_site) +
	       (a->slices ? slices_bytes(a->slices) : 0);
}

/* ---- totals and the listing (alloc_report.c) */

static void summary_json(void *gp, const struct target *t, void *st, cJSON *o)
{
	double v[A_N];

	read_ring(gp);
	(void)t;
	alloc_totals(st, v);
	cJSON_AddNumberToObject(o, "alloc_bytes", round(v[A_ALLOC_BYTES]));
	cJSON_AddNumberToObject(o, "inuse_bytes", round(v[A_INUSE_BYTES]));
}

static void facts_json(void *gp, const struct target *t, const void *st, cJSON *o)
{
	const struct alloc_g *g = gp;
	const struct alloc *a = st;

	(void)t;
	cJSON_AddNumberToObject(o, "alloc_rate", a->rate);
	if (g->al && !a->loaded)
		cJSON_AddStringToObject(o, "alloc_probes", allocator_probes(g->al));
	if (a->slices)
		timed_facts_json(a->slices, cJSON_AddObjectToObject(o, "alloc_slices"));
}

static int list_json(void *gp, struct target *t, void *st, const struct list_req *lr, cJSON *rep,
		     cJSON **err)
{
	struct alloc_g *g = gp;

	read_ring(g);
	keep_stats(g, t, st);
	return alloc_report_json(g->env.sym, t, st, lr, rep, err);
}

/* ---- results files (docs/alloc.md)
 *
 *   "alloc": {"rate": N, "var_unit": N, "alloc_bytes" ... "samples" (the totals), BPF's
 *    counters ("calls", ...) and the engine's ("frees_lost", ...), "procs", "locs",
 *    "stacks" (stackfile.h: each sampled allocation's stack, its count the samples),
 *    "sites": [{"s": STACK_INDEX, "n": SAMPLES, "ab", "ao", "av", "ib", "io", "iv"}]
 *    (allocated bytes, objects, the bytes' variance; the same of what is live),
 *    "slices": {... "s": [STACK_INDEX, AC_N sums...]}}
 *
 * Files written before the stacks were kept hold the totals and "procedures", the table by
 * procedure: they list that table only.
 */

static const char *const saved_names[A_N] = { "alloc_bytes", "alloc_objects", "inuse_bytes",
					      "inuse_objects", "alloc_var", "inuse_var",
					      "samples" };

/* what is counted apart from the samples, BPF's and the engine's */
#define ALLOC_COUNTERS(X)                                        \
	X(calls, bpf.entries) X(sampled_calls, bpf.sampled)       \
	X(frees_unmatched, bpf.frees_unmatched)                  \
	X(live_full, bpf.live_full) X(ring_full, bpf.ring_full)   \
	X(stack_errors, bpf.stack_errors) X(frees_lost, frees_lost) \
	X(records_lost, records_lost) X(slices_lost, slices_lost) \
	X(probed_files, probed_files)

static const char *const site_keys[7] = { "n", "ab", "ao", "av", "ib", "io", "iv" };

static void site_values(const struct alloc_site *x, double *v)
{
	v[0] = (double)x->samples;
	v[1] = x->alloc_bytes;
	v[2] = x->alloc_objects;
	v[3] = x->alloc_var;
	v[4] = x->inuse_bytes;
	v[5] = x->inuse_objects;
	v[6] = x->inuse_var;
}

static void save(const struct target *t, const void *st, const struct sym *s, struct sf_wr *w,
		 cJSON *section)
{
	const struct alloc *a = st;
	const struct alloc_site *sites;
	double v[A_N];
	cJSON *arr;
	size_t n;

	(void)t;
	alloc_totals(a, v);
	sf_put_u64(w, section, "rate", a->rate);
	sf_put_u64(w, section, "var_unit", a->var_unit);
	for (int i = 0; i < A_N; i++)
		sf_put_num(w, section, saved_names[i], v[i]);
#define PUT(key, f) sf_put_u64(w, section, #key, a->f);
	ALLOC_COUNTERS(PUT)
#undef PUT
	if (a->table_only) { /* (read back from a file that kept no more) */
		if (alloc_procedures_json(a, s, &(struct list_req){ .no_inline = -1, .icase = -1 },
					  section))
			sf_chk(w, NULL);
		return;
	}
	/* the stacks, in the aggregate's order: a stack's index in the file is its id */
	stackfile_save(w, s, a->stacks, section);
	arr = sf_chk(w, cJSON_AddArrayToObject(section, "sites"));
	sites = alloc_core_sites(a->core, &n);
	for (size_t i = 0; arr && !w->oom && i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		double x[7];

		sf_push(w, arr, o);
		if (w->oom)
			break;
		site_values(&sites[i], x);
		sf_put_u64(w, o, "s", sites[i].stack);
		for (int k = 0; k < 7; k++)
			sf_put_num(w, o, site_keys[k], x[k]);
	}
	if (a->slices)
		timed_save(w, a->slices, section);
}

/* The sites, checked (@a NULL) or loaded into @a with @sid the aggregate's id of each of the
 * file's @nstacks stacks. */
static int read_sites(struct sf_rd *rd, const cJSON *section, int nstacks, const uint32_t *sid,
		      struct alloc *a)
{
	const cJSON *arr, *it;
	int r, n, i = 0;

	if ((r = sf_get_array(rd, section, "sites", SF_ALWAYS, 1 << 24, &arr, &n)))
		return r;
	cJSON_ArrayForEach(it, arr) {
		struct alloc_site x = { 0 };
		double v[7];
		uint32_t stack;

		if (!cJSON_IsObject(it))
			return sf_not_object(rd, "sites", i, it);
		snprintf(rd->at, sizeof(rd->at), "sites[%d].", i++);
		if ((r = sf_get_u32(rd, it, "s", SF_ALWAYS, nstacks ? nstacks - 1 : 0, &stack)))
			return r;
		if (!nstacks)
			return sf_bad(rd, "s", "there are no stacks");
		if ((r = sf_get_u64(rd, it, "n", SF_ALWAYS, &x.samples)))
			return r;
		for (int k = 1; k < 7; k++)
			if ((r = sf_get_double(rd, it, site_keys[k], SF_ALWAYS, 0, 1e30, &v[k])))
				return r;
		if (!a)
			continue;
		x = (struct alloc_site){ .stack = sid[stack], .samples = x.samples,
					 .alloc_bytes = v[1], .alloc_objects = v[2],
					 .alloc_var = v[3], .inuse_bytes = v[4],
					 .inuse_objects = v[5], .inuse_var = v[6] };
		if (alloc_core_put_site(a->core, &x))
			return -ENOMEM;
	}
	rd->at[0] = '\0';
	return 0;
}

static int load(struct sf_rd *rd, const cJSON *section, struct sym *s, void **out)
{
	struct stackfile_rd f = { 0 };
	struct slices_cfg cfg;
	uint32_t rate, *sid = NULL;
	uint64_t vu = 0;
	struct alloc *a;
	int r;

	if ((r = sf_get_u32(rd, section, "rate", SF_ALWAYS, 1u << 30, &rate)))
		return r;
	timed_default_cfg(&cfg); /* (the file's own, if it has slices) */
	a = alloc_state(rate, &cfg);
	if (!a)
		return sf_bad(rd, "alloc", "out of memory");
	for (int i = 0; i < A_N && !r; i++)
		r = sf_get_double(rd, section, saved_names[i], SF_ALWAYS, 0, 1e30, &a->saved[i]);
#define GET(key, f)                                                              \
	vu = 0; /* (absent: 0) */                                                  \
	if (!r && !(r = sf_get_u64(rd, section, #key, SF_OPTIONAL, &vu)))          \
		a->f = vu;
	ALLOC_COUNTERS(GET)
#undef GET
	if (!r)
		r = sf_get_u64(rd, section, "var_unit", SF_OPTIONAL, &a->var_unit);
	if (!r && !a->var_unit)
		r = sf_bad(rd, "var_unit", "0 is not a unit");
	if (!r)
		r = stackfile_check(rd, section, SF_OPTIONAL, &f);
	if (!r && !f.stacks) { /* a file that kept the totals and the table */
		a->table_only = true;
		slices_free(a->slices); /* (no times: no windows, no timeline) */
		a->slices = NULL;
		r = alloc_procedures_load(rd, section, &a->saved_procs);
	} else if (!r && !(r = read_sites(rd, section, f.nstacks, NULL, NULL)) &&
		   (r = timed_read(rd, section, AC_N, f.nstacks, NULL, NULL)) >= 0) {
		/* everything checked (1: no slices): now load */
		sid = calloc(f.nstacks + 1, sizeof(*sid));
		r = !sid ? -ENOMEM : stackfile_load(rd, &f, s, a->stacks, sid);
		if (!r)
			r = read_sites(rd, section, f.nstacks, sid, a);
		if (!r && (r = timed_read(rd, section, AC_N, f.nstacks, a->slices, sid)) > 0) {
			slices_free(a->slices); /* (none kept: no windows) */
			a->slices = NULL;
			r = 0;
		}
	}
	free(sid);
	stackfile_release(&f);
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
	struct alloc_g *g = gp;
	uint64_t now = wall_ns();

	read_ring(g);
	keep_all_stats(g);
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = g->env.targets[i];
		struct alloc *a = t ? alloc_of(t) : NULL;

		if (a && a->slices && slices_tick(a->slices, now))
			t->dirty = true;
		if (a && a->members && !a->stopped) /* (new members, once a second) */
			probe_members(g, t, a);
	}
}

static const struct proto_field fields[] = {
	{ .name = "alloc", .type = PT_BOOL, .opt = "--alloc" },
	{ .name = "alloc_rate", .type = PT_UINT, .min = 1, .max = 1u << 30,
	  .opt = "--alloc-rate" },
	{ .name = "alloc_functions", .type = PT_STR, .max = 1024, .opt = "--alloc-functions" },
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
	.sync = stream_sync,
	.bytes = bytes,
	.facts_json = facts_json,
	.summary_json = summary_json,
	.save = save,
	.load = load,
};
