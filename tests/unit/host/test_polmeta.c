/*
 * Unit tests for host-agent/polmeta: every field of the table through its
 * text and JSON forms, the one validator, the effective values, and the
 * same verdict for the same policy whether it comes as libvirt metadata
 * (domxml_policy) or as the API's JSON body (polmeta_from_json).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"
#include "polmeta.h"
#include "testlib.h"

static int
decode(const char *text, struct polmeta *p, char *err)
{
	return polmeta_from_json(text, strlen(text), p, err, 256);
}

/* Every field, at its bounds and beyond, through the text setter. */
START_TEST(fields_text)
{
	const struct polmeta_field_def *d = &polmeta_fields[_i];
	struct polmeta	p;
	char		err[256], buf[32], *v;
	unsigned int	i;

	polmeta_init(&p);
	ck_assert_int_eq(polmeta_field_find(d->attr, PMN_ATTR), _i);
	ck_assert_int_eq(polmeta_field_find(d->json, PMN_JSON), _i);
	/* Garbage is refused, naming the field, and sets nothing. */
	ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i, "x<y>",
	    PMN_ATTR, err, sizeof err), -1);
	ck_assert_msg(strncmp(err, d->attr, strlen(d->attr)) == 0, "%s", err);
	ck_assert(!p.has[_i]);
	switch (d->type) {
	case PMT_KEYWORD:
		for (i = 0; d->words[i] != NULL; i++) {
			ck_assert_int_eq(polmeta_set_text(&p,
			    (enum polmeta_field)_i, d->words[i], PMN_ATTR, err,
			    sizeof err), 0);
			ck_assert_uint_eq(p.val[_i], i);
			v = polmeta_value(&p, (enum polmeta_field)_i);
			ck_assert_str_eq(v, d->words[i]);
			free(v);
		}
		ck_assert_uint_ge(i, 2);
		break;
	case PMT_UINT:
		snprintf(buf, sizeof buf, "%u", d->min);
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    buf, PMN_ATTR, err, sizeof err), 0);
		ck_assert_uint_eq(p.val[_i], d->min);
		snprintf(buf, sizeof buf, "%u", d->max);
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    buf, PMN_JSON, err, sizeof err), 0);
		ck_assert_uint_eq(p.val[_i], d->max);
		snprintf(buf, sizeof buf, "%u", d->max + 1);
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    buf, PMN_JSON, err, sizeof err), -1);
		ck_assert_msg(strstr(err, d->json) == err, "%s", err);
		ck_assert_int_eq(polmeta_set_int(&p, (enum polmeta_field)_i,
		    (int64_t)d->min - 1, PMN_JSON, err, sizeof err), -1);
		ck_assert_ptr_nonnull(strstr(err, "out of range"));
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    "-1", PMN_ATTR, err, sizeof err), -1);
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    "12abc", PMN_ATTR, err, sizeof err), -1);
		ck_assert_uint_eq(p.val[_i], d->max);
		break;
	case PMT_CPUS:
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    "0-2,5", PMN_ATTR, err, sizeof err), 0);
		ck_assert_uint_eq(cpuset_count(&p.cpus), 4);
		v = polmeta_value(&p, (enum polmeta_field)_i);
		ck_assert_str_eq(v, "0-2,5");
		free(v);
		ck_assert_int_eq(polmeta_set_text(&p, (enum polmeta_field)_i,
		    "3-1", PMN_ATTR, err, sizeof err), -1);
		break;
	}
}
END_TEST

/* An error quotes the value escaped: no raw control bytes. */
START_TEST(text_escaped)
{
	struct polmeta	p;
	char		err[256];

	polmeta_init(&p);
	ck_assert_int_eq(polmeta_set_text(&p, PM_MODE, "a\nb\x1b[31m",
	    PMN_ATTR, err, sizeof err), -1);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_ptr_null(strchr(err, '\x1b'));
	ck_assert_ptr_nonnull(strstr(err, "auto, off or fixed"));
}
END_TEST

