/* Unit tests for common/ratelim: the token bucket. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "ratelim.h"
#include "testlib.h"

START_TEST(test_burst_then_rate)
{
	struct ratelim	rl;
	unsigned int	i, n;
	uint64_t	t;

	ratelim_init(&rl, 4, 250, 1000);
	for (i = 0; i < 4; i++)
		ck_assert(ratelim_take(&rl, 1000));
	ck_assert(!ratelim_take(&rl, 1000));
	ck_assert(!ratelim_take(&rl, 1249));
	ck_assert_uint_eq(ratelim_ready(&rl, 1249), 1250);
	ck_assert(ratelim_take(&rl, 1250));
	ck_assert_uint_eq(ratelim_refused(&rl), 2);
	ck_assert_uint_eq(ratelim_refused(&rl), 0);
	/* A flood of one try per ms for 10 s gets 40 tokens, not 10000. */
	for (n = 0, t = 1251; t < 11251; t++)
		n += ratelim_take(&rl, t);
	ck_assert_uint_eq(n, 40);
	ck_assert_uint_eq(ratelim_refused(&rl), 10000 - 40);
}
END_TEST

START_TEST(test_refill_caps_at_burst)
{
	struct ratelim	rl;
	unsigned int	i;

	ratelim_init(&rl, 3, 1000, 0);
	for (i = 0; i < 3; i++)
		ck_assert(ratelim_take(&rl, 0));
	ck_assert(!ratelim_take(&rl, 0));
	/* An hour idle refills the burst, no more. */
	for (i = 0; i < 3; i++)
		ck_assert(ratelim_take(&rl, 3600000));
	ck_assert(!ratelim_take(&rl, 3600000));
	ck_assert_uint_eq(ratelim_ready(&rl, 3600000), 3601000);
	/* A clock that goes back gives nothing. */
	ck_assert(!ratelim_take(&rl, 10));
	ck_assert(ratelim_take(&rl, 3601000));
}
END_TEST

START_TEST(test_lines_per_minute)
{
	struct ratelim	rl;
	unsigned int	n = 0;
	uint64_t	t;

	/* The host's log limit per guest: burst 10, then one per 10 s. */
	ratelim_init(&rl, 10, 10000, 0);
	for (t = 0; t < 60000; t += 25)		/* 40 lines/s for a minute */
		n += ratelim_take(&rl, t);
	ck_assert_uint_eq(n, 10 + 5);
}
END_TEST

START_TEST(test_degenerate)
{
	struct ratelim	rl;

	ratelim_init(&rl, 0, 0, 5);
	ck_assert_uint_eq(rl.burst, 1);
	ck_assert(ratelim_take(&rl, 5));
	ck_assert(!ratelim_take(&rl, 5));
	ck_assert(ratelim_take(&rl, 6));
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("ratelim");
	TCase	*tc = tcase_create("ratelim");

	tcase_add_test(tc, test_burst_then_rate);
	tcase_add_test(tc, test_refill_caps_at_burst);
	tcase_add_test(tc, test_lines_per_minute);
	tcase_add_test(tc, test_degenerate);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
