// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

#include "format.h"
#include "proto.h"
#include "util.h"

static double num(const cJSON *o, const char *k)
{
	return proto_num(o, k, 0);
}

/*
 * A string of a reply, fit for the terminal: names come from other people's processes and
 * binaries, and a control character in one must not reach the reader's terminal. Each call
 * has a buffer of its own among a few, so that one printf() can take several.
 */
static const char *str(const cJSON *o, const char *k, const char *def)
{
	static char bufs[6][1024];
	static unsigned next;
	char *b = bufs[next++ % 6];

	return str_escape(proto_str(o, k, def), b, sizeof(bufs[0]));
}

static double pct(double a, double b)
{
	return b > 0 ? 100.0 * a / b : 0;
}

void fmt_state(char *buf, size_t len, const cJSON *t)
{
	const char *state = proto_str(t, "state", "?");
	const cJSON *ws = cJSON_GetObjectItemCaseSensitive(t, "wait_status");

	if (!strcmp(state, "exited") && cJSON_IsNumber(ws)) {
		int st = ws->valueint;
		const char *sig = WIFSIGNALED(st) ? sigabbrev_np(WTERMSIG(st)) : NULL;

		if (sig)
			snprintf(buf, len, "killed by SIG%s", sig);
		else if (WIFSIGNALED(st))
			snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
		else
			snprintf(buf, len, "exited %d", WEXITSTATUS(st));
	} else {
		snprintf(buf, len, "%s", state);
	}
}

static void table(FILE *f, const cJSON *procs, const cJSON *order, double counted, int by_deep,
		  long top)
{
	const cJSON *it;
	long shown = 0;

	fprintf(f, "\n%s\n shallow      %%     deep      %%  procedure\n",
		by_deep ? "by deep count (samples with the procedure anywhere on the stack):"
			: "by shallow count (samples with the procedure running):");
	cJSON_ArrayForEach(it, (by_deep ? order : procs)) {
		const cJSON *p = by_deep ? cJSON_GetArrayItem(procs, it->valueint) : it;
		double sh = num(p, "shallow"), dp = num(p, "deep");

		if (!p || (!by_deep && !sh))
			continue;
		if (top && shown++ >= top)
			break;
		fprintf(f, "%8.0f %5.1f%% %8.0f %5.1f%%  %s\n", sh, pct(sh, counted), dp,
			pct(dp, counted), str(p, "procedure", "?"));
	}
}

/*
 * A group's table (list --by): as table(), with the percentages of the group's counted
 * samples (@counted) and of the listing's (@all).
 */
static void group_table(FILE *f, const cJSON *procs, const cJSON *order, double counted,
			double all, int by_deep, long top)
{
	const cJSON *it;
	long shown = 0;

	fprintf(f, "%s\n shallow      %%   %%all     deep      %%   %%all  procedure\n",
		by_deep ? " by deep count (% of the group's samples, %all of all):"
			: " by shallow count (% of the group's samples, %all of all):");
	cJSON_ArrayForEach(it, (by_deep ? order : procs)) {
		const cJSON *p = by_deep ? cJSON_GetArrayItem(procs, it->valueint) : it;
		double sh = num(p, "shallow"), dp = num(p, "deep");

		if (!p || (!by_deep && !sh))
			continue;
		if (top && shown++ >= top)
			break;
		fprintf(f, "%8.0f %5.1f%% %5.1f%% %8.0f %5.1f%% %5.1f%%  %s\n", sh,
			pct(sh, counted), pct(sh, all), dp, pct(dp, counted), pct(dp, all),
			str(p, "procedure", "?"));
	}
}

/*
 * list --by: each group, by share, with its counted samples and their share of the listing's,
 * then its procedures: "comm NAME", "process PID NAME", "thread TID NAME (pid PID)",
 * "cgroup PATH". --top N: the first N groups, N rows of each table.
 */
static void groups(FILE *f, const cJSON *gs, double all, const struct list_view *v)
{
	int both = !v->shallow && !v->deep;
	const cJSON *g;
	long shown = 0;

	if (!cJSON_GetArraySize(gs))
		fprintf(f, "\nno counted samples: no groups\n");
	cJSON_ArrayForEach(g, gs) {
		const char *by = str(g, "by", "?"), *name = str(g, "name", "");
		const cJSON *procs = cJSON_GetObjectItemCaseSensitive(g, "procedures");
		const cJSON *order = cJSON_GetObjectItemCaseSensitive(g, "deep_order");
		double counted = num(g, "counted"), np = num(g, "processes");

		if (v->top && shown++ >= v->top) {
			long more = (long)cJSON_GetArraySize(gs) - v->top;

			fprintf(f, "\n(%ld group%s more, left out by --top)\n", more,
				more == 1 ? "" : "s");
			break;
		}
		fprintf(f, "\n%s", by);
		if (!strcmp(by, "process") || !strcmp(by, "thread"))
			fprintf(f, " %.0f", num(g, !strcmp(by, "thread") ? "tid" : "pid"));
		fprintf(f, " %s", name[0] ? name : "?");
		if (!strcmp(by, "thread"))
			fprintf(f, " (pid %.0f)", num(g, "pid"));
		fprintf(f, ": %.0f counted (%.1f%%)", counted, pct(counted, all));
		if (!strcmp(by, "comm") || !strcmp(by, "cgroup"))
			fprintf(f, ", %.0f process%s", np, np == 1 ? "" : "es");
		fputc('\n', f);
		if (both || v->shallow)
			group_table(f, procs, NULL, counted, all, 0, v->top);
		if (both)
			fputc('\n', f);
		if (both || v->deep)
			group_table(f, procs, order, counted, all, 1, v->top);
	}
}

