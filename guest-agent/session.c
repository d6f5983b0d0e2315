/* Protocol session: dispatch by message type, lease, reports, status. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facts.h"
#include "log.h"
#include "proto.h"
#include "ratelim.h"
#include "session.h"
#include "state.h"
#include "status.h"
#include "target.h"
#include "util.h"

struct session {
	const struct guestd_conf *conf;
	struct backend		*be;
	struct port		*port;

	bool			 in_session;	/* hello seen on this connection */
	uint64_t		 id;
	uint64_t		 last_seq;

	uint32_t		 lease_ms;	/* the last target's, capped */
	uint32_t		 lease_cap_ms;	/* of this session */
	bool			 lease_cut_logged;
	uint64_t		 lease_end;	/* mono ms, 0 when none */
	uint64_t		 retry_at;	/* mono ms, 0 when none */
	uint64_t		 report_at;	/* mono ms, 0 when none */

	/*
	 * Targets are decided at most SESSION_APPLY_BURST at once, then one
	 * per SESSION_APPLY_MS; one that must wait is pending, and a newer
	 * one supersedes it (acked as such).
	 */
	struct ratelim		 applies;
	bool			 pending;
	struct proto_target	 pend;

	/* Without a backend while an earlier run's originals wait. */
	bool			 recovering;
	/* The status file's text as last written; when its lease was. */
	char			*status_text;
	uint64_t		 status_lease_end;

	bool			 applied;	/* a narrower set is in force */
	struct cpuset		 set;
	uint64_t		 set_seq;

	struct facts_last	 last;		/* the previous report's samples */
	int			 runnable_src;	/* SESSION_SRC_*, as last logged */
	char			 kernel[PROTO_MAX_TEXT];
	const char		*backends[PROTO_MAX_BACKENDS];
	unsigned int		 nbackends;
	uint64_t		 started_ms;	/* real time */
};

/* Where the runnable-tasks hint comes from. */
#define SESSION_SRC_NONE	0	/* not sampled yet */
#define SESSION_SRC_SCHED	1	/* means from /proc/schedstat */
#define SESSION_SRC_LOADAVG	2	/* counts from /proc/loadavg */

typedef void	(*session_fn)(struct session *, const struct proto_msg *);

static void	session_hello(struct session *, const struct proto_msg *);
static void	session_target(struct session *, const struct proto_msg *);
static void	session_release(struct session *, const struct proto_msg *);
static void	session_ping(struct session *, const struct proto_msg *);
static void	session_pong(struct session *, const struct proto_msg *);
static void	session_error(struct session *, const struct proto_msg *);

/* What the host may send; the decoder refuses the guest's own types. */
static const session_fn session_handlers[] = {
	[PROTO_HELLO_HOST] = session_hello,
	[PROTO_TARGET] = session_target,
	[PROTO_RELEASE] = session_release,
	[PROTO_PING] = session_ping,
	[PROTO_PONG] = session_pong,
	[PROTO_ERROR] = session_error,
};

static void
session_status(struct session *s)
{
	struct state	 st;
	char		 sid[17] = "", *text;
	unsigned int	 i;
	size_t		 used = 0;
	char		 names[PROTO_MAX_BACKENDS * 16] = "";

	state_init(&st);
	state_addf(&st, "status", "pid", "%d", (int)getpid());
	state_add(&st, "status", "backend",
	    s->be != NULL ? backend_name(s->be) : "none");
	for (i = 0; i < s->nbackends; i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used,
		    "%s%s", i > 0 ? " " : "", s->backends[i]);
	state_add(&st, "status", "backends", names);
	state_add(&st, "status", "keeps_affinity",
	    s->be != NULL && backend_keeps_affinity(s->be) ? "yes" : "no");
	state_add(&st, "status", "port",
	    s->port != NULL ? port_path(s->port) : "");
	state_add(&st, "status", "connected",
	    s->port != NULL && port_connected(s->port) ? "yes" : "no");
	if (s->in_session)
		proto_session_format(s->id, sid);
	state_add(&st, "status", "session", sid);
	state_addf(&st, "status", "seq", "%" PRIu64, s->last_seq);
	text = s->applied ? cpuset_to_str(&s->set) : xstrdup("");
	state_add(&st, "status", "applied", text);
	free(text);
	state_addf(&st, "status", "applied_seq", "%" PRIu64, s->set_seq);
	state_addf(&st, "status", "lease_end_mono_ms", "%" PRIu64,
	    s->lease_end);
	state_addf(&st, "status", "restore_pending", "%s",
	    s->retry_at != 0 ? "yes" : "no");
	state_addf(&st, "status", "lease_cap_ms", "%" PRIu32, s->lease_cap_ms);
	state_add(&st, "status", "kernel", s->kernel);
	state_add(&st, "status", "runnable_source",
	    s->runnable_src == SESSION_SRC_SCHED ? "schedstat" :
	    s->runnable_src == SESSION_SRC_LOADAVG ? "loadavg" : "");
	state_add(&st, "status", "runnable_why", s->last.why);
	state_addf(&st, "status", "started_ms", "%" PRIu64, s->started_ms);
	text = state_format(&st);
	if (s->status_text == NULL || strcmp(text, s->status_text) != 0) {
		status_save(s->conf, &st);
		free(s->status_text);
		s->status_text = text;
		s->status_lease_end = s->lease_end;
	} else
		free(text);
	state_free(&st);
}

