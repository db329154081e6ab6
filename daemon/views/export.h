/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The exports (docs/exports.md), from the "profile" of a `list` reply asked with "stacks"
 * (daemon/views/stacks.h): folded stacks, a gzipped profile.proto, a flamegraph SVG.
 */
#ifndef PCMON_EXPORT_H
#define PCMON_EXPORT_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct xobject {
	const char *name, *path, *build_id;
	bool kernel, has_functions, has_filenames, has_lines;
};

struct xfunction {
	const char *name, *module, *file;	/* name "": code no procedure covers */
	long line;
};

struct xlocation {
	int object;		/* -1: none */
	uint64_t address;
	bool kernel;
	int nlines;		/* innermost first: the inline chain, the function itself last */
	int (*lines)[2];	/* [function, line] */
};

/* The values a sample may carry besides its count: the allocations' four (docs/alloc.md). */
#define XPROF_MAX_VALUES 4

struct xsample {
	uint64_t count, ns;
	const char *kind;	/* on-cpu, blocked, runnable */
	const char *charged;	/* procedure, foreign, critical, unwalkable */
	const char *section;	/* critical, unwalkable: the section's name */
	long pid, tid;		/* tid 0: not known */
	const char *thread;	/* its name, "" if not known */
	const char *group;	/* --by: its group, its root frame ("comm NAME" ...); "": none */
	const char *comm;	/* --by process or comm: its process's name, else "" */
	const char *cgroup;	/* --by cgroup: its cgroup's path (cgroup:ID if gone), else "" */
	const char *cut_short;	/* why its stack stops short of a root; NULL: whole */
	int nlocs;
	int *locs;		/* leaf first */
	double values[XPROF_MAX_VALUES]; /* a profile of values of its own (allocations') */
};

struct xprof {
	const cJSON *rep;	/* owns the strings */
	const char *target, *mode;
	const char *host;	/* set: every sample is labelled with it and the target */
	double period_ns, start_wall, elapsed_s;
	uint64_t counted;
	int nobjects, nfunctions, nlocations, nsamples;
	struct xobject *objects;
	struct xfunction *functions;
	struct xlocation *locations;
	struct xsample *samples;
	/* a profile whose samples carry values of their own, not samples of time: their
	 * types [name, unit] ("alloc_space", "bytes"), the one pprof shows first, the period's */
	int nvalues;
	const char *value_type[XPROF_MAX_VALUES], *value_unit[XPROF_MAX_VALUES];
	const char *default_value, *period_type;
	double period;
};

/* 0, or -1 with the reason in @err (a reply without a profile, or a malformed one). */
int xprof_load(struct xprof *p, const cJSON *rep, char *err, size_t errlen);
void xprof_free(struct xprof *p);
/*
 * The folded stacks and the flame graph of a profile of values are drawn by one of them:
 * value @name (NULL: the profile's default) becomes each sample's count. 0, or -1 with the
 * names it has in @err.
 */
int xprof_pick_value(struct xprof *p, const char *name, char *err, size_t errlen);

/* One frame of a sample as the exports draw it, root first. */
enum xframe_type { XF_USER, XF_KERNEL, XF_INLINE, XF_CRITICAL, XF_FOREIGN, XF_TRUNCATED, XF_GROUP };
/* The root frame of a stack cut short: its outer frames, which were not walked. */
#define XF_TRUNCATED_NAME "[truncated]"
struct xframe {
	const char *name;
	enum xframe_type type;
};
/* Function @fn's name in the exports ("[foreign]": code no procedure covers). */
const char *xprof_fname(const struct xprof *p, int fn);
/* The frames of sample @s, root first (its group's, with --by), into @out (grown as needed);
 * how many, or -1. */
int xprof_frames(const struct xprof *p, const struct xsample *s, struct xframe **out,
		 size_t *cap);

/* Brendan Gregg's folded format: "frame;...;frame COUNT" per distinct stack. */
int export_folded(FILE *f, const struct xprof *p);
/* A gzipped profile.proto. */
int export_pprof(FILE *f, const struct xprof *p, char *err, size_t errlen);
/* @len bytes of @d, gzipped (zlib), into @f: 0 or -errno. */
int export_gzip(FILE *f, const void *d, size_t len);
/* @s as XML/HTML text: markup characters escaped, control characters left out. */
void export_xml_text(FILE *f, const char *s);
/* A self-contained flamegraph SVG; @o NULL: as the options' zeros say. */
struct flame_opts {
	bool inverted;		/* callers: each stack drawn leaf first */
};
int export_flamegraph(FILE *f, const struct xprof *p, const char *title,
		      const struct flame_opts *o);
/*
 * A differential flame graph (pcmon diff): the frames of A's and of B's samples merged,
 * each as wide as the mean of its shares of A and of B, so that what vanished and what
 * appeared are drawn too; each frame coloured by @fn (given its name and its counts in A
 * and in B), @legend under it; tooltips give both shares.
 */
struct flame_tint {
	int (*fn)(void *ctx, const char *name, uint64_t a, uint64_t b, char *rgb, size_t len);
	void *ctx;
	const char *legend;
};
int export_flamegraph_diff(FILE *f, const struct xprof *a, const struct xprof *b,
			   const char *title, const struct flame_tint *tint);
/*
 * The flame graph's tree as JSON, for a page that draws it: {"total", "pruned", "inverted",
 * ["total_a", "total_b",] "root": NODE}, a NODE {"n": its name, "t": u|k|i|c|f|t|g (user,
 * kernel, inline, critical, foreign, truncated, group), "v": its width (its samples, with its
 * callees'; two profiles: a TB + b TA, as the differential graph), ["a", "b": its samples in
 * A and in B,] "c": [its callees' NODEs, by name]}. The narrowest subtrees are left out until
 * at most @max_nodes remain (0: all): their samples stay in their caller's "v" and are summed
 * in "pruned". @b NULL: one profile. 0, or -ENOMEM.
 */
int flame_tree_json(const struct xprof *a, const struct xprof *b, bool inverted,
		    size_t max_nodes, cJSON **out);

#endif
