// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counter.h"	/* before the skeleton: its globals are of pcmon_count.h's types */
#include "count.skel.h"
#include "procs.h"
#include "util.h"

struct counter {
	struct count_bpf *skel;
	struct bpf_link *switch_link;	/* while targets count: VIRTUAL clocks, and the time
					 * preempted at a probe (REAL) */
	struct bpf_link *runtime_link;	/* ... with it: the steal counted at the scheduler's
					 * clock updates (count.bpf.c, steal_look()) */
	bool on[PCMON_MAX_TARGETS];
	struct counter_cost cost;	/* measured when cost.cpus; else not yet */
	struct counter_prog_stats base;	/* the calibration's runs, not the targets' */
	int cost_err;
};

int counter_open(struct procs *p, struct counter **out, char *err, size_t errlen)
{
	struct counter *c = calloc(1, sizeof(*c));
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->skel = count_bpf__open();
	if (!c->skel) {
		r = -errno;
		snprintf(err, errlen, "cannot open the call-counting BPF object: %s", strerror(-r));
		goto fail;
	}
	r = procs_share(p, c->skel->obj, err, errlen);
	if (r)
		goto fail;
	bpf_program__set_autoattach(c->skel->progs.count_enter, false);
	bpf_program__set_autoattach(c->skel->progs.count_return, false);
	bpf_program__set_autoattach(c->skel->progs.dump_open, false);
	bpf_program__set_autoattach(c->skel->progs.count_switch, false);
	bpf_program__set_autoattach(c->skel->progs.count_runtime, false);
	r = count_bpf__load(c->skel);
	if (r) {
		r = -errno;
		snprintf(err, errlen, "cannot load the call-counting BPF programs: %s", strerror(-r));
		goto fail;
	}
	r = count_bpf__attach(c->skel); /* thread exit */
	if (r) {
		r = -errno;
		snprintf(err, errlen, "cannot attach the thread-exit tracepoint: %s", strerror(-r));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	counter_close(c);
	return r;
}

void counter_close(struct counter *c)
{
	if (!c)
		return;
	bpf_link__destroy(c->switch_link);
	bpf_link__destroy(c->runtime_link);
	count_bpf__destroy(c->skel);
	free(c);
}

int counter_attach(struct counter *c, const char *path, uint64_t off, uint64_t cookie,
		   struct bpf_link **entry, struct bpf_link **ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, eo, .bpf_cookie = cookie);
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .bpf_cookie = cookie, .retprobe = true);
	int r;

	/* the return probe first: an entry without its return is closed later as unwound, a
	 * return without its entry is ignored */
	*ret = bpf_program__attach_uprobe_opts(c->skel->progs.count_return, -1, path, off, &ro);
	if (!*ret)
		return -errno;
	*entry = bpf_program__attach_uprobe_opts(c->skel->progs.count_enter, -1, path, off, &eo);
	if (!*entry) {
		r = -errno;
		bpf_link__destroy(*ret);
		*ret = NULL;
		return r;
	}
	return 0;
}

static int counting_targets(const struct counter *c)
{
	int n = 0;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		n += c->on[i];
	return n;
}

int counter_target_cfg(struct counter *c, uint32_t target, const struct pcmon_ccfg *cfg)
{
	if (target >= PCMON_MAX_TARGETS)
		return -EINVAL;
	if (!c->switch_link) {
		c->switch_link = bpf_program__attach(c->skel->progs.count_switch);
		if (!c->switch_link)
			return -errno;
	}
	if (!c->runtime_link) {
		c->runtime_link = bpf_program__attach(c->skel->progs.count_runtime);
		if (!c->runtime_link)
			return -errno;
	}
	c->skel->bss->switch_on = 1;
	c->on[target] = true;
	if (bpf_map__update_elem(c->skel->maps.ccfg, &target, sizeof(target), cfg, sizeof(*cfg), 0))
		return -errno;
	return 0;
}

