/*
 * The host and guest model.  Every tick:
 *   1. scenario demand changes, sleepers waking, tasks parking;
 *   2. guest scheduler: push movable tasks off non-preferred vCPUs,
 *      rotate tasks sharing a vCPU, balance the preferred vCPUs;
 *   3. host scheduler: a vCPU thread is runnable when it has a task (an
 *      idle vCPU halts); threads whose slice ended go back to the pool and
 *      free pCPUs take the VM with the least weighted virtual runtime, and
 *      in it the thread with the least virtual runtime (two-level fair
 *      share, like CFS group scheduling of libvirt's per-VM cgroups);
 *   4. each VM's running vCPUs advance by one tick in continuous time.
 * A task's lock and barrier states are the guest kernel's: a holder and a
 * spinning waiter are never moved or rotated by the guest (preemption is
 * off), so a preempted holder keeps the lock until the host runs it again.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "util.h"

#define SIM_EPS		1e-9
#define SIM_GUEST_SLICE	3000.0	/* us of vCPU time before rotating tasks */
#define SIM_BALANCE_US	4000	/* guest load balancing interval */

enum sim_tstate {
	T_PAR,		/* working, rem = running time to the next event */
	T_CS,		/* holding the lock, rem = running time left */
	T_LOCKWAIT,	/* spinning on the lock */
	T_BARSPIN,	/* spinning at the barrier, rem = spin left */
	T_BLOCKED,	/* asleep at the barrier */
	T_SLEEP,	/* bursty: off until wake_at */
	T_PARKED,	/* not part of the demand now */
};

struct sim_task {
	enum sim_tstate	st;
	double		rem;
	int		vcpu;		/* queue or current of; -1: none */
	int		last_vcpu;
	uint64_t	wake_at;
	bool		park;		/* park at the next safe point */
	double		slice_used;	/* running time on its vCPU */
};

struct sim_vcpu {
	struct sim_task	*cur;
	struct sim_task	**q;		/* waiting on this vCPU, FIFO */
	unsigned int	nq;
	int		pcpu;		/* -1: not on a pCPU */
	bool		runnable;
	bool		expired;
	double		vr;		/* virtual runtime within its VM */
	double		slice_used;
	double		slice_len;	/* this turn's slice, varied */
	double		ran;		/* this tick */
	double		run_us, delay_us;
};

struct sim_vm {
	const struct scen_vm *cfg;
	struct sim_vcpu	*v;
	struct sim_task	*t;
	unsigned int	nt;		/* tasks allocated */
	unsigned int	active;		/* tasks the scenario wants now */
	struct cpuset	pref;
	bool		*prefv;		/* pref as an array, for the hot path */
	uint64_t	changes;	/* times pref changed */
	double		vr;		/* weighted virtual runtime */
	unsigned int	nwait;		/* runnable threads not on a pCPU */
	unsigned int	nrun;		/* threads on a pCPU */
	struct sim_task	*holder;
	unsigned int	arrived;	/* at the barrier */
	unsigned int	rr;
	uint64_t	rng;
	struct sim_vcpu	**run;		/* scratch: vCPUs on a pCPU */
	struct sim_vm_stat st;
	double		runnable_us;	/* runnable tasks x time, cumulative */
};

struct sim {
	const struct scen *sc;
	struct sim_vm	*vm;
	unsigned int	nvm;
	int		*pcpu_vm, *pcpu_vcpu;	/* -1: idle */
	unsigned int	*freep;
	uint64_t	now_us;
	uint64_t	end_us;
	size_t		next_ev;
	double		idle_us;
	double		tick;
	double		slice;
	uint64_t	rng;		/* host scheduler's */
	double		min_vr;		/* never decreases */
};

/* xorshift64*: one stream per VM and one for the host scheduler. */
static double
sim_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 11) * 0x1.0p-53;
}

static double
sim_unit(struct sim_vm *vm)
{
	return sim_rand(&vm->rng);
}

/* Uniform in [mean/2, 3 mean/2]: varied but never far from the mean. */
static double
sim_jitter(struct sim_vm *vm, double mean)
{
	return mean * (0.5 + sim_unit(vm));
}

static double
sim_expo(struct sim_vm *vm, double mean)
{
	return -mean * log(1.0 - sim_unit(vm) * 0.999999);
}

