// SPDX-License-Identifier: GPL-2.0-only
/*
 * Process address maps (/proc/PID/maps): read at a process's first sample and again on a
 * miss, inherited at fork, kept a while after exit; the lookups of user addresses in them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "procmaps.h"
#include "sym_int.h"

struct pmap *pmap_get(struct sym *s, uint32_t pid, uint32_t epoch, bool create)
{
	uint32_t key[2] = { pid, epoch }, id;
	int64_t f;
	int r;

	if (!create) {
		f = itab_find(s->pmap_keys, key, sizeof(key));
		return f < 0 ? NULL : &s->pmaps[f];
	}
	r = itab_intern(s->pmap_keys, key, sizeof(key), &id);
	if (r < 0 || GROW(s->pmaps, s->cap_pmaps, id + 1))
		return NULL;
	if (r)
		memset(&s->pmaps[id], 0, sizeof(s->pmaps[id]));
	return &s->pmaps[id];
}

/* What add_vma() adds a mapping to. */
struct vma_ctx {
	struct sym *s;
	struct pmap *pm;
	uint32_t pid;
	uint64_t dev, ino;	/* the file of the last mapping added, */
	uint32_t mod;		/* and its module */
};

/* A mapping of module @mod into the map being read; code new to us is read now. */
static int add_region(struct vma_ctx *c, const struct procmaps_vma *v, uint32_t mod)
{
	struct sym *s = c->s;
	struct pmap *pm = c->pm;

	/*
	 * Code new to us is read now, while the process lives (its file may be gone by the time
	 * its samples are named); data files only if ever asked. An object let go waits until a
	 * sample needs it (smod_use()): a build maps the same dozen libraries into every
	 * compiler it runs, and opening each again at every exec was most of what the budget
	 * saved, spent again. Reading a map is not using its objects: only samples count.
	 */
	if (!s->mods[mod].tried && !s->mods[mod].closed && v->exec) {
		s->mods[mod].used_ns = now_ns();
		smod_open(s, &s->mods[mod], c->pid, v->start, v->end);
	}
	if (GROW(pm->r, pm->cap, pm->n + 1))
		return -ENOMEM;
	pm->r[pm->n++] = (struct region){ v->start, v->end, v->pgoff, mod, v->exec };
	c->dev = v->dev;
	c->ino = v->ino;
	c->mod = mod;
	return 0;
}

/*
 * A mapping into the map being read. Its file is a module identified by device, inode and
 * build-id, so that each object is opened and read once for every process that maps it. A
 * file without a build-id is told apart by its modification time and size, as inode numbers
 * of deleted files come back for new ones (not its change time, which unlinking moves: a
 * program deleted while it runs stays one module).
 *
 * Each mapping comes first as the kernel has it without a name or build-id. A file a module
 * holds open (smod_pin()), or the file of the mapping before (the pieces of one object come
 * together), needs neither; others, and anonymous code (a JIT's, the vDSO), are asked again.
 */
static int add_vma(void *ctx, struct procmaps_vma *v)
{
	struct vma_ctx *c = ctx;
	struct sym *s = c->s;
	struct mod_key mkey = { 0 };
	size_t flen;
	uint32_t mod;
	int r;

	if (!v->name) {
		if (!v->ino)
			return v->exec ? PROCMAPS_ASK : 0;
		if (v->dev == c->dev && v->ino == c->ino)
			return add_region(c, v, c->mod);
		if (smod_pinned(s, v->dev, v->ino, &mod)) {
			s->st.maps_pinned++;
			return add_region(c, v, mod);
		}
		return PROCMAPS_ASK;
	}
	if (!v->ino) {
		c->pm->scan_anon_code |= v->exec && v->name[0] != '[';
		if (strcmp(v->name, "[vdso]"))
			return 0; /* only file-backed mappings (and the vDSO) name code and strings */
	}
	/* the kernel marks a file unlinked since it was mapped; map_files still opens it */
	flen = strlen(v->name);
	if (flen > 10 && !strcmp(v->name + flen - 10, " (deleted)"))
		v->name[flen - 10] = '\0';
	mkey.dev = v->ino ? v->dev : UINT64_MAX - 1;
	mkey.ino = v->ino;
	if (v->ino && v->bid_len) {
		mkey.mtime_ns = hash_bytes(v->bid, v->bid_len);
		mkey.size = UINT64_MAX; /* (a build-id, not a size) */
	} else if (v->ino && !v->exec) {
		/*
		 * Not code, no build-id: a data file (the locale archive every process maps, a
		 * cache), read for nothing; its identity is not worth a stat() a process.
		 */
		return 0;
	} else if (v->ino) {
		char mf[64];
		struct stat st;

		snprintf(mf, sizeof(mf), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64, c->pid, v->start,
			 v->end);
		s->st.file_stats++;
		if (!stat(mf, &st)) {
			mkey.mtime_ns = st.st_mtim.tv_sec * 1000000000ULL + st.st_mtim.tv_nsec;
			mkey.size = st.st_size;
		}
	}
	r = itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod);
	if (r < 0)
		return r;
	mod += SYM_MOD_KERNEL + 1; /* file modules follow the two fixed ones */
	if (r == 1 && sym_add_module(s, v->name, basename_of(v->name), &mod))
		return -ENOMEM;
	return add_region(c, v, mod);
}

