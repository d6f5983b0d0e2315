/* Unit tests for host-agent/sampler on synthetic /proc, /sys and cgroup trees. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "model.h"
#include "sampler.h"
#include "testlib.h"
#include "util.h"

#define S	1000000000ULL

static char		*root;
static char		*proc, *sys, *cg;
static struct host	*host;
static struct sampler	*smp;
static long		 hz;

static void
setup(void)
{
	struct host_params	p;

	log_init("test-sampler", LOGL_WARNING);
	root = testlib_tmpdir();
	proc = path_join(root, "proc");
	sys = path_join(root, "sys");
	cg = path_join(root, "cgroup");
	hz = sysconf(_SC_CLK_TCK);
	memset(&p, 0, sizeof(p));
	p.history = 4;
	p.decisions = 4;
	policy_config_default(&p.policy);
	host = host_new(&p);
	smp = sampler_new(host, proc, sys, cg);
	testlib_put(root, "sys/devices/system/cpu/online", "0-3\n");
	testlib_put(root, "proc/pressure/cpu",
	    "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\n"
	    "full avg10=0.25 avg60=0.00 avg300=0.00 total=0\n");
}

static void
teardown(void)
{
	sampler_free(smp);
	host_free(host);
	free(proc);
	free(sys);
	free(cg);
	testlib_rmtree(root);
}

/* /proc/stat with busy (user) ticks per CPU and 1000 idle ticks each. */
static void
put_stat(const unsigned long long busy[4])
{
	char	buf[1024];
	int	n, i;

	n = snprintf(buf, sizeof(buf), "cpu  0 0 0 0 0 0 0 0 0 0\n");
	for (i = 0; i < 4; i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n,
		    "cpu%d %llu 0 0 1000 7 0 0 0 0 0\n", i, busy[i]);
	snprintf(buf + n, sizeof(buf) - (size_t)n,
	    "intr 1 2 3\nctxt 4\nprocs_running 1\n");
	testlib_put(root, "proc/stat", buf);
}

static void
put_schedstat(int tid, unsigned long long run, unsigned long long delay)
{
	char	rel[64], text[96];

	snprintf(rel, sizeof(rel), "proc/100/task/%d/schedstat", tid);
	snprintf(text, sizeof(text), "%llu %llu 42\n", run, delay);
	testlib_put(root, rel, text);
}

/* Describe vm with n vCPUs, one core each. */
static void
set_vcpus(struct vm *vm, unsigned int n)
{
	struct vm_info	 info;
	unsigned int	 i;

	memset(&info, 0, sizeof(info));
	snprintf(info.uuid, sizeof(info.uuid), "%s", vm->info.uuid);
	info.name = xstrdup("vm");
	info.nvcpus = n;
	cpuset_set_range(&info.online, 0, n - 1);
	info.ncores = n;
	info.core = xcalloc(n, sizeof(*info.core));
	for (i = 0; i < n; i++)
		cpuset_set(&info.core[i], i);
	vm_set_info(vm, &info);
}

/* A running VM with 3 vCPUs whose threads are 101..103 of pid 100. */
static struct vm *
add_vm(void)
{
	struct vm	*vm;
	pid_t		 tids[3] = { 101, 102, 103 };

	vm = host_vm_add(host, "4dea22b3-1d52-d8f3-2516-782e98ab3fa0", "vm");
	set_vcpus(vm, 3);
	vm_set_threads(vm, 100, tids, 3, VM_TID_STATUS_XML);
	return vm;
}

#define near(a, b)	(fabs((a) - (b)) < 1e-6)

