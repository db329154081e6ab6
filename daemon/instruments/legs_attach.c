// SPDX-License-Identifier: GPL-2.0-only
/*
 * The probe-node instrument in BPF (bpf/legs.bpf.c), and a target's life there: the programs
 * loaded, with the call counter whose shadow stacks the nodes read (WHEN); each node resolved
 * to its addresses (funcs.c) and probed, with what a hit of it costs; the context procedures
 * of a WHEN pattern probed; the nodes, legs and histograms told to BPF; their counts read
 * back into the tables; stopped, zeroed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "counter.h"
#include "demangle.h"
#include "funcs.h"
#include "legs.h"
#include "legs.skel.h"
#include "legs_int.h"
#include "pat.h"
#include "procs.h"
#include "ring.h"
#include "sample.h"
#include "tail.h"
#include "proto.h"
#include "slices.h"
#include "target.h"
#include "util.h"
#include "when.h"

#define LEGS_MAX_CTX 256	/* procedures a --when pattern of nodes may probe */

static int open_bpf(struct legs_g *g, cJSON **rep)
{
	struct procs *p = g->env.procs;
	int r;

	if (g->skel)
		return 0;
	/* the counter first: the nodes read its shadow stacks (WHEN) */
	r = g->ctr ? 0 : counter_open(p, &g->ctr, g->err, sizeof(g->err));
	if (r) {
		*rep = proto_error(1, "cannot load the probe-node BPF programs: %s", g->err);
		return r;
	}
	g->skel = legs_bpf__open();
	r = g->skel ? procs_share(p, g->skel->obj, g->err, sizeof(g->err)) : -errno;
	if (!r && (bpf_map__reuse_fd(g->skel->maps.cstack, counter_shadow_fd(g->ctr)) ||
		   bpf_map__reuse_fd(g->skel->maps.vclocks, counter_clock_fd(g->ctr))))
		r = -errno;
	if (!r) {
		bpf_program__set_autoattach(g->skel->progs.node_hit, false);
		bpf_program__set_autoattach(g->skel->progs.node_return, false);
		bpf_program__set_autoattach(g->skel->progs.node_usdt, false);
		r = legs_bpf__load(g->skel) ? -errno : legs_bpf__attach(g->skel) ? -errno : 0;
	}
	if (r) {
		*rep = proto_error(1, "cannot load the probe-node BPF programs: %s",
				   g->err[0] ? g->err : strerror(-r));
		legs_bpf__destroy(g->skel);
		g->skel = NULL;
	}
	return r;
}

