/* Unit tests for common/util: allocation, clocks, files, strings. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "utf8.h"
#include "util.h"
#include "testlib.h"

static char *
tpath(const char *name)
{
	return path_join(testlib_dir, name);
}

static unsigned int
count_entries(const char *dir)
{
	DIR		*d = opendir(dir);
	struct dirent	*de;
	unsigned int	 n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

START_TEST(test_alloc)
{
	unsigned char	*p;
	char		*s;
	int		*v;
	size_t		 i;

	p = xmalloc(0);
	ck_assert_ptr_nonnull(p);
	free(p);
	p = xcalloc(0, 8);
	ck_assert_ptr_nonnull(p);
	free(p);
	p = xcalloc(100, 3);
	for (i = 0; i < 300; i++)
		ck_assert_uint_eq(p[i], 0);
	free(p);

	v = xreallocarray(NULL, 4, sizeof(*v));
	for (i = 0; i < 4; i++)
		v[i] = (int)i;
	v = xreallocarray(v, 1000, sizeof(*v));
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(v[i], (int)i);
	v[999] = 7;
	free(v);

	s = xstrdup("hello");
	ck_assert_str_eq(s, "hello");
	free(s);
	s = xstrndup("hello", 3);
	ck_assert_str_eq(s, "hel");
	free(s);
	s = xstrndup("hi", 10);
	ck_assert_str_eq(s, "hi");
	free(s);
	ck_assert_int_eq(xasprintf(&s, "%s-%d", "cpu", 42), 6);
	ck_assert_str_eq(s, "cpu-42");
	free(s);
}
END_TEST

/* A multiplication that overflows must not allocate a short buffer. */
START_TEST(test_reallocarray_overflow_aborts)
{
	void	*p = xreallocarray(NULL, SIZE_MAX / 2, 3);

	free(p);
}
END_TEST

START_TEST(test_clocks)
{
	uint64_t	a, b, ms, real;
	struct timespec	ts = { 0, 20 * 1000 * 1000 };

	a = time_mono_ns();
	ms = time_mono_ms();
	nanosleep(&ts, NULL);
	b = time_mono_ns();
	ck_assert_uint_ge(b - a, 20 * 1000 * 1000);
	ck_assert_uint_le(b - a, 5ULL * 1000 * 1000 * 1000);
	ck_assert_uint_ge(time_mono_ms(), ms + 20);
	ck_assert_uint_le(ms, b / 1000000);
	real = time_real_ms();
	ck_assert_uint_ge(real / 1000 + 2, (uint64_t)time(NULL));
	ck_assert_uint_le(real / 1000, (uint64_t)time(NULL));
}
END_TEST

START_TEST(test_file_read)
{
	char	*p = tpath("f"), buf[8];

	testlib_write(p, "1234567");
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), 7);
	ck_assert_str_eq(buf, "1234567");
	/* One byte more than fits: EFBIG, never a silent truncation. */
	testlib_write(p, "12345678");
	errno = 0;
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EFBIG);
	testlib_write(p, "");
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	free(p);

	p = tpath("missing");
	errno = 0;
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENOENT);
	free(p);
}
END_TEST

/* The sampling loop keeps files open and re-reads them each period. */
START_TEST(test_fd_pread_all_reread)
{
	char	*p = tpath("stat"), buf[64];
	int	 fd;

	testlib_write(p, "100 200\n");
	fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fd_pread_all(fd, buf, sizeof(buf)), 8);
	ck_assert_str_eq(buf, "100 200\n");
	ck_assert_int_eq(pwrite(fd, "1", 1, 0), 1);
	ck_assert_int_eq(ftruncate(fd, 3), 0);
	ck_assert_int_eq(fd_pread_all(fd, buf, sizeof(buf)), 3);
	ck_assert_str_eq(buf, "100");
	ck_assert_int_eq(fd_pread_all(fd, buf, 0), -1);
	close(fd);
	free(p);
}
END_TEST

START_TEST(test_file_write)
{
	char	*p = tpath("w"), buf[64];

	testlib_write(p, "a long old value\n");
	ck_assert_int_eq(file_write(p, "0-3"), 0);
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), 3);
	ck_assert_str_eq(buf, "0-3");
	free(p);

	/* No create: cgroup and sysfs files exist or the write is wrong. */
	p = tpath("nonexistent");
	errno = 0;
	ck_assert_int_eq(file_write(p, "x"), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(access(p, F_OK), -1);
	free(p);
}
END_TEST

