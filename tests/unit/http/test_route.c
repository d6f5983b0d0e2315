/*
 * The HTTP server's decisions without I/O (host-agent/http_route.c):
 * routes and methods, names in the path (percent-decoding, bad escapes,
 * NUL, controls, invalid UTF-8, overlong), the query string and the Host
 * rule.  The decoders are compared with libevent's, which http.c used
 * before, on the same inputs.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http_route.h"
#include "testlib.h"

/* Decide about method + target over TCP (read-only, Host checked). */
static int
decide(unsigned int method, const char *path, const char *query,
    const char *host, bool writable, struct http_route_res *res)
{
	struct http_route_req	rq;

	memset(&rq, 0, sizeof rq);
	rq.method = method;
	rq.path = path;
	rq.query = query;
	rq.host = host;
	rq.check_host = !writable;
	rq.writable = writable;
	rq.listen = "127.0.0.1:9471";
	rq.hosts = "box.example, other";
	return http_route_decide(&rq, res);
}

/* The status of a GET over TCP, with the route id or -1 in *id. */
static int
get(const char *path, int *id, char **arg)
{
	struct http_route_res	res;
	int			rc;

	rc = decide(HM_GET, path, NULL, "127.0.0.1:9471", false, &res);
	*id = res.route != NULL ? (int)res.route->id : -1;
	if (arg != NULL)
		*arg = res.arg != NULL ? strdup(res.arg) : NULL;
	if (rc != 0) {
		ck_assert_ptr_nonnull(res.cause);
		ck_assert(strchr(res.cause, '\n') == NULL);
	}
	http_route_res_free(&res);
	return rc;
}

START_TEST(routes)
{
	int	 id;
	char	*arg;

	ck_assert_int_eq(get("/", &id, &arg), 0);
	ck_assert_int_eq(id, HTTP_R_INDEX);
	ck_assert_ptr_null(arg);
	ck_assert_int_eq(get("/static/app.js", &id, &arg), 0);
	ck_assert_int_eq(id, HTTP_R_STATIC);
	ck_assert_str_eq(arg, "app.js");
	free(arg);
	ck_assert_int_eq(get("/api/v1/host", &id, NULL), 0);
	ck_assert_int_eq(id, HTTP_R_HOST);
	ck_assert_int_eq(get("/api/v1/domains", &id, NULL), 0);
	ck_assert_int_eq(id, HTTP_R_DOMAINS);
	ck_assert_int_eq(get("/api/v1/domains/web-1", &id, &arg), 0);
	ck_assert_int_eq(id, HTTP_R_DOMAIN);
	ck_assert_str_eq(arg, "web-1");
	free(arg);
	ck_assert_int_eq(get("/api/v1/history", &id, NULL), 0);
	ck_assert_int_eq(id, HTTP_R_HISTORY);
	ck_assert_int_eq(get("/api/v1/decisions", &id, NULL), 0);
	ck_assert_int_eq(id, HTTP_R_DECISIONS);
	ck_assert_int_eq(get("/metrics", &id, NULL), 0);
	ck_assert_int_eq(id, HTTP_R_METRICS);

	/* Near misses: exact segments, no trailing or doubled slash. */
	ck_assert_int_eq(get("/metrics/", &id, NULL), 404);
	ck_assert_int_eq(get("//", &id, NULL), 404);
	ck_assert_int_eq(get("/api/v1//host", &id, NULL), 404);
	ck_assert_int_eq(get("/api/v1/hos", &id, NULL), 404);
	ck_assert_int_eq(get("/api/v1/hostx", &id, NULL), 404);
	ck_assert_int_eq(get("/api/v1/domains/", &id, NULL), 404);
	ck_assert_int_eq(get("/api/v1/domains/a/b", &id, NULL), 404);
	ck_assert_int_eq(get("/static/", &id, NULL), 404);
	ck_assert_int_eq(get("/METRICS", &id, NULL), 404);
	ck_assert_int_eq(id, -1);
	/* Not a path at all. */
	ck_assert_int_eq(get("", &id, NULL), 400);
	ck_assert_int_eq(get("metrics", &id, NULL), 400);
	ck_assert_int_eq(get(NULL, &id, NULL), 400);
}
END_TEST

