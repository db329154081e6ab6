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
#include "dbginfo.h"
#include "engine.h"
#include "pat.h"
#include "probes.h"
#include "proto.h"
#include "sampler.h"
#include "store.h"
#include "sym.h"
#include "target.h"
#include "unwind.h"
#include "util.h"

/* An off-CPU interval of a --unwind dwarf target: its stack arrived, its length has not. */
struct pending {
	uint32_t tid, target;
	uint64_t ts;
	struct agg_stack *st;
};

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
	uint64_t drains, drained_entries, drain_ns;
	uint64_t last_flush_ns;
	struct agg_stack *scratch; /* conversion buffer for one stack */
	size_t scratch_cap;
	__u64 *upcs;			/* unwinder output */
	size_t cap_upcs;
	uint64_t unwound, unwind_ns;	/* --unwind dwarf samples unwound, and the time it took */
	struct pending *pending;	/* dwarf off-CPU intervals still open, by thread */
	size_t npending, cap_pending;
	struct itab *section_keys;	/* (name address, pid, epoch) of marked sections seen */
	uint32_t *section_names;	/* ... and the string id of each name */
	size_t cap_sections;
	struct store *store;		/* the state directory; NULL: none */
};

/* The string id of a marked section's name, from its address in process (pid, epoch). */
static uint32_t section_name(struct engine *e, const struct pcmon_key *k)
{
	struct { uint64_t addr; uint32_t pid, epoch; } key = { k->section, k->pid, k->epoch };
	char name[PCMON_SECTION_LEN];
	uint32_t slot, id = 0;
	int r;

	if (!k->section)
		return 0;
	r = itab_intern(e->section_keys, &key, sizeof(key), &slot);
	if (r == 0)
		return e->section_names[slot];
	if (r < 0 || GROW(e->section_names, e->cap_sections, slot + 1))
		return 0;
	if (sym_user_string(e->sym, k->pid, k->epoch, k->section, name, sizeof(name)) || !name[0])
		snprintf(name, sizeof(name), "section@%llx", (unsigned long long)k->section);
	sym_intern_str(e->sym, name, &id);
	return e->section_names[slot] = id;
}

static void attach_usdt(void *ctx, const char *path)
{
	struct engine *e = ctx;

	sampler_usdt_attach(e->smp, path);
}

/* ---- lifecycle */

int engine_new(const struct engine_opts *o, struct engine **out, char *err, size_t errlen)
{
	struct sampler_opts so = { .max_depth = o->max_depth, .dwarf_stack = o->dwarf_stack };
	struct itimerspec its = { 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct engine *e;
	int r;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->o = *o;
	if (!e->o.drain_ms)
		e->o.drain_ms = 100;
	if (!e->o.user_targets)
		e->o.user_targets = 16;
	if (!e->o.user_memory)
		e->o.user_memory = 256ull << 20;
	e->epfd = e->timerfd = -1;
	e->next_id = 1;
	e->started_ns = now_ns();
	e->started_wall = wall_time();
	e->sym = sym_new(0);
	e->section_keys = itab_new();
	if (!e->sym || !e->section_keys) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r = sampler_open(&so, &e->smp, err, errlen);
	if (r)
		goto fail;
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->timerfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create the event loop: %s", strerror(-r));
		goto fail;
	}
	its.it_interval.tv_nsec = (long)e->o.drain_ms * 1000000L;
	its.it_value = its.it_interval;
	timerfd_settime(e->timerfd, 0, &its, NULL);
	ev.data.fd = e->timerfd;
	epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->timerfd, &ev);
	ev.data.fd = sampler_events_fd(e->smp);
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
static void pending_drop(struct engine *e, struct pending *p);

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
	probes_stop(e->probes);
	sampler_close(e->smp);
	sym_free(e->sym);
	dbginfo_free(e->dbg);
	if (e->epfd >= 0)
		close(e->epfd);
	if (e->timerfd >= 0)
		close(e->timerfd);
	free(e->scratch);
	free(e->upcs);
	while (e->npending)
		pending_drop(e, &e->pending[0]);
	free(e->pending);
	itab_free(e->section_keys);
	free(e->section_names);
	store_close(e->store);
	free(e);
}

int engine_fd(struct engine *e)
{
	return e->epfd;
}

/* ---- draining: BPF entries into per-target aggregates */

static enum agg_unwalk unwalk_of(uint8_t serr)
{
	switch (serr) {
	case PCMON_SERR_NONE:
		return AGG_WALK_OK;
	case PCMON_SERR_FULL:
		return AGG_UNWALK_LOST;
	default:
		return AGG_UNWALK_FAULT;
	}
}

