/*
 * prefcpu-hostd: the host daemon.  One libevent base runs everything:
 * libvirt discovery (virt.c on virtev.c), the signals, and the period.
 * One timer drives the period, ev_period (hostd_period): sample
 * (sampler.c), then host_period() in model.c: running totals, decide,
 * record, deliver, publish, where the channels (channel.c) and the caps
 * (vcap.c) do their per-period work through the model's hooks.  No other
 * module keeps a period timer; the HTTP API reads what the period left.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "channel.h"
#include "hconf.h"
#include "http.h"
#include "http_virt.h"
#include "log.h"
#include "model.h"
#include "qmp_src.h"
#include "sampler.h"
#include "util.h"
#include "vcap.h"
#include "virt.h"
#include "virtev.h"

struct hostd {
	struct event_base	*base;
	struct hconf		 conf;
	const char		*conf_path;
	bool			 conf_explicit;	/* --config given: must exist */
	/* Command-line overrides, re-applied over the file on SIGHUP. */
	const char		*over_name[16];
	const char		*over_value[16];
	unsigned int		 nover;

	struct host		*host;
	struct sampler		*sampler;
	struct virt		*virt;		/* NULL with source = qmp */
	struct qsrc		*qsrc;		/* NULL with source = libvirt */
	struct http_server	*http;		/* API, metrics, dashboard */
	struct chan_mgr		*chan;		/* host-guest channels */
	struct vcap		*vcap;		/* caps on non-followers */
	struct event		*ev_period;
	/*
	 * The first period fires after half a period: a baseline sample,
	 * so that the first decision, a period later, has rates.
	 */
	bool			 baseline;
	struct event		*ev_sig[3];

	/*
	 * The daemon's own cost, CPU ns per period (the debug log, and the
	 * exit line that bench/cost reads): in all, and in the sampler.
	 */
	uint64_t		 cpu_ns_total;
	uint64_t		 cpu_ns_sample;
	uint64_t		 cpu_periods;
};

enum hostd_action {
	ACT_SET,		/* a [hostd] option: arg is its value */
	ACT_SET_TRUE,		/* a [hostd] boolean option, no argument */
	ACT_CONFIG,
	ACT_FOREGROUND,
	ACT_CHECK,
	ACT_DUMP,
	ACT_VERSION,
	ACT_HELP,
};

/* The command line: every override is a config option by name. */
static const struct hostd_opt {
	const char		*name;
	const char		*arg;		/* NULL: no argument */
	enum hostd_action	 action;
	const char		*conf;		/* option in [hostd] */
	const char		*help;
} hostd_opts[] = {
	{ "config", "FILE", ACT_CONFIG, NULL,
	    "configuration file (default " HCONF_DEFAULT_PATH ")" },
	{ "uri", "URI", ACT_SET, "uri", "libvirt URI" },
	{ "source", "SOURCE", ACT_SET, "source",
	    "where VMs are found: libvirt, qmp or both" },
	{ "period", "MS", ACT_SET, "period-ms", "period in milliseconds" },
	{ "observe", NULL, ACT_SET_TRUE, "observe",
	    "decide and log, never send to guests" },
	{ "proc-root", "DIR", ACT_SET, "proc-root", "procfs mount point" },
	{ "sys-root", "DIR", ACT_SET, "sys-root", "sysfs mount point" },
	{ "cgroup-root", "DIR", ACT_SET, "cgroup-root", "cgroupfs mount point" },
	{ "run-root", "DIR", ACT_SET, "run-root",
	    "runtime directory (libvirt status files)" },
	{ "log-level", "LEVEL", ACT_SET, "log-level",
	    "err, warning, notice, info or debug" },
	{ "foreground", NULL, ACT_FOREGROUND, NULL,
	    "do not detach from the terminal" },
	{ "check-config", NULL, ACT_CHECK, NULL,
	    "validate the configuration and exit" },
	{ "dump-config", NULL, ACT_DUMP, NULL,
	    "print the effective configuration and exit" },
	{ "version", NULL, ACT_VERSION, NULL, "print the version and exit" },
	{ "help", NULL, ACT_HELP, NULL, "print this help and exit" },
};

