// SPDX-License-Identifier: GPL-2.0-only
#include <dlfcn.h>
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "dbginfo.h"
#include "util.h"

#define BID_MAX 64		/* build-ids are 20 bytes (sha1) in practice; 64 is generous */
#define RETRY_FIRST_S 30	/* a network failure is retried after 30 s, 60 s, ... */
#define RETRY_MAX_S 3600	/* ... up to an hour; "the servers do not have it" after an hour */

enum ent_state {
	ENT_NEW,	/* asked for, not yet queued */
	ENT_QUEUED,
	ENT_FETCHING,
	ENT_FOUND,	/* in the cache at .path */
	ENT_FAILED,	/* not before .retry_ns */
};

/* One build-id ever asked for. */
struct ent {
	unsigned char bid[BID_MAX];
	uint32_t len;
	enum ent_state state;
	int err;		/* the last failure, -errno */
	unsigned failures;	/* in a row */
	uint64_t retry_ns;
	char *path;		/* ENT_FOUND: the debug file in the cache */
	char *file;		/* the first object that wanted it */
};

struct dbginfo {
	char *urls, *cache;
	int efd;			/* eventfd: the worker finished something */
	debuginfod_client *client;	/* the worker's */
	pthread_t thread;
	bool started;
	int stop;			/* read by the client's progress callback */
	uint64_t last_tick_ns;

	/* everything below is under mu; mu is never held across I/O or a callback */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct itab *keys;		/* build-id -> entry */
	struct ent *ents;
	size_t cap_ents;
	uint32_t queue[DBGINFO_QUEUE_MAX]; /* a ring of entries to fetch */
	size_t qhead, qlen;
	uint32_t *done;			/* entries the worker finished, for the engine */
	size_t ndone, cap_done;
	struct dbginfo_stats st;
	char last_error[160];
};

static void bid_hex(const unsigned char *bid, size_t len, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; i < len && 2 * i + 2 < outlen; i++)
		snprintf(out + 2 * i, 3, "%02x", bid[i]);
	out[2 * i] = '\0';
}

/* ---- the queue (callers hold mu) */

static struct ent *ent_get(struct dbginfo *d, const unsigned char *bid, size_t len, bool create,
			   uint32_t *id)
{
	int64_t f;
	int r;

	if (!len || len > BID_MAX)
		return NULL;
	if (!create) {
		f = itab_find(d->keys, bid, len);
		if (f < 0)
			return NULL;
		*id = f;
		return &d->ents[f];
	}
	r = itab_intern(d->keys, bid, len, id);
	if (r < 0 || GROW(d->ents, d->cap_ents, *id + 1))
		return NULL;
	if (r == 1) {
		d->ents[*id] = (struct ent){ .len = len, .state = ENT_NEW };
		memcpy(d->ents[*id].bid, bid, len);
	}
	return &d->ents[*id];
}

static void enqueue(struct dbginfo *d, uint32_t id)
{
	struct ent *e = &d->ents[id];

	if (d->qlen == DBGINFO_QUEUE_MAX) {
		/* full: remembered as a failure, so the tick queues it again later */
		d->st.queue_full++;
		e->state = ENT_FAILED;
		e->err = -ENOBUFS;
		e->retry_ns = now_ns() + RETRY_FIRST_S * 1000000000ULL;
		return;
	}
	d->queue[(d->qhead + d->qlen++) % DBGINFO_QUEUE_MAX] = id;
	e->state = ENT_QUEUED;
	pthread_cond_signal(&d->cv);
}

static uint64_t retry_delay_s(int err, unsigned failures)
{
	uint64_t s = RETRY_FIRST_S;

	if (err == -ENOENT)
		return RETRY_MAX_S; /* the servers answered: they do not have it */
	for (unsigned i = 1; i < failures && s < RETRY_MAX_S; i++)
		s *= 2;
	return MIN(s, RETRY_MAX_S);
}

/* ---- the worker */

/*
 * libdebuginfod is opened when servers are configured, not linked: it brings libcurl, GnuTLS
 * and Kerberos, whose loading was two thirds of every pcmon command's start-up time.
 */
