/* Unit tests for common/cpuset: set operations, iteration, cpulist text. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "util.h"
#include "testlib.h"

static struct cpuset
parse_ok(const char *text)
{
	struct cpuset	s;
	char		err[128] = "";

	ck_assert_msg(cpuset_parse(&s, text, err, sizeof(err)) == 0,
	    "'%s' rejected: %s", text, err);
	return s;
}

START_TEST(test_set_clear_isset)
{
	struct cpuset	s;

	cpuset_zero(&s);
	ck_assert(cpuset_empty(&s));
	ck_assert_int_eq(cpuset_set(&s, 0), 0);
	ck_assert_int_eq(cpuset_set(&s, 63), 0);
	ck_assert_int_eq(cpuset_set(&s, 64), 0);
	ck_assert_int_eq(cpuset_set(&s, CPUSET_MAX - 1), 0);
	ck_assert_int_eq(cpuset_set(&s, CPUSET_MAX), -1);
	ck_assert_int_eq(cpuset_set(&s, 100000), -1);
	ck_assert(cpuset_isset(&s, 0));
	ck_assert(cpuset_isset(&s, 63));
	ck_assert(cpuset_isset(&s, 64));
	ck_assert(cpuset_isset(&s, 8191));
	ck_assert(!cpuset_isset(&s, 1));
	ck_assert(!cpuset_isset(&s, 65));
	ck_assert(!cpuset_isset(&s, CPUSET_MAX));
	ck_assert_uint_eq(cpuset_count(&s), 4);
	cpuset_clear(&s, 63);
	cpuset_clear(&s, CPUSET_MAX + 5);	/* ignored, no crash */
	ck_assert(!cpuset_isset(&s, 63));
	ck_assert(cpuset_isset(&s, 64));
	ck_assert_uint_eq(cpuset_count(&s), 3);
	/* Setting twice is idempotent. */
	ck_assert_int_eq(cpuset_set(&s, 0), 0);
	ck_assert_uint_eq(cpuset_count(&s), 3);
}
END_TEST

START_TEST(test_set_range)
{
	struct cpuset	s;
	unsigned int	i;

	cpuset_zero(&s);
	ck_assert_int_eq(cpuset_set_range(&s, 60, 130), 0);
	ck_assert_uint_eq(cpuset_count(&s), 71);
	for (i = 0; i < 200; i++)
		ck_assert_int_eq(cpuset_isset(&s, i), i >= 60 && i <= 130);
	ck_assert_int_eq(cpuset_set_range(&s, 5, 5), 0);
	ck_assert_uint_eq(cpuset_count(&s), 72);
	ck_assert_int_eq(cpuset_set_range(&s, 7, 6), -1);
	ck_assert_int_eq(cpuset_set_range(&s, 8000, CPUSET_MAX), -1);
	ck_assert_uint_eq(cpuset_count(&s), 72);

	cpuset_zero(&s);
	ck_assert_int_eq(cpuset_set_range(&s, 0, CPUSET_MAX - 1), 0);
	ck_assert_uint_eq(cpuset_count(&s), CPUSET_MAX);
	ck_assert_int_eq(cpuset_first(&s), 0);
	ck_assert_int_eq(cpuset_last(&s), CPUSET_MAX - 1);
}
END_TEST

START_TEST(test_boolean_ops)
{
	struct cpuset	a = parse_ok("0-7,64,100-101");
	struct cpuset	b = parse_ok("4-11,100,8191");
	struct cpuset	d, e;

	cpuset_and(&d, &a, &b);
	e = parse_ok("4-7,100");
	ck_assert(cpuset_equal(&d, &e));
	cpuset_or(&d, &a, &b);
	e = parse_ok("0-11,64,100-101,8191");
	ck_assert(cpuset_equal(&d, &e));
	cpuset_andnot(&d, &a, &b);
	e = parse_ok("0-3,64,101");
	ck_assert(cpuset_equal(&d, &e));

	/* dst aliasing a or b */
	d = a;
	cpuset_and(&d, &d, &b);
	e = parse_ok("4-7,100");
	ck_assert(cpuset_equal(&d, &e));
	d = b;
	cpuset_or(&d, &a, &d);
	e = parse_ok("0-11,64,100-101,8191");
	ck_assert(cpuset_equal(&d, &e));
	d = b;
	cpuset_andnot(&d, &a, &d);
	e = parse_ok("0-3,64,101");
	ck_assert(cpuset_equal(&d, &e));
}
END_TEST

