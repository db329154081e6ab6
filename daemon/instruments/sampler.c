// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dsring.h"
#include "procs.h"
#include "ring.h"
#include "sample.skel.h"
#include "sampler.h"
#include "pcmon_v8.h"
#include "stab.h"
#include "util.h"

struct period_set {
	uint64_t period_ns;
	int refs;
	int ncpus;
	int *fds;
	struct bpf_link **links;
};

struct usdt_obj {
	char *path;
	dev_t dev;
	ino_t ino;
	struct bpf_link *begin, *end;
};

struct sampler {
	struct procs *procs;	/* the shared lifecycle object and its maps */
	struct sample_bpf *skel;
	pthread_mutex_t usdt_lock; /* the engine's loop and its probe thread attach */
	struct usdt_obj *usdt;	/* objects whose pcmon probes are attached */
	size_t nusdt, cap_usdt;
	uint32_t depth;
	int ncpus;		/* possible CPUs (per-CPU map values) */
	struct period_set periods[PCMON_MAX_PERIODS];
	struct bpf_link *switch_link;
	struct bpf_link *sys_exit_link;	/* lazy stacks of blocked threads (sample.bpf.c) */
	/* unmapping (as it starts and as it ends), exits drop a process's CFI list */
	struct bpf_link *cfi_links[7];
	int offcpu_refs;
	bool use_tp_btf;
	struct dsring *dsr;		/* the dwarf records' ring, read by a thread of its own */
	struct ring *srb;	/* the stacks ring: read on its own, before each drain */
	int stacks_epfd;		/* the engine waits on it for srb (sampler_stacks_get()) */
	struct stab stab[2];		/* what it sent, by counts map */
	struct pcmon_key *keys;		/* a drain's counts entries */
	struct pcmon_val *vals;
	uint8_t *ages;			/* each entry's slice, as sampler_drain()'s @age says */
	size_t cap_keys, cap_vals, cap_ages;
	sampler_dsample_cb ds_cb;
	bool drain_wanted;	/* BPF said a counts map is filling (PCMON_DS_DRAIN) */
	void *ds_ctx;
	sampler_py_cb py_cb;	/* new stacks with Python frames */
	void *py_ctx;
	uint32_t sysctl_depth;	/* kernel.perf_event_max_stack as last read */
	uint64_t sysctl_read_ns;
	struct pcmon_stack *empty;	/* stands in for a stack that could not be read */
};

/*
 * BPF stamps each count with its time slice from CLOCK_TAI, the one wall clock it can read,
 * less this offset: the kernel's TAI offset, whole seconds that chronyd or ntpd may set at
 * any time (0 until one does).
 */
static void keep_tai_offset(struct sampler *s)
{
	const int64_t SEC = 1000000000;
	struct timespec wall, tai;
	int64_t d;

	clock_gettime(CLOCK_REALTIME, &wall);
	clock_gettime(CLOCK_TAI, &tai);
	d = (int64_t)(tai.tv_sec - wall.tv_sec) * SEC + (tai.tv_nsec - wall.tv_nsec);
	d = (d + (d < 0 ? -SEC : SEC) / 2) / SEC * SEC;
	if (s->skel->bss->tai_off_ns != d)
		s->skel->bss->tai_off_ns = d;
}

static int write_int(const char *path, int v)
{
	char buf[32];
	int fd, n, r = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", v);
	if (write(fd, buf, n) != n)
		r = -errno;
	close(fd);
	return r;
}

/*
 * The kernel cuts stacks at kernel.perf_event_max_stack (127 by default). Raise it to what
 * was asked for when we may (it is busy while perf callchains are in use elsewhere). It is
 * left raised: putting it back while another pcmon samples would cut that one's stacks
 * short. Whatever it is, a stack as deep as the limit counts as truncated.
 */
static uint32_t settle_depth(uint32_t want)
{
	const char *path = "/proc/sys/kernel/perf_event_max_stack";
	int cur = 127;

	if (want > PCMON_STACK_MAX)
		want = PCMON_STACK_MAX;
	if (read_int(path, &cur))
		return MIN(want, 127u);
	if ((uint32_t)cur >= want)
		return want;
	if (!write_int(path, want)) {
		pr_info("raised kernel.perf_event_max_stack from %d to %u", cur, want);
		return want;
	}
	pr_warn("cannot raise kernel.perf_event_max_stack to %u (%s): stacks deeper than %d frames are counted as truncated",
		want, strerror(errno), cur);
	return cur;
}

