/*
 * The host side of the host-guest channel (see channel.h).
 *
 * A connection goes IDLE -> (connect) HELLO -> (guest hello echoing our
 * session) SESSION, and back to WAIT (retry timer) on any failure.  Each
 * connection starts with a resync newline and a hello of a new session
 * (proto_session_new); seq counts from 1 again.  A guest that does not
 * answer the hello, or stops acking targets (its agent restarted and waits
 * for a hello, or it hung) is not steerable after the stale time and is
 * reconnected after twice that.  An agent that restarted under our session
 * answers the next target with PROTO_ERR_NO_SESSION, and gets a new hello
 * at once.  A guest whose hello says it still holds a set from an earlier
 * run of the daemon has that set adopted (host_vm_adopt).
 *
 * Lifetimes: struct chan is reference counted.  Each libevent callback
 * holds a reference while it runs, and the VM's removal only drops the
 * VM's reference, so a callback never touches freed memory even if the
 * VM goes away under it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "channel.h"
#include "log.h"
#include "model.h"
#include "proto.h"
#include "ratelim.h"
#include "util.h"

/*
 * A target unacked for this many periods, and at least CHAN_STALE_MIN_MS
 * (a backend may take a while), means the guest is not following.
 */
#define CHAN_STALE_PERIODS	3
#define CHAN_STALE_MIN_MS	3000
/* Least time between two hellos to a guest that has not answered. */
#define CHAN_HELLO_RETRY_MS	5000
/* Input buffered per connection, bytes: libevent stops reading above it. */
#define CHAN_MAX_INPUT		(4 * (PROTO_MAX_LINE + 1))
/* Violations logged per connection before the rest go to debug. */
#define CHAN_LOG_VIOLATIONS	3
/*
 * Log lines about one guest: 10 at once, then one per 10 s (16 in a
 * minute at most, summaries of what was suppressed included), so that a
 * few hostile guests cannot push the daemon's own lines out of journald's
 * rate limit.  Debug lines are not limited: an operator asked for them.
 */
#define CHAN_LOG_BURST		10
#define CHAN_LOG_EVERY_MS	10000
/*
 * Refusals of the same target in a row that are free; each one beyond is
 * a violation (a guest that will never follow is closed and backed off,
 * not asked again every period).
 */
#define CHAN_REFUSALS_FREE	3

enum chan_state {
	CHAN_IDLE,		/* not connected, no retry planned */
	CHAN_WAIT,		/* retry timer armed */
	CHAN_HELLO,		/* connected, our hello sent */
	CHAN_SESSION,		/* the guest echoed our session */
	CHAN_RELEASING,		/* release queued; close once written */
};

enum chan_violation {
	CHAN_V_DECODE,
	CHAN_V_OVERLONG,
	CHAN_V_RATE,
	CHAN_V_PROTOCOL,
};

/* The model's counter of each kind of violation. */
static const size_t chan_counters[] = {
	[CHAN_V_DECODE] = offsetof(struct vm_chan, err_decode),
	[CHAN_V_OVERLONG] = offsetof(struct vm_chan, err_overlong),
	[CHAN_V_RATE] = offsetof(struct vm_chan, err_rate),
	[CHAN_V_PROTOCOL] = offsetof(struct vm_chan, err_protocol),
};

struct chan_mgr;

struct chan {
	struct chan_mgr		*mgr;
	struct vm		*vm;		/* NULL once the VM is gone */
	char			*path;		/* socket, from vm->info.channel */
	char			 name[VM_NAME_LEN * 4];	/* escaped, for logs */
	int			 refs;
	enum chan_state		 state;

	struct bufferevent	*bev;
	struct proto_framer	*fr;
	struct event		*ev_retry;
	uint64_t		 backoff_ms;	/* next pause */
	bool			 connect_logged;	/* a failure was logged */
	bool			 silent_logged;	/* "no agent answers" was */
	uint64_t		 up_ms;		/* connected at, monotonic */
	bool			 penalised;	/* closed for violations */

	uint64_t		 session;
	uint64_t		 seq;		/* last target seq of the session */
	uint64_t		 ping_seq;
	uint64_t		 hello_ms;	/* our last hello */
	uint64_t		 sent_ms;	/* last target or ping */
	uint64_t		 unacked_ms;	/* oldest unacked target, 0: none */

	bool			 have_target;	/* the pipeline decided once */
	struct cpuset		 target;	/* its last decision */

	/* Token buckets: messages and bytes. */
	double			 tokens;
	double			 btokens;
	uint64_t		 bucket_ms;
	/* Violations in the current window. */
	unsigned int		 viol;
	uint64_t		 viol_start;
	unsigned int		 viol_logged;
	/* The current target refused this many times in a row. */
	unsigned int		 refusals;
	struct cpuset		 refused;
	/* "no session" answers on this connection. */
	unsigned int		 nosession;
	/* Log lines about this guest; kept across connections. */
	struct ratelim		 logs;

	TAILQ_ENTRY(chan)	 entry;
};

TAILQ_HEAD(chan_list, chan);

