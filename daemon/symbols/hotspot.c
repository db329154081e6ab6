// SPDX-License-Identifier: GPL-2.0-only
/*
 * The JVMs pcmon found (docs/java.md): which processes are JVMs, their layout (read by
 * hotspot_layout.c) and code cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hotspot_int.h"
#include "procmaps.h"
#include "sym.h"

/* ---- processes */

static int proc_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return hs_mem(*(uint32_t *)ctx, addr, buf, len);
}

struct hs_proc *hs_proc_of(struct hs *h, uint32_t pid)
{
	return pidtab_get(h->procs, pid);
}

int hs_heaps_read(struct hs_proc *p)
{
	const struct hs_layout *l = &p->l;
	uint64_t arr, data, lo, hi, heap[HS_MAX_HEAPS];
	struct hs_heap got[HS_MAX_HEAPS];
	uint32_t ngot = 0;
	uint8_t hb[512];
	int32_t n;

	/*
	 * Into a copy: the heaps as read before stay when this read fails (a process gone: its
	 * last records are walked with what was read while it ran).
	 */
	p->heaps_read = now_coarse_ns();
	if (hs_mem(p->pid, l->cc_low, &lo, 8) || hs_mem(p->pid, l->cc_high, &hi, 8) ||
	    hs_mem(p->pid, l->cc_heaps, &arr, 8) || !arr || lo >= hi)
		return -EAGAIN;
	if (hs_mem(p->pid, arr + l->ga_len, &n, 4) || hs_mem(p->pid, arr + l->ga_data, &data, 8) ||
	    n <= 0 || !data)
		return -EAGAIN;
	n = MIN(n, HS_MAX_HEAPS);
	if (hs_mem(p->pid, data, heap, n * 8))
		return -EFAULT;
	for (int i = 0; i < n; i++) {
		struct hs_heap *hp = &got[ngot];
		uint32_t need = MAX(MAX(l->heap_memory, l->heap_segmap) + 64, l->heap_log2seg + 4);

		if (need > sizeof(hb) || hs_mem(p->pid, heap[i], hb, need))
			continue;
		hp->lo = hs_u64(hb, l->heap_memory + l->vs_low_boundary);
		hp->hi = hs_u64(hb, l->heap_memory + l->vs_high);
		hp->segmap = hs_u64(hb, l->heap_segmap + l->vs_low);
		hp->log2seg = hs_u32(hb, l->heap_log2seg);
		if (hp->lo < hp->hi && hp->segmap && hp->log2seg && hp->log2seg < 16 &&
		    !hs_mem(p->pid, hp->segmap, hb, 1))
			ngot++;
	}
	if (!ngot)
		return -EAGAIN;
	memcpy(p->heaps, got, ngot * sizeof(got[0]));
	p->nheaps = ngot;
	p->cc_lo = lo;
	p->cc_hi = hi;
	/* the interpreter's code, a StubQueue */
	if (l->interp_code && l->sq_buffer != HS_NONE && l->sq_limit != HS_NONE &&
	    !hs_mem(p->pid, l->interp_code, &arr, 8) && arr) {
		int32_t lim;

		if (!hs_mem(p->pid, arr + l->sq_buffer, &data, 8) &&
		    !hs_mem(p->pid, arr + l->sq_limit, &lim, 4) && lim > 0) {
			p->interp_lo = data;
			p->interp_hi = data + lim;
		}
	}
	return 0;
}

/* The address of each name of @names in @fd's .dynsym (0: not there). */
static void dynsyms(int fd, const char *const *names, uint64_t *out, size_t n, uint64_t *base)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	size_t nph;

	*base = 0;
	if (!e)
		return;
	if (!elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD) {
				*base = ph.p_vaddr & ~0xfffull;
				break;
			}
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;

			if (!gelf_getsym(data, i, &s) || !s.st_value)
				continue;
			nm = elf_strptr(e, sh.sh_link, s.st_name);
			if (!nm || nm[0] != 'g' || strncmp(nm, "gHotSpotVM", 10))
				continue;
			for (size_t k = 0; k < n; k++)
				if (names[k] && !strcmp(nm, names[k]))
					out[k] = s.st_value;
		}
	}
	elf_end(e);
}

