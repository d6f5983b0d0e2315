/*
 * lab-hostile: a guest program that abuses the prefcpu port, for the
 * hostile-guest end-to-end test.  In a loop it writes binary garbage, an
 * overlong line (1 MiB before its newline), well-formed JSON of the wrong
 * types, and then floods short valid-looking lines as fast as the port
 * takes them for FLOOD_MS.  It never reads: a host that waits for its
 * answers must not stall either.
 *
 * Usage: lab-hostile PORT   (a character device such as /dev/vport0p1)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLOOD_MS	2000
#define LONG_LINE	(1024 * 1024)

static const char *const hostile_bad[] = {
	"{\"v\":1,\"type\":\"hello\",\"session\":42}\n",
	"{\"v\":1,\"type\":\"ack\",\"seq\":\"x\",\"ok\":\"yes\"}\n",
	"{\"v\":99,\"type\":\"ack\"}\n",
	"{\"v\":1,\"type\":\"no-such-type\"}\n",
	"{\"v\":1,\"type\":\"report\",\"online\":\"0-999999\","
	    "\"steal_pct\":NaN}\n",
	"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
	"{'v':1,'type':'pong'}\n",
	"\xff\xfe\xc0\xaf not utf-8\n",
};

static unsigned long long hostile_bytes;

static long
hostile_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write all of buf unless the port stays full for a while; 0 or -1. */
static int
hostile_write(int fd, const char *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			hostile_bytes += (unsigned long long)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		/* The port polls POLLHUP at once while the host is closed. */
		if (poll(&pfd, 1, 200) <= 0 || (pfd.revents & POLLOUT) == 0)
			return -1;
	}
	return 0;
}

static void
hostile_pause(void)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 100 * 1000000L };

	nanosleep(&ts, NULL);
}

int
main(int argc, char **argv)
{
	static char garbage[4096], longline[LONG_LINE + 1];
	unsigned long cycle = 0, lines;
	size_t i;
	long end;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: lab-hostile PORT\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		fprintf(stderr, "lab-hostile: %s: %s\n", argv[1],
		    strerror(errno));
		return 1;
	}
	srand(7);
	for (i = 0; i < sizeof garbage; i++)
		garbage[i] = (char)(rand() & 0xff);
	memset(longline, 'A', LONG_LINE);
	longline[LONG_LINE] = '\n';
	printf("lab-hostile: started on %s\n", argv[1]);
	fflush(stdout);

	for (;;) {
		cycle++;
		if (hostile_write(fd, garbage, sizeof garbage) == -1)
			hostile_pause();
		if (hostile_write(fd, longline, sizeof longline) == -1)
			hostile_pause();
		for (i = 0; i < sizeof hostile_bad / sizeof hostile_bad[0]; i++)
			if (hostile_write(fd, hostile_bad[i],
			    strlen(hostile_bad[i])) == -1)
				hostile_pause();
		lines = 0;
		end = hostile_ms() + FLOOD_MS;
		while (hostile_ms() < end) {
			if (hostile_write(fd, "{\"v\":1,\"type\":\"pong\","
			    "\"seq\":1}\n", 30) == -1)
				hostile_pause();
			else
				lines++;
		}
		printf("lab-hostile: cycle %lu, %lu flood lines, %llu bytes "
		    "written\n", cycle, lines, hostile_bytes);
		fflush(stdout);
	}
}
