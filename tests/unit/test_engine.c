// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unit tests for daemon/engine/engine.c and the target/instrument split (target.c, inst_table.c,
 * sample.c), with a fake sampler: no BPF, no root. The fake records what the engine asks of
 * BPF and hands the engine the entries a test queues, as the real drain would.
 *
 * What is checked: a start request becomes a target carrying the instruments it asks for,
 * configured in BPF as asked; every field is checked once and an unknown one refused;
 * pause, resume, stop, zero and drop reach the target and each instrument; samples drained
 * are listed, with their stack's procedures named from this very binary; permissions and
 * per-user limits; a restart brings back what was saved; rename; the configuration file's
 * targets started, stopped, kept and renamed by conf_apply() at start and on a reload.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf.h"
#include "engine.h"
#include "pcmon_bpf.h"
#include "probes.h"
#include "procs.h"
#include "sym.h"
#include "proto.h"
#include "sampler.h"
#include "util.h"

/* ---------------------------------------------------------------------------------------- */
/* The fake sampler: what the engine asked, and what the next drain hands it */

#define MAXQ 16

static struct fake {
	int evfd;
	uint32_t cfg_flags[PCMON_MAX_TARGETS];
	uint64_t cfg_period[PCMON_MAX_TARGETS];
	uint64_t cfg_slice[PCMON_MAX_TARGETS];
	uint32_t cfg_owner[PCMON_MAX_TARGETS];
	bool cleared[PCMON_MAX_TARGETS];
	int periods;			/* held cpu-clock periods */
	int offcpu;			/* holds of the sched_switch program */
	uint32_t proc_target[8], proc_pid[8];
	int nprocs;
	struct pcmon_tstat tstat[PCMON_MAX_TARGETS];
	struct {
		struct pcmon_key k;
		struct pcmon_val v;
		struct pcmon_stack us;
	} q[MAXQ];
	int nq;
} fk;

struct sampler {
	int dummy;
};
static struct sampler the_sampler;

int sampler_open(const struct sampler_opts *o, struct sampler **out, char *err, size_t errlen)
{
	(void)o;
	(void)err;
	(void)errlen;
	fk.evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	*out = &the_sampler;
	return fk.evfd < 0 ? -errno : 0;
}

void sampler_close(struct sampler *s)
{
	if (s)
		close(fk.evfd);
}

uint32_t sampler_max_depth(const struct sampler *s) { (void)s; return 127; }
uint32_t sampler_dwarf_stack(const struct sampler *s) { (void)s; return 65536; }
uint64_t sampler_min_period_ns(void) { return 10000; }
bool sampler_has_offcpu(const struct sampler *s) { (void)s; return true; }

int sampler_period_get(struct sampler *s, uint64_t period_ns, char *err, size_t errlen)
{
	(void)s; (void)period_ns; (void)err; (void)errlen;
	fk.periods++;
	return 0;
}

void sampler_period_put(struct sampler *s, uint64_t period_ns)
{
	(void)s; (void)period_ns;
	fk.periods--;
}

int sampler_offcpu_get(struct sampler *s, char *err, size_t errlen)
{
	(void)s; (void)err; (void)errlen;
	fk.offcpu++;
	return 0;
}

void sampler_offcpu_put(struct sampler *s) { (void)s; fk.offcpu--; }

/* The fake process map: BPF's view of targets and processes. */
struct procs {
	int dummy;
};
static struct procs the_procs;

int procs_open(bool bpf_stats, struct procs **out, char *err, size_t errlen)
{
	(void)bpf_stats; (void)err; (void)errlen;
	*out = &the_procs;
	return 0;
}

void procs_close(struct procs *p) { (void)p; }

int procs_share(struct procs *p, struct bpf_object *obj, char *err, size_t errlen)
{
	(void)p; (void)obj; (void)err; (void)errlen;
	return 0;
}

int procs_events_fd(struct procs *p) { (void)p; return fk.evfd; }

int procs_poll(struct procs *p, procs_event_cb cb, void *ctx)
{
	(void)p; (void)cb; (void)ctx;
	return 0;
}

int procs_probe_events_fd(struct procs *p) { (void)p; return fk.evfd; }
bool procs_bpf_stats(const struct procs *p) { (void)p; return false; }
void procs_programs_json(struct procs *p, cJSON *arr) { (void)p; (void)arr; }
void procs_program_json(struct bpf_program *prog, bool attached, cJSON *arr)
{
	(void)prog; (void)attached; (void)arr;
}

int procs_target_set(struct procs *s, uint32_t id, const struct pcmon_tcfg *cfg)
{
	(void)s;
	fk.cfg_flags[id] = cfg->flags;
	fk.cfg_period[id] = cfg->period_ns;
	fk.cfg_slice[id] = cfg->slice_ns;
	fk.cfg_owner[id] = cfg->owner;
	fk.cleared[id] = false;
	return 0;
}

