// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/service/conf.c, pcmond's configuration file without an engine: what
 * inih reads becomes [daemon] settings and start requests, every error is one line naming
 * file, line, section and key (and a file with one is known to have it), the settings table
 * serves the command line too, and conf_plan() says what a start or a reload does to the
 * targets the engine has. (Applying, through the engine: test_engine.c.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "proto.h"
#include "srv.h"
#include "util.h"

/* @text read as the file "t.conf". */
static struct conf *parse(const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct conf *c;

	assert_non_null(f);
	c = conf_parse(f, "t.conf");
	fclose(f);
	assert_non_null(c);
	return c;
}

/* @text has exactly one error, @want. */
static void one_error(const char *text, const char *want)
{
	struct conf *c = parse(text);

	if (c->nerrors != 1 || strcmp(c->errors[0], want))
		fail_msg("%s\n  wanted: %s\n  got %zu errors, the first: %s", text, want,
			 c->nerrors, c->nerrors ? c->errors[0] : "");
	conf_free(c);
}

static void test_good_file(void **state)
{
	struct conf *c = parse("# pcmond\n"
			       "[daemon]\n"
			       "max-stack = 256 ; frames\n"
			       "debuginfod =\n"
			       "bpf-stats = yes\n"
			       "\n"
			       "[target system]\n"
			       "all = yes            ; everything\n"
			       "interval = 52631\n"
			       "unwind = auto\n"
			       "mode = virtual\n"
			       "  kernel = on\n" /* indented: a key, not a continuation */
			       "[target web.1]\n"
			       "cgroup = /sys/fs/cgroup/system.slice/web.service\n"
			       "no-children = yes\n"
			       "critical = lock=*->mutex_lock\n"
			       "critical = io=*->read\n"
			       "when = main->*\n"
			       "[target api]\n"
			       "cgroup = /sys/fs/cgroup/api\n"
			       "program = /usr/bin/api\n"
			       "node = begin\n"
			       "hist-arg = 0\n"
			       "node = end\n"
			       "leg = 1:2\n"
			       "tail = 1:5ms\n");
	const struct conf_target *t;
	const cJSON *r, *crit, *nodes;

	(void)state;
	assert_int_equal(c->nerrors, 0);
	assert_true(c->d.v[CONF_MAX_STACK].set);
	assert_int_equal(c->d.v[CONF_MAX_STACK].num, 256);
	assert_int_equal(c->d.v[CONF_MAX_STACK].line, 3);
	assert_string_equal(c->d.v[CONF_DEBUGINFOD].str, ""); /* off */
	assert_int_equal(c->d.v[CONF_BPF_STATS].num, 1);
	assert_false(c->d.v[CONF_STATE_DIR].set);

	assert_int_equal(c->ntargets, 3);
	t = conf_find(c, "system");
	assert_non_null(t);
	assert_int_equal(t->line, 7);
	r = t->req;
	assert_string_equal(proto_str(r, "cmd", ""), "start");
	assert_string_equal(proto_str(r, "name", ""), "system");
	assert_true(proto_bool(r, "all", 0));
	assert_int_equal(proto_num(r, "interval_us", 0), 52631);
	assert_string_equal(proto_str(r, "unwind", ""), "auto");
	assert_string_equal(proto_str(r, "mode", ""), "virtual");
	assert_true(proto_bool(r, "kernel", 0));

	t = conf_find(c, "web.1");
	assert_non_null(t);
	r = t->req;
	assert_string_equal(proto_str(r, "cgroup", ""), "/sys/fs/cgroup/system.slice/web.service");
	assert_false(proto_bool(r, "children", 1)); /* no-children = yes */
	crit = cJSON_GetObjectItem(r, "critical"); /* a list: each line adds one */
	assert_int_equal(cJSON_GetArraySize(crit), 2);
	assert_string_equal(cJSON_GetArrayItem(crit, 1)->valuestring, "io=*->read");
	assert_string_equal(proto_str(r, "when", ""), "main->*");

	r = conf_find(c, "api")->req; /* nodes: a line each, hist-arg on the one above it */
	assert_string_equal(proto_str(r, "exe", ""), "/usr/bin/api");
	nodes = cJSON_GetObjectItem(r, "nodes");
	assert_int_equal(cJSON_GetArraySize(nodes), 2);
	assert_string_equal(proto_str(cJSON_GetArrayItem(nodes, 0), "spec", ""), "begin");
	assert_int_equal(proto_num(cJSON_GetArrayItem(nodes, 0), "arg", -1), 0);
	assert_string_equal(proto_str(cJSON_GetArrayItem(nodes, 1), "spec", ""), "end");
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(nodes, 1), "arg"));
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "legs"), 0)->valuestring,
			    "1:2");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tails"), 0)->valuestring,
			    "1:5ms");
	assert_null(conf_find(c, "nosuch"));
	conf_free(c);
}

