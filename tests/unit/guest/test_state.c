/*
 * Unit tests of the record files: any bytes in a field survive a save and
 * a load; a damaged file is refused with a cause naming the line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "util.h"
#include "testlib.h"

START_TEST(test_roundtrip)
{
	static const char *const vals[][3] = {
		{ "cpuset", "workload", "" },
		{ "cpuset", "a b/c\nd", "0-3" },
		{ "cpuset-enabled", "", "" },
		{ "odd", "-", "--" },
		{ "odd", "100%", "%41\t\x01\x7f\xc3\xa9" },
		{ "affinity", "4242", "3" },
	};
	struct state	st, back;
	char		*text, err[256], *dir, *path;
	size_t		i;

	state_init(&st);
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		state_add(&st, vals[i][0], vals[i][1], vals[i][2]);
	state_addf(&st, "status", "pid", "%d", 17);

	text = state_format(&st);
	ck_assert_ptr_null(strchr(strchr(text, '\n') + 1, '\t'));
	state_init(&back);
	ck_assert_int_eq(state_parse(&back, text, err, sizeof(err)), 0);
	free(text);
	ck_assert_uint_eq(back.n, st.n);
	for (i = 0; i < st.n; i++) {
		ck_assert_str_eq(back.recs[i].kind, st.recs[i].kind);
		ck_assert_str_eq(back.recs[i].key, st.recs[i].key);
		ck_assert_str_eq(back.recs[i].val, st.recs[i].val);
	}
	ck_assert_str_eq(state_get(&back, "status", "pid"), "17");
	ck_assert_str_eq(state_get(&back, "cpuset", "workload"), "");
	ck_assert_ptr_null(state_get(&back, "cpuset", "nope"));
	state_free(&back);

	dir = testlib_tmpdir();
	path = path_join(dir, "f.state");
	state_init(&back);
	ck_assert_int_eq(state_load(&back, path, err, sizeof(err)), 0);
	ck_assert_int_eq(state_save(&st, path, err, sizeof(err)), 0);
	ck_assert_int_eq(state_load(&back, path, err, sizeof(err)), 1);
	ck_assert_uint_eq(back.n, st.n);
	ck_assert_str_eq(back.recs[1].key, "a b/c\nd");
	state_free(&back);
	testlib_rmtree(dir);
	free(path);
	state_free(&st);
}
END_TEST

START_TEST(test_damaged)
{
	static const struct {
		const char	*text;
		const char	*err;
	} bad[] = {
		{ "", "empty file" },
		{ "something else\n", "line 1: not a record file" },
		{ "prefcpu-guestd-records 1\na b\n", "line 2: want three fields" },
		{ "prefcpu-guestd-records 1\na b c d\n",
		  "line 2: want three fields" },
		{ "prefcpu-guestd-records 1\na b c\nx %4 y\n",
		  "line 3: bad % escape" },
		{ "prefcpu-guestd-records 1\nx y %00\n",
		  "line 2: bad % escape" },
		{ "prefcpu-guestd-records 1\nx y %zz\n",
		  "line 2: bad % escape" },
		{ "prefcpu-guestd-records 1\nx  y\n", "line 2: want three fields" },
	};
	struct state	st;
	char		err[256];
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		state_init(&st);
		err[0] = '\0';
		ck_assert_int_eq(state_parse(&st, bad[i].text, err,
		    sizeof(err)), -1);
		ck_assert_str_eq(err, bad[i].err);
		state_free(&st);
	}
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("state");
	TCase	*tc = tcase_create("records");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_damaged);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