struct chan_mgr {
	struct event_base	*base;
	struct host		*host;
	struct chan_conf	 conf;
	unsigned int		 period_ms;
	bool			 observe;
	char			 hostname[PROTO_MAX_TEXT];
	struct chan_list	 chans;
	/* chan_mgr_release_all(): connections still writing their release. */
	unsigned int		 draining;
	unsigned int		 released;
};

static void	chan_connect(struct chan *);
/* What to do after a connection closes. */
enum chan_retry {
	CHAN_NO_RETRY,
	CHAN_RETRY_BACKOFF,	/* after the pause, which then doubles */
	CHAN_RETRY_SOON,	/* after backoff-min-ms: nobody misbehaved */
};

static void	chan_close(struct chan *, const char *why, enum chan_retry);
static void	chan_hello(struct chan *);

/* The options table wants a member of a struct. */
struct chan_conf_holder {
	struct chan_conf	c;
};

void
chan_conf_default(struct chan_conf *c)
{
	static const struct conf_opt opts[] = {
		CHAN_CONF_OPTS(struct chan_conf_holder, c),
	};

	memset(c, 0, sizeof(*c));
	conf_defaults(opts, nitems(opts), c);
}

int
chan_conf_check(const struct chan_conf *c, char *err, size_t errlen)
{
	if (c->backoff_min_ms > c->backoff_max_ms) {
		snprintf(err, errlen, "channel: backoff-min-ms %u is above "
		    "backoff-max-ms %u", c->backoff_min_ms, c->backoff_max_ms);
		return -1;
	}
	return 0;
}

static void
chan_ref(struct chan *c)
{
	c->refs++;
}

static void
chan_unref(struct chan *c)
{
	if (--c->refs > 0)
		return;
	proto_framer_free(c->fr);
	free(c->path);
	free(c);
}

/* Whether the connection can still be used after a call that may close it. */
static bool
chan_live(const struct chan *c)
{
	return c->bev != NULL && c->vm != NULL;
}

static uint64_t
chan_stale_ms(const struct chan_mgr *m)
{
	uint64_t	ms = (uint64_t)CHAN_STALE_PERIODS * m->period_ms;

	return ms > CHAN_STALE_MIN_MS ? ms : CHAN_STALE_MIN_MS;
}

/*
 * Log a line about this guest, within its budget (CHAN_LOG_BURST).  The
 * first line after some were suppressed says how many.
 */
static void LOG_PRINTF(3, 4)
chan_log(struct chan *c, enum log_level level, const char *fmt, ...)
{
	va_list		ap;
	char		line[1024];
	uint64_t	n;

	if (level > log_get_level())
		return;		/* not shown: costs nothing */
	if (!ratelim_take(&c->logs, time_mono_ms()))
		return;
	n = ratelim_refused(&c->logs);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0)
		log_msg(level, "domain %s: %s (%" PRIu64 " earlier lines "
		    "suppressed)", c->name, line, n);
	else
		log_msg(level, "domain %s: %s", c->name, line);
}

/* Once a line may be logged again: how many were suppressed. */
static void
chan_log_summary(struct chan *c, uint64_t now)
{
	uint64_t	n;

	if (c->logs.refused == 0 || ratelim_ready(&c->logs, now) > now)
		return;
	if (!ratelim_take(&c->logs, now))
		return;
	n = ratelim_refused(&c->logs);
	log_notice("domain %s: %" PRIu64 " log lines suppressed (at most %d "
	    "at once, then one per %d s)", c->name, n, CHAN_LOG_BURST,
	    CHAN_LOG_EVERY_MS / 1000);
}

/*
 * Recompute whether the VM follows: its last ack of this session was ok
 * and no target has waited for an ack longer than the stale time.  (An
 * old ack alone is no reason: without decisions only pings are sent.)
 */
static void
chan_update_following(struct chan *c, uint64_t now)
{
	struct vm_chan	*vc = &c->vm->chan;
	bool		 was = vc->following;

	vc->following = c->state == CHAN_SESSION && vc->ack_seq > 0 &&
	    vc->ack_ok && (c->unacked_ms == 0 ||
	    now - c->unacked_ms <= chan_stale_ms(c->mgr));
	if (was && !vc->following)
		chan_log(c, LOGL_INFO, "agent no longer follows");
}

/* Queue one message; a guest that does not read is dropped.  -1: closed. */
static int
chan_send(struct chan *c, const struct proto_msg *msg)
{
	struct evbuffer	*out;
	char		 buf[PROTO_MAX_LINE + 2];
	int		 n;

	if (c->bev == NULL)
		return -1;
	if ((n = proto_encode(msg, buf, sizeof(buf))) < 0) {
		chan_log(c, LOGL_WARNING, "cannot encode a %s message",
		    proto_type_name(msg->type));
		return 0;
	}
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) + (size_t)n > c->mgr->conf.max_output) {
		chan_log(c, LOGL_WARNING, "guest does not read (%zu bytes "
		    "queued)", evbuffer_get_length(out));
		chan_close(c, "output queue full", CHAN_RETRY_BACKOFF);
		return -1;
	}
	if (bufferevent_write(c->bev, buf, (size_t)n) != 0) {
		chan_close(c, "write failed", CHAN_RETRY_BACKOFF);
		return -1;
	}
	return 0;
}

