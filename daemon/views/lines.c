// SPDX-License-Identifier: GPL-2.0-only
/*
 * pcs_: the per-line listing and profil's histogram (lines.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "hotspot.h"
#include "python.h"
#include "v8.h"
#include "profil.h"
#include "proto.h"
#include "sym.h"
#include "util.h"

struct pcs {
	const struct sym *s;
	struct itab *locs;	/* sym location ids of innermost user pcs -> index */
	uint64_t *counts;	/* samples at each */
	size_t cap;
	uint64_t total;		/* every sample gathered */
	signed char *runtime;	/* per sym module: 1 a runtime's frames, 0 not, -1 not asked */
	size_t nruntime;
	int err;
};

static uint32_t loc_at(const struct pcs *x, uint32_t i)
{
	return *(const uint32_t *)itab_key(x->locs, i, NULL);
}

/* Locations hottest first (ties: lower address first), for the per-address rows. */
static int hotter(const void *a, const void *b, void *arg)
{
	const struct pcs *x = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	uint64_t ci = x->counts[i], cj = x->counts[j];
	uint64_t ai = sym_loc(x->s, loc_at(x, i))->addr, aj = sym_loc(x->s, loc_at(x, j))->addr;

	if (ci != cj)
		return ci < cj ? 1 : -1;
	return ai < aj ? -1 : ai > aj;
}

struct pcs *pcs_new(const struct sym *s)
{
	struct pcs *x = calloc(1, sizeof(*x));

	if (x && !(x->locs = itab_new())) {
		free(x);
		return NULL;
	}
	if (x)
		x->s = s;
	return x;
}

void pcs_free(struct pcs *x)
{
	if (!x)
		return;
	itab_free(x->locs);
	free(x->counts);
	free(x->runtime);
	free(x);
}

static bool runtime_name(const char *m)
{
	return !strcmp(m, PY_MODULE) || !strcmp(m, V8_MODULE) || !strcmp(m, HS_MODULE);
}

/*
 * Whether sym module @module holds a runtime's frames (Python's, JavaScript's, Java's), whose
 * addresses are keys, not code's: the module pcmon made for them has no file, its path is its
 * name (the java launcher, an ELF object also named java, has a path of its own).
 */
static bool runtime_loc_module(struct pcs *x, uint32_t module)
{
	struct sym_module_info mi;
	size_t n = x->nruntime;

	if (module >= n) {
		if (GROW(x->runtime, x->nruntime, (size_t)module + 1)) {
			x->err = -ENOMEM;
			return false;
		}
		memset(x->runtime + n, -1, x->nruntime - n);
	}
	if (x->runtime[module] < 0)
		x->runtime[module] = !sym_module_info(x->s, module, &mi) && mi.path &&
				     !strcmp(mi.path, mi.name) && runtime_name(mi.name);
	return x->runtime[module];
}

/* A frame of a runtime's code (not one of its stubs, "[name]", which run for the frame
 * above them as native code does). */
static bool runtime_frame(struct pcs *x, const struct sym_loc *l)
{
	const uint32_t *fr;

	if (!l || !runtime_loc_module(x, l->module))
		return false;
	fr = sym_frames(x->s, l);
	return sym_str(x->s, sym_proc(x->s, fr[l->nframes - 1])->name)[0] != '[';
}

static void pcs_add(struct pcs *x, uint32_t loc, uint64_t weight)
{
	uint32_t id;
	int r = itab_intern(x->locs, &loc, sizeof(loc), &id);

	if (r < 0 || (r == 1 && GROW(x->counts, x->cap, (size_t)id + 1))) {
		x->err = -ENOMEM;
		return;
	}
	if (r == 1)
		x->counts[id] = 0;
	x->counts[id] += weight;
}

/*
 * Each sample counts at its innermost user pc. A runtime's frame with native code below it
 * (the interpreter's helpers, a C extension, V8's builtins, a JVM's stubs) counts as well, at
 * its own line:
 * a Python or JavaScript function's lines are where its code was, whatever ran for it, as
 * the program sees them. (Only the runtime's procedures read those counts; a native
 * procedure's lines are its shallow samples.)
 */
