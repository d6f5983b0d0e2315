/*
 * /metrics in the Prometheus text exposition format 0.0.4.  Names follow
 * the Prometheus conventions: a prefcpu_ prefix, base units (seconds,
 * CPUs as fractions of one CPU's time) in the name, _total on counters,
 * and the domain name and UUID as labels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "util.h"

enum metrics_type {
	M_GAUGE,
	M_COUNTER,
};

enum metrics_value {
	MV_DOUBLE,
	MV_U64,
	MV_UINT,
	MV_BOOL,
};

/* One metric read from a struct by offset: the tables below. */
struct metrics_def {
	const char		*name;
	enum metrics_type	 type;
	enum metrics_value	 vtype;
	size_t			 offset;
	const char		*help;
};

#define HOST(n, t, v, f, h)	{ n, t, v, offsetof(struct api_host, f), h }
#define VM(n, t, v, f, h)	{ n, t, v, offsetof(struct api_vm, f), h }

static const struct metrics_def metrics_host[] = {
	HOST("prefcpu_host_pcpus", M_GAUGE, MV_UINT, pcpus,
	    "Online host CPUs."),
	HOST("prefcpu_host_usable_cpus", M_GAUGE, MV_UINT, usable_cpus,
	    "Host CPUs that VMs may use (the machine slice's cpuset)."),
	HOST("prefcpu_host_capacity_cpus", M_GAUGE, MV_DOUBLE, capacity,
	    "Usable CPUs minus the non-VM work on them, in CPUs."),
	HOST("prefcpu_host_nonvm_cpus", M_GAUGE, MV_DOUBLE, nonvm_cpus,
	    "Host CPU time not explained by vCPU threads, in CPUs."),
	HOST("prefcpu_host_demand_cpus", M_GAUGE, MV_DOUBLE, demand,
	    "Sum of the VMs' smoothed demand (run + run delay), in CPUs."),
	HOST("prefcpu_host_vcpus", M_GAUGE, MV_UINT, vcpus,
	    "Sum of the vCPUs of running VMs."),
	HOST("prefcpu_host_preferred_vcpus", M_GAUGE, MV_UINT, preferred,
	    "Sum of the preferred vCPUs decided for running VMs."),
	HOST("prefcpu_host_contention_domains", M_GAUGE, MV_UINT, ndomains,
	    "Contention domains (groups of VMs sharing host CPUs)."),
	HOST("prefcpu_host_contended", M_GAUGE, MV_BOOL, contended,
	    "1 when some contention domain is over-committed."),
	HOST("prefcpu_host_vcpu_run_seconds_total", M_COUNTER, MV_DOUBLE,
	    run_s, "Time vCPU threads ran."),
	HOST("prefcpu_host_vcpu_run_delay_seconds_total", M_COUNTER, MV_DOUBLE,
	    delay_s, "Time runnable vCPU threads waited for a host CPU."),
	HOST("prefcpu_period_seconds", M_GAUGE, MV_UINT, period_ms,
	    "Sampling and decision period."),
	HOST("prefcpu_periods_total", M_COUNTER, MV_U64, period_seq,
	    "Periods sampled since the daemon started."),
	HOST("prefcpu_decisions_total", M_COUNTER, MV_U64, decisions,
	    "Decisions that changed a VM's preferred vCPUs."),
	HOST("prefcpu_protocol_errors_total", M_COUNTER, MV_U64, proto_errors,
	    "Protocol violations by the agents of the running VMs."),
	HOST("prefcpu_libvirt_connected", M_GAUGE, MV_BOOL, libvirt_connected,
	    "1 while the daemon is connected to libvirtd."),
};

static const struct metrics_def metrics_vm[] = {
	VM("prefcpu_domain_vcpus", M_GAUGE, MV_UINT, vcpus,
	    "Online vCPUs of the domain."),
	VM("prefcpu_domain_preferred_vcpus", M_GAUGE, MV_UINT, decision.vcpus,
	    "Preferred vCPUs decided for the domain (its target)."),
	VM("prefcpu_domain_weight", M_GAUGE, MV_UINT, weight,
	    "Effective policy weight."),
	VM("prefcpu_domain_share_cpus", M_GAUGE, MV_DOUBLE, decision.share,
	    "Weighted fair share, in CPUs."),
	VM("prefcpu_domain_demand_cpus", M_GAUGE, MV_DOUBLE, decision.demand,
	    "Smoothed demand (run + run delay), in CPUs."),
	VM("prefcpu_domain_vcpu_run_seconds_total", M_COUNTER, MV_DOUBLE, run_s,
	    "Time the domain's vCPU threads ran, summed over its vCPUs."),
	VM("prefcpu_domain_vcpu_run_delay_seconds_total", M_COUNTER, MV_DOUBLE,
	    delay_s, "Time the domain's runnable vCPU threads waited for a"
	    " host CPU, summed over its vCPUs (the guest's steal time)."),
	VM("prefcpu_domain_protocol_errors_total", M_COUNTER, MV_U64,
	    proto_errors, "Protocol violations by the domain's agent."),
	VM("prefcpu_domain_decisions_total", M_COUNTER, MV_U64, decisions,
	    "Decisions that changed the domain's preferred vCPUs."),
};

static double
metrics_read(const void *base, const struct metrics_def *d)
{
	const char	*p = (const char *)base + d->offset;
	double		 v = 0;
	uint64_t	 u;
	unsigned int	 ui;
	bool		 b;

	switch (d->vtype) {
	case MV_DOUBLE:
		memcpy(&v, p, sizeof(v));
		break;
	case MV_U64:
		memcpy(&u, p, sizeof(u));
		v = (double)u;
		break;
	case MV_UINT:
		memcpy(&ui, p, sizeof(ui));
		v = ui;
		break;
	case MV_BOOL:
		memcpy(&b, p, sizeof(b));
		v = b;
		break;
	}
	return v;
}

