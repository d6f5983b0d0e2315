/*
 * The state model and the per-period pipeline (see model.h for who writes
 * what).  The registry is a list searched linearly: lookups happen on
 * libvirt events, not per period, and every period walks all VMs anyway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "model.h"
#include "util.h"


TAILQ_HEAD(vm_list, vm);

/* A ring of history records; head is the next slot to write. */
struct hist_ring {
	struct hist_rec		*r;
	unsigned int		 cap, len, head;
};

struct hist_name {
	char			 uuid[VM_UUID_LEN];
	char			*name;
	uint32_t		 refs;
};

/* One VM's sums while merging records. */
struct hist_acc {
	uint64_t		 gen;		/* the merge that last used it */
	double			 run, delay, demand;
	unsigned int		 n;
	struct hist_vm		 last;
};

struct host {
	struct host_params	 params;
	struct host_hooks	 hooks[HOST_HOOKS_MAX];
	unsigned int		 nhooks;
	struct vm_list		 vms;
	unsigned int		 nvms;
	struct host_sample	 sample;
	struct policy_summary	 summary;
	uint64_t		 periods;
	uint64_t		 vm_gen;	/* VMs added or removed */
	struct host_totals	 totals;
	uint64_t		 errors_seen;	/* violations summed at the last count */

	/* Per-period scratch, grown as needed. */
	struct policy_vm	*in;
	struct policy_decision	*out;
	struct vm		**inv;
	size_t			 cap;

	/*
	 * History: the newest periods one by one (full), older ones merged
	 * HIST_MERGE to a record (merged).  Records name their VMs by an
	 * entry of the name table, counted by every record and VM using it.
	 */
	struct hist_ring	 full, merged;
	struct hist_name	*names;
	uint32_t		 names_len, names_cap;
	uint32_t		*names_free;	/* unused entries */
	uint32_t		 nfree;
	struct hist_acc		*acc;		/* merge scratch, per entry */
	uint32_t		*acc_ids;
	uint32_t		 acc_cap;
	uint64_t		 acc_gen;

	/* Decision ring: head is the next slot to write. */
	struct decision_event	*dec;
	unsigned int		 dec_cap, dec_len, dec_head;
	uint64_t		 dec_seq;
};

static void
model_name_unref(struct host *h, uint32_t id)
{
	struct hist_name	*e = &h->names[id];

	if (--e->refs > 0)
		return;
	free(e->name);
	e->name = NULL;
	h->names_free[h->nfree++] = id;
}

/* Take a reference on a VM's name table entry, creating it if needed. */
static uint32_t
model_name_ref(struct host *h, struct vm *vm)
{
	struct hist_name	*e;
	uint32_t		 id;

	if (vm->hist_id != 0) {
		e = &h->names[vm->hist_id - 1];
		/* A running domain keeps its name; should it change, a new one. */
		if (strcmp(e->name, vm->info.name) == 0 &&
		    strcmp(e->uuid, vm->info.uuid) == 0) {
			e->refs++;
			return vm->hist_id - 1;
		}
		vm->hist_id = 0;
		model_name_unref(h, (uint32_t)(e - h->names));
	}
	if (h->nfree > 0)
		id = h->names_free[--h->nfree];
	else {
		if (h->names_len == h->names_cap) {
			h->names_cap = h->names_cap ? h->names_cap * 2 : 64;
			h->names = xreallocarray(h->names, h->names_cap,
			    sizeof(*h->names));
			h->names_free = xreallocarray(h->names_free,
			    h->names_cap, sizeof(*h->names_free));
		}
		id = h->names_len++;
	}
	e = &h->names[id];
	snprintf(e->uuid, sizeof(e->uuid), "%s", vm->info.uuid);
	e->name = xstrdup(vm->info.name);
	e->refs = 2;		/* the VM's and the caller's */
	vm->hist_id = id + 1;
	return id;
}

/* Free what a record owns, dropping its name references. */
static void
model_rec_clear(struct host *h, struct hist_rec *r)
{
	unsigned int	i;

	for (i = 0; i < r->nvms; i++)
		model_name_unref(h, r->vms[i].id);
	free(r->vms);
	memset(r, 0, sizeof(*r));
}

