/*
 * The per-guest steal governor of the preferred-CPU patch series (seed
 * patches 010 and 011), reproduced from their description: every period
 * the guest sums steal over its online CPUs; above 5% it drops the last
 * preferred core unless that is the core running the governor, below 2%
 * it adds back the first online core that is not preferred.  Steal is
 * compared in hundredths of a percent, truncated, as the patch does.
 */
#ifndef PREFCPU_SIM_GOV_H
#define PREFCPU_SIM_GOV_H

#include <stdint.h>

#include "cpuset.h"

#define GOV_HIGH	500	/* 5.00%: shrink above */
#define GOV_LOW		200	/* 2.00%: grow below */

enum gov_action {
	GOV_HOLD,
	GOV_SHRINK,
	GOV_GROW,
};

/* Zeroed at guest boot. */
struct gov {
	uint64_t	prev_time_ns;
	uint64_t	prev_steal_ns;
};

/*
 * One run of the governor at guest time now_ns, with steal_ns the steal
 * summed over online CPUs since boot.  cores lists the CPUs of each guest
 * core; this_cpu is the CPU the governor runs on.  preferred is changed in
 * place; *ratio receives the steal ratio in hundredths of a percent.
 */
enum gov_action gov_step(struct gov *, uint64_t now_ns, uint64_t steal_ns,
	    const struct cpuset *online, const struct cpuset *cores,
	    unsigned int ncores, unsigned int this_cpu,
	    struct cpuset *preferred, uint64_t *ratio);

#endif
