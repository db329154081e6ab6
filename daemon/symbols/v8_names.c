// SPDX-License-Identifier: GPL-2.0-only
/*
 * JavaScript frames named from a V8 process's heap (docs/node.md): the processes looked at,
 * the SharedFunctionInfos, Scripts and Code objects read (v8_heap.c) and cached by (pid,
 * address), checked once per drain, each frame's inline chain and lines, and the frames
 * merged into the native stacks.
 */
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "procmaps.h"
#include "sym.h"
#include "util.h"
#include "v8.h"
#include "v8_int.h"

/* Entries cached at most before they are all forgotten and read again. */
#define V8_FNS_MAX (256u << 10)
#define V8_SCRIPTS_MAX (16u << 10)
#define V8_BINS_MAX 64

/* A binary looked at, known by its file. */
struct v8_bin {
	uint64_t dev, ino, size;
	int64_t mtime;
	int r;			/* v8_layout_of_file()'s */
	struct v8_layout l;
	char why[200];
};

/*
 * All pcmon keeps of one process besides the caches (which are keyed by pid and checked
 * again each drain): made at its first look, let go V8_FORGET_NS after it exits, so that a
 * machine's churn of processes leaves nothing behind.
 */
struct v8_pid {
	uint32_t looked[2];	/* the last two images looked at, epoch + 1 */
	bool told;		/* a warning was given about it */
	bool found;		/* a V8 pcmon reads, laid out as l says */
	bool gone;		/* exited */
	struct v8_layout l;
};

/* A SharedFunctionInfo of a process, as last read. */
struct v8_fn {
	uint64_t sum;		/* the fields that say what it is: unchanged, same function */
	uint32_t gen;		/* the drain it was last checked in (0: never read) */
	uint32_t name, file;	/* sym string ids: the procedure, the script's name */
	uint32_t line;		/* its first line, 0: not known */
	uint64_t script;	/* its Script (tagged), 0: none */
	uint8_t *spt;		/* its bytecode's source position table, NULL: none read */
	uint32_t nspt;
	uint64_t data;		/* its function data (tagged): its bytecode, or baseline code */
};

/* A Code object of a process (optimized code: what it inlined), as last read. */
struct v8_code {
	uint64_t sum;
	uint32_t gen;
	uint64_t start;		/* its instructions [start, start + size) */
	uint32_t size;
	uint32_t kind;
	uint64_t sfi;		/* the function it is the code of (untagged), 0: not optimized */
	uint64_t *inl_sfi;	/* the functions it inlined (untagged) */
	uint32_t ninl_sfi;
	struct v8_inl { int64_t pos; int32_t fn; } *inl;	/* where each inlining is */
	uint32_t ninl;
	uint8_t *spt;		/* pc offsets to source positions (baseline: to bytecodes) */
	uint32_t nspt;
	uint8_t *bc;		/* baseline code: the bytecodes it runs, and their positions */
	uint32_t nbc;
	uint8_t *bspt;
	uint32_t nbspt;
};

/* A frame's location, as named in drain gen (frame_loc()). */
struct v8_floc {
	uint32_t gen, loc;
};

/* Where the code that replaced a running loop was found (osr_code()). */
struct v8_osr {
	uint32_t gen;
	uint64_t code;		/* tagged, 0: none */
};

/* A Script's line ends, as last read. */
struct v8_script {
	uint64_t sum;
	uint32_t gen;		/* the drain it was last checked in */
	uint32_t nends;
	uint32_t *ends;
	bool tried;
};

struct v8 {
	struct sym *sym;
	struct itab *fkeys;	/* (pid, sfi) */
	struct v8_fn *fns;
	size_t cap_fns;
	struct itab *skeys;	/* (pid, script) */
	struct v8_script *scripts;
	size_t cap_scripts;
	struct itab *lkeys;	/* (pid, a frame's words) */
	struct v8_floc *flocs;
	size_t cap_flocs;
	struct itab *okeys;	/* (pid, feedback cell, pc) */
	struct v8_osr *osrs;
	size_t cap_osrs;
	struct itab *ckeys;	/* (pid, code) */
	struct v8_code *codes;
	size_t cap_codes;
	struct pidtab *pids;	/* struct v8_pid by pid */
	uint32_t nfound;	/* of them V8s, running or not yet forgotten */
	struct v8_bin *bins;
	size_t nbins, cap_bins;
	uint32_t gen;
	uint32_t jit_module;	/* string id of SYM_JIT_MODULE */
	struct v8_stats st;
};

struct v8 *v8_new(struct sym *s)
{
	struct v8 *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->sym = s;
	v->gen = 1;
	if (!(v->fkeys = itab_new()) || !(v->skeys = itab_new()) || !(v->ckeys = itab_new()) ||
	    !(v->okeys = itab_new()) || !(v->lkeys = itab_new()) || !(v->pids = pidtab_new()) ||
	    sym_intern_str(s, SYM_JIT_MODULE, &v->jit_module)) {
		v8_free(v);
		return NULL;
	}
	return v;
}

static void scripts_clear(struct v8 *v)
{
	for (uint32_t i = 0; v->skeys && i < itab_count(v->skeys); i++)
		free(v->scripts[i].ends);
}

static void fns_clear(struct v8 *v)
{
	for (uint32_t i = 0; v->fkeys && i < itab_count(v->fkeys); i++)
		free(v->fns[i].spt);
}

static void code_free(struct v8_code *c)
{
	free(c->inl_sfi);
	free(c->inl);
	free(c->spt);
	free(c->bc);
	free(c->bspt);
	*c = (struct v8_code){ 0 };
}

