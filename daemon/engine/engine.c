// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine: targets (what is watched, and who owns it) and the instruments each carries,
 * and one event loop that drains what BPF collected into them. The commands on targets are
 * engine_cmd.c's, above this.
 * It knows instruments only through their ops (inst.h); the process map (procs.h), the
 * symbols (sym.h) and debug-info fetches (dbginfo.h) are its own, lent to them.
 */
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dbginfo.h"
#include "engine_int.h"
#include "procs.h"
#include "proto.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

const char engine_version[] = PCMON_VERSION;

static int fields_init(struct engine *e);
static void epoll_add(struct engine *e, int fd);

/* ---- lifecycle */

/* What the symbolizer asks about processes (sym_proc_source): BPF's process map. */
static int live_epoch(void *ctx, uint32_t tgid, uint32_t *epoch)
{
	return procs_proc_epoch(ctx, tgid, epoch);
}

static int exit_maps(void *ctx, uint32_t tgid, uint32_t epoch, struct procmaps_vma *v, int max)
{
	return procs_exit_maps(ctx, tgid, epoch, v, max);
}

int engine_new(const struct engine_opts *o, struct engine **out, char *err, size_t errlen)
{
	struct itimerspec its = { 0 };
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
	if (e->sym) /* (0: the defaults) */
		sym_set_limits(e->sym, o->object_idle_s * 1000000000ULL, o->object_memory);
	if (!e->sym || fields_init(e)) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r = procs_open(o->bpf_stats, &e->procs, err, errlen);
	if (r)
		goto fail;
	sym_set_proc_source(e->sym, &(struct sym_proc_source){ .epoch = live_epoch,
								.exit_maps = exit_maps,
								.ctx = e->procs });
	e->env = (struct inst_env){ .opts = &e->o, .procs = e->procs, .sym = e->sym,
				    .targets = e->targets };
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->env.epfd = e->epfd;
	e->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->timerfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create the event loop: %s", strerror(-r));
		goto fail;
	}
	its.it_interval.tv_sec = e->o.drain_ms / 1000;
	its.it_interval.tv_nsec = (long)(e->o.drain_ms % 1000) * 1000000L;
	engine_first_tick(e->o.drain_ms, &its.it_value); /* on whole seconds: time slices */
	if (timerfd_settime(e->timerfd, 0, &its, NULL)) {
		r = -errno;
		snprintf(err, errlen, "cannot set the engine's timer: %s", strerror(-r));
		goto fail;
	}
	epoll_add(e, e->timerfd);
	epoll_add(e, procs_events_fd(e->procs));
	{
		struct dbginfo_opts dio = { .urls = o->debuginfod, .cache_dir = o->cache_dir };

		/* off unless servers are configured; trouble starting it is only a warning */
		if (!dbginfo_new(&dio, &e->dbg) && e->dbg) {
			sym_set_dbginfo(e->sym, e->dbg);
			epoll_add(e, dbginfo_fd(e->dbg));
		}
	}
	e->env.dbg = e->dbg;
	for_each_inst(i) {
		int fds[4], n;

		r = inst_table[i]->open(&e->env, &e->g[i], err, errlen);
		if (r)
			goto fail;
		n = inst_table[i]->fds ? inst_table[i]->fds(e->g[i], fds, 4) : 0;
		for (int k = 0; k < n; k++)
			epoll_add(e, fds[k]);
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

void engine_free(struct engine *e)
{
	if (!e)
		return;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		if (!e->targets[i])
			continue;
		if (e->procs)
			engine_target_release(e, e->targets[i]);
		target_free(e->targets[i]);
	}
	for_each_inst(i)
		if (e->g[i])
			inst_table[i]->close(e->g[i]);
	procs_close(e->procs);
	sym_free(e->sym);
	dbginfo_free(e->dbg);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->timerfd >= 0)
		close(e->timerfd);
	free(e->start_fields);
	free(e->list_fields);
	store_close(e->store);
	free(e);
}

int engine_fd(struct engine *e)
{
	return e->epfd;
}