/* Running time until a fresh task's next event. */
static double
sim_fresh_rem(struct sim_vm *vm)
{
	switch (vm->cfg->wl) {
	case SCEN_WL_CPU:
		return INFINITY;
	case SCEN_WL_SPIN:
		return sim_jitter(vm, vm->cfg->par_us);
	case SCEN_WL_BARRIER:
		return sim_jitter(vm, vm->cfg->work_us);
	case SCEN_WL_BURSTY:
		return sim_expo(vm, vm->cfg->on_ms * 1000.0);
	}
	return INFINITY;
}

static unsigned int
sim_load(const struct sim_vcpu *v)
{
	return (v->cur != NULL) + v->nq;
}

static void
sim_enqueue(struct sim_vm *vm, struct sim_task *t, unsigned int i)
{
	struct sim_vcpu	*v = &vm->v[i];

	t->vcpu = (int)i;
	t->last_vcpu = (int)i;
	t->slice_used = 0;
	if (v->cur == NULL) {
		v->cur = t;
		return;
	}
	v->q[v->nq++] = t;
}

/* Guest wake-up placement: the least loaded preferred vCPU, previous first. */
static void
sim_place(struct sim_vm *vm, struct sim_task *t)
{
	unsigned int	i, best = UINT32_MAX, bl = UINT32_MAX, l;

	if (t->last_vcpu >= 0 && vm->prefv[t->last_vcpu]) {
		best = (unsigned int)t->last_vcpu;
		bl = sim_load(&vm->v[best]);
	}
	for (i = 0; i < vm->cfg->vcpus && bl > 0; i++) {
		if (!vm->prefv[i])
			continue;
		if ((l = sim_load(&vm->v[i])) < bl) {
			best = i;
			bl = l;
		}
	}
	sim_enqueue(vm, t, best);
}

/*
 * A preferred vCPU going idle pulls a waiting task from the busiest
 * preferred vCPU at once, as the guest's new-idle balancing does.
 */
static void
sim_newidle(struct sim_vm *vm, unsigned int i)
{
	unsigned int	 j, b = UINT32_MAX;
	struct sim_task	*t;

	for (j = 0; j < vm->cfg->vcpus; j++)
		if (vm->prefv[j] && vm->v[j].nq > 0 && (b == UINT32_MAX ||
		    vm->v[j].nq > vm->v[b].nq))
			b = j;
	if (b == UINT32_MAX)
		return;
	t = vm->v[b].q[--vm->v[b].nq];
	t->vcpu = (int)i;
	t->last_vcpu = (int)i;
	t->slice_used = 0;
	vm->v[i].cur = t;
}

/* Take a task off its vCPU; a current task is replaced by the queue head. */
static void
sim_unqueue(struct sim_vm *vm, struct sim_task *t)
{
	unsigned int	 i = (unsigned int)t->vcpu;
	struct sim_vcpu	*v = &vm->v[i];

	t->vcpu = -1;
	if (v->cur == t) {
		v->cur = NULL;
		if (v->nq > 0) {
			v->cur = v->q[0];
			memmove(v->q, v->q + 1, --v->nq * sizeof *v->q);
			v->cur->slice_used = 0;
		} else if (vm->prefv[i])
			sim_newidle(vm, i);
	} else {
		for (i = 0; i < v->nq; i++)
			if (v->q[i] == t)
				break;
		memmove(v->q + i, v->q + i + 1, (v->nq - i - 1) * sizeof *v->q);
		v->nq--;
	}
}

static bool
sim_movable(const struct sim_task *t)
{
	return t->st == T_PAR;
}

/* Every arrived task starts its next phase; sleepers are woken. */
static void
sim_barrier_release(struct sim_vm *vm)
{
	unsigned int	 i;
	struct sim_task	*t;

	vm->arrived = 0;
	for (i = 0; i < vm->nt; i++) {
		t = &vm->t[i];
		if (t->st != T_BARSPIN && t->st != T_BLOCKED)
			continue;
		t->rem = sim_fresh_rem(vm);
		if (t->st == T_BLOCKED) {
			t->st = T_PAR;
			sim_place(vm, t);
		} else
			t->st = T_PAR;
	}
}

static void
sim_barrier_check(struct sim_vm *vm)
{
	if (vm->cfg->wl == SCEN_WL_BARRIER && vm->active > 0 &&
	    vm->arrived >= vm->active)
		sim_barrier_release(vm);
}

