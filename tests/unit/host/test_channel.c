/*
 * Unit tests for host-agent/channel: the channel manager on a real libevent
 * base and a real model, against a test peer listening on a unix socket in
 * a temp dir where QEMU would, playing the guest byte by byte.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "channel.h"
#include "log.h"
#include "model.h"
#include "util.h"
#include "testlib.h"

#define U1	"11111111-1111-1111-1111-111111111111"
#define PERIOD	100	/* ms */
#define WAIT	5000	/* ms, for anything that should happen */

/* The guest end: what QEMU would be, listening on the channel socket. */
struct peer {
	int	 lfd;
	int	 fd;		/* accepted connection, -1 if none */
	bool	 eof;		/* the daemon closed it */
	unsigned int accepts;
	uint64_t accept_ms[16];
	char	 buf[1 << 16];
	size_t	 len;
	bool	 reading;	/* false: leave the daemon's bytes unread */
};

static char		*dir;
static char		*sock;
static struct event_base *base;
static struct host	*host;
static struct chan_mgr	*mgr;
static struct vm	*vm;
static struct peer	 peer;
static struct chan_conf	 conf;

static void
peer_listen(void)
{
	struct sockaddr_un	sun;

	memset(&peer, 0, sizeof(peer));
	peer.fd = -1;
	peer.reading = true;
	peer.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(peer.lfd, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	ck_assert_int_eq(bind(peer.lfd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
	ck_assert_int_eq(listen(peer.lfd, 4), 0);
}

static void
peer_drop(void)
{
	if (peer.fd >= 0)
		close(peer.fd);
	peer.fd = -1;
	peer.len = 0;
	peer.eof = false;
}

/* One step of the world: the daemon's loop, then the peer's socket. */
static void
step(void)
{
	ssize_t	n;
	int	fd;

	event_base_loop(base, EVLOOP_NONBLOCK);
	if (peer.fd < 0 || peer.eof) {
		fd = accept4(peer.lfd, NULL, NULL, SOCK_NONBLOCK);
		if (fd >= 0) {
			peer_drop();
			peer.fd = fd;
			if (peer.accepts < nitems(peer.accept_ms))
				peer.accept_ms[peer.accepts] = time_mono_ms();
			peer.accepts++;
		}
	}
	if (peer.fd >= 0 && peer.reading && !peer.eof &&
	    peer.len < sizeof(peer.buf) - 1) {
		n = read(peer.fd, peer.buf + peer.len,
		    sizeof(peer.buf) - 1 - peer.len);
		if (n == 0)
			peer.eof = true;
		else if (n > 0)
			peer.len += (size_t)n;
	}
	peer.buf[peer.len] = '\0';
	usleep(1000);
}

static void
pump(unsigned int ms)
{
	uint64_t	end = time_mono_ms() + ms;

	while (time_mono_ms() < end)
		step();
}

#define WAIT_FOR(cond) do {						\
	uint64_t _end = time_mono_ms() + WAIT;				\
	while (!(cond) && time_mono_ms() < _end)			\
		step();							\
	ck_assert_msg((cond), "timed out waiting for " #cond);		\
} while (0)

/* Take the next line the daemon sent (without its newline); NULL at EOF. */
static char *
peer_line(void)
{
	char		*nl, *line;
	uint64_t	 end = time_mono_ms() + WAIT;

	while ((nl = memchr(peer.buf, '\n', peer.len)) == NULL &&
	    !peer.eof && time_mono_ms() < end)
		step();
	if (nl == NULL) {
		ck_assert_msg(peer.eof, "no line from the daemon");
		return NULL;
	}
	line = xstrndup(peer.buf, (size_t)(nl - peer.buf));
	peer.len -= (size_t)(nl - peer.buf) + 1;
	memmove(peer.buf, nl + 1, peer.len);
	peer.buf[peer.len] = '\0';
	return line;
}

/* The next line of a given type, skipping others (pings, targets). */
static char *
peer_expect(const char *type)
{
	char	 want[64], *line;

	snprintf(want, sizeof(want), "\"type\":\"%s\"", type);
	while ((line = peer_line()) != NULL) {
		if (strstr(line, want) != NULL)
			return line;
		free(line);
	}
	ck_abort_msg("EOF waiting for a %s", type);
	return NULL;
}

static void
peer_send(const char *text, size_t len)
{
	size_t	off = 0;
	ssize_t	n;

	while (off < len) {
		n = write(peer.fd, text + off, len - off);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			step();
			continue;
		}
		if (n < 0)
			return;		/* the daemon hung up: that is allowed */
		off += (size_t)n;
	}
}

static void
peer_sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
peer_sendf(const char *fmt, ...)
{
	va_list	 ap;
	char	*text;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&text, fmt, ap), 0);
	va_end(ap);
	peer_send(text, strlen(text));
	free(text);
}