void counter_target_done(struct counter *c, uint32_t target)
{
	struct pcmon_ccfg none = { 0 };

	if (target >= PCMON_MAX_TARGETS)
		return;
	c->on[target] = false;
	bpf_map__update_elem(c->skel->maps.ccfg, &target, sizeof(target), &none, sizeof(none), 0);
	if (!counting_targets(c)) {
		c->skel->bss->switch_on = 0;
		bpf_link__destroy(c->switch_link);
		bpf_link__destroy(c->runtime_link);
		c->switch_link = c->runtime_link = NULL;
	}
}

int counter_shadow_fd(const struct counter *c)
{
	return bpf_map__fd(c->skel->maps.cstack);
}

int counter_clock_fd(const struct counter *c)
{
	return bpf_map__fd(c->skel->maps.vclocks);
}

int counter_set_adv(struct counter *c, uint64_t cookie, const struct pcmon_wadv *adv)
{
	if (bpf_map__update_elem(c->skel->maps.cadv, &cookie, sizeof(cookie), adv, sizeof(*adv), 0))
		return -errno;
	return 0;
}

int counter_stack(struct counter *c, uint32_t id, uint64_t *ips, size_t n)
{
	if (n < PCMON_COUNT_STACK_DEPTH)
		return -EINVAL;
	if (bpf_map__lookup_elem(c->skel->maps.cwalk, &id, sizeof(id), ips,
				 PCMON_COUNT_STACK_DEPTH * sizeof(*ips), 0))
		return -errno;
	return 0;
}

/* Every key of the totals map, to read or drop them (a snapshot: BPF adds keys meanwhile). */
static struct pcmon_ckey *all_keys(struct counter *c, size_t *n)
{
	int fd = bpf_map__fd(c->skel->maps.cstat);
	struct pcmon_ckey k, *keys = NULL, *pk = NULL;
	size_t cap = 0;

	*n = 0;
	while (!bpf_map_get_next_key(fd, pk, &k)) {
		if (GROW(keys, cap, *n + 1))
			break;
		keys[*n] = k;
		pk = &keys[(*n)++];
	}
	return keys;
}

