/*
 * Unit tests of running a helper: its output comes back, a failure quotes
 * its stderr, and one that hangs is killed at the deadline.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "util.h"
#include "testlib.h"

START_TEST(test_output)
{
	char *const	argv[] = { "sh", "-c", "echo 0-3; echo noise >&2", NULL };
	char		out[64], err[256];

	ck_assert_int_eq(cmd_run(argv, out, sizeof(out), 5000, err,
	    sizeof(err)), 0);
	ck_assert_str_eq(out, "0-3\n");
}
END_TEST

START_TEST(test_truncated_output)
{
	char *const	argv[] = { "sh", "-c", "yes | head -c 100000", NULL };
	char		out[8], err[256];

	ck_assert_int_eq(cmd_run(argv, out, sizeof(out), 5000, err,
	    sizeof(err)), 0);
	ck_assert_str_eq(out, "y\ny\ny\ny");
}
END_TEST

START_TEST(test_failure)
{
	char *const	argv[] = { "sh", "-c",
			    "echo 'Failed to set: bad\x01' >&2; exit 3", NULL };
	char *const	none[] = { "no-such-program-here", NULL };
	char		err[256];

	ck_assert_int_eq(cmd_run(argv, NULL, 0, 5000, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "sh exited with 3: Failed to set: bad\\x01");
	ck_assert_int_eq(cmd_run(none, NULL, 0, 5000, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "exited with 127"));
	ck_assert(!cmd_exists("no-such-program-here"));
	ck_assert(cmd_exists("sh"));
}
END_TEST

START_TEST(test_timeout)
{
	char *const	argv[] = { "sleep", "10", NULL };
	char		err[256];
	uint64_t	t0 = time_mono_ms();

	ck_assert_int_eq(cmd_run(argv, NULL, 0, 300, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "sleep: no answer after 300 ms, killed");
	ck_assert_uint_lt(time_mono_ms() - t0, 3000);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("cmd");
	TCase	*tc = tcase_create("cmd");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_output);
	tcase_add_test(tc, test_truncated_output);
	tcase_add_test(tc, test_failure);
	tcase_add_test(tc, test_timeout);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
