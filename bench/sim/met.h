/*
 * What one policy did to one scenario: useful work against each VM's
 * weighted entitlement, preemptions, spinning, and how its preferred sets
 * moved (settling time after each demand change, changes in steady state).
 */
#ifndef PREFCPU_SIM_MET_H
#define PREFCPU_SIM_MET_H

#include <stdbool.h>
#include <stddef.h>

#include "scen.h"
#include "sim.h"

struct met;

struct met_window {
	double		start_s;	/* a demand change (or the start) */
	double		end_s;
	double		settle_s;	/* last set change in it, from start */
	bool		converged;	/* no change in its second half */
	double		band_s;		/* from start until every VM stays
					   within one core of its final set */
	unsigned int	changes;
};

struct met_summary {
	double		work_s;		/* useful work, CPU seconds */
	double		jain;		/* of work / entitlement, over VMs */
	double		preempt_per_s;
	double		spin_share;	/* of vCPU running time */
	double		steal_share;	/* delay / (run + delay) */
	double		steady_changes_per_min;
	double		idle_share;	/* of host pCPU time */
	uint64_t	moved;		/* vCPUs into or out of sets, all VMs */
	const struct met_window *win;
	size_t		nwin;
};

struct met	*met_new(const struct scen *, const struct sim *);
void		 met_free(struct met *);
/* After every tick (and the policy's turn). */
void		 met_tick(struct met *);
void		 met_summary(const struct met *, struct met_summary *);
/* Per VM, CPU seconds. */
double		 met_vm_work(const struct met *, unsigned int vm);
double		 met_vm_entitled(const struct met *, unsigned int vm);
/* Preferred vCPUs of every VM once per policy period: "t n1 n2 ...". */
int		 met_write_series(const struct met *, const char *path);

#endif