/* A time in ns, in the unit that reads best. */
static void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.3fs", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.3fms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.2fus", ns / 1e3);
	else
		snprintf(buf, len, "%.0fns", ns);
}

/* A column of a table for people: the reply's key, its heading, its width, how it reads. */
enum col_kind { COL_COUNT, COL_NS, COL_PCT };
struct col {
	const char *key, *head;
	int width;
	enum col_kind kind;
};

/* The headings of @n columns, each after a space. */
static void col_heads(FILE *f, const struct col *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %*s", c[i].width, c[i].head);
}

/* The values of @o in @n columns, each after a space. */
static void col_values(FILE *f, const struct col *c, size_t n, const cJSON *o)
{
	char buf[24];

	for (size_t i = 0; i < n; i++) {
		double v = num(o, c[i].key);

		if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, c[i].key))) {
			fprintf(f, " %*s", c[i].width, "-"); /* not known (a window's maximum) */
		} else if (c[i].kind == COL_NS) {
			fmt_ns(buf, sizeof(buf), v);
			fprintf(f, " %*s", c[i].width, buf);
		} else if (c[i].kind == COL_PCT) {
			fprintf(f, " %*.2f%%", c[i].width - 1, v);
		} else {
			fprintf(f, " %*.0f", c[i].width, v);
		}
	}
}

/* The call table's columns after calls, which carries the row's mark. */
static const struct col call_cols[] = {
	{ "self_ns", "self", 11, COL_NS },	{ "total_ns", "total", 11, COL_NS },
	{ "avg_ns", "avg", 11, COL_NS },	{ "max_ns", "max", 11, COL_NS },
	{ "open", "open", 6, COL_COUNT },	{ "unwound", "unwound", 7, COL_COUNT },
	{ "exited", "exited", 6, COL_COUNT },	{ "probes_ns", "probes", 11, COL_NS },
};

/*
 * A time of the call table: itself, or below its error "<ERR" (below resolution); with
 * an error above a hundredth of it, "~" before it.
 */
static void call_time(char *buf, size_t len, const cJSON *o, const char *key)
{
	char err_key[32], v[24];
	double t = num(o, key), err;

	snprintf(err_key, sizeof(err_key), "%.*s_err_ns", (int)strlen(key) - 3, key);
	err = num(o, err_key);
	if (t < err) {
		fmt_ns(v, sizeof(v), err);
		snprintf(buf, len, "<%s", v);
	} else {
		fmt_ns(v, sizeof(v), t);
		snprintf(buf, len, "%s%s", err > t / 100 ? "~" : "", v);
	}
}

/* A row of the call table: @mark, the calls, the columns, the name. */
static void call_row(FILE *f, const char *mark, const cJSON *o, const char *name)
{
	char buf[32];

	fprintf(f, "%s%9.0f", mark, num(o, "calls"));
	for (size_t i = 0; i < ARRAY_SIZE(call_cols); i++) {
		const struct col *c = &call_cols[i];

		if (c->kind == COL_NS && cJSON_GetObjectItemCaseSensitive(o, c->key) &&
		    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, c->key)) &&
		    strcmp(c->key, "probes_ns")) {
			call_time(buf, sizeof(buf), o, c->key);
			fprintf(f, " %*s", c->width, buf);
		} else {
			col_values(f, c, 1, o);
		}
	}
	fprintf(f, " %s %s\n", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "swamped")) ? "!" : " ",
		name);
	if (num(o, "too_deep"))
		fprintf(f, "%10s %.0f calls deeper than the shadow stack: counted, not timed\n", "",
			num(o, "too_deep"));
}

/* The pattern the calls were classed by (docs/when.md, "At probes"), and how. */

/*
 * The lines under a table of @what ("calls", "legs") for the hypervisor's steal: the most
 * stolen in one row's time (in its error), and the most a row's error holds of what the
 * scheduler counted only after a probe read the clock (docs/count.md).
 */
static void steal_lines(FILE *f, const char *what, double stolen, double unplaced)
{
	char t[32];

	if (stolen > 0) {
		fmt_ns(t, sizeof(t), stolen);
		fprintf(f, "(the hypervisor stole up to %s of the %s' time from their CPUs: it is in the times, and in their error, as some may have been at the probes)\n",
			t, what);
	}
	if (unplaced > 0) {
		fmt_ns(t, sizeof(t), unplaced);
		fprintf(f, "(the hypervisor stole up to %s that the scheduler counted only after a probe had read the clock: which side of the probe it was on is not known, so it is in the error of the %s on both)\n",
			t, what);
	}
}
static void when_head(FILE *f, const cJSON *w)
{
	const char *why = proto_str(w, "why_walk", NULL) ? str(w, "why_walk", "") : NULL;

	fprintf(f, "when %s, from the %s", str(w, "pattern", "?"), str(w, "method", "?"));
	if (why)
		fprintf(f, " (%s)", why);
	fprintf(f, ": each row counts the calls whose stack matched at entry, the others apart\n");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "context_late")))
		fprintf(f, "! a procedure the pattern names was probed after its process had started: calls entered before may be classed wrong\n");
}

