// SPDX-License-Identifier: GPL-2.0-only
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int log_verbosity = LOG_WARN;

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *const tag[] = { "error", "warning", "info", "debug" };
	va_list ap;

	if ((int)lvl > log_verbosity)
		return;
	fprintf(stderr, "pcmon: %s: ", tag[lvl]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	if (!elem || need > SIZE_MAX / elem)
		return -ENOMEM;
	ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	if (ncap > SIZE_MAX / elem)
		ncap = need;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

/* FNV-1a, 8 bytes at a time, with a final avalanche. */
bool dl_bind(void *h, const struct dl_sym *syms, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(*(void **)syms[i].slot = dlsym(h, syms[i].name)))
			break;
	if (i == n)
		return true;
	while (i--)
		*(void **)syms[i].slot = NULL;
	dlclose(h);
	return false;
}

uint64_t hash_bytes(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL, w;

	for (; len >= 8; b += 8, len -= 8) {
		memcpy(&w, b, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	for (; len; b++, len--)
		h = (h ^ *b) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t now_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void engine_first_tick(uint64_t period_ms, struct timespec *first)
{
	uint64_t period = period_ms * 1000000ull, wall = wall_ns();
	uint64_t wait = period - wall % period + 2000000ull;

	first->tv_sec = wait / 1000000000ull;
	first->tv_nsec = wait % 1000000000ull;
}

double wall_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void clock_text(char *buf, size_t len, double wall)
{
	time_t t = (time_t)wall;
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%.0f", wall);
}

struct itab_ent {
	uint64_t hash;
	size_t off;
	size_t len;
};

struct itab {
	struct itab_ent *ents;
	size_t nents, cap_ents;
	char *arena;
	size_t arena_len, arena_cap;
	uint32_t *slots; /* id + 1, 0 = empty */
	size_t nslots;	 /* power of two */
};

struct itab *itab_new(void)
{
	return calloc(1, sizeof(struct itab));
}

void itab_free(struct itab *t)
{
	if (!t)
		return;
	free(t->ents);
	free(t->arena);
	free(t->slots);
	free(t);
}

static int itab_rehash(struct itab *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 64;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->nents; i++) {
		size_t j = t->ents[i].hash & (n - 1);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->nslots = n;
	return 0;
}

static int64_t itab_lookup(const struct itab *t, const void *key, size_t len, uint64_t h,
			   size_t *slot)
{
	size_t j;

	if (!t->nslots)
		return -1;
	for (j = h & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
		const struct itab_ent *e = &t->ents[t->slots[j] - 1];

		if (e->hash == h && e->len == len && !memcmp(t->arena + e->off, key, len))
			return t->slots[j] - 1;
	}
	if (slot)
		*slot = j;
	return -1;
}

int64_t itab_find(const struct itab *t, const void *key, size_t len)
{
	return itab_lookup(t, key, len, hash_bytes(key, len), NULL);
}

int itab_intern(struct itab *t, const void *key, size_t len, uint32_t *id)
{
	uint64_t h = hash_bytes(key, len);
	size_t slot;
	int64_t found;

	found = itab_lookup(t, key, len, h, NULL);
	if (found >= 0) {
		*id = found;
		return 0;
	}
	if ((t->nents + 1) * 2 > t->nslots && itab_rehash(t))
		return -ENOMEM;
	if (GROW(t->ents, t->cap_ents, t->nents + 1))
		return -ENOMEM;
	/* a key taken from this very table (itab_key) moves with the arena when it grows */
	if (t->arena && (const char *)key >= t->arena && (const char *)key < t->arena + t->arena_cap) {
		size_t off = (const char *)key - t->arena;

		if (GROW(t->arena, t->arena_cap, t->arena_len + len + 1))
			return -ENOMEM;
		key = t->arena + off;
	} else if (GROW(t->arena, t->arena_cap, t->arena_len + len + 1)) {
		return -ENOMEM;
	}
	itab_lookup(t, key, len, h, &slot);
	memcpy(t->arena + t->arena_len, key, len);
	t->ents[t->nents] = (struct itab_ent){ .hash = h, .off = t->arena_len, .len = len };
	t->arena_len += len;
	/* keep every key 8-byte aligned so callers may read structs in place */
	t->arena_len = (t->arena_len + 7) & ~(size_t)7;
	t->slots[slot] = t->nents + 1;
	*id = t->nents++;
	return 1;
}

const void *itab_key(const struct itab *t, uint32_t id, size_t *len)
{
	if (id >= t->nents)
		return NULL;
	if (len)
		*len = t->ents[id].len;
	return t->arena + t->ents[id].off;
}

size_t itab_bytes(const struct itab *t)
{
	return t ? t->cap_ents * sizeof(*t->ents) + t->arena_cap + t->nslots * sizeof(*t->slots) : 0;
}

uint32_t itab_count(const struct itab *t)
{
	return t->nents;
}

/* ---- pidtab: open addressing, linear probing, deletion by shifting back (no tombstones) */

struct pidtab_slot {
	uint32_t key;	/* pid + 1, 0 = empty */
	uint32_t serial; /* which put this value came by */
	void *v;
};

struct pidtab {
	struct pidtab_slot *s;
	size_t n;	/* slots: 0 or a power of two, at least 16 */
	uint32_t count;
	uint32_t serial;
	/* exited processes, oldest first from head (exits come in order) */
	struct { uint32_t pid, serial; uint64_t at; } *gone;
	size_t head, ngone, cap_gone;
};

static size_t pidtab_home(uint32_t key, size_t n)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (n - 1);
}

struct pidtab *pidtab_new(void)
{
	return calloc(1, sizeof(struct pidtab));
}

void pidtab_free(struct pidtab *t)
{
	if (t) {
		free(t->s);
		free(t->gone);
	}
	free(t);
}

static struct pidtab_slot *pidtab_slot(const struct pidtab *t, uint32_t key)
{
	if (!t->n)
		return NULL;
	for (size_t i = pidtab_home(key, t->n);; i = (i + 1) & (t->n - 1)) {
		if (t->s[i].key == key)
			return &t->s[i];
		if (!t->s[i].key)
			return NULL;
	}
}

static int pidtab_resize(struct pidtab *t, size_t n)
{
	struct pidtab_slot *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		size_t j;

		if (!t->s[i].key)
			continue;
		for (j = pidtab_home(t->s[i].key, n); s[j].key; j = (j + 1) & (n - 1))
			;
		s[j] = t->s[i];
	}
	free(t->s);
	t->s = s;
	t->n = n;
	return 0;
}

void *pidtab_get(const struct pidtab *t, uint32_t pid)
{
	struct pidtab_slot *e = pidtab_slot(t, pid + 1);

	return e ? e->v : NULL;
}

int pidtab_put(struct pidtab *t, uint32_t pid, void *v)
{
	struct pidtab_slot *e = pidtab_slot(t, pid + 1);
	size_t i;

	if (e) {
		e->v = v;
		e->serial = ++t->serial;
		return 0;
	}
	/* at most half full */
	if ((t->count + 1) * 2 > t->n && pidtab_resize(t, t->n ? t->n * 2 : 16))
		return -ENOMEM;
	for (i = pidtab_home(pid + 1, t->n); t->s[i].key; i = (i + 1) & (t->n - 1))
		;
	t->s[i] = (struct pidtab_slot){ pid + 1, ++t->serial, v };
	t->count++;
	return 0;
}

void *pidtab_del(struct pidtab *t, uint32_t pid)
{
	struct pidtab_slot *e = pidtab_slot(t, pid + 1);
	size_t hole, i, mask = t->n - 1;
	void *v;

	if (!e)
		return NULL;
	v = e->v;
	hole = e - t->s;
	/* shift back each later entry of the run that may not sit past the hole */
	for (i = (hole + 1) & mask; t->s[i].key; i = (i + 1) & mask) {
		size_t home = pidtab_home(t->s[i].key, t->n);

		/* (home cyclically in (hole, i]: the entry stays) */
		if (hole < i ? hole < home && home <= i : hole < home || home <= i)
			continue;
		t->s[hole] = t->s[i];
		hole = i;
	}
	t->s[hole] = (struct pidtab_slot){ 0 };
	t->count--;
	/* an eighth full: half the slots (a failed shrink keeps the table as it is) */
	if (t->n > 16 && t->count * 8 < t->n)
		pidtab_resize(t, t->n / 2);
	return v;
}

uint32_t pidtab_count(const struct pidtab *t)
{
	return t->count;
}

size_t pidtab_bytes(const struct pidtab *t)
{
	return t ? t->n * sizeof(*t->s) + t->cap_gone * sizeof(*t->gone) : 0;
}

int pidtab_exited(struct pidtab *t, uint32_t pid, uint64_t now)
{
	struct pidtab_slot *e = pidtab_slot(t, pid + 1);

	if (!e)
		return 0;
	if (t->head > t->ngone / 2) { /* (the expired half gone: move the rest down) */
		memmove(t->gone, t->gone + t->head, (t->ngone - t->head) * sizeof(*t->gone));
		t->ngone -= t->head;
		t->head = 0;
	}
	if (GROW(t->gone, t->cap_gone, t->ngone + 1))
		return -ENOMEM;
	t->gone[t->ngone].pid = pid;
	t->gone[t->ngone].serial = e->serial;
	t->gone[t->ngone++].at = now;
	return 0;
}

void *pidtab_expire(struct pidtab *t, uint64_t before, uint32_t *pid)
{
	while (t->head < t->ngone && t->gone[t->head].at < before) {
		typeof(*t->gone) g = t->gone[t->head++];
		struct pidtab_slot *e = pidtab_slot(t, g.pid + 1);

		/* (a value put since, for a new process of the pid, stays) */
		if (e && e->serial == g.serial) {
			*pid = g.pid;
			return pidtab_del(t, g.pid);
		}
	}
	if (t->head == t->ngone)
		t->head = t->ngone = 0;
	return NULL;
}

void *pidtab_next(const struct pidtab *t, size_t *it)
{
	while (*it < t->n)
		if (t->s[(*it)++].key)
			return t->s[*it - 1].v;
	return NULL;
}

char *read_file(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (GROW(buf, cap, len + 4097)) {
			err = ENOMEM;
			goto fail;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
fail:
	close(fd);
	free(buf);
	errno = err;
	return NULL;
}

/* A file holding one decimal number (a sysctl): 0 and *@v, or -errno. */
int read_int(const char *path, int *v)
{
	char *s = read_file(path, NULL);

	if (!s)
		return -errno;
	*v = atoi(s);
	free(s);
	return 0;
}

const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int online_cpus(bool **mask, int *n)
{
	char *s = read_file("/sys/devices/system/cpu/online", NULL), *p;
	int hi = -1;

	*mask = NULL;
	*n = 0;
	if (!s)
		return -errno;
	/* "0-3,8,10-11": two passes, the first to size the mask */
	for (int pass = 0; pass < 2; pass++) {
		for (p = s; *p && *p != '\n';) {
			char *end;
			long a = strtol(p, &end, 10), b = a;

			if (end == p)
				break;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; pass && c <= b; c++)
				(*mask)[c] = true;
			hi = MAX(hi, (int)b);
			p = *end == ',' ? end + 1 : end;
		}
		if (!pass && !(*mask = calloc(hi + 1, sizeof(bool)))) {
			free(s);
			return -ENOMEM;
		}
	}
	free(s);
	*n = hi + 1;
	return 0;
}

int parse_whole(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---- text from others */

size_t utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	size_t n;

	if (u[0] >= 0x20 && u[0] < 0x7f)
		return 1;
	if (u[0] >= 0xc2 && u[0] <= 0xdf)
		n = 2, cp = u[0] & 0x1f;
	else if (u[0] >= 0xe0 && u[0] <= 0xef)
		n = 3, cp = u[0] & 0x0f;
	else if (u[0] >= 0xf0 && u[0] <= 0xf4)
		n = 4, cp = u[0] & 0x07;
	else
		return 0; /* ASCII control, DEL, a stray continuation byte or an invalid lead */
	for (size_t i = 1; i < n; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3f);
	}
	/* overlong forms, surrogates, past U+10FFFF, and the C1 controls */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
		return 0;
	return n;
}

bool str_printable(const char *s, size_t max)
{
	size_t n, len = 0;

	for (; *s; s += n, len += n)
		if (!(n = utf8_len(s)))
			return false;
	return len <= max;
}

char *str_escape(const char *in, char *out, size_t outlen)
{
	size_t o = 0, n;

	if (!outlen)
		return out;
	for (; *in; in += n) {
		n = utf8_len(in);
		if (n) {
			if (o + n >= outlen)
				break;
			memcpy(out + o, in, n);
			o += n;
		} else {
			if (o + 4 >= outlen)
				break;
			snprintf(out + o, 5, "\\x%02x", (unsigned char)*in);
			o += 4;
			n = 1;
		}
	}
	out[o] = '\0';
	return out;
}

void str_sanitize(char *s, size_t max)
{
	size_t o = 0, n;

	for (char *p = s; *p; p += n) {
		n = utf8_len(p);
		if (!n) {
			n = 1;
			if (o + 1 > max)
				break;
			s[o++] = '?';
			continue;
		}
		if (o + n > max)
			break;
		memmove(s + o, p, n);
		o += n;
	}
	s[o] = '\0';
}

int thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int r;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}
