/*
 * The agent's end of the channel: a virtio-serial port (found by name, or
 * given as a character device) or, for tests that play the host, a unix
 * socket ("unix:PATH").  Bytes are cut into lines by the proto framer.
 *
 * While the host side is closed a virtio port reads EOF and poll keeps
 * reporting POLLHUP, so the port is left out of poll for a back-off
 * interval instead of spinning; a unix socket is reconnected with
 * back-off.  Output while the host is away is dropped.
 */
#ifndef PREFCPU_GUEST_PORT_H
#define PREFCPU_GUEST_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PORT_BACKOFF_MIN_MS	250
#define PORT_BACKOFF_MAX_MS	1000

struct port_cbs {
	void	(*line)(void *arg, const char *line, size_t len);
	void	(*overlong)(void *arg);
	void	(*connected)(void *arg);
	void	(*disconnected)(void *arg);
};

struct port;

/* spec: NULL to find org.prefcpu.0, a device path, or "unix:PATH". */
struct port *port_new(const char *spec, const char *sys_root,
	    const struct port_cbs *, void *arg);
void	port_free(struct port *);

/* For poll: the fd and events, or -1 while backing off or closed. */
int	port_pollfd(struct port *, short *events);
/* Handle what poll reported for the fd. */
void	port_handle(struct port *, short revents);
/* Monotonic ms of the next timer (0 if none); run it when it is due. */
uint64_t port_deadline(const struct port *);
void	port_timer(struct port *, uint64_t now_ms);

bool	port_connected(const struct port *);
/* What is open now, for logs and status ("/dev/vport0p1"). */
const char *port_path(const struct port *);
/* Queue one encoded line; dropped (0) when the host is away. */
int	port_send(struct port *, const char *buf, size_t len);

#endif