/* Hand a free lock to a spinning waiter that is running now. */
static void
sim_lock_grant(struct sim_vm *vm, unsigned int nrun)
{
	unsigned int	 i;
	struct sim_task	*t;

	if (vm->holder != NULL || nrun == 0)
		return;
	for (i = 0; i < nrun; i++) {
		t = vm->run[(vm->rr + i) % nrun]->cur;
		if (t != NULL && t->st == T_LOCKWAIT) {
			vm->holder = t;
			t->st = T_CS;
			t->rem = sim_jitter(vm, vm->cfg->cs_us);
			vm->rr++;
			return;
		}
	}
}

/* The running task t reached the end of its current state at time at_us. */
static void
sim_task_event(struct sim *s, struct sim_vm *vm, struct sim_task *t,
    double at_us, unsigned int nrun)
{
	switch (t->st) {
	case T_PAR:
		switch (vm->cfg->wl) {
		case SCEN_WL_SPIN:
			t->st = T_LOCKWAIT;
			sim_lock_grant(vm, nrun);
			break;
		case SCEN_WL_BARRIER:
			vm->arrived++;
			t->st = T_BARSPIN;
			t->rem = vm->cfg->spin_us;
			sim_barrier_check(vm);
			break;
		case SCEN_WL_BURSTY:
			t->st = T_SLEEP;
			t->wake_at = s->now_us + (uint64_t)at_us +
			    (uint64_t)sim_expo(vm, vm->cfg->off_ms * 1000.0);
			sim_unqueue(vm, t);
			break;
		case SCEN_WL_CPU:
			t->rem = INFINITY;
			break;
		}
		break;
	case T_CS:
		vm->holder = NULL;
		t->st = T_PAR;
		t->rem = sim_fresh_rem(vm);
		sim_lock_grant(vm, nrun);
		break;
	case T_BARSPIN:
		t->st = T_BLOCKED;
		sim_unqueue(vm, t);
		break;
	default:
		break;
	}
}

static bool
sim_timed(const struct sim_task *t)
{
	return t->st == T_PAR || t->st == T_CS || t->st == T_BARSPIN;
}

/* Advance the VM's running vCPUs through one tick. */
static void
sim_vm_run(struct sim *s, struct sim_vm *vm)
{
	unsigned int	 i, n = 0;
	double		 now = 0, next, step;
	struct sim_task	*t;
	struct sim_vcpu	*v;

	for (i = 0; i < vm->cfg->vcpus; i++) {
		vm->v[i].ran = 0;
		if (vm->v[i].pcpu >= 0)
			vm->run[n++] = &vm->v[i];
	}
	if (n == 0)
		return;
	sim_lock_grant(vm, n);
	for (;;) {
		/* Events due now, including those left from the last tick. */
		for (i = 0; i < n; i++) {
			t = vm->run[i]->cur;
			while (t != NULL && sim_timed(t) && t->rem <= SIM_EPS) {
				sim_task_event(s, vm, t, now, n);
				if (vm->run[i]->cur == t && sim_timed(t) &&
				    t->rem <= SIM_EPS)
					break;
				t = vm->run[i]->cur;
			}
		}
		if (now >= s->tick - SIM_EPS)
			break;
		next = s->tick;
		for (i = 0; i < n; i++) {
			t = vm->run[i]->cur;
			if (t != NULL && sim_timed(t) && now + t->rem < next)
				next = now + t->rem;
		}
		step = next - now;
		for (i = 0; i < n; i++) {
			v = vm->run[i];
			if ((t = v->cur) == NULL)
				continue;
			v->ran += step;
			t->slice_used += step;
			if (t->st == T_PAR || t->st == T_CS) {
				vm->st.work_us += step;
				t->rem -= step;
			} else {
				vm->st.spin_us += step;
				if (t->st == T_BARSPIN)
					t->rem -= step;
			}
		}
		now = next;
	}
	for (i = 0; i < n; i++) {
		v = vm->run[i];
		v->run_us += v->ran;
		v->vr += v->ran;
		v->slice_used += s->tick;
		vm->st.run_us += v->ran;
		vm->vr += v->ran * 100.0 / vm->cfg->weight;
		s->idle_us += s->tick - v->ran;
	}
}

