/*
 * Invariants of the simulator: the scenario parser, the seed governor's
 * step rules at its thresholds, the host scheduler (one thread per pCPU,
 * work conserved when there is room, shares by weight), the guest honouring
 * its preferred set, and the policies' fair shares.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "gov.h"
#include "met.h"
#include "scen.h"
#include "sim.h"
#include "testlib.h"

static void
load(struct scen *sc, const char *text)
{
	char	err[256];

	ck_assert_msg(scen_parse(sc, text, "test", err, sizeof err) == 0,
	    "%s", err);
}

/* Run a scenario under a policy, checking the invariants every tick. */
static struct sim *
run(const struct scen *sc, const char *policy)
{
	struct sim	*s = sim_new(sc);
	struct ctl	*c = ctl_new((size_t)ctl_lookup(policy), s, sc);
	char		 err[256];

	ctl_tick(c);
	while (!sim_done(s)) {
		sim_tick(s);
		ctl_tick(c);
		ck_assert_msg(sim_check(s, err, sizeof err) == 0, "%s at %llu",
		    err, (unsigned long long)sim_now_us(s));
	}
	ctl_free(c);
	return s;
}

START_TEST(parse_ok)
{
	struct scen sc;

	load(&sc, "name t\npcpus 16 # host\nduration 10\ntitle A b c\n"
	    "vm g count=3 vcpus=8 threads=2 weight=200 workload=spin\n"
	    "vm x vcpus=4 agent=no workload=bursty tasks=2 on-ms=5\n"
	    "at 5 g tasks=2\nat 6 x tasks=0\n");
	ck_assert_str_eq(sc.title, "A b c");
	ck_assert_uint_eq(sc.nvms, 4);
	ck_assert_str_eq(sc.vms[2].name, "g3");
	ck_assert_uint_eq(sc.vms[1].threads, 2);
	ck_assert_uint_eq(sc.vms[0].tasks, 8);
	ck_assert(!sc.vms[3].agent);
	ck_assert_uint_eq(sc.nevents, 4);
	ck_assert_uint_eq(sc.events[3].vm, 3);
	ck_assert_double_eq_tol(scen_vm_demand(&sc.vms[3], 2), 2 * 5.0 / 85,
	    1e-9);
	scen_free(&sc);
}
END_TEST

START_TEST(parse_errors)
{
	static const struct {
		const char	*text;
		const char	*want;
	} bad[] = {
		{ "name t\npcpus 4\nduration 1\nvm a vcpus=3 threads=2\n",
		    "test:4:" },
		{ "name t\npcpus 4\nbogus 1\n", "test:3: unknown directive" },
		{ "name t\nvm a vcpus=2 color=red\n", "test:2: vm: unknown key" },
		{ "name t\nat 1 nobody tasks=1\n", "test:2: at: no VM" },
		{ "name t\npcpus 0\n", "test:2: pcpus" },
		{ "name t\npcpus 4\nduration 1\n", "at least one vm" },
		{ "name t\nvm a vcpus=2\nat 5 a tasks=1\nat 4 a tasks=2\n",
		    "test:4: at: times" },
	};
	struct scen	sc;
	char		err[256];
	size_t		i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(scen_parse(&sc, bad[i].text, "test", err,
		    sizeof err), -1);
		ck_assert_msg(strstr(err, bad[i].want) != NULL,
		    "case %zu: '%s' lacks '%s'", i, err, bad[i].want);
	}
}
END_TEST

static void
gov_fixture(struct cpuset *online, struct cpuset *cores, unsigned int n,
    unsigned int th, struct cpuset *pref)
{
	unsigned int	k;

	cpuset_zero(online);
	cpuset_set_range(online, 0, n - 1);
	for (k = 0; k < n / th; k++) {
		cpuset_zero(&cores[k]);
		cpuset_set_range(&cores[k], k * th, k * th + th - 1);
	}
	*pref = *online;
}

/* Steal of 8 CPUs over one second at 'hundredths' of a percent. */
static enum gov_action
gov_at(struct gov *g, uint64_t *steal, unsigned int hundredths,
    const struct cpuset *online, const struct cpuset *cores,
    unsigned int ncores, struct cpuset *pref)
{
	uint64_t	ratio, now = g->prev_time_ns + 1000000000ULL;

	*steal += (uint64_t)hundredths * 8 * 1000000000ULL / 10000;
	return gov_step(g, now, *steal, online, cores, ncores, 0, pref, &ratio);
}

