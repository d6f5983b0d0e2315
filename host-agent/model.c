/*
 * The state model and the per-period pipeline (see model.h for who writes
 * what).  The registry is a list searched linearly: lookups happen on
 * libvirt events, not per period, and every period walks all VMs anyway.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "model.h"
#include "util.h"

#define DEFAULT_WEIGHT	1024	/* cgroup v1 cpu.shares default */
#define WEIGHT_MAX	10000

TAILQ_HEAD(vm_list, vm);

struct host {
	struct host_params	 params;
	struct host_hooks	 hooks;
	struct vm_list		 vms;
	unsigned int		 nvms;
	struct host_sample	 sample;
	struct policy_summary	 summary;
	uint64_t		 periods;

	/* Per-period scratch, grown as needed. */
	struct policy_vm	*in;
	struct policy_decision	*out;
	struct vm		**inv;
	size_t			 cap;

	/* Rings: head is the next slot to write. */
	struct hist_rec		*hist;
	unsigned int		 hist_cap, hist_len, hist_head;
	struct decision_event	*dec;
	unsigned int		 dec_cap, dec_len, dec_head;
	uint64_t		 dec_seq;
};

static void
model_hist_free(struct host *h)
{
	unsigned int	i;

	for (i = 0; i < h->hist_cap; i++)
		free(h->hist[i].vms);
	free(h->hist);
	h->hist = NULL;
	h->hist_cap = h->hist_len = h->hist_head = 0;
}

/* Resize the rings, keeping the newest entries. */
static void
model_rings_resize(struct host *h, unsigned int hist_cap, unsigned int dec_cap)
{
	struct hist_rec		*nh;
	struct decision_event	*nd;
	unsigned int		 i, keep;

	if (hist_cap < 1)
		hist_cap = 1;
	if (dec_cap < 1)
		dec_cap = 1;
	if (hist_cap != h->hist_cap) {
		nh = xcalloc(hist_cap, sizeof(*nh));
		keep = h->hist_len < hist_cap ? h->hist_len : hist_cap;
		/* Oldest kept first, so the new ring's head follows them. */
		for (i = 0; i < keep; i++) {
			unsigned int src = (h->hist_head + h->hist_cap -
			    keep + i) % h->hist_cap;
			nh[i] = h->hist[src];
			h->hist[src].vms = NULL;
		}
		model_hist_free(h);
		h->hist = nh;
		h->hist_cap = hist_cap;
		h->hist_len = keep;
		h->hist_head = keep % hist_cap;
	}
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
	model_rings_resize(h, p->history, p->decisions);
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
	model_hist_free(h);
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
	model_rings_resize(h, p->history, p->decisions);
}

const struct host_params *
host_params(const struct host *h)
{
	return &h->params;
}

void
host_set_hooks(struct host *h, const struct host_hooks *hooks)
{
	h->hooks = *hooks;
}

struct vm *
host_vm_add(struct host *h, const char *uuid, const char *name)
{
	struct vm	*vm;

	vm = xcalloc(1, sizeof(*vm));
	snprintf(vm->info.uuid, sizeof(vm->info.uuid), "%s", uuid);
	vm->info.name = xstrdup(name);
	vm->info.id = -1;
	vm->meta.valid = true;
	vm->meta.mode = POLICY_MODE_AUTO;
	vm->chan.hint_runnable = -1;
	vm->chan.hint_steal_pct = -1;
	vm->chan.hint_psi = -1;
	policy_state_init(&vm->pstate);
	vm->added_ms = time_mono_ms();
	TAILQ_INSERT_TAIL(&h->vms, vm, entry);
	h->nvms++;
	if (h->hooks.vm_added != NULL)
		h->hooks.vm_added(vm, h->hooks.arg);
	return vm;
}

static void
model_threads_close(struct vm *vm)
{
	unsigned int	i;

	if (vm->thread == NULL)
		return;
	for (i = 0; i < vm->info.nvcpus; i++) {
		if (vm->thread[i].fd >= 0)
			close(vm->thread[i].fd);
		vm->thread[i].fd = -1;
	}
}

void
host_vm_remove(struct host *h, struct vm *vm)
{
	if (h->hooks.vm_removed != NULL)
		h->hooks.vm_removed(vm, h->hooks.arg);
	TAILQ_REMOVE(&h->vms, vm, entry);
	h->nvms--;
	model_threads_close(vm);
	free(vm->thread);
	vm_info_clear(&vm->info);
	free(vm);
}