static void
sim_apply_events(struct sim *s)
{
	const struct scen_event	*e;
	struct sim_vm		*vm;
	struct sim_task		*t;
	unsigned int		 i;

	while (s->next_ev < s->sc->nevents) {
		e = &s->sc->events[s->next_ev];
		if ((uint64_t)(e->t_s * 1e6) > s->now_us)
			break;
		s->next_ev++;
		vm = &s->vm[e->vm];
		vm->active = e->tasks;
		for (i = 0; i < vm->nt; i++) {
			t = &vm->t[i];
			t->park = i >= e->tasks;
			if (!t->park && t->st == T_PARKED) {
				t->st = T_PAR;
				t->rem = sim_fresh_rem(vm);
				sim_place(vm, t);
			}
		}
	}
}

/* Wake sleepers and park what the scenario no longer wants. */
static void
sim_guest_tasks(struct sim *s, struct sim_vm *vm)
{
	struct sim_task	*t;
	unsigned int	 i;
	bool		 parked = false;

	for (i = 0; i < vm->nt; i++) {
		t = &vm->t[i];
		if (t->park && t->st != T_PARKED && (t->st == T_PAR ||
		    t->st == T_SLEEP || t->st == T_BARSPIN ||
		    t->st == T_BLOCKED)) {
			if (t->st == T_BARSPIN || t->st == T_BLOCKED)
				vm->arrived--;
			if (t->vcpu >= 0)
				sim_unqueue(vm, t);
			t->st = T_PARKED;
			parked = true;
			continue;
		}
		if (t->st == T_SLEEP && t->wake_at <= s->now_us) {
			t->st = T_PAR;
			t->rem = sim_fresh_rem(vm);
			sim_place(vm, t);
		}
	}
	if (parked)
		sim_barrier_check(vm);
}

/* Guest scheduler at a tick boundary. */
static void
sim_guest_sched(struct sim *s, struct sim_vm *vm)
{
	unsigned int	 i, j, hi, lo, nv = vm->cfg->vcpus;
	struct sim_vcpu	*v;
	struct sim_task	*t;

	for (i = 0; i < nv; i++) {
		v = &vm->v[i];
		if (vm->prefv[i]) {
			/* Rotate tasks sharing a vCPU. */
			if (v->nq > 0 && v->cur != NULL && sim_movable(v->cur) &&
			    v->cur->slice_used >= SIM_GUEST_SLICE) {
				t = v->cur;
				sim_unqueue(vm, t);
				sim_enqueue(vm, t, i);
			}
			continue;
		}
		/* Tasks leave non-preferred vCPUs as soon as they may. */
		for (j = 0; j < v->nq;) {
			t = v->q[j];
			sim_unqueue(vm, t);
			sim_place(vm, t);
		}
		if (v->cur != NULL && sim_movable(v->cur)) {
			t = v->cur;
			sim_unqueue(vm, t);
			sim_place(vm, t);
		}
	}
	if (s->now_us % SIM_BALANCE_US >= (uint64_t)s->tick)
		return;
	for (j = 0; j < nv; j++) {
		hi = lo = UINT32_MAX;
		for (i = 0; i < nv; i++) {
			if (!vm->prefv[i])
				continue;
			if (hi == UINT32_MAX || sim_load(&vm->v[i]) >
			    sim_load(&vm->v[hi]))
				hi = i;
			if (lo == UINT32_MAX || sim_load(&vm->v[i]) <
			    sim_load(&vm->v[lo]))
				lo = i;
		}
		if (hi == UINT32_MAX || vm->v[hi].nq == 0 ||
		    sim_load(&vm->v[hi]) < sim_load(&vm->v[lo]) + 2)
			break;
		t = vm->v[hi].q[vm->v[hi].nq - 1];
		sim_unqueue(vm, t);
		sim_enqueue(vm, t, lo);
	}
}

/*
 * Give pCPU p to the best waiting thread: the VM whose weighted virtual
 * runtime would be least after one more slice on top of those it runs
 * now (so that one VM does not take every free pCPU of a round), then its
 * thread with the least virtual runtime.
 */
