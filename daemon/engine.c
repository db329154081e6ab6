// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agg.h"
#include "count.h"
#include "dbginfo.h"
#include "engine.h"
#include "inst.h"
#include "legs.h"
#include "pat.h"
#include "probes.h"
#include "proto.h"
#include "sample.h"
#include "sampler.h"
#include "lines.h"
#include "profil.h"
#include "stacks.h"
#include "store.h"
#include "sym.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

const char engine_version[] = PCMON_VERSION;

#define for_each_inst(i) for (int i = 0; i < INST_MAX; i++)

struct engine {
	struct engine_opts o;
	struct sampler *smp;
	struct probes *probes;		/* the probe thread, from the first target on */
	struct sym *sym;
	struct dbginfo *dbg;		/* debuginfod fetches, NULL when off */
	struct target *targets[PCMON_MAX_TARGETS];
	uint32_t next_id;
	int epfd, timerfd;
	uint64_t started_ns;
	double started_wall;
	uint64_t last_flush_ns;
	uint64_t flush_cost_ns;		/* what the last periodic save took */
	struct store *store;		/* the state directory; NULL: none */
	struct inst_env env;		/* lent to the instruments */
	void *g[INST_MAX];		/* each instrument's engine-wide state */
	struct proto_field *start_fields; /* the target's and every instrument's */
	size_t nstart_fields;
};

static void attach_usdt(void *ctx, const char *path)
{
	struct engine *e = ctx;

	sampler_usdt_attach(e->smp, path);
}

static int start_fields_init(struct engine *e);

/* ---- lifecycle */

int engine_new(const struct engine_opts *o, struct engine **out, char *err, size_t errlen)
{
	struct sampler_opts so = { .max_depth = o->max_depth, .dwarf_stack = o->dwarf_stack,
				   .counts_entries = o->counts_entries, .bpf_stats = o->bpf_stats };
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct engine *e;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->o = *o;
	if (!e->o.drain_ms)
		e->o.drain_ms = 1000;
	if (!e->o.user_targets)
		e->o.user_targets = 16;
	if (!e->o.user_memory)
		e->o.user_memory = 256ull << 20;
	e->epfd = e->timerfd = -1;
	e->next_id = 1;
	e->started_ns = now_ns();
	e->started_wall = wall_time();
	e->sym = sym_new(0);
	if (!e->sym || start_fields_init(e)) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r = sampler_open(&so, &e->smp, err, errlen);
	if (r)
		goto fail;
	e->env = (struct inst_env){ .smp = e->smp, .sym = e->sym, .targets = e->targets };
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->timerfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create the event loop: %s", strerror(-r));
		goto fail;
	}
	its.it_interval.tv_sec = e->o.drain_ms / 1000;
	its.it_interval.tv_nsec = (long)(e->o.drain_ms % 1000) * 1000000L;
	its.it_value = its.it_interval;
	if (timerfd_settime(e->timerfd, 0, &its, NULL)) {
		r = -errno;
		snprintf(err, errlen, "cannot set the engine's timer: %s", strerror(-r));
		goto fail;
	}
	ev.data.fd = e->timerfd;
	epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->timerfd, &ev);
	ev.data.fd = sampler_events_fd(e->smp);
	epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	ev.data.fd = sampler_stacks_fd(e->smp);
	epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	{
		struct dbginfo_opts dio = { .urls = o->debuginfod, .cache_dir = o->cache_dir };

		/* off unless servers are configured; trouble starting it is only a warning */
		if (!dbginfo_new(&dio, &e->dbg) && e->dbg) {
			sym_set_dbginfo(e->sym, e->dbg);
			ev.data.fd = dbginfo_fd(e->dbg);
			epoll_ctl(e->epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
		}
	}
	e->env.dbg = e->dbg;
	for_each_inst(i) {
		r = inst_table[i]->open(&e->env, &e->g[i], err, errlen);
		if (r)
			goto fail;
	}
	if (e->o.state_dir) {
		r = store_open(e->o.state_dir, &e->store);
		if (r) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
		store_load_all(e->store, e->sym, e->targets, PCMON_MAX_TARGETS, &e->next_id);
	}
	*out = e;
	return 0;
fail:
	engine_free(e);
	return r;
}

static void target_release(struct engine *e, struct target *t);

