/* The option table of prefcpu-hostd. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hconf.h"
#include "log.h"
#include "util.h"

static const char *const hconf_log_levels[] = {
	"err", "warning", "notice", "info", "debug", NULL
};

const char *const hconf_sources[] = { "libvirt", "qmp", "both", NULL };

/* Each entry reads: name, field, default, range, help. */
#define OPT(sec, nm, ty, fld, df, lo, hi, dlo, dhi, ch, hp) {		\
	.section = sec, .name = nm, .type = ty,				\
	.offset = offsetof(struct hconf, fld), .def = df,		\
	.min = lo, .max = hi, .dmin = dlo, .dmax = dhi,			\
	.choices = ch, .help = hp }
#define HSTR(nm, fld, df, hp)	OPT("hostd", nm, CONF_STRING, fld, df, 0, 0, 0, 0, NULL, hp)
#define HUINT(nm, fld, df, lo, hi, hp) OPT("hostd", nm, CONF_UINT, fld, df, lo, hi, 0, 0, NULL, hp)
#define HBOOL(nm, fld, df, hp)	OPT("hostd", nm, CONF_BOOL, fld, df, 0, 0, 0, 0, NULL, hp)
#define PUINT(nm, fld, df, lo, hi, hp) OPT("policy", nm, CONF_UINT, fld, df, lo, hi, 0, 0, NULL, hp)
#define PDBL(nm, fld, df, lo, hi, hp) OPT("policy", nm, CONF_DOUBLE, fld, df, 0, 0, lo, hi, NULL, hp)

const struct conf_opt hconf_table[] = {
	HSTR("uri", uri, "qemu:///system",
	    "libvirt connection URI."),
	HUINT("period-ms", period_ms, "1000", 100, 60000,
	    "Sampling and decision period in milliseconds."),
	HBOOL("observe", observe, "no",
	    "Decide and log, but never send anything to a guest."),
	OPT("hostd", "log-level", CONF_CHOICE, log_level, "notice", 0, 0, 0,
	    0, hconf_log_levels,
	    "Least important messages logged (decision changes are notice)."),
	HSTR("proc-root", proc_root, "/proc",
	    "Where procfs is mounted (schedstat, stat, pressure)."),
	HSTR("sys-root", sys_root, "/sys",
	    "Where sysfs is mounted (online CPUs)."),
	HSTR("cgroup-root", cgroup_root, "/sys/fs/cgroup",
	    "Where the cgroup hierarchy is mounted (the machine slice cpuset, v1 or v2)."),
	HSTR("run-root", run_root, "/run",
	    "Runtime directory holding libvirt/qemu status XML and pid files."),
	HSTR("state-dir", state_dir, "/run/prefcpu",
	    "The daemon's own runtime directory: the vCPU caps it set (enforce=cap), to lift them after a crash."),
	HUINT("history", history, "3600", 1, 86400,
	    "Periods of history kept in memory."),
	HUINT("history-full", history_full, "600", 1, 86400,
	    "Newest periods of the history kept one by one; older ones are kept as means over 10 periods."),
	HUINT("decision-log", decision_log, "256", 1, 100000,
	    "Decision changes kept in memory."),
	HUINT("keepalive-interval", keepalive_interval, "5", 0, 3600,
	    "Seconds between libvirt keepalive probes; 0 turns them off."),
	HUINT("keepalive-count", keepalive_count, "5", 1, 100,
	    "Unanswered keepalive probes before the connection counts as dead."),
	HUINT("reconnect-min-ms", reconnect_min_ms, "500", 10, 3600000,
	    "First delay before reconnecting to libvirtd."),
	HUINT("reconnect-max-ms", reconnect_max_ms, "30000", 10, 3600000,
	    "Longest delay between reconnection attempts (doubling backoff)."),
	HBOOL("qmp-fallback", qmp_fallback, "yes",
	    "Ask QEMU for vCPU thread ids (query-cpus-fast, taints the domain) when libvirt's records do not give them."),
	OPT("hostd", "source", CONF_CHOICE, source, "libvirt", 0, 0, 0, 0,
	    hconf_sources,
	    "Where VMs are found: libvirt, qmp (QEMU monitors, for plain QEMU and Proxmox VE) or both."),
	HSTR("qmp-monitors", qmp_monitors, "/run/prefcpu/qmp/*.sock",
	    "Globs (space-separated) of QMP monitors dedicated to prefcpu: held open for their events."),
	HSTR("qmp-shared", qmp_shared, "/var/run/qemu-server/*.qmp",
	    "Globs of QMP monitors others own (Proxmox VE's): connect, one query round, disconnect; retried later when busy."),
	HUINT("qmp-timeout-ms", qmp_timeout_ms, "2000", 50, 60000,
	    "Longest wait for a QMP greeting or reply; a shared monitor that does not greet is busy."),
	HUINT("qmp-poll-ms", qmp_poll_ms, "10000", 200, 3600000,
	    "Interval of QMP query rounds and socket rescans (inotify reports new sockets at once)."),
	HUINT("qmp-max-reply", qmp_max_reply, "262144", 4096, 16777216,
	    "Bytes of one QMP reply; a longer one is refused and logged."),
	HSTR("policy-dir", policy_dir, "/etc/prefcpu/vms",
	    "Per-VM policy of VMs found through QMP: NAME.conf with the fields of the libvirt metadata (prefcpu-policy(5))."),
	PDBL("ewma-alpha", ewma_alpha, "1.0", 0.01, 1.0,
	    "Weight of the newest demand sample in its moving average."),
	PDBL("headroom", headroom, "0.5", 0.0, 64.0,
	    "CPUs added to a VM's demand in the vCPUs it is given."),
	PDBL("dead-band", dead_band, "1.0", 0.0, 64.0,
	    "Cores: smaller moves of a VM's share are ignored."),
	PUINT("dwell-ms", dwell_ms, "3000", 0, 3600000,
	    "Least time between two shrinks of the same VM."),
	PUINT("shrink-after", shrink_after, "2", 1, 3600,
	    "Periods of contention before a VM is shrunk."),
	PUINT("grow-after", grow_after, "1", 1, 3600,
	    "Periods a VM's fair share must stay above its cores before it is grown to it."),
	PDBL("saturation", saturation, "0.9", 0.1, 1.0,
	    "Use of the preferred vCPUs at or above which a VM counts as saturated."),
	OPT("policy", "enforce", CONF_CHOICE, enforce, "none", 0, 0, 0, 0,
	    polmeta_enforce_names,
	    "For VMs whose policy does not say: cap (cap a VM that does not follow at its weighted fair share while its domain is contended, through libvirt) or none."),
	HTTP_CONF_OPTS(struct hconf, http),
	CHAN_CONF_OPTS(struct hconf, chan),
};
const size_t hconf_table_len = nitems(hconf_table);