START_TEST(test_rates_cgroup2)
{
	unsigned long long	 b0[4] = { 10, 10, 10, 10 }, b1[4];
	const struct host_sample *hs = host_sample(host);
	struct vm		*vm = add_vm();

	testlib_put(root, "cgroup/machine.slice/cpuset.cpus.effective", "1-3\n");
	/* A v1 file too: v2 wins. */
	testlib_put(root, "cgroup/cpuset/machine/cpuset.cpus", "0\n");
	put_stat(b0);
	put_schedstat(101, 1 * S, S / 2);
	put_schedstat(102, 0, 0);
	put_schedstat(103, 5 * S, 0);

	ck_assert_int_eq(sampler_run(smp, 10 * S), 0);
	ck_assert(!hs->valid);
	ck_assert(!vm->sample.valid);
	ck_assert_uint_eq(vm->sample.threads, 3);

	/* One second later: CPU 1 busy all along, CPU 2 half, CPU 0 (not
	 * usable) all along. */
	b1[0] = 10 + (unsigned long long)hz;
	b1[1] = 10 + (unsigned long long)hz;
	b1[2] = 10 + (unsigned long long)hz / 2;
	b1[3] = 10;
	put_stat(b1);
	put_schedstat(101, 1 * S + 900000000ULL, S / 2 + 300000000ULL);
	put_schedstat(103, 5 * S + 100000000ULL, 0);
	ck_assert_int_eq(sampler_run(smp, 11 * S), 0);

	ck_assert(hs->valid);
	ck_assert(near(hs->period_s, 1.0));
	ck_assert_str_eq(hs->usable_from, "cgroup2");
	ck_assert_uint_eq(cpuset_count(&hs->usable), 3);
	ck_assert(!cpuset_isset(&hs->usable, 0));
	ck_assert_uint_eq(cpuset_count(&hs->online), 4);
	ck_assert(vm->sample.valid);
	ck_assert(near(vm->thread[0].run_cpus, 0.9));
	ck_assert(near(vm->thread[0].delay_cpus, 0.3));
	ck_assert(near(vm->thread[1].run_cpus, 0.0));
	ck_assert(near(vm->sample.run_cpus, 1.0));
	ck_assert(near(vm->sample.delay_cpus, 0.3));
	ck_assert(near(hs->vm_run_cpus, 1.0));
	ck_assert(near(hs->busy_cpus, 1.5));
	ck_assert(near(hs->nonvm_cpus, 0.5));
	ck_assert(near(hs->capacity, 2.5));
	ck_assert(near(hs->psi_some_avg10, 12.5));
	ck_assert(near(hs->psi_full_avg10, 0.25));
	ck_assert_uint_eq(hs->threads, 3);
	ck_assert_uint_eq(hs->gone, 0);
}
END_TEST

/* Threads vanish (the VM stops mid-read): counted, never an error. */
START_TEST(test_vanished_thread)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	const struct host_sample *hs = host_sample(host);
	struct vm		*vm = add_vm();

	put_stat(b);
	put_schedstat(101, S, 0);
	put_schedstat(102, S, 0);
	/* 103 is already gone before the first read. */
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	ck_assert_uint_eq(vm->sample.threads, 2);
	ck_assert_uint_eq(vm->sample.gone, 1);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 2), SAMPLER_T_GONE);
	ck_assert(!vm->thread[2].sampled);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 0), SAMPLER_T_OPEN);

	/* 102 exits while held open: procfs then reads nothing. */
	put_schedstat(101, 2 * S, 0);
	testlib_put(root, "proc/100/task/102/schedstat", "");
	ck_assert_int_eq(sampler_run(smp, 2 * S), 0);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 1), SAMPLER_T_GONE);
	ck_assert_uint_eq(vm->sample.threads, 1);
	ck_assert_uint_eq(hs->gone, 1);
	ck_assert(vm->sample.valid);
	ck_assert(near(vm->sample.run_cpus, 1.0));

	/* Gone threads are not retried; a new thread id is. */
	ck_assert_int_eq(sampler_run(smp, 3 * S), 0);
	ck_assert_uint_eq(vm->sample.gone, 0);
	pid_t tids[3] = { 101, 104, 103 };
	put_schedstat(104, 0, 0);
	vm_set_threads(vm, 100, tids, 3, VM_TID_COMM);
	host_vm_changed(host, vm);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 1), SAMPLER_T_CLOSED);
	ck_assert_int_eq(sampler_run(smp, 4 * S), 0);
	ck_assert_uint_eq(vm->sample.threads, 2);

	/* The whole VM goes. */
	testlib_put(root, "proc/100/task/101/schedstat", "");
	testlib_put(root, "proc/100/task/104/schedstat", "");
	ck_assert_int_eq(sampler_run(smp, 5 * S), 0);
	ck_assert_uint_eq(vm->sample.threads, 0);
	ck_assert(!vm->sample.valid);
}
END_TEST