void procs_target_clear(struct procs *s, uint32_t id) { (void)s; fk.cleared[id] = true; }

int procs_proc_add(struct procs *s, uint32_t tgid, uint32_t target, uint32_t flags,
		   uint32_t *had)
{
	(void)s; (void)flags;
	*had = 0;
	for (int i = 0; i < fk.nprocs; i++) {
		if (fk.proc_pid[i] == tgid && !fk.cleared[fk.proc_target[i]]) {
			*had = fk.proc_target[i];
			return -EEXIST;
		}
	}
	if (fk.nprocs < 8) {
		fk.proc_pid[fk.nprocs] = tgid;
		fk.proc_target[fk.nprocs++] = target;
	}
	return 0;
}

int procs_proc_epoch(struct procs *s, uint32_t tgid, uint32_t *epoch)
{
	(void)s; (void)tgid;
	*epoch = 0;
	return 0;
}

/* No process here exits with its mappings noted. */
int procs_exit_maps(struct procs *p, uint32_t tgid, uint32_t epoch, struct procmaps_vma *v,
		    int max)
{
	(void)p; (void)tgid; (void)epoch; (void)v; (void)max;
	return -ENOENT;
}

int procs_cgroup_add(struct procs *s, uint64_t cgid, uint32_t target)
{
	(void)s; (void)cgid; (void)target;
	return 0;
}

void procs_all_set(struct procs *s, uint32_t target) { (void)s; (void)target; }

void procs_tails(struct procs *s, int delta) { (void)s; (void)delta; }

void procs_tail_gen(struct procs *s, uint32_t target) { (void)s; (void)target; }

void procs_tstat(struct procs *s, uint32_t target, struct pcmon_tstat *sum)
{
	(void)s;
	*sum = fk.tstat[target];
}

void procs_gstat(struct procs *s, struct pcmon_gstat *sum)
{
	(void)s;
	memset(sum, 0, sizeof(*sum));
}

/* (the entries oldest slice first, as the sampler gives them) */
int sampler_drain(struct sampler *s, sampler_age_cb age, sampler_entry_cb cb, void *ctx)
{
	uint64_t wall = wall_ns();

	(void)s;
	for (int a = 255; a >= 0; a--)
		for (int i = 0; i < fk.nq; i++)
			if (age(ctx, &fk.q[i].k, wall) == a)
				cb(ctx, &fk.q[i].k, &fk.q[i].v, fk.q[i].us.len ? &fk.q[i].us : NULL,
				   NULL, wall, (uint8_t)a);
	fk.nq = 0;
	return 0;
}

bool sampler_pending(const struct sampler *s, uint32_t *entries)
{
	(void)s;
	*entries = fk.nq;
	return fk.nq > 0;
}

uint32_t sampler_capacity(const struct sampler *s) { (void)s; return 65536; }
bool sampler_drain_wanted(struct sampler *s) { (void)s; return false; }
const char *sampler_blocked_stacks(const struct sampler *s) { (void)s; return NULL; }

int sampler_thread_name(struct sampler *s, uint32_t tid, char *comm, char *pcomm, size_t len)
{
	(void)s; (void)tid; (void)comm; (void)pcomm; (void)len;
	return -ENOENT;
}

void sampler_open_intervals(struct sampler *s, sampler_open_cb cb, void *ctx)
{
	(void)s; (void)cb; (void)ctx;
}

int sampler_dsamples_fd(struct sampler *s) { (void)s; return fk.evfd; }
void sampler_backlog_json(const struct sampler *s, cJSON *o) { (void)s; (void)o; }
int sampler_stacks_fd(struct sampler *s) { (void)s; return fk.evfd; }

int sampler_stacks_get(struct sampler *s, char *err, size_t errlen)
{
	(void)s; (void)err; (void)errlen;
	return 0;
}

int sampler_poll(struct sampler *s, sampler_dsample_cb ds, void *ctx)
{
	(void)s; (void)ds; (void)ctx;
	return 0;
}

int sampler_usdt_attach(struct sampler *s, const char *path) { (void)s; (void)path; return 0; }
int procs_probes_ack(struct procs *s, uint32_t tgid, uint32_t seq)
{
	(void)s; (void)tgid; (void)seq;
	return 0;
}

void sampler_programs_json(struct sampler *s, cJSON *arr) { (void)s; (void)arr; }