struct look {
	uint32_t pid;
	struct hs_tables t;
	bool found;
	bool launcher;	/* libjli.so, the java launcher's library: a libjvm may be on its way */
	uint32_t files; /* mappings of files seen */
};

static int look_cb(void *ctx, const char *path, uint64_t start, uint64_t end, uint64_t pgoff)
{
	const char *names[HS_NTABLES * 9];
	uint64_t addr[HS_NTABLES * 9] = { 0 }, base;
	struct look *c = ctx;
	const char *b = strrchr(path, '/');
	int fd;

	c->files++;
	if (!pgoff && b && (!strcmp(b + 1, "libjli.so") || !strcmp(b + 1, "java")))
		c->launcher = true;
	if (pgoff || !b || strcmp(b + 1, "libjvm.so"))
		return 0;
	fd = procmaps_open(c->pid, start, end, path);
	if (fd < 0)
		return 0;
	for (int t = 0; t < HS_NTABLES; t++) {
		names[t * 9] = hs_table_syms[t];
		for (int k = 0; k < 8; k++)
			names[t * 9 + 1 + k] = hs_shape_syms[t][k];
	}
	elf_version(EV_CURRENT);
	dynsyms(fd, names, addr, ARRAY_SIZE(names), &base);
	close(fd);
	for (int t = 0; t < HS_NTABLES; t++) {
		c->t.table[t] = addr[t * 9] ? addr[t * 9] - base + start : 0;
		for (int k = 0; k < 8; k++)
			c->t.shape[t][k] =
				addr[t * 9 + 1 + k] ? addr[t * 9 + 1 + k] - base + start : 0;
	}
	c->found = c->t.table[HS_STRUCTS] != 0;
	return c->found;
}

static void look(struct hs *h, struct hs_proc *p)
{
	struct look c = { .pid = p->pid };
	char why[200];
	struct hs_rd rd = { proc_read, &p->pid };
	uint64_t t0;
	int r;

	p->looks++;
	p->last_look = now_coarse_ns();
	sym_proc_files(h->sym, p->pid, p->epoch, look_cb, &c);
	if ((!c.files || (c.launcher && !c.found && p->looks > 1)) &&
	    !sym_proc_load(h->sym, p->pid, p->epoch)) {
		/*
		 * Its map not read yet (a process attached by --pid: its records stream in before
		 * the event of its first sample is handled), or a java launcher's as it was before
		 * it loaded libjvm (the event that says it did is not prompt): read now.
		 */
		c = (struct look){ .pid = p->pid };
		sym_proc_files(h->sym, p->pid, p->epoch, look_cb, &c);
	}
	p->launcher |= c.launcher;
	if (!c.found && log_verbosity >= LOG_DEBUG)
		pr_debug("pid %u: no libjvm.so in %u file mappings (look %u%s)", p->pid, c.files,
			 p->looks, c.launcher ? ", a java launcher" : "");
	if (!c.found) {
		/* no libjvm, and no java launcher to load one: not looked at again (unless its
		 * address map was not read yet) */
		if (!c.launcher && c.files)
			p->looks = HS_LOOK_TRIES;
		return;
	}
	p->libjvm = true;
	t0 = now_ns();
	r = hs_layout_read(&rd, &c.t, &p->l, why, sizeof(why));
	if (r == -EAGAIN && p->looks < HS_LOOK_TRIES) {
		/* libjvm is being loaded: looked at again a moment later */
		pr_debug("pid %u: libjvm.so not ready (%s), look %u", p->pid, why, p->looks);
		return;
	}
	p->looks = HS_LOOK_TRIES; /* a libjvm: looked at for good */
	if (r) {
		if (!p->told)
			pr_warn("pid %u: a HotSpot JVM pcmon cannot read (JDK %u: %s): its samples keep "
				"their native frames",
				p->pid, p->l.version, why);
		p->told = true;
		return;
	}
	p->jvm = true;
	h->st.jvms++;
	hs_heaps_read(p);
	pr_debug("pid %u: HotSpot JVM, JDK %u, its tables read in %.1f ms; its Java frames are "
		 "walked%s",
		 p->pid, p->l.version, (now_ns() - t0) / 1e6,
		 p->l.scopes ? "" : " (compiled frames without their inlined methods)");
}

