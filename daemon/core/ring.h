/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ring_: a reader of a BPF ring buffer map through a single mapping of its data.
 *
 * libbpf's ring_buffer maps a ring's data twice, back to back, so that a record that runs
 * past the ring's end reads on without a break; the kernel maps every page of both at once,
 * and the process's RSS counts the ring twice (16 MB for an 8 MiB ring, whether or not a
 * record ever wrapped). Here the data is mapped once, and the one record in a round that
 * runs past the end is put together in a buffer of the reader's before its callback sees it.
 * The same calls as libbpf's: a callback per record, in the ring's order; a negative return
 * stops the read there.
 */
#ifndef PCMON_RING_H
#define PCMON_RING_H

#include <stddef.h>
#include <stdint.h>

typedef int (*ring_fn)(void *ctx, void *data, size_t len);

struct ring {
	unsigned long *consumer;	/* the consumer's position: the one page we write */
	const unsigned long *producer;	/* the producer's, then the data: read only */
	const unsigned char *data;
	size_t size;			/* of the data, a power of 2 */
	ring_fn fn;
	void *ctx;
	int fd;				/* an epoll set of the map: readable while records wait */
	unsigned char *whole;		/* a record that ran past the end, put together */
	size_t whole_cap;
	size_t map_len;			/* of the producer's page and the data (0: not mapped) */
	uint64_t dropped;		/* records past the end no memory could be had for */
};

/* A reader of ring buffer map @map_fd: NULL (errno set) if it cannot be mapped. */
struct ring *ring_new(int map_fd, ring_fn fn, void *ctx);
void ring_free(struct ring *r);
/* Every record written so far, to the callback: how many, or the callback's error. */
int ring_consume(struct ring *r);
/* What to poll (EPOLLIN) for records: an epoll set holding the map. */
int ring_fd(const struct ring *r);
/* Records read but not handed to the callback: out of memory to put one together. */
uint64_t ring_dropped(const struct ring *r);

/* (the reading itself, over memory laid out as the kernel's: for unit tests) */
void ring_init(struct ring *r, unsigned long *consumer, const unsigned long *producer,
	       const unsigned char *data, size_t size, ring_fn fn, void *ctx);
void ring_release(struct ring *r);

#endif
