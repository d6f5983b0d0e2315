/*
 * prefcpu-guestd: the settings every module of the agent reads.  Filled in
 * once by main.c from the command line and read-only afterwards.
 */
#ifndef PREFCPU_GUESTD_H
#define PREFCPU_GUESTD_H

#include <stddef.h>

#define GUESTD_NAME		"prefcpu-guestd"
#define GUESTD_STATE_FILE	GUESTD_NAME ".state"
#define GUESTD_STATUS_FILE	GUESTD_NAME ".status"
#define GUESTD_MAX_LIST		64	/* --cgroup, --slice entries */

enum guestd_keep {
	GUESTD_KEEP_AUTO,	/* on kernels older than 6.2 */
	GUESTD_KEEP_NO,
	GUESTD_KEEP_YES,
};

struct guestd_conf {
	const char	*port;		/* NULL: find org.prefcpu.0 */
	const char	*backend;	/* auto, kernel, systemd, cpuset */
	const char	*proc_root;	/* procfs mount, "/proc" */
	const char	*sys_root;	/* sysfs mount, "/sys" */
	const char	*cgroup_root;	/* cgroup2 mount, "/sys/fs/cgroup" */
	const char	*run_dir;	/* state and status files */
	const char	*cgroups[GUESTD_MAX_LIST];	/* relative to cgroup_root */
	size_t		 ncgroups;
	const char	*slices[GUESTD_MAX_LIST];
	size_t		 nslices;
	enum guestd_keep keep_affinity;
	/*
	 * cpuset backend, confining every top-level cgroup: hold the CPUs
	 * outside the set in an isolated partition (no load balancing).
	 */
	bool		 isolate_idle;
	unsigned int	 report_ms;	/* report period */
	/* Bound of a lease a host's hello may raise the 60 s cap to. */
	unsigned int	 max_lease_ms;
};

#endif
