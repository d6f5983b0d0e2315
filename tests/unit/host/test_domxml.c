/* Unit tests for host-agent/domxml: live XML, policy metadata, status XML. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"
#include "testlib.h"

#define UUID	"4dea22b3-1d52-d8f3-2516-782e98ab3fa0"

/* A live XML as libvirt 9.0 prints it, trimmed to what we read. */
static const char live_xml[] =
"<domain type='qemu' id='7'>\n"
"  <name>prefcpu-test-a</name>\n"
"  <uuid>" UUID "</uuid>\n"
"  <metadata>\n"
"    <prefcpu:policy xmlns:prefcpu='http://prefcpu.org/xmlns/policy/1'"
"      weight='200' min-cores='1' max-cores='2'/>\n"
"  </metadata>\n"
"  <vcpu placement='static' current='3'>4</vcpu>\n"
"  <vcpus>\n"
"    <vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>\n"
"    <vcpu id='1' enabled='yes' hotpluggable='yes' order='2'/>\n"
"    <vcpu id='2' enabled='yes' hotpluggable='yes' order='3'/>\n"
"    <vcpu id='3' enabled='no' hotpluggable='yes'/>\n"
"  </vcpus>\n"
"  <cputune>\n"
"    <shares>2048</shares>\n"
"    <vcpupin vcpu='0' cpuset='0'/>\n"
"    <vcpupin vcpu='1' cpuset='1'/>\n"
"    <emulatorpin cpuset='0-1'/>\n"
"  </cputune>\n"
"  <cpu mode='custom'>\n"
"    <topology sockets='1' dies='1' cores='2' threads='2'/>\n"
"    <numa>\n"
"      <cell id='0' cpus='0-1' memory='262144' unit='KiB'/>\n"
"      <cell id='1' cpus='2-3' memory='262144' unit='KiB'/>\n"
"    </numa>\n"
"  </cpu>\n"
"  <devices>\n"
"    <channel type='unix'>\n"
"      <source mode='bind' path='/var/lib/libvirt/qemu/channel/target/domain-7-prefcpu-test-a/org.qemu.guest_agent.0'/>\n"
"      <target type='virtio' name='org.qemu.guest_agent.0'/>\n"
"    </channel>\n"
"    <channel type='unix'>\n"
"      <source mode='bind' path='/var/lib/libvirt/qemu/channel/target/domain-7-prefcpu-test-a/org.prefcpu.0'/>\n"
"      <target type='virtio' name='org.prefcpu.0' state='disconnected'/>\n"
"    </channel>\n"
"  </devices>\n"
"</domain>\n";

static const char minimal_xml[] =
"<domain type='qemu'><name>m</name><uuid>" UUID "</uuid>"
"<vcpu>3</vcpu></domain>";

static char *
xml_with(const char *from, const char *to)
{
	const char	*p = strstr(live_xml, from);
	char		*out;

	ck_assert_ptr_nonnull(p);
	out = malloc(sizeof(live_xml) + strlen(to));
	ck_assert_ptr_nonnull(out);
	memcpy(out, live_xml, (size_t)(p - live_xml));
	strcpy(out + (p - live_xml), to);
	strcat(out, p + strlen(from));
	return out;
}

static int
parse(const char *xml, struct vm_info *info, char *err)
{
	return domxml_parse(xml, strlen(xml), info, err, 256);
}

START_TEST(test_live_full)
{
	struct vm_info	info;
	char		err[256];

	ck_assert_int_eq(parse(live_xml, &info, err), 0);
	ck_assert_str_eq(info.uuid, UUID);
	ck_assert_str_eq(info.name, "prefcpu-test-a");
	ck_assert_int_eq(info.id, 7);
	ck_assert_uint_eq(info.nvcpus, 4);
	ck_assert_uint_eq(cpuset_count(&info.online), 3);
	ck_assert(cpuset_isset(&info.online, 2));
	ck_assert(!cpuset_isset(&info.online, 3));
	/* cores=2 threads=2: {0,1} and {2,3} */
	ck_assert_uint_eq(info.ncores, 2);
	ck_assert_uint_eq(info.threads, 2);
	ck_assert(cpuset_isset(&info.core[0], 0) && cpuset_isset(&info.core[0], 1));
	ck_assert(cpuset_isset(&info.core[1], 2) && cpuset_isset(&info.core[1], 3));
	ck_assert_uint_eq(cpuset_count(&info.core[1]), 2);
	ck_assert_uint_eq(info.nnodes, 2);
	ck_assert_ptr_nonnull(info.core_node);
	ck_assert_uint_eq(info.core_node[0], 0);
	ck_assert_uint_eq(info.core_node[1], 1);
	ck_assert_uint_eq(info.shares, 2048);
	ck_assert_ptr_nonnull(info.vcpupin);
	ck_assert(cpuset_isset(&info.vcpupin[1], 1));
	ck_assert_uint_eq(cpuset_count(&info.vcpupin[1]), 1);
	ck_assert(cpuset_empty(&info.vcpupin[2]));
	ck_assert_uint_eq(cpuset_count(&info.emulatorpin), 2);
	ck_assert_ptr_nonnull(info.channel);
	ck_assert_str_eq(info.channel, "/var/lib/libvirt/qemu/channel/target/"
	    "domain-7-prefcpu-test-a/org.prefcpu.0");
	vm_info_clear(&info);
}
END_TEST

