/*
 * Measurements of a run.  Entitlement: every period, each VM's weighted
 * max-min fair share of the host's pCPUs given its true demand (its tasks,
 * scaled by the duty cycle when bursty), summed over time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "met.h"
#include "util.h"

struct met {
	const struct scen *sc;
	const struct sim *sim;
	size_t		 nvm;
	uint64_t	 period_us;
	double		*ent_s;
	double		*claim, *weight, *share;
	uint64_t	 last_changes;
	double		*chg_t;		/* seconds of each VM set change */
	size_t		 nchg, chgcap;
	unsigned int	*series;	/* nsamples x nvm preferred counts */
	size_t		 nsamples, scap;
	struct met_window *win;
	size_t		 nwin;
};

struct met *
met_new(const struct scen *sc, const struct sim *sim)
{
	struct met	*m = xcalloc(1, sizeof *m);
	size_t		 i;
	double		 t;

	m->sc = sc;
	m->sim = sim;
	m->nvm = sc->nvms;
	m->period_us = (uint64_t)sc->period_ms * 1000;
	m->ent_s = xcalloc(m->nvm, sizeof *m->ent_s);
	m->claim = xcalloc(m->nvm, sizeof *m->claim);
	m->weight = xcalloc(m->nvm, sizeof *m->weight);
	m->share = xcalloc(m->nvm, sizeof *m->share);
	for (i = 0; i < m->nvm; i++)
		m->weight[i] = sc->vms[i].weight;
	/* One window from the start and one from each distinct change time. */
	m->win = xcalloc(sc->nevents + 1, sizeof *m->win);
	m->win[m->nwin++].start_s = 0;
	for (i = 0; i < sc->nevents; i++) {
		t = sc->events[i].t_s;
		if (t > m->win[m->nwin - 1].start_s && t < sc->duration_s)
			m->win[m->nwin++].start_s = t;
	}
	for (i = 0; i < m->nwin; i++)
		m->win[i].end_s = i + 1 < m->nwin ? m->win[i + 1].start_s :
		    sc->duration_s;
	return m;
}

void
met_free(struct met *m)
{
	if (m == NULL)
		return;
	free(m->ent_s);
	free(m->claim);
	free(m->weight);
	free(m->share);
	free(m->chg_t);
	free(m->series);
	free(m->win);
	free(m);
}

void
met_tick(struct met *m)
{
	uint64_t	now = sim_now_us(m->sim), c = 0;
	size_t		i;

	for (i = 0; i < m->nvm; i++)
		c += sim_pref_changes(m->sim, (unsigned int)i);
	for (; m->last_changes < c; m->last_changes++) {
		if (m->nchg == m->chgcap) {
			m->chgcap = m->chgcap ? 2 * m->chgcap : 256;
			m->chg_t = xreallocarray(m->chg_t, m->chgcap,
			    sizeof *m->chg_t);
		}
		m->chg_t[m->nchg++] = (double)now / 1e6;
	}
	if (now % m->period_us != 0)
		return;
	/* Entitlement of the period starting now, at the demand of now. */
	if (!sim_done(m->sim)) {
		for (i = 0; i < m->nvm; i++)
			m->claim[i] = scen_vm_demand(&m->sc->vms[i],
			    sim_vm_tasks(m->sim, (unsigned int)i));
		ctl_waterfill(m->claim, m->weight, m->nvm, m->sc->pcpus,
		    m->share);
		for (i = 0; i < m->nvm; i++)
			m->ent_s[i] += m->share[i] * (double)m->period_us / 1e6;
	}
	if (m->nsamples == m->scap) {
		m->scap = m->scap ? 2 * m->scap : 128;
		m->series = xreallocarray(m->series, m->scap * m->nvm,
		    sizeof *m->series);
	}
	for (i = 0; i < m->nvm; i++)
		m->series[m->nsamples * m->nvm + i] = cpuset_count(
		    sim_preferred(m->sim, (unsigned int)i));
	m->nsamples++;
}

/*
 * Seconds from the window's start until every VM's preferred count stays
 * within one of its cores of the count it ends the window with: a
 * convergence time for a policy that keeps stepping around its target.
 */