static void
hostd_usage(FILE *fp)
{
	size_t	i;
	char	left[40];

	fprintf(fp, "usage: prefcpu-hostd [options]\n");
	for (i = 0; i < nitems(hostd_opts); i++) {
		snprintf(left, sizeof(left), "--%s%s%s", hostd_opts[i].name,
		    hostd_opts[i].arg ? " " : "",
		    hostd_opts[i].arg ? hostd_opts[i].arg : "");
		fprintf(fp, "  %-24s %s\n", left, hostd_opts[i].help);
	}
	fprintf(fp, "\nConfiguration options:\n");
	conf_help(hconf_table, hconf_table_len, fp);
}

/* Defaults, then the file, then the command line; -1 with err. */
static int
hostd_load(struct hostd *d, struct hconf *c, char *err, size_t errlen)
{
	char		cause[256];
	unsigned int	i;

	hconf_defaults(c);
	if (d->conf_explicit || access(d->conf_path, F_OK) == 0) {
		if (hconf_load(c, d->conf_path, err, errlen) != 0)
			return -1;
	}
	for (i = 0; i < d->nover; i++) {
		if (hconf_set(c, d->over_name[i], d->over_value[i], cause,
		    sizeof(cause)) != 0) {
			snprintf(err, errlen, "command line: %s", cause);
			return -1;
		}
	}
	if (hconf_check(c, cause, sizeof(cause)) != 0) {
		snprintf(err, errlen, "%s", cause);
		return -1;
	}
	return 0;
}

static void
hostd_virt_params(const struct hconf *c, struct virt_params *p)
{
	memset(p, 0, sizeof(*p));
	p->uri = c->uri;
	p->run_root = c->run_root;
	p->proc_root = c->proc_root;
	p->keepalive_interval = c->keepalive_interval;
	p->keepalive_count = c->keepalive_count;
	p->reconnect_min_ms = c->reconnect_min_ms;
	p->reconnect_max_ms = c->reconnect_max_ms;
	p->qmp_fallback = c->qmp_fallback;
}

static void
hostd_qsrc_params(const struct hconf *c, struct qsrc_params *p)
{
	memset(p, 0, sizeof(*p));
	p->proc_root = c->proc_root;
	p->cgroup_root = c->cgroup_root;
	p->policy_dir = c->policy_dir;
	p->monitors = c->qmp_monitors;
	p->shared = c->qmp_shared;
	p->timeout_ms = c->qmp_timeout_ms;
	p->poll_ms = c->qmp_poll_ms;
	p->max_reply = c->qmp_max_reply;
	p->reconnect_min_ms = c->reconnect_min_ms;
	p->reconnect_max_ms = c->reconnect_max_ms;
}

/*
 * The sampler keeps one file open per vCPU thread: 1000 VMs of 8 vCPUs
 * need 8000 descriptors, far above the soft limit of 1024 that systemd
 * gives services.  The hard limit (524288 under systemd) is ours to take.
 */
static void
hostd_raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warn("cannot raise the open files limit");
}

