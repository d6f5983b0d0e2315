/*
 * The per-period sampler (DESIGN.md section 3.2): vCPU thread run time and
 * run-queue delay from schedstat, the host CPUs VMs may use, per-CPU busy
 * time, CPU pressure and the non-VM load.  Reads files under configurable
 * roots only; never calls libvirt.
 */
#ifndef PREFCPU_SAMPLER_H
#define PREFCPU_SAMPLER_H

#include <stdint.h>

#include "model.h"

struct sampler;

/*
 * Sample host's VMs.  Roots are prefixed to /proc, /sys and the cgroup
 * mount point paths: proc_root "/proc", sys_root "/sys", cgroup_root
 * "/sys/fs/cgroup" on a live host, or directories of a synthetic tree.
 * Copied.  Registers the model's hooks: a vCPU thread whose id changed or
 * a VM removed has its file closed at once.
 */
struct sampler	*sampler_new(struct host *, const char *proc_root,
		    const char *sys_root, const char *cgroup_root);
/* Close every file and remove the hooks; before the host is freed. */
void		 sampler_free(struct sampler *);
/*
 * New roots (SIGHUP): every file is closed and every previous read
 * forgotten, so rates start over two samples later; vanished threads are
 * tried again.
 */
void		 sampler_reroot(struct sampler *, const char *proc_root,
		    const char *sys_root, const char *cgroup_root);

/*
 * Take one sample at now_ns (CLOCK_MONOTONIC) into host_sample_mut() of
 * the host and each VM's thread[] and sample.  Rates need two samples:
 * the first call primes the counters and leaves sample.valid false.  A
 * vCPU thread that vanished is counted in sample.gone and not read again
 * until its id changes; not an error.  Returns 0, or -1 if the host CPU
 * figures could not be read (logged once per cause).
 */
int		 sampler_run(struct sampler *, uint64_t now_ns);

/* Where the sampler stands with a VM's vCPU thread. */
enum sampler_thread_state {
	SAMPLER_T_CLOSED,	/* no file open (not read yet, or no id) */
	SAMPLER_T_OPEN,		/* its schedstat is open */
	SAMPLER_T_GONE,		/* it vanished; closed, not retried */
};
enum sampler_thread_state sampler_thread_state(const struct sampler *,
		    const struct vm *, unsigned int vcpu);

/*
 * Find the vCPU threads of the QEMU process pid from their names
 * ("CPU N/KVM", "CPU N/TCG") under proc_root.  tids has n entries (0
 * where none).  Returns how many were found, or -1 if the process is gone.
 */
int		 sampler_find_vcpu_threads(const char *proc_root, pid_t pid,
		    pid_t *tids, unsigned int n);

#endif
