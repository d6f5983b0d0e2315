/* Allocation wrappers, clocks and small file/string helpers. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "utf8.h"
#include "util.h"

/*
 * Allocation failure is not recoverable in a daemon of this size: report
 * it and abort so that a core dump shows where.
 */
static __attribute__((noreturn)) void
util_oom(const char *what, size_t n)
{
	log_msg(LOGL_ERR, "%s: out of memory allocating %zu bytes", what, n);
	abort();
}

void *
xmalloc(size_t n)
{
	void	*p;

	if (n == 0)
		n = 1;
	if ((p = malloc(n)) == NULL)
		util_oom("xmalloc", n);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void	*p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		util_oom("xcalloc", nmemb * size);
	return p;
}

void *
xreallocarray(void *old, size_t nmemb, size_t size)
{
	void	*p;
	size_t	 n;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		log_msg(LOGL_ERR, "xreallocarray: %zu * %zu overflows",
		    nmemb, size);
		abort();
	}
	if (n == 0)
		n = 1;
	if ((p = realloc(old, n)) == NULL)
		util_oom("xreallocarray", n);
	return p;
}

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		util_oom("xstrdup", strlen(s) + 1);
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;

	if ((p = strndup(s, n)) == NULL)
		util_oom("xstrndup", n + 1);
	return p;
}

int
xasprintf(char **out, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		util_oom("xasprintf", 0);
	return n;
}

static uint64_t
util_clock_ns(clockid_t id)
{
	struct timespec	ts;

	if (clock_gettime(id, &ts) == -1)
		fatal("clock_gettime");
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) +
	    (uint64_t)ts.tv_nsec;
}

uint64_t
time_mono_ns(void)
{
	return util_clock_ns(CLOCK_MONOTONIC);
}

uint64_t
time_mono_ms(void)
{
	return util_clock_ns(CLOCK_MONOTONIC) / 1000000;
}

uint64_t
time_real_ms(void)
{
	return util_clock_ns(CLOCK_REALTIME) / 1000000;
}

uint64_t
deadline_min(uint64_t a, uint64_t b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

/*
 * Read until EOF from offset 0.  procfs and sysfs may return short reads,
 * so loop; one byte is kept for the NUL and a full buffer means the file
 * did not fit.
 */
ssize_t
fd_pread_all(int fd, char *buf, size_t len)
{
	size_t	off = 0;
	ssize_t	n;

	if (len == 0) {
		errno = EINVAL;
		return -1;
	}
	for (;;) {
		if (off == len - 1) {
			char	probe;

			/* Exactly full is fine only if nothing follows. */
			do
				n = pread(fd, &probe, 1, (off_t)off);
			while (n == -1 && errno == EINTR);
			if (n == -1)
				return -1;
			if (n > 0) {
				buf[0] = '\0';
				errno = EFBIG;
				return -1;
			}
			break;
		}
		n = pread(fd, buf + off, len - 1 - off, (off_t)off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = '\0';
	return (ssize_t)off;
}

ssize_t
file_read(const char *path, char *buf, size_t len)
{
	int	fd, saved;
	ssize_t	n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = fd_pread_all(fd, buf, len);
	saved = errno;
	close(fd);
	errno = saved;
	return n;
}

static int
util_write_all(int fd, const void *data, size_t len)
{
	const char	*p = data;
	ssize_t		 n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
file_write(const char *path, const char *text)
{
	int	fd, saved;

	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) == -1)
		return -1;
	/*
	 * sysfs and cgroupfs report a rejected value on write() and some
	 * only on close(), so both are checked.
	 */
	if (util_write_all(fd, text, strlen(text)) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	if (close(fd) == -1)
		return -1;
	return 0;
}

int
file_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char	*tmp, *dircopy;
	int	 fd, dfd, saved;

	xasprintf(&tmp, "%s.tmpXXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		saved = errno;
		free(tmp);
		errno = saved;
		return -1;
	}
	if (fchmod(fd, mode) == -1 || util_write_all(fd, data, len) == -1 ||
	    fsync(fd) == -1) {
		saved = errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		errno = saved;
		return -1;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		saved = errno;
		unlink(tmp);
		free(tmp);
		errno = saved;
		return -1;
	}
	free(tmp);

	/* The rename itself is durable only once the directory is synced. */
	dircopy = xstrdup(path);
	dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dircopy);
	if (dfd != -1) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

char *
path_join(const char *root, const char *path)
{
	size_t	 rlen = strlen(root);
	char	*out;

	while (rlen > 0 && root[rlen - 1] == '/')
		rlen--;
	while (*path == '/')
		path++;
	xasprintf(&out, "%.*s/%s", (int)rlen, root, path);
	return out;
}

int
mkdir_p(const char *path, mode_t mode)
{
	char		*p, *s;
	struct stat	 st;
	int		 saved;

	if (*path == '\0') {
		errno = ENOENT;
		return -1;
	}
	p = xstrdup(path);
	for (s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		if (s[-1] != '/') {
			char	c = *s;

			*s = '\0';
			if (mkdir(p, mode) == -1 && errno != EEXIST)
				goto fail;
			if (stat(p, &st) == -1)
				goto fail;
			if (!S_ISDIR(st.st_mode)) {
				errno = ENOTDIR;
				goto fail;
			}
			*s = c;
		}
		if (*s == '\0')
			break;
	}
	free(p);
	return 0;
fail:
	saved = errno;
	free(p);
	errno = saved;
	return -1;
}

int
parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t	v = 0, d;
	const char	*p = s;

	if (*p == '\0') {
		errno = EINVAL;
		return -1;
	}
	/* strtoull accepts signs and spaces; a config value must not. */
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9') {
			errno = EINVAL;
			return -1;
		}
		d = (uint64_t)(*p - '0');
		if (v > (UINT64_MAX - d) / 10) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + d;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

char *
str_rstrip(char *s)
{
	size_t	n = strlen(s);

	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' ||
	    s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\v' ||
	    s[n - 1] == '\f'))
		s[--n] = '\0';
	return s;
}

void
err_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	err[utf8_cut(err, strlen(err))] = '\0';
}

/* Scan JSON text for what json-c's strict mode lets through (util.h). */
size_t
json_prescan(const char *s, size_t len, const char **why)
{
	bool	instr = false, esc = false;
	size_t	i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!instr) {
			if (c == '\'') {
				*why = "single-quoted string";
				return i;
			}
			if (c == '"')
				instr = true;
			continue;
		}
		if (c < 0x20) {
			*why = "control character in a string";
			return i;
		}
		if (esc)
			esc = false;
		else if (c == '\\')
			esc = true;
		else if (c == '"')
			instr = false;
	}
	return len;
}
