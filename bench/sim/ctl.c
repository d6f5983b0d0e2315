/*
 * Policies.  Each keeps its own per-VM state and writes preferred sets
 * into the simulation the way a guest would apply them: at once.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "gov.h"
#include "log.h"
#include "policy.h"
#include "util.h"

struct ctl_vm {
	struct cpuset	*cores;		/* vCPUs of each guest core */
	unsigned int	 ncores;
	struct cpuset	 online;
	struct gov	 gov;
	uint64_t	 gov_next_us;
	struct policy_state pst;
	double		 prev_run_us, prev_delay_us, prev_runnable_us;
};

struct ctl {
	size_t		 kind;
	struct sim	*sim;
	const struct scen *sc;
	struct ctl_vm	*vm;
	size_t		 nvm;
	uint64_t	 period_us;
	size_t		 events_seen;	/* oracle: demand changes handled */
	bool		 started;
	struct policy_config pcfg;
	struct policy_vm *pvm;
	struct policy_decision *pout;
};

static void	ctl_none(struct ctl *);
static void	ctl_governor(struct ctl *);
static void	ctl_prefcpu(struct ctl *);
static void	ctl_oracle(struct ctl *);
static void	ctl_fixed(struct ctl *);

static const struct {
	const char	*name;
	void		(*tick)(struct ctl *);
	bool		 optional;	/* run only when named */
} ctl_table[] = {
	{ "none", ctl_none, false },
	{ "governor", ctl_governor, false },
	{ "prefcpu", ctl_prefcpu, false },
	{ "oracle", ctl_oracle, false },
	{ "fixed", ctl_fixed, true },
};

size_t
ctl_count(void)
{
	return nitems(ctl_table);
}

const char *
ctl_name(size_t i)
{
	return ctl_table[i].name;
}

bool
ctl_optional(size_t i)
{
	return ctl_table[i].optional;
}

int
ctl_lookup(const char *name)
{
	size_t	i;

	for (i = 0; i < nitems(ctl_table); i++)
		if (strcmp(ctl_table[i].name, name) == 0)
			return (int)i;
	return -1;
}

void
ctl_waterfill(const double *claim, const double *weight, size_t n, double cap,
    double *share)
{
	bool	*done = xcalloc(n ? n : 1, sizeof *done);
	double	 wsum, left = cap, lvl;
	size_t	 i, open = n;
	bool	 capped;

	for (i = 0; i < n; i++)
		share[i] = 0;
	/* Raise the level until every open VM is capped or cap is used. */
	while (open > 0 && left > 1e-12) {
		wsum = 0;
		for (i = 0; i < n; i++)
			if (!done[i])
				wsum += weight[i];
		lvl = left / wsum;
		capped = false;
		for (i = 0; i < n; i++) {
			if (done[i] || claim[i] - share[i] > lvl * weight[i])
				continue;
			left -= claim[i] - share[i];
			share[i] = claim[i];
			done[i] = true;
			open--;
			capped = true;
		}
		if (capped)
			continue;
		for (i = 0; i < n; i++)
			if (!done[i])
				share[i] += lvl * weight[i];
		break;
	}
	free(done);
}

static void
ctl_none(struct ctl *c)
{
	(void)c;
}

static uint64_t
ctl_vm_steal_ns(struct ctl *c, unsigned int i)
{
	double		 run, delay, sum = 0;
	unsigned int	 j;

	for (j = 0; j < c->sc->vms[i].vcpus; j++) {
		sim_vcpu_times(c->sim, i, j, &run, &delay);
		sum += delay;
	}
	return (uint64_t)(sum * 1000.0);
}

static void
ctl_governor(struct ctl *c)
{
	struct ctl_vm	*v;
	struct cpuset	 pref;
	uint64_t	 now = sim_now_us(c->sim), ratio;
	unsigned int	 i;

	for (i = 0; i < c->nvm; i++) {
		v = &c->vm[i];
		if (!c->sc->vms[i].agent || now < v->gov_next_us)
			continue;
		v->gov_next_us += c->period_us;
		pref = *sim_preferred(c->sim, i);
		/* The work item runs on CPU 0, the first housekeeping CPU. */
		if (gov_step(&v->gov, now * 1000, ctl_vm_steal_ns(c, i),
		    &v->online, v->cores, v->ncores, 0, &pref, &ratio) !=
		    GOV_HOLD)
			sim_set_preferred(c->sim, i, &pref);
	}
}