bool hs_is_jvm(struct hs *h, uint32_t pid, uint32_t epoch)
{
	struct hs_proc *p = hs_proc_of(h, pid);

	if (p && p->epoch != epoch) {
		hs_forget(h, pid);
		p = NULL;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p || pidtab_put(h->procs, pid, p)) {
			free(p);
			return false;
		}
		*p = (struct hs_proc){ .pid = pid, .epoch = epoch };
	}
	if (!p->jvm && p->looks < HS_LOOK_TRIES &&
	    (!p->looks || now_coarse_ns() > p->last_look + 100000000ull))
		look(h, p);
	return p->jvm;
}

void hs_loaded(struct hs *h, uint32_t pid, uint32_t epoch)
{
	struct hs_proc *p = hs_proc_of(h, pid);
	uint32_t looks = p && p->epoch == epoch ? p->looks : 0;

	if (hs_is_jvm(h, pid, epoch) || !(p = hs_proc_of(h, pid)) || p->libjvm)
		return;
	/*
	 * Looked at again whatever its looks so far, unless hs_is_jvm() just did (its first
	 * look, or one due): what it loaded may be a libjvm (a program that makes a JVM itself,
	 * or loads the one it links at start-up after its first sample).
	 */
	if (looks < HS_LOOK_TRIES && p->looks != looks)
		return;
	p->looks = MIN(p->looks, HS_LOOK_TRIES - 1);
	look(h, p);
}

void hs_look_pending(struct hs *h, void (*found)(void *ctx, uint32_t pid, uint32_t epoch),
		     void *ctx)
{
	struct hs_proc *p;
	size_t it = 0;

	/* (hs_is_jvm() of a process's own image deletes nothing: the walk holds) */
	while ((p = pidtab_next(h->procs, &it))) {
		if (p->jvm || p->looks >= HS_LOOK_TRIES || p->gone_at)
			continue;
		hs_is_jvm(h, p->pid, p->epoch);
		if (hs_new_jvm(h, p->pid))
			found(ctx, p->pid, p->epoch);
	}
}

bool hs_starting(struct hs *h, uint32_t pid)
{
	struct hs_proc *p = hs_proc_of(h, pid);

	return p && !p->jvm && !p->told && (p->libjvm || p->launcher) && p->looks < HS_LOOK_TRIES;
}

bool hs_new_jvm(struct hs *h, uint32_t pid)
{
	struct hs_proc *p = hs_proc_of(h, pid);

	if (!p || !(p->libjvm || p->launcher) || p->marked)
		return false;
	p->marked = true;
	return true;
}

/* Let go of @p, deleted from the table, and of the names read in it if it was a JVM (most
 * processes are not: their exits cost no scan of the names). */
static void proc_free(struct hs *h, struct hs_proc *p)
{
	if (p->jvm || p->libjvm || p->launcher)
		hs_names_forget(h->names, p->pid);
	free(p->seen);
	free(p);
}

void hs_forget(struct hs *h, uint32_t pid)
{
	struct hs_proc *p = pidtab_del(h->procs, pid);

	if (p)
		proc_free(h, p);
}

void hs_exited(struct hs *h, uint32_t pid, uint64_t now)
{
	struct hs_proc *p;
	uint32_t gone;

	while ((p = pidtab_expire(h->procs, now - MIN(now, HS_FORGET_NS), &gone)))
		proc_free(h, p);
	p = hs_proc_of(h, pid);
	if (p && !p->gone_at) {
		p->gone_at = now;
		pidtab_exited(h->procs, pid, now); /* (no memory: kept until its pid comes back) */
	}
}

uint32_t hs_procs_kept(const struct hs *h)
{
	return pidtab_count(h->procs);
}

struct hs *hs_new(struct sym *s)
{
	struct hs *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->sym = s;
	h->names = hs_names_new();
	h->procs = pidtab_new();
	if (!h->names || !h->procs) {
		hs_free(h);
		return NULL;
	}
	return h;
}

void hs_free(struct hs *h)
{
	struct hs_proc *p;
	size_t it = 0;

	if (!h)
		return;
	while (h->procs && (p = pidtab_next(h->procs, &it))) {
		free(p->seen);
		free(p);
	}
	hs_names_free(h->names);
	pidtab_free(h->procs);
	free(h);
}

void hs_stats(const struct hs *h, struct hs_stats *st)
{
	*st = h->st;
}