START_TEST(test_cgroup1)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	const struct host_sample *hs = host_sample(host);

	put_stat(b);
	testlib_put(root, "cgroup/cpuset/machine/cpuset.cpus", "0,2\n");
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	ck_assert_str_eq(hs->usable_from, "cgroup1");
	ck_assert_uint_eq(cpuset_count(&hs->usable), 2);
	ck_assert(cpuset_isset(&hs->usable, 2));
	/* No rates yet: capacity is the usable CPUs. */
	ck_assert(near(hs->capacity, 2.0));
}
END_TEST

START_TEST(test_cgroup1_slice_offline)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	const struct host_sample *hs = host_sample(host);

	put_stat(b);
	testlib_put(root, "cgroup/cpuset/machine.slice/cpuset.effective_cpus",
	    "2-5\n");
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	ck_assert_str_eq(hs->usable_from, "cgroup1");
	/* 4 and 5 are not online. */
	ck_assert_uint_eq(cpuset_count(&hs->usable), 2);
}
END_TEST

START_TEST(test_fallback_online)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	const struct host_sample *hs = host_sample(host);
	uint64_t		 i;

	put_stat(b);
	/* An empty cpuset is no answer. */
	testlib_put(root, "cgroup/machine.slice/cpuset.cpus.effective", "\n");
	testlib_del(root, "proc/pressure/cpu");
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	ck_assert_str_eq(hs->usable_from, "online");
	ck_assert_uint_eq(cpuset_count(&hs->usable), 4);
	ck_assert(hs->psi_some_avg10 < 0);

	/* The cgroup appears (libvirtd started): picked up within 10 runs. */
	testlib_put(root, "cgroup/machine.slice/cpuset.cpus.effective", "3\n");
	for (i = 2; i <= 11; i++)
		ck_assert_int_eq(sampler_run(smp, i * S), 0);
	ck_assert_str_eq(hs->usable_from, "cgroup2");
	ck_assert_uint_eq(cpuset_count(&hs->usable), 1);
	testlib_put(root, "sys/devices/system/cpu/online", "garbage\n");
	ck_assert_int_eq(sampler_run(smp, 12 * S), -1);
	testlib_put(root, "sys/devices/system/cpu/online", "0-3\n");
	ck_assert_int_eq(sampler_run(smp, 13 * S), 0);
}
END_TEST

START_TEST(test_no_proc_stat)
{
	const struct host_sample *hs = host_sample(host);

	ck_assert_int_eq(sampler_run(smp, 1 * S), -1);
	ck_assert_int_eq(sampler_run(smp, 2 * S), -1);
	ck_assert(!hs->valid);
}
END_TEST

START_TEST(test_find_vcpu_threads)
{
	pid_t	tids[4];

	testlib_put(root, "proc/200/task/200/comm", "qemu-system-x86\n");
	testlib_put(root, "proc/200/task/201/comm", "CPU 0/TCG\n");
	testlib_put(root, "proc/200/task/203/comm", "CPU 2/KVM\n");
	testlib_put(root, "proc/200/task/204/comm", "CPU 9/KVM\n");
	testlib_put(root, "proc/200/task/205/comm", "IO mon_iothread\n");
	testlib_put(root, "proc/200/task/206/comm", "CPU x/KVM\n");
	ck_assert_int_eq(sampler_find_vcpu_threads(proc, 200, tids, 4), 2);
	ck_assert_int_eq(tids[0], 201);
	ck_assert_int_eq(tids[1], 0);
	ck_assert_int_eq(tids[2], 203);
	ck_assert_int_eq(tids[3], 0);
	ck_assert_int_eq(sampler_find_vcpu_threads(proc, 999, tids, 4), -1);
}
END_TEST

