// SPDX-License-Identifier: GPL-2.0-only
/*
 * A side of export, save and diff (cli.h, side_fetch()): a target's listing with its stacks,
 * of its whole life or of a window of it (TARGET@SINCE..UNTIL), or a file pcmon save wrote.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "proto.h"
#include "session.h"
#include "util.h"

/* @spec names a saved file (a regular file there), not a target. */
static bool is_file(const char *spec)
{
	struct stat sb;

	return strchr(spec, '/') || (!stat(spec, &sb) && S_ISREG(sb.st_mode));
}

int side_fetch(struct cli *c, const char *spec, const cJSON *base, cJSON **rep)
{
	struct session s;
	char *t, *at, *dots;
	cJSON *req;
	int r;

	*rep = NULL;
	if (is_file(spec)) {
		char *text = read_file(spec, NULL);

		if (!text)
			return cli_fail(c, 1, "%s: %s", spec, strerror(errno));
		*rep = cJSON_Parse(text);
		free(text);
		if (!*rep || !cJSON_GetObjectItemCaseSensitive(*rep, "profile")) {
			cJSON_Delete(*rep);
			*rep = NULL;
			return cli_fail(c, 1, "%s: not a file pcmon save wrote", spec);
		}
		return 0;
	}
	t = strdup(spec);
	req = cJSON_Duplicate(base, 1);
	if (!t || !req) {
		free(t);
		cJSON_Delete(req);
		return cli_fail(c, 1, "out of memory");
	}
	at = strchr(t, '@');
	if (at) {
		*at++ = '\0';
		dots = strstr(at, "..");
		if (!dots) {
			free(t);
			cJSON_Delete(req);
			return cli_fail(c, 2, "%s: a window is TARGET@SINCE..UNTIL (-20m..-10m)", spec);
		}
		*dots = '\0';
		if (*at)
			req_set(req, "since", cJSON_CreateString(at));
		if (dots[2])
			req_set(req, "until", cJSON_CreateString(dots + 2));
	}
	req_cmd(req, "list");
	req_set(req, "target", cJSON_CreateString(t));
	req_set(req, "stacks", cJSON_CreateBool(1));
	free(t);
	r = session_connect(c, &s);
	if (!r) {
		*rep = session_call(&s, req);
		session_close(&s);
		if (!proto_bool(*rep, "ok", 0)) {
			r = cli_show(c, *rep, NULL);
			cJSON_Delete(*rep);
			*rep = NULL;
		}
	}
	cJSON_Delete(req);
	return r;
}
