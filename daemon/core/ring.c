// SPDX-License-Identifier: GPL-2.0-only
/* A BPF ring buffer read through one mapping of its data: see ring.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"
#include "util.h"

#define FLAG_BITS (BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT)

void ring_init(struct ring *r, unsigned long *consumer, const unsigned long *producer,
	       const unsigned char *data, size_t size, ring_fn fn, void *ctx)
{
	*r = (struct ring){ .consumer = consumer, .producer = producer, .data = data,
			    .size = size, .fn = fn, .ctx = ctx, .fd = -1 };
}

void ring_release(struct ring *r)
{
	free(r->whole);
	r->whole = NULL;
	r->whole_cap = 0;
}

struct ring *ring_new(int map_fd, ring_fn fn, void *ctx)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct bpf_map_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct epoll_event ev = { .events = EPOLLIN };
	void *cons = MAP_FAILED, *prod = MAP_FAILED;
	struct ring *r;
	int err;

	if (bpf_obj_get_info_by_fd(map_fd, &info, &info_len))
		return NULL;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1))) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	/* the kernel lets the consumer's page alone be written; the rest is read only */
	cons = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (cons != MAP_FAILED)
		prod = mmap(NULL, page + info.max_entries, PROT_READ, MAP_SHARED, map_fd, page);
	if (prod == MAP_FAILED) {
		err = errno;
		if (cons != MAP_FAILED)
			munmap(cons, page);
		free(r);
		errno = err;
		return NULL;
	}
	ring_init(r, cons, prod, (const unsigned char *)prod + page, info.max_entries, fn, ctx);
	r->map_len = page + info.max_entries;
	/* an epoll set of its own, as libbpf's: its owner's epoll lets go of it when the ring
	 * is freed, even if the map lives on */
	r->fd = epoll_create1(EPOLL_CLOEXEC);
	if (r->fd < 0 || epoll_ctl(r->fd, EPOLL_CTL_ADD, map_fd, &ev)) {
		err = errno;
		ring_free(r);
		errno = err;
		return NULL;
	}
	return r;
}

void ring_free(struct ring *r)
{
	if (!r)
		return;
	if (r->map_len) {
		munmap(r->consumer, (size_t)sysconf(_SC_PAGESIZE));
		munmap((void *)r->producer, r->map_len);
	}
	if (r->fd >= 0)
		close(r->fd);
	ring_release(r);
	free(r);
}

int ring_fd(const struct ring *r)
{
	return r->fd;
}

uint64_t ring_dropped(const struct ring *r)
{
	return __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
}

/* The @len bytes at ring position @pos, whole: in the ring, or put together if they run
 * past its end. NULL: out of memory. */
static void *record(struct ring *r, unsigned long pos, size_t len)
{
	size_t off = pos & (r->size - 1), first = r->size - off;

	if (len <= first)
		return (void *)(r->data + off);
	if (len > r->whole_cap) {
		void *p = realloc(r->whole, len);

		if (!p)
			return NULL;
		r->whole = p;
		r->whole_cap = len;
	}
	memcpy(r->whole, r->data + off, first);
	memcpy(r->whole + first, r->data, len - first);
	return r->whole;
}

int ring_consume(struct ring *r)
{
	unsigned long cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE), prod;
	int n = 0;
	bool more;

	do {
		more = false;
		prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
		while (cons < prod) {
			const uint32_t *hdr = (const uint32_t *)(r->data + (cons & (r->size - 1)));
			uint32_t word = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
			size_t len = word & ~FLAG_BITS;
			int err = 0;

			if (word & BPF_RINGBUF_BUSY_BIT)
				return n; /* reserved, not yet submitted: what follows waits for it */
			more = true;
			if (!(word & BPF_RINGBUF_DISCARD_BIT)) {
				void *p = record(r, cons + BPF_RINGBUF_HDR_SZ, len);

				if (p) {
					err = r->fn(r->ctx, p, len);
					n += err >= 0;
				} else if (!__atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED)) {
					pr_warn("out of memory for a BPF ring's record: dropped "
						"(the dwarf ring's: dwarf_backlog_dropped)");
				}
			}
			cons += (BPF_RINGBUF_HDR_SZ + len + 7) & ~(size_t)7;
			__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
			if (err < 0)
				return err;
		}
	} while (more);
	return n;
}
