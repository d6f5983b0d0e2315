/*
 * The connections of one HTTP listener (evhttp), bounded: how many may
 * be open at once (one more gets a 503 and is closed), how long a client
 * may take to send a whole request (an absolute deadline, not per read:
 * a client that trickles a byte every few seconds is still dropped), and
 * how long it may take to read a whole answer.  Large answers are
 * streamed: the next piece is produced only once the previous one has
 * left the daemon, so a client that does not read holds one piece.
 *
 * evhttp 2.1 shows a connection to its owner only once a request was
 * read; the bufferevent callback (evhttp_set_bevcb) sees it born, and
 * right after evhttp wrapped it we find the connection and set its close
 * callback, which tells us when it goes.
 */
#ifndef PREFCPU_HTTP_CONN_H
#define PREFCPU_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>

struct evbuffer;
struct event_base;
struct evhttp;
struct evhttp_request;
struct http_conns;

struct http_conns_conf {
	unsigned int	 max;		/* open at once; one more: 503 */
	unsigned int	 request_s;	/* to send a whole request */
	unsigned int	 answer_s;	/* to read a whole answer */
	const char	*kind;		/* "tcp", "unix": for logs */
};

/* Bounds over the connections evhttp accepts on http. */
struct http_conns *http_conns_new(struct event_base *, struct evhttp *,
	    const struct http_conns_conf *);
/* Call after evhttp_free() of its evhttp (which frees the connections). */
void	http_conns_free(struct http_conns *);

/* What a listener's connections did, for metrics: all counts alike. */
struct http_conns_stats {
	unsigned long long	serving;	/* open and not refused */
	unsigned long long	accepted;	/* since start, refused too */
	unsigned long long	refused;	/* answered 503 (over max) */
	unsigned long long	expired;	/* dropped at a deadline */
};

void	http_conns_stats(const struct http_conns *, struct http_conns_stats *);

/*
 * A request of this listener was read whole: its connection's request
 * deadline gives way to the answer deadline, until the answer is sent
 * and the connection waits for its next request.
 */
void	http_conns_dispatched(struct http_conns *, struct evhttp_request *);

/*
 * A producer of an answer in pieces: append the next piece (a few tens
 * of KiB) to out and return 1, or 0 when there is nothing more (out may
 * hold a last piece), or -1 on failure (the connection is dropped).
 */
typedef int	http_stream_fn(void *state, struct evbuffer *out);

/*
 * Answer req with status and its headers set, body from next(state),
 * piece by piece as the client reads.  free_state(state) runs once,
 * when the answer is done or the connection went away.
 */
void	http_conns_stream(struct http_conns *, struct evhttp_request *,
	    int status, http_stream_fn *next, void *state,
	    void (*free_state)(void *));

#endif
