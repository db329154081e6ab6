// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fixed amount of CPU work, for target-slowdown ratios: `fixedwork UNITS [MAX_WALL_S]` runs
 * UNITS units of arithmetic, each through a call chain eight frames deep (so a stack walk
 * has frames to walk), then prints the CPU and wall time the work took:
 *   {"units": N, "cpu_s": ..., "wall_s": ..., "proc_cpu_s": ...}
 * cpu_s/wall_s cover the work only; proc_cpu_s is the whole process (for expected sample
 * counts). A unit is a fixed number of iterations, never calibrated, so the work is the
 * same in every run and any change in time is the profiler's doing. With MAX_WALL_S it
 * stops early after that much wall time and "units" says how many it did: the time per
 * unit is still a slowdown measure, and a very slow profiler cannot stall the benchmark.
 *
 * `fixedwork UNITS MAX_WALL_S TIMER_US` times itself with no profiler: a cpu-clock perf
 * event on the process itself, every TIMER_US, its samples written to a ring this program
 * reads and counts ("samples", and "lost" for what the kernel could not write). That is the
 * floor of what sampling at that interval costs on this machine: the timer's interrupt and
 * the kernel writing one sample, no stack and no profiler.
 */
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "bench.h"

#define UNIT_ITERS 20000 /* ~10-30 us of arithmetic on current CPUs */

static volatile uint64_t sink;

NOINLINE static void leaf(void)
{
	SPIN_BODY(UNIT_ITERS);
}

/* level_N calls level_{N-1}; the barrier after the call keeps each frame on the stack */
#define LEVEL(name, next)                                                                  \
	NOINLINE static void name(void)                                                    \
	{                                                                                  \
		next();                                                                    \
		sink++;                                                                    \
		BARRIER();                                                                 \
	}
LEVEL(level1, leaf)
LEVEL(level2, level1)
LEVEL(level3, level2)
LEVEL(level4, level3)
LEVEL(level5, level4)
LEVEL(level6, level5)
LEVEL(level7, level6)

#define TIMER_PAGES 64 /* the ring: 256 KiB, read every 64 units */

struct timer {
	struct perf_event_mmap_page *m;
	uint64_t samples, lost;
};

static int timer_open(struct timer *t, uint64_t period_us)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_us * 1000,
		.sample_type = PERF_SAMPLE_IP,
	};
	int fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0) {
		perror("fixedwork: perf_event_open");
		return -1;
	}
	t->m = mmap(NULL, (1 + TIMER_PAGES) * 4096ul, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (t->m == MAP_FAILED) {
		perror("fixedwork: mmap");
		return -1;
	}
	return 0;
}

static void timer_read(struct timer *t)
{
	uint64_t head = __atomic_load_n(&t->m->data_head, __ATOMIC_ACQUIRE), tail = t->m->data_tail;
	const char *data = (const char *)t->m + 4096;

	for (; tail < head;) {
		const struct perf_event_header *h =
			(const void *)(data + tail % (TIMER_PAGES * 4096ul));

		if (h->type == PERF_RECORD_SAMPLE)
			t->samples++;
		else if (h->type == PERF_RECORD_LOST)
			t->lost += ((const uint64_t *)(h + 1))[1]; /* id, lost */
		tail += h->size;
	}
	__atomic_store_n(&t->m->data_tail, tail, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	uint64_t units = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000, u;
	double max_wall = argc > 2 ? atof(argv[2]) : 0;
	uint64_t timer_us = argc > 3 ? strtoull(argv[3], NULL, 10) : 0;
	struct timer t = { 0 };

	if (timer_us && timer_open(&t, timer_us))
		return 1;
	uint64_t c0 = cpu_ns(), w0 = wall_ns(), deadline = w0 + (uint64_t)(max_wall * 1e9);

	for (u = 0; u < units; u++) {
		if ((u & 63) == 0) {
			if (max_wall > 0 && wall_ns() > deadline)
				break;
			if (t.m)
				timer_read(&t);
		}
		level7();
	}
	uint64_t c1 = cpu_ns(), w1 = wall_ns();
	if (t.m)
		timer_read(&t);
	printf("{\"units\": %llu, \"cpu_s\": %.6f, \"wall_s\": %.6f, \"proc_cpu_s\": %.6f",
	       (unsigned long long)u, (c1 - c0) / 1e9, (w1 - w0) / 1e9, c1 / 1e9);
	if (t.m)
		printf(", \"samples\": %llu, \"lost\": %llu", (unsigned long long)t.samples,
		       (unsigned long long)t.lost);
	printf("}\n");
	return 0;
}