START_TEST(test_predicates)
{
	struct cpuset	a = parse_ok("0-3");
	struct cpuset	b = parse_ok("0-7");
	struct cpuset	c = parse_ok("8,8191");
	struct cpuset	z = parse_ok("");

	ck_assert(cpuset_subset(&a, &b));
	ck_assert(!cpuset_subset(&b, &a));
	ck_assert(cpuset_subset(&a, &a));
	ck_assert(cpuset_subset(&z, &a));
	ck_assert(!cpuset_subset(&c, &b));
	ck_assert(cpuset_intersects(&a, &b));
	ck_assert(!cpuset_intersects(&b, &c));
	ck_assert(!cpuset_intersects(&z, &z));
	ck_assert(cpuset_empty(&z));
	ck_assert(!cpuset_empty(&c));
	ck_assert(!cpuset_equal(&a, &b));
	ck_assert_uint_eq(cpuset_count(&z), 0);
	ck_assert_uint_eq(cpuset_count(&c), 2);
}
END_TEST

START_TEST(test_iteration)
{
	struct cpuset	s = parse_ok("1,63-65,4000,8191");
	const int	want[] = { 1, 63, 64, 65, 4000, 8191 };
	int		cpu, n = 0;

	CPUSET_FOREACH(cpu, &s) {
		ck_assert_int_lt(n, (int)nitems(want));
		ck_assert_int_eq(cpu, want[n]);
		n++;
	}
	ck_assert_int_eq(n, (int)nitems(want));
	ck_assert_int_eq(cpuset_first(&s), 1);
	ck_assert_int_eq(cpuset_last(&s), 8191);
	ck_assert_int_eq(cpuset_next(&s, -1), 1);
	ck_assert_int_eq(cpuset_next(&s, 1), 63);
	ck_assert_int_eq(cpuset_next(&s, 2), 63);
	ck_assert_int_eq(cpuset_next(&s, 65), 4000);
	ck_assert_int_eq(cpuset_next(&s, 8191), -1);
	ck_assert_int_eq(cpuset_next(&s, 100000), -1);

	s = parse_ok("");
	ck_assert_int_eq(cpuset_first(&s), -1);
	ck_assert_int_eq(cpuset_last(&s), -1);
	ck_assert_int_eq(cpuset_next(&s, -1), -1);
	n = 0;
	CPUSET_FOREACH(cpu, &s)
		n++;
	ck_assert_int_eq(n, 0);

	s = parse_ok("0");
	ck_assert_int_eq(cpuset_first(&s), 0);
	ck_assert_int_eq(cpuset_last(&s), 0);
	ck_assert_int_eq(cpuset_next(&s, 0), -1);
}
END_TEST

static const struct {
	const char	*in;
	const char	*out;
	unsigned int	 count;
} parse_cases[] = {
	{ "", "", 0 },
	{ "\n", "", 0 },
	{ "0", "0", 1 },
	{ "0\n", "0", 1 },
	{ "0-3,8,10-11", "0-3,8,10-11", 7 },
	{ "3,2,1,0", "0-3", 4 },
	{ "0-3,2-5", "0-5", 6 },
	{ "5-5", "5", 1 },
	{ "0,2,4,6", "0,2,4,6", 4 },
	{ "1,2", "1-2", 2 },
	{ "007", "7", 1 },
	{ "8191", "8191", 1 },
	{ "0-8191", "0-8191", 8192 },
	{ "0,8191", "0,8191", 2 },
	{ "63,64", "63-64", 2 },
	{ "8190-8191\n", "8190-8191", 2 },
};

