// SPDX-License-Identifier: GPL-2.0-only
/*
 * start: a target (what is watched, and who owns it) made from a request, checked against
 * what its client may watch and hold, then each instrument the request asks for, then BPF
 * told about its processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "engine_int.h"
#include "procs.h"
#include "sym.h"
#include "util.h"

#define F_BOOL(n) { .name = (n), .type = PT_BOOL }
#define F_UINT(n, lo, hi) { .name = (n), .type = PT_UINT, .min = (lo), .max = (hi) }
#define F_STR(n, len) { .name = (n), .type = PT_STR, .max = (len) }

static uid_t proc_uid(uint32_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	if (stat(path, &st))
		return (uid_t)-1;
	return st.st_uid;
}

static void proc_comm(uint32_t pid, char *buf, size_t len)
{
	char path[64], *s;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	s = read_file(path, NULL);
	if (s) {
		s[strcspn(s, "\n")] = '\0';
		snprintf(buf, len, "%s", s);
		free(s);
	} else {
		snprintf(buf, len, "%u", pid);
	}
}

/*
 * The descriptor that request field @field names (an index into those the client passed),
 * taken over: -ENOENT if the field is absent, -EBADF if it names no descriptor.
 */
static int take_fd(const struct client *c, const cJSON *req, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, field);
	int fd;

	if (!v)
		return -ENOENT;
	if (!cJSON_IsNumber(v) || v->valuedouble != (int)v->valuedouble || v->valueint < 0 ||
	    v->valueint >= c->nfds || c->fds[v->valueint] < 0)
		return -EBADF;
	fd = c->fds[v->valueint];
	c->fds[v->valueint] = -1;
	return fd;
}

/*
 * A directory or file a request refers to. pcmond opens nothing on a user's behalf (as root,
 * it could read what she may not, learn whether a path exists, or block on a FIFO): the
 * client opens it with its own rights and passes the descriptor; only root's requests may
 * name a bare path, which is opened without blocking.
 */
static int request_fd(const struct client *c, const cJSON *req, const char *fd_field,
		      const char *path, int flags, const char *what, cJSON **rep)
{
	int fd = take_fd(c, req, fd_field);

	if (fd == -EBADF) {
		*rep = proto_error(2, "%s: field \"%s\" names no descriptor passed with the request",
				   what, fd_field);
		return -1;
	}
	if (fd >= 0)
		return fd;
	if (c->uid != 0) {
		*rep = proto_error(2, "%s: pcmond opens no path for a user; pass the descriptor in '%s' (pcmon does)",
				   what, fd_field);
		return -1;
	}
	fd = path ? open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
	if (fd < 0)
		*rep = proto_error(1, "%s %s: %s", what, path ? path : "", strerror(errno));
	return fd;
}

/* The cgroup v2 directory behind @fd, if the client may watch it: its id, else 0. */
static uint64_t cgroup_of_fd(const struct client *c, int fd, const char *path, cJSON **rep)
{
	struct statfs sfs;
	struct stat st;

	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC || fstat(fd, &st) ||
	    !S_ISDIR(st.st_mode)) {
		*rep = proto_error(1, "--cgroup %s: not a cgroup v2 directory (under the cgroup2 mount, e.g. /sys/fs/cgroup)",
				   path);
		return 0;
	}
	if (c->uid != 0 && st.st_uid != c->uid) {
		*rep = proto_error(1, "--cgroup %s belongs to uid %u: you may only watch your own cgroups",
				   path, st.st_uid);
		return 0;
	}
	return st.st_ino; /* a cgroup2 directory's inode number is the cgroup id BPF sees */
}