void engine_free(struct engine *e)
{
	if (!e)
		return;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		if (!e->targets[i])
			continue;
		if (e->smp)
			target_release(e, e->targets[i]);
		target_free(e->targets[i]);
	}
	for_each_inst(i)
		if (e->g[i])
			inst_table[i]->close(e->g[i]);
	probes_stop(e->probes);
	sampler_close(e->smp);
	sym_free(e->sym);
	dbginfo_free(e->dbg);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->timerfd >= 0)
		close(e->timerfd);
	free(e->start_fields);
	store_close(e->store);
	free(e);
}

int engine_fd(struct engine *e)
{
	return e->epfd;
}

/* ---- draining: each instrument collects what BPF holds */

/* Memory the targets of @uid hold. */
static size_t user_bytes(const struct engine *e, uid_t uid)
{
	size_t sum = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (!t || t->owner != uid)
			continue;
		for_each_inst(k)
			if (t->inst[k])
				sum += inst_table[k]->bytes(t->inst[k]);
	}
	return sum;
}

/* Who is over the memory allowance of a user, as of now (root has none). */
static void check_user_memory(struct engine *e)
{
	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (t)
			t->over_memory = t->owner && user_bytes(e, t->owner) > e->o.user_memory;
	}
}

static void drain(struct engine *e)
{
	check_user_memory(e);
	for_each_inst(i)
		inst_table[i]->tick(e->g[i]);
}

static void on_dsample(void *ctx, const void *data, size_t len)
{
	struct engine *e = ctx;

	sample_on_dsample(e->g[INST_SAMPLE], data, len);
}

/* ---- process lifecycle */

/* Critical-section probes are the probe thread's (probes.h): here only symbols. */
static void on_event(void *ctx, const struct pcmon_event *ev)
{
	struct engine *e = ctx;
	struct target *t = ev->target < PCMON_MAX_TARGETS ? e->targets[ev->target] : NULL;

	if (t && ev->type == PCMON_EV_EXEC && ev->pid == t->pid)
		t->exec_wait = false;

	switch (ev->type) {
	case PCMON_EV_FORK:
		sym_proc_load(e->sym, ev->pid, 0);
		if (t)
			t->live++;
		break;
	case PCMON_EV_EXEC:
		if (ev->epoch)
			sym_proc_final(e->sym, ev->pid, ev->epoch - 1);
		sym_proc_load(e->sym, ev->pid, ev->epoch);
		if (t && ev->pid == t->pid)
			snprintf(t->comm, sizeof(t->comm), "%.*s", PCMON_COMM_LEN, ev->comm);
		break;
	case PCMON_EV_DLOPEN:
		sym_proc_load(e->sym, ev->pid, ev->epoch);
		break;
	case PCMON_EV_EXIT:
		sym_proc_final(e->sym, ev->pid, ev->epoch);
		if (!t)
			break;
		if (ev->pid == t->pid) {
			t->exit_status = ev->exit_code;
			t->root_exited = true;
		}
		if (t->live > 0 && --t->live == 0 && t->kind == TARGET_PID &&
		    t->state != TARGET_STOPPED) {
			t->state = TARGET_EXITED;
			t->end_ns = now_ns();
			t->dirty = true;
		}
		break;
	}
	for_each_inst(i)
		if (t && t->inst[i] && inst_table[i]->event)
			inst_table[i]->event(e->g[i], t, t->inst[i], ev);
}

/* Debug info fetched for a build-id: its modules' locations get their names now. */
static void on_debuginfo(void *ctx, const unsigned char *bid, size_t len)
{
	struct engine *e = ctx;
	uint64_t t0 = now_ns();
	uint32_t n = sym_debuginfo_arrived(e->sym, bid, len);

	if (!n)
		return;
	pr_info("debuginfod: %u object(s) symbolized again in %.1f ms", n, (now_ns() - t0) / 1e6);
	/* stacks are saved symbolized: save them again with the better names */
	for (int i = 0; i < PCMON_MAX_TARGETS; i++)
		if (e->targets[i])
			e->targets[i]->dirty = true;
}

/* Bring every target up to date: events, then everything BPF holds (both buffers). */
static void sync_all(struct engine *e)
{
	sampler_poll(e->smp, on_event, on_dsample, e);
	check_user_memory(e);
	for_each_inst(i)
		inst_table[i]->sync(e->g[i]);
}