/* Session id from the daemon's hello line. */
static void
hello_session(const char *line, char sid[17])
{
	const char	*p = strstr(line, "\"session\":\"");

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p + 11, "%16[0-9a-f]", sid), 1);
	ck_assert_int_eq(strlen(sid), 16);
}

static uint64_t
line_seq(const char *line)
{
	const char	*p = strstr(line, "\"seq\":");
	uint64_t	 seq;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(sscanf(p + 6, "%" SCNu64, &seq), 1);
	return seq;
}

static void
guest_hello(const char *sid)
{
	peer_sendf("{\"v\":1,\"type\":\"hello\",\"session\":\"%s\","
	    "\"agent\":\"fake-agent <1> \\u00e9\",\"online\":\"0-3\","
	    "\"cores\":[\"0\",\"1\",\"2\",\"3\"],\"backend\":\"cpuset\","
	    "\"backends\":[\"cpuset\"],\"kernel\":\"6.1.0\"}\n", sid);
}

/* Accept the connection, read "\n" + hello, answer it. */
static void
handshake(char sid[17])
{
	char	*line;

	WAIT_FOR(peer.fd >= 0);
	line = peer_expect("hello");
	hello_session(line, sid);
	free(line);
	guest_hello(sid);
	WAIT_FOR(vm->chan.hello);
}

static void
ack(uint64_t seq, const char *applied)
{
	peer_sendf("{\"v\":1,\"type\":\"ack\",\"seq\":%" PRIu64 ",\"ok\":true,"
	    "\"applied\":\"%s\"}\n", seq, applied);
}

/* One period of the pipeline with the VM fixed on cpus. */
static void
period(const char *cpus)
{
	vm->meta.present = true;
	vm->meta.valid = true;
	polmeta_init(&vm->meta.pol);
	ck_assert_int_eq(polmeta_set_text(&vm->meta.pol, PM_MODE, "fixed",
	    PMN_ATTR, NULL, 0), 0);
	ck_assert_int_eq(polmeta_set_text(&vm->meta.pol, PM_CPUS, cpus,
	    PMN_ATTR, NULL, 0), 0);
	ck_assert_int_eq(host_period(host, time_mono_ms()), 0);
}

static void
start(bool observe)
{
	struct host_sample	*hs;
	struct vm_info		 info;
	unsigned int		 i;

	mgr = chan_mgr_new(base, host, &conf, PERIOD, observe);
	vm = host_vm_add(host, U1, "guest<1>");
	memset(&info, 0, sizeof(info));
	snprintf(info.uuid, sizeof(info.uuid), "%s", U1);
	info.name = xstrdup("guest<1>");
	info.nvcpus = 4;
	cpuset_set_range(&info.online, 0, 3);
	info.ncores = 4;
	info.core = xcalloc(4, sizeof(*info.core));
	for (i = 0; i < 4; i++)
		cpuset_set(&info.core[i], i);
	info.channel = xstrdup(sock);
	vm_set_info(vm, &info);
	hs = host_sample_mut(host);
	cpuset_set_range(&hs->usable, 0, 7);
	hs->online = hs->usable;
	hs->capacity = 8;
	hs->valid = true;
	host_vm_changed(host, vm);
}