static void
chan_send_target(struct chan *c, uint64_t now)
{
	struct vm_chan		*vc = &c->vm->chan;
	struct proto_msg	 msg;

	if (!c->have_target || cpuset_empty(&c->target))
		return;
	if (c->seq >= PROTO_MAX_SEQ) {
		/* Never in practice (2^53 periods), but a new session fixes it. */
		chan_close(c, "seq exhausted", CHAN_RETRY_SOON);
		return;
	}
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_TARGET;
	msg.target.session = c->session;
	msg.target.seq = ++c->seq;
	msg.target.preferred = c->target;
	msg.target.lease_ms = c->mgr->conf.lease_ms;
	if (chan_send(c, &msg) != 0)
		return;
	vc->target_seq = c->seq;
	vc->target = c->target;
	vc->target_ms = now;
	c->sent_ms = now;
	if (c->unacked_ms == 0)
		c->unacked_ms = now;
}

static void
chan_send_ping(struct chan *c, uint64_t now)
{
	struct proto_msg	msg;

	if (c->ping_seq >= PROTO_MAX_SEQ)
		c->ping_seq = 0;
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_PING;
	msg.ping.seq = ++c->ping_seq;
	if (chan_send(c, &msg) == 0)
		c->sent_ms = now;
}

static void
chan_send_error(struct chan *c, const char *text, bool has_seq, uint64_t seq)
{
	struct proto_msg	msg;

	if (c->state != CHAN_SESSION)
		return;
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_ERROR;
	snprintf(msg.error.error, sizeof(msg.error.error), "%s", text);
	msg.error.has_seq = has_seq;
	msg.error.seq = seq;
	chan_send(c, &msg);
}

/* Resync and start a new session on the open connection. */
static void
chan_hello(struct chan *c)
{
	struct vm_chan		*vc = &c->vm->chan;
	struct proto_msg	 msg;
	uint64_t		 now = time_mono_ms();

	c->session = proto_session_new();
	c->seq = 0;
	c->ping_seq = 0;
	c->unacked_ms = 0;
	c->hello_ms = now;
	c->state = CHAN_HELLO;
	vc->session = c->session;
	vc->hello = false;
	vc->following = false;
	vc->ack_seq = 0;
	vc->ack_ok = false;
	vc->target_seq = 0;

	if (bufferevent_write(c->bev, "\n", 1) != 0) {
		chan_close(c, "write failed", CHAN_RETRY_BACKOFF);
		return;
	}
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_HELLO_HOST;
	msg.hello_host.session = c->session;
	snprintf(msg.hello_host.host, sizeof(msg.hello_host.host), "%s",
	    c->mgr->hostname);
	msg.hello_host.period_ms = c->mgr->period_ms;
	/* Agents cap leases at PROTO_LEASE_CAP_MS unless asked for more. */
	if (c->mgr->conf.lease_ms > PROTO_LEASE_CAP_MS)
		msg.hello_host.max_lease_ms = c->mgr->conf.lease_ms;
	chan_send(c, &msg);
}

/* Count one violation; close after too many.  Returns -1 if closed. */
static int
chan_violation(struct chan *c, enum chan_violation kind, const char *what)
{
	const struct chan_conf	*cf = &c->mgr->conf;
	struct vm_chan		*vc = &c->vm->chan;
	uint64_t		 now = time_mono_ms();
	char			 why[PROTO_MAX_ERROR * 4 + 64];

	(*(uint64_t *)((char *)vc + chan_counters[kind]))++;
	if (c->viol == 0 || now - c->viol_start > cf->window_ms) {
		c->viol = 0;
		c->viol_start = now;
	}
	c->viol++;
	if (c->viol_logged < CHAN_LOG_VIOLATIONS) {
		c->viol_logged++;
		chan_log(c, LOGL_INFO, "%s", what);
	} else
		log_debug("domain %s: %s", c->name, what);
	if (c->viol < cf->violations)
		return 0;
	snprintf(why, sizeof(why), "%u protocol violations within %u ms, "
	    "last: %s", c->viol, cf->window_ms, what);
	c->penalised = true;
	chan_close(c, why, CHAN_RETRY_BACKOFF);
	return -1;
}

/* Refill the buckets for the time passed. */
static void
chan_refill(struct chan *c, uint64_t now)
{
	const struct chan_conf	*cf = &c->mgr->conf;
	double			 dt = (double)(now - c->bucket_ms) / 1000.0;
	double			 bmax = (double)cf->burst * (PROTO_MAX_LINE + 1);

	c->bucket_ms = now;
	c->tokens += dt * cf->rate;
	if (c->tokens > cf->burst)
		c->tokens = cf->burst;
	c->btokens += dt * cf->rate * (PROTO_MAX_LINE + 1);
	if (c->btokens > bmax)
		c->btokens = bmax;
}

static void
chan_fill_bucket(struct chan *c, uint64_t now)
{
	c->bucket_ms = now;
	c->tokens = c->mgr->conf.burst;
	c->btokens = (double)c->mgr->conf.burst * (PROTO_MAX_LINE + 1);
}

/* Message handlers; each returns -1 if the connection was closed. */
typedef int	(*chan_fn)(struct chan *, const struct proto_msg *, uint64_t);

/*
 * The guest still holds a set from before this session (the daemon was
 * restarted within the lease): carry on from it rather than widen the
 * guest and narrow it again a few periods later.
 */
