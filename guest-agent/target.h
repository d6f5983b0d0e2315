/* The safety rules a host target must pass before anything changes. */
#ifndef PREFCPU_GUEST_TARGET_H
#define PREFCPU_GUEST_TARGET_H

#include <stddef.h>

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

#endif