/*
 * Symbolize a stack into e->scratch: @upc/@kpc innermost first, as the kernel and the
 * unwinder give them; stored stacks run outermost first. Every frame but the innermost is a
 * return address, looked up at pc - 1 (the call). The innermost user pc is the one saved at
 * the last entry into the kernel, which is exact: the interrupted or faulting instruction,
 * the entry point right after exec, or the instruction after a `syscall` (in the same
 * function). Looking it up at pc - 1 would put a process's first instruction in the padding
 * before _start. The innermost kernel pc is exact only for a timer sample.
 */
static struct agg_stack *convert_pcs(struct engine *e, const struct pcmon_key *k,
				     const __u64 *upc, uint32_t nu, const __u64 *kpc, uint32_t nk,
				     enum agg_unwalk unwalk)
{
	bool oncpu = k->kind == PCMON_KIND_ONCPU || k->kind == PCMON_KIND_ONCPU_KMODE;
	struct agg_stack *st;
	size_t need = agg_stack_size(nu + nk);

	if (need > e->scratch_cap) {
		free(e->scratch);
		e->scratch = malloc(need);
		e->scratch_cap = e->scratch ? need : 0;
		if (!e->scratch)
			return NULL;
	}
	st = e->scratch;
	st->kind = k->kind;
	st->pid = k->pid;
	st->unwalk = unwalk;
	st->section = section_name(e, k);
	st->flags = k->flags & PCMON_KF_MARKS_PENDING ? AGG_SF_MARKS_PENDING : 0;
	if (st->unwalk == AGG_WALK_OK && !nu)
		st->unwalk = AGG_UNWALK_FAULT; /* an empty user stack: nothing to charge */
	if (st->unwalk != AGG_WALK_OK) {
		/* the frames of an unwalkable stack are not kept: it is charged to a section */
		st->nuser = st->nkern = 0;
		return st;
	}
	/* a stack taken at sched_switch starts inside pcmon's own program: leave that out */
	while (!oncpu && nk && sym_kernel_is_tracer(e->sym, kpc[0])) {
		kpc++;
		nk--;
	}
	st->nuser = nu;
	st->nkern = nk;
	for (uint32_t i = 0; i < nu; i++)
		st->locs[nu - 1 - i] = sym_user(e->sym, k->pid, k->epoch, upc[i], i > 0);
	for (uint32_t i = 0; i < nk; i++) {
		bool leaf = i == 0 && oncpu;

		st->locs[nu + nk - 1 - i] = sym_kernel(e->sym, kpc[i], !leaf);
	}
	return st;
}

/*
 * A stack the kernel walked with frame pointers (in-kernel aggregates). The chain ends where
 * a frame pointer does (code built without them, as Debian's libc is): unless the outermost
 * frame's CFI says it has no caller, the stack is marked cut short, so the listing can say
 * that the deep counts of outer frames are lower bounds.
 */
static struct agg_stack *convert(struct engine *e, const struct pcmon_key *k,
				 const struct pcmon_stack *us, const struct pcmon_stack *ks)
{
	uint32_t nu = us ? us->len : 0, nk = ks ? ks->len : 0;
	enum agg_unwalk uw = unwalk_of(k->uerr);
	struct agg_stack *st;

	/* a stack that fills the maximum depth was cut off, not whole */
	if (uw == AGG_WALK_OK && nu >= sampler_max_depth(e->smp))
		uw = AGG_UNWALK_DEPTH;
	st = convert_pcs(e, k, us ? us->ip : NULL, nu, ks ? ks->ip : NULL, nk, uw);
	if (st && st->unwalk == AGG_WALK_OK && nu)
		st->flags |= unw_is_root(e->sym, k->pid, k->epoch, us->ip[nu - 1], nu > 1) ? 0 : AGG_SF_CUT_SHORT;
	return st;
}

