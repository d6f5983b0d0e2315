/*
 * Caps on non-following VMs through libvirt's scheduler parameters.  All
 * of it runs on the daemon's libevent thread, like discovery (virt.c);
 * the libvirt calls run from their own event, never inside the period.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "log.h"
#include "util.h"
#include "vcap.h"
#include "virt.h"

#define VCAP_QUOTA_MIN		1000LL		/* the kernel's least quota, us */
#define VCAP_STATE_MAX		(1U << 20)	/* state file size bound */

/* One VM with a cap set, wanted, or recorded by an earlier run. */
struct vcap_ent {
	char			 uuid[VM_UUID_LEN];
	unsigned long long	 orig_period;	/* 0: not read yet */
	long long		 orig_quota;
	long long		 set_quota;	/* 0: none set by us */
	double			 want_cpus;	/* 0: no cap wanted */
	unsigned int		 nvcpus;	/* online, when wanted */
	bool			 pending;	/* a libvirt call is due */
	bool			 skip;		/* its own quota is lower */
};

struct vcap {
	struct host		*host;
	struct virt		*virt;
	char			*state_path;
	bool			 observe;
	bool			 recovered;	/* earlier run's entries checked */
	struct vcap_ent		*ent;
	size_t			 n, cap;
	struct event		*ev_run;
};

double
vcap_wanted(const struct vm *vm, enum polmeta_enforce dflt, bool observe)
{
	const struct polmeta	*pol = vm_policy(vm);
	unsigned int		 online = cpuset_count(&vm->info.online);
	bool			 follows;

	/* Caps go through libvirt: a VM found through QMP has none. */
	if (observe || vm->source != VM_SRC_LIBVIRT ||
	    polmeta_enforce(pol, dflt) != POLMETA_ENFORCE_CAP ||
	    !vm->decided || !vm->decision.contended || online == 0)
		return 0;
	follows = vm->chan.following && polmeta_mode(pol) != POLICY_MODE_OFF;
	if (follows || vm->decision.fair <= 0 ||
	    vm->decision.fair >= (double)online)
		return 0;
	return vm->decision.fair;
}

long long
vcap_quota(double cpus, unsigned int nvcpus, unsigned long long period_us)
{
	double	q;

	if (nvcpus == 0)
		return 0;
	q = cpus / nvcpus * (double)period_us;
	return q < VCAP_QUOTA_MIN ? VCAP_QUOTA_MIN : (long long)llround(q);
}

static struct vcap_ent *
vcap_find(struct vcap *c, const char *uuid)
{
	size_t	i;

	for (i = 0; i < c->n; i++) {
		if (strcasecmp(c->ent[i].uuid, uuid) == 0)
			return &c->ent[i];
	}
	return NULL;
}

static struct vcap_ent *
vcap_add(struct vcap *c, const char *uuid)
{
	struct vcap_ent	*e;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->ent = xreallocarray(c->ent, c->cap, sizeof(*c->ent));
	}
	e = &c->ent[c->n++];
	memset(e, 0, sizeof(*e));
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
	return e;
}

static void
vcap_drop(struct vcap *c, struct vcap_ent *e)
{
	*e = c->ent[--c->n];
}

/* Write every cap set: "UUID ORIG_PERIOD ORIG_QUOTA SET_QUOTA" lines. */
static void
vcap_save(struct vcap *c)
{
	char	*buf = NULL;
	size_t	 len = 0, i;
	FILE	*fp;

	if ((fp = open_memstream(&buf, &len)) == NULL)
		fatalx("open_memstream: out of memory");
	fprintf(fp, "# prefcpu-hostd vCPU caps: uuid vcpu_period vcpu_quota"
	    " (original) vcpu_quota (set)\n");
	for (i = 0; i < c->n; i++) {
		if (c->ent[i].set_quota != 0)
			fprintf(fp, "%s %llu %lld %lld\n", c->ent[i].uuid,
			    c->ent[i].orig_period, c->ent[i].orig_quota,
			    c->ent[i].set_quota);
	}
	if (fclose(fp) != 0)
		fatalx("open_memstream: out of memory");
	if (file_write_atomic(c->state_path, buf, len, 0600) != 0)
		log_warn("%s: cannot record the caps", c->state_path);
	free(buf);
}