/*
 * Events come in batches: the process may have exec'd since this image was sampled. Its map
 * now is the next image's; this one's is gone, and stays as it was last read.
 */
static bool image_gone(struct sym *s, uint32_t pid, uint32_t epoch)
{
	uint32_t live;

	if (!s->src.epoch || s->src.epoch(s->src.ctx, pid, &live) || live == epoch)
		return false;
	sym_proc_final(s, pid, epoch);
	return true;
}

static void proc_gone(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch, bool sure);

int sym_proc_load(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, true);
	size_t old_n;
	int r;

	if (!pm)
		return -ENOMEM;
	if (pm->final || image_gone(s, pid, epoch)) {
		proc_gone(s, pm, pid, epoch, true);
		return 0;
	}
	s->st.maps_reads++;
	pm->read_ns = now_ns();
	if (!pm->born_ns)
		pm->born_ns = pm->read_ns;
	old_n = pm->n;
	pm->n = 0;
	pm->scan_anon_code = false;
	r = procmaps_walk(pid, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			  &(struct vma_ctx){ .s = s, .pm = pm, .pid = pid });
	/*
	 * A process on its way out has no address space left: its maps read empty before its
	 * exit is reported. Keep what it had, for the samples it left.
	 */
	if (!pm->n) {
		pm->n = old_n;
		proc_gone(s, pm, pid, epoch, true);
	}
	if (r)
		return r;
	pm->reread_ns = now_ns() + 1000000;
	/* code in anonymous memory: a JIT; find its perf map while the process is there */
	pm->anon_code = pm->scan_anon_code;
	if (pm->anon_code)
		jit_map(s, pm, pid, now_ns());
	return 0;
}

int sym_proc_files(struct sym *s, uint32_t pid, uint32_t epoch,
		   int (*cb)(void *ctx, const char *path, uint64_t start, uint64_t end,
			     uint64_t pgoff),
		   void *ctx)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	int r = 0;

	for (size_t i = 0; pm && i < pm->n && !r; i++) {
		const struct region *g = &pm->r[i];

		if (g->module > SYM_MOD_KERNEL && g->module < s->nmods && s->mods[g->module].path)
			r = cb(ctx, s->mods[g->module].path, g->start, g->end, g->pgoff);
	}
	return r;
}

int sym_proc_reload(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t since_ns)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);

	return pm && pm->read_ns < since_ns ? sym_proc_load(s, pid, epoch) : 0;
}

int sym_proc_sampled(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t ts)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);

	return pm && pm->n && pm->read_ns > ts ? 0 : sym_proc_load(s, pid, epoch);
}

void sym_sample_taken(struct sym *s, uint64_t ns)
{
	s->taken_ns = ns;
}

void sym_proc_forked(struct sym *s, uint32_t pid, uint32_t ppid, uint32_t pepoch)
{
	struct pmap *pm = pmap_get(s, pid, 0, true);

	if (pm && !pm->n) {
		pm->forked = true;
		pm->ppid = ppid;
		pm->pepoch = pepoch;
	}
}