static void test_empty_and_missing(void **state)
{
	struct conf *c = parse("");
	char path[] = "/tmp/pcmon-conf-XXXXXX";
	int fd;

	(void)state;
	assert_int_equal(c->nerrors + c->ntargets, 0);
	conf_free(c);
	/* an empty [daemon] is fine: the shipped file has every key commented out */
	c = parse("[daemon]\n;max-stack = 512\n");
	assert_int_equal(c->nerrors, 0);
	conf_free(c);
	/* the default file may be missing; one named with --config may not */
	c = conf_read("/nonexistent/pcmond.conf", false);
	assert_int_equal(c->nerrors, 0);
	conf_free(c);
	c = conf_read("/nonexistent/pcmond.conf", true);
	assert_int_equal(c->nerrors, 1);
	assert_string_equal(c->errors[0], "/nonexistent/pcmond.conf: No such file or directory");
	conf_free(c);
	c = conf_read("/dev/null", true); /* nothing configured, whatever /etc holds */
	assert_int_equal(c->nerrors + c->ntargets, 0);
	conf_free(c);
	/* one others may write is refused: it starts root's targets */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "[daemon]\n", 9), 9);
	close(fd);
	c = conf_read(path, true);
	assert_int_equal(c->nerrors, 0);
	conf_free(c);
	chmod(path, 0666);
	c = conf_read(path, true);
	assert_int_equal(c->nerrors, 1);
	assert_non_null(strstr(c->errors[0], "writable by users other than"));
	conf_free(c);
	unlink(path);
}