static void
chan_adopt(struct chan *c, const struct cpuset *applied)
{
	char	*text;

	if (cpuset_empty(applied))
		return;
	text = cpuset_to_str(applied);
	if (host_vm_adopt(c->mgr->host, c->vm, applied) == 0) {
		c->target = *applied;
		c->have_target = true;
		chan_log(c, LOGL_NOTICE, "the guest still prefers vCPUs %s from "
		    "an earlier run: adopted", text);
	} else
		chan_log(c, LOGL_INFO, "the guest still prefers vCPUs %s from "
		    "an earlier run: not adopted (decided already, or not "
		    "whole online cores)", text);
	free(text);
}

static int
chan_on_hello(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	const struct proto_hello_guest	*h = &m->hello_guest;
	struct vm_chan			*vc = &c->vm->chan;
	char				 sid[17], agent[PROTO_MAX_TEXT * 4];
	char				 backend[PROTO_MAX_TEXT * 4];
	char				 kernel[PROTO_MAX_TEXT * 4];

	if (h->session != c->session) {
		/* An answer to an earlier hello of ours: stale, not hostile. */
		log_debug("domain %s: hello of another session ignored",
		    c->name);
		return 0;
	}
	if (c->state == CHAN_SESSION)
		return chan_violation(c, CHAN_V_PROTOCOL, "second hello");
	c->state = CHAN_SESSION;
	c->silent_logged = false;
	vc->hello = true;
	snprintf(vc->agent, sizeof(vc->agent), "%s", h->agent);
	snprintf(vc->kernel, sizeof(vc->kernel), "%s", h->kernel);
	snprintf(vc->backend, sizeof(vc->backend), "%s", h->backend);
	snprintf(vc->governor, sizeof(vc->governor), "%s", h->governor);
	vc->guest_online = h->online;
	vc->guest_ncores = h->ncores;
	proto_session_format(c->session, sid);
	str_escape(agent, sizeof(agent), h->agent, strlen(h->agent));
	str_escape(backend, sizeof(backend), h->backend, strlen(h->backend));
	str_escape(kernel, sizeof(kernel), h->kernel, strlen(h->kernel));
	chan_log(c, LOGL_NOTICE, "agent %s, backend %s, kernel %s: session %s",
	    agent, backend, kernel, sid);
	chan_adopt(c, &h->applied);
	/* The last decision now, not a period later. */
	chan_send_target(c, now);
	return 0;
}

static int
chan_on_ack(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	const struct proto_ack	*a = &m->ack;
	struct vm_chan		*vc = &c->vm->chan;
	char			 why[64], err[PROTO_MAX_ERROR * 4];
	bool			 was_ok = vc->ack_seq > 0 && vc->ack_ok;

	if (a->seq == 0 || a->seq > c->seq) {
		snprintf(why, sizeof(why), "ack of seq %" PRIu64 " never sent",
		    a->seq);
		return chan_violation(c, CHAN_V_PROTOCOL, why);
	}
	if (a->seq < vc->ack_seq)
		return 0;	/* out of order: the newer one stands */
	if (a->seq == vc->ack_seq) {
		/* Each target is acked once; repeats only fill the log. */
		snprintf(why, sizeof(why), "ack of seq %" PRIu64 " again",
		    a->seq);
		return chan_violation(c, CHAN_V_PROTOCOL, why);
	}
	vc->ack_seq = a->seq;
	vc->ack_ok = a->ok;
	vc->ack_ms = now;
	c->unacked_ms = a->seq == c->seq ? 0 : vc->target_ms;
	if (a->ok) {
		c->refusals = 0;
		vc->applied = a->applied;
		vc->ack_error[0] = '\0';
		if (!was_ok)
			chan_log(c, LOGL_INFO, "agent follows (target %" PRIu64
			    " applied)", a->seq);
	} else {
		cpuset_zero(&vc->applied);
		if (strcmp(vc->ack_error, a->error) != 0 || was_ok) {
			str_escape(err, sizeof(err), a->error, strlen(a->error));
			chan_log(c, LOGL_WARNING, "target %" PRIu64
			    " refused: %s", a->seq, err);
		}
		snprintf(vc->ack_error, sizeof(vc->ack_error), "%s", a->error);
		/*
		 * The newest target refused, and the same CPUs as the last
		 * refusal: past CHAN_REFUSALS_FREE in a row, a violation.
		 * (A refusal of an older seq, superseded in the guest, does
		 * not count.)
		 */
		if (a->seq == c->seq) {
			if (c->refusals > 0 &&
			    cpuset_equal(&c->refused, &vc->target))
				c->refusals++;
			else
				c->refusals = 1;
			c->refused = vc->target;
			if (c->refusals > CHAN_REFUSALS_FREE) {
				snprintf(why, sizeof(why), "the same target "
				    "refused %u times in a row", c->refusals);
				chan_update_following(c, now);
				return chan_violation(c, CHAN_V_PROTOCOL,
				    why);
			}
		}
	}
	chan_update_following(c, now);
	return 0;
}