START_TEST(governor_thresholds)
{
	struct cpuset	online, cores[8], pref, want;
	struct gov	g = { 0, 0 };
	uint64_t	steal = 0;

	gov_fixture(&online, cores, 8, 1, &pref);
	/* 5.00% is not above the high threshold. */
	ck_assert_int_eq(gov_at(&g, &steal, 500, &online, cores, 8, &pref),
	    GOV_HOLD);
	ck_assert_uint_eq(cpuset_count(&pref), 8);
	/* 5.01% drops the last preferred core. */
	ck_assert_int_eq(gov_at(&g, &steal, 501, &online, cores, 8, &pref),
	    GOV_SHRINK);
	ck_assert(!cpuset_isset(&pref, 7));
	ck_assert_uint_eq(cpuset_count(&pref), 7);
	ck_assert_int_eq(gov_at(&g, &steal, 900, &online, cores, 8, &pref),
	    GOV_SHRINK);
	ck_assert(!cpuset_isset(&pref, 6));
	/* 2.00% is not below the low threshold; between them, hold. */
	ck_assert_int_eq(gov_at(&g, &steal, 200, &online, cores, 8, &pref),
	    GOV_HOLD);
	ck_assert_int_eq(gov_at(&g, &steal, 350, &online, cores, 8, &pref),
	    GOV_HOLD);
	ck_assert_uint_eq(cpuset_count(&pref), 6);
	/* 1.99% adds back the first non-preferred core. */
	ck_assert_int_eq(gov_at(&g, &steal, 199, &online, cores, 8, &pref),
	    GOV_GROW);
	cpuset_zero(&want);
	cpuset_set_range(&want, 0, 6);
	ck_assert(cpuset_equal(&pref, &want));
}
END_TEST

START_TEST(governor_keeps_a_core)
{
	struct cpuset	online, cores[4], pref, want;
	struct gov	g = { 0, 0 };
	uint64_t	steal = 0;
	int		i;

	gov_fixture(&online, cores, 8, 2, &pref);
	/* SMT2: a whole core at a time, and never the governor's own. */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(gov_at(&g, &steal, 5000, &online, cores, 4,
		    &pref), GOV_SHRINK);
	cpuset_zero(&want);
	cpuset_set_range(&want, 0, 1);
	ck_assert(cpuset_equal(&pref, &want));
	ck_assert_int_eq(gov_at(&g, &steal, 5000, &online, cores, 4, &pref),
	    GOV_HOLD);
	ck_assert(cpuset_equal(&pref, &want));
	ck_assert_int_eq(gov_at(&g, &steal, 0, &online, cores, 4, &pref),
	    GOV_GROW);
	ck_assert_uint_eq(cpuset_count(&pref), 4);
	ck_assert(cpuset_isset(&pref, 3));
}
END_TEST

START_TEST(work_conserved_undersubscribed)
{
	struct scen		sc;
	struct sim		*s;
	struct sim_vm_stat	st;
	unsigned int		i;

	load(&sc, "name t\npcpus 16\nduration 5\n"
	    "vm a count=2 vcpus=4 workload=cpu\n"
	    "vm b vcpus=8 workload=spin tasks=4\n");
	s = run(&sc, "none");
	for (i = 0; i < 2; i++) {
		sim_vm_stat(s, i, &st);
		ck_assert_double_eq_tol(st.work_us, 4 * 5e6, 1e-3);
		ck_assert_double_eq_tol(st.delay_us, 0, 1e-9);
		ck_assert_uint_eq(st.preempt, 0);
	}
	/* The spinning VM runs whenever it has a task: no steal either. */
	sim_vm_stat(s, 2, &st);
	ck_assert_double_eq_tol(st.run_us, 4 * 5e6, 1e-3);
	ck_assert_double_eq_tol(st.work_us + st.spin_us, st.run_us, 1e-3);
	ck_assert_double_eq_tol(sim_idle_us(s), 4 * 5e6, 1e-3);
	sim_free(s);
	scen_free(&sc);
}
END_TEST

