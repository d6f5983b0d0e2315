/*
 * Discovery through libvirt (DESIGN.md section 3.1): the connection with
 * keepalive, close callback and reconnection with backoff; the running
 * domains at start-up and on every reconnection; lifecycle and
 * metadata-change events; each domain's XML, policy metadata and vCPU
 * thread ids, written into the model.
 *
 * Needs virtev_register() first.  Nothing here runs on the per-period
 * path: a domain whose vCPU threads are not known yet is retried on a
 * timer of its own.
 */
#ifndef PREFCPU_VIRT_H
#define PREFCPU_VIRT_H

#include <stdbool.h>
#include <stdint.h>

#include <libvirt/libvirt.h>

#include "model.h"

struct event_base;

struct virt_params {
	const char	*uri;
	const char	*run_root;	/* libvirt/qemu/NAME.{xml,pid} under it */
	const char	*proc_root;
	unsigned int	 keepalive_interval;	/* s; 0: off */
	unsigned int	 keepalive_count;
	unsigned int	 reconnect_min_ms;
	unsigned int	 reconnect_max_ms;
	bool		 qmp_fallback;
};

struct virt;

/*
 * Start connecting (asynchronously: the first attempt runs from the loop).
 * A NULL struct virt (source = qmp: no libvirt) is never connected: the
 * functions below take it.
 */
struct virt	*virt_new(struct event_base *, struct host *,
		    const struct virt_params *);
void		 virt_free(struct virt *);
/* New parameters (SIGHUP); a changed URI reconnects. */
void		 virt_set_params(struct virt *, const struct virt_params *);
bool		 virt_connected(const struct virt *);
/*
 * The live connection, or NULL while disconnected, for a caller's own
 * synchronous calls (the HTTP API's policy writes); valid until the loop
 * runs again.
 */
virConnectPtr	 virt_conn(const struct virt *);
/* Successful connections so far (1 after the first). */
uint64_t	 virt_connections(const struct virt *);

#endif
