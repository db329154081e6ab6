// SPDX-License-Identifier: GPL-2.0-only
#include <math.h>
#include <stdlib.h>

#include "diffstat.h"

struct wr {
	double r, w;
};

static int by_ratio(const void *x, const void *y)
{
	const struct wr *a = x, *b = y;

	return a->r < b->r ? -1 : a->r > b->r;
}

double dstat_scale(const double *a, const double *b, size_t n, double ta, double tb)
{
	struct wr *v = malloc((n + 1) * sizeof(*v));
	double total = 0, acc = 0, s = ta > 0 ? tb / ta : 1;
	size_t m = 0;

	if (!v)
		return s;
	for (size_t i = 0; i < n; i++)
		if (a[i] > 0 && b[i] > 0) {
			v[m++] = (struct wr){ b[i] / a[i], a[i] + b[i] };
			total += a[i] + b[i];
		}
	if (m) {
		qsort(v, m, sizeof(*v), by_ratio);
		/* the weighted median: the first ratio at which half the weight is reached */
		for (size_t i = 0; i < m; i++) {
			acc += v[i].w;
			if (acc >= total / 2) {
				s = v[i].r;
				break;
			}
		}
	}
	free(v);
	return s;
}

void dstat_test(struct dstat *r, double scale)
{
	double n = r->a + r->b, p = scale / (1 + scale), mean = n * p;
	double sd = sqrt(n * p * (1 - p)), d = fabs(r->b - mean);

	r->z = 0;
	r->p = 1;
	if (n <= 0 || sd <= 0)
		return;
	d = d > 0.5 ? d - 0.5 : 0; /* continuity correction */
	r->z = (r->b >= mean ? d : -d) / sd;
	r->p = erfc(fabs(r->z) / sqrt(2));
}

static int by_p(const void *x, const void *y)
{
	const struct dstat *a = *(struct dstat *const *)x, *b = *(struct dstat *const *)y;

	return a->p < b->p ? -1 : a->p > b->p;
}

void dstat_holm(struct dstat **rows, size_t n, double alpha)
{
	double run = 0;

	qsort(rows, n, sizeof(*rows), by_p);
	/* the i-th smallest p is multiplied by n - i; adjusted values never decrease */
	for (size_t i = 0; i < n; i++) {
		double q = rows[i]->p * (double)(n - i);

		run = fmax(run, fmin(q, 1));
		rows[i]->p_adj = run;
		rows[i]->sig = run < alpha;
	}
}
