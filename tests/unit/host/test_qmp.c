/*
 * The QMP reply decoder (qmp.c) on replies as QEMU 7.2 writes them and on
 * bad ones; the drop-in policy reader and the cgroup weight reader of the
 * QMP source (qmp_src.c) on temp trees.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmp.h"
#include "qmp_src.h"
#include "testlib.h"

static int
dec(const char *line, enum qmp_expect x, struct qmp_reply *r, char *err)
{
	return qmp_decode(line, strlen(line), x, r, err, 256);
}

START_TEST(greeting_event_error)
{
	struct qmp_reply r;
	char		 err[256];

	ck_assert_int_eq(dec("{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0,"
	    " \"minor\": 2, \"major\": 7}, \"package\": \"Debian\"}, "
	    "\"capabilities\": [\"oob\"]}}", QMPX_ANY, &r, err), 0);
	ck_assert_int_eq(r.kind, QMPK_GREETING);
	ck_assert_int_eq(dec("{\"timestamp\": {\"seconds\": 1, \"microseconds\""
	    ": 2}, \"event\": \"STOP\"}", QMPX_CPUS, &r, err), 0);
	ck_assert_int_eq(r.kind, QMPK_EVENT);
	ck_assert_str_eq(r.text, "STOP");
	ck_assert_int_eq(dec("{\"id\": 7, \"error\": {\"class\": "
	    "\"GenericError\", \"desc\": \"no such path\"}}", QMPX_STRING, &r,
	    err), 0);
	ck_assert_int_eq(r.kind, QMPK_ERROR);
	ck_assert(r.has_id && r.id == 7);
	ck_assert_str_eq(r.text, "no such path");
}
END_TEST

START_TEST(cpus_topology)
{
	struct qmp_reply r;
	char		 err[256];

	/* Out of order on purpose; QEMU 7.2's shape. */
	ck_assert_int_eq(dec("{\"return\": [{\"thread-id\": 4243, \"props\": "
	    "{\"core-id\": 0, \"thread-id\": 1, \"node-id\": 1, \"socket-id\": "
	    "0}, \"qom-path\": \"/machine/unattached/device[1]\", \"cpu-index\""
	    ": 1, \"target\": \"x86_64\"}, {\"thread-id\": 4242, \"props\": "
	    "{\"core-id\": 0, \"thread-id\": 0, \"node-id\": 0, \"socket-id\": "
	    "0}, \"qom-path\": \"/machine/unattached/device[0]\", \"cpu-index\""
	    ": 0, \"target\": \"x86_64\"}], \"id\": 3}", QMPX_CPUS, &r, err),
	    0);
	ck_assert_int_eq(r.kind, QMPK_RETURN);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.cpus[0].index, 0);
	ck_assert_int_eq(r.cpus[0].tid, 4242);
	ck_assert_int_eq(r.cpus[1].thread, 1);
	ck_assert_int_eq(r.cpus[1].node, 1);
	ck_assert_int_eq(r.cpus[0].die, -1);
	qmp_reply_free(&r);
}
END_TEST

START_TEST(chardev_and_qom)
{
	struct qmp_reply r;
	char		 err[256], path[108];

	ck_assert_int_eq(dec("{\"return\": [{\"frontend-open\": false, "
	    "\"filename\": \"unix:/run/vm/a.chan,server=on\", \"label\": "
	    "\"pc0\"}], \"id\": 5}", QMPX_CHARDEV, &r, err), 0);
	ck_assert_int_eq(r.n, 1);
	ck_assert_str_eq(r.items[0].name, "pc0");
	ck_assert_int_eq(qmp_unix_path(r.items[0].value, path, sizeof(path)),
	    0);
	ck_assert_str_eq(path, "/run/vm/a.chan");
	qmp_reply_free(&r);
	ck_assert_int_eq(qmp_unix_path("disconnected:unix:/run/b,server=on",
	    path, sizeof(path)), 0);
	ck_assert_str_eq(path, "/run/b");
	ck_assert_int_eq(qmp_unix_path("pty:/dev/pts/3", path, sizeof(path)),
	    -1);
	ck_assert_int_eq(qmp_unix_path("unix:relative", path, sizeof(path)),
	    -1);
	ck_assert_int_eq(dec("{\"return\": [{\"name\": \"device[1]\", "
	    "\"type\": \"child<virtserialport>\"}], \"id\": 6}",
	    QMPX_QOM_LIST, &r, err), 0);
	ck_assert_str_eq(r.items[0].value, "child<virtserialport>");
	qmp_reply_free(&r);
	ck_assert_int_eq(dec("{\"return\": \"org.prefcpu.0\", \"id\": 8}",
	    QMPX_STRING, &r, err), 0);
	ck_assert_str_eq(r.text, "org.prefcpu.0");
	ck_assert_int_eq(dec("{\"return\": {\"UUID\": "
	    "\"A1B2C3D4-0000-4000-8000-00000000000F\"}}", QMPX_UUID, &r, err),
	    0);
	ck_assert_str_eq(r.text, "a1b2c3d4-0000-4000-8000-00000000000f");
	ck_assert_int_eq(dec("{\"return\": {}}", QMPX_NAME, &r, err), 0);
	ck_assert_str_eq(r.text, "");
	ck_assert_int_eq(dec("{\"return\": {\"running\": false, \"status\": "
	    "\"paused\"}}", QMPX_STATUS, &r, err), 0);
	ck_assert(!r.running);
}
END_TEST

