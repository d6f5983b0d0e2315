/*
 * Unit tests of the protocol codec: every message survives encode+decode,
 * and every malformed, mistyped, out-of-range or hostile line is rejected
 * with a one-line cause naming the message type and field.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "proto.h"
#include "util.h"
#include "testlib.h"

#define SESSION_HEX	"0123456789abcdef"
#define SESSION		UINT64_C(0x0123456789abcdef)

static void
set_cpus(struct cpuset *s, const char *list)
{
	char	err[128];

	ck_assert_msg(cpuset_parse(s, list, err, sizeof err) == 0, "%s", err);
}

/* Encode msg, decode it as its receiver would, return the decoded copy. */
static void
round_trip(const struct proto_msg *in, enum proto_peer from,
    struct proto_msg *out)
{
	char	line[PROTO_MAX_LINE + 2], err[PROTO_MAX_ERROR];
	int	n;

	n = proto_encode(in, line, sizeof line);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq((size_t)n, strlen(line));
	ck_assert_int_eq(line[n - 1], '\n');
	ck_assert_ptr_null(memchr(line, '\n', (size_t)n - 1));
	ck_assert_ptr_nonnull(strstr(line, "\"v\":1"));
	ck_assert_msg(proto_decode(line, (size_t)n - 1, from, out, NULL, err,
	    sizeof err) == 0, "%s: %s", line, err);
	ck_assert_int_eq(out->type, in->type);
}

START_TEST(rt_hello_host)
{
	struct proto_msg	in, out;

	memset(&in, 0, sizeof in);
	in.type = PROTO_HELLO_HOST;
	in.hello_host.session = SESSION;
	strcpy(in.hello_host.host, "hv-01.example \"quoted\" \\ / \xc3\xa9");
	in.hello_host.period_ms = 1000;
	round_trip(&in, PROTO_FROM_HOST, &out);
	ck_assert_uint_eq(out.hello_host.session, SESSION);
	ck_assert_str_eq(out.hello_host.host, in.hello_host.host);
	ck_assert_uint_eq(out.hello_host.period_ms, 1000);
	proto_msg_clear(&out);
}
END_TEST

START_TEST(rt_hello_guest)
{
	struct proto_msg	in, out;
	struct cpuset		cores[3];
	unsigned int		i;

	memset(&in, 0, sizeof in);
	in.type = PROTO_HELLO_GUEST;
	in.hello_guest.session = UINT64_MAX;
	strcpy(in.hello_guest.agent, "prefcpu-guestd 0.1.0");
	set_cpus(&in.hello_guest.online, "0-5");
	set_cpus(&cores[0], "0-1");
	set_cpus(&cores[1], "2,4");
	set_cpus(&cores[2], "3,5");
	in.hello_guest.cores = cores;
	in.hello_guest.ncores = 3;
	strcpy(in.hello_guest.backend, "cpuset");
	in.hello_guest.nbackends = 2;
	strcpy(in.hello_guest.backends[0], "cpuset");
	strcpy(in.hello_guest.backends[1], "systemd");
	strcpy(in.hello_guest.kernel, "6.1.0-18-amd64");
	strcpy(in.hello_guest.governor, "steal");
	in.hello_guest.keeps_affinity = true;
	set_cpus(&in.hello_guest.applied, "0-1");
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert_uint_eq(out.hello_guest.session, UINT64_MAX);
	ck_assert_str_eq(out.hello_guest.agent, "prefcpu-guestd 0.1.0");
	ck_assert(cpuset_equal(&out.hello_guest.online, &in.hello_guest.online));
	ck_assert_uint_eq(out.hello_guest.ncores, 3);
	for (i = 0; i < 3; i++)
		ck_assert(cpuset_equal(&out.hello_guest.cores[i], &cores[i]));
	ck_assert_str_eq(out.hello_guest.backend, "cpuset");
	ck_assert_uint_eq(out.hello_guest.nbackends, 2);
	ck_assert_str_eq(out.hello_guest.backends[0], "cpuset");
	ck_assert_str_eq(out.hello_guest.backends[1], "systemd");
	ck_assert_str_eq(out.hello_guest.kernel, "6.1.0-18-amd64");
	ck_assert_str_eq(out.hello_guest.governor, "steal");
	ck_assert(out.hello_guest.keeps_affinity);
	ck_assert(cpuset_equal(&out.hello_guest.applied,
	    &in.hello_guest.applied));
	proto_msg_clear(&out);
	ck_assert_ptr_null(out.hello_guest.cores);
	ck_assert_uint_eq(out.hello_guest.ncores, 0);
	/* Cleared twice is harmless. */
	proto_msg_clear(&out);
}
END_TEST

START_TEST(rt_hello_guest_optional_absent)
{
	struct proto_msg	in, out;
	struct cpuset		core;

	memset(&in, 0, sizeof in);
	in.type = PROTO_HELLO_GUEST;
	in.hello_guest.session = 1;
	set_cpus(&in.hello_guest.online, "0");
	set_cpus(&core, "0");
	in.hello_guest.cores = &core;
	in.hello_guest.ncores = 1;
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert_str_eq(out.hello_guest.governor, "");
	ck_assert(!out.hello_guest.keeps_affinity);
	ck_assert(cpuset_empty(&out.hello_guest.applied));
	ck_assert_uint_eq(out.hello_guest.nbackends, 0);
	ck_assert_str_eq(out.hello_guest.agent, "");
	proto_msg_clear(&out);
}
END_TEST

START_TEST(rt_target)
{
	struct proto_msg	in, out;

	memset(&in, 0, sizeof in);
	in.type = PROTO_TARGET;
	in.target.session = SESSION;
	in.target.seq = PROTO_MAX_SEQ;
	set_cpus(&in.target.preferred, "0-3,8,10-11,8191");
	in.target.lease_ms = PROTO_MIN_LEASE_MS;
	round_trip(&in, PROTO_FROM_HOST, &out);
	ck_assert_uint_eq(out.target.session, SESSION);
	ck_assert_uint_eq(out.target.seq, PROTO_MAX_SEQ);
	ck_assert(cpuset_equal(&out.target.preferred, &in.target.preferred));
	ck_assert_uint_eq(out.target.lease_ms, PROTO_MIN_LEASE_MS);
}
END_TEST

