/*
 * Unit tests of what the agent reads about the guest: /proc/stat steal,
 * PSI, loadavg, kernel release order, cores from a temp sysfs tree
 * (including CPUs without topology files), and the mean number of
 * runnable tasks from two /proc/schedstat snapshots.
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
	struct facts_last	 last;
	struct proto_report	 r;

	memset(&conf, 0, sizeof(conf));
	memset(&last, 0, sizeof(last));
	conf.sys_root = dir;
	conf.proc_root = dir;
	testlib_put(dir, "devices/system/cpu/online", "0-1\n");
	testlib_put(dir, "stat", "cpu  300 0 100 500 0 0 0 100 0 0\n");
	testlib_put(dir, "loadavg", "1.00 0.50 0.25 3/99 1\n");
	/* Without PSI (CONFIG_PSI off) pressure reads as 0. */
	ck_assert_int_eq(facts_report(&conf, &last, 1000000000, &r, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(r.steal_pct, 10.0, 1e-9);
	ck_assert_double_eq_tol(r.psi_some_avg10, 0.0, 1e-9);
	ck_assert_uint_eq(r.nr_running, 2);	/* 3 less the reader */
	ck_assert(!r.has_runnable);	/* no schedstat: a count, no mean */
	ck_assert(last.fallback);
	ck_assert_ptr_nonnull(strstr(last.why, "schedstat"));
	ck_assert_uint_eq(cpuset_count(&r.online), 2);
	ck_assert_uint_eq(last.cputime.total, 1000);

	testlib_put(dir, "pressure/cpu",
	    "some avg10=7.25 avg60=0 avg300=0 total=1\n");
	testlib_put(dir, "stat", "cpu  400 0 100 500 0 0 0 100 0 0\n");
	ck_assert_int_eq(facts_report(&conf, &last, 1000000000, &r, err, sizeof(err)), 0);
	ck_assert_double_eq_tol(r.steal_pct, 0.0, 1e-9);
	ck_assert_double_eq_tol(r.psi_some_avg10, 7.25, 1e-9);

	testlib_put(dir, "loadavg", "junk\n");
	ck_assert_int_eq(facts_report(&conf, &last, 1000000000, &r, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "loadavg"));

	testlib_rmtree(dir);
}
END_TEST

/* A schedstat file of version 15 with run and wait (ns) per CPU. */
static void
put_schedstat(const char *dir, unsigned int version, const uint64_t *run,
    const uint64_t *wait, unsigned int ncpu)
{
	char		text[4096];
	size_t		used;
	unsigned int	i;

	used = (size_t)snprintf(text, sizeof(text),
	    "version %u\ntimestamp 4295000000\n", version);
	for (i = 0; i < ncpu; i++) {
		used += (size_t)snprintf(text + used, sizeof(text) - used,
		    "cpu%u 0 0 1000 400 500 300 %llu %llu 77\n"
		    "domain0 00000003 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 "
		    "17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 "
		    "36\n", i, (unsigned long long)run[i],
		    (unsigned long long)wait[i]);
	}
	testlib_put(dir, "schedstat", text);
}

START_TEST(test_read_schedstat)
{
	char		*dir = testlib_tmpdir(), err[256], *text, *p;
	uint64_t	 run[2] = { 5000, 7000 }, wait[2] = { 100, 200 }, busy;
	size_t		 i;

	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "No such file"));

	put_schedstat(dir, 15, run, wait, 2);
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)), 0);
	ck_assert_uint_eq(busy, 5000 + 7000 + 100 + 200);
	/* Versions 16 and 17 keep the cpu lines. */
	put_schedstat(dir, 17, run, wait, 2);
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)), 0);
	ck_assert_uint_eq(busy, 12300);

	put_schedstat(dir, 14, run, wait, 2);
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "version 14, 15 or later needed"));

	testlib_put(dir, "schedstat", "version 15\ntimestamp 1\n");
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "no cpu lines"));

	testlib_put(dir, "schedstat", "cpu0 0 0 0 0 0 0 1 2 3\n");
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "no version line"));

	testlib_put(dir, "schedstat", "version 15\ncpu0 0 0 0 0 0 0 1\n");
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)),
	    -1);
	ck_assert_ptr_nonnull(strstr(err, "bad line for cpu 0"));

	/* A domain line far longer than the line buffer is skipped whole. */
	text = xmalloc(20000);
	p = text + sprintf(text, "version 15\ndomain0 ");
	for (i = 0; i < 3000; i++)
		p += sprintf(p, "%zu ", i);
	sprintf(p, "\ncpu0 0 0 0 0 0 0 40 2 1\n");
	testlib_put(dir, "schedstat", text);
	free(text);
	ck_assert_int_eq(facts_read_schedstat(dir, &busy, err, sizeof(err)), 0);
	ck_assert_uint_eq(busy, 42);

	testlib_rmtree(dir);
}
END_TEST

