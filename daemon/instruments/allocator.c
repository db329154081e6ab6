// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation instrument's BPF object (allocator.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "alloc.skel.h"
#include "alloc_core.h"
#include "allocator.h"
#include "funcs.h"
#include "procs.h"
#include "ring.h"
#include "util.h"

#define NAMES_PER_FN 2
#define ATTACH_UPROBE_SESSION 57	/* enum bpf_attach_type, 6.13 (BPF_TRACE_UPROBE_SESSION) */

/* glibc's allocator, by enum pcmon_afn; each function may have more than one name */
static const char *const glibc_names[][NAMES_PER_FN] = {
	[PCMON_AFN_MALLOC] = { "malloc" },
	[PCMON_AFN_CALLOC] = { "calloc" },
	[PCMON_AFN_REALLOC] = { "realloc" },
	[PCMON_AFN_MEMALIGN] = { "memalign", "aligned_alloc" },
	[PCMON_AFN_POSIX_MEMALIGN] = { "posix_memalign" },
	[PCMON_AFN_VALLOC] = { "valloc", "pvalloc" },
	[PCMON_AFN_FREE] = { "free" },
};

struct probed {
	dev_t dev;	/* the file, however a process names it (/proc/PID/root/...) */
	ino_t ino;
	uint32_t pid;	/* the process the probes are for */
	char *path;
	struct bpf_link **links;
	size_t nlinks, cap_links;
	int *fds;	/* uprobe sessions' links (libbpf 1.1 has no call that makes them) */
	size_t nfds, cap_fds;
};

struct allocator {
	struct alloc_bpf *skel;
	bool session;	/* allocating functions probed as uprobe sessions (alloc_session) */
	struct ring *rb;
	struct probed *files;
	size_t nfiles, cap_files;
	void (*cb)(void *ctx, const struct pcmon_arec *r);
	void *ctx;
};

/* The countdown table (alloc_quantile()), for BPF's draws. */
static int fill_quantiles(struct allocator *a)
{
	int fd = bpf_map__fd(a->skel->maps.aquant);

	for (uint32_t i = 0; i < PCMON_ALLOC_QUANTILES; i++) {
		uint32_t q = alloc_quantile(i);

		if (bpf_map_update_elem(fd, &i, &q, 0))
			return -errno;
	}
	return 0;
}

static int on_rec(void *ctx, void *data, size_t len)
{
	struct allocator *a = ctx;
	const struct pcmon_arec *r = data;

	/* (a record is cut after its stack: its frames are all there) */
	if (len >= offsetof(struct pcmon_arec, ip) &&
	    r->nip <= (len - offsetof(struct pcmon_arec, ip)) / sizeof(r->ip[0]) && a->cb)
		a->cb(a->ctx, r);
	return 0;
}

int allocator_open(struct procs *p, struct allocator **out, char *err, size_t errlen)
{
	struct allocator *a = calloc(1, sizeof(*a));
	int r;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	/* with uprobe sessions where the kernel has them (6.13), else entry and return probes
	 * (PCMON_ALLOC_NO_SESSION=1: those, to test them where sessions are); the pair is
	 * loaded either way, for a file whose session link the kernel refuses */
	const char *no = getenv("PCMON_ALLOC_NO_SESSION");

	for (int with = !(no && strcmp(no, "0")); with >= 0; with--) {
		alloc_bpf__destroy(a->skel);
		a->skel = alloc_bpf__open();
		if (!a->skel) {
			r = -errno;
			snprintf(err, errlen, "cannot open the allocation BPF object: %s",
				 strerror(-r));
			goto fail;
		}
		r = procs_share(p, a->skel->obj, err, errlen);
		if (r)
			goto fail;
		if (with)
			bpf_program__set_expected_attach_type(a->skel->progs.alloc_session,
							      ATTACH_UPROBE_SESSION);
		bpf_program__set_autoload(a->skel->progs.alloc_session, with);
		r = alloc_bpf__load(a->skel);
		if (!r) {
			a->session = with;
			break;
		}
	}
	if (r) {
		r = -errno;
		snprintf(err, errlen, "cannot load the allocation BPF programs: %s", strerror(-r));
		goto fail;
	}
	r = fill_quantiles(a);
	a->rb = r ? NULL : ring_new(bpf_map__fd(a->skel->maps.arecs), on_rec, a);
	if (!a->rb) {
		r = r ? r : -errno;
		snprintf(err, errlen, "cannot read the allocation ring: %s", strerror(-r));
		goto fail;
	}
	*out = a;
	return 0;
fail:
	allocator_close(a);
	return r;
}