uint64_t sampler_min_period_ns(void)
{
	int rate = 0;
	uint64_t floor = 10000; /* hrtimer-based software events never fire faster than 10us */

	if (!read_int("/proc/sys/kernel/perf_event_max_sample_rate", &rate) && rate > 0)
		floor = MAX(floor, 1000000000ULL / rate);
	return floor;
}

/* ---- the stacks ring, and reading the counts maps */

#define DRAIN_BATCH 1024u

/*
 * Read and delete every entry of @fd in batches (BPF_MAP_LOOKUP_AND_DELETE_BATCH, 5.6+: one
 * system call per DRAIN_BATCH entries instead of three per entry). The map is idle: no
 * program writes it until the next flip. Returns the entries read, or -errno.
 */
static ssize_t take_all(int fd, void **keys, size_t *cap_keys, size_t ksz, void **vals,
			size_t *cap_vals, size_t vsz)
{
	uint64_t token = 0;	/* a hash map's batch cursor is a bucket number */
	size_t n = 0;
	bool first = true;

	for (;;) {
		__u32 cnt = DRAIN_BATCH;
		int r;

		if (grow(keys, cap_keys, n + DRAIN_BATCH, ksz) ||
		    grow(vals, cap_vals, n + DRAIN_BATCH, vsz))
			return -ENOMEM;
		r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &token, &token,
						    (char *)*keys + n * ksz,
						    (char *)*vals + n * vsz, &cnt, NULL);
		if (r && errno != ENOENT)
			return -errno;
		n += cnt;
		first = false;
		if (r)	/* ENOENT: that was the last bucket */
			return n;
	}
}

/* Keep one record of the stacks ring. */
static int on_srec(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;
	const struct pcmon_srec *r = data;
	size_t hdr = offsetof(struct pcmon_srec, st.ip);
	uint32_t n;

	if (len < hdr)
		return 0;
	n = MIN(r->st.len, (len - hdr) / sizeof(__u64));
	n = MIN(n, s->depth);
	if (stab_add(&s->stab[r->gen & 1], r->key, &r->st, n))
		return 0; /* its entries are charged as unwalkable: no frames */
	if (s->py_cb)
		s->py_cb(s->py_ctx, r->pid, r->st.ip, n);
	return 0;
}

static void on_dsample(void *ctx, void *data, size_t len)
{
	struct sampler *s = ctx;
	const struct pcmon_dhdr *h = data;

	if (len >= sizeof(*h) && h->type == PCMON_DS_DRAIN)
		s->drain_wanted = true;
	else if (s->ds_cb)
		s->ds_cb(s->ds_ctx, data, len);
}

static int usdt_attach_locked(struct sampler *s, const char *path);

/*
 * The --unwind dwarf ring: 4 MiB a CPU (each CPU's samples land in the one ring), a power of
 * two from 8 to 128 MiB, and room for four of the largest records (@copy bytes of stack).
 * BPF wakes its reader when it is a quarter full; the reader, a thread of its own
 * (dsring.c), copies the records into a backlog of up to DSRING_BACKLOG rings, so that the
 * engine may spend a while on one record (the first samples of a big object: its debug
 * information read) without the ring filling: at 10 kHz on both CPUs here, 200-1,100 of
 * 95,000 records were lost as a run started when the engine read the ring itself. Every
 * page of the ring is resident in pcmond once mapped (ring.c maps it once): the floor is
 * what a small machine pays for nothing. The backlog's memory is given back once the
 * engine caught up.
 */
#define DSRING_BACKLOG 8
static uint32_t dwarf_ring_bytes(uint32_t copy)
{
	int ncpu = libbpf_num_possible_cpus();
	uint32_t bytes = 8u << 20;

	while (ncpu > 0 && bytes < (uint64_t)ncpu * (4u << 20) && bytes < (128u << 20))
		bytes <<= 1;
	while (bytes < 4 * (uint64_t)copy + (1u << 20))
		bytes <<= 1;
	return bytes;
}

int sampler_usdt_attach(struct sampler *s, const char *path)
{
	int r;

	pthread_mutex_lock(&s->usdt_lock);
	r = usdt_attach_locked(s, path);
	pthread_mutex_unlock(&s->usdt_lock);
	return r;
}