/* Record i of a ring, newest first. */
static struct hist_rec *
model_ring_at(const struct hist_ring *g, unsigned int i)
{
	return &g->r[(g->head + g->cap - 1 - i) % g->cap];
}

/* Drop the oldest n records. */
static void
model_ring_drop(struct host *h, struct hist_ring *g, unsigned int n)
{
	while (n-- > 0 && g->len > 0)
		model_rec_clear(h, model_ring_at(g, --g->len));
}

/* A cleared slot for a new record, dropping the oldest if full. */
static struct hist_rec *
model_ring_push(struct host *h, struct hist_ring *g)
{
	struct hist_rec	*r = &g->r[g->head];

	model_rec_clear(h, r);
	g->head = (g->head + 1) % g->cap;
	if (g->len < g->cap)
		g->len++;
	return r;
}

/* Resize a ring (cap may be 0), keeping its newest records. */
static void
model_ring_resize(struct host *h, struct hist_ring *g, unsigned int cap)
{
	struct hist_rec	*nr;
	unsigned int	 i, keep;

	if (cap == g->cap)
		return;
	if (g->len > cap)
		model_ring_drop(h, g, g->len - cap);
	keep = g->len;
	nr = cap ? xcalloc(cap, sizeof(*nr)) : NULL;
	/* Oldest first, so the new ring's head follows them. */
	for (i = 0; i < keep; i++)
		nr[i] = *model_ring_at(g, keep - 1 - i);
	free(g->r);
	g->r = nr;
	g->cap = cap;
	g->len = keep;
	g->head = cap ? keep % cap : 0;
}

/*
 * Ring sizes for p: the full ring holds history_full periods plus the
 * HIST_MERGE that are merged once they are all there; the merged ring
 * covers the rest of the history.
 */
static void
model_hist_caps(const struct host_params *p, unsigned int *full,
    unsigned int *merged)
{
	unsigned int	hist = p->history ? p->history : 1;

	if (p->history_full == 0 || p->history_full >= hist) {
		*full = hist;
		*merged = 0;
		return;
	}
	*full = p->history_full + HIST_MERGE;
	*merged = (hist - p->history_full + HIST_MERGE - 1) / HIST_MERGE;
}

/* Resize the rings, keeping the newest entries. */
static void
model_rings_resize(struct host *h, unsigned int dec_cap)
{
	struct decision_event	*nd;
	unsigned int		 i, keep, full, merged;

	model_hist_caps(&h->params, &full, &merged);
	model_ring_resize(h, &h->full, full);
	model_ring_resize(h, &h->merged, merged);
	if (dec_cap < 1)
		dec_cap = 1;
	if (dec_cap != h->dec_cap) {
		nd = xcalloc(dec_cap, sizeof(*nd));
		keep = h->dec_len < dec_cap ? h->dec_len : dec_cap;
		for (i = 0; i < keep; i++)
			nd[i] = h->dec[(h->dec_head + h->dec_cap - keep + i) %
			    h->dec_cap];
		free(h->dec);
		h->dec = nd;
		h->dec_cap = dec_cap;
		h->dec_len = keep;
		h->dec_head = keep % dec_cap;
	}
}

struct host *
host_new(const struct host_params *p)
{
	struct host	*h;

	h = xcalloc(1, sizeof(*h));
	TAILQ_INIT(&h->vms);
	h->params = *p;
	h->sample.psi_some_avg10 = -1;
	h->sample.psi_full_avg10 = -1;
	h->sample.usable_from = "none";
	model_rings_resize(h, p->decisions);
	return h;
}

void
host_free(struct host *h)
{
	struct vm	*vm;

	if (h == NULL)
		return;
	while ((vm = TAILQ_FIRST(&h->vms)) != NULL)
		host_vm_remove(h, vm);
	model_ring_resize(h, &h->full, 0);
	model_ring_resize(h, &h->merged, 0);
	free(h->names);
	free(h->names_free);
	free(h->acc);
	free(h->acc_ids);
	free(h->dec);
	free(h->in);
	free(h->out);
	free(h->inv);
	free(h);
}

void
host_set_params(struct host *h, const struct host_params *p)
{
	h->params = *p;
	model_rings_resize(h, p->decisions);
}

