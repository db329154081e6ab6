// SPDX-License-Identifier: GPL-2.0-only
/* JIT code: the names a process's perf map (/tmp/perf-PID.map) gives its code. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym_int.h"

static int jit_sym_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Parse the lines "START SIZE name" (hex, "0x" optional) of @buf[0..len); a line without its
 * newline yet is left for the next read. Returns the bytes consumed.
 */
static size_t jit_parse(struct jitmap *j, char *buf, size_t len)
{
	size_t done = 0;

	for (char *nl; done < len && (nl = memchr(buf + done, '\n', len - done));) {
		char *line = buf + done, *end;
		uint64_t start, size;
		size_t n;

		*nl = '\0';
		done = nl + 1 - buf;
		start = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		line = end;
		size = strtoull(line, &end, 16);
		if (end == line || *end != ' ' || !size || start + size < start)
			continue;
		line = end + 1;
		n = strlen(line);
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (!n || GROW(j->syms, j->cap, j->n + 1) ||
		    GROW(j->names, j->names_cap, j->names_len + n + 1))
			continue;
		memcpy(j->names + j->names_len, line, n + 1);
		j->syms[j->n++] = (struct jit_sym){ start, start + size, j->names_len, j->seq++ };
		j->names_len += n + 1;
	}
	return done;
}

/*
 * Read what the perf map gained since the last read. Code moves and is freed: a line for a
 * start that an earlier line had replaces it (the older text is left in names). Returns
 * whether anything was added.
 */
static bool jit_read(struct jitmap *j)
{
	enum { CHUNK = 1 << 20 };
	size_t before = j->n, out = 0;
	struct stat st;
	char *buf;

	if (j->fd < 0 || fstat(j->fd, &st))
		return false;
	if ((uint64_t)st.st_size < j->off) {
		/* rewritten from the start (another process of that pid): forget the old one */
		j->off = j->n = j->names_len = 0;
		before = 0;
	}
	if ((uint64_t)st.st_size == j->off)
		return false;
	/* a megabyte at a time (a JVM's map reaches hundreds): whole lines, the rest next round */
	buf = malloc(CHUNK + 1);
	while (buf && j->off < (uint64_t)st.st_size) {
		ssize_t got = pread(j->fd, buf, MIN((uint64_t)CHUNK, st.st_size - j->off), j->off);
		size_t used;

		if (got <= 0)
			break;
		buf[got] = '\0';
		used = jit_parse(j, buf, got);
		if (!used)
			break; /* a line longer than a chunk, or one still being written */
		j->off += used;
	}
	free(buf);
	if (j->n == before)
		return false;
	if (j->n)
		qsort(j->syms, j->n, sizeof(*j->syms), jit_sym_cmp);
	for (size_t i = 0; i < j->n; i++) {
		if (out && j->syms[out - 1].start == j->syms[i].start)
			out--; /* same start: the later line (sorted after it) wins */
		j->syms[out++] = j->syms[i];
	}
	j->n = out;
	return true;
}

/* The name the perf map gives @pc, or NULL. */
static const char *jit_name(const struct jitmap *j, uint64_t pc)
{
	size_t lo = sym_count_starting_by(j->syms, j->n, sizeof(*j->syms), pc);

	/*
	 * The last start at or below @pc, else one a little before it whose code spans a
	 * newer, smaller one: a few steps back are enough for how JIT compilers reuse memory.
	 */
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 8; steps++)
		if (pc < j->syms[i].end)
			return j->names + j->syms[i].name;
	return NULL;
}

/* The pid of @pid inside its own pid namespace: the one in its perf map's name. */
static uint32_t ns_pid(uint32_t pid)
{
	char path[64], *buf, *line;
	uint32_t nspid = pid;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	buf = read_file(path, NULL);
	line = buf ? strstr(buf, "\nNSpid:") : NULL;
	if (line) {
		/* "NSpid:\t4242\t7": the last number is the innermost namespace's */
		char *end = strchr(line + 1, '\n'), *tab = NULL;

		if (end)
			*end = '\0';
		for (char *t = line + 1; (t = strchr(t, '\t')); t++)
			tab = t;
		if (tab)
			nspid = strtoul(tab + 1, NULL, 10);
	}
	free(buf);
	return nspid;
}

