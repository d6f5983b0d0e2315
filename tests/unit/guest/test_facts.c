/*
 * Unit tests of what the agent reads about the guest: /proc/stat steal,
 * PSI, loadavg, kernel release order, and cores from a temp sysfs tree
 * (including CPUs without topology files).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "facts.h"
#include "util.h"
#include "testlib.h"

START_TEST(test_parse_stat)
{
	struct facts_cputime	a, b;

	ck_assert_int_eq(facts_parse_stat("cpu  300 0 100 500 0 0 0 100 0 0\n"
	    "cpu0 1 2 3 4 5 6 7 8 9 10\n", &a), 0);
	ck_assert_uint_eq(a.steal, 100);
	ck_assert_uint_eq(a.total, 1000);
	/* Old kernels print fewer columns; steal is the eighth. */
	ck_assert_int_eq(facts_parse_stat("cpu  1 2 3 4 5 6 7\n", &a), -1);
	ck_assert_int_eq(facts_parse_stat("intr 1 2 3\n", &a), -1);

	ck_assert_int_eq(facts_parse_stat("cpu  300 0 100 500 0 0 0 100\n",
	    &a), 0);
	ck_assert_int_eq(facts_parse_stat("cpu  600 0 200 900 0 0 0 300\n",
	    &b), 0);
	ck_assert_double_eq_tol(facts_steal_pct(&a, &b), 20.0, 1e-9);
	ck_assert_double_eq_tol(facts_steal_pct(&b, &b), 0.0, 1e-9);
	/* A counter going backwards (CPU unplugged) is not negative steal. */
	ck_assert_double_eq_tol(facts_steal_pct(&b, &a), 0.0, 1e-9);
}
END_TEST

START_TEST(test_parse_psi_loadavg)
{
	double		avg;
	uint32_t	nr;

	ck_assert_int_eq(facts_parse_psi("some avg10=12.50 avg60=3.00 "
	    "avg300=1.00 total=12345\nfull avg10=0.00\n", &avg), 0);
	ck_assert_double_eq_tol(avg, 12.5, 1e-9);
	ck_assert_int_eq(facts_parse_psi("full avg10=1.00\n", &avg), -1);
	ck_assert_int_eq(facts_parse_psi("some avg10=101.00\n", &avg), -1);
	ck_assert_int_eq(facts_parse_psi("some avg10=nan\n", &avg), -1);

	ck_assert_int_eq(facts_parse_loadavg("1.00 0.50 0.25 5/300 4242\n",
	    &nr), 0);
	ck_assert_uint_eq(nr, 4);	/* the reader itself does not count */
	ck_assert_int_eq(facts_parse_loadavg("0.00 0.00 0.00 1/80 99\n",
	    &nr), 0);
	ck_assert_uint_eq(nr, 0);	/* an idle guest hints nothing */
	ck_assert_int_eq(facts_parse_loadavg("1.00 0.50\n", &nr), -1);
	ck_assert_int_eq(facts_parse_loadavg("0 0 0 2000000/3 1\n", &nr), -1);
}
END_TEST

START_TEST(test_kernel_before)
{
	ck_assert(facts_kernel_before("6.1.0-57-cloud-amd64", 6, 2));
	ck_assert(facts_kernel_before("5.19.0", 6, 2));
	ck_assert(!facts_kernel_before("6.2.0", 6, 2));
	ck_assert(!facts_kernel_before("6.12.117+deb12-cloud-amd64", 6, 2));
	ck_assert(!facts_kernel_before("7.0", 6, 2));
	ck_assert(!facts_kernel_before("garbage", 6, 2));
}
END_TEST

