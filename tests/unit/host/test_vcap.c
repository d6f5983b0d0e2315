/*
 * Unit tests for host-agent/vcap's pure part: which VM is capped, at what
 * vcpu_quota.  The libvirt side runs for real in tests/e2e (scenario cap).
 */
#include <check.h>
#include <string.h>

#include "model.h"
#include "testlib.h"
#include "vcap.h"

/* A VM of 4 online vCPUs, decided under contention with a share of 1.5. */
static void
vm_init(struct vm *vm)
{
	memset(vm, 0, sizeof(*vm));
	vm->meta.valid = true;
	polmeta_init(&vm->meta.pol);
	vm->info.nvcpus = 4;
	cpuset_set_range(&vm->info.online, 0, 3);
	vm->decided = true;
	vm->decision.contended = true;
	vm->decision.fair = 1.5;
	vm->decision.reason = POLICY_R_UNSTEERED;
}

static void
vm_enforce(struct vm *vm, const char *value)
{
	vm->meta.present = true;
	ck_assert_int_eq(polmeta_set_text(&vm->meta.pol, PM_ENFORCE, value,
	    PMN_ATTR, NULL, 0), 0);
}

START_TEST(wanted)
{
	struct vm	vm;

	vm_init(&vm);
	/* Off by default; the config default or the metadata turn it on. */
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 0);
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_CAP, false) == 1.5);
	vm_enforce(&vm, "cap");
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 1.5);
	/* Never in observe mode. */
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, true) == 0);
	/* Lifted when it follows, when contention ends. */
	vm.chan.following = true;
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 0);
	vm.chan.following = false;
	vm.decision.contended = false;
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 0);
	vm.decision.contended = true;
	/* A share of all its vCPUs caps nothing. */
	vm.decision.fair = 4;
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 0);
	vm.decision.fair = 1.5;
	/* No decision yet: nothing. */
	vm.decided = false;
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 0);
	vm.decided = true;
	/* The metadata's none wins over the config's cap. */
	vm_enforce(&vm, "none");
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_CAP, false) == 0);
	/* Invalid metadata: the defaults, i.e. the config's. */
	vm.meta.valid = false;
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_CAP, false) == 1.5);
}
END_TEST

/* Mode off does not follow, even with an agent that acks. */
START_TEST(wanted_mode_off)
{
	struct vm	vm;

	vm_init(&vm);
	vm_enforce(&vm, "cap");
	vm.chan.following = true;
	ck_assert_int_eq(polmeta_set_text(&vm.meta.pol, PM_MODE, "off",
	    PMN_ATTR, NULL, 0), 0);
	ck_assert(vcap_wanted(&vm, POLMETA_ENFORCE_NONE, false) == 1.5);
}
END_TEST

START_TEST(quota)
{
	/* 1.5 CPUs over 4 vCPUs: 0.375 of each vCPU's period. */
	ck_assert_int_eq(vcap_quota(1.5, 4, 100000), 37500);
	ck_assert_int_eq(vcap_quota(1.0, 2, 50000), 25000);
	/* The kernel's least quota is 1 ms. */
	ck_assert_int_eq(vcap_quota(0.001, 8, 100000), 1000);
	ck_assert_int_eq(vcap_quota(1.0, 0, 100000), 0);
}
END_TEST

static Suite *
vcap_suite(void)
{
	Suite	*s = suite_create("vcap");
	TCase	*tc = tcase_create("pure");

	tcase_add_test(tc, wanted);
	tcase_add_test(tc, wanted_mode_off);
	tcase_add_test(tc, quota);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(vcap_suite());
}