static void codes_clear(struct v8 *v)
{
	for (uint32_t i = 0; v->ckeys && i < itab_count(v->ckeys); i++)
		code_free(&v->codes[i]);
}

void v8_free(struct v8 *v)
{
	struct v8_pid *p;
	size_t it = 0;

	if (!v)
		return;
	scripts_clear(v);
	fns_clear(v);
	codes_clear(v);
	itab_free(v->ckeys);
	free(v->codes);
	itab_free(v->okeys);
	free(v->osrs);
	itab_free(v->lkeys);
	free(v->flocs);
	itab_free(v->fkeys);
	itab_free(v->skeys);
	free(v->fns);
	free(v->scripts);
	while (v->pids && (p = pidtab_next(v->pids, &it)))
		free(p);
	pidtab_free(v->pids);
	free(v->bins);
	free(v);
}

void v8_next_gen(struct v8 *v)
{
	if (++v->gen == 0)
		v->gen = 1;
}

void v8_stats(const struct v8 *v, struct v8_stats *st)
{
	*st = v->st;
	st->procs = v->nfound;
}

/* ---- processes */

static struct v8_pid *pid_find(const struct v8 *v, uint32_t pid)
{
	return pidtab_get(v->pids, pid);
}

/* @pid's entry, made if it has none: NULL only without memory. */
static struct v8_pid *pid_make(struct v8 *v, uint32_t pid)
{
	struct v8_pid *p = pid_find(v, pid);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p || pidtab_put(v->pids, pid, p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* @pid's entry if it runs (or ran) a V8 pcmon reads. */
static struct v8_pid *v8_of(const struct v8 *v, uint32_t pid)
{
	struct v8_pid *p = pid_find(v, pid);

	return p && p->found ? p : NULL;
}

bool v8_is_v8(struct v8 *v, uint32_t pid)
{
	struct v8_pid *p = pid_find(v, pid);

	return p && p->found && !p->gone;
}

bool v8_first_look(struct v8 *v, uint32_t pid, uint32_t epoch)
{
	struct v8_pid *p = pid_make(v, pid);

	if (!p || p->looked[0] == epoch + 1 || p->looked[1] == epoch + 1)
		return false; /* (no memory: no look, its samples stay native) */
	p->looked[1] = p->looked[0];
	p->looked[0] = epoch + 1;
	return true;
}

bool v8_looked(const struct v8 *v, uint32_t pid, uint32_t epoch)
{
	struct v8_pid *p = pid_find(v, pid);

	return p && (p->looked[0] == epoch + 1 || p->looked[1] == epoch + 1);
}

bool v8_tell_once(struct v8 *v, uint32_t pid)
{
	struct v8_pid *p = pid_make(v, pid);

	if (!p || p->told)
		return false;
	return p->told = true;
}

uint32_t v8_procs_kept(const struct v8 *v)
{
	return pidtab_count(v->pids);
}

/* @p found to run a V8 (@l its layout), or not (@l NULL). */
static void pid_set_found(struct v8 *v, struct v8_pid *p, const struct v8_layout *l)
{
	v->nfound += (l != NULL) - p->found;
	p->found = l != NULL;
	if (l)
		p->l = *l;
}

void v8_exited(struct v8 *v, uint32_t pid, uint64_t now)
{
	struct v8_pid *p;
	bool any = false;
	uint32_t gone;

	while ((p = pidtab_expire(v->pids, now - MIN(now, V8_FORGET_NS), &gone))) {
		any |= p->found;
		pid_set_found(v, p, NULL);
		free(p);
	}
	p = pid_find(v, pid);
	if (p && !p->gone) {
		p->gone = true;
		pidtab_exited(v->pids, pid, now); /* (no memory: kept until its pid comes back) */
	}
	if (!any)
		return;
	/* A V8 forgotten: its cache entries go with the next check of each (a table by pid
	 * would cost more than reading live processes' entries again, at most once a drain). */
	for (uint32_t i = 0; i < itab_count(v->fkeys); i++)
		v->fns[i].gen = 0;
	for (uint32_t i = 0; i < itab_count(v->skeys); i++)
		v->scripts[i].gen = 0;
	for (uint32_t i = 0; i < itab_count(v->ckeys); i++)
		v->codes[i].gen = 0;
	for (uint32_t i = 0; i < itab_count(v->okeys); i++)
		v->osrs[i].gen = 0;
	for (uint32_t i = 0; i < itab_count(v->lkeys); i++)
		v->flocs[i].gen = 0;
}

/* The layout of the binary open at @fd, read once per file. */
static const struct v8_bin *bin_of(struct v8 *v, int fd)
{
	struct v8_bin *b;
	struct stat st;

	if (fstat(fd, &st))
		return NULL;
	for (size_t i = 0; i < v->nbins; i++) {
		b = &v->bins[i];
		if (b->dev == st.st_dev && b->ino == st.st_ino && b->size == (uint64_t)st.st_size &&
		    b->mtime == st.st_mtim.tv_sec)
			return b;
	}
	if (v->nbins >= V8_BINS_MAX)
		v->nbins = 0;
	if (GROW(v->bins, v->cap_bins, v->nbins + 1))
		return NULL;
	b = &v->bins[v->nbins++];
	*b = (struct v8_bin){ .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
			      .mtime = st.st_mtim.tv_sec };
	elf_version(EV_CURRENT);
	b->r = v8_layout_of_file(fd, &b->l, b->why, sizeof(b->why));
	return b;
}

static bool v8ish(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "node", 4) || !strncmp(base, "libnode", 7);
}

struct find_ctx {
	struct v8 *v;
	uint32_t pid;
	const struct v8_bin *found;
	const char *last;
	char *path;
	size_t plen;
};

static int find_cb(void *ctx, const char *path, uint64_t start, uint64_t end, uint64_t pgoff)
{
	struct find_ctx *c = ctx;
	const struct v8_bin *b;
	int fd;

	if (pgoff || path[0] != '/' || !v8ish(path) || (c->last && !strcmp(c->last, path)))
		return 0;
	c->last = path;
	fd = procmaps_open(c->pid, start, end, path);
	if (fd < 0)
		return 0;
	b = bin_of(c->v, fd);
	close(fd);
	if (!b || b->r == -ENOENT)
		return 0;
	c->found = b;
	snprintf(c->path, c->plen, "%s", path);
	return 1;
}

int v8_add(struct v8 *v, struct sym *s, uint32_t pid, uint32_t epoch, struct pcmon_v8proc *out,
	   char *why, size_t len)
{
	char path[4096] = "";
	struct find_ctx c = { v, pid, NULL, NULL, path, sizeof(path) };
	struct v8_pid *p = pid_make(v, pid);

	if (!p)
		return -ENOMEM;
	sym_proc_files(s, pid, epoch, find_cb, &c);
	if (!c.found || c.found->r) {
		pid_set_found(v, p, NULL); /* (an exec into another image) */
		if (!c.found)
			return -ENOENT;
		snprintf(why, len, "%s: %s", path, c.found->why);
		return c.found->r;
	}
	pid_set_found(v, p, &c.found->l);
	p->gone = false;
	*out = (struct pcmon_v8proc){ .version = c.found->l.version, .o = c.found->l.o };
	return 0;
}

/* The line ends of script @script (tagged), cached by (pid, address). */
static const struct v8_script *script_of(struct v8 *v, uint32_t pid, const struct v8_layout *l,
					 uint64_t script)
{
	struct { uint32_t pid, pad; uint64_t addr; } key = { pid, 0, script };
	struct v8_script *s;
	uint64_t src;
	uint32_t slot;
	int r;

	if (itab_count(v->skeys) >= V8_SCRIPTS_MAX) {
		scripts_clear(v);
		itab_free(v->skeys);
		if (!(v->skeys = itab_new()))
			return NULL;
	}
	r = itab_intern(v->skeys, &key, sizeof(key), &slot);
	if (r < 0 || GROW(v->scripts, v->cap_scripts, slot + 1))
		return NULL;
	s = &v->scripts[slot];
	if (r == 1)
		*s = (struct v8_script){ 0 };
	if (s->tried && s->gen == v->gen)
		return s; /* (checked once per drain) */
	s->gen = v->gen;
	if (v8_mem_read(pid, script - 1 + l->script_source, &src, sizeof(src)))
		return s->tried ? s : NULL;
	if (s->tried && s->sum == src)
		return s;
	s->tried = true;
	s->sum = src;
	{
		uint32_t *ends, n;

		if (!v8_scan_source(pid, l, src, &ends, &n)) {
			free(s->ends);
			s->ends = ends;
			s->nends = n;
		} else {
			s->nends = 0;
		}
	}
	return s;
}

/* ---- SharedFunctionInfos */

#define V8_SFI_HDR 128
/* The most of an object's header read (the offsets are bounded by V8_OFF_MAX in v8.c). */
#define V8_OFF_HDR 256

/* The bytes of an SFI read: up to the last field read. */
static size_t sfi_hdr(const struct v8_layout *l)
{
	size_t n = MAX(l->sfi_name_or_scope, MAX(l->sfi_script, l->sfi_function_data));

	return MIN(MAX(n, (size_t)l->o.map) + 8, (size_t)V8_SFI_HDR);
}

/* What says which function an SFI is: its map, name or scope, script. */
static uint64_t sfi_sum(const struct v8_layout *l, const uint8_t *h)
{
	uint64_t f[3] = { v8_u64_at(h, l->o.map), v8_u64_at(h, l->sfi_name_or_scope),
			  v8_u64_at(h, l->sfi_script) };

	return hash_bytes(f, sizeof(f));
}

/*
 * The cached SFI @sfi (untagged) of process @pid, checked once per drain: its header is read
 * again, and if what says which function it is changed (freed and another object took its
 * place) it is read whole again. A process gone keeps what was read while it ran.
 */
static struct v8_fn *fn_of(struct v8 *v, uint32_t pid, uint64_t sfi)
{
	struct { uint32_t pid, pad; uint64_t addr; } key = { pid, 0, sfi };
	char name[V8_NAME_MAX * 3 + 1], script[V8_NAME_MAX * 3 + 1] = "", proc[1024];
	struct v8_pid *p = v8_of(v, pid);
	const struct v8_layout *l;
	const struct v8_script *s;
	uint8_t h[V8_SFI_HDR];
	struct v8_fn *f;
	uint64_t sc;
	int64_t start;
	uint32_t slot, line = 0;
	int r;