START_TEST(rt_ack)
{
	struct proto_msg	in, out;
	char			line[PROTO_MAX_LINE + 2];

	memset(&in, 0, sizeof in);
	in.type = PROTO_ACK;
	in.ack.seq = 42;
	in.ack.ok = true;
	set_cpus(&in.ack.applied, "0-1");
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert_uint_eq(out.ack.seq, 42);
	ck_assert(out.ack.ok);
	ck_assert(cpuset_equal(&out.ack.applied, &in.ack.applied));
	ck_assert_str_eq(out.ack.error, "");

	memset(&in, 0, sizeof in);
	in.type = PROTO_ACK;
	in.ack.seq = 43;
	in.ack.ok = false;
	strcpy(in.ack.error, "cpuset.cpus of cgroup a: Permission denied");
	ck_assert_int_gt(proto_encode(&in, line, sizeof line), 0);
	/* A failed ack names its error and carries no applied set. */
	ck_assert_ptr_null(strstr(line, "applied"));
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert(!out.ack.ok);
	ck_assert_uint_eq(out.ack.seq, 43);
	ck_assert_str_eq(out.ack.error, in.ack.error);
}
END_TEST

START_TEST(rt_release)
{
	struct proto_msg	in, out;

	memset(&in, 0, sizeof in);
	in.type = PROTO_RELEASE;
	in.release.session = 0xfeedUL;
	round_trip(&in, PROTO_FROM_HOST, &out);
	ck_assert_uint_eq(out.release.session, 0xfeedUL);
}
END_TEST

START_TEST(rt_report)
{
	struct proto_msg	in, out;

	memset(&in, 0, sizeof in);
	in.type = PROTO_REPORT;
	set_cpus(&in.report.online, "0-63");
	in.report.steal_pct = 0.1;
	in.report.psi_some_avg10 = 100;
	in.report.nr_running = 1000000;
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert(cpuset_equal(&out.report.online, &in.report.online));
	/* Exact: json-c prints doubles with 17 significant digits. */
	ck_assert(out.report.steal_pct == 0.1);
	ck_assert(out.report.psi_some_avg10 == 100);
	ck_assert_uint_eq(out.report.nr_running, 1000000);
	ck_assert(!out.report.has_runnable);

	/* The optional mean travels next to the count when set. */
	in.report.has_runnable = true;
	in.report.runnable = 2.55;
	in.report.nr_running = 3;
	round_trip(&in, PROTO_FROM_GUEST, &out);
	ck_assert(out.report.has_runnable);
	ck_assert(out.report.runnable == 2.55);
	ck_assert_uint_eq(out.report.nr_running, 3);
}
END_TEST

START_TEST(rt_ping_pong_error)
{
	static const enum proto_peer peers[] = { PROTO_FROM_HOST,
	    PROTO_FROM_GUEST };
	struct proto_msg	in, out;
	unsigned int		i;

	for (i = 0; i < 2; i++) {
		memset(&in, 0, sizeof in);
		in.type = PROTO_PING;
		in.ping.seq = 9;
		round_trip(&in, peers[i], &out);
		ck_assert_uint_eq(out.ping.seq, 9);

		in.type = PROTO_PONG;
		round_trip(&in, peers[i], &out);
		ck_assert_uint_eq(out.ping.seq, 9);

		memset(&in, 0, sizeof in);
		in.type = PROTO_ERROR;
		strcpy(in.error.error, "target: seq: -1 is out of range");
		in.error.has_seq = true;
		in.error.seq = 5;
		round_trip(&in, peers[i], &out);
		ck_assert_str_eq(out.error.error, in.error.error);
		ck_assert(out.error.has_seq);
		ck_assert_uint_eq(out.error.seq, 5);

		in.error.has_seq = false;
		round_trip(&in, peers[i], &out);
		ck_assert(!out.error.has_seq);
		ck_assert_uint_eq(out.error.seq, 0);
	}
}
END_TEST

START_TEST(type_names)
{
	ck_assert_str_eq(proto_type_name(PROTO_HELLO_HOST), "hello");
	ck_assert_str_eq(proto_type_name(PROTO_HELLO_GUEST), "hello");
	ck_assert_str_eq(proto_type_name(PROTO_TARGET), "target");
	ck_assert_str_eq(proto_type_name(PROTO_ACK), "ack");
	ck_assert_str_eq(proto_type_name(PROTO_RELEASE), "release");
	ck_assert_str_eq(proto_type_name(PROTO_REPORT), "report");
	ck_assert_str_eq(proto_type_name(PROTO_PING), "ping");
	ck_assert_str_eq(proto_type_name(PROTO_PONG), "pong");
	ck_assert_str_eq(proto_type_name(PROTO_ERROR), "error");
}
END_TEST

/* The encoder refuses what its peer's decoder would reject. */
START_TEST(encode_rejects)
{
	struct proto_msg	m;
	struct cpuset		*cores;
	char			line[PROTO_MAX_LINE + 2];
	unsigned int		i;

	memset(&m, 0, sizeof m);
	m.type = PROTO_PING;
	m.ping.seq = 0;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	m.ping.seq = PROTO_MAX_SEQ + 1;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	m.ping.seq = 1;
	/* {"v":1,"type":"ping","seq":1} + '\n' + NUL needs 31 bytes. */
	ck_assert_int_eq(proto_encode(&m, line, 30), -1);
	ck_assert_int_eq(proto_encode(&m, line, 31), 30);
	ck_assert_str_eq(line, "{\"v\":1,\"type\":\"ping\",\"seq\":1}\n");

	memset(&m, 0, sizeof m);
	m.type = PROTO_REPORT;
	set_cpus(&m.report.online, "0");
	m.report.steal_pct = NAN;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	m.report.steal_pct = 100.5;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);

	memset(&m, 0, sizeof m);
	m.type = PROTO_TARGET;
	m.target.session = SESSION;
	m.target.seq = 1;
	m.target.lease_ms = 15000;
	/* Never send an empty preferred set. */
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	set_cpus(&m.target.preferred, "1");
	m.target.session = 0;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);

	memset(&m, 0, sizeof m);
	m.type = PROTO_ERROR;
	memset(m.error.error, 'x', sizeof m.error.error);	/* no NUL */
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	strcpy(m.error.error, "bad \xff byte");
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);

	/* 1024 cores of one high CPU each make a line far over 4096 bytes. */
	memset(&m, 0, sizeof m);
	m.type = PROTO_HELLO_GUEST;
	m.hello_guest.session = 1;
	cores = xcalloc(PROTO_MAX_CORES, sizeof *cores);
	for (i = 0; i < PROTO_MAX_CORES; i++)
		cpuset_set(&cores[i], 7000 + i);
	cpuset_set_range(&m.hello_guest.online, 7000, 7000 + PROTO_MAX_CORES - 1);
	m.hello_guest.cores = cores;
	m.hello_guest.ncores = PROTO_MAX_CORES;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
	/* ... and a hundred fit. */
	m.hello_guest.ncores = 100;
	ck_assert_int_gt(proto_encode(&m, line, sizeof line), 0);
	free(cores);

	m.type = (enum proto_type)99;
	ck_assert_int_eq(proto_encode(&m, line, sizeof line), -1);
}
END_TEST