struct session *
session_new(const struct guestd_conf *conf, struct backend *be)
{
	struct session	*s = xcalloc(1, sizeof(*s));

	s->conf = conf;
	s->be = be;
	s->lease_cap_ms = target_lease_cap(conf->max_lease_ms, 0);
	s->lease_ms = target_lease(PROTO_DEFAULT_LEASE_MS, s->lease_cap_ms);
	ratelim_init(&s->applies, SESSION_APPLY_BURST, SESSION_APPLY_MS,
	    time_mono_ms());
	facts_kernel(s->kernel, sizeof(s->kernel));
	s->nbackends = backend_usable(conf, s->backends, PROTO_MAX_BACKENDS);
	s->started_ms = time_real_ms();
	return s;
}

void
session_set_port(struct session *s, struct port *port)
{
	s->port = port;
	session_status(s);
}

void
session_set_backend(struct session *s, struct backend *be, bool recovering)
{
	s->be = be;
	s->recovering = recovering;
	session_status(s);
}

void
session_free(struct session *s)
{
	if (s == NULL)
		return;
	free(s->status_text);
	free(s);
}

static void
session_send(struct session *s, const struct proto_msg *msg)
{
	char	buf[PROTO_MAX_LINE + 2];
	int	n;

	if ((n = proto_encode(msg, buf, sizeof(buf))) == -1) {
		log_warnx("cannot encode a %s message", proto_type_name(msg->type));
		return;
	}
	port_send(s->port, buf, (size_t)n);
}

static void
session_send_error(struct session *s, const char *text, bool has_seq,
    uint64_t seq)
{
	struct proto_msg	msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_ERROR;
	snprintf(msg.error.error, sizeof(msg.error.error), "%s", text);
	msg.error.has_seq = has_seq;
	msg.error.seq = seq;
	session_send(s, &msg);
}

static void
session_ack(struct session *s, uint64_t seq, const struct cpuset *applied,
    const char *error)
{
	struct proto_msg	msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_ACK;
	msg.ack.seq = seq;
	msg.ack.ok = error == NULL;
	if (error == NULL)
		msg.ack.applied = *applied;
	else
		snprintf(msg.ack.error, sizeof(msg.ack.error), "%s", error);
	session_send(s, &msg);
}

/* Put the originals back; on failure keep trying every few seconds. */
static int
session_restore(struct session *s, const char *why)
{
	char		err[PROTO_MAX_ERROR];
	uint64_t	t0;

	if (s->be == NULL || !backend_changed(s->be)) {
		s->applied = false;
		s->retry_at = 0;
		return 0;
	}
	t0 = time_mono_ms();
	if (backend_restore(s->be, err, sizeof(err)) == -1) {
		log_warnx("restoring the originals (%s): %s", why, err);
		s->retry_at = time_mono_ms() + SESSION_RETRY_MS;
		return -1;
	}
	log_notice("restored the original CPU settings (%s) in %" PRIu64
	    " ms", why, time_mono_ms() - t0);
	s->applied = false;
	s->retry_at = 0;
	return 0;
}

