/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dsring_: a BPF ring buffer read by a thread of its own. The thread does nothing but copy
 * each record into a backlog as soon as BPF wakes it, so that the engine's own thread may
 * spend a while on one record (naming the first samples of a big object reads its debug
 * information: hundreds of ms) while BPF goes on writing: the ring fills only when the
 * backlog is full too. The engine takes the records from the backlog, in the ring's order.
 */
#ifndef PCMON_DSRING_H
#define PCMON_DSRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dsring;

/*
 * What of a record of @len bytes at @from the backlog keeps, copied to @to (NULL: only say
 * how many bytes that is, at most @len): a record may be reserved larger than what it holds.
 */
typedef size_t (*dsring_copy_fn)(void *to, const void *from, size_t len);

/*
 * A reader of ring buffer map @map_fd (of @ring_bytes), holding at most @max_bytes of
 * records read and not yet taken: while the backlog is that full, records wait in the ring
 * (and BPF counts those it has no room for). Each record is kept by @copy (NULL: whole).
 * 0, or -errno.
 */
int dsring_open(int map_fd, size_t ring_bytes, size_t max_bytes, dsring_copy_fn copy,
		struct dsring **out);
void dsring_close(struct dsring *r);
/* Readable while records wait in the backlog (an eventfd). */
int dsring_fd(const struct dsring *r);
/*
 * Every record the backlog and the ring hold now, to @cb in the ring's order (what the ring
 * holds is read first, whether or not the thread was woken for it): how many.
 */
int dsring_take(struct dsring *r, void (*cb)(void *ctx, void *data, size_t len), void *ctx);
/* The most bytes the backlog has held; the records it had no memory for. */
size_t dsring_peak(const struct dsring *r);
uint64_t dsring_dropped(const struct dsring *r);

#endif