const struct host_params *
host_params(const struct host *h)
{
	return &h->params;
}

void
host_add_hooks(struct host *h, const struct host_hooks *hooks)
{
	if (h->nhooks == HOST_HOOKS_MAX)
		fatalx("more than %d sets of model hooks", HOST_HOOKS_MAX);
	h->hooks[h->nhooks++] = *hooks;
}

void
host_remove_hooks(struct host *h, const void *arg)
{
	unsigned int	i;

	for (i = 0; i < h->nhooks; i++) {
		if (h->hooks[i].arg != arg)
			continue;
		memmove(&h->hooks[i], &h->hooks[i + 1],
		    (h->nhooks - i - 1) * sizeof(h->hooks[0]));
		h->nhooks--;
		return;
	}
}

/* Call hook member m of every set with the VM. */
#define MODEL_HOOKS(h, m, vm) do {					\
	unsigned int hk_;						\
	for (hk_ = 0; hk_ < (h)->nhooks; hk_++)				\
		if ((h)->hooks[hk_].m != NULL)				\
			(h)->hooks[hk_].m((vm), (h)->hooks[hk_].arg);	\
} while (0)

struct vm *
host_vm_add(struct host *h, const char *uuid, const char *name)
{
	struct vm	*vm;

	vm = xcalloc(1, sizeof(*vm));
	snprintf(vm->info.uuid, sizeof(vm->info.uuid), "%s", uuid);
	vm->info.name = xstrdup(name);
	vm->info.id = -1;
	vm->meta.valid = true;
	polmeta_init(&vm->meta.pol);
	vm->chan.hint_runnable = -1;
	vm->chan.hint_steal_pct = -1;
	vm->chan.hint_psi = -1;
	policy_state_init(&vm->pstate);
	vm->added_ms = time_mono_ms();
	TAILQ_INSERT_TAIL(&h->vms, vm, entry);
	h->nvms++;
	h->vm_gen++;
	MODEL_HOOKS(h, vm_added, vm);
	return vm;
}

/* A VM's protocol violations, summed over their kinds. */
static uint64_t
model_vm_errors(const struct vm *vm)
{
	return vm->chan.err_decode + vm->chan.err_overlong +
	    vm->chan.err_rate + vm->chan.err_protocol;
}

/* The protocol violations of the VMs tracked now. */
static uint64_t
model_errors_now(const struct host *h)
{
	const struct vm	*vm;
	uint64_t	 errs = 0;

	TAILQ_FOREACH(vm, &h->vms, entry)
		errs += model_vm_errors(vm);
	return errs;
}

/*
 * Add the protocol violations since the last count to the total.  A drop
 * of the sum is a VM leaving, not errors going away.
 */
static void
model_count_errors(struct host *h)
{
	uint64_t	errs = model_errors_now(h);

	if (errs > h->errors_seen)
		h->totals.proto_errors += errs - h->errors_seen;
	h->errors_seen = errs;
}

void
host_vm_remove(struct host *h, struct vm *vm)
{
	/* Its violations since the last period still count. */
	model_count_errors(h);
	h->errors_seen -= model_vm_errors(vm);
	MODEL_HOOKS(h, vm_removed, vm);
	TAILQ_REMOVE(&h->vms, vm, entry);
	h->nvms--;
	h->vm_gen++;
	if (vm->hist_id != 0)
		model_name_unref(h, vm->hist_id - 1);
	free(vm->thread);
	vm_info_clear(&vm->info);
	free(vm);
}

void
host_vm_changed(struct host *h, struct vm *vm)
{
	MODEL_HOOKS(h, vm_changed, vm);
}

struct vm *
host_vm_find(const struct host *h, const char *uuid)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &h->vms, entry) {
		if (strcasecmp(vm->info.uuid, uuid) == 0)
			return vm;
	}
	return NULL;
}

struct vm *
host_vm_find_name(const struct host *h, const char *name)
{
	struct vm	*vm;

	TAILQ_FOREACH(vm, &h->vms, entry) {
		if (strcmp(vm->info.name, name) == 0)
			return vm;
	}
	return NULL;
}

unsigned int
host_nvms(const struct host *h)
{
	return h->nvms;
}

struct vm *
host_vm_first(const struct host *h)
{
	return TAILQ_FIRST(&h->vms);
}