/*
 * The call table (docs/count.md): per procedure calls, self, self+children, average, max, and
 * what was closed other than by a return. '~' marks a procedure probed after its process
 * had started running it (a library found after the fact): calls before that are missing.
 */
void fmt_calls(FILE *f, const cJSON *rep)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(rep, "calls"), *it;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(c, "when");
	char total[24], sub[24];
	bool late = false, swamped = false, below = false;
	double stolen = 0, unplaced = 0;

	if (!c)
		return;
	fmt_ns(sub, sizeof(sub), num(c, "subtracted_ns"));
	fprintf(f, "\ncalls (%s time): probes subtracted, %s in all: a pair costs %.0f +- %.0f ns (%.0f of it inside the call; the return probe %.0f), %.0f +- %.0f ns stepped out of line (%.0f inside), measured on %.0f CPU(s)",
		str(c, "mode", "REAL"), sub, num(c, "probe_cost_ns"), num(c, "probe_cost_spread_ns"),
		num(c, "probe_cost_inner_ns"), num(c, "return_probe_cost_ns"),
		num(c, "stepped_probe_cost_ns"), num(c, "stepped_probe_cost_spread_ns"),
		num(c, "stepped_probe_cost_inner_ns"), num(c, "probe_cost_cpus"));
	if (cJSON_GetObjectItemCaseSensitive(c, "programs")) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(c, "programs");

		fmt_ns(total, sizeof(total), num(p, "run_time_ns"));
		fprintf(f, "; the probes' BPF ran %.0f times, %s (all targets)", num(p, "runs"), total);
	}
	fputc('\n', f);
	if (num(c, "clock_repairs") > 0)
		fprintf(f, "(a thread's switch onto a CPU went unseen %.0f time(s): %s)\n",
			num(c, "clock_repairs"),
			strcmp(str(c, "mode", "REAL"), "VIRTUAL") ?
			"its time preempted at probes there is not taken out" :
			"its CPU time then is the kernel's count, behind by at most a tick");
	fmt_window(f, c);
	if (cJSON_GetObjectItemCaseSensitive(c, "window"))
		fprintf(f, "(max and open are not kept by time: - in a window; nor are the calls that did not match)\n");
	if (w)
		when_head(f, w);
	fprintf(f, "\n%10s", "calls");
	col_heads(f, call_cols, ARRAY_SIZE(call_cols));
	fprintf(f, "   %s\n", "procedure");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(c, "procedures")) {
		bool l = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "attached_late"));
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(it, "not_matching");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(it, "unknown"), *ch;

		late |= l;
		swamped |= cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "swamped"));
		below |= cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(it, "below_resolution")) > 0;
		stolen = MAX(stolen, num(it, "stolen_ns"));
		unplaced = MAX(unplaced, num(it, "unplaced_steal_ns"));
		call_row(f, l ? "~" : " ", it, str(it, "procedure", "?"));
		cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(it, "charged_to")) {
			char to[600];

			snprintf(to, sizeof(to), "  charged to %s", str(ch, "procedure", "?"));
			call_row(f, " ", ch, to);
		}
		if (o)
			call_row(f, " ", o, "  (not matching)");
		if (u && num(u, "calls"))
			call_row(f, "?", u, "  (could not tell)");
	}
	if (late)
		fprintf(f, "~ probed after its process had started running it: earlier calls are not counted\n");
	if (below)
		fprintf(f, "<T below resolution: less than the error T the probes' spread makes of its hits; ~T: T give or take more than 1 %%\n");
	steal_lines(f, "calls", stolen, unplaced + num(c, "unplaced_steal_ns"));
	if (swamped)
		fprintf(f, "! the probes cost more than the code they time (see \"probes\"): for its time, sampling's shallow and deep shares of the same procedure, or fewer probes (--when, or count its caller alone)\n");
	if (w && num(w, "unknown_calls"))
		fprintf(f, "? calls whose stack could not be told; see \"unknown_by_reason\" (--json)\n");
	if (proto_str(c, "list_when", NULL))
		fprintf(f, "--when: %s\n", str(c, "list_when", ""));
	int k = 0;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(c, "unmatched")) {
		const cJSON *near = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c, "unmatched_near"), k++), *x;
		const char *sep = " (near: ";

		if (!cJSON_IsString(it))
			continue;
		fprintf(f, "no procedure matched %s in the %.0f objects searched", it->valuestring,
			num(c, "objects_searched"));
		cJSON_ArrayForEach(x, near) {
			char esc[256];

			fprintf(f, "%s%s", sep, cJSON_IsString(x) ? str_escape(x->valuestring, esc, sizeof(esc)) : "?");
			sep = ", ";
		}
		fprintf(f, "%s\n", strcmp(sep, ", ") ? "" : ")");
	}
}

/* The window a listing was asked for, and what the slices taken cover. */
void fmt_window(FILE *f, const cJSON *rep)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(rep, "window");
	char a[32], b[32];

	if (!w)
		return;
	if (!num(w, "slices")) {
		fprintf(f, "window: no time slice in it\n");
		return;
	}
	clock_text(a, sizeof(a), num(w, "from"));
	clock_text(b, sizeof(b), num(w, "to"));
	fprintf(f, "window: %s to %s, %.0f slice(s)%s\n", a, b, num(w, "slices"),
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "cut")) ?
			" (the window cuts a slice: whole slices are listed)" : "");
}

