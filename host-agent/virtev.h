/*
 * libvirt's event loop implemented on the daemon's libevent base.
 *
 * Why not libvirt's default loop on a thread: every libvirt callback would
 * then run on that thread and have to hand its work over to the libevent
 * thread through a queue and a lock, and the model would need locking.
 * With libvirt's handles and timeouts as libevent events, everything runs
 * on one thread: libvirt's domain events, keepalive and close callbacks
 * arrive as ordinary libevent callbacks, in order, next to the sampler.
 * A synchronous libvirt call does not need the loop to run (the remote
 * driver polls its own socket while waiting), so discovery may call
 * libvirt from inside event callbacks.
 */
#ifndef PREFCPU_VIRTEV_H
#define PREFCPU_VIRTEV_H

struct event_base;

/*
 * Register the implementation with libvirt.  Once per process, before the
 * first virConnectOpen; libvirt keeps using it until exit, so base must
 * outlive every connection.
 */
void	virtev_register(struct event_base *);

/* Handles and timeouts registered now (for tests and leak checks). */
int	virtev_count(void);

#endif