	if (itab_count(v->fkeys) >= V8_FNS_MAX) {
		fns_clear(v);
		itab_free(v->fkeys);
		if (!(v->fkeys = itab_new()))
			return NULL;
	}
	r = itab_intern(v->fkeys, &key, sizeof(key), &slot);
	if (r < 0 || GROW(v->fns, v->cap_fns, slot + 1))
		return NULL;
	f = &v->fns[slot];
	if (r == 1)
		*f = (struct v8_fn){ 0 };
	if (f->gen == v->gen)
		return f;
	if (!p)
		return f->gen ? f : NULL;
	l = &p->l;
	/* (no more than its fields span: an SFI may end the last page of the heap mapped) */
	if (v8_mem_read(pid, sfi, h, sfi_hdr(l)))
		return f->gen ? f : NULL; /* gone: what was read stands */
	if (v8_type_of(pid, l, sfi + 1) != l->o.type_sfi)
		return NULL; /* not an SFI (any more) */
	if (f->gen && f->sum == sfi_sum(l, h)) {
		f->gen = v->gen;
		f->data = v8_u64_at(h, l->sfi_function_data); /* (tiered up to baseline code since?) */
		return f;
	}
	v8_fn_name(pid, l, v8_u64_at(h, l->sfi_name_or_scope), name, sizeof(name), &start);
	sc = v8_u64_at(h, l->sfi_script);
	if (v8_type_of(pid, l, sc) == l->type_script) {
		uint64_t sn;

		if (!v8_mem_read(pid, sc - 1 + l->script_name, &sn, sizeof(sn)))
			v8_str_read(pid, l, sn, script, sizeof(script));
		s = script_of(v, pid, l, sc);
		if (s && s->nends && start >= 0)
			line = v8_line_of(s->ends, s->nends, (uint32_t)start) + 1;
	} else {
		sc = 0;
	}
	v8_proc_name(script, name, line, proc, sizeof(proc));
	free(f->spt);
	*f = (struct v8_fn){ .sum = sfi_sum(l, h), .gen = v->gen, .line = line, .script = sc,
			     .data = v8_u64_at(h, l->sfi_function_data) };
	f->spt = v8_bytecode_spt(pid, l, f->data, &f->nspt);
	if (sym_intern_str(v->sym, proc, &f->name) ||
	    sym_intern_str(v->sym, script[0] ? script : "(unknown)", &f->file)) {
		f->gen = 0;
		return NULL;
	}
	return f;
}

/*
 * The line of script offset @off in @f's script: 0 if not known (no position: the frame's
 * code says none, or its table could not be read), never another line in its place.
 */
static uint32_t fn_line(struct v8 *v, uint32_t pid, const struct v8_fn *f, int32_t off)
{
	struct v8_pid *p = v8_of(v, pid);
	const struct v8_script *s;

	if (off < 0 || !f->script || !p)
		return 0;
	s = script_of(v, pid, &p->l, f->script);
	if (!s || !s->nends)
		return 0;
	return v8_line_of(s->ends, s->nends, (uint32_t)off) + 1;
}

#define V8_INLINED_MAX 4096
#define V8_CODES_MAX (64u << 10)

/* Read Code @code (tagged) of @pid into @c: its instructions, and if optimized what it inlined. */
static int read_code(uint32_t pid, const struct v8_layout *l, uint64_t code, struct v8_code *c)
{
	uint8_t h[V8_OFF_HDR];
	uint64_t deopt, dlen, arr[24], lit, ipos;
	uint32_t n, flags;
	int64_t cnt;
	int32_t size;

	if (v8_type_of(pid, l, code) != l->type_code ||
	    v8_mem_read(pid, code - 1, h, (size_t)l->code_size + 4))
		return -EFAULT;
	memcpy(&flags, h + l->code_flags, sizeof(flags));
	memcpy(&size, h + l->code_size, sizeof(size));
	if (size <= 0)
		return -EINVAL;
	c->start = v8_u64_at(h, l->code_start);
	c->size = size;
	c->kind = flags & l->kind_mask;
	c->spt = v8_byte_array(pid, l, v8_u64_at(h, l->code_spt), V8_SPT_MAX, &c->nspt);
	if (c->kind == l->kind_baseline && l->nbytecodes) {
		c->bc = v8_baseline_bytecodes(pid, l, code, &c->nbc);
		c->bspt = v8_bytecode_spt(pid, l, code, &c->nbspt);
	}
	if (c->kind == l->kind_interpreted || c->kind == l->kind_baseline)
		return 0;
	/* optimized: DeoptimizationData, a FixedArray */
	deopt = v8_u64_at(h, l->code_deopt);
	/* (as long as the entries read: an empty one is code with nothing to deoptimize) */
	if (v8_type_of(pid, l, deopt) != l->type_fixed_array ||
	    v8_mem_read(pid, deopt - 1 + l->fixed_length, &dlen, sizeof(dlen)) || (dlen & 1) ||
	    (int64_t)dlen >> 32 < (int64_t)l->deopt_inlining + 1 ||
	    v8_mem_read(pid, deopt - 1 + l->fixed_length + 8, arr,
		     ((size_t)l->deopt_inlining + 1) * sizeof(arr[0])))
		return 0;
	c->sfi = v8_tagged(arr[l->deopt_sfi]) ? arr[l->deopt_sfi] - 1 : 0;
	cnt = (arr[l->deopt_ninlined] & 1) ? -1 : (int64_t)arr[l->deopt_ninlined] >> 32;
	lit = arr[l->deopt_literals];
	ipos = arr[l->deopt_inlining];
	if (cnt <= 0 || cnt > V8_INLINED_MAX)
		return 0;
	/* the literals' first cnt: the functions inlined */
	c->inl_sfi = malloc(cnt * sizeof(*c->inl_sfi));
	if (!c->inl_sfi || !v8_tagged(lit) ||
	    v8_mem_read(pid, lit - 1 + l->fixed_length + 8, c->inl_sfi, cnt * sizeof(*c->inl_sfi)))
		return 0;
	/* (a WeakFixedArray: a reference may be weak, its low bits 11) */
	for (int64_t i = 0; i < cnt; i++) {
		uint64_t x = c->inl_sfi[i] & ~2ULL;

		c->inl_sfi[i] = v8_tagged(x) ? x - 1 : 0;
	}
	c->ninl_sfi = cnt;
	/* InliningPositions: a ByteArray of { SourcePosition, int function id } */
	{
		uint8_t *b = v8_byte_array(pid, l, ipos, V8_INLINED_MAX * 16, &n);

		if (!b)
			return 0;
		c->inl = malloc((n / 16 + 1) * sizeof(*c->inl));
		if (c->inl) {
			for (uint32_t i = 0; i + 16 <= n; i += 16) {
				memcpy(&c->inl[i / 16].pos, b + i, 8);
				memcpy(&c->inl[i / 16].fn, b + i + 8, 4);
			}
			c->ninl = n / 16;
		}
		free(b);
	}
	return 0;
}

/* The cached Code @code (tagged) of @pid, checked once per drain (moved: read again). */
static struct v8_code *code_of(struct v8 *v, uint32_t pid, uint64_t code)
{
	struct { uint32_t pid, pad; uint64_t addr; } key = { pid, 0, code };
	struct v8_pid *p = v8_of(v, pid);
	struct v8_code *c;
	uint64_t start;
	uint32_t slot;
	int r;