void
host_vm_changed(struct host *h, struct vm *vm)
{
	if (h->hooks.vm_changed != NULL)
		h->hooks.vm_changed(vm, h->hooks.arg);
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

static void
model_thread_init(struct vm_thread *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

void
vm_set_info(struct vm *vm, struct vm_info *src)
{
	unsigned int	 i, old = vm->info.nvcpus;

	if (src->nvcpus != old) {
		if (vm->thread != NULL) {
			for (i = src->nvcpus; i < old; i++) {
				if (vm->thread[i].fd >= 0)
					close(vm->thread[i].fd);
			}
		}
		vm->thread = xreallocarray(vm->thread,
		    src->nvcpus ? src->nvcpus : 1, sizeof(*vm->thread));
		for (i = old; i < src->nvcpus; i++)
			model_thread_init(&vm->thread[i]);
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
		if (t->fd >= 0)
			close(t->fd);
		model_thread_init(t);
		t->tid = tid;
	}
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

/* The weight a VM competes with: its metadata, else its CPU shares. */
static unsigned int
model_weight(const struct vm *vm)
{
	unsigned int	w;

	if (vm->meta.present && vm->meta.valid && vm->meta.weight > 0)
		return vm->meta.weight;
	w = vm->info.shares ? vm->info.shares : DEFAULT_WEIGHT;
	if (w > WEIGHT_MAX)
		w = WEIGHT_MAX;
	return w;
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
	const struct vm_meta *m = &vm->meta;
	bool		 meta_ok = m->present && m->valid;

	memset(in, 0, sizeof(*in));
	in->name = vm->info.name;
	in->nvcpus = vm->info.nvcpus;
	in->online = vm->info.online;
	in->ncores = vm->info.ncores;
	in->cores = vm->info.core;
	in->core_node = vm->info.core_node;
	model_vm_pcpus(vm, &h->sample.usable, &in->pcpus);
	in->weight = model_weight(vm);
	in->mode = meta_ok ? m->mode : POLICY_MODE_AUTO;
	in->min_cores = meta_ok ? m->min_cores : 0;
	in->max_cores = meta_ok ? m->max_cores : 0;
	if (meta_ok && m->mode == POLICY_MODE_FIXED)
		in->fixed = m->cpus;
	/*
	 * In observe mode nothing is sent, so no agent can follow; decide as
	 * if every VM's agent did, which is what an operator evaluating
	 * prefcpu wants to see.
	 */
	in->steerable = h->params.observe ? true : vm->chan.following;
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

static void
model_record(struct host *h, size_t n, uint64_t now_ms)
{
	struct hist_rec	*r;
	size_t		 i;

	r = &h->hist[h->hist_head];
	free(r->vms);
	memset(r, 0, sizeof(*r));
	r->seq = h->periods;
	r->mono_ms = now_ms;
	r->real_ms = time_real_ms();
	r->capacity = h->sample.capacity;
	r->busy_cpus = h->sample.busy_cpus;
	r->nonvm_cpus = h->sample.nonvm_cpus;
	r->vm_run_cpus = h->sample.vm_run_cpus;
	r->vm_delay_cpus = h->sample.vm_delay_cpus;
	r->psi_some_avg10 = h->sample.psi_some_avg10;
	r->summary = h->summary;
	r->nvms = n;
	r->vms = n ? xcalloc(n, sizeof(*r->vms)) : NULL;
	for (i = 0; i < n; i++) {
		const struct vm			*vm = h->inv[i];
		const struct policy_decision	*d = &h->out[i];
		struct hist_vm			*hv = &r->vms[i];

		snprintf(hv->uuid, sizeof(hv->uuid), "%s", vm->info.uuid);
		snprintf(hv->name, sizeof(hv->name), "%s", vm->info.name);
		hv->run_cpus = h->in[i].run_cpus;
		hv->delay_cpus = h->in[i].delay_cpus;
		hv->demand = d->demand;
		hv->vcpus = cpuset_count(&vm->info.online);
		hv->preferred = d->vcpus;
		hv->cores = d->cores;
		hv->reason = d->reason;
		hv->steerable = h->in[i].steerable;
	}
	h->hist_head = (h->hist_head + 1) % h->hist_cap;
	if (h->hist_len < h->hist_cap)
		h->hist_len++;
}

int
host_period(struct host *h, uint64_t now_ms)
{
	struct policy_host	 ph;
	struct vm		*vm;
	size_t			 n = 0, i;
	char			 err[256];

	model_grow(h, h->nvms ? h->nvms : 1);
	TAILQ_FOREACH(vm, &h->vms, entry) {
		/* Not described yet (its XML is still being read). */
		if (vm->info.nvcpus == 0 || vm->info.ncores == 0)
			continue;
		model_fill_input(h, vm, &h->in[n]);
		h->inv[n++] = vm;
	}
	memset(&ph, 0, sizeof(ph));
	ph.pcpus = h->sample.usable;
	ph.nonvm_cpus = h->sample.nonvm_cpus;
	ph.now_ms = now_ms;
	h->periods++;

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
	if (!h->params.observe && h->hooks.deliver != NULL) {
		for (i = 0; i < n; i++)
			h->hooks.deliver(h->inv[i], &h->out[i], h->hooks.arg);
	}
	model_record(h, n, now_ms);
	return 0;
}

unsigned int
host_history_len(const struct host *h)
{
	return h->hist_len;
}

const struct hist_rec *
host_history(const struct host *h, unsigned int i)
{
	if (i >= h->hist_len)
		return NULL;
	return &h->hist[(h->hist_head + h->hist_cap - 1 - i) % h->hist_cap];
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