static struct {
	debuginfod_client *(*begin)(void);
	void (*end)(debuginfod_client *);
	int (*find_debuginfo)(debuginfod_client *, const unsigned char *, int, char **);
	void (*set_user_data)(debuginfod_client *, void *);
	void *(*get_user_data)(debuginfod_client *);
	void (*set_progressfn)(debuginfod_client *, debuginfod_progressfn_t);
} dfd;

static int load_debuginfod(void)
{
	static const char lib[] = "libdebuginfod.so.1";
	const struct dl_sym syms[] = {
		{ "debuginfod_end", &dfd.end },
		{ "debuginfod_find_debuginfo", &dfd.find_debuginfo },
		{ "debuginfod_set_user_data", &dfd.set_user_data },
		{ "debuginfod_get_user_data", &dfd.get_user_data },
		{ "debuginfod_set_progressfn", &dfd.set_progressfn },
		{ "debuginfod_begin", &dfd.begin }, /* last: it says "loaded" */
	};
	void *h;

	if (dfd.begin)
		return 0;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		pr_warn("debuginfod: cannot load %s (%s): install libdebuginfod1; debuginfod is off",
			lib, dlerror());
		return -ENOENT;
	}
	if (!dl_bind(h, syms, ARRAY_SIZE(syms))) {
		pr_warn("debuginfod: %s lacks the functions pcmon needs; debuginfod is off", lib);
		return -ENOENT;
	}
	return 0;
}

static int on_progress(debuginfod_client *c, long a, long b)
{
	struct dbginfo *d = dfd.get_user_data(c);

	(void)a;
	(void)b;
	return __atomic_load_n(&d->stop, __ATOMIC_RELAXED); /* non-zero aborts the download */
}

/* The build-id of the dwz file that a debug file's .gnu_debugaltlink names, if any. */
static int altlink_build_id(const char *path, unsigned char *bid, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int r = -ENOENT;

	while (elf && !elf_getshdrstrndx(elf, &shstrndx) && (scn = elf_nextscn(elf, scn))) {
		const char *name, *p;
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugaltlink") || !(data = elf_getdata(scn, NULL)) ||
		    !data->d_buf)
			continue;
		/* the file name, NUL, then the build-id */
		p = memchr(data->d_buf, '\0', data->d_size);
		n = p ? data->d_size - (p + 1 - (const char *)data->d_buf) : 0;
		if (n && n <= BID_MAX) {
			memcpy(bid, p + 1, n);
			*len = n;
			r = 0;
		}
		break;
	}
	elf_end(elf);
	if (fd >= 0)
		close(fd);
	return r;
}

/* Fetch one build-id; mu is not held. 0 and *path, or -errno. */
static int fetch(struct dbginfo *d, const unsigned char *bid, size_t len, char **path)
{
	char hex[2 * BID_MAX + 1];
	int fd;

	bid_hex(bid, len, hex, sizeof(hex));
	*path = NULL;
	fd = dfd.find_debuginfo(d->client, bid, len, path);
	if (fd < 0) {
		free(*path);
		*path = NULL;
		pr_debug("debuginfod: no debug info for build-id %s: %s", hex, strerror(-fd));
		return fd;
	}
	close(fd);
	pr_info("debuginfod: debug info for build-id %s in %s", hex, *path);
	return 0;
}