/* Caps an earlier run recorded: taken over as set by us. */
static void
vcap_load(struct vcap *c)
{
	char			 line[256], uuid[VM_UUID_LEN];
	unsigned long long	 period;
	long long		 orig, set;
	struct vcap_ent		*e;
	FILE			*fp;
	unsigned int		 lineno = 0;

	if ((fp = fopen(c->state_path, "re")) == NULL) {
		if (errno != ENOENT)
			log_warn("%s", c->state_path);
		return;
	}
	while (fgets(line, sizeof(line), fp) != NULL && lineno++ < 100000) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%36s %llu %lld %lld", uuid, &period, &orig,
		    &set) != 4 || strlen(uuid) != VM_UUID_LEN - 1 ||
		    strspn(uuid, "0123456789abcdefABCDEF-") != VM_UUID_LEN - 1 ||
		    period == 0 || set < VCAP_QUOTA_MIN || vcap_find(c, uuid)) {
			log_warnx("%s:%u: not a cap record; ignored",
			    c->state_path, lineno);
			continue;
		}
		e = vcap_add(c, uuid);
		e->orig_period = period;
		e->orig_quota = orig;
		e->set_quota = set;
	}
	fclose(fp);
	if (c->n > 0)
		log_notice("%s: %zu vCPU caps set by an earlier run; taking "
		    "them over", c->state_path, c->n);
}

static const char *
vcap_errmsg(void)
{
	const char *m = virGetLastErrorMessage();

	return m != NULL ? m : "unknown libvirt error";
}

/* The VM's live vcpu_period and vcpu_quota; 0 or -1 (err). */
static int
vcap_read(virDomainPtr dom, unsigned long long *period, long long *quota,
    char *err, size_t errlen)
{
	virTypedParameterPtr	 par;
	int			 n = 0, rc = -1;
	char			*type;

	if ((type = virDomainGetSchedulerType(dom, &n)) == NULL || n <= 0) {
		err_set(err, errlen, "scheduler type: %s", vcap_errmsg());
		free(type);
		return -1;
	}
	free(type);
	par = xcalloc((size_t)n, sizeof(*par));
	if (virDomainGetSchedulerParametersFlags(dom, par, &n,
	    VIR_DOMAIN_AFFECT_LIVE) != 0)
		err_set(err, errlen, "scheduler parameters: %s",
		    vcap_errmsg());
	else if (virTypedParamsGetULLong(par, n, VIR_DOMAIN_SCHEDULER_VCPU_PERIOD,
	    period) != 1 || virTypedParamsGetLLong(par, n,
	    VIR_DOMAIN_SCHEDULER_VCPU_QUOTA, quota) != 1)
		err_set(err, errlen, "libvirt reports no vcpu_period and "
		    "vcpu_quota for it");
	else
		rc = 0;
	virTypedParamsClear(par, n);
	free(par);
	return rc;
}

static int
vcap_write(virDomainPtr dom, long long quota, char *err, size_t errlen)
{
	virTypedParameterPtr	par = NULL;
	int			n = 0, max = 0, rc;

	if (virTypedParamsAddLLong(&par, &n, &max,
	    VIR_DOMAIN_SCHEDULER_VCPU_QUOTA, quota) != 0)
		fatalx("virTypedParamsAddLLong: out of memory");
	rc = virDomainSetSchedulerParametersFlags(dom, par, n,
	    VIR_DOMAIN_AFFECT_LIVE);
	if (rc != 0)
		err_set(err, errlen, "setting vcpu_quota %lld: %s", quota,
		    vcap_errmsg());
	virTypedParamsFree(par, n);
	return rc;
}

/* The VM's quota before us, for an unlimited one what libvirt takes. */
static long long
vcap_orig(const struct vcap_ent *e)
{
	return e->orig_quota > 0 ? e->orig_quota : -1;
}

static void
vcap_show(struct vcap *c, const struct vcap_ent *e, const char *error)
{
	struct vm	*vm = host_vm_find(c->host, e->uuid);

	if (vm == NULL)
		return;
	vm->cap.active = e->set_quota != 0;
	vm->cap.cpus = e->set_quota != 0 ? e->want_cpus : 0;
	vm->cap.period_us = e->orig_period;
	vm->cap.quota_us = e->set_quota;
	snprintf(vm->cap.error, sizeof(vm->cap.error), "%s", error);
}

/*
 * Set or lift one entry's cap.  Returns true if the entry is done with
 * (lifted, or gone) and may be dropped.
 */
