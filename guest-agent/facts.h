/*
 * What the guest knows about itself: online CPUs, cores, kernel, the
 * kernel's own preferred-CPU governor, and the load figures of a report.
 * Every path is under the configured /proc and /sys roots.
 */
#ifndef PREFCPU_GUEST_FACTS_H
#define PREFCPU_GUEST_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "cpuset.h"
#include "guestd.h"
#include "proto.h"

struct facts {
	struct cpuset	 online;
	unsigned int	 ncores;
	struct cpuset	*cores;		/* ncores entries, lowest CPU first */
};

/* Online CPUs and cores; -1 with a cause.  facts_free after success. */
int	facts_read(struct facts *, const struct guestd_conf *, char *err,
	    size_t errlen);
void	facts_free(struct facts *);
/* Online CPUs only (cheaper); -1 with a cause. */
int	facts_online(struct cpuset *, const struct guestd_conf *, char *err,
	    size_t errlen);

/* uname -r into buf. */
void	facts_kernel(char *buf, size_t len);
/* True if the release "6.1.0-57-cloud-amd64" is older than major.minor. */
bool	facts_kernel_before(const char *release, unsigned int major,
	    unsigned int minor);
/*
 * The guest kernel's own preferred-CPU governor: "steal" when the kernel
 * has a read-only preferred mask (the upstream series drives it from its
 * steal monitor), "" when it has none.  mask gets the kernel's mask.
 */
void	facts_governor(const struct guestd_conf *, char *buf, size_t len,
	    struct cpuset *mask);

/* The running totals of the "cpu " line of /proc/stat, in ticks. */
struct facts_cputime {
	uint64_t	steal;
	uint64_t	total;
};

int	facts_parse_stat(const char *text, struct facts_cputime *);
/* "some avg10=1.23 ..." from /proc/pressure/cpu. */
int	facts_parse_psi(const char *text, double *avg10);
/* The runnable count of /proc/loadavg ("0.00 0.01 0.05 3/120 999"). */
int	facts_parse_loadavg(const char *text, uint32_t *nr_running);
/* Steal in % of all CPU time between two samples (0 if no time passed). */
double	facts_steal_pct(const struct facts_cputime *before,
	    const struct facts_cputime *after);

/*
 * Runnable tasks.  The mean over an interval comes from the per-CPU lines
 * of /proc/schedstat (version 15 or later; on a "cpuN" line the 7th number
 * is the time tasks ran there, the 8th the time they waited to run, both
 * ns): the sum of both over all CPUs grows by the integral of the number
 * of runnable tasks, so its delta over the elapsed wall time is their
 * mean.  The agent's own run and wait (/proc/self/schedstat) are left out.
 */
struct facts_sched {
	bool		valid;		/* a sample is held */
	uint64_t	busy_ns;	/* sum over CPUs of run + wait */
	uint64_t	self_ns;	/* the agent's own run + wait */
	uint64_t	at_ns;		/* monotonic time of the sample */
};

/* Sum run + wait over the cpu lines of a schedstat file; -1 with a cause. */
int	facts_read_schedstat(const char *proc_root, uint64_t *busy_ns,
	    char *err, size_t errlen);
/*
 * The mean number of runnable tasks between two samples; -1 when there is
 * none (no earlier sample, no time passed, a counter went backwards as
 * when a CPU went offline).
 */
int	facts_runnable_mean(const struct facts_sched *before,
	    const struct facts_sched *after, double *mean);

/* What a report is computed against: the previous report's samples. */
struct facts_last {
	struct facts_cputime	cputime;
	struct facts_sched	sched;
	/*
	 * /proc/schedstat could not be used at the last sample: runnable
	 * tasks are the instantaneous count of /proc/loadavg, why says why.
	 */
	bool			fallback;
	char			why[256];
};

/*
 * Take a runnable-tasks sample at now_ns (monotonic) as the start of the
 * next interval, as at a session's hello.  Sets last->fallback.
 */
void	facts_sched_begin(const struct guestd_conf *, struct facts_last *,
	    uint64_t now_ns);
/*
 * Fill a report at now_ns: online CPUs, steal since last->cputime, PSI and
 * runnable tasks: their mean since last->sched (report->runnable, and
 * rounded in nr_running), or the count of /proc/loadavg when there is no
 * mean (schedstat unusable, or no earlier sample).  last is updated.  A
 * missing PSI file (CONFIG_PSI off) reads as 0.
 */
int	facts_report(const struct guestd_conf *, struct facts_last *last,
	    uint64_t now_ns, struct proto_report *, char *err, size_t errlen);

#endif
