/* Policy writes through libvirt for the HTTP API's one write route. */
#ifndef PREFCPU_HTTP_VIRT_H
#define PREFCPU_HTTP_VIRT_H

#include <stddef.h>

#include <libvirt/libvirt.h>

#include "http.h"
#include "polmeta.h"

struct virt;

/*
 * Replace the prefcpu metadata element of a domain (name or UUID), live
 * and persistent (live only for a transient domain, persistent only for
 * an inactive one), through the daemon's connection.  0, or -1 with a
 * cause and the HTTP status that fits it (404 no such domain, 502 libvirt
 * failed).
 */
int	http_virt_set_policy(virConnectPtr, const char *domain,
	    const struct polmeta *, int *status, char *err, size_t errlen);

/* The HTTP server's writer for the daemon's connection: the call above. */
void	http_virt_writer(struct http_writer *, const struct virt *);

#endif
