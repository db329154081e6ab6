// SPDX-License-Identifier: GPL-2.0-only
/*
 * An aggregate's stacks in a results file (stackfile.h has the format): written symbolized
 * (module, address, frame names, lines), so that they list the same after a restart, when
 * the processes and even their files may be gone; read back in two passes, every field
 * checked before anything is interned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "stackfile.h"
#include "stfile.h"
#include "sym.h"
#include "util.h"

#define STORE_MAX_ITEMS (1 << 24)	/* locations, stacks */
#define STORE_MAX_DEPTH 4096		/* user, or kernel, locations of one stack */
#define STORE_MAX_FRAMES 4096		/* frames of one location (its inline chain) */
#define STORE_MAX_NAME 65536		/* a procedure, module or file name */
#define STORE_MAX_PID 4194304		/* PID_MAX_LIMIT */

static const char *const stack_kind_names[PCMON_KIND_MAX] = {
	[PCMON_KIND_ONCPU] = "oncpu",
	[PCMON_KIND_ONCPU_KMODE] = "oncpu_kernel",
	[PCMON_KIND_OFF_BLOCKED] = "off_blocked",
	[PCMON_KIND_OFF_RUNNABLE] = "off_runnable",
};

/* ---- writing */

/* @id's index in @m; a new entry (*o, to fill) is appended to m->arr on first use. */
static int64_t idmap_get(struct stackfile_wr *w, struct stackfile_idmap *m, uint32_t id, cJSON **o)
{
	*o = NULL;
	if (id >= m->cap) {
		size_t old = m->cap;

		if (GROW(m->idx, m->cap, (size_t)id + 1)) {
			w->w->oom = true;
			return -1;
		}
		for (size_t i = old; i < m->cap; i++)
			m->idx[i] = -1;
	}
	if (m->idx[id] >= 0)
		return m->idx[id];
	*o = cJSON_CreateObject();
	sf_push(w->w, m->arr, *o);
	if (w->w->oom) {
		*o = NULL; /* freed, or the text is lost anyway */
		return -1;
	}
	return m->idx[id] = m->n++;
}

/* The index of procedure @proc in "procs". */
static int64_t proc_index(struct stackfile_wr *w, uint32_t proc)
{
	const struct sym_procinfo *pi = sym_proc(w->s, proc);
	cJSON *o;
	int64_t x;

	if (!pi) {
		w->w->oom = true; /* cannot be: every frame is a procedure */
		return -1;
	}
	x = idmap_get(w, &w->procs, proc, &o);
	if (o) {
		sf_put_str(w->w, o, "m", sym_str(w->s, pi->module));
		sf_put_str(w->w, o, "n", sym_str(w->s, pi->name));
		if (pi->file)
			sf_put_str(w->w, o, "file", sym_str(w->s, pi->file));
		if (pi->line)
			sf_put_num(w->w, o, "line", pi->line);
		if (pi->hi) { /* its code, for profil after a restart */
			char a[24];

			snprintf(a, sizeof(a), "0x%llx", (unsigned long long)pi->lo);
			sf_put_str(w->w, o, "lo", a);
			snprintf(a, sizeof(a), "0x%llx", (unsigned long long)pi->hi);
			sf_put_str(w->w, o, "hi", a);
		}
	}
	return w->w->oom ? -1 : x;
}

/* The index of location @loc in "locs": its address, its frames as procedure indices. */
static int64_t loc_index(struct stackfile_wr *w, uint32_t loc)
{
	const struct sym_loc *l = sym_loc(w->s, loc);
	const uint32_t *fr;
	char addr[24];
	cJSON *o, *f;
	int64_t x;

	if (!l) {
		w->w->oom = true; /* cannot be: stacks hold interned locations */
		return -1;
	}
	x = idmap_get(w, &w->locs, loc, &o);
	if (!o)
		return x;
	fr = sym_frames(w->s, l);
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)l->addr);
	sf_put_str(w->w, o, "a", addr);
	f = sf_chk(w->w, cJSON_AddArrayToObject(o, "f"));
	for (uint32_t i = 0; f && i < l->nframes; i++) {
		int64_t p = proc_index(w, fr[i]);

		if (p < 0)
			break;
		sf_push(w->w, f, cJSON_CreateNumber(p));
	}
	if (l->file)
		sf_put_str(w->w, o, "file", sym_str(w->s, l->file));
	if (l->line)
		sf_put_num(w->w, o, "line", l->line);
	/* each frame's own line (an inline chain's call sites), when one beyond the innermost */
	{
		const struct sym_line *fl = sym_frame_lines(w->s, l);
		bool more = false;

		for (uint32_t i = 1; i < l->nframes; i++)
			more |= fl[i].file || fl[i].line;
		f = more ? sf_chk(w->w, cJSON_AddArrayToObject(o, "fl")) : NULL;
		for (uint32_t i = 0; f && i < l->nframes; i++) {
			cJSON *y = cJSON_CreateArray();

			sf_push(w->w, f, y);
			if (w->w->oom)
				break;
			sf_push(w->w, y, cJSON_CreateString(sym_str(w->s, fl[i].file)));
			sf_push(w->w, y, cJSON_CreateNumber(fl[i].line));
		}
	}
	return w->w->oom ? -1 : x;
}