void pcs_visit(void *ctx, const struct agg_visit *v)
{
	struct pcs *x = ctx;
	int i, n = v->st->nuser;

	if ((v->cls != AGG_C_PROC && v->cls != AGG_C_FOREIGN) || !n || x->err)
		return;
	pcs_add(x, v->st->locs[n - 1], v->weight);
	x->total += v->weight;
	for (i = n - 1; i >= 0; i--)
		if (runtime_frame(x, sym_loc(x->s, v->st->locs[i])))
			break;
	if (i >= 0 && i < n - 1)
		pcs_add(x, v->st->locs[i], v->weight);
}

/* The procedure @name names: "module.name" exactly, else "name" in one module only. */
static int find_proc(const struct sym *s, const char *name, uint32_t *proc, cJSON **err)
{
	uint32_t n = 0, first = 0, second = 0;

	for (uint32_t p = 0; p < sym_nprocs(s); p++) {
		const struct sym_procinfo *pi = sym_proc(s, p);

		if (!pi->name)
			continue;
		if (!strcmp(sym_str(s, pi->full), name)) {
			*proc = p;
			return 0;
		}
		if (!strcmp(sym_str(s, pi->name), name)) {
			second = n ? p : second;
			first = n ? first : p;
			n++;
		}
	}
	if (n == 1) {
		*proc = first;
		return 0;
	}
	*err = n ? proto_error(2, "%s is in more than one object (%s, %s): give module.name", name,
			       sym_str(s, sym_proc(s, first)->full), sym_str(s, sym_proc(s, second)->full))
		 : proto_error(1, "no procedure %s in this target's samples (see pcmon list)", name);
	return -1;
}

static void add_hex(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	cJSON_AddStringToObject(o, k, buf);
}

/* Up to 16 bytes of the code at a location, as hex; nothing if its object is not open. */
static void add_code(const struct sym *s, const struct sym_loc *l, cJSON *o)
{
	unsigned char code[16];
	char hex[2 * sizeof(code) + 1];
	int n = sym_code_bytes(s, l->module, l->addr, code, sizeof(code));

	if (n <= 0)
		return;
	for (int i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", code[i]);
	cJSON_AddStringToObject(o, "code", hex);
}

struct line_row {
	uint32_t file, line;
	uint64_t count;
	cJSON *addrs;
};

static int by_count(const void *a, const void *b)
{
	const struct line_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static double pct(uint64_t n, uint64_t d)
{
	return d ? 100.0 * n / d : 0;
}

int pcs_lines_json(struct pcs *x, const char *name, uint64_t counted, cJSON *out, cJSON **err)
{
	const struct sym *s = x->s;
	struct line_row *rows = NULL;
	size_t nrows = 0, cap = 0;
	uint64_t total = 0;
	bool have_lines = false;
	uint32_t proc, *order = NULL;
	const char *comp_dir = NULL;
	cJSON *o, *arr;

	if (x->err)
		return *err = proto_error(1, "out of memory while listing"), -1;
	if (find_proc(s, name, &proc, err))
		return -1;
	order = malloc((itab_count(x->locs) + 1) * sizeof(*order));
	if (!order)
		goto oom;
	for (uint32_t i = 0; i < itab_count(x->locs); i++)
		order[i] = i;
	qsort_r(order, itab_count(x->locs), sizeof(*order), hotter, x);
	for (uint32_t k = 0; k < itab_count(x->locs); k++) {
		uint32_t i = order[k];
		const struct sym_loc *l = sym_loc(s, loc_at(x, i));
		const uint32_t *fr = sym_frames(s, l);
		const struct sym_line *fl = sym_frame_lines(s, l);
		uint32_t j;
		size_t r;
		cJSON *a;

		/* the innermost frame of the pc's inline chain that is the procedure: its line */
		for (j = 0; j < l->nframes && fr[j] != proc; j++)
			;
		if (j == l->nframes)
			continue;
		total += x->counts[i];
		have_lines |= fl[j].line != 0;
		for (r = 0; r < nrows && !(rows[r].file == fl[j].file && rows[r].line == fl[j].line); r++)
			;
		if (!comp_dir)
			comp_dir = sym_comp_dir(s, l->module, l->addr);
		if (r == nrows) {
			if (GROW(rows, cap, nrows + 1))
				goto oom;
			rows[nrows++] = (struct line_row){ fl[j].file, fl[j].line, 0,
							   cJSON_CreateArray() };
		}
		rows[r].count += x->counts[i];
		if (runtime_loc_module(x, l->module))
			continue; /* (its address is a key, not code's: no address rows) */
		a = cJSON_CreateObject();
		if (!a || !cJSON_AddItemToArray(rows[r].addrs, a)) {
			cJSON_Delete(a);
			goto oom;
		}
		add_hex(a, "address", l->addr);
		cJSON_AddNumberToObject(a, "count", x->counts[i]);
		add_code(s, l, a);
	}
	o = cJSON_AddObjectToObject(out, "lines");
	cJSON_AddStringToObject(o, "procedure", sym_str(s, sym_proc(s, proc)->full));
	cJSON_AddStringToObject(o, "module", sym_str(s, sym_proc(s, proc)->module));
	cJSON_AddNumberToObject(o, "count", total);
	cJSON_AddNumberToObject(o, "counted", counted);
	cJSON_AddBoolToObject(o, "line_tables", have_lines);
	if (comp_dir) /* where relative file names are */
		cJSON_AddStringToObject(o, "comp_dir", comp_dir);
	arr = cJSON_AddArrayToObject(o, "lines");
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_count);
	for (size_t r = 0; r < nrows; r++) {
		cJSON *l = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, l);
		cJSON_AddStringToObject(l, "file", sym_str(s, rows[r].file));
		cJSON_AddNumberToObject(l, "line", rows[r].line);
		cJSON_AddNumberToObject(l, "count", rows[r].count);
		cJSON_AddNumberToObject(l, "percent_of_procedure", pct(rows[r].count, total));
		cJSON_AddNumberToObject(l, "percent_of_counted", pct(rows[r].count, counted));
		cJSON_AddItemToObject(l, "addresses", rows[r].addrs);
		rows[r].addrs = NULL;
	}
	free(rows);
	free(order);
	return 0;
oom:
	for (size_t r = 0; r < nrows; r++)
		cJSON_Delete(rows[r].addrs);
	free(rows);
	free(order);
	*err = proto_error(1, "out of memory while listing");
	return -1;
}