/* No process here is a CPython. */
int sampler_py_set(struct sampler *s, uint32_t pid, const struct pcmon_pyproc *pp)
{
	(void)s; (void)pid; (void)pp;
	return 0;
}
void sampler_py_hook(struct sampler *s, sampler_py_cb cb, void *ctx) { (void)s; (void)cb; (void)ctx; }
/* ... nor a V8 ... */
int sampler_js_set(struct sampler *s, uint32_t pid, const struct pcmon_v8proc *vp)
{
	(void)s; (void)pid; (void)vp;
	return 0;
}
/* ... nor a JVM. */
int sampler_jvm_set(struct sampler *s, uint32_t pid, uint32_t epoch, bool on)
{
	(void)s; (void)pid; (void)epoch; (void)on;
	return 0;
}
/* ... and no BPF to walk stacks with CFI tables: every stack is copied. */
int sampler_cfi_fds(struct sampler *s, int *tables, int *procs)
{
	(void)s;
	*tables = *procs = -1;
	return -ENOTSUP;
}

/* The probe thread reads BPF's probe ring: there is none here. */
static struct probes *the_probes = (struct probes *)&the_sampler;

int probes_start(struct sampler *smp, struct procs *procs, struct probes **out, char *err,
		 size_t errlen)
{
	(void)smp; (void)procs; (void)err; (void)errlen;
	*out = the_probes;
	return 0;
}

void probes_stop(struct probes *p) { (void)p; }
void probes_stats(struct probes *p, struct probes_stats *out) { (void)p; memset(out, 0, sizeof(*out)); }

/* ---------------------------------------------------------------------------------------- */
/* Fixture */

/* Code of this binary that the symbolizer names from its symbol table. */
__attribute__((noinline, used)) void leaf_work(void) { __asm__ volatile("" ::: "memory"); }
__attribute__((noinline, used)) void outer_work(void) { leaf_work(); __asm__ volatile(""); }

struct fx {
	char dir[64];
	struct engine *e;
	struct engine_opts o;
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static struct engine *open_engine(struct fx *f)
{
	char err[256] = "";

	assert_int_equal(engine_new(&f->o, &f->e, err, sizeof(err)), 0);
	return f->e;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	memset(&fk, 0, sizeof(fk));
	snprintf(f->dir, sizeof(f->dir), "/tmp/pcmon-engine-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->o.state_dir = f->dir;
	f->o.debuginfod = "";
	f->o.user_targets = 2;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	engine_free(f->e);
	nftw(f->dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

/* A request from @uid, answered; the reply is the caller's. */
static cJSON *ask(struct fx *f, uid_t uid, const char *json)
{
	struct client c = { .uid = uid, .pid = getpid() };
	cJSON *req = cJSON_Parse(json), *rep;

	assert_non_null(req);
	rep = engine_handle(f->e, &c, req);
	cJSON_Delete(req);
	assert_non_null(rep);
	return rep;
}

static bool ok(const cJSON *rep)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok"));
}

static const char *error_of(const cJSON *rep)
{
	return proto_str(rep, "error", "");
}

static int status_of(const cJSON *rep)
{
	return (int)proto_num(rep, "status", -1);
}

/* Start a target on this process as @uid; its id. */
static uint32_t start(struct fx *f, uid_t uid, const char *extra)
{
	char json[512];
	cJSON *rep;
	uint32_t id;

	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d%s%s}", getpid(),
		 extra ? "," : "", extra ? extra : "");
	rep = ask(f, uid, json);
	if (!ok(rep))
		fail_msg("start %s: %s", json, error_of(rep));
	id = proto_num(rep, "id", 0);
	cJSON_Delete(rep);
	return id;
}

/* Queue @count on-CPU samples of target @id in outer_work -> leaf_work. */
static void queue(uint32_t id, uint64_t count)
{
	assert_true(fk.nq < MAXQ);
	fk.q[fk.nq].k = (struct pcmon_key){ .target = id, .pid = getpid(), .kind = PCMON_KIND_ONCPU,
					    .ustack = 1 };
	/* taken now: in the slice the wall clock is in (BPF's slice_stamp()) */
	if (id < PCMON_MAX_TARGETS && fk.cfg_slice[id])
		fk.q[fk.nq].k.slice = wall_ns() / fk.cfg_slice[id];
	fk.q[fk.nq].v = (struct pcmon_val){ .count = count };
	fk.q[fk.nq].us.len = 2;
	fk.q[fk.nq].us.ip[0] = (uintptr_t)leaf_work;	/* innermost: the sampled pc, exact */
	/* a return address: looked up one byte before, at the call */
	fk.q[fk.nq].us.ip[1] = (uintptr_t)outer_work + 1;
	fk.nq++;
}

/* ... taken by thread @tid of this process, in cgroup @cgroup. */
static void queue_as(uint32_t id, uint64_t count, uint32_t tid, uint64_t cgroup)
{
	queue(id, count);
	fk.q[fk.nq - 1].k.tid = tid;
	fk.q[fk.nq - 1].k.cgroup = cgroup;
}

/* A procedure's row in a listing, NULL if it has none. */
static const cJSON *proc_row(const cJSON *list, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(list, "procedures"))
		if (!strcmp(proto_str(p, "name", ""), name))
			return p;
	return NULL;
}

