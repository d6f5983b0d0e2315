/*
 * prefcpu-hostd's configuration: one table of options (common/conf.h) for
 * the INI file, the command line overrides, --dump-config and the man page.
 */
#ifndef PREFCPU_HCONF_H
#define PREFCPU_HCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "channel.h"
#include "conf.h"
#include "http.h"
#include "model.h"

#define HCONF_DEFAULT_PATH	"/etc/prefcpu/hostd.conf"

/* Where VMs are found (option source). */
enum hconf_source {
	HCONF_SRC_LIBVIRT,
	HCONF_SRC_QMP,
	HCONF_SRC_BOTH,
};

struct hconf {
	/* [hostd] */
	char		uri[CONF_STRLEN];
	unsigned int	period_ms;
	bool		observe;
	unsigned int	log_level;	/* index into hconf_log_levels */
	char		proc_root[CONF_STRLEN];
	char		sys_root[CONF_STRLEN];
	char		cgroup_root[CONF_STRLEN];
	char		run_root[CONF_STRLEN];
	char		state_dir[CONF_STRLEN];
	unsigned int	history;
	unsigned int	history_full;
	unsigned int	decision_log;
	unsigned int	keepalive_interval;	/* s; 0: off */
	unsigned int	keepalive_count;
	unsigned int	reconnect_min_ms;
	unsigned int	reconnect_max_ms;
	bool		qmp_fallback;
	unsigned int	source;		/* enum hconf_source */
	char		qmp_monitors[CONF_STRLEN];
	char		qmp_shared[CONF_STRLEN];
	unsigned int	qmp_timeout_ms;
	unsigned int	qmp_poll_ms;
	unsigned int	qmp_max_reply;
	char		policy_dir[CONF_STRLEN];
	/* [policy] */
	double		ewma_alpha;
	double		headroom;
	double		dead_band;
	unsigned int	dwell_ms;
	unsigned int	shrink_after;
	unsigned int	grow_after;
	double		saturation;
	unsigned int	enforce;	/* enum polmeta_enforce */
	/* [http]: the API, metrics and dashboard (http.h) */
	struct http_conf http;
	/* [channel]: the host-guest channels (channel.h) */
	struct chan_conf chan;
};

extern const struct conf_opt hconf_table[];
extern const size_t hconf_table_len;

/* Defaults for every option. */
void	hconf_defaults(struct hconf *);
/*
 * Read path over the current values, then check what no single option can
 * (reconnect-min-ms <= reconnect-max-ms).  -1 with "FILE:LINE: cause".
 */
int	hconf_load(struct hconf *, const char *path, char *err, size_t errlen);
/* Set one [hostd] option from the command line; -1 with a cause. */
int	hconf_set(struct hconf *, const char *name, const char *value,
	    char *err, size_t errlen);
/* Checks across options; -1 with a cause. */
int	hconf_check(const struct hconf *, char *err, size_t errlen);
void	hconf_dump(const struct hconf *, FILE *);
/* The model's parameters and the policy engine's configuration. */
void	hconf_params(const struct hconf *, struct host_params *);
extern const char *const hconf_sources[];
/* The log level as common/log.h wants it. */
int	hconf_log_level(const struct hconf *);

#endif
