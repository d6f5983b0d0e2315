/* Unit tests for common/log: output format, levels, journal, str_escape. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "util.h"
#include "testlib.h"

/* stderr redirected to an unlinked temp file while a test logs. */
struct capture {
	FILE	*fp;
	int	 saved;
	char	 text[8192];
};

static void
capture_start(struct capture *c)
{
	c->fp = tmpfile();
	ck_assert_ptr_nonnull(c->fp);
	c->saved = dup(STDERR_FILENO);
	ck_assert_int_ge(c->saved, 0);
	ck_assert_int_eq(dup2(fileno(c->fp), STDERR_FILENO), STDERR_FILENO);
}

static const char *
capture_end(struct capture *c)
{
	ck_assert_int_eq(dup2(c->saved, STDERR_FILENO), STDERR_FILENO);
	close(c->saved);
	ck_assert_int_ge(fd_pread_all(fileno(c->fp), c->text,
	    sizeof(c->text)), 0);
	fclose(c->fp);
	return c->text;
}

START_TEST(test_foreground_format)
{
	struct capture	c;

	unsetenv("JOURNAL_STREAM");
	capture_start(&c);
	log_init("/usr/sbin/prefcpu-test", LOGL_INFO);
	log_warnx("warning %d", 1);
	log_notice("notice %s", "two");
	log_info("info");
	log_debug("debug is filtered");
	log_msg(LOGL_ERR, "err %c", 'x');
	ck_assert_str_eq(capture_end(&c),
	    "prefcpu-test: warning 1\n"
	    "prefcpu-test: notice two\n"
	    "prefcpu-test: info\n"
	    "prefcpu-test: err x\n");
}
END_TEST

START_TEST(test_levels)
{
	struct capture	c;

	unsetenv("JOURNAL_STREAM");
	capture_start(&c);
	log_init("t", LOGL_WARNING);
	ck_assert_int_eq(log_get_level(), LOGL_WARNING);
	log_info("hidden");
	log_notice("hidden");
	log_warnx("shown");
	log_set_level(LOGL_DEBUG);
	ck_assert_int_eq(log_get_level(), LOGL_DEBUG);
	log_debug("debug shown");
	log_set_level(LOGL_ERR);
	log_warnx("hidden");
	log_msg(LOGL_ERR, "err shown");
	ck_assert_str_eq(capture_end(&c),
	    "t: shown\nt: debug shown\nt: err shown\n");
}
END_TEST

START_TEST(test_level_parse)
{
	ck_assert_int_eq(log_level_parse("err"), LOGL_ERR);
	ck_assert_int_eq(log_level_parse("warning"), LOGL_WARNING);
	ck_assert_int_eq(log_level_parse("notice"), LOGL_NOTICE);
	ck_assert_int_eq(log_level_parse("info"), LOGL_INFO);
	ck_assert_int_eq(log_level_parse("debug"), LOGL_DEBUG);
	ck_assert_int_eq(log_level_parse("DEBUG"), -1);
	ck_assert_int_eq(log_level_parse("warn"), -1);
	ck_assert_int_eq(log_level_parse(""), -1);
}
END_TEST

START_TEST(test_warn_errno)
{
	struct capture	c;

	unsetenv("JOURNAL_STREAM");
	capture_start(&c);
	log_init("t", LOGL_INFO);
	errno = ENOENT;
	log_warn("open %s", "/x");
	/* Logging does not clobber errno for the caller. */
	ck_assert_int_eq(errno, ENOENT);
	log_info("after");
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_str_eq(capture_end(&c),
	    "t: open /x: No such file or directory\nt: after\n");
}
END_TEST

START_TEST(test_journal_prefix)
{
	struct capture	c;

	capture_start(&c);
	log_init("t", LOGL_DEBUG);
	log_set_journal(1);
	log_msg(LOGL_ERR, "e");
	log_warnx("w");
	log_notice("n");
	log_info("i");
	log_debug("d");
	log_info("two\nlines");
	log_set_journal(0);
	log_info("plain");
	ck_assert_str_eq(capture_end(&c),
	    "<3>e\n<4>w\n<5>n\n<6>i\n<7>d\n<6>two\n<6>lines\nt: plain\n");
}
END_TEST