static bool
vcap_apply(struct vcap *c, struct vcap_ent *e, virConnectPtr conn,
    const char *name)
{
	virDomainPtr		 dom;
	unsigned long long	 period;
	long long		 quota, q;
	char			 err[256] = "";
	bool			 done = false;

	e->pending = false;
	if ((dom = virDomainLookupByUUIDString(conn, e->uuid)) == NULL)
		return true;	/* not running: its live values went with it */
	if (vcap_read(dom, &period, &quota, err, sizeof(err)) != 0)
		goto out;
	if (e->want_cpus <= 0 || e->skip) {
		/* Lift, unless someone else changed it since. */
		if (e->set_quota != 0 && quota == e->set_quota &&
		    vcap_write(dom, vcap_orig(e), err, sizeof(err)) != 0)
			goto out;
		if (e->set_quota != 0 && quota != e->set_quota)
			log_notice("domain %s: vcpu_quota is %lld, not the "
			    "%lld prefcpu set: left alone", name, quota,
			    e->set_quota);
		else if (e->set_quota != 0)
			log_notice("domain %s: vCPU cap lifted (vcpu_quota "
			    "%lld again)", name, vcap_orig(e));
		e->set_quota = 0;
		done = e->want_cpus <= 0;
		goto out;
	}
	if (e->set_quota == 0) {
		e->orig_period = period;
		e->orig_quota = quota;
	} else if (quota != e->set_quota) {
		log_notice("domain %s: vcpu_quota is %lld, not the %lld "
		    "prefcpu set: taking it as the original", name, quota,
		    e->set_quota);
		e->orig_period = period;
		e->orig_quota = quota;
		e->set_quota = 0;
	}
	q = vcap_quota(e->want_cpus, e->nvcpus, period);
	if (e->orig_quota > 0 && e->orig_quota <= q) {
		/* The operator's own cap is at least as tight. */
		e->skip = true;
		goto out;
	}
	if (vcap_write(dom, q, err, sizeof(err)) != 0)
		goto out;
	if (e->set_quota == 0)
		log_notice("domain %s: does not follow; vCPUs capped at %.2f "
		    "CPUs (vcpu_quota %lld of vcpu_period %llu us)", name,
		    e->want_cpus, q, period);
	e->set_quota = q;
out:
	if (err[0] != '\0') {
		struct vm *vm = host_vm_find(c->host, e->uuid);

		/* Tried again next period; logged once per distinct cause. */
		if (vm == NULL || strcmp(vm->cap.error, err) != 0)
			log_warnx("domain %s: vCPU cap: %s", name, err);
		if (e->set_quota == 0)
			e->want_cpus = 0;
	}
	virDomainFree(dom);
	vcap_show(c, e, err);
	return done;
}

/* Run the due libvirt calls, a few per loop iteration. */
static void
vcap_run(evutil_socket_t fd, short what, void *arg)
{
	struct vcap	*c = arg;
	virConnectPtr	 conn = virt_conn(c->virt);
	struct vm	*vm;
	char		 name[VM_NAME_LEN * 4];
	unsigned int	 calls = 0;
	uint64_t	 t0, ms;
	size_t		 i;
	bool		 changed = false;

	if (conn == NULL)
		return;		/* the next period tries again */
	for (i = 0; i < c->n && calls < VCAP_CALLS_PER_RUN; ) {
		struct vcap_ent	*e = &c->ent[i];
		long long	 before = e->set_quota;

		if (!e->pending) {
			i++;
			continue;
		}
		vm = host_vm_find(c->host, e->uuid);
		str_escape(name, sizeof(name), vm != NULL ? vm->info.name :
		    e->uuid, strlen(vm != NULL ? vm->info.name : e->uuid));
		calls++;
		t0 = time_mono_ms();
		if (vcap_apply(c, e, conn, name)) {
			vcap_drop(c, e);
			changed = true;
		} else {
			changed |= e->set_quota != before;
			i++;
		}
		if ((ms = time_mono_ms() - t0) > VCAP_SLOW_MS)
			log_warnx("domain %s: vCPU cap: libvirt took %llu ms",
			    name, (unsigned long long)ms);
	}
	if (changed)
		vcap_save(c);
	for (i = 0; i < c->n; i++) {
		if (c->ent[i].pending) {
			event_active(c->ev_run, EV_TIMEOUT, 0);
			break;
		}
	}
}

