/*
 * prefcpu-sim: run the policies side by side on one scenario (same seed,
 * same workload) and write the comparison as Markdown, CSV and per-policy
 * time series of the preferred vCPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "met.h"
#include "scen.h"
#include "sim.h"
#include "util.h"

struct run {
	size_t		 kind;
	struct sim	*sim;
	struct met	*met;
	struct met_summary sum;
	double		 runtime_s;
};

static __attribute__((noreturn)) void
usage(void)
{
	fprintf(stderr, "usage: prefcpu-sim [-c] [-d seconds] [-g periods] "
	    "[-k cores] [-o dir] [-p policy,...] [-s seed] scenario\n"
	    "  -c  check the model's invariants every tick\n"
	    "  -d  override the scenario's duration\n"
	    "  -g  grow-after of the prefcpu policy (default: 1)\n"
	    "  -k  cores of each agent VM under the fixed policy "
	    "(default: 1)\n"
	    "  -o  write NAME.md, NAME.csv, NAME-vms.csv, NAME-POLICY.dat "
	    "there\n"
	    "  -p  policies to run (default:");
	for (size_t i = 0; i < ctl_count(); i++)
		if (!ctl_optional(i))
			fprintf(stderr, " %s", ctl_name(i));
	fprintf(stderr, "; also:");
	for (size_t i = 0; i < ctl_count(); i++)
		if (ctl_optional(i))
			fprintf(stderr, " %s", ctl_name(i));
	fprintf(stderr, ")\n  -s  override the scenario's seed\n");
	exit(2);
}

static void
run_one(struct run *r, const struct scen *sc, bool check)
{
	struct ctl	*c;
	uint64_t	 t0 = time_mono_ns();
	char		 err[256];

	r->sim = sim_new(sc);
	r->met = met_new(sc, r->sim);
	c = ctl_new(r->kind, r->sim, sc);
	ctl_tick(c);
	met_tick(r->met);
	while (!sim_done(r->sim)) {
		sim_tick(r->sim);
		ctl_tick(c);
		met_tick(r->met);
		if (check && sim_check(r->sim, err, sizeof err) == -1)
			fatalx("%s: %s at %llu us: %s", sc->name,
			    ctl_name(r->kind),
			    (unsigned long long)sim_now_us(r->sim), err);
	}
	r->runtime_s = (double)(time_mono_ns() - t0) / 1e9;
	met_summary(r->met, &r->sum);
	ctl_free(c);
}

/*
 * Per demand change: when the sets stopped changing ("never" if they
 * still change in the second half of the interval) and, for the CSV's
 * band column, when every VM came within a core of where it ends.
 */
