/*
 * Unit tests of the target safety rules: a CPU that is not online, an
 * empty set and a set without a whole core are refused with a cause; a
 * good set comes back as is.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "target.h"
#include "testlib.h"

static struct cpuset
set_of(const char *text)
{
	struct cpuset	s;
	char		err[128];

	ck_assert_int_eq(cpuset_parse(&s, text, err, sizeof(err)), 0);
	return s;
}

/* 8 CPUs, 4 cores of 2 threads, as in the integration tests. */
static struct cpuset	online, cores[4];

static void
setup(void)
{
	online = set_of("0-7");
	cores[0] = set_of("0-1");
	cores[1] = set_of("2-3");
	cores[2] = set_of("4-5");
	cores[3] = set_of("6-7");
}

static int
check_target(const char *req, char *out, size_t outlen, char *err,
    size_t errlen)
{
	struct cpuset	r = set_of(req), res;
	int		rc;

	cpuset_zero(&res);
	err[0] = '\0';
	rc = target_check(&r, &online, cores, 4, &res, err, errlen);
	ck_assert_int_ge(cpuset_format(&res, out, outlen), 0);
	return rc;
}

START_TEST(test_accepts_whole_cores)
{
	static const char *const good[] = {
		"0-1", "0-3", "2-5", "6-7", "0-7", "1-3", "0-1,3", "0-2,7",
	};
	char	out[64], err[128];
	size_t	i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(check_target(good[i], out, sizeof(out), err,
		    sizeof(err)) == 0, "%s refused: %s", good[i], err);
		ck_assert_str_eq(out, good[i]);
	}
}
END_TEST

START_TEST(test_refuses_partial_cores)
{
	static const char *const bad[] = { "0", "1", "1-2", "1,3,5,7", "3-4" };
	char	out[64], err[128];
	size_t	i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(check_target(bad[i], out, sizeof(out), err,
		    sizeof(err)), -1);
		ck_assert_str_eq(err, "the preferred set holds no whole core");
		ck_assert_str_eq(out, "");
	}
}
END_TEST

START_TEST(test_refuses_offline)
{
	char	out[64], err[128];

	ck_assert_int_eq(check_target("0-9", out, sizeof(out), err,
	    sizeof(err)), -1);
	ck_assert_str_eq(err, "cpu 8 is not online");
	online = set_of("0-3,6-7");
	ck_assert_int_eq(check_target("0-5", out, sizeof(out), err,
	    sizeof(err)), -1);
	ck_assert_str_eq(err, "cpu 4 is not online");
	ck_assert_int_eq(check_target("2-3,6-7", out, sizeof(out), err,
	    sizeof(err)), 0);
	ck_assert_str_eq(out, "2-3,6-7");
}
END_TEST

START_TEST(test_refuses_empty)
{
	char	out[64], err[128];

	ck_assert_int_eq(check_target("", out, sizeof(out), err,
	    sizeof(err)), -1);
	ck_assert_str_eq(err, "the preferred set is empty");
}
END_TEST

START_TEST(test_core_partly_offline)
{
	char	out[64], err[128];

	/* CPU 1 went offline: core 0-1 is no longer whole, CPU 0 alone. */
	online = set_of("0,2-7");
	cores[0] = set_of("0");
	ck_assert_int_eq(check_target("0", out, sizeof(out), err,
	    sizeof(err)), 0);
	ck_assert_str_eq(out, "0");
}
END_TEST

START_TEST(test_lease_cap)
{
	/* Default: 60 s, whatever the host asks, unless it asks for less. */
	ck_assert_uint_eq(target_lease_cap(PROTO_LEASE_CAP_MS, 0), 60000);
	ck_assert_uint_eq(target_lease_cap(PROTO_LEASE_CAP_MS, 3600000), 60000);
	ck_assert_uint_eq(target_lease(3600000, 60000), 60000);
	ck_assert_uint_eq(target_lease(15000, 60000), 15000);
	/* The guest allows up to 10 min: the hello raises the cap so far. */
	ck_assert_uint_eq(target_lease_cap(600000, 0), 60000);
	ck_assert_uint_eq(target_lease_cap(600000, 300000), 300000);
	ck_assert_uint_eq(target_lease_cap(600000, 3600000), 600000);
	ck_assert_uint_eq(target_lease(3600000, target_lease_cap(600000,
	    3600000)), 600000);
	/* A hello below 60 s does not lower the cap; the guest's bound does. */
	ck_assert_uint_eq(target_lease_cap(600000, 1000), 60000);
	ck_assert_uint_eq(target_lease_cap(5000, 0), 5000);
	ck_assert_uint_eq(target_lease_cap(5000, 3600000), 5000);
	ck_assert_uint_eq(target_lease(15000, 5000), 5000);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("target");
	TCase	*tc = tcase_create("check");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_accepts_whole_cores);
	tcase_add_test(tc, test_refuses_partial_cores);
	tcase_add_test(tc, test_refuses_offline);
	tcase_add_test(tc, test_refuses_empty);
	tcase_add_test(tc, test_core_partly_offline);
	tcase_add_test(tc, test_lease_cap);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