/* Log where runnable tasks come from when that changes (once each). */
/* Note where the runnable figure comes from; true if that changed. */
static bool
session_runnable_source(struct session *s)
{
	int	src = s->last.fallback ? SESSION_SRC_LOADAVG :
		    SESSION_SRC_SCHED;

	if (src == s->runnable_src)
		return false;
	if (src == SESSION_SRC_LOADAVG)
		log_warnx("runnable tasks: %s; reporting the instantaneous "
		    "count of %s/loadavg instead of a mean", s->last.why,
		    s->conf->proc_root);
	else if (s->runnable_src == SESSION_SRC_LOADAVG)
		log_info("runnable tasks: %s/schedstat is usable again; "
		    "reporting means", s->conf->proc_root);
	else
		log_debug("runnable tasks: means over each report from "
		    "%s/schedstat", s->conf->proc_root);
	s->runnable_src = src;
	return true;
}

static void
session_hello(struct session *s, const struct proto_msg *m)
{
	struct proto_msg	 msg;
	struct facts		 f;
	struct cpuset		 gov_mask;
	char			 err[256], host[PROTO_MAX_TEXT * 4], sid[17];
	unsigned int		 i;
	char			 buf[PROTO_MAX_LINE + 2];

	if (facts_read(&f, s->conf, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		session_send_error(s, err, false, 0);
		return;
	}
	/* Every hello starts a session: seq counts again from zero. */
	s->in_session = true;
	s->id = m->hello_host.session;
	s->last_seq = 0;
	/*
	 * The first report comes one interval after the hello, with the
	 * mean over that interval: not one since an earlier session.
	 */
	facts_sched_begin(s->conf, &s->last, time_mono_ns());
	session_runnable_source(s);
	s->report_at = time_mono_ms() + s->conf->report_ms;
	/* A target of the last session still waiting is not for this one. */
	s->pending = false;
	s->lease_cap_ms = target_lease_cap(s->conf->max_lease_ms,
	    m->hello_host.max_lease_ms);
	s->lease_cut_logged = false;
	proto_session_format(s->id, sid);
	str_escape(host, sizeof(host), m->hello_host.host,
	    strlen(m->hello_host.host));
	log_info("session %s with host %s (leases of %" PRIu32 " ms at most)",
	    sid, host, s->lease_cap_ms);

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_HELLO_GUEST;
	msg.hello_guest.session = s->id;
	snprintf(msg.hello_guest.agent, sizeof(msg.hello_guest.agent),
	    "%s %s", GUESTD_NAME, PREFCPU_VERSION);
	msg.hello_guest.online = f.online;
	msg.hello_guest.ncores = f.ncores;
	msg.hello_guest.cores = f.cores;
	snprintf(msg.hello_guest.backend, sizeof(msg.hello_guest.backend),
	    "%s", s->be != NULL ? backend_name(s->be) : "none");
	msg.hello_guest.nbackends = s->nbackends;
	for (i = 0; i < s->nbackends; i++)
		snprintf(msg.hello_guest.backends[i], PROTO_MAX_TEXT, "%s",
		    s->backends[i]);
	snprintf(msg.hello_guest.kernel, sizeof(msg.hello_guest.kernel), "%s",
	    s->kernel);
	facts_governor(s->conf, msg.hello_guest.governor,
	    sizeof(msg.hello_guest.governor), &gov_mask);
	msg.hello_guest.keeps_affinity = s->be != NULL &&
	    backend_keeps_affinity(s->be);
	/* An earlier session's set still in force: the host may adopt it. */
	if (s->applied && s->lease_end != 0)
		msg.hello_guest.applied = s->set;
	/* A huge guest's core list may not fit in a line: cut it. */
	while (proto_encode(&msg, buf, sizeof(buf)) == -1 &&
	    msg.hello_guest.ncores > 0)
		msg.hello_guest.ncores /= 2;
	session_status(s);
	session_send(s, &msg);
	facts_free(&f);
}

/* Decide a target whose seq and session were checked: apply, ack. */
static void
session_decide(struct session *s, const struct proto_target *t)
{
	struct facts			 f;
	struct cpuset			 set;
	char				 err[PROTO_MAX_ERROR], *text;
	const char			*error = NULL;
	uint64_t			 t0;

	if (s->recovering) {
		session_ack(s, t->seq, NULL, "an earlier run's originals are "
		    "not restored yet");
		return;
	}
	if (facts_read(&f, s->conf, err, sizeof(err)) == -1) {
		session_ack(s, t->seq, NULL, err);
		return;
	}
	if (target_check(&t->preferred, &f.online, f.cores, f.ncores, &set,
	    err, sizeof(err)) == -1) {
		text = cpuset_to_str(&t->preferred);
		log_warnx("target %" PRIu64 " (%s) refused: %s", t->seq, text,
		    err);
		free(text);
		facts_free(&f);
		session_ack(s, t->seq, NULL, err);
		return;
	}
	s->lease_ms = target_lease(t->lease_ms, s->lease_cap_ms);
	if (s->lease_ms < t->lease_ms && !s->lease_cut_logged) {
		log_notice("lease of %" PRIu32 " ms cut to %" PRIu32 " ms "
		    "(target %" PRIu64 ")", t->lease_ms, s->lease_ms, t->seq);
		s->lease_cut_logged = true;
	}
	t0 = time_mono_ms();
	s->lease_end = t0 + s->lease_ms;

	if (s->be == NULL) {
		error = "no backend works on this guest";
	} else if (cpuset_equal(&set, &f.online)) {
		/* All CPUs: the host lifts its limit, so the originals. */
		if (session_restore(s, "target is every CPU") == -1)
			error = "restoring the originals failed";
	} else if (s->applied && cpuset_equal(&set, &s->set)) {
		s->set_seq = t->seq;
	} else if (backend_apply(s->be, &set, err, sizeof(err)) == -1) {
		log_warnx("target %" PRIu64 " failed: %s", t->seq, err);
		error = err;
	} else {
		text = cpuset_to_str(&set);
		log_notice("preferring CPUs %s (target %" PRIu64 ", applied "
		    "in %" PRIu64 " ms)", text, t->seq, time_mono_ms() - t0);
		free(text);
		s->applied = true;
		s->set = set;
		s->set_seq = t->seq;
		s->retry_at = 0;
	}
	facts_free(&f);
	/* The status file is current by the time the host reads the ack. */
	session_status(s);
	session_ack(s, t->seq, &set, error);
}

/* Ack the pending target as not applied, for why; it is dropped. */
static void
session_drop_pending(struct session *s, const char *why)
{
	if (!s->pending)
		return;
	log_debug("target %" PRIu64 " dropped: %s", s->pend.seq, why);
	session_ack(s, s->pend.seq, NULL, why);
	s->pending = false;
}

static void
session_target(struct session *s, const struct proto_msg *m)
{
	const struct proto_target	*t = &m->target;
	uint64_t			 last;
	char				 why[PROTO_MAX_ERROR];

	if (t->session != s->id) {
		log_info("target %" PRIu64 " of another session ignored",
		    t->seq);
		return;
	}
	last = s->pending && s->pend.seq > s->last_seq ? s->pend.seq :
	    s->last_seq;
	if (t->seq <= last) {
		log_info("stale target %" PRIu64 " ignored (last %" PRIu64 ")",
		    t->seq, last);
		return;
	}
	if (s->pending) {
		snprintf(why, sizeof(why), "superseded by target %" PRIu64
		    " before it was applied", t->seq);
		session_drop_pending(s, why);
	}
	/* Seq order holds from arrival: a refused target is not retried. */
	s->last_seq = t->seq;
	if (ratelim_take(&s->applies, time_mono_ms()))
		session_decide(s, t);
	else {
		s->pending = true;
		s->pend = *t;
	}
}

static void
session_release(struct session *s, const struct proto_msg *m)
{
	if (m->release.session != s->id) {
		log_info("release of another session ignored");
		return;
	}
	session_drop_pending(s, "released before it was applied");
	s->lease_end = 0;
	session_restore(s, "released by the host");
	session_status(s);
}

static void
session_ping(struct session *s, const struct proto_msg *m)
{
	struct proto_msg	msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_PONG;
	msg.ping.seq = m->ping.seq;
	if (s->lease_end != 0) {
		s->lease_end = time_mono_ms() + s->lease_ms;
		/* A ping alone rewrites the status file once a second at most. */
		if (s->lease_end >= s->status_lease_end + SESSION_STATUS_MS)
			session_status(s);
	}
	session_send(s, &msg);
}

static void
session_pong(struct session *s, const struct proto_msg *m)
{
}

static void
session_error(struct session *s, const struct proto_msg *m)
{
	char	esc[PROTO_MAX_ERROR * 4];

	str_escape(esc, sizeof(esc), m->error.error, strlen(m->error.error));
	log_warnx("host reports an error: %s", esc);
}

static void
session_line(void *arg, const char *line, size_t len)
{
	struct session		*s = arg;
	struct proto_msg	 msg;
	uint64_t		 seq = 0;
	char			 err[PROTO_MAX_ERROR], esc[PROTO_MAX_ERROR * 4];
	int			 rc;

	rc = proto_decode(line, len, PROTO_FROM_HOST, &msg, &seq, err,
	    sizeof(err));
	if (!s->in_session) {
		/*
		 * Resync: everything before the host's hello is dropped.  A
		 * target tells of a host that kept its session while this
		 * agent restarted: say so, and it sends a hello at once.
		 */
		if (rc == 0 && msg.type == PROTO_HELLO_HOST)
			session_hello(s, &msg);
		else if (rc == 0 && msg.type == PROTO_TARGET) {
			log_info("target %" PRIu64 " before any hello: asking "
			    "the host for a session", msg.target.seq);
			session_send_error(s, PROTO_ERR_NO_SESSION, true,
			    msg.target.seq);
		} else
			log_debug("dropped a line before the host's hello");
		if (rc == 0)
			proto_msg_clear(&msg);
		return;
	}
	if (rc == -1) {
		str_escape(esc, sizeof(esc), err, strlen(err));
		log_info("bad message from the host: %s", esc);
		session_send_error(s, err, seq != 0, seq);
		return;
	}
	if ((size_t)msg.type < nitems(session_handlers) &&
	    session_handlers[msg.type] != NULL)
		session_handlers[msg.type](s, &msg);
	else {
		snprintf(err, sizeof(err), "%s is not for the guest",
		    proto_type_name(msg.type));
		session_send_error(s, err, false, 0);
	}
	proto_msg_clear(&msg);
}

static void
session_overlong(void *arg)
{
	struct session	*s = arg;
	char		 err[64];

	if (!s->in_session)
		return;
	snprintf(err, sizeof(err), "line longer than %d bytes dropped",
	    PROTO_MAX_LINE);
	session_send_error(s, err, false, 0);
}

static void
session_connected(void *arg)
{
	session_status(arg);
}

static void
session_disconnected(void *arg)
{
	struct session	*s = arg;

	/* The lease runs on; the next connection starts with a hello. */
	s->in_session = false;
	s->report_at = 0;
	s->pending = false;
	session_status(s);
}

const struct port_cbs session_port_cbs = {
	.line = session_line,
	.overlong = session_overlong,
	.connected = session_connected,
	.disconnected = session_disconnected,
};

uint64_t
session_deadline(const struct session *s)
{
	uint64_t	d;

	d = deadline_min(deadline_min(s->lease_end, s->retry_at), s->report_at);
	if (s->pending)
		d = deadline_min(d, ratelim_ready(&s->applies, time_mono_ms()));
	return d;
}

static void
session_report(struct session *s)
{
	struct proto_msg	msg;
	char			err[256];

	memset(&msg, 0, sizeof(msg));
	msg.type = PROTO_REPORT;
	if (facts_report(s->conf, &s->last, time_mono_ns(), &msg.report, err,
	    sizeof(err)) == -1) {
		log_warnx("report: %s", err);
		return;
	}
	/*
	 * The status file shows where the figure comes from, not the
	 * figure: a report rewrites it only when that changed (pings keep
	 * the lease in it, once a second at most).
	 */
	if (session_runnable_source(s))
		session_status(s);
	session_send(s, &msg);
}

void
session_timer(struct session *s, uint64_t now)
{
	struct proto_target	t;

	if (s->pending && ratelim_take(&s->applies, now)) {
		s->pending = false;
		t = s->pend;
		session_decide(s, &t);
	}
	if (s->lease_end != 0 && now >= s->lease_end) {
		s->lease_end = 0;
		if (s->applied || (s->be != NULL && backend_changed(s->be)))
			log_notice("lease ended without a refresh");
		session_restore(s, "lease ended");
		session_status(s);
	}
	if (s->retry_at != 0 && now >= s->retry_at) {
		session_restore(s, "retry");
		session_status(s);
	}
	if (s->report_at != 0 && now >= s->report_at) {
		if (s->in_session && port_connected(s->port)) {
			session_report(s);
			s->report_at = now + s->conf->report_ms;
		} else
			s->report_at = 0;
	}
}

int
session_shutdown(struct session *s)
{
	int	rc;

	rc = session_restore(s, "agent stopping");
	s->retry_at = 0;
	return rc;
}