static const struct {
	const char	*line;
	enum qmp_expect	 expect;
	const char	*cause;
} bad[] = {
	{ "", QMPX_ANY, "empty" },
	{ "{\"return\": {}", QMPX_ANY, "truncated" },
	{ "[1, 2]", QMPX_ANY, "expected a JSON object" },
	{ "{\"return\": {}} x", QMPX_ANY, "offset 15" },
	{ "{'return': {}}", QMPX_ANY, "offset" },
	{ "{\"foo\": 1}", QMPX_ANY, "neither" },
	{ "{\"return\": {}, \"id\": \"x\"}", QMPX_ANY, "id" },
	{ "{\"return\": {\"name\": 5}}", QMPX_NAME, "not a string" },
	{ "{\"return\": {\"UUID\": \"nope\"}}", QMPX_UUID, "not a UUID" },
	{ "{\"return\": []}", QMPX_CPUS, "no vCPUs" },
	{ "{\"return\": [{\"cpu-index\": 0}]}", QMPX_CPUS, "thread-id" },
	{ "{\"return\": [{\"cpu-index\": 0, \"thread-id\": -4}]}", QMPX_CPUS,
	    "out of range" },
	{ "{\"return\": [{\"cpu-index\": 0, \"thread-id\": 4}, {\"cpu-index\":"
	    " 0, \"thread-id\": 5}]}", QMPX_CPUS, "twice" },
	{ "{\"return\": [{\"cpu-index\": 99999, \"thread-id\": 4}]}",
	    QMPX_CPUS, "out of range" },
	{ "{\"return\": {\"a\": 1}}", QMPX_CHARDEV, "not an array" },
	{ "{\"return\": [{\"label\": \"x\"}]}", QMPX_CHARDEV, "filename" },
	{ "{\"return\": 5}", QMPX_STRING, "not a string" },
	{ "{\"return\": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", QMPX_ANY,
	    "not JSON" },
	{ "{\"event\": 5}", QMPX_ANY, "event" },
	{ "{\"error\": {\"class\": \"X\"}}", QMPX_ANY, "description" },
};

START_TEST(malformed)
{
	struct qmp_reply r;
	char		 err[256];

	ck_assert_msg(dec(bad[_i].line, bad[_i].expect, &r, err) == -1,
	    "accepted: %s", bad[_i].line);
	ck_assert_msg(strstr(err, bad[_i].cause) != NULL, "%s: cause \"%s\"",
	    bad[_i].line, err);
	ck_assert(r.cpus == NULL && r.items == NULL);
}
END_TEST

START_TEST(nul_and_long_strings)
{
	struct qmp_reply r;
	char		 err[256], *line;
	size_t		 n;

	ck_assert_int_eq(qmp_decode("{\"return\": {}}\0x", 16, QMPX_ANY, &r,
	    err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "NUL"));
	n = QMP_STR + 100;
	line = malloc(n + 64);
	snprintf(line, n + 64, "{\"return\": {\"name\": \"%0*d\"}}", (int)n, 0);
	ck_assert_int_eq(dec(line, QMPX_NAME, &r, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "over"));
	free(line);
}
END_TEST