static void
setup(void)
{
	struct host_params	p;

	log_init("test-channel", getenv("TEST_CHANNEL_DEBUG") != NULL ?
	    LOGL_DEBUG : LOGL_ERR);
	/* As the daemon: a peer gone is an error return, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	dir = testlib_tmpdir();
	xasprintf(&sock, "%s/chan.sock", dir);
	peer_listen();
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	memset(&p, 0, sizeof(p));
	p.history = 4;
	p.decisions = 4;
	policy_config_default(&p.policy);
	host = host_new(&p);
	chan_conf_default(&conf);
	conf.backoff_min_ms = 50;
	conf.backoff_max_ms = 400;
	conf.max_output = 8192;
	mgr = NULL;
	vm = NULL;
}

static void
teardown(void)
{
	chan_mgr_free(mgr);
	host_free(host);
	event_base_free(base);
	peer_drop();
	close(peer.lfd);
	unlink(sock);
	free(sock);
	testlib_rmtree(dir);
}

START_TEST(test_conf)
{
	struct chan_conf	c;
	char			err[128];

	chan_conf_default(&c);
	ck_assert_uint_eq(c.lease_ms, 15000);
	ck_assert_uint_eq(c.rate, 50);
	ck_assert_uint_eq(c.backoff_min_ms, 1000);
	ck_assert_uint_eq(c.backoff_max_ms, 60000);
	ck_assert_int_eq(chan_conf_check(&c, err, sizeof(err)), 0);
	c.backoff_min_ms = 70000;
	ck_assert_int_eq(chan_conf_check(&c, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "backoff-min-ms"));
}
END_TEST

START_TEST(test_hello_first)
{
	char	*line, sid[17], want[40];

	start(false);
	WAIT_FOR(peer.fd >= 0);
	ck_assert(vm->chan.connected);
	ck_assert_uint_eq(vm->chan.connects, 1);
	/* Resync: a lone newline before anything else. */
	WAIT_FOR(peer.len > 0);
	ck_assert_int_eq(peer.buf[0], '\n');
	line = peer_line();
	ck_assert_str_eq(line, "");
	free(line);
	line = peer_line();
	ck_assert_ptr_nonnull(strstr(line, "\"type\":\"hello\""));
	ck_assert_ptr_nonnull(strstr(line, "\"period_ms\":100"));
	hello_session(line, sid);
	snprintf(want, sizeof(want), "%016" PRIx64, vm->chan.session);
	ck_assert_str_eq(sid, want);
	free(line);
	ck_assert(!vm->chan.hello);
	ck_assert(!vm->chan.following);
}
END_TEST

START_TEST(test_session_and_targets)
{
	char	*line, sid[17];

	start(false);
	WAIT_FOR(peer.fd >= 0);
	line = peer_expect("hello");
	hello_session(line, sid);
	free(line);
	/* Lines before our session's hello are dropped, not counted. */
	ack(1, "0");
	guest_hello("0123456789abcdef");
	pump(50);
	ck_assert(!vm->chan.hello);
	ck_assert_uint_eq(vm->chan.err_protocol + vm->chan.err_decode, 0);

	guest_hello(sid);
	WAIT_FOR(vm->chan.hello);
	/* Guest text kept as sent (bounded), escaped only in logs. */
	ck_assert_str_eq(vm->chan.agent, "fake-agent <1> \xc3\xa9");
	ck_assert_str_eq(vm->chan.backend, "cpuset");
	ck_assert_uint_eq(vm->chan.guest_ncores, 4);
	ck_assert(!vm->chan.following);

	/* Not steerable yet: the policy gives it every vCPU. */
	period("0-1");
	line = peer_expect("target");
	ck_assert_ptr_nonnull(strstr(line, "\"preferred\":\"0-3\""));
	ck_assert_ptr_nonnull(strstr(line, "\"lease_ms\":15000"));
	ck_assert_ptr_nonnull(strstr(line, sid));
	ck_assert_uint_eq(line_seq(line), 1);
	free(line);
	ck_assert_uint_eq(vm->chan.target_seq, 1);
	ck_assert(!vm->chan.following);
	ack(1, "0-3");
	WAIT_FOR(vm->chan.following);
	ck_assert_uint_eq(vm->chan.ack_seq, 1);
	ck_assert(vm->chan.ack_ok);

	/* Following: the fixed set, then unchanged with a new seq (refresh). */
	period("0-1");
	line = peer_expect("target");
	ck_assert_uint_eq(line_seq(line), 2);
	ck_assert_ptr_nonnull(strstr(line, "\"preferred\":\"0-1\""));
	free(line);
	period("0-1");
	line = peer_expect("target");
	ck_assert_ptr_nonnull(strstr(line, "\"preferred\":\"0-1\""));
	ck_assert_uint_eq(line_seq(line), 3);
	free(line);
	ack(3, "0-1");
	WAIT_FOR(vm->chan.ack_seq == 3);
	period("0-2");
	line = peer_expect("target");
	ck_assert_uint_eq(line_seq(line), 4);
	ck_assert_ptr_nonnull(strstr(line, "\"preferred\":\"0-2\""));
	free(line);
	ack(4, "0-2");
	WAIT_FOR(vm->chan.ack_seq == 4);
	ck_assert(vm->chan.following);
	ck_assert_uint_eq(cpuset_count(&vm->chan.applied), 3);

	/* An ack of a seq never sent is a protocol error. */
	ack(99, "0");
	WAIT_FOR(vm->chan.err_protocol == 1);
	ck_assert_uint_eq(vm->chan.ack_seq, 4);

	/* Guest pings get pongs with their seq. */
	peer_sendf("{\"v\":1,\"type\":\"ping\",\"seq\":77}\n");
	line = peer_expect("pong");
	ck_assert_uint_eq(line_seq(line), 77);
	free(line);
	/* Reports become hints. */
	peer_sendf("{\"v\":1,\"type\":\"report\",\"online\":\"0-3\","
	    "\"steal_pct\":12.5,\"psi_some_avg10\":3,\"nr_running\":6}\n");
	WAIT_FOR(vm->chan.report_ms != 0);
	ck_assert(vm->chan.hint_steal_pct == 12.5);
	ck_assert(vm->chan.hint_runnable == 6);
	ck_assert_uint_eq(vm->chan.err_decode + vm->chan.err_rate, 0);
}
END_TEST

