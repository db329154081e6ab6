// SPDX-License-Identifier: GPL-2.0-only
/* A BPF ring buffer read into a backlog by a thread of its own: see dsring.h. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dsring.h"
#include "ring.h"
#include "util.h"

/*
 * Records as they were read: each a 64-bit length, then its bytes, padded to 8. Its memory
 * is a mapping of its own, not the heap's: room for a whole ring is reserved before the
 * ring is read, most of it never written (never resident); from malloc, all of it would
 * count as in use, and the symbolizer's memory budget reads malloc's count. @hw: how far it
 * has been written since its pages were last given back (backlog_done()).
 */
struct backlog {
	unsigned char *p;
	size_t len, cap, hw;
	size_t recent;		/* the most a take used since @since (coarse ns) */
	uint64_t since;
};

struct dsring {
	struct ring *rb;
	size_t ring_bytes, max_bytes, peak;
	uint64_t dropped;	/* records read that the backlog had no memory for */
	/* the thread consumes the ring into back; dsring_take() swaps it with front, which
	 * the engine's thread alone reads: both, and the ring's consumption, under lock */
	pthread_mutex_t lock;
	pthread_cond_t room;	/* the engine took the backlog */
	bool stopping;
	struct backlog back, front;
	dsring_copy_fn copy;
	int efd;		/* records wait in back */
	int stopfd;		/* the thread is to stop */
	int epfd;		/* the thread waits on the ring and stopfd */
	pthread_t thread;
	bool started;
};

#define REC_HDR sizeof(uint64_t)
#define REC_SIZE(len) (REC_HDR + (((len) + 7) & ~(size_t)7))

/* Room in @b for @more bytes. */
static bool reserve(struct backlog *b, size_t more)
{
	size_t cap, page;
	void *p;

	if (b->len + more <= b->cap)
		return true;
	page = (size_t)sysconf(_SC_PAGESIZE);
	cap = MAX(b->cap * 2, MAX(b->len + more, (size_t)1 << 20));
	cap = (cap + page - 1) & ~(page - 1);
	p = b->p ? mremap(b->p, b->cap, cap, MREMAP_MAYMOVE)
		 : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			-1, 0);
	if (p == MAP_FAILED)
		return false;
	b->p = p;
	b->cap = cap;
	return true;
}

static void backlog_free(struct backlog *b)
{
	if (b->p)
		munmap(b->p, b->cap);
	*b = (struct backlog){ 0 };
}

/*
 * @b was taken, @used bytes of it: a stall's backlog (more than @most) is given back whole.
 * Pages written beyond twice what the takes of the last 10 s needed are given back too (a
 * burst's, once it is past; not after each small take, or the next large one would fault
 * them in again).
 */
static void backlog_done(struct backlog *b, size_t used, size_t most)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), keep;
	uint64_t now = now_coarse_ns();

	b->hw = MAX(b->hw, used);
	b->recent = MAX(b->recent, used);
	b->len = 0;
	if (b->cap > most) {
		backlog_free(b);
		return;
	}
	if (now - b->since < 10000000000ULL)
		return;
	keep = (2 * b->recent + page - 1) & ~(page - 1);
	if (b->hw > keep + (1u << 20) && !madvise(b->p + keep, b->hw - keep, MADV_DONTNEED))
		b->hw = keep;
	b->since = now;
	b->recent = 0;
}

/* The ring's callback: a record into back (read_ring() made room for a ring of them). */
static int keep(void *ctx, void *data, size_t len)
{
	struct dsring *r = ctx;
	struct backlog *b = &r->back;
	size_t kept = r->copy ? MIN(r->copy(NULL, data, len), len) : len, need = REC_SIZE(kept);

	if (!reserve(b, need)) {
		if (!r->dropped++)
			pr_warn("out of memory for sampled stacks: records dropped (see status)");
		return 0;
	}
	*(uint64_t *)(b->p + b->len) = kept;
	if (r->copy)
		r->copy(b->p + b->len + REC_HDR, data, len);
	else
		memcpy(b->p + b->len + REC_HDR, data, len);
	b->len += need;
	r->peak = MAX(r->peak, b->len + r->front.len);
	return 0;
}

/*
 * What the ring holds now, into back, if the backlog has room for a whole ring of it (else
 * it waits there, and BPF counts what it cannot write as lost). Under lock. 1: records
 * were read; 0: none; -1: no room.
 */
