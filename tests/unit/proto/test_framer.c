/*
 * Unit tests of the line framer: lines come out whole whatever the read
 * boundaries, overlong lines are dropped up to their newline and reported
 * once, and a callback can stop the feed and resume it later.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "util.h"
#include "testlib.h"

#define MAX_EVENTS	64

/* What the callback saw, in order; "!" stands for an overlong report. */
struct seen {
	int	 n;
	char	*ev[MAX_EVENTS];
	size_t	 len[MAX_EVENTS];
	int	 stop_after;	/* stop feeding after this many events; 0: never */
};

static int
record(void *arg, enum proto_frame_event ev, const char *line, size_t len)
{
	struct seen	*s = arg;

	ck_assert_int_lt(s->n, MAX_EVENTS);
	ck_assert_ptr_nonnull(line);
	ck_assert_int_eq(line[len], '\0');
	if (ev == PROTO_FRAME_OVERLONG) {
		s->ev[s->n] = xstrdup("!");
		s->len[s->n] = 0;
	} else {
		ck_assert_int_eq(ev, PROTO_FRAME_LINE);
		ck_assert_uint_le(len, PROTO_MAX_LINE);
		ck_assert_ptr_null(memchr(line, '\n', len));
		s->ev[s->n] = xmalloc(len + 1);
		memcpy(s->ev[s->n], line, len + 1);
		s->len[s->n] = len;
	}
	s->n++;
	return s->stop_after != 0 && s->n % s->stop_after == 0;
}

static void
seen_free(struct seen *s)
{
	int	i;

	for (i = 0; i < s->n; i++)
		free(s->ev[i]);
	memset(s, 0, sizeof *s);
}

static size_t
feed_str(struct proto_framer *fr, const char *str, struct seen *s)
{
	return proto_framer_feed(fr, str, strlen(str), record, s);
}

START_TEST(several_lines_one_feed)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	const char		*in = "one\ntwo\r\nthree\nfour";

	ck_assert_uint_eq(feed_str(fr, in, &s), strlen(in));
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.ev[0], "one");
	ck_assert_str_eq(s.ev[1], "two\r");
	ck_assert_str_eq(s.ev[2], "three");
	ck_assert_uint_eq(proto_framer_pending(fr), 4);
	feed_str(fr, "\n", &s);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(s.ev[3], "four");
	ck_assert_uint_eq(proto_framer_pending(fr), 0);
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

START_TEST(byte_by_byte)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	const char		*in = "{\"v\":1,\"type\":\"ping\",\"seq\":1}\n"
				    "{\"v\":1,\"type\":\"pong\",\"seq\":1}\n";
	size_t			 i;

	for (i = 0; in[i] != '\0'; i++) {
		ck_assert_uint_eq(proto_framer_feed(fr, in + i, 1, record, &s),
		    1);
		if (i < 29)	/* the first newline is byte 29 */
			ck_assert_int_eq(s.n, 0);
	}
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.ev[0], "{\"v\":1,\"type\":\"ping\",\"seq\":1}");
	ck_assert_str_eq(s.ev[1], "{\"v\":1,\"type\":\"pong\",\"seq\":1}");
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

/* The resync newline and blank lines are not messages. */
START_TEST(empty_lines_skipped)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };

	ck_assert_uint_eq(feed_str(fr, "\n\n\na\n\nb\n", &s), 8);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.ev[0], "a");
	ck_assert_str_eq(s.ev[1], "b");
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

/* NULs are bytes like others: the decoder, not the framer, rejects them. */
START_TEST(nul_bytes_passed_on)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };

	ck_assert_uint_eq(proto_framer_feed(fr, "a\0b\n", 4, record, &s), 4);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.len[0], 3);
	ck_assert_mem_eq(s.ev[0], "a\0b", 3);
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

static char *
make_line(size_t len, char fill)
{
	char	*l = xmalloc(len + 2);

	memset(l, fill, len);
	l[len] = '\n';
	l[len + 1] = '\0';
	return l;
}