START_TEST(test_file_write_atomic)
{
	char		*dir = tpath("atomic"), *p, buf[64];
	struct stat	 st;

	ck_assert_int_eq(mkdir(dir, 0755), 0);
	p = path_join(dir, "state.json");

	ck_assert_int_eq(file_write_atomic(p, "first", 5, 0640), 0);
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "first");
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);

	ck_assert_int_eq(file_write_atomic(p, "2nd\0bin", 7, 0600), 0);
	ck_assert_int_eq(file_read(p, buf, sizeof(buf)), 7);
	ck_assert_mem_eq(buf, "2nd\0bin", 7);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* No temp file left behind. */
	ck_assert_uint_eq(count_entries(dir), 1);
	free(p);

	p = path_join(dir, "no/such/dir/f");
	errno = 0;
	ck_assert_int_eq(file_write_atomic(p, "x", 1, 0600), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_uint_eq(count_entries(dir), 1);
	free(p);
	free(dir);
}
END_TEST

static const struct {
	const char	*root, *path, *want;
} join_cases[] = {
	{ "/tmp/t", "/proc/stat", "/tmp/t/proc/stat" },
	{ "/tmp/t/", "/proc/stat", "/tmp/t/proc/stat" },
	{ "/tmp/t", "proc/stat", "/tmp/t/proc/stat" },
	{ "", "/proc/stat", "/proc/stat" },
	{ "/", "/proc/stat", "/proc/stat" },
	{ "//", "proc", "/proc" },
	{ "rel", "x", "rel/x" },
	{ "/r", "", "/r/" },
};

START_TEST(test_path_join)
{
	char	*s = path_join(join_cases[_i].root, join_cases[_i].path);

	ck_assert_str_eq(s, join_cases[_i].want);
	free(s);
}
END_TEST

