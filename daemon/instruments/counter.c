// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "count.skel.h"
#include "counter.h"
#include "procs.h"
#include "util.h"

struct counter {
	struct count_bpf *skel;
	struct bpf_link *switch_link;	/* while VIRTUAL targets count */
	bool virt[PCMON_MAX_TARGETS];
	double cost_ns, cost_xol_ns;	/* one entry + one return, measured; 0: not yet */
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

static int virtual_targets(const struct counter *c)
{
	int n = 0;

	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		n += c->virt[i];
	return n;
}

int counter_target_cfg(struct counter *c, uint32_t target, const struct pcmon_ccfg *cfg)
{
	if (target >= PCMON_MAX_TARGETS)
		return -EINVAL;
	if (cfg->virt && !c->switch_link) {
		c->switch_link = bpf_program__attach(c->skel->progs.count_switch);
		if (!c->switch_link)
			return -errno;
	}
	c->virt[target] = cfg->virt;
	if (bpf_map__update_elem(c->skel->maps.ccfg, &target, sizeof(target), cfg, sizeof(*cfg), 0))
		return -errno;
	return 0;
}

void counter_target_done(struct counter *c, uint32_t target)
{
	struct pcmon_ccfg none = { 0 };

	if (target >= PCMON_MAX_TARGETS)
		return;
	c->virt[target] = false;
	bpf_map__update_elem(c->skel->maps.ccfg, &target, sizeof(target), &none, sizeof(none), 0);
	if (!virtual_targets(c)) {
		bpf_link__destroy(c->switch_link);
		c->switch_link = NULL;
	}
}

int counter_shadow_fd(const struct counter *c)
{
	return bpf_map__fd(c->skel->maps.cstack);
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
		/* each CPU's part: sums, and the largest maximum */
		sum = (struct pcmon_cstat){ 0 };
		for (int cpu = 0; cpu < ncpu; cpu++) {
			uint64_t max = MAX(sum.max_ns, v[cpu].max_ns);

#define SUM_CSTAT(f, need) sum.f += v[cpu].f;
			PCMON_CSTAT_FIELDS(SUM_CSTAT)
#undef SUM_CSTAT
			sum.max_ns = max;
		}
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

#define CALIB_ROUNDS 7

/*
 * One entry and one return probe, as they cost here: calls of a trivial function with and
 * without probes, in this process as the calibration target. With probes, the median of a
 * few rounds: a probed call's cost varies (a stepped one traps twice, and on a virtual machine
 * each trap leaves to the hypervisor), and the targets' hits are as disturbed as a typical
 * round, not as the least disturbed one; the best round was up to 10 % below the median.
 * Without, the best round: nothing there but the call.
 */
static int calibrate_one(struct counter *c, int (*fn)(int), bool xol, double *cost)
{
	struct bpf_link *e = NULL, *r = NULL;
	double bare = 1e18, probed[CALIB_ROUNDS];
	char path[4096];
	uint64_t off;
	int err;

	err = self_offset((const void *)fn, &off, path, sizeof(path));
	if (err)
		return err;
	err = counter_attach(c, path, off, PCMON_COUNT_COOKIE(0, xol ? PCMON_COUNT_XOL : 0), &e, &r);
	if (err)
		return err;
	/* about 0.1 s in all: it delays the first counting target's start */
	for (int round = 0; round < CALIB_ROUNDS; round++)
		probed[round] = time_calls(fn, 700);
	bpf_link__destroy(e);
	bpf_link__destroy(r);
	for (int round = 0; round < CALIB_ROUNDS; round++)
		bare = MIN(bare, time_calls(fn, 700));
	qsort(probed, CALIB_ROUNDS, sizeof(*probed), cmp_double);
	*cost = MAX(probed[CALIB_ROUNDS / 2] - bare, 0);
	return 0;
}

/*
 * One entry and one return probe, as they cost here: calls of a trivial function with and
 * without probes, the best of a few rounds of each (the least disturbed), in this process as
 * the calibration target; for each kind of probed instruction.
 */
static int calibrate(struct counter *c)
{
	int err;

	c->skel->bss->calib_pid = getpid();
	err = calibrate_one(c, counter_calib_push, false, &c->cost_ns);
	if (!err)
		err = calibrate_one(c, counter_calib_xol, true, &c->cost_xol_ns);
	c->skel->bss->calib_pid = 0;
	counter_clear(c, 0);
	counter_prog_stats(c, &c->base);
	if (!err)
		pr_info("call counting: an entry and return probe cost %.0f ns here (%.0f ns where the instruction is stepped out of line)",
			c->cost_ns, c->cost_xol_ns);
	return err;
}

int counter_probe_cost(struct counter *c, double *emulated, double *stepped)
{
	if (!c->cost_ns && !c->cost_err)
		c->cost_err = calibrate(c);
	*emulated = c->cost_ns;
	*stepped = c->cost_xol_ns;
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