/* Descriptors open in this process. */
static unsigned int
open_fds(void)
{
	DIR		*d = opendir("/proc/self/fd");
	unsigned int	 n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

/*
 * The sampler's files follow the model: a thread id that changes, a vCPU
 * unplugged and a VM removed close their files at once (the model's hooks).
 */
START_TEST(test_files_follow_model)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	struct vm		*vm = add_vm();
	pid_t			 tids[3] = { 101, 104, 103 };
	unsigned int		 n0, i;

	put_stat(b);
	put_schedstat(101, S, 0);
	put_schedstat(102, S, 0);
	put_schedstat(103, S, 0);
	put_schedstat(104, S, 0);
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(sampler_thread_state(smp, vm, i),
		    SAMPLER_T_OPEN);
	n0 = open_fds();

	vm_set_threads(vm, 100, tids, 3, VM_TID_COMM);
	host_vm_changed(host, vm);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 1), SAMPLER_T_CLOSED);
	ck_assert(!vm->thread[1].sampled);
	ck_assert_uint_eq(open_fds(), n0 - 1);
	ck_assert_int_eq(sampler_run(smp, 2 * S), 0);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 1), SAMPLER_T_OPEN);
	ck_assert_uint_eq(open_fds(), n0);

	/* vCPU 2 unplugged. */
	set_vcpus(vm, 2);
	host_vm_changed(host, vm);
	ck_assert_uint_eq(open_fds(), n0 - 1);

	host_vm_remove(host, vm);
	ck_assert_uint_eq(open_fds(), n0 - 3);
}
END_TEST

/* New roots (SIGHUP): read from the new tree, rates start over. */
START_TEST(test_reroot)
{
	unsigned long long	 b[4] = { 1, 1, 1, 1 };
	const struct host_sample *hs = host_sample(host);
	struct vm		*vm = add_vm();
	char			*root2, *proc2, *sys2, *cg2;

	put_stat(b);
	put_schedstat(101, S, 0);
	put_schedstat(102, S, 0);
	/* 103 is gone. */
	ck_assert_int_eq(sampler_run(smp, 1 * S), 0);
	ck_assert_int_eq(sampler_run(smp, 2 * S), 0);
	ck_assert(hs->valid);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 2), SAMPLER_T_GONE);

	root2 = testlib_tmpdir();
	proc2 = path_join(root2, "proc");
	sys2 = path_join(root2, "sys");
	cg2 = path_join(root2, "cgroup");
	testlib_put(root2, "sys/devices/system/cpu/online", "0-1\n");
	testlib_put(root2, "proc/stat", "cpu0 5 0 0 100 0 0 0 0\n"
	    "cpu1 5 0 0 100 0 0 0 0\n");
	testlib_put(root2, "proc/100/task/101/schedstat", "7000 3000 1\n");
	testlib_put(root2, "proc/100/task/103/schedstat", "9000 0 1\n");
	sampler_reroot(smp, proc2, sys2, cg2);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 0), SAMPLER_T_CLOSED);
	ck_assert_int_eq(sampler_thread_state(smp, vm, 2), SAMPLER_T_CLOSED);

	ck_assert_int_eq(sampler_run(smp, 3 * S), 0);
	ck_assert(!hs->valid);
	ck_assert_uint_eq(cpuset_count(&hs->online), 2);
	ck_assert_uint_eq(vm->thread[0].run_ns, 7000);
	ck_assert_uint_eq(vm->thread[0].delay_ns, 3000);
	/* The thread gone under the old root is tried again. */
	ck_assert_uint_eq(vm->thread[2].run_ns, 9000);
	ck_assert_uint_eq(vm->sample.threads, 2);
	ck_assert_uint_eq(vm->sample.gone, 1);
	ck_assert(!vm->sample.valid);
	ck_assert_int_eq(sampler_run(smp, 4 * S), 0);
	ck_assert(hs->valid);
	ck_assert(vm->sample.valid);

	testlib_rmtree(root2);
	free(proc2);
	free(sys2);
	free(cg2);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("sampler");
	TCase	*tc = tcase_create("sampler");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_rates_cgroup2);
	tcase_add_test(tc, test_vanished_thread);
	tcase_add_test(tc, test_cgroup1);
	tcase_add_test(tc, test_cgroup1_slice_offline);
	tcase_add_test(tc, test_fallback_online);
	tcase_add_test(tc, test_no_proc_stat);
	tcase_add_test(tc, test_find_vcpu_threads);
	tcase_add_test(tc, test_files_follow_model);
	tcase_add_test(tc, test_reroot);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