START_TEST(command_escapes)
{
	char	*s = qmp_command("qom-get", 9, "/a\"b", "name");

	ck_assert_str_eq(s, "{\"execute\":\"qom-get\",\"id\":9,\"arguments\":"
	    "{\"path\":\"/a\\\"b\",\"property\":\"name\"}}\n");
	free(s);
}
END_TEST

START_TEST(policy_dropin)
{
	struct vm_meta	m;
	const char	*ok = "# prefcpu policy\n[policy]\nweight = 300\n"
	    "min-cores = 1\nmode=auto  # trailing comment\n";

	qsrc_policy_parse(ok, strlen(ok), "/x/a.conf", 4, &m);
	ck_assert(m.present && m.valid);
	ck_assert(m.pol.has[PM_WEIGHT] && m.pol.val[PM_WEIGHT] == 300);
	qsrc_policy_parse("weight = 0\n", 11, "/x/a.conf", 4, &m);
	ck_assert(!m.valid);
	ck_assert_ptr_nonnull(strstr(m.error, "/x/a.conf:1: "));
	qsrc_policy_parse("\ncolour = red\n", 14, "/x/a.conf", 4, &m);
	ck_assert(!m.valid);
	ck_assert_ptr_nonnull(strstr(m.error, "/x/a.conf:2: unknown field"));
	/* The same cross-field check as the metadata: cpus beyond the VM. */
	qsrc_policy_parse("mode = fixed\ncpus = 0-7\n", 24, "/x/a.conf", 4,
	    &m);
	ck_assert(!m.valid);
	qsrc_policy_parse("mode = fixed\ncpus = 0-1\n", 24, "/x/a.conf", 4,
	    &m);
	ck_assert(m.valid);
	qsrc_policy_parse("weight 3\n", 9, "/x/a.conf", 4, &m);
	ck_assert_ptr_nonnull(strstr(m.error, ":1: expected field = value"));
}
END_TEST

START_TEST(weight_v2_v1)
{
	char	from[512], *proc, *cg;

	testlib_put(testlib_dir, "proc/10/cgroup", "0::/qemu.slice/100.scope\n");
	testlib_put(testlib_dir, "cg/qemu.slice/100.scope/cpu.weight", "200\n");
	testlib_put(testlib_dir, "proc/11/cgroup",
	    "4:cpu,cpuacct:/machine/vm1\n1:name=systemd:/x\n0::/\n");
	testlib_put(testlib_dir, "cg/cpu,cpuacct/machine/vm1/cpu.shares",
	    "512\n");
	testlib_put(testlib_dir, "proc/12/cgroup", "0::/../../etc\n");

	if (asprintf(&proc, "%s/proc", testlib_dir) < 0 ||
	    asprintf(&cg, "%s/cg", testlib_dir) < 0)
		ck_abort();
	ck_assert_uint_eq(qsrc_weight(proc, cg, 10, from, sizeof(from)), 2048);
	ck_assert_ptr_nonnull(strstr(from, "100.scope/cpu.weight"));
	ck_assert_uint_eq(qsrc_weight(proc, cg, 11, from, sizeof(from)), 512);
	ck_assert_uint_eq(qsrc_weight(proc, cg, 12, from, sizeof(from)), 0);
	ck_assert_uint_eq(qsrc_weight(proc, cg, 13, from, sizeof(from)), 0);
	free(proc);
	free(cg);
}
END_TEST

static Suite *
qmp_suite(void)
{
	Suite	*s = suite_create("qmp");
	TCase	*tc = tcase_create("decode");

	tcase_add_test(tc, greeting_event_error);
	tcase_add_test(tc, cpus_topology);
	tcase_add_test(tc, chardev_and_qom);
	tcase_add_loop_test(tc, malformed, 0, (int)(sizeof bad /
	    sizeof bad[0]));
	tcase_add_test(tc, nul_and_long_strings);
	tcase_add_test(tc, command_escapes);
	suite_add_tcase(s, tc);
	tc = tcase_create("source");
	tcase_add_checked_fixture(tc, testlib_dir_setup, testlib_dir_teardown);
	tcase_add_test(tc, policy_dropin);
	tcase_add_test(tc, weight_v2_v1);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(qmp_suite());
}