int counter_stats(struct counter *c, uint32_t target,
		  void (*cb)(void *ctx, const struct pcmon_ckey *k, const struct pcmon_cstat *s),
		  void *ctx)
{
	int fd = bpf_map__fd(c->skel->maps.cstat), ncpu = libbpf_num_possible_cpus();
	struct pcmon_cstat *v, sum;
	struct pcmon_ckey *keys;
	size_t n;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	v = calloc(ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	keys = all_keys(c, &n);
	for (size_t i = 0; i < n; i++) {
		if (PCMON_COUNT_TARGET(keys[i].cookie) != target ||
		    bpf_map_lookup_elem(fd, &keys[i], v))
			continue;
		/* each CPU's part: sums, and the extremes */
		sum = (struct pcmon_cstat){ 0 };
		for (int cpu = 0; cpu < ncpu; cpu++)
			counter_stat_add(&sum, &v[cpu]);
		cb(ctx, &keys[i], &sum);
	}
	free(keys);
	free(v);
	return 0;
}

void counter_clear(struct counter *c, uint32_t target)
{
	int fd = bpf_map__fd(c->skel->maps.cstat);
	struct pcmon_ckey *keys;
	size_t n;

	keys = all_keys(c, &n);
	for (size_t i = 0; i < n; i++)
		if (PCMON_COUNT_TARGET(keys[i].cookie) == target)
			bpf_map_delete_elem(fd, &keys[i]);
	free(keys);
	if (target < PCMON_MAX_TARGETS) {
		c->skel->bss->clock_repairs[target] = 0;
		c->skel->bss->unplaced_steal[target] = 0;
	}
}

uint64_t counter_clock_repairs(const struct counter *c, uint32_t target)
{
	return target < PCMON_MAX_TARGETS ? c->skel->bss->clock_repairs[target] : 0;
}

uint64_t counter_unplaced_steal(const struct counter *c, uint32_t target)
{
	return target < PCMON_MAX_TARGETS ? c->skel->bss->unplaced_steal[target] : 0;
}

void counter_open_activations(struct counter *c,
			      void (*cb)(void *ctx, const struct pcmon_ckey *k), void *ctx)
{
	struct bpf_link *link = bpf_program__attach_iter(c->skel->progs.dump_open, NULL);
	struct pcmon_ckey k;
	int fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	size_t have = 0;

	if (fd < 0) {
		pr_warn("cannot list open activations: %s", strerror(errno));
		bpf_link__destroy(link);
		return;
	}
	for (;;) {
		ssize_t n = read(fd, (char *)&k + have, sizeof(k) - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += n;
		if (have == sizeof(k)) {
			cb(ctx, &k);
			have = 0;
		}
	}
	close(fd);
	bpf_link__destroy(link);
}

/* ---- the probes' cost */

/*
 * What the calibration calls: a function whose first instruction is a push (the kernel
 * emulates a probe there), and one whose first instruction it must step out of line.
 * Written in assembly so that the compiler cannot change either.
 */
__asm__(".text\n"
	".globl counter_calib_push\n.type counter_calib_push, @function\n"
	"counter_calib_push:\n\tpush %rbp\n\tmov %rsp, %rbp\n\tlea 1(%rdi), %eax\n"
	"\tpop %rbp\n\tret\n.size counter_calib_push, .-counter_calib_push\n"
	".globl counter_calib_xol\n.type counter_calib_xol, @function\n"
	"counter_calib_xol:\n\tlea 1(%rdi), %eax\n\tret\n"
	".size counter_calib_xol, .-counter_calib_xol\n");
int counter_calib_push(int x);
int counter_calib_xol(int x);

/* The file offset of @addr in its mapping of this process, and the file (its path). */
static int self_offset(const void *addr, uint64_t *off, char *path, size_t len)
{
	char *maps = read_file("/proc/self/maps", NULL), *line, *save;
	uintptr_t a = (uintptr_t)addr;
	int r = -ENOENT;

	for (line = maps ? strtok_r(maps, "\n", &save) : NULL; line && r;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long start, end, pgoff;
		char *file = strchr(line, '/');

		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &pgoff) != 3 || a < start ||
		    a >= end || !file)
			continue;
		*off = a - start + pgoff;
		snprintf(path, len, "%s", file);
		/* replaced since it was mapped (a rebuild, an upgrade): its path names another
		 * file, whose probes this process never hits; the mapping's own link names it */
		if (strlen(file) > 10 && !strcmp(file + strlen(file) - 10, " (deleted)"))
			snprintf(path, len, "/proc/self/map_files/%lx-%lx", start, end);
		r = 0;
	}
	free(maps);
	return r;
}