START_TEST(test_target_at_hello)
{
	char	*line, sid[17];

	start(false);
	/* Decided before the guest said hello: sent as soon as it does. */
	period("1-2");
	WAIT_FOR(peer.fd >= 0);
	line = peer_expect("hello");
	hello_session(line, sid);
	free(line);
	guest_hello(sid);
	line = peer_expect("target");
	ck_assert_ptr_nonnull(strstr(line, "\"preferred\":\"0-3\""));
	ck_assert_uint_eq(line_seq(line), 1);
	free(line);
}
END_TEST

START_TEST(test_error_ack)
{
	char	*line, sid[17];

	start(false);
	handshake(sid);
	period("0-1");
	free(peer_expect("target"));
	ack(1, "0-1");
	WAIT_FOR(vm->chan.following);
	period("0");
	free(peer_expect("target"));
	peer_sendf("{\"v\":1,\"type\":\"ack\",\"seq\":2,\"ok\":false,"
	    "\"error\":\"cgroup: permission denied\"}\n");
	WAIT_FOR(!vm->chan.following);
	ck_assert(!vm->chan.ack_ok);
	ck_assert_str_eq(vm->chan.ack_error, "cgroup: permission denied");
	period("0");
	line = peer_expect("target");
	ck_assert_uint_eq(line_seq(line), 3);
	free(line);
	ack(3, "0");
	WAIT_FOR(vm->chan.following);
	ck_assert_str_eq(vm->chan.ack_error, "");
	ck_assert_uint_eq(vm->chan.err_protocol, 0);
}
END_TEST

START_TEST(test_garbage_closes_with_backoff)
{
	char		 sid[17], *line;
	unsigned int	 i;
	uint64_t	 gap1, gap2, closed;

	start(false);
	handshake(sid);
	/* Fewer than the limit: counted, answered, still connected. */
	for (i = 0; i < conf.violations - 1; i++)
		peer_sendf("{'v':1}\n");
	WAIT_FOR(vm->chan.err_decode == conf.violations - 1);
	line = peer_expect("error");
	free(line);
	ck_assert(vm->chan.connected);
	ck_assert_uint_eq(vm->chan.disconnects, 0);

	peer_sendf("not json\n");
	WAIT_FOR(peer.eof);
	closed = time_mono_ms();
	ck_assert(!vm->chan.connected);
	ck_assert(!vm->chan.hello);
	ck_assert_uint_eq(vm->chan.err_decode, conf.violations);
	ck_assert_uint_eq(vm->chan.disconnects, 1);

	/* Retried after the pause, and the pause grows. */
	WAIT_FOR(peer.accepts == 2);
	gap1 = peer.accept_ms[1] - closed;
	/* Margins: the close is seen a little after it happened. */
	ck_assert_uint_ge(gap1, conf.backoff_min_ms - 20);
	handshake(sid);
	for (i = 0; i < conf.violations; i++)
		peer_sendf("[]\n");
	WAIT_FOR(peer.eof);
	closed = time_mono_ms();
	WAIT_FOR(peer.accepts == 3);
	gap2 = peer.accept_ms[2] - closed;
	/* Doubled: above what the first pause plus any lag could be. */
	ck_assert_uint_ge(gap2, 2 * conf.backoff_min_ms - 20);
	ck_assert_uint_eq(vm->chan.err_decode, 2 * conf.violations);
	ck_assert_uint_eq(vm->chan.connects, 3);
}
END_TEST