START_TEST(shares_by_weight)
{
	struct scen		sc;
	struct sim		*s;
	struct sim_vm_stat	a, b;

	load(&sc, "name t\npcpus 8\nduration 20\n"
	    "vm a vcpus=8 workload=cpu weight=100\n"
	    "vm b vcpus=8 workload=cpu weight=300\n");
	s = run(&sc, "none");
	sim_vm_stat(s, 0, &a);
	sim_vm_stat(s, 1, &b);
	/* Busy host: no pCPU idles, and the split follows the weights. */
	ck_assert_double_eq_tol(a.run_us + b.run_us, 8 * 20e6, 1e-3);
	ck_assert_double_eq_tol(sim_idle_us(s), 0, 1e-3);
	ck_assert_double_eq_tol(a.run_us / (8 * 20e6), 0.25, 0.01);
	ck_assert_uint_gt(a.preempt, 0);
	sim_free(s);
	scen_free(&sc);
}
END_TEST

START_TEST(preferred_set_honoured)
{
	struct scen	sc;
	struct sim	*s;
	struct cpuset	pref;
	double		run0[8], run1[8], delay;
	unsigned int	i, t;

	load(&sc, "name t\npcpus 16\nduration 4\n"
	    "vm a vcpus=8 workload=barrier work-us=500 spin-us=20\n");
	s = sim_new(&sc);
	cpuset_zero(&pref);
	cpuset_set_range(&pref, 2, 4);
	sim_set_preferred(s, 0, &pref);
	for (t = 0; t < 20; t++)
		sim_tick(s);
	for (i = 0; i < 8; i++)
		sim_vcpu_times(s, 0, i, &run0[i], &delay);
	while (!sim_done(s))
		sim_tick(s);
	for (i = 0; i < 8; i++) {
		sim_vcpu_times(s, 0, i, &run1[i], &delay);
		if (cpuset_isset(&pref, i))
			ck_assert_double_gt(run1[i] - run0[i], 1e6);
		else
			ck_assert_double_eq_tol(run1[i] - run0[i], 0, 1e-9);
	}
	/* An empty set is refused: a guest always keeps a CPU. */
	cpuset_zero(&pref);
	sim_set_preferred(s, 0, &pref);
	ck_assert_uint_eq(cpuset_count(sim_preferred(s, 0)), 3);
	sim_free(s);
	scen_free(&sc);
}
END_TEST

/* moved counts each vCPU that entered or left the set, nothing else. */
START_TEST(moved_vcpus_counted)
{
	struct scen		sc;
	struct sim		*s;
	struct cpuset		pref;
	struct sim_vm_stat	st;

	load(&sc, "name t\npcpus 16\nduration 1\nvm a vcpus=8\n");
	s = sim_new(&sc);
	cpuset_zero(&pref);
	cpuset_set_range(&pref, 2, 4);
	sim_set_preferred(s, 0, &pref);		/* 0-1 and 5-7 leave */
	sim_vm_stat(s, 0, &st);
	ck_assert_uint_eq(st.moved, 5);
	sim_set_preferred(s, 0, &pref);		/* the same set */
	cpuset_zero(&pref);
	sim_set_preferred(s, 0, &pref);		/* refused */
	sim_vm_stat(s, 0, &st);
	ck_assert_uint_eq(st.moved, 5);
	cpuset_set_range(&pref, 3, 5);
	sim_set_preferred(s, 0, &pref);		/* 2 leaves, 5 enters */
	sim_vm_stat(s, 0, &st);
	ck_assert_uint_eq(st.moved, 7);
	ck_assert_uint_eq(sim_pref_changes(s, 0), 2);
	sim_free(s);
	scen_free(&sc);
}
END_TEST

START_TEST(waterfill)
{
	double	claim[] = { 1, 10, 10 }, w[] = { 1, 1, 2 }, share[3];

	ctl_waterfill(claim, w, 3, 12, share);
	ck_assert_double_eq_tol(share[0], 1, 1e-9);
	ck_assert_double_eq_tol(share[1], 11.0 / 3, 1e-9);
	ck_assert_double_eq_tol(share[2], 22.0 / 3, 1e-9);
	ctl_waterfill(claim, w, 3, 40, share);
	ck_assert_double_eq_tol(share[1], 10, 1e-9);
}
END_TEST

static const char spin4x8[] = "name t\npcpus 16\nduration 20\n"
    "vm v count=4 vcpus=8 workload=spin cs-us=20 par-us=200\n";

