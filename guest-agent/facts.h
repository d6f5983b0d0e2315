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
 * Fill a report: online CPUs, steal since *last (updated), PSI and
 * runnable tasks.  A missing PSI file (CONFIG_PSI off) reads as 0.
 */
int	facts_report(const struct guestd_conf *, struct facts_cputime *last,
	    struct proto_report *, char *err, size_t errlen);

#endif