static int add_link(struct legs_node *n, struct bpf_link *l)
{
	struct bpf_link **v = realloc(n->links, (n->nlinks + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	n->links = v;
	n->links[n->nlinks++] = l;
	return 0;
}

/* Node @i's cost a hit, into BPF before its probes attach (no hit races the update). */
static void set_node_cost(struct legs_g *g, const struct target *t, struct legs *lg, size_t i,
			  bool xol)
{
	uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);
	struct pcmon_node n;

	legs_node_cost(lg, i, xol);
	if (!bpf_map__lookup_elem(g->skel->maps.nodes, &cookie, sizeof(cookie), &n, sizeof(n), 0)) {
		n.cost_ns = lg->nodes[i].cost_ns;
		n.pre_ns = lg->nodes[i].pre_ns;
		n.adv = lg->nodes[i].adv;
		bpf_map__update_elem(g->skel->maps.nodes, &cookie, sizeof(cookie), &n, sizeof(n), 0);
	}
}

/*
 * WHEN: how the procedure of a node on @f[0, @nf) moves the pattern's state (a FILE:LINE
 * or USDT node's procedure is not named: it matches '*' only). -EINVAL if the procedures
 * of a glob move it differently.
 */
static int node_adv(const struct legs *lg, const struct func *f, size_t nf, struct pcmon_wadv *adv)
{
	memset(adv, 0, sizeof(*adv));
	for (size_t k = 0; lg->when && k < nf; k++) {
		struct pat_frame fr = { .module = f[k].module, .proc = f[k].name };
		struct pcmon_wadv a;
		char base[512];

		if (strchr(f[k].name, '(') && dm_base(f[k].name, base, sizeof(base)))
			fr.base = base;
		when_adv(lg->when, &lg->wpat, &fr, &a);
		if (k && memcmp(&a, adv, sizeof(a)))
			return -EINVAL;
		*adv = a;
	}
	return 0;
}

/*
 * Node @i of @lg on its addresses: in the target's process, or in the file the target looks
 * into (t->exe_fd: the command held before its exec, a --cgroup or --all target's program).
 * PROC, PROC%return and PROC+OFF name procedures (globs too: every one is the node);
 * provider:name a USDT probe of the program.
 */
int legs_attach_node(struct legs_g *g, struct target *t, struct legs *lg, size_t i, cJSON **rep)
{
	struct legs_node *n = &lg->nodes[i];
	uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);
	char proc[512], file[64], *mark;
	struct func *f = NULL;
	size_t nf = 0, cap = 0;
	struct pat *pat = NULL;
	long off = 0;
	bool ret = false;
	int r;

	/* the file its procedures, lines and probes are in */
	if (t->exe_fd >= 0)
		snprintf(file, sizeof(file), "/proc/self/fd/%d", t->exe_fd);
	else
		snprintf(file, sizeof(file), "/proc/%u/exe", t->pid);
	snprintf(proc, sizeof(proc), "%s", n->spec);
	mark = strrchr(proc, ':');
	if (mark && mark[1] && strspn(mark + 1, "0123456789") == strlen(mark + 1)) { /* FILE:LINE */
		*mark = '\0';
		r = funcs_find_line(file, t->exe_name ? t->exe_name : "", proc, atoi(mark + 1), &f,
				    &nf, &cap);
		if (r == -ENODATA || (!r && !nf)) {
			*rep = proto_error(1, "--node %s: %s", n->spec,
					   r ? "the program has no line table (build it with -g)"
					     : "no statement starts at that line in the program");
			r = -ENOENT;
		}
		goto attach;
	}
	if (strchr(proc, ':') && !strchr(proc, '%')) { /* provider:name */
		LIBBPF_OPTS(bpf_usdt_opts, uo, .usdt_cookie = cookie);
		char *colon = strchr(proc, ':');
		struct bpf_link *l;

		*colon = '\0';
		set_node_cost(g, t, lg, i, false); /* a USDT probe is a nop: emulated */
		l = bpf_program__attach_usdt(g->skel->progs.node_usdt, -1, file, proc, colon + 1,
					     &uo);
		if (!l) {
			*rep = proto_error(1, "--node %s: no such USDT probe in the program (%s)",
					   n->spec, strerror(errno));
			return -ENOENT;
		}
		return add_link(n, l);
	}
	if ((mark = strstr(proc, "%return"))) {
		*mark = '\0';
		ret = true;
	} else if ((mark = strchr(proc, '+')) && mark[1] == '0' && mark[2] == 'x') {
		*mark = '\0';
		off = strtol(mark + 1, NULL, 16);
	}
	if (pat_parse(proc, 0, &pat, NULL)) {
		*rep = proto_error(2, "--node %s: expected PROC, PROC%%return, PROC+0xOFF or provider:name",
				   n->spec);
		return -EINVAL;
	}
	r = t->exe_fd >= 0 ? funcs_find_file(file, t->exe_name, pat, &f, &nf, &cap)
			   : funcs_find(t->pid, pat, &f, &nf, &cap, NULL);
	pat_free(pat);
	if (!r && !nf) {
		*rep = proto_error(1, "--node %s: no procedure %s in the program%s", n->spec, proc,
				   t->exe_fd >= 0 ? "" : " or the libraries it has loaded");
		r = -ENOENT;
	}
	if (!r && node_adv(lg, f, nf, &n->adv)) {
		*rep = proto_error(2, "--node %s: the --when pattern tells its procedures apart: name one",
				   n->spec);
		r = -EINVAL;
	}
attach:
	/* what a hit costs: an instruction stepped out of line adds a trap (a %return probe's
	 * trampoline is emulated); a node on several procedures goes by its first */
	if (!r && nf) {
		bool xol = !ret && (off || !f[0].xol ? funcs_stepped(f[0].path, f[0].offset + off) : true);

		set_node_cost(g, t, lg, i, xol);
	}
	for (size_t k = 0; k < nf && !r; k++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookie, .retprobe = ret);
		struct bpf_link *l = bpf_program__attach_uprobe_opts(
			ret ? g->skel->progs.node_return : g->skel->progs.node_hit, -1, f[k].path,
			f[k].offset + off, &uo);

		if (!l) {
			r = -errno;
			*rep = proto_error(1, "--node %s: cannot probe %s.%s: %s", n->spec, f[k].module,
					   f[k].name, strerror(-r));
		} else {
			r = add_link(n, l);
		}
	}
	funcs_free(f, nf);
	free(f);
	return r;
}

