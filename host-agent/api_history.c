/*
 * The model's history ring and decision log as JSON, for
 * /api/v1/history, /api/v1/decisions and the dashboard's charts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_jw.h"
#include "model.h"
#include "util.h"

static void
hist_rec_write(struct jw *w, const struct host *h, const struct hist_rec *r,
    bool vms)
{
	const struct hist_vm	*hv;
	unsigned int		 i;

	jw_obj(w, NULL);
	jw_u64(w, "seq", r->seq);
	jw_u64(w, "time_ms", r->real_ms);
	jw_u64(w, "periods", r->periods);
	jw_dbl(w, "capacity", r->capacity);
	jw_dbl(w, "demand", r->summary.demand);
	jw_u64(w, "vcpus", r->summary.vcpus);
	jw_u64(w, "preferred_vcpus", r->summary.preferred);
	jw_dbl(w, "nonvm_cpus", r->nonvm_cpus);
	jw_dbl(w, "run_cpus", r->vm_run_cpus);
	jw_dbl(w, "run_delay_cpus", r->vm_delay_cpus);
	jw_dbl(w, "cpu_pressure_some_avg10", r->psi_some_avg10 >= 0 ?
	    r->psi_some_avg10 : NAN);
	jw_u64(w, "ndomains", r->nvms);
	if (vms) {
		jw_arr(w, "domains");
		for (i = 0; i < r->nvms; i++) {
			hv = &r->vms[i];
			jw_obj(w, NULL);
			jw_str(w, "name", host_hist_name(h, hv));
			jw_str(w, "uuid", host_hist_uuid(h, hv));
			jw_u64(w, "vcpus", hv->vcpus);
			jw_u64(w, "preferred_vcpus", hv->preferred);
			jw_dbl(w, "demand", hv->demand);
			jw_dbl(w, "run_cpus", hv->run_cpus);
			jw_dbl(w, "run_delay_cpus", hv->delay_cpus);
			jw_dbl(w, "run_delay_pct", hv->vcpus ?
			    100.0 * hv->delay_cpus / hv->vcpus : 0);
			jw_str(w, "reason", policy_reason_name(
			    (enum policy_reason)hv->reason));
			jw_bool(w, "steerable", hv->steerable);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

char *
api_json_history(const struct host *h, uint64_t seconds, uint64_t since,
    bool vms, size_t *len)
{
	const struct hist_rec	*r, *newest = host_history(h, 0);
	struct jw		 w;
	uint64_t		 from_ms = 0, records = 0;
	unsigned int		 i, n;
	bool			 more = false;

	if (newest != NULL && newest->mono_ms > seconds * 1000)
		from_ms = newest->mono_ms - seconds * 1000;
	/* The ring is newest first; charts draw oldest first. */
	for (n = 0; (r = host_history(h, n)) != NULL; n++) {
		if (r->mono_ms < from_ms || r->seq <= since)
			break;
	}
	jw_init(&w);
	jw_obj(&w, NULL);
	jw_u64(&w, "capacity_periods", host_params(h)->history);
	jw_arr(&w, "periods");
	for (i = n; i-- > 0;) {
		r = host_history(h, i);
		/* A bounded answer: the oldest that fit, and "more". */
		if (vms && records > 0 &&
		    records + r->nvms > API_HISTORY_MAX_VM_RECORDS) {
			more = true;
			break;
		}
		records += r->nvms;
		hist_rec_write(&w, h, r, vms);
	}
	jw_arr_end(&w);
	jw_bool(&w, "more", more);
	jw_obj_end(&w);
	return jw_finish(&w, len);
}

char *
api_json_decisions(const struct host *h, unsigned int limit, size_t *len)
{
	const struct decision_event	*d;
	struct jw			 w;
	unsigned int			 i;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_arr(&w, "decisions");
	for (i = 0; i < limit && (d = host_decision(h, i)) != NULL; i++) {
		jw_obj(&w, NULL);
		jw_u64(&w, "seq", d->seq);
		jw_u64(&w, "time_ms", d->real_ms);
		jw_str(&w, "name", d->name);
		jw_str(&w, "uuid", d->uuid);
		if (cpuset_empty(&d->from))
			jw_null(&w, "from");
		else
			jw_cpuset(&w, "from", &d->from);
		jw_cpuset(&w, "to", &d->to);
		jw_u64(&w, "from_vcpus", cpuset_count(&d->from));
		jw_u64(&w, "to_vcpus", cpuset_count(&d->to));
		jw_str(&w, "reason", policy_reason_name(d->reason));
		jw_str(&w, "why", d->why);
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	return jw_finish(&w, len);
}
