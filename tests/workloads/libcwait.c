// SPDX-License-Identifier: GPL-2.0-only
/*
 * Blocks in libc, as real programs do (libc has no frame pointers), for SECONDS: two threads
 * wait in pthread_cond_wait (park_here), one in read() on a pipe (read_here) with a 16 KiB
 * buffer on its stack whose pages are not there (as a buffer never written yet: a nofault
 * read of them fails), and main naps in libc's nanosleep (nap_here); then it wakes them and
 * joins them. Says when they are all blocked and when it wakes them (CLOCK_MONOTONIC), so that
 * a test knows how long they were blocked, and lists them while they still are.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

#include "workload.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int parked, done, pipefd[2];

NOINLINE void park_here(void)
{
	pthread_mutex_lock(&lock);
	parked++;
	while (!done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	BARRIER();
}

static void *waiter(void *arg)
{
	park_here();
	return arg;
}

NOINLINE void read_here(void)
{
	char buf[16384] __attribute__((aligned(4096)));

	/* its pages dropped: until read() fills them, they are not there */
	madvise(buf, sizeof(buf), MADV_DONTNEED);
	pthread_mutex_lock(&lock);
	parked++;
	pthread_mutex_unlock(&lock);
	if (read(pipefd[0], buf, sizeof(buf)) < 0)
		perror("read");
	BARRIER();
}

static void *reader(void *arg)
{
	read_here();
	return arg;
}

NOINLINE void nap_here(void)
{
	struct timespec ts = { 0, 10000000 };

	nanosleep(&ts, NULL);
	BARRIER();
}

int main(int argc, char **argv)
{
	double secs = arg_seconds(argc, argv, 2);
	uint64_t t0 = wall_ns(), end;
	pthread_t th[3];
	int n = 0;

	if (pipe(pipefd))
		return 1;
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, waiter, NULL);
	pthread_create(&th[2], NULL, reader, NULL);
	while (n < 3) {
		pthread_mutex_lock(&lock);
		n = parked;
		pthread_mutex_unlock(&lock);
		nap_here();
	}
	printf("{\"parked_at_ns\": %llu}\n", (unsigned long long)wall_ns());
	fflush(stdout);
	end = t0 + secs * 1e9;
	while (wall_ns() < end)
		nap_here();
	printf("{\"woken_at_ns\": %llu}\n", (unsigned long long)wall_ns());
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (write(pipefd[1], "x", 1) != 1)
		perror("write");
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("{\"wall_s\": %.6f}\n", (wall_ns() - t0) / 1e9);
	return 0;
}
