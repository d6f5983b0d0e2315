/* Unit tests for host-agent/model: registry, pipeline, hooks, rings. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "model.h"
#include "util.h"
#include "testlib.h"

static struct host	*host;
static unsigned int	 delivered, added, changed, removed, ended;
static struct vm	*last_removed;

static void
hook_deliver(struct vm *vm, const struct policy_decision *d, void *arg)
{
	ck_assert_ptr_eq(arg, &delivered);
	ck_assert(!cpuset_empty(&d->preferred));
	delivered++;
}

static void
hook_added(struct vm *vm, void *arg)
{
	added++;
}

static void
hook_changed(struct vm *vm, void *arg)
{
	changed++;
}

static void
hook_removed(struct vm *vm, void *arg)
{
	removed++;
	last_removed = vm;
}

static void
hook_period_end(void *arg)
{
	ended++;
}

static void
make_host(bool observe, unsigned int history)
{
	struct host_params	p;
	struct host_hooks	h = { .deliver = hook_deliver,
	    .vm_added = hook_added, .vm_changed = hook_changed,
	    .vm_removed = hook_removed, .period_end = hook_period_end,
	    .arg = &delivered };

	memset(&p, 0, sizeof(p));
	p.observe = observe;
	p.history = history;
	p.decisions = 8;
	policy_config_default(&p.policy);
	host = host_new(&p);
	host_add_hooks(host, &h);
	/* 8 idle usable CPUs: no contention. */
	struct host_sample *hs = host_sample_mut(host);
	cpuset_zero(&hs->usable);
	cpuset_set_range(&hs->usable, 0, 7);
	hs->online = hs->usable;
	hs->capacity = 8;
	hs->valid = true;
}

static void
setup(void)
{
	log_init("test-model", LOGL_WARNING);
	delivered = added = changed = removed = ended = 0;
	last_removed = NULL;
}

static void
teardown(void)
{
	host_free(host);
	host = NULL;
}

static struct vm *
add_vm(const char *uuid, const char *name, unsigned int nvcpus)
{
	struct vm	*vm = host_vm_add(host, uuid, name);
	struct vm_info	 info;
	unsigned int	 i;

	memset(&info, 0, sizeof(info));
	snprintf(info.uuid, sizeof(info.uuid), "%s", uuid);
	info.name = xstrdup(name);
	info.nvcpus = nvcpus;
	cpuset_set_range(&info.online, 0, nvcpus - 1);
	info.ncores = nvcpus;
	info.core = xcalloc(nvcpus, sizeof(*info.core));
	for (i = 0; i < nvcpus; i++)
		cpuset_set(&info.core[i], i);
	vm_set_info(vm, &info);
	host_vm_changed(host, vm);
	return vm;
}

#define U1	"11111111-1111-1111-1111-111111111111"
#define U2	"22222222-2222-2222-2222-222222222222"

START_TEST(test_registry)
{
	struct vm	*a, *b, *vm;
	unsigned int	 n = 0;

	make_host(false, 4);
	a = add_vm(U1, "alpha", 2);
	b = add_vm(U2, "beta", 4);
	ck_assert_uint_eq(added, 2);
	ck_assert_uint_eq(changed, 2);
	ck_assert_uint_eq(host_nvms(host), 2);
	ck_assert_ptr_eq(host_vm_find(host, U2), b);
	/* UUIDs compare without case. */
	ck_assert_ptr_eq(host_vm_find(host, "11111111-1111-1111-1111-111111111111"), a);
	ck_assert_ptr_eq(host_vm_find_name(host, "alpha"), a);
	ck_assert_ptr_null(host_vm_find_name(host, "gamma"));
	HOST_FOREACH_VM(vm, host)
		n++;
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(b->info.nvcpus, 4);
	ck_assert_int_eq(b->thread[3].tid, 0);
	host_vm_remove(host, a);
	ck_assert_uint_eq(removed, 1);
	ck_assert_ptr_eq(last_removed, a);
	ck_assert_uint_eq(host_nvms(host), 1);
	ck_assert_ptr_null(host_vm_find(host, U1));
}
END_TEST