/* The module of a location, by name. */
static const char *loc_module(const struct sym *s, const struct sym_loc *l)
{
	struct sym_module_info mi;

	return sym_module_info(s, l->module, &mi) ? "" : mi.name;
}

/* Where profil's buffer starts: module and offset, from "module+0xOFF", "0xADDR" (in
 * @program) or a procedure (then *len is its size). */
static int profil_origin(struct pcs *x, const char *spec, const char *program, char *module,
			 size_t modlen, uint64_t *offset, uint64_t *len, cJSON **err)
{
	const char *plus = strrchr(spec, '+');
	char *end;
	uint32_t proc;

	*len = 0;
	if (plus && plus != spec && !strncmp(plus + 1, "0x", 2)) {
		*offset = strtoull(plus + 1, &end, 16);
		if (*end || end == plus + 3)
			goto bad;
		snprintf(module, modlen, "%.*s", (int)(plus - spec), spec);
		if (!strcmp(module, PY_MODULE) || !strcmp(module, V8_MODULE)) {
			*err = proto_error(2, "--offset %s: %s frames have no code addresses: use list --lines",
					   spec, module);
			return -1;
		}
		return 0;
	}
	if (!strncmp(spec, "0x", 2) || (spec[0] >= '0' && spec[0] <= '9')) {
		*offset = strtoull(spec, &end, 0);
		if (*end)
			goto bad;
		snprintf(module, modlen, "%s", program);
		return 0;
	}
	if (find_proc(x->s, spec, &proc, err))
		return -1;
	if (!sym_proc(x->s, proc)->hi) {
		*err = proto_error(1, "--offset %s: where its code ends is not known (a stripped or JIT procedure): give --offset MODULE+0xADDR --bufsiz BYTES",
				   spec);
		return -1;
	}
	snprintf(module, modlen, "%s", sym_str(x->s, sym_proc(x->s, proc)->module));
	*offset = sym_proc(x->s, proc)->lo;
	*len = sym_proc(x->s, proc)->hi - *offset;
	return 0;
bad:
	*err = proto_error(2, "--offset %s: expected an address (0x...), MODULE+0xOFF or a procedure",
			   spec);
	return -1;
}