void engine_work(struct engine *e)
{
	struct epoll_event evs[4];
	int n = epoll_wait(e->epfd, evs, 4, 0);

	for (int i = 0; i < n; i++) {
		if (evs[i].data.fd == dbginfo_fd(e->dbg)) {
			dbginfo_collect(e->dbg, on_debuginfo, e);
		} else if (evs[i].data.fd == e->timerfd) {
			uint64_t ticks;

			if (read(e->timerfd, &ticks, sizeof(ticks)) < 0)
				continue;
			/*
			 * Save what changed every 5 s, or less often when saving takes long (a
			 * target of 100k stacks): saving then costs at most 2 % of a CPU. What
			 * BPF holds is drained for it; between saves only a filling map is.
			 */
			if (e->o.state_dir &&
			    now_ns() - e->last_flush_ns > MAX(5000000000ULL, 50 * e->flush_cost_ns)) {
				sync_all(e);
				engine_flush(e, false);
				e->flush_cost_ns = now_ns() - e->last_flush_ns;
			} else {
				/* events first: an exec must finalize the old map before its samples drain */
				sampler_poll(e->smp, on_event, on_dsample, e);
				drain(e);
			}
			dbginfo_tick(e->dbg);
		} else {
			sampler_poll(e->smp, on_event, on_dsample, e);
			if (sampler_drain_wanted(e->smp))
				drain(e);
		}
	}
}

void engine_flush(struct engine *e, bool durable)
{
	e->last_flush_ns = now_ns();
	if (!e->o.state_dir)
		return;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];
		bool done = t && (t->state == TARGET_STOPPED || t->state == TARGET_EXITED);

		/* only what changed since the last save: a big idle target is not rewritten */
		if (t && t->dirty) {
			if (!store_save(e->store, e->sym, t, durable || done))
				t->dirty = false; /* else retried at the next flush */
		}
	}
}

/* ---- helpers for commands */

static bool may_access(const struct client *c, const struct target *t)
{
	return c->uid == 0 || c->uid == t->owner;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* Resolve the "target" argument: an id, or a name; absent means the caller's newest. */
static struct target *find_target(struct engine *e, const struct client *c, const cJSON *req,
				  cJSON **err)
{
	const cJSON *num = cJSON_GetObjectItemCaseSensitive(req, "target");
	const char *arg = proto_str(req, "target", NULL);
	struct target *found = NULL;
	char idbuf[24];

	if (cJSON_IsNumber(num)) { /* an id given as a number is as good as its text */
		snprintf(idbuf, sizeof(idbuf), "%.0f", num->valuedouble);
		arg = idbuf;
	}

	if (!arg) {
		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			struct target *t = e->targets[i];

			if (t && may_access(c, t) && (!found || t->start_wall > found->start_wall))
				found = t;
		}
		if (!found)
			*err = proto_error(1, "no targets: start one with 'pcmon start --pid PID' or 'pcmon run -- CMD'");
		return found;
	}
	if (all_digits(arg)) {
		long id = strtol(arg, NULL, 10);

		if (id > 0 && id < PCMON_MAX_TARGETS && e->targets[id] &&
		    may_access(c, e->targets[id]))
			return e->targets[id];
	} else {
		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			struct target *t = e->targets[i];

			if (!t || !may_access(c, t) || strcmp(t->name, arg))
				continue;
			if (found) {
				*err = proto_error(2, "target name '%s' is ambiguous (ids %u and %u): use the id",
						   arg, found->id, t->id);
				return NULL;
			}
			found = t;
		}
		if (found)
			return found;
	}
	*err = proto_error(1, "no target '%s': 'pcmon targets' lists them", arg);
	return NULL;
}

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

/* BPF's view of the target as a watched set (instruments add their own settings). */
static int target_configure(struct engine *e, struct target *t)
{
	return sampler_target_set(e->smp, t->id, t->flags, 0, t->owner);
}

/* Every instrument detached and BPF told to forget the target's processes. */
static void target_release(struct engine *e, struct target *t)
{
	t->flags &= ~PCMON_TF_ACTIVE;
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->stop(e->g[i], t, t->inst[i]);
	sampler_target_clear(e->smp, t->id);
}

/* Pause, resume or stop: t->flags says which, BPF and every instrument are told. */
static void target_activate(struct engine *e, struct target *t)
{
	target_configure(e, t);
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->set_active(e->g[i], t, t->inst[i],
						  t->flags & PCMON_TF_ACTIVE);
}

/* ---- commands */

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

/*
 * pcmon run: the probes of the command it is about to exec, attached before it is released.
 * Only a regular file: the descriptor is the client's, opened with its rights.
 */
