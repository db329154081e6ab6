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
#include "procmaps.h"
#include "procs.h"
#include "ring.h"
#include "util.h"

struct procs {
	struct procs_bpf *skel;
	struct ring *rb;		/* lifecycle events */
	procs_event_cb cb;
	void *cb_ctx;
	int stats_fd;			/* keeps kernel.bpf_stats_enabled on (bpf_stats) */
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

/* libbpf's own chatter is detail: pcmon reports each failure itself in one line. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	enum log_level lvl = level == LIBBPF_DEBUG ? LOG_DEBUG : LOG_INFO;
	char *buf;
	int n;

	if ((int)lvl > log_verbosity)
		return 0;
	/* (whole: a verifier's log is thousands of lines, and says why at its end) */
	n = vasprintf(&buf, fmt, ap);
	if (n < 0)
		return 0;
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	log_msg(lvl, "%s", buf);
	free(buf);
	return 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct procs *p = ctx;

	if (len >= sizeof(struct pcmon_event) && p->cb)
		p->cb(p->cb_ctx, data);
	return 0;
}

int procs_open(bool bpf_stats, struct procs **out, char *err, size_t errlen)
{
	struct procs *p = calloc(1, sizeof(*p));
	int r;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	libbpf_set_print(libbpf_print);
	p->stats_fd = -1;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(err, errlen,
			 "no kernel BTF at /sys/kernel/btf/vmlinux: pcmon needs a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		free(p);
		return -ENOTSUP;
	}
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
	p->rb = ring_new(bpf_map__fd(p->skel->maps.events), on_event, p);
	if (!p->rb) {
		r = -errno;
		snprintf(err, errlen, "cannot create the event ring buffer: %s", strerror(-r));
		goto fail;
	}
	/*
	 * Run-time statistics cost every BPF program on the machine two clock reads a run
	 * (5 % of a context-switch-heavy program's time under REAL): only when asked for.
	 */
	p->stats_fd = bpf_stats ? bpf_enable_stats(BPF_STATS_RUN_TIME) : -1;
	if (bpf_stats && p->stats_fd < 0)
		pr_info("BPF run-time statistics unavailable: %s", strerror(errno));
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
	ring_free(p->rb);
	if (p->stats_fd >= 0)
		close(p->stats_fd);
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

int procs_events_fd(struct procs *p)
{
	return ring_fd(p->rb);
}

int procs_poll(struct procs *p, procs_event_cb cb, void *ctx)
{
	p->cb = cb;
	p->cb_ctx = ctx;
	return ring_consume(p->rb);
}

int procs_probe_events_fd(struct procs *p)
{
	return bpf_map__fd(p->skel->maps.probe_events);
}

int procs_probe_files_fd(struct procs *p)
{
	return bpf_map__fd(p->skel->maps.probe_files);
}

bool procs_bpf_stats(const struct procs *p)
{
	int on = 0;

	return p->stats_fd >= 0 || (!read_int("/proc/sys/kernel/bpf_stats_enabled", &on) && on > 0);
}

void procs_program_json(struct bpf_program *prog, bool attached, cJSON *arr)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_program__fd(prog);
	cJSON *o;

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", bpf_program__name(prog));
	cJSON_AddBoolToObject(o, "attached", attached);
	cJSON_AddNumberToObject(o, "runs", info.run_cnt);
	cJSON_AddNumberToObject(o, "run_time_ns", info.run_time_ns);
	cJSON_AddNumberToObject(o, "avg_ns", info.run_cnt ? (double)info.run_time_ns / info.run_cnt : 0);
	cJSON_AddItemToArray(arr, o);
}

void procs_programs_json(struct procs *p, cJSON *arr)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, p->skel->obj) {
		const char *name = bpf_program__name(prog);

		/* probes_ack runs on demand; the tracepoints are always attached */
		procs_program_json(prog, !strcmp(name, "on_dl_debug_state") ? p->dl_link != NULL
									      : strcmp(name, "probes_ack") != 0,
				   arr);
	}
}

/* ---- targets */

int procs_target_set(struct procs *p, uint32_t id, const struct pcmon_tcfg *cfg)
{
	if (bpf_map__update_elem(p->skel->maps.tcfg, &id, sizeof(id), cfg, sizeof(*cfg), 0))
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

/*
 * The ways in go first, then the processes: a process of a cgroup or --all target joins it
 * when BPF first sees it (proc_of()), so one taken out while its cgroup still led to the
 * target came straight back, and stayed with the stopped target for good (CI saw a target
 * started on the cgroup of one just stopped get none of its processes). A BPF program that
 * read the way in just before it went may still add its process: the processes are looked
 * for again until none is left.
 */
void procs_target_clear(struct procs *p, uint32_t id)
{
	struct pcmon_tstat *zero = calloc(p->ncpus, sizeof(*zero));
	int pfd = bpf_map__fd(p->skel->maps.procs), cfd = bpf_map__fd(p->skel->maps.cgroup_target);
	struct pcmon_pglobal g = { 0 };
	void *keys;
	size_t n;

	procs_target_set(p, id, &(struct pcmon_tcfg){ 0 });
	if (zero) {
		bpf_map__update_elem(p->skel->maps.tstat, &id, sizeof(id), zero,
				     p->ncpus * sizeof(*zero), 0);
		free(zero);
	}
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
	for (int pass = 0; pass < 4; pass++) {
		n = keys_of_target(pfd, sizeof(uint32_t), id, &keys);
		for (size_t i = 0; i < n; i++)
			bpf_map_delete_elem(pfd, (uint32_t *)keys + i);
		free(keys);
		if (!n)
			break;
		procs_changed(p);
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

int procs_exit_maps(struct procs *p, uint32_t tgid, uint32_t epoch, struct procmaps_vma *v, int max)
{
	struct pcmon_exit_key k = { .tgid = tgid, .epoch = epoch };
	struct pcmon_exit_maps m;
	int n;

	if (bpf_map__lookup_elem(p->skel->maps.exit_maps, &k, sizeof(k), &m, sizeof(m), 0))
		return -errno;
	n = MIN((int)m.n, max);
	for (int i = 0; i < n; i++) {
		const struct pcmon_exit_vma *x = &m.v[i];

		/* the kernel's dev_t is major << 20 | minor; ours is major << 32 | minor */
		v[i] = (struct procmaps_vma){ .start = x->start, .end = x->end, .pgoff = x->pgoff,
					      .dev = (uint64_t)(x->dev >> 20) << 32 |
						     (x->dev & 0xfffff),
					      .ino = x->ino, .exec = true };
	}
	return n;
}

void procs_tail_gen(struct procs *p, uint32_t target)
{
	uint32_t gen = 0;

	bpf_map__lookup_elem(p->skel->maps.tailgen, &target, sizeof(target), &gen, sizeof(gen), 0);
	gen++;
	bpf_map__update_elem(p->skel->maps.tailgen, &target, sizeof(target), &gen, sizeof(gen), 0);
}

void procs_tails(struct procs *p, int delta)
{
	struct pcmon_pglobal g = { 0 };

	pglobal_get(p, &g);
	g.ntailed = delta < 0 && (uint32_t)-delta > g.ntailed ? 0 : g.ntailed + delta;
	pglobal_put(p, &g);
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
