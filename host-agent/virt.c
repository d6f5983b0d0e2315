/*
 * Discovery through libvirt.  All of it runs on the libevent thread (see
 * virtev.h for why).  libvirt calls happen only here, on connection, on
 * domain events and on the thread-id retry timer, never in the period.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>

#include "domxml.h"
#include "log.h"
#include "sampler.h"
#include "util.h"
#include "virt.h"

#define VIRT_RETRY_MS		1000	/* thread ids not known yet */
#define VIRT_RETRY_MAX		30	/* then wait for the VM's next event */
#define VIRT_STATUS_MAX		(4U << 20)	/* status XML size bound */
/*
 * Domain XML size bound.  Real domains are a few KiB (tens with many
 * devices); most of a huge one is metadata, which libxml2 would take a
 * second or more to parse on the daemon's only thread.
 */
#define VIRT_XML_MAX		(256U << 10)

struct virt {
	struct event_base	*base;
	struct host		*host;
	struct virt_params	 p;
	char			*uri, *run_root, *proc_root;	/* owned copies */

	virConnectPtr		 conn;
	int			 cb_lifecycle;
	int			 cb_metadata;
	bool			 lost;		/* set by the close callback */
	int			 lost_reason;
	uint64_t		 connections;
	unsigned int		 backoff_ms;
	bool			 down_logged;

	struct event		*ev_connect;	/* (re)connection timer */
	struct event		*ev_lost;	/* tear down after close */
	struct event		*ev_retry;	/* thread ids */
};

enum virt_action {
	VIRT_IGNORE,
	VIRT_REFRESH,	/* (re)read the domain; add it if new */
	VIRT_REMOVE,
};

/* Lifecycle events: what they mean for a running domain. */
static const struct virt_event_kind {
	const char		*name;
	enum virt_action	 action;
} virt_events[] = {
	[VIR_DOMAIN_EVENT_DEFINED] = { "defined", VIRT_IGNORE },
	[VIR_DOMAIN_EVENT_UNDEFINED] = { "undefined", VIRT_IGNORE },
	[VIR_DOMAIN_EVENT_STARTED] = { "started", VIRT_REFRESH },
	[VIR_DOMAIN_EVENT_SUSPENDED] = { "suspended", VIRT_REFRESH },
	[VIR_DOMAIN_EVENT_RESUMED] = { "resumed", VIRT_REFRESH },
	[VIR_DOMAIN_EVENT_STOPPED] = { "stopped", VIRT_REMOVE },
	[VIR_DOMAIN_EVENT_SHUTDOWN] = { "shutdown", VIRT_IGNORE },
	[VIR_DOMAIN_EVENT_PMSUSPENDED] = { "pmsuspended", VIRT_REFRESH },
	/* Depending on <on_crash> it stays (paused) or is stopped next. */
	[VIR_DOMAIN_EVENT_CRASHED] = { "crashed", VIRT_REFRESH },
};

static void	virt_schedule_connect(struct virt *, unsigned int ms);

/* libvirt prints every error on stderr by default; we log our own. */
static void
virt_error_quiet(void *arg, virErrorPtr e)
{
}

static const char *
virt_errmsg(void)
{
	const char *m = virGetLastErrorMessage();

	return m != NULL ? m : "unknown libvirt error";
}

static char *
virt_esc(char *buf, size_t len, const char *s)
{
	return str_escape(buf, len, s, strlen(s));
}