static void epoll_add(struct engine *e, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* ---- draining: each instrument collects what BPF holds */

/* Memory the targets of @uid hold. */
/* Bytes of results target @t holds. */
static size_t target_bytes(const struct target *t)
{
	size_t sum = 0;

	for_each_inst(k)
		if (t->inst[k])
			sum += inst_table[k]->bytes(t->inst[k]);
	return sum;
}

size_t engine_user_bytes(const struct engine *e, uid_t uid)
{
	size_t sum = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		if (e->targets[i] && e->targets[i]->owner == uid)
			sum += target_bytes(e->targets[i]);
	return sum;
}

/* Who is over the memory allowance of a user, as of now (root has none). */
static void check_user_memory(struct engine *e)
{
	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (t)
			t->over_memory = t->owner && engine_user_bytes(e, t->owner) > e->o.user_memory;
	}
}

/* Bytes of results all targets hold. */
static uint64_t results_bytes(const struct engine *e)
{
	uint64_t sum = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		if (e->targets[i])
			sum += target_bytes(e->targets[i]);
	return sum;
}

static void drain(struct engine *e)
{
	check_user_memory(e);
	sym_close_idle(e->sym, results_bytes(e));
	for_each_inst(i)
		inst_table[i]->tick(e->g[i]);
}

/* ---- process lifecycle */

/* A process forked, exec'ed, loaded objects or exited: its symbols, its target's life,
 * and each instrument the target carries is told. */