START_TEST(json_full)
{
	struct polmeta	p;
	char		err[256], *s;

	ck_assert_int_eq(decode("{\"mode\":\"fixed\",\"weight\":200,"
	    "\"min_cores\":1,\"max_cores\":4,\"cpus\":\"0-3\","
	    "\"enforce\":\"cap\"}", &p, err), 0);
	ck_assert_int_eq(polmeta_mode(&p), POLICY_MODE_FIXED);
	ck_assert_uint_eq(polmeta_weight(&p, 50), 200);
	ck_assert_uint_eq(polmeta_min_cores(&p), 1);
	ck_assert_uint_eq(polmeta_max_cores(&p), 4);
	ck_assert_uint_eq(cpuset_count(&p.cpus), 4);
	ck_assert_int_eq(polmeta_enforce(&p, POLMETA_ENFORCE_NONE),
	    POLMETA_ENFORCE_CAP);
	s = polmeta_xml(&p);
	ck_assert_str_eq(s, "<policy mode=\"fixed\" weight=\"200\" "
	    "min-cores=\"1\" max-cores=\"4\" cpus=\"0-3\" enforce=\"cap\"/>");
	free(s);
	s = polmeta_to_json(&p);
	ck_assert_str_eq(s, "{\"mode\":\"fixed\",\"weight\":200,"
	    "\"min_cores\":1,\"max_cores\":4,\"cpus\":\"0-3\","
	    "\"enforce\":\"cap\"}");
	free(s);
}
END_TEST

START_TEST(json_partial_and_null)
{
	struct polmeta	p;
	char		err[256], *s;

	ck_assert_int_eq(decode("{\"weight\":7,\"min_cores\":null}", &p, err),
	    0);
	ck_assert(p.has[PM_WEIGHT] && !p.has[PM_MODE] &&
	    !p.has[PM_MIN_CORES]);
	s = polmeta_xml(&p);
	ck_assert_str_eq(s, "<policy weight=\"7\"/>");
	free(s);
	ck_assert_int_eq(decode("{}", &p, err), 0);
	s = polmeta_xml(&p);
	ck_assert_str_eq(s, "<policy/>");
	free(s);
}
END_TEST

/* Each bad body, and a word its cause must contain. */
static const struct {
	const char	*body;
	const char	*cause;
} bad_bodies[] = {
	{ "", "body: not JSON: truncated" },
	{ "[1]", "body: expected a JSON object, got array" },
	{ "\"x\"", "body: expected a JSON object, got string" },
	{ "{\"weight\":1}{}", "body: not JSON" },
	{ "{\"weight\":1} x", "body: not JSON" },
	{ "{'weight':1}", "single-quoted" },
	{ "{\"mode\":'off'}", "single-quoted" },
	{ "{\"mode\":\"o\tff\"}", "control character" },
	{ "{\"weight\":0}", "out of range" },
	{ "{\"weight\":10001}", "out of range" },
	{ "{\"weight\":-1}", "out of range" },
	{ "{\"weight\":1.5}", "not an integer" },
	{ "{\"weight\":\"5\"}", "not an integer" },
	{ "{\"weight\":NaN}", "" },
	{ "{\"min_cores\":4097}", "out of range" },
	{ "{\"mode\":\"sideways\"}", "auto, off or fixed" },
	{ "{\"mode\":1}", "auto, off or fixed" },
	{ "{\"enforce\":\"always\"}", "none or cap" },
	{ "{\"enforce\":true}", "none or cap" },
	{ "{\"mode\":{\"a\":{\"b\":1}}}", "" },
	{ "{\"cpus\":\"0-3\"}", "only with mode fixed" },
	{ "{\"mode\":\"off\",\"cpus\":\"0-3\"}", "only with mode fixed" },
	{ "{\"mode\":\"fixed\"}", "required with mode fixed" },
	{ "{\"mode\":\"fixed\",\"cpus\":\"\"}", "must name vCPUs" },
	{ "{\"mode\":\"fixed\",\"cpus\":\"3-1\"}", "cpus" },
	{ "{\"mode\":\"fixed\",\"cpus\":\"99999\"}", "cpus" },
	{ "{\"mode\":\"fixed\",\"cpus\":\"0\\u0000\"}", "NUL" },
	{ "{\"min_cores\":4,\"max_cores\":2}", "above max_cores" },
	{ "{\"colour\":\"red\"}", "unknown member" },
	{ "{\"weight\":1,\"colour\":\"red\"}", "known: mode, weight, "
	    "min_cores, max_cores, cpus, enforce" },
};