/* The checks a start request must pass before anything is made: 0, or the error in *rep. */
static int start_allowed(struct engine *e, const struct client *c, const cJSON *req,
			 uint32_t *idp, cJSON **rep)
{
	double pidn = proto_num(req, "pid", 0);
	const char *cg = proto_str(req, "cgroup", NULL);
	int all = proto_bool(req, "all", 0);
	uint32_t id = 0;

	if (!cg && cJSON_GetObjectItemCaseSensitive(req, "cgroup_fd"))
		cg = "(descriptor)";
	*rep = NULL;
	if (!!pidn + !!cg + !!all != 1)
		*rep = proto_error(2, "start: give exactly one of --pid PID, --cgroup DIR, --all");
	/* what pcmond serves over HTTP is root's to say: no user's target is ever served */
	else if (proto_bool(req, "publish", 0) && c->uid != 0)
		*rep = proto_error(2, "--publish: only root publishes targets (they are served to "
				      "whoever reaches pcmond's HTTP server)");
	else if (all && c->uid != 0)
		*rep = proto_error(1, "start --all: only root may watch every task");
	if (!*rep && pidn) {
		uid_t owner = proc_uid(pidn);

		if (owner == (uid_t)-1)
			*rep = proto_error(1, "no process with pid %u (check it with 'ps -p %u')",
					   (uint32_t)pidn, (uint32_t)pidn);
		else if (c->uid != 0 && owner != c->uid)
			*rep = proto_error(1, "pid %u belongs to uid %u: you may only watch your own processes (or run as root)",
					   (uint32_t)pidn, owner);
	}
	if (!*rep && c->uid != 0) {
		uint32_t mine = 0, users = 0;

		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			if (e->targets[i] && e->targets[i]->owner)
				users++;
			if (e->targets[i] && e->targets[i]->owner == c->uid)
				mine++;
		}
		if (mine >= e->o.user_targets)
			*rep = proto_error(1, "you have %u targets, the most one user may have (pcmond --user-targets): drop some with 'pcmon drop TARGET'",
					   mine);
		else if (users >= PCMON_MAX_TARGETS - 1 - ENGINE_ROOT_RESERVE)
			*rep = proto_error(1, "users hold %u targets, all the daemon gives to users (%d more are root's): drop some with 'pcmon drop TARGET'",
					   users, ENGINE_ROOT_RESERVE);
		else if (engine_user_bytes(e, c->uid) > e->o.user_memory)
			*rep = proto_error(1, "your targets hold %zu MiB of results, more than one user may (pcmond --user-memory): drop some with 'pcmon drop TARGET'",
					   engine_user_bytes(e, c->uid) >> 20);
	}
	if (*rep)
		return -1;
	for (uint32_t i = 0; i < PCMON_MAX_TARGETS - 1 && !id; i++) {
		uint32_t cand = (e->next_id + i - 1) % (PCMON_MAX_TARGETS - 1) + 1;

		if (!e->targets[cand])
			id = cand;
	}
	if (!id) {
		*rep = proto_error(1, "too many targets (%d): drop some with 'pcmon drop TARGET'",
				   PCMON_MAX_TARGETS - 1);
		return -1;
	}
	*idp = id;
	return 0;
}

/* What the target watches: kind, pid or cgroup, and its names. 0, or the error in *rep. */
static int start_watched(const struct client *c, const cJSON *req, struct target *t, cJSON **rep)
{
	const char *cg = proto_str(req, "cgroup", NULL);
	int fd;

	if (!cg && cJSON_GetObjectItemCaseSensitive(req, "cgroup_fd"))
		cg = "(descriptor)";
	if (proto_num(req, "pid", 0)) {
		t->kind = TARGET_PID;
		t->pid = proto_num(req, "pid", 0);
		proc_comm(t->pid, t->comm, sizeof(t->comm));
	} else if (cg) {
		t->kind = TARGET_CGROUP;
		fd = request_fd(c, req, "cgroup_fd", cg, O_RDONLY | O_DIRECTORY, "--cgroup", rep);
		if (fd < 0)
			return -1;
		t->cgroup_id = cgroup_of_fd(c, fd, cg, rep);
		t->cgroup_fd = fd; /* (kept: an instrument may read its processes' list) */
		if (!t->cgroup_id)
			return -1;
		snprintf(t->comm, sizeof(t->comm), "%s", basename_of(cg));
	} else {
		t->kind = TARGET_ALL;
		snprintf(t->comm, sizeof(t->comm), "all");
	}
	/* a name is shown to root and in other users' replies: printable, bounded */
	str_sanitize(t->comm, sizeof(t->comm) - 1);
	if (proto_str(req, "name", NULL) &&
	    !str_printable(proto_str(req, "name", ""), sizeof(t->name) - 1)) {
		*rep = proto_error(2, "--name: use printable characters, at most %zu bytes",
				   sizeof(t->name) - 1);
		return -1;
	}
	snprintf(t->name, sizeof(t->name), "%s", proto_str(req, "name", t->comm));
	t->name_is_comm = !proto_str(req, "name", NULL) && t->kind == TARGET_PID;
	t->owner = c->uid;
	t->children = proto_bool(req, "children", 1);
	t->published = proto_bool(req, "publish", 0); /* (root's: start_allowed()) */
	t->exec_wait = proto_bool(req, "exec_wait", 0);
	t->flags = PCMON_TF_ACTIVE | (t->children ? PCMON_TF_CHILDREN : 0);
	return 0;
}