START_TEST(test_overlong_line)
{
	char	 sid[17], *big, *line;
	size_t	 n = 10000;

	start(false);
	handshake(sid);
	big = xmalloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\n';
	peer_send(big, n + 1);
	free(big);
	/* The tail is not a line of its own; the next line works. */
	peer_sendf("{\"v\":1,\"type\":\"ping\",\"seq\":5}\n");
	line = peer_expect("pong");
	ck_assert_uint_eq(line_seq(line), 5);
	free(line);
	ck_assert_uint_eq(vm->chan.err_overlong, 1);
	ck_assert_uint_eq(vm->chan.err_decode, 0);
	ck_assert(vm->chan.connected);
}
END_TEST

START_TEST(test_flood_closes)
{
	char		 sid[17], *flood, *line;
	size_t		 off = 0, len = 10000 * 64;
	unsigned int	 i, pongs = 0;

	start(false);
	handshake(sid);
	flood = xmalloc(len);
	for (i = 0; i < 10000; i++)
		off += (size_t)snprintf(flood + off, len - off,
		    "{\"v\":1,\"type\":\"ping\",\"seq\":%u}\n", i + 1);
	peer_send(flood, off);
	free(flood);
	WAIT_FOR(peer.eof);
	while ((line = peer_line()) != NULL) {
		if (strstr(line, "\"type\":\"pong\"") != NULL)
			pongs++;
		free(line);
	}
	/*
	 * The burst was answered (pongs still queued when the channel
	 * closed are dropped with it), then the limit: the rest of the
	 * 10000 lines were counted until the channel closed, not processed.
	 */
	ck_assert_uint_le(pongs, conf.burst + 1);
	ck_assert_uint_ge(vm->chan.err_rate, 1);
	ck_assert_uint_le(vm->chan.err_rate, conf.violations);
	ck_assert_uint_eq(vm->chan.err_decode, 0);
	ck_assert_uint_eq(vm->chan.disconnects, 1);
	ck_assert(!vm->chan.following);
}
END_TEST

START_TEST(test_endless_line_closes)
{
	char		 sid[17], *junk;
	size_t		 n = 1 << 20, sent = 0;

	start(false);
	handshake(sid);
	junk = xmalloc(n);
	memset(junk, 'y', n);
	/* 16 MB without a newline: never buffered, cut off by the byte rate. */
	while (!peer.eof && sent < 16 * n) {
		ssize_t w = write(peer.fd, junk, n);

		if (w > 0)
			sent += (size_t)w;
		step();
	}
	free(junk);
	WAIT_FOR(peer.eof);
	ck_assert_uint_lt(sent, 16 * n);
	ck_assert_uint_eq(vm->chan.err_overlong, 1);
	ck_assert_uint_ge(vm->chan.err_rate, 1);
	ck_assert_uint_eq(vm->chan.disconnects, 1);
}
END_TEST

START_TEST(test_silent_guest_reconnected)
{
	char	sid[17];

	start(false);
	handshake(sid);
	period("0-1");
	free(peer_expect("target"));
	ack(1, "0-1");
	WAIT_FOR(vm->chan.following);
	/* The agent stops answering (restarted, waits for a hello). */
	period("0-1");
	pump(500);
	ck_assert(vm->chan.following);	/* not yet stale */
	{
		uint64_t end = time_mono_ms() + 10000;

		while (peer.accepts < 2 && time_mono_ms() < end) {
			if (vm->chan.connected && vm->chan.hello)
				period("0-1");
			pump(PERIOD);
		}
	}
	ck_assert_uint_eq(peer.accepts, 2);
	ck_assert(!vm->chan.following);
	ck_assert_uint_eq(vm->chan.disconnects, 1);
	/* A new connection, a new session. */
	handshake(sid);
	{
		char want[17];

		snprintf(want, sizeof(want), "%016" PRIx64, vm->chan.session);
		ck_assert_str_eq(sid, want);
	}
}
END_TEST

