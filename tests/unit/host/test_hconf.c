/* Unit tests for host-agent/hconf: the daemon's option table and file. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hconf.h"
#include "testlib.h"
#include "util.h"

static int
load(const char *text, struct hconf *c, char *err, size_t errlen)
{
	char	*p = path_join(testlib_dir, "hostd.conf");
	int	 rc;

	testlib_put(testlib_dir, "hostd.conf", text);
	hconf_defaults(c);
	rc = hconf_load(c, p, err, errlen);
	free(p);
	return rc;
}

START_TEST(test_defaults)
{
	struct hconf		c;
	struct host_params	p;

	hconf_defaults(&c);
	ck_assert_str_eq(c.uri, "qemu:///system");
	ck_assert_uint_eq(c.period_ms, 1000);
	ck_assert(!c.observe);
	ck_assert_str_eq(c.proc_root, "/proc");
	ck_assert_str_eq(c.cgroup_root, "/sys/fs/cgroup");
	ck_assert_str_eq(c.run_root, "/run");
	ck_assert(c.qmp_fallback);
	hconf_params(&c, &p);
	ck_assert_uint_eq(p.history, c.history);
	ck_assert(p.policy.ewma_alpha == c.ewma_alpha);
	/* The table's [policy] defaults are the engine's own. */
	struct policy_config	pd;
	policy_config_default(&pd);
	ck_assert(p.policy.ewma_alpha == pd.ewma_alpha);
	ck_assert(p.policy.headroom == pd.headroom);
	ck_assert(p.policy.dead_band == pd.dead_band);
	ck_assert_uint_eq(p.policy.dwell_ms, pd.dwell_ms);
	ck_assert_uint_eq(p.policy.shrink_after, pd.shrink_after);
	ck_assert_uint_eq(p.policy.grow_after, pd.grow_after);
	ck_assert(p.policy.saturation == pd.saturation);
}
END_TEST

START_TEST(test_load_good)
{
	struct hconf	c;
	char		err[512];

	ck_assert_int_eq(load("# comment\n[hostd]\nuri = qemu+ssh://h/system\n"
	    "period-ms = 250\nobserve = yes\nlog-level = debug\n"
	    "proc-root = /tmp/p\n\n[policy]\nheadroom = 1.5\n"
	    "shrink-after = 7\ngrow-after = 2\n", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.uri, "qemu+ssh://h/system");
	ck_assert_uint_eq(c.period_ms, 250);
	ck_assert(c.observe);
	ck_assert_int_eq(hconf_log_level(&c), 7);
	ck_assert_str_eq(c.proc_root, "/tmp/p");
	ck_assert(c.headroom == 1.5);
	ck_assert_uint_eq(c.shrink_after, 7);
	ck_assert_uint_eq(c.grow_after, 2);
	/* Untouched options keep their defaults. */
	ck_assert_str_eq(c.sys_root, "/sys");
}
END_TEST

static const struct bad {
	const char	*text;
	const char	*err;	/* after "DIR/hostd.conf" */
} bads[] = {
	{ "[hostd]\nperiod-ms = 50\n", ":2: period-ms: 50 is below the minimum 100" },
	{ "[hostd]\n\nperiod-ms = fast\n", ":3: period-ms: 'fast' is not" },
	{ "[hostd]\nobserve = maybe\n", ":2: observe:" },
	{ "[hostd]\nlog-level = loud\n", ":2: log-level:" },
	{ "[hostd]\nperiodms = 100\n", ":2: unknown option 'periodms'" },
	{ "[daemon]\nuri = x\n", ":1: unknown section [daemon]" },
	{ "[policy]\newma-alpha = 2\n", ":2: ewma-alpha: 2 is above" },
	{ "[hostd]\nreconnect-min-ms = 5000\nreconnect-max-ms = 1000\n",
	    ": reconnect-min-ms 5000 is above reconnect-max-ms 1000" },
	{ "[hostd]\nuri = \n", ": uri: must not be empty" },
};

START_TEST(test_load_bad)
{
	struct hconf	 c;
	char		 err[512], *want;

	ck_assert_int_eq(load(bads[_i].text, &c, err, sizeof(err)), -1);
	xasprintf(&want, "%s/hostd.conf%s", testlib_dir, bads[_i].err);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
	    "got '%s', want '%s...'", err, want);
	free(want);
}
END_TEST

START_TEST(test_missing_file)
{
	struct hconf	c;
	char		err[512], *p = path_join(testlib_dir, "nope.conf");

	hconf_defaults(&c);
	ck_assert_int_eq(hconf_load(&c, p, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "nope.conf"));
	free(p);
}
END_TEST

START_TEST(test_set_and_dump_round_trip)
{
	struct hconf	c, d;
	char		err[512], *p = path_join(testlib_dir, "dump.conf");
	FILE		*fp;

	hconf_defaults(&c);
	ck_assert_int_eq(hconf_set(&c, "period-ms", "300", err, sizeof(err)), 0);
	ck_assert_int_eq(hconf_set(&c, "observe", "yes", err, sizeof(err)), 0);
	ck_assert_int_eq(hconf_set(&c, "uri", "test:///default", err,
	    sizeof(err)), 0);
	ck_assert_int_eq(hconf_set(&c, "period-ms", "0", err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "period-ms"));
	ck_assert_int_eq(hconf_set(&c, "bogus", "1", err, sizeof(err)), -1);

	fp = fopen(p, "w");
	ck_assert_ptr_nonnull(fp);
	hconf_dump(&c, fp);
	fclose(fp);
	hconf_defaults(&d);
	ck_assert_int_eq(hconf_load(&d, p, err, sizeof(err)), 0);
	ck_assert_uint_eq(d.period_ms, 300);
	ck_assert(d.observe);
	ck_assert_str_eq(d.uri, "test:///default");
	free(p);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("hconf");
	TCase	*tc = tcase_create("hconf");

	tcase_add_checked_fixture(tc, testlib_dir_setup,
	    testlib_dir_teardown);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_load_good);
	tcase_add_loop_test(tc, test_load_bad, 0,
	    (int)(sizeof(bads) / sizeof(bads[0])));
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_set_and_dump_round_trip);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