static void render_stack(struct stackfile_wr *w, const struct agg_stack *st, uint64_t count,
			 uint64_t ns)
{
	struct sf_wr *sw = w->w;
	struct sf_text *x = &w->stacks;

	sf_text_lit(sw, x, x->len ? ",{\"k\":\"" : "[{\"k\":\"");
	sf_text_lit(sw, x, st->kind < PCMON_KIND_MAX ? stack_kind_names[st->kind] : "?");
	sf_text_lit(sw, x, "\",\"p\":");
	sf_text_u64(sw, x, st->pid);
	if (st->tid) {
		sf_text_lit(sw, x, ",\"t\":");
		sf_text_u64(sw, x, st->tid);
	}
	if (st->cgroup) {
		sf_text_lit(sw, x, ",\"cg\":");
		sf_text_u64(sw, x, st->cgroup);
	}
	if (st->unwalk) {
		sf_text_lit(sw, x, ",\"u\":");
		sf_text_str(sw, x, st->unwalk < AGG_UNWALK_MAX ? agg_unwalk_names[st->unwalk] : "?");
	}
	if (st->flags & AGG_SF_CUT_SHORT) {
		sf_text_lit(sw, x, ",\"cs\":true,\"cr\":");
		sf_text_str(sw, x, agg_unwalk_names[agg_cut_reason(st)]);
	}
	if (st->flags & AGG_SF_MARKS_PENDING)
		sf_text_lit(sw, x, ",\"mp\":true");
	if (st->section) {
		sf_text_lit(sw, x, ",\"s\":");
		sf_text_str(sw, x, sym_str(w->s, st->section));
	}
	sf_text_lit(sw, x, ",\"nu\":");
	sf_text_u64(sw, x, st->nuser);
	sf_text_lit(sw, x, ",\"c\":");
	sf_text_u64(sw, x, count);
	sf_text_lit(sw, x, ",\"ns\":");
	sf_text_u64(sw, x, ns);
	sf_text_lit(sw, x, ",\"l\":[");
	for (uint32_t j = 0; j < st->nuser + st->nkern; j++) {
		int64_t i = loc_index(w, st->locs[j]);

		if (i < 0) {
			sw->oom = true;
			return;
		}
		if (j)
			sf_text_lit(sw, x, ",");
		sf_text_u64(sw, x, i);
	}
	sf_text_lit(sw, x, "]}");
}

void stackfile_save(struct sf_wr *sw, const struct sym *s, const struct agg *agg,
		    cJSON *section)
{
	struct stackfile_wr w = { .w = sw, .s = s };

	w.procs.arr = sf_chk(sw, cJSON_AddArrayToObject(section, "procs"));
	w.locs.arr = sf_chk(sw, cJSON_AddArrayToObject(section, "locs"));
	for (size_t i = 0; !sw->oom && i < agg_count(agg); i++) {
		uint64_t count, ns;
		const struct agg_stack *st = agg_get(agg, i, &count, &ns);

		render_stack(&w, st, count, ns);
	}
	if (w.stacks.len)
		sf_text_lit(sw, &w.stacks, "]");
	sf_put_text(sw, section, "stacks", &w.stacks);
	free(w.procs.idx);
	free(w.locs.idx);
}

/* ---- reading */

/* A procedure as the file gives it (format 2; strings point into the parsed document). */
struct stackfile_proc {
	const char *m, *n, *file;
	uint32_t line;
	uint64_t lo, hi;
};

/* A location as the file gives it: format 1 names its frames, format 2 indexes "procs". */
struct stackfile_loc {
	const char *m, *file;
	const cJSON *f, *fl;	/* fl: each frame's [file, line], or NULL */
	uint64_t a;
	uint32_t line;
};

