/*
 * lab-spin: a spinlock-contention microbenchmark.  THREADS threads take
 * one test-and-test-and-set lock in turn, do a short critical section and
 * some work outside it.  A thread preempted while holding the lock (a
 * vCPU the host descheduled) makes every other thread spin for nothing,
 * so throughput falls with host over-commit: the effect prefcpu removes.
 *
 * The lock spins, then yields the CPU after SPIN_YIELD_AFTER tries, as
 * adaptive locks do: inside one vCPU the holder then gets to run, but a
 * holder whose vCPU the host preempted cannot be helped from the guest.
 *
 * Prints "lab-spin: ops/s N" every INTERVAL ms (operations completed by
 * all threads in that interval, per second) and, with -s, a final
 * "lab-spin: total ops N in S s, ops/s N" line before exiting.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Iterations of work inside and outside the lock, per operation. */
#define SPIN_INSIDE	200
#define SPIN_OUTSIDE	400
#define SPIN_YIELD_AFTER 2000

static atomic_int spin_lock_word;
static atomic_ulong spin_ops;
static volatile unsigned long spin_shared[8];

static inline void
spin_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void
spin_lock(void)
{
	unsigned int tries = 0;

	for (;;) {
		if (!atomic_exchange_explicit(&spin_lock_word, 1,
		    memory_order_acquire))
			return;
		while (atomic_load_explicit(&spin_lock_word,
		    memory_order_relaxed)) {
			spin_relax();
			if (++tries % SPIN_YIELD_AFTER == 0)
				sched_yield();
		}
	}
}

static void
spin_unlock(void)
{
	atomic_store_explicit(&spin_lock_word, 0, memory_order_release);
}

static void *
spin_thread(void *arg)
{
	unsigned long x = (unsigned long)arg;
	volatile unsigned long local = 0;
	int i;

	for (;;) {
		spin_lock();
		for (i = 0; i < SPIN_INSIDE; i++)
			spin_shared[i & 7] += x + (unsigned long)i;
		spin_unlock();
		for (i = 0; i < SPIN_OUTSIDE; i++)
			local += x ^ (unsigned long)i;
		atomic_fetch_add_explicit(&spin_ops, 1, memory_order_relaxed);
	}
	return NULL;
}

static double
spin_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned long
spin_number(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max) {
		fprintf(stderr, "lab-spin: bad %s '%s' (0..%lu)\n", what, s, max);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	unsigned long threads = 0, seconds = 0, interval = 1000, i;
	unsigned long before, now_ops;
	double start, last, now;
	struct timespec ts;
	pthread_t t;
	int c, err;

	while ((c = getopt(argc, argv, "t:s:i:")) != -1) {
		switch (c) {
		case 't':
			threads = spin_number(optarg, "thread count", 1024);
			break;
		case 's':
			seconds = spin_number(optarg, "duration", 86400 * 365);
			break;
		case 'i':
			interval = spin_number(optarg, "interval", 3600000);
			break;
		default:
			fprintf(stderr, "usage: lab-spin [-t THREADS] "
			    "[-s SECONDS] [-i INTERVAL_MS]\n");
			return 2;
		}
	}
	if (interval < 10)
		interval = 10;
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned long)n : 1;
	}
	for (i = 0; i < threads; i++) {
		err = pthread_create(&t, NULL, spin_thread, (void *)(i + 1));
		if (err != 0) {
			fprintf(stderr, "lab-spin: pthread_create: %s\n",
			    strerror(err));
			return 1;
		}
	}
	printf("lab-spin: %lu threads\n", threads);
	fflush(stdout);
	start = last = spin_now();
	before = 0;
	ts.tv_sec = (time_t)(interval / 1000);
	ts.tv_nsec = (long)(interval % 1000) * 1000000L;
	for (;;) {
		nanosleep(&ts, NULL);
		now = spin_now();
		now_ops = atomic_load(&spin_ops);
		printf("lab-spin: ops/s %.0f\n",
		    (double)(now_ops - before) / (now - last));
		fflush(stdout);
		before = now_ops;
		last = now;
		if (seconds > 0 && now - start >= (double)seconds) {
			printf("lab-spin: total ops %lu in %.1f s, ops/s %.0f\n",
			    now_ops, now - start,
			    (double)now_ops / (now - start));
			fflush(stdout);
			return 0;
		}
	}
}