START_TEST(methods_and_writes)
{
	struct http_route_res	res;

	ck_assert_int_eq(decide(HM_PUT, "/metrics", NULL, NULL, true, &res),
	    405);
	ck_assert_str_eq(res.allow, "GET, HEAD");
	ck_assert_str_eq(res.cause, "method not allowed here");
	ck_assert_ptr_null(res.arg);
	http_route_res_free(&res);
	ck_assert_int_eq(decide(0, "/", NULL, NULL, true, &res), 405);
	http_route_res_free(&res);
	ck_assert_int_eq(decide(HM_GET, "/api/v1/domains/a/policy", NULL, NULL,
	    true, &res), 405);
	ck_assert_str_eq(res.allow, "PUT, POST");
	http_route_res_free(&res);
	/* The write: on the unix socket only. */
	ck_assert_int_eq(decide(HM_PUT, "/api/v1/domains/a/policy", NULL,
	    NULL, true, &res), 0);
	ck_assert_int_eq(res.route->id, HTTP_R_POLICY);
	ck_assert_str_eq(res.arg, "a");
	http_route_res_free(&res);
	ck_assert_int_eq(decide(HM_POST, "/api/v1/domains/a/policy", NULL,
	    "localhost", false, &res), 403);
	ck_assert_ptr_nonnull(strstr(res.cause, "read-only"));
	ck_assert_ptr_null(res.arg);
	http_route_res_free(&res);
}
END_TEST

/* The name a path segment decodes to, or NULL if refused. */
static char *
name(const char *seg)
{
	static char	out[HTTP_ROUTE_NAME_MAX];

	return http_route_decode(seg, strlen(seg), out, sizeof out) == 0 ?
	    out : NULL;
}

START_TEST(percent_decoding)
{
	ck_assert_str_eq(name("a%20b"), "a b");
	ck_assert_str_eq(name("%41%62c"), "Abc");
	ck_assert_str_eq(name("%e2%82%AC"), "\xe2\x82\xac");	/* euro */
	ck_assert_str_eq(name("a+b"), "a+b");	/* '+' is a space in queries */
	ck_assert_str_eq(name("%2F"), "/");	/* a name, not a separator */
	ck_assert_str_eq(name("%25"), "%");
	/* Bad escapes stay as they are, as evhttp left them. */
	ck_assert_str_eq(name("%"), "%");
	ck_assert_str_eq(name("50%"), "50%");
	ck_assert_str_eq(name("%4"), "%4");
	ck_assert_str_eq(name("%zz"), "%zz");
	ck_assert_str_eq(name("%g1x"), "%g1x");
	ck_assert_str_eq(name("%%41"), "%A");
	/* No name can be these. */
	ck_assert_ptr_null(name(""));
	ck_assert_ptr_null(name("a%00b"));
	ck_assert_ptr_null(name("%00"));
	ck_assert_ptr_null(name("a%0ab"));	/* newline */
	ck_assert_ptr_null(name("%1b[31m"));	/* escape */
	ck_assert_ptr_null(name("%7f"));	/* DEL */
	ck_assert_ptr_null(name("%c2%85"));	/* NEL, a C1 control */
	ck_assert_ptr_null(name("\x01"));	/* raw, if a client sent it */
	ck_assert_ptr_null(name("%ff"));	/* not UTF-8 */
	ck_assert_ptr_null(name("%c3"));	/* cut short */
	ck_assert_ptr_null(name("%c0%af"));	/* overlong '/' */
	ck_assert_ptr_null(name("%ed%a0%80"));	/* a surrogate */
	ck_assert_str_eq(name("%c2%a0"), "\xc2\xa0");	/* NBSP is printable */

	/* The same decoding libevent did, where a name is accepted. */
	{
		static const char *const segs[] = { "a%20b", "%41%62c", "a+b",
		    "%", "50%", "%4", "%zz", "%%41", "%e2%82%AC", "%2f%2F",
		    "x%4g", "%41%", "%414" };
		size_t	 i, n;
		char	*ev;

		for (i = 0; i < sizeof segs / sizeof segs[0]; i++) {
			ev = evhttp_uridecode(segs[i], 0, &n);
			ck_assert_ptr_nonnull(name(segs[i]));
			ck_assert_str_eq(name(segs[i]), ev);
			free(ev);
		}
	}
}
END_TEST