static uint64_t
hostd_cpu_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Per-VM figures of the period, for the debug log. */
static void
hostd_log_period(struct hostd *d)
{
	const struct host_sample *hs = host_sample(d->host);
	struct vm		*vm;
	char			 name[VM_NAME_LEN * 4];

	log_debug("period %llu: usable %u CPUs (%s), busy %.2f, vCPU run "
	    "%.2f delay %.2f, non-VM %.2f, capacity %.2f, psi %.2f",
	    (unsigned long long)host_periods(d->host),
	    cpuset_count(&hs->usable), hs->usable_from, hs->busy_cpus,
	    hs->vm_run_cpus, hs->vm_delay_cpus, hs->nonvm_cpus, hs->capacity,
	    hs->psi_some_avg10);
	HOST_FOREACH_VM(vm, d->host) {
		const struct vm_thread *t, *busiest = NULL;
		unsigned int	i;

		/* Busiest by demand: run plus waiting to run. */
		for (i = 0; i < vm->info.nvcpus; i++) {
			t = &vm->thread[i];
			if (busiest == NULL || t->run_cpus + t->delay_cpus >
			    busiest->run_cpus + busiest->delay_cpus)
				busiest = t;
		}
		if (busiest == NULL)
			continue;
		str_escape(name, sizeof(name), vm->info.name,
		    strlen(vm->info.name));
		log_debug("domain %s: run %.3f delay %.3f CPUs, busiest vCPU %u "
		    "run %.3f delay %.3f, %u threads (%s), %u gone, preferred "
		    "%u/%u vCPUs", name, vm->sample.run_cpus,
		    vm->sample.delay_cpus, (unsigned int)(busiest - vm->thread),
		    busiest->run_cpus, busiest->delay_cpus, vm->sample.threads,
		    vm_tid_source_name(vm->tid_source), vm->sample.gone,
		    vm->decided ? vm->decision.vcpus : 0,
		    cpuset_count(&vm->info.online));
	}
}

static void	hostd_arm_period(struct hostd *, unsigned int ms);

static void
hostd_period(evutil_socket_t fd, short what, void *arg)
{
	struct hostd	*d = arg;
	uint64_t	 cpu0 = hostd_cpu_ns(), now = time_mono_ns(), cpu1;

	if (d->baseline) {
		d->baseline = false;
		hostd_arm_period(d, d->conf.period_ms);
	}

	sampler_run(d->sampler, now);
	cpu1 = hostd_cpu_ns();
	/* Decide, record, deliver, publish (channels, caps: model hooks). */
	host_period(d->host, now / 1000000);
	d->cpu_ns_sample += cpu1 - cpu0;
	d->cpu_ns_total += hostd_cpu_ns() - cpu0;
	d->cpu_periods++;
	if (log_get_level() >= LOGL_DEBUG) {
		hostd_log_period(d);
		log_debug("period cost: %.1f us CPU (mean %.1f us)",
		    (double)(hostd_cpu_ns() - cpu0) / 1000.0,
		    (double)d->cpu_ns_total / (double)d->cpu_periods / 1000.0);
	}
}

static void
hostd_arm_period(struct hostd *d, unsigned int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	event_del(d->ev_period);
	if (event_add(d->ev_period, &tv) != 0)
		fatalx("libevent: cannot add the period timer");
}

/* SIGHUP: a bad file keeps the running configuration. */
static void
hostd_reload(struct hostd *d)
{
	struct hconf		 c;
	struct host_params	 hp;
	struct virt_params	 vp;
	struct qsrc_params	 qp;
	char			 err[512];
	bool			 roots;

	if (hostd_load(d, &c, err, sizeof(err)) != 0) {
		log_warnx("reload: %s; keeping the running configuration", err);
		return;
	}
	if (c.source != d->conf.source) {
		log_warnx("reload: source %s needs a restart; keeping %s",
		    hconf_sources[c.source], hconf_sources[d->conf.source]);
		c.source = d->conf.source;
	}
	roots = strcmp(c.proc_root, d->conf.proc_root) != 0 ||
	    strcmp(c.sys_root, d->conf.sys_root) != 0 ||
	    strcmp(c.cgroup_root, d->conf.cgroup_root) != 0;
	d->conf = c;
	log_set_level((enum log_level)hconf_log_level(&c));
	hconf_params(&c, &hp);
	host_set_params(d->host, &hp);
	chan_mgr_set_conf(d->chan, &c.chan, c.period_ms, c.observe);
	vcap_set_observe(d->vcap, c.observe);
	http_set_period(d->http, c.period_ms);
	if (roots)
		sampler_reroot(d->sampler, c.proc_root, c.sys_root,
		    c.cgroup_root);
	hostd_virt_params(&c, &vp);
	virt_set_params(d->virt, &vp);
	hostd_qsrc_params(&c, &qp);
	qsrc_set_params(d->qsrc, &qp);
	d->baseline = false;
	hostd_arm_period(d, c.period_ms);
	log_notice("configuration reloaded%s", c.observe ?
	    " (observe mode)" : "");
}

