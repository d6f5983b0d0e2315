/*
 * HTTP server of prefcpu-hostd on libevent's evhttp.  One evhttp per
 * listener so that every request knows where it came from: the unix
 * socket may write, TCP may only read.  What is decided before a handler
 * runs (route table, name in the path, query string, Host header) is
 * http_route.c, without I/O; errors are JSON objects {"error": "...",
 * "status": N}.
 *
 * Bounds: request line + headers (max-headers bytes), header count
 * (HTTP_MAX_HEADER_COUNT), body (max-body bytes; evhttp answers 413
 * itself), a timeout on every read and write of a connection, and per
 * listener (http_conn.c) the open connections, an absolute deadline for a
 * whole request and one for reading a whole answer.  The whole-model
 * views are rendered once per period and shared by every client reading
 * them; history is rendered and sent piece by piece, so a client that
 * does not read holds one piece and a long answer never holds the loop.
 *
 * Over TCP the Host header must name a loopback address, localhost, the
 * listen address or one of the configured hosts: a web page whose name
 * an attacker points at 127.0.0.1 (DNS rebinding) gets 403.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "api.h"
#include "api_jw.h"
#include "polmeta.h"
#include "http.h"
#include "http_assets.h"
#include "http_conn.h"
#include "http_route.h"
#include "log.h"
#include "model.h"
#include "util.h"

#define HTTP_MAX_HEADER_COUNT	64
#define HTTP_DECISIONS_MAX	1000	/* ?limit= of /api/v1/decisions */
#define HTTP_LISTEN_BACKLOG	64

_Static_assert(HTTP_ROUTE_NAME_MAX <= API_NAME_MAX,
    "a name from the path must fit the API's");

struct http_server;

struct http_listener {
	struct http_server	*srv;
	struct evhttp		*http;
	bool			 writable;
	bool			 check_host;	/* TCP: DNS rebinding */
	const char		*kind;	/* "unix", "tcp": for logs */
	struct http_conns	*conns;
};

/* Views of the whole model, cached per period and set of VMs. */
enum http_view {
	HTTP_V_HOST,
	HTTP_V_DOMAINS,
	HTTP_V_METRICS,
	HTTP_NVIEWS,
};

/*
 * A rendered view, shared by the cache and every answer still being sent
 * from it: freed when the last of them lets go.
 */
struct http_body {
	unsigned int	 refs;
	size_t		 len;
	char		*text;
};

struct http_cache {
	uint64_t	 seq;	/* host_periods() it was rendered at */
	uint64_t	 gen;	/* host_vm_gen() it was rendered at */
	struct http_body *body;
};

static void	http_metrics_conns(const struct http_server *,
		    struct evbuffer *);

static const struct {
	char		*(*render)(const struct api_snapshot *, size_t *);
	const char	*type;
	const char	*only;	/* api_fill(): "" no VM, NULL all */
	/* Appended to every answer, never cached: counts of this moment. */
	void		(*live)(const struct http_server *, struct evbuffer *);
} http_views[HTTP_NVIEWS] = {
	[HTTP_V_HOST] = { api_json_host, "application/json", "", NULL },
	[HTTP_V_DOMAINS] = { api_json_domains, "application/json", NULL,
	    NULL },
	[HTTP_V_METRICS] = { api_metrics,
	    "text/plain; version=0.0.4; charset=utf-8", NULL,
	    http_metrics_conns },
};

struct http_server {
	struct event_base	*base;
	struct host		*host;
	struct http_writer	 writer;	/* zeroed: no writes */
	uint64_t		 start_ms;
	struct http_conf	 conf;
	unsigned int		 period_ms;
	struct http_listener	 tcp;
	struct http_listener	 unix_;
	char			*sock_path;	/* when we created it */
	unsigned int		 port;
	struct api_snapshot	 snap;	/* scratch, refilled per request */
	/*
	 * The big views rendered once per period: Prometheus, dashboards and
	 * prefcpuctl top all poll every period, and with many VMs rendering
	 * costs far more than copying.
	 */
	struct http_cache	 cache[HTTP_NVIEWS];
};

/* One request being answered. */
struct http_ctx {
	struct http_server	*srv;
	struct http_listener	*lst;
	struct evhttp_request	*req;
	const struct http_query	*query;
	const char		*arg;	/* the {} segment, decoded */
};