/* A --unwind dwarf record: unwind its copied stack with the objects' CFI. */
static struct agg_stack *convert_dwarf(struct engine *e, const struct pcmon_dsample *d,
				       size_t len)
{
	uint32_t depth = sampler_max_depth(e->smp), nu = 0;
	enum agg_unwalk uw = unwalk_of(d->h.key.uerr);
	enum unw_end end = UNW_END_ROOT;
	uint64_t t0 = now_ns();

	if (len < sizeof(*d) || d->ulen > len - sizeof(*d))
		return NULL;
	if (GROW(e->upcs, e->cap_upcs, depth))
		return NULL;
	if (uw == AGG_WALK_OK) {
		nu = unw_walk(e->sym, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack, d->stack,
			      d->ulen, e->upcs, depth, &end);
	} else if (uw == AGG_UNWALK_FAULT) {
		/*
		 * Nothing could be copied. A thread the kernel has just created has no frame but
		 * its entry, and its stack page may not be there yet: that is a whole stack.
		 */
		nu = unw_walk(e->sym, d->h.key.pid, d->h.key.epoch, d->regs, d->start_stack, NULL, 0,
			      e->upcs, 1, &end);
		if (end == UNW_END_ROOT)
			uw = AGG_WALK_OK;
		else
			nu = 0;
		if (uw != AGG_WALK_OK && log_verbosity >= LOG_DEBUG)
			pr_debug("pid %u: no user stack copied (pc %#llx, sp %#llx)", d->h.key.pid,
				 (unsigned long long)d->regs[16], (unsigned long long)d->regs[7]);
	}
	if (uw == AGG_WALK_OK && end != UNW_END_ROOT) {
		static const enum agg_unwalk reason[] = {
			[UNW_END_TRUNCATED] = AGG_UNWALK_TRUNCATED,
			[UNW_END_DEPTH] = AGG_UNWALK_DEPTH,
			[UNW_END_NOCFI] = AGG_UNWALK_NOCFI,
			[UNW_END_FAULT] = AGG_UNWALK_FAULT,
		};

		uw = reason[end];
		if (log_verbosity >= LOG_DEBUG)
			pr_debug("pid %u: unwinding stopped (%s) after %u frames at pc %#llx, copy %u bytes",
				 d->h.key.pid, agg_unwalk_names[uw], nu,
				 nu ? (unsigned long long)e->upcs[nu - 1] : 0ULL, d->ulen);
	}
	e->unwound++;
	e->unwind_ns += now_ns() - t0;
	return convert_pcs(e, &d->h.key, e->upcs, nu, d->kstack, MIN(d->klen, PCMON_KSTACK_MAX), uw);
}

/*
 * Add @count samples of stack @st (NULL: it could not be built) to @t. A target whose owner
 * is over her memory allowance still counts the stacks it has, but keeps no new one: those
 * samples are lost, and counted as such.
 */
static void charge(struct target *t, const struct agg_stack *st, uint64_t count, uint64_t ns)
{
	int r = !st ? -ENOMEM
		: t->over_memory ? agg_bump(t->agg, st, count, ns)
				 : agg_add(t->agg, st, count, ns);

	if (r == -ENOENT)
		t->lost_memory += count;
	else if (r)
		t->lost_oom += count;
	else
		t->seen_samples += count;
	t->dirty = true;
}

static void on_entry(void *ctx, const struct pcmon_key *k, const struct pcmon_val *v,
		     const struct pcmon_stack *us, const struct pcmon_stack *ks)
{
	struct engine *e = ctx;
	struct target *t = k->target < PCMON_MAX_TARGETS ? e->targets[k->target] : NULL;

	e->drained_entries++;
	if (!t)
		return; /* dropped while its last samples were in flight */
	charge(t, convert(e, k, us, ks), v->count, v->ns);
}

/* Memory the targets of @uid hold. */
static size_t user_bytes(const struct engine *e, uid_t uid)
{
	size_t sum = 0;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++)
		if (e->targets[i] && e->targets[i]->owner == uid)
			sum += agg_bytes(e->targets[i]->agg);
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
	uint64_t t0 = now_ns();

	check_user_memory(e);
	sampler_drain(e->smp, on_entry, e);
	e->drains++;
	e->drain_ns += now_ns() - t0;
}

static struct pending *pending_find(struct engine *e, uint32_t tid)
{
	for (size_t i = 0; i < e->npending; i++)
		if (e->pending[i].tid == tid)
			return &e->pending[i];
	return NULL;
}

static void pending_drop(struct engine *e, struct pending *p)
{
	free(p->st);
	*p = e->pending[--e->npending];
}