static int
chan_on_report(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	struct vm_chan	*vc = &c->vm->chan;

	/* The mean since the last report where the guest sends one. */
	vc->hint_runnable = m->report.has_runnable ? m->report.runnable :
	    m->report.nr_running;
	vc->hint_steal_pct = m->report.steal_pct;
	vc->hint_psi = m->report.psi_some_avg10;
	vc->report_ms = now;
	return 0;
}

static int
chan_on_ping(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	struct proto_msg	msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_PONG;
	msg.ping.seq = m->ping.seq;
	return chan_send(c, &msg);
}

static int
chan_on_pong(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	return 0;
}

static int
chan_on_error(struct chan *c, const struct proto_msg *m, uint64_t now)
{
	const struct proto_error *e = &m->error;
	struct vm_chan		*vc = &c->vm->chan;
	char			 err[PROTO_MAX_ERROR * 4];

	str_escape(err, sizeof(err), e->error, strlen(e->error));
	chan_log(c, LOGL_INFO, "guest reports an error%s: %s",
	    e->has_seq ? " about a seq" : "", err);
	if (!e->has_seq || e->seq != c->seq || c->seq == 0 ||
	    c->state != CHAN_SESSION)
		return 0;
	/* Its agent restarted under our session: start a new one now. */
	if (strcmp(e->error, PROTO_ERR_NO_SESSION) == 0) {
		/*
		 * Once is an agent that restarted; again on the same
		 * connection, each time is a violation (a hello loop).
		 */
		if (++c->nosession > 1 && chan_violation(c, CHAN_V_PROTOCOL,
		    "no session again after our hello") != 0)
			return -1;
		chan_log(c, LOGL_INFO, "the agent has no session (restarted): "
		    "hello again");
		chan_hello(c);
		return c->bev == NULL ? -1 : 0;
	}
	/* About our current target: it was not applied. */
	vc->ack_seq = e->seq;
	vc->ack_ok = false;
	vc->ack_ms = now;
	snprintf(vc->ack_error, sizeof(vc->ack_error), "%s", e->error);
	c->unacked_ms = 0;
	chan_update_following(c, now);
	return 0;
}

/* What a guest may send; the decoder refuses the host's own types. */
static const chan_fn chan_handlers[] = {
	[PROTO_HELLO_GUEST] = chan_on_hello,
	[PROTO_ACK] = chan_on_ack,
	[PROTO_REPORT] = chan_on_report,
	[PROTO_PING] = chan_on_ping,
	[PROTO_PONG] = chan_on_pong,
	[PROTO_ERROR] = chan_on_error,
};

static int
chan_line(struct chan *c, const char *line, size_t len, uint64_t now)
{
	struct proto_msg	msg;
	uint64_t		seq = 0;
	char			err[PROTO_MAX_ERROR], what[PROTO_MAX_ERROR * 4 + 32];
	char			esc[PROTO_MAX_ERROR * 4];
	int			rc;

	chan_refill(c, now);
	if (c->tokens < 1.0)
		return chan_violation(c, CHAN_V_RATE,
		    "message over the rate limit dropped");
	c->tokens -= 1.0;

	if (proto_decode(line, len, PROTO_FROM_GUEST, &msg, &seq, err,
	    sizeof(err)) != 0) {
		str_escape(esc, sizeof(esc), err, strlen(err));
		snprintf(what, sizeof(what), "bad message: %s", esc);
		if (chan_violation(c, CHAN_V_DECODE, what) != 0)
			return -1;
		chan_send_error(c, err, seq != 0, seq);
		return chan_live(c) ? 0 : -1;
	}
	if (c->state != CHAN_SESSION && msg.type != PROTO_HELLO_GUEST) {
		/* Resync: anything before the hello of our session. */
		proto_msg_clear(&msg);
		return 0;
	}
	if ((size_t)msg.type < nitems(chan_handlers) &&
	    chan_handlers[msg.type] != NULL)
		rc = chan_handlers[msg.type](c, &msg, now);
	else {
		snprintf(what, sizeof(what), "%s is not for the host",
		    proto_type_name(msg.type));
		rc = chan_violation(c, CHAN_V_PROTOCOL, what);
	}
	proto_msg_clear(&msg);
	return rc != 0 || !chan_live(c) ? -1 : 0;
}

static int
chan_frame(void *arg, enum proto_frame_event ev, const char *line, size_t len)
{
	struct chan	*c = arg;
	char		 err[64];
	uint64_t	 now = time_mono_ms();

	if (!chan_live(c))
		return 1;
	if (ev == PROTO_FRAME_OVERLONG) {
		snprintf(err, sizeof(err), "line longer than %d bytes dropped",
		    PROTO_MAX_LINE);
		if (chan_violation(c, CHAN_V_OVERLONG, err) != 0)
			return 1;
		chan_send_error(c, err, false, 0);
		return chan_live(c) ? 0 : 1;
	}
	return chan_line(c, line, len, now) != 0 ? 1 : 0;
}

