// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/core/cgpath.c: a cgroup's id is its directory's inode number, its
 * path found by walking the mount once per id not known. A tree of ordinary directories
 * stands for the mount (their inode numbers are ids as good as any); the machine's own
 * cgroup2 mount, when there is one, names the test's own cgroup.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgpath.h"
#include "util.h"

struct fx {
	char root[64];
	struct cgpath *c;
};

static const char *const dirs[] = { "a", "a/b", "a/b/deep", "a/c", "d", "with space" };

static uint64_t ino(const struct fx *f, const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_ino;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char path[256];

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "/tmp/pcmon-cgpath-XXXXXX");
	if (!mkdtemp(f->root))
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->root, dirs[i]);
		if (mkdir(path, 0755))
			return -1;
	}
	snprintf(path, sizeof(path), "%s/a/file", f->root); /* not a cgroup: files are skipped */
	fclose(fopen(path, "w"));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	cgpath_free(f->c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd))
		return -1;
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* One walk finds the id asked and remembers every directory it passed. */
static void test_paths_one_walk(void **state)
{
	struct fx *f = *state;

	f->c = cgpath_new(f->root);
	assert_non_null(f->c);
	assert_int_equal(cgpath_walks(f->c), 0);
	assert_string_equal(cgpath_of(f->c, ino(f, "a/b")), "/a/b");
	assert_int_equal(cgpath_walks(f->c), 1);
	assert_string_equal(cgpath_of(f->c, ino(f, "a/b/deep")), "/a/b/deep");
	assert_string_equal(cgpath_of(f->c, ino(f, "d")), "/d");
	assert_string_equal(cgpath_of(f->c, ino(f, "with space")), "/with space");
	assert_string_equal(cgpath_of(f->c, ino(f, ".")), "/");
	assert_int_equal(cgpath_walks(f->c), 1);
}

/* An id no directory has is gone: walked for once, then remembered as gone. */
static void test_gone_walked_once(void **state)
{
	struct fx *f = *state;

	f->c = cgpath_new(f->root);
	assert_non_null(f->c);
	assert_null(cgpath_of(f->c, ino(f, "a/file")));
	assert_int_equal(cgpath_walks(f->c), 1);
	assert_null(cgpath_of(f->c, ino(f, "a/file")));
	assert_null(cgpath_of(f->c, 0xfffffffffffffull));
	assert_int_equal(cgpath_walks(f->c), 2);
	assert_null(cgpath_of(f->c, 0xfffffffffffffull));
	assert_int_equal(cgpath_walks(f->c), 2);
}

/* A cgroup made after a walk is found by the next, the ones known keep their paths. */
static void test_new_directory_found(void **state)
{
	struct fx *f = *state;
	char path[256];

	f->c = cgpath_new(f->root);
	assert_non_null(f->c);
	assert_string_equal(cgpath_of(f->c, ino(f, "a/c")), "/a/c");
	snprintf(path, sizeof(path), "%s/a/c/later", f->root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_string_equal(cgpath_of(f->c, ino(f, "a/c/later")), "/a/c/later");
	assert_int_equal(cgpath_walks(f->c), 2);
	assert_string_equal(cgpath_of(f->c, ino(f, "a/c")), "/a/c");
}

/* No mount: every id is gone, and nothing is walked. */
static void test_no_mount(void **state)
{
	struct fx *f = *state;
	char path[256];

	snprintf(path, sizeof(path), "%s/missing", f->root);
	f->c = cgpath_new(path);
	assert_non_null(f->c);
	assert_null(cgpath_of(f->c, ino(f, "a")));
}

/* The machine's cgroup2 mount, from mountinfo: this process's own cgroup by its id. */
static void test_own_cgroup(void **state)
{
	struct fx *f = *state;
	char *text = read_file("/proc/self/cgroup", NULL), *line, path[4096], mnt[512] = "";
	char dev[64], type[64] = "", *nl;
	FILE *m = fopen("/proc/self/mounts", "r");
	struct stat st;

	f->c = cgpath_new(NULL);
	assert_non_null(f->c);
	while (m && fscanf(m, "%63s %511s %63s %*[^\n]", dev, mnt, type) == 3 &&
	       strcmp(type, "cgroup2"))
		;
	if (strcmp(type, "cgroup2"))
		mnt[0] = '\0';
	if (m)
		fclose(m);
	line = text ? strstr(text, "0::") : NULL;
	if (line && (nl = strchr(line, '\n')))
		*nl = '\0';
	/* no cgroup2 mount, or another cgroup namespace: nothing to compare with */
	if (!mnt[0] || !line || (line != text && line[-1] != '\n') ||
	    snprintf(path, sizeof(path), "%s%s", mnt, line + 3) >= (int)sizeof(path) ||
	    stat(path, &st)) {
		free(text);
		skip();
		return;
	}
	assert_string_equal(cgpath_of(f->c, st.st_ino), line + 3);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_paths_one_walk), T(test_gone_walked_once), T(test_new_directory_found),
		T(test_no_mount),	T(test_own_cgroup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