static int read_proc(struct sf_rd *rd, const cJSON *it, int i, struct stackfile_proc *p)
{
	int r;

	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "procs", i, it);
	snprintf(rd->at, sizeof(rd->at), "procs[%d].", i);
	if ((r = sf_get_str(rd, it, "m", SF_ALWAYS, STORE_MAX_NAME, &p->m)) ||
	    (r = sf_get_str(rd, it, "n", SF_ALWAYS, STORE_MAX_NAME, &p->n)) ||
	    (r = sf_get_str(rd, it, "file", SF_OPTIONAL, STORE_MAX_NAME, &p->file)) ||
	    (r = sf_get_u32(rd, it, "line", SF_OPTIONAL, UINT32_MAX, &p->line)))
		return r;
	if (cJSON_GetObjectItemCaseSensitive(it, "hi") &&
	    ((r = sf_get_addr(rd, it, "lo", &p->lo)) || (r = sf_get_addr(rd, it, "hi", &p->hi))))
		return r;
	if (p->hi && p->lo >= p->hi)
		return sf_bad(rd, "hi", "not above lo");
	return 0;
}

static int read_loc(struct sf_rd *rd, const cJSON *it, int i, const struct stackfile_proc *procs,
		    int nprocs, struct stackfile_loc *l)
{
	const cJSON *x;
	int r, j = 0, nf;

	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "locs", i, it);
	snprintf(rd->at, sizeof(rd->at), "locs[%d].", i);
	if ((rd->format == 1 && (r = sf_get_str(rd, it, "m", SF_ALWAYS, STORE_MAX_NAME, &l->m))) ||
	    (r = sf_get_addr(rd, it, "a", &l->a)) ||
	    (r = sf_get_array(rd, it, "f", SF_ALWAYS, STORE_MAX_FRAMES, &l->f, &nf)) ||
	    (r = sf_get_str(rd, it, "file", SF_OPTIONAL, STORE_MAX_NAME, &l->file)) ||
	    (r = sf_get_u32(rd, it, "line", SF_OPTIONAL, UINT32_MAX, &l->line)))
		return r;
	if (!nf)
		return sf_bad(rd, "f", "a location has at least one frame");
	if ((r = sf_get_array(rd, it, "fl", SF_OPTIONAL, STORE_MAX_FRAMES, &l->fl, &j)))
		return r;
	if (l->fl && j != nf)
		return sf_bad(rd, "fl", "%d lines for %d frames", j, nf);
	for (int k = 0; l->fl && k < j; k++) {
		const cJSON *y = cJSON_GetArrayItem(l->fl, k), *file, *line;

		file = cJSON_GetArrayItem(y, 0);
		line = cJSON_GetArrayItem(y, 1);
		if (!cJSON_IsArray(y) || cJSON_GetArraySize(y) != 2 || !cJSON_IsString(file) ||
		    strnlen(file->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME ||
		    !cJSON_IsNumber(line) || line->valuedouble < 0 || line->valuedouble > UINT32_MAX ||
		    line->valuedouble != (uint32_t)line->valuedouble)
			return sf_bad(rd, "fl", "each frame's line is [FILE, LINE]");
	}
	j = 0;
	cJSON_ArrayForEach(x, l->f) {
		char name[24];
		uint64_t p;

		snprintf(name, sizeof(name), "f[%d]", j++);
		if (rd->format == 1) {
			if (!cJSON_IsString(x) || !x->valuestring)
				return sf_wrong_type(rd, name, x, "a procedure name");
			if (strnlen(x->valuestring, STORE_MAX_NAME + 1) > STORE_MAX_NAME)
				return sf_bad(rd, name, "longer than %d bytes", STORE_MAX_NAME);
			continue;
		}
		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a procedure index");
		if (!nprocs)
			return sf_bad(rd, name, "there are no procedures");
		if ((r = sf_item_u64(rd, name, x, nprocs - 1, &p)))
			return r;
		/* a location is in one object: its inline chain too */
		if (!l->m)
			l->m = procs[p].m;
		else if (strcmp(l->m, procs[p].m))
			return sf_bad(rd, name,
				   "procedure of module \"%.64s\" in a location of \"%.64s\"",
				   procs[p].m, l->m);
	}
	return 0;
}

/* A stack as the file gives it: locations are indices into "locs". */
struct rstack {
	uint32_t kind, pid, tid, unwalk, cut, nuser, n;
	uint64_t cgroup;
	bool cut_short, marks_pending;
	const char *section;
	uint64_t count, ns;
	const cJSON *l;
};

