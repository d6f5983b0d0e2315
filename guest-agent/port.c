/* Channel endpoint: virtio-serial port or unix socket, with back-off. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "port.h"
#include "proto.h"
#include "util.h"

#define PORT_DEV_LINK	"/dev/virtio-ports/" PROTO_PORT_NAME
#define PORT_OUT_MAX	65536	/* bytes queued for the host at most */
#define PORT_READ	4096

struct port {
	char			*spec;		/* NULL: find by name */
	char			*sys_root;
	bool			 is_unix;
	char			*path;		/* device or socket path */
	int			 fd;
	bool			 connected;
	bool			 waiting;	/* backing off; fd not polled */
	uint64_t		 deadline;	/* of the back-off, 0 none */
	unsigned int		 backoff_ms;
	int			 last_errno;	/* to log a failure once */
	struct proto_framer	*framer;
	char			*out;
	size_t			 outlen;
	struct port_cbs		 cbs;
	void			*arg;
};

static void	port_lost(struct port *, bool);

struct port *
port_new(const char *spec, const char *sys_root, const struct port_cbs *cbs,
    void *arg)
{
	struct port	*p = xcalloc(1, sizeof(*p));

	if (spec != NULL) {
		p->spec = xstrdup(spec);
		if (strncmp(spec, "unix:", 5) == 0) {
			p->is_unix = true;
			p->path = xstrdup(spec + 5);
		} else
			p->path = xstrdup(spec);
	}
	p->sys_root = xstrdup(sys_root);
	p->fd = -1;
	p->waiting = true;
	p->deadline = 1;	/* due at once */
	p->backoff_ms = PORT_BACKOFF_MIN_MS;
	p->framer = proto_framer_new();
	p->out = xmalloc(PORT_OUT_MAX);
	p->cbs = *cbs;
	p->arg = arg;
	return p;
}

void
port_free(struct port *p)
{
	if (p == NULL)
		return;
	if (p->fd != -1)
		close(p->fd);
	proto_framer_free(p->framer);
	free(p->out);
	free(p->spec);
	free(p->sys_root);
	free(p->path);
	free(p);
}

bool
port_connected(const struct port *p)
{
	return p->connected;
}

const char *
port_path(const struct port *p)
{
	return p->path != NULL ? p->path : "(none)";
}

uint64_t
port_deadline(const struct port *p)
{
	return p->waiting ? p->deadline : 0;
}

static void
port_backoff(struct port *p)
{
	p->waiting = true;
	p->deadline = time_mono_ms() + p->backoff_ms;
	p->backoff_ms *= 2;
	if (p->backoff_ms > PORT_BACKOFF_MAX_MS)
		p->backoff_ms = PORT_BACKOFF_MAX_MS;
}

/* Log a failure the first time it happens, not on every retry. */
static void
port_fail(struct port *p, const char *what)
{
	if (errno != p->last_errno)
		log_warn("%s %s", what, port_path(p));
	p->last_errno = errno;
}