static double time_calls(int (*fn)(int), int n)
{
	uint64_t t0 = now_ns();
	int x = 0;

	for (int i = 0; i < n; i++)
		x = fn(x);
	return (double)(now_ns() - t0) / n + (x == -1); /* keeps x alive */
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define CALIB_ROUNDS 5
#define CALIB_CALLS 200
#define CALIB_TRIES 40

/* What calibration rounds gave: per call, probed less bare, and inside the clock readings. */
struct calib {
	double round[2][COUNTER_COST_CPUS * CALIB_ROUNDS];	/* a pair, by kind */
	double entry[COUNTER_COST_CPUS * CALIB_ROUNDS];	/* an entry probe alone (emulated) */
	double in[2][COUNTER_COST_CPUS * CALIB_ROUNDS];
	int n, ncpu;
};

static void calib_in(void *ctx, const struct pcmon_ckey *k, const struct pcmon_cstat *s)
{
	double *in = ctx;

	if (s->closed)
		in[(__u32)k->cookie & PCMON_COUNT_XOL ? 1 : 0] = (double)s->self_ns / s->closed;
}

/* The times this thread has left the CPU, either way. */
static long switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		return -1;
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/*
 * Rounds of calls of @fn (whose entry's probe is of kind @xol) with its probes, on the
 * current CPU, their cost per call beyond @bare into @out; @entry_only: no return probe,
 * else the part of a pair between BPF's clock readings (less the bare call) into @in. A
 * round the thread left the CPU in is done again (up to CALIB_TRIES times in all): the
 * time off CPU is not the probes', and a target's is measured apart (pre_ns).
 */
static int calib_rounds(struct counter *c, int (*fn)(int), bool xol, bool entry_only,
			double bare, double *out, double *in)
{
	uint64_t cookie = PCMON_COUNT_COOKIE(0, xol ? PCMON_COUNT_XOL : 0), off;
	LIBBPF_OPTS(bpf_uprobe_opts, eo, .bpf_cookie = cookie);
	struct bpf_link *e = NULL, *r = NULL;
	int err, round = 0, tries = 0;
	char path[4096];

	err = self_offset((const void *)fn, &off, path, sizeof(path));
	if (err)
		return err;
	if (entry_only) {
		e = bpf_program__attach_uprobe_opts(c->skel->progs.count_enter, -1, path, off, &eo);
		err = e ? 0 : -errno;
	} else {
		err = counter_attach(c, path, off, cookie, &e, &r);
	}
	if (err)
		return err;
	time_calls(fn, 10); /* the first hits map the probes' pages; an activation left open
			     * by an entry alone is closed here */
	while (round < CALIB_ROUNDS && tries++ < CALIB_TRIES) {
		double t, pair_in[2] = { 0, 0 };
		long sw;

		counter_clear(c, 0);
		sw = switches();
		t = time_calls(fn, CALIB_CALLS);
		if (sw < 0 || switches() != sw)
			continue;
		if (!entry_only && !counter_stats(c, 0, calib_in, pair_in))
			in[round] = MAX(pair_in[xol ? 1 : 0] - bare, 0);
		if (!entry_only && !pair_in[xol ? 1 : 0]) {
			err = -ENOENT; /* its probes were never hit: nothing measured */
			break;
		}
		out[round++] = MAX(t - bare, 0);
	}
	if (err) {
		bpf_link__destroy(e);
		bpf_link__destroy(r);
		return err;
	}
	for (; round < CALIB_ROUNDS; round++) { /* never left alone: the last rounds as they are */
		double pair_in[2] = { 0, 0 };

		counter_clear(c, 0);
		out[round] = MAX(time_calls(fn, CALIB_CALLS) - bare, 0);
		if (!entry_only && !counter_stats(c, 0, calib_in, pair_in))
			in[round] = MAX(pair_in[xol ? 1 : 0] - bare, 0);
	}
	bpf_link__destroy(e);
	bpf_link__destroy(r);
	return 0;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n ? v[n / 2] : 0;
}

/*
 * How far the rounds @v (sorted) stray from their median @mid: the farther of their tenth
 * and ninetieth percentiles. A round the scheduler took the CPU from is left out: the
 * targets' time off CPU is not the probes' (and REAL counts it in both clocks).
 */
static double spread_of(const double *v, int n, double mid)
{
	int lo = n / 10, hi = n - 1 - n / 10;

	return n ? MAX(mid - v[lo], v[hi] - mid) : 0;
}

/*
 * One CPU's rounds: calls of a trivial function without probes (the best round: nothing
 * there but the call), with an entry probe alone, and with both, on a push (emulated) and
 * on an instruction stepped out of line. BPF's own clock readings of the probed calls give
 * the part of a pair inside them.
 */
static int calib_cpu(struct counter *c, struct calib *cb)
{
	int (*fns[2])(int) = { counter_calib_push, counter_calib_xol };
	double bare[2] = { 1e18, 1e18 };
	int err = 0, at = cb->ncpu * CALIB_ROUNDS;

	for (int k = 0; k < 2; k++)
		for (int round = 0; round < CALIB_ROUNDS; round++)
			bare[k] = MIN(bare[k], time_calls(fns[k], CALIB_CALLS));
	err = calib_rounds(c, fns[0], false, true, bare[0], &cb->entry[at], NULL);
	for (int k = 0; k < 2 && !err; k++)
		err = calib_rounds(c, fns[k], k, false, bare[k], &cb->round[k][at], &cb->in[k][at]);
	counter_clear(c, 0);
	cb->ncpu++;
	cb->n += CALIB_ROUNDS;
	return err;
}

/*
 * The probes' cost here: calibration rounds in this process, as target 0, on each CPU it
 * may run on (up to COUNTER_COST_CPUS). A probed call's cost varies (a stepped one traps
 * twice, and on a virtual machine each trap leaves to the hypervisor): the median of the
 * rounds is taken, as the targets' hits are as disturbed as a typical round, and how far
 * the rounds strayed from it is kept as the cost's spread.
 */
static int calibrate(struct counter *c)
{
	struct counter_cost *co = &c->cost;
	cpu_set_t was, one;
	struct calib *cb;
	int err = 0;

	cb = calloc(1, sizeof(*cb));
	if (!cb)
		return -ENOMEM;
	c->skel->bss->calib_pid = getpid();
	c->skel->bss->ccost = (struct pcmon_ccost){ 0 };
	if (sched_getaffinity(0, sizeof(was), &was))
		CPU_ZERO(&was);
	for (int cpu = 0; cpu < CPU_SETSIZE && cb->ncpu < COUNTER_COST_CPUS && !err; cpu++) {
		if (!CPU_ISSET(cpu, &was))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			continue;
		err = calib_cpu(c, cb);
	}
	if (!cb->ncpu && !err) /* no CPU could be chosen: wherever it runs */
		err = calib_cpu(c, cb);
	sched_setaffinity(0, sizeof(was), &was);
	c->skel->bss->calib_pid = 0;
	counter_clear(c, 0);
	counter_prog_stats(c, &c->base);
	if (err)
		goto out;
	for (int k = 0; k < 2; k++) {
		double in = median(cb->in[k], cb->n);

		co->pair[k] = median(cb->round[k], cb->n);
		co->spread[k] = spread_of(cb->round[k], cb->n, co->pair[k]);
		co->in[k] = MIN(in, co->pair[k]);
	}
	co->ret = MAX(co->pair[0] - median(cb->entry, cb->n), 0);
	co->cpus = cb->ncpu;
	for (int k = 0; k < 2; k++) {
		c->skel->bss->ccost.pair[k] = (uint64_t)co->pair[k];
		c->skel->bss->ccost.in[k] = (uint64_t)co->in[k];
	}
	pr_info("call counting: a probe pair costs %.0f +- %.0f ns here (%.0f +- %.0f ns where the entry is stepped out of line; %.0f inside the activation's clock), its return probe %.0f ns, on %d CPU(s)",
		co->pair[0], co->spread[0], co->pair[1], co->spread[1], co->in[1], co->ret, co->cpus);
out:
	free(cb);
	return err;
}

int counter_probe_cost_again(struct counter *c, struct counter_cost *out)
{
	int err = calibrate(c);

	if (!err)
		c->cost_err = 0;
	*out = c->cost;
	return err;
}

int counter_probe_cost(struct counter *c, struct counter_cost *out)
{
	if (!c->cost.cpus && !c->cost_err)
		c->cost_err = calibrate(c);
	*out = c->cost;
	return c->cost_err;
}

void counter_prog_stats(struct counter *c, struct counter_prog_stats *out)
{
	struct bpf_program *progs[] = { c->skel->progs.count_enter, c->skel->progs.count_return };

	*out = (struct counter_prog_stats){ 0 };
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			continue;
		out->run_cnt += info.run_cnt;
		out->run_time_ns += info.run_time_ns;
	}
	out->run_cnt -= MIN(out->run_cnt, c->base.run_cnt);
	out->run_time_ns -= MIN(out->run_time_ns, c->base.run_time_ns);
}