/* Names a --proc or --when gave that no procedure of the target answers to: said. */
void fmt_unseen(FILE *f, const cJSON *arr, const char *opt)
{
	const cJSON *it, *x;

	cJSON_ArrayForEach(it, arr) {
		const char *sep = " (near: ";

		fprintf(f, "%s %s: no procedure of the target is named so", opt,
			proto_str(it, "name", "?"));
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(it, "near")) {
			fprintf(f, "%s%s", sep, x->valuestring);
			sep = ", ";
		}
		fprintf(f, "%s\n", strcmp(sep, ", ") ? "" : ")");
	}
}

void fmt_list(FILE *f, const cJSON *rep, const struct list_view *v)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(rep, "summary"), *c, *it;
	double counted = num(s, "counted"), interrupts = num(s, "interrupts");
	int real = !strcmp(str(t, "mode", ""), "REAL");
	char state[64], who[64] = "", timer[40] = "";
	const char *when = proto_str(s, "when", NULL);
	int both = !v->shallow && !v->deep;
	bool sections = false, declared = false, declared_before = false;

	fmt_state(state, sizeof(state), t);
	if (!strcmp(str(t, "kind", ""), "pid"))
		snprintf(who, sizeof(who), " pid %.0f", num(t, "pid"));
	else
		snprintf(who, sizeof(who), " %s", str(t, "kind", ""));
	/* (the timers' period, a few us off the interval: see docs/sampling.md) */
	if (num(t, "period_us") && num(t, "period_us") != num(t, "interval_us"))
		snprintf(timer, sizeof(timer), " (timer %.0fus)", num(t, "period_us"));
	fprintf(f, "pcmon: target %.0f \"%s\"%s, %s t=%.0fus%s, %.2f s, %s\n", num(t, "id"),
		str(t, "name", "?"), who, str(t, "mode", "?"), num(t, "interval_us"), timer,
		num(t, "elapsed_s"), state);
	fmt_window(f, rep);
	fprintf(f, "interrupts %.0f   counted %.0f (%.1f%%)", interrupts, counted,
		pct(counted, interrupts));
	if (when)
		fprintf(f, "   not matching WHEN %.0f", num(s, "not_matching"));

	fprintf(f, "\nforeignPcs %.0f (%.1f%%)   kernel-mode %.0f", num(s, "foreign"),
		pct(num(s, "foreign"), counted), num(s, "kernel_mode"));
	if (real)
		fprintf(f, "   off-CPU blocked %.0f runnable %.0f", num(s, "off_blocked"),
			num(s, "off_runnable"));
	fprintf(f, "   lost %.0f", num(s, "lost"));
	if (num(s, "handed_over"))
		fprintf(f, "   processes handed over to --pid targets %.0f", num(s, "handed_over"));
	if (num(s, "denied"))
		fprintf(f, "   denied %.0f (processes that became another's: setuid, not dumpable)",
			num(s, "denied"));
	if (num(s, "cut_short")) {
		const cJSON *x, *r = cJSON_GetObjectItemCaseSensitive(s, "cut_short_by_reason");
		const char *sep = ": ";

		fprintf(f, "\nstacks cut short %.0f (%.1f%%, their walked frames counted, outer frames missing",
			num(s, "cut_short"), pct(num(s, "cut_short"), counted));
		cJSON_ArrayForEach(x, r) {
			if (x->valuedouble) {
				fprintf(f, "%s%s %.0f", sep, x->string, x->valuedouble);
				sep = ", ";
			}
		}
		fputc(')', f);
	}
	if (num(s, "ticks_moved") || num(s, "ticks_dropped") || num(s, "ticks_unwatched"))
		fprintf(f, "\nlate ticks: %.0f given back to the thread that ran when they fired, "
			   "%.0f dropped (that thread was on a CPU again), %.0f not ours (that "
			   "thread is not watched)",
			num(s, "ticks_moved"), num(s, "ticks_dropped"), num(s, "ticks_unwatched"));
	if (num(s, "ticks_missed"))
		fprintf(f, "\nticks missed %.0f (%.1f%% of the ticks due: the kernel's timer fired "
			   "too late for them; no sample stands for their time)",
			num(s, "ticks_missed"),
			pct(num(s, "ticks_missed"), interrupts + num(s, "ticks_missed")));
	fputc('\n', f);
	c = cJSON_GetObjectItemCaseSensitive(s, "critical");
	/* only when it says something: a section declared (besides unwalkable), or a sample in one */
	cJSON_ArrayForEach(it, c)
		if (strcmp(str(it, "name", ""), "unwalkable") || num(it, "count"))
			sections = true;
	if (sections)
		fprintf(f, "critical sections:");
	cJSON_ArrayForEach(it, c) {
		const cJSON *r = cJSON_GetObjectItemCaseSensitive(it, "reasons"), *x;

		if (!sections)
			break;
		if (strcmp(str(it, "name", ""), "unwalkable"))
			declared = true;
		fprintf(f, "%s%s %.0f (%.1f%%)", declared_before ? "  " : " ", str(it, "name", "?"),
			num(it, "count"), pct(num(it, "count"), counted));
		declared_before = true;
		if (r && num(it, "count")) {
			const char *sep = " [";

			cJSON_ArrayForEach(x, r) {
				if (x->valuedouble) {
					fprintf(f, "%s%s %.0f", sep, x->string, x->valuedouble);
					sep = ", ";
				}
			}
			fputs("]", f);
		}
	}
	if (sections)
		fputc('\n', f);
	/* (marks pending matter only where a section could have been marked) */
	if (num(s, "marks_pending") && declared)
		fprintf(f, "critical marks pending %.0f (%.1f%%): taken before the probes of objects just loaded were attached; any may belong to a marked section\n",
			num(s, "marks_pending"), pct(num(s, "marks_pending"), counted));
	fmt_unseen(f, cJSON_GetObjectItemCaseSensitive(s, "when_unseen"), "--when");
	if (num(s, "debuginfod_pending") > 0)
		fprintf(f, "debuginfod: debug info of %.0f object(s) still downloading: names from it may be missing\n",
			num(s, "debuginfod_pending"));
	if (cJSON_GetObjectItemCaseSensitive(rep, "groups")) { /* --by: the tables per group */
		groups(f, cJSON_GetObjectItemCaseSensitive(rep, "groups"), counted, v);
		return;
	}
	if (both || v->shallow)
		table(f, cJSON_GetObjectItemCaseSensitive(rep, "procedures"), NULL, counted, 0, v->top);
	if (both || v->deep)
		table(f, cJSON_GetObjectItemCaseSensitive(rep, "procedures"),
		      cJSON_GetObjectItemCaseSensitive(rep, "deep_order"), counted, 1, v->top);
}

