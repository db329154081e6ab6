// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for daemon/store.c's loader: arbitrary bytes as a results file.
 *
 * A file that fails must say which field and leave nothing behind (no target, no location
 * in the symbol tables). A file that loads must list (agg_list, as `pcmon list` does) and
 * save again; what it saves must load and save to the same text: a restart neither loses
 * nor invents anything.
 *
 * Build: make .output/fuzz/fuzz_store (links store, target, agg, sym, pat, proto, util).
 * Seeds: tests/fuzz/corpus/store/, real state files of formats 1 and 2.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "sampler.h"
#include "store.h"
#include "sym.h"
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

/* target.c reads BPF drop counters through the sampler, which a loaded target never holds */
void sampler_tstat(struct sampler *s, uint32_t target, struct pcmon_tstat *sum)
{
	(void)s;
	(void)target;
	memset(sum, 0, sizeof(*sum));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_verbosity = LOG_ERR; /* rejected files warn: not here */
	return 0;
}

/* List the target the way `pcmon list` does, with its own WHEN and sections. */
static void list(const struct sym *s, const struct target *t)
{
	struct agg_list_opts lo = { .period_ns = t->period_ns, .when = t->when,
				    .kernel = t->kernel, .no_inline = t->no_inline };
	struct agg_critical *crit = NULL;
	struct agg_list l;
	cJSON *err = NULL, *out;
	size_t ncrit = 0;

	CHECK(!target_list_criticals(t, NULL, t->icase, &crit, &ncrit, &err));
	lo.crit = crit;
	lo.ncrit = ncrit;
	if (!agg_list(t->agg, s, &lo, &l)) {
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
			target_list_json(t, s, &l, t->when_text, crit, ncrit, out);
		cJSON_Delete(out);
		agg_list_free(&l);
	}
	target_free_criticals(t, crit, ncrit);
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
	CHECK(agg_count(t2->agg) == agg_count(t->agg));
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