/* Open (pid, epoch)'s perf map, as the process sees it, and make it its module [jit]. */
static int jit_open(struct sym *s, struct pmap *pm, uint32_t pid)
{
	struct mod_key mkey = { UINT64_MAX - 2, 0, 0, 0 };
	char path[128], root[64];
	struct jitmap *j;
	uint32_t mod;
	int fd, r;

	snprintf(path, sizeof(path), "/proc/%u/root/tmp/perf-%u.map", pid, ns_pid(pid));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	snprintf(root, sizeof(root), "/proc/%u/root/", pid);
	if (fd < 0 && access(root, F_OK)) {
		struct stat st;
		double born;

		/*
		 * The process is gone (its samples can be drained after it): its perf map is
		 * still in /tmp, if it ran in our mount namespace. Not a leftover of an earlier
		 * process with that pid: it must have been written since this one was first seen.
		 */
		born = wall_time() - (double)(now_ns() - pm->born_ns) / 1e9;
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_mtim.tv_sec + 1 < born)) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return -ENOENT;
	j = calloc(1, sizeof(*j));
	/* each process's perf map is a module of its own: a key no other module has */
	mkey.ino = s->nmods;
	r = j ? itab_intern(s->mod_keys, &mkey, sizeof(mkey), &mod) : -ENOMEM;
	if (r != 1 || sym_add_module(s, path, SYM_JIT_MODULE, &mod)) {
		free(j);
		close(fd);
		return -ENOMEM;
	}
	j->fd = fd;
	s->mods[mod].jit = j;
	pm->jit_mod = mod;
	pr_debug("reading JIT symbols of pid %u from %s", pid, path);
	return 0;
}

/*
 * Name the locations of @mod (a perf map) still waiting for their line: a JIT writes a line
 * when it has compiled the code, and the samples in it may come before it reaches the file.
 * The frame is renamed in place, so samples already stored get the name too.
 */
static void jit_resolve(struct sym *s, uint32_t mod)
{
	struct jitmap *j = s->mods[mod].jit;
	size_t out = 0;

	for (size_t i = 0; i < j->npending; i++) {
		const struct sym_loc *l = &s->locs[j->pending[i]];
		const char *name = jit_name(j, l->addr);
		uint32_t proc;

		if (!name || sym_intern_proc(s, SYM_JIT_MODULE, name, NULL, 0, &proc) < 0)
			j->pending[out++] = j->pending[i];
		else
			s->frames[l->first] = proc;
	}
	j->npending = out;
}

/* Read what the perf map of @mod gained; name what waited for it. */
void jit_refresh(struct sym *s, uint32_t mod)
{
	if (jit_read(s->mods[mod].jit))
		jit_resolve(s, mod);
}

/* (pid, epoch)'s perf map, opened on first need: an attempt at most every 100 ms. */
struct jitmap *jit_map(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t now)
{
	if (!pm->jit_mod) {
		if (now - pm->jit_try_ns < 100000000)
			return NULL;
		pm->jit_try_ns = now;
		if (jit_open(s, pm, pid))
			return NULL;
		jit_refresh(s, pm->jit_mod);
		if (pm->final) {
			/* found after the process left: complete, nothing more to wait for */
			close(s->mods[pm->jit_mod].jit->fd);
			s->mods[pm->jit_mod].jit->fd = -1;
		}
	}
	return s->mods[pm->jit_mod].jit;
}

/* The name @j gives @pc; if none, after looking for new lines (a stat, at most once a ms). */
const char *jit_lookup(struct sym *s, struct pmap *pm, struct jitmap *j, uint64_t pc,
		       uint64_t now)
{
	const char *name = jit_name(j, pc);

	if (!name && now - pm->jit_try_ns >= 1000000) {
		pm->jit_try_ns = now;
		jit_refresh(s, pm->jit_mod);
		name = jit_name(j, pc);
	}
	return name;
}

/*
 * The location of @pc, outside every file mapping of (pid, epoch), in its perf map's module.
 * Each address is symbolized once: a pc the map does not name yet (@create: it is in no file
 * either) gets a location without a name, named when the map grows (jit_resolve).
 */
bool jit_user(struct sym *s, struct pmap *pm, uint32_t pid, uint64_t pc, bool create,
	      uint32_t *loc)
{
	uint64_t now = now_ns();
	struct jitmap *j = jit_map(s, pm, pid, now);
	const char *name;
	int64_t found;

	if (!j)
		return false;
	found = sym_loc_find(s, pm->jit_mod, pc);
	if (found >= 0 && sym_proc(s, s->frames[s->locs[found].first])->name) {
		*loc = found;
		return true;
	}
	/* unnamed yet: new lines may name it (and rename its location) */
	name = jit_lookup(s, pm, j, pc, now);
	if (found >= 0) {
		/* still unnamed: a file the address map has yet to show comes first */
		if (!create && !sym_proc(s, s->frames[s->locs[found].first])->name)
			return false;
		*loc = found;
		return true;
	}
	if (!name && !create)
		return false;
	if (sym_loc_new(s, pm->jit_mod, pc, loc) > 0)
		sym_loc_done(s, *loc, name);
	if (!name && !GROW(j->pending, j->cap_pending, j->npending + 1))
		j->pending[j->npending++] = *loc;
	return true;
}