/*
 * Field tables of valid messages.  'bad' is a value of the wrong JSON type
 * for that field; 'req' says whether leaving the field out is an error.
 */
struct tfield {
	const char	*name;
	const char	*good;
	const char	*bad;
	bool		 req;
};

struct tmsg {
	enum proto_peer	 from;
	const char	*type;
	struct tfield	 f[10];
};

static const struct tmsg tmsgs[] = {
	{ PROTO_FROM_HOST, "hello", {
		{ "session", "\"" SESSION_HEX "\"", "81985529216486895", true },
		{ "host", "\"hv1\"", "1", true },
		{ "period_ms", "1000", "\"1000\"", true },
	} },
	{ PROTO_FROM_GUEST, "hello", {
		{ "session", "\"" SESSION_HEX "\"", "true", true },
		{ "agent", "\"prefcpu-guestd 0.1.0\"", "[\"a\"]", true },
		{ "online", "\"0-3\"", "3", true },
		{ "cores", "[\"0-1\",\"2-3\"]", "\"0-1\"", true },
		{ "backend", "\"cpuset\"", "null", true },
		{ "backends", "[\"cpuset\",\"systemd\"]", "\"cpuset\"", true },
		{ "kernel", "\"6.1.0-18-amd64\"", "{}", true },
		{ "governor", "\"steal\"", "false", false },
		{ "keeps_affinity", "true", "\"true\"", false },
		{ "applied", "\"0-1\"", "[0]", false },
	} },
	{ PROTO_FROM_HOST, "target", {
		{ "session", "\"" SESSION_HEX "\"", "1", true },
		{ "seq", "7", "\"7\"", true },
		{ "preferred", "\"0-1\"", "[0,1]", true },
		{ "lease_ms", "15000", "15000.0", false },
	} },
	{ PROTO_FROM_GUEST, "ack", {
		{ "seq", "7", "7.0", true },
		{ "ok", "true", "1", true },
		{ "applied", "\"0-1\"", "1", true },
	} },
	{ PROTO_FROM_HOST, "release", {
		{ "session", "\"" SESSION_HEX "\"", "null", true },
	} },
	{ PROTO_FROM_GUEST, "report", {
		{ "online", "\"0-3\"", "[\"0-3\"]", true },
		{ "steal_pct", "12.5", "\"12.5\"", true },
		{ "psi_some_avg10", "3", "true", true },
		{ "nr_running", "5", "5.5", true },
		{ "runnable", "4.75", "\"4.75\"", false },
	} },
	{ PROTO_FROM_HOST, "ping", { { "seq", "3", "\"3\"", true } } },
	{ PROTO_FROM_GUEST, "ping", { { "seq", "3", "[3]", true } } },
	{ PROTO_FROM_HOST, "pong", { { "seq", "3", "{\"n\":3}", true } } },
	{ PROTO_FROM_GUEST, "error", {
		{ "error", "\"bad line\"", "404", true },
		{ "seq", "3", "\"3\"", false },
	} },
};

/* Build a line of message m: field 'skip' left out, field 'bad' mistyped. */
static size_t
build_line(char *buf, size_t len, const struct tmsg *m, int skip, int bad)
{
	int	i, n;
	size_t	off;

	n = snprintf(buf, len, "{\"v\":1,\"type\":\"%s\"", m->type);
	off = (size_t)n;
	for (i = 0; i < (int)nitems(m->f) && m->f[i].name != NULL; i++) {
		if (i == skip)
			continue;
		n = snprintf(buf + off, len - off, ",\"%s\":%s", m->f[i].name,
		    i == bad ? m->f[i].bad : m->f[i].good);
		off += (size_t)n;
	}
	n = snprintf(buf + off, len - off, "}");
	off += (size_t)n;
	ck_assert_uint_lt(off, len);
	return off;
}

/* The loop index over all fields of all messages: which message, field. */
static bool
pick_field(int idx, const struct tmsg **mp, int *fp)
{
	size_t	i;
	int	f;

	for (i = 0; i < nitems(tmsgs); i++) {
		for (f = 0; f < (int)nitems(tmsgs[i].f) &&
		    tmsgs[i].f[f].name != NULL; f++) {
			if (idx-- == 0) {
				*mp = &tmsgs[i];
				*fp = f;
				return true;
			}
		}
	}
	return false;
}

static int
count_fields(void)
{
	const struct tmsg	*m;
	int			 f, n = 0;

	while (pick_field(n, &m, &f))
		n++;
	return n;
}

/* No control byte and nothing after the cause: one log-safe line. */
static void
assert_one_line(const char *err)
{
	size_t	i;

	ck_assert_uint_gt(strlen(err), 0);
	for (i = 0; err[i] != '\0'; i++)
		ck_assert_msg((unsigned char)err[i] >= 0x20 && err[i] != 0x7f,
		    "control byte 0x%02x in \"%s\"", (unsigned char)err[i], err);
}

START_TEST(valid_lines_decode)
{
	struct proto_msg	msg;
	char			line[1024], err[PROTO_MAX_ERROR];
	size_t			n, i;

	for (i = 0; i < nitems(tmsgs); i++) {
		n = build_line(line, sizeof line, &tmsgs[i], -1, -1);
		ck_assert_msg(proto_decode(line, n, tmsgs[i].from, &msg, NULL,
		    err, sizeof err) == 0, "%s: %s", line, err);
		ck_assert_str_eq(proto_type_name(msg.type), tmsgs[i].type);
		proto_msg_clear(&msg);
	}
}
END_TEST