START_TEST(json_bad)
{
	struct polmeta	p;
	char		err[256];

	err[0] = '\0';
	ck_assert_msg(decode(bad_bodies[_i].body, &p, err) == -1,
	    "accepted %s", bad_bodies[_i].body);
	ck_assert_msg(strstr(err, bad_bodies[_i].cause) != NULL,
	    "%s: cause \"%s\" lacks \"%s\"", bad_bodies[_i].body, err,
	    bad_bodies[_i].cause);
}
END_TEST

START_TEST(json_embedded_nul)
{
	struct polmeta	p;
	char		err[256];
	const char	body[] = "{\"weight\":1}\0{}";

	ck_assert_int_eq(polmeta_from_json(body, sizeof body - 1, &p, err,
	    sizeof err), -1);
}
END_TEST

/*
 * One policy, two doors: as metadata attributes and as the API's body.
 * Both must accept or both refuse (the metadata door also knows the VM's
 * 4 vCPUs, so a cpulist beyond them is refused there only).
 */
static const struct {
	const char	*attrs;		/* name='value' ... */
	const char	*json;		/* the same as JSON members */
	bool		 ok;
} doors[] = {
	{ "", "", true },
	{ "mode='auto' weight='300'", "\"mode\":\"auto\",\"weight\":300", true },
	{ "mode='fixed' cpus='0-1'", "\"mode\":\"fixed\",\"cpus\":\"0-1\"",
	    true },
	{ "mode='off' enforce='cap'", "\"mode\":\"off\",\"enforce\":\"cap\"",
	    true },
	{ "min-cores='2' max-cores='0'", "\"min_cores\":2,\"max_cores\":0",
	    true },
	/* The disagreement of issue 15: cpus without mode fixed. */
	{ "cpus='0-1'", "\"cpus\":\"0-1\"", false },
	{ "mode='auto' cpus='0-1'", "\"mode\":\"auto\",\"cpus\":\"0-1\"",
	    false },
	{ "mode='off' cpus='0'", "\"mode\":\"off\",\"cpus\":\"0\"", false },
	{ "mode='fixed'", "\"mode\":\"fixed\"", false },
	{ "min-cores='3' max-cores='2'", "\"min_cores\":3,\"max_cores\":2",
	    false },
	{ "weight='0'", "\"weight\":0", false },
	{ "weight='10001'", "\"weight\":10001", false },
	{ "max-cores='4097'", "\"max_cores\":4097", false },
	{ "enforce='yes'", "\"enforce\":\"yes\"", false },
};

START_TEST(same_verdict)
{
	struct vm_meta	m;
	struct polmeta	p;
	char		xml[512], json[256], err[256];

	snprintf(xml, sizeof xml, "<policy xmlns='" POLMETA_NS "' %s/>",
	    doors[_i].attrs);
	snprintf(json, sizeof json, "{%s}", doors[_i].json);
	ck_assert_int_eq(domxml_policy(xml, strlen(xml), 4, &m, err,
	    sizeof err), 0);
	ck_assert(m.present);
	ck_assert_msg(m.valid == doors[_i].ok, "metadata %s: %s",
	    doors[_i].attrs, m.error);
	ck_assert_msg((decode(json, &p, err) == 0) == doors[_i].ok,
	    "API %s: %s", json, err);
	if (doors[_i].ok) {
		/* And they read the same policy. */
		ck_assert_mem_eq(m.pol.has, p.has, sizeof p.has);
		ck_assert_mem_eq(m.pol.val, p.val, sizeof p.val);
	}
}
END_TEST

/* The metadata door knows the VM: cpus beyond its vCPUs. */
START_TEST(cpus_beyond_vm)
{
	struct polmeta	p;
	char		err[256];

	polmeta_init(&p);
	ck_assert_int_eq(polmeta_set_text(&p, PM_MODE, "fixed", PMN_ATTR, err,
	    sizeof err), 0);
	ck_assert_int_eq(polmeta_set_text(&p, PM_CPUS, "2-5", PMN_ATTR, err,
	    sizeof err), 0);
	ck_assert_int_eq(polmeta_check(&p, 0, PMN_ATTR, err, sizeof err), 0);
	ck_assert_int_eq(polmeta_check(&p, 6, PMN_ATTR, err, sizeof err), 0);
	ck_assert_int_eq(polmeta_check(&p, 4, PMN_ATTR, err, sizeof err), -1);
	ck_assert_str_eq(err, "cpus: must name vCPUs in 0-3");
}
END_TEST

