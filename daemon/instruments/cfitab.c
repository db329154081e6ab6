// SPDX-License-Identifier: GPL-2.0-only
/*
 * The CFI tables BPF walks --unwind dwarf stacks with (cfitab.h, bpf/sample_cfi.bpf.h).
 *
 * A process a target watches by itself is listed as the target starts, or as it is first
 * sampled (sample_ops.c); any process is listed once CFITAB_AFTER of its samples came copied
 * since it was last listed, at most every 50 ms, the wait doubling up to 2 s: a program that
 * runs for a few samples (a build's compilers at 19 Hz) is cheaper to unwind from its copies
 * than to compile tables for, and one whose walks keep failing (a JIT) is not listed again
 * at every sample. A list is checked against
 * the process's mappings read after it was written: a mapping gone in between (BPF drops the
 * list of a process that unmaps a listed mapping, but only once the list is there) takes the
 * list away again, so that no stack is walked with the table of an object not mapped there.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfitab.h"
#include "pcmon_sample.h"
#include "procmaps.h"
#include "sampler.h"
#include "sym.h"
#include "util.h"

#define CFITAB_AFTER 8			/* copied samples before a process is listed */
#define CFITAB_GAP_NS 50000000ull	/* ... and between two lists of one process, */
#define CFITAB_GAP_MAX_NS 2000000000ull	/* doubling up to this */
#define CFITAB_PROCS 4096		/* processes remembered (by pid, direct-mapped) */
#define CFITAB_NONE UINT32_MAX		/* an object without a table */
#define CFITAB_BIG (UINT32_MAX - 1)	/* ... yet: too big to compile lazily (below) */
/*
 * The most .eh_frame an object may have to be compiled for a process listed because its
 * samples came copied (a whole machine's, a cgroup's): compiling runs at about a microsecond
 * a row, a row for every 10-20 bytes of .eh_frame, and a compiler's 4 MB of it took the
 * engine's loop half a second, for a program that a 19 Hz target samples a few times and
 * unwinds from copies in 50 us each. A process a target watches by itself has all its
 * objects compiled from its second list on (list_now()).
 */
#define CFITAB_LAZY_MAX (512u << 10)

struct cfitab_proc {
	uint32_t pid, epoch;
	uint32_t copied;		/* samples that came copied since its last list */
	uint64_t next_ns;		/* when it may be listed again */
	uint64_t gap_ns;		/* ... after the next list */
	bool listed;
	bool reread;		/* its last list was dropped: read its map again for the next */
	bool eager;		/* a target watches it by itself: every object compiled */
};

struct cfitab {
	struct sampler *smp;
	struct sym *sym;
	int tabs_fd, procs_fd;
	uint64_t budget, bytes;
	uint32_t *slot_of;		/* by module: 0 not tried, CFITAB_NONE, else its table */
	size_t cap_slot_of;
	int fds[PCMON_CFI_TABLES];	/* each table's map */
	uint32_t nrows[PCMON_CFI_TABLES];
	uint32_t ntabs;			/* slots used, from 1 */
	uint64_t rows, compile_ns, lists, lists_dropped, no_table, over_budget, too_big;
	struct cfitab_proc procs[CFITAB_PROCS];
};

struct cfitab *cfitab_new(struct sampler *smp, struct sym *sym, uint64_t budget)
{
	struct cfitab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->smp = smp;
	t->sym = sym;
	t->budget = budget;
	t->ntabs = 1;
	if (sampler_cfi_fds(smp, &t->tabs_fd, &t->procs_fd)) {
		free(t);
		return NULL;
	}
	return t;
}

void cfitab_free(struct cfitab *t)
{
	if (!t)
		return;
	for (uint32_t i = 1; i < t->ntabs; i++)
		close(t->fds[i]);
	free(t->slot_of);
	free(t);
}

/* A map for @n rows filled with them: its descriptor, or -errno. */
static int table_map(const struct pcmon_cfi_row *rows, uint32_t n)
{
	LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_INNER_MAP);
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	uint32_t *keys = malloc(n * sizeof(*keys)), count = n;
	int fd, r = 0;

	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		keys[i] = i;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "pcmon_cfi", sizeof(uint32_t), sizeof(*rows), n,
			    &mo);
	if (fd < 0)
		r = -errno;
	else if (bpf_map_update_batch(fd, keys, rows, &count, &bo) || count != n)
		r = errno ? -errno : -EIO;
	free(keys);
	if (r && fd >= 0)
		close(fd);
	return r ? r : fd;
}

/* Module @module's table, compiled and given to BPF on first use: its slot, 0 if none
 * (@lazy: not compiled if its .eh_frame is past CFITAB_LAZY_MAX). */