	if (!code)
		return NULL;
	if (itab_count(v->ckeys) >= V8_CODES_MAX) {
		codes_clear(v);
		itab_free(v->ckeys);
		if (!(v->ckeys = itab_new()))
			return NULL;
	}
	r = itab_intern(v->ckeys, &key, sizeof(key), &slot);
	if (r < 0 || GROW(v->codes, v->cap_codes, slot + 1))
		return NULL;
	c = &v->codes[slot];
	if (r == 1)
		*c = (struct v8_code){ 0 };
	if (c->gen == v->gen)
		return c->size ? c : NULL;
	if (!p)
		return c->gen && c->size ? c : NULL;
	if (c->gen && !v8_mem_read(pid, code - 1 + p->l.code_start, &start, sizeof(start)) &&
	    start == c->start && v8_type_of(pid, &p->l, code) == p->l.type_code) {
		c->gen = v->gen;
		return c;
	}
	if (c->gen && v8_mem_read(pid, code - 1, &start, sizeof(start)))
		return c->size ? c : NULL; /* gone: what was read stands */
	code_free(c);
	c->gen = v->gen;
	read_code(pid, &p->l, code, c);
	return c->size ? c : NULL;
}

int v8_frame_early(struct v8 *v, uint32_t pid, const uint64_t *w)
{
	struct v8_code *c;

	if (!fn_of(v, pid, w[1] & PCMON_JS_ADDR_MASK))
		return -EFAULT;
	c = code_of(v, pid, w[2] & PCMON_JS_ADDR_MASK);
	for (uint32_t i = 0; c && i < c->ninl_sfi; i++)
		fn_of(v, pid, c->inl_sfi[i]);
	return 0;
}

/*
 * Code a running loop was replaced with (on-stack replacement), which no JSFunction holds:
 * V8 keeps it in the function's FeedbackVector, a weak reference in the slot of the loop's
 * jump back. The vector of feedback cell @cell (tagged) is looked through for one to code
 * holding @pc of function @sfi; what was found is kept by (pid, cell, pc) for the drain.
 */
#define V8_FV_MAX 4096
static const struct v8_code *osr_code(struct v8 *v, uint32_t pid, uint64_t cell, uint64_t pc,
				      uint64_t sfi, uint32_t adj)
{
	struct { uint32_t pid, pad; uint64_t cell, pc; } key = { pid, 0, cell, pc };
	struct v8_pid *p = v8_of(v, pid);
	const struct v8_layout *l;
	uint64_t fv, words[V8_FV_MAX / 8];
	const struct v8_code *c;
	struct v8_osr *o;
	uint32_t slot;
	int32_t len;
	size_t n;
	int r;

	if (!p || !cell)
		return NULL;
	l = &p->l;
	if (itab_count(v->okeys) >= V8_CODES_MAX) {
		itab_free(v->okeys);
		if (!(v->okeys = itab_new()))
			return NULL;
	}
	r = itab_intern(v->okeys, &key, sizeof(key), &slot);
	if (r < 0 || GROW(v->osrs, v->cap_osrs, slot + 1))
		return NULL;
	o = &v->osrs[slot];
	if (r == 1)
		*o = (struct v8_osr){ 0 };
	if (o->gen == v->gen || (o->gen && p->gone))
		return o->code ? code_of(v, pid, o->code) : NULL;
	o->gen = v->gen;
	o->code = 0;
	if (v8_mem_read(pid, cell - 1 + l->cell_value, &fv, sizeof(fv)) ||
	    v8_type_of(pid, l, fv) != l->type_feedback_vector ||
	    v8_mem_read(pid, fv - 1 + l->fixed_length, &len, sizeof(len)) || len < 0)
		return NULL;
	/* (its header and slots, as far as they go: it may end the last page mapped) */
	n = MIN((size_t)len * 8 + 64, sizeof(words));
	while (n >= 64 && v8_mem_read(pid, fv - 1, words, n))
		n /= 2;
	if (n < 64)
		return NULL;
	for (size_t i = 1; i < n / 8; i++) {
		uint64_t w = words[i];

		if ((w & 3) != 3 || w <= 3)
			continue;
		c = code_of(v, pid, w & ~2ULL);
		if (c && c->sfi == sfi && pc >= c->start + adj && pc - c->start - adj < c->size) {
			o->code = w & ~2ULL;
			return c;
		}
	}
	return NULL;
}

/* A JavaScript frame's functions, innermost first, with their lines. */
#define V8_CHAIN_MAX 16
struct v8_chain {
	uint32_t name[V8_CHAIN_MAX], file[V8_CHAIN_MAX];
	uint32_t line[V8_CHAIN_MAX], first[V8_CHAIN_MAX];
	uint32_t n;
};

/* (the cache's entries move as it grows: what a chain needs is copied at once) */
static void chain_put(struct v8 *v, uint32_t pid, struct v8_chain *ch, const struct v8_fn *f,
		      int32_t off)
{
	ch->name[ch->n] = f->name;
	ch->file[ch->n] = f->file;
	ch->first[ch->n] = f->line;
	ch->line[ch->n++] = fn_line(v, pid, f, off);
}

/* Optimized code @c at offset @off: the function at its source position, and those inlined. */
static int optimized_chain(struct v8 *v, uint32_t pid, const struct v8_code *c, uint64_t off,
			   struct v8_chain *ch)
{
	const struct v8_fn *g;
	int64_t pos;