START_TEST(missing_field)
{
	const struct tmsg	*m;
	struct proto_msg	 msg;
	char			 line[1024], err[PROTO_MAX_ERROR], want[128];
	int			 f, rc;
	size_t			 n;

	ck_assert(pick_field(_i, &m, &f));
	n = build_line(line, sizeof line, m, f, -1);
	rc = proto_decode(line, n, m->from, &msg, NULL, err, sizeof err);
	if (!m->f[f].req) {
		ck_assert_msg(rc == 0, "%s: %s", line, err);
		proto_msg_clear(&msg);
		return;
	}
	ck_assert_msg(rc == -1, "accepted %s", line);
	snprintf(want, sizeof want, "%s: %s: missing", m->type, m->f[f].name);
	ck_assert_msg(strstr(err, want) == err, "\"%s\" lacks \"%s\"", err,
	    want);
	assert_one_line(err);
}
END_TEST

START_TEST(wrong_type_field)
{
	const struct tmsg	*m;
	struct proto_msg	 msg;
	char			 line[1024], err[PROTO_MAX_ERROR], want[128];
	int			 f;
	size_t			 n;

	ck_assert(pick_field(_i, &m, &f));
	n = build_line(line, sizeof line, m, -1, f);
	ck_assert_msg(proto_decode(line, n, m->from, &msg, NULL, err,
	    sizeof err) == -1, "accepted %s", line);
	snprintf(want, sizeof want, "%s: %s: expected ", m->type,
	    m->f[f].name);
	ck_assert_msg(strstr(err, want) == err, "\"%s\" lacks \"%s\"", err,
	    want);
	assert_one_line(err);
}
END_TEST

/* Lines that must be rejected, with a piece of the expected cause. */
struct bad_line {
	enum proto_peer	 from;
	const char	*line;
	size_t		 len;		/* 0: strlen(line) */
	const char	*cause;
};

#define H	PROTO_FROM_HOST
#define G	PROTO_FROM_GUEST
#define TGT(seq)	"{\"v\":1,\"type\":\"target\",\"session\":\"" \
			SESSION_HEX "\",\"seq\":" seq ",\"preferred\":\"0-1\"}"
#define TGTP(pref)	"{\"v\":1,\"type\":\"target\",\"session\":\"" \
			SESSION_HEX "\",\"seq\":1,\"preferred\":" pref "}"
#define RPT(steal)	"{\"v\":1,\"type\":\"report\",\"online\":\"0-3\"," \
			"\"steal_pct\":" steal ",\"psi_some_avg10\":0," \
			"\"nr_running\":1}"
#define HH(sess, per)	"{\"v\":1,\"type\":\"hello\",\"session\":" sess \
			",\"host\":\"h\",\"period_ms\":" per "}"
#define HG(cores, backends) \
	"{\"v\":1,\"type\":\"hello\",\"session\":\"" SESSION_HEX "\"," \
	"\"agent\":\"a\",\"online\":\"0-3\",\"cores\":" cores ","	\
	"\"backend\":\"cpuset\",\"backends\":" backends ",\"kernel\":\"k\"}"
#define CORES_OK	"[\"0-1\",\"2-3\"]"
#define BACK_OK		"[\"cpuset\"]"

