// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "pcmon_bpf.h"
#include "probes.h"
#include "procmaps.h"
#include "procs.h"
#include "ring.h"
#include "sampler.h"
#include "sym.h"
#include "util.h"

#define PROBES_NICE -10

struct probes {
	struct sampler *smp;
	struct procs *procs;
	struct ring *rb;
	int epfd, stopfd;
	int files_fd;		/* BPF's probe_files: files known, so that no event comes for them */
	pthread_t thread;
	bool running;
	/* the thread's own: which files carry pcmon probes, by (dev, ino, change time) */
	struct itab *files;
	bool *has;
	size_t cap_has;
	pthread_mutex_t lock;	/* stats, read by the engine's loop */
	struct probes_stats st;
};

/* Files remembered at most; past that the table starts again (BPF's probe_files remembers
 * the recent ones for it). */
#define PROBES_FILES_MAX 16384

/*
 * 1 if the file of mapping @v (at @path) carries pcmon probes, 0 if not, -errno. Each file is
 * looked into once: it is known by its device, inode and change time (a new file given a
 * freed inode number has a change time of its own), so the processes that map it cost a
 * stat() each. @ctime_ns: the change time of the file @pid maps, for probe_files.
 */
static int file_has_probes(struct probes *p, uint32_t pid, const struct procmaps_vma *v,
			   const char *path, uint64_t *ctime_ns)
{
	struct { uint64_t dev, ino, ctime_ns; } key = { v->dev, v->ino, 0 };
	struct stat st;
	uint32_t id;
	int r;

	if (stat(path, &st))
		return -errno;
	if (st.st_ino != v->ino || major(st.st_dev) != v->dev >> 32 ||
	    minor(st.st_dev) != (uint32_t)v->dev) {
		/* the path names another file now (or the mapped one through an overlay): its
		 * probes cannot be attached by path; the one mapped is known as having none */
		char mf[64];

		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, v->start,
			 v->end);
		if (stat(mf, &st) || st.st_ino != v->ino)
			return -ESTALE;
		*ctime_ns = st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec;
		return 0;
	}
	key.ctime_ns = *ctime_ns = st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec;
	if (itab_count(p->files) >= PROBES_FILES_MAX) {
		itab_free(p->files);
		p->files = itab_new();
		if (!p->files)
			return -ENOMEM;
	}
	r = itab_intern(p->files, &key, sizeof(key), &id);
	if (r == 0)
		return p->has[id];
	if (r < 0 || GROW(p->has, p->cap_has, id + 1))
		return -ENOMEM;
	p->has[id] = sym_file_has_probes(path);
	pthread_mutex_lock(&p->lock);
	p->st.objects++;
	pthread_mutex_unlock(&p->lock);
	return p->has[id];
}

/* The probes of file @v (change time @ctime_ns) are in place: BPF need not send its events. */
static void file_known(struct probes *p, const struct procmaps_vma *v, uint64_t ctime_ns)
{
	struct pcmon_file_key k = {
		.dev = (v->dev >> 32) << 20 | (v->dev & 0xfffff), /* the kernel's dev_t */
		.ino = v->ino,
	};

	bpf_map_update_elem(p->files_fd, &k, &ctime_ns, BPF_ANY);
}

struct attach_ctx {
	struct probes *p;
	uint32_t pid;
	bool ok;
};

static int attach_vma(void *ctx, struct procmaps_vma *v)
{
	struct attach_ctx *c = ctx;
	char file[4200];
	uint64_t ctime_ns = 0;
	int r;

	if (v->name[0] != '/' || strstr(v->name, " (deleted)"))
		return 0; /* probes are attached by path: a deleted file has none */
	/* the object as this process sees it (it may live in another mount namespace) */
	snprintf(file, sizeof(file), "/proc/%u/root%s", c->pid, v->name);
	r = file_has_probes(c->p, c->pid, v, file, &ctime_ns);
	if (r > 0 && sampler_usdt_attach(c->p->smp, file) < 0)
		c->ok = false;
	else if (r >= 0)
		file_known(c->p, v, ctime_ns);
	return 0;
}