static bool
sim_pick(struct sim *s, unsigned int p)
{
	struct sim_vm	*best = NULL, *vm;
	struct sim_vcpu	*bv = NULL;
	unsigned int	 i, bi = 0;
	double		 key, bk = INFINITY;

	for (i = 0; i < s->nvm; i++) {
		vm = &s->vm[i];
		if (vm->nwait == 0)
			continue;
		key = vm->vr + (vm->nrun + 1) * s->slice * 100.0 /
		    vm->cfg->weight;
		if (best == NULL || key < bk) {
			best = vm;
			bk = key;
			bi = i;
		}
	}
	if (best == NULL)
		return false;
	for (i = 0; i < best->cfg->vcpus; i++) {
		if (!best->v[i].runnable || best->v[i].pcpu >= 0)
			continue;
		if (bv == NULL || best->v[i].vr < bv->vr)
			bv = &best->v[i];
	}
	bv->pcpu = (int)p;
	bv->slice_used = 0;
	/* Slices vary as real ticks and wake-ups do; none line up. */
	bv->slice_len = s->slice * (0.5 + sim_rand(&s->rng));
	best->nwait--;
	best->nrun++;
	s->pcpu_vm[p] = (int)bi;
	s->pcpu_vcpu[p] = (int)(bv - best->v);
	return true;
}

static void
sim_host_sched(struct sim *s)
{
	struct sim_vm	*vm;
	struct sim_vcpu	*v;
	unsigned int	 i, j, nfree = 0, p;
	double		 gmin = INFINITY, vmin;
	bool		 was;

	/* CFS's min_vruntime: least weighted runtime of the VMs in play. */
	for (i = 0; i < s->nvm; i++)
		if (s->vm[i].nwait + s->vm[i].nrun > 0 && s->vm[i].vr < gmin)
			gmin = s->vm[i].vr;
	if (isfinite(gmin) && gmin > s->min_vr)
		s->min_vr = gmin;
	for (i = 0; i < s->nvm; i++) {
		vm = &s->vm[i];
		vmin = INFINITY;
		for (j = 0; j < vm->cfg->vcpus; j++)
			if (vm->v[j].runnable && vm->v[j].vr < vmin)
				vmin = vm->v[j].vr;
		was = false;
		for (j = 0; j < vm->cfg->vcpus; j++)
			was |= vm->v[j].runnable;
		vm->nwait = vm->nrun = 0;
		for (j = 0; j < vm->cfg->vcpus; j++) {
			v = &vm->v[j];
			v->expired = false;
			if (v->cur == NULL) {
				v->runnable = false;
				if (v->pcpu >= 0) {
					s->pcpu_vm[v->pcpu] = -1;
					v->pcpu = -1;
				}
				continue;
			}
			/* A waking thread does not bank the time it slept. */
			if (!v->runnable && isfinite(vmin) &&
			    v->vr < vmin - s->slice)
				v->vr = vmin - s->slice;
			v->runnable = true;
			if (v->pcpu >= 0 && v->slice_used >= v->slice_len -
			    SIM_EPS) {
				v->expired = true;
				s->pcpu_vm[v->pcpu] = -1;
				v->pcpu = -1;
			}
			if (v->pcpu < 0)
				vm->nwait++;
			else
				vm->nrun++;
		}
		if (!was && vm->nwait > 0 && vm->vr < s->min_vr - s->slice)
			vm->vr = s->min_vr - s->slice;
	}
	for (p = 0; p < s->sc->pcpus; p++)
		if (s->pcpu_vm[p] < 0)
			s->freep[nfree++] = p;
	for (i = 0; i < nfree; i++)
		if (!sim_pick(s, s->freep[i]))
			break;
	for (i = 0; i < s->nvm; i++) {
		vm = &s->vm[i];
		for (j = 0; j < vm->cfg->vcpus; j++) {
			v = &vm->v[j];
			if (v->expired && v->pcpu < 0)
				vm->st.preempt++;
			if (v->runnable && v->pcpu < 0) {
				v->delay_us += s->tick;
				vm->st.delay_us += s->tick;
			}
		}
	}
}

static unsigned int sim_vm_runnable_now(const struct sim_vm *);

void
sim_tick(struct sim *s)
{
	unsigned int	i, p, busy = 0;

	for (i = 0; i < s->nvm; i++) {
		sim_guest_tasks(s, &s->vm[i]);
		sim_guest_sched(s, &s->vm[i]);
		s->vm[i].runnable_us += sim_vm_runnable_now(&s->vm[i]) *
		    s->tick;
	}
	sim_host_sched(s);
	for (p = 0; p < s->sc->pcpus; p++)
		busy += s->pcpu_vm[p] >= 0;
	s->idle_us += (double)(s->sc->pcpus - busy) * s->tick;
	for (i = 0; i < s->nvm; i++)
		sim_vm_run(s, &s->vm[i]);
	s->now_us += (uint64_t)s->tick;
	/* Demand changes due now are visible to the policies of this tick. */
	sim_apply_events(s);
}

