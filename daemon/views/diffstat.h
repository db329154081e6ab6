/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dstat_: which procedures changed between two profiles, beyond noise (pcmon diff,
 * docs/diff.md). Pure arithmetic over counts, shared by the CLI and the unit tests.
 *
 * A procedure counted a samples in A and b in B. Given n = a + b, b is binomial over n
 * draws with p0 = s / (1 + s), where s is what B should count for each sample of A if the
 * procedure did not change. What "did not change" means is the model:
 *
 *   DSTAT_SAMPLE  the same share of the samples: s = TB / TA. With both totals fixed the
 *                 exact law is hypergeometric: its variance is the binomial's times
 *                 (N - n) / (N - 1) (N = TA + TB), and a set of samples in more than half
 *                 of them is tested through the samples it is not in.
 *   DSTAT_SECOND  the same CPU seconds per second of each side: s is the ratio of the
 *                 sides' lengths over the ratio of their sampling periods.
 *   DSTAT_RUN     the same CPU seconds in all (two runs of one fixed amount of work):
 *                 s is the inverse ratio of the periods.
 *   DSTAT_AUTO    of those the sides allow, the one whose s is nearest the procedures'
 *                 median B/A (each procedure counted 20 times or more once, however
 *                 large: what did not change decides, not one that did); another than
 *                 DSTAT_SAMPLE only if nearer by two standard errors of that median.
 *
 * s is never estimated from the procedures' counts, so that one procedure, however large,
 * cannot be the yardstick of its own change. Counts vary more than Poisson when the
 * program does (load, phases, requests), and the tests are widened by what the sides say
 * of it. From each side's time slices when there are enough of them: how each procedure's
 * count spreads over the slices beyond Poisson, fitted as phi0 times Poisson plus (with
 * DSTAT_SPREAD_SLICES a side) a relative spread sigma of its count in a slice (a large
 * procedure moves by a share of itself, not by a multiple of its square root), at the
 * fit's upper 85 % bound; a procedure that starts or stops within a side is set aside
 * first (its slices' totals taken without it), one far beyond the others' fit left out of
 * it, and both tested with their own spread where that is larger. Else from the
 * procedures themselves: their log B/A's spread about the median one (a few that changed,
 * or all moving together, do not make it). A test's variance is the binomial's times its
 * widening k, never less than Poisson. The tests are exact (the binomial's tails,
 * continuous in the counts divided by k: the two-sided p of the outcomes no likelier than
 * the one seen). Tests of the same samples (a wrapper and what it wraps) are one test; the
 * family is held at level alpha by Holm's step-down correction. A frame in at least
 * DSTAT_WHOLE of both sides' samples is the program itself: it is not tested (its change
 * is what is not under it, tested there).
 */
#ifndef PCMON_DIFFSTAT_H
#define PCMON_DIFFSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dstat_model { DSTAT_SAMPLE, DSTAT_SECOND, DSTAT_RUN, DSTAT_AUTO };
#define DSTAT_MODELS 3

/* the fewest samples a side may have */
#define DSTAT_MIN_SAMPLES 100
/* a frame in this share of both sides' samples is not tested */
#define DSTAT_WHOLE 0.95
/* the slices (merged to 50 samples each) a side needs to tell its dispersion */
#define DSTAT_SIDE_SLICES 2
/* the slices' degrees of freedom that make their dispersion the one taken */
#define DSTAT_SLICES_DF 4
/* the slices a side needs for a spread growing with a procedure's count */
#define DSTAT_SPREAD_SLICES 4
/* the procedures (expected 5 times on each side) that make theirs */
#define DSTAT_PROCS_MIN 5

/* One test: a set of samples, counted in A and in B. */
struct dstat_test {
	double a, b;		/* the counts tested (the complement's when .complement) */
	uint64_t set;		/* which samples: a sum of their hashes */
	bool complement;	/* tested through the samples not in the set */
	double f;		/* the finite-population factor (1: none) */
	uint32_t row;		/* the procedure whose shallow counts it tests, DSTAT_NO_ID */
	double k;		/* the variance's widening: f, dispersion and spread */
	double z;		/* the Pearson residual, widened; > 0: more in B */
	double p, p_adj;	/* two-sided exact p; Holm-adjusted */
	bool tested;		/* in the family: some frame not whole tests it */
	bool sig;		/* p_adj < alpha */
	bool pooled;		/* a procedure's shallow test: its residual tells the dispersion */
};

/* The change of a set of samples, for reading: points of share and B/A against the model,
 * each with its interval at d->level. */
struct dstat_effect {
	double pp, pp_lo, pp_hi;	/* B's share minus A's, in points */
	double ratio, lo, hi;		/* (b / a) / s; INFINITY: only in B */
};

struct dstat_row {
	double a_sh, b_sh, a_dp, b_dp;	/* shallow (leaf) and deep counts */
	int sh, dp;			/* their tests (index into tests), -1: none */
	bool whole;			/* in >= DSTAT_WHOLE of both sides: not tested */
	bool sig;			/* a test of it is beyond noise */
	int dir;			/* +1 grew, -1 shrank, 0 neither */
	int by;				/* the test that says so: 0 shallow, 1 deep */
	struct dstat_effect eff[2];	/* of the shallow and the deep counts */
	double key;			/* the order: beyond noise first, then by effect */
};