static double
met_band(const struct met *m, const struct met_window *w)
{
	double		 t, p = (double)m->period_us / 1e6, band = 0;
	size_t		 k, last = SIZE_MAX, i;
	unsigned int	 n, f, th;

	for (k = 0; k < m->nsamples; k++) {
		t = k * p;
		if (t >= w->start_s - 1e-9 && t < w->end_s - 1e-9)
			last = k;
	}
	if (last == SIZE_MAX)
		return 0;
	for (k = last + 1; k-- > 0;) {
		t = k * p;
		if (t < w->start_s - 1e-9)
			break;
		for (i = 0; i < m->nvm; i++) {
			n = m->series[k * m->nvm + i];
			f = m->series[last * m->nvm + i];
			th = m->sc->vms[i].threads;
			if (n > f + th || f > n + th)
				return band;
		}
		band = t - w->start_s;
	}
	return band;
}

void
met_summary(const struct met *m, struct met_summary *s)
{
	struct sim_vm_stat	 st;
	struct met_window	*w;
	double			 run = 0, delay = 0, spin = 0, x, sx = 0,
				 sxx = 0, steady_s = 0, secs;
	uint64_t		 pre = 0;
	unsigned int		 n = 0, steady = 0;
	size_t			 i, k;

	s->work_s = 0;
	s->moved = 0;
	for (i = 0; i < m->nvm; i++) {
		sim_vm_stat(m->sim, (unsigned int)i, &st);
		s->work_s += st.work_us / 1e6;
		s->moved += st.moved;
		run += st.run_us;
		delay += st.delay_us;
		spin += st.spin_us;
		pre += st.preempt;
		if (m->ent_s[i] > 1e-9) {
			x = st.work_us / 1e6 / m->ent_s[i];
			sx += x;
			sxx += x * x;
			n++;
		}
	}
	secs = (double)sim_now_us(m->sim) / 1e6;
	s->jain = sxx > 0 ? sx * sx / (n * sxx) : 1;
	s->preempt_per_s = secs > 0 ? (double)pre / secs : 0;
	s->spin_share = run > 0 ? spin / run : 0;
	s->steal_share = run + delay > 0 ? delay / (run + delay) : 0;
	s->idle_share = secs > 0 ? sim_idle_us(m->sim) / 1e6 /
	    (secs * m->sc->pcpus) : 0;
	for (k = 0; k < m->nwin; k++) {
		w = &m->win[k];
		w->settle_s = 0;
		w->changes = 0;
		w->converged = true;
		for (i = 0; i < m->nchg; i++) {
			if (m->chg_t[i] < w->start_s || m->chg_t[i] >= w->end_s)
				continue;
			w->changes++;
			w->settle_s = m->chg_t[i] - w->start_s;
			if (m->chg_t[i] >= (w->start_s + w->end_s) / 2) {
				w->converged = false;
				steady++;
			}
		}
		steady_s += (w->end_s - w->start_s) / 2;
		w->band_s = met_band(m, w);
	}
	s->steady_changes_per_min = steady_s > 0 ? steady / (steady_s / 60) : 0;
	s->win = m->win;
	s->nwin = m->nwin;
}

double
met_vm_work(const struct met *m, unsigned int vm)
{
	struct sim_vm_stat st;

	sim_vm_stat(m->sim, vm, &st);
	return st.work_us / 1e6;
}

double
met_vm_entitled(const struct met *m, unsigned int vm)
{
	return m->ent_s[vm];
}

int
met_write_series(const struct met *m, const char *path)
{
	FILE	*f;
	size_t	 i, j;

	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fprintf(f, "# t_s");
	for (j = 0; j < m->nvm; j++)
		fprintf(f, " %s", m->sc->vms[j].name);
	fprintf(f, "\n");
	for (i = 0; i < m->nsamples; i++) {
		fprintf(f, "%g", (double)(i * m->period_us) / 1e6);
		for (j = 0; j < m->nvm; j++)
			fprintf(f, " %u", m->series[i * m->nvm + j]);
		fprintf(f, "\n");
	}
	return fclose(f) == 0 ? 0 : -1;
}