START_TEST(test_pipeline_no_contention)
{
	struct vm			*a, *b;
	const struct hist_rec		*r;
	const struct decision_event	*ev;

	make_host(false, 4);
	a = add_vm(U1, "alpha", 2);
	b = add_vm(U2, "beta", 4);
	/* Not described yet: skipped, not an error. */
	host_vm_add(host, "33333333-3333-3333-3333-333333333333", "gamma");

	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert_uint_eq(delivered, 2);
	ck_assert(a->decided && b->decided);
	ck_assert_uint_eq(a->decision.vcpus, 2);
	ck_assert_uint_eq(b->decision.vcpus, 4);
	ck_assert(cpuset_equal(&b->decision.preferred, &b->info.online));
	/* First decisions are logged. */
	ck_assert_uint_eq(host_decisions_len(host), 2);
	ev = host_decision(host, 0);
	ck_assert_str_eq(ev->name, "beta");
	ck_assert(cpuset_empty(&ev->from));
	ck_assert_uint_eq(cpuset_count(&ev->to), 4);
	ck_assert_uint_eq(ev->seq, 2);

	/* Nothing changes: delivered again (lease refresh), nothing logged. */
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert_uint_eq(delivered, 4);
	ck_assert_uint_eq(host_decisions_len(host), 2);
	ck_assert_uint_eq(host_periods(host), 2);

	ck_assert_uint_eq(host_history_len(host), 2);
	r = host_history(host, 0);
	ck_assert_uint_eq(r->seq, 2);
	ck_assert_uint_eq(r->mono_ms, 2000);
	ck_assert_uint_eq(r->nvms, 2);
	ck_assert_str_eq(host_hist_name(host, &r->vms[1]), "beta");
	ck_assert_str_eq(host_hist_uuid(host, &r->vms[1]), U2);
	ck_assert_uint_eq(r->vms[1].preferred, 4);
	ck_assert_uint_eq(r->vms[1].vcpus, 4);
	ck_assert_uint_eq(host_history(host, 1)->seq, 1);
	ck_assert_ptr_null(host_history(host, 2));
	ck_assert_uint_eq(host_summary(host)->vcpus, 6);
}
END_TEST

START_TEST(test_observe_never_delivers)
{
	make_host(true, 4);
	add_vm(U1, "alpha", 2);
	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert_uint_eq(delivered, 0);
	/* The period's upkeep runs all the same. */
	ck_assert_uint_eq(ended, 2);
	ck_assert_uint_eq(host_history_len(host), 2);
	/* Decided as if the agent followed. */
	ck_assert(host_history(host, 0)->vms[0].steerable);
}
END_TEST

START_TEST(test_history_ring)
{
	uint64_t		 t;
	struct host_params	 p;

	make_host(false, 3);
	add_vm(U1, "alpha", 2);
	for (t = 1; t <= 5; t++)
		ck_assert_int_eq(host_period(host, t * 1000), 0);
	ck_assert_uint_eq(host_history_len(host), 3);
	ck_assert_uint_eq(host_history(host, 0)->seq, 5);
	ck_assert_uint_eq(host_history(host, 2)->seq, 3);

	/* Shrinking keeps the newest; growing keeps them all. */
	p = *host_params(host);
	p.history = 2;
	host_set_params(host, &p);
	ck_assert_uint_eq(host_history_len(host), 2);
	ck_assert_uint_eq(host_history(host, 0)->seq, 5);
	ck_assert_uint_eq(host_history(host, 1)->seq, 4);
	p.history = 10;
	host_set_params(host, &p);
	ck_assert_int_eq(host_period(host, 6000), 0);
	ck_assert_uint_eq(host_history_len(host), 3);
	ck_assert_uint_eq(host_history(host, 0)->seq, 6);
	ck_assert_uint_eq(host_history(host, 2)->seq, 4);
}
END_TEST

/* Bad metadata: the VM competes with its shares and default mode. */
/*
 * An hour at bounded memory: periods older than history_full are kept as
 * means over HIST_MERGE periods; a VM that left stays named in the
 * records that saw it.
 */
