// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "procmaps.h"
#include "util.h"

/* The ioctl's argument (include/uapi/linux/fs.h). */
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PMQ_VMA_EXECUTABLE 0x04
#define PMQ_VMA_SHARED 0x08
#define PMQ_COVERING_OR_NEXT_VMA 0x10
#define PMQ_FILE_BACKED_VMA 0x20

static bool no_query;		/* the kernel said it has no PROCMAP_QUERY */

/*
 * One query: the mapping at or after @addr, and the build-id of its file if @bid (the kernel
 * reads it from the file each time it is asked).
 */
static int query(int fd, unsigned flags, uint64_t addr, struct procmaps_vma *v, char *name,
		 size_t name_size, bool bid)
{
	struct procmap_query q = {
		.size = sizeof(q), .query_flags = PMQ_COVERING_OR_NEXT_VMA, .query_addr = addr,
		/* (the kernel refuses an address without a size, or a size without one) */
		.vma_name_size = name_size, .vma_name_addr = name_size ? (uint64_t)(uintptr_t)name : 0,
	};

	if (bid) {
		q.build_id_size = sizeof(v->bid);
		q.build_id_addr = (uint64_t)(uintptr_t)v->bid;
	}
	if (flags & PROCMAPS_EXEC_FILES)
		q.query_flags |= PMQ_VMA_EXECUTABLE | PMQ_FILE_BACKED_VMA;
	if (ioctl(fd, PROCMAP_QUERY, &q))
		/* none at or after addr; or no address space left (exiting) */
		return errno == ENOENT || errno == ESRCH ? 1 : -errno;
	v->start = q.vma_start;
	v->end = q.vma_end;
	v->pgoff = q.vma_offset;
	v->dev = ((uint64_t)q.dev_major << 32) | q.dev_minor;
	v->ino = q.inode;
	v->exec = q.vma_flags & PMQ_VMA_EXECUTABLE;
	v->shared = q.vma_flags & PMQ_VMA_SHARED;
	v->name = q.vma_name_size ? name : (char *)"";
	if (bid)
		v->bid_len = q.build_id_size;
	return 0;
}

/* The mappings from @addr on, or (@one) the one @addr lies in (1 if none does). */
static int walk_query(int fd, unsigned flags, uint64_t addr, bool one, procmaps_cb cb, void *ctx)
{
	char name[PATH_MAX];
	struct procmaps_vma v = { 0 };
	uint64_t bid_dev = 0, bid_ino = 0;
	uint32_t bid_len = 0;
	bool ask = flags & PROCMAPS_ON_ASK, want_bid = flags & PROCMAPS_BUILD_ID;
	int r;

	for (;;) {
		bool fresh;

		if ((r = query(fd, flags, addr, &v, name, ask ? 0 : sizeof(name), false)))
			return r > 0 ? (int)one : r;
		if (one && v.start > addr)
			return 1;
		if (ask) {
			v.name = NULL;
			v.bid_len = 0;
			if ((r = cb(ctx, &v)) != PROCMAPS_ASK)
				goto next;
		}
		/*
		 * A file is mapped in a few consecutive pieces (headers, code, data): its build-id
		 * is asked for once, at the first, and the others have the same.
		 */
		fresh = want_bid && v.ino && (v.ino != bid_ino || v.dev != bid_dev);
		if (ask || fresh) {
			if ((r = query(fd, flags, v.start, &v, name, sizeof(name), fresh)))
				return r > 0 ? 0 : r;
			if (fresh) {
				bid_dev = v.dev;
				bid_ino = v.ino;
				bid_len = v.bid_len;
			}
		}
		v.bid_len = v.ino ? bid_len : 0;
		r = cb(ctx, &v);
next:
		if (r || one || v.end <= addr)
			return r;
		addr = v.end;
	}
}

static int walk_text(uint32_t pid, unsigned flags, procmaps_cb cb, void *ctx)
{
	char path[64], *buf, *line, *save;
	int r = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	buf = read_file(path, NULL);
	if (!buf)
		return -errno;
	for (line = strtok_r(buf, "\n", &save); line && !r; line = strtok_r(NULL, "\n", &save)) {
		unsigned maj, min;
		char perms[8];
		struct procmaps_vma v = { 0 };
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &v.start,
			   &v.end, perms, &v.pgoff, &maj, &min, &v.ino, &pos) < 7)
			continue;
		v.dev = ((uint64_t)maj << 32) | min;
		v.exec = perms[2] == 'x';
		v.shared = perms[3] == 's';
		v.name = line + pos;
		if ((flags & PROCMAPS_EXEC_FILES) && (!v.exec || !v.ino))
			continue;
		r = cb(ctx, &v);
	}
	free(buf);
	return r;
}

/* What walk_text() hands on for procmaps_at(): the mapping that holds addr. */
struct at_ctx {
	uint64_t addr;
	procmaps_cb cb;
	void *ctx;
	bool found;
};

static int text_at(void *ctx, struct procmaps_vma *v)
{
	struct at_ctx *a = ctx;

	if (a->addr < v->start || a->addr >= v->end)
		return 0;
	a->found = true;
	return a->cb(a->ctx, v) ?: -EALREADY;
}

static int walk(uint32_t pid, unsigned flags, uint64_t addr, bool one, procmaps_cb cb, void *ctx)
{
	struct at_ctx a = { addr, cb, ctx, false };
	char path[64];
	int fd, r;

	if (!__atomic_load_n(&no_query, __ATOMIC_RELAXED)) {
		snprintf(path, sizeof(path), "/proc/%u/maps", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = walk_query(fd, flags, addr, one, cb, ctx);
		close(fd);
		if (r != -ENOTTY && r != -EINVAL)
			return r;
		/* before 6.11 */
		__atomic_store_n(&no_query, true, __ATOMIC_RELAXED);
	}
	if (!one)
		return walk_text(pid, flags, cb, ctx);
	r = walk_text(pid, flags, text_at, &a);
	return r == -EALREADY ? 0 : r ? r : !a.found;
}

bool procmaps_can_query(void)
{
	return !__atomic_load_n(&no_query, __ATOMIC_RELAXED);
}

int procmaps_walk(uint32_t pid, unsigned flags, procmaps_cb cb, void *ctx)
{
	return walk(pid, flags, 0, false, cb, ctx);
}

int procmaps_at(uint32_t pid, uint64_t addr, unsigned flags, procmaps_cb cb, void *ctx)
{
	return walk(pid, flags, addr, true, cb, ctx);
}

int procmaps_open(uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	char file[4200];
	int fd;

	snprintf(file, sizeof(file), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || !path || path[0] != '/')
		return fd;
	snprintf(file, sizeof(file), "/proc/%u/root%s", pid, path);
	return open(file, O_RDONLY | O_CLOEXEC);
}