struct sim *
sim_new(const struct scen *sc)
{
	struct sim	*s = xcalloc(1, sizeof *s);
	struct sim_vm	*vm;
	unsigned int	 i, j, maxt;

	s->sc = sc;
	s->nvm = (unsigned int)sc->nvms;
	s->tick = sc->tick_us;
	s->slice = sc->slice_us;
	s->end_us = (uint64_t)(sc->duration_s * 1e6);
	s->rng = (sc->seed + 1) * UINT64_C(0xD1B54A32D192ED03);
	s->vm = xcalloc(s->nvm, sizeof *s->vm);
	s->pcpu_vm = xcalloc(sc->pcpus, sizeof *s->pcpu_vm);
	s->pcpu_vcpu = xcalloc(sc->pcpus, sizeof *s->pcpu_vcpu);
	s->freep = xcalloc(sc->pcpus, sizeof *s->freep);
	for (i = 0; i < sc->pcpus; i++)
		s->pcpu_vm[i] = s->pcpu_vcpu[i] = -1;
	for (i = 0; i < s->nvm; i++) {
		vm = &s->vm[i];
		vm->cfg = &sc->vms[i];
		vm->rng = (sc->seed + 1) * UINT64_C(0x9E3779B97F4A7C15) ^
		    ((uint64_t)(i + 1) << 32 | (i + 1));
		if (vm->rng == 0)
			vm->rng = 1;
		maxt = vm->cfg->tasks;
		for (j = 0; j < sc->nevents; j++)
			if (sc->events[j].vm == i && sc->events[j].tasks > maxt)
				maxt = sc->events[j].tasks;
		vm->nt = maxt;
		vm->active = vm->cfg->tasks;
		vm->t = xcalloc(maxt ? maxt : 1, sizeof *vm->t);
		vm->v = xcalloc(vm->cfg->vcpus, sizeof *vm->v);
		vm->run = xcalloc(vm->cfg->vcpus, sizeof *vm->run);
		vm->prefv = xcalloc(vm->cfg->vcpus, sizeof *vm->prefv);
		cpuset_zero(&vm->pref);
		for (j = 0; j < vm->cfg->vcpus; j++) {
			vm->v[j].q = xcalloc(maxt ? maxt : 1, sizeof *vm->v[j].q);
			vm->v[j].pcpu = -1;
			vm->prefv[j] = true;
			cpuset_set(&vm->pref, j);
		}
		for (j = 0; j < maxt; j++) {
			vm->t[j].vcpu = vm->t[j].last_vcpu = -1;
			vm->t[j].st = T_PARKED;
			if (j < vm->cfg->tasks) {
				vm->t[j].st = T_PAR;
				vm->t[j].rem = sim_fresh_rem(vm);
				sim_place(vm, &vm->t[j]);
			}
		}
	}
	sim_apply_events(s);
	return s;
}

void
sim_free(struct sim *s)
{
	unsigned int	i, j;

	if (s == NULL)
		return;
	for (i = 0; i < s->nvm; i++) {
		for (j = 0; j < s->vm[i].cfg->vcpus; j++)
			free(s->vm[i].v[j].q);
		free(s->vm[i].v);
		free(s->vm[i].t);
		free(s->vm[i].run);
		free(s->vm[i].prefv);
	}
	free(s->vm);
	free(s->pcpu_vm);
	free(s->pcpu_vcpu);
	free(s->freep);
	free(s);
}

uint64_t
sim_now_us(const struct sim *s)
{
	return s->now_us;
}

bool
sim_done(const struct sim *s)
{
	return s->now_us >= s->end_us;
}

void
sim_vm_stat(const struct sim *s, unsigned int vm, struct sim_vm_stat *st)
{
	*st = s->vm[vm].st;
}

void
sim_vcpu_times(const struct sim *s, unsigned int vm, unsigned int vcpu,
    double *run_us, double *delay_us)
{
	*run_us = s->vm[vm].v[vcpu].run_us;
	*delay_us = s->vm[vm].v[vcpu].delay_us;
}

