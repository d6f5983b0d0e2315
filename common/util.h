/* Allocation that aborts on failure, time, and small string/file helpers. */
#ifndef PREFCPU_UTIL_H
#define PREFCPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
int	 xasprintf(char **, const char *, ...) __attribute__((format(printf, 2, 3)));

/* CLOCK_MONOTONIC in ns and ms; CLOCK_REALTIME in ms since the epoch. */
uint64_t time_mono_ns(void);
uint64_t time_mono_ms(void);
uint64_t time_real_ms(void);
/* The earlier of two deadlines, where 0 is none. */
uint64_t deadline_min(uint64_t, uint64_t);

/*
 * Read a small file (sysfs/procfs) into buf, NUL-terminated; returns the
 * number of bytes read or -1 with errno set.  A file longer than len-1
 * bytes is an error (EFBIG).
 */
ssize_t	file_read(const char *path, char *buf, size_t len);
/* Same with an open fd from offset 0 (pread), for files kept open. */
ssize_t	fd_pread_all(int fd, char *buf, size_t len);
/* Write a whole string to a file (O_WRONLY|O_TRUNC, no create); 0 or -1. */
int	file_write(const char *path, const char *text);
/* Write a file atomically: temp file in the same directory, fsync, rename. */
int	file_write_atomic(const char *path, const void *data, size_t len,
	    mode_t mode);
/* Join root and path ("/tmp/t" + "/proc/stat"); root may be "" or "/". */
char	*path_join(const char *root, const char *path);
/* mkdir -p; 0 or -1 with errno. */
int	mkdir_p(const char *path, mode_t mode);

/* Parse an unsigned decimal integer in [min,max] with nothing after it. */
int	parse_uint(const char *, uint64_t min, uint64_t max, uint64_t *out);
/* Strip trailing whitespace in place; returns s. */
char	*str_rstrip(char *s);
/*
 * Reject what json-c's strict mode still lets through: single-quoted
 * strings (json-c takes them as keys) and raw control bytes inside
 * strings.  Returns the offset of the first offending byte or len, and
 * the reason in why.
 */
size_t	json_prescan(const char *s, size_t len, const char **why);
/*
 * Write a cause into the caller's err[errlen]; NULL or 0 writes nothing.
 * A character the cut splits is dropped (utf8_cut()), so the cause can go
 * to a peer whose text must be valid UTF-8.
 */
void	err_set(char *err, size_t errlen, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

#endif
