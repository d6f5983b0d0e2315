/*
 * The seed's steal governor.  Written from the patch description, not
 * from its code; the one subtlety kept on purpose is the strict '<' of the
 * low threshold (2.00% exactly does not grow), which the patch's code has
 * and its commit message glosses as "lower than".
 */
#include "gov.h"

static const struct cpuset *
gov_core_of(const struct cpuset *cores, unsigned int ncores, unsigned int cpu)
{
	unsigned int	i;

	for (i = 0; i < ncores; i++)
		if (cpuset_isset(&cores[i], cpu))
			return &cores[i];
	return NULL;
}

enum gov_action
gov_step(struct gov *g, uint64_t now_ns, uint64_t steal_ns,
    const struct cpuset *online, const struct cpuset *cores,
    unsigned int ncores, unsigned int this_cpu, struct cpuset *preferred,
    uint64_t *ratio)
{
	const struct cpuset *core, *mine;
	struct cpuset	 tmp;
	uint64_t	 dsteal, dns;
	unsigned int	 n;
	int		 cpu;

	dsteal = steal_ns > g->prev_steal_ns ? steal_ns - g->prev_steal_ns : 0;
	dns = now_ns > g->prev_time_ns ? now_ns - g->prev_time_ns : 1;
	g->prev_time_ns = now_ns;
	g->prev_steal_ns = steal_ns;
	n = cpuset_count(online);
	*ratio = dsteal * 100 * 100 / (dns * (n ? n : 1));

	if (*ratio > GOV_HIGH) {
		cpuset_and(&tmp, online, preferred);
		if ((cpu = cpuset_last(&tmp)) < 0)
			return GOV_HOLD;
		core = gov_core_of(cores, ncores, (unsigned int)cpu);
		mine = gov_core_of(cores, ncores, this_cpu);
		/* The governor's own core stays: at least one core is left. */
		if (core == NULL || core == mine)
			return GOV_HOLD;
		cpuset_andnot(preferred, preferred, core);
		return GOV_SHRINK;
	}
	if (*ratio < GOV_LOW) {
		cpuset_andnot(&tmp, online, preferred);
		if ((cpu = cpuset_first(&tmp)) < 0)
			return GOV_HOLD;
		if ((core = gov_core_of(cores, ncores, (unsigned int)cpu)) == NULL)
			return GOV_HOLD;
		cpuset_or(preferred, preferred, core);
		return GOV_GROW;
	}
	return GOV_HOLD;
}
