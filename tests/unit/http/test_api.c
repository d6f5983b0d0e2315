/*
 * Check suites for the API's pure parts: the JSON writer's escaping, the
 * Prometheus text, and the JSON views of a snapshot, each parsed back.
 * The policy body decoder is tested with polmeta (tests/unit/host).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include "api.h"
#include "api_jw.h"
#include "log.h"
#include "model.h"
#include "util.h"
#include "testlib.h"

/* Write one string with the writer and parse it back with json-c. */
static char *
jw_roundtrip(const char *in, char **raw)
{
	struct jw		 w;
	struct json_object	*o, *v;
	char			*text, *out;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "s", in);
	jw_obj_end(&w);
	text = jw_finish(&w, NULL);
	o = json_tokener_parse(text);
	ck_assert_msg(o != NULL, "not JSON: %s", text);
	ck_assert(json_object_object_get_ex(o, "s", &v));
	out = strdup(json_object_get_string(v));
	json_object_put(o);
	*raw = text;
	return out;
}

START_TEST(jw_escapes)
{
	char	*raw, *out;

	out = jw_roundtrip("a\"b\\c\nd\te\001f</script>&", &raw);
	ck_assert_str_eq(out, "a\"b\\c\nd\te\001f</script>&");
	ck_assert_ptr_null(strchr(raw, '<'));
	ck_assert_ptr_null(strchr(raw, '>'));
	ck_assert_ptr_null(strchr(raw, '&'));
	ck_assert_ptr_nonnull(strstr(raw, "\\u0001"));
	free(raw);
	free(out);

	/* Valid UTF-8 passes; broken sequences become U+FFFD. */
	out = jw_roundtrip("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", &raw);
	ck_assert_str_eq(out, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	free(raw);
	free(out);
	/* Bidi controls and separators: escaped in the text, same value. */
	out = jw_roundtrip("x\xe2\x80\xaey\xe2\x80\xa8z\xe2\x81\xa6", &raw);
	ck_assert_str_eq(out, "x\xe2\x80\xaey\xe2\x80\xa8z\xe2\x81\xa6");
	ck_assert_ptr_nonnull(strstr(raw, "x\\u202ey\\u2028z\\u2066"));
	free(raw);
	free(out);
	out = jw_roundtrip("a\xff" "b\xc3" "c\xe0\x80\xaf" "d\xed\xa0\x80", &raw);
	ck_assert_str_eq(out, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d"
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(raw);
	free(out);
}
END_TEST

START_TEST(jw_numbers)
{
	struct jw	 w;
	char		*text;

	jw_init(&w);
	jw_arr(&w, NULL);
	jw_dbl(&w, NULL, 0.1 + 0.2);
	jw_dbl(&w, NULL, NAN);
	jw_dbl(&w, NULL, INFINITY);
	jw_u64(&w, NULL, UINT64_MAX);
	jw_int(&w, NULL, -5);
	jw_bool(&w, NULL, true);
	jw_null(&w, NULL);
	jw_arr_end(&w);
	text = jw_finish(&w, NULL);
	ck_assert_str_eq(text,
	    "[0.3,null,null,18446744073709551615,-5,true,null]\n");
	free(text);
}
END_TEST

static void
snapshot(struct api_snapshot *s)
{
	struct api_vm	*vm;
	struct api_vcpu_stat *vs;

	api_snapshot_init(s);
	snprintf(s->host.hostname, sizeof s->host.hostname, "hv1");
	snprintf(s->host.mode, sizeof s->host.mode, "enforce");
	s->host.period_ms = 1000;
	s->host.period_seq = 42;
	s->host.pcpus = 8;
	s->host.capacity = 6.5;
	s->host.usable_cpus = 8;
	s->host.vcpus = 12;
	s->host.delay_s = 12.25;
	vm = api_snapshot_vm(s);
	snprintf(vm->name, sizeof vm->name, "web1");
	snprintf(vm->uuid, sizeof vm->uuid, "u-1");
	vm->vcpus = 4;
	vm->weight = 200;
	vm->meta.has[PM_WEIGHT] = true;
	vm->meta.val[PM_WEIGHT] = 200;
	vm->delay_cpus = 1;
	vm->agent = API_AGENT_FOLLOWING;
	vm->acked = true;
	cpuset_set_range(&vm->applied, 0, 1);
	vm->has_decision = true;
	vm->decision.vcpus = 2;
	vm->decision.share = 1.5;
	snprintf(vm->decision.why, sizeof vm->decision.why, "share 1.5");
	vs = api_snapshot_vcpu(s);
	vs->vcpu = 0;
	vs->run_s = 2.5;
	vs->delay_s = 0.75;
	vs = api_snapshot_vcpu(s);
	vs->vcpu = 3;
	vs->run_s = 1;
	vs->delay_s = 0.5;
	vm = api_snapshot_vm(s);
	snprintf(vm->name, sizeof vm->name, "we\"ird\\na\nme");
	snprintf(vm->uuid, sizeof vm->uuid, "u-2");
	vm->vcpus = 8;
	vm->weight = 1024;
	snprintf(vm->agent_name, sizeof vm->agent_name, "<b>guest</b>");
}

START_TEST(metrics_text)
{
	struct api_snapshot	 s;
	char			*text;
	size_t			 len;

	snapshot(&s);
	text = api_metrics(&s, &len);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_host_pcpus 8\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "\nprefcpu_host_vcpu_run_delay_seconds_total 12.25\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_period_seconds 1\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "# TYPE prefcpu_domain_vcpu_run_delay_seconds_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text,
	    "\nprefcpu_domain_weight{domain=\"web1\",uuid=\"u-1\"} 200\n"));
	/* Label values escape quote, backslash and newline. */
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_vcpus{domain="
	    "\"we\\\"ird\\\\na\\nme\",uuid=\"u-2\"} 8\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_agent_state{"
	    "domain=\"web1\",uuid=\"u-1\",state=\"following\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_agent_state{"
	    "domain=\"web1\",uuid=\"u-1\",state=\"none\"} 0\n"));
	/* Applied only for a VM whose guest acked. */
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_applied_vcpus{"
	    "domain=\"web1\",uuid=\"u-1\"} 2\n"));
	ck_assert_ptr_null(strstr(text, "prefcpu_domain_applied_vcpus{"
	    "domain=\"we\\\""));
	/* Per vCPU, as libvirt's exporters name them; only web1 has some. */
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_vcpu_delay_seconds"
	    "_total{domain=\"web1\",uuid=\"u-1\",vcpu=\"3\"} 0.5\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprefcpu_domain_vcpu_time_seconds"
	    "_total{domain=\"web1\",uuid=\"u-1\",vcpu=\"0\"} 2.5\n"));
	ck_assert_ptr_null(strstr(text, "vcpu_time_seconds_total{domain=\"we\\"));
	free(text);
	api_snapshot_free(&s);
}
END_TEST