static cJSON *list(struct fx *f, uid_t uid, uint32_t id)
{
	char json[96];

	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"list\",\"target\":%u}", id);
	return ask(f, uid, json);
}

static double summary(const cJSON *list, const char *k)
{
	return proto_num(cJSON_GetObjectItem(list, "summary"), k, -1);
}

/* ---------------------------------------------------------------------------------------- */
/* Tests */

static void test_start_configures_bpf(void **state)
{
	struct fx *f = *state;
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), "\"mode\":\"real\",\"interval_us\":2000,\"unwind\":\"fp\",\"kernel\":true");
	assert_int_equal(id, 1);
	/* the target's own flags and sampling's (Python frames unless --no-python), the period
	 * (the timers' is off the interval, coprime with the kernel's tick: 2 ms is 1,999 us),
	 * the owner */
	assert_int_equal(fk.cfg_flags[id], PCMON_TF_ACTIVE | PCMON_TF_CHILDREN | PCMON_TF_REAL |
						   PCMON_TF_KERNEL | PCMON_TF_PYTHON);
	assert_int_equal(fk.cfg_period[id], 1999000);
	assert_int_equal(fk.cfg_owner[id], getuid());
	assert_int_equal(fk.periods, 1);
	assert_int_equal(fk.offcpu, 1);
	assert_int_equal(fk.nprocs, 1);
	assert_int_equal(fk.proc_pid[0], (uint32_t)getpid());

	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"targets\"}");
	assert_true(ok(rep));
	{
		const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "targets"), 0);

		assert_string_equal(proto_str(t, "mode", ""), "REAL");
		assert_string_equal(proto_str(t, "unwind", ""), "fp");
		assert_int_equal(proto_num(t, "interval_us", 0), 2000);
		assert_int_equal(proto_num(t, "period_us", 0), 1999);
		assert_string_equal(proto_str(t, "state", ""), "running");
		assert_true(cJSON_IsTrue(cJSON_GetObjectItem(t, "children")));
	}
	cJSON_Delete(rep);
}

static void test_start_refusals(void **state)
{
	struct fx *f = *state;
	char json[256];
	cJSON *rep;

	open_engine(f);
	/* a field nobody takes, named */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"colour\":1}", getpid());
	rep = ask(f, getuid(), json);
	assert_false(ok(rep));
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "colour"));
	cJSON_Delete(rep);
	/* an instrument's field with the wrong value: checked once, by the engine */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"unwind\":\"lbr\"}",
		 getpid());
	rep = ask(f, getuid(), json);
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "unwind"));
	cJSON_Delete(rep);
	/* no instrument at all */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"no_sample\":true}",
		 getpid());
	rep = ask(f, getuid(), json);
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "no instrument"));
	cJSON_Delete(rep);
	/* a bad WHEN starts nothing: no period held, no process given to BPF */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"when\":\"main->(\"}",
		 getpid());
	rep = ask(f, getuid(), json);
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "--when"));
	cJSON_Delete(rep);
	assert_int_equal(fk.periods, 0);
	assert_int_equal(fk.nprocs, 0);
	/* two of --pid, --all */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"all\":true}", getpid());
	rep = ask(f, 0, json);
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "exactly one"));
	cJSON_Delete(rep);
}

static void test_samples_listed(void **state)
{
	struct fx *f = *state;
	const cJSON *leaf, *outer;
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), "\"unwind\":\"fp\"");
	queue(id, 30);
	queue(id, 12);
	queue(id + 1, 99); /* no such target: dropped, counted nowhere */
	rep = list(f, getuid(), id);
	assert_true(ok(rep));
	assert_int_equal(summary(rep, "interrupts"), 42);
	assert_int_equal(summary(rep, "counted"), 42);
	/* named from this binary's symbols: the leaf has them all, its caller as deep */
	leaf = proc_row(rep, "leaf_work");
	outer = proc_row(rep, "outer_work");
	assert_non_null(leaf);
	assert_non_null(outer);
	assert_int_equal(proto_num(leaf, "shallow", 0), 42);
	assert_int_equal(proto_num(outer, "shallow", -1), 0);
	assert_int_equal(proto_num(outer, "deep", 0), 42);
	/* the stack ends short of a root (no _start): flagged, not silently whole */
	assert_int_equal(summary(rep, "cut_short"), 42);
	assert_int_equal(proto_num(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"),
						       "cut_short_by_reason"),
				   "fp_chain", -1), 42);
	cJSON_Delete(rep);
}