/* Read a whole file of at most max bytes; NULL with errno. */
static char *
virt_slurp(const char *path, size_t max, size_t *lenp)
{
	FILE	*fp;
	char	*buf;
	size_t	 len = 0, cap = 65536, n;

	if ((fp = fopen(path, "re")) == NULL)
		return NULL;
	buf = xmalloc(cap);
	while ((n = fread(buf + len, 1, cap - len, fp)) > 0) {
		len += n;
		if (len == cap) {
			if (cap >= max) {
				fclose(fp);
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			cap *= 2;
			buf = xreallocarray(buf, cap, 1);
		}
	}
	fclose(fp);
	*lenp = len;
	return buf;
}

/* Every online vCPU has a thread id. */
static bool
virt_threads_complete(const struct vm *vm)
{
	int	c;

	CPUSET_FOREACH(c, &vm->info.online) {
		if ((unsigned int)c >= vm->info.nvcpus ||
		    vm->thread[c].tid <= 0)
			return false;
	}
	return true;
}

/* query-cpus-fast through libvirt's QMP pass-through. */
static int
virt_threads_qmp(struct virt *v, virDomainPtr dom, struct vm *vm,
    pid_t *tids)
{
	char			*out = NULL, name[VM_NAME_LEN * 4];
	struct json_object	*root, *ret, *cpu, *idx, *tid;
	size_t			 i, n;
	int			 found = 0;

	virt_esc(name, sizeof(name), vm->info.name);
	if (virDomainQemuMonitorCommand(dom, "{\"execute\":\"query-cpus-fast\"}",
	    &out, 0) != 0) {
		log_warnx("domain %s: query-cpus-fast: %s", name,
		    virt_errmsg());
		return -1;
	}
	log_warnx("domain %s: vCPU thread ids from QMP query-cpus-fast; "
	    "libvirt marks the domain tainted (custom-monitor)", name);
	root = json_tokener_parse(out);
	free(out);
	memset(tids, 0, vm->info.nvcpus * sizeof(*tids));
	if (root == NULL || !json_object_object_get_ex(root, "return", &ret) ||
	    !json_object_is_type(ret, json_type_array)) {
		json_object_put(root);
		return -1;
	}
	n = json_object_array_length(ret);
	for (i = 0; i < n; i++) {
		int64_t	c, t;

		cpu = json_object_array_get_idx(ret, i);
		if (!json_object_object_get_ex(cpu, "cpu-index", &idx) ||
		    !json_object_object_get_ex(cpu, "thread-id", &tid) ||
		    !json_object_is_type(idx, json_type_int) ||
		    !json_object_is_type(tid, json_type_int))
			continue;
		c = json_object_get_int64(idx);
		t = json_object_get_int64(tid);
		if (c < 0 || c >= vm->info.nvcpus || t <= 0 || t > INT32_MAX)
			continue;
		if (tids[c] == 0)
			found++;
		tids[c] = (pid_t)t;
	}
	json_object_put(root);
	return found;
}

/*
 * Find the vCPU thread ids: libvirt's status XML, else the thread names
 * of the QEMU process, else (with dom, if allowed) QMP.
 */
static void
virt_threads(struct virt *v, struct vm *vm, virDomainPtr dom)
{
	char		*path, *xml, err[256], name[VM_NAME_LEN * 4];
	pid_t		*tids, pid = 0;
	size_t		 len;
	uint64_t	 u;
	int		 n = -1;
	enum vm_tid_source src = VM_TID_NONE;

	if (vm->info.nvcpus == 0 || strchr(vm->info.name, '/') != NULL)
		return;
	virt_esc(name, sizeof(name), vm->info.name);
	tids = xcalloc(vm->info.nvcpus, sizeof(*tids));

	xasprintf(&path, "%s/libvirt/qemu/%s.xml", v->run_root, vm->info.name);
	if ((xml = virt_slurp(path, VIRT_STATUS_MAX, &len)) != NULL) {
		n = domxml_status(xml, len, &pid, tids, vm->info.nvcpus, err,
		    sizeof(err));
		if (n < 0)
			log_info("domain %s: %s: %s", name, path, err);
		free(xml);
	}
	free(path);
	if (n > 0)
		src = VM_TID_STATUS_XML;

	if (n <= 0) {
		char buf[32];

		xasprintf(&path, "%s/libvirt/qemu/%s.pid", v->run_root,
		    vm->info.name);
		if (pid == 0 && file_read(path, buf, sizeof(buf)) > 0 &&
		    parse_uint(str_rstrip(buf), 1, INT32_MAX, &u) == 0)
			pid = (pid_t)u;
		free(path);
		if (pid > 0)
			n = sampler_find_vcpu_threads(v->proc_root, pid, tids,
			    vm->info.nvcpus);
		if (n > 0)
			src = VM_TID_COMM;
	}
	if (n <= 0 && dom != NULL && v->p.qmp_fallback) {
		n = virt_threads_qmp(v, dom, vm, tids);
		if (n > 0)
			src = VM_TID_QMP;
	}
	if (n > 0) {
		if (src != vm->tid_source)
			log_info("domain %s: %d vCPU threads from %s", name, n,
			    vm_tid_source_name(src));
		vm_set_threads(vm, pid, tids, vm->info.nvcpus, src);
	} else if (vm->tid_source == VM_TID_NONE && vm->tid_tries == 0)
		log_info("domain %s: vCPU threads not found yet", name);
	else if (vm->tid_source == VM_TID_NONE &&
	    vm->tid_tries == VIRT_RETRY_MAX)
		log_warnx("domain %s: vCPU threads not found; not sampled "
		    "until its next libvirt event", name);
	free(tids);
	if (!virt_threads_complete(vm) && vm->tid_tries < VIRT_RETRY_MAX &&
	    !evtimer_pending(v->ev_retry, NULL)) {
		struct timeval tv = { VIRT_RETRY_MS / 1000,
		    (VIRT_RETRY_MS % 1000) * 1000 };
		evtimer_add(v->ev_retry, &tv);
	}
}

/* Retry thread ids from files only: this timer must not need libvirtd. */
static void
virt_retry(evutil_socket_t fd, short what, void *arg)
{
	struct virt	*v = arg;
	struct vm	*vm;

	HOST_FOREACH_VM(vm, v->host) {
		if (vm->source == VM_SRC_LIBVIRT && vm->info.nvcpus > 0 &&
		    !virt_threads_complete(vm) &&
		    vm->tid_tries < VIRT_RETRY_MAX) {
			vm->tid_tries++;
			virt_threads(v, vm, NULL);
		}
	}
}

static void
virt_update_meta(struct vm *vm, const struct vm_meta *m, const char *name)
{
	if (!m->valid && (vm->meta.valid ||
	    strcmp(vm->meta.error, m->error) != 0))
		log_warnx("domain %s: policy metadata: %s; using defaults "
		    "until it is fixed", name, m->error);
	else if (m->valid && !vm->meta.valid)
		log_notice("domain %s: policy metadata is valid again", name);
	if (m->valid && m->present && memcmp(m, &vm->meta, sizeof(*m)) != 0) {
		char *xml = polmeta_xml(&m->pol);

		log_info("domain %s: policy %s", name, xml);
		free(xml);
	}
	vm->meta = *m;
}

/*
 * A domain XML over VIRT_XML_MAX is not parsed.  A tracked VM keeps what
 * it had but falls back to the default policy (one line when that
 * happens, not at every event); an untracked one is not tracked.
 */
static void
virt_refuse_xml(struct vm *vm, const char *name, size_t len)
{
	struct vm_meta	m;

	if (vm == NULL) {
		log_warnx("domain %s: its XML is %zu bytes, over the %u-byte"
		    " bound (too much metadata?): not tracked", name, len,
		    VIRT_XML_MAX);
		return;
	}
	memset(&m, 0, sizeof(m));
	polmeta_init(&m.pol);
	m.present = true;
	m.valid = false;
	snprintf(m.error, sizeof(m.error), "the domain XML is over the"
	    " %u-byte bound (too much metadata?); not read", VIRT_XML_MAX);
	virt_update_meta(vm, &m, name);
}

/* (Re)read a running domain into the model; remove it if not running. */
static void
virt_refresh(struct virt *v, virDomainPtr dom)
{
	char		 uuid[VIR_UUID_STRING_BUFLEN], err[256], name[512];
	char		*xml;
	struct vm_info	 info;
	struct vm_meta	 meta;
	struct vm	*vm;
	int		 state, reason, active;
	bool		 added = false;

	if (virDomainGetUUIDString(dom, uuid) != 0)
		return;
	virt_esc(name, sizeof(name), virDomainGetName(dom));
	vm = host_vm_find(v->host, uuid);
	/*
	 * Found through QMP first (a libvirt domain with an extra monitor):
	 * libvirt knows more (metadata, cputune), so it takes the VM over;
	 * the QMP source sees the source change and lets go.
	 */
	if (vm != NULL && vm->source != VM_SRC_LIBVIRT) {
		log_notice("domain %s: also a libvirt domain; libvirt takes "
		    "it over from %s", name, vm_source_name(vm->source));
		host_vm_remove(v->host, vm);
		vm = NULL;
	}
	active = virDomainIsActive(dom);
	if (active == 0) {
		if (vm != NULL) {
			log_notice("domain %s: no longer running", name);
			host_vm_remove(v->host, vm);
		}
		return;
	}
	if ((xml = virDomainGetXMLDesc(dom, 0)) == NULL) {
		log_warnx("domain %s: cannot read its XML: %s", name,
		    virt_errmsg());
		return;
	}
	if (strlen(xml) > VIRT_XML_MAX) {
		virt_refuse_xml(vm, name, strlen(xml));
		free(xml);
		return;
	}
	if (domxml_parse(xml, strlen(xml), &info, err, sizeof(err)) != 0) {
		log_warnx("domain %s: its XML: %s", name, err);
		free(xml);
		return;
	}
	if (domxml_policy(xml, strlen(xml), info.nvcpus, &meta, err,
	    sizeof(err)) != 0)
		log_warnx("domain %s: its XML: %s", name, err);
	free(xml);
	if (virDomainGetState(dom, &state, &reason, 0) == 0)
		info.paused = state == VIR_DOMAIN_PAUSED ||
		    state == VIR_DOMAIN_PMSUSPENDED ||
		    state == VIR_DOMAIN_CRASHED;

	if (vm == NULL) {
		vm = host_vm_add(v->host, uuid, info.name);
		added = true;
	}
	vm_set_info(vm, &info);
	virt_update_meta(vm, &meta, name);
	if (added)
		log_notice("domain %s: tracking (%u vCPUs, %u online, %u "
		    "cores%s%s)", name, vm->info.nvcpus,
		    cpuset_count(&vm->info.online), vm->info.ncores,
		    vm->info.channel ? ", channel " : "",
		    vm->info.channel ? vm->info.channel : "");
	vm->tid_tries = 0;
	virt_threads(v, vm, dom);
	host_vm_changed(v->host, vm);
}

static int
virt_on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
    void *arg)
{
	struct virt	*v = arg;
	char		 uuid[VIR_UUID_STRING_BUFLEN], name[512];
	const char	*what = "unknown";
	enum virt_action act = VIRT_REFRESH;
	struct vm	*vm;

	if (event >= 0 && (size_t)event < nitems(virt_events) &&
	    virt_events[event].name != NULL) {
		what = virt_events[event].name;
		act = virt_events[event].action;
	}
	virt_esc(name, sizeof(name), virDomainGetName(dom));
	log_info("domain %s: %s%s", name, what, (event ==
	    VIR_DOMAIN_EVENT_STOPPED && detail ==
	    VIR_DOMAIN_EVENT_STOPPED_MIGRATED) || (event ==
	    VIR_DOMAIN_EVENT_STARTED && detail ==
	    VIR_DOMAIN_EVENT_STARTED_MIGRATED) ? " (migration)" : "");
	switch (act) {
	case VIRT_IGNORE:
		break;
	case VIRT_REFRESH:
		virt_refresh(v, dom);
		break;
	case VIRT_REMOVE:
		if (virDomainGetUUIDString(dom, uuid) == 0 &&
		    (vm = host_vm_find(v->host, uuid)) != NULL &&
		    vm->source == VM_SRC_LIBVIRT) {
			log_notice("domain %s: no longer tracked", name);
			host_vm_remove(v->host, vm);
		}
		break;
	}
	return 0;
}

