/*
 * The pure part of the HTTP server (http_route.h): route table, path and
 * query decoding, Host rule.  No libevent, no I/O: the decoding follows
 * evhttp's rules so that moving it here changed no answer, and the unit
 * tests compare both on the same inputs.
 */
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_route.h"
#include "utf8.h"
#include "util.h"

const struct http_route http_routes[HTTP_NROUTES] = {
	{ "/", HM_GET, false, HTTP_R_INDEX },
	{ "/static/{}", HM_GET, false, HTTP_R_STATIC },
	{ "/api/v1/host", HM_GET, false, HTTP_R_HOST },
	{ "/api/v1/domains", HM_GET, false, HTTP_R_DOMAINS },
	{ "/api/v1/domains/{}", HM_GET, false, HTTP_R_DOMAIN },
	{ "/api/v1/domains/{}/policy", HM_PUT | HM_POST, true, HTTP_R_POLICY },
	{ "/api/v1/history", HM_GET, false, HTTP_R_HISTORY },
	{ "/api/v1/decisions", HM_GET, false, HTTP_R_DECISIONS },
	{ "/metrics", HM_GET, false, HTTP_R_METRICS },
};

static int
http_route_xdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * evhttp's decoder: "%XX" with two hex digits is a byte, '+' a space if
 * plus; out must hold len + 1 bytes.  Returns the decoded length (NULs
 * included).
 */
static size_t
http_route_unescape(const char *s, size_t len, bool plus, char *out)
{
	size_t	i, j = 0;
	int	hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] == '%' && i + 2 < len &&
		    (hi = http_route_xdigit(s[i + 1])) >= 0 &&
		    (lo = http_route_xdigit(s[i + 2])) >= 0) {
			out[j++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (s[i] == '+' && plus)
			out[j++] = ' ';
		else
			out[j++] = s[i];
	}
	out[j] = '\0';
	return j;
}

bool
http_route_name_ok(const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i, n;

	for (i = 0; i < len; i += n) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return false;
		if (u[i] < 0x80) {
			n = 1;
			continue;
		}
		n = utf8_len(u + i, len - i);
		/* U+0080..U+009F, the C1 controls, are C2 80..C2 9F. */
		if (n == 0 || (u[i] == 0xc2 && u[i + 1] < 0xa0))
			return false;
	}
	return true;
}

int
http_route_decode(const char *seg, size_t len, char *out, size_t outlen)
{
	char	*tmp;
	size_t	 n;

	/* Decoding never lengthens: len bytes or more cannot fit. */
	if (len == 0 || outlen == 0 || len / 3 >= outlen)
		return -1;
	tmp = xmalloc(len + 1);
	n = http_route_unescape(seg, len, false, tmp);
	if (n == 0 || n >= outlen || memchr(tmp, '\0', n) != NULL ||
	    !http_route_name_ok(tmp, n)) {
		free(tmp);
		return -1;
	}
	memcpy(out, tmp, n + 1);
	free(tmp);
	return 0;
}

int
http_route_match(const char *pattern, const char *path, char **arg)
{
	const char	*p = pattern, *q = path, *pe, *qe;
	char		 name[HTTP_ROUTE_NAME_MAX];

	*arg = NULL;
	for (;;) {
		if (*p != '/' || *q != '/')
			break;
		p++;
		q++;
		pe = p + strcspn(p, "/");
		qe = q + strcspn(q, "/");
		if (pe - p == 2 && strncmp(p, "{}", 2) == 0) {
			if (qe == q || *arg != NULL)
				goto nomatch;
			if (http_route_decode(q, (size_t)(qe - q), name,
			    sizeof(name)) != 0)
				return -1;
			*arg = xstrdup(name);
		} else if (pe - p != qe - q || strncmp(p, q, (size_t)(pe - p)))
			goto nomatch;
		p = pe;
		q = qe;
		if (*p == '\0' && *q == '\0')
			return 1;
	}
	if (*p == '\0' && *q == '\0')
		return 1;
nomatch:
	free(*arg);
	*arg = NULL;
	return 0;
}

/* Does name equal one of the words of list (spaces or commas between)? */
static bool
http_route_in_list(const char *list, const char *name, size_t len)
{
	const char	*p = list, *e;

	for (;;) {
		p += strspn(p, " ,\t");
		if (*p == '\0')
			return false;
		e = p + strcspn(p, " ,\t");
		if ((size_t)(e - p) == len && strncasecmp(p, name, len) == 0)
			return true;
		p = e;
	}
}