START_TEST(test_history_merge)
{
	struct vm		*a, *b;
	const struct hist_rec	*r;
	struct host_params	 p;
	uint64_t		 t;

	make_host(true, 25);
	p = *host_params(host);
	p.history_full = 5;
	host_set_params(host, &p);
	a = add_vm(U1, "alpha", 2);
	b = add_vm(U2, "beta", 4);
	for (t = 1; t <= 40; t++) {
		/* alpha runs t/100 CPUs in period t. */
		a->sample.valid = true;
		a->sample.run_cpus = (double)t / 100.0;
		if (t < 32) {
			b->sample.valid = true;
			b->sample.run_cpus = 1.0;
		} else if (t == 32)
			host_vm_remove(host, b);
		ck_assert_int_eq(host_period(host, t * 1000), 0);
	}
	/* 40 periods: 5..14 newest one by one, then two merged records. */
	ck_assert_uint_eq(host_history_len(host), 12);
	r = host_history(host, 0);
	ck_assert_uint_eq(r->seq, 40);
	ck_assert_uint_eq(r->periods, 1);
	ck_assert_uint_eq(host_history(host, 9)->seq, 31);
	r = host_history(host, 10);
	ck_assert_uint_eq(r->seq, 30);
	ck_assert_uint_eq(r->periods, HIST_MERGE);
	ck_assert_uint_eq(r->nvms, 2);
	ck_assert_str_eq(host_hist_name(host, &r->vms[0]), "alpha");
	/* Mean of 0.21 .. 0.30. */
	ck_assert_double_eq_tol(r->vms[0].run_cpus, 0.255, 1e-5);
	ck_assert_str_eq(host_hist_name(host, &r->vms[1]), "beta");
	ck_assert_str_eq(host_hist_uuid(host, &r->vms[1]), U2);
	ck_assert_double_eq_tol(r->vms[1].run_cpus, 1.0, 1e-6);
	ck_assert_uint_eq(r->vms[1].vcpus, 4);
	r = host_history(host, 11);
	ck_assert_uint_eq(r->seq, 20);
	ck_assert_double_eq_tol(r->vms[0].run_cpus, 0.155, 1e-5);
	ck_assert_ptr_null(host_history(host, 12));
	/* After beta left, the records have alpha alone. */
	ck_assert_uint_eq(host_history(host, 0)->nvms, 1);

	/* 25 periods: 5 to 14 one by one, and two merged records. */
	for (; t <= 100; t++)
		ck_assert_int_eq(host_period(host, t * 1000), 0);
	ck_assert_uint_eq(host_history_len(host), 10 + 2);
	ck_assert_uint_eq(host_history(host, 9)->seq, 91);
	ck_assert_uint_eq(host_history(host, 10)->seq, 90);
	ck_assert_uint_eq(host_history(host, 11)->seq, 80);

	/* Without merging, the ring keeps the newest one by one. */
	p.history_full = 0;
	host_set_params(host, &p);
	ck_assert_uint_eq(host_history_len(host), 10);
	ck_assert_uint_eq(host_history(host, 0)->seq, 100);
	ck_assert_int_eq(host_period(host, 101000), 0);
	ck_assert_uint_eq(host_history_len(host), 11);
	ck_assert_uint_eq(host_history(host, 0)->periods, 1);
}
END_TEST

/* Records keep the name a VM had when they were taken. */
START_TEST(test_history_rename)
{
	struct vm	*a;
	struct vm_info	 info;

	make_host(true, 4);
	a = add_vm(U1, "alpha", 2);
	ck_assert_int_eq(host_period(host, 1000), 0);
	memset(&info, 0, sizeof(info));
	snprintf(info.uuid, sizeof(info.uuid), "%s", U1);
	info.name = xstrdup("omega");
	info.nvcpus = 2;
	cpuset_set_range(&info.online, 0, 1);
	info.ncores = 2;
	info.core = xcalloc(2, sizeof(*info.core));
	cpuset_set(&info.core[0], 0);
	cpuset_set(&info.core[1], 1);
	vm_set_info(a, &info);
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert_str_eq(host_hist_name(host, &host_history(host, 0)->vms[0]),
	    "omega");
	ck_assert_str_eq(host_hist_name(host, &host_history(host, 1)->vms[0]),
	    "alpha");
	/* Once no record has the old name, its entry is reused. */
	ck_assert_int_eq(host_period(host, 3000), 0);
	ck_assert_int_eq(host_period(host, 4000), 0);
	ck_assert_int_eq(host_period(host, 5000), 0);
	add_vm(U2, "beta", 2);
	ck_assert_int_eq(host_period(host, 6000), 0);
	ck_assert_str_eq(host_hist_name(host, &host_history(host, 0)->vms[1]),
	    "beta");
	ck_assert_uint_eq(host_history(host, 0)->vms[1].id, 0);
}
END_TEST