	if (!c->spt || v8_spt_find(c->spt, c->nspt, off, &pos)) {
		/* (no position: the function alone, at its first line) */
		if (!(g = fn_of(v, pid, c->sfi)))
			return -EFAULT;
		chain_put(v, pid, ch, g, -1);
		return 0;
	}
	for (uint32_t k = 0; k < V8_CHAIN_MAX; k++) {
		int32_t id = v8_pos_inlining(pos), at = v8_pos_offset(pos);

		if (id < 0) {
			g = fn_of(v, pid, c->sfi);
		} else if ((uint32_t)id >= c->ninl || c->inl[id].fn < 0 ||
			   (uint32_t)c->inl[id].fn >= c->ninl_sfi) {
			return -EFAULT;
		} else {
			g = fn_of(v, pid, c->inl_sfi[c->inl[id].fn]);
		}
		if (!g)
			return -EFAULT;
		chain_put(v, pid, ch, g, at);
		if (id < 0)
			return 0;
		pos = c->inl[id].pos;
	}
	return -EFAULT; /* (deeper than V8 inlines) */
}

/* Does code @c hold @pc (a return address, one past its call, unless @inner)? */
static bool code_holds(const struct v8_code *c, uint64_t pc, bool inner)
{
	return c && pc >= c->start + !inner && pc - c->start - !inner < c->size;
}

/*
 * Function @f in its baseline code @c at offset @off: at the line of the bytecode there (the
 * code's bytecode offset table walked beside its bytecodes), at its first line in the code
 * of its entry, at line 0 (not known) if either cannot be read.
 */
static void baseline_chain(struct v8 *v, uint32_t pid, const struct v8_fn *f,
			   const struct v8_code *c, uint64_t off, struct v8_chain *ch)
{
	struct v8_pid *p = v8_of(v, pid);
	int64_t boff, pos;

	if (!p || !c->bc || !c->spt || off > UINT32_MAX ||
	    v8_baseline_boff(&p->l, c->spt, c->nspt, c->bc, c->nbc, (uint32_t)off, &boff)) {
		chain_put(v, pid, ch, f, -1);
		return;
	}
	if (boff < 0) {
		chain_put(v, pid, ch, f, -1);
		ch->line[ch->n - 1] = f->line;
		return;
	}
	if (!c->bspt || v8_spt_find(c->bspt, c->nbspt, (uint32_t)boff, &pos))
		pos = 0;
	chain_put(v, pid, ch, f, v8_pos_offset(pos));
}

/*
 * The functions frame @w (its words) runs: an interpreted frame's function at the line of
 * its bytecode offset; optimized code's at the pc, with the functions it inlined there, each at
 * its line (the source position table at the pc, then each inlining's position in its
 * caller); baseline code's at the line of the bytecode at the pc; any other (code that is not
 * the frame's) the function alone, at line 0.
 */
static int frame_chain(struct v8 *v, uint32_t pid, const uint64_t *w, struct v8_chain *ch)
{
	const struct v8_fn *f = fn_of(v, pid, w[1] & PCMON_JS_ADDR_MASK);
	uint32_t boff1 = w[1] >> PCMON_JS_BOFF_SHIFT & PCMON_JS_BOFF_FAR;
	uint64_t pc = w[0] & PCMON_JS_ADDR_MASK;
	bool inner = !(w[0] >> PCMON_JS_POS_SHIFT & PCMON_JS_POS_MASK);
	struct v8_pid *p = v8_of(v, pid);
	const struct v8_code *c, *osr;
	uint64_t data, ret;
	int64_t pos;

	ch->n = 0;
	if (!f)
		return -EFAULT;
	c = code_of(v, pid, w[2] & PCMON_JS_ADDR_MASK);
	/* not in its function's code: code that replaced a running loop? (not interpreted; asked
	 * first, at the pc itself: the stack's top may still hold a return into the code the
	 * loop ran in before) */
	if (!(c && code_holds(c, pc, inner)) && !(boff1 && boff1 != PCMON_JS_BOFF_FAR)) {
		osr = osr_code(v, pid, w[3] & PCMON_JS_ADDR_MASK, pc, w[1] & PCMON_JS_ADDR_MASK,
			       !inner);
		if (osr)
			return optimized_chain(v, pid, osr, pc - osr->start - !inner, ch);
		/* (the vector's code, looked at, may have moved the cache c was in) */
		c = code_of(v, pid, w[2] & PCMON_JS_ADDR_MASK);
	}
	/* the innermost frame in a builtin its code called: the call it returns to */
	if (inner && c && (ret = w[2] >> PCMON_JS_RET_SHIFT & PCMON_JS_RET_MAX) &&
	    !code_holds(c, pc, true) && ret - 1 <= c->size) {
		pc = c->start + ret - 1;
		inner = false;
	}
	if (c && c->sfi && c->sfi == (w[1] & PCMON_JS_ADDR_MASK) && code_holds(c, pc, inner))
		return optimized_chain(v, pid, c, pc - c->start - !inner, ch);
	/* (code_of() moves no cached function: f stands) */
	if (c && p && c->kind == p->l.kind_baseline && code_holds(c, pc, inner)) {
		baseline_chain(v, pid, f, c, pc - c->start - !inner, ch);
		return 0;
	}
	f = fn_of(v, pid, w[1] & PCMON_JS_ADDR_MASK);
	if (!f)
		return -EFAULT;
	if (boff1 && boff1 != PCMON_JS_BOFF_FAR && p) {
		int64_t off = (int64_t)boff1 - 1 - (p->l.bca_data - 1);

		if (off < 0 || !f->spt || v8_spt_find(f->spt, f->nspt, off, &pos))
			pos = 0;
		chain_put(v, pid, ch, f, v8_pos_offset(pos));
		return 0;
	}
	/* baseline code its function no longer runs from (optimized since the frame began): the
	 * function's own, which it keeps */
	data = f->data;
	if (p && data != (w[2] & PCMON_JS_ADDR_MASK) && (c = code_of(v, pid, data)) &&
	    c->kind == p->l.kind_baseline && code_holds(c, pc, inner)) {
		baseline_chain(v, pid, f, c, pc - c->start - !inner, ch);
		return 0;
	}
	chain_put(v, pid, ch, f, -1);
	return 0;
}

static int frame_loc_new(struct v8 *v, uint32_t pid, const uint64_t *w, uint32_t *loc);

/*
 * The location of frame @w of @pid, kept by the frame's words for the drain: a stack's frames
 * come again and again (every --unwind dwarf sample is converted), and what names them is
 * checked once per drain anyway.
 */
static int frame_loc(struct v8 *v, uint32_t pid, const uint64_t *w, uint32_t *loc)
{
	struct { uint32_t pid, pad; uint64_t w[PCMON_JS_FRAME_WORDS]; } key = { pid, 0, { 0 } };
	struct v8_floc *f;
	uint32_t slot;
	int r;

	/* (the outermost frame's mark is no part of what it is) */
	for (int i = 0; i < PCMON_JS_FRAME_WORDS; i++)
		key.w[i] = w[i] & ~(i == PCMON_JS_FRAME_WORDS - 1 ? PCMON_JS_OUTERMOST : 0);
	if (itab_count(v->lkeys) >= V8_FNS_MAX) {
		itab_free(v->lkeys);
		if (!(v->lkeys = itab_new()))
			return frame_loc_new(v, pid, key.w, loc);
	}
	r = itab_intern(v->lkeys, &key, sizeof(key), &slot);
	if (r < 0 || GROW(v->flocs, v->cap_flocs, slot + 1))
		return frame_loc_new(v, pid, key.w, loc);
	f = &v->flocs[slot];
	if (r == 1)
		*f = (struct v8_floc){ 0 };
	if (f->gen == v->gen) {
		*loc = f->loc;
		return 0;
	}
	r = frame_loc_new(v, pid, key.w, loc);
	if (!r)
		*f = (struct v8_floc){ .gen = v->gen, .loc = *loc };
	return r;
}

/* A location of its own per chain of (name, file, line), shared by every process. */
static int frame_loc_new(struct v8 *v, uint32_t pid, const uint64_t *w, uint32_t *loc)
{
	char key[4096], *names[V8_CHAIN_MAX], *files[V8_CHAIN_MAX];
	struct v8_chain ch;
	size_t kl = 0;
	int r;

	if (frame_chain(v, pid, w, &ch) || !ch.n)
		return -EFAULT;
	/* (strings of the symbolizer's table, which interning may move: copied first) */
	for (uint32_t i = 0; i < ch.n; i++) {
		names[i] = strdup(sym_str(v->sym, ch.name[i]));
		files[i] = strdup(sym_str(v->sym, ch.file[i]));
		if (kl < sizeof(key))
			kl += snprintf(key + kl, sizeof(key) - kl, "%s:%s:%u;", names[i] ? names[i] : "",
				       files[i] ? files[i] : "", ch.line[i]);
	}
	r = -ENOMEM;
	for (uint32_t i = 0; i < ch.n; i++) {
		uint32_t proc;

		if (!names[i] || !files[i])
			goto out;
		/* the procedure carries its script and first line (pprof's functions) */
		if (sym_intern_proc(v->sym, V8_MODULE, names[i], files[i], ch.first[i], &proc) < 0)
			goto out;
	}
	r = sym_intern_loc(v->sym, V8_MODULE, hash_bytes(key, MIN(kl, sizeof(key))),
			   (const char *const *)names, (const char *const *)files, ch.line, ch.n, loc);
out:
	for (uint32_t i = 0; i < ch.n; i++) {
		free(names[i]);
		free(files[i]);
	}
	return r;
}

/* ---- merging */

/*
 * Is native location @loc V8's own machine code, which a JavaScript frame at its pc takes the
 * place of: code in no object (JIT code, the builtins mapped again near it), a perf map's
 * name (node --perf-basic-prof: not doubled), or an embedded builtin (Builtins_*, the
 * interpreter's handlers among them)?
 */
static bool v8_code(struct v8 *v, uint32_t loc)
{
	const struct sym_loc *l = sym_loc(v->sym, loc);
	const struct sym_procinfo *pi;
	const uint32_t *f;

	if (!l || l->module == SYM_MOD_UNKNOWN || !l->nframes)
		return true;
	f = sym_frames(v->sym, l);
	pi = sym_proc(v->sym, f[l->nframes - 1]);
	if (!pi || !pi->name || pi->module == v->jit_module)
		return true;
	return !strncmp(sym_str(v->sym, pi->name), "Builtins_", 9);
}

int v8_frame_of_copy(struct v8 *v, uint32_t pid, uint64_t fp, uint64_t pc, uint32_t pos,
		     const uint8_t *stack, uint64_t sp, uint32_t len,
		     uint64_t w[PCMON_JS_FRAME_WORDS])
{
	struct v8_pid *p = v8_of(v, pid);
	const struct v8_layout *l;
	uint64_t slot[3], sfi, code = 0, cell = 0;
	const uint16_t *below;
	int t;

	if (!p || p->gone || !fp || !pc)
		return -ENOENT;
	l = &p->l;
	below = (const uint16_t[]){ l->o.fp_context, l->o.fp_function, l->o.fp_bytecode_offset };
	for (int i = 0; i < 3; i++) {
		uint64_t at = fp - below[i];

		/* (outside the copy: the stack has moved on since) */
		if (fp < below[i] || at < sp || len < 8 || at - sp > len - 8)
			return -ENOENT;
		memcpy(&slot[i], stack + (at - sp), 8);
	}
	if (!v8_tagged(slot[0]) || !v8_tagged(slot[1]))
		return -ENOENT;
	t = v8_type_of(pid, l, slot[1]);
	if (t < l->o.type_fn_lo || t > l->o.type_fn_hi ||
	    v8_mem_read(pid, slot[1] - 1 + l->o.fn_shared, &sfi, sizeof(sfi)) ||
	    v8_type_of(pid, l, sfi) != l->o.type_sfi)
		return -ENOENT;
	if (v8_mem_read(pid, slot[1] - 1 + l->o.fn_code, &code, sizeof(code)))
		code = 0;
	if (v8_mem_read(pid, slot[1] - 1 + l->o.fn_feedback, &cell, sizeof(cell)))
		cell = 0;
	w[3] = cell & PCMON_JS_ADDR_MASK;
	w[0] = pcmon_js_pc_word(pc, pos);
	w[1] = pcmon_js_sfi_word(sfi - 1, (slot[2] & 1) ? 0 : (slot[2] >> 32) + 1);
	w[2] = code & PCMON_JS_ADDR_MASK;
	return 0;
}

bool v8_unread(struct v8 *v, uint32_t pid, const uint32_t *locs, uint32_t n)
{
	if (!v8_of(v, pid)) /* (one gone since is still one) */
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (v8_code(v, locs[i]))
			return true;
	return false;
}

uint32_t v8_merge(struct v8 *v, const struct v8_merge_in *in, uint32_t *out, uint32_t *cut)
{
	uint32_t nf = in->nj / PCMON_JS_FRAME_WORDS, n = 0, from = 0, *at, *locs;

	*cut = PCMON_JS_OK;
	at = malloc(2 * (nf + 1) * sizeof(*at));
	if (!at) {
		memcpy(out, in->nat, in->nn * sizeof(*out));
		return in->nn;
	}
	locs = at + nf + 1;
	/* each frame at the native frame of its pc: at its position in the chain, or found
	 * further out (a native walk that took other frames: dwarf) */
	for (uint32_t j = 0; j < nf; j++) {
		uint64_t w = in->jw[PCMON_JS_FRAME_WORDS * j];
		uint64_t pc = w & PCMON_JS_ADDR_MASK;
		uint32_t pos = w >> PCMON_JS_POS_SHIFT & PCMON_JS_POS_MASK, i;

		if (frame_loc(v, in->pid, &in->jw[PCMON_JS_FRAME_WORDS * j], &locs[j])) {
			v->st.unnamed++;
			*cut = PCMON_JS_FAULT;
			at[j] = UINT32_MAX;
			continue;
		}
		v->st.named++;
		if (pos >= from && pos < in->nn && in->pc[pos] == pc) {
			i = pos;
		} else {
			for (i = from; i < in->nn && in->pc[i] != pc; i++)
				;
		}
		at[j] = i;
		if (i < in->nn)
			from = i + 1;
	}
	for (uint32_t i = 0, j = 0; i < in->nn; i++) {
		while (j < nf && (at[j] == UINT32_MAX || at[j] >= in->nn))
			j++;
		if (j < nf && at[j] == i) {
			if (!v8_code(v, in->nat[i]))
				out[n++] = in->nat[i]; /* (a native leaf V8 called: its caller) */
			out[n++] = locs[j++];
			continue;
		}
		out[n++] = in->nat[i];
	}
	/* frames past the native walk's end */
	for (uint32_t j = 0; j < nf; j++)
		if (at[j] != UINT32_MAX && at[j] >= in->nn)
			out[n++] = locs[j];
	free(at);
	return n;
}