static void attach_exe_probes(struct engine *e, int fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && sym_fd_has_probes(fd))
		sampler_usdt_attach(e->smp, path);
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
		else if (user_bytes(e, c->uid) > e->o.user_memory)
			*rep = proto_error(1, "your targets hold %zu MiB of results, more than one user may (pcmond --user-memory): drop some with 'pcmon drop TARGET'",
					   user_bytes(e, c->uid) >> 20);
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
		close(fd);
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
	t->owner = c->uid;
	t->children = proto_bool(req, "children", 1);
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
		r = sampler_cgroup_add(e->smp, t->cgroup_id, t->id);
	} else if (t->kind == TARGET_ALL) {
		sampler_all_set(e->smp, t->id);
		r = 0;
	} else {
		r = sampler_proc_add(e->smp, t->pid, t->id,
				     proto_bool(req, "exec_wait", 0) ? PCMON_PF_EXEC_WAIT : 0, &had);
		if (r == -EEXIST) {
			/* a process is in one target: refused, never moved away silently */
			if (e->targets[had] && may_access(c, e->targets[had]))
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
	if (t->kind == TARGET_PID) {
		t->live = 1;
		sym_proc_load(e->sym, t->pid, 0);
		sym_proc_usdt(e->sym, t->pid, 0, attach_usdt, e);
		/* pcmon run: the command's own probes are attached before it is released */
		if (t->exe_fd >= 0)
			attach_exe_probes(e, t->exe_fd);
	}
	return 0;
}

/*
 * start: the target (what is watched, by whom), then each instrument the request asks for,
 * then BPF is told about its processes. Any failure undoes everything: nothing is started.
 */
static cJSON *cmd_start(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = NULL;
	struct target *t;
	uint32_t id;
	char err[256];
	int carried = 0;

	if (start_allowed(e, c, req, &id, &rep))
		return rep;
	/* started here, not in engine_new(): pcmond forks into the background after that */
	if (!e->probes && probes_start(e->smp, &e->probes, err, sizeof(err)))
		return proto_error(1, "%s", err);
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
	/* pcmon run: the file the held process will exec, for the instruments to look into */
	if (t->exec_wait &&
	    (proto_str(req, "exe", NULL) || cJSON_GetObjectItemCaseSensitive(req, "exe_fd"))) {
		cJSON *ignored = NULL;
		struct stat st;

		t->exe_fd = request_fd(c, req, "exe_fd", proto_str(req, "exe", NULL), O_RDONLY,
				       "exe", &ignored);
		cJSON_Delete(ignored); /* no file to look into is no reason to refuse the target */
		if (t->exe_fd >= 0 && (fstat(t->exe_fd, &st) || !S_ISREG(st.st_mode))) {
			close(t->exe_fd);
			t->exe_fd = -1;
		}
		t->exe_name = basename_of(proto_str(req, "exe", proto_str(req, "name", "")));
	}
	if (target_configure(e, t)) {
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
	if (t->exe_fd >= 0)
		close(t->exe_fd);
	t->exe_fd = -1;
	t->exe_name = NULL;
	return rep;

fail_release:
	target_release(e, t);
fail:
	if (t->exe_fd >= 0)
		close(t->exe_fd);
	target_free(t);
	return rep ? rep : proto_error(1, "out of memory");
}

/* Stop watching for good, collecting everything already collected. */
static void target_stop(struct engine *e, struct target *t)
{
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED) {
		t->flags &= ~PCMON_TF_ACTIVE;
		target_activate(e, t);
		t->state = TARGET_STOPPED;
		t->end_ns = now_ns();
	}
	sync_all(e);
	target_release(e, t);
	t->dirty = true;
}

/* Bring a target up to date for a report: what BPF holds, names that arrived. */
static void target_sync(struct engine *e, struct target *t)
{
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)
		sync_all(e);
	dbginfo_collect(e->dbg, on_debuginfo, e);
}

