/* Target safety checks: pure functions over cpusets. */
#include <stdio.h>

#include "proto.h"
#include "target.h"

int
target_check(const struct cpuset *req, const struct cpuset *online,
    const struct cpuset *cores, unsigned int ncores, struct cpuset *out,
    char *err, size_t errlen)
{
	struct cpuset	set, offline;
	unsigned int	i;

	cpuset_andnot(&offline, req, online);
	if (!cpuset_empty(&offline)) {
		snprintf(err, errlen, "cpu %d is not online",
		    cpuset_first(&offline));
		return -1;
	}
	cpuset_and(&set, req, online);
	if (cpuset_empty(&set)) {
		snprintf(err, errlen, "the preferred set is empty");
		return -1;
	}
	for (i = 0; i < ncores; i++) {
		if (!cpuset_empty(&cores[i]) && cpuset_subset(&cores[i], &set))
			break;
	}
	if (i == ncores) {
		snprintf(err, errlen,
		    "the preferred set holds no whole core");
		return -1;
	}
	*out = set;
	return 0;
}

uint32_t
target_lease_cap(uint32_t guest_max_ms, uint32_t hello_max_ms)
{
	uint32_t	cap = PROTO_LEASE_CAP_MS;

	if (hello_max_ms > cap)
		cap = hello_max_ms;
	return cap < guest_max_ms ? cap : guest_max_ms;
}

uint32_t
target_lease(uint32_t lease_ms, uint32_t cap_ms)
{
	return lease_ms < cap_ms ? lease_ms : cap_ms;
}