START_TEST(test_live_minimal)
{
	struct vm_info	info;
	char		err[256];

	ck_assert_int_eq(parse(minimal_xml, &info, err), 0);
	ck_assert_int_eq(info.id, -1);
	ck_assert_uint_eq(info.nvcpus, 3);
	ck_assert_uint_eq(cpuset_count(&info.online), 3);
	/* No topology: every vCPU is a core. */
	ck_assert_uint_eq(info.ncores, 3);
	ck_assert_uint_eq(cpuset_count(&info.core[2]), 1);
	ck_assert(cpuset_isset(&info.core[2], 2));
	ck_assert_ptr_null(info.core_node);
	ck_assert_ptr_null(info.vcpupin);
	ck_assert_ptr_null(info.channel);
	ck_assert_uint_eq(info.shares, 0);
	vm_info_clear(&info);
}
END_TEST

START_TEST(test_live_vcpu_cpuset)
{
	struct vm_info	info;
	char		err[256], *xml;

	/* <vcpu cpuset> pins all; vcpupin overrides vCPU 0 and 1. */
	xml = xml_with("<vcpu placement='static' current='3'>4</vcpu>",
	    "<vcpu placement='static' cpuset='1-3' current='3'>4</vcpu>");
	ck_assert_int_eq(parse(xml, &info, err), 0);
	ck_assert_uint_eq(cpuset_count(&info.vcpupin[2]), 3);
	ck_assert_uint_eq(cpuset_count(&info.vcpupin[0]), 1);
	vm_info_clear(&info);
	free(xml);
}
END_TEST

static const struct bad_case {
	const char	*from, *to, *needle;
} bad_cases[] = {
	{ "<uuid>" UUID "</uuid>", "<uuid>nope</uuid>", "uuid" },
	{ "<name>prefcpu-test-a</name>", "", "name" },
	{ "<vcpu placement='static' current='3'>4</vcpu>",
	    "<vcpu placement='static'>0</vcpu>", "vcpu" },
	{ "<vcpu placement='static' current='3'>4</vcpu>",
	    "<vcpu placement='static'>99999</vcpu>", "vcpu" },
	{ "<vcpu id='3' enabled='no' hotpluggable='yes'/>",
	    "<vcpu id='4' enabled='yes'/>", "@id" },
	{ "threads='2'", "threads='3'", "topology" },
	{ "dies='1' cores='2'", "dies='1' cores='x'", "cores" },
	{ "<vcpupin vcpu='1' cpuset='1'/>", "<vcpupin vcpu='7' cpuset='1'/>",
	    "vcpu" },
	{ "<vcpupin vcpu='1' cpuset='1'/>", "<vcpupin vcpu='1' cpuset='1-'/>",
	    "cpuset" },
	{ "cpus='2-3'", "cpus='2-5'", "NUMA" },
	{ "<shares>2048</shares>", "<shares>-1</shares>", "shares" },
	{ "</domain>", "", "parse" },
};

START_TEST(test_live_bad)
{
	const struct bad_case	*c = &bad_cases[_i];
	struct vm_info		 info;
	char			 err[256], *xml;

	xml = xml_with(c->from, c->to);
	err[0] = '\0';
	ck_assert_int_eq(parse(xml, &info, err), -1);
	ck_assert_msg(strstr(err, c->needle) != NULL, "case %d: '%s' lacks '%s'",
	    _i, err, c->needle);
	/* Nothing left to free. */
	ck_assert_ptr_null(info.name);
	ck_assert_ptr_null(info.core);
	free(xml);
}
END_TEST