static void	http_h_asset(struct http_ctx *);
static void	http_h_host(struct http_ctx *);
static void	http_h_domains(struct http_ctx *);
static void	http_h_domain(struct http_ctx *);
static void	http_h_policy(struct http_ctx *);
static void	http_h_history(struct http_ctx *);
static void	http_h_decisions(struct http_ctx *);
static void	http_h_metrics(struct http_ctx *);

/* The handler of each route of http_routes (http_route.c). */
static void (*const http_handlers[HTTP_NROUTES])(struct http_ctx *) = {
	[HTTP_R_INDEX] = http_h_asset,
	[HTTP_R_STATIC] = http_h_asset,
	[HTTP_R_HOST] = http_h_host,
	[HTTP_R_DOMAINS] = http_h_domains,
	[HTTP_R_DOMAIN] = http_h_domain,
	[HTTP_R_POLICY] = http_h_policy,
	[HTTP_R_HISTORY] = http_h_history,
	[HTTP_R_DECISIONS] = http_h_decisions,
	[HTTP_R_METRICS] = http_h_metrics,
};

void
http_conf_default(struct http_conf *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen, sizeof(c->listen), "127.0.0.1:%d",
	    HTTP_DEFAULT_PORT);
	snprintf(c->socket, sizeof(c->socket), "%s", HTTP_DEFAULT_SOCKET);
	c->timeout_s = 10;
	c->answer_timeout_s = 60;
	c->max_body = 16384;
	c->max_headers = 8192;
	c->max_conns = 128;
}

static void
http_free_cb(const void *data, size_t len, void *arg)
{
	free((void *)data);
}

/* Send a body we own (malloc'ed); evbuffer frees it after writing. */
static void
http_send(struct http_ctx *c, int status, const char *type, char *body,
    size_t len)
{
	struct evkeyvalq	*h = evhttp_request_get_output_headers(c->req);
	struct evbuffer		*out = evhttp_request_get_output_buffer(c->req);

	evhttp_add_header(h, "Content-Type", type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	if (evbuffer_add_reference(out, body, len, http_free_cb, NULL) != 0) {
		free(body);
		evhttp_send_error(c->req, 500, NULL);
		return;
	}
	evhttp_send_reply(c->req, status, NULL, NULL);
}

static void
http_json(struct http_ctx *c, int status, char *body, size_t len)
{
	http_send(c, status, "application/json", body, len);
}

static void http_error(struct http_ctx *, int, const char *, ...)
    LOG_PRINTF(3, 4);

/* A JSON error; the text may hold client bytes: the writer escapes them. */
static void
http_error(struct http_ctx *c, int status, const char *fmt, ...)
{
	struct jw	 w;
	char		 msg[512], *body;
	size_t		 n;
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "error", msg);
	jw_int(&w, "status", status);
	jw_obj_end(&w);
	body = jw_finish(&w, &n);
	http_json(c, status, body, n);
}

/* Fill the scratch snapshot; 503 and -1 before the first period. */
static int
http_fill(struct http_ctx *c, const char *only)
{
	struct http_server	*srv = c->srv;

	if (host_periods(srv->host) == 0) {
		http_error(c, 503, "no data yet: the first period is not over");
		return -1;
	}
	api_snapshot_reset(&srv->snap);
	api_fill(srv->host, &srv->snap, only);
	srv->snap.host.period_ms = srv->period_ms;
	srv->snap.host.start_ms = srv->start_ms;
	srv->snap.host.libvirt_connected = srv->writer.connected != NULL &&
	    srv->writer.connected(srv->writer.arg);
	return 0;
}

static void
http_body_unref(struct http_body *b)
{
	if (b != NULL && --b->refs == 0) {
		free(b->text);
		free(b);
	}
}

static void
http_body_unref_cb(const void *data, size_t len, void *arg)
{
	http_body_unref(arg);
}

static void
http_cache_clear(struct http_server *srv)
{
	size_t	i;

	for (i = 0; i < HTTP_NVIEWS; i++) {
		http_body_unref(srv->cache[i].body);
		srv->cache[i].body = NULL;
	}
}