/* The probes of @f, let go. */
static void probed_free(struct probed *f)
{
	for (size_t k = 0; k < f->nlinks; k++)
		bpf_link__destroy(f->links[k]);
	for (size_t k = 0; k < f->nfds; k++)
		close(f->fds[k]);
	free(f->fds);
	free(f->links);
	free(f->path);
}

const char *allocator_probes(const struct allocator *a)
{
	return a->session ? "session" : "entry+return";
}

void allocator_close(struct allocator *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfiles; i++)
		probed_free(&a->files[i]);
	free(a->files);
	ring_free(a->rb);
	alloc_bpf__destroy(a->skel);
	free(a);
}

/* @fn at file offset @off of @f's file as a probe at its entry and one at its return (just
 * the entry for free). */
static int probe_pair(struct allocator *a, struct probed *f, enum pcmon_afn fn, uint64_t off)
{
	LIBBPF_OPTS(bpf_uprobe_opts, eo, .bpf_cookie = fn);
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .bpf_cookie = fn, .retprobe = true);
	struct bpf_link *l[2] = { NULL, NULL };
	int pid = (int)f->pid;	/* (its process's threads alone trap: others run on) */
	size_t n = 0;

	if (fn != PCMON_AFN_FREE) {
		/* the return first: an entry whose return is missed leaves its thread's
		 * allocation in flight, overwritten by the next */
		l[n] = bpf_program__attach_uprobe_opts(a->skel->progs.alloc_return, pid, f->path,
						       off, &ro);
		if (!l[n++])
			return -errno;
	}
	l[n] = bpf_program__attach_uprobe_opts(fn == PCMON_AFN_FREE ? a->skel->progs.alloc_free :
								      a->skel->progs.alloc_enter,
					       pid, f->path, off, &eo);
	if (!l[n]) {
		int r = -errno;

		bpf_link__destroy(l[0]);
		return r;
	}
	n++;
	if (GROW(f->links, f->cap_links, f->nlinks + n)) {
		for (size_t k = 0; k < n; k++)
			bpf_link__destroy(l[k]);
		return -ENOMEM;
	}
	memcpy(f->links + f->nlinks, l, n * sizeof(*l));
	f->nlinks += n;
	return 0;
}

/*
 * A uprobe session of @prog at file offset @off of @path, for process @pid's threads alone,
 * with @cookie: the link's descriptor, or -errno. The kernel's BPF_LINK_CREATE for
 * uprobe_multi links (6.6; sessions 6.13), written out, as Debian's libbpf 1.1 and headers
 * predate it: the fields after the four every link has, as the kernel's union bpf_attr
 * lays them out.
 */
static int session_link(int prog, const char *path, uint64_t off, uint64_t cookie, uint32_t pid)
{
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, multi_flags, pid, pad;
	} attr = {
		.prog_fd = (uint32_t)prog, .attach_type = ATTACH_UPROBE_SESSION,
		.path = (uintptr_t)path, .offsets = (uintptr_t)&off, .cookies = (uintptr_t)&cookie,
		.cnt = 1, .pid = pid,
	};
	int fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));

	return fd < 0 ? -errno : fd;
}

/* One probe of @f: @fn at file offset @off of its file (a session, or entry and return). */
static int probe_one(struct allocator *a, struct probed *f, enum pcmon_afn fn, uint64_t off)
{
	int fd;

	if (!a->session || fn == PCMON_AFN_FREE)
		return probe_pair(a, f, fn, off);
	fd = session_link(bpf_program__fd(a->skel->progs.alloc_session), f->path, off, fn,
			  f->pid);
	if (fd < 0) { /* (refused, by a security module say: the pair does the same) */
		pr_warn("--alloc: a uprobe session in %s: %s: probing entry and return",
			f->path, strerror(-fd));
		return probe_pair(a, f, fn, off);
	}
	if (GROW(f->fds, f->cap_fds, f->nfds + 1)) {
		close(fd);
		return -ENOMEM;
	}
	f->fds[f->nfds++] = fd;
	return 0;
}