int pcs_profil_json(struct pcs *x, const char *spec, uint32_t scale, uint64_t bufsiz,
		    const char *program, cJSON *out, cJSON **err)
{
	const struct sym *s = x->s;
	char module[256];
	uint64_t offset, len, ncells, inside = 0, *cells = NULL;
	uint32_t *hottest = NULL; /* per cell: the pc with the most samples (index in x) */
	cJSON *o, *arr, *detail;

	if (x->err)
		return *err = proto_error(1, "out of memory while listing"), -1;
	if (profil_origin(x, spec, program, module, sizeof(module), &offset, &len, err))
		return -1;
	if (!bufsiz && !len) {
		*err = proto_error(2, "--offset %s: an address needs --bufsiz BYTES", spec);
		return -1;
	}
	ncells = bufsiz ? bufsiz / 2 : profil_cells_for(len, scale);
	if (ncells > PCS_MAX_BUFSIZ / 2) {
		*err = proto_error(2, "--bufsiz: %" PRIu64 " bytes of cells, more than %u: give a smaller scale or --bufsiz",
				   2 * ncells, PCS_MAX_BUFSIZ);
		return -1;
	}
	cells = calloc(ncells + 1, sizeof(*cells));
	hottest = calloc(ncells + 1, sizeof(*hottest));
	if (!cells || !hottest)
		goto oom;
	for (uint32_t i = 0; i < itab_count(x->locs); i++) {
		const struct sym_loc *l = sym_loc(s, loc_at(x, i));
		uint64_t c;

		if (strcmp(loc_module(s, l), module) || runtime_loc_module(x, l->module) ||
		    !profil_cell(l->addr, offset, scale, ncells, &c))
			continue;
		if (!cells[c] || x->counts[i] > x->counts[hottest[c]])
			hottest[c] = i;
		cells[c] += x->counts[i];
		inside += x->counts[i];
	}
	o = cJSON_AddObjectToObject(out, "profil");
	cJSON_AddStringToObject(o, "module", module);
	add_hex(o, "offset", offset);
	cJSON_AddNumberToObject(o, "scale", scale);
	cJSON_AddNumberToObject(o, "bufsiz", (double)(2 * ncells));
	cJSON_AddNumberToObject(o, "samples", (double)x->total);
	cJSON_AddNumberToObject(o, "inside", (double)inside);
	cJSON_AddNumberToObject(o, "outside", (double)(x->total - inside));
	cJSON_AddBoolToObject(o, "off", PROFIL_OFF(scale));
	arr = cJSON_AddArrayToObject(o, "cells");
	detail = cJSON_AddArrayToObject(o, "detail");
	for (uint64_t c = 0; c < ncells && arr && detail; c++) {
		const struct sym_loc *l;
		uint64_t lo, hi;
		cJSON *d;

		cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)cells[c]));
		if (!cells[c])
			continue;
		l = sym_loc(s, loc_at(x, hottest[c]));
		profil_cell_range(c, offset, scale, &lo, &hi);
		d = cJSON_CreateObject();
		cJSON_AddItemToArray(detail, d);
		cJSON_AddNumberToObject(d, "cell", (double)c);
		cJSON_AddNumberToObject(d, "count", (double)cells[c]);
		add_hex(d, "lo", lo);
		if (hi != UINT64_MAX)
			add_hex(d, "hi", hi);
		cJSON_AddStringToObject(d, "procedure",
					sym_str(s, sym_proc(s, sym_frames(s, l)[l->nframes - 1])->full));
		cJSON_AddStringToObject(d, "file", sym_str(s, sym_frame_lines(s, l)[0].file));
		cJSON_AddNumberToObject(d, "line", sym_frame_lines(s, l)[0].line);
	}
	free(cells);
	free(hottest);
	return 0;
oom:
	free(cells);
	free(hottest);
	*err = proto_error(1, "out of memory while listing");
	return -1;
}