/* `list` of target @id in window [@since, @until) (whole seconds since the epoch). */
static cJSON *list_window(struct fx *f, uint32_t id, uint64_t since, uint64_t until)
{
	char json[160];

	snprintf(json, sizeof(json),
		 "{\"v\":1,\"cmd\":\"list\",\"target\":%u,\"since\":\"@%llu\",\"until\":\"@%llu\"}",
		 id, (unsigned long long)since, (unsigned long long)until);
	return ask(f, getuid(), json);
}

/*
 * A count goes to the time slice BPF stamped it with, however late it is read: a drain just
 * after a slice's end holds the end of that slice and the start of the next, given newest
 * first here, and a read that came a slice late holds one older still.
 */
static void test_counts_go_to_the_slice_they_were_taken_in(void **state)
{
	struct fx *f = *state;
	uint64_t len, cur, s;
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), "\"unwind\":\"fp\"");
	len = fk.cfg_slice[id];
	assert_int_equal(len, 10 * 1000000000ull); /* the default: 10s,1m@1h,10m@1d */
	cur = wall_ns() / len;
	queue(id, 7);
	fk.q[fk.nq - 1].k.slice = cur;
	queue(id, 5);
	fk.q[fk.nq - 1].k.slice = cur - 1;
	queue(id, 3);
	fk.q[fk.nq - 1].k.slice = cur - 2;
	s = len / 1000000000ull;
	rep = list_window(f, id, (cur - 2) * s, (cur - 1) * s);
	assert_int_equal(summary(rep, "interrupts"), 3);
	cJSON_Delete(rep);
	rep = list_window(f, id, (cur - 1) * s, cur * s);
	assert_int_equal(summary(rep, "interrupts"), 5);
	cJSON_Delete(rep);
	rep = list_window(f, id, cur * s, (cur + 1) * s);
	assert_int_equal(summary(rep, "interrupts"), 7);
	cJSON_Delete(rep);
}

/* `list --by @by` of target @id, with more fields @more ("" for none). */
static cJSON *list_by(struct fx *f, uint32_t id, const char *by, const char *more)
{
	char json[192];

	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"list\",\"target\":%u,\"by\":\"%s\"%s}",
		 id, by, more);
	return ask(f, getuid(), json);
}

/* list --by: groups with their own procedures, names that survive a restart. */
static void test_list_by(void **state)
{
	struct fx *f = *state;
	const cJSON *gs, *g0, *g1;
	char comm[32] = "";
	uint32_t id;
	cJSON *rep;
	FILE *fp = fopen("/proc/self/comm", "r");

	assert_non_null(fp);
	assert_non_null(fgets(comm, sizeof(comm), fp));
	fclose(fp);
	comm[strcspn(comm, "\n")] = '\0';
	open_engine(f);
	id = start(f, getuid(), "\"unwind\":\"fp\"");
	queue_as(id, 30, getpid(), 987654321); /* a cgroup no directory has: gone */
	queue_as(id, 12, getpid(), 987654322);
	for (int round = 0; round < 2; round++) {
		rep = list_by(f, id, "cgroup", "");
		assert_true(ok(rep));
		gs = cJSON_GetObjectItem(rep, "groups");
		assert_int_equal(cJSON_GetArraySize(gs), 2);
		g0 = cJSON_GetArrayItem(gs, 0);
		g1 = cJSON_GetArrayItem(gs, 1);
		assert_string_equal(proto_str(g0, "by", ""), "cgroup");
		assert_string_equal(proto_str(g0, "name", ""), "cgroup:987654321");
		assert_int_equal(proto_num(g0, "id", 0), 987654321);
		assert_int_equal(proto_num(g0, "counted", 0), 30);
		assert_int_equal(proto_num(g1, "counted", 0), 12);
		assert_float_equal(proto_num(g0, "percent", 0), 100.0 * 30 / 42, 1e-9);
		g0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g0, "procedures"), 0);
		assert_string_equal(proto_str(g0, "name", ""), "leaf_work");
		assert_int_equal(proto_num(g0, "shallow_pct", 0), 100);
		assert_true(proto_num(g0, "shallow_pct_all", 0) > 71.4);
		assert_non_null(proc_row(rep, "leaf_work")); /* the whole listing is there too */
		cJSON_Delete(rep);

		rep = list_by(f, id, "process", "");
		gs = cJSON_GetObjectItem(rep, "groups");
		assert_int_equal(cJSON_GetArraySize(gs), 1);
		g0 = cJSON_GetArrayItem(gs, 0);
		assert_int_equal(proto_num(g0, "pid", 0), getpid());
		assert_string_equal(proto_str(g0, "name", ""), comm);
		assert_int_equal(proto_num(g0, "counted", 0), 42);
		cJSON_Delete(rep);

		/* after a restart, from the results file */
		engine_flush(f->e, true);
		engine_free(f->e);
		f->e = NULL;
		open_engine(f);
	}
	/* a grouping nobody knows, and one with a view of one procedure: refused */
	rep = list_by(f, id, "sym", "");
	assert_int_equal(status_of(rep), 2);
	assert_non_null(strstr(error_of(rep), "--by"));
	cJSON_Delete(rep);
	rep = list_by(f, id, "comm", ",\"lines\":\"leaf_work\"");
	assert_int_equal(status_of(rep), 2);
	cJSON_Delete(rep);
}