static uint32_t table_of(struct cfitab *t, uint32_t module, bool lazy)
{
	struct pcmon_cfi_row *rows;
	uint64_t t0, bytes;
	uint32_t n, slot;
	int fd, r;

	if (module >= t->cap_slot_of) {
		size_t old = t->cap_slot_of;

		if (GROW(t->slot_of, t->cap_slot_of, (size_t)module + 1))
			return 0;
		memset(t->slot_of + old, 0, (t->cap_slot_of - old) * sizeof(*t->slot_of));
	}
	if (t->slot_of[module] == CFITAB_NONE || (t->slot_of[module] == CFITAB_BIG && lazy))
		return 0;
	if (t->slot_of[module] && t->slot_of[module] != CFITAB_BIG)
		return t->slot_of[module];
	if (t->ntabs >= PCMON_CFI_TABLES || t->bytes >= t->budget) {
		t->over_budget++;
		t->slot_of[module] = CFITAB_NONE; /* (tables are kept for good: no room later) */
		return 0;
	}
	if (lazy && sym_eh_frame_bytes(t->sym, module) > CFITAB_LAZY_MAX) {
		t->too_big++;
		t->slot_of[module] = CFITAB_BIG;
		return 0;
	}
	t0 = now_ns();
	r = sym_cfi_table(t->sym, module, &rows, &n);
	t->compile_ns += now_ns() - t0;
	bytes = (uint64_t)n * ((sizeof(*rows) + 7) & ~7ul); /* (an array's elements: 8-byte units) */
	if (r || t->bytes + bytes > t->budget) {
		if (!r)
			t->over_budget++;
		else
			t->no_table++;
		if (r && r != -ENOENT)
			pr_debug("module %u: no CFI table for BPF: %s", module, strerror(-r));
		free(rows);
		t->slot_of[module] = CFITAB_NONE;
		return 0;
	}
	fd = table_map(rows, n);
	free(rows);
	slot = t->ntabs;
	if (fd < 0 || bpf_map_update_elem(t->tabs_fd, &slot, &fd, BPF_ANY)) {
		pr_warn("cannot give BPF a CFI table of %u rows: %s", n,
			strerror(fd < 0 ? -fd : errno));
		if (fd >= 0)
			close(fd);
		t->slot_of[module] = CFITAB_NONE;
		return 0;
	}
	t->fds[slot] = fd;
	t->nrows[slot] = n;
	t->ntabs++;
	t->rows += n;
	t->bytes += bytes;
	t->slot_of[module] = slot;
	return slot;
}

struct list_ctx {
	struct cfitab *t;
	bool lazy;		/* listed for its copies: big objects are not compiled */
	struct pcmon_cfi_proc p;
	uint64_t pgoff[PCMON_CFI_MAPS];	/* each listed mapping's file offset */
	uint32_t found;		/* ... of them found again (check_map()) */
};

static void list_map(void *ctx, uint64_t start, uint64_t end, uint64_t pgoff, uint64_t bias,
		     uint32_t module)
{
	struct list_ctx *c = ctx;
	uint32_t slot = table_of(c->t, module, c->lazy);

	if (!slot || c->p.n >= PCMON_CFI_MAPS)
		return;
	c->pgoff[c->p.n] = pgoff;
	c->p.m[c->p.n++] = (struct pcmon_cfi_map){ .start = start, .end = end, .bias = bias,
						    .table = slot,
						    .nrows = c->t->nrows[slot] };
}

/* A mapping the process has now: one of those listed? */
static int check_map(void *ctx, struct procmaps_vma *v)
{
	struct list_ctx *c = ctx;

	for (uint32_t i = 0; i < c->p.n && v->exec; i++)
		c->found += c->p.m[i].start == v->start && c->p.m[i].end == v->end &&
			    c->pgoff[i] == v->pgoff;
	return 0;
}

/*
 * List @pid's mappings with a table for BPF, from its map as the symbolizer last read it
 * (@reread: read again first), and check the list against the code it maps after the list
 * was written (PROCMAP_QUERY: a few questions, not the whole map read). false: dropped.
 */
