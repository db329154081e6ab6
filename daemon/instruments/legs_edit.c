// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcmon node|leg|hist add|del: a running target's tables edited, nodes and histograms added
 * or taken off, legs numbered after the others (a target's first node gives it the
 * instrument). The engine hands these commands over as the instrument asks (inst_ops.cmds).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "legs.h"
#include "legs.skel.h"
#include "legs_int.h"
#include "proto.h"
#include "target.h"
#include "util.h"

/* The target's legs state, made (and attached) on its first node. */
static struct legs *legs_of(struct legs_g *g, struct target *t, cJSON **rep)
{
	struct legs *lg = t->inst[INST_LEGS];

	if (lg)
		return lg;
	if (t->state != TARGET_RUNNING && t->state != TARGET_PAUSED) {
		*rep = proto_error(1, "target %u is %s: nodes go on a running target", t->id,
				   target_state_name(t->state));
		return NULL;
	}
	lg = calloc(1, sizeof(*lg));
	if (!lg) {
		*rep = proto_error(1, "out of memory");
		return NULL;
	}
	lg->track = PCMON_TRACK_ALL;
	if (legs_new_slices(lg, NULL, rep) || legs_attach_target(g, t, lg, rep)) {
		legs_free(lg);
		return NULL;
	}
	t->inst[INST_LEGS] = lg;
	return lg;
}

static int editable(const struct legs *lg, struct target *t, cJSON **rep)
{
	if (lg->detached || (t->state != TARGET_RUNNING && t->state != TARGET_PAUSED)) {
		*rep = proto_error(1, "target %u is %s: its tables can no longer change", t->id,
				   target_state_name(t->state));
		return -EINVAL;
	}
	return 0;
}

/* pcmon leg tail TARGET LEG [THRESHOLD]: a leg of the table tailed from now on (docs/tail.md). */
static cJSON *tail_leg_cmd(struct legs_g *g, struct target *t, struct legs *lg, const char *spec)
{
	cJSON *arr = cJSON_CreateArray(), *rep = NULL, *ok;
	size_t had = lg->ntails;

	if (!arr || !cJSON_AddItemToArray(arr, cJSON_CreateString(spec))) {
		cJSON_Delete(arr);
		return proto_error(1, "out of memory");
	}
	if (!legs_parse_tails(lg, arr, &rep) && legs_attach_tails(g, t, lg, &rep))
		lg->ntails = had; /* (what BPF was told stays harmless: no slot without its leg) */
	cJSON_Delete(arr);
	if (rep)
		return rep;
	legs_attach_configure(g, t, lg, false); /* (the target's count of tailed legs) */
	t->dirty = true;
	ok = proto_ok();
	cJSON_AddNumberToObject(ok, "id", lg->tails[lg->ntails - 1].leg);
	return ok;
}

/*
 * pcmon node|leg|hist add|del on a running target (its first node gives it the
 * instrument): request fields cmd ("node", "leg", "hist"), op ("add", "del"), and spec/arg,
 * from/to, hist/on, id. The reply says the new node's or leg's number.
 */
