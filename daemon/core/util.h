/* SPDX-License-Identifier: GPL-2.0-only */
/* Small pieces every engine module uses: logging, growable arrays, an interning table. */
#ifndef PCMON_UTIL_H
#define PCMON_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

enum log_level { LOG_ERR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern int log_verbosity;	/* messages above this level are dropped; default LOG_WARN */
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pr_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Grow *arr (of *cap elements of size elem) so that it holds at least need; 0 or -ENOMEM. */
int grow(void **arr, size_t *cap, size_t need, size_t elem);
#define GROW(arr, cap, need) grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

/* A symbol of a library opened at run time (dlopen), and the pointer its address goes to. */
struct dl_sym {
	const char *name;
	void *slot;	/* the address of a function pointer, or of a variable's pointer */
};

/*
 * Look up each of @syms in @h, in order: true if all are there. Else every slot is NULL and
 * @h is closed. The last one set is the one a caller may test for "loaded".
 */
bool dl_bind(void *h, const struct dl_sym *syms, size_t n);

uint64_t hash_bytes(const void *p, size_t len);
uint64_t now_ns(void);		/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns() */
uint64_t now_coarse_ns(void);	/* the same, as of the last tick: for ages, at every frame */
double wall_time(void);		/* CLOCK_REALTIME seconds */
/* Wall-clock time @wall as "YYYY-MM-DD HH:MM:SS" in the local zone (its seconds if it
 * cannot be told) into @buf. */
void clock_text(char *buf, size_t len, double wall);
uint64_t wall_ns(void);		/* CLOCK_REALTIME nanoseconds */
uint64_t thread_cpu_ns(void);	/* CPU time of the calling thread */
struct timespec;
/*
 * When a timer of @period_ms first fires so that it fires just after multiples of the
 * period in wall-clock time (2 ms after: a time slice's drain comes once it has ended).
 */
void engine_first_tick(uint64_t period_ms, struct timespec *first);

/*
 * itab: interns byte strings, giving each distinct key a dense id 0, 1, 2, ...
 * Keys are copied; ids are stable for the table's lifetime.
 */
struct itab;
struct itab *itab_new(void);
void itab_free(struct itab *t);
/* 1 if the key is new, 0 if it was there, -ENOMEM; *id gets its id either way. */
int itab_intern(struct itab *t, const void *key, size_t len, uint32_t *id);
int64_t itab_find(const struct itab *t, const void *key, size_t len); /* id or -1 */
const void *itab_key(const struct itab *t, uint32_t id, size_t *len);
uint32_t itab_count(const struct itab *t);
size_t itab_bytes(const struct itab *t); /* memory it holds */
static inline int itab_str(struct itab *t, const char *s, uint32_t *id)
{
	return itab_intern(t, s, strlen(s) + 1, id);
}

/*
 * pidtab: a process's state by pid, for state that must go when the process does. Values
 * are the caller's; pidtab_del() gives one back. The table shrinks as it empties, so a
 * machine's churn of processes leaves nothing behind.
 */
struct pidtab;
struct pidtab *pidtab_new(void);
void pidtab_free(struct pidtab *t);	/* (not the values) */
void *pidtab_get(const struct pidtab *t, uint32_t pid);
int pidtab_put(struct pidtab *t, uint32_t pid, void *v);	/* 0 or -ENOMEM; replaces */
void *pidtab_del(struct pidtab *t, uint32_t pid);	/* its value, or NULL */
uint32_t pidtab_count(const struct pidtab *t);
size_t pidtab_bytes(const struct pidtab *t);	/* memory it holds */
/* Every value, in no order: start *@it at 0; NULL at the end. */
void *pidtab_next(const struct pidtab *t, size_t *it);
/*
 * Process @pid exited at @now (nanoseconds, never less than an earlier call's): its value is
 * kept until pidtab_expire() lets it go. No value: nothing to do. 0, or -ENOMEM (then the
 * value stays until the caller deletes it, or its pid comes back).
 */
int pidtab_exited(struct pidtab *t, uint32_t pid, uint64_t now);
/*
 * The value of a process that exited before @before, deleted from the table (its pid in
 * *@pid), oldest first: the caller frees it and asks again; NULL when there is none. A value
 * deleted or replaced since its exit is not given back.
 */
void *pidtab_expire(struct pidtab *t, uint64_t before, uint32_t *pid);

/* Read a whole (small) file into a NUL-terminated malloc'ed buffer; NULL with errno set. */
char *read_file(const char *path, size_t *len);
/* A file holding one decimal number (a sysctl): 0 and *@v, or -errno. */
int read_int(const char *path, int *v);
const char *basename_of(const char *path);
/* A whole decimal number in [lo, hi], and nothing else: 0, or -EINVAL. */
int parse_whole(const char *s, long lo, long hi, long *out);
/* Online CPUs as a mask of *n entries. */
int online_cpus(bool **mask, int *n);

/*
 * Text from others (process names, symbols, names users gave) shown to someone else must not
 * be able to steer a terminal or break a JSON reply. utf8_len(): bytes of the valid, printable
 * UTF-8 character at @s (no control character), 0 if it is not one.
 */
size_t utf8_len(const char *s);
/* Every character of @s is printable UTF-8, and it has at most @max bytes. */
bool str_printable(const char *s, size_t max);
/* Copy @in into @out (@outlen bytes, NUL included), each byte that is not part of a printable
 * character written as \xNN and cut on a character boundary; returns @out. */
char *str_escape(const char *in, char *out, size_t outlen);
/* The same, in place: what is not printable becomes '?'; cut to @max bytes on a boundary. */
void str_sanitize(char *s, size_t max);

/*
 * A thread of the engine's, running @fn(@arg), with every signal blocked: signals are the
 * main thread's (pcmond takes them from a signalfd; a thread that could take a SIGTERM
 * would die of it, and the whole daemon with it). 0, or a positive errno (pthread_create()).
 */
int thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