static void test_pause_resume_stop_zero_drop(void **state)
{
	struct fx *f = *state;
	char path[128];
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), NULL);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"pause\",\"target\":1}");
	assert_true(ok(rep));
	cJSON_Delete(rep);
	assert_int_equal(fk.cfg_flags[id] & PCMON_TF_ACTIVE, 0);
	assert_int_equal(fk.cfg_period[id], 9999000); /* sampling's settings kept */
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"pause\",\"target\":1}");
	assert_int_equal(status_of(rep), 1); /* only a running target can be paused */
	cJSON_Delete(rep);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"resume\",\"target\":1}");
	cJSON_Delete(rep);
	assert_int_equal(fk.cfg_flags[id] & PCMON_TF_ACTIVE, PCMON_TF_ACTIVE);

	queue(id, 5);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"zero\",\"target\":1}");
	cJSON_Delete(rep);
	rep = list(f, getuid(), id);
	assert_int_equal(summary(rep, "interrupts"), 0);
	cJSON_Delete(rep);

	queue(id, 7);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"stop\",\"target\":1}");
	assert_string_equal(proto_str(rep, "state", ""), "stopped");
	cJSON_Delete(rep);
	/* stopped: what was in flight is collected, the period and the processes released */
	assert_int_equal(fk.periods, 0);
	assert_true(fk.cleared[id]);
	rep = list(f, getuid(), id);
	assert_int_equal(summary(rep, "interrupts"), 7);
	cJSON_Delete(rep);

	engine_flush(f->e, true);
	snprintf(path, sizeof(path), "%s/target-%u.json", f->dir, id);
	assert_int_equal(access(path, F_OK), 0);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"drop\",\"target\":1}");
	assert_true(ok(rep));
	cJSON_Delete(rep);
	assert_int_not_equal(access(path, F_OK), 0);
	rep = list(f, getuid(), id);
	assert_int_equal(status_of(rep), 1);
	cJSON_Delete(rep);
}

static void test_restart_keeps_results(void **state)
{
	struct fx *f = *state;
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), "\"mode\":\"real\",\"critical\":[\"hot=*->leaf_work\"]");
	queue(id, 11);
	rep = list(f, getuid(), id); /* drains */
	cJSON_Delete(rep);
	engine_flush(f->e, true);
	engine_free(f->e);
	f->e = NULL;
	assert_int_equal(fk.periods, 0); /* freed with the engine */

	open_engine(f);
	rep = list(f, getuid(), id);
	assert_true(ok(rep));
	/* a running target comes back stopped, with its settings and its samples */
	assert_string_equal(proto_str(cJSON_GetObjectItem(rep, "target"), "state", ""), "stopped");
	assert_string_equal(proto_str(cJSON_GetObjectItem(rep, "target"), "mode", ""), "REAL");
	assert_int_equal(summary(rep, "interrupts"), 11);
	{
		const cJSON *c = cJSON_GetArrayItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"), "critical"), 1);

		assert_string_equal(proto_str(c, "name", ""), "hot");
		assert_int_equal(proto_num(c, "count", 0), 11);
	}
	cJSON_Delete(rep);
}

/* rename: checked as start checks a name, kept across a restart */
static void test_rename(void **state)
{
	struct fx *f = *state;
	uid_t other = getuid() + 4242;
	uint32_t id;
	cJSON *rep;

	open_engine(f);
	id = start(f, getuid(), "\"name\":\"first\"");
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"rename\",\"target\":\"first\",\"name\":\"second\"}");
	assert_true(ok(rep));
	assert_int_equal(proto_num(rep, "id", 0), id);
	assert_string_equal(proto_str(rep, "name", ""), "second");
	cJSON_Delete(rep);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"rename\",\"target\":1,\"name\":\"a\\u001bb\"}");
	assert_int_equal(status_of(rep), 2);
	cJSON_Delete(rep);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"rename\",\"target\":1,\"name\":\"\"}");
	assert_int_equal(status_of(rep), 2);
	cJSON_Delete(rep);
	rep = ask(f, getuid(), "{\"v\":1,\"cmd\":\"rename\",\"target\":1}");
	assert_non_null(strstr(error_of(rep), "\"name\" is missing"));
	cJSON_Delete(rep);
	/* another user's target is not hers to rename */
	rep = ask(f, other, "{\"v\":1,\"cmd\":\"rename\",\"target\":1,\"name\":\"x\"}");
	assert_false(ok(rep));
	cJSON_Delete(rep);

	engine_flush(f->e, true);
	engine_free(f->e);
	f->e = NULL;
	open_engine(f);
	rep = list(f, getuid(), id);
	assert_string_equal(proto_str(cJSON_GetObjectItem(rep, "target"), "name", ""), "second");
	assert_int_equal(proto_num(cJSON_GetObjectItem(rep, "target"), "owner", -1), getuid());
	cJSON_Delete(rep);
}

