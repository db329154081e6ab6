/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cgpath_: cgroup v2 ids as paths (pcmon list --by cgroup). The id BPF gives a cgroup
 * (bpf_get_current_cgroup_id(), its kernfs node's id) is the inode number of its directory
 * on the cgroup2 mount, and readdir says each entry's inode without a stat: an id's path is
 * found by walking the mount. One walk per id not known yet, which remembers every
 * directory it passes, so that the ids a target meets next are mostly known without one.
 * An id the walk does not find is gone (ids are not reused): that is remembered too.
 */
#ifndef PCMON_CGPATH_H
#define PCMON_CGPATH_H

#include <stddef.h>
#include <stdint.h>

struct cgpath;

/* The cgroup2 mount at @root; NULL: the first in /proc/self/mountinfo (none: every id is
 * gone). NULL if out of memory. */
struct cgpath *cgpath_new(const char *root);
void cgpath_free(struct cgpath *c);
/* The path of cgroup @id under the mount: "/" for its root, "/system.slice/foo.service";
 * NULL when it has no directory (any more). Valid until cgpath_free(). */
const char *cgpath_of(struct cgpath *c, uint64_t id);
/* The walks made so far (each for an id not known). */
uint64_t cgpath_walks(const struct cgpath *c);

#endif