static void unconfigure(struct legs_g *g, const struct target *t, struct legs *lg);

static struct pcmon_hkey node_hkey(const struct target *t, size_t i)
{
	return (struct pcmon_hkey){ t->id, 0, 0, i + 1 };
}

static struct pcmon_hkey leg_hkey(const struct target *t, const struct legs_leg *l)
{
	return (struct pcmon_hkey){ t->id, l->from, l->to, 0 };
}

/*
 * Set one histogram's shape in BPF if it is not what BPF has: the old one stops (its shape
 * deleted), what the counts then hold becomes the new one's zero (@h0, read from the node's
 * or leg's entry through @read), and the new shape goes in. The entry's counts are never
 * written, so no hit of the node or leg is lost on the way.
 */
static void set_hist(struct legs_g *g, const struct pcmon_hkey *k, const struct pcmon_hcfg *want,
		     struct pcmon_hist *h0, const void *key, size_t key_len, bool is_leg)
{
	struct bpf_map *hm = g->skel->maps.hcfgs;
	struct pcmon_hcfg cur = { PCMON_HIST_NONE };
	struct pcmon_node n;
	struct pcmon_leg l;

	bpf_map__lookup_elem(hm, k, sizeof(*k), &cur, sizeof(cur), 0);
	if (!memcmp(&cur, want, sizeof(cur)))
		return;
	bpf_map__delete_elem(hm, k, sizeof(*k), 0);
	if (want->kind == PCMON_HIST_NONE)
		return;
	if (!(is_leg ? bpf_map__lookup_elem(g->skel->maps.legs, key, key_len, &l, sizeof(l), 0)
			     : bpf_map__lookup_elem(g->skel->maps.nodes, key, key_len, &n, sizeof(n), 0)))
		*h0 = is_leg ? l.h : n.h;
	bpf_map__update_elem(hm, k, sizeof(*k), want, sizeof(*want), BPF_ANY);
}

/* Every histogram's shape into BPF, as the tables say. */
void legs_attach_hists(struct legs_g *g, struct target *t, struct legs *lg)
{
	for (size_t i = 0; i < lg->nnodes; i++) {
		struct pcmon_hkey k = node_hkey(t, i);
		uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);

		set_hist(g, &k, &lg->nodes[i].hist, &lg->nodes[i].h0, &cookie, sizeof(cookie), false);
	}
	for (size_t i = 0; i < lg->nlegs; i++) {
		struct legs_leg *l = &lg->legs[i];
		struct pcmon_hkey k = leg_hkey(t, l);
		struct pcmon_lkey lk = { t->id, l->from, l->to, 0 };

		set_hist(g, &k, &l->hist, &l->h0, &lk, sizeof(lk), true);
	}
}

static bool has_leg(const struct legs *lg, uint32_t from, uint32_t to)
{
	for (size_t i = 0; i < lg->nlegs; i++)
		if (lg->legs[i].from == from && lg->legs[i].to == to && lg->legs[i].stat.id)
			return true;
	return false;
}

/*
 * --track all's index of the target's legs in BPF: per node the legs it starts and ends
 * (nlegs; node 0 for '*'), every leg of the target (tlegs), and no leg in flight that the
 * table no longer has (or @all of them). Legs --add successor added are not in it: they
 * are timed from the thread's last node.
 */
