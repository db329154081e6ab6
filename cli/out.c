// SPDX-License-Identifier: GPL-2.0-only
/*
 * What every command prints: its errors and the engine's replies. With --json a script
 * reading stdout gets one document whatever happened (bpftool's p_err), so an error is
 * then {"error": "MESSAGE"} on stdout and nothing on stderr.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "cli.h"
#include "proto.h"
#include "util.h"

int cli_fail(const struct cli *c, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c && c->json) {
		cJSON *o = cJSON_CreateObject();
		char *s = NULL;

		if (o && cJSON_AddStringToObject(o, "error", msg))
			s = cJSON_PrintUnformatted(o);
		printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
		fflush(stdout);
		free(s);
		cJSON_Delete(o);
	} else {
		fprintf(stderr, "pcmon: %s\n", msg);
	}
	return status;
}

int cli_show(const struct cli *c, cJSON *rep, void (*table)(FILE *, const cJSON *))
{
	const char *err = proto_str(rep, "error", "pcmond sent a malformed reply");
	char esc[1024];

	/* an error may quote a name someone else chose: escaped for the terminal */
	if (!proto_bool(rep, "ok", 0))
		return cli_fail(c, proto_num(rep, "status", 1), "%s",
			    c->json ? err : str_escape(err, esc, sizeof(esc)));
	if (c->json) {
		char *s;

		cJSON_DeleteItemFromObject(rep, "v");
		cJSON_DeleteItemFromObject(rep, "ok");
		s = cJSON_Print(rep);
		fprintf(c->out ? c->out : stdout, "%s\n", s ? s : "{}");
		free(s);
	} else if (table) {
		table(c->out ? c->out : stdout, rep);
	}
	return 0;
}