static void on_dsample(void *ctx, const void *data, size_t len)
{
	struct engine *e = ctx;
	const struct pcmon_dhdr *h = data;
	struct target *t = h->key.target < PCMON_MAX_TARGETS ? e->targets[h->key.target] : NULL;
	struct agg_stack *st;
	struct pending *p;
	size_t sz;

	if (len < sizeof(*h) || !t)
		return;
	switch (h->type) {
	case PCMON_DS_SAMPLE:
		charge(t, convert_dwarf(e, data, len), 1, 0);
		break;
	case PCMON_DS_OFF_START:
		st = convert_dwarf(e, data, len);
		p = pending_find(e, h->tid);
		if (p)
			pending_drop(e, p); /* its end was lost with a full ring: counted there */
		sz = st ? agg_stack_size(st->nuser + st->nkern) : 0;
		if (!st || GROW(e->pending, e->cap_pending, e->npending + 1)) {
			t->lost_oom++;
			return;
		}
		p = &e->pending[e->npending];
		*p = (struct pending){ .tid = h->tid, .target = t->id, .ts = h->ts, .st = malloc(sz) };
		if (!p->st) {
			t->lost_oom++;
			return;
		}
		memcpy(p->st, st, sz);
		e->npending++;
		break;
	case PCMON_DS_OFF_END:
		p = pending_find(e, h->tid);
		if (!p)
			return; /* its start was lost with a full ring: counted there */
		charge(t, p->st, 1, h->ns);
		pending_drop(e, p);
		break;
	}
}

/* ---- process lifecycle */

/* Critical-section probes are the probe thread's (probes.h): here only symbols. */
static void on_event(void *ctx, const struct pcmon_event *ev)
{
	struct engine *e = ctx;
	struct target *t = ev->target < PCMON_MAX_TARGETS ? e->targets[ev->target] : NULL;

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
			/* events first: an exec must finalize the old map before its samples drain */
			sampler_poll(e->smp, on_event, on_dsample, e);
			drain(e);
			dbginfo_tick(e->dbg);
			if (e->o.state_dir && now_ns() - e->last_flush_ns > 5000000000ULL)
				engine_flush(e);
		} else {
			sampler_poll(e->smp, on_event, on_dsample, e);
		}
	}
}

/* Bring every target up to date: events, then everything BPF holds (both buffers). */
static void sync_all(struct engine *e)
{
	sampler_poll(e->smp, on_event, on_dsample, e);
	drain(e);
	drain(e);
}