int legs_attach_index(struct legs_g *g, const struct target *t, const struct legs *lg, bool all)
{
	size_t nn = lg->nnodes + 1;
	struct pcmon_nlegs *nl = calloc(nn, sizeof(*nl));
	struct pcmon_tlegs *tl = calloc(1, sizeof(*tl));
	struct pcmon_fkey fk, next;
	bool more;
	int r = 0;

	if (!nl || !tl) {
		r = -ENOMEM;
		goto out;
	}
	legs_index(lg, nl, nn, tl);
	for (uint32_t n = 0; n < nn && !r; n++) {
		struct pcmon_lkey k = { t->id, n, 0, 0 };

		if (nl[n].nfrom || nl[n].nto)
			r = bpf_map__update_elem(g->skel->maps.nlegs, &k, sizeof(k), &nl[n],
						 sizeof(nl[n]), 0) ? -errno : 0;
		else
			bpf_map__delete_elem(g->skel->maps.nlegs, &k, sizeof(k), 0);
	}
	if (!r)
		r = bpf_map__update_elem(g->skel->maps.tlegs, &t->id, sizeof(t->id), tl, sizeof(*tl),
					 0) ? -errno : 0;
	for (more = !bpf_map__get_next_key(g->skel->maps.lflight, NULL, &next, sizeof(next)); more;
	     more = !bpf_map__get_next_key(g->skel->maps.lflight, &fk, &next, sizeof(next))) {
		fk = next;
		if (fk.target == t->id && (all || !has_leg(lg, fk.from, fk.to)))
			bpf_map__delete_elem(g->skel->maps.lflight, &fk, sizeof(fk), 0);
	}
out:
	free(nl);
	free(tl);
	return r;
}

/*
 * Tell BPF the target's nodes, legs and settings: those it does not have yet, or (@reset)
 * all of them afresh, counts included.
 */
int legs_attach_configure(struct legs_g *g, struct target *t, struct legs *lg, bool reset)
{
	struct pcmon_lcfg lc = { .track = lg->track, .add = lg->add, .when = lg->when != NULL,
				 .ntailed = (uint32_t)lg->ntails, .wpat = lg->wpat };
	__u64 how = reset ? BPF_ANY : BPF_NOEXIST;
	int r = 0;

	for (size_t i = 0; i < lg->nnodes && !r; i++) {
		uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);
		struct pcmon_node n = { .arg = lg->nodes[i].arg, .cost_ns = lg->nodes[i].cost_ns,
					.pre_ns = lg->nodes[i].pre_ns, .adv = lg->nodes[i].adv };

		r = bpf_map__update_elem(g->skel->maps.nodes, &cookie, sizeof(cookie), &n, sizeof(n), how);
		r = r && errno == EEXIST ? 0 : r;
	}
	for (size_t i = 0; i < lg->nlegs && !r; i++) {
		struct legs_leg *l = &lg->legs[i];
		struct pcmon_lkey k = { t->id, l->from, l->to, 0 }, fk = { t->id, l->from, 0, 0 };

		r = bpf_map__update_elem(g->skel->maps.legs, &k, sizeof(k), &l->stat, sizeof(l->stat), how);
		r = r && errno == EEXIST ? 0 : r;
		if (!r && l->from != PCMON_ANY_NODE)
			bpf_map__update_elem(g->skel->maps.lfrom, &fk, sizeof(fk), &l->to, sizeof(l->to),
					     BPF_NOEXIST);
	}
	if (!r)
		r = bpf_map__update_elem(g->skel->maps.lcfg, &t->id, sizeof(t->id), &lc, sizeof(lc), 0);
	if (!r && (r = legs_attach_index(g, t, lg, reset))) {
		errno = -r; /* (the return below speaks errno, as libbpf's calls do) */
		r = -1;
	}
	if (!r && reset) { /* the counts start again from 0 */
		for (size_t i = 0; i < lg->nnodes; i++)
			memset(&lg->nodes[i].h0, 0, sizeof(lg->nodes[i].h0));
		for (size_t i = 0; i < lg->nlegs; i++)
			memset(&lg->legs[i].h0, 0, sizeof(lg->legs[i].h0));
	}
	if (!r)
		legs_attach_hists(g, t, lg);
	return r ? -errno : 0;
}

/* The counter's settings for @t, and the scheduler hook they hold, let go. */
static void release_clock(struct legs_g *g, struct target *t, struct legs *lg)
{
	if (!lg->clock_held)
		return;
	counter_target_done(g->ctr, t->id);
	lg->clock_held = false;
}

/*
 * WHEN: entry and return probes on every procedure the pattern names, on the legs' counter,
 * which keeps the pattern's state on its shadow stacks for the nodes to read. The program
 * is held before its exec: nothing it runs is entered before they are on.
 */