START_TEST(exact_limit)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	char			*ok = make_line(PROTO_MAX_LINE, 'a');
	char			*over = make_line(PROTO_MAX_LINE + 1, 'b');

	feed_str(fr, ok, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.len[0], PROTO_MAX_LINE);
	ck_assert_int_eq(s.ev[0][PROTO_MAX_LINE - 1], 'a');

	feed_str(fr, over, &s);
	feed_str(fr, "next\n", &s);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.ev[1], "!");
	ck_assert_str_eq(s.ev[2], "next");

	/* The limit holds when the line arrives in pieces, too. */
	feed_str(fr, "cc", &s);
	feed_str(fr, ok, &s);
	ck_assert_int_eq(s.n, 4);
	ck_assert_str_eq(s.ev[3], "!");
	seen_free(&s);
	free(ok);
	free(over);
	proto_framer_free(fr);
}
END_TEST

/*
 * An overlong line fed in many pieces is reported once, as soon as it
 * passes the limit, and none of its tail comes out as a line.
 */
START_TEST(overlong_discarded_to_newline)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	char			 chunk[1000];
	int			 i;

	feed_str(fr, "before\n", &s);
	memset(chunk, 'x', sizeof chunk);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(proto_framer_feed(fr, chunk, sizeof chunk,
		    record, &s), sizeof chunk);
	/* 5000 bytes without a newline: reported already, nothing held. */
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.ev[1], "!");
	ck_assert_uint_eq(proto_framer_pending(fr), 0);
	/* More of the same line, with a tail that looks like a message. */
	for (i = 0; i < 20; i++)
		proto_framer_feed(fr, chunk, sizeof chunk, record, &s);
	feed_str(fr, "{\"v\":1,\"type\":\"ping\",\"seq\":1}\nafter\n", &s);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.ev[2], "after");
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

START_TEST(overlong_in_one_feed)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	size_t			 big = 3 * PROTO_MAX_LINE;
	char			*buf = xmalloc(big + 16);

	memcpy(buf, "a\n", 2);
	memset(buf + 2, 'y', big);
	memcpy(buf + 2 + big, "\nb\n", 3);
	ck_assert_uint_eq(proto_framer_feed(fr, buf, big + 5, record, &s),
	    big + 5);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.ev[0], "a");
	ck_assert_str_eq(s.ev[1], "!");
	ck_assert_str_eq(s.ev[2], "b");
	/* Two overlong lines in a row are two reports. */
	memcpy(buf + 2 + big, "\n", 1);
	proto_framer_feed(fr, buf + 2, big + 1, record, &s);
	proto_framer_feed(fr, buf + 2, big + 1, record, &s);
	ck_assert_int_eq(s.n, 5);
	ck_assert_str_eq(s.ev[3], "!");
	ck_assert_str_eq(s.ev[4], "!");
	free(buf);
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

START_TEST(stop_and_resume)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { .stop_after = 1 };
	const char		*in = "l1\nl2\nl3\npart";
	size_t			 off = 0, n, len = strlen(in);

	n = proto_framer_feed(fr, in, len, record, &s);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(s.n, 1);
	off += n;
	n = proto_framer_feed(fr, in + off, len - off, record, &s);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(s.n, 2);
	off += n;
	n = proto_framer_feed(fr, in + off, len - off, record, &s);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(s.n, 3);
	off += n;
	/* No event: all consumed, the partial line held. */
	n = proto_framer_feed(fr, in + off, len - off, record, &s);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(s.n, 3);
	ck_assert_uint_eq(proto_framer_pending(fr), 4);
	ck_assert_str_eq(s.ev[0], "l1");
	ck_assert_str_eq(s.ev[1], "l2");
	ck_assert_str_eq(s.ev[2], "l3");
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