static void *worker(void *arg)
{
	struct dbginfo *d = arg;

	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		unsigned char bid[BID_MAX], alt[BID_MAX];
		size_t len, altlen = 0;
		uint32_t id, altid;
		char *path = NULL, *altpath = NULL;
		uint64_t t0, ns;
		struct ent *e;
		int r;

		if (!d->qlen) {
			pthread_cond_wait(&d->cv, &d->mu);
			continue;
		}
		id = d->queue[d->qhead];
		d->qhead = (d->qhead + 1) % DBGINFO_QUEUE_MAX;
		d->qlen--;
		e = &d->ents[id];
		e->state = ENT_FETCHING;
		len = e->len;
		memcpy(bid, e->bid, len);
		d->st.requests++;
		pthread_mutex_unlock(&d->mu);

		t0 = now_ns();
		r = fetch(d, bid, len, &path);
		/* a dwz-compressed debug file needs its shared part too, fetched by its build-id */
		if (!r && !altlink_build_id(path, alt, &altlen) && fetch(d, alt, altlen, &altpath))
			altlen = 0;
		ns = now_ns() - t0;

		pthread_mutex_lock(&d->mu);
		e = &d->ents[id]; /* the array may have moved */
		if (!r) {
			free(e->path); /* fetched again after the cache lost it */
			e->state = ENT_FOUND;
			e->path = path;
			e->failures = 0;
			d->st.fetched++;
			if (altlen && (e = ent_get(d, alt, altlen, true, &altid))) {
				free(e->path);
				e->path = altpath;
				e->state = ENT_FOUND;
				altpath = NULL;
			}
		} else {
			char hex[2 * BID_MAX + 1];

			e->state = ENT_FAILED;
			e->err = r;
			e->failures++;
			e->retry_ns = now_ns() + retry_delay_s(r, e->failures) * 1000000000ULL;
			bid_hex(bid, len, hex, sizeof(hex));
			snprintf(d->last_error, sizeof(d->last_error), "build-id %s: %s", hex,
				 r == -ENOENT ? "not on the servers" : strerror(-r));
		}
		free(altpath);
		d->st.fetch_ms_total += ns / 1e6;
		d->st.fetch_ms_max = MAX(d->st.fetch_ms_max, ns / 1e6);
		if (!GROW(d->done, d->cap_done, d->ndone + 1))
			d->done[d->ndone++] = id;
		pthread_mutex_unlock(&d->mu);
		eventfd_write(d->efd, 1);
		pthread_mutex_lock(&d->mu);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* ---- lifecycle */

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (!n || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1;; p++) {
		char c = *p;

		if (c && c != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			return 0;
	}
}

int dbginfo_new(const struct dbginfo_opts *o, struct dbginfo **out)
{
	const char *urls = o->urls ? o->urls : getenv("DEBUGINFOD_URLS");
	struct dbginfo *d;
	int r;

	*out = NULL;
	if (!urls || !urls[strspn(urls, " \t")]) {
		/* off ("" turns it off): libdwfl's own lookups would fetch if this were set */
		unsetenv("DEBUGINFOD_URLS");
		return 0;
	}
	elf_version(EV_CURRENT); /* the worker reads ELF files too */
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->efd = -1;
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->urls = strdup(urls);
	d->keys = itab_new();
	if (!d->urls || !d->keys ||
	    asprintf(&d->cache, "%s/debuginfod", o->cache_dir ? o->cache_dir : ".") < 0) {
		d->cache = NULL;
		r = -ENOMEM;
		goto fail;
	}
	r = mkdir_p(d->cache, 0755);
	if (r) {
		pr_warn("debuginfod: cannot create the cache %s: %s (give another with --cache-dir); debuginfod is off",
			d->cache, strerror(-r));
		goto off;
	}
	/*
	 * libdebuginfod reads its settings from the environment at each lookup. Set them now,
	 * before the worker exists: setenv() is not safe while another thread reads.
	 */
	if (setenv("DEBUGINFOD_URLS", d->urls, 1) || setenv("DEBUGINFOD_CACHE_PATH", d->cache, 1) ||
	    setenv("DEBUGINFOD_TIMEOUT", getenv("DEBUGINFOD_TIMEOUT") ?: DBGINFO_TIMEOUT_S, 1)) {
		r = -errno;
		goto fail;
	}
	if (load_debuginfod())
		goto off;
	d->client = dfd.begin();
	d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!d->client || d->efd < 0) {
		pr_warn("debuginfod: cannot start the client: %s; debuginfod is off", strerror(errno));
		goto off;
	}
	dfd.set_user_data(d->client, d);
	dfd.set_progressfn(d->client, on_progress);
	r = -thread_start(&d->thread, worker, d);
	if (r) {
		pr_warn("debuginfod: cannot start the fetching thread: %s; debuginfod is off",
			strerror(-r));
		goto off;
	}
	d->started = true;
	pr_info("debuginfod: servers %s, cache %s, timeout %s s", d->urls, d->cache,
		getenv("DEBUGINFOD_TIMEOUT"));
	*out = d;
	return 0;
off:
	r = 0;
fail:
	unsetenv("DEBUGINFOD_URLS"); /* off, as above */
	dbginfo_free(d);
	return r;
}