/* A whole-model view, rendered at most once per period. */
static void
http_view(struct http_ctx *c, enum http_view v)
{
	struct http_server	*srv = c->srv;
	struct http_cache	*k = &srv->cache[v];
	uint64_t		 seq = host_periods(srv->host);
	uint64_t		 gen = host_vm_gen(srv->host);
	struct evkeyvalq	*h;
	struct evbuffer		*out = evhttp_request_get_output_buffer(c->req);

	/* A VM that came or went shows at once, not at the next period. */
	if (k->body == NULL || k->seq != seq || k->gen != gen) {
		if (http_fill(c, http_views[v].only) != 0)
			return;
		http_body_unref(k->body);
		k->body = xcalloc(1, sizeof(*k->body));
		k->body->refs = 1;
		k->body->text = http_views[v].render(&srv->snap, &k->body->len);
		k->seq = seq;
		k->gen = gen;
	}
	h = evhttp_request_get_output_headers(c->req);
	evhttp_add_header(h, "Content-Type", http_views[v].type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	/* Not a copy: the body lives while any client still reads it. */
	k->body->refs++;
	if (evbuffer_add_reference(out, k->body->text, k->body->len,
	    http_body_unref_cb, k->body) != 0) {
		http_body_unref(k->body);
		http_error(c, 500, "out of memory");
		return;
	}
	if (http_views[v].live != NULL)
		http_views[v].live(srv, out);
	evhttp_send_reply(c->req, 200, NULL, NULL);
}

/*
 * The listeners' connections, as Prometheus metrics labelled listener:
 * what max-connections bounds, at the moment of the request.
 */
static void
http_metrics_conns(const struct http_server *srv, struct evbuffer *out)
{
	static const struct {
		const char	*name, *type, *help;
		size_t		 off;	/* in struct http_conns_stats */
	} m[] = {
		{ "prefcpu_http_connections", "gauge",
		    "HTTP connections open and served (at most"
		    " max-connections).",
		    offsetof(struct http_conns_stats, serving) },
		{ "prefcpu_http_connections_accepted_total", "counter",
		    "HTTP connections accepted, refused ones included.",
		    offsetof(struct http_conns_stats, accepted) },
		{ "prefcpu_http_connections_refused_total", "counter",
		    "HTTP connections answered 503 because max-connections"
		    " were open.",
		    offsetof(struct http_conns_stats, refused) },
		{ "prefcpu_http_connections_expired_total", "counter",
		    "HTTP connections dropped at the request deadline"
		    " (timeout) or the answer deadline (answer-timeout).",
		    offsetof(struct http_conns_stats, expired) },
	};
	const struct http_listener	*lst[] = { &srv->tcp, &srv->unix_ };
	struct http_conns_stats		 st;
	const unsigned long long	*v;
	size_t				 i, j;

	for (i = 0; i < nitems(m); i++) {
		evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n",
		    m[i].name, m[i].help, m[i].name, m[i].type);
		for (j = 0; j < nitems(lst); j++) {
			if (lst[j]->conns == NULL)
				continue;
			http_conns_stats(lst[j]->conns, &st);
			v = (const void *)((const char *)&st + m[i].off);
			evbuffer_add_printf(out, "%s{listener=\"%s\"} %llu\n",
			    m[i].name, lst[j]->kind, *v);
		}
	}
}

static const struct http_asset *
http_asset_find(const char *name)
{
	size_t	i;

	for (i = 0; i < http_nassets; i++) {
		if (strcmp(http_assets[i].name, name) == 0)
			return &http_assets[i];
	}
	return NULL;
}

static void
http_h_asset(struct http_ctx *c)
{
	const struct http_asset	*a;
	const char		*name = c->arg != NULL ? c->arg : "index.html";
	struct evkeyvalq	*h;

	a = http_asset_find(name);
	if (a == NULL) {
		http_error(c, 404, "no such file");
		return;
	}
	h = evhttp_request_get_output_headers(c->req);
	evhttp_add_header(h, "Content-Type", a->type);
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "Cache-Control", "no-cache");
	/*
	 * Even if a guest string slipped into markup, no inline script
	 * could run: scripts come from this server only.
	 */
	evhttp_add_header(h, "Content-Security-Policy",
	    "default-src 'none'; script-src 'self'; style-src 'self'; "
	    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
	    "frame-ancestors 'none'");
	evbuffer_add_reference(evhttp_request_get_output_buffer(c->req),
	    a->data, a->len, NULL, NULL);
	evhttp_send_reply(c->req, 200, NULL, NULL);
}

static void
http_h_host(struct http_ctx *c)
{
	http_view(c, HTTP_V_HOST);
}

static void
http_h_domains(struct http_ctx *c)
{
	http_view(c, HTTP_V_DOMAINS);
}