/* A histogram as bars, one line per non-empty bucket. */
static void fmt_hist(FILE *f, const cJSON *h, const char *unit)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(h, "buckets"), *it;
	bool log = !strcmp(str(h, "kind", ""), "log");
	double max = 1, scale = num(h, "scale"), base = num(h, "base");
	int i = 0;

	cJSON_ArrayForEach(it, b)
		max = it->valuedouble > max ? it->valuedouble : max;
	if (num(h, "underflow"))
		fprintf(f, "      %20s : %-10.0f (below %.0f)\n", "underflow", num(h, "underflow"), base);
	cJSON_ArrayForEach(it, b) {
		char range[64];
		int width = (int)(40 * it->valuedouble / max + 0.5);

		if (log)
			snprintf(range, sizeof(range), i ? "%.0f -> %.0f" : "0", i ? ldexp(1, i - 1) : 0,
				 ldexp(1, i) - 1);
		else
			snprintf(range, sizeof(range), "%.0f -> %.0f", base + i * scale,
				 base + (i + 1) * scale - 1);
		i++;
		if (!it->valuedouble)
			continue;
		fprintf(f, "      %20s : %-10.0f |%.*s%*s|\n", range, it->valuedouble, width,
			"****************************************", 40 - width, "");
	}
	if (num(h, "overflow"))
		fprintf(f, "      %20s : %-10.0f\n", "overflow", num(h, "overflow"));
	fprintf(f, "      (%s)\n", unit);
}

/* The legs table's columns after the leg's number, from and to. */
static const struct col leg_cols[] = {
	{ "count", "count", 10, COL_COUNT },	 { "total_ns", "total", 11, COL_NS },
	{ "avg_ns", "avg", 11, COL_NS },	 { "min_ns", "min", 11, COL_NS },
	{ "max_ns", "max", 11, COL_NS },	 { "percent_of_elapsed", "%", 7, COL_PCT },
	{ "abandoned", "abandoned", 9, COL_COUNT },
};

