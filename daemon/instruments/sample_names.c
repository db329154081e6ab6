// SPDX-License-Identifier: GPL-2.0-only
/* The names samples are listed by: of threads, processes (as BPF noted them) and cgroups. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cgpath.h"
#include "dbginfo.h"
#include "groups.h"
#include "sample_int.h"
#include "sampler.h"

uint32_t sample_names_get(const struct sample_names *n, uint64_t key)
{
	int64_t id = n->keys ? itab_find(n->keys, &key, sizeof(key)) : -1;

	return id < 0 ? 0 : n->names[id];
}

/* The slot of @key, a new one unnamed and unread: its index, or -ENOMEM. */
static int64_t names_slot(struct sample_names *n, uint64_t key)
{
	int64_t found = itab_find(n->keys, &key, sizeof(key));
	size_t need = (size_t)itab_count(n->keys) + 1, cap = n->cap;
	uint32_t id;

	if (found >= 0)
		return found;
	/* room first: a key interned has its slots */
	if (GROW(n->names, cap, need) || GROW(n->read, n->cap, need) ||
	    itab_intern(n->keys, &key, sizeof(key), &id) < 0)
		return -ENOMEM;
	n->names[id] = n->read[id] = 0;
	return id;
}

int sample_names_set(struct sample_names *n, uint64_t key, uint32_t name)
{
	int64_t id = names_slot(n, key);

	if (id < 0)
		return -ENOMEM;
	n->names[id] = name;
	return 0;
}

uint32_t sample_thread_name(const struct sample *sp, uint32_t tid)
{
	return sample_names_get(&sp->threads, tid);
}

int sample_name_thread(struct sample *sp, uint32_t tid, uint32_t name)
{
	return sample_names_set(&sp->threads, tid, name);
}

uint32_t sample_process_name(const struct sample *sp, uint32_t pid)
{
	uint32_t name = sample_names_get(&sp->processes, pid);

	return name ? name : sample_names_get(&sp->threads, pid);
}

uint32_t sample_cgroup_name(const struct sample *sp, uint64_t id)
{
	return sample_names_get(&sp->cgroups, id);
}

/* A comm file of /proc into @buf ("" if it cannot be read: the task is gone). */
static void read_comm(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (fd >= 0)
		close(fd);
}

/*
 * @n[@key] := @comm, read in drain @drain; an empty @comm (gone) keeps the name it had (a
 * new one is "": sym string 0).
 */
static void name_one(struct sample_g *g, struct sample_names *n, uint64_t key, const char *comm,
		     uint64_t drain)
{
	int64_t id = names_slot(n, key);
	uint32_t name;

	if (id < 0)
		return;
	n->read[id] = drain;
	if (comm[0] && !sym_intern_str(g->env.sym, comm, &name))
		n->names[id] = name;
}

/*
 * A thread's name (the exports' thread label) and its process's (list --by comm), read at
 * most once a batch of samples (name_gen), when a sample of the thread is read: as BPF
 * noted them with its latest sample, else as /proc has them now ("" for a thread gone by
 * then, unless it was named before).
 */
void sample_names_thread(struct sample_g *g, struct sample *sp, const struct agg_stack *st)
{
	char path[64], comm[32] = "", pcomm[32] = "";
	int64_t id;

	if (!st || !st->tid)
		return;
	id = itab_find(sp->threads.keys, &(uint64_t){ st->tid }, sizeof(uint64_t));
	if (!g->name_fresh && id >= 0 && sp->threads.read[id] == g->name_gen)
		return;
	if (sampler_thread_name(g->smp, st->tid, comm, pcomm, sizeof(comm))) {
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", st->pid, st->tid);
		read_comm(path, comm, sizeof(comm));
		snprintf(path, sizeof(path), "/proc/%u/comm", st->pid);
		read_comm(path, pcomm, sizeof(pcomm));
	}
	name_one(g, &sp->threads, st->tid, comm, g->name_gen);
	name_one(g, &sp->processes, st->pid, pcomm, g->name_gen);
}

/* The path of a cgroup a target's sample was taken in, found the first time it is met. */
void sample_names_cgroup(struct sample_g *g, struct sample *sp, const struct agg_stack *st)
{
	char gone[32];
	const char *path;
	uint32_t name;

	if (!st || !st->cgroup || sample_names_get(&sp->cgroups, st->cgroup))
		return;
	path = cgpath_of(g->cgroups, st->cgroup);
	if (!path) {
		snprintf(gone, sizeof(gone), "cgroup:%llu", (unsigned long long)st->cgroup);
		path = gone;
	}
	if (!sym_intern_str(g->env.sym, path, &name))
		sample_names_set(&sp->cgroups, st->cgroup, name);
}

static uint32_t namer_process(const void *ctx, uint32_t pid)
{
	return sample_process_name(ctx, pid);
}

static uint32_t namer_thread(const void *ctx, uint32_t tid)
{
	return sample_thread_name(ctx, tid);
}

static uint32_t namer_cgroup(const void *ctx, uint64_t id)
{
	return sample_cgroup_name(ctx, id);
}

void sample_namer(const struct sample *sp, struct groups_namer *out)
{
	*out = (struct groups_namer){ namer_process, namer_thread, namer_cgroup, sp };
}