static void
chan_read_cb(struct bufferevent *bev, void *arg)
{
	struct chan	*c = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	char		 buf[4096];
	size_t		 n, avail;
	uint64_t	 now = time_mono_ms();

	chan_ref(c);
	/* Bytes count too: a line without a newline costs no message. */
	chan_refill(c, now);
	avail = evbuffer_get_length(in);
	if ((double)avail > c->btokens) {
		c->btokens = 0;
		if (chan_violation(c, CHAN_V_RATE, "input over the byte rate")
		    != 0)
			goto out;
	} else
		c->btokens -= (double)avail;
	while (chan_live(c) && c->bev == bev &&
	    (n = bufferevent_read(bev, buf, sizeof(buf))) > 0) {
		if (proto_framer_feed(c->fr, buf, n, chan_frame, c) != n)
			break;
	}
out:
	chan_unref(c);
}

static void
chan_write_cb(struct bufferevent *bev, void *arg)
{
	struct chan	*c = arg;
	struct chan_mgr	*m = c->mgr;

	if (evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return;
	if (c->state == CHAN_RELEASING) {
		chan_ref(c);
		m->released++;
		chan_close(c, "released", CHAN_NO_RETRY);
		chan_unref(c);
	}
}

static void
chan_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct chan	*c = arg;

	chan_ref(c);
	if (what & BEV_EVENT_EOF)
		chan_close(c, "closed by the peer", CHAN_RETRY_BACKOFF);
	else if (what & BEV_EVENT_ERROR)
		chan_close(c, strerror(EVUTIL_SOCKET_ERROR()),
		    CHAN_RETRY_BACKOFF);
	chan_unref(c);
}

static void
chan_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct chan	*c = arg;

	chan_ref(c);
	if (c->state == CHAN_WAIT)
		chan_connect(c);
	chan_unref(c);
}

/* Arm the retry timer for the current pause, then double it. */
static void
chan_schedule(struct chan *c, uint64_t delay_ms)
{
	struct timeval	tv;

	tv.tv_sec = (time_t)(delay_ms / 1000);
	tv.tv_usec = (suseconds_t)(delay_ms % 1000) * 1000;
	c->state = CHAN_WAIT;
	evtimer_add(c->ev_retry, &tv);
}

static void
chan_backoff(struct chan *c, const char *why)
{
	const struct chan_conf	*cf = &c->mgr->conf;
	uint64_t		 delay = c->backoff_ms;

	if (delay < cf->backoff_min_ms)
		delay = cf->backoff_min_ms;
	if (delay > cf->backoff_max_ms)
		delay = cf->backoff_max_ms;
	c->backoff_ms = delay * 2 > cf->backoff_max_ms ? cf->backoff_max_ms :
	    delay * 2;
	log_debug("domain %s: reconnecting in %" PRIu64 " ms (%s)", c->name,
	    delay, why);
	chan_schedule(c, delay);
}

/* Drop the connection, then maybe reconnect. */
static void
chan_close(struct chan *c, const char *why, enum chan_retry retry)
{
	struct chan_mgr		*m = c->mgr;
	const struct chan_conf	*cf = &m->conf;
	uint64_t		 now = time_mono_ms();
	char			 esc[512];

	if (c->state == CHAN_RELEASING && m->draining > 0 &&
	    --m->draining == 0)
		event_base_loopbreak(m->base);
	if (c->bev != NULL) {
		str_escape(esc, sizeof(esc), why, strlen(why));
		/* Agentless VMs cycle quietly; a session's end is news. */
		if (c->penalised)
			chan_log(c, LOGL_WARNING, "channel closed: %s", esc);
		else if (c->state == CHAN_SESSION)
			chan_log(c, LOGL_INFO, "channel closed: %s", esc);
		else
			log_debug("domain %s: channel closed: %s", c->name, esc);
		bufferevent_free(c->bev);
		c->bev = NULL;
		/* A connection that lived long and well earns a fresh start. */
		if (!c->penalised && now - c->up_ms >= cf->backoff_max_ms)
			c->backoff_ms = cf->backoff_min_ms;
		if (c->vm != NULL) {
			c->vm->chan.connected = false;
			c->vm->chan.hello = false;
			c->vm->chan.following = false;
			c->vm->chan.disconnects++;
		}
	}
	proto_framer_reset(c->fr);
	c->penalised = false;
	if (c->ev_retry != NULL)
		evtimer_del(c->ev_retry);
	c->state = CHAN_IDLE;
	if (retry == CHAN_NO_RETRY || c->vm == NULL || c->path == NULL ||
	    m->observe)
		return;
	if (retry == CHAN_RETRY_SOON) {
		log_debug("domain %s: reconnecting in %u ms (%s)", c->name,
		    cf->backoff_min_ms, why);
		chan_schedule(c, cf->backoff_min_ms);
	} else
		chan_backoff(c, why);
}

