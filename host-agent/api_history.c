/*
 * The model's history ring and decision log as JSON, for
 * /api/v1/history, /api/v1/decisions and the dashboard's charts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "figures.h"
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
			jw_dbl(w, "run_delay_pct",
			    fig_delay_share_pct(hv->delay_cpus, hv->vcpus));
			jw_str(w, "reason", policy_reason_name(
			    (enum policy_reason)hv->reason));
			jw_bool(w, "steerable", hv->steerable);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
}

/* One answer of /api/v1/history in the making (see api.h). */
struct api_hist {
	const struct host	*h;
	struct jw		 w;
	uint64_t		 from_ms;
	uint64_t		 last_seq;	/* written, or since */
	uint64_t		 end_seq;	/* the newest when asked */
	uint64_t		 records;	/* per-VM records written */
	size_t			 bytes;		/* of the answer so far */
	bool			 vms;
	bool			 started;
	bool			 done;
};

struct api_hist *
api_history_open(const struct host *h, uint64_t seconds, uint64_t since,
    bool vms)
{
	const struct hist_rec	*newest = host_history(h, 0);
	struct api_hist		*a = xcalloc(1, sizeof(*a));

	a->h = h;
	a->vms = vms;
	a->last_seq = since;
	if (newest != NULL) {
		a->end_seq = newest->seq;
		if (newest->mono_ms > seconds * 1000)
			a->from_ms = newest->mono_ms - seconds * 1000;
	}
	jw_init(&a->w);
	return a;
}

/*
 * The oldest record still to write: seq above the last written, not
 * newer than the answer's end, in the window.  The ring is newest first
 * and moves on between pieces, hence the search by seq.
 */
static const struct hist_rec *
api_history_oldest(const struct api_hist *a)
{
	const struct hist_rec	*r, *found = NULL;
	unsigned int		 i;

	for (i = 0; (r = host_history(a->h, i)) != NULL; i++) {
		if (r->seq <= a->last_seq || r->mono_ms < a->from_ms)
			break;
		if (r->seq <= a->end_seq)
			found = r;
	}
	return found;
}

int
api_history_next(struct api_hist *a, char **piece, size_t *len)
{
	const struct hist_rec	*r;
	bool			 more = false;

	if (a->done) {
		*piece = NULL;
		*len = 0;
		return 0;
	}
	if (!a->started) {
		a->started = true;
		jw_obj(&a->w, NULL);
		jw_u64(&a->w, "capacity_periods", host_params(a->h)->history);
		jw_arr(&a->w, "periods");
	}
	while (jw_pending(&a->w) < API_HISTORY_PIECE) {
		if ((r = api_history_oldest(a)) == NULL)
			break;
		/* A bounded answer: the oldest that fit, and "more". */
		if (a->records > 0 && ((a->vms && a->records + r->nvms >
		    API_HISTORY_MAX_VM_RECORDS) || a->bytes +
		    jw_pending(&a->w) >= API_HISTORY_MAX_BYTES)) {
			more = true;
			r = NULL;
			break;
		}
		a->records += a->vms ? r->nvms : 1;
		a->last_seq = r->seq;
		hist_rec_write(&a->w, a->h, r, a->vms);
	}
	if (jw_pending(&a->w) >= API_HISTORY_PIECE && !more) {
		*piece = jw_take(&a->w, len);
		a->bytes += *len;
		return 1;
	}
	jw_arr_end(&a->w);
	jw_bool(&a->w, "more", more);
	jw_obj_end(&a->w);
	*piece = jw_finish(&a->w, len);
	a->bytes += *len;
	a->done = true;
	return 0;
}

void
api_history_close(struct api_hist *a)
{
	if (a == NULL)
		return;
	if (!a->done)
		jw_discard(&a->w);
	free(a);
}

char *
api_json_history(const struct host *h, uint64_t seconds, uint64_t since,
    bool vms, size_t *len)
{
	struct api_hist	*a = api_history_open(h, seconds, since, vms);
	FILE		*f;
	char		*buf = NULL, *piece;
	size_t		 n;
	int		 rc;

	f = open_memstream(&buf, len);
	if (f == NULL)
		abort();
	do {
		rc = api_history_next(a, &piece, &n);
		fwrite(piece, 1, n, f);
		free(piece);
	} while (rc > 0);
	api_history_close(a);
	if (fclose(f) != 0)
		abort();
	return buf;
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