static const struct bad_line bad_lines[] = {
	/* seq: negative, zero, 2^53, huge, doubles, strings */
	{ H, TGT("-1"), 0, "target: seq: -1 is out of range 1..9007199254740991" },
	{ H, TGT("0"), 0, "target: seq: 0 is out of range" },
	{ H, TGT("-0"), 0, "target: seq: 0 is out of range" },
	{ H, TGT("9007199254740992"), 0, "target: seq: 9007199254740992 is out of range" },
	{ H, TGT("18446744073709551615"), 0, "target: seq: 18446744073709551615 is out of range" },
	{ H, TGT("99999999999999999999999"), 0, "target: seq: " },
	{ H, TGT("-99999999999999999999999"), 0, "target: seq: " },
	{ H, TGT("1e300"), 0, "target: seq: expected an integer, got double" },
	{ H, TGT("1.0"), 0, "target: seq: expected an integer, got double" },
	{ H, TGT("-0.0"), 0, "target: seq: expected an integer" },
	{ H, TGT("\"1\""), 0, "target: seq: expected an integer, got string" },
	{ H, TGT("true"), 0, "target: seq: expected an integer, got boolean" },
	{ H, TGT("null"), 0, "target: seq: expected an integer, got null" },
	{ G, "{\"v\":1,\"type\":\"ping\",\"seq\":-5}", 0, "ping: seq: -5 is out of range" },
	{ G, "{\"v\":1,\"type\":\"error\",\"error\":\"x\",\"seq\":0}", 0, "error: seq: 0 is out of range" },
	/* the other ranges */
	{ H, HH("\"" SESSION_HEX "\"", "0"), 0, "hello: period_ms: 0 is out of range 1..3600000" },
	{ H, HH("\"" SESSION_HEX "\"", "3600001"), 0, "hello: period_ms: 3600001 is out of range" },
	{ H, HH("\"" SESSION_HEX "\"", "4294968296"), 0, "hello: period_ms: 4294968296 is out of range" },
	{ H, "{\"v\":1,\"type\":\"target\",\"session\":\"" SESSION_HEX "\",\"seq\":1,\"preferred\":\"0\",\"lease_ms\":99}", 0, "target: lease_ms: 99 is out of range 100..3600000" },
	{ H, "{\"v\":1,\"type\":\"target\",\"session\":\"" SESSION_HEX "\",\"seq\":1,\"preferred\":\"0\",\"lease_ms\":3600001}", 0, "target: lease_ms: 3600001 is out of range" },
	{ G, "{\"v\":1,\"type\":\"report\",\"online\":\"0\",\"steal_pct\":0,\"psi_some_avg10\":0,\"nr_running\":1000001}", 0, "report: nr_running: 1000001 is out of range 0..1000000" },
	{ G, "{\"v\":1,\"type\":\"report\",\"online\":\"0\",\"steal_pct\":0,\"psi_some_avg10\":0,\"nr_running\":-1}", 0, "report: nr_running: -1 is out of range" },
	{ G, "{\"v\":1,\"type\":\"report\",\"online\":\"0\",\"steal_pct\":0,\"psi_some_avg10\":0,\"nr_running\":1,\"runnable\":1000000.5}", 0, "report: runnable: 1000000.5 is out of range 0..1000000" },
	{ G, "{\"v\":1,\"type\":\"report\",\"online\":\"0\",\"steal_pct\":0,\"psi_some_avg10\":0,\"nr_running\":1,\"runnable\":-0.5}", 0, "report: runnable: -0.5 is out of range" },
	{ G, RPT("100.5"), 0, "report: steal_pct: 100.5 is out of range 0..100" },
	{ G, RPT("-1"), 0, "report: steal_pct: -1 is out of range" },
	{ G, RPT("-0.001"), 0, "report: steal_pct: -0.001 is out of range" },
	{ G, RPT("1e300"), 0, "report: steal_pct: 1e300 is out of range" },
	/* non-finite numbers json-c accepts */
	{ G, RPT("NaN"), 0, "report: steal_pct: NaN is not a finite number" },
	{ G, RPT("Infinity"), 0, "report: steal_pct: Infinity is not a finite number" },
	{ G, RPT("-Infinity"), 0, "report: steal_pct: -Infinity is not a finite number" },
	{ G, RPT("1e999"), 0, "report: steal_pct: 1e999 is not a finite number" },
	{ G, RPT("\"5\""), 0, "report: steal_pct: expected a number, got string" },
	/* sessions */
	{ H, HH("\"0000000000000000\"", "1000"), 0, "hello: session: session 0 is not valid" },
	{ H, HH("\"0123456789ABCDEF\"", "1000"), 0, "hello: session: not 16 lowercase hex digits" },
	{ H, HH("\"0123456789abcde\"", "1000"), 0, "hello: session: not 16 lowercase hex digits" },
	{ H, HH("\"0123456789abcdef0\"", "1000"), 0, "hello: session: not 16 lowercase hex digits" },
	{ H, HH("\"0123456789abcdeg\"", "1000"), 0, "hello: session: not 16 lowercase hex digits" },
	{ H, HH("\"-123456789abcdef\"", "1000"), 0, "hello: session: not 16 lowercase hex digits" },
	{ H, "{\"v\":1,\"type\":\"release\",\"session\":\"\"}", 0, "release: session: not 16" },
	/* cpulists inside messages */
	{ H, TGTP("\"3-1\""), 0, "target: preferred: descending range" },
	{ H, TGTP("\"0-8192\""), 0, "target: preferred: CPU 8192" },
	{ H, TGTP("\"99999999999999999999\""), 0, "target: preferred: CPU " },
	{ H, TGTP("\"0,,1\""), 0, "target: preferred: empty item" },
	{ H, TGTP("\"a\""), 0, "target: preferred: unexpected 'a'" },
	{ H, TGTP("\"0-1\\n\""), 0, "target: preferred: control character" },
	{ H, TGTP("\"\""), 0, "target: preferred: empty cpulist" },
	{ H, TGTP("\"0\\u00001\""), 0, "target: preferred: NUL byte" },
	{ H, TGTP("\"\\u001b[2J\""), 0, "target: preferred: unexpected byte 0x1b" },
	{ G, "{\"v\":1,\"type\":\"ack\",\"seq\":1,\"ok\":true,\"applied\":\"\"}", 0, "ack: applied: empty cpulist" },
	{ G, "{\"v\":1,\"type\":\"report\",\"online\":\"0-\",\"steal_pct\":0,\"psi_some_avg10\":0,\"nr_running\":1}", 0, "report: online: " },
	{ G, HG("[\"0-1\",\"1-3\"]", BACK_OK), 0, "hello: cores[1]: overlaps an earlier core" },
	{ G, HG("[\"0-1\",\"\"]", BACK_OK), 0, "hello: cores[1]: empty cpulist" },
	{ G, "{\"v\":1,\"type\":\"hello\",\"session\":\"" SESSION_HEX "\",\"agent\":\"a\",\"online\":\"0-3\",\"cores\":" CORES_OK ",\"backend\":\"cpuset\",\"backends\":" BACK_OK ",\"kernel\":\"k\",\"applied\":\"\"}", 0, "hello: applied: empty cpulist" },
	{ G, HG("[\"0-1\",\"x\"]", BACK_OK), 0, "hello: cores[1]: unexpected 'x'" },
	{ G, HG("[\"0-1\",2]", BACK_OK), 0, "hello: cores[1]: expected a cpulist string, got int" },
	{ G, HG("[]", BACK_OK), 0, "hello: cores: 0 cores, not 1..1024" },
	{ G, HG(CORES_OK, "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]"), 0, "hello: backends: 9 entries, more than 8" },
	{ G, HG(CORES_OK, "[\"a\",1]"), 0, "hello: backends[1]: expected a string, got int" },
	/* the ack's cross-field rules */
	{ G, "{\"v\":1,\"type\":\"ack\",\"seq\":1,\"ok\":true}", 0, "ack: applied: missing (ok is true)" },
	{ G, "{\"v\":1,\"type\":\"ack\",\"seq\":1,\"ok\":false}", 0, "ack: error: missing (ok is false)" },
	/* texts */
	{ H, "{\"v\":1,\"type\":\"hello\",\"session\":\"" SESSION_HEX "\",\"host\":\"a\\nb\",\"period_ms\":1}", 0, "hello: host: control character at offset 1" },
	{ G, "{\"v\":1,\"type\":\"error\",\"error\":\"a\\u0000b\"}", 0, "error: error: control character at offset 1" },
	/* version */
	{ H, "{\"type\":\"ping\",\"seq\":1}", 0, "v: missing" },
	{ H, "{\"v\":2,\"type\":\"ping\",\"seq\":1}", 0, "v: version 2 is not supported" },
	{ H, "{\"v\":0,\"type\":\"ping\",\"seq\":1}", 0, "v: version 0 is not supported" },
	{ H, "{\"v\":\"1\",\"type\":\"ping\",\"seq\":1}", 0, "v: expected the integer 1, got string" },
	{ H, "{\"v\":1.0,\"type\":\"ping\",\"seq\":1}", 0, "v: expected the integer 1, got double" },
	{ H, "{\"v\":true,\"type\":\"ping\",\"seq\":1}", 0, "v: expected the integer 1, got boolean" },
	/* types */
	{ H, "{\"v\":1,\"seq\":1}", 0, "type: missing" },
	{ H, "{\"v\":1,\"type\":7,\"seq\":1}", 0, "type: expected a string, got int" },
	{ H, "{\"v\":1,\"type\":\"bogus\"}", 0, "unknown type \"bogus\" from the host" },
	{ H, "{\"v\":1,\"type\":\"\"}", 0, "unknown type \"\" from the host" },
	{ G, "{\"v\":1,\"type\":\"target\",\"session\":\"" SESSION_HEX "\",\"seq\":1,\"preferred\":\"0\"}", 0, "unknown type \"target\" from the guest" },
	{ G, "{\"v\":1,\"type\":\"release\",\"session\":\"" SESSION_HEX "\"}", 0, "unknown type \"release\" from the guest" },
	{ H, "{\"v\":1,\"type\":\"ack\",\"seq\":1,\"ok\":false,\"error\":\"x\"}", 0, "unknown type \"ack\" from the host" },
	{ H, "{\"v\":1,\"type\":\"report\"}", 0, "unknown type \"report\" from the host" },
	{ H, "{\"v\":1,\"type\":\"PING\",\"seq\":1}", 0, "unknown type \"PING\"" },
	{ G, "{\"v\":1,\"type\":\"\\u001b]0;pwned\\u0007\"}", 0, "unknown type \"\\x1b]0;pwned\\x07\" from the guest" },
	/* syntax json-c's strict mode still accepts, and plain syntax errors */
	{ H, "{'v':1,\"type\":\"ping\",\"seq\":1}", 0, "line: single-quoted string at offset 1" },
	{ H, "{\"v\":1,\"type\":'ping',\"seq\":1}", 0, "line: single-quoted string at offset 14" },
	{ H, "{\"v\":1,\"type\":\"pi\tng\",\"seq\":1}", 0, "line: control character in a string at offset 17" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1} x", 0, "line: " },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1}{}", 0, "line: " },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1", 0, "line: not JSON: truncated" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1,}", 0, "line: not JSON: " },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":01}", 0, "line: not JSON: " },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":+1}", 0, "line: not JSON: " },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":0x1}", 0, "line: not JSON: " },
	{ H, "/**/{\"v\":1,\"type\":\"ping\",\"seq\":1}", 0, "line: not JSON: " },
	{ H, "[{\"v\":1,\"type\":\"ping\",\"seq\":1}]", 0, "line: expected a JSON object, got array" },
	{ H, "\"ping\"", 0, "line: expected a JSON object, got string" },
	{ H, "1", 0, "line: not JSON: truncated" },
	{ H, "", 0, "line: empty" },
	{ H, "   ", 0, "line: not JSON: truncated" },
	/* nesting: 4 levels are accepted (see depth_limit), 5 are not */
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1,\"x\":[[[[1]]]]}", 0, "line: not JSON: nesting too deep" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1,\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", 0, "line: not JSON: nesting too deep" },
	/* bytes */
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1}\0", 30, "line: NUL byte at offset 29" },
	{ H, "{\"v\":1,\"type\":\"pi\0ng\",\"seq\":1}", 30, "line: NUL byte at offset 17" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"x\":\"\xff\",\"seq\":1}", 0, "line: invalid UTF-8 at offset 26" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"x\":\"\xc0\x80\",\"seq\":1}", 0, "line: invalid UTF-8 at offset 26" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"x\":\"\xed\xa0\x80\",\"seq\":1}", 0, "line: invalid UTF-8 at offset 26" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"x\":\"\xf4\x90\x80\x80\",\"seq\":1}", 0, "line: invalid UTF-8 at offset 26" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"x\":\"\xe2\x82\",\"seq\":1}", 0, "line: invalid UTF-8 at offset 26" },
	{ H, "{\"v\":1,\"type\":\"ping\",\"seq\":1}\xc3", 0, "line: invalid UTF-8 at offset 29" },
};