static int attach_context(struct legs_g *g, struct target *t, struct legs *lg, cJSON **rep)
{
	struct pcmon_ccfg cfg = { .when = PCMON_CW_SHADOW, .wpat = lg->wpat };
	char path[64], name[PROTO_MAX_LINE];
	struct func *f = NULL;
	size_t nf = 0, cap = 0;
	struct pat *np = NULL;
	int r = 0;

	if (!lg->when)
		return 0;
	if (!t->exec_wait) {
		*rep = proto_error(2, "--when with nodes needs a command pcmon starts (-- CMD): in a running process, procedures entered before the probes are not seen");
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", t->exe_fd);
	for (size_t i = 0; i < pat_nnames(lg->when) && !r; i++) {
		size_t before = nf;

		pat_name_str(lg->when, i, name, sizeof(name));
		r = pat_parse(name, lg->icase ? PAT_ICASE : 0, &np, NULL);
		if (!r)
			r = funcs_find_file(path, t->exe_name, np, &f, &nf, &cap);
		pat_free(np);
		if (!r && nf == before) {
			*rep = proto_error(2, "--when with nodes: %s names no procedure of the program (nodes take the program's own procedures)",
					   name);
			r = -ENOENT;
		}
	}
	if (!r && nf > LEGS_MAX_CTX) {
		*rep = proto_error(2, "--when with nodes: its names name %zu procedures, more than %d to probe",
				   nf, LEGS_MAX_CTX);
		r = -E2BIG;
	}
	if (!r)
		r = counter_target_cfg(g->ctr, t->id, &cfg);
	for (size_t k = 0; k < nf && !r; k++) {
		uint64_t cookie = PCMON_COUNT_COOKIE(t->id, k | PCMON_COUNT_CTX |
						   (f[k].xol ? PCMON_COUNT_XOL : 0));
		struct bpf_link **links = realloc(lg->ctx_links, (lg->nctx_links + 2) * sizeof(*links));
		struct pcmon_wadv adv;

		if (!links) {
			r = -ENOMEM;
			break;
		}
		lg->ctx_links = links;
		node_adv(lg, &f[k], 1, &adv);
		r = counter_set_adv(g->ctr, cookie, &adv);
		if (!r)
			r = counter_attach(g->ctr, f[k].path, f[k].offset, cookie,
					   &links[lg->nctx_links], &links[lg->nctx_links + 1]);
		if (!r)
			lg->nctx_links += 2;
	}
	if (r && !*rep)
		*rep = proto_error(1, "--when with nodes: cannot probe the procedures it names: %s",
				   strerror(-r));
	funcs_free(f, nf);
	free(f);
	return r;
}

/* ---- tail profiles (tail.h) */

static int on_tail_ev(void *ctx, void *data, size_t len)
{
	struct legs_g *g = ctx;
	const struct pcmon_tail_ev *e = data;
	struct target *t;
	struct sample *sp;

	if (len < sizeof(*e) || e->target >= PCMON_MAX_TARGETS)
		return 0;
	t = g->env.targets[e->target];
	sp = t ? sample_of(t) : NULL;
	if (sp && sp->tails)
		tails_event(sp->tails, e, now_ns());
	return 0;
}

/* What the tails' ring holds, to the targets' tails; the records it had no room for. */
void legs_attach_tails_read(struct legs_g *g)
{
	if (!g->tail_rb)
		return;
	ring_consume(g->tail_rb);
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = g->env.targets[i];
		struct sample *sp = t ? sample_of(t) : NULL;

		if (sp && sp->tails) /* (BPF's count, of every target's) */
			sp->tails->lost_events = g->skel->bss->tail_lost;
	}
}

/*
 * --tail: the sampling instrument's tails for @t, the tailed legs' slots in BPF. The ring of
 * their events opens with the first, and wakes the engine as records come.
 */