START_TEST(test_parse_valid)
{
	struct cpuset	s;
	char		buf[64], err[128];

	memset(&s, 0xff, sizeof(s));
	err[0] = '\0';
	ck_assert_msg(cpuset_parse(&s, parse_cases[_i].in, err,
	    sizeof(err)) == 0, "'%s': %s", parse_cases[_i].in, err);
	ck_assert_int_eq(cpuset_format(&s, buf, sizeof(buf)),
	    (int)strlen(parse_cases[_i].out));
	ck_assert_str_eq(buf, parse_cases[_i].out);
	ck_assert_uint_eq(cpuset_count(&s), parse_cases[_i].count);
}
END_TEST

/* Each error class, with what the message must say (what and where). */
static const struct {
	const char	*in;
	const char	*msg;
} error_cases[] = {
	{ "1,,2", "empty item at offset 2" },
	{ ",", "empty item at offset 0" },
	{ ",1", "empty item at offset 0" },
	{ "1,", "empty item at offset 2" },
	{ "3-1", "descending range 3-1 at offset 0" },
	{ "0,9-2", "descending range 9-2 at offset 2" },
	{ "+1", "unexpected '+' at offset 0" },
	{ "-1", "unexpected '-' at offset 0" },
	{ "1-+2", "unexpected '+' at offset 2" },
	{ "1--2", "unexpected '-' at offset 2" },
	{ "1-", "missing CPU number at offset 2" },
	{ "1-2-3", "unexpected '-' at offset 3" },
	{ "a", "unexpected 'a' at offset 0" },
	{ "0x1", "unexpected 'x' at offset 1" },
	{ "1a", "unexpected 'a' at offset 1" },
	{ " 1", "unexpected ' ' at offset 0" },
	{ "1 ", "unexpected ' ' at offset 1" },
	{ "1, 2", "unexpected ' ' at offset 2" },
	{ "1\t", "unexpected byte 0x09 at offset 1" },
	{ "1\n\n", "unexpected byte 0x0a at offset 1" },
	{ "\n\n", "unexpected byte 0x0a at offset 0" },
	{ "1;2", "unexpected ';' at offset 1" },
	{ "\xc3\xa9", "unexpected byte 0xc3 at offset 0" },
	{ "99999999999999999999",
	  "CPU 99999999999999999999 at offset 0 is out of range" },
	{ "4294967296", "CPU 4294967296 at offset 0 is out of range" },
	{ "8192", "CPU 8192 at offset 0 is out of range" },
	{ "0-8192", "CPU 8192 at offset 2 is out of range" },
	{ "1,10000", "CPU 10000 at offset 2 is out of range" },
};

