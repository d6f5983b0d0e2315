/*
 * JSON views of a snapshot (/api/v1/host, /api/v1/domains[/NAME]).  Every
 * string goes through the writer's escaping (api_jw.c); guest-supplied
 * text is never interpreted here, only carried.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_jw.h"
#include "figures.h"
#include "util.h"

static const char *const api_agent_names[] = {
	[API_AGENT_NONE] = "none",
	[API_AGENT_WAITING] = "waiting",
	[API_AGENT_CONNECTED] = "connected",
	[API_AGENT_FOLLOWING] = "following",
	[API_AGENT_FAILING] = "failing",
};

void
api_snapshot_init(struct api_snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void
api_snapshot_free(struct api_snapshot *s)
{
	free(s->vms);
	free(s->vcpu_stats);
	memset(s, 0, sizeof(*s));
}

void
api_snapshot_reset(struct api_snapshot *s)
{
	memset(&s->host, 0, sizeof(s->host));
	s->nvms = 0;
	s->nvcpu_stats = 0;
}

struct api_vm *
api_snapshot_vm(struct api_snapshot *s)
{
	struct api_vm	*vm;

	if (s->nvms == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->vms = xreallocarray(s->vms, s->cap, sizeof(*s->vms));
	}
	vm = &s->vms[s->nvms++];
	memset(vm, 0, sizeof(*vm));
	vm->vcpu_first = s->nvcpu_stats;
	return vm;
}

struct api_vcpu_stat *
api_snapshot_vcpu(struct api_snapshot *s)
{
	struct api_vcpu_stat	*v;

	if (s->nvcpu_stats == s->vcpu_cap) {
		s->vcpu_cap = s->vcpu_cap ? s->vcpu_cap * 2 : 64;
		s->vcpu_stats = xreallocarray(s->vcpu_stats, s->vcpu_cap,
		    sizeof(*s->vcpu_stats));
	}
	v = &s->vcpu_stats[s->nvcpu_stats++];
	memset(v, 0, sizeof(*v));
	s->vms[s->nvms - 1].vcpu_count++;
	return v;
}

const struct api_vm *
api_snapshot_find(const struct api_snapshot *s, const char *key)
{
	size_t	i;

	for (i = 0; i < s->nvms; i++) {
		if (strcmp(s->vms[i].name, key) == 0)
			return &s->vms[i];
	}
	for (i = 0; i < s->nvms; i++) {
		if (strcasecmp(s->vms[i].uuid, key) == 0)
			return &s->vms[i];
	}
	return NULL;
}

const char *
api_agent_state_name(enum api_agent_state st)
{
	if ((size_t)st >= nitems(api_agent_names))
		return "unknown";
	return api_agent_names[st];
}

double
api_vm_delay_pct(const struct api_vm *vm)
{
	return fig_delay_share_pct(vm->delay_cpus, vm->vcpus);
}

double
api_host_delay_pct(const struct api_host *h)
{
	return fig_delay_share_pct(h->delay_cpus, h->vcpus);
}

static void
api_host_write(struct jw *w, const struct api_host *h)
{
	jw_obj(w, NULL);
	jw_str(w, "hostname", h->hostname);
	jw_str(w, "mode", h->mode);
	jw_u64(w, "period_ms", h->period_ms);
	jw_u64(w, "period_seq", h->period_seq);
	jw_u64(w, "time_ms", h->time_ms);
	jw_u64(w, "start_ms", h->start_ms);
	jw_u64(w, "pcpus", h->pcpus);
	jw_cpuset(w, "usable_pcpus", &h->usable);
	jw_dbl(w, "capacity", h->capacity);
	jw_dbl(w, "nonvm_cpus", h->nonvm_cpus);
	jw_dbl(w, "demand", h->demand);
	jw_u64(w, "vcpus", h->vcpus);
	jw_u64(w, "preferred_vcpus", h->preferred);
	/* Over-commit: vCPUs per CPU of capacity; null with no capacity. */
	jw_u64(w, "usable_cpus", h->usable_cpus);
	jw_dbl(w, "overcommit", fig_overcommit(h->vcpus, h->usable_cpus));
	jw_u64(w, "contention_domains", h->ndomains);
	jw_bool(w, "contended", h->contended);
	jw_bool(w, "over_capacity", h->over_capacity);
	jw_dbl(w, "run_s", h->run_s);
	jw_dbl(w, "run_delay_s", h->delay_s);
	jw_dbl(w, "run_delay_cpus", h->delay_cpus);
	jw_dbl(w, "run_delay_pct", api_host_delay_pct(h));
	jw_dbl(w, "cpu_pressure_some_avg10", h->has_psi ? h->psi_some_avg10 :
	    NAN);
	jw_u64(w, "decisions", h->decisions);
	jw_u64(w, "protocol_errors", h->proto_errors);
	jw_bool(w, "libvirt_connected", h->libvirt_connected);
	jw_obj_end(w);
}