static void
hostd_signal(evutil_socket_t sig, short what, void *arg)
{
	struct hostd	*d = arg;

	switch (sig) {
	case SIGHUP:
		hostd_reload(d);
		break;
	default:
		log_notice("signal %d: exiting", (int)sig);
		event_base_loopbreak(d->base);
		break;
	}
}

static void
hostd_parse_args(struct hostd *d, int argc, char **argv, enum hostd_action *mode,
    bool *foreground)
{
	struct option	 lopts[nitems(hostd_opts) + 1];
	size_t		 i;
	int		 ch, idx;

	for (i = 0; i < nitems(hostd_opts); i++) {
		lopts[i].name = hostd_opts[i].name;
		lopts[i].has_arg = hostd_opts[i].arg ? required_argument :
		    no_argument;
		lopts[i].flag = NULL;
		lopts[i].val = 0;
	}
	memset(&lopts[i], 0, sizeof(lopts[i]));

	*mode = ACT_SET;	/* i.e. run */
	*foreground = false;
	while ((ch = getopt_long(argc, argv, "", lopts, &idx)) != -1) {
		const struct hostd_opt *o;

		if (ch != 0) {
			hostd_usage(stderr);
			exit(2);
		}
		o = &hostd_opts[idx];
		switch (o->action) {
		case ACT_SET:
		case ACT_SET_TRUE:
			if (d->nover == nitems(d->over_name))
				fatalx("too many options");
			d->over_name[d->nover] = o->conf;
			d->over_value[d->nover++] = o->action == ACT_SET ?
			    optarg : "yes";
			break;
		case ACT_CONFIG:
			d->conf_path = optarg;
			d->conf_explicit = true;
			break;
		case ACT_FOREGROUND:
			*foreground = true;
			break;
		case ACT_CHECK:
		case ACT_DUMP:
		case ACT_VERSION:
		case ACT_HELP:
			*mode = o->action;
			break;
		}
	}
	if (optind != argc) {
		hostd_usage(stderr);
		exit(2);
	}
}

/* The HTTP server; policy writes go through the daemon's connection. */
static void
hostd_start_http(struct hostd *d)
{
	struct http_writer	 writer;
	char			 err[512];

	http_virt_writer(&writer, d->virt);
	d->http = http_start(d->base, d->host, &writer, &d->conf.http,
	    d->conf.period_ms, err, sizeof(err));
	if (d->http == NULL)
		fatalx("%s", err);
}