static void
virt_on_metadata(virConnectPtr conn, virDomainPtr dom, int type,
    const char *nsuri, void *arg)
{
	struct virt	*v = arg;

	if (type == VIR_DOMAIN_METADATA_ELEMENT && (nsuri == NULL ||
	    strcmp(nsuri, POLMETA_NS) != 0))
		return;
	virt_refresh(v, dom);
}

/* Only set a flag: libvirt holds its locks here.  The loop tears down. */
static void
virt_on_close(virConnectPtr conn, int reason, void *arg)
{
	struct virt	*v = arg;

	v->lost = true;
	v->lost_reason = reason;
	event_active(v->ev_lost, EV_TIMEOUT, 0);
}

static void
virt_teardown(struct virt *v)
{
	if (v->conn == NULL)
		return;
	if (v->cb_lifecycle >= 0)
		virConnectDomainEventDeregisterAny(v->conn, v->cb_lifecycle);
	if (v->cb_metadata >= 0)
		virConnectDomainEventDeregisterAny(v->conn, v->cb_metadata);
	v->cb_lifecycle = v->cb_metadata = -1;
	virConnectUnregisterCloseCallback(v->conn, virt_on_close);
	virConnectClose(v->conn);
	v->conn = NULL;
}

static void
virt_lost(evutil_socket_t fd, short what, void *arg)
{
	static const char *const reasons[] = {
		[VIR_CONNECT_CLOSE_REASON_ERROR] = "I/O error",
		[VIR_CONNECT_CLOSE_REASON_EOF] = "end of file",
		[VIR_CONNECT_CLOSE_REASON_KEEPALIVE] = "keepalive timeout",
		[VIR_CONNECT_CLOSE_REASON_CLIENT] = "closed by client",
	};
	struct virt	*v = arg;
	const char	*why = "unknown";

	if (!v->lost)
		return;
	v->lost = false;
	if (v->lost_reason >= 0 && (size_t)v->lost_reason < nitems(reasons))
		why = reasons[v->lost_reason];
	log_warnx("libvirt connection %s lost (%s); keeping %u domains, "
	    "reconnecting", v->uri, why, host_nvms(v->host));
	virt_teardown(v);
	v->backoff_ms = v->p.reconnect_min_ms;
	virt_schedule_connect(v, v->backoff_ms);
}