/*
 * The configuration file's text as a configuration. Its targets all watch all tasks, which
 * a real file may not (BPF has one all target): the only error allowed here, as the fake BPF
 * has no cgroups to watch instead.
 */
static struct conf *conf_of(const char *text)
{
	FILE *fp = fmemopen((void *)text, strlen(text), "r");
	struct conf *c = conf_parse(fp, "t.conf");

	fclose(fp);
	assert_non_null(c);
	for (size_t i = 0; i < c->nerrors; i++)
		assert_non_null(strstr(c->errors[i], "one target watches all tasks"));
	return c;
}

/* Root's target named @name: its id and state ("" and 0: none). */
static uint32_t find_named(struct fx *f, const char *name, const char **state)
{
	static char st[16];
	cJSON *rep = ask(f, 0, "{\"v\":1,\"cmd\":\"targets\"}"), *t;
	uint32_t id = 0;

	st[0] = '\0';
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(rep, "targets")) {
		if (strcmp(proto_str(t, "name", ""), name))
			continue;
		assert_int_equal(id, 0); /* never two of a name */
		assert_int_equal(proto_num(t, "owner", -1), 0);
		id = proto_num(t, "id", 0);
		snprintf(st, sizeof(st), "%s", proto_str(t, "state", ""));
	}
	cJSON_Delete(rep);
	*state = st;
	return id;
}

/*
 * The file's targets, started by the engine's own start request as root; a reload stops a
 * removed section's, replaces a changed one's (the old one keeps its results under NAME@ID),
 * keeps an unchanged one's; a restart brings the stored ones back stopped, renamed.
 */
static void test_configured_targets(void **state)
{
	struct fx *f = *state;
	struct conf *c1 = conf_of("[target sys]\nall = yes\ninterval = 2000\n"
				  "[target gone]\nall = yes\n"
				  "[target same]\nall = yes\nmode = real\n");
	struct conf *c2 = conf_of("[target same]\nmode = real\nall = yes\n"
				  "[target sys]\nall = yes\ninterval = 4000\n"
				  "[target new]\nall = yes\n");
	uint32_t sys, gone, same, id;
	const char *st;
	cJSON *rep;

	open_engine(f);
	assert_int_equal(conf_apply(f->e, NULL, c1), 0);
	sys = find_named(f, "sys", &st);
	assert_string_equal(st, "running");
	assert_int_equal(fk.cfg_period[sys], 1999000);
	assert_int_equal(fk.cfg_owner[sys], 0);
	assert_int_equal(conf_find(c1, "sys")->id, sys);
	gone = find_named(f, "gone", &st);
	same = find_named(f, "same", &st);
	queue(sys, 9);
	rep = list(f, 0, sys); /* drained */
	cJSON_Delete(rep);

	assert_int_equal(conf_apply(f->e, c1, c2), 0);
	assert_int_equal(find_named(f, "gone", &st), gone);
	assert_string_equal(st, "stopped"); /* removed: stopped, kept */
	assert_int_equal(find_named(f, "same", &st), same);
	assert_string_equal(st, "running"); /* unchanged: untouched */
	assert_int_equal(find_named(f, "sys@1", &st), sys);
	assert_string_equal(st, "stopped"); /* changed: the old one apart, with its results */
	rep = list(f, 0, sys);
	assert_int_equal(summary(rep, "interrupts"), 9);
	cJSON_Delete(rep);
	id = find_named(f, "sys", &st);
	assert_true(id && id != sys);
	assert_string_equal(st, "running");
	assert_int_equal(fk.cfg_period[id], 3999000);
	assert_non_null(find_named(f, "new", &st) ? st : NULL);
	assert_string_equal(st, "running");

	/* a restart: each stored target of a section's name is renamed, a new one started */
	engine_flush(f->e, true);
	engine_free(f->e);
	f->e = NULL;
	open_engine(f);
	assert_int_equal(conf_apply(f->e, NULL, c2), 0);
	assert_int_equal(find_named(f, "same@3", &st), same);
	assert_string_equal(st, "stopped");
	assert_int_equal(find_named(f, "sys@1", &st), sys);
	assert_true(find_named(f, "sys", &st) > 0);
	assert_string_equal(st, "running");
	assert_int_equal(find_named(f, "gone", &st), gone); /* no section: left as it is */
	conf_free(c1);
	conf_free(c2);
}