char *
api_json_host(const struct api_snapshot *s, size_t *len)
{
	struct jw	w;

	jw_init(&w);
	api_host_write(&w, &s->host);
	return jw_finish(&w, len);
}

/* What the libvirt metadata sets, field by field from polmeta's table. */
static void
api_metadata_write(struct jw *w, const struct polmeta *p)
{
	char	*v;
	int	 f;

	jw_obj(w, "metadata");
	for (f = 0; f < PM_NFIELDS; f++) {
		if (!p->has[f])
			continue;
		if (polmeta_fields[f].type == PMT_UINT) {
			jw_u64(w, polmeta_fields[f].json, p->val[f]);
			continue;
		}
		v = polmeta_value(p, (enum polmeta_field)f);
		jw_str(w, polmeta_fields[f].json, v);
		free(v);
	}
	jw_obj_end(w);
}

static void
api_policy_write(struct jw *w, const struct api_vm *vm)
{
	jw_obj(w, "policy");
	jw_str(w, "mode", polmeta_mode_name(vm->mode));
	jw_u64(w, "weight", vm->weight);
	jw_u64(w, "min_cores", vm->min_cores);
	jw_u64(w, "max_cores", vm->max_cores);
	if (vm->mode == POLICY_MODE_FIXED)
		jw_cpuset(w, "cpus", &vm->fixed);
	else
		jw_null(w, "cpus");
	jw_str(w, "enforce", polmeta_enforce_name(vm->enforce));
	jw_u64(w, "cpu_shares", vm->cpu_shares);
	/* prefcpuctl merges a change into it so that unnamed attributes stay. */
	api_metadata_write(w, &vm->meta);
	jw_str(w, "error", vm->policy_error[0] ? vm->policy_error : NULL);
	jw_obj_end(w);
}

/* enforce=cap: the cap on the VM's vCPUs through libvirt, or null. */
static void
api_cap_write(struct jw *w, const struct api_vm *vm)
{
	if (!vm->cap.active && vm->cap.error[0] == '\0') {
		jw_null(w, "cap");
		return;
	}
	jw_obj(w, "cap");
	jw_bool(w, "active", vm->cap.active);
	jw_dbl(w, "cpus", vm->cap.cpus);
	jw_u64(w, "vcpu_period", vm->cap.period_us);
	jw_u64(w, "vcpu_quota", vm->cap.active ?
	    (uint64_t)vm->cap.quota_us : 0);
	jw_str(w, "error", vm->cap.error[0] ? vm->cap.error : NULL);
	jw_obj_end(w);
}

static void
api_decision_write(struct jw *w, const struct api_vm *vm)
{
	const struct policy_decision *d = &vm->decision;

	if (!vm->has_decision) {
		jw_null(w, "decision");
		return;
	}
	jw_obj(w, "decision");
	jw_str(w, "reason", policy_reason_name(d->reason));
	jw_str(w, "why", d->why);
	jw_cpuset(w, "preferred", &d->preferred);
	jw_u64(w, "cores", d->cores);
	jw_u64(w, "vcpus", d->vcpus);
	jw_bool(w, "changed", d->changed);
	jw_u64(w, "contention_domain", d->domain);
	jw_dbl(w, "capacity", d->capacity);
	jw_dbl(w, "demand", d->demand);
	jw_dbl(w, "claim", d->claim);
	jw_dbl(w, "counted", d->counted);
	jw_dbl(w, "share", d->share);
	jw_dbl(w, "fair", d->fair);
	jw_bool(w, "saturated", d->saturated);
	jw_bool(w, "contended", d->contended);
	jw_u64(w, "decisions", vm->decisions);
	jw_obj_end(w);
}