double
sim_idle_us(const struct sim *s)
{
	return s->idle_us;
}

void
sim_set_preferred(struct sim *s, unsigned int i, const struct cpuset *set)
{
	struct sim_vm	*vm = &s->vm[i];
	struct cpuset	 c;
	unsigned int	 j;

	cpuset_zero(&c);
	for (j = 0; j < vm->cfg->vcpus; j++)
		if (cpuset_isset(set, j))
			cpuset_set(&c, j);
	if (cpuset_empty(&c) || cpuset_equal(&c, &vm->pref))
		return;
	vm->pref = c;
	vm->changes++;
	for (j = 0; j < vm->cfg->vcpus; j++) {
		if (vm->prefv[j] != cpuset_isset(&c, j))
			vm->st.moved++;
		vm->prefv[j] = cpuset_isset(&c, j);
	}
}

const struct cpuset *
sim_preferred(const struct sim *s, unsigned int vm)
{
	return &s->vm[vm].pref;
}

uint64_t
sim_pref_changes(const struct sim *s, unsigned int vm)
{
	return s->vm[vm].changes;
}

/* Tasks of the VM that are runnable now. */
static unsigned int
sim_vm_runnable_now(const struct sim_vm *v)
{
	unsigned int		 i, n = 0;

	for (i = 0; i < v->nt; i++)
		switch (v->t[i].st) {
		case T_PAR:
		case T_CS:
		case T_LOCKWAIT:
		case T_BARSPIN:
			n++;
			break;
		case T_BLOCKED:
		case T_SLEEP:
		case T_PARKED:
			break;
		}
	return n;
}

double
sim_vm_runnable_us(const struct sim *s, unsigned int vm)
{
	return s->vm[vm].runnable_us;
}

unsigned int
sim_vm_tasks(const struct sim *s, unsigned int vm)
{
	return s->vm[vm].active;
}

size_t
sim_events_applied(const struct sim *s)
{
	return s->next_ev;
}

int
sim_check(const struct sim *s, char *err, size_t errlen)
{
	const struct sim_vm	*vm;
	const struct sim_vcpu	*v;
	const struct sim_task	*t;
	unsigned int		 i, j, k, p, seen, running = 0;

	for (p = 0; p < s->sc->pcpus; p++) {
		if (s->pcpu_vm[p] < 0)
			continue;
		v = &s->vm[s->pcpu_vm[p]].v[s->pcpu_vcpu[p]];
		if (v->pcpu != (int)p) {
			snprintf(err, errlen, "pCPU %u runs a thread that is "
			    "on pCPU %d", p, v->pcpu);
			return -1;
		}
	}
	for (i = 0; i < s->nvm; i++) {
		vm = &s->vm[i];
		for (j = 0; j < vm->cfg->vcpus; j++) {
			v = &vm->v[j];
			if (v->pcpu < 0)
				continue;
			running++;
			if (s->pcpu_vm[v->pcpu] != (int)i ||
			    s->pcpu_vcpu[v->pcpu] != (int)j) {
				snprintf(err, errlen, "vm %u vCPU %u claims pCPU "
				    "%d, which runs another thread", i, j,
				    v->pcpu);
				return -1;
			}
			if (v->run_us + v->delay_us > (double)s->now_us + 1e-6) {
				snprintf(err, errlen, "vm %u vCPU %u ran and "
				    "waited longer than time elapsed", i, j);
				return -1;
			}
		}
		for (k = 0; k < vm->nt; k++) {
			t = &vm->t[k];
			seen = 0;
			for (j = 0; j < vm->cfg->vcpus; j++) {
				seen += vm->v[j].cur == t;
				for (p = 0; p < vm->v[j].nq; p++)
					seen += vm->v[j].q[p] == t;
			}
			if (seen != (t->vcpu >= 0)) {
				snprintf(err, errlen, "vm %u task %u is on %u "
				    "vCPUs", i, k, seen);
				return -1;
			}
		}
		if (vm->holder != NULL && vm->holder->st != T_CS) {
			snprintf(err, errlen, "vm %u lock holder is not in its "
			    "critical section", i);
			return -1;
		}
	}
	if (running > s->sc->pcpus) {
		snprintf(err, errlen, "%u threads running on %u pCPUs",
		    running, s->sc->pcpus);
		return -1;
	}
	return 0;
}