/* Stopping at an overlong report and feeding the rest again loses nothing. */
START_TEST(stop_at_overlong)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { .stop_after = 1 };
	size_t			 big = PROTO_MAX_LINE + 10, len, off = 0, n;
	char			*buf = xmalloc(big + 16);
	int			 guard = 0;

	memset(buf, 'z', big);
	memcpy(buf + big, "\nok\n", 4);
	len = big + 4;
	while (off < len && guard++ < 10) {
		n = proto_framer_feed(fr, buf + off, len - off, record, &s);
		off += n;
	}
	ck_assert_uint_eq(off, len);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.ev[0], "!");
	ck_assert_str_eq(s.ev[1], "ok");
	free(buf);
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

START_TEST(reset_drops_partial)
{
	struct proto_framer	*fr = proto_framer_new();
	struct seen		 s = { 0 };
	char			*over = make_line(PROTO_MAX_LINE + 1, 'q');

	feed_str(fr, "garbage from before the reconnect", &s);
	ck_assert_uint_gt(proto_framer_pending(fr), 0);
	proto_framer_reset(fr);
	ck_assert_uint_eq(proto_framer_pending(fr), 0);
	feed_str(fr, "fresh\n", &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.ev[0], "fresh");

	/* A reset also ends a discard: the next bytes start a new line. */
	over[PROTO_MAX_LINE + 1] = '\0';	/* without its newline */
	feed_str(fr, over, &s);
	ck_assert_int_eq(s.n, 2);
	proto_framer_reset(fr);
	feed_str(fr, "again\n", &s);
	ck_assert_int_eq(s.n, 3);
	ck_assert_str_eq(s.ev[2], "again");
	free(over);
	seen_free(&s);
	proto_framer_free(fr);
}
END_TEST

/*
 * Cutting a stream at arbitrary places gives the same events as feeding
 * it whole.  The stream mixes short, limit-sized and overlong lines.
 */
START_TEST(random_splits)
{
	struct seen		 whole = { 0 }, cut = { 0 };
	struct proto_framer	*fr;
	size_t			 len = 0, off, n;
	char			*stream = xmalloc(8 * PROTO_MAX_LINE);
	unsigned int		 seed = 12345 + (unsigned int)_i;
	int			 i;

	static const size_t sizes[] = { 3, PROTO_MAX_LINE, 0, 17,
	    PROTO_MAX_LINE + 1, 1, 2 * PROTO_MAX_LINE, 40 };

	for (i = 0; i < (int)nitems(sizes); i++) {
		memset(stream + len, 'a' + i, sizes[i]);
		len += sizes[i];
		stream[len++] = '\n';
	}

	fr = proto_framer_new();
	proto_framer_feed(fr, stream, len, record, &whole);
	proto_framer_free(fr);
	ck_assert_int_eq(whole.n, 7);	/* 5 lines, 2 overlong, 1 empty skipped */

	fr = proto_framer_new();
	for (off = 0; off < len; off += n) {
		n = 1 + (size_t)rand_r(&seed) % 700;
		if (n > len - off)
			n = len - off;
		ck_assert_uint_eq(proto_framer_feed(fr, stream + off, n, record,
		    &cut), n);
	}
	proto_framer_free(fr);

	ck_assert_int_eq(cut.n, whole.n);
	for (i = 0; i < whole.n; i++) {
		ck_assert_uint_eq(cut.len[i], whole.len[i]);
		ck_assert_str_eq(cut.ev[i], whole.ev[i]);
	}
	free(stream);
	seen_free(&whole);
	seen_free(&cut);
}
END_TEST

static Suite *
framer_suite(void)
{
	Suite	*s = suite_create("proto_framer");
	TCase	*tc = tcase_create("framer");

	tcase_add_test(tc, several_lines_one_feed);
	tcase_add_test(tc, byte_by_byte);
	tcase_add_test(tc, empty_lines_skipped);
	tcase_add_test(tc, nul_bytes_passed_on);
	tcase_add_test(tc, exact_limit);
	tcase_add_test(tc, overlong_discarded_to_newline);
	tcase_add_test(tc, overlong_in_one_feed);
	tcase_add_test(tc, stop_and_resume);
	tcase_add_test(tc, stop_at_overlong);
	tcase_add_test(tc, reset_drops_partial);
	tcase_add_loop_test(tc, random_splits, 0, 20);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(framer_suite());
}