void engine_flush(struct engine *e)
{
	e->last_flush_ns = now_ns();
	if (!e->o.state_dir)
		return;
	for (int i = 0; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		/* only what changed since the last save: a big idle target is not rewritten */
		if (t && t->dirty) {
			if (!store_save(e->store, e->sym, t))
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

/* The WHEN pattern of a request: "when" text, "icase", "when_from_file" (spans lines). */
static int compile_pattern(const char *opt, const cJSON *req, int icase, struct pat **out,
			   cJSON **err)
{
	const char *text = proto_str(req, "when", NULL);
	struct pat_error pe = { 0 };
	unsigned flags = (icase ? PAT_ICASE : 0) |
			 (proto_bool(req, "when_from_file", 0) ? PAT_FROM_FILE : 0);
	int r;

	*out = NULL;
	if (!text)
		return 0;
	r = pat_parse(text, flags, out, &pe);
	if (r == -EINVAL) {
		*err = proto_error(2, "%s: column %d: %s", opt, pe.column, pe.msg);
		return r;
	}
	if (r) {
		*err = proto_error(1, "%s: %s", opt, strerror(-r));
		return r;
	}
	return 0;
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

static void target_release(struct engine *e, struct target *t)
{
	t->flags &= ~PCMON_TF_ACTIVE;
	sampler_target_clear(e->smp, t->id);
	if (t->holds_period)
		sampler_period_put(e->smp, t->period_ns);
	if (t->holds_offcpu)
		sampler_offcpu_put(e->smp);
	t->holds_period = t->holds_offcpu = false;
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
static void attach_exe_probes(struct engine *e, const struct client *c, const cJSON *req)
{
	cJSON *rep = NULL;
	char path[64];
	struct stat st;
	int fd = request_fd(c, req, "exe_fd", proto_str(req, "exe", NULL), O_RDONLY, "exe", &rep);

	cJSON_Delete(rep); /* no probes is no reason to refuse the target */
	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && sym_fd_has_probes(fd))
		sampler_usdt_attach(e->smp, path);
	close(fd);
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

static cJSON *cmd_start(struct engine *e, const struct client *c, const cJSON *req)
{
	const char *mode = proto_str(req, "mode", NULL), *cg = proto_str(req, "cgroup", NULL);
	const char *unwind = proto_str(req, "unwind", "auto");
	double pidn = proto_num(req, "pid", 0), usec = proto_num(req, "interval_us", 10000);
	int all = proto_bool(req, "all", 0), fd;
	uint64_t floor_ns = sampler_min_period_ns();
	char err[256];
	cJSON *rep = NULL;
	struct target *t;
	uint32_t id = 0;
	int r;

	if (!cg && cJSON_GetObjectItemCaseSensitive(req, "cgroup_fd"))
		cg = "(descriptor)";
	if (!!pidn + !!cg + !!all != 1)
		return proto_error(2, "start: give exactly one of --pid PID, --cgroup DIR, --all");
	if (pidn && (pidn < 1 || pidn > 4194304 || pidn != (uint32_t)pidn))
		return proto_error(2, "start: --pid %g is not a process id", pidn);
	if (usec != (uint64_t)usec || usec * 1000 < floor_ns || usec > 60e6)
		return proto_error(2, "--interval %g: must be a whole number of microseconds from %llu (this kernel's floor) to 60000000",
				   usec, (unsigned long long)(floor_ns + 999) / 1000);
	if (mode && strcmp(mode, "real") && strcmp(mode, "virtual"))
		return proto_error(2, "start: unknown mode '%s' (use --real or --virtual)", mode);
	if (strcmp(unwind, "fp") && strcmp(unwind, "dwarf") && strcmp(unwind, "auto"))
		return proto_error(2, "--unwind %s: use fp, dwarf or auto", unwind);
	if (all && c->uid != 0)
		return proto_error(1, "start --all: only root may watch every task");
	if (pidn) {
		uid_t owner = proc_uid(pidn);

		if (owner == (uid_t)-1)
			return proto_error(1, "no process with pid %u (check it with 'ps -p %u')",
					   (uint32_t)pidn, (uint32_t)pidn);
		if (c->uid != 0 && owner != c->uid)
			return proto_error(1, "pid %u belongs to uid %u: you may only watch your own processes (or run as root)",
					   (uint32_t)pidn, owner);
	}
	if (c->uid != 0) {
		uint32_t mine = 0, users = 0;

		for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
			if (e->targets[i] && e->targets[i]->owner)
				users++;
			if (e->targets[i] && e->targets[i]->owner == c->uid)
				mine++;
		}
		if (mine >= e->o.user_targets)
			return proto_error(1, "you have %u targets, the most one user may have (pcmond --user-targets): drop some with 'pcmon drop TARGET'",
					   mine);
		if (users >= PCMON_MAX_TARGETS - 1 - ENGINE_ROOT_RESERVE)
			return proto_error(1, "users hold %u targets, all the daemon gives to users (%d more are root's): drop some with 'pcmon drop TARGET'",
					   users, ENGINE_ROOT_RESERVE);
		if (user_bytes(e, c->uid) > e->o.user_memory)
			return proto_error(1, "your targets hold %zu MiB of results, more than one user may (pcmond --user-memory): drop some with 'pcmon drop TARGET'",
					   user_bytes(e, c->uid) >> 20);
	}
	for (uint32_t i = 0; i < PCMON_MAX_TARGETS - 1 && !id; i++) {
		uint32_t cand = (e->next_id + i - 1) % (PCMON_MAX_TARGETS - 1) + 1;

		if (!e->targets[cand])
			id = cand;
	}
	if (!id)
		return proto_error(1, "too many targets (%d): drop some with 'pcmon drop TARGET'",
				   PCMON_MAX_TARGETS - 1);
	/* started here, not in engine_new(): pcmond forks into the background after that */
	if (!e->probes && probes_start(e->smp, &e->probes, err, sizeof(err)))
		return proto_error(1, "%s", err);

	t = target_new(id);
	if (!t)
		return proto_error(1, "out of memory");
	t->owner = c->uid;
	t->period_ns = (uint64_t)usec * 1000;
	t->real = mode && !strcmp(mode, "real");
	t->kernel = proto_bool(req, "kernel", 0);
	t->no_inline = proto_bool(req, "no_inline", 0);
	/* auto: frame pointers are not whole even where kept (leaf functions have no frame),
	 * so CFI unwinding is the cheapest method that gives whole stacks; see README */
	snprintf(t->unwind, sizeof(t->unwind), "%s", unwind);
	t->dwarf = strcmp(unwind, "fp") != 0;
	t->children = proto_bool(req, "children", 1);
	t->icase = proto_bool(req, "icase", 0);
	if (compile_pattern("--when", req, t->icase, &t->when, &rep))
		goto fail;
	if (t->when) {
		t->when_text = strdup(proto_str(req, "when", ""));
		t->when_from_file = proto_bool(req, "when_from_file", 0);
	}
	if (target_set_criticals(t, cJSON_GetObjectItemCaseSensitive(req, "critical"), &rep))
		goto fail;

	if (pidn) {
		t->kind = TARGET_PID;
		t->pid = pidn;
		proc_comm(t->pid, t->comm, sizeof(t->comm));
	} else if (cg) {
		t->kind = TARGET_CGROUP;
		fd = request_fd(c, req, "cgroup_fd", cg, O_RDONLY | O_DIRECTORY, "--cgroup", &rep);
		if (fd < 0)
			goto fail;
		t->cgroup_id = cgroup_of_fd(c, fd, cg, &rep);
		close(fd);
		if (!t->cgroup_id)
			goto fail;
		snprintf(t->comm, sizeof(t->comm), "%s", basename_of(cg));
	} else {
		t->kind = TARGET_ALL;
		snprintf(t->comm, sizeof(t->comm), "all");
	}
	/* a name is shown to root and in other users' replies: printable, bounded */
	str_sanitize(t->comm, sizeof(t->comm) - 1);
	if (proto_str(req, "name", NULL) && !str_printable(proto_str(req, "name", ""), sizeof(t->name) - 1)) {
		rep = proto_error(2, "--name: use printable characters, at most %zu bytes",
				  sizeof(t->name) - 1);
		goto fail;
	}
	snprintf(t->name, sizeof(t->name), "%s", proto_str(req, "name", t->comm));

	t->flags = PCMON_TF_ACTIVE | (t->kernel ? PCMON_TF_KERNEL : 0) |
		   (t->real ? PCMON_TF_REAL : 0) | (t->children ? PCMON_TF_CHILDREN : 0) |
		   (t->dwarf ? PCMON_TF_DWARF : 0);
	r = sampler_period_get(e->smp, t->period_ns, err, sizeof(err));
	if (r) {
		rep = proto_error(1, "%s", err);
		goto fail;
	}
	t->holds_period = true;
	if (t->real) {
		r = sampler_offcpu_get(e->smp, err, sizeof(err));
		if (r) {
			rep = proto_error(1, "%s", err);
			goto fail_release;
		}
		t->holds_offcpu = true;
	}
	sampler_tstat(e->smp, t->id, &t->lost_base);
	r = sampler_target_set(e->smp, t->id, t->flags, t->period_ns, t->owner);
	if (!r && t->kind == TARGET_PID) {
		uint32_t had;

		r = sampler_proc_add(e->smp, t->pid, t->id,
				     proto_bool(req, "exec_wait", 0) ? PCMON_PF_EXEC_WAIT : 0, &had);
		if (r == -EEXIST) {
			/* a process is in one target: refused, never moved away silently */
			if (e->targets[had] && may_access(c, e->targets[had]))
				rep = proto_error(1, "pid %u is already watched by target %u \"%s\": stop and drop it first",
						  t->pid, had, e->targets[had]->name);
			else
				rep = proto_error(1, "pid %u is already watched by another user's target",
						  t->pid);
			goto fail_release;
		}
		if (had && e->targets[had]) {
			e->targets[had]->handed_over++;
			e->targets[had]->dirty = true;
		}
		t->live = 1;
		sym_proc_load(e->sym, t->pid, 0);
		sym_proc_usdt(e->sym, t->pid, 0, attach_usdt, e);
		/* pcmon run: the command's own probes are attached before it is released */
		if (proto_str(req, "exe", NULL) || cJSON_GetObjectItemCaseSensitive(req, "exe_fd"))
			attach_exe_probes(e, c, req);
	} else if (!r && t->kind == TARGET_CGROUP) {
		r = sampler_cgroup_add(e->smp, t->cgroup_id, t->id);
	} else if (!r) {
		sampler_all_set(e->smp, t->id);
	}
	if (r) {
		rep = proto_error(1, "cannot register the target with BPF: %s", strerror(-r));
		goto fail_release;
	}
	t->state = TARGET_RUNNING;
	t->start_ns = now_ns();
	t->start_wall = wall_time();
	t->dirty = true;
	e->targets[id] = t;
	e->next_id = id % (PCMON_MAX_TARGETS - 1) + 1;

	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", id);
	cJSON_AddStringToObject(rep, "name", t->name);
	cJSON_AddNumberToObject(rep, "interval_us", t->period_ns / 1000);
	cJSON_AddStringToObject(rep, "mode", t->real ? "REAL" : "VIRTUAL");
	return rep;

fail_release:
	target_release(e, t);
fail:
	target_free(t);
	return rep ? rep : proto_error(1, "out of memory");
}

/* Stop sampling for good, collecting everything already sampled. */
static void target_stop(struct engine *e, struct target *t)
{
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED) {
		t->flags &= ~PCMON_TF_ACTIVE;
		sampler_target_set(e->smp, t->id, t->flags, t->period_ns, t->owner);
		t->state = TARGET_STOPPED;
		t->end_ns = now_ns();
	}
	sync_all(e);
	target_accumulate_lost(t, e->smp);
	target_release(e, t);
	t->dirty = true;
}

struct open_ctx {
	struct engine *e;
	struct target *t;
	uint64_t now;
	struct agg_extra *extra;
	size_t n, cap;
	int err;
};

static void on_open_interval(void *ctx, const struct pcmon_offcpu *o)
{
	struct open_ctx *oc = ctx;
	struct agg_stack *st;
	size_t sz;

	if (o->key.target != oc->t->id || o->ts >= oc->now || oc->err || o->dwarf)
		return; /* dwarf intervals are the engine's own (e->pending) */
	st = convert(oc->e, &o->key, &o->ustack, oc->t->kernel ? &o->kstack : NULL);
	if (!st || GROW(oc->extra, oc->cap, oc->n + 1)) {
		oc->err = -ENOMEM;
		return;
	}
	sz = agg_stack_size(st->nuser + st->nkern);
	oc->extra[oc->n].st = malloc(sz);
	if (!oc->extra[oc->n].st) {
		oc->err = -ENOMEM;
		return;
	}
	memcpy((void *)oc->extra[oc->n].st, st, sz);
	oc->extra[oc->n++].ns = oc->now - o->ts;
}

static cJSON *cmd_list(struct engine *e, const struct client *c, const cJSON *req)
{
	struct open_ctx oc = { .e = e };
	struct agg_list_opts lo = { 0 };
	struct agg_list l;
	struct pat *when = NULL;
	struct target *t;
	cJSON *rep = NULL;
	const char *wtext = proto_str(req, "when", NULL);
	struct agg_critical *crit = NULL;
	size_t ncrit = 0;

	t = find_target(e, c, req, &rep);
	if (!t)
		return rep;
	if (compile_pattern("--when", req, proto_bool(req, "icase", t->icase), &when, &rep))
		return rep;
	if (target_list_criticals(t, cJSON_GetObjectItemCaseSensitive(req, "critical"),
				  proto_bool(req, "icase", t->icase), &crit, &ncrit, &rep)) {
		pat_free(when);
		return rep;
	}
	if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)
		sync_all(e);
	dbginfo_collect(e->dbg, on_debuginfo, e); /* names that arrived since the last loop */
	oc.t = t;
	oc.now = now_ns();
	if (t->real && (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)) {
		sampler_open_intervals(e->smp, on_open_interval, &oc);
		for (size_t i = 0; i < e->npending && !oc.err; i++) {
			struct pending *p = &e->pending[i];
			size_t sz = agg_stack_size(p->st->nuser + p->st->nkern);

			if (p->target != t->id || p->ts >= oc.now)
				continue;
			if (GROW(oc.extra, oc.cap, oc.n + 1) || !(oc.extra[oc.n].st = malloc(sz))) {
				oc.err = -ENOMEM;
				break;
			}
			memcpy((void *)oc.extra[oc.n].st, p->st, sz);
			oc.extra[oc.n++].ns = oc.now - p->ts;
		}
	}

	lo.period_ns = t->period_ns;
	lo.when = wtext ? when : t->when;
	lo.kernel = t->kernel;
	lo.no_inline = proto_bool(req, "no_inline", t->no_inline);
	lo.extra = oc.extra;
	lo.nextra = oc.n;
	lo.crit = crit;
	lo.ncrit = ncrit;
	if (oc.err || agg_list(t->agg, e->sym, &lo, &l)) {
		rep = proto_error(1, "out of memory while listing");
	} else {
		target_accumulate_lost(t, e->smp);
		rep = proto_ok();
		target_list_json(t, e->sym, &l, wtext ? wtext : t->when_text, crit, ncrit, rep);
		agg_list_free(&l);
		if (e->dbg) { /* names that may still come */
			struct dbginfo_stats ds;

			dbginfo_stats(e->dbg, &ds);
			cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(rep, "summary"),
						"debuginfod_pending", ds.pending);
		}
	}
	for (size_t i = 0; i < oc.n; i++)
		free((void *)oc.extra[i].st);
	free(oc.extra);
	target_free_criticals(t, crit, ncrit);
	pat_free(when);
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
		if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED || t->holds_period)
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
		sampler_target_set(e->smp, t->id, t->flags, t->period_ns, t->owner);
		if (pause)
			t->pause_start = now_ns();
		else
			t->paused_ns += now_ns() - t->pause_start;
		t->state = pause ? TARGET_PAUSED : TARGET_RUNNING;
	} else if (!strcmp(cmd, "zero")) {
		if (t->state == TARGET_RUNNING || t->state == TARGET_PAUSED)
			sync_all(e);
		target_zero(t, e->smp);
	}
	t->dirty = true;
	rep = proto_ok();
	cJSON_AddNumberToObject(rep, "id", t->id);
	cJSON_AddStringToObject(rep, "state", target_state_name(t->state));
	return rep;
}

