// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon run [OPTS] -- CMD [ARGS]: launch CMD watched from its first instruction, print its
 * listing, exit with its status. The target stays with pcmond, to be listed again.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "proto.h"
#include "session.h"

/* an engine of our own only: pcmond has its settings */
static const char *debuginfod, *cache_dir, *output;

const struct opt run_opts[] = {
	OPT_ALL(sampling_opts),
	OPT_SOME(listing_opts, "shallow deep top by"),
	{ "output", 'o', "FILE", OPT_TEXT, NULL,
	  .help = "the listing into FILE (default: stdout if a terminal, else stderr)",
	  .text = &output, .complete = COMPL_FILE },
	{ "debuginfod", 0, "URLS", OPT_TEXT, NULL,
	  .help = "without pcmond: debuginfod servers (default $DEBUGINFOD_URLS; \"\": none)",
	  .text = &debuginfod },
	{ "cache-dir", 0, "DIR", OPT_TEXT, NULL,
	  .help = "without pcmond: where fetched debug info is kept", .text = &cache_dir,
	  .complete = COMPL_DIR },
	OPT_TABLE_END,
};

/*
 * Where the embedded engine keeps debug info fetched from debuginfod servers:
 * $XDG_CACHE_HOME/pcmon, else pcmond's directory for root, else ~/.cache/pcmon.
 */
static char *default_cache_dir(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char *dir = NULL;

	if (xdg && *xdg)
		return asprintf(&dir, "%s/pcmon", xdg) < 0 ? NULL : dir;
	if (geteuid() == 0 || !home || !*home)
		return strdup(PCMON_DEFAULT_CACHE_DIR);
	return asprintf(&dir, "%s/.cache/pcmon", home) < 0 ? NULL : dir;
}

int cmd_run(struct cli *c)
{
	struct run r = {
		.argv = c->argv_cmd, .keep = true, .fd = -1, .eo_given = debuginfod || cache_dir,
		.output = output,
	};
	char *cache;
	int st;

	if (!c->argv_cmd)
		return cli_fail(c, 2, "run: no command: pcmon run [OPTIONS] -- CMD [ARGS]");
	cache = cache_dir ? NULL : default_cache_dir();
	r.eo.debuginfod = debuginfod;
	r.eo.cache_dir = cache_dir ? cache_dir : cache;
	st = session_run(c, &r);
	free(cache);
	return st;
}
