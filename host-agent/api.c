/*
 * JSON views of a snapshot (/api/v1/host, /api/v1/domains[/NAME]).  Every
 * string goes through json-c, which escapes it; guest-supplied text is
 * never interpreted here, only carried.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api.h"
#include "api_json.h"
#include "util.h"

static const char *const api_agent_names[] = {
	[API_AGENT_NONE] = "none",
	[API_AGENT_WAITING] = "waiting",
	[API_AGENT_CONNECTED] = "connected",
	[API_AGENT_FOLLOWING] = "following",
	[API_AGENT_FAILING] = "failing",
};

static const char *const api_mode_names[] = {
	[POLICY_MODE_AUTO] = "auto",
	[POLICY_MODE_OFF] = "off",
	[POLICY_MODE_FIXED] = "fixed",
};

void
api_snapshot_init(struct api_snapshot *s)
{
	memset(s, 0, sizeof *s);
}

void
api_snapshot_free(struct api_snapshot *s)
{
	free(s->vms);
	memset(s, 0, sizeof *s);
}

void
api_snapshot_reset(struct api_snapshot *s)
{
	memset(&s->host, 0, sizeof s->host);
	s->nvms = 0;
}

struct api_vm *
api_snapshot_vm(struct api_snapshot *s)
{
	struct api_vm	*vm;

	if (s->nvms == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->vms = xreallocarray(s->vms, s->cap, sizeof *s->vms);
	}
	vm = &s->vms[s->nvms++];
	memset(vm, 0, sizeof *vm);
	return vm;
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

const char *
api_mode_name(enum policy_mode m)
{
	if ((size_t)m >= nitems(api_mode_names))
		return "unknown";
	return api_mode_names[m];
}

int
api_mode_parse(const char *s)
{
	size_t	i;

	for (i = 0; i < nitems(api_mode_names); i++) {
		if (strcmp(s, api_mode_names[i]) == 0)
			return (int)i;
	}
	return -1;
}

double
api_vm_delay_pct(const struct api_vm *vm)
{
	if (vm->vcpus == 0)
		return 0;
	return 100.0 * vm->delay_cpus / vm->vcpus;
}

/*
 * A double with a short, stable text form: json-c's default "%.17g" shows
 * binary noise (0.30000000000000004) to operators.  NaN and infinities are
 * not JSON and become null.
 */
struct json_object *
api_json_double(double d)
{
	char	buf[32];

	if (!isfinite(d))
		return NULL;
	snprintf(buf, sizeof buf, "%.6g", d);
	return json_object_new_double_s(d, buf);
}

struct json_object *
api_json_cpuset(const struct cpuset *set)
{
	char	*s = cpuset_to_str(set);
	struct json_object *o = json_object_new_string(s);

	free(s);
	return o;
}

char *
api_json_finish(struct json_object *o, size_t *len)
{
	const char	*s;
	size_t		 n;
	char		*out;

	s = json_object_to_json_string_length(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	out = xmalloc(n + 2);
	memcpy(out, s, n);
	out[n++] = '\n';
	out[n] = '\0';
	json_object_put(o);
	if (len != NULL)
		*len = n;
	return out;
}

#define J_ADD(o, k, v)	json_object_object_add_ex((o), (k), (v), \
	    JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT)