static void
chan_connect(struct chan *c)
{
	struct sockaddr_un	 sun;
	int			 fd;
	char			 path[512], err[128];

	c->state = CHAN_IDLE;
	if (c->path == NULL || c->vm == NULL || c->mgr->observe)
		return;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(c->path) >= sizeof(sun.sun_path)) {
		str_escape(path, sizeof(path), c->path, strlen(c->path));
		chan_log(c, LOGL_WARNING, "channel socket path too long: %s",
		    path);
		return;
	}
	memcpy(sun.sun_path, c->path, strlen(c->path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_warn("domain %s: socket", c->name);
		chan_backoff(c, "socket");
		return;
	}
	/* A unix socket connects at once or fails (EAGAIN: backlog full). */
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		snprintf(err, sizeof(err), "connect: %s", strerror(errno));
		close(fd);
		if (!c->connect_logged) {
			str_escape(path, sizeof(path), c->path,
			    strlen(c->path));
			chan_log(c, LOGL_INFO, "channel %s: %s (retrying)",
			    path, err);
			c->connect_logged = true;
		}
		chan_backoff(c, err);
		return;
	}
	c->connect_logged = false;
	c->bev = bufferevent_socket_new(c->mgr->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		close(fd);
		chan_log(c, LOGL_WARNING, "libevent: cannot create a bufferevent");
		chan_backoff(c, "bufferevent");
		return;
	}
	bufferevent_setcb(c->bev, chan_read_cb, chan_write_cb, chan_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, CHAN_MAX_INPUT);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->up_ms = time_mono_ms();
	c->viol = 0;
	c->viol_logged = 0;
	c->refusals = 0;
	c->nosession = 0;
	chan_fill_bucket(c, c->up_ms);
	c->vm->chan.connected = true;
	c->vm->chan.connects++;
	log_debug("domain %s: channel connected", c->name);
	chan_hello(c);
}

static void
chan_set_name(struct chan *c)
{
	const char	*n = c->vm->info.name != NULL ? c->vm->info.name : "";

	str_escape(c->name, sizeof(c->name), n, strlen(n));
}

static struct chan *
chan_new(struct chan_mgr *m, struct vm *vm)
{
	struct chan	*c = xcalloc(1, sizeof(*c));

	c->mgr = m;
	c->vm = vm;
	c->refs = 1;		/* the VM's */
	c->fr = proto_framer_new();
	c->ev_retry = evtimer_new(m->base, chan_retry_cb, c);
	if (c->ev_retry == NULL)
		fatalx("libevent: cannot create a timer");
	c->backoff_ms = m->conf.backoff_min_ms;
	c->state = CHAN_IDLE;
	ratelim_init(&c->logs, CHAN_LOG_BURST, CHAN_LOG_EVERY_MS,
	    time_mono_ms());
	chan_set_name(c);
	vm->chan.conn = c;
	TAILQ_INSERT_TAIL(&m->chans, c, entry);
	return c;
}

/* The VM is gone: close and drop its reference. */
static void
chan_destroy(struct chan *c)
{
	struct chan_mgr	*m = c->mgr;

	chan_close(c, "domain gone", CHAN_NO_RETRY);
	c->vm->chan.conn = NULL;
	c->vm = NULL;
	event_free(c->ev_retry);
	c->ev_retry = NULL;
	TAILQ_REMOVE(&m->chans, c, entry);
	chan_unref(c);
}

/* The channel path of the VM changed (or appeared): reconnect there. */
static void
chan_sync(struct chan_mgr *m, struct vm *vm)
{
	struct chan	*c = vm->chan.conn;
	const char	*path = vm->info.channel;

	if (c == NULL)
		c = chan_new(m, vm);
	chan_set_name(c);
	if ((path == NULL && c->path == NULL) ||
	    (path != NULL && c->path != NULL && strcmp(path, c->path) == 0))
		return;
	chan_close(c, "channel changed", CHAN_NO_RETRY);
	free(c->path);
	c->path = path != NULL ? xstrdup(path) : NULL;
	c->backoff_ms = m->conf.backoff_min_ms;
	chan_connect(c);
}

static void
chan_hook_added(struct vm *vm, void *arg)
{
	chan_new(arg, vm);
}

static void
chan_hook_changed(struct vm *vm, void *arg)
{
	chan_sync(arg, vm);
}

static void
chan_hook_removed(struct vm *vm, void *arg)
{
	if (vm->chan.conn != NULL)
		chan_destroy(vm->chan.conn);
}

static void
chan_hook_deliver(struct vm *vm, const struct policy_decision *d, void *arg)
{
	struct chan	*c = vm->chan.conn;

	if (c == NULL || cpuset_empty(&d->preferred))
		return;
	c->have_target = true;
	c->target = d->preferred;
	if (c->state == CHAN_SESSION && c->bev != NULL) {
		chan_ref(c);
		chan_send_target(c, time_mono_ms());
		chan_unref(c);
	}
}

/* Per period: hellos nobody answered, silent guests, pings. */
static void
chan_tick_one(struct chan *c, uint64_t now)
{
	const struct chan_mgr	*m = c->mgr;
	uint64_t		 retry = CHAN_HELLO_RETRY_MS;

	if (retry < chan_stale_ms(m))
		retry = chan_stale_ms(m);
	switch (c->state) {
	case CHAN_HELLO:
		/*
		 * Nobody answered (no agent yet).  Reconnecting rather than
		 * repeating the hello drops what QEMU holds unread for the
		 * port, so an agent that starts later sees one hello, not a
		 * pile of them.
		 */
		if (now - c->hello_ms >= retry) {
			if (!c->silent_logged)
				chan_log(c, LOGL_INFO, "no agent answers on the "
				    "channel (retrying)");
			c->silent_logged = true;
			chan_close(c, "no hello from the guest", CHAN_RETRY_SOON);
		}
		break;
	case CHAN_SESSION:
		chan_update_following(c, now);
		/*
		 * Not following after the stale time; reconnected after twice
		 * that, for an agent that hung or missed our hello (a slow
		 * guest that acks late is not worth a new session, and a
		 * restarted agent says "no session" at once).
		 */
		if (c->unacked_ms != 0 &&
		    now - c->unacked_ms > 2 * chan_stale_ms(m)) {
			chan_log(c, LOGL_INFO, "no ack for %" PRIu64 " ms: "
			    "reconnecting", now - c->unacked_ms);
			chan_close(c, "no ack", CHAN_RETRY_SOON);
			break;
		}
		/* No target went out last period (no decision): keep the lease. */
		if (now - c->sent_ms >= (uint64_t)m->period_ms * 3 / 2)
			chan_send_ping(c, now);
		break;
	default:
		break;
	}
}