void sym_proc_final(struct sym *s, uint32_t pid, uint32_t epoch)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	struct jitmap *j = pm && pm->jit_mod ? s->mods[pm->jit_mod].jit : NULL;

	if (pm && !pm->final) {
		pm->final = true;
		pm->final_ns = now_ns();
	}
	/* its perf map is complete: read its last lines and let the file go */
	if (j && j->fd >= 0) {
		jit_refresh(s, pm->jit_mod);
		close(j->fd);
		j->fd = -1;
	}
}

/*
 * Address maps of images left before @before_ns (CLOCK_MONOTONIC) are let go: every sample
 * of theirs was taken before that and has been symbolized since (the caller drained them).
 * The names resolved stay with the locations. The table is rebuilt without them once they
 * are a quarter of it, so that a machine that runs processes by the thousand holds the
 * maps of the live ones only.
 */
void sym_forget_final(struct sym *s, uint64_t before_ns)
{
	uint32_t n = itab_count(s->pmap_keys), dead = 0, id;
	struct pmap *pmaps;
	struct itab *keys;

	for (uint32_t i = 0; i < n; i++)
		dead += s->pmaps[i].final && s->pmaps[i].final_ns < before_ns;
	if (dead < 64 || dead < n / 4)
		return;
	keys = itab_new();
	pmaps = calloc(n - dead + 1, sizeof(*pmaps));
	if (!keys || !pmaps) {
		itab_free(keys);
		free(pmaps);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pmap *pm = &s->pmaps[i];
		size_t len;
		const void *key = itab_key(s->pmap_keys, i, &len);

		if (pm->final && pm->final_ns < before_ns) {
			free(pm->r);
			s->st.pmaps_freed++;
			continue;
		}
		if (itab_intern(keys, key, len, &id) < 0) { /* cannot happen: room was made */
			free(pm->r);
			continue;
		}
		pmaps[id] = *pm;
	}
	itab_free(s->pmap_keys);
	free(s->pmaps);
	s->pmap_keys = keys;
	s->pmaps = pmaps;
	s->cap_pmaps = n - dead + 1;
}