/* The Mesa tool's report (docs/legs.md): overhead, nodes, legs, histograms. */
void fmt_tables(FILE *f, const cJSON *rep)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "tables"), *o, *it;
	bool when = proto_str(t, "when", NULL) != NULL;
	char a[24], b[24];

	if (!t)
		return;
	o = cJSON_GetObjectItemCaseSensitive(t, "overhead");
	fmt_ns(a, sizeof(a), num(t, "elapsed_ns"));
	fmt_ns(b, sizeof(b), num(o, "total_ns"));
	fprintf(f, "\ntables: elapsed %s; probe overhead %s (%.0f hits x %.0f ns, %.2f%% of elapsed), subtracted from legs\n",
		a, b, num(o, "hits"), num(o, "per_hit_ns"), num(o, "percent_of_elapsed"));
	fmt_window(f, t);
	if (cJSON_GetObjectItemCaseSensitive(t, "window"))
		fprintf(f, "(min and max are not kept by time: - in a window; elapsed is the window's)\n");
	if (when) /* hits whose stack did not match are counted apart, and start no leg */
		fprintf(f, "when %s: a node's hits are those whose stack matched, legs start at those only\n",
			str(t, "when", "?"));
	fprintf(f, "\n  node %10s %8s", "hits", "cost");
	if (when)
		fprintf(f, " %12s", "not matching");
	fprintf(f, "  spec\n");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "nodes")) {
		fmt_ns(a, sizeof(a), num(it, "cost_ns"));
		fprintf(f, "  %4.0f %10.0f %8s", num(it, "id"), num(it, "hits"), a);
		if (when && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(it, "not_matching")))
			fprintf(f, " %12s", "-"); /* a window: not kept by time */
		else if (when)
			fprintf(f, " %12.0f", num(it, "not_matching") + num(it, "unknown"));
		fprintf(f, "  %s\n", str(it, "spec", "?"));
	}
	if (proto_str(t, "list_when", NULL))
		fprintf(f, "--when: %s\n", str(t, "list_when", ""));
	fprintf(f, "\n  leg   from   to");
	col_heads(f, leg_cols, ARRAY_SIZE(leg_cols));
	fputc('\n', f);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "legs")) {
		char from[8], to[8];

		snprintf(from, sizeof(from), num(it, "from") ? "%.0f" : "*", num(it, "from"));
		snprintf(to, sizeof(to), num(it, "to") ? "%.0f" : "*", num(it, "to"));
		fprintf(f, "%s %4.0f %6s %4s", num(it, "abandoned") ? "~" : " ", num(it, "id"),
			from, to);
		col_values(f, leg_cols, ARRAY_SIZE(leg_cols), it);
		fputc('\n', f);
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "nodes")) {
		if (cJSON_GetObjectItemCaseSensitive(it, "hist")) {
			fprintf(f, "\n  node %.0f, argument %.0f:\n", num(it, "id"), num(it, "arg"));
			fmt_hist(f, cJSON_GetObjectItemCaseSensitive(it, "hist"), "value");
		}
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "legs")) {
		if (cJSON_GetObjectItemCaseSensitive(it, "hist")) {
			fprintf(f, "\n  leg %.0f, time:\n", num(it, "id"));
			fmt_hist(f, cJSON_GetObjectItemCaseSensitive(it, "hist"), "ns");
		}
	}
	if (!strcmp(str(t, "track", "all"), "all"))
		fprintf(f, "legs tracked each on its own, per thread (--track all): nodes hit between a leg's from and to do not matter\n");
	else if (!strcmp(str(t, "track", ""), "successor"))
		fprintf(f, "legs from each thread's last node that starts one (--track successor)\n");
	else
		fprintf(f, "no leg is timed (--track none): nodes are only counted\n");
	fprintf(f, "times are net of the probe hits inside each leg (its from's after its clock reading, each hit between, its to's before)\n");
	fprintf(f, "~ legs started and never finished: a second from before the to, or the thread's exit\n");
	{
		double stolen = 0;

		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "legs"))
			stolen = MAX(stolen, num(it, "stolen_ns"));
		steal_lines(f, "legs", stolen, num(t, "unplaced_steal_ns"));
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(t, "legs"))
		if (num(it, "untracked"))
			fprintf(f, "! leg %.0f: %.0f starts not tracked (the table of legs in flight was full)\n",
				num(it, "id"), num(it, "untracked"));
}

/*
 * Each instrument's part of a listing after sampling's, from its key in the reply (absent:
 * nothing printed): the call table ("calls"), the probe-node tables ("tables"), the
 * allocations ("alloc").
 */
/* A tailed leg's figures (docs/tail.md): its instances, where they went, what was lost. */
static void fmt_tail_line(FILE *f, const cJSON *o)
{
	double n = num(o, "instances"), slow = num(o, "slow_instances");
	char thr[32], how[48];

	fmt_ns(thr, sizeof(thr), num(o, "threshold_ns"));
	if (proto_str(o, "threshold", NULL))
		snprintf(how, sizeof(how), "%s, now %s", str(o, "threshold", "?"), thr);
	else
		snprintf(how, sizeof(how), "%s", thr);
	fprintf(f, "leg %.0f at or above %s: %.0f of %.0f instances (%.2f%%), %.0f samples; body %.0f instances, %.0f samples; abandoned %.0f, %.0f samples\n",
		num(o, "leg"), how, slow, n, n ? 100 * slow / n : 0.0, num(o, "tail_samples"),
		num(o, "body_instances"), num(o, "body_samples"), num(o, "abandoned_instances"),
		num(o, "abandoned_samples"));
	if (num(o, "decided_early"))
		fprintf(f, "  %.0f instances decided before the percentile had %d (decided_early)\n",
			num(o, "decided_early"), 1000);
	if (num(o, "overflow_samples") || num(o, "unmatched_samples") || num(o, "lost_events"))
		fprintf(f, "  lost to the tails: %.0f samples over the memory held for open instances, %.0f never matched to one, %.0f events lost\n",
			num(o, "overflow_samples"), num(o, "unmatched_samples"), num(o, "lost_events"));
	if (num(o, "held_groups"))
		fprintf(f, "  %.0f groups of samples held for instances still open\n",
			num(o, "held_groups"));
}

/* The tails of a listing of the whole: a line each and the tail's hottest procedures. */
static void fmt_tails(FILE *f, const cJSON *rep)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(rep, "tail"), *it;

	if (o) { /* a tail's own listing */
		fprintf(f, "\n%s of ", str(o, "part", "tail"));
		fmt_tail_line(f, o);
		return;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "tails")) {
		int k = 0;
		const cJSON *p;

		fprintf(f, "\ntail of ");
		fmt_tail_line(f, it);
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(it, "procedures")) {
			if (k == 5 || !num(p, "shallow"))
				break; /* (by shallow count: the rest ran nothing themselves) */
			k++;
			fprintf(f, "  %8.0f %5.1f%%  %s\n", num(p, "shallow"), num(p, "shallow_pct"),
				str(p, "procedure", "?"));
		}
		if (k)
			fprintf(f, "  (pcmon list TARGET --tail %.0f: the whole tail)\n", num(it, "leg"));
	}
}

static void (*const sections[])(FILE *f, const cJSON *rep) = { fmt_calls, fmt_tables, fmt_alloc,
								fmt_tails };