/* Without udev there is no /dev/virtio-ports link: look in sysfs. */
static char *
port_find(const char *sys_root)
{
	char		*dir, *path, name[256], *found = NULL;
	DIR		*d;
	struct dirent	*de;

	if (access(PORT_DEV_LINK, F_OK) == 0)
		return xstrdup(PORT_DEV_LINK);
	dir = path_join(sys_root, "class/virtio-ports");
	if ((d = opendir(dir)) != NULL) {
		while (found == NULL && (de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			xasprintf(&path, "%s/%s/name", dir, de->d_name);
			if (file_read(path, name, sizeof(name)) != -1 &&
			    strcmp(str_rstrip(name), PROTO_PORT_NAME) == 0)
				xasprintf(&found, "/dev/%s", de->d_name);
			free(path);
		}
		closedir(d);
	}
	free(dir);
	return found;
}

static void
port_set_connected(struct port *p)
{
	p->connected = true;
	p->last_errno = 0;
	p->backoff_ms = PORT_BACKOFF_MIN_MS;
	proto_framer_reset(p->framer);
	log_info("host connected on %s", port_path(p));
	p->cbs.connected(p->arg);
}

static int
port_open(struct port *p)
{
	struct sockaddr_un	sun;

	if (p->spec == NULL) {
		free(p->path);
		if ((p->path = port_find(p->sys_root)) == NULL) {
			errno = ENOENT;
			port_fail(p, "no virtio port named " PROTO_PORT_NAME);
			return -1;
		}
	}
	if (!p->is_unix) {
		p->fd = open(p->path, O_RDWR | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
		if (p->fd == -1) {
			port_fail(p, "open");
			return -1;
		}
		log_info("opened %s", p->path);
		return 0;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(p->path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		port_fail(p, "connect");
		return -1;
	}
	memcpy(sun.sun_path, p->path, strlen(p->path));
	p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->fd == -1) {
		port_fail(p, "socket for");
		return -1;
	}
	if (connect(p->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		port_fail(p, "connect");
		close(p->fd);
		p->fd = -1;
		return -1;
	}
	if (fcntl(p->fd, F_SETFL, O_NONBLOCK) == -1) {
		port_fail(p, "fcntl");
		close(p->fd);
		p->fd = -1;
		return -1;
	}
	port_set_connected(p);
	return 0;
}

void
port_timer(struct port *p, uint64_t now)
{
	struct pollfd	pfd;

	if (!p->waiting || now < p->deadline)
		return;
	p->waiting = false;
	p->deadline = 0;
	if (p->fd == -1) {
		if (port_open(p) == -1) {
			port_backoff(p);
			return;
		}
		if (p->is_unix)
			return;
	}
	/* A virtio port: is the host there now? */
	pfd.fd = p->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) == -1 || (pfd.revents & POLLHUP)) {
		if (pfd.revents & POLLIN)
			return;	/* data first; the hang-up comes after */
		port_backoff(p);
		return;
	}
	if (!p->connected)
		port_set_connected(p);
}

int
port_pollfd(struct port *p, short *events)
{
	if (p->waiting || p->fd == -1)
		return -1;
	*events = POLLIN;
	if (p->outlen > 0)
		*events |= POLLOUT;
	return p->fd;
}

static int
port_frame(void *arg, enum proto_frame_event ev, const char *line,
    size_t len)
{
	struct port	*p = arg;

	if (ev == PROTO_FRAME_OVERLONG)
		p->cbs.overlong(p->arg);
	else
		p->cbs.line(p->arg, line, len);
	/* A callback may have lost the connection: stop feeding then. */
	return p->connected ? 0 : 1;
}

static void
port_flush(struct port *p)
{
	ssize_t	n;

	while (p->outlen > 0) {
		n = write(p->fd, p->out, p->outlen);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			log_warn("write %s", port_path(p));
			port_lost(p, true);
			return;
		}
		memmove(p->out, p->out + n, p->outlen - (size_t)n);
		p->outlen -= (size_t)n;
	}
}

/* The host went away: drop what is half read or queued, back off. */
static void
port_lost(struct port *p, bool failed)
{
	bool	was = p->connected;

	p->connected = false;
	p->outlen = 0;
	proto_framer_reset(p->framer);
	/*
	 * A socket is reconnected; a virtio port stays open (EOF only means
	 * the host side is closed) unless it failed, e.g. was unplugged.
	 */
	if (p->fd != -1 && (p->is_unix || failed)) {
		close(p->fd);
		p->fd = -1;
	}
	if (was) {
		log_info("host disconnected from %s", port_path(p));
		p->cbs.disconnected(p->arg);
	}
	port_backoff(p);
}

void
port_handle(struct port *p, short revents)
{
	char	buf[PORT_READ];
	ssize_t	n;

	if (revents & POLLNVAL) {
		p->fd = -1;
		port_lost(p, true);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		for (;;) {
			n = read(p->fd, buf, sizeof(buf));
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && errno == EAGAIN)
				break;
			if (n <= 0) {
				if (n == -1)
					log_warn("read %s", port_path(p));
				port_lost(p, n == -1);
				return;
			}
			if (!p->connected)
				port_set_connected(p);
			proto_framer_feed(p->framer, buf, (size_t)n,
			    port_frame, p);
			if (!p->connected)
				return;
		}
		/* A virtio port reports the hang-up with nothing to read. */
		if (revents & POLLHUP) {
			port_lost(p, false);
			return;
		}
	}
	if ((revents & POLLOUT) && p->outlen > 0)
		port_flush(p);
}

int
port_send(struct port *p, const char *buf, size_t len)
{
	if (!p->connected || p->fd == -1)
		return 0;
	if (len > PORT_OUT_MAX - p->outlen) {
		log_warnx("host is not reading; dropping %zu bytes", len);
		return 0;
	}
	memcpy(p->out + p->outlen, buf, len);
	p->outlen += len;
	port_flush(p);
	return 1;
}