int legs_attach_tails(struct legs_g *g, struct target *t, struct legs *lg, cJSON **rep)
{
	struct sample *sp = sample_of(t);
	struct pcmon_ltails bl = { 0 };

	if (!lg->ntails)
		return 0;
	if (!sp) {
		*rep = proto_error(2, "--tail needs sampling: the tail is a profile of the slow instances' samples (leave out --no-sample)");
		return -EINVAL;
	}
	if (!g->tail_rb) {
		struct epoll_event ev = { .events = EPOLLIN };

		g->tail_rb = ring_new(bpf_map__fd(g->skel->maps.tail_events), on_tail_ev, g);
		if (!g->tail_rb) {
			*rep = proto_error(1, "--tail: cannot read BPF's ring: %s", strerror(errno));
			return -errno;
		}
		ev.data.fd = ring_fd(g->tail_rb);
		if (epoll_ctl(g->env.epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
			pr_warn("--tail: the ring is read once a second: %s", strerror(errno));
	}
	if (!sp->tails && !(sp->tails = tails_new(sp->agg))) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	/* each leg's slot: its place in the tails (those it had keep theirs) */
	for (size_t i = 0; i < lg->ntails; i++) {
		const struct legs_tail *lt = &lg->tails[i];
		const struct legs_leg *l = NULL;
		struct tail_leg *have = tails_leg(sp->tails, lt->leg);
		int slot;

		for (size_t j = 0; j < lg->nlegs; j++)
			if (lg->legs[j].id == lt->leg)
				l = &lg->legs[j];
		if (!l)
			continue;
		slot = have ? (int)(have - sp->tails->leg) + 1
			    : tails_add_leg(sp->tails, l->id, l->from, l->to, lt->ns, lt->pct);
		if (slot < 0) {
			*rep = proto_error(1, "--tail: %s", strerror(-slot));
			return slot;
		}
		bl.l[slot - 1].from = l->from;
		bl.l[slot - 1].to = l->to;
		bl.n = MAX(bl.n, (uint32_t)slot);
	}
	if (bpf_map__update_elem(g->skel->maps.ltails, &t->id, sizeof(t->id), &bl, sizeof(bl), 0)) {
		*rep = proto_error(1, "--tail: cannot set up BPF: %s", strerror(errno));
		return -errno;
	}
	if (!lg->tails_on)
		procs_tail_gen(g->env.procs, t->id);
	procs_tails(g->env.procs, (int)(lg->ntails - lg->tails_on));
	lg->tails_on = lg->ntails;
	return 0;
}

int legs_attach_target(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct legs_g *g = gp;
	struct legs *lg = st;

	struct counter_cost cost;
	int r;

	if (t->kind != TARGET_PID && t->exe_fd < 0) {
		*rep = proto_error(2, "--node on a --cgroup or --all target: name the program its nodes are in with --program PATH when it starts (its processes' objects are not known in advance)");
		return -EINVAL;
	}
	if (t->exec_wait && t->exe_fd < 0) {
		*rep = proto_error(1, "--node: cannot look into the command's file before it runs");
		return -ENOENT;
	}
	r = open_bpf(g, rep);
	if (r)
		return r;
	if (!counter_probe_cost(g->ctr, &cost)) {
		legs_calibrate(lg, cost.pair[0], cost.pair[1]);
		legs_calibrate_err(lg, cost.spread[0]);
	}
	/* the scheduler hook, which tells the time a thread was preempted at a node's probe */
	r = counter_target_cfg(g->ctr, t->id, &(struct pcmon_ccfg){ 0 });
	if (r) {
		*rep = proto_error(1, "cannot attach the scheduler hook: %s", strerror(-r));
		return r;
	}
	lg->clock_held = true;
	r = attach_context(g, t, lg, rep);
	if (!r) {
		r = legs_attach_configure(g, t, lg, true);
		if (r)
			*rep = proto_error(1, "cannot set up the nodes in BPF: %s", strerror(-r));
	}
	if (!r)
		r = legs_attach_tails(g, t, lg, rep);
	for (size_t i = 0; i < lg->nnodes && !r; i++)
		r = legs_attach_node(g, t, lg, i, rep);
	if (r) { /* nothing of it stays: the links go with the state */
		unconfigure(g, t, lg);
		release_clock(g, t, lg);
	}
	return r;
}

/* What BPF holds, into the state. */
void legs_attach_collect(struct legs_g *g, const struct target *t, struct legs *lg)
{
	struct pcmon_lkey k = { t->id, 0, 0, 0 }, next;
	struct pcmon_leg l;
	bool more;

	if (!g->skel || lg->detached)
		return;
	lg->charge_wall = slices_charge_wall(&lg->last_read, wall_ns());
	if (g->ctr) {
		uint64_t u = counter_unplaced_steal(g->ctr, t->id);

		lg->unplaced_steal_ns = u >= lg->unplaced_at ? u - lg->unplaced_at : u;
	}
	for (size_t i = 0; i < lg->nnodes; i++) {
		uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);
		struct pcmon_node n;

		if (!bpf_map__lookup_elem(g->skel->maps.nodes, &cookie, sizeof(cookie), &n, sizeof(n), 0))
			legs_fold_node(lg, i, &n);
	}
	/* every leg of the target: those set up, and those --add successor added */
	for (more = !bpf_map__get_next_key(g->skel->maps.legs, NULL, &next, sizeof(next)); more;
	     more = !bpf_map__get_next_key(g->skel->maps.legs, &k, &next, sizeof(next))) {
		k = next;
		if (k.target != t->id ||
		    bpf_map__lookup_elem(g->skel->maps.legs, &k, sizeof(k), &l, sizeof(l), 0))
			continue;
		if (legs_fold_leg(lg, k.from, k.to, &l))
			break;
	}
}

/* Forget the target's entries in BPF. */
static void unconfigure(struct legs_g *g, const struct target *t, struct legs *lg)
{
	for (size_t i = 0; i < lg->nnodes; i++) {
		uint64_t cookie = PCMON_NODE_COOKIE(t->id, i + 1);

		struct pcmon_hkey hk = node_hkey(t, i);

		bpf_map__delete_elem(g->skel->maps.nodes, &cookie, sizeof(cookie), 0);
		bpf_map__delete_elem(g->skel->maps.hcfgs, &hk, sizeof(hk), 0);
	}
	for (size_t i = 0; i < lg->nlegs; i++) {
		struct pcmon_lkey k = { t->id, lg->legs[i].from, lg->legs[i].to, 0 };
		struct pcmon_lkey fk = { t->id, lg->legs[i].from, 0, 0 };
		struct pcmon_hkey hk = leg_hkey(t, &lg->legs[i]);

		bpf_map__delete_elem(g->skel->maps.legs, &k, sizeof(k), 0);
		bpf_map__delete_elem(g->skel->maps.hcfgs, &hk, sizeof(hk), 0);
		bpf_map__delete_elem(g->skel->maps.lfrom, &fk, sizeof(fk), 0);
	}
	if (lg->tails_on) {
		struct pcmon_ltails none = { 0 };

		bpf_map__update_elem(g->skel->maps.ltails, &t->id, sizeof(t->id), &none, sizeof(none),
				     0);
		procs_tails(g->env.procs, -(int)lg->tails_on);
		procs_tail_gen(g->env.procs, t->id);
		lg->tails_on = 0;
	}
	{
		struct legs none = { .nnodes = lg->nnodes };

		legs_attach_index(g, t, &none, true);
	}
}

void legs_attach_stop(void *gp, struct target *t, void *st)
{
	struct legs_g *g = gp;
	struct legs *lg = st;

	legs_attach_collect(g, t, lg);
	for (size_t i = 0; i < lg->nnodes; i++) {
		for (size_t k = 0; k < lg->nodes[i].nlinks; k++)
			bpf_link__destroy(lg->nodes[i].links[k]);
		lg->nodes[i].nlinks = 0;
	}
	if (g->skel && !lg->detached)
		unconfigure(g, t, lg);
	lg->detached = true;
	if (lg->nctx_links)
		legs_drop_context(lg);
	release_clock(g, t, lg);
}

void legs_attach_zero(void *gp, struct target *t, void *st)
{
	struct legs_g *g = gp;
	struct legs *lg = st;

	for (size_t i = 0; i < lg->nnodes; i++) {
		lg->nodes[i].hits = lg->nodes[i].c_hits = 0;
		memset(&lg->nodes[i].h, 0, sizeof(lg->nodes[i].h));
		memset(&lg->nodes[i].c_h, 0, sizeof(lg->nodes[i].c_h));
	}
	for (size_t i = 0; i < lg->nlegs; i++) {
		lg->legs[i].stat = (struct pcmon_leg){ .min_ns = ~0ULL, .id = lg->legs[i].id };
		memset(&lg->legs[i].c, 0, sizeof(lg->legs[i].c));
	}
	if (lg->slices)
		slices_zero(lg->slices);
	lg->unplaced_at = g->ctr ? counter_unplaced_steal(g->ctr, t->id) : 0;
	lg->unplaced_steal_ns = 0;
	if (g->skel && !lg->detached)
		legs_attach_configure(g, t, lg, true);
}