/* Sampling's part of a listing: the target, the summary, the procedures. */
static cJSON *list_samples(struct engine *e, struct target *t, const cJSON *req, cJSON *rep)
{
	const char *lines = proto_str(req, "lines", NULL), *offset = proto_str(req, "offset", NULL);
	struct sample_listing ls;
	struct stacks *x = NULL;
	struct pcs *pcs = NULL;
	cJSON *err = NULL;
	struct agg_list l;

	if (!!lines + !!offset + proto_bool(req, "stacks", 0) > 1)
		return proto_error(2, "list: one view at a time: --lines, profil or an export");
	if (sample_listing_begin(e->g[INST_SAMPLE], t, req, &ls, &rep))
		return rep;
	if (proto_bool(req, "stacks", 0)) { /* the exports' view */
		x = stacks_new(e->sym, &ls.lo, ls.sp);
		ls.lo.visit = stacks_visit;
		ls.lo.visit_ctx = x;
	} else if (lines || offset) { /* where inside procedures */
		pcs = pcs_new(e->sym);
		ls.lo.visit = pcs_visit;
		ls.lo.visit_ctx = pcs;
	}
	if ((ls.lo.visit && !ls.lo.visit_ctx) || agg_list(ls.sp->agg, e->sym, &ls.lo, &l)) {
		cJSON_Delete(rep);
		rep = proto_error(1, "out of memory while listing");
	} else if ((x && stacks_json(x, rep)) ||
		   (lines && pcs_lines_json(pcs, lines, l.counted, rep, &err)) ||
		   (offset && pcs_profil_json(pcs, offset, proto_num(req, "scale", 0x10000),
					      proto_num(req, "bufsiz", 0), t->comm, rep, &err))) {
		agg_list_free(&l);
		cJSON_Delete(rep);
		rep = err ? err : proto_error(1, "out of memory while listing");
	} else {
		if (x) {
			cJSON *p = cJSON_GetObjectItemCaseSensitive(rep, "profile");

			cJSON_AddNumberToObject(p, "period_ns", (double)ls.lo.period_ns);
			cJSON_AddNumberToObject(p, "start_wall", t->start_wall);
		}
		sample_list_json(&ls, &l, e->sym, rep);
		agg_list_free(&l);
		if (e->dbg) { /* names that may still come */
			struct dbginfo_stats ds;

			dbginfo_stats(e->dbg, &ds);
			cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(rep, "summary"),
						"debuginfod_pending", ds.pending);
		}
	}
	stacks_free(x);
	pcs_free(pcs);
	sample_listing_end(&ls);
	return rep;
}

/*
 * list: every instrument's section (sampling's summary and procedures, the call table...);
 * "calls" asks for the call table alone.
 */
static cJSON *cmd_list(struct engine *e, const struct client *c, const cJSON *req)
{
	bool calls_only = proto_bool(req, "calls", 0), tables_only = proto_bool(req, "tables", 0);
	struct target *t;
	cJSON *rep = NULL;

	if (sample_check_listing(req, &rep))
		return rep;
	t = find_target(e, c, req, &rep);
	if (!t)
		return rep;
	if (calls_only && !t->inst[INST_COUNT])
		return proto_error(1, "target %u \"%s\" counts no calls (start it with --count PATTERN)",
				   t->id, t->name);
	if (tables_only && !t->inst[INST_LEGS])
		return proto_error(1, "target %u \"%s\" has no nodes (start it with --node NODE)",
				   t->id, t->name);
	target_sync(e, t);
	rep = proto_ok();
	if (sample_of(t) && !calls_only && !tables_only) {
		rep = list_samples(e, t, req, rep);
		if (!proto_bool(rep, "ok", 0))
			return rep;
	} else {
		cJSON *tj = cJSON_AddObjectToObject(rep, "target");

		target_facts_json(t, tj);
		for_each_inst(i)
			if (t->inst[i])
				inst_table[i]->facts_json(e->g[i], t, t->inst[i], tj);
	}
	for_each_inst(i) {
		if (!t->inst[i] || !inst_table[i]->list_json ||
		    (calls_only && i != INST_COUNT) || (tables_only && i != INST_LEGS))
			continue;
		if (inst_table[i]->list_json(e->g[i], t, t->inst[i], req, rep)) {
			cJSON_Delete(rep);
			return proto_error(1, "out of memory while listing");
		}
	}
	return rep;
}

static cJSON *cmd_simple(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *cmd = proto_str(req, "cmd", "");
	struct target *t;
	cJSON *rep = NULL;

	t = find_target(e, c, req, &rep);
	if (!t)
		return rep;
	if (!strcmp(cmd, "stop")) {
		target_stop(e, t);
	} else if (!strcmp(cmd, "drop")) {
		target_stop(e, t);
		e->targets[t->id] = NULL;
		store_remove(e->store, t->id);
		target_free(t);
		return proto_ok();
	} else if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume")) {
		bool pause = !strcmp(cmd, "pause");

		if (t->state != (pause ? TARGET_RUNNING : TARGET_PAUSED))
			return proto_error(1, "target %u is %s: only a %s target can be %sd", t->id,
					   target_state_name(t->state), pause ? "running" : "paused",
					   cmd);
		t->flags = pause ? t->flags & ~PCMON_TF_ACTIVE : t->flags | PCMON_TF_ACTIVE;
		target_activate(e, t);
		if (pause)
			t->pause_start = now_ns();
		else
			t->paused_ns += now_ns() - t->pause_start;
		t->state = pause ? TARGET_PAUSED : TARGET_RUNNING;
	} else if (!strcmp(cmd, "zero")) {
		if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)
			sync_all(e);
		for_each_inst(i)
			if (t->inst[i])
				inst_table[i]->zero(e->g[i], t, t->inst[i]);
		target_restart_clock(t);
	}
	t->dirty = true;
	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", t->id);
	cJSON_AddStringToObject(rep, "state", target_state_name(t->state));
	return rep;
}