struct vm *
host_vm_next(const struct vm *vm)
{
	return TAILQ_NEXT(vm, entry);
}

void
vm_info_clear(struct vm_info *info)
{
	free(info->name);
	free(info->core);
	free(info->core_node);
	free(info->node);
	free(info->vcpupin);
	free(info->channel);
	memset(info, 0, sizeof(*info));
}

void
vm_set_info(struct vm *vm, struct vm_info *src)
{
	unsigned int	 old = vm->info.nvcpus;

	if (src->nvcpus != old) {
		vm->thread = xreallocarray(vm->thread,
		    src->nvcpus ? src->nvcpus : 1, sizeof(*vm->thread));
		if (src->nvcpus > old)
			memset(&vm->thread[old], 0, (src->nvcpus - old) *
			    sizeof(*vm->thread));
	}
	vm_info_clear(&vm->info);
	vm->info = *src;
	memset(src, 0, sizeof(*src));
}

void
vm_set_threads(struct vm *vm, pid_t pid, const pid_t *tids, unsigned int n,
    enum vm_tid_source source)
{
	unsigned int	 i;
	struct vm_thread *t;

	vm->pid = pid;
	vm->tid_source = source;
	for (i = 0; i < vm->info.nvcpus; i++) {
		t = &vm->thread[i];
		pid_t tid = i < n ? tids[i] : 0;
		if (t->tid == tid)
			continue;
		memset(t, 0, sizeof(*t));
		t->tid = tid;
	}
}

const char *
vm_source_name(enum vm_source s)
{
	return s == VM_SRC_QMP ? "qmp" : "libvirt";
}

const char *
vm_tid_source_name(enum vm_tid_source s)
{
	static const char *const names[] = {
		[VM_TID_NONE] = "none",
		[VM_TID_STATUS_XML] = "status-xml",
		[VM_TID_COMM] = "thread-names",
		[VM_TID_QMP] = "qmp",
	};

	if ((size_t)s >= nitems(names))
		return "?";
	return names[s];
}

struct host_sample *
host_sample_mut(struct host *h)
{
	return &h->sample;
}

const struct host_sample *
host_sample(const struct host *h)
{
	return &h->sample;
}

const struct policy_summary *
host_summary(const struct host *h)
{
	return &h->summary;
}

uint64_t
host_periods(const struct host *h)
{
	return h->periods;
}

uint64_t
host_vm_gen(const struct host *h)
{
	return h->vm_gen;
}

const struct polmeta *
vm_policy(const struct vm *vm)
{
	return vm->meta.present && vm->meta.valid ? &vm->meta.pol : NULL;
}

/*
 * The host CPUs a VM's vCPU threads may use: the union of its vCPU pins
 * within the usable set, or the whole usable set when any online vCPU is
 * not pinned.
 */
static void
model_vm_pcpus(const struct vm *vm, const struct cpuset *usable,
    struct cpuset *out)
{
	struct cpuset	u;
	int		c;

	if (vm->info.vcpupin == NULL) {
		*out = *usable;
		return;
	}
	cpuset_zero(&u);
	CPUSET_FOREACH(c, &vm->info.online) {
		if ((unsigned int)c >= vm->info.nvcpus ||
		    cpuset_empty(&vm->info.vcpupin[c])) {
			*out = *usable;
			return;
		}
		cpuset_or(&u, &u, &vm->info.vcpupin[c]);
	}
	cpuset_and(out, &u, usable);
	if (cpuset_empty(out))
		*out = *usable;
}