static void
ctl_prefcpu(struct ctl *c)
{
	struct policy_host	 host;
	struct policy_summary	 sum;
	struct policy_vm	*p;
	struct ctl_vm		*v;
	uint64_t		 now = sim_now_us(c->sim);
	double			 run, delay, rs, ds, rt;
	unsigned int		 i, j;
	char			 err[256];

	if (now == 0 || now % c->period_us != 0)
		return;
	memset(&host, 0, sizeof host);
	cpuset_set_range(&host.pcpus, 0, c->sc->pcpus - 1);
	host.nonvm_cpus = 0;
	host.now_ms = now / 1000;
	for (i = 0; i < c->nvm; i++) {
		v = &c->vm[i];
		p = &c->pvm[i];
		rs = ds = 0;
		for (j = 0; j < c->sc->vms[i].vcpus; j++) {
			sim_vcpu_times(c->sim, i, j, &run, &delay);
			rs += run;
			ds += delay;
		}
		memset(p, 0, sizeof *p);
		p->name = c->sc->vms[i].name;
		p->nvcpus = c->sc->vms[i].vcpus;
		p->online = v->online;
		p->ncores = v->ncores;
		p->cores = v->cores;
		p->core_node = NULL;
		p->pcpus = host.pcpus;
		p->weight = c->sc->vms[i].weight;
		p->mode = POLICY_MODE_AUTO;
		p->steerable = c->sc->vms[i].agent;
		p->run_cpus = (rs - v->prev_run_us) / (double)c->period_us;
		p->delay_cpus = (ds - v->prev_delay_us) / (double)c->period_us;
		/* The guest agent's report: mean runnable tasks. */
		rt = sim_vm_runnable_us(c->sim, i);
		p->hint_runnable = c->sc->vms[i].agent ?
		    (rt - v->prev_runnable_us) / (double)c->period_us : -1;
		v->prev_runnable_us = rt;
		p->state = &v->pst;
		v->prev_run_us = rs;
		v->prev_delay_us = ds;
	}
	if (policy_decide(&c->pcfg, &host, c->pvm, c->nvm, c->pout, &sum,
	    err, sizeof err) == -1)
		fatalx("policy_decide at %llu ms: %s",
		    (unsigned long long)host.now_ms, err);
	for (i = 0; i < c->nvm; i++)
		if (c->sc->vms[i].agent)
			sim_set_preferred(c->sim, i, &c->pout[i].preferred);
}

/* Prefer the first k cores of VM i (all of them if it has fewer). */
static void
ctl_prefer_cores(struct ctl *c, unsigned int i, unsigned int k)
{
	struct cpuset	 set;
	unsigned int	 j, n;

	cpuset_zero(&set);
	for (n = 0; n < k && n < c->vm[i].ncores; n++)
		for (j = 0; j < c->sc->vms[i].vcpus; j++)
			if (cpuset_isset(&c->vm[i].cores[n], j))
				cpuset_set(&set, j);
	sim_set_preferred(c->sim, i, &set);
}

/*
 * Whole cores from shares: floors (at least one core), then the largest
 * remainders while what the VMs would use, min(preferred, demand), still
 * fits the host.
 */
static void
ctl_oracle_apply(struct ctl *c, const double *claim, const double *share)
{
	unsigned int	*cores = xcalloc(c->nvm, sizeof *cores);
	double		*rem = xcalloc(c->nvm, sizeof *rem);
	double		 used = 0, th, best, more;
	unsigned int	 i;
	size_t		 b;

	for (i = 0; i < c->nvm; i++) {
		th = c->sc->vms[i].threads;
		if (!c->sc->vms[i].agent) {
			used += share[i];
			continue;
		}
		cores[i] = (unsigned int)floor(share[i] / th + 1e-9);
		if (cores[i] < 1)
			cores[i] = 1;
		if (cores[i] > c->vm[i].ncores)
			cores[i] = c->vm[i].ncores;
		rem[i] = share[i] / th - cores[i];
		used += fmin(cores[i] * th, claim[i]);
	}
	for (;;) {
		best = 1e-9;
		b = SIZE_MAX;
		for (i = 0; i < c->nvm; i++) {
			th = c->sc->vms[i].threads;
			more = fmin((cores[i] + 1) * th, claim[i]) -
			    fmin(cores[i] * th, claim[i]);
			if (c->sc->vms[i].agent && rem[i] > best &&
			    cores[i] < c->vm[i].ncores &&
			    used + more <= c->sc->pcpus + 1e-9) {
				best = rem[i];
				b = i;
			}
		}
		if (b == SIZE_MAX)
			break;
		th = c->sc->vms[b].threads;
		used += fmin((cores[b] + 1) * th, claim[b]) -
		    fmin(cores[b] * th, claim[b]);
		cores[b]++;
		rem[b] = 0;
	}
	for (i = 0; i < c->nvm; i++)
		if (c->sc->vms[i].agent)
			ctl_prefer_cores(c, i, cores[i]);
	free(cores);
	free(rem);
}