static int usdt_attach_locked(struct sampler *s, const char *path)
{
	struct usdt_obj u = { 0 };
	struct stat st;

	/* once per file: two uprobes on one instruction would count every BEGIN twice */
	if (stat(path, &st))
		return -errno;
	for (size_t i = 0; i < s->nusdt; i++)
		if (s->usdt[i].dev == st.st_dev && s->usdt[i].ino == st.st_ino)
			return 0;
	u.dev = st.st_dev;
	u.ino = st.st_ino;
	/*
	 * pid -1: the probes fire in every process that maps the object, now or later. END
	 * first: an END without its BEGIN is ignored, but a BEGIN whose END fired before it was
	 * attached would leave the thread inside the section for good.
	 */
	u.end = bpf_program__attach_usdt(s->skel->progs.crit_end, -1, path, "pcmon",
					 "critical_end", NULL);
	if (u.end)
		u.begin = bpf_program__attach_usdt(s->skel->progs.crit_begin, -1, path, "pcmon",
						   "critical_begin", NULL);
	if (!u.begin || !u.end) {
		int r = -errno;

		pr_warn("cannot attach pcmon critical-section probes in %s: %s", path, strerror(-r));
		bpf_link__destroy(u.begin);
		bpf_link__destroy(u.end);
		return r;
	}
	u.path = strdup(path);
	if (!u.path || GROW(s->usdt, s->cap_usdt, s->nusdt + 1)) {
		free(u.path);
		bpf_link__destroy(u.begin);
		bpf_link__destroy(u.end);
		return -ENOMEM;
	}
	s->usdt[s->nusdt++] = u;
	s->skel->bss->sections_on = 1;
	pr_info("attached critical-section probes in %s", path);
	return 0;
}

void sampler_py_hook(struct sampler *s, sampler_py_cb cb, void *ctx)
{
	s->py_cb = cb;
	s->py_ctx = ctx;
}

int sampler_py_set(struct sampler *s, uint32_t pid, const struct pcmon_pyproc *pp)
{
	int fd = bpf_map__fd(s->skel->maps.pyprocs);

	if (!pp)
		return bpf_map_delete_elem(fd, &pid) ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, pp, BPF_ANY) ? -errno : 0;
}

int sampler_js_set(struct sampler *s, uint32_t pid, const struct pcmon_v8proc *vp)
{
	int fd = bpf_map__fd(s->skel->maps.v8procs);

	if (!vp)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, vp, BPF_ANY) ? -errno : 0;
}

/* The programs that drop CFI lists (sample_cfi.bpf.h): s->cfi_links[@i]'s. */
static struct bpf_program *cfi_prog(const struct sampler *s, size_t i)
{
	struct bpf_program *progs[] = { s->skel->progs.cfi_munmap, s->skel->progs.cfi_mremap,
					s->skel->progs.cfi_mmap, s->skel->progs.cfi_exit,
					s->skel->progs.cfi_munmap_ret, s->skel->progs.cfi_mremap_ret,
					s->skel->progs.cfi_mmap_ret };

	_Static_assert(ARRAY_SIZE(progs) == ARRAY_SIZE(s->cfi_links), "a link a program");
	return progs[i];
}

/*
 * Classic tracepoints are found by their ids under tracefs, which a machine without systemd
 * may not have mounted: mount it where it belongs, as systemd does at boot.
 */
