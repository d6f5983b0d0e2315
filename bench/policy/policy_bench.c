/*
 * policy-bench: the cost of one policy_decide() per period on synthetic
 * hosts, 10 to 1000 VMs of 8 or 64 vCPUs, all on one over-committed
 * contention domain (the largest water-fill), with loads that move every
 * period.  Prints the mean and max CPU time of the calling thread per
 * period (wall time would count the preemptions of a busy machine), and
 * the mean wall time.
 *
 * usage: policy-bench [periods]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy.h"
#include "util.h"

struct bench_host {
	unsigned int		 nvm, nvcpus, smt, npcpus;
	struct policy_vm	*vms;
	struct policy_state	*st;
	struct policy_decision	*out;
	struct cpuset		*cores;
	unsigned int		*node;
	char			(*names)[16];
};

static unsigned long	bench_seed = 42;

/* CPU time of this thread, ns. */
static uint64_t
bench_cpu_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* Deterministic pseudo-random in [0, 1). */
static double
bench_rand(void)
{
	bench_seed = bench_seed * 6364136223846793005UL + 1442695040888963407UL;
	return (double)(bench_seed >> 11) / (double)(1UL << 53);
}

static void
bench_build(struct bench_host *h, unsigned int nvm, unsigned int nvcpus)
{
	struct cpuset	 host;
	unsigned int	 i, c, ncores;

	h->nvm = nvm;
	h->nvcpus = nvcpus;
	h->smt = 2;
	ncores = nvcpus / h->smt;
	/* 2x over-commit, within the cpuset's range. */
	h->npcpus = nvm * nvcpus / 2;
	if (h->npcpus > CPUSET_MAX)
		h->npcpus = CPUSET_MAX;
	cpuset_zero(&host);
	cpuset_set_range(&host, 0, h->npcpus - 1);

	h->vms = xcalloc(nvm, sizeof(*h->vms));
	h->st = xcalloc(nvm, sizeof(*h->st));
	h->out = xcalloc(nvm, sizeof(*h->out));
	h->cores = xcalloc((size_t)nvm * ncores, sizeof(*h->cores));
	h->node = xcalloc((size_t)nvm * ncores, sizeof(*h->node));
	h->names = xcalloc(nvm, sizeof(*h->names));
	for (i = 0; i < nvm; i++) {
		struct policy_vm	*vm = &h->vms[i];
		struct cpuset		*cores = h->cores + (size_t)i * ncores;
		unsigned int		*node = h->node + (size_t)i * ncores;

		snprintf(h->names[i], sizeof(h->names[i]), "vm%u", i);
		vm->name = h->names[i];
		vm->nvcpus = nvcpus;
		cpuset_set_range(&vm->online, 0, nvcpus - 1);
		vm->ncores = ncores;
		for (c = 0; c < ncores; c++) {
			cpuset_set_range(&cores[c], c * h->smt,
			    c * h->smt + h->smt - 1);
			/* Big guests have two NUMA cells. */
			node[c] = nvcpus >= 32 && c >= ncores / 2;
		}
		vm->cores = cores;
		vm->core_node = node;
		vm->pcpus = host;
		vm->weight = 100 * (i % 4 + 1);
		vm->mode = POLICY_MODE_AUTO;
		/* One in ten without an agent, one in five with hints. */
		vm->steerable = i % 10 != 9;
		vm->hint_runnable = i % 5 == 0 ? 0 : -1;
		policy_state_init(&h->st[i]);
		vm->state = &h->st[i];
	}
}

static void
bench_free(struct bench_host *h)
{
	free(h->vms);
	free(h->st);
	free(h->out);
	free(h->cores);
	free(h->node);
	free(h->names);
}

/* Loads for one period: each VM wanders around its own level. */
static void
bench_load(struct bench_host *h, unsigned int period)
{
	unsigned int	i;

	for (i = 0; i < h->nvm; i++) {
		struct policy_vm	*vm = &h->vms[i];
		double			 want, have, run;

		want = h->nvcpus * ((i * 37 % 100) / 100.0) *
		    (0.8 + 0.4 * bench_rand());
		if ((period / 50 + i) % 7 == 0)
			want = h->nvcpus;	/* phase change */
		have = period == 0 || !vm->state->init ? h->nvcpus :
		    cpuset_count(&vm->state->preferred);
		run = want < have ? want : have;
		vm->run_cpus = run * 0.6;
		vm->delay_cpus = want - run * 0.6;
		if (vm->hint_runnable >= 0)
			vm->hint_runnable = want * 2;
	}
}

int
main(int argc, char **argv)
{
	static const struct { unsigned int nvm, nvcpus; } sizes[] = {
		{ 10, 8 }, { 100, 8 }, { 1000, 8 }, { 100, 64 }, { 1000, 64 },
	};
	struct policy_config	 cfg;
	struct policy_host	 host;
	struct policy_summary	 sum;
	unsigned int		 periods = 200, s, p;
	char			 err[256];

	if (argc > 1 && (periods = (unsigned int)atoi(argv[1])) == 0) {
		fprintf(stderr, "usage: policy-bench [periods]\n");
		return 1;
	}
	policy_config_default(&cfg);
	printf("%6s %6s %6s %8s %12s %12s %12s %9s\n", "vms", "vcpus",
	    "pcpus", "periods", "cpu_mean_us", "cpu_max_us", "wall_mean_us",
	    "changes");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct bench_host	 h;
		uint64_t		 t0, c0, dt, total = 0, max = 0, wall = 0;
		unsigned long		 changes = 0;
		unsigned int		 i;

		memset(&h, 0, sizeof(h));
		bench_build(&h, sizes[s].nvm, sizes[s].nvcpus);
		memset(&host, 0, sizeof(host));
		cpuset_set_range(&host.pcpus, 0, h.npcpus - 1);
		host.nonvm_cpus = h.npcpus * 0.05;
		for (p = 0; p < periods; p++) {
			host.now_ms = (uint64_t)(p + 1) * 1000;
			bench_load(&h, p);
			t0 = time_mono_ns();
			c0 = bench_cpu_ns();
			if (policy_decide(&cfg, &host, h.vms, h.nvm, h.out,
			    &sum, err, sizeof(err)) == -1) {
				fprintf(stderr, "policy_decide: %s\n", err);
				return 1;
			}
			dt = bench_cpu_ns() - c0;
			wall += time_mono_ns() - t0;
			total += dt;
			if (dt > max)
				max = dt;
			for (i = 0; i < h.nvm; i++)
				changes += h.out[i].changed;
		}
		printf("%6u %6u %6u %8u %12.1f %12.1f %12.1f %9lu\n", h.nvm,
		    h.nvcpus, h.npcpus, periods,
		    (double)total / periods / 1000.0, (double)max / 1000.0,
		    (double)wall / periods / 1000.0, changes);
		bench_free(&h);
	}
	return 0;
}