void
hconf_defaults(struct hconf *c)
{
	memset(c, 0, sizeof(*c));
	conf_defaults(hconf_table, hconf_table_len, c);
}

int
hconf_check(const struct hconf *c, char *err, size_t errlen)
{
	if (c->reconnect_min_ms > c->reconnect_max_ms) {
		snprintf(err, errlen, "reconnect-min-ms %u is above "
		    "reconnect-max-ms %u", c->reconnect_min_ms,
		    c->reconnect_max_ms);
		return -1;
	}
	if (chan_conf_check(&c->chan, err, errlen) != 0)
		return -1;
	if (http_conf_check(&c->http, err, errlen) != 0)
		return -1;
	if (c->uri[0] == '\0') {
		snprintf(err, errlen, "uri: must not be empty");
		return -1;
	}
	return 0;
}

int
hconf_load(struct hconf *c, const char *path, char *err, size_t errlen)
{
	char	cause[256];

	if (conf_load(hconf_table, hconf_table_len, c, path, err, errlen) != 0)
		return -1;
	if (hconf_check(c, cause, sizeof(cause)) != 0) {
		snprintf(err, errlen, "%s: %s", path, cause);
		return -1;
	}
	return 0;
}

int
hconf_set(struct hconf *c, const char *name, const char *value, char *err,
    size_t errlen)
{
	return conf_set(hconf_table, hconf_table_len, c, "hostd", name, value,
	    err, errlen);
}

void
hconf_dump(const struct hconf *c, FILE *fp)
{
	conf_dump(hconf_table, hconf_table_len, c, fp);
}

void
hconf_params(const struct hconf *c, struct host_params *p)
{
	memset(p, 0, sizeof(*p));
	p->observe = c->observe;
	p->history = c->history;
	p->history_full = c->history_full;
	p->decisions = c->decision_log;
	policy_config_default(&p->policy);
	p->policy.ewma_alpha = c->ewma_alpha;
	p->policy.headroom = c->headroom;
	p->policy.dead_band = c->dead_band;
	p->policy.dwell_ms = c->dwell_ms;
	p->policy.shrink_after = c->shrink_after;
	p->policy.grow_after = c->grow_after;
	p->policy.saturation = c->saturation;
	p->enforce = (enum polmeta_enforce)c->enforce;
}

int
hconf_log_level(const struct hconf *c)
{
	return log_level_parse(hconf_log_levels[c->log_level]);
}
