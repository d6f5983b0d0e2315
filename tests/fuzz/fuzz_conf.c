/*
 * libFuzzer harness for the INI config parser (conf_load) over a table
 * with one option of every type.
 *
 * Invariants checked: a refused file names FILE:LINE and a one-line
 * cause; an accepted one dumps (conf_dump) to a file that loads again to
 * the very same values.
 */
#include <sys/mman.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "cpuset.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct fconf {
	bool		b;
	unsigned int	u;
	double		d;
	char		s[CONF_STRLEN];
	unsigned int	c;
	struct cpuset	l;
	unsigned int	u2;
};

static const char *const choices[] = { "auto", "off", "fixed", NULL };

static const struct conf_opt table[] = {
	{ "a", "bool", CONF_BOOL, offsetof(struct fconf, b), "no", 0, 0, 0, 0,
	    NULL, "b" },
	{ "a", "uint", CONF_UINT, offsetof(struct fconf, u), "5", 1, 100000,
	    0, 0, NULL, "u" },
	{ "a", "double", CONF_DOUBLE, offsetof(struct fconf, d), "0.5", 0, 0,
	    0, 1, NULL, "d" },
	{ "a", "string", CONF_STRING, offsetof(struct fconf, s), "x", 0, 0,
	    0, 0, NULL, "s" },
	{ "b", "choice", CONF_CHOICE, offsetof(struct fconf, c), "auto", 0, 0,
	    0, 0, choices, "c" },
	{ "b", "cpus", CONF_CPULIST, offsetof(struct fconf, l), "0-3", 0, 0,
	    0, 0, NULL, "l" },
	{ "b", "uint", CONF_UINT, offsetof(struct fconf, u2), "0", 0,
	    UINT32_MAX, 0, 0, NULL, "u2" },
};
#define NOPTS	(sizeof table / sizeof table[0])

static int
load(const void *text, size_t len, struct fconf *c, char *err, size_t errlen)
{
	char	path[64];
	int	fd = memfd_create("fuzz-conf", MFD_CLOEXEC), rc;

	if (fd < 0 || (len > 0 && write(fd, text, len) != (ssize_t)len))
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	conf_defaults(table, NOPTS, c);
	rc = conf_load(table, NOPTS, c, path, err, errlen);
	close(fd);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fconf	 a, b;
	char		 err[512], *dump = NULL;
	size_t		 dlen = 0, n;
	FILE		*f;

	if (size > 1 << 16)
		return 0;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	err[0] = '\0';
	if (load(data, size, &a, err, sizeof err) != 0) {
		n = strnlen(err, sizeof err);
		if (n == 0 || n == sizeof err || memchr(err, '\n', n) ||
		    strstr(err, "/proc/self/fd/") != err)
			abort();
		return 0;
	}
	f = open_memstream(&dump, &dlen);
	if (f == NULL)
		abort();
	conf_dump(table, NOPTS, &a, f);
	fclose(f);
	if (load(dump, dlen, &b, err, sizeof err) != 0)
		abort();
	if (a.b != b.b || a.u != b.u || a.c != b.c || a.u2 != b.u2 ||
	    strcmp(a.s, b.s) != 0 || !cpuset_equal(&a.l, &b.l) ||
	    (a.d != b.d && !(a.d - b.d < 1e-5 && b.d - a.d < 1e-5)))
		abort();
	free(dump);
	return 0;
}