/* The regions of @pm are in address order and do not overlap: the first that ends after @pc. */
static size_t pmap_after(const struct pmap *pm, uint64_t pc)
{
	size_t lo = 0, hi = pm->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->r[mid].end <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct region *pmap_find(const struct pmap *pm, uint64_t pc)
{
	size_t i = pm ? pmap_after(pm, pc) : 0;

	return pm && i < pm->n && pm->r[i].start <= pc ? &pm->r[i] : NULL;
}

/* @g into @pm, in place of the regions it overlaps (what was there before is gone). */
static int pmap_insert(struct pmap *pm, const struct region *g)
{
	size_t i = pmap_after(pm, g->start), k = i;

	while (k < pm->n && pm->r[k].start < g->end)
		k++;
	if (k == i && GROW(pm->r, pm->cap, pm->n + 1))
		return -ENOMEM;
	memmove(&pm->r[i + 1], &pm->r[k], (pm->n - k) * sizeof(*pm->r));
	pm->r[i] = *g;
	pm->n = pm->n + 1 - (k - i);
	return 0;
}

/*
 * A fork's child that exec'd (or exited) before its map was read had its parent's: the map
 * read of the parent's image, or else the parent's map as it is now, if the parent still
 * runs that image (a make or a shell waits for its child). Not a map of the parent's own:
 * nothing here adds to the maps that @pm may be one of.
 */
static void parent_map(struct sym *s, struct pmap *pm)
{
	struct pmap *parent = pmap_get(s, pm->ppid, pm->pepoch, false);
	uint32_t live;

	if (parent && parent->n && !GROW(pm->r, pm->cap, parent->n)) {
		memcpy(pm->r, parent->r, parent->n * sizeof(*pm->r));
		pm->n = parent->n;
	} else if (s->src.epoch && !s->src.epoch(s->src.ctx, pm->ppid, &live) &&
		   live == pm->pepoch) {
		s->st.maps_reads++;
		procmaps_walk(pm->ppid, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			      &(struct vma_ctx){ .s = s, .pm = pm, .pid = pm->ppid });
	}
	s->st.maps_of_parent += pm->n > 0;
}

/*
 * Image @epoch of @pid was sampled and is gone before its map was read, or before a pc
 * outside the mappings read could be looked up: most often it was first sampled as it
 * exited (the kernel tears a compiler's address space down for some milliseconds), or just
 * before. BPF noted what it mapped for execution as it exited; the files pcmond holds open
 * are known by device and inode, and name those mappings. Others stay unnamed, and their
 * pcs are foreignPcs. A fork's child that exec'd first, sampled in its execve, had its
 * parent's map. Once per image; not @sure that it is gone (a query found nothing at an
 * address), only if BPF noted its exit.
 */
static void proc_gone(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch, bool sure)
{
	struct procmaps_vma v[64];
	size_t had = pm->n;
	uint32_t mod;
	int n;

	if (pm->gone)
		return;
	n = s->src.exit_maps ? s->src.exit_maps(s->src.ctx, pid, epoch, v, ARRAY_SIZE(v)) : -1;
	if (n < 0 && !sure)
		return;
	pm->gone = true;
	s->st.maps_too_late += !had;
	if (!pm->final) { /* (its exit may have come first: let it be forgotten all the same) */
		pm->final = true;
		pm->final_ns = now_ns();
	}
	for (int i = 0; i < n; i++) {
		if (pmap_find(pm, v[i].start)) /* what was read stays */
			continue;
		if (!smod_pinned(s, v[i].dev, v[i].ino, &mod)) {
			s->st.maps_at_exit_unheld++;
			continue;
		}
		if (pmap_insert(pm, &(struct region){ v[i].start, v[i].end, v[i].pgoff, mod, true }))
			break;
	}
	if (pm->n > had)
		s->st.maps_at_exit++;
	if (n < 0 && pm->forked && !pm->n)
		parent_map(s, pm);
}

/*
 * The one mapping @addr lies in, added to @pm: a pc outside every mapping read (the
 * libraries ld.so mapped after the process was first sampled, a dlopen) costs a query at
 * that address, not a walk of the whole map. 0, or 1 if no mapping of a file covers it.
 */
static int proc_load_at(struct sym *s, struct pmap *pm, uint32_t pid, uint32_t epoch,
			uint64_t addr)
{
	struct pmap one = { 0 };
	int r;

	if (image_gone(s, pid, epoch)) {
		proc_gone(s, pm, pid, epoch, true);
		return !pmap_find(pm, addr);
	}
	r = procmaps_at(pid, addr, PROCMAPS_BUILD_ID | PROCMAPS_ON_ASK, add_vma,
			&(struct vma_ctx){ .s = s, .pm = &one, .pid = pid });
	s->st.maps_queries++;
	pm->reread_ns = now_ns() + 1000000;
	if (!r && one.n) {
		r = pmap_insert(pm, &one.r[0]);
	} else {
		/* no file's mapping there (an exiting process has none), or no map to open */
		proc_gone(s, pm, pid, epoch, r == -ENOENT || r == -ESRCH);
		r = pmap_find(pm, addr) ? 0 : r < 0 ? r : 1;
	}
	if (one.scan_anon_code && !pm->anon_code) {
		/* code in anonymous memory: a JIT; find its perf map while the process is there */
		pm->anon_code = true;
		jit_map(s, pm, pid, now_ns());
	}
	free(one.r);
	return r;
}

/*
 * The mapping of @addr in (pid, epoch); a miss looks the address up in the map of a live
 * process (the whole map if none was read yet). For @code
 * (a pc), a mapping that was not executable is a miss too: ld.so maps an object whole and
 * read-only, then its code over it, and a read in between finds the first.
 */
const struct region *pmap_region(struct sym *s, uint32_t pid, uint32_t epoch,
				 uint64_t addr, bool code)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, addr), *again;

	/*
	 * New code mapped since the last look (the libraries right after exec, dlopen): look
	 * again while we can, at once if the sample was taken after that look (the new code
	 * was mapped by then), else a millisecond after the last look ended at the earliest:
	 * addresses in anonymous memory (JIT) miss every time.
	 */
	if ((!r || (code && !r->exec)) &&
	    (!pm || (!pm->final && ((s->taken_ns > pm->read_ns && !pm->anon_code) ||
				    now_ns() > pm->reread_ns)))) {
		s->st.maps_misses++;
		if (pm && pm->n ? !proc_load_at(s, pm, pid, epoch, addr) :
				  !sym_proc_load(s, pid, epoch))
			r = (again = pmap_find(pmap_get(s, pid, epoch, false), addr)) ? again : r;
	}
	return r;
}