static struct json_object *
api_host_object(const struct api_host *h)
{
	struct json_object	*o = json_object_new_object();
	double			 oc;

	J_ADD(o, "hostname", json_object_new_string(h->hostname));
	J_ADD(o, "mode", json_object_new_string(h->mode));
	J_ADD(o, "period_ms", json_object_new_uint64(h->period_ms));
	J_ADD(o, "period_seq", json_object_new_uint64(h->period_seq));
	J_ADD(o, "time_ms", json_object_new_uint64(h->time_ms));
	J_ADD(o, "start_ms", json_object_new_uint64(h->start_ms));
	J_ADD(o, "pcpus", json_object_new_uint64(h->pcpus));
	J_ADD(o, "usable_pcpus", api_json_cpuset(&h->usable));
	J_ADD(o, "capacity", api_json_double(h->capacity));
	J_ADD(o, "nonvm_cpus", api_json_double(h->nonvm_cpus));
	J_ADD(o, "demand", api_json_double(h->demand));
	J_ADD(o, "vcpus", json_object_new_uint64(h->vcpus));
	J_ADD(o, "preferred_vcpus", json_object_new_uint64(h->preferred));
	/* Over-commit: vCPUs per CPU of capacity; null with no capacity. */
	oc = h->capacity > 0 ? h->vcpus / h->capacity : NAN;
	J_ADD(o, "overcommit", api_json_double(oc));
	J_ADD(o, "contention_domains", json_object_new_uint64(h->ndomains));
	J_ADD(o, "contended", json_object_new_boolean(h->contended));
	J_ADD(o, "over_capacity", json_object_new_boolean(h->over_capacity));
	J_ADD(o, "run_s", api_json_double(h->run_s));
	J_ADD(o, "run_delay_s", api_json_double(h->delay_s));
	J_ADD(o, "run_delay_cpus", api_json_double(h->delay_cpus));
	J_ADD(o, "cpu_pressure_some_avg10",
	    h->has_psi ? api_json_double(h->psi_some_avg10) : NULL);
	J_ADD(o, "decisions", json_object_new_uint64(h->decisions));
	J_ADD(o, "protocol_errors", json_object_new_uint64(h->proto_errors));
	J_ADD(o, "libvirt_connected",
	    json_object_new_boolean(h->libvirt_connected));
	return o;
}

char *
api_json_host(const struct api_snapshot *s, size_t *len)
{
	return api_json_finish(api_host_object(&s->host), len);
}

static struct json_object *
api_policy_object(const struct api_vm *vm)
{
	struct json_object	*o = json_object_new_object();
	struct json_object	*md = json_object_new_object();

	J_ADD(o, "mode", json_object_new_string(api_mode_name(vm->mode)));
	J_ADD(o, "weight", json_object_new_uint64(vm->weight));
	J_ADD(o, "min_cores", json_object_new_uint64(vm->min_cores));
	J_ADD(o, "max_cores", json_object_new_uint64(vm->max_cores));
	J_ADD(o, "cpus", vm->mode == POLICY_MODE_FIXED || vm->has_cpus ?
	    api_json_cpuset(&vm->fixed) : NULL);
	J_ADD(o, "cpu_shares", json_object_new_uint64(vm->cpu_shares));
	/*
	 * What the libvirt metadata sets, apart from defaults: prefcpuctl
	 * merges a change into it so that unnamed attributes stay.
	 */
	J_ADD(md, "mode", json_object_new_string(api_mode_name(vm->mode)));
	if (vm->has_weight)
		J_ADD(md, "weight", json_object_new_uint64(vm->weight));
	if (vm->has_min_cores)
		J_ADD(md, "min_cores", json_object_new_uint64(vm->min_cores));
	if (vm->has_max_cores)
		J_ADD(md, "max_cores", json_object_new_uint64(vm->max_cores));
	if (vm->has_cpus)
		J_ADD(md, "cpus", api_json_cpuset(&vm->fixed));
	J_ADD(o, "metadata", md);
	J_ADD(o, "error", vm->policy_error[0] ?
	    json_object_new_string(vm->policy_error) : NULL);
	return o;
}

static struct json_object *
api_decision_object(const struct api_vm *vm)
{
	const struct policy_decision *d = &vm->decision;
	struct json_object	*o;

	if (!vm->has_decision)
		return NULL;
	o = json_object_new_object();
	J_ADD(o, "reason",
	    json_object_new_string(policy_reason_name(d->reason)));
	J_ADD(o, "why", json_object_new_string(d->why));
	J_ADD(o, "preferred", api_json_cpuset(&d->preferred));
	J_ADD(o, "cores", json_object_new_uint64(d->cores));
	J_ADD(o, "vcpus", json_object_new_uint64(d->vcpus));
	J_ADD(o, "changed", json_object_new_boolean(d->changed));
	J_ADD(o, "contention_domain", json_object_new_uint64(d->domain));
	J_ADD(o, "capacity", api_json_double(d->capacity));
	J_ADD(o, "demand", api_json_double(d->demand));
	J_ADD(o, "claim", api_json_double(d->claim));
	J_ADD(o, "share", api_json_double(d->share));
	J_ADD(o, "saturated", json_object_new_boolean(d->saturated));
	J_ADD(o, "contended", json_object_new_boolean(d->contended));
	J_ADD(o, "decisions", json_object_new_uint64(vm->decisions));
	return o;
}