void dbginfo_free(struct dbginfo *d)
{
	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->mu);
		__atomic_store_n(&d->stop, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
		/* a download in progress ends at the client's next progress call (about 1 s) */
		pthread_join(d->thread, NULL);
	}
	if (d->client)
		dfd.end(d->client);
	if (d->efd >= 0)
		close(d->efd);
	for (size_t i = 0; d->keys && i < itab_count(d->keys); i++) {
		free(d->ents[i].path);
		free(d->ents[i].file);
	}
	itab_free(d->keys);
	free(d->ents);
	free(d->done);
	free(d->urls);
	free(d->cache);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d);
}

int dbginfo_fd(const struct dbginfo *d)
{
	return d ? d->efd : -1;
}

/* ---- the engine's side */

void dbginfo_collect(struct dbginfo *d, dbginfo_arrived_fn *fn, void *ctx)
{
	uint32_t *done;
	size_t n;
	eventfd_t v;

	if (!d)
		return;
	eventfd_read(d->efd, &v);
	pthread_mutex_lock(&d->mu);
	done = d->done;
	n = d->ndone;
	d->done = NULL;
	d->ndone = d->cap_done = 0;
	pthread_mutex_unlock(&d->mu);
	/* the lock is not held while @fn runs: it symbolizes, which calls our callbacks */
	for (size_t i = 0; i < n; i++) {
		unsigned char bid[BID_MAX];
		size_t len = 0;

		pthread_mutex_lock(&d->mu);
		if (d->ents[done[i]].state == ENT_FOUND) {
			len = d->ents[done[i]].len;
			memcpy(bid, d->ents[done[i]].bid, len);
		}
		pthread_mutex_unlock(&d->mu);
		if (len)
			fn(ctx, bid, len);
	}
	free(done);
}

void dbginfo_tick(struct dbginfo *d)
{
	uint64_t now = now_ns();

	if (!d || now - d->last_tick_ns < 1000000000ULL)
		return;
	d->last_tick_ns = now;
	pthread_mutex_lock(&d->mu);
	for (uint32_t i = 0; i < itab_count(d->keys) && d->qlen < DBGINFO_QUEUE_MAX; i++)
		if (d->ents[i].state == ENT_FAILED && d->ents[i].retry_ns <= now)
			enqueue(d, i);
	pthread_mutex_unlock(&d->mu);
}

void dbginfo_want(struct dbginfo *d, const unsigned char *bid, size_t len, const char *file)
{
	struct ent *e;
	uint32_t id;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	e = ent_get(d, bid, len, true, &id);
	if (e && !e->file && file)
		e->file = strdup(file);
	if (e && (e->state == ENT_NEW || (e->state == ENT_FAILED && e->retry_ns <= now_ns())))
		enqueue(d, id);
	pthread_mutex_unlock(&d->mu);
}

/* The debug file fetched for @bid, opened; -1 if none arrived (or it left the cache). */
static int fetched(struct dbginfo *d, const unsigned char *bid, size_t len, char **name)
{
	char *path = NULL;
	struct ent *e;
	uint32_t id;
	int fd;

	pthread_mutex_lock(&d->mu);
	e = ent_get(d, bid, len, false, &id);
	if (e && e->state == ENT_FOUND)
		path = strdup(e->path);
	pthread_mutex_unlock(&d->mu);
	if (!path)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/* the client's cache cleaning removed it: fetch it again */
		pthread_mutex_lock(&d->mu);
		e = &d->ents[id];
		if (e->state == ENT_FOUND)
			e->state = ENT_NEW;
		pthread_mutex_unlock(&d->mu);
		free(path);
		return -1;
	}
	*name = path;
	return fd;
}