/* Bring the model in line with the running domains after (re)connecting. */
static int
virt_sync(struct virt *v)
{
	virDomainPtr	*doms = NULL;
	struct vm	*vm, *next;
	char		 uuid[VIR_UUID_STRING_BUFLEN], name[VM_NAME_LEN * 4];
	char		*seen;
	int		 n, i;
	unsigned int	 k;

	n = virConnectListAllDomains(v->conn, &doms,
	    VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0) {
		log_warnx("listing domains: %s", virt_errmsg());
		return -1;
	}
	/* Forget the domains that stopped while we were not listening. */
	seen = xcalloc((size_t)n + 1, VIR_UUID_STRING_BUFLEN);
	for (i = 0; i < n; i++) {
		if (virDomainGetUUIDString(doms[i], uuid) == 0)
			memcpy(seen + (size_t)i * VIR_UUID_STRING_BUFLEN, uuid,
			    VIR_UUID_STRING_BUFLEN);
	}
	for (vm = host_vm_first(v->host); vm != NULL; vm = next) {
		next = host_vm_next(vm);
		if (vm->source != VM_SRC_LIBVIRT)
			continue;	/* another source's */
		for (i = 0; i < n; i++) {
			if (strcasecmp(seen + (size_t)i *
			    VIR_UUID_STRING_BUFLEN, vm->info.uuid) == 0)
				break;
		}
		if (i == n) {
			virt_esc(name, sizeof(name), vm->info.name);
			log_notice("domain %s: stopped while libvirtd was "
			    "unreachable", name);
			host_vm_remove(v->host, vm);
		}
	}
	free(seen);
	for (i = 0; i < n; i++) {
		virt_refresh(v, doms[i]);
		virDomainFree(doms[i]);
	}
	free(doms);
	k = host_nvms(v->host);
	log_notice("libvirt %s: %u running domains", v->uri, k);
	return 0;
}