START_TEST(test_current_too_big)
{
	struct vm_info	info;
	char		err[256];

	ck_assert_int_eq(parse("<domain><name>m</name><uuid>" UUID "</uuid>"
	    "<vcpu current='9'>3</vcpu></domain>", &info, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "current"));
	ck_assert_int_eq(parse("<domain><name>m</name><uuid>" UUID "</uuid>"
	    "<vcpu current='2'>3</vcpu></domain>", &info, err), 0);
	ck_assert_uint_eq(cpuset_count(&info.online), 2);
	vm_info_clear(&info);
}
END_TEST

START_TEST(test_not_domain)
{
	struct vm_info	info;
	char		err[256];

	ck_assert_int_eq(parse("<network/>", &info, err), -1);
	ck_assert_ptr_nonnull(strstr(err, "domain"));
	ck_assert_int_eq(parse("", &info, err), -1);
}
END_TEST

static int
policy(const char *xml, unsigned int nvcpus, struct vm_meta *m)
{
	char	err[256];

	return domxml_policy(xml, strlen(xml), nvcpus, m, err, sizeof(err));
}

START_TEST(test_policy_in_domain)
{
	struct vm_meta	m;

	ck_assert_int_eq(policy(live_xml, 4, &m), 0);
	ck_assert(m.present);
	ck_assert(m.valid);
	ck_assert_int_eq(polmeta_mode(&m.pol), POLICY_MODE_AUTO);
	ck_assert_uint_eq(polmeta_weight(&m.pol, 0), 200);
	ck_assert_uint_eq(polmeta_min_cores(&m.pol), 1);
	ck_assert_uint_eq(polmeta_max_cores(&m.pol), 2);
	ck_assert_str_eq(m.error, "");
}
END_TEST

START_TEST(test_policy_absent)
{
	struct vm_meta	m;

	ck_assert_int_eq(policy(minimal_xml, 3, &m), 0);
	ck_assert(!m.present);
	ck_assert(m.valid);
	ck_assert(!m.pol.has[PM_WEIGHT]);
	ck_assert_int_eq(polmeta_mode(&m.pol), POLICY_MODE_AUTO);
}
END_TEST

/* Another namespace's <policy> is not ours. */
START_TEST(test_policy_other_ns)
{
	struct vm_meta	m;
	const char	*xml = "<domain><name>x</name><metadata><o:policy "
	    "xmlns:o='http://example.org/other' weight='0'/></metadata>"
	    "</domain>";

	ck_assert_int_eq(policy(xml, 2, &m), 0);
	ck_assert(!m.present);
	ck_assert(m.valid);
}
END_TEST

/* The bare element, as virDomainGetMetadata returns it. */
START_TEST(test_policy_bare_fixed)
{
	struct vm_meta	m;
	const char	*xml = "<policy xmlns='http://prefcpu.org/xmlns/policy/1'"
	    " mode='fixed' cpus='0-1'/>";

	ck_assert_int_eq(policy(xml, 4, &m), 0);
	ck_assert(m.present && m.valid);
	ck_assert_int_eq(polmeta_mode(&m.pol), POLICY_MODE_FIXED);
	ck_assert_uint_eq(cpuset_count(&m.pol.cpus), 2);
}
END_TEST

static const struct meta_case {
	const char	*attrs;
	const char	*error;		/* prefix of meta.error */
} meta_bad[] = {
	{ "mode='sometimes'", "mode: 'sometimes'" },
	{ "weight='0'", "weight: '0' is not a number in 1..10000" },
	{ "weight='10001'", "weight:" },
	{ "weight='12abc'", "weight:" },
	{ "weight='-5'", "weight:" },
	{ "min-cores='x'", "min-cores:" },
	{ "max-cores='5000'", "max-cores:" },
	{ "min-cores='3' max-cores='2'", "min-cores: 3 is above max-cores 2" },
	{ "mode='fixed'", "cpus: required with mode fixed" },
	{ "cpus='0-1'", "cpus: only with mode fixed" },
	{ "mode='auto' cpus='0'", "cpus: only with mode fixed" },
	{ "enforce='always'", "enforce: 'always' is not none or cap" },
	{ "mode='fixed' cpus='0-9'", "cpus: must name vCPUs in 0-3" },
	{ "mode='fixed' cpus='3-1'", "cpus:" },
	{ "mode='fixed' cpus=''", "cpus: must name vCPUs in 0-3" },
};

