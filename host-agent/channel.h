/*
 * The host side of the host-guest channel (DESIGN.md sections 3.4, 5, 6):
 * one connection per VM to the unix socket of its org.prefcpu.0 channel,
 * where QEMU listens.  Each connection runs protocol v1: a resync newline
 * and hello, a target every period (the pipeline's deliver hook; the same
 * set with a new seq doubles as the lease refresh), ping when there was no
 * target to send, release on shutdown.  It keeps the VM's struct vm_chan
 * (model.h) current; vm->chan.following is what makes a VM steerable.
 *
 * The guest is hostile: lines are framed by proto_framer (bounded),
 * messages and bytes are rate limited per connection, every violation is
 * counted in vm->chan.err_*, and after conf.violations of them within
 * conf.window_ms the connection is closed and retried after a pause that
 * doubles up to conf.backoff_max_ms.  Output is bounded by conf.max_output:
 * a guest that does not read is dropped.  Nothing blocks, so a slow guest
 * never delays another.  Repeated acks of one seq, the same target refused
 * again and again, and "no session" after our hello are violations too;
 * the log lines about one guest are rate limited (a "suppressed N"
 * summary follows), so a hostile guest cannot flood the daemon's log.
 *
 * The socket path is vm->info.channel, read from the domain's live XML
 * (<channel type='unix'> with <target name='org.prefcpu.0'/>, QEMU in
 * mode='bind'); with libvirt's test driver the same XML points at a socket
 * a test listens on, so the daemon needs no option of its own for tests.
 *
 * Everything runs on the daemon's libevent base.  The manager registers
 * its hooks with the model (host_add_hooks) and owns every connection.
 */
#ifndef PREFCPU_CHANNEL_H
#define PREFCPU_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"

struct event_base;
struct host;

struct chan_conf {
	unsigned int	lease_ms;	/* in every target */
	unsigned int	rate;		/* messages per second from a guest */
	unsigned int	burst;		/* messages above the rate, at once */
	unsigned int	violations;	/* within window_ms: close */
	unsigned int	window_ms;
	unsigned int	backoff_min_ms;	/* first pause before reconnecting */
	unsigned int	backoff_max_ms;
	unsigned int	max_output;	/* bytes queued to one guest */
};

/*
 * The options of struct chan_conf for a daemon's conf table (section
 * "channel"), where the struct is member m of the daemon's struct t.
 */
#define CHAN_CONF_OPTS(t, m)						\
	{ "channel", "lease-ms", CONF_UINT, offsetof(t, m.lease_ms),	\
	    "15000", 100, 3600000, 0, 0, NULL,				\
	    "Lease sent with every target: a guest that hears nothing for"	\
	    " this long goes back to all its CPUs." },			\
	{ "channel", "rate", CONF_UINT, offsetof(t, m.rate), "50",	\
	    1, 10000, 0, 0, NULL,					\
	    "Messages per second a guest may send; more are dropped and"	\
	    " counted as violations." },				\
	{ "channel", "burst", CONF_UINT, offsetof(t, m.burst), "20",	\
	    1, 10000, 0, 0, NULL,					\
	    "Messages a guest may send at once above the rate." },	\
	{ "channel", "violations", CONF_UINT, offsetof(t, m.violations),	\
	    "10", 1, 100000, 0, 0, NULL,				\
	    "Protocol violations (bad, overlong or excess lines) within"	\
	    " window-ms that close the channel." },			\
	{ "channel", "window-ms", CONF_UINT, offsetof(t, m.window_ms),	\
	    "10000", 100, 3600000, 0, 0, NULL,				\
	    "Window in which violations are counted." },		\
	{ "channel", "backoff-min-ms", CONF_UINT,			\
	    offsetof(t, m.backoff_min_ms), "1000", 10, 3600000, 0, 0, NULL, \
	    "First pause before reconnecting a closed or failed channel." }, \
	{ "channel", "backoff-max-ms", CONF_UINT,			\
	    offsetof(t, m.backoff_max_ms), "60000", 10, 3600000, 0, 0, NULL, \
	    "Longest pause between reconnections (the pause doubles)." }, \
	{ "channel", "max-output", CONF_UINT, offsetof(t, m.max_output),	\
	    "65536", 8192, 16777216, 0, 0, NULL,			\
	    "Bytes queued to a guest that does not read before its channel"	\
	    " is closed." }

/* Set every field to its default (the CHAN_CONF_OPTS defaults). */
void	chan_conf_default(struct chan_conf *);
/* Checks across options (backoff-min-ms <= backoff-max-ms); -1 with err. */
int	chan_conf_check(const struct chan_conf *, char *err, size_t errlen);

struct chan_mgr;

/*
 * Start managing the channels of host's VMs on base: registers the model's
 * hooks, so call it before VMs are added.  Targets go out from the
 * period's deliver hook; hello retries, the following state, pings and
 * log summaries from its period_end hook (no timer of its own).
 * period_ms is the daemon's period (the hello tells it; a ping goes out
 * when no target did for one and a half of it).  In observe mode no
 * channel is even connected, so nothing reaches a guest.
 */
struct chan_mgr *chan_mgr_new(struct event_base *, struct host *,
	    const struct chan_conf *, unsigned int period_ms, bool observe);
/*
 * New configuration (SIGHUP).  Entering observe mode releases and closes
 * every channel; leaving it connects them.
 */
void	chan_mgr_set_conf(struct chan_mgr *, const struct chan_conf *,
	    unsigned int period_ms, bool observe);
/*
 * Send release to every guest with a session and run the base until the
 * bytes are written or timeout_ms passed (for SIGTERM: the event loop has
 * stopped).  Returns the number of guests the release reached the socket of.
 */
unsigned int chan_mgr_release_all(struct chan_mgr *, unsigned int timeout_ms);
/* Close every channel and remove the hooks; the host may then be freed. */
void	chan_mgr_free(struct chan_mgr *);

#endif