/* pcmon node|leg|hist add|del TARGET ...: the probe-node instrument's tables, while it runs */
static cJSON *cmd_tables_edit(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = NULL;
	struct target *t = find_target(e, c, req, &rep);

	return t ? legs_edit(e->g[INST_LEGS], t, req) : rep;
}

static cJSON *cmd_targets(struct engine *e, const struct client *c)
{
	cJSON *rep = proto_ok(), *arr = cJSON_AddArrayToObject(rep, "targets"), *o;

	sync_all(e); /* counts wait in BPF until asked for: nothing to drain costs nothing */
	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (!t || !may_access(c, t))
			continue;
		o = cJSON_CreateObject();
		target_facts_json(t, o);
		for_each_inst(k) {
			if (!t->inst[k])
				continue;
			inst_table[k]->facts_json(e->g[k], t, t->inst[k], o);
			inst_table[k]->summary_json(e->g[k], t, t->inst[k], o);
		}
		store_target_json(e->store, t->id, o); /* "saved", "save_error" */
		cJSON_AddItemToArray(arr, o);
	}
	return rep;
}

/* What one user may hold, and what @c holds now. */
static void add_limits(struct engine *e, const struct client *c, cJSON *rep)
{
	cJSON *o = cJSON_AddObjectToObject(rep, "limits");
	uint32_t mine = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		mine += e->targets[i] && e->targets[i]->owner == c->uid;
	cJSON_AddNumberToObject(o, "targets_per_user", e->o.user_targets);
	cJSON_AddNumberToObject(o, "memory_per_user_bytes", (double)e->o.user_memory);
	cJSON_AddNumberToObject(o, "targets_reserved_for_root", ENGINE_ROOT_RESERVE);
	cJSON_AddNumberToObject(o, "your_targets", mine);
	cJSON_AddNumberToObject(o, "your_memory_bytes", (double)user_bytes(e, c->uid));
}

static cJSON *cmd_status(struct engine *e)
{
	struct sampler_prog_stats ps[16];
	struct pcmon_gstat gs;
	struct sym_stats ss;
	cJSON *rep = proto_ok(), *progs, *o;
	const char *how;
	int n = sampler_prog_stats(e->smp, ps, 16);
	int ntargets = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		ntargets += e->targets[i] != NULL;
	sampler_gstat(e->smp, &gs);
	sym_stats(e->sym, &ss);
	cJSON_AddStringToObject(rep, "version", PCMON_VERSION);
	cJSON_AddNumberToObject(rep, "pid", getpid());
	cJSON_AddNumberToObject(rep, "uptime_s", (now_ns() - e->started_ns) / 1e9);
	cJSON_AddNumberToObject(rep, "targets", ntargets);
	cJSON_AddNumberToObject(rep, "max_stack_depth", sampler_max_depth(e->smp));
	cJSON_AddNumberToObject(rep, "dwarf_stack_bytes", sampler_dwarf_stack(e->smp));
	cJSON_AddNumberToObject(rep, "min_interval_us", (sampler_min_period_ns() + 999) / 1000);
	sample_status_json(e->g[INST_SAMPLE], rep);
#define ADD_GSTAT(f, status) if (status) cJSON_AddNumberToObject(rep, #f, gs.f);
	PCMON_GSTAT_FIELDS(ADD_GSTAT)
#undef ADD_GSTAT
	o = cJSON_AddObjectToObject(rep, "symbols");
#define ADD_SYM(f, status, key) if (status) cJSON_AddNumberToObject(o, #key, ss.f);
	SYM_STATS_FIELDS(ADD_SYM)
#undef ADD_SYM
	/* how long processes went with critical-section probes pending (README) */
	{
		struct probes_stats ps;

		probes_stats(e->probes, &ps);
		o = cJSON_AddObjectToObject(rep, "critical_probes");
#define ADD_PROBES(f, key, unit) cJSON_AddNumberToObject(o, #key, ps.f / (unit));
		PROBES_STATS_FIELDS(ADD_PROBES)
#undef ADD_PROBES
	}
	dbginfo_status_json(e->dbg, rep);
	/* how each object's frames are unwound: with its CFI (dwarf), or by frame pointer */
	o = cJSON_AddArrayToObject(rep, "objects");
	for (uint32_t m = 0; m < sym_nmodules(e->sym); m++) {
		struct sym_module_info mi;
		cJSON *x;

		if (sym_module_info(e->sym, m, &mi) || !mi.path[0] || (!mi.cfi_known && !mi.usdt))
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "path", mi.path);
		cJSON_AddStringToObject(x, "unwind", mi.eh_frame || mi.debug_frame ? "dwarf" : "fp");
		cJSON_AddStringToObject(x, "cfi", mi.eh_frame ? ".eh_frame" : mi.debug_frame ? ".debug_frame" : "none");
		cJSON_AddNumberToObject(x, "frames_unwound", mi.unwinds);
		cJSON_AddNumberToObject(x, "frames_without_cfi", mi.unwind_misses);
		cJSON_AddBoolToObject(x, "critical_probes", mi.usdt);
		cJSON_AddItemToArray(o, x);
	}
	how = sampler_blocked_stacks(e->smp);
	if (how)
		cJSON_AddStringToObject(rep, "blocked_stacks", how);
	/* without statistics the kernel counts no runs: say so rather than show zeros */
	cJSON_AddBoolToObject(rep, "bpf_stats", sampler_bpf_stats(e->smp));
	progs = cJSON_AddArrayToObject(rep, "programs");
	for (int i = 0; i < n; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", ps[i].name);
		cJSON_AddBoolToObject(o, "attached", ps[i].attached);
		cJSON_AddNumberToObject(o, "runs", ps[i].run_cnt);
		cJSON_AddNumberToObject(o, "run_time_ns", ps[i].run_time_ns);
		cJSON_AddNumberToObject(o, "avg_ns", ps[i].run_cnt ? (double)ps[i].run_time_ns / ps[i].run_cnt : 0);
		cJSON_AddItemToArray(progs, o);
	}
	store_status_json(e->store, rep); /* saves and the last save error */
	return rep;
}