START_TEST(test_output_bounded)
{
	char		sid[17];
	unsigned int	i;

	start(false);
	handshake(sid);
	/* The guest stops reading: the queue is capped, then dropped. */
	peer.reading = false;
	for (i = 0; i < 200000 && vm->chan.connected; i++) {
		period(i % 2 ? "0-1" : "0-2");
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	ck_assert(!vm->chan.connected);
	ck_assert_uint_eq(vm->chan.disconnects, 1);
	peer.reading = true;
	peer_drop();
	WAIT_FOR(peer.accepts == 2);
}
END_TEST

START_TEST(test_release_all)
{
	char	sid[17], *line;

	start(false);
	handshake(sid);
	ck_assert_uint_eq(chan_mgr_release_all(mgr, 2000), 1);
	line = peer_expect("release");
	ck_assert_ptr_nonnull(strstr(line, sid));
	free(line);
	WAIT_FOR(peer.eof);
	ck_assert(!vm->chan.connected);
}
END_TEST

START_TEST(test_observe)
{
	char	*line;

	start(true);
	pump(300);
	ck_assert_uint_eq(peer.accepts, 0);
	ck_assert(!vm->chan.connected);
	/* Nothing to release, nothing sent. */
	ck_assert_uint_eq(chan_mgr_release_all(mgr, 100), 0);

	chan_mgr_set_conf(mgr, &conf, PERIOD, false);
	WAIT_FOR(peer.accepts == 1);
	free(peer_expect("hello"));
	/* Back to observe: the guest is released, the channel closed. */
	chan_mgr_set_conf(mgr, &conf, PERIOD, true);
	line = peer_expect("release");
	free(line);
	WAIT_FOR(peer.eof);
	pump(300);
	ck_assert_uint_eq(peer.accepts, 1);
}
END_TEST

START_TEST(test_vm_removed_while_connected)
{
	char	sid[17];

	start(false);
	handshake(sid);
	/* Unread input pending in the daemon's socket when the VM goes. */
	peer_sendf("{\"v\":1,\"type\":\"ping\",\"seq\":1}\n");
	host_vm_remove(host, vm);
	vm = NULL;
	WAIT_FOR(peer.eof);
	pump(200);
	ck_assert_uint_eq(peer.accepts, 1);
}
END_TEST

START_TEST(test_channel_path_changes)
{
	struct vm_info	 info;
	char		 sid[17];

	start(false);
	handshake(sid);
	/* The domain lost its channel: closed, not retried. */
	memset(&info, 0, sizeof(info));
	info.name = xstrdup("guest<1>");
	info.nvcpus = 4;
	cpuset_set_range(&info.online, 0, 3);
	info.ncores = 4;
	info.core = xcalloc(4, sizeof(*info.core));
	for (unsigned int i = 0; i < 4; i++)
		cpuset_set(&info.core[i], i);
	vm_set_info(vm, &info);
	host_vm_changed(host, vm);
	WAIT_FOR(peer.eof);
	pump(300);
	ck_assert_uint_eq(peer.accepts, 1);
	ck_assert(!vm->chan.connected);
}
END_TEST

START_TEST(test_no_socket_retries)
{
	/* QEMU not listening yet: retried with a growing pause. */
	close(peer.lfd);
	unlink(sock);
	start(false);
	pump(300);
	ck_assert(!vm->chan.connected);
	peer_listen();
	WAIT_FOR(peer.fd >= 0);
	ck_assert(vm->chan.connected);
	ck_assert_uint_eq(vm->chan.connects, 1);
}
END_TEST

static Suite *
channel_suite(void)
{
	Suite	*s = suite_create("channel");
	TCase	*tc = tcase_create("channel");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_conf);
	tcase_add_test(tc, test_hello_first);
	tcase_add_test(tc, test_session_and_targets);
	tcase_add_test(tc, test_target_at_hello);
	tcase_add_test(tc, test_error_ack);
	tcase_add_test(tc, test_garbage_closes_with_backoff);
	tcase_add_test(tc, test_overlong_line);
	tcase_add_test(tc, test_flood_closes);
	tcase_add_test(tc, test_endless_line_closes);
	tcase_add_test(tc, test_silent_guest_reconnected);
	tcase_add_test(tc, test_output_bounded);
	tcase_add_test(tc, test_release_all);
	tcase_add_test(tc, test_observe);
	tcase_add_test(tc, test_vm_removed_while_connected);
	tcase_add_test(tc, test_channel_path_changes);
	tcase_add_test(tc, test_no_socket_retries);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(channel_suite());
}
