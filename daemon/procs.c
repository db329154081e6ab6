// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "procs.skel.h"
#include "procs.h"
#include "util.h"

struct procs {
	struct procs_bpf *skel;
	struct bpf_link *dl_link;
	int ncpus;		/* possible CPUs (per-CPU map values) */
	uint64_t *gen;		/* the procs_gen map, mapped */
};

/* After every write to procs: copies BPF keeps of an entry are then read again. */
static void procs_changed(struct procs *p)
{
	__atomic_fetch_add(p->gen, 1, __ATOMIC_SEQ_CST);
}

/* Our own dynamic linker: the one processes on this system use (not in other containers). */
static void attach_dl_debug_state(struct procs *p)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");
	char *maps = read_file("/proc/self/maps", NULL), *line, *save, *ld = NULL;

	for (line = maps ? strtok_r(maps, "\n", &save) : NULL; line && !ld;
	     line = strtok_r(NULL, "\n", &save)) {
		char *s = strchr(line, '/');

		if (s && strstr(basename_of(s), "ld-linux"))
			ld = s;
	}
	if (ld)
		p->dl_link = bpf_program__attach_uprobe_opts(p->skel->progs.on_dl_debug_state, -1,
							     ld, 0, &uo);
	if (!p->dl_link)
		pr_warn("cannot watch the dynamic linker (%s): critical sections in libraries loaded later are found only when their code is sampled",
			ld ? ld : "not found");
	free(maps);
}

int procs_open(struct procs **out, char *err, size_t errlen)
{
	struct procs *p = calloc(1, sizeof(*p));
	int r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		snprintf(err, errlen, "cannot count CPUs: %s", strerror(-p->ncpus));
		free(p);
		return -EINVAL;
	}
	p->skel = procs_bpf__open();
	if (!p->skel) {
		r = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-r));
		goto fail;
	}
	bpf_program__set_autoattach(p->skel->progs.on_dl_debug_state, false);
	bpf_program__set_autoattach(p->skel->progs.probes_ack, false);
	r = procs_bpf__load(p->skel);
	if (r) {
		r = -errno;
		snprintf(err, errlen,
			 "cannot load BPF programs: %s (run as root, or grant CAP_BPF and CAP_PERFMON)",
			 strerror(-r));
		goto fail;
	}
	p->gen = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED,
		      bpf_map__fd(p->skel->maps.procs_gen), 0);
	if (p->gen == MAP_FAILED) {
		r = -errno;
		p->gen = NULL;
		snprintf(err, errlen, "cannot map the BPF map procs_gen: %s", strerror(-r));
		goto fail;
	}
	/* lifecycle tracepoints are always on: they are cheap and keep children in targets */
	r = procs_bpf__attach(p->skel);
	if (r) {
		r = -errno;
		snprintf(err, errlen, "cannot attach process tracepoints: %s", strerror(-r));
		goto fail;
	}
	attach_dl_debug_state(p);
	*out = p;
	return 0;
fail:
	procs_close(p);
	return r;
}

void procs_close(struct procs *p)
{
	if (!p)
		return;
	bpf_link__destroy(p->dl_link);
	if (p->gen)
		munmap(p->gen, sysconf(_SC_PAGESIZE));
	procs_bpf__destroy(p->skel);
	free(p);
}

/*
 * Every map @obj declares that the shared object has too, by name (the ones procs.bpf.h
 * defines): @obj's programs then read and write the same maps as everybody's.
 */
int procs_share(struct procs *p, struct bpf_object *obj, char *err, size_t errlen)
{
	struct bpf_map *m, *mine;

	bpf_object__for_each_map(m, obj) {
		if (bpf_map__is_internal(m))
			continue; /* .bss, .rodata: each object's own */
		mine = bpf_object__find_map_by_name(p->skel->obj, bpf_map__name(m));
		if (!mine || bpf_map__is_internal(mine))
			continue;
		if (bpf_map__reuse_fd(m, bpf_map__fd(mine))) {
			int r = -errno;

			snprintf(err, errlen, "cannot share the BPF map %s: %s", bpf_map__name(m),
				 strerror(-r));
			return r;
		}
	}
	return 0;
}

int procs_events_map_fd(struct procs *p)
{
	return bpf_map__fd(p->skel->maps.events);
}

int procs_probe_events_fd(struct procs *p)
{
	return bpf_map__fd(p->skel->maps.probe_events);
}

struct bpf_object *procs_object(struct procs *p)
{
	return p->skel->obj;
}

bool procs_prog_attached(struct procs *p, const char *name)
{
	if (!strcmp(name, "on_dl_debug_state"))
		return p->dl_link != NULL;
	return strcmp(name, "probes_ack") != 0; /* run on demand; the tracepoints always */
}

/* ---- targets */

int procs_target_set(struct procs *p, uint32_t id, uint32_t flags, uint64_t period_ns,
		     uint32_t owner)
{
	struct pcmon_tcfg cfg = { .flags = flags, .owner = owner, .period_ns = period_ns };

	if (bpf_map__update_elem(p->skel->maps.tcfg, &id, sizeof(id), &cfg, sizeof(cfg), 0))
		return -errno;
	return 0;
}

static int pglobal_get(struct procs *p, struct pcmon_pglobal *g)
{
	uint32_t zero = 0;

	return bpf_map__lookup_elem(p->skel->maps.pglobal, &zero, sizeof(zero), g, sizeof(*g), 0);
}