void dbginfo_stats(struct dbginfo *d, struct dbginfo_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	*st = d->st;
	st->pending = st->failed = 0;
	for (uint32_t i = 0; i < itab_count(d->keys); i++) {
		enum ent_state s = d->ents[i].state;

		st->pending += s == ENT_QUEUED || s == ENT_FETCHING;
		st->failed += s == ENT_FAILED;
	}
	pthread_mutex_unlock(&d->mu);
}

void dbginfo_status_json(struct dbginfo *d, cJSON *parent)
{
	cJSON *o = cJSON_AddObjectToObject(parent, "debuginfod"), *arr;
	struct dbginfo_stats st;
	uint64_t now = now_ns();

	cJSON_AddBoolToObject(o, "enabled", d != NULL);
	if (!d)
		return;
	dbginfo_stats(d, &st);
	cJSON_AddStringToObject(o, "urls", d->urls);
	cJSON_AddStringToObject(o, "cache", d->cache);
#define ADD_STAT(type, f) cJSON_AddNumberToObject(o, #f, st.f);
	DBGINFO_STATS_FIELDS(ADD_STAT)
#undef ADD_STAT
	pthread_mutex_lock(&d->mu);
	if (d->last_error[0])
		cJSON_AddStringToObject(o, "last_error", d->last_error);
	/* each build-id asked for (the first DBGINFO_STATUS_MAX) */
	arr = cJSON_AddArrayToObject(o, "build_ids");
	for (uint32_t i = 0; i < itab_count(d->keys) && i < DBGINFO_STATUS_MAX; i++) {
		static const char *const names[] = {
			[ENT_NEW] = "pending",	 [ENT_QUEUED] = "pending", [ENT_FETCHING] = "fetching",
			[ENT_FOUND] = "fetched", [ENT_FAILED] = "failed",
		};
		const struct ent *e = &d->ents[i];
		char hex[2 * BID_MAX + 1];
		cJSON *x = cJSON_CreateObject();

		bid_hex(e->bid, e->len, hex, sizeof(hex));
		cJSON_AddStringToObject(x, "build_id", hex);
		cJSON_AddStringToObject(x, "state", names[e->state]);
		if (e->file)
			cJSON_AddStringToObject(x, "object", e->file);
		if (e->state == ENT_FOUND)
			cJSON_AddStringToObject(x, "debug_file", e->path);
		if (e->state == ENT_FAILED) {
			cJSON_AddStringToObject(x, "error", e->err == -ENOENT ?
								    "not on the servers" :
								    strerror(-e->err));
			cJSON_AddNumberToObject(x, "retry_in_s",
						e->retry_ns > now ? (e->retry_ns - now) / 1e9 : 0);
		}
		cJSON_AddItemToArray(arr, x);
	}
	pthread_mutex_unlock(&d->mu);
}

/* ---- Dwfl callbacks: local places first, then what was fetched, else ask for it */

/* The build-id of the ELF file @fd, into @bid; its length, or <= 0. */
static int fd_build_id(int fd, const void **bid, Elf **elfp)
{
	*elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	return *elfp ? dwelf_elf_gnu_build_id(*elfp, bid) : -1;
}

static bool crc_matches(int fd, GElf_Word crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, NULL, 0);
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, n);
	lseek(fd, 0, SEEK_SET);
	return n == 0 && (GElf_Word)c == crc;
}

/* Is @fd the debug file of an object with build-id @bid (or, without one, CRC @crc)? */
static bool debug_file_matches(int fd, const unsigned char *bid, int len, GElf_Word crc)
{
	const void *fbid;
	Elf *elf;
	int flen = fd_build_id(fd, &fbid, &elf);
	bool ok = len > 0 ? flen == len && !memcmp(fbid, bid, len) : crc_matches(fd, crc);

	elf_end(elf);
	return ok;
}

/*
 * The debug file a .gnu_debuglink names (or, without one, "FILE.debug"), where GDB and
 * libdwfl look for it: next to the object, in its .debug/, under /usr/lib/debug/DIR/.
 */