START_TEST(effective)
{
	struct polmeta	p;

	/* No policy: the VM's CPU shares, capped, or the kernel default. */
	ck_assert_uint_eq(polmeta_weight(NULL, 0), POLMETA_DEFAULT_WEIGHT);
	ck_assert_uint_eq(polmeta_weight(NULL, 512), 512);
	ck_assert_uint_eq(polmeta_weight(NULL, 262144), POLICY_WEIGHT_MAX);
	ck_assert_int_eq(polmeta_mode(NULL), POLICY_MODE_AUTO);
	ck_assert_uint_eq(polmeta_min_cores(NULL), 0);
	ck_assert_uint_eq(polmeta_max_cores(NULL), 0);
	ck_assert_int_eq(polmeta_enforce(NULL, POLMETA_ENFORCE_CAP),
	    POLMETA_ENFORCE_CAP);
	polmeta_init(&p);
	ck_assert_uint_eq(polmeta_weight(&p, 512), 512);
	ck_assert_int_eq(polmeta_enforce(&p, POLMETA_ENFORCE_CAP),
	    POLMETA_ENFORCE_CAP);
	ck_assert_int_eq(polmeta_set_text(&p, PM_WEIGHT, "3", PMN_ATTR, NULL,
	    0), 0);
	ck_assert_int_eq(polmeta_set_text(&p, PM_ENFORCE, "none", PMN_ATTR,
	    NULL, 0), 0);
	ck_assert_uint_eq(polmeta_weight(&p, 512), 3);
	ck_assert_int_eq(polmeta_enforce(&p, POLMETA_ENFORCE_CAP),
	    POLMETA_ENFORCE_NONE);
	ck_assert_str_eq(polmeta_mode_name(POLICY_MODE_OFF), "off");
	ck_assert_str_eq(polmeta_enforce_name(POLMETA_ENFORCE_CAP), "cap");
	ck_assert_str_eq(polmeta_mode_name((enum policy_mode)7), "unknown");
}
END_TEST

/* prefcpuctl's merge: unnamed fields stay; leaving fixed drops cpus. */
START_TEST(merge)
{
	struct polmeta	base, change;
	char		err[256], *s;

	ck_assert_int_eq(decode("{\"mode\":\"fixed\",\"cpus\":\"0-1\","
	    "\"weight\":300}", &base, err), 0);
	ck_assert_int_eq(decode("{\"max_cores\":2}", &change, err), 0);
	polmeta_merge(&base, &change);
	s = polmeta_xml(&base);
	ck_assert_str_eq(s, "<policy mode=\"fixed\" weight=\"300\" "
	    "max-cores=\"2\" cpus=\"0-1\"/>");
	free(s);
	ck_assert_int_eq(decode("{\"mode\":\"auto\"}", &change, err), 0);
	polmeta_merge(&base, &change);
	ck_assert_int_eq(polmeta_check(&base, 0, PMN_ATTR, err, sizeof err),
	    0);
	s = polmeta_xml(&base);
	ck_assert_str_eq(s, "<policy mode=\"auto\" weight=\"300\" "
	    "max-cores=\"2\"/>");
	free(s);
}
END_TEST

static Suite *
polmeta_suite(void)
{
	Suite	*s = suite_create("polmeta");
	TCase	*tc = tcase_create("fields");

	tcase_add_loop_test(tc, fields_text, 0, PM_NFIELDS);
	tcase_add_test(tc, text_escaped);
	tcase_add_test(tc, effective);
	tcase_add_test(tc, merge);
	suite_add_tcase(s, tc);
	tc = tcase_create("json");
	tcase_add_test(tc, json_full);
	tcase_add_test(tc, json_partial_and_null);
	tcase_add_loop_test(tc, json_bad, 0, (int)(sizeof bad_bodies /
	    sizeof bad_bodies[0]));
	tcase_add_test(tc, json_embedded_nul);
	suite_add_tcase(s, tc);
	tc = tcase_create("validator");
	tcase_add_loop_test(tc, same_verdict, 0, (int)(sizeof doors /
	    sizeof doors[0]));
	tcase_add_test(tc, cpus_beyond_vm);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(polmeta_suite());
}
