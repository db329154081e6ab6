/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * dstat_: is a procedure's change between two profiles beyond sampling noise (pcmon diff,
 * docs/diff.md)? Pure arithmetic, shared by the CLI and the unit tests.
 *
 * A procedure counted a samples in A and b in B. Samples are taken at random moments, so
 * each count is close to Poisson; given a + b, b is then binomial with p = s / (1 + s),
 * where s is how much more B sampled than A overall. s is not the ratio of the totals:
 * when one procedure grows, every other one's share shrinks, and a test of shares would
 * call them all changed. It is the weighted median of b / a over the procedures counted in
 * both (weight a + b): what most of the profile did. A procedure is changed when its b
 * is unlikely under that binomial (normal approximation with continuity correction,
 * two-sided), and the family of every test of one diff is held at level alpha by Holm's
 * step-down correction: the chance that a diff of two profiles of the same program calls
 * anything changed is at most alpha.
 */
#ifndef PCMON_DIFFSTAT_H
#define PCMON_DIFFSTAT_H

#include <stdbool.h>
#include <stddef.h>

struct dstat {
	double a, b;		/* counts in A and in B */
	double z;		/* > 0: more in B than the scale says */
	double p;		/* two-sided */
	double p_adj;		/* Holm-adjusted */
	bool sig;		/* p_adj < alpha */
};

/* The scale of B against A from @n pairs of counts (a[i], b[i]); @ta, @tb the totals,
 * used when no procedure is counted in both. */
double dstat_scale(const double *a, const double *b, size_t n, double ta, double tb);
/* One test: z and p of @r at @scale. */
void dstat_test(struct dstat *r, double scale);
/* Holm's correction of @n tests at level @alpha: p_adj and sig of each. */
void dstat_holm(struct dstat **rows, size_t n, double alpha);

#endif
