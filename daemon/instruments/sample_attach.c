// SPDX-License-Identifier: GPL-2.0-only
/*
 * A sampling target's life: its state made from a request (sample_new(), its settings),
 * attached (BPF's timers and off-CPU programs, critical-section probes), paused, stopped,
 * zeroed; the drops BPF counted for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "cfitab.h"
#include "dbginfo.h"
#include "probes.h"
#include "procs.h"
#include "sample_int.h"
#include "sampler.h"
#include "slices.h"
#include "tail.h"
#include "when.h"

static void attach_usdt(void *ctx, const char *path)
{
	struct sample_g *g = ctx;

	sampler_usdt_attach(g->smp, path);
}

/*
 * Critical-section probes: those of the objects a watched process has mapped now, and
 * (pcmon run) of the command it is about to exec, before it is released; after that the
 * probe thread attaches those of whatever processes load (probes.h).
 */
static int attach_probes(struct sample_g *g, struct target *t, cJSON **rep)
{
	char err[256], path[64];
	struct stat st;

	/* started here, not at open: pcmond forks into the background after that */
	if (!g->probes && probes_start(g->smp, g->env.procs, &g->probes, err, sizeof(err))) {
		*rep = proto_error(1, "%s", err);
		return -1;
	}
	if (t->kind != TARGET_PID)
		return 0;
	sym_proc_usdt(g->env.sym, t->pid, 0, attach_usdt, g);
	/* the descriptor is the client's, opened with its rights: a regular file only */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", t->exe_fd);
	if (t->exe_fd >= 0 && !fstat(t->exe_fd, &st) && S_ISREG(st.st_mode) &&
	    sym_fd_has_probes(t->exe_fd))
		sampler_usdt_attach(g->smp, path);
	return 0;
}

bool sample_attach_wanted(const cJSON *req)
{
	return !proto_bool(req, "no_sample", 0);
}

/*
 * The timers' period for a sampling interval @interval_ns, a few microseconds off it: a
 * per-CPU timer whose period divides the scheduler tick's fires at the same offset after
 * every switch to a task the tick made, so that on a busy CPU a task is sampled again and
 * again at the same distance from where it was resumed (a share moved 10 pp from run to
 * run). A period coprime with the tick drifts through every offset.
 */
static uint64_t timer_ns(uint64_t interval_ns)
{
	uint64_t us = interval_ns / 1000, floor_us = (sampler_min_period_ns() + 999) / 1000, n;

	/* the nearest whole microseconds below (else above) that are neither even nor a
	 * multiple of 5: coprime with 1 ms, 4 ms and 10 ms, the kernel's ticks at HZ 1000, 250
	 * and 100 (1 ms becomes 999 us, as 100 Hz becomes 99 Hz) */
	for (n = us; n > 1 && (n % 2 == 0 || n % 5 == 0); n--)
		;
	if (n < floor_us || n < 1)
		for (n = MAX(us, 1); n % 2 == 0 || n % 5 == 0; n++)
			;
	return n * 1000;
}

int sample_attach_new(void *gp, const struct client *c, const cJSON *req, void **out, cJSON **rep)
{
	const char *mode = proto_str(req, "mode", NULL);
	const char *unwind = proto_str(req, "unwind", "auto");
	double usec = proto_num(req, "interval_us", 10000);
	uint64_t floor_ns = sampler_min_period_ns();
	struct sample *sp;

	(void)gp;
	(void)c;
	if (usec * 1000 < floor_ns) {
		*rep = proto_error(2, "--interval %g: must be a whole number of microseconds from %llu (this kernel's floor) to 60000000",
				   usec, (unsigned long long)(floor_ns + 999) / 1000);
		return -EINVAL;
	}
	sp = sample_new();
	if (!sp) {
		*rep = proto_error(1, "out of memory");
		return -ENOMEM;
	}
	sp->interval_us = (uint32_t)usec;
	sp->period_ns = timer_ns((uint64_t)usec * 1000);
	sp->real = mode && !strcmp(mode, "real");
	sp->kernel = proto_bool(req, "kernel", 0);
	sp->no_inline = proto_bool(req, "no_inline", 0);
	sp->python = !proto_bool(req, "no_python", 0);
	sp->java = !proto_bool(req, "no_java", 0);
	/* auto: frame pointers are not whole even where kept (leaf functions have no frame),
	 * so CFI unwinding is the cheapest method that gives whole stacks; see README */
	snprintf(sp->unwind, sizeof(sp->unwind), "%s", unwind);
	sp->dwarf = strcmp(unwind, "fp") != 0;
	sp->icase = proto_bool(req, "icase", 0);
	if (when_compile(proto_str(req, "when", NULL), proto_bool(req, "when_from_file", 0),
			 sp->icase, &sp->when, rep))
		goto fail;
	if (sp->when) {
		sp->when_text = strdup(proto_str(req, "when", ""));
		sp->when_from_file = proto_bool(req, "when_from_file", 0);
		if (!sp->when_text) {
			*rep = proto_error(1, "out of memory");
			goto fail;
		}
	}
	if (sample_set_criticals(sp, cJSON_GetObjectItemCaseSensitive(req, "critical"), rep) ||
	    sample_set_slices(sp, req, rep))
		goto fail;
	sp->flags = (sp->kernel ? PCMON_TF_KERNEL : 0) | (sp->real ? PCMON_TF_REAL : 0) |
		    (sp->dwarf ? PCMON_TF_DWARF : 0) | (sp->python ? PCMON_TF_PYTHON : 0);
	*out = sp;
	return 0;
fail:
	sample_free(sp);
	return -EINVAL;
}