START_TEST(bad_line)
{
	const struct bad_line	*b = &bad_lines[_i];
	struct proto_msg	 msg;
	char			 err[PROTO_MAX_ERROR];
	size_t			 len = b->len ? b->len : strlen(b->line);

	memset(&msg, 0xa5, sizeof msg);
	ck_assert_msg(proto_decode(b->line, len, b->from, &msg, NULL, err,
	    sizeof err) == -1, "accepted %s", b->line);
	ck_assert_msg(strstr(err, b->cause) == err, "\"%s\" is not \"%s...\"",
	    err, b->cause);
	assert_one_line(err);
	/* Nothing to free after an error; clearing must still be safe. */
	ck_assert_ptr_null(msg.type == PROTO_HELLO_GUEST ?
	    msg.hello_guest.cores : NULL);
	proto_msg_clear(&msg);
}
END_TEST

/* Text fields are bounded by their buffers, NUL included. */
START_TEST(text_lengths)
{
	struct proto_msg	msg;
	char			line[1024], name[PROTO_MAX_ERROR + 2], err[PROTO_MAX_ERROR];
	int			n;

	memset(name, 'a', sizeof name);
	name[PROTO_MAX_TEXT - 1] = '\0';
	n = snprintf(line, sizeof line, "{\"v\":1,\"type\":\"hello\",\"session\":"
	    "\"" SESSION_HEX "\",\"host\":\"%s\",\"period_ms\":1}", name);
	ck_assert_msg(proto_decode(line, (size_t)n, PROTO_FROM_HOST, &msg, NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(strlen(msg.hello_host.host), PROTO_MAX_TEXT - 1);

	name[PROTO_MAX_TEXT - 1] = 'a';
	name[PROTO_MAX_TEXT] = '\0';
	n = snprintf(line, sizeof line, "{\"v\":1,\"type\":\"hello\",\"session\":"
	    "\"" SESSION_HEX "\",\"host\":\"%s\",\"period_ms\":1}", name);
	ck_assert_int_eq(proto_decode(line, (size_t)n, PROTO_FROM_HOST, &msg,
	    NULL, err, sizeof err), -1);
	ck_assert_str_eq(err, "hello: host: 128 bytes, longer than 127");

	/* Error texts have their own, longer bound. */
	memset(name, 'a', sizeof name);
	name[PROTO_MAX_ERROR - 1] = '\0';
	n = snprintf(line, sizeof line, "{\"v\":1,\"type\":\"error\","
	    "\"error\":\"%s\"}", name);
	ck_assert_msg(proto_decode(line, (size_t)n, PROTO_FROM_GUEST, &msg,
	    NULL, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(strlen(msg.error.error), PROTO_MAX_ERROR - 1);
	name[PROTO_MAX_ERROR - 1] = 'a';
	name[PROTO_MAX_ERROR] = '\0';
	n = snprintf(line, sizeof line, "{\"v\":1,\"type\":\"error\","
	    "\"error\":\"%s\"}", name);
	ck_assert_int_eq(proto_decode(line, (size_t)n, PROTO_FROM_GUEST, &msg,
	    NULL, err, sizeof err), -1);
	ck_assert_str_eq(err, "error: error: 256 bytes, longer than 255");

	/* A multi-byte character counts as its bytes, and survives intact. */
	n = snprintf(line, sizeof line, "{\"v\":1,\"type\":\"error\","
	    "\"error\":\"\xe2\x82\xac \\u20ac \\ud83d\\ude00\"}");
	ck_assert_msg(proto_decode(line, (size_t)n, PROTO_FROM_GUEST, &msg,
	    NULL, err, sizeof err) == 0, "%s", err);
	ck_assert_str_eq(msg.error.error, "\xe2\x82\xac \xe2\x82\xac \xf0\x9f\x98\x80");
}
END_TEST

/* Pad a valid ping with an unknown field to exactly 'total' bytes. */
static size_t
padded_ping(char *buf, size_t total)
{
	static const char head[] = "{\"v\":1,\"type\":\"ping\",\"seq\":1,\"pad\":\"";
	size_t	off = sizeof head - 1;

	memcpy(buf, head, off);
	memset(buf + off, 'p', total - off - 2);
	memcpy(buf + total - 2, "\"}", 2);
	buf[total] = '\0';
	return total;
}

START_TEST(line_size_limit)
{
	static char		line[PROTO_MAX_LINE + 64];
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	size_t			n;

	n = padded_ping(line, PROTO_MAX_LINE);
	ck_assert_msg(proto_decode(line, n, PROTO_FROM_HOST, &msg, NULL, err,
	    sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(msg.ping.seq, 1);

	n = padded_ping(line, PROTO_MAX_LINE + 1);
	ck_assert_int_eq(proto_decode(line, n, PROTO_FROM_HOST, &msg, NULL,
	    err, sizeof err), -1);
	ck_assert_str_eq(err, "line: 4097 bytes, longer than 4096");
}
END_TEST

START_TEST(depth_limit)
{
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	const char		*ok = "{\"v\":1,\"type\":\"ping\",\"seq\":2,"
				    "\"x\":[[{\"y\":1}]]}";

	ck_assert_int_eq(PROTO_MAX_DEPTH, 4);
	ck_assert_msg(proto_decode(ok, strlen(ok), PROTO_FROM_GUEST, &msg,
	    NULL, err, sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(msg.ping.seq, 2);
}
END_TEST

START_TEST(unknown_fields_ignored)
{
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	const char		*l = "{\"future\":{\"a\":[1,2]},\"v\":1,"
				    "\"type\":\"target\",\"extra\":\"\\u0007\","
				    "\"seq\":12,\"session\":\"" SESSION_HEX "\","
				    "\"preferred\":\"4-7\",\"n\":NaN}  \r";
	struct cpuset		want;

	ck_assert_msg(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg, NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(msg.type, PROTO_TARGET);
	ck_assert_uint_eq(msg.target.seq, 12);
	set_cpus(&want, "4-7");
	ck_assert(cpuset_equal(&msg.target.preferred, &want));
	/* lease_ms left out: the documented default. */
	ck_assert_uint_eq(msg.target.lease_ms, PROTO_DEFAULT_LEASE_MS);
}
END_TEST

/* Numbers may be written as JSON allows; percentages as integers too. */
START_TEST(number_forms)
{
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	const char		*l = RPT("1.25e1");
	const char		*z = RPT("-0.0");

	ck_assert_msg(proto_decode(l, strlen(l), PROTO_FROM_GUEST, &msg, NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert(msg.report.steal_pct == 12.5);
	ck_assert(msg.report.psi_some_avg10 == 0);
	ck_assert_msg(proto_decode(z, strlen(z), PROTO_FROM_GUEST, &msg, NULL,
	    err, sizeof err) == 0, "%s", err);
	ck_assert(msg.report.steal_pct == 0);
}
END_TEST

START_TEST(seq_out)
{
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	uint64_t		seq = 99;
	const char		*l;

	/* A target with a bad cpulist still yields its seq for the reply. */
	l = TGTP("\"5-1\"");
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    &seq, err, sizeof err), -1);
	ck_assert_uint_eq(seq, 1);

	l = "{\"v\":1,\"type\":\"nonsense\",\"seq\":77}";
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    &seq, err, sizeof err), -1);
	ck_assert_uint_eq(seq, 77);

	l = TGT("-3");
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    &seq, err, sizeof err), -1);
	ck_assert_uint_eq(seq, 0);

	seq = 99;
	l = "{\"v\":1,\"type\":\"ping\",\"seq\":5";
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    &seq, err, sizeof err), -1);
	ck_assert_uint_eq(seq, 0);

	l = "{\"v\":1,\"type\":\"ping\",\"seq\":6}";
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    &seq, err, sizeof err), 0);
	ck_assert_uint_eq(seq, 6);

	ck_assert_int_eq(proto_decode(l, strlen(l), (enum proto_peer)2, &msg,
	    &seq, err, sizeof err), -1);
	ck_assert_str_eq(err, "no such peer 2");

	/* err and seq_out are optional. */
	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_HOST, &msg,
	    NULL, NULL, 0), 0);
	ck_assert_int_eq(proto_decode("x", 1, PROTO_FROM_HOST, &msg,
	    NULL, NULL, 0), -1);
}
END_TEST