START_TEST(bad_names_in_paths)
{
	struct http_route_res	res;
	char			path[1200];
	int			id;

	/* A name that cannot be: 400, not 404 or a handler. */
	ck_assert_int_eq(get("/api/v1/domains/a%00b", &id, NULL), 400);
	ck_assert_int_eq(get("/api/v1/domains/a%0d%0aX:%20y", &id, NULL), 400);
	ck_assert_int_eq(get("/api/v1/domains/%ff", &id, NULL), 400);
	ck_assert_int_eq(get("/static/%00", &id, NULL), 400);
	ck_assert_int_eq(decide(HM_GET, "/api/v1/domains/%00", NULL, NULL,
	    false, &res), 400);
	ck_assert_str_eq(res.cause, "bad domain name in the path");
	ck_assert_ptr_null(res.arg);
	http_route_res_free(&res);

	/* 255 bytes is the longest name; 256 is refused, raw or encoded. */
	snprintf(path, sizeof path, "/api/v1/domains/%0255d", 7);
	ck_assert_int_eq(get(path, &id, NULL), 0);
	snprintf(path, sizeof path, "/api/v1/domains/%0256d", 7);
	ck_assert_int_eq(get(path, &id, NULL), 400);
	strcpy(path, "/api/v1/domains/");
	for (id = 0; id < 255; id++)
		strcat(path, "%41");
	ck_assert_int_eq(get(path, &id, NULL), 0);
	strcat(path, "%41");
	ck_assert_int_eq(get(path, &id, NULL), 400);
	/* A long path that is no route: 404, nothing decoded. */
	memset(path, 'a', sizeof path - 1);
	path[0] = '/';
	path[sizeof path - 1] = '\0';
	ck_assert_int_eq(get(path, &id, NULL), 404);
}
END_TEST

/* Query s parsed by us and by libevent: same outcome, same values. */
static void
same_as_libevent(const char *s)
{
	struct http_query	 q;
	struct evkeyvalq	 ev;
	struct evkeyval		*kv;
	int			 ours, theirs;
	size_t			 i = 0;

	TAILQ_INIT(&ev);
	ours = http_query_parse(s, &q);
	theirs = evhttp_parse_query_str(s, &ev);
	ck_assert_msg(ours == theirs, "query \"%s\": %d, libevent %d", s, ours,
	    theirs);
	TAILQ_FOREACH(kv, &ev, next) {
		ck_assert_uint_lt(i, q.n);
		ck_assert_str_eq(q.key[i], kv->key);
		ck_assert_str_eq(q.val[i], kv->value);
		ck_assert_str_eq(http_query_get(&q, kv->key),
		    evhttp_find_header(&ev, kv->key));
		i++;
	}
	ck_assert_uint_eq(i, q.n);
	evhttp_clear_headers(&ev);
	http_query_free(&q);
}