/* BPF is told which processes are the target's: 0, or the error in *rep. */
static int start_processes(struct engine *e, const struct client *c, const cJSON *req,
			   struct target *t, cJSON **rep)
{
	uint32_t had;
	int r;

	if (t->kind == TARGET_CGROUP) {
		r = procs_cgroup_add(e->procs, t->cgroup_id, t->id);
	} else if (t->kind == TARGET_ALL) {
		procs_all_set(e->procs, t->id);
		r = 0;
	} else {
		r = procs_proc_add(e->procs, t->pid, t->id,
				     proto_bool(req, "exec_wait", 0) ? PCMON_PF_EXEC_WAIT : 0, &had);
		if (r == -EEXIST) {
			/* a process is in one target: refused, never moved away silently */
			if (e->targets[had] && engine_may_access(c, e->targets[had]))
				*rep = proto_error(1, "pid %u is already watched by target %u \"%s\": stop and drop it first",
						   t->pid, had, e->targets[had]->name);
			else
				*rep = proto_error(1, "pid %u is already watched by another user's target",
						   t->pid);
			return -1;
		}
		if (!r && had && e->targets[had]) {
			e->targets[had]->handed_over++;
			e->targets[had]->dirty = true;
		}
	}
	if (r) {
		*rep = proto_error(1, "cannot register the target with BPF: %s", strerror(-r));
		return -1;
	}
	if (t->kind == TARGET_PID)
		t->live = 1;
	return 0;
}

/*
 * The file the instruments look into while they attach (t->exe_fd): pcmon run's command,
 * held before its exec (none is no reason to refuse the target; closed once started), or
 * a --cgroup or --all target's --program, whose procedures its nodes name (it must open;
 * kept for the target's life).
 * 0, or the error in *rep.
 */
static int start_program(const struct client *c, const cJSON *req, struct target *t,
			 cJSON **rep)
{
	const char *path = proto_str(req, "exe", NULL);
	cJSON *ignored = NULL;
	struct stat st;

	if (!path && !cJSON_GetObjectItemCaseSensitive(req, "exe_fd"))
		return 0;
	if (t->kind == TARGET_PID && !t->exec_wait) {
		*rep = proto_error(2, "--program names the program of a --cgroup or --all target: a process's are known from it (drop --program)");
		return -1;
	}
	t->exe_fd = request_fd(c, req, "exe_fd", path, O_RDONLY, t->exec_wait ? "exe" : "--program",
			       t->exec_wait ? &ignored : rep);
	cJSON_Delete(ignored);
	if (t->exe_fd >= 0 && (fstat(t->exe_fd, &st) || !S_ISREG(st.st_mode))) {
		close(t->exe_fd);
		t->exe_fd = -1;
		if (!t->exec_wait)
			*rep = proto_error(1, "--program %s: not a regular file", path ? path : "");
	}
	if (t->exe_fd < 0 && !t->exec_wait)
		return -1;
	t->exe_name = basename_of(path ? path : proto_str(req, "name", ""));
	return 0;
}