START_TEST(test_runnable_mean)
{
	struct facts_sched	a = { .valid = true, .busy_ns = 1000000000,
				    .self_ns = 0, .at_ns = 5000000000 };
	struct facts_sched	b = a;
	double			m;

	/* 3 s of run + wait over 1 s of wall time: 3 tasks on average. */
	b.busy_ns += 3000000000;
	b.at_ns += 1000000000;
	ck_assert_int_eq(facts_runnable_mean(&a, &b, &m), 0);
	ck_assert_double_eq_tol(m, 3.0, 1e-9);
	/* The agent's own 0.5 s is not a task that wants to run. */
	b.self_ns = 500000000;
	ck_assert_int_eq(facts_runnable_mean(&a, &b, &m), 0);
	ck_assert_double_eq_tol(m, 2.5, 1e-9);
	/* Never negative. */
	b.self_ns = 9000000000;
	ck_assert_int_eq(facts_runnable_mean(&a, &b, &m), 0);
	ck_assert_double_eq_tol(m, 0.0, 1e-9);
	/* No interval, no earlier sample, counters going back: no mean. */
	ck_assert_int_eq(facts_runnable_mean(&a, &a, &m), -1);
	a.valid = false;
	ck_assert_int_eq(facts_runnable_mean(&a, &b, &m), -1);
	a.valid = true;
	ck_assert_int_eq(facts_runnable_mean(&b, &a, &m), -1);
}
END_TEST

START_TEST(test_report_runnable_mean)
{
	char			*dir = testlib_tmpdir(), err[256];
	struct guestd_conf	 conf;
	struct facts_last	 last;
	struct proto_report	 r;
	char			 line[PROTO_MAX_LINE + 2];
	struct proto_msg	 msg, back;
	uint64_t		 run[2] = { 10000000000, 20000000000 };
	uint64_t		 wait[2] = { 1000000000, 0 };
	const uint64_t		 t0 = 7000000000;

	memset(&conf, 0, sizeof(conf));
	memset(&last, 0, sizeof(last));
	conf.sys_root = dir;
	conf.proc_root = dir;
	testlib_put(dir, "devices/system/cpu/online", "0-1\n");
	testlib_put(dir, "stat", "cpu  300 0 100 500 0 0 0 100 0 0\n");
	testlib_put(dir, "loadavg", "9.00 0.50 0.25 9/99 1\n");
	testlib_put(dir, "self/schedstat", "1000000 2000000 30\n");
	put_schedstat(dir, 15, run, wait, 2);

	/* The first snapshot (a hello): no mean yet. */
	facts_sched_begin(&conf, &last, t0);
	ck_assert(!last.fallback);
	ck_assert(last.sched.valid);

	/*
	 * Over 2 s: CPU 0 ran 2 s and its tasks waited 1.5 s, CPU 1 ran
	 * 1.9 s; the agent itself ran 0.1 s and waited 0.2 s of that.
	 * (2 + 1.5 + 1.9 - 0.3) / 2 = 2.55 tasks on average, whatever the
	 * instant's 8 of loadavg says.
	 */
	run[0] += 2000000000;
	wait[0] += 1500000000;
	run[1] += 1900000000;
	testlib_put(dir, "self/schedstat", "101000000 202000000 31\n");
	put_schedstat(dir, 15, run, wait, 2);
	ck_assert_int_eq(facts_report(&conf, &last, t0 + 2000000000, &r, err,
	    sizeof(err)), 0);
	ck_assert(r.has_runnable);
	ck_assert_double_eq_tol(r.runnable, 2.55, 1e-9);
	ck_assert_uint_eq(r.nr_running, 3);	/* rounded for old hosts */

	/* On the wire as an optional number next to the integer. */
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_REPORT;
	msg.report = r;
	ck_assert_int_gt(proto_encode(&msg, line, sizeof(line)), 0);
	ck_assert_ptr_nonnull(strstr(line, "\"nr_running\":3"));
	ck_assert_ptr_nonnull(strstr(line, "\"runnable\":2.55"));
	ck_assert_int_eq(proto_decode(line, strlen(line) - 1, PROTO_FROM_GUEST,
	    &back, NULL, err, sizeof(err)), 0);
	ck_assert(back.report.has_runnable);
	ck_assert_double_eq_tol(back.report.runnable, 2.55, 1e-9);

	/* An idle interval of 1 s: the next mean is 0, from this report. */
	ck_assert_int_eq(facts_report(&conf, &last, t0 + 3000000000, &r, err,
	    sizeof(err)), 0);
	ck_assert(r.has_runnable);
	ck_assert_double_eq_tol(r.runnable, 0.0, 1e-9);
	ck_assert_uint_eq(r.nr_running, 0);

	/* schedstat gone: the instant's count, no mean, and why. */
	testlib_del(dir, "schedstat");
	ck_assert_int_eq(facts_report(&conf, &last, t0 + 4000000000, &r, err,
	    sizeof(err)), 0);
	ck_assert(!r.has_runnable);
	ck_assert_uint_eq(r.nr_running, 8);
	ck_assert(last.fallback);
	ck_assert_ptr_nonnull(strstr(last.why, "schedstat: No such file"));

	/* Back: the first report after it has no earlier sample. */
	put_schedstat(dir, 15, run, wait, 2);
	ck_assert_int_eq(facts_report(&conf, &last, t0 + 5000000000, &r, err,
	    sizeof(err)), 0);
	ck_assert(!r.has_runnable);
	ck_assert(!last.fallback);
	run[1] += 500000000;
	put_schedstat(dir, 15, run, wait, 2);
	ck_assert_int_eq(facts_report(&conf, &last, t0 + 6000000000, &r, err,
	    sizeof(err)), 0);
	ck_assert(r.has_runnable);
	ck_assert_double_eq_tol(r.runnable, 0.5, 1e-9);
	ck_assert_uint_eq(r.nr_running, 1);

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
	tcase_add_test(tc, test_read_schedstat);
	tcase_add_test(tc, test_runnable_mean);
	tcase_add_test(tc, test_report_runnable_mean);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
