// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation table of a listing (the reply's "alloc", docs/alloc.md): totals with their
 * standard errors, what was counted apart, and the procedures by the bytes they hold live,
 * then by the bytes they allocated.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "proto.h"
#include "util.h"

static double num(const cJSON *o, const char *k)
{
	return proto_num(o, k, 0);
}

/* @v bytes as people read them: "512 B", "1.5 KiB", "3.2 MiB", "1.1 GiB" */
static const char *bytes(char *buf, size_t len, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (fabs(v) >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static void counted_apart(FILE *f, const cJSON *s)
{
	static const struct {
		const char *key, *what;
	} apart[] = {
		{ "ring_full", "sampled allocations or frees not sent: the ring was full" },
		{ "live_full", "sampled blocks not kept live: the table of live blocks was full (their frees unseen: live bytes overstated)" },
		{ "stack_errors", "sampled allocations without a stack (charged to no procedure)" },
		{ "records_lost", "sampled allocations the engine could not keep (out of memory)" },
		{ "frees_lost", "frees of sampled blocks whose allocation was not kept" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(apart); i++)
		if (num(s, apart[i].key))
			fprintf(f, "! %.0f %s\n", num(s, apart[i].key), apart[i].what);
}

void fmt_alloc(FILE *f, const cJSON *rep)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(rep, "alloc"), *s, *it;
	char b[4][32], name[1024];

	if (!a)
		return;
	s = cJSON_GetObjectItemCaseSensitive(a, "summary");
	fprintf(f, "\nallocations, sampled every %s allocated on average (± one standard error):\n",
		bytes(b[0], sizeof(b[0]), num(s, "rate_bytes")));
	if (cJSON_GetObjectItemCaseSensitive(a, "window")) {
		fmt_window(f, a);
		fprintf(f, "  (allocated: in the window; live: at its end)\n");
	}
	fprintf(f, "  allocated %s ± %s in %.0f blocks; live %s ± %s in %.0f blocks\n",
		bytes(b[0], sizeof(b[0]), num(s, "alloc_bytes")),
		bytes(b[1], sizeof(b[1]), num(s, "alloc_bytes_stderr")), num(s, "alloc_objects"),
		bytes(b[2], sizeof(b[2]), num(s, "inuse_bytes")),
		bytes(b[3], sizeof(b[3]), num(s, "inuse_bytes_stderr")), num(s, "inuse_objects"));
	fprintf(f, "  %.0f samples of %.0f allocation calls seen\n", num(s, "samples"),
		num(s, "calls"));
	if (proto_str(s, "not_applied", NULL))
		fprintf(f, "! %s does not apply to allocations yet: these are all of them\n",
			proto_str(s, "not_applied", ""));
	if (num(s, "slices_lost"))
		fprintf(f, "! %.0f sampled allocations or frees not kept by time (out of memory): windows miss them\n",
			num(s, "slices_lost"));
	counted_apart(f, s);
	if (proto_str(a, "procedures_not_saved", NULL)) {
		fprintf(f, "  (by procedure: not kept in results files yet)\n");
		return;
	}
	fprintf(f, "\nby %s, of the procedures that called the allocator (deep: with their callees'):\n",
		strcmp(proto_str(a, "sort", "inuse"), "alloc") ? "live bytes, then allocated bytes"
							       : "allocated bytes, then live bytes");
	fprintf(f, "%12s %10s %12s %10s %12s  %s\n", "live", "±", "allocated", "±", "deep alloc",
		"procedure");
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(a, "procedures")) {
		if (!num(it, "alloc_bytes") && !num(it, "inuse_bytes"))
			continue; /* (its callees' alone: in the JSON listing) */
		fprintf(f, "%12s %10s %12s %10s ", bytes(b[0], sizeof(b[0]), num(it, "inuse_bytes")),
			bytes(b[1], sizeof(b[1]), num(it, "inuse_bytes_stderr")),
			bytes(b[2], sizeof(b[2]), num(it, "alloc_bytes")),
			bytes(b[3], sizeof(b[3]), num(it, "alloc_bytes_stderr")));
		fprintf(f, "%12s  %s\n", bytes(b[0], sizeof(b[0]), num(it, "deep_alloc_bytes")),
			str_escape(proto_str(it, "procedure", "?"), name, sizeof(name)));
	}
}
