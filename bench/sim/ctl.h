/*
 * The policies compared by the simulator, each steering the simulated
 * VMs' preferred vCPUs from what it is allowed to see:
 *   none      every vCPU preferred, always;
 *   governor  the seed's per-guest steal governor in each guest that has
 *             the feature (an agent=no VM has none), on its own clock;
 *   prefcpu   the real policy_decide(), every period, fed with what the
 *             host observes (per-vCPU run and delay, pinning, weights,
 *             whether the agent follows);
 *   oracle    knows every VM's true demand and gives it its weighted fair
 *             share in whole cores the moment demand changes.
 */
#ifndef PREFCPU_SIM_CTL_H
#define PREFCPU_SIM_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "scen.h"
#include "sim.h"

struct ctl;

size_t		 ctl_count(void);
const char	*ctl_name(size_t);
/* Whether a policy runs only when named (-p), not by default. */
bool		 ctl_optional(size_t);
/* Index of a policy by name, or -1. */
int		 ctl_lookup(const char *);

/*
 * grow-after of the prefcpu policy for the ctl_new() calls that follow
 * (prefcpu-hostd.conf(5)); 0: the policy's default.
 */
void		 ctl_set_grow_after(unsigned int);
/* Cores of each agent VM under the "fixed" policy (default 1). */
void		 ctl_set_fixed_cores(unsigned int);
struct ctl	*ctl_new(size_t, struct sim *, const struct scen *);
void		 ctl_free(struct ctl *);
/* Called after every tick; acts when its period is due. */
void		 ctl_tick(struct ctl *);

/*
 * Weighted max-min fair shares (water-filling): share[i] <= claim[i],
 * shares sum to min(cap, sum of claims), and no VM below its claim gets a
 * smaller share per weight than another.
 */
void	ctl_waterfill(const double *claim, const double *weight, size_t n,
	    double cap, double *share);

#endif