#define F_BOOL(n) { .name = (n), .type = PT_BOOL }
#define F_UINT(n, lo, hi) { .name = (n), .type = PT_UINT, .min = (lo), .max = (hi) }
#define F_STR(n, len) { .name = (n), .type = PT_STR, .max = (len) }
#define F_ENUM(n, v) { .name = (n), .type = PT_ENUM, .values = (v) }
#define F_TARGET(req) { .name = "target", .type = PT_TARGET, .required = (req) }
#define F_WHEN F_STR("when", PROTO_MAX_LINE), F_BOOL("when_from_file"), F_BOOL("icase"), \
	{ .name = "critical", .type = PT_STRS, .max = PROTO_MAX_LINE }

/* What a start request says about the target itself; instruments add theirs (inst_ops). */
static const struct proto_field target_start_fields[] = {
	{ .name = "pid", .type = PT_UINT, .min = 1, .max = 4194304, .opt = "--pid" },
	F_STR("cgroup", 4096),
	F_UINT("cgroup_fd", 0, PROTO_MAX_FDS - 1),
	F_BOOL("all"),
	F_BOOL("children"),
	F_BOOL("exec_wait"),
	{ .name = "name", .type = PT_STR, .max = 4096, .opt = "--name" },
	F_STR("exe", 4096),
	F_UINT("exe_fd", 0, PROTO_MAX_FDS - 1),
};

const struct proto_field *engine_start_field(const char *name)
{
	for (size_t k = 0; k < ARRAY_SIZE(target_start_fields); k++)
		if (!strcmp(target_start_fields[k].name, name))
			return &target_start_fields[k];
	for_each_inst(i)
		for (size_t k = 0; k < inst_table[i]->nfields; k++)
			if (!strcmp(inst_table[i]->fields[k].name, name))
				return &inst_table[i]->fields[k];
	return NULL;
}

static int start_fields_init(struct engine *e)
{
	size_t n = ARRAY_SIZE(target_start_fields);

	for_each_inst(i)
		n += inst_table[i]->nfields;
	e->start_fields = calloc(n, sizeof(*e->start_fields));
	if (!e->start_fields)
		return -ENOMEM;
	memcpy(e->start_fields, target_start_fields, sizeof(target_start_fields));
	n = ARRAY_SIZE(target_start_fields);
	for_each_inst(i) {
		memcpy(e->start_fields + n, inst_table[i]->fields,
		       inst_table[i]->nfields * sizeof(*e->start_fields));
		n += inst_table[i]->nfields;
	}
	e->nstart_fields = n;
	return 0;
}