static int find_by_link(const char *file, const char *link, GElf_Word crc,
			const unsigned char *bid, int len, char **name)
{
	static const char *const fmts[] = { "%s/%s", "%s/.debug/%s", "/usr/lib/debug%s/%s" };
	char dir[PATH_MAX], local[NAME_MAX + 8], cand[2 * PATH_MAX];
	const char *slash = file ? strrchr(file, '/') : NULL;
	struct stat fst, cst;

	if (!slash || (size_t)(slash - file) >= sizeof(dir) || stat(file, &fst))
		return -1;
	if (!link) {
		snprintf(local, sizeof(local), "%s.debug", slash + 1);
		link = local;
	}
	memcpy(dir, file, slash - file);
	dir[slash - file] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(fmts) + 1; i++) {
		int fd;

		if (i == ARRAY_SIZE(fmts)) {
			if (link[0] != '/')
				break;
			snprintf(cand, sizeof(cand), "%s", link);
		} else if (link[0] == '/') {
			continue;
		} else {
			snprintf(cand, sizeof(cand), fmts[i], dir, link);
		}
		fd = open(cand, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* not the object itself (a debuglink may name it), and the right one */
		if (!fstat(fd, &cst) && (cst.st_dev != fst.st_dev || cst.st_ino != fst.st_ino) &&
		    debug_file_matches(fd, bid, len, crc) && (*name = strdup(cand)))
			return fd;
		close(fd);
	}
	return -1;
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file, const char *link, GElf_Word crc,
			  char **name)
{
	struct dbginfo *d = *userdata;
	const unsigned char *bid = NULL;
	const char *debugfile = NULL;
	unsigned char alt[BID_MAX];
	size_t altlen;
	GElf_Addr vaddr;
	char *canon;
	int len = dwfl_module_build_id(mod, &bid, &vaddr), fd;

	/* by build-id under /usr/lib/debug/.build-id (it never asks a server) */
	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, link, crc, name);
	if (fd >= 0)
		return fd;
	/* called again once the debug file is known: libdwfl wants its dwz alt file */
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	if (debugfile) {
		if (d && !altlink_build_id(debugfile, alt, &altlen))
			return fetched(d, alt, altlen, name);
		return -1;
	}
	if (d && len > 0 && (fd = fetched(d, bid, len, name)) >= 0)
		return fd;
	fd = find_by_link(file, link, crc, bid, len, name);
	if (fd < 0 && file && (canon = realpath(file, NULL))) {
		/* the debug file may go with the name the symlink points to */
		if (strcmp(canon, file))
			fd = find_by_link(canon, link, crc, bid, len, name);
		free(canon);
	}
	if (fd < 0 && d && len > 0)
		dbginfo_want(d, bid, len, file);
	errno = 0;
	return fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

const Dwfl_Callbacks *dbginfo_callbacks(void)
{
	return &callbacks;
}

void dbginfo_attach(struct dbginfo *d, Dwfl_Module *mod)
{
	void **ud = NULL;

	if (mod && dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL) && ud)
		*ud = d;
}

int dbginfo_reopen(Dwfl_Module *mod, const char *path)
{
	const unsigned char *bid;
	const void *fbid;
	GElf_Addr vaddr, bias;
	Elf *elf = dwfl_module_getelf(mod, &bias), *felf;
	int len = dwfl_module_build_id(mod, &bid, &vaddr), flen, fd = -1;
	size_t n = 0;
	char *img;

	if (!elf)
		return -ENOENT;
	/* the file itself, if it is still the one libdwfl read ... */
	if (len > 0 && path && path[0] == '/')
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		bool same;

		flen = fd_build_id(fd, &fbid, &felf);
		same = flen == len && !memcmp(fbid, bid, len);
		elf_end(felf);
		if (same)
			return fd;
		close(fd);
	}
	/* ... else a copy of the image libdwfl has (deleted files, other mount namespaces) */
	img = elf_rawfile(elf, &n);
	if (!img || !n)
		return -ENOENT;
	fd = memfd_create("pcmon-elf", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, img + off, n - off);

		if (w <= 0) {
			close(fd);
			return -EIO;
		}
		off += w;
	}
	return fd;
}
