/*
 * The policy engine (DESIGN.md section 3.3): from what the host measures,
 * decide for every VM which of its vCPUs it should prefer.  Pure: no I/O,
 * no libvirt, no libevent, no clock reads, no globals.  The daemon, the
 * simulator (bench/sim) and the tests all call policy_decide().
 *
 * Units: CPUs are fractions of one CPU's time over a period (a vCPU thread
 * that ran the whole period is 1.0); times are milliseconds of the
 * caller's monotonic clock.
 */
#ifndef PREFCPU_POLICY_H
#define PREFCPU_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"

/* Weights range 1 .. POLICY_WEIGHT_MAX (policy_vm.weight). */
#define POLICY_WEIGHT_MAX	10000

enum policy_mode {
	POLICY_MODE_AUTO,	/* prefcpu decides */
	POLICY_MODE_OFF,	/* never steered: all vCPUs, counted at demand */
	POLICY_MODE_FIXED,	/* the operator's 'cpus', always */
};

struct policy_config {
	double		ewma_alpha;	/* weight of the newest demand sample */
	double		headroom;	/* CPUs added to a VM's demand in its claim */
	double		dead_band;	/* cores: ignore smaller moves of the share */
	uint64_t	dwell_ms;	/* least time between two shrinks of a VM */
	unsigned int	shrink_after;	/* periods of contention before shrinking */
	/*
	 * Periods of a larger share before growing by it; 0 or 1: at once.
	 * At least 2 for a minute after a domain's demand jittered
	 * (policy.c), for shrinks by share too.
	 */
	unsigned int	grow_after;
	double		saturation;	/* usage/preferred at or above: saturated */
};

/*
 * Defaults: alpha 1, headroom 0.5, dead band 1.0, dwell 3000 ms, shrink
 * after 2, grow after 1 (at once).
 */
void	policy_config_default(struct policy_config *);

/*
 * What the engine remembers of a VM between periods.  Owned by the caller
 * (one per VM, kept while the VM lives), zeroed by policy_state_init(),
 * read and written only by policy_decide().
 */
struct policy_state {
	bool		init;
	double		demand;		/* EWMA of run + delay, CPUs */
	struct cpuset	preferred;	/* last decided set of vCPUs */
	unsigned int	cores;		/* cores in it */
	uint64_t	last_change_ms;
	unsigned int	contended;	/* consecutive periods of contention */
	uint64_t	changes;	/* decisions that changed the set */
	bool		demand_unknown;	/* adopted: no sample taken yet */
	/*
	 * Growth on censored demand (a confined VM keeping most of its
	 * vCPUs busy): from how many preferred vCPUs, at what demand; 0
	 * when the last decision was no such growth.  If the demand did not
	 * rise with the vCPUs, the VM is not taken as censored at that size
	 * and demand again for a while (nogain_*).
	 */
	unsigned int	grown_vcpus;
	double		grown_demand;
	unsigned int	nogain_vcpus;
	double		nogain_demand;
	uint64_t	nogain_ms;
	/* The most it used in the window that began at peak_ms. */
	double		peak;
	uint64_t	peak_ms;
	/*
	 * fell_ms: when its demand last fell below the cores of its peak;
	 * fell_keep: whether that fall keeps them, as demand that comes
	 * and goes (policy.c: POLICY_FALL_MS).
	 */
	uint64_t	fell_ms;
	bool		fell_keep;
	/*
	 * When it was last grown into room the others left, or first
	 * decided with all its cores under contention: 0 never, or shrunk
	 * since.
	 */
	uint64_t	grow_ms;
	/*
	 * Shrunk from regrow_k cores within a minute of such a growth, at
	 * regrow_ms: room does not grow it back to regrow_k for regrow_hold
	 * ms (two minutes, doubled up to eight each time it happens again
	 * right after).
	 */
	unsigned int	regrow_k;
	uint64_t	regrow_ms;
	uint64_t	regrow_hold;
	/*
	 * What it used (run + delay) in the period before that shrink, at
	 * regrow_k cores, and in the first period after it (-1 until
	 * sampled): their ratio predicts what it would use given them back.
	 */
	double		regrow_use;
	double		regrow_after;
	/*
	 * Periods in a row, up to the last decision, in which its share
	 * would have grown it beyond the dead band, and the fewest cores it
	 * would have grown to in them (grow-after).
	 */
	unsigned int	grow_wanted;
	unsigned int	grow_k;
	/* The same for shrinks in a jittery domain, the most cores of them. */
	unsigned int	shrink_wanted;
	unsigned int	shrink_k;
	/*
	 * Jitter: its last two samples (run + delay), the cores it had while
	 * each was taken, how many of them there are (up to 2), and when the
	 * demand of its contention domain last came back within a period of
	 * a move (policy.c: POLICY_JITTER).
	 */
	double		use_prev, use_prev2;
	unsigned int	use_k1, use_k2;
	unsigned int	use_n;
	uint64_t	jitter_ms;
	/*
	 * Over-commit of a guest busy in bursts (policy.c: overcommit):
	 * decisions in a row (up to 255), up to the last, in which it kept
	 * its confined vCPUs busy with holes while its guest reported at
	 * least as many runnable tasks, and the cores it was given beyond
	 * its share then (0: none).
	 */
	unsigned char	holey_n;
	unsigned int	over_k;
	/*
	 * Spare vCPUs (policy.c: spare): the moving average of the CPUs its
	 * contention domain left idle while contended, that period's figure
	 * (both frozen while the domain is not contended, 0 before it ever
	 * was), and whether it holds a spare core now.
	 */
	double		idle_mean;
	double		idle_last;
	bool		spare;
	/*
	 * Brief rises (policy.c: brief): decisions since its use last rose
	 * by a CPU (0: it fell back by a CPU since, or never rose; up to
	 * 255), how many decisions its last rise and the one before lasted
	 * before it fell back (0: none seen), and when it last fell back.
	 */
	unsigned char	rise_n;
	unsigned char	rise_last, rise_prev;
	uint64_t	rise_ms;
	/*
	 * Since when the dead band has held its growth (saturated, its
	 * share beyond its cores) in every decision (0: not held now).
	 */
	uint64_t	dbhold_ms;
	/*
	 * Decisions in a row (up to 255) that met its claim: its own demand,
	 * not its share, held it.
	 */
	unsigned int	met_n;
};