/*
 * The functions' offsets are read from the file's symbol tables in one pass (funcs.c): a
 * name libbpf resolves is a pass per name, 22 of them in glibc (56-97 ms for libc on a
 * busy machine, while the process runs on unwatched). Two names at one offset (glibc's
 * aligned_alloc is its memalign) are probed once.
 */
int allocator_probe_file(struct allocator *a, const char *path, uint32_t pid,
			 const char *const *names)
{
	const char *want[PCMON_AFN_N * NAMES_PER_FN] = { 0 };
	uint64_t off[PCMON_AFN_N * NAMES_PER_FN];
	struct probed f = { 0 };
	int found = 0, r = 0;

	struct stat st;

	if (stat(path, &st))
		return -errno;
	for (size_t i = 0; i < a->nfiles; i++)
		if (a->files[i].dev == st.st_dev && a->files[i].ino == st.st_ino &&
		    a->files[i].pid == pid)
			return 1;
	f.dev = st.st_dev;
	f.ino = st.st_ino;
	f.pid = pid;
	for (int fn = 0; fn < PCMON_AFN_N; fn++)
		for (int k = 0; k < NAMES_PER_FN; k++)
			want[fn * NAMES_PER_FN + k] = names ? (k ? NULL : names[fn]) : glibc_names[fn][k];
	r = funcs_offsets(path, want, ARRAY_SIZE(want), off);
	if (r <= 0)
		return r ? r : -ENOENT;
	f.path = strdup(path);
	if (!f.path)
		return -ENOMEM;
	r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(want) && r != -ENOMEM; i++) {
		bool twice = false;

		for (size_t j = 0; j < i; j++)
			twice |= off[j] == off[i];
		if (!off[i] || twice)
			continue;
		/* (every call traps here: where it costs one trap, not two) */
		r = probe_one(a, &f, i / NAMES_PER_FN, funcs_emulated_at(path, off[i]));
		found += !r;
	}
	if (!found || GROW(a->files, a->cap_files, a->nfiles + 1)) {
		probed_free(&f);
		return found ? -ENOMEM : r ? r : -ENOENT;
	}
	a->files[a->nfiles++] = f;
	return 0;
}

int allocator_target(struct allocator *a, uint32_t target, uint64_t rate, bool paused)
{
	struct pcmon_acfg c = { .rate = rate, .paused = paused };

	if (target >= PCMON_MAX_TARGETS)
		return -EINVAL;
	return bpf_map__update_elem(a->skel->maps.acfg, &target, sizeof(target), &c, sizeof(c), 0)
		       ? -errno : 0;
}

int allocator_fd(const struct allocator *a)
{
	return ring_fd(a->rb);
}

int allocator_poll(struct allocator *a, void (*cb)(void *ctx, const struct pcmon_arec *r),
		   void *ctx)
{
	int n;

	a->cb = cb;
	a->ctx = ctx;
	n = ring_consume(a->rb);
	a->cb = NULL;
	return n < 0 ? n : 0;
}

void allocator_forget_pid(struct allocator *a, uint32_t pid)
{
	for (size_t i = 0; i < a->nfiles;) {
		if (a->files[i].pid == pid) {
			probed_free(&a->files[i]);
			a->files[i] = a->files[--a->nfiles];
		} else {
			i++;
		}
	}

	int fd = bpf_map__fd(a->skel->maps.alive);
	struct pcmon_akey k, next, *prev = NULL;
	struct pcmon_akey *gone = NULL;
	size_t n = 0, cap = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		if (k.pid == pid && !GROW(gone, cap, n + 1))
			gone[n++] = k;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &gone[i]);
	free(gone);
}

void allocator_stats(const struct allocator *a, uint32_t target, struct pcmon_astat *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct pcmon_astat *per;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || !(per = calloc(ncpu, sizeof(*per))))
		return;
	if (!bpf_map__lookup_elem(a->skel->maps.astats, &target, sizeof(target), per,
				  ncpu * sizeof(*per), 0)) {
		for (int c = 0; c < ncpu; c++) {
			out->entries += per[c].entries;
			out->sampled += per[c].sampled;
			out->live_full += per[c].live_full;
			out->ring_full += per[c].ring_full;
			out->frees_unmatched += per[c].frees_unmatched;
			out->stack_errors += per[c].stack_errors;
		}
	}
	free(per);
}
