/* Bounded HTTP connections and streamed answers (see http_conn.h). */
#include <sys/socket.h>
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "http_conn.h"
#include "log.h"
#include "util.h"

/* At most one line a minute about refused connections per listener. */
#define HTTP_CONN_LOG_MS	60000

struct http_conn {
	LIST_ENTRY(http_conn)	 entry;
	struct http_conns	*cs;
	struct bufferevent	*bev;	/* evhttp owns it */
	struct evhttp_connection *evcon;	/* once adopted */
	struct event		*deadline;
	struct event		*adopt;
	bool			 refuse;	/* over the limit: 503 */
	bool			 answering;	/* deadline is the answer's */
	/* A streamed answer in progress. */
	struct evhttp_request	*sreq;
	http_stream_fn		*snext;
	void			*sstate;
	void			(*sfree)(void *);
};

struct http_conns {
	struct event_base		*base;
	struct evhttp			*http;
	struct http_conns_conf		 conf;
	LIST_HEAD(, http_conn)		 conns;
	unsigned int			 open;
	unsigned int			 serving;	/* open, not refuse */
	unsigned long long		 accepted, refused, expired;
	unsigned long long		 refused_logged;
	uint64_t			 log_ms;
};

static const char http_conn_503[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 67\r\n"
    "Retry-After: 1\r\n"
    "Connection: close\r\n"
    "\r\n"
    "{\"error\":\"too many connections: try again later\",\"status\":503}\n";

static void
http_conn_arm(struct http_conn *c, unsigned int s)
{
	struct timeval	tv = { (time_t)s, 0 };

	evtimer_add(c->deadline, &tv);
}

static void
http_conn_stream_end(struct http_conn *c)
{
	void	(*fn)(void *) = c->sfree;
	void	*st = c->sstate;

	c->sreq = NULL;
	c->snext = NULL;
	c->sstate = NULL;
	c->sfree = NULL;
	if (fn != NULL)
		fn(st);
}

static void
http_conn_free(struct http_conn *c)
{
	http_conn_stream_end(c);
	LIST_REMOVE(c, entry);
	c->cs->open--;
	if (!c->refuse)
		c->cs->serving--;
	event_free(c->deadline);
	event_free(c->adopt);
	free(c);
}

/* evhttp lets the connection go. */
static void
http_conn_gone(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn	*c = arg;
	struct evhttp_request	*req = c->sreq;

	/*
	 * A connection that fails while an answer is streamed leaves that
	 * request to us (evhttp detached it): ending it frees it.  One
	 * still attached is freed by evhttp itself.
	 */
	http_conn_free(c);
	if (req != NULL && evhttp_request_get_connection(req) == NULL)
		evhttp_send_reply_end(req);
}

/*
 * End a connection under evhttp's feet without freeing anything it
 * owns: shut the socket down; its next read sees the end and evhttp
 * frees the connection (and so c).
 */
static void
http_conn_shut(struct http_conn *c)
{
	evutil_socket_t	fd = bufferevent_getfd(c->bev);

	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	/* If evhttp was not reading, let it see the end now. */
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void
http_conn_refused_log(struct http_conns *cs)
{
	uint64_t	now = time_mono_ms();

	if (cs->log_ms != 0 && now - cs->log_ms < HTTP_CONN_LOG_MS)
		return;
	log_warnx("http %s: %llu connection(s) refused: %u open, the limit"
	    " (max-connections)", cs->conf.kind,
	    cs->refused - cs->refused_logged, cs->open - 1);
	cs->refused_logged = cs->refused;
	cs->log_ms = now;
}

static void
http_conn_expire(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn	*c = arg;
	evutil_socket_t		 s = bufferevent_getfd(c->bev);
	ssize_t			 n;

	if (c->refuse) {
		/* Nothing else was written on it: one small send. */
		if (s >= 0)
			n = send(s, http_conn_503, sizeof(http_conn_503) - 1,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)n;
		http_conn_refused_log(c->cs);
	} else {
		c->cs->expired++;
		log_debug("http %s: a client took over %u s to %s; dropped",
		    c->cs->conf.kind, c->answering ? c->cs->conf.answer_s :
		    c->cs->conf.request_s, c->answering ? "read an answer" :
		    "send a request");
	}
	http_conn_shut(c);
}

/*
 * Right after evhttp wrapped the bufferevent in its connection (same
 * loop turn, before any I/O on it): its callback argument is the
 * connection, whose close callback tells us when it goes.
 */
static void
http_conn_adopt(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn	*c = arg;
	void			*cbarg = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, NULL, &cbarg);
	if (cbarg == NULL) {
		/* evhttp did not take it (cannot happen): not ours either. */
		http_conn_free(c);
		return;
	}
	c->evcon = cbarg;
	evhttp_connection_set_closecb(c->evcon, http_conn_gone, c);
	if (c->refuse)
		http_conn_expire(-1, 0, c);
	else
		http_conn_arm(c, c->cs->conf.request_s);
}

/* evhttp's new connection: its bufferevent, and our bounds on it. */
static struct bufferevent *
http_conn_bev(struct event_base *base, void *arg)
{
	struct http_conns	*cs = arg;
	struct http_conn	*c;
	struct bufferevent	*bev;

	bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->cs = cs;
	c->bev = bev;
	c->deadline = evtimer_new(base, http_conn_expire, c);
	c->adopt = event_new(base, -1, 0, http_conn_adopt, c);
	if (c->deadline == NULL || c->adopt == NULL)
		fatalx("event_new failed");
	LIST_INSERT_HEAD(&cs->conns, c, entry);
	cs->open++;
	cs->accepted++;
	if (cs->open > cs->conf.max) {
		c->refuse = true;
		cs->refused++;
	} else
		cs->serving++;
	event_active(c->adopt, EV_TIMEOUT, 0);
	return bev;
}

struct http_conns *
http_conns_new(struct event_base *base, struct evhttp *http,
    const struct http_conns_conf *conf)
{
	struct http_conns	*cs = xcalloc(1, sizeof(*cs));

	cs->base = base;
	cs->http = http;
	cs->conf = *conf;
	LIST_INIT(&cs->conns);
	evhttp_set_bevcb(http, http_conn_bev, cs);
	return cs;
}

void
http_conns_free(struct http_conns *cs)
{
	struct http_conn	*c;

	if (cs == NULL)
		return;
	/* evhttp_free() freed its connections; any left were not adopted. */
	while ((c = LIST_FIRST(&cs->conns)) != NULL)
		http_conn_free(c);
	free(cs);
}

void
http_conns_stats(const struct http_conns *cs, struct http_conns_stats *st)
{
	st->serving = cs->serving;
	st->accepted = cs->accepted;
	st->refused = cs->refused;
	st->expired = cs->expired;
}

static struct http_conn *
http_conn_of(struct http_conns *cs, struct evhttp_request *req)
{
	struct evhttp_connection	*evcon;
	struct http_conn		*c;

	evcon = evhttp_request_get_connection(req);
	if (evcon == NULL)
		return NULL;
	LIST_FOREACH(c, &cs->conns, entry) {
		if (c->evcon == evcon)
			return c;
	}
	return NULL;
}

/* The answer is out: the connection may send its next request. */
static void
http_conn_complete(struct evhttp_request *req, void *arg)
{
	struct http_conn	*c = arg;

	c->answering = false;
	http_conn_arm(c, c->cs->conf.request_s);
}

void
http_conns_dispatched(struct http_conns *cs, struct evhttp_request *req)
{
	struct http_conn	*c = http_conn_of(cs, req);

	if (c == NULL)
		return;
	c->answering = true;
	http_conn_arm(c, cs->conf.answer_s);
	evhttp_request_set_on_complete_cb(req, http_conn_complete, c);
}

static void http_conn_stream_step(struct http_conn *);

static void
http_conn_stream_cb(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn	*c = arg;

	if (c->snext != NULL)
		http_conn_stream_step(c);
}

/* Produce and queue the next piece; the last one ends the answer. */
static void
http_conn_stream_step(struct http_conn *c)
{
	struct evhttp_request	*req = c->sreq;
	struct evbuffer		*buf = evbuffer_new();
	int			 rc;

	if (buf == NULL)
		fatalx("evbuffer_new failed");
	do {
		rc = c->snext(c->sstate, buf);
	} while (rc > 0 && evbuffer_get_length(buf) == 0);
	if (rc < 0) {
		evbuffer_free(buf);
		http_conn_stream_end(c);
		http_conn_shut(c);
		return;
	}
	if (rc > 0) {
		evhttp_send_reply_chunk_with_cb(req, buf, http_conn_stream_cb,
		    c);
		evbuffer_free(buf);
		return;
	}
	if (evbuffer_get_length(buf) > 0)
		evhttp_send_reply_chunk(req, buf);
	evbuffer_free(buf);
	/* Ending may free the connection, and c with it. */
	http_conn_stream_end(c);
	evhttp_send_reply_end(req);
}

void
http_conns_stream(struct http_conns *cs, struct evhttp_request *req,
    int status, http_stream_fn *next, void *state, void (*free_state)(void *))
{
	struct http_conn	*c = http_conn_of(cs, req);
	struct evbuffer		*out;
	int			 rc;

	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		free_state(state);
		evhttp_send_reply(req, status, NULL, NULL);
		return;
	}
	if (c == NULL) {
		/* Not one of ours (cannot happen): the whole answer at once. */
		out = evhttp_request_get_output_buffer(req);
		while ((rc = next(state, out)) > 0)
			;
		free_state(state);
		if (rc < 0)
			evhttp_send_error(req, 500, NULL);
		else
			evhttp_send_reply(req, status, NULL, NULL);
		return;
	}
	http_conn_stream_end(c);
	c->sreq = req;
	c->snext = next;
	c->sstate = state;
	c->sfree = free_state;
	evhttp_send_reply_start(req, status, NULL);
	http_conn_stream_step(c);
}