static void
model_fill_input(const struct host *h, struct vm *vm, struct policy_vm *in)
{
	const struct polmeta *pol = vm_policy(vm);

	memset(in, 0, sizeof(*in));
	in->name = vm->info.name;
	in->nvcpus = vm->info.nvcpus;
	in->online = vm->info.online;
	in->ncores = vm->info.ncores;
	in->cores = vm->info.core;
	in->core_node = vm->info.core_node;
	model_vm_pcpus(vm, &h->sample.usable, &in->pcpus);
	in->weight = polmeta_weight(pol, vm->info.shares);
	in->mode = polmeta_mode(pol);
	in->min_cores = polmeta_min_cores(pol);
	in->max_cores = polmeta_max_cores(pol);
	if (in->mode == POLICY_MODE_FIXED)
		in->fixed = pol->cpus;
	/*
	 * In observe mode nothing is sent, so no agent can follow; decide as
	 * if every VM's agent did, which is what an operator evaluating
	 * prefcpu wants to see.
	 */
	in->steerable = h->params.observe ? true : vm->chan.following;
	in->unmeasured = !vm->sample.valid;
	in->run_cpus = vm->sample.valid ? vm->sample.run_cpus : 0;
	in->delay_cpus = vm->sample.valid ? vm->sample.delay_cpus : 0;
	in->hint_runnable = vm->chan.hello ? vm->chan.hint_runnable : -1;
	in->state = &vm->pstate;
}

static void
model_grow(struct host *h, size_t n)
{
	if (n <= h->cap)
		return;
	h->in = xreallocarray(h->in, n, sizeof(*h->in));
	h->out = xreallocarray(h->out, n, sizeof(*h->out));
	h->inv = xreallocarray(h->inv, n, sizeof(*h->inv));
	h->cap = n;
}

static void
model_log_change(struct host *h, struct vm *vm, const struct policy_decision *d,
    uint64_t now_ms)
{
	struct decision_event	*ev;
	char			 name[VM_NAME_LEN * 4], from[256], to[256];

	ev = &h->dec[h->dec_head];
	memset(ev, 0, sizeof(*ev));
	ev->seq = ++h->dec_seq;
	ev->mono_ms = now_ms;
	ev->real_ms = time_real_ms();
	snprintf(ev->uuid, sizeof(ev->uuid), "%s", vm->info.uuid);
	snprintf(ev->name, sizeof(ev->name), "%s", vm->info.name);
	if (vm->decided)
		ev->from = vm->decision.preferred;
	else
		cpuset_zero(&ev->from);
	ev->to = d->preferred;
	ev->reason = d->reason;
	snprintf(ev->why, sizeof(ev->why), "%s", d->why);
	h->dec_head = (h->dec_head + 1) % h->dec_cap;
	if (h->dec_len < h->dec_cap)
		h->dec_len++;

	str_escape(name, sizeof(name), vm->info.name, strlen(vm->info.name));
	if (!vm->decided)
		snprintf(from, sizeof(from), "none");
	else if (cpuset_format(&ev->from, from, sizeof(from)) < 0)
		snprintf(from, sizeof(from), "(%u vCPUs)",
		    cpuset_count(&ev->from));
	if (cpuset_format(&ev->to, to, sizeof(to)) < 0)
		snprintf(to, sizeof(to), "(%u vCPUs)", cpuset_count(&ev->to));
	log_notice("domain %s: preferred %s -> %s (%s: %s)%s", name, from, to,
	    policy_reason_name(d->reason), d->why,
	    h->params.observe ? " [observe]" : "");
}