START_TEST(test_invalid_meta_uses_defaults)
{
	struct vm	*a;

	/* Observe: decided as if the agent followed, so the mode counts. */
	make_host(true, 2);
	a = add_vm(U1, "alpha", 4);
	a->meta.present = true;
	a->meta.valid = false;
	a->meta.pol.has[PM_MODE] = true;	/* must be ignored */
	a->meta.pol.val[PM_MODE] = POLICY_MODE_FIXED;
	cpuset_zero(&a->meta.pol.cpus);
	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert_uint_eq(a->decision.vcpus, 4);
	ck_assert_int_ne(a->decision.reason, POLICY_R_MODE_FIXED);

	a->meta.valid = true;
	a->meta.pol.has[PM_CPUS] = true;
	cpuset_set(&a->meta.pol.cpus, 0);
	cpuset_set(&a->meta.pol.cpus, 1);
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert_int_eq(a->decision.reason, POLICY_R_MODE_FIXED);
	ck_assert_uint_eq(a->decision.vcpus, 2);
	/* The change is logged with its old set. */
	ck_assert_uint_eq(host_decisions_len(host), 2);
	ck_assert_uint_eq(cpuset_count(&host_decision(host, 0)->from), 4);
}
END_TEST

/* A VM of 4 vCPUs in 2 cores of 2 threads. */
static struct vm *
add_smt_vm(const char *uuid, const char *name)
{
	struct vm	*vm = host_vm_add(host, uuid, name);
	struct vm_info	 info;

	memset(&info, 0, sizeof(info));
	snprintf(info.uuid, sizeof(info.uuid), "%s", uuid);
	info.name = xstrdup(name);
	info.nvcpus = 4;
	cpuset_set_range(&info.online, 0, 3);
	info.ncores = 2;
	info.core = xcalloc(2, sizeof(*info.core));
	cpuset_set_range(&info.core[0], 0, 1);
	cpuset_set_range(&info.core[1], 2, 3);
	vm_set_info(vm, &info);
	host_vm_changed(host, vm);
	return vm;
}

static int
adopt(struct vm *vm, const char *list)
{
	struct cpuset	set;
	char		err[64];

	cpuset_zero(&set);
	if (*list != '\0')
		ck_assert_int_eq(cpuset_parse(&set, list, err, sizeof(err)), 0);
	return host_vm_adopt(host, vm, &set);
}

/*
 * What a guest says it still holds is adopted only as whole online cores,
 * not all of them, and only before the VM's first decision; the VM then
 * keeps it while it is not sampled.
 */