static void
http_h_domain(struct http_ctx *c)
{
	size_t	 len;
	char	*body;

	if (http_fill(c, c->arg) != 0)
		return;
	if (c->srv->snap.nvms == 0) {
		http_error(c, 404, "no running domain named %s", c->arg);
		return;
	}
	body = api_json_domain(&c->srv->snap, &c->srv->snap.vms[0], &len);
	http_json(c, 200, body, len);
}

static void
http_h_policy(struct http_ctx *c)
{
	struct http_server	*srv = c->srv;
	struct evbuffer		*in = evhttp_request_get_input_buffer(c->req);
	struct polmeta		 p;
	struct jw		 w;
	char			 err[256], esc[API_NAME_MAX * 4], *text, *body;
	char			*xml;
	size_t			 len;
	int			 status = 500;

	len = evbuffer_get_length(in);
	text = (char *)evbuffer_pullup(in, -1);
	if (len == 0 || text == NULL) {
		http_error(c, 400, "a JSON policy object is needed");
		return;
	}
	if (polmeta_from_json(text, len, &p, err, sizeof(err)) != 0) {
		http_error(c, 400, "bad policy: %s", err);
		return;
	}
	if (srv->writer.set_policy == NULL) {
		http_error(c, 503, "not connected to libvirtd; try again");
		return;
	}
	if (srv->writer.set_policy(srv->writer.arg, c->arg, &p, &status, err,
	    sizeof(err)) != 0) {
		http_error(c, status, "%s", err);
		return;
	}
	xml = polmeta_xml(&p);
	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "domain", c->arg);
	jw_str(&w, "metadata", xml);
	jw_obj_end(&w);
	log_notice("domain %s: policy set through the API: %s",
	    str_escape(esc, sizeof(esc), c->arg, strlen(c->arg)), xml);
	free(xml);
	body = jw_finish(&w, &len);
	http_json(c, 200, body, len);
}