static void on_event(void *ctx, const struct pcmon_event *ev)
{
	struct engine *e = ctx;
	struct target *t = ev->target < PCMON_MAX_TARGETS ? e->targets[ev->target] : NULL;

	if (t && ev->type == PCMON_EV_EXEC && ev->pid == t->pid)
		t->exec_wait = false;

	/*
	 * A process's address map is read when it is first sampled (SAMPLED), and again when it
	 * loads objects after that: a process never sampled costs only its events.
	 */
	switch (ev->type) {
	case PCMON_EV_FORK:
		sym_proc_forked(e->sym, ev->pid, ev->ppid, ev->pepoch);
		if (t)
			t->live++;
		break;
	case PCMON_EV_EXEC:
		if (ev->epoch)
			sym_proc_final(e->sym, ev->pid, ev->epoch - 1);
		if (t && ev->pid == t->pid) {
			snprintf(t->comm, sizeof(t->comm), "%.*s", PCMON_COMM_LEN, ev->comm);
			str_sanitize(t->comm, sizeof(t->comm) - 1);
			/* named after its program: after what it runs now (a shell that exec'd) */
			if (t->name_is_comm) {
				snprintf(t->name, sizeof(t->name), "%s", t->comm);
				t->dirty = true;
			}
		}
		break;
	case PCMON_EV_SAMPLED:
		sym_proc_sampled(e->sym, ev->pid, ev->epoch, ev->ts);
		break;
	case PCMON_EV_DLOPEN:
		sym_proc_reload(e->sym, ev->pid, ev->epoch, ev->ts);
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
			t->end_ns = ev->ts ? ev->ts : now_ns(); /* (read later than it happened) */
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

/*
 * What BPF streamed: the instruments' records first (made sense of while their process's
 * address map may still be read again), then the lifecycle events, so that an exec has
 * finished the old image's map before its samples drain. True: an instrument asks for a
 * drain now (a map filling up).
 */
static bool poll_all(struct engine *e)
{
	bool want = false;

	for_each_inst(i)
		if (inst_table[i]->stream)
			want |= inst_table[i]->stream(e->g[i]);
	procs_poll(e->procs, on_event, e);
	return want;
}

/* Bring every target up to date: events, then everything BPF holds (both buffers). */
void engine_sync_all(struct engine *e)
{
	poll_all(e);
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
			uint64_t ticks, cpu;

			if (read(e->timerfd, &ticks, sizeof(ticks)) < 0)
				continue;
			/* a save drains all BPF holds first; between saves, only a filling map */
			if (e->o.state_dir &&
			    now_ns() - e->last_flush_ns > engine_save_interval_ns(e)) {
				engine_sync_all(e);
				cpu = thread_cpu_ns();
				engine_flush(e, false);
				/* (a save builds the target's whole text, tens of MB for a system-wide
				 * one after minutes: freed, it stays pcmond's unless given back) */
				malloc_trim(0);
				e->flush_cost_ns = thread_cpu_ns() - cpu;
			} else {
				poll_all(e);
				drain(e);
			}
			dbginfo_tick(e->dbg);
		} else if (poll_all(e)) {
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

bool engine_may_access(const struct client *c, const struct target *t)
{
	return c->uid == 0 || c->uid == t->owner;
}

/* BPF's view of the target as a watched set (instruments add their own settings). */
int engine_target_configure(struct engine *e, struct target *t)
{
	struct pcmon_tcfg cfg = { .flags = t->flags, .owner = t->owner };

	return procs_target_set(e->procs, t->id, &cfg);
}

/* Every instrument detached and BPF told to forget the target's processes. */
void engine_target_release(struct engine *e, struct target *t)
{
	t->flags &= ~PCMON_TF_ACTIVE;
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->stop(e->g[i], t, t->inst[i]);
	procs_target_clear(e->procs, t->id);
}

/* Pause, resume or stop: t->flags says which, BPF and every instrument are told. */
void engine_target_activate(struct engine *e, struct target *t)
{
	engine_target_configure(e, t);
	for_each_inst(i)
		if (t->inst[i])
			inst_table[i]->set_active(e->g[i], t, t->inst[i],
						  t->flags & PCMON_TF_ACTIVE);
}

/* Stop watching for good, collecting everything already collected. */
void engine_target_stop(struct engine *e, struct target *t)
{
	/* events waiting in the ring first: a target whose process has exited ended so */
	poll_all(e);
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED) {
		t->flags &= ~PCMON_TF_ACTIVE;
		engine_target_activate(e, t);
		t->state = TARGET_STOPPED;
		t->end_ns = now_ns();
	}
	engine_sync_all(e);
	engine_target_release(e, t);
	t->dirty = true;
}

void engine_quiesce(struct engine *e)
{
	poll_all(e);
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (t && (t->flags & PCMON_TF_ACTIVE)) {
			t->flags &= ~PCMON_TF_ACTIVE; /* (its state stays what it was) */
			engine_target_activate(e, t);
		}
	}
	engine_sync_all(e);
}

/*
 * Bring a target up to date for a report: what BPF holds, names that arrived. A target whose
 * process exited is read too: what it took since the last drain waits in BPF until the next
 * save, whenever the engine learnt of the exit (a stopped one was read as it stopped).
 */
void engine_target_sync(struct engine *e, struct target *t)
{
	if (t->state != TARGET_STOPPED)
		engine_sync_all(e);
	dbginfo_collect(e->dbg, on_debuginfo, e);
}

/* list's own field: which target (absent: the caller's newest) */
static const struct proto_field list_target_fields[] = {
	{ .name = "target", .type = PT_TARGET, .required = false },
};

/* A request's fields: @base's, then each instrument's (@list: its list fields, else its
 * start fields); a field two instruments take is checked once. */
static int fields_join(const struct proto_field *base, size_t nbase, bool list,
		       struct proto_field **out, size_t *nout)
{
	size_t n = nbase;

	for_each_inst(i)
		n += list ? inst_table[i]->nlist_fields : inst_table[i]->nfields;
	*out = calloc(n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, base, nbase * sizeof(*base));
	n = nbase;
	for_each_inst(i) {
		const struct proto_field *f = list ? inst_table[i]->list_fields : inst_table[i]->fields;
		size_t nf = list ? inst_table[i]->nlist_fields : inst_table[i]->nfields;

		for (size_t k = 0; k < nf; k++) {
			bool dup = false;

			for (size_t j = 0; j < n && !dup; j++)
				dup = !strcmp((*out)[j].name, f[k].name);
			if (!dup)
				(*out)[n++] = f[k];
		}
	}
	*nout = n;
	return 0;
}

static int fields_init(struct engine *e)
{
	return fields_join(engine_target_start_fields, engine_ntarget_start_fields, false,
			   &e->start_fields, &e->nstart_fields) ||
	       fields_join(list_target_fields, ARRAY_SIZE(list_target_fields), true,
			   &e->list_fields, &e->nlist_fields);
}