/* The model's period_end hook: the channels' per-period work. */
static void
chan_hook_period(void *arg)
{
	struct chan_mgr	*m = arg;
	struct chan	*c, *next;
	uint64_t	 now = time_mono_ms();

	for (c = TAILQ_FIRST(&m->chans); c != NULL; c = next) {
		chan_ref(c);
		chan_log_summary(c, now);
		if (c->bev != NULL && c->vm != NULL)
			chan_tick_one(c, now);
		next = TAILQ_NEXT(c, entry);
		chan_unref(c);
	}
}

struct chan_mgr *
chan_mgr_new(struct event_base *base, struct host *host,
    const struct chan_conf *conf, unsigned int period_ms, bool observe)
{
	struct chan_mgr		*m = xcalloc(1, sizeof(*m));
	struct host_hooks	 hooks;
	struct vm		*vm;
	char			*p;

	m->base = base;
	m->host = host;
	m->conf = *conf;
	m->period_ms = period_ms;
	m->observe = observe;
	TAILQ_INIT(&m->chans);
	if (gethostname(m->hostname, sizeof(m->hostname)) != 0)
		snprintf(m->hostname, sizeof(m->hostname), "host");
	m->hostname[sizeof(m->hostname) - 1] = '\0';
	/* The guest's decoder refuses control characters in text. */
	for (p = m->hostname; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	memset(&hooks, 0, sizeof(hooks));
	hooks.deliver = chan_hook_deliver;
	hooks.vm_added = chan_hook_added;
	hooks.vm_changed = chan_hook_changed;
	hooks.vm_removed = chan_hook_removed;
	hooks.period_end = chan_hook_period;
	hooks.arg = m;
	host_add_hooks(host, &hooks);
	HOST_FOREACH_VM(vm, host)
		chan_sync(m, vm);
	return m;
}

/* Queue a release; the write callback closes once it is written. */
static bool
chan_release(struct chan *c)
{
	struct proto_msg	msg;

	if (c->bev == NULL || (c->state != CHAN_HELLO &&
	    c->state != CHAN_SESSION))
		return false;
	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_RELEASE;
	msg.release.session = c->session;
	if (chan_send(c, &msg) != 0)
		return false;
	c->state = CHAN_RELEASING;
	c->vm->chan.following = false;
	return true;
}

void
chan_mgr_set_conf(struct chan_mgr *m, const struct chan_conf *conf,
    unsigned int period_ms, bool observe)
{
	struct chan	*c, *next;
	bool		 was = m->observe;

	m->conf = *conf;
	m->period_ms = period_ms;
	if (observe && !was) {
		m->observe = true;
		TAILQ_FOREACH(c, &m->chans, entry) {
			if (!chan_release(c))
				chan_close(c, "observe mode", CHAN_NO_RETRY);
		}
		log_notice("observe mode: channels released and closed");
	} else if (!observe && was) {
		m->observe = false;
		for (c = TAILQ_FIRST(&m->chans); c != NULL; c = next) {
			next = TAILQ_NEXT(c, entry);
			if (c->bev == NULL) {
				c->backoff_ms = conf->backoff_min_ms;
				chan_connect(c);
			}
		}
	}
}

static void
chan_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct chan_mgr	*m = arg;

	event_base_loopbreak(m->base);
}

unsigned int
chan_mgr_release_all(struct chan_mgr *m, unsigned int timeout_ms)
{
	struct chan	*c;
	struct event	*ev;
	struct timeval	 tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	unsigned int	 queued = 0;

	m->draining = 0;
	m->released = 0;
	TAILQ_FOREACH(c, &m->chans, entry) {
		if (chan_release(c))
			queued++;
	}
	if (queued == 0)
		return 0;
	m->draining = queued;
	ev = evtimer_new(m->base, chan_drain_timeout, m);
	if (ev == NULL || evtimer_add(ev, &tv) != 0)
		fatalx("libevent: cannot add the release timer");
	while (m->draining > 0) {
		if (event_base_loop(m->base, EVLOOP_ONCE) != 0 ||
		    !evtimer_pending(ev, NULL))
			break;
	}
	event_free(ev);
	m->draining = 0;
	log_notice("release sent to %u of %u guests", m->released, queued);
	return m->released;
}

void
chan_mgr_free(struct chan_mgr *m)
{
	struct chan		*c;

	if (m == NULL)
		return;
	while ((c = TAILQ_FIRST(&m->chans)) != NULL)
		chan_destroy(c);
	host_remove_hooks(m->host, m);
	free(m);
}