START_TEST(test_cores_from_sysfs)
{
	char			*dir = testlib_tmpdir(), err[256];
	char			 buf[64], *cmd;
	struct guestd_conf	 conf;
	struct facts		 f;
	struct cpuset		 mask;
	static const char *const want[] = { "0,4", "1,5", "2", "3" };
	unsigned int		 i;

	memset(&conf, 0, sizeof(conf));
	conf.sys_root = dir;
	conf.proc_root = dir;

	ck_assert_int_eq(facts_read(&f, &conf, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "devices/system/cpu/online"));

	/* Siblings 0,4 and 1,5 (as on x86), CPU 6 offline, 2-3 no topology. */
	testlib_put(dir, "devices/system/cpu/online", "0-5\n");
	testlib_put(dir,
	    "devices/system/cpu/cpu0/topology/thread_siblings_list",
	    "0,4\n");
	testlib_put(dir,
	    "devices/system/cpu/cpu4/topology/thread_siblings_list",
	    "0,4\n");
	testlib_put(dir,
	    "devices/system/cpu/cpu1/topology/thread_siblings_list",
	    "1,5-6\n");
	ck_assert_int_eq(facts_read(&f, &conf, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.ncores, 4);
	for (i = 0; i < f.ncores; i++) {
		cpuset_format(&f.cores[i], buf, sizeof(buf));
		ck_assert_str_eq(buf, want[i]);
	}
	facts_free(&f);

	facts_governor(&conf, buf, sizeof(buf), &mask);
	ck_assert_str_eq(buf, "");
	testlib_put(dir, "devices/system/cpu/preferred", "0-3\n");
	xasprintf(&cmd, "%s/devices/system/cpu/preferred", dir);
	ck_assert_int_eq(chmod(cmd, 0444), 0);
	facts_governor(&conf, buf, sizeof(buf), &mask);
	ck_assert_str_eq(buf, "steal");
	ck_assert_uint_eq(cpuset_count(&mask), 4);
	ck_assert_int_eq(chmod(cmd, 0644), 0);
	facts_governor(&conf, buf, sizeof(buf), &mask);
	ck_assert_str_eq(buf, "");
	free(cmd);

	testlib_rmtree(dir);
}
END_TEST

START_TEST(test_report_from_proc)
{
	char			*dir = testlib_tmpdir(), err[256];
	struct guestd_conf	 conf;
	struct facts_cputime	 last;
	struct proto_report	 r;

	memset(&conf, 0, sizeof(conf));
	memset(&last, 0, sizeof(last));
	conf.sys_root = dir;
	conf.proc_root = dir;
	testlib_put(dir, "devices/system/cpu/online", "0-1\n");
	testlib_put(dir, "stat", "cpu  300 0 100 500 0 0 0 100 0 0\n");
	testlib_put(dir, "loadavg", "1.00 0.50 0.25 3/99 1\n");
	/* Without PSI (CONFIG_PSI off) pressure reads as 0. */
	ck_assert_int_eq(facts_report(&conf, &last, &r, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(r.steal_pct, 10.0, 1e-9);
	ck_assert_double_eq_tol(r.psi_some_avg10, 0.0, 1e-9);
	ck_assert_uint_eq(r.nr_running, 2);	/* 3 less the reader */
	ck_assert_uint_eq(cpuset_count(&r.online), 2);
	ck_assert_uint_eq(last.total, 1000);

	testlib_put(dir, "pressure/cpu",
	    "some avg10=7.25 avg60=0 avg300=0 total=1\n");
	testlib_put(dir, "stat", "cpu  400 0 100 500 0 0 0 100 0 0\n");
	ck_assert_int_eq(facts_report(&conf, &last, &r, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(r.steal_pct, 0.0, 1e-9);
	ck_assert_double_eq_tol(r.psi_some_avg10, 7.25, 1e-9);

	testlib_put(dir, "loadavg", "junk\n");
	ck_assert_int_eq(facts_report(&conf, &last, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "loadavg"));

	testlib_rmtree(dir);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("facts");
	TCase	*tc = tcase_create("facts");

	tcase_add_test(tc, test_parse_stat);
	tcase_add_test(tc, test_parse_psi_loadavg);
	tcase_add_test(tc, test_kernel_before);
	tcase_add_test(tc, test_cores_from_sysfs);
	tcase_add_test(tc, test_report_from_proc);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
