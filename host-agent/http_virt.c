/*
 * Policy writes go through the daemon's own libvirt connection: a new
 * connection would not reach an in-process driver (test:///FILE) and
 * costs a handshake per write.  The metadata-change event then reaches
 * the model through discovery, as after any `virsh metadata`.  The call
 * is synchronous on the event loop; writes are rare operator actions.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "polmeta.h"
#include "http_virt.h"
#include "virt.h"

static void
http_virt_error(const char *what, char *err, size_t errlen)
{
	const virError	*e = virGetLastError();

	snprintf(err, errlen, "%s: %s", what, e != NULL && e->message != NULL ?
	    e->message : "libvirt failed");
}

int
http_virt_set_policy(virConnectPtr conn, const char *domain,
    const struct polmeta *p, int *status, char *err, size_t errlen)
{
	virDomainPtr	 dom;
	char		*xml;
	int		 rc = -1, persistent;
	unsigned int	 flags = VIR_DOMAIN_AFFECT_LIVE;

	*status = 503;
	if (conn == NULL) {
		snprintf(err, errlen, "not connected to libvirtd; try again");
		return -1;
	}
	*status = 502;
	dom = virDomainLookupByName(conn, domain);
	if (dom == NULL)
		dom = virDomainLookupByUUIDString(conn, domain);
	if (dom == NULL) {
		*status = 404;
		snprintf(err, errlen, "no domain named %s", domain);
		return -1;
	}
	persistent = virDomainIsPersistent(dom);
	if (persistent == 1)
		flags |= VIR_DOMAIN_AFFECT_CONFIG;
	if (virDomainIsActive(dom) != 1)
		flags &= ~(unsigned int)VIR_DOMAIN_AFFECT_LIVE;
	xml = polmeta_xml(p);
	if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, xml,
	    POLMETA_KEY, POLMETA_NS, flags) != 0)
		http_virt_error("cannot set the metadata", err, errlen);
	else
		rc = 0;
	free(xml);
	virDomainFree(dom);
	return rc;
}

static int
http_virt_set(void *arg, const char *domain, const struct polmeta *p,
    int *status, char *err, size_t errlen)
{
	return http_virt_set_policy(virt_conn(arg), domain, p, status, err,
	    errlen);
}

static bool
http_virt_connected(void *arg)
{
	return virt_connected(arg);
}

void
http_virt_writer(struct http_writer *w, const struct virt *v)
{
	w->set_policy = http_virt_set;
	w->connected = http_virt_connected;
	w->arg = (void *)(uintptr_t)v;
}
