// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for daemon/service/conf.c: arbitrary bytes read as pcmond.conf. Whatever the
 * file, reading ends with a configuration whose errors are lines naming the file, in the
 * order of their lines, and whose targets are start requests the engine's own check of
 * their fields accepts (what the engine would be asked).
 *
 * Build: see the Makefile (the engine's sources: the start fields are its instruments').
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "proto.h"

#define CHECK(cond)                                                                           \
	do {                                                                                  \
		if (!(cond)) {                                                                \
			fprintf(stderr, "fuzz_conf: check failed at line %d: %s\n", __LINE__, \
				#cond);                                                       \
			abort();                                                              \
		}                                                                             \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)data, size, "r");
	struct conf *c;

	if (!f)
		return 0;
	c = size ? conf_parse(f, "f.conf") : NULL;
	fclose(f);
	if (!c)
		return 0;
	CHECK(c->nerrors <= CONF_MAX_ERRORS);
	for (size_t i = 0; i < c->nerrors; i++) {
		CHECK(!strncmp(c->errors[i], "f.conf:", 7));
		CHECK(!strchr(c->errors[i], '\n'));
		CHECK(!i || c->error_lines[i - 1] <= c->error_lines[i]);
	}
	for (size_t i = 0; !c->nerrors && i < c->ntargets; i++) {
		const cJSON *r = c->targets[i].req;

		CHECK(!strcmp(proto_str(r, "cmd", ""), "start"));
		CHECK(!strcmp(proto_str(r, "name", ""), c->targets[i].name));
		CHECK(proto_bool(r, "all", 0) != !!proto_str(r, "cgroup", NULL));
		CHECK(!cJSON_GetObjectItemCaseSensitive(r, "pid"));
	}
	conf_free(c);
	return 0;
}