/* An optional unsigned query parameter; -1 after answering 400. */
static int
http_query_uint(struct http_ctx *c, const char *name, uint64_t min,
    uint64_t max, uint64_t *out)
{
	const char	*v = http_query_get(c->query, name);

	if (v == NULL)
		return 0;
	if (parse_uint(v, min, max, out) != 0) {
		http_error(c, 400, "%s: expected an integer in %llu..%llu",
		    name, (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	return 0;
}

/* The next piece of a history answer, for http_conns_stream(). */
static int
http_history_next(void *state, struct evbuffer *out)
{
	char	*piece;
	size_t	 len;
	int	 rc;

	rc = api_history_next(state, &piece, &len);
	if (evbuffer_add_reference(out, piece, len, http_free_cb, NULL) != 0) {
		free(piece);
		return -1;
	}
	return rc;
}

static void
http_history_free(void *state)
{
	api_history_close(state);
}

static void
http_h_history(struct http_ctx *c)
{
	uint64_t		 seconds = 86400 * 366, since = 0, vms = 1;
	struct evkeyvalq	*h;

	if (http_query_uint(c, "seconds", 1, 86400 * 366, &seconds) != 0 ||
	    http_query_uint(c, "since", 0, UINT64_MAX / 2, &since) != 0 ||
	    http_query_uint(c, "domains", 0, 1, &vms) != 0)
		return;
	h = evhttp_request_get_output_headers(c->req);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	http_conns_stream(c->lst->conns, c->req, 200, http_history_next,
	    api_history_open(c->srv->host, seconds, since, vms != 0),
	    http_history_free);
}

static void
http_h_decisions(struct http_ctx *c)
{
	uint64_t	 limit = 50;
	size_t		 len;
	char		*body;

	if (http_query_uint(c, "limit", 1, HTTP_DECISIONS_MAX, &limit) != 0)
		return;
	body = api_json_decisions(c->srv->host, (unsigned int)limit, &len);
	http_json(c, 200, body, len);
}

static void
http_h_metrics(struct http_ctx *c)
{
	http_view(c, HTTP_V_METRICS);
}

static unsigned int
http_method(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
	case EVHTTP_REQ_HEAD:
		return HM_GET;
	case EVHTTP_REQ_PUT:
		return HM_PUT;
	case EVHTTP_REQ_POST:
		return HM_POST;
	default:
		return 0;
	}
}

static size_t
http_header_count(struct evhttp_request *req)
{
	struct evkeyval	*kv;
	size_t		 n = 0;

	TAILQ_FOREACH(kv, evhttp_request_get_input_headers(req), next)
		n++;
	return n;
}

static void
http_dispatch(struct evhttp_request *req, void *arg)
{
	struct http_listener	*lst = arg;
	struct http_ctx		 c;
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	struct http_route_req	 rq;
	struct http_route_res	 rs;
	char			 esc[256];

	memset(&c, 0, sizeof(c));
	c.srv = lst->srv;
	c.lst = lst;
	c.req = req;
	http_conns_dispatched(lst->conns, req);

	log_debug("http %s: %s", lst->kind, str_escape(esc, sizeof(esc),
	    evhttp_request_get_uri(req), strlen(evhttp_request_get_uri(req))));
	if (http_header_count(req) > HTTP_MAX_HEADER_COUNT) {
		http_error(&c, 431, "more than %d header fields",
		    HTTP_MAX_HEADER_COUNT);
		return;
	}
	memset(&rq, 0, sizeof(rq));
	rq.method = http_method(req);
	rq.path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	rq.query = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
	rq.host = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Host");
	rq.check_host = lst->check_host;
	rq.writable = lst->writable;
	rq.listen = lst->srv->conf.listen;
	rq.hosts = lst->srv->conf.hosts;
	if (http_route_decide(&rq, &rs) != 0) {
		if (rs.allow != NULL)
			evhttp_add_header(evhttp_request_get_output_headers(
			    req), "Allow", rs.allow);
		http_error(&c, rs.status, "%s", rs.cause);
	} else {
		c.arg = rs.arg;
		c.query = &rs.query;
		http_handlers[rs.route->id](&c);
	}
	http_route_res_free(&rs);
}

static struct evhttp *
http_new_evhttp(struct http_server *srv, struct http_listener *lst,
    bool writable, const char *kind)
{
	struct evhttp		*h = evhttp_new(srv->base);
	struct http_conns_conf	 cc;

	if (h == NULL)
		fatalx("evhttp_new failed");
	lst->srv = srv;
	lst->http = h;
	lst->writable = writable;
	lst->check_host = !writable;
	lst->kind = kind;
	cc.max = srv->conf.max_conns;
	cc.request_s = srv->conf.timeout_s;
	cc.answer_s = srv->conf.answer_timeout_s;
	cc.kind = kind;
	lst->conns = http_conns_new(srv->base, h, &cc);
	evhttp_set_timeout(h, (int)srv->conf.timeout_s);
	evhttp_set_max_body_size(h, srv->conf.max_body);
	evhttp_set_max_headers_size(h, srv->conf.max_headers);
	/*
	 * Every method reaches the dispatcher, so that a wrong one gets a
	 * JSON 405 with Allow rather than evhttp's HTML 501.
	 */
	evhttp_set_allowed_methods(h, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
	    EVHTTP_REQ_PUT | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_gencb(h, http_dispatch, lst);
	return h;
}

static int
http_listen_tcp(struct http_server *srv, char *err, size_t errlen)
{
	struct addrinfo		*ai = NULL;
	struct evconnlistener	*l;
	struct sockaddr_storage	 ss;
	socklen_t		 sl = sizeof(ss);
	int			 fd = -1, one = 1;

	if (http_conf_addr(&srv->conf, &ai, err, errlen) != 0)
		return -1;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(fd, HTTP_LISTEN_BACKLOG) != 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
		snprintf(err, errlen, "listen %s: %s", srv->conf.listen,
		    strerror(errno));
		goto fail;
	}
	srv->port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	freeaddrinfo(ai);
	ai = NULL;
	http_new_evhttp(srv, &srv->tcp, false, "tcp");
	l = evconnlistener_new(srv->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE,
	    -1, fd);
	if (l == NULL || evhttp_bind_listener(srv->tcp.http, l) == NULL) {
		snprintf(err, errlen, "listen %s: cannot serve it",
		    srv->conf.listen);
		if (l != NULL)
			evconnlistener_free(l);
		else
			close(fd);
		return -1;
	}
	log_notice("http: read-only API, dashboard and metrics on %s"
	    " (port %u)", srv->conf.listen, srv->port);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (ai != NULL)
		freeaddrinfo(ai);
	return -1;
}

/*
 * A socket file left by a daemon that died is replaced; one that answers
 * belongs to a running daemon and is an error.
 */
static int
http_unlink_stale(const char *path, const struct sockaddr_un *sun,
    char *err, size_t errlen)
{
	struct stat	st;
	int		fd, rc;

	if (lstat(path, &st) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "socket %s: exists and is not a socket",
		    path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "socket %s: a daemon is already"
		    " listening there", path);
		return -1;
	}
	if (unlink(path) != 0) {
		snprintf(err, errlen, "socket %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
http_listen_unix(struct http_server *srv, char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	struct evconnlistener	*l;
	struct group		 gr, *grp = NULL;
	char			 grbuf[4096], *dir, *slash;
	const char		*path = srv->conf.socket;
	gid_t			 gid = (gid_t)-1;
	mode_t			 old;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket %s: path too long", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if (srv->conf.socket_group[0] != '\0') {
		if (getgrnam_r(srv->conf.socket_group, &gr, grbuf, sizeof(grbuf),
		    &grp) != 0 || grp == NULL) {
			snprintf(err, errlen, "socket-group %s: no such group",
			    srv->conf.socket_group);
			return -1;
		}
		gid = grp->gr_gid;
	}
	dir = xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash != NULL && slash != dir) {
		*slash = '\0';
		if (mkdir_p(dir, 0755) != 0) {
			snprintf(err, errlen, "socket directory %s: %s", dir,
			    strerror(errno));
			free(dir);
			return -1;
		}
	}
	free(dir);
	if (http_unlink_stale(path, &sun, err, errlen) != 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	/* Never a moment with wider permissions than 0660. */
	old = umask(0117);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		umask(old);
		snprintf(err, errlen, "socket %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	srv->sock_path = xstrdup(path);
	if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) != 0) ||
	    chmod(path, 0660) != 0 || listen(fd, HTTP_LISTEN_BACKLOG) != 0) {
		snprintf(err, errlen, "socket %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	http_new_evhttp(srv, &srv->unix_, true, "unix");
	l = evconnlistener_new(srv->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE,
	    -1, fd);
	if (l == NULL || evhttp_bind_listener(srv->unix_.http, l) == NULL) {
		snprintf(err, errlen, "socket %s: cannot serve it", path);
		if (l != NULL)
			evconnlistener_free(l);
		else
			close(fd);
		return -1;
	}
	log_notice("http: API on unix socket %s (group %s)", path,
	    srv->conf.socket_group[0] != '\0' ? srv->conf.socket_group :
	    "unchanged");
	return 0;
}

struct http_server *
http_start(struct event_base *base, struct host *host,
    const struct http_writer *writer, const struct http_conf *conf,
    unsigned int period_ms, char *err, size_t errlen)
{
	struct http_server	*srv = xcalloc(1, sizeof(*srv));

	srv->base = base;
	srv->host = host;
	if (writer != NULL)
		srv->writer = *writer;
	srv->start_ms = time_real_ms();
	srv->conf = *conf;
	srv->period_ms = period_ms;
	api_snapshot_init(&srv->snap);
	if (http_conf_check(conf, err, errlen) != 0)
		goto fail;
	if (conf->listen[0] != '\0' && http_listen_tcp(srv, err, errlen) != 0)
		goto fail;
	if (conf->socket[0] != '\0' && http_listen_unix(srv, err, errlen) != 0)
		goto fail;
	return srv;
fail:
	http_stop(srv);
	return NULL;
}

void
http_stop(struct http_server *srv)
{
	if (srv == NULL)
		return;
	if (srv->tcp.http != NULL)
		evhttp_free(srv->tcp.http);
	http_conns_free(srv->tcp.conns);
	if (srv->unix_.http != NULL)
		evhttp_free(srv->unix_.http);
	http_conns_free(srv->unix_.conns);
	if (srv->sock_path != NULL) {
		if (unlink(srv->sock_path) != 0 && errno != ENOENT)
			log_warn("unlink %s", srv->sock_path);
		free(srv->sock_path);
	}
	http_cache_clear(srv);
	api_snapshot_free(&srv->snap);
	free(srv);
}

void
http_set_period(struct http_server *srv, unsigned int period_ms)
{
	srv->period_ms = period_ms;
	/* The cached views show the period too. */
	http_cache_clear(srv);
}

unsigned int
http_server_port(const struct http_server *srv)
{
	return srv->tcp.http != NULL ? srv->port : 0;
}
