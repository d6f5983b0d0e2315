/*
 * libvirt's domain XML, status XML and prefcpu policy metadata, parsed into
 * the model's structs.  Pure: text in, structs out, no libvirt calls.
 */
#ifndef PREFCPU_DOMXML_H
#define PREFCPU_DOMXML_H

#include <stddef.h>
#include <sys/types.h>

#include "model.h"

#define DOMXML_MAX_VCPUS	4096

/*
 * Parse a domain's live XML (virDomainGetXMLDesc) into info, which the
 * caller zeroed and later frees with vm_info_clear().  Returns 0, or -1
 * with a cause in err (info then holds nothing to free).
 */
int	domxml_parse(const char *xml, size_t len, struct vm_info *info,
	    char *err, size_t errlen);

/*
 * Read the prefcpu <policy> element from a domain XML's <metadata>, for a
 * domain with nvcpus vCPUs.  Always fills meta: with no element, defaults
 * and present = false; with a bad attribute, defaults, valid = false and
 * meta->error naming the attribute and value.  Returns 0 if the document
 * parsed, -1 if not (err).
 */
int	domxml_policy(const char *xml, size_t len, unsigned int nvcpus,
	    struct vm_meta *meta, char *err, size_t errlen);

/*
 * Parse libvirt's status XML (/run/libvirt/qemu/NAME.xml): the QEMU pid
 * and the thread id of each vCPU into tids[0 .. n-1] (0 where none).
 * Returns how many vCPU thread ids were found, or -1 with err.
 */
int	domxml_status(const char *xml, size_t len, pid_t *pid, pid_t *tids,
	    unsigned int n, char *err, size_t errlen);

#endif