/* JOURNAL_STREAM counts only when it names our stderr. */
START_TEST(test_journal_stream_detection)
{
	struct capture	c;
	struct stat	st;
	char		env[64];

	capture_start(&c);
	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);

	snprintf(env, sizeof(env), "%llu:%llu",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("t", LOGL_INFO);
	log_info("a");

	snprintf(env, sizeof(env), "%llu:%llu",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("t", LOGL_INFO);
	log_info("b");

	setenv("JOURNAL_STREAM", "garbage", 1);
	log_init("t", LOGL_INFO);
	log_info("c");

	snprintf(env, sizeof(env), "%llu:%llux",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("t", LOGL_INFO);
	log_info("d");

	unsetenv("JOURNAL_STREAM");
	log_init("t", LOGL_INFO);
	log_info("e");
	ck_assert_str_eq(capture_end(&c), "<6>a\nt: b\nt: c\nt: d\nt: e\n");
}
END_TEST

START_TEST(test_long_message)
{
	struct capture	c;
	char		big[10000];
	const char	*out;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	unsetenv("JOURNAL_STREAM");
	capture_start(&c);
	log_init("t", LOGL_INFO);
	log_info("%s", big);
	log_info("next");
	out = capture_end(&c);
	/* Truncated, but still one line, and the next line is intact. */
	ck_assert_ptr_nonnull(strstr(out, "aaaa\nt: next\n"));
	ck_assert_int_eq(strncmp(out, "t: aaa", 6), 0);
	ck_assert_ptr_eq(strchr(out, '\n'), strstr(out, "\nt: next"));
}
END_TEST

/* Run fn in a child with stderr on a pipe; return its status and output. */
static int
run_child(void (*fn)(void), char *out, size_t outlen)
{
	int	p[2], status;
	pid_t	pid;
	size_t	off = 0;
	ssize_t	n;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], STDERR_FILENO);
		unsetenv("JOURNAL_STREAM");
		fn();
		_exit(99);	/* fn must not return */
	}
	close(p[1]);
	while (off + 1 < outlen &&
	    (n = read(p[0], out + off, outlen - 1 - off)) > 0)
		off += (size_t)n;
	out[off] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void
call_fatalx(void)
{
	log_init("t", LOGL_INFO);
	fatalx("broken invariant %d", 7);
}

static void
call_fatal(void)
{
	log_init("t", LOGL_ERR);
	errno = EACCES;
	fatal("start-up failed");
}

START_TEST(test_fatal_exits)
{
	char	out[256];
	int	status;

	status = run_child(call_fatalx, out, sizeof(out));
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 1);
	ck_assert_str_eq(out, "t: broken invariant 7\n");

	status = run_child(call_fatal, out, sizeof(out));
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 1);
	ck_assert_str_eq(out, "t: start-up failed: Permission denied\n");
}
END_TEST

static const char *
esc(const char *src, size_t len)
{
	static char	out[512];

	return str_escape(out, sizeof(out), src, len);
}

#define ESC(lit)	esc(lit, sizeof(lit) - 1)