void	policy_state_init(struct policy_state *);

/*
 * Take over a set the guest still holds from an earlier run of the daemon
 * (its lease runs): as if decided under contention just now, with the
 * demand unknown until the first sample.  Only for a state that has not
 * decided yet; returns -1 (and changes nothing) otherwise or when the set
 * is empty.
 */
int	policy_state_adopt(struct policy_state *, const struct policy_config *,
	    const struct cpuset *preferred, unsigned int cores);

/* One VM, as measured this period.  Filled by the caller every period. */
struct policy_vm {
	const char	*name;		/* for the reason text only */
	unsigned int	nvcpus;
	struct cpuset	online;		/* online vCPU ids */
	unsigned int	ncores;
	const struct cpuset *cores;	/* vCPU ids of each guest core, in order */
	const unsigned int *core_node;	/* guest NUMA cell of each core, or NULL */
	struct cpuset	pcpus;		/* host CPUs its vCPU threads may use */
	unsigned int	weight;		/* 1 .. POLICY_WEIGHT_MAX */
	unsigned int	min_cores;	/* 0: none */
	unsigned int	max_cores;	/* 0: none */
	enum policy_mode mode;
	struct cpuset	fixed;		/* vCPUs, for POLICY_MODE_FIXED */
	bool		steerable;	/* an agent is connected and acks targets */
	/*
	 * No sample this period (its vCPU threads were only just found):
	 * the demand is kept, and a VM never sampled keeps its vCPUs.
	 */
	bool		unmeasured;
	double		run_cpus;	/* vCPU run time last period, CPUs */
	double		delay_cpus;	/* vCPU run-queue delay last period, CPUs */
	/*
	 * Guest hint: runnable tasks it reports; < 0 when none.  Untrusted:
	 * it raises the VM's claim only while the host sees the VM keep at
	 * least 75% of its preferred vCPUs busy (run + delay, so its demand
	 * may be hidden by its confinement), and then at most to the share
	 * it would get by claiming all its vCPUs.  An idle guest that
	 * claims runnable tasks gets nothing; a busy one that lies gets no
	 * more than a busy honest one.  Held from growing back to all its
	 * vCPUs (hold-regrow), a VM grows into capacity no VM claims only
	 * when it reports half a task more than the CPUs it keeps busy, and
	 * keeps more than half of its vCPUs busy: never into anyone's claim.
	 * Over-committed (overcommit: a confined VM that reports at least as
	 * many runnable tasks as its preferred vCPUs yet keeps only 50-90%
	 * of them busy, next to no VM keeping its own set busy), it gets
	 * more vCPUs, never more CPUs: it still counts at its share, and
	 * the host's CPU weights hold its CPU time there.  A spare core
	 * (spare: the host's CPUs left idle on average) goes only to a
	 * saturated VM that reports runnable tasks for its vCPUs too, and
	 * counts at its share the same way.
	 */
	double		hint_runnable;
	struct policy_state *state;
};