int
main(int argc, char **argv)
{
	struct hostd		 d;
	struct host_params	 hp;
	struct virt_params	 vp;
	struct qsrc_params	 qp;
	enum hostd_action	 mode;
	bool			 foreground;
	char			 err[512], *path;
	static const int	 sigs[] = { SIGTERM, SIGINT, SIGHUP };
	size_t			 i;

	memset(&d, 0, sizeof(d));
	d.conf_path = HCONF_DEFAULT_PATH;
	log_init(argv[0], LOGL_NOTICE);
	hostd_parse_args(&d, argc, argv, &mode, &foreground);

	switch (mode) {
	case ACT_VERSION:
		printf("prefcpu-hostd %s\n", PREFCPU_VERSION);
		return 0;
	case ACT_HELP:
		hostd_usage(stdout);
		return 0;
	default:
		break;
	}
	if (hostd_load(&d, &d.conf, err, sizeof(err)) != 0) {
		log_warnx("%s", err);
		return 1;
	}
	if (mode == ACT_CHECK) {
		printf("%s: configuration ok\n", d.conf_explicit ||
		    access(d.conf_path, F_OK) == 0 ? d.conf_path : "defaults");
		return 0;
	}
	if (mode == ACT_DUMP) {
		hconf_dump(&d.conf, stdout);
		return 0;
	}
	log_set_level((enum log_level)hconf_log_level(&d.conf));

	/* Detach, but keep stderr: it is the log (the journal under systemd). */
	if (!foreground && daemon(0, 1) != 0)
		fatal("daemon");
	signal(SIGPIPE, SIG_IGN);
	hostd_raise_nofile();

	if ((d.base = event_base_new()) == NULL)
		fatalx("libevent: cannot create the event base");
	/* Before the first connection, as libvirt requires. */
	virtev_register(d.base);

	hconf_params(&d.conf, &hp);
	d.host = host_new(&hp);
	/* Before discovery adds VMs: it installs the model's hooks. */
	d.chan = chan_mgr_new(d.base, d.host, &d.conf.chan, d.conf.period_ms,
	    d.conf.observe);
	d.sampler = sampler_new(d.host, d.conf.proc_root, d.conf.sys_root,
	    d.conf.cgroup_root);
	if (d.conf.source != HCONF_SRC_QMP) {
		hostd_virt_params(&d.conf, &vp);
		d.virt = virt_new(d.base, d.host, &vp);
	}
	if (d.conf.source != HCONF_SRC_LIBVIRT) {
		hostd_qsrc_params(&d.conf, &qp);
		d.qsrc = qsrc_new(d.base, d.host, &qp);
	}
	if (mkdir_p(d.conf.state_dir, 0755) != 0)
		log_warn("%s: cannot create it; vCPU caps are not recorded",
		    d.conf.state_dir);
	xasprintf(&path, "%s/caps", d.conf.state_dir);
	d.vcap = vcap_new(d.base, d.host, d.virt, path, d.conf.observe);
	free(path);
	hostd_start_http(&d);

	d.ev_period = event_new(d.base, -1, EV_PERSIST, hostd_period, &d);
	if (d.ev_period == NULL)
		fatalx("libevent: cannot create the period timer");
	d.baseline = true;
	hostd_arm_period(&d, d.conf.period_ms / 2 ? d.conf.period_ms / 2 : 1);
	for (i = 0; i < nitems(sigs); i++) {
		d.ev_sig[i] = evsignal_new(d.base, sigs[i], hostd_signal, &d);
		if (d.ev_sig[i] == NULL || event_add(d.ev_sig[i], NULL) != 0)
			fatalx("libevent: cannot watch signal %d", sigs[i]);
	}
	log_notice("prefcpu-hostd %s: period %u ms, VMs from %s%s%s",
	    PREFCPU_VERSION, d.conf.period_ms,
	    d.conf.source == HCONF_SRC_QMP ? "QMP monitors" :
	    d.conf.source == HCONF_SRC_BOTH ? "QMP monitors and libvirt " :
	    "libvirt ", d.conf.source == HCONF_SRC_QMP ? "" : d.conf.uri,
	    d.conf.observe ? ", observe mode: nothing is sent to guests" : "");

	if (event_base_dispatch(d.base) < 0)
		fatalx("libevent: dispatch failed");

	for (i = 0; i < nitems(sigs); i++)
		event_free(d.ev_sig[i]);
	event_free(d.ev_period);
	/* Guests go back to all their CPUs now, not when the lease ends. */
	chan_mgr_release_all(d.chan, 1000);
	chan_mgr_free(d.chan);
	vcap_lift_all(d.vcap);
	vcap_free(d.vcap);
	http_stop(d.http);
	qsrc_free(d.qsrc);
	virt_free(d.virt);
	sampler_free(d.sampler);
	host_free(d.host);
	if (d.cpu_periods > 0)
		log_info("%llu periods, mean cost %.1f us CPU (sampling %.1f, "
		    "policy and history %.1f)",
		    (unsigned long long)d.cpu_periods,
		    (double)d.cpu_ns_total / (double)d.cpu_periods / 1000.0,
		    (double)d.cpu_ns_sample / (double)d.cpu_periods / 1000.0,
		    (double)(d.cpu_ns_total - d.cpu_ns_sample) /
		    (double)d.cpu_periods / 1000.0);
	/* The base stays: libvirt's event implementation still points at it. */
	return 0;
}