/* One VM after a period: what should change. */
static void
vcap_vm(struct vcap *c, struct vm *vm)
{
	struct vcap_ent	*e = vcap_find(c, vm->info.uuid);
	unsigned int	 online = cpuset_count(&vm->info.online);
	double		 want;

	if (!vm->decided)
		return;		/* no decision yet: keep what is (re-owned) */
	want = vcap_wanted(vm, host_params(c->host)->enforce, c->observe);
	if (want <= 0) {
		if (e != NULL && (e->set_quota != 0 || e->want_cpus > 0)) {
			e->want_cpus = 0;
			e->skip = false;
			e->pending = true;
		} else if (e != NULL && !e->pending)
			vcap_drop(c, e);
		return;
	}
	if (e == NULL)
		e = vcap_add(c, vm->info.uuid);
	/* Set again only when the share moved by more than the band. */
	if (e->want_cpus > 0 && e->nvcpus == online &&
	    fabs(want - e->want_cpus) <= VCAP_BAND * e->want_cpus)
		return;
	e->want_cpus = want;
	e->nvcpus = online;
	e->skip = false;
	e->pending = true;
}

/* The model's period_end hook: compare wanted and set caps. */
static void
vcap_period(void *arg)
{
	struct vcap	*c = arg;
	struct vm	*vm;
	size_t		 i;
	bool		 connected = virt_conn(c->virt) != NULL;

	HOST_FOREACH_VM(vm, c->host)
		vcap_vm(c, vm);
	/*
	 * Entries of VMs that are not running (discovery lists them all on
	 * connecting): their live values went with them, nothing to lift.
	 */
	for (i = 0; connected && i < c->n; ) {
		if (host_vm_find(c->host, c->ent[i].uuid) == NULL) {
			vcap_drop(c, &c->ent[i]);
			continue;
		}
		i++;
	}
	if (connected && !c->recovered) {
		c->recovered = true;
		vcap_save(c);
	}
	for (i = 0; i < c->n; i++) {
		if (c->ent[i].pending) {
			event_active(c->ev_run, EV_TIMEOUT, 0);
			break;
		}
	}
}

unsigned int
vcap_lift_all(struct vcap *c)
{
	virConnectPtr	 conn = virt_conn(c->virt);
	unsigned int	 left = 0;
	char		 name[VM_NAME_LEN * 4];
	struct vm	*vm;
	size_t		 i;

	for (i = 0; i < c->n; ) {
		struct vcap_ent *e = &c->ent[i];

		if (e->set_quota == 0) {
			vcap_drop(c, e);
			continue;
		}
		if (conn == NULL) {
			left++;
			i++;
			continue;
		}
		vm = host_vm_find(c->host, e->uuid);
		str_escape(name, sizeof(name), vm != NULL ? vm->info.name :
		    e->uuid, strlen(vm != NULL ? vm->info.name : e->uuid));
		e->want_cpus = 0;
		if (vcap_apply(c, e, conn, name))
			vcap_drop(c, e);
		else {
			left++;
			i++;
		}
	}
	vcap_save(c);
	if (left > 0)
		log_warnx("%u vCPU caps could not be lifted; recorded in %s "
		    "for the next start", left, c->state_path);
	return left;
}

struct vcap *
vcap_new(struct event_base *base, struct host *host, struct virt *virt,
    const char *state_path, bool observe)
{
	struct vcap		*c = xcalloc(1, sizeof(*c));
	struct host_hooks	 hooks;

	c->host = host;
	c->virt = virt;
	c->observe = observe;
	c->state_path = xstrdup(state_path);
	if ((c->ev_run = event_new(base, -1, 0, vcap_run, c)) == NULL)
		fatalx("libevent: cannot create the cap event");
	/* Re-owned caps are kept or lifted after the VM's first decision. */
	vcap_load(c);
	memset(&hooks, 0, sizeof(hooks));
	hooks.period_end = vcap_period;
	hooks.arg = c;
	host_add_hooks(host, &hooks);
	return c;
}

void
vcap_set_observe(struct vcap *c, bool observe)
{
	c->observe = observe;
}

void
vcap_free(struct vcap *c)
{
	if (c == NULL)
		return;
	host_remove_hooks(c->host, c);
	event_free(c->ev_run);
	free(c->state_path);
	free(c->ent);
	free(c);
}