static void tracefs_mount(void)
{
	if (access("/sys/kernel/tracing/events", F_OK) &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		pr_info("cannot mount tracefs: %s", strerror(errno));
}

int sampler_cfi_fds(struct sampler *s, int *tables, int *procs)
{
	*tables = bpf_map__fd(s->skel->maps.cfitabs);
	*procs = bpf_map__fd(s->skel->maps.cfiprocs);
	tracefs_mount(); /* (the system calls' tracepoints) */
	for (size_t i = 0; i < ARRAY_SIZE(s->cfi_links); i++) {
		if (s->cfi_links[i])
			continue;
		s->cfi_links[i] = bpf_program__attach(cfi_prog(s, i));
		if (!s->cfi_links[i]) {
			int r = -errno;

			pr_warn("cannot watch unmapping for the CFI tables: %s (needs the syscalls tracepoints, under tracefs at /sys/kernel/tracing)",
				strerror(-r));
			return r;
		}
	}
	return 0;
}

int sampler_jvm_set(struct sampler *s, uint32_t pid, uint32_t epoch, bool on)
{
	int fd = bpf_map__fd(s->skel->maps.jvmprocs);

	if (!on)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno : 0;
	pr_debug("pid %u: a JVM, its samples sent with their stacks", pid);
	return bpf_map_update_elem(fd, &pid, &epoch, BPF_ANY) ? -errno : 0;
}

/*
 * What the engine reads of a stack record (dsring_copy_fn): its header and registers, its
 * kernel and runtime frames and its copy of stack, not the rest of the room BPF reserved for
 * them (a record's size class, and arrays sized for the deepest stacks: a copy of 4 KiB or
 * more for a stack of a few hundred bytes, at every sample). What is not copied is never read
 * (sample_convert_dwarf() reads klen, pylen and ulen of them).
 */
static size_t dsample_copy(void *to, const void *from, size_t len)
{
	const size_t at_k = offsetof(struct pcmon_dsample, kstack),
		     at_py = offsetof(struct pcmon_dsample, pylen),
		     at_pyw = offsetof(struct pcmon_dsample, py),
		     at_s = offsetof(struct pcmon_dsample, stack);
	const struct pcmon_dsample *d = from;
	size_t k, py, u;

	if (len < sizeof(*d)) { /* a header alone (PCMON_DS_DRAIN, ...) */
		if (to)
			memcpy(to, from, len);
		return len;
	}
	k = MIN(d->klen, PCMON_KSTACK_MAX) * sizeof(__u64);
	py = MIN(d->pylen, PCMON_PY_FRAMES_MAX + 1) * sizeof(__u64);
	u = MIN(d->ulen, len - at_s);
	if (to) {
		memcpy(to, from, at_k + k);
		memcpy((char *)to + at_py, (const char *)from + at_py, at_pyw - at_py + py);
		memcpy((char *)to + at_s, (const char *)from + at_s, u);
	}
	return at_s + u;
}

/* Does the kernel's BTF name function @name (a kfunc, say)? */
static bool kernel_has_func(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool has;

	if (!btf)
		return false;
	has = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
	btf__free(btf);
	return has;
}

int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	struct sampler *s;
	struct sample_bpf *skel;
	size_t ring;
	int r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->usdt_lock, NULL);
	s->stacks_epfd = epoll_create1(EPOLL_CLOEXEC);
	s->empty = calloc(1, sizeof(*s->empty));
	if (!s->empty || s->stacks_epfd < 0) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		snprintf(err, errlen, "cannot count CPUs: %s", strerror(-s->ncpus));
		r = -EINVAL;
		goto fail;
	}
	s->depth = settle_depth(o->max_depth ? o->max_depth : PCMON_STACK_MAX);
	s->sysctl_depth = s->depth;

	s->procs = o->procs;
	skel = sample_bpf__open();
	if (!skel) {
		r = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(-r));
		goto fail;
	}
	s->skel = skel;
	/* which task is whose: the lifecycle object's maps, not copies of them */
	r = procs_share(s->procs, skel->obj, err, errlen);
	if (r)
		goto fail;
	skel->rodata->max_depth = s->depth;
	skel->rodata->dwarf_stack = o->dwarf_stack ? MIN(o->dwarf_stack, PCMON_DWARF_STACK_MAX) : PCMON_DWARF_STACK_DEFAULT;
	bpf_map__set_max_entries(skel->maps.dsamples, o->ring_bytes ? o->ring_bytes :
								 dwarf_ring_bytes(skel->rodata->dwarf_stack));
	if (o->stack_ring_bytes)
		bpf_map__set_max_entries(skel->maps.stackring, o->stack_ring_bytes);
	if (o->counts_entries) {
		bpf_map__set_max_entries(skel->maps.counts0, o->counts_entries);
		bpf_map__set_max_entries(skel->maps.counts1, o->counts_entries);
	}
	skel->rodata->drain_at = bpf_map__max_entries(skel->maps.counts0) / 8;
	skel->rodata->task_work_ok = kernel_has_func("bpf_task_work_schedule_resume_impl");
	/* both switch programs load; sampler_offcpu_get() attaches one when REAL is wanted */
	bpf_program__set_autoattach(skel->progs.on_switch_btf, false);
	bpf_program__set_autoattach(skel->progs.on_switch_tp, false);
	bpf_program__set_autoattach(skel->progs.dump_offcpu, false);
	bpf_program__set_autoattach(skel->progs.on_sys_exit, false);
	bpf_program__set_autoattach(skel->progs.crit_begin, false);
	bpf_program__set_autoattach(skel->progs.crit_end, false);
	bpf_program__set_autoattach(skel->progs.cfi_munmap, false);
	bpf_program__set_autoattach(skel->progs.cfi_mremap, false);
	bpf_program__set_autoattach(skel->progs.cfi_mmap, false);
	bpf_program__set_autoattach(skel->progs.cfi_exit, false);
	bpf_program__set_autoattach(skel->progs.cfi_munmap_ret, false);
	bpf_program__set_autoattach(skel->progs.cfi_mremap_ret, false);
	bpf_program__set_autoattach(skel->progs.cfi_mmap_ret, false);

	r = sample_bpf__load(skel);
	if (r) {
		r = -errno;
		snprintf(err, errlen,
			 "cannot load BPF programs: %s (run as root, or grant CAP_BPF and CAP_PERFMON)",
			 strerror(-r));
		goto fail;
	}
	keep_tai_offset(s);
	ring = bpf_map__max_entries(skel->maps.dsamples);
	r = dsring_open(bpf_map__fd(skel->maps.dsamples), ring, DSRING_BACKLOG * ring,
			dsample_copy, &s->dsr);
	if (r) {
		snprintf(err, errlen, "cannot read the stacks' ring buffer: %s", strerror(-r));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	sampler_close(s);
	return r;
}