START_TEST(test_adopt)
{
	struct vm	*a, *b;
	char		 buf[32];

	make_host(false, 4);
	a = add_smt_vm(U1, "alpha");
	b = add_smt_vm(U2, "beta");
	ck_assert_int_eq(adopt(b, ""), -1);
	ck_assert_int_eq(adopt(b, "0"), -1);		/* half a core */
	ck_assert_int_eq(adopt(b, "1-2"), -1);		/* two halves */
	ck_assert_int_eq(adopt(b, "0-3"), -1);		/* all: nothing held */
	ck_assert_int_eq(adopt(b, "4-5"), -1);		/* not online */
	ck_assert(!b->pstate.init);
	ck_assert_int_eq(adopt(a, "2-3"), 0);
	ck_assert(a->pstate.init);
	ck_assert_uint_eq(a->pstate.cores, 1);
	ck_assert_int_eq(adopt(a, "0-1"), -1);		/* once */

	/* Not sampled yet: a keeps what it holds, b all it has. */
	host_sample_mut(host)->valid = false;
	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert(a->decided && b->decided);
	ck_assert_int_gt(cpuset_format(&a->decision.preferred, buf,
	    sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2-3");
	ck_assert_int_eq(a->decision.reason, POLICY_R_UNMEASURED);
	ck_assert_uint_eq(cpuset_count(&b->decision.preferred), 4);
	/* b decided nothing yet: still adoptable; a decided: no more. */
	ck_assert(!b->pstate.init);
	ck_assert_int_eq(adopt(b, "0-1"), 0);
	host_free(host);

	/* An observing daemon sends nothing, so it adopts nothing. */
	make_host(true, 4);
	a = add_smt_vm(U1, "alpha");
	ck_assert_int_eq(adopt(a, "0-1"), -1);
}
END_TEST

START_TEST(test_threads_resize)
{
	struct vm	*a;
	pid_t		 tids[2] = { 11, 12 };
	struct vm_info	 info;

	make_host(false, 2);
	a = add_vm(U1, "alpha", 2);
	vm_set_threads(a, 10, tids, 2, VM_TID_STATUS_XML);
	ck_assert_int_eq(a->thread[1].tid, 12);
	ck_assert_str_eq(vm_tid_source_name(a->tid_source), "status-xml");

	/* Hot-plugged to 4 vCPUs: known threads are kept. */
	memset(&info, 0, sizeof(info));
	info.name = xstrdup("alpha");
	info.nvcpus = 4;
	cpuset_set_range(&info.online, 0, 3);
	info.ncores = 4;
	info.core = xcalloc(4, sizeof(*info.core));
	vm_set_info(a, &info);
	ck_assert_ptr_null(info.name);
	ck_assert_int_eq(a->thread[1].tid, 12);
	ck_assert_int_eq(a->thread[3].tid, 0);
	ck_assert(!a->thread[3].sampled);
}
END_TEST

/* The running totals are the period's: counted once per period. */
START_TEST(test_totals)
{
	struct host_sample	*hs;
	const struct host_totals *t;
	struct vm		*a, *b;

	make_host(false, 4);
	hs = host_sample_mut(host);
	t = host_totals(host);
	a = add_vm(U1, "alpha", 2);
	hs->vm_run_cpus = 1.5;
	hs->vm_delay_cpus = 0.25;
	hs->period_s = 2;
	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert(t->run_s == 3.0);
	ck_assert(t->delay_s == 0.5);
	ck_assert_uint_eq(ended, 1);
	/* A sample without rates adds nothing. */
	hs->valid = false;
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert(t->run_s == 3.0);

	a->chan.err_decode = 3;
	ck_assert_int_eq(host_period(host, 3000), 0);
	ck_assert_uint_eq(t->proto_errors, 3);
	/* Violations of a VM that leaves between periods still count. */
	a->chan.err_rate = 2;
	host_vm_remove(host, a);
	ck_assert_uint_eq(t->proto_errors, 5);
	b = add_vm(U2, "beta", 2);
	b->chan.err_protocol = 1;
	/* Between periods the host's count already has a VM's new ones. */
	ck_assert_uint_eq(host_proto_errors(host), 6);
	ck_assert_int_eq(host_period(host, 4000), 0);
	ck_assert_uint_eq(t->proto_errors, 6);
	ck_assert_uint_eq(host_proto_errors(host), 6);
	ck_assert_uint_eq(ended, 4);
}
END_TEST

static unsigned int	 other_removed, other_ended;

static void
other_removed_cb(struct vm *vm, void *arg)
{
	other_removed++;
}

static void
other_period_end(void *arg)
{
	other_ended++;
}

/* Every registered set of hooks hears the VMs and the period. */
START_TEST(test_hooks_list)
{
	struct host_hooks	 o = { .vm_removed = other_removed_cb,
	    .period_end = other_period_end, .arg = &other_ended };
	struct vm		*a;

	other_removed = other_ended = 0;
	make_host(false, 4);
	host_add_hooks(host, &o);
	a = add_vm(U1, "alpha", 2);
	ck_assert_int_eq(host_period(host, 1000), 0);
	ck_assert_uint_eq(delivered, 1);
	ck_assert_uint_eq(ended, 1);
	ck_assert_uint_eq(other_ended, 1);
	host_vm_remove(host, a);
	ck_assert_uint_eq(removed, 1);
	ck_assert_uint_eq(other_removed, 1);
	host_remove_hooks(host, &other_ended);
	ck_assert_int_eq(host_period(host, 2000), 0);
	ck_assert_uint_eq(ended, 2);
	ck_assert_uint_eq(other_ended, 1);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("model");
	TCase	*tc = tcase_create("model");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_registry);
	tcase_add_test(tc, test_pipeline_no_contention);
	tcase_add_test(tc, test_observe_never_delivers);
	tcase_add_test(tc, test_history_ring);
	tcase_add_test(tc, test_history_merge);
	tcase_add_test(tc, test_history_rename);
	tcase_add_test(tc, test_invalid_meta_uses_defaults);
	tcase_add_test(tc, test_threads_resize);
	tcase_add_test(tc, test_adopt);
	tcase_add_test(tc, test_totals);
	tcase_add_test(tc, test_hooks_list);
	suite_add_tcase(s, tc);
	return testlib_run(s);
}