/*
 * Attach the probes of every object process @pid has mapped for execution. false if some
 * could not be attached (the process then stays flagged) or its map could not be read.
 */
static bool attach_mapped(struct probes *p, uint32_t pid)
{
	struct attach_ctx c = { p, pid, true };

	if (procmaps_walk(pid, PROCMAPS_EXEC_FILES, attach_vma, &c))
		return false; /* gone: it samples no more */
	return c.ok;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct probes *p = ctx;
	const struct pcmon_event *ev = data;
	bool acked = false;
	uint64_t lag;

	if (len < sizeof(*ev))
		return 0;
	if (attach_mapped(p, ev->pid))
		acked = !procs_probes_ack(p->procs, ev->pid, ev->probe_seq);
	lag = now_ns() - MIN(ev->ts, now_ns());
	pthread_mutex_lock(&p->lock);
	p->st.events++;
	p->st.acked += acked;
	p->st.lag_max_ns = MAX(p->st.lag_max_ns, lag);
	pthread_mutex_unlock(&p->lock);
	pr_debug("pid %u: critical-section probes %s %.2f ms after its %s", ev->pid,
		 acked ? "attached" : "NOT all attached", lag / 1e6,
		 ev->type == PCMON_EV_EXEC   ? "exec"
		 : ev->type == PCMON_EV_FORK ? "fork"
		 : ev->type == PCMON_EV_JOIN ? "joining the target"
					     : "dlopen");
	return 0;
}

static void *run(void *arg)
{
	struct probes *p = arg;

	/*
	 * The window it closes is open while it waits for a CPU: ahead of busy tasks when it
	 * may (root), at a cost of a few milliseconds of CPU per dlopen.
	 */
	if (setpriority(PRIO_PROCESS, gettid(), PROBES_NICE))
		pr_debug("probe thread: cannot raise its priority: %s", strerror(errno));

	for (;;) {
		struct epoll_event ev;
		int n = epoll_wait(p->epfd, &ev, 1, -1);

		if (n < 0 && errno != EINTR) {
			pr_err("probe thread: epoll_wait: %s: critical sections in objects loaded from now on are not seen",
			       strerror(errno));
			break;
		}
		if (n > 0 && ev.data.fd == p->stopfd)
			break;
		if (n > 0)
			ring_consume(p->rb);
	}
	return NULL;
}

int probes_start(struct sampler *smp, struct procs *procs, struct probes **out, char *err, size_t errlen)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct probes *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->smp = smp;
	p->procs = procs;
	p->epfd = p->stopfd = -1;
	p->files_fd = procs_probe_files_fd(procs);
	pthread_mutex_init(&p->lock, NULL);
	p->files = itab_new();
	p->rb = ring_new(procs_probe_events_fd(procs), on_event, p);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!p->files || !p->rb || p->epfd < 0 || p->stopfd < 0) {
		r = -errno ?: -ENOMEM;
		snprintf(err, errlen, "cannot set up the probe thread: %s", strerror(-r));
		goto fail;
	}
	ev.data.fd = ring_fd(p->rb);
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = p->stopfd;
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	r = -thread_start(&p->thread, run, p);
	if (r) {
		snprintf(err, errlen, "cannot start the probe thread: %s", strerror(-r));
		goto fail;
	}
	p->running = true;
	*out = p;
	return 0;
fail:
	probes_stop(p);
	return r;
}

void probes_stop(struct probes *p)
{
	if (!p)
		return;
	if (p->running) {
		uint64_t one = 1;

		if (write(p->stopfd, &one, sizeof(one)) != sizeof(one))
			pr_warn("cannot stop the probe thread: %s", strerror(errno));
		pthread_join(p->thread, NULL);
	}
	ring_free(p->rb);
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->stopfd >= 0)
		close(p->stopfd);
	itab_free(p->files);
	free(p->has);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void probes_stats(struct probes *p, struct probes_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	*out = p->st;
	pthread_mutex_unlock(&p->lock);
}