START_TEST(test_policy_bad)
{
	const struct meta_case	*c = &meta_bad[_i];
	struct vm_meta		 m;
	char			 xml[512];
	int			 f;

	snprintf(xml, sizeof(xml), "<domain><metadata><p:policy xmlns:p="
	    "'http://prefcpu.org/xmlns/policy/1' %s/></metadata></domain>",
	    c->attrs);
	ck_assert_int_eq(policy(xml, 4, &m), 0);
	ck_assert(m.present);
	ck_assert(!m.valid);
	ck_assert_msg(strncmp(m.error, c->error, strlen(c->error)) == 0,
	    "case %d: '%s' does not start with '%s'", _i, m.error, c->error);
	/* Defaults in force. */
	for (f = 0; f < PM_NFIELDS; f++)
		ck_assert(!m.pol.has[f]);
}
END_TEST

START_TEST(test_policy_two)
{
	struct vm_meta	m;
	const char	*xml = "<domain><metadata>"
	    "<p:policy xmlns:p='http://prefcpu.org/xmlns/policy/1' weight='2'/>"
	    "<q:policy xmlns:q='http://prefcpu.org/xmlns/policy/1' weight='3'/>"
	    "</metadata></domain>";

	ck_assert_int_eq(policy(xml, 4, &m), 0);
	ck_assert(!m.valid);
	ck_assert_ptr_nonnull(strstr(m.error, "2 <policy> elements"));
}
END_TEST

START_TEST(test_policy_unparsable)
{
	struct vm_meta	m;

	ck_assert_int_eq(policy("<domain>", 4, &m), -1);
	ck_assert(!m.present);
	ck_assert(m.valid);
}
END_TEST

/* As libvirt 9.0 writes /run/libvirt/qemu/NAME.xml, trimmed. */
static const char status_xml[] =
"<!--\nWARNING: THIS IS AN AUTO-GENERATED FILE.\n-->\n"
"<domstatus state='running' reason='booted' pid='4242'>\n"
"  <monitor path='/var/lib/libvirt/qemu/domain-7-x/monitor.sock' type='unix'/>\n"
"  <vcpus>\n"
"    <vcpu id='0' pid='4250'/>\n"
"    <vcpu id='1' pid='4251'/>\n"
"    <vcpu id='3' pid='4253'/>\n"
"    <vcpu id='9' pid='4259'/>\n"
"  </vcpus>\n"
"  <domain type='qemu' id='7'><name>x</name></domain>\n"
"</domstatus>\n";

START_TEST(test_status)
{
	pid_t	pid, tids[4];
	char	err[256];

	ck_assert_int_eq(domxml_status(status_xml, strlen(status_xml), &pid,
	    tids, 4, err, sizeof(err)), 3);
	ck_assert_int_eq(pid, 4242);
	ck_assert_int_eq(tids[0], 4250);
	ck_assert_int_eq(tids[1], 4251);
	ck_assert_int_eq(tids[2], 0);
	ck_assert_int_eq(tids[3], 4253);
}
END_TEST

START_TEST(test_status_bad)
{
	pid_t	pid, tids[2];
	char	err[256];
	const char *nopid = "<domstatus state='running'><vcpus/></domstatus>";
	const char *badvcpu = "<domstatus pid='5'><vcpus><vcpu id='0' "
	    "pid='-1'/></vcpus></domstatus>";

	ck_assert_int_eq(domxml_status(nopid, strlen(nopid), &pid, tids, 2,
	    err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "pid"));
	ck_assert_int_eq(domxml_status(badvcpu, strlen(badvcpu), &pid, tids,
	    2, err, sizeof(err)), -1);
	ck_assert_int_eq(domxml_status("<x", 2, &pid, tids, 2, err,
	    sizeof(err)), -1);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("domxml");
	TCase	*tc = tcase_create("domxml");

	tcase_add_test(tc, test_live_full);
	tcase_add_test(tc, test_live_minimal);
	tcase_add_test(tc, test_live_vcpu_cpuset);
	tcase_add_loop_test(tc, test_live_bad, 0, (int)(sizeof(bad_cases) /
	    sizeof(bad_cases[0])));
	tcase_add_test(tc, test_current_too_big);
	tcase_add_test(tc, test_not_domain);
	tcase_add_test(tc, test_policy_in_domain);
	tcase_add_test(tc, test_policy_absent);
	tcase_add_test(tc, test_policy_other_ns);
	tcase_add_test(tc, test_policy_bare_fixed);
	tcase_add_loop_test(tc, test_policy_bad, 0, (int)(sizeof(meta_bad) /
	    sizeof(meta_bad[0])));
	tcase_add_test(tc, test_policy_two);
	tcase_add_test(tc, test_policy_unparsable);
	tcase_add_test(tc, test_status);
	tcase_add_test(tc, test_status_bad);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