static const struct proto_field list_fields[] = {
	F_TARGET(false), F_WHEN, F_BOOL("calls"), F_BOOL("tables"), F_BOOL("no_inline"),
	F_BOOL("stacks"), F_BOOL("no_kernel"), F_STR("lines", 512), F_STR("offset", 512),
	{ .name = "scale", .type = PT_UINT, .min = 0, .max = PROFIL_SCALE_MAX, .opt = "--scale" },
	{ .name = "bufsiz", .type = PT_UINT, .min = 2, .max = PCS_MAX_BUFSIZ, .opt = "--bufsiz" },
	{ .name = "sort", .type = PT_ENUM, .values = "self|calls|total|avg", .opt = "--sort" },
};
static const struct proto_field target_fields[] = { F_TARGET(true) };
static const struct proto_field edit_fields[] = {
	F_TARGET(true),
	{ .name = "op", .type = PT_ENUM, .values = "add|del", .required = true },
	F_STR("spec", 4096), F_UINT("arg", 0, 5), F_UINT("id", 1, 1000000),
	F_STR("from", 16), F_STR("to", 16), F_STR("hist", 128), F_ENUM("on", "node|leg"),
};

typedef cJSON *cmd_fn(struct engine *e, const struct client *c, const cJSON *req);

static cJSON *cmd_targets_req(struct engine *e, const struct client *c, const cJSON *req)
{
	(void)req;
	return cmd_targets(e, c);
}

/*
 * status. A user other than root sees the daemon's own figures and her targets, but not the
 * paths of the objects other users' processes map, nor their targets.
 */
static cJSON *cmd_status_req(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = cmd_status(e);

	(void)req;
	if (!rep)
		return NULL;
	if (c->uid != 0) {
		int mine = 0;

		for (int i = 1; i < PCMON_MAX_TARGETS; i++)
			mine += e->targets[i] && e->targets[i]->owner == c->uid;
		cJSON_DeleteItemFromObjectCaseSensitive(rep, "objects");
		/* the last save error names another user's target and path; hers are in
		 * `pcmon targets` (saved, save_error) */
		{
			cJSON *st = cJSON_GetObjectItemCaseSensitive(rep, "store");

			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error");
			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error_age_s");
			cJSON_DeleteItemFromObjectCaseSensitive(st, "last_error_wall");
		}
		cJSON_ReplaceItemInObjectCaseSensitive(rep, "targets", cJSON_CreateNumber(mine));
	}
	add_limits(e, c, rep);
	return rep;
}

#define CMD(name, fn, fields) { name, fn, fields, ARRAY_SIZE(fields) }
#define CMD0(name, fn) { name, fn, NULL, 0 }
static const struct command {
	const char *name;
	cmd_fn *fn;
	const struct proto_field *fields;
	size_t nfields;
} commands[] = {
	CMD0("start", cmd_start),	/* e->start_fields */
	CMD("list", cmd_list, list_fields),
	CMD("stop", cmd_simple, target_fields),
	CMD("pause", cmd_simple, target_fields),
	CMD("resume", cmd_simple, target_fields),
	CMD("zero", cmd_simple, target_fields),
	CMD("drop", cmd_simple, target_fields),
	CMD("node", cmd_tables_edit, edit_fields),
	CMD("leg", cmd_tables_edit, edit_fields),
	CMD("hist", cmd_tables_edit, edit_fields),
	CMD0("targets", cmd_targets_req),
	CMD0("status", cmd_status_req),
};

/*
 * One request: the command is looked up and every field checked against its table before
 * anything is done, so a wrong type or an unknown field is an error naming it, never a
 * default quietly put in its place.
 */
cJSON *engine_handle(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *cmd = proto_str(req, "cmd", "");
	const struct command *k = NULL;
	char err[160];
	cJSON *rep;

	for (size_t i = 0; i < ARRAY_SIZE(commands) && !k; i++)
		if (!strcmp(cmd, commands[i].name))
			k = &commands[i];
	if (!k)
		return proto_error(2, "unknown command '%.64s'", cmd);
	if (k->fn == cmd_start ? proto_check(req, e->start_fields, e->nstart_fields, err, sizeof(err))
			       : proto_check(req, k->fields, k->nfields, err, sizeof(err)))
		return proto_error(2, "%s: %s", cmd, err);
	rep = k->fn(e, c, req);
	return rep ? rep : proto_error(1, "out of memory");
}