START_TEST(test_parse_errors)
{
	struct cpuset	s, before = parse_ok("5");
	char		err[128];

	s = before;
	err[0] = '\0';
	ck_assert_msg(cpuset_parse(&s, error_cases[_i].in, err,
	    sizeof(err)) == -1, "'%s' accepted", error_cases[_i].in);
	ck_assert_msg(strstr(err, error_cases[_i].msg) != NULL,
	    "'%s': got '%s', want '%s'", error_cases[_i].in, err,
	    error_cases[_i].msg);
	/* A failed parse leaves the destination alone. */
	ck_assert(cpuset_equal(&s, &before));
	/* A message fits on one line. */
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(test_parse_error_small_buffers)
{
	struct cpuset	s;
	char		err[8];

	ck_assert_int_eq(cpuset_parse(&s, "1,,2", err, sizeof(err)), -1);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	ck_assert_int_eq(cpuset_parse(&s, "1,,2", NULL, 0), -1);
}
END_TEST

START_TEST(test_parse_n)
{
	struct cpuset	s, want = parse_ok("1-3");
	char		err[128];
	const char	buf[] = { '1', '-', '3', 'X', 'Y' };
	const char	nul[] = { '1', '\0', '2' };

	/* Not NUL-terminated: only len bytes count. */
	ck_assert_int_eq(cpuset_parse_n(&s, buf, 3, err, sizeof(err)), 0);
	ck_assert(cpuset_equal(&s, &want));
	ck_assert_int_eq(cpuset_parse_n(&s, buf, 4, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "'X' at offset 3"));
	ck_assert_int_eq(cpuset_parse_n(&s, nul, sizeof(nul), err,
	    sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "NUL byte at offset 1"));
	ck_assert_int_eq(cpuset_parse_n(&s, "", 0, err, sizeof(err)), 0);
	ck_assert(cpuset_empty(&s));
}
END_TEST

START_TEST(test_format_buffer)
{
	struct cpuset	s = parse_ok("0-3,8");
	char		buf[16];

	ck_assert_int_eq(cpuset_format(&s, buf, 6), 5);
	ck_assert_str_eq(buf, "0-3,8");
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(cpuset_format(&s, buf, 5), -1);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(cpuset_format(&s, buf, 1), -1);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(cpuset_format(&s, buf, 0), -1);

	s = parse_ok("");
	ck_assert_int_eq(cpuset_format(&s, buf, 1), 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* The longest cpulist there is: every other CPU up to 8190 (or 8191). */
START_TEST(test_round_trip_large)
{
	struct cpuset	s, back;
	char		*text, err[128];
	unsigned int	cpu, start;

	for (start = 0; start < 2; start++) {
		cpuset_zero(&s);
		for (cpu = start; cpu < CPUSET_MAX; cpu += 2)
			ck_assert_int_eq(cpuset_set(&s, cpu), 0);
		text = cpuset_to_str(&s);
		ck_assert_int_eq(cpuset_parse(&back, text, err, sizeof(err)), 0);
		ck_assert(cpuset_equal(&s, &back));
		ck_assert_uint_eq(cpuset_count(&back), CPUSET_MAX / 2);
		ck_assert_str_eq(text + strlen(text) - 4,
		    start ? "8191" : "8190");
		free(text);
	}
}
END_TEST

START_TEST(test_round_trip_random)
{
	struct cpuset	s, back;
	char		*text, err[128];
	unsigned int	seed = 12345 + (unsigned int)_i, k, cpu, len;

	cpuset_zero(&s);
	for (k = 0; k < 200; k++) {
		cpu = (unsigned int)rand_r(&seed) % CPUSET_MAX;
		len = (unsigned int)rand_r(&seed) % 40;
		if (rand_r(&seed) % 3 == 0 && cpu + len < CPUSET_MAX)
			ck_assert_int_eq(cpuset_set_range(&s, cpu, cpu + len), 0);
		else
			cpuset_set(&s, cpu);
	}
	text = cpuset_to_str(&s);
	ck_assert_int_eq(cpuset_parse(&back, text, err, sizeof(err)), 0);
	ck_assert(cpuset_equal(&s, &back));
	free(text);
}
END_TEST

static Suite *
cpuset_suite(void)
{
	Suite	*s = suite_create("cpuset");
	TCase	*tc;

	tc = tcase_create("ops");
	tcase_add_test(tc, test_set_clear_isset);
	tcase_add_test(tc, test_set_range);
	tcase_add_test(tc, test_boolean_ops);
	tcase_add_test(tc, test_predicates);
	tcase_add_test(tc, test_iteration);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_loop_test(tc, test_parse_valid, 0, (int)nitems(parse_cases));
	tcase_add_loop_test(tc, test_parse_errors, 0, (int)nitems(error_cases));
	tcase_add_test(tc, test_parse_error_small_buffers);
	tcase_add_test(tc, test_parse_n);
	tcase_add_test(tc, test_format_buffer);
	tcase_add_test(tc, test_round_trip_large);
	tcase_add_loop_test(tc, test_round_trip_random, 0, 20);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(cpuset_suite());
}
