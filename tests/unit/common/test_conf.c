/* Unit tests for common/conf: defaults, types, file:line errors, dump. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "cpuset.h"
#include "util.h"
#include "testlib.h"

struct cfg {
	bool		enabled;
	unsigned int	period;
	double		headroom;
	char		socket[CONF_STRLEN];
	unsigned int	mode;
	struct cpuset	cpus;
	unsigned int	weight;
	char		label[CONF_STRLEN];
};

static const char *const modes[] = { "auto", "off", "fixed", NULL };

static const struct conf_opt opts[] = {
	{ .section = "hostd", .name = "enabled", .type = CONF_BOOL,
	  .offset = offsetof(struct cfg, enabled), .def = "yes",
	  .help = "Run the coordinator." },
	{ .section = "hostd", .name = "period-ms", .type = CONF_UINT,
	  .offset = offsetof(struct cfg, period), .def = "1000",
	  .min = 100, .max = 60000, .help = "Sampling period." },
	{ .section = "hostd", .name = "headroom", .type = CONF_DOUBLE,
	  .offset = offsetof(struct cfg, headroom), .def = "0.25",
	  .dmin = 0, .dmax = 4, .help = "Extra CPUs over demand." },
	{ .section = "hostd", .name = "socket", .type = CONF_STRING,
	  .offset = offsetof(struct cfg, socket), .def = "/run/prefcpu.sock",
	  .help = "Control socket." },
	{ .section = "policy", .name = "mode", .type = CONF_CHOICE,
	  .offset = offsetof(struct cfg, mode), .def = "auto",
	  .choices = modes, .help = "Default mode." },
	{ .section = "policy", .name = "cpus", .type = CONF_CPULIST,
	  .offset = offsetof(struct cfg, cpus), .def = "0-3",
	  .help = "CPUs for fixed mode." },
	/* Back in [hostd]: dump groups by section. */
	{ .section = "hostd", .name = "label", .type = CONF_STRING,
	  .offset = offsetof(struct cfg, label), .def = "",
	  .help = "Free text." },
	{ .section = "policy", .name = "weight", .type = CONF_UINT,
	  .offset = offsetof(struct cfg, weight), .def = "100",
	  .min = 1, .max = 10000, .help = "Default weight." },
};

/* Write text to a fresh file named after the test; caller frees. */
static char *
put(const char *name, const char *text)
{
	char	*p = path_join(testlib_dir, name);

	testlib_write(p, text);
	return p;
}

static void
defaults(struct cfg *c)
{
	memset(c, 0xa5, sizeof(*c));
	conf_defaults(opts, nitems(opts), c);
}

START_TEST(test_defaults)
{
	struct cfg	c;
	struct cpuset	want;
	char		err[64];

	defaults(&c);
	ck_assert(c.enabled);
	ck_assert_uint_eq(c.period, 1000);
	ck_assert_double_eq(c.headroom, 0.25);
	ck_assert_str_eq(c.socket, "/run/prefcpu.sock");
	ck_assert_uint_eq(c.mode, 0);
	ck_assert_int_eq(cpuset_parse(&want, "0-3", err, sizeof(err)), 0);
	ck_assert(cpuset_equal(&c.cpus, &want));
	ck_assert_uint_eq(c.weight, 100);
	ck_assert_str_eq(c.label, "");
}
END_TEST