/* Merge the oldest HIST_MERGE records of the full ring into one. */
static void
model_merge(struct host *h)
{
	struct hist_ring	*g = &h->full;
	struct hist_rec		 m, *src, *dst;
	struct hist_acc		*a;
	unsigned int		 i, j, k, n = 0, periods = 0;

	if (h->acc_cap < h->names_len) {
		h->acc = xreallocarray(h->acc, h->names_cap, sizeof(*h->acc));
		h->acc_ids = xreallocarray(h->acc_ids, h->names_cap,
		    sizeof(*h->acc_ids));
		memset(h->acc + h->acc_cap, 0,
		    (h->names_cap - h->acc_cap) * sizeof(*h->acc));
		h->acc_cap = h->names_cap;
	}
	h->acc_gen++;
	memset(&m, 0, sizeof(m));
	/* Oldest first: the newest period's counts and reasons win. */
	for (k = 0; k < HIST_MERGE; k++) {
		src = model_ring_at(g, g->len - 1 - k);
		periods += src->periods;
		m.seq = src->seq;
		m.mono_ms = src->mono_ms;
		m.real_ms = src->real_ms;
		m.summary = src->summary;
		m.capacity += src->capacity * src->periods;
		m.busy_cpus += src->busy_cpus * src->periods;
		m.nonvm_cpus += src->nonvm_cpus * src->periods;
		m.vm_run_cpus += src->vm_run_cpus * src->periods;
		m.vm_delay_cpus += src->vm_delay_cpus * src->periods;
		m.psi_some_avg10 = src->psi_some_avg10;
		for (i = 0; i < src->nvms; i++) {
			const struct hist_vm *hv = &src->vms[i];

			a = &h->acc[hv->id];
			if (a->gen != h->acc_gen) {
				h->acc_ids[n++] = hv->id;
				memset(a, 0, sizeof(*a));
				a->gen = h->acc_gen;
			}
			a->run += hv->run_cpus;
			a->delay += hv->delay_cpus;
			a->demand += hv->demand;
			a->n++;
			a->last = *hv;
		}
	}
	m.periods = periods;
	m.capacity /= periods;
	m.busy_cpus /= periods;
	m.nonvm_cpus /= periods;
	m.vm_run_cpus /= periods;
	m.vm_delay_cpus /= periods;
	m.nvms = n;
	m.vms = n ? xcalloc(n, sizeof(*m.vms)) : NULL;
	for (j = 0; j < n; j++) {
		a = &h->acc[h->acc_ids[j]];
		m.vms[j] = a->last;
		m.vms[j].run_cpus = (float)(a->run / a->n);
		m.vms[j].delay_cpus = (float)(a->delay / a->n);
		m.vms[j].demand = (float)(a->demand / a->n);
		h->names[h->acc_ids[j]].refs++;
	}
	model_ring_drop(h, g, HIST_MERGE);
	dst = model_ring_push(h, &h->merged);
	*dst = m;
}

