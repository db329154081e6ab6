// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon node, leg, hist: the probe-node tables of a running target (docs/legs.md).
 *
 *   node add TARGET NODE [--hist-arg N] | node del TARGET ID
 *   leg add TARGET FROM TO | leg del TARGET ID | leg tail TARGET LEG [THRESHOLD]
 *   hist add TARGET node|leg ID (--linear --buckets B --scale S --base B | --log)
 *   hist del TARGET node|leg ID
 *
 * The engine checks the values.
 */
#include <string.h>

#include "cli.h"
#include "proto.h"
#include "session.h"
#include "util.h"

/* node add TARGET NODE --hist-arg N: the NODE is a word, the request is the node */
static int opt_node_hist_arg(struct cli *c, const char *val)
{
	long v;
	int r;

	if ((r = hist_arg_value(c, val, &v)))
		return r;
	req_set(c->req, "arg", cJSON_CreateNumber(v));
	return 0;
}

const struct opt node_opts[] = {
	{ "hist-arg", 0, "N", OPT_CALL, NULL, .help = "the node records integer argument N (0-5)",
	  .fn = opt_node_hist_arg },
	OPT_TABLE_END,
};

/* hist add's buckets: given apart, sent as one --hist text */
static struct {
	bool linear, log;
	const char *buckets, *scale, *base;
} h;

const struct opt hist_opts[] = {
	{ "linear", 0, NULL, OPT_FLAG, NULL, .help = "BUCKETS buckets of width SCALE from BASE",
	  .flag = &h.linear },
	{ "buckets", 0, "B", OPT_TEXT, NULL, .help = "how many (1-64)", .text = &h.buckets },
	{ "scale", 0, "S", OPT_TEXT, NULL, .help = "their width", .text = &h.scale },
	{ "base", 0, "B", OPT_TEXT, NULL, .help = "where the first starts (default 0)",
	  .text = &h.base },
	{ "log", 0, NULL, OPT_FLAG, NULL, .help = "bucket i holds [2^i, 2^(i+1)), 0 its own",
	  .flag = &h.log },
	OPT_TABLE_END,
};

/* hist add: the histogram as --hist gives it to start. 0, or the exit status. */
static int hist_text(struct cli *c, const char *on, const char *id)
{
	char text[160];

	if (h.linear + h.log != 1)
		return cli_fail(c, 2,
			    "hist add: give --linear --buckets B --scale S --base B, or --log");
	if (h.log)
		snprintf(text, sizeof(text), "%s:%s,log", on, id);
	else
		snprintf(text, sizeof(text), "%s:%s,linear,%s,%s,%s", on, id,
			 h.buckets ? h.buckets : "?", h.scale ? h.scale : "?",
			 h.base ? h.base : "0");
	req_set(c->req, "hist", cJSON_CreateString(text));
	return 0;
}

/* The words after the command, into the request. 0, or the exit status. */
static int edit_req(struct cli *c, bool add)
{
	const char *cmd = c->cmd->name, **w = (const char **)c->words;
	bool hist = !strcmp(cmd, "hist");
	long id;

	req_set(c->req, "op", cJSON_CreateString(w[0]));
	req_set(c->req, "target", cJSON_CreateString(w[1]));
	if (!strcmp(cmd, "node") && add) {
		req_set(c->req, "spec", cJSON_CreateString(w[2]));
		return 0;
	}
	if (!strcmp(cmd, "leg") && add) {
		req_set(c->req, "from", cJSON_CreateString(w[2]));
		req_set(c->req, "to", cJSON_CreateString(w[3]));
		return 0;
	}
	if (parse_whole(hist ? w[3] : w[2], 1, 1000000, &id))
		return cli_fail(c, 2, "%s %s: %s is not a number", cmd, w[0], hist ? w[3] : w[2]);
	if (hist)
		req_set(c->req, "on", cJSON_CreateString(w[2]));
	if (hist && add) /* the new histogram names the node or leg */
		return hist_text(c, w[2], w[3]);
	req_set(c->req, "id", cJSON_CreateNumber(id));
	return 0;
}

/* leg tail TARGET LEG [THRESHOLD]: the leg's slow instances profiled apart from now on. */
static int tail_req(struct cli *c)
{
	char spec[96];
	struct session s;
	cJSON *rep;
	int r;

	if (c->nwords != 3 && c->nwords != 4)
		return cli_fail(c, 2, "leg tail: give TARGET LEG [THRESHOLD] (5ms, p99: the default)");
	snprintf(spec, sizeof(spec), "%s%s%s", c->words[2], c->nwords == 4 ? ":" : "",
		 c->nwords == 4 ? c->words[3] : "");
	req_set(c->req, "op", cJSON_CreateString("tail"));
	req_set(c->req, "target", cJSON_CreateString(c->words[1]));
	req_set(c->req, "spec", cJSON_CreateString(spec));
	if ((r = session_connect(c, &s)))
		return r;
	rep = session_call(&s, c->req);
	r = cli_show(c, rep, NULL);
	cJSON_Delete(rep);
	session_close(&s);
	return r;
}

int cmd_edit(struct cli *c)
{
	const char *cmd = c->cmd->name, *op = c->nwords ? c->words[0] : NULL;
	bool add = op && !strcmp(op, "add");
	int need = !strcmp(cmd, "hist") || (add && !strcmp(cmd, "leg")) ? 4 : 3;
	struct session s;
	cJSON *rep;
	int r;

	if (op && !strcmp(op, "tail") && !strcmp(cmd, "leg")) /* leg tail TARGET LEG [THRESHOLD] */
		return tail_req(c);
	if (!op || (!add && strcmp(op, "del")) || c->nwords != need)
		return cli_fail(c, 2, "%s: see pcmon --help for %s add|del", cmd, cmd);
	if ((r = edit_req(c, add)))
		return r;
	if ((r = session_connect(c, &s)))
		return r;
	rep = session_call(&s, c->req);
	r = cli_show(c, rep, NULL);
	if (!r && !c->json && add && strcmp(cmd, "hist"))
		printf("%.0f\n", proto_num(rep, "id", 0));
	cJSON_Delete(rep);
	session_close(&s);
	return r;
}