/* Written by the engine only (its loop): BPF reads it. */
static void pglobal_put(struct procs *p, const struct pcmon_pglobal *g)
{
	uint32_t zero = 0;

	bpf_map__update_elem(p->skel->maps.pglobal, &zero, sizeof(zero), g, sizeof(*g), 0);
}

/* Keys of @fd whose value starts with target id @id (procs and cgroup_target do). */
static size_t keys_of_target(int fd, size_t ksz, uint32_t id, void **out)
{
	char *keys = NULL, v[sizeof(struct pcmon_proc)];
	size_t n = 0, cap = 0, kept = 0;

	while (!GROW(keys, cap, (n + 1) * ksz) &&
	       !bpf_map_get_next_key(fd, n ? keys + (n - 1) * ksz : NULL, keys + n * ksz))
		n++;
	for (size_t i = 0; i < n; i++) {
		uint32_t t;

		if (bpf_map_lookup_elem(fd, keys + i * ksz, v))
			continue;
		memcpy(&t, v, sizeof(t));
		if (t == id)
			memmove(keys + kept++ * ksz, keys + i * ksz, ksz);
	}
	*out = keys;
	return kept;
}

void procs_target_clear(struct procs *p, uint32_t id)
{
	struct pcmon_tstat *zero = calloc(p->ncpus, sizeof(*zero));
	int pfd = bpf_map__fd(p->skel->maps.procs), cfd = bpf_map__fd(p->skel->maps.cgroup_target);
	struct pcmon_pglobal g = { 0 };
	void *keys;
	size_t n;

	procs_target_set(p, id, 0, 0, 0);
	if (zero) {
		bpf_map__update_elem(p->skel->maps.tstat, &id, sizeof(id), zero,
				     p->ncpus * sizeof(*zero), 0);
		free(zero);
	}
	n = keys_of_target(pfd, sizeof(uint32_t), id, &keys);
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(pfd, (uint32_t *)keys + i);
	free(keys);
	procs_changed(p);
	n = keys_of_target(cfd, sizeof(uint64_t), id, &keys);
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(cfd, (uint64_t *)keys + i);
	free(keys);
	if (!pglobal_get(p, &g)) {
		g.cgroup_targets -= MIN(n, g.cgroup_targets);
		if (g.all_target == id)
			g.all_target = 0;
		pglobal_put(p, &g);
	}
}

int procs_proc_add(struct procs *p, uint32_t tgid, uint32_t target, uint32_t flags,
		   uint32_t *had)
{
	struct pcmon_proc pr = { .target = target, .flags = flags }, old;

	*had = 0;
	if (!bpf_map__lookup_elem(p->skel->maps.procs, &tgid, sizeof(tgid), &old, sizeof(old), 0) &&
	    old.target != target) {
		*had = old.target;
		if (!(old.flags & PCMON_PF_IMPLICIT))
			return -EEXIST;
	}
	if (bpf_map__update_elem(p->skel->maps.procs, &tgid, sizeof(tgid), &pr, sizeof(pr), 0))
		return -errno;
	procs_changed(p);
	return 0;
}

int procs_proc_epoch(struct procs *p, uint32_t tgid, uint32_t *epoch)
{
	struct pcmon_proc pr;

	if (bpf_map__lookup_elem(p->skel->maps.procs, &tgid, sizeof(tgid), &pr, sizeof(pr), 0))
		return -errno;
	*epoch = pr.epoch;
	return 0;
}

int procs_cgroup_add(struct procs *p, uint64_t cgid, uint32_t target)
{
	struct pcmon_pglobal g = { 0 };

	if (bpf_map__update_elem(p->skel->maps.cgroup_target, &cgid, sizeof(cgid), &target,
				 sizeof(target), BPF_NOEXIST))
		return -errno;
	pglobal_get(p, &g);
	g.cgroup_targets++;
	pglobal_put(p, &g);
	return 0;
}

void procs_all_set(struct procs *p, uint32_t target)
{
	struct pcmon_pglobal g = { 0 };

	pglobal_get(p, &g);
	g.all_target = target;
	pglobal_put(p, &g);
}

/*
 * Sum a per-CPU value made of __u64 counters over the CPUs. Both counter structs are such
 * (pcmon_tstat, pcmon_gstat), so the sum goes field by field without naming them.
 */
static void percpu_sum(struct procs *p, struct bpf_map *m, const void *key, size_t ksz,
		       void *out, size_t vsz)
{
	size_t nf = vsz / sizeof(__u64);
	__u64 *v = calloc(p->ncpus, vsz), *sum = out;

	memset(out, 0, vsz);
	if (v && !bpf_map__lookup_elem(m, key, ksz, v, p->ncpus * vsz, 0))
		for (int c = 0; c < p->ncpus; c++)
			for (size_t f = 0; f < nf; f++)
				sum[f] += v[c * nf + f];
	free(v);
}

void procs_tstat(struct procs *p, uint32_t target, struct pcmon_tstat *sum)
{
	percpu_sum(p, p->skel->maps.tstat, &target, sizeof(target), sum, sizeof(*sum));
}

void procs_gstat(struct procs *p, struct pcmon_gstat *sum)
{
	uint32_t zero = 0;

	percpu_sum(p, p->skel->maps.gstat, &zero, sizeof(zero), sum, sizeof(*sum));
}

int procs_probes_ack(struct procs *p, uint32_t tgid, uint32_t seq)
{
	struct pcmon_probes_ack a = { .tgid = tgid, .seq = seq };
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

	if (bpf_prog_test_run_opts(bpf_program__fd(p->skel->progs.probes_ack), &o))
		return -errno;
	return 0;
}