void sampler_close(struct sampler *s)
{
	if (!s)
		return;
	for (int i = 0; i < PCMON_MAX_PERIODS; i++) {
		s->periods[i].refs = 1;
		if (s->periods[i].period_ns)
			sampler_period_put(s, s->periods[i].period_ns);
	}
	bpf_link__destroy(s->switch_link);
	bpf_link__destroy(s->sys_exit_link);
	for (size_t i = 0; i < ARRAY_SIZE(s->cfi_links); i++)
		bpf_link__destroy(s->cfi_links[i]);
	for (size_t i = 0; i < s->nusdt; i++) {
		bpf_link__destroy(s->usdt[i].begin);
		bpf_link__destroy(s->usdt[i].end);
		free(s->usdt[i].path);
	}
	free(s->usdt);
	dsring_close(s->dsr);
	ring_free(s->srb);
	if (s->stacks_epfd >= 0)
		close(s->stacks_epfd);
	sample_bpf__destroy(s->skel);
	pthread_mutex_destroy(&s->usdt_lock);
	stab_free(&s->stab[0]);
	stab_free(&s->stab[1]);
	free(s->keys);
	free(s->vals);
	free(s->ages);
	free(s->empty);
	free(s);
}

uint32_t sampler_dwarf_stack(const struct sampler *s)
{
	return s->skel->rodata->dwarf_stack;
}

uint32_t sampler_max_depth(const struct sampler *s)
{
	return MIN(s->depth, s->sysctl_depth);
}

bool sampler_has_offcpu(const struct sampler *s)
{
	return s->skel != NULL;
}

/* ---- perf events */

static struct period_set *period_find(struct sampler *s, uint64_t period_ns)
{
	for (int i = 0; i < PCMON_MAX_PERIODS; i++)
		if (s->periods[i].period_ns == period_ns)
			return &s->periods[i];
	return NULL;
}

static void period_release(struct period_set *p)
{
	for (int c = 0; c < p->ncpus; c++) {
		bpf_link__destroy(p->links[c]);
		if (p->fds[c] >= 0)
			close(p->fds[c]);
	}
	free(p->fds);
	free(p->links);
	memset(p, 0, sizeof(*p));
}

int sampler_period_get(struct sampler *s, uint64_t period_ns, char *err, size_t errlen)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_period = period_ns,
	};
	struct period_set *p = period_find(s, period_ns);
	bool *online = NULL;
	int nonline = 0, r;

	if (p) {
		p->refs++;
		return 0;
	}
	p = period_find(s, 0);
	if (!p) {
		snprintf(err, errlen, "too many different intervals in use (at most %d): reuse one",
			 PCMON_MAX_PERIODS);
		return -EBUSY;
	}
	r = online_cpus(&online, &nonline);
	if (r) {
		snprintf(err, errlen, "cannot read online CPUs: %s", strerror(-r));
		return r;
	}
	p->period_ns = period_ns;
	p->ncpus = nonline;
	p->fds = malloc(nonline * sizeof(*p->fds));
	p->links = calloc(nonline, sizeof(*p->links));
	if (!p->fds || !p->links) {
		r = -ENOMEM;
		goto fail;
	}
	for (int c = 0; c < nonline; c++)
		p->fds[c] = -1;
	for (int c = 0; c < nonline; c++) {
		if (!online[c])
			continue;
		p->fds[c] = syscall(__NR_perf_event_open, &attr, -1, c, -1, PERF_FLAG_FD_CLOEXEC);
		if (p->fds[c] < 0) {
			r = -errno;
			snprintf(err, errlen,
				 "failed to open a cpu-clock perf event on CPU %d: %s (run as root or grant CAP_PERFMON)",
				 c, strerror(-r));
			goto fail;
		}
		p->links[c] = bpf_program__attach_perf_event(s->skel->progs.on_sample, p->fds[c]);
		if (!p->links[c]) {
			r = -errno;
			snprintf(err, errlen, "failed to attach BPF to the perf event on CPU %d: %s", c,
				 strerror(-r));
			goto fail;
		}
	}
	free(online);
	p->refs = 1;
	return 0;
