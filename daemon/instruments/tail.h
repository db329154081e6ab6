/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tail_: tail profiles (docs/tail.md). The samples a thread takes while it has an instance of
 * a tailed leg open are that instance's: held until it ends, then filed into the leg's tail
 * profile (the instance took at least the threshold), its body profile (it took less) or
 * its abandoned profile (it never reached its to). Each profile is an aggregate of stacks
 * (agg.h) like the target's own, so that every view reads it.
 *
 * BPF (pcmon_tail.h) says which set of open instances each sample was taken in (its key's
 * tset: an instance's id, or a set of several), which instances a set of several holds
 * (PCMON_TAIL_SET) and when each instance ends (PCMON_TAIL_END, PCMON_TAIL_ABANDON). The
 * samples and the events travel on different rings and are read at different times: a
 * sample may come before its instance's end or its set is known (held until they are), or
 * after its instances ended (filed at once). What is known of sets and ended instances is
 * kept TAIL_KEEP_NS after the last of them, then forgotten; samples of a set never told are
 * counted as unmatched then.
 *
 * Pure: no BPF; the sampling instrument owns a target's tails (struct sample.tails) and
 * calls tails_sample() as it charges a sample, the probe-node instrument tails_event() as it
 * reads the ring. Tested in tests/unit/test_tail.c.
 */
#ifndef PCMON_TAIL_H
#define PCMON_TAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "pcmon_tail.h"

struct agg;
struct tmap;

enum tail_part { TAIL_SLOW, TAIL_BODY, TAIL_ABANDONED, TAIL_PARTS };
extern const char *const tail_part_names[TAIL_PARTS];

#define TAIL_KEEP_NS (15ull * 1000000000)	/* sets and ended instances remembered */
#define TAIL_MAX_HELD 262144			/* held sample groups a target may hold */
#define TAIL_PCT_MIN 1000			/* instances a percentile waits for */
/* durations' log-linear histogram: 32 buckets an octave (each within 3 %) */
#define TAIL_SUB_BITS 5
#define TAIL_HBUCKETS ((64 - TAIL_SUB_BITS) << TAIL_SUB_BITS)

struct tail_leg {
	uint32_t id, from, to;	/* the leg's number and its nodes */
	uint64_t threshold_ns;	/* a duration, or 0: ... */
	double pct;		/* ... this percentile of the leg's own durations */
	struct agg *prof[TAIL_PARTS];
	uint64_t instances[TAIL_PARTS];	/* instances filed in each */
	uint64_t samples[TAIL_PARTS];	/* samples filed in each */
	uint64_t decided_early;	/* filed before the percentile had TAIL_PCT_MIN instances */
	uint64_t ndur;		/* durations in the histogram */
	uint64_t *hist;		/* TAIL_HBUCKETS, NULL: a duration threshold */
};

struct tails {
	struct agg *main;	/* the target's aggregate, whose stack ids samples name */
	struct tail_leg leg[PCMON_TAIL_LEGS];	/* slot i + 1 */
	size_t nlegs;
	struct tmap *sets, *insts, *orphans;
	uint64_t held;		/* sample groups held now */
	uint64_t overflow;	/* samples not held: TAIL_MAX_HELD were */
	uint64_t unmatched;	/* samples of a set never told (its event lost), or forgotten */
	uint64_t lost_events;	/* BPF's ring was full, for any target (as last read) */
};

struct tails *tails_new(struct agg *main);
void tails_free(struct tails *t);
/* Forget every sample and instance, as the target is zeroed. */
void tails_zero(struct tails *t);
size_t tails_bytes(const struct tails *t);

/* "LEG[:THRESHOLD]": the leg's number; THRESHOLD a duration (5ms, 300us, 2s, 1000ns) or a
 * percentile (p99, p99.9; the default p99). 0, or -EINVAL with *why said. */
int tail_parse(const char *spec, uint32_t *leg, uint64_t *ns, double *pct, const char **why);
/* Leg @id (@from, @to) tailed: its slot (1...), or -E2BIG, -ENOMEM. */
int tails_add_leg(struct tails *t, uint32_t id, uint32_t from, uint32_t to, uint64_t ns, double pct);
/* The leg tailed with number @id, NULL: none. */
struct tail_leg *tails_leg(struct tails *t, uint32_t id);
/* A leg's threshold now (ns): its duration, or its percentile's estimate (0: none yet). */
uint64_t tail_threshold(const struct tail_leg *l);

/* @count samples of stack @stack (an id of t->main) taken in set @set, at engine time @now. */
void tails_sample(struct tails *t, uint32_t set, uint32_t stack, uint64_t count, uint64_t now);
/* A record of BPF's ring. */
void tails_event(struct tails *t, const struct pcmon_tail_ev *e, uint64_t now);
/* Forget what is older than TAIL_KEEP_NS. */
void tails_expire(struct tails *t, uint64_t now);

/* Leg @l's figures into @o: its number, threshold, instances and samples in each profile,
 * and the tails' held, overflow and unmatched samples. */
void tail_leg_json(const struct tails *t, const struct tail_leg *l, cJSON *o);

/* The results file (tail_store.c): @t as the "tails" array of the sampling section @o; and
 * back, its profiles' stacks by index into the section's stacks, @sid[i] the id in @main
 * of stacks[i] (*out NULL: the file has none). 0, or -EINVAL (rd says why), -ENOMEM. */
struct sf_wr;
struct sf_rd;
void tail_save(const struct tails *t, struct sf_wr *w, cJSON *o);
int tail_load(struct sf_rd *rd, const cJSON *o, struct agg *main, const uint32_t *sid,
	      int nstacks, struct tails **out);

/* The log-linear histogram's bucket of @v, and the least value of bucket @b. */
uint32_t tail_bucket(uint64_t v);
uint64_t tail_bucket_low(uint32_t b);

#endif
