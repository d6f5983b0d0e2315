/* The safety rules a host target must pass before anything changes. */
#ifndef PREFCPU_GUEST_TARGET_H
#define PREFCPU_GUEST_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"

/*
 * Check the host's preferred set against the online CPUs and the cores
 * (ncores disjoint sets).  It is refused (-1 and a cause naming the CPU
 * or the rule) when it names a CPU that is not online, when nothing is
 * left, or when it holds no whole core.  On success out is the set to
 * apply: the request intersected with the online CPUs.
 */
int	target_check(const struct cpuset *req, const struct cpuset *online,
	    const struct cpuset *cores, unsigned int ncores,
	    struct cpuset *out, char *err, size_t errlen);

/*
 * The longest lease of a session: PROTO_LEASE_CAP_MS, or the host's
 * hello_max_ms (0: not given) when that is more, and never more than the
 * guest's own bound guest_max_ms (--max-lease).
 */
uint32_t target_lease_cap(uint32_t guest_max_ms, uint32_t hello_max_ms);
/* A target's lease_ms cut to cap_ms. */
uint32_t target_lease(uint32_t lease_ms, uint32_t cap_ms);

#endif