/* BPF's view of the target: the target's flags and sampling's. */
static int configure(struct sample_g *g, struct target *t, struct sample *sp)
{
	struct pcmon_tcfg cfg = {
		.flags = t->flags | sp->flags,
		.owner = t->owner,
		.period_ns = sp->period_ns,
		.slice_ns = sample_slice_len(sp),
	};

	return procs_target_set(g->env.procs, t->id, &cfg);
}

static void release(struct sample_g *g, struct sample *sp)
{
	if (sp->holds_period)
		sampler_period_put(g->smp, sp->period_ns);
	if (sp->holds_offcpu)
		sampler_offcpu_put(g->smp);
	sp->holds_period = sp->holds_offcpu = false;
}

int sample_attach_target(void *gp, struct target *t, void *st, cJSON **rep)
{
	struct sample_g *g = gp;
	struct sample *sp = st;
	uint32_t epoch;
	char err[256];
	int r;

	if (attach_probes(g, t, rep))
		return -1;
	r = sampler_period_get(g->smp, sp->period_ns, err, sizeof(err));
	if (r) {
		*rep = proto_error(1, "%s", err);
		return r;
	}
	sp->holds_period = true;
	g->first_drain = true;
	/*
	 * (a dwarf target's stacks that BPF walks with CFI tables come by it too, and so do the
	 * kernel frames of a kernel thread: it has no user stack to copy, so its samples are
	 * counted in BPF whatever --unwind says)
	 */
	r = !sp->dwarf || sp->real || sp->kernel || g->cfi ?
		    sampler_stacks_get(g->smp, err, sizeof(err)) : 0;
	if (r) {
		*rep = proto_error(1, "%s", err);
		release(g, sp);
		return r;
	}
	if (sp->real) {
		r = sampler_offcpu_get(g->smp, err, sizeof(err));
		if (r) {
			*rep = proto_error(1, "%s", err);
			release(g, sp);
			return r;
		}
		sp->holds_offcpu = true;
	}
	/*
	 * A process that runs already (not one launched, waiting for its exec): its stacks
	 * walked in BPF from its first sample, its tables compiled before BPF samples it. It
	 * joins the target after this, as image 0 (procs_proc_add()).
	 */
	if (sp->dwarf && t->kind == TARGET_PID && t->pid && t->exe_fd < 0) {
		if (procs_proc_epoch(g->env.procs, t->pid, &epoch))
			epoch = 0;
		cfitab_list(g->cfi, t->pid, epoch, false, now_ns());
	}
	procs_tstat(g->env.procs, t->id, &sp->lost_base);
	r = configure(g, t, sp);
	if (r) {
		*rep = proto_error(1, "cannot register the target with BPF: %s", strerror(-r));
		release(g, sp);
	}
	return r;
}

void sample_attach_set_active(void *g, struct target *t, void *st, bool active)
{
	(void)active; /* t->flags says it */
	configure(g, t, st);
}

/* The drop counters BPF keeps for the target, since it was started or zeroed. */
void sample_attach_lost(struct sample_g *g, const struct target *t, struct sample *sp)
{
	struct pcmon_tstat now;

	if (!sp->holds_period)
		return; /* released: the BPF counters belong to nobody now */
	procs_tstat(g->env.procs, t->id, &now);
#define SINCE_BASE(f, since, drop, name) sp->lost.f = now.f - sp->lost_base.f;
	PCMON_TSTAT_FIELDS(SINCE_BASE)
#undef SINCE_BASE
}

void sample_attach_stop(void *gp, struct target *t, void *st)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	if (sp->holds_period)
		configure(g, t, sp); /* t->flags: no longer active */
	sample_attach_lost(g, t, sp);
	release(g, sp);
}

void sample_attach_zero(void *gp, struct target *t, void *st)
{
	struct sample_g *g = gp;
	struct sample *sp = st;

	agg_zero(sp->agg);
	if (sp->tails)
		tails_zero(sp->tails);
	slices_zero(sp->slices);
	sp->slices_lost = 0;
#define ZERO_COUNT(f, key, need, drop, name) sp->f = 0;
	SAMPLE_COUNT_FIELDS(ZERO_COUNT)
#undef ZERO_COUNT
	memset(&sp->lost, 0, sizeof(sp->lost));
	if (sp->holds_period)
		procs_tstat(g->env.procs, t->id, &sp->lost_base);
}