START_TEST(policies_reach_fair_share)
{
	struct scen	 sc;
	struct sim	*s;
	const char	*pol[] = { "oracle", "prefcpu" };
	unsigned int	 i, k, n, sum;

	load(&sc, spin4x8);
	for (k = 0; k < 2; k++) {
		s = run(&sc, pol[k]);
		sum = 0;
		n = cpuset_count(sim_preferred(s, 0));
		for (i = 0; i < 4; i++) {
			ck_assert_uint_eq(cpuset_count(sim_preferred(s, i)), n);
			sum += n;
		}
		ck_assert_msg(sum <= 16 && n < 8, "%s: %u vCPUs each",
		    pol[k], n);
		sim_free(s);
	}
	scen_free(&sc);
}
END_TEST

/*
 * The fixed policy holds every agent VM at its first -k cores for the
 * whole run (two vCPUs each with threads=2; a VM of fewer cores keeps
 * them all) and leaves a VM without an agent alone; it runs only when
 * named.
 */
START_TEST(fixed_cores)
{
	struct scen	 sc;
	struct sim	*s;
	const struct cpuset *p;
	int		 f = ctl_lookup("fixed");

	ck_assert_int_ge(f, 0);
	ck_assert(ctl_optional((size_t)f));
	ck_assert(!ctl_optional((size_t)ctl_lookup("prefcpu")));
	load(&sc, "name t\npcpus 4\nduration 2\n"
	    "vm a vcpus=8 threads=2 workload=spin\n"
	    "vm b vcpus=2 threads=2\n"
	    "vm c vcpus=8 agent=no\n");
	ctl_set_fixed_cores(3);
	s = run(&sc, "fixed");
	p = sim_preferred(s, 0);
	ck_assert_uint_eq(cpuset_count(p), 6);
	ck_assert(cpuset_isset(p, 0) && cpuset_isset(p, 5) &&
	    !cpuset_isset(p, 6));
	ck_assert_uint_eq(sim_pref_changes(s, 0), 1);
	ck_assert_uint_eq(cpuset_count(sim_preferred(s, 1)), 2);
	ck_assert_uint_eq(cpuset_count(sim_preferred(s, 2)), 8);
	ctl_set_fixed_cores(1);
	sim_free(s);
	scen_free(&sc);
}
END_TEST

START_TEST(coordination_beats_overcommit)
{
	struct scen		sc;
	struct sim		*s;
	struct sim_vm_stat	st;
	double			work[2] = { 0, 0 }, spin[2] = { 0, 0 };
	const char		*pol[] = { "none", "oracle" };
	unsigned int		i, k;

	/* Lock holders preempted cost spinning; fair whole cores do not. */
	load(&sc, spin4x8);
	for (k = 0; k < 2; k++) {
		s = run(&sc, pol[k]);
		for (i = 0; i < 4; i++) {
			sim_vm_stat(s, i, &st);
			work[k] += st.work_us;
			spin[k] += st.spin_us;
		}
		sim_free(s);
	}
	ck_assert_double_gt(work[1], work[0] * 1.1);
	ck_assert_double_lt(spin[1], spin[0] / 2);
	scen_free(&sc);
}
END_TEST

START_TEST(deterministic)
{
	struct scen		sc;
	struct sim		*a, *b;
	struct sim_vm_stat	x, y;

	load(&sc, "name t\npcpus 6\nduration 3\n"
	    "vm v count=2 vcpus=4 workload=bursty on-ms=3 off-ms=3\n"
	    "vm w vcpus=4 workload=barrier\n");
	a = run(&sc, "governor");
	b = run(&sc, "governor");
	sim_vm_stat(a, 2, &x);
	sim_vm_stat(b, 2, &y);
	ck_assert(x.work_us == y.work_us && x.preempt == y.preempt);
	sim_free(a);
	sim_free(b);
	scen_free(&sc);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("sim");
	TCase	*tc = tcase_create("sim");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, parse_ok);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, governor_thresholds);
	tcase_add_test(tc, governor_keeps_a_core);
	tcase_add_test(tc, work_conserved_undersubscribed);
	tcase_add_test(tc, shares_by_weight);
	tcase_add_test(tc, preferred_set_honoured);
	tcase_add_test(tc, moved_vcpus_counted);
	tcase_add_test(tc, waterfill);
	tcase_add_test(tc, policies_reach_fair_share);
	tcase_add_test(tc, fixed_cores);
	tcase_add_test(tc, coordination_beats_overcommit);
	tcase_add_test(tc, deterministic);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
