// SPDX-License-Identifier: GPL-2.0-only
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
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
#include "sampler.h"
#include "sym.h"
#include "util.h"

#define PROBES_NICE -10

struct probes {
	struct sampler *smp;
	struct procs *procs;
	struct ring_buffer *rb;
	int epfd, stopfd;
	pthread_t thread;
	bool running;
	/* the thread's own: which files carry pcmon probes, by (dev, ino[, ctime, size]) */
	struct itab *files;
	int *pins;		/* files held open (O_PATH) to pin their inode numbers */
	size_t npinned, cap_pins;
	bool *has;
	size_t cap_has;
	pthread_mutex_t lock;	/* stats, read by the engine's loop */
	struct probes_stats st;
};

/*
 * 1 if the file of mapping @v (at @path) carries pcmon probes, 0 if not, -errno. Each file is
 * looked into once: it is known by its device and inode, which stay its own while the thread
 * holds it open (an O_PATH descriptor: an inode number is given to a new file only once the
 * old one is gone), so the processes that map it cost no file access at all. Past
 * PROBES_PINNED files, one is known by its change time and size too, at a stat() each time.
 */
#define PROBES_PINNED 2048

static int file_has_probes(struct probes *p, const struct procmaps_vma *v, const char *path)
{
	struct { uint64_t dev, ino, ctime_ns, size; } key = { v->dev, v->ino, 0, 0 };
	struct stat st;
	uint32_t id;
	int r, fd = -1;

	if (itab_find(p->files, &key, sizeof(key)) >= 0)
		goto known;
	if (p->npinned < PROBES_PINNED && !GROW(p->pins, p->cap_pins, p->npinned + 1)) {
		fd = open(path, O_PATH | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_ino != v->ino ||
				major(st.st_dev) != v->dev >> 32 || minor(st.st_dev) != (uint32_t)v->dev)) {
			close(fd); /* the path names another file now: it has none of this one's probes */
			return 0;
		}
	}
	if (fd < 0) {
		if (stat(path, &st))
			return -errno;
		key.ctime_ns = st.st_ctim.tv_sec * 1000000000ULL + st.st_ctim.tv_nsec;
		key.size = st.st_size;
	}
known:
	r = itab_intern(p->files, &key, sizeof(key), &id);
	if (r == 0)
		return p->has[id];
	if (r < 0 || GROW(p->has, p->cap_has, id + 1)) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	if (fd >= 0)
		p->pins[p->npinned++] = fd; /* kept open for good: it pins the inode number */
	p->has[id] = sym_file_has_probes(path);
	pthread_mutex_lock(&p->lock);
	p->st.objects++;
	pthread_mutex_unlock(&p->lock);
	return p->has[id];
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

	if (v->name[0] != '/' || strstr(v->name, " (deleted)"))
		return 0; /* probes are attached by path: a deleted file has none */
	/* the object as this process sees it (it may live in another mount namespace) */
	snprintf(file, sizeof(file), "/proc/%u/root%s", c->pid, v->name);
	if (file_has_probes(c->p, v, file) > 0 && sampler_usdt_attach(c->p->smp, file) < 0)
		c->ok = false;
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
			ring_buffer__consume(p->rb);
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
	pthread_mutex_init(&p->lock, NULL);
	p->files = itab_new();
	p->rb = ring_buffer__new(procs_probe_events_fd(procs), on_event, p, NULL);
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	p->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!p->files || !p->rb || p->epfd < 0 || p->stopfd < 0) {
		r = -errno ?: -ENOMEM;
		snprintf(err, errlen, "cannot set up the probe thread: %s", strerror(-r));
		goto fail;
	}
	ev.data.fd = ring_buffer__epoll_fd(p->rb);
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = p->stopfd;
	epoll_ctl(p->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	r = -pthread_create(&p->thread, NULL, run, p);
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
	ring_buffer__free(p->rb);
	if (p->epfd >= 0)
		close(p->epfd);
	if (p->stopfd >= 0)
		close(p->stopfd);
	itab_free(p->files);
	free(p->has);
	for (size_t i = 0; i < p->npinned; i++)
		close(p->pins[i]);
	free(p->pins);
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