uint32_t sym_user(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc, bool call_site)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	const struct region *r = pmap_find(pm, pc);
	struct smod *m;
	uint64_t vaddr;
	uint32_t loc;

	/*
	 * Not in a file: JIT code named by the perf map, before re-reading the address map; a pc
	 * the map does not name yet, only once the address map has it in no file either.
	 */
	if (!r && pm && jit_user(s, pm, pid, pc - call_site, false, &loc))
		return loc;
	if (!r || !r->exec) {
		r = pmap_region(s, pid, epoch, pc, true);
		pm = pmap_get(s, pid, epoch, false); /* reading the map may add pmaps */
	}
	if (!r && pm && jit_user(s, pm, pid, pc - call_site, true, &loc))
		return loc;
	pc -= call_site;
	if (!r)
		return names_loc(s, SYM_MOD_UNKNOWN, pc, 0);
	m = smod_use(s, pid, r);
	if (!m->mod || !smod_vaddr(m, pc - r->start + r->pgoff, &vaddr))
		return names_loc(s, r->module, pc - r->start + r->pgoff, 0);
	loc = names_loc(s, r->module, vaddr, vaddr + m->bias);
	/*
	 * A call is always inside a function, so a return address whose call site lies in no
	 * function was not one: the pc the kernel left at a fault on the first instruction of
	 * a function (an innermost frame sampled in kernel mode). Take the pc itself.
	 */
	if (call_site && !sym_proc(s, s->frames[s->locs[loc].first])->name &&
	    pc + 1 < r->end && smod_vaddr(m, pc + 1 - r->start + r->pgoff, &vaddr))
		loc = names_loc(s, r->module, vaddr, vaddr + m->bias);
	return loc;
}

void sym_proc_usdt(struct sym *s, uint32_t pid, uint32_t epoch,
		   void (*cb)(void *ctx, const char *path), void *ctx)
{
	struct pmap *pm = pmap_get(s, pid, epoch, false);
	char path[4200];

	for (size_t i = 0; pm && i < pm->n; i++) {
		const struct smod *m = &s->mods[pm->r[i].module];

		if (!m->usdt)
			continue;
		/* the object as this process sees it (it may live in another mount namespace) */
		snprintf(path, sizeof(path), "/proc/%u/root%s", pid, m->path);
		cb(ctx, access(path, R_OK) ? m->path : path);
	}
}

int sym_user_string(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t addr, char *buf,
		    size_t len)
{
	const struct region *r = pmap_region(s, pid, epoch, addr, false);
	struct iovec local = { buf, len - 1 }, remote = { (void *)(uintptr_t)addr, len - 1 };
	uint64_t vaddr;

	if (!len)
		return -EINVAL;
	if (r && smod_vaddr(&s->mods[r->module], addr - r->start + r->pgoff, &vaddr) &&
	    !smod_string(&s->mods[r->module], vaddr, buf, len))
		return 0;
	/* not in an object file (built at run time): ask the process, if it still lives */
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) > 0) {
		buf[len - 1] = '\0';
		buf[strnlen(buf, len - 1)] = '\0';
		return 0;
	}
	return -ENOENT;
}

bool sym_thread_entry(struct sym *s, uint32_t pid, uint32_t epoch, uint64_t pc)
{
	const struct region *r = pmap_region(s, pid, epoch, pc, true);
	static const uint8_t syscall_insn[2] = { 0x0f, 0x05 };
	uint8_t code[2];
	uint64_t vaddr;
	struct smod *m;

	if (!r)
		return false;
	m = smod_use(s, pid, r);
	return m->mod && m->eh_cfi && smod_vaddr(m, pc - r->start + r->pgoff, &vaddr) &&
	       !smod_bytes(m, vaddr - 2, code, 2) && !memcmp(code, syscall_insn, 2);
}