START_TEST(query_parsing)
{
	static const char *const qs[] = { "", "a=1", "a=1&b=2", "a=", "a",
	    "=1", "a=1&", "&a=1", "a=1&&b=2", "a=b=c", "A=1&a=2", "a=%41+b",
	    "a=%zz%4", "a=%00x", "k%41=v", "a=1&b", "seconds=60&domains=0",
	    "a=%2B+%2b", "&", "==", "a==" };
	struct http_query	q;
	struct http_route_res	res;
	size_t			i;

	for (i = 0; i < sizeof qs / sizeof qs[0]; i++)
		same_as_libevent(qs[i]);

	ck_assert_int_eq(http_query_parse("limit=10&Limit=20&x=a+b%21", &q),
	    0);
	ck_assert_uint_eq(q.n, 3);
	ck_assert_str_eq(http_query_get(&q, "LIMIT"), "10");	/* the first */
	ck_assert_str_eq(http_query_get(&q, "x"), "a b!");
	ck_assert_ptr_null(http_query_get(&q, "y"));
	http_query_free(&q);
	ck_assert_int_eq(http_query_parse("limit", &q), -1);
	ck_assert_uint_eq(q.n, 0);

	/* Through the decision: parsed only for a route that takes it. */
	ck_assert_int_eq(decide(HM_GET, "/api/v1/decisions", "limit=5", NULL,
	    false, &res), 0);
	ck_assert_str_eq(http_query_get(&res.query, "limit"), "5");
	http_route_res_free(&res);
	ck_assert_int_eq(decide(HM_GET, "/api/v1/decisions", "limit", NULL,
	    false, &res), 400);
	ck_assert_str_eq(res.cause, "bad query string");
	http_route_res_free(&res);
	ck_assert_int_eq(decide(HM_GET, "/nowhere", "limit", NULL, false,
	    &res), 404);
	http_route_res_free(&res);
}
END_TEST

static bool
host(const char *h)
{
	return http_route_host_ok("127.0.0.1:9471", "box.example, other", h);
}

START_TEST(host_rule)
{
	struct http_route_res	res;

	ck_assert(host(NULL));	/* HTTP/1.0 */
	ck_assert(host("localhost"));
	ck_assert(host("LocalHost:9471"));
	ck_assert(host("localhost."));
	ck_assert(host("127.0.0.1"));
	ck_assert(host("127.1.2.3:80"));
	ck_assert(host("[::1]"));
	ck_assert(host("[::1]:9471"));
	ck_assert(host("box.example"));
	ck_assert(host("BOX.example:1"));
	ck_assert(host("other"));
	ck_assert(!host("attacker.example"));
	ck_assert(!host("attacker.example:9471"));
	ck_assert(!host("box"));		/* a word, not a prefix */
	ck_assert(!host("box.example.evil"));
	ck_assert(!host("128.0.0.1"));
	ck_assert(!host("[::2]"));
	ck_assert(!host("[::1"));		/* unclosed */
	ck_assert(!host("[::1]x"));
	ck_assert(!host(""));
	ck_assert(!host(":9471"));
	ck_assert(!host("."));
	ck_assert(!host("localhost.."));
	/* The listen address, also in brackets. */
	ck_assert(http_route_host_ok("192.0.2.7:9471", "", "192.0.2.7:9471"));
	ck_assert(!http_route_host_ok("192.0.2.7:9471", "", "192.0.2.8"));
	ck_assert(http_route_host_ok("[2001:db8::1]:9471", "",
	    "[2001:DB8::1]:9471"));
	ck_assert(!http_route_host_ok("", "", "example.org"));

	/* In the decision: checked first, only where asked (TCP). */
	ck_assert_int_eq(decide(HM_GET, "/nowhere", NULL, "evil.example",
	    false, &res), 403);
	ck_assert_ptr_nonnull(strstr(res.cause, "[http] hosts"));
	http_route_res_free(&res);
	ck_assert_int_eq(decide(HM_GET, "/metrics", NULL, "evil.example", true,
	    &res), 0);
	http_route_res_free(&res);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("http-route");
	TCase	*tc = tcase_create("route");

	tcase_add_test(tc, routes);
	tcase_add_test(tc, methods_and_writes);
	tcase_add_test(tc, percent_decoding);
	tcase_add_test(tc, bad_names_in_paths);
	tcase_add_test(tc, query_parsing);
	tcase_add_test(tc, host_rule);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
