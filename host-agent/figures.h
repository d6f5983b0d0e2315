/*
 * The figures operators read, defined once.  The API computes them here;
 * the dashboard and prefcpuctl show the API's values, never their own;
 * the Grafana dashboard and the alert rules (deploy/) compute the same
 * quotients from the metrics, as written next to each definition.  The
 * FIGURES section of prefcpu-hostd(8) is the prose of this file.
 */
#ifndef PREFCPU_FIGURES_H
#define PREFCPU_FIGURES_H

#include <math.h>

/*
 * Run delay share, in percent: the time a VM's vCPU threads spent
 * runnable but waiting for a host CPU, over its online vCPUs times the
 * elapsed time.  It is what the guest sees as steal time (KVM reports a
 * vCPU thread's run delay to the guest as steal).  For the host: the sum
 * over all running VMs, over all their vCPUs.  PromQL:
 *   100 * rate(prefcpu_domain_vcpu_run_delay_seconds_total[5m])
 *       / prefcpu_domain_vcpus
 * or, per vCPU, 100 * rate(prefcpu_domain_vcpu_delay_seconds_total[5m]).
 */
static inline double
fig_delay_share_pct(double delay_cpus, unsigned int vcpus)
{
	return vcpus > 0 ? 100.0 * delay_cpus / vcpus : 0;
}

/*
 * Over-commit: vCPUs of the running VMs per host CPU that VMs may use
 * (the machine slice's cpuset), the ratio OpenStack calls
 * cpu_allocation_ratio.  No value (NaN) without usable CPUs.  PromQL:
 *   prefcpu_host_vcpus / prefcpu_host_usable_cpus
 *
 * Capacity, in CPUs: the usable host CPUs minus the CPU time of non-VM
 * work on them (prefcpu_host_capacity_cpus).
 *
 * Demand, in CPUs: per VM, the moving average of its vCPU threads' run
 * time plus run delay per second; for the host, the sum over the VMs
 * (prefcpu_domain_demand_cpus, prefcpu_host_demand_cpus).  Demand above
 * capacity is contention.
 */
static inline double
fig_overcommit(unsigned int vcpus, unsigned int usable_cpus)
{
	return usable_cpus > 0 ? (double)vcpus / usable_cpus : NAN;
}

#endif