static int
virt_open(struct virt *v)
{
	v->conn = virConnectOpen(v->uri);
	if (v->conn == NULL)
		return -1;
	/* Local drivers (test:///, qemu:///embed) have no keepalive. */
	if (v->p.keepalive_interval > 0 && virConnectSetKeepAlive(v->conn,
	    (int)v->p.keepalive_interval, v->p.keepalive_count) < 0)
		log_msg(virGetLastErrorCode() == VIR_ERR_NO_SUPPORT ?
		    LOGL_INFO : LOGL_WARNING, "libvirt keepalive: %s",
		    virt_errmsg());
	if (virConnectRegisterCloseCallback(v->conn, virt_on_close, v,
	    NULL) < 0)
		log_warnx("libvirt close callback: %s", virt_errmsg());
	v->cb_lifecycle = virConnectDomainEventRegisterAny(v->conn, NULL,
	    VIR_DOMAIN_EVENT_ID_LIFECYCLE,
	    VIR_DOMAIN_EVENT_CALLBACK(virt_on_lifecycle), v, NULL);
	v->cb_metadata = virConnectDomainEventRegisterAny(v->conn, NULL,
	    VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
	    VIR_DOMAIN_EVENT_CALLBACK(virt_on_metadata), v, NULL);
	if (v->cb_lifecycle < 0 || v->cb_metadata < 0) {
		log_warnx("libvirt domain events: %s", virt_errmsg());
		virt_teardown(v);
		return -1;
	}
	if (virt_sync(v) != 0) {
		virt_teardown(v);
		return -1;
	}
	return 0;
}

