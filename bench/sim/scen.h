/*
 * Scenario files of the simulator: the host, its VMs, their workloads and
 * the times their demand changes.  The format is described at the top of
 * scen.c and in README.md.
 */
#ifndef PREFCPU_SIM_SCEN_H
#define PREFCPU_SIM_SCEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most vCPUs of a VM. */
#define SCEN_MAX_VCPUS	512

enum scen_wl {
	SCEN_WL_CPU,		/* independent CPU-bound tasks */
	SCEN_WL_SPIN,		/* critical section under one lock, then work */
	SCEN_WL_BARRIER,	/* phases of work separated by a barrier */
	SCEN_WL_BURSTY,		/* on/off demand */
};

struct scen_vm {
	char		name[48];
	char		group[32];	/* the 'vm' line's name, for 'at' */
	unsigned int	vcpus;
	unsigned int	threads;	/* vCPUs per guest core */
	unsigned int	weight;
	bool		agent;		/* steerable: follows a target */
	enum scen_wl	wl;
	unsigned int	tasks;		/* at t=0 */
	double		cs_us;		/* spin: critical section, running time */
	double		par_us;		/* spin: parallel work between sections */
	double		work_us;	/* barrier: work per task per phase */
	double		spin_us;	/* barrier: spin before blocking */
	double		on_ms;		/* bursty: mean busy period (running) */
	double		off_ms;		/* bursty: mean sleep (wall time) */
};

struct scen_event {
	double		t_s;
	unsigned int	vm;
	unsigned int	tasks;
};

struct scen {
	char		name[64];
	char		title[160];
	unsigned int	pcpus;
	double		duration_s;
	uint64_t	seed;
	unsigned int	tick_us;
	unsigned int	slice_us;	/* host time slice */
	unsigned int	period_ms;	/* policy period */
	struct scen_vm	*vms;
	size_t		nvms;
	struct scen_event *events;	/* sorted by time */
	size_t		nevents;
};

/* Parse a scenario from text; fname names it in errors ("file:line: ..."). */
int	scen_parse(struct scen *, const char *text, const char *fname,
	    char *err, size_t errlen);
int	scen_load(struct scen *, const char *path, char *err, size_t errlen);
void	scen_free(struct scen *);
const char *scen_wl_name(enum scen_wl);
/* Expected busy vCPUs of a VM with n tasks (bursty: by its duty cycle). */
double	scen_vm_demand(const struct scen_vm *, unsigned int tasks);

#endif