/*
 * Every cause can be sent back in an "error" message, even when the cut
 * at the buffer's end falls inside an escaped multi-byte character.
 */
START_TEST(cause_fits_error_message)
{
	struct proto_msg	msg, reply;
	char			line[PROTO_MAX_LINE + 2], small[40];
	size_t			n, cut;
	int			i;

	n = (size_t)sprintf(line, "{\"v\":1,\"type\":\"");
	for (i = 0; i < 40; i++)
		n += (size_t)sprintf(line + n, "\xe2\x82\xac");
	n += (size_t)sprintf(line + n, "\"}");
	for (cut = 1; cut <= sizeof small; cut++) {
		ck_assert_int_eq(proto_decode(line, n, PROTO_FROM_GUEST, &msg,
		    NULL, small, cut), -1);
		memset(&reply, 0, sizeof reply);
		reply.type = PROTO_ERROR;
		memcpy(reply.error.error, small, strlen(small) + 1);
		ck_assert_msg(cut == 1 || strlen(small) > 0, "empty cause");
		ck_assert_msg(proto_encode(&reply, line + n + 1,
		    sizeof line - n - 1) > 0, "cut %zu: \"%s\" cannot be sent",
		    cut, small);
	}
	ck_assert_ptr_nonnull(strstr(small, "unknown type \"\xe2\x82\xac"));
}
END_TEST