fail:
	free(online);
	period_release(p);
	return r;
}

void sampler_period_put(struct sampler *s, uint64_t period_ns)
{
	struct period_set *p = period_find(s, period_ns);

	if (p && --p->refs <= 0)
		period_release(p);
}

/*
 * tp_btf/sched_switch where the kernel has BTF for tracepoints (5.5+); else the classic
 * tracepoint, which needs tracefs (mounted here if it is not). PCMON_FORCE_TRACEPOINT=1
 * takes the fallback on purpose, for tests.
 */
int sampler_offcpu_get(struct sampler *s, char *err, size_t errlen)
{
	int r;

	if (s->offcpu_refs++)
		return 0;
	s->switch_link = NULL;
	if (!getenv("PCMON_FORCE_TRACEPOINT"))
		s->switch_link = bpf_program__attach(s->skel->progs.on_switch_btf);
	s->use_tp_btf = s->switch_link != NULL;
	if (!s->switch_link) {
		tracefs_mount();
		s->switch_link = bpf_program__attach(s->skel->progs.on_switch_tp);
	}
	if (!s->switch_link) {
		r = -errno;
		s->offcpu_refs = 0;
		snprintf(err, errlen,
			 "cannot attach to sched_switch for REAL time: %s (needs tp_btf, or tracefs at /sys/kernel/tracing)",
			 strerror(-r));
		return r;
	}
	/*
	 * A blocked thread's stack is taken as its system call returns, by a task work where
	 * the kernel has them (6.18), else by a sys_exit program; without either, as it
	 * blocks: slower, as exact. PCMON_FORCE_SYS_EXIT=1 takes the second on purpose, for
	 * tests.
	 */
	s->skel->bss->real_on = 1;
	if (s->use_tp_btf && s->skel->rodata->task_work_ok && !getenv("PCMON_FORCE_SYS_EXIT")) {
		s->skel->bss->lazy_stacks = PCMON_SETTLE_TASK_WORK;
		return 0;
	}
	if (s->use_tp_btf)
		s->sys_exit_link = bpf_program__attach(s->skel->progs.on_sys_exit);
	if (!s->sys_exit_link && s->use_tp_btf)
		pr_info("cannot attach to sys_exit (%s): blocked threads' stacks are taken as they block",
			strerror(errno));
	s->skel->bss->lazy_stacks = s->sys_exit_link ? PCMON_SETTLE_SYS_EXIT : PCMON_SETTLE_NONE;
	return 0;
}

void sampler_offcpu_put(struct sampler *s)
{
	if (s->offcpu_refs && --s->offcpu_refs == 0) {
		s->skel->bss->lazy_stacks = 0;
		s->skel->bss->real_on = 0;
		bpf_link__destroy(s->switch_link);
		bpf_link__destroy(s->sys_exit_link);
		s->switch_link = s->sys_exit_link = NULL;
	}
}

/* ---- draining */

/*
 * Hand @n entries to @cb, oldest slice first: a target's slice is closed as the first count
 * of a later one comes (slices_add()). A drain at a slice's end holds it and the few
 * milliseconds of the next; one that came late, three or more. Without memory for the
 * order, the entries come as they are (each still to its own slice, but the oldest).
 */
static void give_entries(struct sampler *s, struct stab *t, size_t n, sampler_age_cb age,
			 sampler_entry_cb cb, void *ctx)
{
	uint64_t seen[256 / 64] = { 0 }, wall = wall_ns();
	bool order = age && !GROW(s->ages, s->cap_ages, n);

	for (size_t i = 0; order && i < n; i++) {
		s->ages[i] = age(ctx, &s->keys[i], wall);
		seen[s->ages[i] / 64] |= 1ull << (s->ages[i] % 64);
	}
	for (int a = order ? 255 : 0; a >= 0; a--) {
		if (order && !(seen[a / 64] >> (a % 64) & 1))
			continue;
		for (size_t i = 0; i < n; i++) {
			const struct pcmon_key *e = &s->keys[i];
			const struct pcmon_stack *us, *ks;

			if (order && s->ages[i] != a)
				continue;
			us = stab_find(t, e->ustack);
			ks = stab_find(t, e->kstack);
			/* a stack that could not be kept (out of memory): charged as unwalkable */
			cb(ctx, e, &s->vals[i], e->ustack ? (us ? us : s->empty) : NULL,
			   e->kstack ? (ks ? ks : s->empty) : NULL, wall,
			   order ? a : age ? age(ctx, e, wall) : 0);
		}
	}
}