static int read_stack(struct sf_rd *rd, const cJSON *it, int i, int nlocs, struct rstack *st)
{
	const char *unwalk_names[AGG_UNWALK_MAX] = { NULL }; /* walkable: no "u" */
	const cJSON *x;
	int r, n, j = 0;

	*st = (struct rstack){ 0 };
	if (!cJSON_IsObject(it))
		return sf_not_object(rd, "stacks", i, it);
	snprintf(rd->at, sizeof(rd->at), "stacks[%d].", i);
	for (int k = 1; k < AGG_UNWALK_MAX; k++)
		unwalk_names[k] = agg_unwalk_names[k];
	if ((r = sf_get_enum(rd, it, "k", SF_ALWAYS, stack_kind_names, PCMON_KIND_MAX, &st->kind)) ||
	    (r = sf_get_u32(rd, it, "p", SF_ALWAYS, STORE_MAX_PID, &st->pid)) ||
	    (r = sf_get_u32(rd, it, "t", SF_OPTIONAL, STORE_MAX_PID, &st->tid)) ||
	    (r = sf_get_u64(rd, it, "cg", SF_OPTIONAL, &st->cgroup)) ||
	    /* (fp_chain, the last reason, only ever cuts a stack short) */
	    (r = sf_get_enum(rd, it, "u", SF_OPTIONAL, unwalk_names, AGG_UNWALK_FP_CHAIN, &st->unwalk)) ||
	    (r = sf_get_bool(rd, it, "cs", SF_OPTIONAL, &st->cut_short)) ||
	    /* why (files written before it was kept hold fp stacks only) */
	    (r = sf_get_enum(rd, it, "cr", SF_OPTIONAL, unwalk_names, AGG_UNWALK_MAX, &st->cut)) ||
	    (r = sf_get_bool(rd, it, "mp", SF_OPTIONAL, &st->marks_pending)) ||
	    (r = sf_get_str(rd, it, "s", SF_OPTIONAL, 255, &st->section)) ||
	    (r = sf_get_array(rd, it, "l", SF_ALWAYS, 2 * STORE_MAX_DEPTH, &st->l, &n)) ||
	    (r = sf_get_u32(rd, it, "nu", SF_ALWAYS, MIN(n, STORE_MAX_DEPTH), &st->nuser)) ||
	    (r = sf_get_u64(rd, it, "c", SF_ALWAYS, &st->count)) ||
	    (r = sf_get_u64x(rd, it, "ns", SF_ALWAYS, UINT64_MAX, true, &st->ns)))
		return r;
	if (st->section && !st->section[0])
		return sf_bad(rd, "s", "empty section name");
	if (n - st->nuser > STORE_MAX_DEPTH)
		return sf_bad(rd, "l", "%u kernel locations, more than %d", n - st->nuser,
			   STORE_MAX_DEPTH);
	st->n = n;
	cJSON_ArrayForEach(x, st->l) {
		char name[24];
		uint64_t li;

		snprintf(name, sizeof(name), "l[%d]", j++);
		if (!cJSON_IsNumber(x))
			return sf_wrong_type(rd, name, x, "a location index");
		if (!nlocs)
			return sf_bad(rd, name, "there are no locations");
		if ((r = sf_item_u64(rd, name, x, nlocs - 1, &li)))
			return r;
	}
	return 0;
}

/* Intern the file's procedures and locations into @s: ids[i] for "locs"[i]. Only -ENOMEM. */
static int commit_locs(struct sf_rd *rd, struct sym *s, const struct stackfile_proc *procs,
		       int nprocs, const struct stackfile_loc *locs, int nlocs, uint32_t *ids)
{
	const char **names = malloc(STORE_MAX_FRAMES * sizeof(*names));
	const char **files = malloc(STORE_MAX_FRAMES * sizeof(*files));
	uint32_t *lines = malloc(STORE_MAX_FRAMES * sizeof(*lines));
	uint32_t id;
	int r = names && files && lines ? 0 : -ENOMEM;

	/* first, so that the locations' frames find them with their file and line */
	for (int i = 0; !r && i < nprocs; i++)
		if (!(r = sym_intern_proc(s, procs[i].m, procs[i].n[0] ? procs[i].n : NULL,
					  procs[i].file, procs[i].line, &id)) && procs[i].hi)
			sym_set_proc_extent(s, id, procs[i].lo, procs[i].hi);
	for (int i = 0; !r && i < nlocs; i++) {
		const cJSON *x;
		uint32_t j = 0;

		cJSON_ArrayForEach(x, locs[i].f) {
			const char *n = rd->format == 1 ? x->valuestring
							: procs[(size_t)x->valuedouble].n;

			/* each frame's own line; files without them have the innermost's */
			const cJSON *y = locs[i].fl ? cJSON_GetArrayItem(locs[i].fl, j) : NULL;

			files[j] = y ? cJSON_GetArrayItem(y, 0)->valuestring : j ? NULL : locs[i].file;
			lines[j] = y ? (uint32_t)cJSON_GetArrayItem(y, 1)->valuedouble
				     : j ? 0 : locs[i].line;
			if (files[j] && !files[j][0])
				files[j] = NULL;
			names[j++] = n[0] ? n : NULL;
		}
		r = sym_intern_loc(s, locs[i].m, locs[i].a, names, files, lines, j, &ids[i]);
	}
	free(names);
	free(files);
	free(lines);
	return r < 0 ? -ENOMEM : 0;
}


