// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for daemon/engine/store.c's loader: arbitrary bytes as a results file.
 *
 * A file that fails must say which field and leave nothing behind (no target, no location
 * in the symbol tables). A file that loads must list (agg_list, as `pcmon list` does) and
 * save again; what it saves must load and save to the same text: a restart neither loses
 * nor invents anything.
 *
 * Build: make .output/fuzz/fuzz_store (links the engine: a file holds every instrument's part).
 * Seeds: tests/fuzz/corpus/store/, real state files of formats 1, 2 and 3.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "sample.h"
#include "store.h"
#include "sym.h"
#include "inst_table.h"
#include "target.h"
#include "util.h"

#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "fuzz_store: check failed at line %d: %s\n", __LINE__, \
				#cond);                                                        \
			abort();                                                               \
		}                                                                              \
	} while (0)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_verbosity = LOG_ERR; /* rejected files warn: not here */
	return 0;
}

/* List the target the way `pcmon list` does, with its own WHEN and sections. */
static void list(const struct sym *s, struct target *t)
{
	const struct sample *sp = sample_of(t);
	struct agg_list_opts lo = { .period_ns = sp->period_ns, .when = sp->when,
				    .kernel = sp->kernel, .no_inline = sp->no_inline };
	struct sample_listing ls = { .t = t, .sp = (struct sample *)sp, .when_text = sp->when_text };
	struct agg_critical *crit = NULL;
	struct agg_list l;
	cJSON *err = NULL, *out;
	size_t ncrit = 0;

	CHECK(!sample_list_criticals(sp, NULL, 0, sp->icase, &crit, &ncrit, &err));
	lo.crit = crit;
	lo.ncrit = ncrit;
	ls.crit = crit;
	ls.ncrit = ncrit;
	if (!agg_list(sp->agg, s, &lo, &l)) {
		uint64_t sum = l.foreign;

		for (size_t i = 0; i < l.nrows; i++)
			sum += l.rows[i].shallow;
		for (size_t i = 0; i < ncrit; i++)
			sum += l.crit[i];
		for (size_t i = 0; i < l.nmarked; i++)
			sum += l.marked[i].count;
		/* counted = sections + shallow + foreign (agg.h); stacks' counts may wrap only
		 * if the file's did, which the loader refuses */
		CHECK(l.interrupts == l.counted + l.not_matching);
		CHECK(sum + l.unwalk[AGG_WALK_OK] == l.counted);
		out = cJSON_CreateObject();
		if (out)
			sample_list_json(&ls, &l, s, out);
		cJSON_Delete(out);
		agg_list_free(&l);
	}
	sample_free_criticals(sp, crit, ncrit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym *s = sym_new(0), *s2 = NULL;
	struct target *t = NULL, *t2 = NULL;
	struct sym_stats before, after;
	char why[512], *a = NULL, *b = NULL;
	int r;

	if (!s)
		return 0;
	sym_stats(s, &before);
	r = store_parse((const char *)data, size, 0, s, &t, why, sizeof(why));
	if (r) {
		CHECK(r == -EINVAL || r == -ENOMEM);
		CHECK(!t && why[0]);
		sym_stats(s, &after);
		CHECK(r == -ENOMEM || (after.locs == before.locs && sym_nprocs(s) == 0));
		goto out;
	}
	CHECK(t && t->id > 0 && t->id < PCMON_MAX_TARGETS);
	CHECK(t->state != TARGET_RUNNING && t->state != TARGET_PAUSED);
	if (sample_of(t))
		list(s, t);

	a = store_render(s, t);
	CHECK(a);
	s2 = sym_new(0);
	CHECK(s2);
	r = store_parse(a, strlen(a), t->id, s2, &t2, why, sizeof(why));
	if (r) {
		fprintf(stderr, "fuzz_store: a saved file does not load: %s\n%s\n", why, a);
		abort();
	}
	CHECK(!sample_of(t) == !sample_of(t2));
	CHECK(!sample_of(t) || agg_count(sample_of(t2)->agg) == agg_count(sample_of(t)->agg));
	b = store_render(s2, t2);
	CHECK(b);
	if (strcmp(a, b)) {
		fprintf(stderr, "fuzz_store: saved twice, the files differ\n%s\n%s\n", a, b);
		abort();
	}
out:
	free(a);
	free(b);
	target_free(t);
	target_free(t2);
	sym_free(s);
	sym_free(s2);
	return 0;
}