/*
 * Wait until every BPF program that may have read the old `gen` has returned. The programs
 * run inside RCU read-side sections (perf_event in NMI/IRQ context, tracepoints under
 * rcu_read_lock), and MEMBARRIER_CMD_GLOBAL is a synchronize_rcu() in the kernel.
 */
static void grace_period(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	/* nohz_full kernels refuse it: fall back to a pause far longer than any program */
	usleep(20000);
}

int sampler_drain(struct sampler *s, sampler_age_cb age, sampler_entry_cb cb, void *ctx)
{
	uint32_t old = s->skel->bss->gen & 1;
	int cfd = bpf_map__fd(old ? s->skel->maps.counts1 : s->skel->maps.counts0);
	struct stab *t = &s->stab[old];
	ssize_t n;
	uint64_t now = now_ns();

	/* someone may have lowered the limit since: stacks that deep are cut off */
	if (now - s->sysctl_read_ns > 1000000000ULL) {
		int cur = 0;

		keep_tai_offset(s);

		if (!read_int("/proc/sys/kernel/perf_event_max_stack", &cur) && cur > 0)
			s->sysctl_depth = cur;
		s->sysctl_read_ns = now;
	}
	/* nothing was written since the last drain: no flip, no grace period */
	if (!__atomic_load_n(&s->skel->bss->touched[old], __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&s->skel->bss->gen, old ^ 1, __ATOMIC_SEQ_CST);
	grace_period();
	/* no program writes the old map any more, and every stack its keys name is sent */
	s->skel->bss->touched[old] = 0;
	s->skel->bss->nkeys[old] = 0;
	s->skel->bss->woken[old] = 0;
	if (s->srb)
		ring_consume(s->srb);
	n = take_all(cfd, (void **)&s->keys, &s->cap_keys, sizeof(*s->keys), (void **)&s->vals,
		     &s->cap_vals, sizeof(*s->vals));
	if (n < 0) {
		s->skel->bss->touched[old] = 1; /* still there: try again */
		return n;
	}
	give_entries(s, t, n, age, cb, ctx);
	stab_clear(t);
	return 0;
}

const char *sampler_blocked_stacks(const struct sampler *s)
{
	static const char *const names[] = {
		[PCMON_SETTLE_NONE] = "at_block",
		[PCMON_SETTLE_SYS_EXIT] = "sys_exit",
		[PCMON_SETTLE_TASK_WORK] = "task_work",
	};
	__u32 how = s->skel->bss->lazy_stacks;

	return s->offcpu_refs && how < ARRAY_SIZE(names) ? names[how] : NULL;
}


bool sampler_drain_wanted(struct sampler *s)
{
	bool r = s->drain_wanted;

	s->drain_wanted = false;
	return r;
}

bool sampler_pending(const struct sampler *s, uint32_t *entries)
{
	uint32_t g = __atomic_load_n(&s->skel->bss->gen, __ATOMIC_RELAXED) & 1;

	*entries = __atomic_load_n(&s->skel->bss->nkeys[g], __ATOMIC_RELAXED);
	return __atomic_load_n(&s->skel->bss->touched[g], __ATOMIC_RELAXED);
}

uint32_t sampler_capacity(const struct sampler *s)
{
	return bpf_map__max_entries(s->skel->maps.counts0);
}

int sampler_thread_name(struct sampler *s, uint32_t tid, char *comm, char *pcomm, size_t len)
{
	struct pcmon_tname n;

	if (bpf_map__lookup_elem(s->skel->maps.tnames, &tid, sizeof(tid), &n, sizeof(n), 0))
		return -ENOENT;
	snprintf(comm, len, "%.*s", (int)sizeof(n.comm), n.comm);
	snprintf(pcomm, len, "%.*s", (int)sizeof(n.pcomm), n.pcomm);
	return 0;
}

/*
 * Walk every task with a BPF iterator and collect the intervals still open: each record
 * (struct pcmon_open_hdr) is an interval with its stacks, or a --unwind dwarf thread's copy.
 */
void sampler_open_intervals(struct sampler *s, sampler_open_cb cb, void *ctx)
{
	struct bpf_link *link = bpf_program__attach_iter(s->skel->progs.dump_offcpu, NULL);
	const size_t cap = sizeof(struct pcmon_open_hdr) +
			   MAX(sizeof(struct pcmon_offcpu), sizeof(struct pcmon_dsample) + PCMON_OPEN_STACK);
	char *buf = malloc(cap);
	size_t have = 0;
	int fd = -1;

	if (!link || !buf) {
		pr_warn("cannot list open off-CPU intervals: %s", strerror(errno));
		goto out;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		pr_warn("cannot list open off-CPU intervals: %s", strerror(errno));
		goto out;
	}
	for (;;) {
		struct pcmon_open_hdr h = { 0 };
		size_t want = sizeof(h);
		ssize_t n;

		if (have >= sizeof(h)) {
			memcpy(&h, buf, sizeof(h));
			if ((h.type != PCMON_OPEN_FP && h.type != PCMON_OPEN_DWARF) ||
			    h.len > cap - sizeof(h) ||
			    (h.type == PCMON_OPEN_FP && h.len != sizeof(struct pcmon_offcpu)) ||
			    (h.type == PCMON_OPEN_DWARF && h.len < sizeof(struct pcmon_dsample))) {
				pr_warn("open off-CPU intervals: a record of type %u, %u bytes: not read",
					h.type, h.len);
				break;
			}
			want += h.len;
		}
		if (have == want) {
			if (h.type == PCMON_OPEN_FP) {
				struct pcmon_offcpu *o = (void *)(buf + sizeof(h));

				o->urec.st.len = MIN(o->urec.st.len, s->depth);
				o->krec.st.len = MIN(o->krec.st.len, s->depth);
				cb(ctx, o, NULL, 0);
			} else {
				cb(ctx, NULL, (void *)(buf + sizeof(h)), h.len);
			}
			have = 0;
			continue;
		}
		n = read(fd, buf + have, want - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			pr_warn("open off-CPU intervals: %s: the rest not read", strerror(errno));
		if (n <= 0)
			break;
		have += n;
	}
out:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	free(buf);
}

/* ---- events */

int sampler_dsamples_fd(struct sampler *s)
{
	return dsring_fd(s->dsr);
}

void sampler_backlog_json(const struct sampler *s, cJSON *o)
{
	cJSON_AddNumberToObject(o, "dwarf_backlog_peak_kib", (double)(dsring_peak(s->dsr) >> 10));
	cJSON_AddNumberToObject(o, "dwarf_backlog_dropped", (double)dsring_dropped(s->dsr));
}

int sampler_poll(struct sampler *s, sampler_dsample_cb ds, void *ctx)
{
	s->ds_cb = ds;
	s->ds_ctx = ctx;
	if (s->srb)
		ring_consume(s->srb);
	return dsring_take(s->dsr, on_dsample, s);
}

int sampler_stacks_fd(struct sampler *s)
{
	return s->stacks_epfd;
}

/*
 * The stacks ring is mapped when a target first needs it: frame-pointer stacks and REAL
 * time's intervals go through it, and so do a kernel thread's kernel frames under --kernel;
 * the other on-CPU samples of --unwind dwarf and auto (the default) do not. Once mapped its pages are resident in pcmond: 8 MB a system-wide
 * target with the default unwinding need not pay. Records BPF sent before are read then.
 */
int sampler_stacks_get(struct sampler *s, char *err, size_t errlen)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int r;

	if (s->srb)
		return 0;
	s->srb = ring_new(bpf_map__fd(s->skel->maps.stackring), on_srec, s);
	if (s->srb &&
	    !epoll_ctl(s->stacks_epfd, EPOLL_CTL_ADD, ring_fd(s->srb), &ev))
		return 0;
	r = -errno;
	ring_free(s->srb);
	s->srb = NULL;
	snprintf(err, errlen, "cannot map the stacks ring buffer: %s", strerror(-r));
	return r;
}

void sampler_programs_json(struct sampler *s, cJSON *arr)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, s->skel->obj) {
		bool attached = true;

		if (p == s->skel->progs.on_switch_btf)
			attached = s->switch_link && s->use_tp_btf;
		if (p == s->skel->progs.on_switch_tp)
			attached = s->switch_link && !s->use_tp_btf;
		if (p == s->skel->progs.on_sys_exit)
			attached = s->sys_exit_link != NULL;
		for (size_t i = 0; i < ARRAY_SIZE(s->cfi_links); i++)
			if (p == cfi_prog(s, i))
				attached = s->cfi_links[i] != NULL;
		if (p == s->skel->progs.dump_offcpu)
			attached = false; /* run on demand */
		if (p == s->skel->progs.crit_begin || p == s->skel->progs.crit_end) {
			pthread_mutex_lock(&s->usdt_lock);
			attached = s->nusdt > 0;
			pthread_mutex_unlock(&s->usdt_lock);
		}
		if (p == s->skel->progs.on_sample) {
			attached = false;
			for (int i = 0; i < PCMON_MAX_PERIODS; i++)
				attached |= s->periods[i].refs > 0;
		}
		procs_program_json(p, attached, arr);
	}
}