void fmt_listing(FILE *f, const cJSON *rep, const struct list_view *v)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(rep, "target");
	char state[64];

	if (cJSON_GetObjectItemCaseSensitive(rep, "summary")) {
		fmt_list(f, rep, v);
	} else {
		fmt_state(state, sizeof(state), t);
		fprintf(f, "pcmon: target %.0f \"%s\" pid %.0f, %.2f s, %s\n", num(t, "id"),
			str(t, "name", "?"), num(t, "pid"), num(t, "elapsed_s"), state);
	}
	for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
		sections[i](f, rep);
}

void fmt_targets(FILE *f, const cJSON *rep)
{
	const cJSON *it;

	fprintf(f, "%4s  %-20s %-8s %-7s %-18s %10s %8s\n", "id", "name", "kind", "mode", "state",
		"samples", "lost");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "targets")) {
		/* the sampling's time, or what a target that does not sample carries */
		const char *mode = proto_str(it, "mode", NULL) ? str(it, "mode", "?")
				   : cJSON_GetObjectItemCaseSensitive(it, "count") ? "count"
				   : cJSON_GetObjectItemCaseSensitive(it, "nodes") ? "nodes" : "-";
		char state[64];

		fmt_state(state, sizeof(state), it);
		fprintf(f, "%4.0f  %-20s %-8s %-7s %-18s %10.0f %8.0f%s\n", num(it, "id"),
			str(it, "name", "?"), str(it, "kind", "?"), mode, state,
			num(it, "samples"), num(it, "lost"),
			proto_bool(it, "saved", 1) ? "" : "  UNSAVED");
	}
	/* the daemon could not write these to its state directory: say why */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "targets"))
		if (!proto_bool(it, "saved", 1))
			fprintf(f, "target %.0f is not saved: %s (retried every few seconds)\n",
				num(it, "id"), proto_str(it, "save_error", "?"));
}

/* status: what pcmond serves with: debuginfod, its socket, its state directory. */
static void status_services(FILE *f, const cJSON *rep)
{
	const cJSON *it, *st;

	it = cJSON_GetObjectItemCaseSensitive(rep, "debuginfod");
	if (it && proto_bool(it, "enabled", 0)) {
		fprintf(f, "debuginfod: %s, cache %s\n", proto_str(it, "urls", "?"),
			proto_str(it, "cache", "?"));
		fprintf(f, "  %.0f fetched, %.0f failed, %.0f pending; ", num(it, "fetched"),
			num(it, "failed"), num(it, "pending"));
		fprintf(f, "%.0f requests in %.1f ms, longest %.1f ms\n", num(it, "requests"),
			num(it, "fetch_ms_total"), num(it, "fetch_ms_max"));
		if (proto_str(it, "last_error", NULL))
			fprintf(f, "  last failure: %s\n", proto_str(it, "last_error", ""));
	} else if (it) {
		fprintf(f, "debuginfod: off (set DEBUGINFOD_URLS or pcmond --debuginfod)\n");
	}
	it = cJSON_GetObjectItemCaseSensitive(rep, "connections"); /* pcmond's socket */
	if (it)
		fprintf(f, "connections: %.0f of %.0f (%.0f kept for root, %.0f per user), "
			   "%.0f refused; closed: %.0f idle, %.0f half-sent, %.0f unread\n",
			num(it, "clients"), num(it, "max_clients"), num(it, "root_reserved"),
			num(it, "per_user"), num(it, "refused"), num(it, "idle_timeouts"),
			num(it, "request_timeouts"), num(it, "write_timeouts"));
	st = cJSON_GetObjectItemCaseSensitive(rep, "store");
	if (st) {
		fprintf(f, "state directory %s: %.0f saves, %.0f failed, %.0f target(s) unsaved\n",
			proto_str(st, "dir", "?"), num(st, "saves"), num(st, "save_failures"),
			num(st, "unsaved_targets"));
		if (proto_str(st, "last_error", NULL))
			fprintf(f, "last save error (%.0f s ago): %s\n", num(st, "last_error_age_s"),
				proto_str(st, "last_error", ""));
	}
}

/* status: per object how stacks were unwound; the BPF programs and what they cost. */
static void status_programs(FILE *f, const cJSON *rep)
{
	const cJSON *it;
	int w = 16;

	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rep, "objects"))) {
		fprintf(f, "\n%-6s %-13s %12s %10s  %s\n", "unwind", "cfi", "frames", "no cfi", "object");
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "objects"))
			fprintf(f, "%-6s %-13s %12.0f %10.0f  %s\n", str(it, "unwind", "?"),
				str(it, "cfi", "?"), num(it, "frames_unwound"),
				num(it, "frames_without_cfi"), str(it, "path", "?"));
	}
	/* the names' column as wide as the longest (on_dl_debug_state is 17) */
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "programs"))
		w = MAX(w, (int)strlen(str(it, "name", "?")));
	if (!proto_bool(rep, "bpf_stats", 0)) {
		fprintf(f, "\n%-*s %s\n", w, "BPF program", "attached");
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "programs"))
			fprintf(f, "%-*s %s\n", w, str(it, "name", "?"),
				proto_bool(it, "attached", 0) ? "yes" : "no");
		fprintf(f, "(runs and run time not counted: start pcmond with --bpf-stats)\n");
		return;
	}
	fprintf(f, "\n%-*s %-9s %12s %10s %12s\n", w, "BPF program", "attached", "runs", "avg ns",
		"total ms");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(rep, "programs")) {
		fprintf(f, "%-*s %-9s %12.0f %10.0f %12.3f\n", w, str(it, "name", "?"),
			proto_bool(it, "attached", 0) ? "yes" : "no", num(it, "runs"),
			num(it, "avg_ns"), num(it, "run_time_ns") / 1e6);
	}
}