/* Each error: one line, file:line, section and key, what is wrong. */
static void test_errors_name_file_line_key(void **state)
{
	(void)state;
	one_error("[target system]\nall = yes\ninterval = abc\n",
		  "t.conf:3: [target system] interval: \"abc\" is not a number of microseconds");
	one_error("[target system]\nall = yes\ninterval = 0\n",
		  "t.conf:3: [target system] interval: \"0\" is not a number of microseconds from 1 to 60000000");
	one_error("[target system]\nall = yes\ninterval = 5 Hz\n",
		  "t.conf:3: [target system] interval: \"5 Hz\" is not a number of microseconds");
	one_error("[target system]\nall = yes\ncolour = red\n",
		  "t.conf:3: [target system] colour: unknown key (the keys of a target are pcmon start's options: all, cgroup, interval, unwind, mode, ... as pcmond(8) lists them)");
	one_error("[daemon]\ncolour = red\n",
		  "t.conf:2: [daemon] colour: unknown key (the keys of [daemon] are pcmond's options: socket, state-dir, max-stack, ... as pcmond(8) lists them)");
	one_error("[targets]\nall = yes\n",
		  "t.conf:1: unknown section [targets]: the sections are [daemon] and [target NAME]");
	one_error("[Daemon]\n",
		  "t.conf:1: unknown section [Daemon]: the sections are [daemon] and [target NAME]");
	one_error("[daemon]\nmax-stack = 513\n",
		  "t.conf:2: [daemon] max-stack: \"513\" is not a number of frames from 1 to 512");
	one_error("[daemon]\nbpf-stats = maybe\n",
		  "t.conf:2: [daemon] bpf-stats: \"maybe\" is not yes or no");
	one_error("[daemon]\nstate-dir =\n", "t.conf:2: [daemon] state-dir: give a value");
	one_error("[daemon]\nmax-stack = 5\n\nmax-stack = 6\n",
		  "t.conf:4: [daemon] max-stack: given twice (first at line 2)");
	one_error("[daemon]\nmax-user-clients = 60\n",
		  "t.conf:2: [daemon] max-user-clients: 60 is more than max-clients (64) less the 8 kept for root");
	one_error("max-stack = 5\n",
		  "t.conf:1: max-stack: a key outside any section: put it under [daemon] or [target NAME]");
	one_error("[target a]\nall = yes\nmode = sideways\n",
		  "t.conf:3: [target a] mode: \"sideways\" is not one of real|virtual");
	one_error("[target a]\nall = perhaps\n", "t.conf:2: [target a] all: \"perhaps\" is not yes or no");
	one_error("[target a]\nall = yes\nunwind = fp\nunwind = dwarf\n",
		  "t.conf:4: [target a] unwind: given twice (first at line 3)");
	one_error("[target a]\nall = yes\npid = 1\n",
		  "t.conf:3: [target a] pid: not a key here: a process's id is not known before it starts: watch its cgroup, or all");
	one_error("[target a]\nall = yes\nname = b\n",
		  "t.conf:3: [target a] name: not a key here: the section names the target: [target NAME]");
	one_error("[target a]\ncgroup = system.slice\n",
		  "t.conf:2: [target a] cgroup: \"system.slice\" is not an absolute path (a directory under /sys/fs/cgroup)");
	one_error("[target a]\nall = yes\ncount = malloc\n",
		  "t.conf:3: [target a] count: not a key here: call counts need a process (--pid or a command): a cgroup's or every task's objects are not known in advance");
	one_error("[target a]\nall = yes\nleg = 1:2\n",
		  "t.conf:1: [target a]: leg, hist, track, add and tail go with nodes: give them with node = ..., or leave them out");
	one_error("[target a]\nall = yes\nnode = main\n",
		  "t.conf:1: [target a]: its nodes are in a program: name it, program = PATH");
	one_error("[target a]\nall = yes\nprogram = /bin/x\nnode = main\nhist-arg = 1\nhist-arg = 2\n",
		  "t.conf:6: [target a] hist-arg: given twice for the node above it");
	one_error("[target a]\nall = yes\nwhen =\n", "t.conf:3: [target a] when: give a value");
}

/* What no single key can say, on the section's line; what inih refuses, on its own. */
static void test_errors_of_sections_and_lines(void **state)
{
	char longline[CONF_MAX_LINE + 64];

	(void)state;
	one_error("[target a]\ninterval = 1000\n",
		  "t.conf:1: [target a]: say what it watches: all = yes, or cgroup = DIR");
	one_error("[target a]\n", "t.conf:1: [target a]: say what it watches: all = yes, or cgroup = DIR");
	one_error("[target a]\nall = no\n",
		  "t.conf:1: [target a]: say what it watches: all = yes, or cgroup = DIR");
	one_error("[target a]\nall = yes\ncgroup = /sys/fs/cgroup/x\n",
		  "t.conf:1: [target a]: all = yes and cgroup: give one of them");
	one_error("[target a]\ncgroup = /sys/fs/cgroup/x\nno-sample = yes\n",
		  "t.conf:1: [target a]: no-sample = yes leaves it nothing to do: give alloc = yes or nodes too, or leave no-sample out");
	one_error("[target a]\nall = yes\nalloc = yes\n",
		  "t.conf:1: [target a]: alloc = yes watches a cgroup, not all tasks: each would trap on every allocator call (give cgroup = DIR)");
	one_error("[target a]\nall = yes\n[target b]\ncgroup = /x\n[target c]\nall = yes\n",
		  "t.conf:5: [target c]: all = yes, as [target a] (line 1): one target watches all tasks");
	one_error("[target]\n", "t.conf:1: [target]: name the target: [target NAME]");
	one_error("[target 42]\n",
		  "t.conf:1: [target 42]: a target's name is letters, digits, '.', '-' and '_', at most 42 of them, not digits alone");
	one_error("[target a@1]\n",
		  "t.conf:1: [target a@1]: a target's name is letters, digits, '.', '-' and '_', at most 42 of them, not digits alone");
	one_error("[target a]\nall = yes\n[target a]\nall = yes\n",
		  "t.conf:3: [target a] given twice (first at line 1)");
	one_error("[daemon]\n[daemon]\n", "t.conf:2: [daemon] given twice (first at line 1)");
	one_error("[daemon]\njust words\n",
		  "t.conf:2: not a [section], a key = value line or a comment");
	one_error("[daemon\n", "t.conf:1: a [section] line without its ']'");
	one_error("[daemon] extra\n", "t.conf:1: text after the ']' of a [section] line");
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "[daemon]\nsocket = /", 19);
	memcpy(longline + sizeof(longline) - 2, "\n", 2);
	one_error(longline, "t.conf:2: longer than 4094 characters");
}