/* A hello whose cores decoded but whose later field fails leaks nothing. */
START_TEST(no_leak_on_late_error)
{
	struct proto_msg	msg;
	char			err[PROTO_MAX_ERROR];
	const char		*l = "{\"v\":1,\"type\":\"hello\",\"session\":\""
				    SESSION_HEX "\",\"agent\":\"a\",\"online\":"
				    "\"0-3\",\"cores\":[\"0-1\",\"2-3\"],"
				    "\"backend\":\"b\",\"backends\":[],"
				    "\"kernel\":5}";

	ck_assert_int_eq(proto_decode(l, strlen(l), PROTO_FROM_GUEST, &msg,
	    NULL, err, sizeof err), -1);
	ck_assert_str_eq(err, "hello: kernel: expected a string, got int");
	ck_assert_ptr_null(msg.hello_guest.cores);
}
END_TEST

/* A guest hello whose "cores" is the array of the n items given. */
static size_t
hello_with_cores(char *buf, int n, bool numbers)
{
	size_t	off;
	int	j;

	off = (size_t)sprintf(buf, "{\"v\":1,\"type\":\"hello\",\"session\":\""
	    SESSION_HEX "\",\"agent\":\"\",\"online\":\"0-9\",\"backend\":"
	    "\"\",\"backends\":[],\"kernel\":\"\",\"cores\":[");
	for (j = 0; j < n; j++) {
		/* Integers are the shortest entries that reach the count. */
		if (numbers)
			off += (size_t)sprintf(buf + off, "%s0", j ? "," : "");
		else
			off += (size_t)sprintf(buf + off, "%s\"%d\"",
			    j ? "," : "", j);
	}
	off += (size_t)sprintf(buf + off, "]}");
	ck_assert_uint_le(off, PROTO_MAX_LINE);
	return off;
}

/* The core count is bounded before any entry is parsed or allocated. */
START_TEST(max_cores)
{
	struct proto_msg	msg;
	char			line[PROTO_MAX_LINE + 64], err[PROTO_MAX_ERROR];
	size_t			n;

	n = hello_with_cores(line, 10, false);
	ck_assert_msg(proto_decode(line, n, PROTO_FROM_GUEST, &msg, NULL, err,
	    sizeof err) == 0, "%s", err);
	ck_assert_uint_eq(msg.hello_guest.ncores, 10);
	ck_assert(cpuset_isset(&msg.hello_guest.cores[9], 9));
	ck_assert_uint_eq(cpuset_count(&msg.hello_guest.cores[9]), 1);
	proto_msg_clear(&msg);

	n = hello_with_cores(line, PROTO_MAX_CORES, true);
	ck_assert_int_eq(proto_decode(line, n, PROTO_FROM_GUEST, &msg, NULL,
	    err, sizeof err), -1);
	ck_assert_str_eq(err, "hello: cores[0]: expected a cpulist string, "
	    "got int");

	n = hello_with_cores(line, PROTO_MAX_CORES + 1, true);
	ck_assert_int_eq(proto_decode(line, n, PROTO_FROM_GUEST, &msg, NULL,
	    err, sizeof err), -1);
	ck_assert_str_eq(err, "hello: cores: 1025 cores, not 1..1024");
}
END_TEST

START_TEST(session_ids)
{
	char		hex[17];
	uint64_t	a, b;

	proto_session_format(UINT64_C(0xab), hex);
	ck_assert_str_eq(hex, "00000000000000ab");
	proto_session_format(UINT64_MAX, hex);
	ck_assert_str_eq(hex, "ffffffffffffffff");
	a = proto_session_new();
	b = proto_session_new();
	ck_assert_uint_ne(a, 0);
	ck_assert_uint_ne(b, 0);
	/* 2^-64 odds of a false failure. */
	ck_assert_uint_ne(a, b);
}
END_TEST

static Suite *
proto_suite(void)
{
	Suite	*s = suite_create("proto");
	TCase	*tc;

	tc = tcase_create("round_trip");
	tcase_add_test(tc, rt_hello_host);
	tcase_add_test(tc, rt_hello_guest);
	tcase_add_test(tc, rt_hello_guest_optional_absent);
	tcase_add_test(tc, rt_target);
	tcase_add_test(tc, rt_ack);
	tcase_add_test(tc, rt_release);
	tcase_add_test(tc, rt_report);
	tcase_add_test(tc, rt_ping_pong_error);
	tcase_add_test(tc, type_names);
	tcase_add_test(tc, encode_rejects);
	tcase_add_test(tc, session_ids);
	suite_add_tcase(s, tc);

	tc = tcase_create("decode");
	tcase_add_test(tc, valid_lines_decode);
	tcase_add_loop_test(tc, missing_field, 0, count_fields());
	tcase_add_loop_test(tc, wrong_type_field, 0, count_fields());
	tcase_add_loop_test(tc, bad_line, 0, (int)nitems(bad_lines));
	tcase_add_test(tc, text_lengths);
	tcase_add_test(tc, line_size_limit);
	tcase_add_test(tc, depth_limit);
	tcase_add_test(tc, unknown_fields_ignored);
	tcase_add_test(tc, number_forms);
	tcase_add_test(tc, seq_out);
	tcase_add_test(tc, no_leak_on_late_error);
	tcase_add_test(tc, cause_fits_error_message);
	tcase_add_test(tc, max_cores);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(proto_suite());
}
