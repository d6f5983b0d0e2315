/*
 * The [http] section checked as the daemon will use it, without binding
 * anything: hconf_check() calls this, so --check-config (the unit's
 * ExecStartPre) and SIGHUP refuse what http_start() would refuse.  Only
 * what the running system decides at bind time (a port taken, a daemon
 * already on the socket) is left to the start itself.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <grp.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "http.h"

bool
http_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in	*in4 = (const void *)sa;
	const struct sockaddr_in6	*in6 = (const void *)sa;

	if (sa->sa_family == AF_INET)
		return (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		    in6->sin6_addr.s6_addr[12] == 127);
	return false;
}

/* "127.0.0.1:9471", "[::1]:9471"; numeric only, no name lookups. */
int
http_conf_addr(const struct http_conf *c, struct addrinfo **out, char *err,
    size_t errlen)
{
	struct addrinfo	 hints, *ai = NULL;
	char		 host[CONF_STRLEN], *colon, *h;
	const char	*port;
	int		 rc;

	*out = NULL;
	snprintf(host, sizeof(host), "%s", c->listen);
	colon = strrchr(host, ':');
	if (colon == NULL) {
		snprintf(err, errlen, "listen %s: expected ADDRESS:PORT",
		    c->listen);
		return -1;
	}
	*colon = '\0';
	port = colon + 1;
	h = host;
	if (*h == '[' && colon > h && colon[-1] == ']') {
		h++;
		colon[-1] = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
	rc = getaddrinfo(*h ? h : NULL, port, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "listen %s: %s", c->listen,
		    gai_strerror(rc));
		return -1;
	}
	if (!http_is_loopback(ai->ai_addr) && !c->listen_public) {
		snprintf(err, errlen, "listen %s: not a loopback address;"
		    " set listen-public = yes to serve it", c->listen);
		freeaddrinfo(ai);
		return -1;
	}
	*out = ai;
	return 0;
}

int
http_conf_check(const struct http_conf *c, char *err, size_t errlen)
{
	struct sockaddr_un	 sun;
	struct addrinfo		*ai;
	struct group		 gr, *grp = NULL;
	struct stat		 st;
	char			 grbuf[4096];

	if (c->listen[0] == '\0' && c->socket[0] == '\0') {
		snprintf(err, errlen, "http: neither listen nor socket is set");
		return -1;
	}
	if (c->listen[0] != '\0') {
		if (http_conf_addr(c, &ai, err, errlen) != 0)
			return -1;
		freeaddrinfo(ai);
	}
	if (c->socket[0] == '\0')
		return 0;
	if (c->socket[0] != '/') {
		snprintf(err, errlen, "socket %s: not an absolute path",
		    c->socket);
		return -1;
	}
	if (strlen(c->socket) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket %s: path too long (at most %zu"
		    " bytes)", c->socket, sizeof(sun.sun_path) - 1);
		return -1;
	}
	if (lstat(c->socket, &st) == 0 && !S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "socket %s: exists and is not a socket",
		    c->socket);
		return -1;
	}
	if (c->socket_group[0] != '\0' && (getgrnam_r(c->socket_group, &gr,
	    grbuf, sizeof(grbuf), &grp) != 0 || grp == NULL)) {
		snprintf(err, errlen, "socket-group %s: no such group",
		    c->socket_group);
		return -1;
	}
	return 0;
}