static void
fmt_settle(const struct met_summary *s, char *buf, size_t len, bool md,
    bool band)
{
	const struct met_window *w;
	size_t	 k, off = 0;
	int	 n;
	char	 exact[32];

	buf[0] = '\0';
	for (k = 0; k < s->nwin && off < len; k++) {
		w = &s->win[k];
		if (w->converged)
			snprintf(exact, sizeof exact, "%.1f", w->settle_s);
		else
			snprintf(exact, sizeof exact, "never");
		if (md)
			n = snprintf(buf + off, len - off, "%st=%g: %s / %.1f",
			    k ? "<br>" : "", w->start_s, exact, w->band_s);
		else if (band)
			n = snprintf(buf + off, len - off, "%s%g: %.1f",
			    k ? "; " : "", w->start_s, w->band_s);
		else
			n = snprintf(buf + off, len - off, "%s%g: %s",
			    k ? "; " : "", w->start_s, exact);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}

static FILE *
open_out(const char *dir, const char *name, const char *suffix)
{
	char	*path;
	FILE	*f;

	xasprintf(&path, "%s/%s%s", dir, name, suffix);
	if ((f = fopen(path, "w")) == NULL)
		fatal("%s", path);
	free(path);
	return f;
}

static void
write_md(FILE *f, const struct scen *sc, const struct run *runs, size_t n)
{
	const struct run *none = NULL;
	unsigned int	 vcpus = 0;
	size_t		 i, j;
	char		 settle[512];

	for (i = 0; i < sc->nvms; i++)
		vcpus += sc->vms[i].vcpus;
	for (i = 0; i < n; i++)
		if (strcmp(ctl_name(runs[i].kind), "none") == 0)
			none = &runs[i];
	fprintf(f, "### %s (`%s`)\n\n", sc->title[0] ? sc->title : sc->name,
	    sc->name);
	fprintf(f, "%u pCPUs, %zu VMs, %u vCPUs (%.2fx), %g s simulated, "
	    "tick %u us, host slice %u us, policy period %u ms, seed %llu.\n\n",
	    sc->pcpus, sc->nvms, vcpus, (double)vcpus / sc->pcpus,
	    sc->duration_s, sc->tick_us, sc->slice_us, sc->period_ms,
	    (unsigned long long)sc->seed);
	fprintf(f, "| policy | useful work (CPU s) | vs none | Jain (work/"
	    "entitlement) | vCPU preemptions/s | spinning (%% of vCPU run) "
	    "| steal (%% of runnable) | pCPU idle (%%) | settles after change, "
	    "s: exactly / within a core | changes/min, steady | sim runtime "
	    "(s) |\n");
	fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n");
	for (i = 0; i < n; i++) {
		const struct met_summary *s = &runs[i].sum;

		fmt_settle(s, settle, sizeof settle, true, false);
		fprintf(f, "| %s | %.1f | ", ctl_name(runs[i].kind), s->work_s);
		if (none != NULL && none->sum.work_s > 0)
			fprintf(f, "%+.1f%% | ", 100.0 * (s->work_s /
			    none->sum.work_s - 1));
		else
			fprintf(f, "- | ");
		fprintf(f, "%.3f | %.1f | %.1f | %.1f | %.1f | %s | %.1f | "
		    "%.2f |\n", s->jain, s->preempt_per_s,
		    100 * s->spin_share, 100 * s->steal_share,
		    100 * s->idle_share, settle, s->steady_changes_per_min,
		    runs[i].runtime_s);
	}
	if (sc->nvms > 8) {
		fprintf(f, "\n");
		return;
	}
	fprintf(f, "\nUseful work per VM, CPU s (and as a share of its "
	    "weighted entitlement):\n\n| VM | vCPUs | weight | agent | "
	    "workload | entitled |");
	for (i = 0; i < n; i++)
		fprintf(f, " %s |", ctl_name(runs[i].kind));
	fprintf(f, "\n|---|---:|---:|---|---|---:|");
	for (i = 0; i < n; i++)
		fprintf(f, "---:|");
	fprintf(f, "\n");
	for (j = 0; j < sc->nvms; j++) {
		const struct scen_vm *vm = &sc->vms[j];
		double	ent = met_vm_entitled(runs[0].met, (unsigned int)j);

		fprintf(f, "| %s | %u%s | %u | %s | %s | %.1f |", vm->name,
		    vm->vcpus, vm->threads > 1 ? " (SMT2)" : "", vm->weight,
		    vm->agent ? "yes" : "no", scen_wl_name(vm->wl), ent);
		for (i = 0; i < n; i++) {
			double	w = met_vm_work(runs[i].met, (unsigned int)j);

			if (ent > 0)
				fprintf(f, " %.1f (%.0f%%) |", w, 100 * w / ent);
			else
				fprintf(f, " %.1f |", w);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\n");
}

static void
write_csv(const char *dir, const struct scen *sc, const struct run *runs,
    size_t n)
{
	FILE	*f, *g;
	double	 base = 0;
	size_t	 i, j;
	char	 settle[512], band[512];

	for (i = 0; i < n; i++)
		if (strcmp(ctl_name(runs[i].kind), "none") == 0)
			base = runs[i].sum.work_s;
	f = open_out(dir, sc->name, ".csv");
	g = open_out(dir, sc->name, "-vms.csv");
	fprintf(f, "scenario,policy,work_s,work_vs_none,jain,"
	    "preemptions_per_s,spin_share,steal_share,idle_share,settle_s,"
	    "band_s,steady_changes_per_min,moved_vcpus,runtime_s\n");
	fprintf(g, "scenario,policy,vm,vcpus,threads,weight,agent,workload,"
	    "work_s,entitled_s\n");
	for (i = 0; i < n; i++) {
		const struct met_summary *s = &runs[i].sum;

		fmt_settle(s, settle, sizeof settle, false, false);
		fmt_settle(s, band, sizeof band, false, true);
		fprintf(f, "%s,%s,%.3f,%.4f,%.4f,%.2f,%.4f,%.4f,%.4f,\"%s\","
		    "\"%s\",%.2f,%llu,%.3f\n", sc->name,
		    ctl_name(runs[i].kind), s->work_s,
		    base > 0 ? s->work_s / base : 0, s->jain,
		    s->preempt_per_s, s->spin_share, s->steal_share,
		    s->idle_share, settle, band, s->steady_changes_per_min,
		    (unsigned long long)s->moved, runs[i].runtime_s);
		for (j = 0; j < sc->nvms; j++) {
			const struct scen_vm *vm = &sc->vms[j];

			fprintf(g, "%s,%s,%s,%u,%u,%u,%s,%s,%.3f,%.3f\n",
			    sc->name, ctl_name(runs[i].kind), vm->name,
			    vm->vcpus, vm->threads, vm->weight,
			    vm->agent ? "yes" : "no", scen_wl_name(vm->wl),
			    met_vm_work(runs[i].met, (unsigned int)j),
			    met_vm_entitled(runs[i].met, (unsigned int)j));
		}
	}
	if (fclose(f) != 0 || fclose(g) != 0)
		fatal("%s: writing CSV", dir);
}

int
main(int argc, char **argv)
{
	struct scen	 sc;
	struct run	*runs;
	const char	*outdir = NULL, *plist = NULL;
	char		 err[512], *list, *tok, *save = NULL, *path;
	size_t		 n = 0, i;
	uint64_t	 u;
	double		 dur = 0;
	bool		 check = false, seed_set = false;
	int		 ch, k;
	uint64_t	 seed = 0;
	FILE		*md;

	log_init("prefcpu-sim", LOGL_NOTICE);
	while ((ch = getopt(argc, argv, "cd:g:k:o:p:s:")) != -1) {
		switch (ch) {
		case 'c':
			check = true;
			break;
		case 'd':
			if (parse_uint(optarg, 1, 36000, &u) == -1)
				fatalx("-d: not a number of seconds: %s", optarg);
			dur = (double)u;
			break;
		case 'g':
			if (parse_uint(optarg, 1, 3600, &u) == -1)
				fatalx("-g: not a number of periods: %s",
				    optarg);
			ctl_set_grow_after((unsigned int)u);
			break;
		case 'k':
			if (parse_uint(optarg, 1, SCEN_MAX_VCPUS, &u) == -1)
				fatalx("-k: not a number of cores: %s",
				    optarg);
			ctl_set_fixed_cores((unsigned int)u);
			break;
		case 'o':
			outdir = optarg;
			break;
		case 'p':
			plist = optarg;
			break;
		case 's':
			if (parse_uint(optarg, 0, UINT32_MAX, &seed) == -1)
				fatalx("-s: not a seed: %s", optarg);
			seed_set = true;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	if (scen_load(&sc, argv[optind], err, sizeof err) == -1)
		fatalx("%s", err);
	if (dur > 0)
		sc.duration_s = dur;
	if (seed_set)
		sc.seed = seed;
	runs = xcalloc(ctl_count(), sizeof *runs);
	if (plist == NULL) {
		for (i = 0; i < ctl_count(); i++)
			if (!ctl_optional(i))
				runs[n++].kind = i;
	} else {
		list = xstrdup(plist);
		for (tok = strtok_r(list, ",", &save); tok != NULL;
		    tok = strtok_r(NULL, ",", &save)) {
			if ((k = ctl_lookup(tok)) < 0)
				fatalx("-p: unknown policy '%s'", tok);
			if (n == ctl_count())
				fatalx("-p: a policy is named twice");
			runs[n++].kind = (size_t)k;
		}
		free(list);
	}
	for (i = 0; i < n; i++)
		run_one(&runs[i], &sc, check);
	write_md(stdout, &sc, runs, n);
	if (outdir != NULL) {
		md = open_out(outdir, sc.name, ".md");
		write_md(md, &sc, runs, n);
		if (fclose(md) != 0)
			fatal("%s/%s.md", outdir, sc.name);
		write_csv(outdir, &sc, runs, n);
		for (i = 0; i < n; i++) {
			xasprintf(&path, "%s/%s-%s.dat", outdir, sc.name,
			    ctl_name(runs[i].kind));
			if (met_write_series(runs[i].met, path) == -1)
				fatal("%s", path);
			free(path);
		}
	}
	for (i = 0; i < n; i++) {
		met_free(runs[i].met);
		sim_free(runs[i].sim);
	}
	free(runs);
	scen_free(&sc);
	return 0;
}