bool
http_route_host_ok(const char *listen, const char *hosts, const char *host)
{
	struct in6_addr	 a6;
	struct in_addr	 a4;
	char		 name[256], addr[256], *colon;
	const char	*p;
	size_t		 n;

	if (host == NULL)
		return true;
	if (*host == '[') {
		p = strchr(host, ']');
		if (p == NULL || (p[1] != '\0' && p[1] != ':'))
			return false;
		n = (size_t)(p - host - 1);
		host++;
	} else {
		p = strchr(host, ':');
		n = p != NULL ? (size_t)(p - host) : strlen(host);
	}
	if (n == 0 || n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (name[n - 1] == '.' && n > 1)	/* "localhost." */
		name[--n] = '\0';
	if (strcasecmp(name, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, name, &a4) == 1 &&
	    (ntohl(a4.s_addr) >> 24) == 127)
		return true;
	if (inet_pton(AF_INET6, name, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6))
		return true;
	/* The address part of "ADDRESS:PORT", "[ADDRESS]:PORT". */
	snprintf(addr, sizeof(addr), "%s", listen != NULL ? listen : "");
	if ((colon = strrchr(addr, ':')) != NULL)
		*colon = '\0';
	p = addr;
	if (*p == '[' && colon != NULL && colon > p && colon[-1] == ']') {
		p++;
		colon[-1] = '\0';
	}
	if (*p != '\0' && strcasecmp(p, name) == 0)
		return true;
	return hosts != NULL && http_route_in_list(hosts, name, n);
}

void
http_query_free(struct http_query *q)
{
	size_t	i;

	for (i = 0; i < q->n; i++) {
		free(q->key[i]);
		free(q->val[i]);
	}
	free(q->key);
	free(q->val);
	memset(q, 0, sizeof(*q));
}

int
http_query_parse(const char *s, struct http_query *q)
{
	const char	*p = s, *amp, *eq;
	char		*val;
	size_t		 len;

	memset(q, 0, sizeof(*q));
	while (*p != '\0') {
		amp = p + strcspn(p, "&");
		eq = memchr(p, '=', (size_t)(amp - p));
		if (eq == NULL || eq == p) {
			http_query_free(q);
			return -1;
		}
		len = (size_t)(amp - eq - 1);
		val = xmalloc(len + 1);
		http_route_unescape(eq + 1, len, true, val);
		q->key = xreallocarray(q->key, q->n + 1, sizeof(*q->key));
		q->val = xreallocarray(q->val, q->n + 1, sizeof(*q->val));
		q->key[q->n] = xstrndup(p, (size_t)(eq - p));
		q->val[q->n] = val;
		q->n++;
		p = *amp == '&' ? amp + 1 : amp;
	}
	return 0;
}

const char *
http_query_get(const struct http_query *q, const char *name)
{
	size_t	i;

	for (i = 0; i < q->n; i++) {
		if (strcasecmp(q->key[i], name) == 0)
			return q->val[i];
	}
	return NULL;
}

void
http_route_res_free(struct http_route_res *res)
{
	free(res->arg);
	res->arg = NULL;
	http_query_free(&res->query);
}

static int
http_route_refuse(struct http_route_res *res, int status, const char *cause)
{
	free(res->arg);
	res->arg = NULL;
	res->route = NULL;
	res->status = status;
	res->cause = cause;
	return status;
}

int
http_route_decide(const struct http_route_req *req, struct http_route_res *res)
{
	const struct http_route	*found = NULL;
	size_t			 i;
	int			 rc;
	bool			 bad_name = false;

	memset(res, 0, sizeof(*res));
	if (req->check_host && !http_route_host_ok(req->listen, req->hosts,
	    req->host))
		return http_route_refuse(res, 403, "Host header names another"
		    " server; the [http] hosts option lists the names allowed");
	if (req->path == NULL || *req->path != '/')
		return http_route_refuse(res, 400, "bad request target");
	for (i = 0; i < HTTP_NROUTES && found == NULL; i++) {
		rc = http_route_match(http_routes[i].pattern, req->path,
		    &res->arg);
		if (rc < 0)
			bad_name = true;
		else if (rc > 0)
			found = &http_routes[i];
	}
	if (found == NULL)
		return http_route_refuse(res, bad_name ? 400 : 404, bad_name ?
		    "bad domain name in the path" : "no such resource");
	if ((found->methods & req->method) == 0) {
		res->allow = found->methods & HM_GET ? "GET, HEAD" :
		    "PUT, POST";
		return http_route_refuse(res, 405, "method not allowed here");
	}
	if (found->write && !req->writable)
		return http_route_refuse(res, 403, "read-only listener: writes"
		    " go through the unix socket");
	if (req->query != NULL && http_query_parse(req->query,
	    &res->query) != 0)
		return http_route_refuse(res, 400, "bad query string");
	res->route = found;
	return 0;
}