static int read_ring(struct dsring *r)
{
	size_t was = r->back.len;

	if (r->back.len + r->front.len + r->ring_bytes > r->max_bytes ||
	    !reserve(&r->back, r->ring_bytes))
		return -1;
	ring_consume(r->rb);
	return r->back.len > was;
}

static void *reader(void *arg)
{
	struct dsring *r = arg;
	struct epoll_event ev[2];
	uint64_t one = 1;

	for (;;) {
		int n = epoll_wait(r->epfd, ev, 2, 1000);
		int got;

		for (int i = 0; i < n; i++)
			if (ev[i].data.fd == r->stopfd)
				return NULL;
		if (n < 0 && errno != EINTR)
			return NULL;
		pthread_mutex_lock(&r->lock);
		/* no room: wait for the engine to take the backlog (the ring stays readable
		 * meanwhile, and polling it again at once would only spin) */
		while ((got = read_ring(r)) < 0 && !r->stopping)
			pthread_cond_wait(&r->room, &r->lock);
		pthread_mutex_unlock(&r->lock);
		if (got > 0 && write(r->efd, &one, sizeof(one)) < 0)
			pr_warn("cannot wake the engine for sampled stacks: %s", strerror(errno));
	}
}

int dsring_open(int map_fd, size_t ring_bytes, size_t max_bytes, dsring_copy_fn copy,
		struct dsring **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct dsring *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->room, NULL);
	r->ring_bytes = ring_bytes;
	r->copy = copy;
	r->max_bytes = MAX(max_bytes, 2 * ring_bytes);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->rb = ring_new(map_fd, keep, r);
	if (r->efd < 0 || r->stopfd < 0 || r->epfd < 0 || !r->rb)
		goto fail;
	ev.data.fd = ring_fd(r->rb);
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev))
		goto fail;
	ev.data.fd = r->stopfd;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->stopfd, &ev))
		goto fail;
	err = thread_start(&r->thread, reader, r);
	if (err) {
		errno = err;
		goto fail;
	}
	r->started = true;
	*out = r;
	return 0;
fail:
	err = -errno;
	dsring_close(r);
	return err ? err : -ENOMEM;
}

void dsring_close(struct dsring *r)
{
	uint64_t one = 1;

	if (!r)
		return;
	if (r->started) {
		pthread_mutex_lock(&r->lock);
		r->stopping = true;
		pthread_cond_signal(&r->room);
		pthread_mutex_unlock(&r->lock);
		if (write(r->stopfd, &one, sizeof(one)) < 0)
			pr_warn("cannot stop the sampled stacks' reader: %s", strerror(errno));
		pthread_join(r->thread, NULL);
	}
	ring_free(r->rb);
	if (r->efd >= 0)
		close(r->efd);
	if (r->stopfd >= 0)
		close(r->stopfd);
	if (r->epfd >= 0)
		close(r->epfd);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->room);
	backlog_free(&r->back);
	backlog_free(&r->front);
	free(r);
}

int dsring_fd(const struct dsring *r)
{
	return r->efd;
}

/*
 * Hand every record taken so far to @cb: the backlog, and what the ring holds now. A backlog
 * too full to take the ring whole leaves the ring for a second pass, once the first has made
 * room, so that a caller bringing everything up to date (a listing, a stop) misses nothing
 * BPF had written when it called.
 */
int dsring_take(struct dsring *r, void (*cb)(void *ctx, void *data, size_t len), void *ctx)
{
	struct backlog b;
	uint64_t v;
	int n = 0, got = -1;

	if (read(r->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		pr_warn("sampled stacks' wake-up: %s", strerror(errno));
	for (int pass = 0; pass < 2 && got < 0; pass++) {
		pthread_mutex_lock(&r->lock);
		got = read_ring(r);
		b = r->front; /* (empty: the last pass took all of it) */
		r->front = r->back;
		r->back = b;
		pthread_mutex_unlock(&r->lock);

		for (size_t at = 0; at < r->front.len; n++) {
			uint64_t len = *(uint64_t *)(r->front.p + at);

			cb(ctx, r->front.p + at + REC_HDR, len);
			at += REC_SIZE(len);
		}
		pthread_mutex_lock(&r->lock);
		backlog_done(&r->front, r->front.len, 2 * r->ring_bytes);
		pthread_cond_signal(&r->room);
		pthread_mutex_unlock(&r->lock);
	}
	return n;
}

size_t dsring_peak(const struct dsring *r)
{
	return __atomic_load_n(&r->peak, __ATOMIC_RELAXED);
}

uint64_t dsring_dropped(const struct dsring *r)
{
	return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED) + ring_dropped(r->rb);
}
