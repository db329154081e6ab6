/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * WHEN patterns at probes (docs/when.md, "At probes"): a pattern whose names are all probed
 * procedures is answered from the shadow stack of open activations that call counting keeps
 * per thread (bpf/count.bpf.c), without reading the stack. Such a pattern has no ':' and its
 * call threads are names joined through '*' only (a->*->b, not a->b: a direct call cannot be
 * told from a shadow stack, where the frames between two probed ones are not seen).
 *
 * A thread of names n0 ... nk-1 then matches a stack when they appear on it in order,
 * outermost first (the last at the innermost frame, unless the thread ends with '*'). Placed
 * at their earliest frames, which is never worse, a thread's state at a frame is how many of
 * its names the frames down to it hold: each activation keeps the states of every thread, 4
 * bits each, computed from its caller's and its own procedure's "advance" bits (bit j of
 * adv[t]: the procedure matches name j of thread t). A probe's stack is its open activations
 * and, innermost, the procedure it is in.
 *
 * The engine compiles the pattern (daemon/pattern/when.c); BPF runs these always-inline
 * functions, so that the unit test checks the kernel's own code (tests/unit/test_when.c).
 * Plain __u32/__u64 only: compiled both by clang -target bpf and by gcc.
 */
#ifndef PCMON_WHEN_BPF_H
#define PCMON_WHEN_BPF_H

#include "pcmon_procs.h"

#define PCMON_WHEN_THREADS 8	/* call threads of a shadow-stack pattern */
#define PCMON_WHEN_NAMES 15	/* names per thread (a state is 4 bits) */

/* A pattern compiled for the shadow stack. */
struct pcmon_wpat {
	__u8 nnames[PCMON_WHEN_THREADS];	/* names of thread t */
	__u8 anchored[PCMON_WHEN_THREADS];	/* its last name must be the innermost frame */
	__u32 nthreads;
	__u32 pad;
};

/* How a procedure moves each thread: bit j of adv[t], it matches name j of thread t. */
struct pcmon_wadv {
	__u16 adv[PCMON_WHEN_THREADS];
};

#ifndef PCMON_INLINE
#define PCMON_INLINE static inline __attribute__((always_inline))
#endif

/* Names of thread @t an activation's state carries: an anchored thread's last name is only
 * ever tested at the innermost frame. */
PCMON_INLINE __u32 pcmon_when_prefix(const struct pcmon_wpat *w, __u32 t)
{
	__u32 n = w->nnames[t & (PCMON_WHEN_THREADS - 1)];

	return w->anchored[t & (PCMON_WHEN_THREADS - 1)] && n ? n - 1 : n;
}

/* The state of a frame of procedure @a whose caller's state is @s. */
PCMON_INLINE __u32 pcmon_when_step(const struct pcmon_wpat *w, __u32 s, const struct pcmon_wadv *a)
{
	__u32 out = 0;

	for (__u32 t = 0; t < PCMON_WHEN_THREADS; t++) {
		__u32 p = (s >> (4 * t)) & 15;

		if (t >= w->nthreads)
			break;
		if (p < pcmon_when_prefix(w, t) && ((a->adv[t] >> p) & 1))
			p++;
		out |= p << (4 * t);
	}
	return out;
}

/* Does the stack of a probe in procedure @a, whose open activations' state is @s, match? */
PCMON_INLINE int pcmon_when_test(const struct pcmon_wpat *w, __u32 s, const struct pcmon_wadv *a)
{
	for (__u32 t = 0; t < PCMON_WHEN_THREADS; t++) {
		__u32 p = (s >> (4 * t)) & 15, n;

		if (t >= w->nthreads)
			break;
		n = w->nnames[t];
		if (w->anchored[t]) {
			if (n && p == n - 1 && ((a->adv[t] >> (n - 1)) & 1))
				return 1;
		} else if (p == n || (p + 1 == n && ((a->adv[t] >> p) & 1))) {
			return 1;
		}
	}
	return 0;
}

#endif /* PCMON_WHEN_BPF_H */
