/*
 * The operator surfaces of prefcpu-hostd over HTTP (DESIGN.md 3.5): the
 * read API under /api/v1, /metrics, the dashboard at /, and the one
 * write (a VM's policy) which only the unix socket accepts.
 *
 * Two listeners on the daemon's libevent base: a unix socket (mode 0660,
 * group configurable) and TCP, loopback unless the config explicitly
 * allows another address.  Over TCP everything is read-only.
 */
#ifndef PREFCPU_HTTP_H
#define PREFCPU_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

struct event_base;
struct host;
struct polmeta;

struct http_conf {
	char		listen[CONF_STRLEN];	/* "127.0.0.1:9471"; "" none */
	bool		listen_public;	/* allow a non-loopback address */
	char		socket[CONF_STRLEN];	/* "" none */
	char		socket_group[CONF_STRLEN];	/* "" keep ours */
	unsigned int	timeout_s;	/* request deadline, idle/slow client */
	unsigned int	answer_timeout_s;	/* to read a whole answer */
	unsigned int	max_body;	/* bytes of a request body */
	unsigned int	max_headers;	/* bytes of a request's headers */
	unsigned int	max_conns;	/* per listener */
	char		hosts[CONF_STRLEN];	/* more names for Host: */
};

#define HTTP_DEFAULT_PORT	9471

/*
 * The options of struct http_conf for a daemon's conf table (section
 * "http"), where the struct is member m of the daemon's struct t:
 *	static const struct conf_opt opts[] = { ..., HTTP_CONF_OPTS(struct
 *	    hostd_conf, http) };
 */
#define HTTP_CONF_OPTS(t, m)						\
	{ "http", "listen", CONF_STRING, offsetof(t, m.listen),		\
	    "127.0.0.1:9471", 0, 0, 0, 0, NULL,				\
	    "TCP address:port of the read-only API, dashboard and metrics"	\
	    " (empty: none)." },					\
	{ "http", "listen-public", CONF_BOOL, offsetof(t, m.listen_public), \
	    "no", 0, 0, 0, 0, NULL,					\
	    "Allow a non-loopback listen address." },			\
	{ "http", "socket", CONF_STRING, offsetof(t, m.socket),		\
	    HTTP_DEFAULT_SOCKET, 0, 0, 0, 0, NULL,			\
	    "Unix socket of the API, the only one that accepts writes"	\
	    " (empty: none)." },					\
	{ "http", "socket-group", CONF_STRING,				\
	    offsetof(t, m.socket_group), "", 0, 0, 0, 0, NULL,		\
	    "Group owning the unix socket (mode 0660); empty: the"	\
	    " daemon's." },						\
	{ "http", "hosts", CONF_STRING, offsetof(t, m.hosts), "", 0, 0,	\
	    0, 0, NULL,							\
	    "Names a TCP request's Host header may carry besides loopback"	\
	    " addresses, localhost and the listen address (separated by"	\
	    " spaces or commas)." },					\
	{ "http", "timeout", CONF_UINT, offsetof(t, m.timeout_s), "10",	\
	    1, 3600, 0, 0, NULL,					\
	    "Seconds a client has to send a whole request, and the longest"	\
	    " pause in reading or writing." },			\
	{ "http", "answer-timeout", CONF_UINT,				\
	    offsetof(t, m.answer_timeout_s), "60", 1, 3600, 0, 0, NULL,	\
	    "Seconds a client has to read a whole answer." },		\
	{ "http", "max-connections", CONF_UINT, offsetof(t, m.max_conns),	\
	    "128", 1, 4096, 0, 0, NULL,					\
	    "Connections open at once on each listener; one more is"	\
	    " answered 503." },						\
	{ "http", "max-body", CONF_UINT, offsetof(t, m.max_body), "16384", \
	    64, 1048576, 0, 0, NULL,					\
	    "Largest request body in bytes." },			\
	{ "http", "max-headers", CONF_UINT, offsetof(t, m.max_headers),	\
	    "8192", 512, 65536, 0, 0, NULL,				\
	    "Largest request line and headers in bytes." }

#ifndef HTTP_DEFAULT_SOCKET
#define HTTP_DEFAULT_SOCKET	"/run/prefcpu/hostd.sock"
#endif

struct http_server;

/* Set every field to its default (the HTTP_CONF_OPTS defaults). */
void	http_conf_default(struct http_conf *);

/*
 * http_conf.c: what http_start() refuses, checked without binding (for
 * --check-config and reloads); -1 with the cause in err.
 */
struct addrinfo;
struct sockaddr;
int	http_conf_check(const struct http_conf *, char *err, size_t errlen);
/* The listen address, parsed and allowed; freeaddrinfo() it. */
int	http_conf_addr(const struct http_conf *, struct addrinfo **,
	    char *err, size_t errlen);
bool	http_is_loopback(const struct sockaddr *);

/*
 * Where the one write goes, so this module needs no libvirt: set_policy
 * replaces the policy of a domain (name or UUID) and returns 0, or -1
 * with the HTTP status that fits and a cause; connected says whether
 * writes can reach libvirt now (the host's libvirt_connected).  arg is
 * passed to both.
 */
struct http_writer {
	int	(*set_policy)(void *arg, const char *domain,
		    const struct polmeta *, int *status, char *err,
		    size_t errlen);
	bool	(*connected)(void *arg);
	void	*arg;
};

/*
 * Bind the listeners and serve the model on base.  Policy writes go
 * through writer (copied; NULL: writes then answer 503).  period_ms is
 * the daemon's period.  The [http] options are read once: a change needs
 * a restart.  Returns NULL with a cause in err (a bad address, a socket
 * in use by a running daemon, ...).
 */
struct http_server *http_start(struct event_base *, struct host *,
	    const struct http_writer *, const struct http_conf *,
	    unsigned int period_ms, char *err, size_t errlen);
/* Close the listeners, drop connections and remove the unix socket. */
void	http_stop(struct http_server *);
/* The daemon's period changed (SIGHUP). */
void	http_set_period(struct http_server *, unsigned int period_ms);
/* The TCP port bound (useful with port 0), or 0. */
unsigned int http_server_port(const struct http_server *);

#endif