static const struct {
	const char	*section, *name, *value;
	const char	*err;		/* NULL: accepted */
} set_cases[] = {
	{ "hostd", "enabled", "no", NULL },
	{ "hostd", "enabled", "TRUE", NULL },
	{ "hostd", "enabled", "off", NULL },
	{ "hostd", "enabled", "0", NULL },
	{ "hostd", "enabled", "maybe",
	  "enabled: 'maybe' is not a boolean (yes/no, true/false, on/off, 1/0)" },
	{ "hostd", "enabled", "",
	  "enabled: '' is not a boolean (yes/no, true/false, on/off, 1/0)" },
	{ "hostd", "period-ms", "100", NULL },
	{ "hostd", "period-ms", "60000", NULL },
	{ "hostd", "period-ms", "99", "period-ms: 99 is below the minimum 100" },
	{ "hostd", "period-ms", "60001",
	  "period-ms: 60001 is above the maximum 60000" },
	{ "hostd", "period-ms", "99999999999999999999999",
	  "period-ms: 99999999999999999999999 is above the maximum 60000" },
	{ "hostd", "period-ms", "-5", "period-ms: '-5' is not an unsigned integer" },
	{ "hostd", "period-ms", "1s", "period-ms: '1s' is not an unsigned integer" },
	{ "hostd", "headroom", "0", NULL },
	{ "hostd", "headroom", "4", NULL },
	{ "hostd", "headroom", "1.5e0", NULL },
	{ "hostd", "headroom", "-0.5", "headroom: -0.5 is below the minimum 0" },
	{ "hostd", "headroom", "4.01", "headroom: 4.01 is above the maximum 4" },
	{ "hostd", "headroom", "nan", "headroom: 'nan' is not a finite number" },
	{ "hostd", "headroom", "inf", "headroom: 'inf' is not a finite number" },
	{ "hostd", "headroom", "1x", "headroom: '1x' is not a finite number" },
	{ "hostd", "headroom", "", "headroom: '' is not a finite number" },
	{ "hostd", "socket", "/tmp/x.sock", NULL },
	{ "hostd", "socket", "\"quoted\\tvalue\"", NULL },
	{ "hostd", "socket", "\"unterminated",
	  "socket: unterminated quoted string" },
	{ "hostd", "socket", "\"bad \\q\"",
	  "socket: unknown escape '\\q' in a quoted string" },
	{ "hostd", "socket", "\"a\"b\"",
	  "socket: unescaped '\"' inside a quoted string" },
	{ "hostd", "socket", "\"\\x0\"",
	  "socket: bad \\x escape in a quoted string" },
	{ "hostd", "socket", "\"\\x00\"",
	  "socket: \\x00 is not allowed in a string" },
	{ "policy", "mode", "fixed", NULL },
	{ "policy", "mode", "Fixed",
	  "mode: 'Fixed' is not one of auto, off, fixed" },
	{ "policy", "cpus", "0-7,16", NULL },
	{ "policy", "cpus", "", NULL },
	{ "policy", "cpus", "3-1",
	  "cpus: bad cpulist: descending range 3-1 at offset 0" },
	{ "policy", "weight", "0", "weight: 0 is below the minimum 1" },
	{ "policy", "nope", "1", "unknown option 'nope' in section [policy]" },
	{ "hostd", "weight", "1", "unknown option 'weight' in section [hostd]" },
	{ "nosuch", "weight", "1", "unknown section [nosuch]" },
	{ "", "weight", "1", "weight: option outside any section" },
};

START_TEST(test_set)
{
	struct cfg	c;
	char		err[256] = "";
	int		rc;

	defaults(&c);
	rc = conf_set(opts, nitems(opts), &c, set_cases[_i].section,
	    set_cases[_i].name, set_cases[_i].value, err, sizeof(err));
	if (set_cases[_i].err == NULL)
		ck_assert_msg(rc == 0, "%s = %s: %s", set_cases[_i].name,
		    set_cases[_i].value, err);
	else {
		ck_assert_int_eq(rc, -1);
		ck_assert_str_eq(err, set_cases[_i].err);
	}
}
END_TEST

START_TEST(test_set_stores)
{
	struct cfg	c;
	char		err[256], *big;
	struct cpuset	want;

	defaults(&c);
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "enabled",
	    "off", err, sizeof(err)), 0);
	ck_assert(!c.enabled);
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "period-ms",
	    "250", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.period, 250);
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "headroom",
	    "0.5", err, sizeof(err)), 0);
	ck_assert_double_eq(c.headroom, 0.5);
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "socket",
	    "\"a\\\"b\\\\c\\n\\x3b\"", err, sizeof(err)), 0);
	ck_assert_str_eq(c.socket, "a\"b\\c\n;");
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "policy", "mode",
	    "fixed", err, sizeof(err)), 0);
	ck_assert_uint_eq(c.mode, 2);
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "policy", "cpus",
	    "8-9", err, sizeof(err)), 0);
	ck_assert_int_eq(cpuset_parse(&want, "8-9", err, sizeof(err)), 0);
	ck_assert(cpuset_equal(&c.cpus, &want));

	/* A bad value leaves the old one. */
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "period-ms",
	    "5", err, sizeof(err)), -1);
	ck_assert_uint_eq(c.period, 250);

	/* CONF_STRLEN - 1 bytes fit, one more does not. */
	big = xmalloc(CONF_STRLEN + 1);
	memset(big, 'x', CONF_STRLEN);
	big[CONF_STRLEN - 1] = '\0';
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "label",
	    big, err, sizeof(err)), 0);
	ck_assert_uint_eq(strlen(c.label), CONF_STRLEN - 1);
	big[CONF_STRLEN - 1] = 'x';
	big[CONF_STRLEN] = '\0';
	ck_assert_int_eq(conf_set(opts, nitems(opts), &c, "hostd", "label",
	    big, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "label: string longer than 255 bytes");
	free(big);
}
END_TEST