/*
 * Shares over every VM, an unsteerable one included: the host's weighted
 * fair scheduler holds it to its share whatever vCPUs it keeps.
 */
static void
ctl_oracle(struct ctl *c)
{
	double		*claim, *weight, *share, total = 0;
	unsigned int	 i;

	if (c->started && sim_events_applied(c->sim) == c->events_seen)
		return;
	c->started = true;
	c->events_seen = sim_events_applied(c->sim);
	claim = xcalloc(c->nvm, sizeof *claim);
	weight = xcalloc(c->nvm, sizeof *weight);
	share = xcalloc(c->nvm, sizeof *share);
	for (i = 0; i < c->nvm; i++) {
		claim[i] = scen_vm_demand(&c->sc->vms[i],
		    sim_vm_tasks(c->sim, i));
		weight[i] = c->sc->vms[i].weight;
		total += claim[i];
	}
	if (total > c->sc->pcpus) {
		ctl_waterfill(claim, weight, c->nvm, c->sc->pcpus, share);
		ctl_oracle_apply(c, claim, share);
	} else {
		for (i = 0; i < c->nvm; i++)
			sim_set_preferred(c->sim, i, &c->vm[i].online);
	}
	free(claim);
	free(weight);
	free(share);
}

static unsigned int ctl_grow_after;
static unsigned int ctl_fixed_cores = 1;

void
ctl_set_grow_after(unsigned int n)
{
	ctl_grow_after = n;
}

void
ctl_set_fixed_cores(unsigned int n)
{
	ctl_fixed_cores = n;
}

/*
 * Every VM with an agent prefers its first ctl_fixed_cores cores (all of
 * them if it has fewer) from the start and is never moved: a static
 * over-commit of the sets, to find the count a class of guests does best
 * at, whatever a policy would decide.
 */
static void
ctl_fixed(struct ctl *c)
{
	unsigned int	 i;

	if (c->started)
		return;
	c->started = true;
	for (i = 0; i < c->nvm; i++)
		if (c->sc->vms[i].agent)
			ctl_prefer_cores(c, i, ctl_fixed_cores);
}

struct ctl *
ctl_new(size_t kind, struct sim *sim, const struct scen *sc)
{
	struct ctl	*c = xcalloc(1, sizeof *c);
	struct ctl_vm	*v;
	unsigned int	 i, k, th;

	c->kind = kind;
	c->sim = sim;
	c->sc = sc;
	c->nvm = sc->nvms;
	c->period_us = (uint64_t)sc->period_ms * 1000;
	c->vm = xcalloc(c->nvm, sizeof *c->vm);
	c->pvm = xcalloc(c->nvm, sizeof *c->pvm);
	c->pout = xcalloc(c->nvm, sizeof *c->pout);
	policy_config_default(&c->pcfg);
	if (ctl_grow_after != 0)
		c->pcfg.grow_after = ctl_grow_after;
	for (i = 0; i < c->nvm; i++) {
		v = &c->vm[i];
		th = sc->vms[i].threads;
		v->ncores = sc->vms[i].vcpus / th;
		v->cores = xcalloc(v->ncores, sizeof *v->cores);
		for (k = 0; k < v->ncores; k++)
			cpuset_set_range(&v->cores[k], k * th, k * th + th - 1);
		cpuset_zero(&v->online);
		cpuset_set_range(&v->online, 0, sc->vms[i].vcpus - 1);
		/* Guests boot together but their governors tick out of phase. */
		v->gov.prev_time_ns = (uint64_t)i * c->period_us * 1000 / c->nvm;
		v->gov_next_us = v->gov.prev_time_ns / 1000 + c->period_us;
		policy_state_init(&v->pst);
	}
	return c;
}

void
ctl_free(struct ctl *c)
{
	size_t	i;

	if (c == NULL)
		return;
	for (i = 0; i < c->nvm; i++)
		free(c->vm[i].cores);
	free(c->vm);
	free(c->pvm);
	free(c->pout);
	free(c);
}

void
ctl_tick(struct ctl *c)
{
	ctl_table[c->kind].tick(c);
}
