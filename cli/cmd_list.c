// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon list, tables, profil: a target's listing and the views asked with it (docs/lines.md).
 * The listing's options are in listing.c: run and count end with a listing too.
 */
#include <stdlib.h>

#include "cli.h"
#include "format.h"
#include "proto.h"
#include "session.h"
#include "util.h"

const struct opt list_opts[] = {
	OPT_ALL(listing_opts),
	OPT_ALL(pattern_opts),
	OPT_ALL(window_opts),
	OPT_ALL(tail_opts),
	OPT_TABLE_END,
};

/* pcmon list [TARGET]: without one, the user's newest target (the engine's choice) */
int cmd_list(struct cli *c)
{
	listing_req(c->req);
	return cli_ask(c, listing_table);
}

const struct opt tables_opts[] = {
	OPT_ALL(window_opts),
	OPT_TABLE_END,
};

/* pcmon tables [TARGET]: the listing's tables section alone */
int cmd_tables(struct cli *c)
{
	req_cmd(c->req, "list");
	req_set(c->req, "tables", cJSON_CreateBool(1));
	return cli_ask(c, listing_table);
}

static const char *profil_scale;

const struct opt profil_opts[] = {
	{ "offset", 0, "ADDR|MODULE+0xOFF|PROC", OPT_STR, "offset",
	  .help = "where the buffer starts" },
	{ "scale", 0, "S", OPT_TEXT, NULL,
	  .help = "0 to 0x10000: a cell per 2 bytes of code at 0x10000", .text = &profil_scale },
	{ "bufsiz", 0, "BYTES", OPT_NUM, "bufsiz",
	  .help = "the buffer's size (default: PROC's extent)" },
	OPT_SOME(pattern_opts, "when when-file ignore-case critical"),
	OPT_ALL(window_opts),
	OPT_TABLE_END,
};

/* pcmon profil TARGET --offset ADDR|PROC --scale S [--bufsiz BYTES]: docs/lines.md */
int cmd_profil(struct cli *c)
{
	unsigned long scale;
	char *end;

	if (!c->target)
		return cli_fail(c, 2, "profil: which target? give its id or name (see pcmon targets)");
	if (!cli_seen(c, "offset") || !profil_scale)
		return cli_fail(c, 2, "profil: give --offset ADDR|MODULE+0xOFF|PROC and --scale S (0x10000: a cell per 2 bytes)");
	scale = strtoul(profil_scale, &end, 0);
	if (*end || end == profil_scale || scale > 0x10000)
		return cli_fail(c, 2, "--scale %s: expected 0 to 0x10000 (65536)", profil_scale);
	req_cmd(c->req, "list");
	req_set(c->req, "scale", cJSON_CreateNumber(scale));
	return cli_ask(c, fmt_profil);
}