START_TEST(test_load)
{
	struct cfg	c;
	char		err[512] = "", *p;
	struct cpuset	want;

	p = put("load.conf",
	    "; comment\n"
	    "# another comment\n"
	    "\n"
	    "[hostd]\n"
	    "enabled = no\n"
	    "  period-ms=500   ; indented, inline comment\n"
	    "headroom: 1.25\n"
	    "socket = /run/x y.sock\n"
	    "\n"
	    "[policy]\r\n"
	    "mode = off\r\n"
	    "cpus = 0-1,4\n"
	    "[hostd]\n"
	    "label = #not a comment\n");
	defaults(&c);
	ck_assert_msg(conf_load(opts, nitems(opts), &c, p, err,
	    sizeof(err)) == 0, "%s", err);
	ck_assert(!c.enabled);
	ck_assert_uint_eq(c.period, 500);
	ck_assert_double_eq(c.headroom, 1.25);
	ck_assert_str_eq(c.socket, "/run/x y.sock");
	ck_assert_uint_eq(c.mode, 1);
	ck_assert_int_eq(cpuset_parse(&want, "0-1,4", err, sizeof(err)), 0);
	ck_assert(cpuset_equal(&c.cpus, &want));
	ck_assert_str_eq(c.label, "#not a comment");
	/* Untouched options keep their value. */
	ck_assert_uint_eq(c.weight, 100);
	free(p);

	/* An empty file changes nothing. */
	p = put("empty.conf", "");
	ck_assert_int_eq(conf_load(opts, nitems(opts), &c, p, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(c.period, 500);
	free(p);
}
END_TEST

static const struct {
	const char	*text;
	const char	*where_why;	/* after "PATH:" */
} load_errors[] = {
	{ "[hostd]\nperiod-ms = 200\n\n[bogus]\nx = 1\n",
	  "4: unknown section [bogus]" },
	{ "[hostd]\n[bogus]\n", "2: unknown section [bogus]" },
	{ "[hostd]\nenabled = yes\nperiodms = 5\n",
	  "3: unknown option 'periodms' in section [hostd]" },
	{ "[hostd]\nenabled = perhaps\n",
	  "2: enabled: 'perhaps' is not a boolean (yes/no, true/false, on/off, 1/0)" },
	{ "\n\n[policy]\nweight = 10001\n",
	  "4: weight: 10001 is above the maximum 10000" },
	{ "[policy]\nweight = 0 ; zero\n",
	  "2: weight: 0 is below the minimum 1" },
	{ "[hostd]\nthis line has no equals sign\n",
	  "2: syntax error: expected 'name = value'" },
	{ "[hostd\nenabled = yes\n", "1: syntax error: missing ']'" },
	{ "enabled = yes\n", "1: enabled: option outside any section" },
	{ "[policy]\ncpus = 1,,2\n",
	  "2: cpus: bad cpulist: empty item at offset 2" },
	{ "[policy]\nmode = sometimes\n",
	  "2: mode: 'sometimes' is not one of auto, off, fixed" },
	{ "[hostd]\nsocket = \"open\n", "2: socket: unterminated quoted string" },
	/* The first error wins; later lines are not applied. */
	{ "[hostd]\nperiod-ms = 1\nperiod-ms = 2\n",
	  "2: period-ms: 1 is below the minimum 100" },
	{ "[hostd]\nenabled = yes\nlabel = a\0b\n", "3: NUL byte in line" },
};

START_TEST(test_load_errors)
{
	struct cfg	c;
	char		err[512] = "", want[640], name[32], *p;
	const char	*text = load_errors[_i].text;
	size_t		len = strlen(text);
	FILE		*fp;

	snprintf(name, sizeof(name), "err%d.conf", _i);
	p = path_join(testlib_dir, name);
	/* The NUL case needs the bytes past the first NUL. */
	if (strstr(load_errors[_i].where_why, "NUL") != NULL)
		len += strlen(text + len + 1) + 1;
	fp = fopen(p, "w");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);

	defaults(&c);
	ck_assert_int_eq(conf_load(opts, nitems(opts), &c, p, err,
	    sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:%s", p, load_errors[_i].where_why);
	ck_assert_str_eq(err, want);
	ck_assert_uint_ne(c.period, 2);
	free(p);
}
END_TEST

START_TEST(test_load_missing_file)
{
	struct cfg	c;
	char		err[512], want[600];
	char		*p = path_join(testlib_dir, "absent.conf");

	defaults(&c);
	ck_assert_int_eq(conf_load(opts, nitems(opts), &c, p, err,
	    sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: No such file or directory", p);
	ck_assert_str_eq(err, want);
	free(p);
}
END_TEST

/* Lines longer than libinih's 200-byte buffer still load, with their line. */
START_TEST(test_load_long_lines)
{
	struct cfg	c;
	char		err[512] = "", want[600], *p, *text, *list;
	struct cpuset	cpus;
	unsigned int	cpu;

	cpuset_zero(&cpus);
	for (cpu = 0; cpu < CPUSET_MAX; cpu += 3)
		cpuset_set(&cpus, cpu);
	list = cpuset_to_str(&cpus);
	xasprintf(&text, "[policy]\ncpus = %s ; a comment\n\n"
	    "[hostd]\nlabel = %0250d\nlabel = %0256d\n", list, 7, 8);
	p = put("long.conf", text);
	defaults(&c);
	ck_assert_int_eq(conf_load(opts, nitems(opts), &c, p, err,
	    sizeof(err)), -1);
	snprintf(want, sizeof(want),
	    "%s:6: label: string longer than 255 bytes", p);
	ck_assert_str_eq(err, want);
	ck_assert(cpuset_equal(&c.cpus, &cpus));
	ck_assert_uint_eq(strlen(c.label), 250);
	ck_assert_int_eq(c.label[249], '7');
	free(p);
	free(text);
	free(list);
}
END_TEST

/* conf_dump writes what conf_load reads back as the same values. */
START_TEST(test_dump_round_trip)
{
	struct cfg	a, b;
	char		err[512] = "", *p, *p2, *t1, *t2;
	unsigned int	cpu, i;
	FILE		*fp;
	static const char *const labels[] = {
		"plain",
		"",
		"  leading and trailing  ",
		"semi ; colon;x",
		"\"starts with a quote",
		"back\\slash \"quotes\" \ttab\nnewline\r\x01\x7f",
		"caf\xc3\xa9 = key: value [section] # hash",
	};

	for (i = 0; i < nitems(labels); i++) {
		defaults(&a);
		a.enabled = false;
		a.period = 60000;
		/* Not exact in binary; and one that needs all 17 digits. */
		a.headroom = i % 2 ? 0.1 : 1.0 / 3 + 1e-16;
		a.mode = 2;
		a.weight = 1;
		cpuset_zero(&a.cpus);
		for (cpu = 1; cpu < CPUSET_MAX; cpu += 2)
			cpuset_set(&a.cpus, cpu);
		snprintf(a.label, sizeof(a.label), "%s", labels[i]);
		/* 255 bytes that all need escaping: a long line. */
		memset(a.socket, ';', CONF_STRLEN - 1);
		a.socket[CONF_STRLEN - 1] = '\0';

		p = path_join(testlib_dir, "dump.conf");
		fp = fopen(p, "w");
		ck_assert_ptr_nonnull(fp);
		conf_dump(opts, nitems(opts), &a, fp);
		ck_assert_int_eq(fclose(fp), 0);

		defaults(&b);
		ck_assert_msg(conf_load(opts, nitems(opts), &b, p, err,
		    sizeof(err)) == 0, "label %u: %s", i, err);
		ck_assert_int_eq(b.enabled, a.enabled);
		ck_assert_uint_eq(b.period, a.period);
		ck_assert(b.headroom == a.headroom);
		ck_assert_str_eq(b.socket, a.socket);
		ck_assert_uint_eq(b.mode, a.mode);
		ck_assert(cpuset_equal(&b.cpus, &a.cpus));
		ck_assert_uint_eq(b.weight, a.weight);
		ck_assert_str_eq(b.label, a.label);

		/* Dumping the loaded values gives the same text. */
		p2 = path_join(testlib_dir, "dump2.conf");
		fp = fopen(p2, "w");
		ck_assert_ptr_nonnull(fp);
		conf_dump(opts, nitems(opts), &b, fp);
		ck_assert_int_eq(fclose(fp), 0);
		t1 = xmalloc(65536);
		t2 = xmalloc(65536);
		ck_assert_int_gt(file_read(p, t1, 65536), 0);
		ck_assert_int_gt(file_read(p2, t2, 65536), 0);
		ck_assert_str_eq(t1, t2);
		free(t1);
		free(t2);
		free(p);
		free(p2);
	}
}
END_TEST

START_TEST(test_dump_format)
{
	struct cfg	c;
	char		*buf = NULL;
	size_t		 len = 0;
	FILE		*fp = open_memstream(&buf, &len);

	defaults(&c);
	conf_dump(opts, nitems(opts), &c, fp);
	fclose(fp);
	/* Sections once each, in table order, options grouped under them. */
	ck_assert_str_eq(buf,
	    "[hostd]\n"
	    "# Run the coordinator.\nenabled = yes\n"
	    "# Sampling period.\nperiod-ms = 1000\n"
	    "# Extra CPUs over demand.\nheadroom = 0.25\n"
	    "# Control socket.\nsocket = /run/prefcpu.sock\n"
	    "# Free text.\nlabel = \n"
	    "\n[policy]\n"
	    "# Default mode.\nmode = auto\n"
	    "# CPUs for fixed mode.\ncpus = 0-3\n"
	    "# Default weight.\nweight = 100\n");
	free(buf);

	/* Doubles print in their shortest exact form. */
	c.headroom = 0.1;
	buf = NULL;
	fp = open_memstream(&buf, &len);
	conf_dump(opts, nitems(opts), &c, fp);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "\nheadroom = 0.1\n"));
	free(buf);
}
END_TEST

START_TEST(test_help)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp = open_memstream(&buf, &len);

	conf_help(opts, nitems(opts), fp);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "[hostd]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "[policy]\n"));
	ck_assert_ptr_nonnull(strstr(buf, "period-ms"));
	ck_assert_ptr_nonnull(strstr(buf, "uint 100..60000"));
	ck_assert_ptr_nonnull(strstr(buf, "double 0..4"));
	ck_assert_ptr_nonnull(strstr(buf, "one of auto|off|fixed"));
	ck_assert_ptr_nonnull(strstr(buf, "cpulist"));
	ck_assert_ptr_nonnull(strstr(buf, "default: 1000\n"));
	ck_assert_ptr_nonnull(strstr(buf, "default: (empty)\n"));
	ck_assert_ptr_nonnull(strstr(buf, "Sampling period."));
	/* Each option's help line follows its own line. */
	ck_assert_ptr_nonnull(strstr(buf,
	    "default: /run/prefcpu.sock\n      Control socket.\n"));
	free(buf);
}
END_TEST

static Suite *
conf_suite(void)
{
	Suite	*s = suite_create("conf");
	TCase	*tc;

	tc = tcase_create("values");
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_set, 0, (int)nitems(set_cases));
	tcase_add_test(tc, test_set_stores);
	tcase_add_test(tc, test_dump_format);
	tcase_add_test(tc, test_help);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	/* Made and removed by the runner, so failures leave nothing behind. */
	tcase_add_unchecked_fixture(tc, testlib_dir_setup,
	    testlib_dir_teardown);
	tcase_add_test(tc, test_load);
	tcase_add_loop_test(tc, test_load_errors, 0, (int)nitems(load_errors));
	tcase_add_test(tc, test_load_missing_file);
	tcase_add_test(tc, test_load_long_lines);
	tcase_add_test(tc, test_dump_round_trip);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(conf_suite());
}