START_TEST(json_views)
{
	struct api_snapshot	 s;
	struct json_object	*o, *arr, *vm, *v;
	char			*text;

	snapshot(&s);
	text = api_json_domains(&s, NULL);
	o = json_tokener_parse(text);
	ck_assert_msg(o != NULL, "not JSON: %s", text);
	ck_assert(json_object_object_get_ex(o, "domains", &arr));
	ck_assert_int_eq(json_object_array_length(arr), 2);
	vm = json_object_array_get_idx(arr, 1);
	ck_assert(json_object_object_get_ex(vm, "name", &v));
	ck_assert_str_eq(json_object_get_string(v), "we\"ird\\na\nme");
	ck_assert(json_object_object_get_ex(vm, "agent", &v));
	ck_assert(json_object_object_get_ex(v, "agent", &v));
	ck_assert_str_eq(json_object_get_string(v), "<b>guest</b>");
	ck_assert(json_object_object_get_ex(vm, "decision", &v));
	ck_assert(json_object_is_type(v, json_type_null));
	vm = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(vm, "usage", &v));
	ck_assert(json_object_object_get_ex(v, "run_delay_pct", &v));
	ck_assert(fabs(json_object_get_double(v) - 25.0) < 1e-9);
	ck_assert(json_object_object_get_ex(vm, "policy", &v));
	ck_assert(json_object_object_get_ex(v, "metadata", &v));
	ck_assert(json_object_object_get_ex(v, "weight", &v));
	ck_assert_int_eq(json_object_get_int(v), 200);
	json_object_put(o);
	free(text);

	text = api_json_host(&s, NULL);
	o = json_tokener_parse(text);
	ck_assert(o != NULL);
	ck_assert(json_object_object_get_ex(o, "overcommit", &v));
	/* vCPUs per usable CPU (figures.h), not per CPU of capacity. */
	ck_assert(fabs(json_object_get_double(v) - 12 / 8.0) < 1e-9);
	ck_assert(json_object_object_get_ex(o, "cpu_pressure_some_avg10", &v));
	ck_assert(json_object_is_type(v, json_type_null));
	json_object_put(o);
	free(text);
	ck_assert_ptr_nonnull(api_snapshot_find(&s, "u-2"));
	ck_assert_ptr_null(api_snapshot_find(&s, "nope"));
	api_snapshot_free(&s);
}
END_TEST