cJSON *legs_edit(void *gp, struct target *t, const cJSON *req)
{
	struct legs_g *g = gp;
	const char *what = proto_str(req, "cmd", "");
	bool add = !strcmp(proto_str(req, "op", ""), "add");
	uint32_t id = proto_num(req, "id", 0);
	cJSON *rep = NULL, *ok;
	struct legs *lg = add ? legs_of(g, t, &rep) : t->inst[INST_LEGS];

	if (!lg)
		return rep ? rep : proto_error(1, "target %u has no nodes", t->id);
	if (editable(lg, t, &rep))
		return rep;
	if (!strcmp(proto_str(req, "op", ""), "tail")) /* pcmon leg tail TARGET LEG[:THRESHOLD] */
		return tail_leg_cmd(g, t, lg, proto_str(req, "spec", ""));
	if (!strcmp(what, "node") && add) {
		struct legs_node *n = realloc(lg->nodes, (lg->nnodes + 1) * sizeof(*n));
		const char *spec = proto_str(req, "spec", "");

		if (!n)
			return proto_error(1, "out of memory");
		lg->nodes = n;
		n = &lg->nodes[lg->nnodes];
		*n = (struct legs_node){ .spec = strdup(spec) };
		n->arg = cJSON_GetObjectItemCaseSensitive(req, "arg") ? proto_num(req, "arg", 0) + 1 : 0;
		lg->nnodes++;
		if (!n->spec || legs_attach_configure(g, t, lg, false) ||
		    legs_attach_node(g, t, lg, lg->nnodes - 1, &rep)) {
			for (size_t k = 0; k < n->nlinks; k++)
				bpf_link__destroy(n->links[k]);
			free(n->links);
			free(n->spec);
			lg->nnodes--;
			return rep ? rep : proto_error(1, "out of memory");
		}
		id = lg->nnodes;
	} else if (!strcmp(what, "node")) {
		struct legs_node *n = id >= 1 && id <= lg->nnodes ? &lg->nodes[id - 1] : NULL;

		if (!n || !n->spec[0])
			return proto_error(1, "target %u has no node %u", t->id, id);
		for (size_t k = 0; k < n->nlinks; k++)
			bpf_link__destroy(n->links[k]);
		n->nlinks = 0;
		n->spec[0] = '\0'; /* numbers stay: a deleted node keeps its place */
	} else if (!strcmp(what, "leg") && add) {
		char spec[64];
		cJSON *err = NULL, *one = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(one, "legs");
		struct legs tmp = *lg;

		snprintf(spec, sizeof(spec), "%s:%s", proto_str(req, "from", ""), proto_str(req, "to", ""));
		cJSON_AddItemToArray(arr, cJSON_CreateString(spec));
		tmp.legs = NULL;
		tmp.nlegs = tmp.cap_legs = 0;
		(void)err;
		rep = NULL;
		if (legs_parse_legs(&tmp, arr, &rep)) {
			cJSON_Delete(one);
			free(tmp.legs);
			return rep;
		}
		cJSON_Delete(one);
		/* the limits of the table it joins (parsed alone, it was checked against none) */
		if (legs_full(lg, &tmp.legs[0], spec, &rep)) {
			free(tmp.legs);
			return rep;
		}
		if (GROW(lg->legs, lg->cap_legs, lg->nlegs + 1)) {
			free(tmp.legs);
			return proto_error(1, "out of memory");
		}
		tmp.legs[0].id = tmp.legs[0].stat.id = legs_next_leg_id(lg);
		lg->legs[lg->nlegs++] = tmp.legs[0];
		free(tmp.legs);
		legs_attach_configure(g, t, lg, false);
		id = lg->legs[lg->nlegs - 1].id;
	} else if (!strcmp(what, "leg")) {
		struct legs_leg *l = NULL;

		for (size_t i = 0; i < lg->nlegs && !l; i++)
			if (lg->legs[i].id == id)
				l = &lg->legs[i];
		if (!l)
			return proto_error(1, "target %u has no leg %u", t->id, id);
		{
			struct pcmon_lkey k = { t->id, l->from, l->to, 0 };

			bpf_map__delete_elem(g->skel->maps.legs, &k, sizeof(k), 0);
		}
		*l = lg->legs[--lg->nlegs];
		legs_attach_index(g, t, lg, false);
	} else if (!strcmp(what, "hist") && add) {
		if (legs_parse_hist(lg, proto_str(req, "hist", ""), &rep))
			return rep;
		legs_attach_hists(g, t, lg);
	} else {
		const char *on = proto_str(req, "on", "");

		if (!strcmp(on, "node") && id >= 1 && id <= lg->nnodes)
			lg->nodes[id - 1].hist.kind = PCMON_HIST_NONE;
		for (size_t i = 0; !strcmp(on, "leg") && i < lg->nlegs; i++)
			if (lg->legs[i].id == id)
				lg->legs[i].hist.kind = PCMON_HIST_NONE;
		legs_attach_hists(g, t, lg);
	}
	t->dirty = true;
	ok = proto_ok();
	cJSON_AddNumberToObject(ok, "id", id);
	return ok;
}
