/*
 * What prefcpu-hostd's HTTP server decides about a request before any
 * handler runs, without I/O: the route table, matching a method and path
 * against it (a "{}" segment is percent-decoded into a name), the Host
 * header rule against DNS rebinding, and the query string.  http.c calls
 * it with what evhttp parsed; tests/fuzz/fuzz_http.c calls it with
 * anything.
 */
#ifndef PREFCPU_HTTP_ROUTE_H
#define PREFCPU_HTTP_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

/* A decoded "{}" segment: shorter than this, no NUL. */
#define HTTP_ROUTE_NAME_MAX	256

enum http_method {
	HM_GET = 1,	/* and HEAD */
	HM_PUT = 2,
	HM_POST = 4,
};

/* What a route leads to; http.c maps each to its handler. */
enum http_route_id {
	HTTP_R_INDEX,
	HTTP_R_STATIC,
	HTTP_R_HOST,
	HTTP_R_DOMAINS,
	HTTP_R_DOMAIN,
	HTTP_R_POLICY,
	HTTP_R_HISTORY,
	HTTP_R_DECISIONS,
	HTTP_R_METRICS,
	HTTP_NROUTES,
};

struct http_route {
	const char		*pattern;	/* "{}" matches one segment */
	unsigned int		 methods;	/* HM_* */
	bool			 write;		/* refused over TCP */
	enum http_route_id	 id;
};

extern const struct http_route	http_routes[HTTP_NROUTES];

/* A query string's parameters in order; keys are kept as sent. */
struct http_query {
	size_t		 n;
	char		**key;
	char		**val;	/* percent- and '+'-decoded */
};

/* A request as evhttp parsed it. */
struct http_route_req {
	unsigned int	 method;	/* HM_*, 0 for any other */
	const char	*path;		/* still encoded; NULL: none */
	const char	*query;		/* after '?', encoded; NULL: none */
	const char	*host;		/* Host header; NULL: none */
	bool		 check_host;	/* TCP: apply the Host rule */
	bool		 writable;	/* the unix socket */
	const char	*listen;	/* [http] listen, "ADDRESS:PORT" */
	const char	*hosts;		/* [http] hosts */
};

/* The decision: route != NULL, or status and a one-line cause. */
struct http_route_res {
	const struct http_route	*route;
	int			 status;	/* 0 when routed */
	const char		*cause;
	const char		*allow;		/* with 405: the Allow header */
	char			*arg;	/* the "{}" segment decoded, or NULL */
	struct http_query	 query;
};

/*
 * Decide about a request: 403 for a foreign Host, 400 for a target that
 * is no path, a bad name or a bad query string, 404 for no route, 405
 * for a method the route does not take, 403 for a write on a read-only
 * listener.  Returns res->status; free res with http_route_res_free().
 */
int	http_route_decide(const struct http_route_req *,
	    struct http_route_res *);
void	http_route_res_free(struct http_route_res *);

/*
 * Match a path against a pattern segment by segment; "{}" takes one
 * non-empty segment, percent-decoded into *arg (malloc'ed).  1 on a
 * match, 0 if not, -1 if the segment decodes to something no name can be
 * (see http_route_decode()).
 */
int	http_route_match(const char *pattern, const char *path, char **arg);

/*
 * Percent-decode len bytes of a path segment into out[outlen]: "%XX"
 * with two hex digits is a byte, anything else (also a '%' without two
 * hex digits after it, and '+') stays as it is, as evhttp_uridecode()
 * does.  -1 if the result is empty, has a NUL, is not shorter than
 * outlen, is not valid UTF-8 or has a control character (C0, DEL, C1).
 */
int	http_route_decode(const char *seg, size_t len, char *out,
	    size_t outlen);

/* Is s[len] valid UTF-8 without control characters? */
bool	http_route_name_ok(const char *s, size_t len);

/*
 * May a request carry this Host header?  Loopback addresses, localhost,
 * the address of listen ("ADDRESS:PORT", "[ADDRESS]:PORT") and the words
 * of hosts, any port.  No header at all passes (HTTP/1.0): rebinding
 * needs a browser, and browsers always send it.
 */
bool	http_route_host_ok(const char *listen, const char *hosts,
	    const char *host);

/*
 * Parse a query string as evhttp_parse_query_str() does: "&"-separated
 * KEY=VALUE, every KEY non-empty and with a '=', VALUE decoded ('+' is a
 * space), "" no parameters.  -1 (q empty) on a bad one.
 */
int	http_query_parse(const char *s, struct http_query *q);
/* The value of the first parameter named name (any case), or NULL. */
const char *http_query_get(const struct http_query *, const char *name);
void	http_query_free(struct http_query *);

#endif