static bool list_proc(struct cfitab *t, uint32_t pid, uint32_t epoch, bool lazy, bool reread)
{
	struct list_ctx c = { .t = t, .lazy = lazy, .p = { .epoch = epoch } };
	int r;

	if (sym_code_maps(t->sym, pid, epoch, reread, list_map, &c) || !c.p.n) {
		pr_debug("pid %u: no mapping with a CFI table to list", pid);
		return true;
	}
	/* (sorted by start, their file offsets with them) */
	for (uint32_t i = 1; i < c.p.n; i++)
		for (uint32_t k = i; k > 0 && c.p.m[k - 1].start > c.p.m[k].start; k--) {
			struct pcmon_cfi_map m = c.p.m[k];
			uint64_t o = c.pgoff[k];

			c.p.m[k] = c.p.m[k - 1];
			c.pgoff[k] = c.pgoff[k - 1];
			c.p.m[k - 1] = m;
			c.pgoff[k - 1] = o;
		}
	if (bpf_map_update_elem(t->procs_fd, &pid, &c.p, BPF_ANY))
		return true;
	t->lists++;
	/* (every mapping: the vDSO, listed too, is not a file's) */
	r = procmaps_walk(pid, 0, check_map, &c);
	if (!r && c.found == c.p.n) {
		pr_debug("pid %u: %u mappings with CFI tables listed for BPF", pid, c.p.n);
		return true;
	}
	bpf_map_delete_elem(t->procs_fd, &pid);
	t->lists_dropped++;
	return false;
}

/* Where process @pid is remembered (direct-mapped: another pid may have it). */
static struct cfitab_proc *slot_of_pid(struct cfitab *t, uint32_t pid)
{
	return &t->procs[(pid * 2654435761u) % CFITAB_PROCS];
}

static struct cfitab_proc *proc_of(struct cfitab *t, uint32_t pid, uint32_t epoch)
{
	struct cfitab_proc *e = slot_of_pid(t, pid);

	if (e->pid != pid || e->epoch != epoch)
		*e = (struct cfitab_proc){ .pid = pid, .epoch = epoch, .gap_ns = CFITAB_GAP_NS };
	return e;
}

/*
 * List @e now. Its big objects are compiled only once it is a target's own and was listed
 * before (its samples kept coming copied since): compiling node's 2.7 MB of .eh_frame held
 * the engine for half a second as the process started, while its JavaScript frames waited
 * to be named (and a V8's or a JVM's samples are copied in any case, once it is found).
 */
static void list_now(struct cfitab *t, struct cfitab_proc *e, uint64_t now)
{
	bool lazy = !e->eager || !e->listed;

	e->copied = 0;
	e->next_ns = now + e->gap_ns;
	e->gap_ns = MIN(2 * e->gap_ns, CFITAB_GAP_MAX_NS);
	e->listed = true;
	/* (a list dropped for a mapping gone: the next one reads the map again) */
	e->reread = !list_proc(t, e->pid, e->epoch, lazy, e->reread);
}

void cfitab_copied(struct cfitab *t, uint32_t pid, uint32_t epoch, bool eager, uint64_t now)
{
	struct cfitab_proc *e;

	if (!t)
		return;
	e = proc_of(t, pid, epoch);
	e->eager |= eager;
	if ((++e->copied >= CFITAB_AFTER || (eager && !e->listed)) && now >= e->next_ns)
		list_now(t, e, now);
}

void cfitab_list(struct cfitab *t, uint32_t pid, uint32_t epoch, bool again, uint64_t now)
{
	struct cfitab_proc *e = t ? proc_of(t, pid, epoch) : NULL;

	if (e && (!again || e->listed)) {
		e->eager |= !again;
		list_now(t, e, now);
	}
}

void cfitab_exited(struct cfitab *t, uint32_t pid)
{
	struct cfitab_proc *e;

	if (!t)
		return;
	bpf_map_delete_elem(t->procs_fd, &pid);
	/* (its pid may come again, another process) */
	e = slot_of_pid(t, pid);
	if (e->pid == pid)
		*e = (struct cfitab_proc){ 0 };
}

void cfitab_json(const struct cfitab *t, cJSON *o)
{
	cJSON *c = cJSON_AddObjectToObject(o, "cfi_tables");

	if (!c)
		return;
	cJSON_AddNumberToObject(c, "budget_kib", t ? (double)(t->budget >> 10) : 0);
	if (!t)
		return;
	cJSON_AddNumberToObject(c, "objects", t->ntabs - 1);
	cJSON_AddNumberToObject(c, "rows", (double)t->rows);
	cJSON_AddNumberToObject(c, "kib", (double)(t->bytes >> 10));
	cJSON_AddNumberToObject(c, "compile_ms_total", (double)t->compile_ns / 1e6);
	cJSON_AddNumberToObject(c, "objects_without", (double)t->no_table);
	cJSON_AddNumberToObject(c, "objects_over_budget", (double)t->over_budget);
	cJSON_AddNumberToObject(c, "objects_left_to_copies", (double)t->too_big);
	cJSON_AddNumberToObject(c, "process_lists", (double)t->lists);
	cJSON_AddNumberToObject(c, "process_lists_dropped", (double)t->lists_dropped);
}
