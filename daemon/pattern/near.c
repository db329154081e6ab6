// SPDX-License-Identifier: GPL-2.0-only
/* The names closest to one that matched nothing (near.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "near.h"
#include "util.h"

/* The part of @s a procedure's name is compared by: after its module, without glob tails. */
static const char *last_part(const char *s)
{
	const char *dot = strrchr(s, '.');

	/* (a C++ name's "::" and a file name's dots are its own: only a module's dot counts) */
	return dot && !strchr(dot, ':') && dot[1] ? dot + 1 : s;
}

/* Edit distance of @a and @b, case aside, or @cap + 1 if it is over @cap. */
static unsigned distance(const char *a, const char *b, unsigned cap)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[NEAR_NAME_MAX + 1];

	if (la >= NEAR_NAME_MAX || lb >= NEAR_NAME_MAX)
		return cap + 1;
	if ((la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0], low;

		row[0] = i;
		low = row[0];
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned sub = diag + (tolower((unsigned char)a[i - 1]) !=
					       tolower((unsigned char)b[j - 1]));

			row[j] = MIN(MIN(row[j - 1] + 1, up + 1), sub);
			diag = up;
			low = MIN(low, row[j]);
		}
		if (low > cap)
			return cap + 1;
	}
	return row[lb];
}

void near_init(struct near *nr, const char *want)
{
	memset(nr, 0, sizeof(*nr));
	snprintf(nr->want, sizeof(nr->want), "%s", last_part(want));
	nr->want[strcspn(nr->want, "*?[")] = '\0'; /* a glob: what comes before it */
}

void near_offer(struct near *nr, const char *name, const char *full)
{
	/* a third of the name's letters may differ; or the candidate holds it whole */
	unsigned cap = MAX(1u, (unsigned)strlen(nr->want) / 3), d;
	int at;

	if (!nr->want[0] || !name || !*name)
		return;
	d = strlen(nr->want) >= 3 && strcasestr(name, nr->want) ? 1 : distance(nr->want, name, cap);
	if (d > cap)
		return;
	for (int i = 0; i < nr->n; i++)
		if (!strcmp(nr->best[i], full))
			return;
	for (at = nr->n; at > 0 && nr->dist[at - 1] > d; at--)
		;
	if (at >= NEAR_MAX)
		return;
	if (nr->n < NEAR_MAX)
		nr->n++;
	memmove(&nr->best[at + 1], &nr->best[at], (nr->n - 1 - at) * sizeof(nr->best[0]));
	memmove(&nr->dist[at + 1], &nr->dist[at], (nr->n - 1 - at) * sizeof(nr->dist[0]));
	snprintf(nr->best[at], sizeof(nr->best[at]), "%s", full);
	nr->dist[at] = d;
}

cJSON *near_json(const struct near *nr)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a && i < nr->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(nr->best[i]));
	return a;
}

void near_text(const struct near *nr, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < nr->n && at < len; i++)
		at += snprintf(buf + at, len - at, "%s%s", i ? ", " : " (near: ", nr->best[i]);
	if (nr->n && at < len)
		snprintf(buf + at, len - at, ")");
}