/*
 * start: the target (what is watched, by whom), then each instrument the request asks for,
 * then BPF is told about its processes. Any failure undoes everything: nothing is started.
 */
cJSON *engine_cmd_start(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = NULL;
	struct target *t;
	uint32_t id;
	int carried = 0;

	if (start_allowed(e, c, req, &id, &rep))
		return rep;
	t = target_new(id);
	if (!t)
		return proto_error(1, "out of memory");
	for_each_inst(i) {
		if (!inst_table[i]->wanted(req))
			continue;
		if (inst_table[i]->new(e->g[i], c, req, &t->inst[i], &rep))
			goto fail;
		carried++;
	}
	if (!carried) {
		rep = proto_error(2, "start: --no-sample leaves the target no instrument: give another one or drop --no-sample");
		goto fail;
	}
	if (start_watched(c, req, t, &rep))
		goto fail;
	for_each_inst(i)
		if (t->inst[i] && inst_table[i]->prompt_events)
			t->flags |= PCMON_TF_PROMPT;
	if (start_program(c, req, t, &rep))
		goto fail;
	if (t->kind == TARGET_PID) /* what it has mapped, for the instruments to look into */
		sym_proc_load(e->sym, t->pid, 0);
	if (engine_target_configure(e, t)) {
		rep = proto_error(1, "cannot register the target with BPF");
		goto fail_release;
	}
	for_each_inst(i) {
		if (t->inst[i] && inst_table[i]->attach(e->g[i], t, t->inst[i], &rep)) {
			/* those attached before it are released with the target */
			for (int k = i; k < INST_MAX; k++) {
				inst_table[k]->free(t->inst[k]);
				t->inst[k] = NULL;
			}
			goto fail_release;
		}
	}
	if (start_processes(e, c, req, t, &rep))
		goto fail_release;
	t->state = TARGET_RUNNING;
	t->start_ns = now_ns();
	t->start_wall = wall_time();
	t->dirty = true;
	e->targets[id] = t;
	e->next_id = id % (PCMON_MAX_TARGETS - 1) + 1;

	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", id);
	cJSON_AddStringToObject(rep, "name", t->name);
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->facts_json(e->g[i], t, t->inst[i], rep);
	if (t->kind != TARGET_PID && t->exe_fd >= 0 && (t->program = strdup(t->exe_name))) {
		t->exe_name = t->program; /* (kept: a node added later is found there) */
	} else {
		if (t->exe_fd >= 0)
			close(t->exe_fd);
		t->exe_fd = -1;
		t->exe_name = NULL;
	}
	return rep;

fail_release:
	engine_target_release(e, t);
fail:
	target_free(t); /* (exe_fd too) */
	return rep ? rep : proto_error(1, "out of memory");
}

/* What a start request says about the target itself; instruments add theirs (inst_ops). */
const struct proto_field engine_target_start_fields[] = {
	{ .name = "pid", .type = PT_UINT, .min = 1, .max = 4194304, .opt = "--pid" },
	F_STR("cgroup", 4096),
	F_UINT("cgroup_fd", 0, PROTO_MAX_FDS - 1),
	F_BOOL("all"),
	F_BOOL("children"),
	F_BOOL("publish"),
	F_BOOL("exec_wait"),
	{ .name = "name", .type = PT_STR, .max = 4096, .opt = "--name" },
	{ .name = "exe", .type = PT_STR, .max = 4096, .opt = "--program" },
	F_UINT("exe_fd", 0, PROTO_MAX_FDS - 1),
};
const size_t engine_ntarget_start_fields = ARRAY_SIZE(engine_target_start_fields);

const struct proto_field *engine_start_field(const char *name)
{
	for (size_t k = 0; k < engine_ntarget_start_fields; k++)
		if (!strcmp(engine_target_start_fields[k].name, name))
			return &engine_target_start_fields[k];
	for_each_inst(i)
		for (size_t k = 0; k < inst_table[i]->nfields; k++)
			if (!strcmp(inst_table[i]->fields[k].name, name))
				return &inst_table[i]->fields[k];
	return NULL;
}

