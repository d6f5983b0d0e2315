/* Copy what operators see of the daemon's model into a snapshot. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api.h"
#include "model.h"
#include "util.h"

/* Copy a string, cutting it to fit. */
static void
api_copy(char *dst, size_t len, const char *src)
{
	size_t	n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static enum api_agent_state
api_agent_state(const struct vm *vm)
{
	const struct vm_chan	*c = &vm->chan;

	if (vm->info.channel == NULL && !c->connected)
		return API_AGENT_NONE;
	if (!c->connected || !c->hello)
		return API_AGENT_WAITING;
	if (c->ack_seq > 0 && !c->ack_ok)
		return API_AGENT_FAILING;
	if (c->following)
		return API_AGENT_FOLLOWING;
	return API_AGENT_CONNECTED;
}

static void
api_fill_vm(const struct host *h, const struct vm *vm, struct api_vm *a,
    struct api_snapshot *s)
{
	struct api_vcpu_stat	*vs;
	const struct vm_meta	*m = &vm->meta;
	const struct polmeta	*pol = vm_policy(vm);
	const struct vm_chan	*c = &vm->chan;
	unsigned int		 i;

	snprintf(a->name, sizeof(a->name), "%s", vm->info.name ?
	    vm->info.name : "");
	snprintf(a->uuid, sizeof(a->uuid), "%s", vm->info.uuid);
	a->source = vm_source_name(vm->source);
	a->vcpus = cpuset_count(&vm->info.online);
	a->cores = vm->info.ncores;
	a->cpu_shares = vm->info.shares;
	a->paused = vm->info.paused;
	a->steerable = host_params(h)->observe || c->following;

	if (pol != NULL)
		a->meta = *pol;
	else
		polmeta_init(&a->meta);
	a->mode = polmeta_mode(pol);
	a->weight = polmeta_weight(pol, vm->info.shares);
	a->min_cores = polmeta_min_cores(pol);
	a->max_cores = polmeta_max_cores(pol);
	if (a->mode == POLICY_MODE_FIXED)
		a->fixed = pol->cpus;
	a->enforce = polmeta_enforce(pol, host_params(h)->enforce);
	a->cap = vm->cap;
	if (m->present && !m->valid)
		api_copy(a->policy_error, sizeof(a->policy_error), m->error);

	a->target = c->target;
	a->target_seq = c->target_seq;
	a->acked = c->ack_seq > 0 && c->ack_ok;
	a->ack_seq = c->ack_seq;
	a->applied = c->applied;
	if (c->ack_seq > 0 && !c->ack_ok)
		api_copy(a->ack_error, sizeof(a->ack_error), c->ack_error);

	a->agent = api_agent_state(vm);
	snprintf(a->agent_name, sizeof(a->agent_name), "%s", c->agent);
	snprintf(a->backend, sizeof(a->backend), "%s", c->backend);
	snprintf(a->kernel, sizeof(a->kernel), "%s", c->kernel);
	snprintf(a->governor, sizeof(a->governor), "%s", c->governor);
	a->proto_errors = c->err_decode + c->err_overlong + c->err_rate +
	    c->err_protocol;
	a->has_report = c->report_ms > 0;
	a->steal_pct = c->hint_steal_pct;
	a->psi_some_avg10 = c->hint_psi;
	a->runnable = c->hint_runnable >= 0 ? c->hint_runnable : 0;
	a->nr_running = (uint32_t)lround(a->runnable);

	/* Cumulative schedstat counters of the vCPU threads, in seconds. */
	for (i = 0; i < vm->info.nvcpus && vm->thread != NULL; i++) {
		a->run_s += vm->thread[i].run_ns / 1e9;
		a->delay_s += vm->thread[i].delay_ns / 1e9;
		if (!cpuset_isset(&vm->info.online, i) ||
		    !vm->thread[i].sampled)
			continue;
		vs = api_snapshot_vcpu(s);
		vs->vcpu = i;
		vs->run_s = vm->thread[i].run_ns / 1e9;
		vs->delay_s = vm->thread[i].delay_ns / 1e9;
	}
	a->run_cpus = vm->sample.valid ? vm->sample.run_cpus : 0;
	a->delay_cpus = vm->sample.valid ? vm->sample.delay_cpus : 0;

	a->has_decision = vm->decided;
	if (vm->decided)
		a->decision = vm->decision;
	a->decisions = vm->pstate.changes;
}

void
api_fill(const struct host *h, struct api_snapshot *s, const char *only)
{
	const struct host_sample	*hs = host_sample(h);
	const struct policy_summary	*sum = host_summary(h);
	const struct host_totals	*tot = host_totals(h);
	const struct decision_event	*ev;
	const struct vm			*vm;
	struct api_host			*a = &s->host;

	if (gethostname(a->hostname, sizeof(a->hostname)) != 0)
		a->hostname[0] = '\0';
	a->hostname[sizeof(a->hostname) - 1] = '\0';
	snprintf(a->mode, sizeof(a->mode), "%s",
	    host_params(h)->observe ? "observe" : "enforce");
	a->period_seq = host_periods(h);
	a->time_ms = hs->real_ms;
	a->pcpus = cpuset_count(&hs->online);
	a->usable = hs->usable;
	a->usable_cpus = cpuset_count(&hs->usable);
	a->capacity = hs->capacity;
	a->nonvm_cpus = hs->nonvm_cpus;
	a->demand = sum->demand;
	a->preferred = sum->preferred;
	a->ndomains = sum->ndomains;
	a->over_capacity = sum->over_capacity;
	a->delay_cpus = hs->vm_delay_cpus;
	a->run_s = tot->run_s;
	a->delay_s = tot->delay_s;
	a->proto_errors = host_proto_errors(h);
	a->has_psi = hs->psi_some_avg10 >= 0;
	a->psi_some_avg10 = a->has_psi ? hs->psi_some_avg10 : 0;
	ev = host_decision(h, 0);
	a->decisions = ev != NULL ? ev->seq : 0;

	HOST_FOREACH_VM(vm, h) {
		a->vcpus += cpuset_count(&vm->info.online);
		if (vm->decided && vm->decision.contended)
			a->contended = true;
		if (only == NULL || (only[0] != '\0' && vm->info.name != NULL &&
		    (strcmp(vm->info.name, only) == 0 ||
		    strcasecmp(vm->info.uuid, only) == 0)))
			api_fill_vm(h, vm, api_snapshot_vm(s), s);
	}
}
