/*
 * lab-burn: keep THREADS threads busy on the CPU for SECONDS (0: for ever).
 * The guest's /init runs it as the "burn" workload; its threads never
 * sleep, so every vCPU they may use stays busy and the host sees run time
 * (and run delay under over-commit) on those vCPU threads only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long burn_sink;

static void *
burn_thread(void *arg)
{
	unsigned long x = (unsigned long)arg;

	for (;;) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		burn_sink = x;
	}
	return NULL;
}

static unsigned long
burn_number(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v > max) {
		fprintf(stderr, "lab-burn: bad %s '%s' (0..%lu)\n", what, s, max);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	unsigned long threads = 0, seconds = 0, i;
	pthread_t t;
	int c, err;

	while ((c = getopt(argc, argv, "t:s:")) != -1) {
		switch (c) {
		case 't':
			threads = burn_number(optarg, "thread count", 1024);
			break;
		case 's':
			seconds = burn_number(optarg, "duration", 86400 * 365);
			break;
		default:
			fprintf(stderr, "usage: lab-burn [-t THREADS] "
			    "[-s SECONDS]\n");
			return 2;
		}
	}
	if (threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned long)n : 1;
	}
	for (i = 0; i < threads; i++) {
		err = pthread_create(&t, NULL, burn_thread, (void *)(i + 1));
		if (err != 0) {
			fprintf(stderr, "lab-burn: pthread_create: %s\n",
			    strerror(err));
			return 1;
		}
	}
	printf("lab-burn: %lu threads busy\n", threads);
	fflush(stdout);
	if (seconds == 0)
		for (;;)
			pause();
	while (seconds > 0)
		seconds = sleep((unsigned int)seconds);
	return 0;
}