static void
virt_connect(evutil_socket_t fd, short what, void *arg)
{
	struct virt	*v = arg;

	if (v->conn != NULL)
		return;
	if (virt_open(v) == 0) {
		v->connections++;
		v->down_logged = false;
		v->backoff_ms = v->p.reconnect_min_ms;
		log_notice("connected to libvirt %s", v->uri);
		return;
	}
	if (!v->down_logged)
		log_warnx("cannot connect to libvirt %s: %s; retrying with "
		    "backoff up to %u ms", v->uri, virt_errmsg(),
		    v->p.reconnect_max_ms);
	v->down_logged = true;
	virt_schedule_connect(v, v->backoff_ms);
	v->backoff_ms = v->backoff_ms * 2 > v->p.reconnect_max_ms ?
	    v->p.reconnect_max_ms : v->backoff_ms * 2;
}

static void
virt_schedule_connect(struct virt *v, unsigned int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(v->ev_connect, &tv);
}

static void
virt_copy_params(struct virt *v, const struct virt_params *p)
{
	free(v->uri);
	free(v->run_root);
	free(v->proc_root);
	v->p = *p;
	v->uri = xstrdup(p->uri);
	v->run_root = xstrdup(p->run_root);
	v->proc_root = xstrdup(p->proc_root);
	v->p.uri = v->uri;
	v->p.run_root = v->run_root;
	v->p.proc_root = v->proc_root;
}

struct virt *
virt_new(struct event_base *base, struct host *host,
    const struct virt_params *p)
{
	struct virt	*v;

	v = xcalloc(1, sizeof(*v));
	v->base = base;
	v->host = host;
	v->cb_lifecycle = v->cb_metadata = -1;
	virt_copy_params(v, p);
	v->backoff_ms = p->reconnect_min_ms;
	virSetErrorFunc(NULL, virt_error_quiet);
	v->ev_connect = evtimer_new(base, virt_connect, v);
	v->ev_lost = event_new(base, -1, 0, virt_lost, v);
	v->ev_retry = evtimer_new(base, virt_retry, v);
	if (v->ev_connect == NULL || v->ev_lost == NULL || v->ev_retry == NULL)
		fatalx("libevent: cannot create discovery events");
	virt_schedule_connect(v, 0);
	return v;
}

void
virt_free(struct virt *v)
{
	if (v == NULL)
		return;
	virt_teardown(v);
	event_free(v->ev_connect);
	event_free(v->ev_lost);
	event_free(v->ev_retry);
	free(v->uri);
	free(v->run_root);
	free(v->proc_root);
	free(v);
}

void
virt_set_params(struct virt *v, const struct virt_params *p)
{
	bool	reconnect;

	if (v == NULL)
		return;
	reconnect = strcmp(p->uri, v->uri) != 0;
	virt_copy_params(v, p);
	if (v->backoff_ms < p->reconnect_min_ms ||
	    v->backoff_ms > p->reconnect_max_ms)
		v->backoff_ms = p->reconnect_min_ms;
	if (v->conn != NULL && p->keepalive_interval > 0)
		virConnectSetKeepAlive(v->conn, (int)p->keepalive_interval,
		    p->keepalive_count);
	if (reconnect) {
		log_notice("libvirt URI changed to %s: reconnecting", v->uri);
		virt_teardown(v);
		virt_schedule_connect(v, 0);
	}
}

bool
virt_connected(const struct virt *v)
{
	return v != NULL && v->conn != NULL;
}

virConnectPtr
virt_conn(const struct virt *v)
{
	return v != NULL ? v->conn : NULL;
}

uint64_t
virt_connections(const struct virt *v)
{
	return v != NULL ? v->connections : 0;
}
