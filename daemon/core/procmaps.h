/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * procmaps_: a process's mappings, one at a time, as the kernel describes them: through the
 * PROCMAP_QUERY ioctl (Linux 6.11: each mapping with its file's device, inode and build-id,
 * no text to format and parse), or from the text of /proc/PID/maps on older kernels.
 */
#ifndef PCMON_PROCMAPS_H
#define PCMON_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>

struct procmaps_vma {
	uint64_t start, end, pgoff, dev, ino;
	bool exec, shared;
	char *name;			/* the file, "[vdso]" and the like, or "" (anonymous) */
	unsigned char bid[64];		/* the file's build-id, if the kernel read it */
	uint32_t bid_len;
};

/* Only the executable mappings of files (probes, symbols): the kernel skips the others. */
#define PROCMAPS_EXEC_FILES (1u << 0)
/* With each file's build-id (the kernel reads it from the file: a cost per mapping). */
#define PROCMAPS_BUILD_ID (1u << 1)

/*
 * Each mapping comes first without its name and build-id (name NULL, bid_len 0): the kernel
 * neither writes out a path nor reads a file for it. The callback returns PROCMAPS_ASK to
 * have the same mapping again with both (the build-id if PROCMAPS_BUILD_ID). The text of
 * /proc/PID/maps has every name anyway, and no build-id: there the flag changes nothing.
 */
#define PROCMAPS_ON_ASK (1u << 2)
#define PROCMAPS_ASK 1

/*
 * Hand each mapping of @pid to @cb, in address order, until it returns nonzero (returned;
 * but PROCMAPS_ASK, above). 0 when all were seen (a process on its way out has none);
 * -errno if its map cannot be opened (it is gone).
 */
typedef int (*procmaps_cb)(void *ctx, struct procmaps_vma *v);
int procmaps_walk(uint32_t pid, unsigned flags, procmaps_cb cb, void *ctx);
/*
 * The one mapping of @pid that @addr lies in, handed to @cb as procmaps_walk() would: what
 * @cb returns, 1 if no mapping covers @addr, -errno if the map cannot be opened.
 */
int procmaps_at(uint32_t pid, uint64_t addr, unsigned flags, procmaps_cb cb, void *ctx);
/* Does the kernel answer PROCMAP_QUERY (Linux 6.11)? True until a query found it does not. */
bool procmaps_can_query(void);
/*
 * Open the file mapped at [@start, @end) in @pid, @path as its map says: by map_files, which
 * survives a file deleted since and other mount namespaces, else by the process's view of
 * @path (its root). A read-only, close-on-exec descriptor, or -1 with errno set.
 */
int procmaps_open(uint32_t pid, uint64_t start, uint64_t end, const char *path);

#endif