static struct json_object *
api_vm_object(const struct api_vm *vm)
{
	struct json_object	*o = json_object_new_object();
	struct json_object	*t, *a, *ag, *u, *r;

	J_ADD(o, "name", json_object_new_string(vm->name));
	J_ADD(o, "uuid", json_object_new_string(vm->uuid));
	J_ADD(o, "vcpus", json_object_new_uint64(vm->vcpus));
	J_ADD(o, "cores", json_object_new_uint64(vm->cores));
	J_ADD(o, "policy", api_policy_object(vm));

	t = json_object_new_object();
	J_ADD(t, "preferred", api_json_cpuset(&vm->target));
	J_ADD(t, "vcpus", json_object_new_uint64(cpuset_count(&vm->target)));
	J_ADD(t, "seq", json_object_new_uint64(vm->target_seq));
	J_ADD(o, "target", t);

	a = json_object_new_object();
	J_ADD(a, "ok", json_object_new_boolean(vm->acked));
	J_ADD(a, "seq", json_object_new_uint64(vm->ack_seq));
	J_ADD(a, "cpus", vm->acked ? api_json_cpuset(&vm->applied) : NULL);
	J_ADD(a, "vcpus", vm->acked ?
	    json_object_new_uint64(cpuset_count(&vm->applied)) : NULL);
	J_ADD(a, "error", vm->ack_error[0] ?
	    json_object_new_string(vm->ack_error) : NULL);
	J_ADD(o, "applied", a);

	ag = json_object_new_object();
	J_ADD(ag, "state", json_object_new_string(
	    api_agent_state_name(vm->agent)));
	J_ADD(ag, "agent", json_object_new_string(vm->agent_name));
	J_ADD(ag, "backend", json_object_new_string(vm->backend));
	J_ADD(ag, "kernel", json_object_new_string(vm->kernel));
	J_ADD(ag, "governor", json_object_new_string(vm->governor));
	J_ADD(ag, "protocol_errors", json_object_new_uint64(vm->proto_errors));
	r = NULL;
	if (vm->has_report) {
		r = json_object_new_object();
		J_ADD(r, "steal_pct", api_json_double(vm->steal_pct));
		J_ADD(r, "psi_some_avg10", api_json_double(vm->psi_some_avg10));
		J_ADD(r, "nr_running", json_object_new_uint64(vm->nr_running));
	}
	J_ADD(ag, "report", r);
	J_ADD(o, "agent", ag);

	u = json_object_new_object();
	J_ADD(u, "run_s", api_json_double(vm->run_s));
	J_ADD(u, "run_delay_s", api_json_double(vm->delay_s));
	J_ADD(u, "run_cpus", api_json_double(vm->run_cpus));
	J_ADD(u, "run_delay_cpus", api_json_double(vm->delay_cpus));
	J_ADD(u, "run_delay_pct", api_json_double(api_vm_delay_pct(vm)));
	J_ADD(o, "usage", u);

	J_ADD(o, "decision", api_decision_object(vm));
	return o;
}

char *
api_json_domains(const struct api_snapshot *s, size_t *len)
{
	struct json_object	*o = json_object_new_object();
	struct json_object	*arr = json_object_new_array_ext((int)s->nvms);
	size_t			 i;

	J_ADD(o, "period_seq", json_object_new_uint64(s->host.period_seq));
	J_ADD(o, "time_ms", json_object_new_uint64(s->host.time_ms));
	for (i = 0; i < s->nvms; i++)
		json_object_array_add(arr, api_vm_object(&s->vms[i]));
	J_ADD(o, "domains", arr);
	return api_json_finish(o, len);
}

char *
api_json_domain(const struct api_snapshot *s, const struct api_vm *vm,
    size_t *len)
{
	struct json_object	*o = api_vm_object(vm);

	J_ADD(o, "period_seq", json_object_new_uint64(s->host.period_seq));
	J_ADD(o, "time_ms", json_object_new_uint64(s->host.time_ms));
	return api_json_finish(o, len);
}
