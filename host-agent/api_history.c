/*
 * The model's history ring and decision log as JSON, for
 * /api/v1/history, /api/v1/decisions and the dashboard's charts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_json.h"
#include "model.h"
#include "util.h"

#define J_ADD(o, k, v)	json_object_object_add_ex((o), (k), (v), \
	    JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_KEY_IS_CONSTANT)

static struct json_object *
hist_rec_object(const struct hist_rec *r)
{
	struct json_object	*o = json_object_new_object();
	struct json_object	*arr = json_object_new_array_ext((int)r->nvms);
	struct json_object	*v;
	const struct hist_vm	*hv;
	unsigned int		 i;

	J_ADD(o, "seq", json_object_new_uint64(r->seq));
	J_ADD(o, "time_ms", json_object_new_uint64(r->real_ms));
	J_ADD(o, "capacity", api_json_double(r->capacity));
	J_ADD(o, "demand", api_json_double(r->summary.demand));
	J_ADD(o, "vcpus", json_object_new_uint64(r->summary.vcpus));
	J_ADD(o, "preferred_vcpus",
	    json_object_new_uint64(r->summary.preferred));
	J_ADD(o, "nonvm_cpus", api_json_double(r->nonvm_cpus));
	J_ADD(o, "run_cpus", api_json_double(r->vm_run_cpus));
	J_ADD(o, "run_delay_cpus", api_json_double(r->vm_delay_cpus));
	J_ADD(o, "cpu_pressure_some_avg10", r->psi_some_avg10 >= 0 ?
	    api_json_double(r->psi_some_avg10) : NULL);
	for (i = 0; i < r->nvms; i++) {
		hv = &r->vms[i];
		v = json_object_new_object();
		J_ADD(v, "name", json_object_new_string(hv->name));
		J_ADD(v, "uuid", json_object_new_string(hv->uuid));
		J_ADD(v, "vcpus", json_object_new_uint64(hv->vcpus));
		J_ADD(v, "preferred_vcpus",
		    json_object_new_uint64(hv->preferred));
		J_ADD(v, "demand", api_json_double(hv->demand));
		J_ADD(v, "run_cpus", api_json_double(hv->run_cpus));
		J_ADD(v, "run_delay_cpus", api_json_double(hv->delay_cpus));
		J_ADD(v, "run_delay_pct", api_json_double(hv->vcpus ?
		    100.0 * hv->delay_cpus / hv->vcpus : 0));
		J_ADD(v, "reason",
		    json_object_new_string(policy_reason_name(hv->reason)));
		J_ADD(v, "steerable", json_object_new_boolean(hv->steerable));
		json_object_array_add(arr, v);
	}
	J_ADD(o, "domains", arr);
	return o;
}

char *
api_json_history(const struct host *h, uint64_t seconds, uint64_t since,
    size_t *len)
{
	struct json_object	*o = json_object_new_object();
	struct json_object	*arr = json_object_new_array();
	const struct hist_rec	*r, *newest = host_history(h, 0);
	uint64_t		 from_ms = 0;
	unsigned int		 i, n;

	if (newest != NULL && newest->mono_ms > seconds * 1000)
		from_ms = newest->mono_ms - seconds * 1000;
	/* Oldest first, as charts draw them. */
	for (n = 0; (r = host_history(h, n)) != NULL; n++) {
		if (r->mono_ms < from_ms || r->seq <= since)
			break;
	}
	for (i = n; i-- > 0;)
		json_object_array_add(arr, hist_rec_object(host_history(h, i)));
	J_ADD(o, "capacity_periods",
	    json_object_new_uint64(host_params(h)->history));
	J_ADD(o, "periods", arr);
	return api_json_finish(o, len);
}

char *
api_json_decisions(const struct host *h, unsigned int limit, size_t *len)
{
	struct json_object		*o = json_object_new_object();
	struct json_object		*arr = json_object_new_array();
	struct json_object		*v;
	const struct decision_event	*d;
	unsigned int			 i;

	for (i = 0; i < limit && (d = host_decision(h, i)) != NULL; i++) {
		v = json_object_new_object();
		J_ADD(v, "seq", json_object_new_uint64(d->seq));
		J_ADD(v, "time_ms", json_object_new_uint64(d->real_ms));
		J_ADD(v, "name", json_object_new_string(d->name));
		J_ADD(v, "uuid", json_object_new_string(d->uuid));
		J_ADD(v, "from", cpuset_empty(&d->from) ? NULL :
		    api_json_cpuset(&d->from));
		J_ADD(v, "to", api_json_cpuset(&d->to));
		J_ADD(v, "from_vcpus", json_object_new_uint64(
		    cpuset_count(&d->from)));
		J_ADD(v, "to_vcpus", json_object_new_uint64(
		    cpuset_count(&d->to)));
		J_ADD(v, "reason",
		    json_object_new_string(policy_reason_name(d->reason)));
		J_ADD(v, "why", json_object_new_string(d->why));
		json_object_array_add(arr, v);
	}
	J_ADD(o, "decisions", arr);
	return api_json_finish(o, len);
}
