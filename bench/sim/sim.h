/*
 * The simulated host: pCPUs shared by weight among the vCPU threads of the
 * VMs of a scenario, and inside each VM a guest scheduler placing its
 * tasks on the VM's preferred vCPUs.  Discrete time with a fixed tick;
 * within a tick, each VM's running vCPUs are simulated in continuous time
 * (lock hand-offs, barrier arrivals).  Deterministic for a scenario.
 */
#ifndef PREFCPU_SIM_SIM_H
#define PREFCPU_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "scen.h"

struct sim;

/* Cumulative figures of one VM, in microseconds of simulated time. */
struct sim_vm_stat {
	double		work_us;	/* tasks making progress (not spinning) */
	double		spin_us;	/* vCPUs running a spinning task */
	double		run_us;		/* vCPU threads on a pCPU with a task */
	double		delay_us;	/* vCPU threads runnable, not running */
	uint64_t	preempt;	/* vCPU threads descheduled while runnable */
	uint64_t	moved;		/* vCPUs that entered or left the set */
};

/* The scenario must outlive the simulation. */
struct sim	*sim_new(const struct scen *);
void		 sim_free(struct sim *);
/* Advance one tick (scenario tick-us). */
void		 sim_tick(struct sim *);
uint64_t	 sim_now_us(const struct sim *);
bool		 sim_done(const struct sim *);

void	sim_vm_stat(const struct sim *, unsigned int vm, struct sim_vm_stat *);
/* Cumulative run time and run-queue delay of one vCPU thread, us. */
void	sim_vcpu_times(const struct sim *, unsigned int vm, unsigned int vcpu,
	    double *run_us, double *delay_us);
/* Host pCPU time with no vCPU thread making use of it, us. */
double	sim_idle_us(const struct sim *);

/* The guest applies a preferred set: ignored if empty after clipping. */
void	sim_set_preferred(struct sim *, unsigned int vm, const struct cpuset *);
const struct cpuset *sim_preferred(const struct sim *, unsigned int vm);
/* Times the VM's preferred set actually changed. */
uint64_t sim_pref_changes(const struct sim *, unsigned int vm);
/* Tasks the VM's workload has now, as the scenario sets them. */
unsigned int sim_vm_tasks(const struct sim *, unsigned int vm);
/*
 * Runnable tasks of the VM times time, us, cumulative: over a period, the
 * mean of its runnable tasks (what the guest agent reports).
 */
double	sim_vm_runnable_us(const struct sim *, unsigned int vm);
/* Scenario demand changes applied so far. */
size_t	sim_events_applied(const struct sim *);

/*
 * Check the model's invariants (a pCPU runs at most one thread, a thread
 * is on at most one pCPU, a task is on at most one vCPU, the lock holder
 * is in its critical section, run + delay never exceed elapsed time).
 * 0, or -1 with the broken one in err.
 */
int	sim_check(const struct sim *, char *err, size_t errlen);

#endif
