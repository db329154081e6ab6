/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sf_: fields of a results file (store.h), written and read strictly. The store writes and
 * reads the target's part; each instrument its own section (inst_ops save/load) with the
 * same helpers, so every file is checked field by field, whoever wrote the field.
 *
 * Writing never fails half-way unnoticed: a field that could not be added (out of memory)
 * sets w->oom, and the text is then not used. Reading names the field at fault: rd->at is
 * the element being read ("stacks[12]."), the reason goes to rd->why.
 */
#ifndef PCMON_STFILE_H
#define PCMON_STFILE_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the largest whole number a parsed double is exactly: 2^53 may be 2^53 + 1 rounded */
#define SF_EXACT_MAX ((1ULL << 53) - 1)

struct sf_wr {
	bool oom;		/* a field could not be added: the text must not be used */
};

cJSON *sf_chk(struct sf_wr *w, cJSON *x);
void sf_put_str(struct sf_wr *w, cJSON *o, const char *k, const char *v);
void sf_put_bool(struct sf_wr *w, cJSON *o, const char *k, bool v);
/* Read back exactly (cJSON's own printing rounds one double in ten). */
void sf_put_num(struct sf_wr *w, cJSON *o, const char *k, double v);
/* Exact: a number below 2^53, a decimal string from there on. */
void sf_put_u64(struct sf_wr *w, cJSON *o, const char *k, uint64_t v);
void sf_push(struct sf_wr *w, cJSON *arr, cJSON *x);

/*
 * A long array written as text rather than as a tree: a tree costs a node (and a malloc)
 * per value, which for a target's 100k stacks is hundreds of MB and most of a save's time.
 * sf_put_text() adds the text as the value of o[k] and frees it.
 */
struct sf_text {
	char *p;
	size_t len, cap;
};

void sf_text_raw(struct sf_wr *w, struct sf_text *t, const char *s, size_t n);
static inline void sf_text_lit(struct sf_wr *w, struct sf_text *t, const char *s)
{
	sf_text_raw(w, t, s, __builtin_strlen(s));
}
void sf_text_str(struct sf_wr *w, struct sf_text *t, const char *s);	/* a JSON string */
void sf_text_u64(struct sf_wr *w, struct sf_text *t, uint64_t v);	/* as sf_put_u64 */
void sf_put_text(struct sf_wr *w, cJSON *o, const char *k, struct sf_text *t);

struct sf_rd {
	int format;
	const char *section;	/* the section being read ("sampling"), NULL: the top level */
	char at[40];		/* the element being read, "stacks[12]." */
	char *why;
	size_t whylen;
	/* the target's start and end (wall seconds): what results without time slices cover */
	double t_start, t_end;
};

/* Which files must have a field. */
enum sf_need {
	SF_OPTIONAL,
	SF_ALWAYS,		/* in every format */
	SF_SINCE2,		/* added during format 1's life: required from format 2 on */
};

/* -EINVAL, with "AT FIELD: reason" in rd->why. */
int sf_bad(struct sf_rd *rd, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int sf_wrong_type(struct sf_rd *rd, const char *name, const cJSON *x, const char *want);
int sf_not_object(struct sf_rd *rd, const char *arr, int i, const cJSON *x);
/* Each 0 (absent and optional: *v untouched) or -EINVAL. */
int sf_get_bool(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, bool *v);
int sf_get_str(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, size_t max,
	       const char **v);
/* A whole number in [0, max]. @loose: format 1 wrote it as a double, maybe rounded. */
int sf_num_u64(struct sf_rd *rd, const char *name, const cJSON *x, uint64_t max, bool loose,
	       uint64_t *v);
/* An array's item: a whole number, or (format 2 on) one of 2^53 or more as a string, as
 * sf_text_u64() writes it. */
int sf_item_u64(struct sf_rd *rd, const char *name, const cJSON *x, uint64_t max, uint64_t *v);
int sf_get_u64x(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
		uint64_t max, bool loose, uint64_t *v);
/* A count or a sum of nanoseconds: a whole number; format 2 writes big ones as strings. */
int sf_get_u64(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
	       uint64_t *v);
int sf_get_u32(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
	       uint32_t max, uint32_t *v);
int sf_get_double(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
		  double lo, double hi, double *v);
/* An enumeration: its name (format 2 on), its number (format 1). Names may have holes. */
int sf_get_enum(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need,
		const char *const *names, uint32_t n, uint32_t *v);
/* A code address: "0x..." (format 2 on), a number (format 1, rounded above 2^53). */
int sf_get_addr(struct sf_rd *rd, const cJSON *o, const char *name, uint64_t *v);
int sf_get_array(struct sf_rd *rd, const cJSON *o, const char *name, enum sf_need need, int max,
		 const cJSON **arr, int *n);

#endif