int stackfile_check(struct sf_rd *rd, const cJSON *o, int need, struct stackfile_rd *f)
{
	uint64_t csum = 0, nssum = 0;
	const cJSON *arr, *it;
	struct rstack rs;
	int r, i = 0;

	*f = (struct stackfile_rd){ 0 };
	if ((r = sf_get_array(rd, o, "stacks", need, STORE_MAX_ITEMS, &f->stacks, &f->nstacks)) ||
	    !f->stacks)
		return r;
	if (rd->format >= 2) {
		if ((r = sf_get_array(rd, o, "procs", SF_ALWAYS, STORE_MAX_ITEMS, &arr, &f->nprocs)))
			return r;
		f->procs = calloc(f->nprocs + 1, sizeof(*f->procs));
		if (!f->procs)
			return -ENOMEM;
		cJSON_ArrayForEach(it, arr) {
			if ((r = read_proc(rd, it, i, &f->procs[i])))
				return r;
			i++;
		}
		rd->at[0] = '\0';
	}
	if ((r = sf_get_array(rd, o, "locs", SF_ALWAYS, STORE_MAX_ITEMS, &arr, &f->nlocs)))
		return r;
	f->locs = calloc(f->nlocs + 1, sizeof(*f->locs));
	if (!f->locs)
		return -ENOMEM;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		if ((r = read_loc(rd, it, i, f->procs, f->nprocs, &f->locs[i])))
			return r;
		i++;
	}
	i = 0;
	cJSON_ArrayForEach(it, f->stacks) {
		if ((r = read_stack(rd, it, i++, f->nlocs, &rs)))
			return r;
		/* identical stacks are merged on loading: their sums must not wrap */
		if (__builtin_add_overflow(csum, rs.count, &csum))
			return sf_bad(rd, "c", "the counts of the stacks add up to more than 64 bits");
		if (__builtin_add_overflow(nssum, rs.ns, &nssum))
			return sf_bad(rd, "ns", "the times of the stacks add up to more than 64 bits");
	}
	rd->at[0] = '\0';
	return 0;
}

int stackfile_load(struct sf_rd *rd, struct stackfile_rd *f, struct sym *s, struct agg *agg,
		   uint32_t *sid)
{
	struct agg_stack *st = malloc(agg_stack_size(2 * STORE_MAX_DEPTH));
	uint32_t *ids = calloc(f->nlocs + 1, sizeof(*ids));
	const cJSON *it, *x;
	struct rstack rs;
	int r = -ENOMEM, i = 0;

	if (!st || !ids || commit_locs(rd, s, f->procs, f->nprocs, f->locs, f->nlocs, ids))
		goto out;
	cJSON_ArrayForEach(it, f->stacks) {
		uint32_t j = 0;

		if ((r = read_stack(rd, it, i++, f->nlocs, &rs))) /* (checked: cannot fail) */
			goto out;
		*st = (struct agg_stack){ .kind = rs.kind, .pid = rs.pid, .tid = rs.tid,
					  .cgroup = rs.cgroup,
					  .unwalk = rs.unwalk,
					  .flags = (rs.cut_short ? AGG_SF_CUT(rs.cut ? rs.cut :
								AGG_UNWALK_FP_CHAIN) : 0) |
						   (rs.marks_pending ? AGG_SF_MARKS_PENDING : 0),
					  .nuser = rs.nuser,
					  .nkern = rs.n - rs.nuser };
		r = -ENOMEM;
		if (rs.section && sym_intern_str(s, rs.section, &st->section))
			goto out;
		cJSON_ArrayForEach(x, rs.l)
			st->locs[j++] = ids[(size_t)x->valuedouble];
		if ((r = agg_add_id(agg, st, rs.count, rs.ns, &sid[i - 1])))
			goto out;
	}
	r = 0;
out:
	rd->at[0] = '\0';
	free(ids);
	free(st);
	return r;
}

void stackfile_release(struct stackfile_rd *f)
{
	free(f->procs);
	free(f->locs);
	*f = (struct stackfile_rd){ 0 };
}
