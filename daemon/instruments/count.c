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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "count.h"
#include "counter.h"
#include "funcs.h"
#include "pat.h"
#include "proto.h"
#include "procs.h"
#include "stfile.h"
#include "sym.h"
#include "slices.h"
#include "target.h"
#include "timed.h"
#include "util.h"

#define COUNT_MAX_PROBES 1000	/* --max-probes default */

struct count_g {
	struct inst_env env;
	struct counter *ctr;	/* loaded on the first target that counts */
	char err[256];		/* ... or why it could not be */
};

/* ---- settings */

static void free_state(void *st)
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
	free(ct->objs);
	slices_free(ct->slices);
	free(ct);
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
	    !(ct->matched = calloc(n + 1, sizeof(bool)))) {
		free_state(ct);
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
			free_state(ct);
			return r;
		}
		ct->patterns[ct->npats++] = strdup(it->valuestring);
	}
	if (!ct->npats) {
		free_state(ct);
		*rep = proto_error(2, "--count: give a procedure pattern");
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
	size_t n = 0, cap = 0, objects = 0;
	int r = 0;

	snprintf(exe_path, sizeof(exe_path), "/proc/self/fd/%d", t->exe_fd);
	for (size_t p = 0; p < ct->npats && !r; p++) {
		size_t before = n;

		if (pid)
			r = funcs_find(pid, ct->pats[p], &f, &n, &cap, &objects);
		else /* the file the held process is about to exec */
			r = funcs_find_file(exe_path, t->exe_name, ct->pats[p], &f, &n, &cap);
		ct->matched[p] |= n > before;
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
					 .vaddr = f[i].vaddr, .late = late, .xol = f[i].xol };
		r = counter_attach(g->ctr, f[i].path, f[i].offset,
				   count_cookie(t->id, ct->nfns, fn->xol),
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

static int attach(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct count_g *g = gp;
	struct count *ct = st;
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
	r = counter_probe_cost(g->ctr, &ct->cost_ns, &ct->cost_xol_ns);
	if (r)
		pr_warn("call counting: cannot measure the probes' cost (%s): times include it",
			strerror(-r));
	r = counter_target_mode(g->ctr, t->id, ct->virt);
	if (r) {
		*rep = proto_error(1, "--count --virtual: cannot watch the scheduler: %s", strerror(-r));
		return r;
	}
	/* pcmon run: the process is held before exec: the command's own file is probed now,
	 * its libraries as the dynamic linker maps them (count_event) */
	if (t->exec_wait && t->exe_fd < 0) {
		*rep = proto_error(1, "--count: cannot look into the command's file before it runs");
		return -ENOENT;
	}
	r = attach_process(g, t, ct, t->exec_wait ? 0 : t->pid, false, rep);
	/* a command's libraries are not loaded yet: what its patterns name there is found as
	 * the dynamic linker maps them, and a pattern that never names anything is said so in
	 * the table; a running process has everything it has loaded to search now */
	if (!r && !ct->nfns && !t->exec_wait) {
		*rep = proto_error(1, "--count: no procedure matches %s%s in the %zu objects of pid %u",
				   ct->patterns[0], ct->npats > 1 ? " (or the other patterns)" : "",
				   ct->searched, t->pid);
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
}

static void set_active(void *g, struct target *t, void *st, bool active)
{
	(void)g;
	(void)t;
	(void)st;
	(void)active; /* BPF reads the target's flags (tcfg) */
}

/*
 * The totals BPF holds, into the state (after which the probes may go), and what they
 * gained since the last read into the time slice it is charged to.
 */
static void collect(struct count_g *g, const struct target *t, struct count *ct)
{
	uint64_t wall;

	if (!g->ctr || ct->detached)
		return;
	wall = slices_charge_wall(&ct->last_read, wall_ns());
	for (size_t i = 0; i < ct->nfns; i++) {
		struct pcmon_cstat s;

		if (!counter_stat(g->ctr, count_cookie(t->id, i, ct->fns[i].xol), &s))
			count_fold(ct, i, &s, wall);
	}
}

static void stop(void *gp, struct target *t, void *st)
{
	struct count_g *g = gp;
	struct count *ct = st;

	collect(g, t, ct);
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
	for (size_t i = 0; i < ct->nfns; i++) {
		memset(&ct->fns[i].stat, 0, sizeof(ct->fns[i].stat));
		memset(&ct->fns[i].charged, 0, sizeof(ct->fns[i].charged));
	}
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
			collect(g, t, ct);
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
			collect(g, t, ct);
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

	collect(gp, t, ct);
	for (size_t i = 0; i < ct->nfns; i++)
		calls += ct->fns[i].stat.calls;
	cJSON_AddNumberToObject(o, "calls", calls);
	cJSON_AddNumberToObject(o, "probed", ct->nfns);
}

/* ---- the call table (its JSON: count_report.c) */

void count_tally_open(void *ctx, uint64_t cookie)
{
	struct count_open *oc = ctx;

	/* every thread's open activations of every target come by: this target's only, and
	 * by procedure whatever its probe's kind (the XOL bit is not part of the index) */
	if (PCMON_COUNT_TARGET(cookie) == oc->target && PCMON_COUNT_FN(cookie) < oc->n)
		oc->open[PCMON_COUNT_FN(cookie)]++;
}

static int list_json(void *gp, struct target *t, void *st, const cJSON *req, cJSON *rep,
		     cJSON **err)
{
	struct count_g *g = gp;
	struct count *ct = st;
	struct count_open oc = { .target = t->id, .n = ct->nfns };
	struct counter_prog_stats ps, *pps = NULL;
	struct timed_window w;
	int r;

	if (timed_window_parse(req, t->start_wall, &w, err))
		return -1;
	collect(g, t, ct);
	if (w.on)
		return count_window_json(ct, &w, proto_str(req, "sort", "self"), rep);
	oc.open = calloc(ct->nfns + 1, sizeof(*oc.open));
	if (!oc.open)
		return -ENOMEM;
	if (g->ctr && !ct->detached)
		counter_open_activations(g->ctr, count_tally_open, &oc);
	if (g->ctr && procs_bpf_stats(g->env.procs)) {
		counter_prog_stats(g->ctr, &ps);
		pps = &ps;
	}
	r = count_report_json(ct, oc.open, pps, proto_str(req, "sort", "self"), rep);
	free(oc.open);
	return r;
}

/* ---- the state file's "calls" section */

static void save(const struct target *t, const void *st, const struct sym *s, struct sf_wr *w,
		 cJSON *o)
{
	const struct count *ct = st;
	cJSON *arr;

	(void)t;
	(void)s;
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "patterns"));
	for (size_t i = 0; arr && i < ct->npats; i++)
		sf_push(w, arr, cJSON_CreateString(ct->patterns[i]));
	sf_put_num(w, o, "probe_cost_ns", ct->cost_ns);
	sf_put_num(w, o, "stepped_probe_cost_ns", ct->cost_xol_ns);
	sf_put_bool(w, o, "virtual", ct->virt);
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "unmatched"));
	for (size_t i = 0; arr && i < ct->npats; i++)
		if (!ct->matched[i])
			sf_push(w, arr, cJSON_CreateString(ct->patterns[i]));
	sf_put_num(w, o, "objects_searched", ct->searched);
	arr = sf_chk(w, cJSON_AddArrayToObject(o, "procedures"));
	for (size_t i = 0; arr && i < ct->nfns && !w->oom; i++) {
		const struct count_fn *fn = &ct->fns[i];
		cJSON *x = cJSON_CreateObject();
		char addr[24];

		sf_push(w, arr, x);
		if (w->oom)
			break;
		snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)fn->vaddr);
		sf_put_str(w, x, "m", fn->module);
		sf_put_str(w, x, "n", fn->name);
		sf_put_str(w, x, "a", addr);
		sf_put_bool(w, x, "late", fn->late);
		sf_put_bool(w, x, "xol", fn->xol);