START_TEST(test_escape_cases)
{
	ck_assert_str_eq(ESC(""), "");
	ck_assert_str_eq(ESC("plain text 123 ~!@#$%^&*()"),
	    "plain text 123 ~!@#$%^&*()");
	ck_assert_str_eq(ESC("a\\b"), "a\\\\b");
	ck_assert_str_eq(ESC("l1\nl2\tx\ry"), "l1\\nl2\\tx\\ry");
	ck_assert_str_eq(ESC("\x01\x1b[31m\x7f"), "\\x01\\x1b[31m\\x7f");
	ck_assert_str_eq(ESC("nul\0byte"), "nul\\x00byte");
	/* Valid UTF-8 of 2, 3 and 4 bytes passes. */
	ck_assert_str_eq(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	ck_assert_str_eq(ESC("\xc2\xa0"), "\xc2\xa0");
	ck_assert_str_eq(ESC("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");
	/* Invalid: lone continuation, overlong, surrogate, > U+10FFFF. */
	ck_assert_str_eq(ESC("\x80"), "\\x80");
	ck_assert_str_eq(ESC("\xc0\x80"), "\\xc0\\x80");
	ck_assert_str_eq(ESC("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
	ck_assert_str_eq(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");
	ck_assert_str_eq(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	ck_assert_str_eq(ESC("\xff\xfe"), "\\xff\\xfe");
	/* Truncated sequence at the end, and one broken by ASCII. */
	ck_assert_str_eq(ESC("x\xe2\x82"), "x\\xe2\\x82");
	ck_assert_str_eq(ESC("\xe2z\xac"), "\\xe2z\\xac");
	/* C1 controls are terminal controls too. */
	ck_assert_str_eq(ESC("\xc2\x9b"), "\\xc2\\x9b");
	/* Bidi controls and separators, at the edges of their ranges. */
	ck_assert_str_eq(ESC("a\xe2\x80\xaex"), "a\\u202ex");
	ck_assert_str_eq(ESC("\xe2\x80\xaa\xe2\x80\xa8\xe2\x80\xa9"),
	    "\\u202a\\u2028\\u2029");
	ck_assert_str_eq(ESC("\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\x8e\xe2\x80\x8f"
	    "\xd8\x9c"), "\\u2066\\u2069\\u200e\\u200f\\u061c");
	/* Their neighbours pass. */
	ck_assert_str_eq(ESC("\xe2\x80\xaf\xe2\x81\xa5\xe2\x80\x8d\xd8\x9b"),
	    "\xe2\x80\xaf\xe2\x81\xa5\xe2\x80\x8d\xd8\x9b");
	/* srclen, not NUL, bounds the input. */
	ck_assert_str_eq(esc("abcdef", 3), "abc");
}
END_TEST

/*
 * Whatever dstlen, the output is the escape of some prefix of the input:
 * never half an escape or half a UTF-8 sequence, never beyond dstlen.
 */
START_TEST(test_escape_bounded)
{
	static const char	src[] = "a\\\n\x01\xc3\xa9\xf0\x9f\x98\x80z\xff";
	char			full[128], part[128], pre[128];
	size_t			dstlen, k;
	bool			found;

	str_escape(full, sizeof(full), src, sizeof(src) - 1);
	ck_assert_str_eq(full,
	    "a\\\\\\n\\x01\xc3\xa9\xf0\x9f\x98\x80z\\xff");
	for (dstlen = 1; dstlen <= strlen(full) + 1; dstlen++) {
		memset(part, 'Z', sizeof(part));
		ck_assert_ptr_eq(str_escape(part, dstlen, src,
		    sizeof(src) - 1), part);
		ck_assert_uint_lt(strlen(part), dstlen);
		ck_assert_uint_eq((unsigned char)part[dstlen], 'Z');
		found = false;
		for (k = 0; k < sizeof(src) && !found; k++) {
			str_escape(pre, sizeof(pre), src, k);
			found = strcmp(pre, part) == 0;
		}
		ck_assert_msg(found, "dstlen %zu: '%s' cuts an item", dstlen,
		    part);
	}
	ck_assert_str_eq(part, full);

	/* dstlen 0 writes nothing. */
	part[0] = 'Z';
	str_escape(part, 0, src, sizeof(src) - 1);
	ck_assert_int_eq(part[0], 'Z');
}
END_TEST

static Suite *
log_suite(void)
{
	Suite	*s = suite_create("log");
	TCase	*tc;

	tc = tcase_create("output");
	tcase_add_test(tc, test_foreground_format);
	tcase_add_test(tc, test_levels);
	tcase_add_test(tc, test_level_parse);
	tcase_add_test(tc, test_warn_errno);
	tcase_add_test(tc, test_journal_prefix);
	tcase_add_test(tc, test_journal_stream_detection);
	tcase_add_test(tc, test_long_message);
	tcase_add_test(tc, test_fatal_exits);
	suite_add_tcase(s, tc);

	tc = tcase_create("escape");
	tcase_add_test(tc, test_escape_cases);
	tcase_add_test(tc, test_escape_bounded);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(log_suite());
}