/* Errors come in the order of their lines, each section's own at its line. */
static void test_errors_in_line_order(void **state)
{
	struct conf *c = parse("[target a]\n"
			       "interval = 1000\n"
			       "[daemon]\n"
			       "max-stack = x\n"
			       "[nosuch]\n");

	(void)state;
	assert_int_equal(c->nerrors, 3);
	assert_non_null(strstr(c->errors[0], "t.conf:1: [target a]: say what it watches"));
	assert_non_null(strstr(c->errors[1], "t.conf:4: [daemon] max-stack:"));
	assert_non_null(strstr(c->errors[2], "t.conf:5: unknown section [nosuch]"));
	conf_free(c);
	/* a section whose keys are wrong is not also told it lacks them */
	c = parse("[target a]\ncgroup = rel\n");
	assert_int_equal(c->nerrors, 1);
	conf_free(c);
}

/* The command line goes through the same table: its values first, the file's for the rest. */
static void test_settings_and_command_line(void **state)
{
	struct conf_daemon cmd = { 0 }, set = { 0 };
	struct conf *c = parse("[daemon]\nmax-stack = 100\nuser-memory = 64\nsocket = /run/x.sock\n");
	struct engine_opts eo = { 0 };
	struct srv_opts so = { 0 };
	enum conf_setting_id bad;
	const char *sock;
	char why[160];

	(void)state;
	assert_int_equal(conf_daemon_set(&cmd, "max-stack", "200", 0, why, sizeof(why)), 0);
	assert_int_equal(conf_daemon_set(&cmd, "bpf-stats", "yes", 0, why, sizeof(why)), 0);
	assert_int_equal(conf_daemon_set(&cmd, "drain-entries", "10", 0, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "\"10\" is not a number of entries from 1024 to 1048576");
	assert_int_equal(conf_daemon_set(&cmd, "nosuch", "1", 0, why, sizeof(why)), -ENOENT);
	assert_int_equal(conf_daemon_merge(&set, &cmd), 0);
	assert_int_equal(conf_daemon_merge(&set, &c->d), 0);
	assert_int_equal(conf_daemon_check(&set, &bad, why, sizeof(why)), 0);
	conf_daemon_opts(&set, &eo, &so, &sock);
	assert_int_equal(eo.max_depth, 200); /* the command line wins */
	assert_true(eo.bpf_stats);
	assert_int_equal(eo.user_memory, 64ull << 20);
	assert_string_equal(sock, "/run/x.sock");
	assert_string_equal(eo.state_dir, PCMON_DEFAULT_STATE_DIR);
	assert_null(eo.debuginfod); /* unset: $DEBUGINFOD_URLS */
	assert_int_equal(so.max_clients, 0); /* 0: srv's default */
	/* every option is a setting, with its range */
	for (int i = 0; i < CONF_NSETTINGS; i++)
		assert_true(conf_settings[i].kind != CONF_NUM ||
			    (conf_settings[i].min <= conf_settings[i].max && conf_settings[i].unit));
	assert_int_equal(conf_daemon_set(&cmd, "max-user-clients", "100", 0, why, sizeof(why)), 0);
	assert_int_equal(conf_daemon_check(&cmd, &bad, why, sizeof(why)), -EINVAL);
	assert_int_equal(bad, CONF_MAX_USER_CLIENTS);
	assert_int_equal(conf_daemon_set(&cmd, "max-clients", "200", 0, why, sizeof(why)), 0);
	assert_int_equal(conf_daemon_check(&cmd, &bad, why, sizeof(why)), 0);
	conf_daemon_free(&cmd);
	conf_daemon_free(&set);
	conf_free(c);
}

/* ---- conf_plan */

static size_t plan(const struct conf *old, struct conf *new, const struct conf_seen *seen,
		   size_t n, struct conf_step **steps)
{
	size_t nsteps;

	assert_int_equal(conf_plan(old, new, seen, n, steps, &nsteps), 0);
	return nsteps;
}

/* At start: a stopped target of the section's name (the last run's) gets a name of its own
 * and a new one starts; another user's of the name is none of ours. */
static void test_plan_at_start(void **state)
{
	struct conf *c = parse("[target system]\nall = yes\n[target web]\nall = yes\n");
	struct conf_seen seen[] = {
		{ .id = 3, .name = "system", .owner = 0, .live = false },
		{ .id = 4, .name = "system", .owner = 1000, .live = true },
		{ .id = 5, .name = "other", .owner = 0, .live = false },
	};
	struct conf_step *s;
	size_t n = plan(NULL, c, seen, ARRAY_SIZE(seen), &s);

	(void)state;
	assert_int_equal(n, 3);
	assert_int_equal(s[0].op, CONF_RENAME);
	assert_int_equal(s[0].id, 3);
	assert_string_equal(s[0].name, "system@3");
	assert_int_equal(s[1].op, CONF_START);
	assert_ptr_equal(s[1].t, conf_find(c, "system"));
	assert_int_equal(s[2].op, CONF_START);
	assert_ptr_equal(s[2].t, conf_find(c, "web"));
	free(s);
	conf_free(c);
}

/* A reload: unchanged kept, removed stopped, changed stopped + renamed + started, new started. */
static void test_plan_reload(void **state)
{
	struct conf *old = parse("[target keep]\nall = yes\ninterval = 1000\n"
				 "[target gone]\nall = yes\n"
				 "[target edit]\nall = yes\ninterval = 1000\n");
	struct conf *new = parse("[target edit]\nall = yes\ninterval = 2000\n"
				 "[target keep]\ninterval = 1000 ; the same, in another order\nall = true\n"
				 "[target fresh]\nall = yes\n");
	struct conf_seen seen[] = {
		{ .id = 1, .name = "keep", .live = true },
		{ .id = 2, .name = "gone", .live = true },
		{ .id = 3, .name = "edit", .live = true },
	};
	struct conf_step *s;
	size_t n;

	(void)state;
	old->targets[0].id = 1;
	old->targets[1].id = 2;
	old->targets[2].id = 3;
	n = plan(old, new, seen, ARRAY_SIZE(seen), &s);
	assert_int_equal(n, 6);
	assert_int_equal(s[0].op, CONF_STOP); /* gone */
	assert_int_equal(s[0].id, 2);
	assert_string_equal(s[0].why, "removed");
	assert_string_equal(s[0].name, "gone");
	assert_int_equal(s[1].op, CONF_STOP); /* edit */
	assert_int_equal(s[1].id, 3);
	assert_string_equal(s[1].why, "changed");
	assert_int_equal(s[2].op, CONF_KEEP);
	assert_int_equal(s[2].id, 1);
	assert_int_equal(conf_find(new, "keep")->id, 1);
	assert_int_equal(s[3].op, CONF_RENAME);
	assert_int_equal(s[3].id, 3);
	assert_string_equal(s[3].name, "edit@3");
	assert_int_equal(s[4].op, CONF_START);
	assert_string_equal(s[4].t->name, "edit");
	assert_int_equal(s[5].op, CONF_START);
	assert_string_equal(s[5].t->name, "fresh");
	free(s);
	conf_free(old);
	conf_free(new);
}

/* Every stop before any start, and cgroup targets start before all targets: a process is
 * in the first target that takes it, and the all target takes any. */
static void test_plan_order(void **state)
{
	struct conf *old = parse("[target sys]\nall = yes\n[target a]\ncgroup = /c/a\n");
	struct conf *new = parse("[target sys]\nall = yes\ninterval = 2000\n"
				 "[target b]\ncgroup = /c/a\n");
	struct conf_seen seen[] = {
		{ .id = 1, .name = "sys", .live = true },
		{ .id = 2, .name = "a", .live = true },
	};
	struct conf_step *s;
	size_t n;

	(void)state;
	old->targets[0].id = 1;
	old->targets[1].id = 2;
	n = plan(old, new, seen, ARRAY_SIZE(seen), &s);
	assert_int_equal(n, 5);
	assert_int_equal(s[0].op, CONF_STOP);
	assert_int_equal(s[0].id, 2);
	assert_int_equal(s[1].op, CONF_STOP);
	assert_int_equal(s[1].id, 1);
	assert_int_equal(s[2].op, CONF_RENAME);
	assert_int_equal(s[3].op, CONF_START);
	assert_string_equal(s[3].t->name, "b"); /* the cgroup's, first */
	assert_int_equal(s[4].op, CONF_START);
	assert_string_equal(s[4].t->name, "sys");
	free(s);
	conf_free(old);
	conf_free(new);
}

/* What root did by hand since: a target stopped stays stopped; one dropped, or renamed, is
 * the section's no more and is started again; a running one of the name is not doubled. */
static void test_plan_after_hands(void **state)
{
	struct conf *old = parse("[target a]\nall = yes\n[target b]\nall = yes\n"
				 "[target c]\nall = yes\n");
	struct conf *new = parse("[target a]\nall = yes\n[target b]\nall = yes\n"
				 "[target c]\nall = yes\n[target d]\nall = yes\n");
	struct conf_seen seen[] = {
		{ .id = 1, .name = "a", .live = false },	/* stopped by hand */
		{ .id = 3, .name = "renamed", .live = true },	/* c, renamed by hand */
		{ .id = 7, .name = "d", .live = true },		/* started by hand */
	};
	struct conf_step *s;
	size_t n;

	(void)state;
	old->targets[0].id = 1;
	old->targets[1].id = 2; /* dropped */
	old->targets[2].id = 3;
	n = plan(old, new, seen, ARRAY_SIZE(seen), &s);
	assert_int_equal(n, 4);
	assert_int_equal(s[0].op, CONF_KEEP);
	assert_int_equal(s[0].id, 1);
	assert_int_equal(s[1].op, CONF_BLOCKED);
	assert_int_equal(s[1].id, 7);
	assert_int_equal(s[2].op, CONF_START);
	assert_string_equal(s[2].t->name, "b");
	assert_int_equal(s[3].op, CONF_START);
	assert_string_equal(s[3].t->name, "c");
	assert_int_equal(conf_find(new, "d")->id, 0);
	free(s);
	/* a section whose start failed, or was not made (id 0), is tried again */
	n = plan(new, old, seen, ARRAY_SIZE(seen), &s);
	assert_int_equal(n, 3);
	assert_int_equal(s[0].op, CONF_KEEP);
	assert_int_equal(s[1].op, CONF_START);
	assert_string_equal(s[1].t->name, "b");
	free(s);
	conf_free(old);
	conf_free(new);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_file),
		cmocka_unit_test(test_empty_and_missing),
		cmocka_unit_test(test_errors_name_file_line_key),
		cmocka_unit_test(test_errors_of_sections_and_lines),
		cmocka_unit_test(test_errors_in_line_order),
		cmocka_unit_test(test_settings_and_command_line),
		cmocka_unit_test(test_plan_at_start),
		cmocka_unit_test(test_plan_reload),
		cmocka_unit_test(test_plan_order),
		cmocka_unit_test(test_plan_after_hands),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