#define PUT_CSTAT(f) sf_put_u64(w, x, #f, fn->stat.f);
		PCMON_CSTAT_FIELDS(PUT_CSTAT)
#undef PUT_CSTAT
	}
	/* each procedure by its index in "procedures" (format 5) */
	if (ct->slices)
		timed_save(w, ct->slices, o);
}

static int read_stat(struct sf_rd *rd, const cJSON *o, struct pcmon_cstat *s)
{
	struct pcmon_cstat v = { 0 };
	uint64_t u;
	int r;

#define GET_CSTAT(f)                                    \
	if ((r = sf_get_u64(rd, o, #f, SF_ALWAYS, &u))) \
		return r;                               \
	v.f = u;
	PCMON_CSTAT_FIELDS(GET_CSTAT)
#undef GET_CSTAT
	*s = v;
	return 0;
}

/*
 * The call table's time slices (format 5); a file from before has none: its totals load as
 * one slice, the target's life.
 */
static int load_slices(struct sf_rd *rd, const cJSON *o, struct count *ct)
{
	uint64_t *rows;
	int r = timed_read(rd, o, COUNT_WIDTH, ct->nfns, ct->slices, NULL);

	if (r <= 0)
		return r;
	rows = calloc(ct->nfns * (1 + COUNT_WIDTH) + 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < ct->nfns; i++) {
		rows[i * (1 + COUNT_WIDTH)] = i;
		count_row(&ct->fns[i].stat, rows + i * (1 + COUNT_WIDTH) + 1);
	}
	r = timed_one_slice(rd, ct->slices, rows, ct->nfns);
	free(rows);
	return r;
}

static int load(struct sf_rd *rd, const cJSON *o, struct sym *s, void **out)
{
	const cJSON *pats, *fns, *it, *um;
	struct slices_cfg cfg;
	struct count *ct;
	double cost = 0, cost_xol = 0;
	uint64_t searched = 0;
	bool virt = false;
	int r, np, nf, nu, i = 0;

	(void)s;
	*out = NULL;
	if ((r = sf_get_array(rd, o, "patterns", SF_ALWAYS, 4096, &pats, &np)) ||
	    (r = sf_get_array(rd, o, "procedures", SF_ALWAYS, 1 << 20, &fns, &nf)) ||
	    (r = sf_get_double(rd, o, "probe_cost_ns", SF_ALWAYS, 0, 1e9, &cost)) ||
	    (r = sf_get_double(rd, o, "stepped_probe_cost_ns", SF_ALWAYS, 0, 1e9, &cost_xol)))
		return r;
	if ((r = sf_get_bool(rd, o, "virtual", SF_ALWAYS, &virt)) ||
	    (r = sf_get_u64(rd, o, "objects_searched", SF_ALWAYS, &searched)))
		return r;
	ct = calloc(1, sizeof(*ct));
	timed_default_cfg(&cfg); /* the file's own, if it has slices */
	if (!ct || !(ct->slices = slices_new(&cfg, COUNT_WIDTH)) ||
	    !(ct->patterns = calloc(np + 1, sizeof(char *))) ||
	    !(ct->pats = calloc(np + 1, sizeof(struct pat *))) ||
	    !(ct->matched = calloc(np + 1, sizeof(bool))) ||
	    !(ct->fns = calloc(nf + 1, sizeof(*ct->fns)))) {
		free_state(ct);
		return -ENOMEM;
	}
	ct->cap_fns = nf + 1;
	ct->cost_ns = cost;
	ct->cost_xol_ns = cost_xol;
	ct->virt = virt;
	ct->searched = searched; /* the table's "no procedure matched X in the N objects searched" */
	ct->detached = true;
	cJSON_ArrayForEach(it, pats) {
		if (!cJSON_IsString(it) || pat_parse(it->valuestring, 0, &ct->pats[ct->npats], NULL)) {
			free_state(ct);
			return sf_bad(rd, "patterns", "not a procedure pattern");
		}
		ct->patterns[ct->npats] = strdup(it->valuestring);
		ct->matched[ct->npats++] = true;
	}
	if ((r = sf_get_array(rd, o, "unmatched", SF_ALWAYS, 4096, &um, &nu))) {
		free_state(ct);
		return r;
	}
	cJSON_ArrayForEach(it, um)
		for (size_t k = 0; k < ct->npats; k++)
			if (cJSON_IsString(it) && !strcmp(it->valuestring, ct->patterns[k]))
				ct->matched[k] = false;
	cJSON_ArrayForEach(it, fns) {
		struct count_fn *fn = &ct->fns[ct->nfns];
		const char *m = NULL, *n = NULL;
		uint64_t a = 0;
		bool late = false, xol = false;

		if (!cJSON_IsObject(it)) {
			free_state(ct);
			return sf_not_object(rd, "procedures", i, it);
		}
		snprintf(rd->at, sizeof(rd->at), "procedures[%d].", i++);
		if ((r = sf_get_str(rd, it, "m", SF_ALWAYS, 4096, &m)) ||
		    (r = sf_get_str(rd, it, "n", SF_ALWAYS, 4096, &n)) ||
		    (r = sf_get_addr(rd, it, "a", &a)) ||
		    (r = sf_get_bool(rd, it, "late", SF_ALWAYS, &late)) ||
		    (r = sf_get_bool(rd, it, "xol", SF_ALWAYS, &xol)) ||
		    (r = read_stat(rd, it, &fn->stat))) {
			free_state(ct);
			return r;
		}
		fn->module = strdup(m);
		fn->name = strdup(n);
		fn->vaddr = a;
		fn->late = late;
		fn->xol = xol;
		fn->charged = fn->stat;
		ct->nfns++;
	}
	rd->at[0] = '\0';
	if ((r = load_slices(rd, o, ct))) {
		free_state(ct);
		return r;
	}
	*out = ct;
	return 0;
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
	.free = free_state,
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
	.save = save,
	.load = load,
};
