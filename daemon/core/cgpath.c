// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgpath_: cgroup v2 ids as paths (cgpath.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgpath.h"
#include "util.h"

#define CGPATH_MAX_DEPTH 64	/* nesting walked; deeper cgroups are named cgroup:ID */

struct cgpath {
	char *root;		/* the mount; NULL: none */
	struct itab *ids;	/* cgroup ids (uint64_t) met, in order ... */
	char **paths;		/* ... and each one's path, NULL: gone */
	size_t cap;
	uint64_t walks;
};

/*
 * The mount point of the first cgroup2 mount in /proc/self/mountinfo (malloc'ed), NULL if
 * none. A line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE SOURCE OPTIONS,
 * the mount point with space, tab, newline and backslash as octal escapes.
 */
static char *cgroup2_mount(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *found = NULL;
	size_t cap = 0;

	if (!f)
		return NULL;
	while (!found && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - "), *mp = line, *o;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		for (int i = 0; i < 4 && mp; i++) { /* to the fifth field */
			mp = strchr(mp, ' ');
			mp = mp ? mp + 1 : NULL;
		}
		if (!mp || !strchr(mp, ' '))
			continue;
		*strchr(mp, ' ') = '\0';
		for (o = found = mp; *mp; mp++) { /* unescape in place */
			if (mp[0] == '\\' && mp[1] >= '0' && mp[1] <= '3' && mp[2] >= '0' &&
			    mp[2] <= '7' && mp[3] >= '0' && mp[3] <= '7') {
				*o++ = (char)((mp[1] - '0') << 6 | (mp[2] - '0') << 3 |
					      (mp[3] - '0'));
				mp += 3;
			} else {
				*o++ = *mp;
			}
		}
		*o = '\0';
		found = strdup(found);
	}
	free(line);
	fclose(f);
	return found;
}

struct cgpath *cgpath_new(const char *root)
{
	struct cgpath *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->root = root ? strdup(root) : cgroup2_mount();
	c->ids = itab_new();
	if (!c->ids || (root && !c->root)) {
		cgpath_free(c);
		return NULL;
	}
	return c;
}

void cgpath_free(struct cgpath *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; c->ids && i < itab_count(c->ids); i++)
		free(c->paths[i]);
	free(c->paths);
	itab_free(c->ids);
	free(c->root);
	free(c);
}

/* Remember @id at @path (NULL: gone), unless it is known. -ENOMEM, or 0. */
static int remember(struct cgpath *c, uint64_t id, const char *path)
{
	uint32_t slot;

	if (itab_find(c->ids, &id, sizeof(id)) >= 0)
		return 0;
	if (GROW(c->paths, c->cap, (size_t)itab_count(c->ids) + 1) ||
	    itab_intern(c->ids, &id, sizeof(id), &slot) < 0)
		return -ENOMEM;
	c->paths[slot] = path ? strdup(path) : NULL; /* (no memory for it: as if gone) */
	return 0;
}

/* Every directory under @fd (which it closes), at @path (@len bytes of @path's PATH_MAX). */
static void walk(struct cgpath *c, int fd, char *path, size_t len, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_type == DT_UNKNOWN) { /* (cgroupfs says; another file system may not) */
			if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISDIR(st.st_mode))
				continue;
		} else if (e->d_type != DT_DIR) {
			continue;
		}
		if (len + 1 + n >= PATH_MAX)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, n + 1);
		if (remember(c, e->d_ino, path))
			break;
		if (depth < CGPATH_MAX_DEPTH &&
		    (sub = openat(dirfd(d), e->d_name,
				  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
			walk(c, sub, path, len + 1 + n, depth + 1);
		path[len] = '\0';
	}
	closedir(d);
}

const char *cgpath_of(struct cgpath *c, uint64_t id)
{
	int64_t slot = itab_find(c->ids, &id, sizeof(id));
	char *path;
	struct stat st;
	int fd;

	if (slot < 0 && c->root && (path = malloc(PATH_MAX))) {
		c->walks++;
		fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && !remember(c, st.st_ino, "/")) {
			path[0] = '\0';
			walk(c, fd, path, 0, 1);
		} else if (fd >= 0) {
			close(fd);
		}
		free(path);
		slot = itab_find(c->ids, &id, sizeof(id));
	}
	if (slot < 0 && !remember(c, id, NULL)) /* gone, or never there */
		slot = itab_find(c->ids, &id, sizeof(id));
	return slot < 0 ? NULL : c->paths[slot];
}

uint64_t cgpath_walks(const struct cgpath *c)
{
	return c->walks;
}
