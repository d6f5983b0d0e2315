/*
 * libFuzzer harness for what prefcpu-hostd's HTTP server decides about a
 * request before a handler runs (host-agent/http_route.c): the input is
 * a request head, "METHOD TARGET VERSION" and header lines.  The target
 * is split by libevent's own URI parser, as evhttp does for a request,
 * and the decision is made as the TCP listener (Host checked, read-only)
 * and as the unix socket would.
 *
 * Invariants checked, besides no crash, UB or leak:
 * - a refused request has a 4xx status and a non-empty one-line cause,
 *   no route and no name; an Allow header exactly with 405;
 * - an accepted one has a route that takes its method (and a write only
 *   on the unix socket), and a name exactly when the route has "{}": valid
 *   UTF-8 (checked here independently) without control characters,
 *   shorter than HTTP_ROUTE_NAME_MAX, and the very bytes libevent's
 *   decoder gives for that segment;
 * - the query string parses as libevent's evhttp_parse_query_str() does:
 *   same outcome, same keys and values in the same order.
 */
#include <sys/queue.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "http_route.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_MAX	8192	/* [http] max-headers' default */

/* UTF-8 by RFC 3629's table, without C0, DEL and C1 controls. */
static bool
text_ok(const unsigned char *s, size_t len)
{
	size_t		i = 0, n, k;
	uint32_t	cp, min;

	while (i < len) {
		cp = s[i];
		if (cp < 0x80) {
			if (cp < 0x20 || cp == 0x7f)
				return false;
			i++;
			continue;
		}
		if ((cp & 0xe0) == 0xc0) {
			n = 2;
			cp &= 0x1f;
			min = 0x80;
		} else if ((cp & 0xf0) == 0xe0) {
			n = 3;
			cp &= 0x0f;
			min = 0x800;
		} else if ((cp & 0xf8) == 0xf0) {
			n = 4;
			cp &= 0x07;
			min = 0x10000;
		} else
			return false;
		if (len - i < n)
			return false;
		for (k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 &&
		    cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
			return false;
		i += n;
	}
	return true;
}

/* The raw segment of path that pattern's "{}" stands at. */
static char *
segment(const char *pattern, const char *path)
{
	const char	*p = pattern, *q = path;

	for (;;) {
		if (*p != '/' || *q != '/')
			abort();
		p++;
		q++;
		if (strncmp(p, "{}", 2) == 0)
			return strndup(q, strcspn(q, "/"));
		p += strcspn(p, "/");
		q += strcspn(q, "/");
	}
}

static void
check_query(const char *s)
{
	struct http_query	 q;
	struct evkeyvalq	 ev;
	struct evkeyval		*kv;
	size_t			 i = 0;
	int			 ours, theirs;

	TAILQ_INIT(&ev);
	ours = http_query_parse(s, &q);
	theirs = evhttp_parse_query_str(s, &ev);
	if (ours != theirs)
		abort();
	TAILQ_FOREACH(kv, &ev, next) {
		if (i >= q.n || strcmp(q.key[i], kv->key) != 0 ||
		    strcmp(q.val[i], kv->value) != 0 ||
		    strcmp(http_query_get(&q, kv->key),
		    evhttp_find_header(&ev, kv->key)) != 0)
			abort();
		i++;
	}
	if (i != q.n)
		abort();
	evhttp_clear_headers(&ev);
	http_query_free(&q);
}

static void
check(const struct http_route_req *rq)
{
	struct http_route_res	 res;
	char			*seg, *dec;
	size_t			 declen;
	int			 rc;

	rc = http_route_decide(rq, &res);
	if (rc != res.status)
		abort();
	if (rc != 0) {
		if (rc < 400 || rc > 499 || res.route != NULL ||
		    res.arg != NULL || res.query.n != 0 || res.cause == NULL ||
		    res.cause[0] == '\0' || strpbrk(res.cause, "\r\n") != NULL ||
		    (rc == 405) != (res.allow != NULL))
			abort();
		http_route_res_free(&res);
		return;
	}
	if (res.route == NULL || (res.route->methods & rq->method) == 0 ||
	    (res.route->write && !rq->writable) ||
	    (strstr(res.route->pattern, "{}") != NULL) != (res.arg != NULL))
		abort();
	if (res.arg != NULL) {
		declen = strlen(res.arg);
		if (declen == 0 || declen >= HTTP_ROUTE_NAME_MAX ||
		    !text_ok((const unsigned char *)res.arg, declen))
			abort();
		seg = segment(res.route->pattern, rq->path);
		dec = evhttp_uridecode(seg, 0, &declen);
		if (dec == NULL || declen != strlen(res.arg) ||
		    memcmp(dec, res.arg, declen) != 0)
			abort();
		free(dec);
		free(seg);
	}
	http_route_res_free(&res);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_route_req	 rq;
	struct evhttp_uri	*uri;
	char			*text, *line, *next, *target, *sp, *colon;
	char			 name[HTTP_ROUTE_NAME_MAX];

	if (size > FUZZ_MAX)
		return -1;
	text = malloc(size + 1);
	if (text == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';

	/* The request line: METHOD SP TARGET [SP VERSION]. */
	memset(&rq, 0, sizeof rq);
	rq.listen = "127.0.0.1:9471";
	rq.hosts = "box.example, prefcpu.lan";
	next = text + strcspn(text, "\n");
	if (*next != '\0')
		*next++ = '\0';
	line = text;
	if (*line != '\0' && line[strlen(line) - 1] == '\r')
		line[strlen(line) - 1] = '\0';
	target = strchr(line, ' ');
	if (target == NULL)
		goto out;
	*target++ = '\0';
	if ((sp = strchr(target, ' ')) != NULL)
		*sp = '\0';
	if (strcmp(line, "GET") == 0 || strcmp(line, "HEAD") == 0)
		rq.method = HM_GET;
	else if (strcmp(line, "PUT") == 0)
		rq.method = HM_PUT;
	else if (strcmp(line, "POST") == 0)
		rq.method = HM_POST;

	/* Headers: the first Host wins, as evhttp_find_header() finds it. */
	while (*next != '\0') {
		line = next;
		next = line + strcspn(line, "\n");
		if (*next != '\0')
			*next++ = '\0';
		if (*line != '\0' && line[strlen(line) - 1] == '\r')
			line[strlen(line) - 1] = '\0';
		colon = strchr(line, ':');
		if (colon == NULL || rq.host != NULL)
			continue;
		*colon = '\0';
		if (strcasecmp(line, "Host") == 0)
			rq.host = colon + 1 + strspn(colon + 1, " \t");
	}

	/* The decoders on the raw target too, whatever libevent makes of it. */
	(void)http_route_decode(target, strlen(target), name, sizeof name);
	(void)http_route_host_ok(rq.listen, rq.hosts, target);

	uri = evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT);
	if (uri == NULL)
		goto out;	/* evhttp answers 400 itself */
	rq.path = evhttp_uri_get_path(uri);
	rq.query = evhttp_uri_get_query(uri);
	if (rq.query != NULL)
		check_query(rq.query);
	rq.check_host = true;		/* TCP */
	rq.writable = false;
	check(&rq);
	rq.check_host = false;		/* the unix socket */
	rq.writable = true;
	check(&rq);
	evhttp_uri_free(uri);
out:
	free(text);
	return 0;
}