/* Time slices of one side (its timeline): counts of nrows procedures (shallow; a last row
 * may count what the others do not) in ncols slices of secs[col] seconds. */
struct dstat_slices {
	const double *counts;	/* [row * ncols + col] */
	const double *secs;	/* [col] */
	size_t nrows, ncols;
	const uint32_t *ids;	/* each row's procedure id, DSTAT_NO_ID: none; or NULL */
};
#define DSTAT_NO_ID UINT32_MAX

struct dstat_side {
	double total;		/* samples */
	double period_ns;	/* 0: not known */
	double seconds;		/* the time it covers; 0: not known */
	uint64_t nsamples;	/* stacks added */
	size_t nslices;		/* its slices, merged as dstat_add_slices() does */
};

/* One procedure's spread over one side's slices: Pearson's statistic over its degrees of
 * freedom, and its mean count per slice. */
struct dstat_point {
	double y, m, df;
	uint32_t id;		/* its procedure, DSTAT_NO_ID: not one */
	bool aside;		/* set aside with its side's slices: far beyond the others */
	bool out;		/* moved within its side beyond the rest: left out of the fit */
};

/* Where the procedures' median B/A sits against a model (DSTAT_AUTO). */
struct dstat_try {
	bool done;		/* the sides allow it */
	double off;		/* the median B/A of the procedures over the model's s */
};

struct dstat {
	enum dstat_model asked;	/* DSTAT_AUTO: chosen */
	enum dstat_model model;	/* the one the results are of */
	double alpha;		/* the family's level */
	double level;		/* the intervals' (0: none: simulations) */
	double phi_fixed;	/* > 0: the dispersion taken as it is (unit tests) */
	struct dstat_side side[2];
	struct dstat_row *rows;	/* by procedure id, as the caller numbers them */
	size_t nrows, cap;
	struct dstat_test *tests;
	size_t ntests, cap_tests;
	/* results */
	struct dstat_try tries[DSTAT_MODELS];
	double bulk, bulk_se;	/* (DSTAT_AUTO) the procedures' median B/A, its standard
				 * error as a factor; 0: too few procedures */
	size_t nbulk;		/* procedures it is the median of */
	double scale;		/* s */
	double phi;		/* times Poisson, >= 1 */
	double sigma2;		/* the relative spread per slice, squared (DSTAT_SLICES) */
	bool spread;		/* the slices could tell it (DSTAT_SPREAD_SLICES a side) */
	enum dstat_from { DSTAT_POISSON, DSTAT_SLICES, DSTAT_PROCS, DSTAT_FIXED } phi_from;
	double phi_procs;	/* from the procedures; 0: too few */
	double df;		/* the slices' degrees of freedom */
	size_t nslices;		/* slices they came from */
	size_t nout;		/* procedures left out of the fit: they moved within a side */
	size_t npooled;		/* procedures the residuals came from */
	size_t family;		/* distinct tests corrected together */
	struct dstat_effect total; /* B/A of all samples against s */
	/* building */
	struct dstat_point *pts[2];	/* the slices' spread: at a constant share, rate */
	size_t npts[2], cap_pts[2];
	uint64_t *set_sh, *set_dp;	/* per row */
	double *own;			/* per row: its own dispersion, 0: the fit's */
	size_t cap_own;
	uint32_t *seen;
	size_t cap_seen, cap_sh, cap_dp;
};

void dstat_init(struct dstat *d, enum dstat_model model, double alpha);
void dstat_free(struct dstat *d);
/* One stack of side @k, counted @count times: procedure ids @ids[0..n-1], root first.
 * Its leaf counts shallow, each procedure on it once deep. 0 or -ENOMEM. */
int dstat_add(struct dstat *d, int k, double count, const uint32_t *ids, int n);
/* Side @k's slices, for the dispersion. */
void dstat_add_slices(struct dstat *d, int k, const struct dstat_slices *sl);
/* 0, or -EINVAL with why the sides cannot be compared in @err (side "A" or "B" named
 * first): too few samples, or what the model asked needs is not known. */
int dstat_check(const struct dstat *d, char *err, size_t len);
/* The tests, the dispersion, the correction, the effects. 0, -ENOMEM, or -EINVAL where
 * dstat_check() says why. */
int dstat_run(struct dstat *d);
/* d->rows' indices in the order to print (@order has d->nrows places): beyond noise
 * first, each part by effect; how many. */
size_t dstat_order(const struct dstat *d, size_t *order);
/* The model's name (as --per takes it) and what it holds the same. */
const char *dstat_model_name(enum dstat_model m);
const char *dstat_model_text(enum dstat_model m);
int dstat_model_parse(const char *s, enum dstat_model *m);

/* The pieces, for the unit tests. */
/* Regularized incomplete beta I_x(a, b). */
double dstat_ibeta(double a, double b, double x);
/* Two-sided exact p of x successes of n at p0: the outcomes no likelier than x (x, n
 * real: the binomial's continuous extension; @integer: whole outcomes only). */
double dstat_binom_p(double x, double n, double p0, bool integer);
/* Holm's correction of @n tests at level @alpha: p_adj and sig of each. */
void dstat_holm(struct dstat_test **t, size_t n, double alpha);

#endif