/* One page of /api/v1/history: its periods' seqs, first and last, and more. */
static unsigned int
history_page(const struct host *h, uint64_t since, bool vms, uint64_t *first,
    uint64_t *last, bool *more, size_t *len)
{
	struct json_object	*o, *arr, *p, *v;
	size_t			 i, n;
	char			*text;

	text = api_json_history(h, 86400, since, vms, len);
	o = json_tokener_parse(text);
	ck_assert_msg(o != NULL, "not JSON");
	ck_assert(json_object_object_get_ex(o, "periods", &arr));
	ck_assert(json_object_object_get_ex(o, "more", &v));
	*more = json_object_get_boolean(v);
	n = json_object_array_length(arr);
	for (i = 0; i < n; i++) {
		p = json_object_array_get_idx(arr, i);
		ck_assert(json_object_object_get_ex(p, "seq", &v));
		if (i == 0)
			*first = (uint64_t)json_object_get_int64(v);
		*last = (uint64_t)json_object_get_int64(v);
	}
	json_object_put(o);
	free(text);
	return (unsigned int)n;
}

/*
 * A long history of many VMs comes in bounded answers: the oldest periods
 * that fit, "more", and the rest after since; nothing lost or repeated.
 */
START_TEST(history_pages)
{
	struct host_params	 hp;
	struct host		*h;
	struct host_sample	*hs;
	struct vm_info		 info;
	struct vm		*vm;
	char			 uuid[VM_UUID_LEN], name[16];
	unsigned int		 i, n1, n2, nvms = 300, periods = 250, pages = 0;
	uint64_t		 f1, l1, l2;
	size_t			 len;
	bool			 more;

	log_init("test-api", LOGL_WARNING);
	memset(&hp, 0, sizeof(hp));
	hp.history = periods;
	hp.decisions = 8;
	policy_config_default(&hp.policy);
	h = host_new(&hp);
	hs = host_sample_mut(h);
	cpuset_zero(&hs->usable);
	cpuset_set_range(&hs->usable, 0, 63);
	hs->online = hs->usable;
	hs->capacity = 64;
	hs->valid = true;
	for (i = 0; i < nvms; i++) {
		snprintf(uuid, sizeof(uuid),
		    "00000000-0000-4000-8000-%012u", i);
		snprintf(name, sizeof(name), "vm%u", i);
		vm = host_vm_add(h, uuid, name);
		memset(&info, 0, sizeof(info));
		snprintf(info.uuid, sizeof(info.uuid), "%s", uuid);
		info.name = xstrdup(name);
		info.nvcpus = 1;
		cpuset_set(&info.online, 0);
		info.ncores = 1;
		info.core = xcalloc(1, sizeof(*info.core));
		cpuset_set(&info.core[0], 0);
		vm_set_info(vm, &info);
		host_vm_changed(h, vm);
	}
	for (i = 1; i <= periods; i++)
		ck_assert_int_eq(host_period(h, i * 1000), 0);

	/*
	 * Pages until one says there is no more: each within the record
	 * bound and the byte bound (plus the one period that crossed it),
	 * contiguous, and together every period once.
	 */
	l2 = 0;
	n2 = 0;
	do {
		n1 = history_page(h, l2, true, &f1, &l1, &more, &len);
		ck_assert_uint_ge(n1, 1);
		ck_assert_uint_le(n1 * nvms, API_HISTORY_MAX_VM_RECORDS);
		ck_assert_uint_le(len, API_HISTORY_MAX_BYTES + len / n1 + 64);
		ck_assert_uint_eq(f1, l2 + 1);
		l2 = l1;
		n2 += n1;
		pages++;
	} while (more);
	ck_assert_uint_ge(pages, 2);
	ck_assert_uint_eq(n2, periods);
	ck_assert_uint_eq(l2, periods);
	/* The host figures alone are small: one answer. */
	ck_assert_uint_eq(history_page(h, 0, false, &f1, &l1, &more, &len),
	    periods);
	ck_assert(!more);
	host_free(h);
}
END_TEST

static Suite *
api_suite(void)
{
	Suite	*s = suite_create("api");
	TCase	*tc = tcase_create("writer");
	tcase_add_test(tc, jw_escapes);
	tcase_add_test(tc, jw_numbers);
	suite_add_tcase(s, tc);
	tc = tcase_create("views");
	tcase_add_test(tc, metrics_text);
	tcase_add_test(tc, json_views);
	tcase_add_test(tc, history_pages);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return testlib_run(api_suite());
}