/* The host, as measured this period. */
struct policy_host {
	struct cpuset	pcpus;		/* host CPUs usable by VMs */
	double		nonvm_cpus;	/* busy time not explained by vCPUs */
	uint64_t	now_ms;
};

enum policy_reason {
	POLICY_R_NO_CONTENTION,	/* all claims fit: all vCPUs */
	POLICY_R_FAIR_SHARE,	/* contention: weighted share */
	POLICY_R_GROW,		/* saturated and room: grown */
	POLICY_R_HOLD_DEAD_BAND,	/* change smaller than the dead band */
	POLICY_R_HOLD_DWELL,	/* shrink deferred: dwell time */
	POLICY_R_HOLD_PERSIST,	/* shrink deferred: contention too recent */
	POLICY_R_MIN_CORES,	/* raised to min-cores */
	POLICY_R_MAX_CORES,	/* capped at max-cores */
	POLICY_R_UNSTEERED,	/* no agent following: counted at demand */
	POLICY_R_MODE_OFF,	/* policy mode off */
	POLICY_R_MODE_FIXED,	/* policy mode fixed */
	POLICY_R_UNMEASURED,	/* never sampled yet: keeps its vCPUs */
	POLICY_R_HOLD_REGROW,	/* no contention, but its last growth did
				   not last: keeps its cores */
	POLICY_R_HOLD_GROW,	/* growth deferred: share larger too briefly */
	POLICY_R_HOLD_SHRINK,	/* shrink deferred: share smaller too briefly,
				   in a domain whose demand jitters */
	POLICY_R_OVERCOMMIT,	/* busy in bursts: more vCPUs than its share,
				   counted at its share */
	POLICY_R_SPARE,		/* saturated, tasks waiting, CPUs idle: a core
				   beyond its share, counted at its share */
};

const char *policy_reason_name(enum policy_reason);

/* The decision for one VM, with the inputs that led to it (for explain). */
struct policy_decision {
	struct cpuset	preferred;	/* vCPUs to prefer; all for unsteered VMs */
	unsigned int	cores;
	unsigned int	vcpus;		/* count of preferred */
	bool		changed;	/* differs from the state's previous set */
	enum policy_reason reason;
	char		why[256];	/* one line for logs and explain */
	/* Inputs and intermediate figures. */
	unsigned int	domain;		/* contention domain index */
	double		capacity;	/* of its contention domain, CPUs */
	double		demand;		/* EWMA, CPUs */
	double		claim;		/* CPUs claimed in the water-fill */
	double		share;		/* weighted fair share, CPUs */
	/*
	 * What its preferred vCPUs count against the capacity, CPUs: what
	 * they would use (vCPUs times the busy share of a confined VM),
	 * at most the claim; not steered: what it is counted at.
	 */
	double		counted;
	/*
	 * The VM's weighted fair share of its domain's capacity, CPUs: what
	 * a non-follower is counted at (at most) and capped to when the
	 * operator enforces it, never below one core (the floor a steered VM
	 * keeps); for steered VMs the share they may claim.
	 */
	double		fair;
	bool		saturated;
	bool		contended;	/* its domain is over-committed */
};

struct policy_summary {
	unsigned int	ndomains;
	double		capacity;	/* sum over domains */
	double		demand;		/* sum of VM demands */
	unsigned int	vcpus;		/* sum of vCPUs */
	unsigned int	preferred;	/* sum of preferred vCPUs */
	/* Minimums forced the preferred vCPUs above the capacity. */
	bool		over_capacity;
};

/*
 * Decide every VM's preferred set for this period.  out has n entries;
 * each vms[i].state is updated.  Returns 0, or -1 if an input is invalid
 * (err says which VM and field); then nothing was changed.
 */
int	policy_decide(const struct policy_config *, const struct policy_host *,
	    struct policy_vm *vms, size_t n, struct policy_decision *out,
	    struct policy_summary *, char *err, size_t errlen);

#endif