static void
metrics_header(FILE *f, const struct metrics_def *d)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name,
	    d->type == M_COUNTER ? "counter" : "gauge");
}

static void
metrics_value(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf\n" : "-Inf\n", f);
	else
		fprintf(f, "%.9g\n", v);
}

/* Label values escape backslash, double quote and newline (0.0.4). */
static void
metrics_label(FILE *f, const char *s)
{
	size_t	n;

	for (;;) {
		n = strcspn(s, "\\\"\n");
		fwrite(s, 1, n, f);
		s += n;
		switch (*s) {
		case '\0':
			return;
		case '\n':
			fputs("\\n", f);
			break;
		default:
			fputc('\\', f);
			fputc(*s, f);
		}
		s++;
	}
}

static void
metrics_vm_labels(FILE *f, const struct api_vm *vm)
{
	fputs("{domain=\"", f);
	metrics_label(f, vm->name);
	fputs("\",uuid=\"", f);
	metrics_label(f, vm->uuid);
	fputc('"', f);
}

static void
metrics_vcpu(FILE *f, const struct api_snapshot *s, const char *name,
    const char *help, bool delay)
{
	const struct api_vcpu_stat	*v;
	size_t				 i, k;

	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (i = 0; i < s->nvms; i++) {
		for (k = 0; k < s->vms[i].vcpu_count; k++) {
			v = &s->vcpu_stats[s->vms[i].vcpu_first + k];
			fputs(name, f);
			metrics_vm_labels(f, &s->vms[i]);
			fprintf(f, ",vcpu=\"%u\"} ", v->vcpu);
			metrics_value(f, delay ? v->delay_s : v->run_s);
		}
	}
}

char *
api_metrics(const struct api_snapshot *s, size_t *len)
{
	char	*buf = NULL;
	size_t	 n = 0, i, j;
	FILE	*f;
	double	 v;
	int	 st;

	f = open_memstream(&buf, &n);
	if (f == NULL)
		abort();
	fprintf(f, "# HELP prefcpu_build_info prefcpu-hostd version.\n"
	    "# TYPE prefcpu_build_info gauge\n"
	    "prefcpu_build_info{version=\"%s\"} 1\n", PREFCPU_VERSION);
	for (i = 0; i < nitems(metrics_host); i++) {
		metrics_header(f, &metrics_host[i]);
		v = metrics_read(&s->host, &metrics_host[i]);
		if (metrics_host[i].offset == offsetof(struct api_host,
		    period_ms))
			v /= 1000;
		fputs(metrics_host[i].name, f);
		fputc(' ', f);
		metrics_value(f, v);
	}
	fputs("# HELP prefcpu_host_cpu_pressure_some_ratio"
	    " CPU pressure (some, avg10) as a ratio.\n"
	    "# TYPE prefcpu_host_cpu_pressure_some_ratio gauge\n", f);
	if (s->host.has_psi)
		fprintf(f, "prefcpu_host_cpu_pressure_some_ratio %.9g\n",
		    s->host.psi_some_avg10 / 100);

	for (i = 0; i < nitems(metrics_vm); i++) {
		metrics_header(f, &metrics_vm[i]);
		for (j = 0; j < s->nvms; j++) {
			fputs(metrics_vm[i].name, f);
			metrics_vm_labels(f, &s->vms[j]);
			fputs("} ", f);
			metrics_value(f, metrics_read(&s->vms[j],
			    &metrics_vm[i]));
		}
	}
	/*
	 * Per vCPU, named and labelled as the libvirt exporters'
	 * libvirt_domain_vcpu_{time,delay}_seconds_total{domain,vcpu}, from
	 * the same schedstat fields, so that dashboards can join them.
	 */
	metrics_vcpu(f, s, "prefcpu_domain_vcpu_time_seconds_total",
	    "Time the vCPU thread ran.", false);
	metrics_vcpu(f, s, "prefcpu_domain_vcpu_delay_seconds_total",
	    "Time the runnable vCPU thread waited for a host CPU (the"
	    " guest's steal time).", true);
	/* Applied exists only once the guest acked: no sample before. */
	fputs("# HELP prefcpu_domain_applied_vcpus vCPUs the guest agent"
	    " reported as applied.\n"
	    "# TYPE prefcpu_domain_applied_vcpus gauge\n", f);
	for (j = 0; j < s->nvms; j++) {
		if (!s->vms[j].acked)
			continue;
		fputs("prefcpu_domain_applied_vcpus", f);
		metrics_vm_labels(f, &s->vms[j]);
		fprintf(f, "} %u\n", cpuset_count(&s->vms[j].applied));
	}
	/* An enum as one series per state, 1 for the current one. */
	fputs("# HELP prefcpu_domain_agent_state State of the domain's"
	    " guest agent (1 for the current state).\n"
	    "# TYPE prefcpu_domain_agent_state gauge\n", f);
	for (j = 0; j < s->nvms; j++) {
		for (st = API_AGENT_NONE; st <= API_AGENT_FAILING; st++) {
			fputs("prefcpu_domain_agent_state", f);
			metrics_vm_labels(f, &s->vms[j]);
			fprintf(f, ",state=\"%s\"} %d\n",
			    api_agent_state_name(st),
			    s->vms[j].agent == (enum api_agent_state)st);
		}
	}
	if (fclose(f) != 0)
		abort();
	if (len != NULL)
		*len = n;
	return buf;
}