void fmt_status(FILE *f, const cJSON *rep)
{
	const cJSON *sy = cJSON_GetObjectItemCaseSensitive(rep, "symbols"), *it;
	const char *how;

	fprintf(f, "pcmond %s, pid %.0f, up %.1f s, %.0f target(s)\n", str(rep, "version", "?"),
		num(rep, "pid"), num(rep, "uptime_s"), num(rep, "targets"));
	fprintf(f, "stacks up to %.0f frames, interval floor %.0f us\n", num(rep, "max_stack_depth"),
		num(rep, "min_interval_us"));
	if (num(rep, "ticks_missed"))
		fprintf(f, "timer ticks missed by the kernel (fired too late for): %.0f, on any thread\n",
			num(rep, "ticks_missed"));
	how = proto_str(rep, "blocked_stacks", NULL);
	if (how)
		fprintf(f, "REAL: blocked threads' stacks taken %s\n",
			!strcmp(how, "at_block")  ? "as they block" :
			!strcmp(how, "task_work") ? "by a task work as their calls return" :
						    "by sys_exit as their calls return");
	fprintf(f, "drains %.0f (%.1f ms in all, longest %.1f ms), %.0f entries, fullest %.0f of %.0f; process events lost %.0f\n",
		num(rep, "drains"), num(rep, "drain_ms_total"), num(rep, "drain_ms_max"),
		num(rep, "drained_entries"), num(rep, "drain_fill_max"), num(rep, "drain_capacity"),
		num(rep, "events_lost"));
	if (num(rep, "drains_late") > 0)
		fprintf(f, "drain BEHIND: %.0f drains found the counts map half full or more (samples are lost when it fills: see each target's lost)\n",
			num(rep, "drains_late"));
	fprintf(f, "symbols: %.0f objects, %.0f locations, %.0f procedures; address maps: %.0f held, %.0f let go, %.0f reads\n",
		num(sy, "modules"), num(sy, "locations"), num(sy, "procedures"), num(sy, "processes"),
		num(sy, "processes_forgotten"), num(sy, "maps_reads"));
	it = cJSON_GetObjectItemCaseSensitive(rep, "cfi_tables");
	/* (docs/stacks.md) */
	fprintf(f, "dwarf: %.0f samples walked in BPF, %.0f copied; %.0f unwound from copies in %.1f ms\n",
		num(rep, "cfi_walked"), num(rep, "cfi_copied"), num(rep, "dwarf_samples_unwound"),
		num(rep, "dwarf_unwind_ms_total"));
	if (it && num(it, "budget_kib") > 0)
		fprintf(f, "CFI tables: %.0f objects, %.0f rows, %.0f of %.0f KiB (%.0f objects past it, "
			"%.0f without .eh_frame), compiled in %.1f ms; %.0f process lists\n",
			num(it, "objects"), num(it, "rows"), num(it, "kib"), num(it, "budget_kib"),
			num(it, "objects_over_budget"), num(it, "objects_without"),
			num(it, "compile_ms_total"), num(it, "process_lists"));
	else if (it)
		fprintf(f, "CFI tables: none (pcmond --cfi-tables MiB walks dwarf stacks in BPF): every dwarf stack is copied\n");
	/* (docs/node.md) */
	fprintf(f, "JavaScript: %.0f frames named, %.0f not (flagged js), %.0f V8 processes read\n",
		num(rep, "js_frames_named"), num(rep, "js_frames_unnamed"), num(rep, "js_processes"));
	it = cJSON_GetObjectItemCaseSensitive(rep, "java");
	if (it && num(it, "jvms") > 0)
		fprintf(f, "java: %.0f JVMs, %.0f Java frames walked (%.0f compiled, %.0f methods inlined "
			"in them, %.0f interpreted, %.0f stubs), %.0f refused as stale, %.0f walks stopped "
			"at a Java frame\n",
			num(it, "jvms"), num(it, "frames"), num(it, "compiled"), num(it, "inlined"),
			num(it, "interpreted"), num(it, "stubs"), num(it, "stale"), num(it, "unwalked"));
	{
		const cJSON *l = cJSON_GetObjectItemCaseSensitive(rep, "limits");

		fprintf(f, "limits per user (root exempt): %.0f targets, %.0f MiB of results (%.0f targets are root's alone); yours: %.0f targets, %.1f MiB\n",
			num(l, "targets_per_user"), num(l, "memory_per_user_bytes") / 1048576,
			num(l, "targets_reserved_for_root"), num(l, "your_targets"),
			num(l, "your_memory_bytes") / 1048576);
	}
	it = cJSON_GetObjectItemCaseSensitive(rep, "critical_probes");
	fprintf(f, "critical-section probes: %.0f events, %.0f acknowledged, longest wait %.1f ms, %.0f files looked into\n",
		num(it, "events"), num(it, "acknowledged"), num(it, "lag_ms_max"),
		num(it, "objects_checked"));
	status_services(f, rep);
	status_programs(f, rep);
}