/* One VM; extra members (period_seq, time_ms) from host when not NULL. */
static void
api_vm_write(struct jw *w, const struct api_vm *vm, const struct api_host *h)
{
	jw_obj(w, NULL);
	jw_str(w, "name", vm->name);
	jw_str(w, "uuid", vm->uuid);
	jw_str(w, "source", vm->source);
	jw_u64(w, "vcpus", vm->vcpus);
	jw_u64(w, "cores", vm->cores);
	jw_bool(w, "paused", vm->paused);
	api_policy_write(w, vm);
	api_cap_write(w, vm);

	jw_obj(w, "target");
	jw_cpuset(w, "preferred", &vm->target);
	jw_u64(w, "vcpus", cpuset_count(&vm->target));
	jw_u64(w, "seq", vm->target_seq);
	jw_obj_end(w);

	jw_obj(w, "applied");
	jw_bool(w, "ok", vm->acked);
	jw_u64(w, "seq", vm->ack_seq);
	if (vm->acked) {
		jw_cpuset(w, "cpus", &vm->applied);
		jw_u64(w, "vcpus", cpuset_count(&vm->applied));
	} else {
		jw_null(w, "cpus");
		jw_null(w, "vcpus");
	}
	jw_str(w, "error", vm->ack_error[0] ? vm->ack_error : NULL);
	jw_obj_end(w);

	jw_obj(w, "agent");
	jw_str(w, "state", api_agent_state_name(vm->agent));
	jw_bool(w, "steerable", vm->steerable);
	jw_str(w, "agent", vm->agent_name);
	jw_str(w, "backend", vm->backend);
	jw_str(w, "kernel", vm->kernel);
	jw_str(w, "governor", vm->governor);
	jw_u64(w, "protocol_errors", vm->proto_errors);
	if (vm->has_report) {
		jw_obj(w, "report");
		jw_dbl(w, "steal_pct", vm->steal_pct);
		jw_dbl(w, "psi_some_avg10", vm->psi_some_avg10);
		jw_dbl(w, "runnable", vm->runnable);
		jw_u64(w, "nr_running", vm->nr_running);
		jw_obj_end(w);
	} else
		jw_null(w, "report");
	jw_obj_end(w);

	jw_obj(w, "usage");
	jw_dbl(w, "run_s", vm->run_s);
	jw_dbl(w, "run_delay_s", vm->delay_s);
	jw_dbl(w, "run_cpus", vm->run_cpus);
	jw_dbl(w, "run_delay_cpus", vm->delay_cpus);
	jw_dbl(w, "run_delay_pct", api_vm_delay_pct(vm));
	jw_obj_end(w);

	api_decision_write(w, vm);
	if (h != NULL) {
		jw_u64(w, "period_seq", h->period_seq);
		jw_u64(w, "time_ms", h->time_ms);
	}
	jw_obj_end(w);
}

char *
api_json_domains(const struct api_snapshot *s, size_t *len)
{
	struct jw	w;
	size_t		i;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_u64(&w, "period_seq", s->host.period_seq);
	jw_u64(&w, "time_ms", s->host.time_ms);
	jw_arr(&w, "domains");
	for (i = 0; i < s->nvms; i++)
		api_vm_write(&w, &s->vms[i], NULL);
	jw_arr_end(&w);
	jw_obj_end(&w);
	return jw_finish(&w, len);
}

char *
api_json_domain(const struct api_snapshot *s, const struct api_vm *vm,
    size_t *len)
{
	struct jw	w;

	jw_init(&w);
	api_vm_write(&w, vm, &s->host);
	return jw_finish(&w, len);
}