static uint16_t
model_u16(unsigned int v)
{
	return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

static void
model_record(struct host *h, size_t n, uint64_t now_ms)
{
	struct hist_rec	*r;
	size_t		 i;

	r = model_ring_push(h, &h->full);
	r->seq = h->periods;
	r->periods = 1;
	r->mono_ms = now_ms;
	r->real_ms = time_real_ms();
	r->capacity = h->sample.capacity;
	r->busy_cpus = h->sample.busy_cpus;
	r->nonvm_cpus = h->sample.nonvm_cpus;
	r->vm_run_cpus = h->sample.vm_run_cpus;
	r->vm_delay_cpus = h->sample.vm_delay_cpus;
	r->psi_some_avg10 = h->sample.psi_some_avg10;
	r->summary = h->summary;
	r->vms = n ? xcalloc(n, sizeof(*r->vms)) : NULL;
	for (i = 0; i < n; i++) {
		struct vm			*vm = h->inv[i];
		const struct policy_decision	*d = &h->out[i];
		struct hist_vm			*hv = &r->vms[i];

		hv->id = model_name_ref(h, vm);
		r->nvms++;
		hv->run_cpus = (float)h->in[i].run_cpus;
		hv->delay_cpus = (float)h->in[i].delay_cpus;
		hv->demand = (float)d->demand;
		hv->vcpus = model_u16(cpuset_count(&vm->info.online));
		hv->preferred = model_u16(d->vcpus);
		hv->cores = model_u16(d->cores);
		hv->reason = (uint8_t)d->reason;
		hv->steerable = h->in[i].steerable;
	}
	if (h->merged.cap > 0 && h->full.len == h->full.cap)
		model_merge(h);
}

int
host_vm_adopt(struct host *h, struct vm *vm, const struct cpuset *set)
{
	const struct vm_info	*vi = &vm->info;
	struct cpuset		 on, x;
	unsigned int		 k, cores = 0;

	if (h->params.observe || vm->pstate.init || vi->ncores == 0 ||
	    cpuset_empty(set) || !cpuset_subset(set, &vi->online) ||
	    cpuset_equal(set, &vi->online))
		return -1;
	for (k = 0; k < vi->ncores; k++) {
		cpuset_and(&on, &vi->core[k], &vi->online);
		cpuset_and(&x, &on, set);
		if (cpuset_empty(&x))
			continue;
		if (!cpuset_equal(&x, &on))
			return -1;	/* part of a core */
		cores++;
	}
	return policy_state_adopt(&vm->pstate, &h->params.policy, set, cores);
}

/* The policy's inputs: the VMs described so far, in h->in and h->inv. */
static size_t
model_inputs(struct host *h)
{
	struct vm	*vm;
	size_t		 n = 0;

	model_grow(h, h->nvms ? h->nvms : 1);
	TAILQ_FOREACH(vm, &h->vms, entry) {
		/* Not described yet (its XML is still being read). */
		if (vm->info.nvcpus == 0 || vm->info.ncores == 0)
			continue;
		model_fill_input(h, vm, &h->in[n]);
		h->inv[n++] = vm;
	}
	return n;
}

/* The running totals: this period's run and delay, and the violations. */
static void
model_totals(struct host *h)
{
	const struct host_sample *hs = &h->sample;

	if (hs->valid) {
		h->totals.run_s += hs->vm_run_cpus * hs->period_s;
		h->totals.delay_s += hs->vm_delay_cpus * hs->period_s;
	}
	model_count_errors(h);
}

/* Decide, and log each change; -1 if the policy refused its inputs. */
static int
model_decide(struct host *h, size_t n, uint64_t now_ms)
{
	struct policy_host	 ph;
	struct vm		*vm;
	size_t			 i;
	char			 err[256];

	memset(&ph, 0, sizeof(ph));
	ph.pcpus = h->sample.usable;
	ph.nonvm_cpus = h->sample.nonvm_cpus;
	ph.now_ms = now_ms;
	if (policy_decide(&h->params.policy, &ph, h->in, n, h->out,
	    &h->summary, err, sizeof(err)) != 0) {
		log_warnx("period %llu: policy refused its inputs: %s",
		    (unsigned long long)h->periods, err);
		return -1;
	}
	for (i = 0; i < n; i++) {
		vm = h->inv[i];
		if (h->out[i].changed || !vm->decided)
			model_log_change(h, vm, &h->out[i], now_ms);
		vm->decision = h->out[i];
		vm->decided = true;
	}
	return 0;
}

/* Hand every decision to the deliver hooks (never in observe mode). */
static void
model_deliver(struct host *h, size_t n)
{
	unsigned int	k;
	size_t		i;

	for (k = 0; !h->params.observe && k < h->nhooks; k++) {
		if (h->hooks[k].deliver == NULL)
			continue;
		for (i = 0; i < n; i++)
			h->hooks[k].deliver(h->inv[i], &h->out[i],
			    h->hooks[k].arg);
	}
}

int
host_period(struct host *h, uint64_t now_ms)
{
	size_t		n;
	unsigned int	k;
	int		rc;

	n = model_inputs(h);
	h->periods++;
	model_totals(h);
	rc = model_decide(h, n, now_ms);
	if (rc == 0) {
		model_record(h, n, now_ms);
		model_deliver(h, n);
	}
	/* Publish: the period is over for every module that follows it. */
	for (k = 0; k < h->nhooks; k++) {
		if (h->hooks[k].period_end != NULL)
			h->hooks[k].period_end(h->hooks[k].arg);
	}
	return rc;
}

const struct host_totals *
host_totals(const struct host *h)
{
	return &h->totals;
}

uint64_t
host_proto_errors(const struct host *h)
{
	uint64_t	errs = model_errors_now(h);

	return h->totals.proto_errors + (errs > h->errors_seen ?
	    errs - h->errors_seen : 0);
}

unsigned int
host_history_len(const struct host *h)
{
	return h->full.len + h->merged.len;
}

const struct hist_rec *
host_history(const struct host *h, unsigned int i)
{
	if (i < h->full.len)
		return model_ring_at(&h->full, i);
	i -= h->full.len;
	if (i < h->merged.len)
		return model_ring_at(&h->merged, i);
	return NULL;
}

const char *
host_hist_name(const struct host *h, const struct hist_vm *hv)
{
	return h->names[hv->id].name;
}

const char *
host_hist_uuid(const struct host *h, const struct hist_vm *hv)
{
	return h->names[hv->id].uuid;
}

unsigned int
host_decisions_len(const struct host *h)
{
	return h->dec_len;
}

const struct decision_event *
host_decision(const struct host *h, unsigned int i)
{
	if (i >= h->dec_len)
		return NULL;
	return &h->dec[(h->dec_head + h->dec_cap - 1 - i) % h->dec_cap];
}