static cJSON *cmd_targets(struct engine *e, const struct client *c)
{
	cJSON *rep = proto_ok(), *arr = cJSON_AddArrayToObject(rep, "targets"), *o;

	for (int i = 1; i < PCMON_MAX_TARGETS; i++) {
		struct target *t = e->targets[i];

		if (!t || !may_access(c, t))
			continue;
		target_accumulate_lost(t, e->smp);
		o = target_summary_json(t);
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
	cJSON_AddNumberToObject(rep, "drains", e->drains);
	cJSON_AddNumberToObject(rep, "drained_entries", e->drained_entries);
	cJSON_AddNumberToObject(rep, "drain_ms_total", e->drain_ns / 1e6);
	cJSON_AddNumberToObject(rep, "events_lost", gs.events_lost);
	cJSON_AddNumberToObject(rep, "procs_full", gs.procs_full);
	o = cJSON_AddObjectToObject(rep, "symbols");
	cJSON_AddNumberToObject(o, "modules", ss.modules);
	cJSON_AddNumberToObject(o, "locations", ss.locs);
	cJSON_AddNumberToObject(o, "procedures", ss.procs);
	cJSON_AddNumberToObject(o, "maps_reads", ss.maps_reads);
	/* how long processes went with critical-section probes pending (README) */
	{
		struct probes_stats ps;

		probes_stats(e->probes, &ps);
		o = cJSON_AddObjectToObject(rep, "critical_probes");
		cJSON_AddNumberToObject(o, "events", ps.events);
		cJSON_AddNumberToObject(o, "acknowledged", ps.acked);
		cJSON_AddNumberToObject(o, "lag_ms_max", ps.lag_max_ns / 1e6);
		cJSON_AddNumberToObject(o, "objects_checked", ps.objects);
	}
	dbginfo_status_json(e->dbg, rep);
	cJSON_AddNumberToObject(rep, "dwarf_samples_unwound", e->unwound);
	cJSON_AddNumberToObject(rep, "dwarf_unwind_ms_total", e->unwind_ns / 1e6);
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

static const struct proto_field start_fields[] = {
	F_UINT("pid", 1, 4194304),
	F_STR("cgroup", 4096),
	F_UINT("cgroup_fd", 0, PROTO_MAX_FDS - 1),
	F_BOOL("all"),
	F_ENUM("mode", "real|virtual"),
	F_UINT("interval_us", 1, 60000000),
	F_ENUM("unwind", "fp|dwarf|auto"),
	F_BOOL("kernel"),
	F_BOOL("no_inline"),
	F_BOOL("children"),
	F_BOOL("exec_wait"),
	F_STR("name", 4096),
	F_STR("exe", 4096),
	F_UINT("exe_fd", 0, PROTO_MAX_FDS - 1),
	F_WHEN,
};
static const struct proto_field list_fields[] = { F_TARGET(false), F_WHEN };
static const struct proto_field target_fields[] = { F_TARGET(true) };

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
	CMD("start", cmd_start, start_fields),
	CMD("list", cmd_list, list_fields),
	CMD("stop", cmd_simple, target_fields),
	CMD("pause", cmd_simple, target_fields),
	CMD("resume", cmd_simple, target_fields),
	CMD("zero", cmd_simple, target_fields),
	CMD("drop", cmd_simple, target_fields),
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
	if (proto_check(req, k->fields, k->nfields, err, sizeof(err)))
		return proto_error(2, "%s: %s", cmd, err);
	rep = k->fn(e, c, req);
	return rep ? rep : proto_error(1, "out of memory");
}