START_TEST(test_mkdir_p)
{
	char		*p = tpath("a/b//c/"), *q;
	struct stat	 st;

	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	free(p);
	p = tpath("a/b/c");
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	/* Existing: fine. */
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	free(p);

	/* Through a regular file: ENOTDIR. */
	p = tpath("file");
	testlib_write(p, "x");
	q = tpath("file/sub");
	errno = 0;
	ck_assert_int_eq(mkdir_p(q, 0755), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	errno = 0;
	ck_assert_int_eq(mkdir_p(p, 0755), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	free(q);
	free(p);

	errno = 0;
	ck_assert_int_eq(mkdir_p("", 0755), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

static const struct {
	const char	*in;
	uint64_t	 min, max;
	int		 rc, err;
	uint64_t	 want;
} uint_cases[] = {
	{ "0", 0, 10, 0, 0, 0 },
	{ "42", 0, 100, 0, 0, 42 },
	{ "007", 0, 100, 0, 0, 7 },
	{ "18446744073709551615", 0, UINT64_MAX, 0, 0, UINT64_MAX },
	{ "18446744073709551616", 0, UINT64_MAX, -1, ERANGE, 0 },
	{ "99999999999999999999999", 0, UINT64_MAX, -1, ERANGE, 0 },
	{ "5", 5, 5, 0, 0, 5 },
	{ "4", 5, 10, -1, ERANGE, 0 },
	{ "11", 5, 10, -1, ERANGE, 0 },
	{ "", 0, 10, -1, EINVAL, 0 },
	{ "-1", 0, 10, -1, EINVAL, 0 },
	{ "+1", 0, 10, -1, EINVAL, 0 },
	{ " 1", 0, 10, -1, EINVAL, 0 },
	{ "1 ", 0, 10, -1, EINVAL, 0 },
	{ "0x10", 0, 100, -1, EINVAL, 0 },
	{ "1.5", 0, 100, -1, EINVAL, 0 },
	{ "1\n", 0, 100, -1, EINVAL, 0 },
};

START_TEST(test_parse_uint)
{
	uint64_t	out = 12345;

	errno = 0;
	ck_assert_int_eq(parse_uint(uint_cases[_i].in, uint_cases[_i].min,
	    uint_cases[_i].max, &out), uint_cases[_i].rc);
	if (uint_cases[_i].rc == 0)
		ck_assert_uint_eq(out, uint_cases[_i].want);
	else {
		ck_assert_int_eq(errno, uint_cases[_i].err);
		ck_assert_uint_eq(out, 12345);
	}
}
END_TEST

START_TEST(test_str_rstrip)
{
	char	a[] = "value \t\r\n", b[] = "   ", c[] = "", d[] = " x y";

	ck_assert_str_eq(str_rstrip(a), "value");
	ck_assert_str_eq(str_rstrip(b), "");
	ck_assert_str_eq(str_rstrip(c), "");
	ck_assert_str_eq(str_rstrip(d), " x y");
	ck_assert_ptr_eq(str_rstrip(d), d);
}
END_TEST

/* Valid sequences give their length; everything RFC 3629 forbids, 0. */
static const struct {
	const char	*bytes;
	size_t		 n;
	size_t		 want;
} utf8_cases[] = {
	{ "A", 1, 0 },				/* ASCII is not multi-byte */
	{ "\xc3\xa9", 2, 2 },			/* U+00E9 */
	{ "\xc2\x80", 2, 2 },			/* U+0080, smallest of 2 */
	{ "\xe2\x82\xac", 3, 3 },		/* U+20AC */
	{ "\xf0\x9f\x98\x80", 4, 4 },		/* U+1F600 */
	{ "\xf4\x8f\xbf\xbf", 4, 4 },		/* U+10FFFF */
	{ "\xe2\x82\xac", 2, 0 },		/* cut short */
	{ "\xc0\x80", 2, 0 },			/* overlong NUL */
	{ "\xe0\x80\xaf", 3, 0 },		/* overlong '/' */
	{ "\xf0\x8f\xbf\xbf", 4, 0 },		/* overlong U+FFFF */
	{ "\xed\xa0\x80", 3, 0 },		/* surrogate U+D800 */
	{ "\xf4\x90\x80\x80", 4, 0 },		/* U+110000 */
	{ "\xc3\x28", 2, 0 },			/* no continuation byte */
	{ "\x80", 1, 0 },			/* lone continuation byte */
};

START_TEST(test_utf8_len)
{
	ck_assert_uint_eq(utf8_len((const unsigned char *)utf8_cases[_i].bytes,
	    utf8_cases[_i].n), utf8_cases[_i].want);
}
END_TEST

START_TEST(test_err_set)
{
	char	err[8] = "old";

	err_set(NULL, 0, "x%d", 1);
	err_set(err, 0, "x%d", 1);
	ck_assert_str_eq(err, "old");
	err_set(err, sizeof(err), "cpu %d: %s", 12, "offline");
	ck_assert_str_eq(err, "cpu 12:");
	/* A cut through a character drops its first bytes too. */
	err_set(err, sizeof(err), "vm %s", "caf\xc3\xa9");
	ck_assert_str_eq(err, "vm caf");
	err_set(err, sizeof(err), "%s", "ab\xe2\x82\xac" "de");
	ck_assert_str_eq(err, "ab\xe2\x82\xac" "de");
	err_set(err, sizeof(err), "%s", "abcde\xe2\x82\xac");
	ck_assert_str_eq(err, "abcde");
	/* Bytes that are not a cut character stay. */
	err_set(err, sizeof(err), "%s", "a\xff\x80");
	ck_assert_str_eq(err, "a\xff\x80");
}
END_TEST

static Suite *
util_suite(void)
{
	Suite	*s = suite_create("util");
	TCase	*tc;

	tc = tcase_create("memory");
	tcase_add_test(tc, test_alloc);
	tcase_add_test_raise_signal(tc, test_reallocarray_overflow_aborts,
	    SIGABRT);
	tcase_add_test(tc, test_clocks);
	tcase_add_loop_test(tc, test_path_join, 0, (int)nitems(join_cases));
	tcase_add_loop_test(tc, test_parse_uint, 0, (int)nitems(uint_cases));
	tcase_add_test(tc, test_str_rstrip);
	tcase_add_loop_test(tc, test_utf8_len, 0, (int)nitems(utf8_cases));
	tcase_add_test(tc, test_err_set);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	/*
	 * Unchecked: the directory is made and removed in the runner, so it
	 * goes away even when a test fails in its child; names differ per test.
	 */
	tcase_add_unchecked_fixture(tc, testlib_dir_setup,
	    testlib_dir_teardown);
	tcase_add_test(tc, test_file_read);
	tcase_add_test(tc, test_fd_pread_all_reread);
	tcase_add_test(tc, test_file_write);
	tcase_add_test(tc, test_file_write_atomic);
	tcase_add_test(tc, test_mkdir_p);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(util_suite());
}
