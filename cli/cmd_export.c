// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon export, flamegraph: a target's samples as stacks (docs/exports.md), asked as a
 * listing with its profile (daemon/views/stacks.h) and written by export.c and flame.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "proto.h"
#include "session.h"

static const char *format, *output, *title, *alloc_value;
static bool inverted;

static const struct opt output_opts[] = {
	{ "output", 'o', "FILE", OPT_TEXT, NULL,
	  .help = "the file, written whole or not at all (default stdout)", .text = &output,
	  .complete = COMPL_FILE },
	OPT_TABLE_END,
};

/* a target's allocations, not its samples (docs/alloc.md) */
static const struct opt alloc_opts[] = {
	{ "alloc", 0, NULL, OPT_TRUE, "alloc",
	  .help = "the allocations' stacks (a target started with --alloc)" },
	{ "alloc-value", 0, "alloc_space|alloc_objects|inuse_space|inuse_objects", OPT_TEXT,
	  NULL, .help = "with --alloc, folded and flamegraph: the value drawn (default inuse_space)",
	  .text = &alloc_value },
	OPT_TABLE_END,
};

const struct opt export_opts[] = {
	{ "format", 0, "folded|pprof|json", OPT_TEXT, NULL,
	  .help = "folded (flamegraph.pl), pprof (go tool pprof), json", .text = &format },
	OPT_ALL(output_opts),
	OPT_ALL(pattern_opts),
	OPT_SOME(listing_opts, "by"),
	OPT_ALL(window_opts),
	OPT_ALL(alloc_opts),
	OPT_ALL(tail_opts),
	OPT_TABLE_END,
};

const struct opt flamegraph_opts[] = {
	OPT_ALL(output_opts),
	{ "title", 0, "T", OPT_TEXT, NULL, .help = "the SVG's title", .text = &title },
	{ "inverted", 0, NULL, OPT_FLAG, NULL,
	  .help = "callers: each stack drawn from its innermost frame, as a root at the top",
	  .flag = &inverted },
	OPT_ALL(pattern_opts),
	OPT_SOME(listing_opts, "by"),
	OPT_ALL(window_opts),
	OPT_ALL(alloc_opts),
	OPT_ALL(tail_opts),
	OPT_TABLE_END,
};

/* Where an export goes: -o FILE (replaced only once it is whole), else stdout. */
struct out {
	FILE *f;
	char *tmp;
};

static int out_open(struct cli *c, struct out *o, bool binary)
{
	o->tmp = NULL;
	if (!output || !strcmp(output, "-")) {
		if (binary && isatty(STDOUT_FILENO))
			return cli_fail(c, 2, "%s: the output is binary: give -o FILE, or redirect it",
				    c->cmd->name);
		o->f = stdout;
		return 0;
	}
	if (asprintf(&o->tmp, "%s.tmp.%d", output, (int)getpid()) < 0)
		return cli_fail(c, 1, "out of memory");
	o->f = fopen(o->tmp, "w");
	if (!o->f) {
		int r = cli_fail(c, 1, "-o %s: %s", output, strerror(errno));

		free(o->tmp);
		return r;
	}
	return 0;
}

/* Finish the output: @err < 0 throws a partial file away. 0, or the exit status. */
static int out_close(struct cli *c, struct out *o, int err)
{
	if (o->f == stdout)
		return fflush(stdout) || err ? cli_fail(c, 1, "%s: cannot write: %s", c->cmd->name,
						    strerror(err ? -err : errno))
					     : 0;
	if (fclose(o->f) && !err)
		err = -errno;
	if (!err && rename(o->tmp, output))
		err = -errno;
	if (err)
		unlink(o->tmp);
	free(o->tmp);
	return err ? cli_fail(c, 1, "-o %s: %s", output, strerror(-err)) : 0;
}

/* The samples of TARGET as stacks: the listing with its profile. 0, or the exit status. */
static int fetch_profile(struct cli *c, cJSON **rep, struct xprof *p)
{
	char err[256];
	int r;

	if (!c->target)
		return cli_fail(c, 2, "%s: which target? give its id or name (see pcmon targets)",
			    c->cmd->name);
	listing_req(c->req); /* --by: each stack rooted at its group */
	/* a target, a window of one (TARGET@SINCE..UNTIL) or a file pcmon save wrote */
	r = side_fetch(c, c->target, c->req, rep);
	if (r)
		return r;
	/* folded stacks and flame graphs draw one value of a profile of values */
	if (xprof_load(p, *rep, err, sizeof(err)) ||
	    (xprof_pick_value(p, alloc_value, err, sizeof(err)) && (xprof_free(p), 1))) {
		cJSON_Delete(*rep);
		return cli_fail(c, 1, "%s: target %s: %s", c->cmd->name, c->target, err);
	}
	return 0;
}

/* The listing's facts and the stacks, for scripts. */
static int export_json(FILE *f, cJSON *rep)
{
	char *js;
	int e;

	cJSON_DeleteItemFromObject(rep, "v");
	cJSON_DeleteItemFromObject(rep, "ok");
	cJSON_DeleteItemFromObject(rep, "procedures");
	cJSON_DeleteItemFromObject(rep, "deep_order");
	js = cJSON_Print(rep);
	e = js && fprintf(f, "%s\n", js) > 0 ? 0 : -ENOMEM;
	free(js);
	return e;
}

/* pcmon export TARGET --format folded|pprof|json [-o FILE] [--when P] */
int cmd_export(struct cli *c)
{
	const char *fmt = format ? format : "";
	bool pprof = !strcmp(fmt, "pprof");
	char err[256] = "";
	struct xprof p;
	struct out o;
	cJSON *rep;
	int r;

	if (!format) /* (a value given is one of them: the parser checks it) */
		return cli_fail(c, 2, "export: --format folded, pprof or json");
	r = fetch_profile(c, &rep, &p);
	if (r)
		return r;
	r = out_open(c, &o, pprof);
	if (!r) {
		int e;

		if (pprof)
			e = export_pprof(o.f, &p, err, sizeof(err));
		else if (!strcmp(fmt, "folded"))
			e = export_folded(o.f, &p);
		else
			e = export_json(o.f, rep);
		r = out_close(c, &o, e);
	}
	xprof_free(&p);
	cJSON_Delete(rep);
	return r;
}

/* pcmon flamegraph TARGET [-o FILE.svg] [--when P] [--title T] */
int cmd_flamegraph(struct cli *c)
{
	struct xprof p;
	struct out o;
	cJSON *rep;
	int r;

	r = fetch_profile(c, &rep, &p);
	if (r)
		return r;
	r = out_open(c, &o, false);
	if (!r)
		r = out_close(c, &o, export_flamegraph(o.f, &p, title,
						       &(struct flame_opts){ .inverted = inverted }));
	xprof_free(&p);
	cJSON_Delete(rep);
	return r;
}