static void test_users(void **state)
{
	struct fx *f = *state;
	uid_t other = getuid() + 4242;
	char json[128];
	cJSON *rep;

	open_engine(f);
	start(f, getuid(), NULL);
	/* another user sees nothing of it and cannot touch it */
	rep = ask(f, other, "{\"v\":1,\"cmd\":\"targets\"}");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "targets")), 0);
	cJSON_Delete(rep);
	rep = ask(f, other, "{\"v\":1,\"cmd\":\"stop\",\"target\":1}");
	assert_int_equal(status_of(rep), 1);
	cJSON_Delete(rep);
	/* nor watch this process, which is not hers */
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d}", getpid());
	rep = ask(f, other, json);
	assert_int_equal(status_of(rep), 1);
	assert_non_null(strstr(error_of(rep), "belongs to uid"));
	cJSON_Delete(rep);
	/* --all is root's */
	rep = ask(f, other, "{\"v\":1,\"cmd\":\"start\",\"all\":true}");
	assert_non_null(strstr(error_of(rep), "only root"));
	cJSON_Delete(rep);
}

/*
 * A process of a user other than root, and that user: as root, a child that becomes nobody;
 * as anyone else, this process. Its pid, 0 when none could be made.
 */
static pid_t users_process(uid_t *uid)
{
	pid_t pid;

	if (getuid() != 0) {
		*uid = getuid();
		return getpid();
	}
	*uid = 65534;
	pid = fork();
	if (pid == 0) {
		/* gone with the test, whatever happens to it; and not holding its output open */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(open("/dev/null", O_WRONLY), 1);
		dup2(1, 2);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(1);
		pause();
		_exit(0);
	}
	for (int i = 0; i < 1000 && pid > 0; i++) { /* until /proc says it is hers */
		char path[32];
		struct stat sb;

		snprintf(path, sizeof(path), "/proc/%d", pid);
		if (!stat(path, &sb) && sb.st_uid == *uid)
			return pid;
		usleep(1000);
	}
	return 0;
}

static void test_user_target_limit(void **state)
{
	struct fx *f = *state;
	char json[128];
	uid_t uid;
	pid_t pid = users_process(&uid);
	cJSON *rep;

	assert_true(pid > 0);
	open_engine(f);
	/* o.user_targets is 2: the third is refused, stopped or not */
	for (int i = 0; i < 3; i++) {
		snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d,\"name\":\"n%d\"}",
			 pid, i);
		rep = ask(f, uid, json);
		if (i < 2) {
			if (!ok(rep))
				fail_msg("start %d as uid %u: %s", i, uid, error_of(rep));
			cJSON_Delete(rep);
			snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"stop\",\"target\":%d}", i + 1);
			rep = ask(f, uid, json); /* frees the process for the next one */
			assert_true(ok(rep));
			cJSON_Delete(rep);
			continue;
		}
		assert_int_equal(status_of(rep), 1);
		assert_non_null(strstr(error_of(rep), "the most one user may have"));
		cJSON_Delete(rep);
	}
	/* root is not limited */
	if (getuid() == 0) {
		snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d}", pid);
		rep = ask(f, 0, json);
		assert_true(ok(rep));
		cJSON_Delete(rep);
	}
	if (pid != getpid()) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A process is in one target: a second --pid on it is refused, naming the first. */
static void test_one_target_per_process(void **state)
{
	struct fx *f = *state;
	char json[128];
	cJSON *rep;

	open_engine(f);
	start(f, getuid(), "\"name\":\"first\"");
	snprintf(json, sizeof(json), "{\"v\":1,\"cmd\":\"start\",\"pid\":%d}", getpid());
	rep = ask(f, getuid(), json);
	assert_int_equal(status_of(rep), 1);
	assert_non_null(strstr(error_of(rep), "already watched by target 1 \"first\""));
	cJSON_Delete(rep);
	/* nothing of the refused target is left holding BPF resources */
	assert_int_equal(fk.periods, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_start_configures_bpf),
		T(test_start_refusals),
		T(test_samples_listed),
		T(test_counts_go_to_the_slice_they_were_taken_in),
		T(test_list_by),
		T(test_pause_resume_stop_zero_drop),
		T(test_restart_keeps_results),
		T(test_rename),
		T(test_configured_targets),
		T(test_users),
		T(test_user_target_limit),
		T(test_one_target_per_process),
	};

	log_verbosity = LOG_ERR;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
