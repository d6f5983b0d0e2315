/*
 * prefcpu-guestd: the agent inside a VM that applies the host's preferred
 * CPU set (DESIGN.md sections 4-6).  One thread, one poll() loop.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <json-c/linkhash.h>

#include "backend.h"
#include "guestd.h"
#include "log.h"
#include "port.h"
#include "proto.h"
#include "session.h"
#include "status.h"
#include "util.h"

#ifndef GUESTD_RUN_DIR
#define GUESTD_RUN_DIR	"/run/prefcpu"
#endif

#define GUESTD_REPORT_MS	1000	/* the host's default period */
/* How long a stop waits for a failed restore to succeed on a retry. */
#define GUESTD_STOP_RETRY_MS	30000

struct guestd_opts {
	struct guestd_conf	conf;
	enum log_level		level;
	int			json;
};

typedef int	(*opt_set_fn)(struct guestd_opts *, const char *,
		    char *err, size_t errlen);

struct guestd_opt {
	const char	*name;
	int		 short_name;
	const char	*arg;		/* NULL: a flag */
	opt_set_fn	 set;		/* NULL: the argument is a directory */
	const char	*help;
	size_t		 dir;		/* where it goes in struct guestd_conf */
};

static int
opt_port(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	if (*v == '\0' || strcmp(v, "unix:") == 0) {
		snprintf(err, errlen, "an empty port");
		return -1;
	}
	o->conf.port = v;
	return 0;
}

static int
opt_backend(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	size_t	i;

	if (strcmp(v, "auto") != 0) {
		for (i = 0; backend_names[i] != NULL; i++) {
			if (strcmp(backend_names[i], v) == 0)
				break;
		}
		if (backend_names[i] == NULL) {
			snprintf(err, errlen, "\"%s\" is not auto, kernel, "
			    "systemd or cpuset", v);
			return -1;
		}
	}
	o->conf.backend = v;
	return 0;
}

/* A cgroup below the root: "a/b" or "/a/b", never "..", never the root. */
static int
opt_cgroup(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	char	*rel, *end;

	while (*v == '/')
		v++;
	rel = xstrdup(v);
	end = rel + strlen(rel);
	while (end > rel && end[-1] == '/')
		*--end = '\0';
	if (*rel == '\0' || strstr(rel, "..") != NULL || strstr(rel, "//")) {
		snprintf(err, errlen, "\"%s\" is not a cgroup below the root",
		    v);
		free(rel);
		return -1;
	}
	if (o->conf.ncgroups == GUESTD_MAX_LIST) {
		snprintf(err, errlen, "more than %d cgroups", GUESTD_MAX_LIST);
		free(rel);
		return -1;
	}
	o->conf.cgroups[o->conf.ncgroups++] = rel;	/* lives till exit */
	return 0;
}

static int
opt_slice(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	size_t	n = strlen(v);

	if (n <= 6 || strcmp(v + n - 6, ".slice") != 0 || *v == '-' ||
	    strchr(v, '/') != NULL) {
		snprintf(err, errlen, "\"%s\" is not a slice name", v);
		return -1;
	}
	if (o->conf.nslices == GUESTD_MAX_LIST) {
		snprintf(err, errlen, "more than %d slices", GUESTD_MAX_LIST);
		return -1;
	}
	o->conf.slices[o->conf.nslices++] = v;
	return 0;
}

static int
opt_keep(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "auto", "no", "yes" };
	size_t	i;

	for (i = 0; i < nitems(names); i++) {
		if (strcmp(v, names[i]) == 0) {
			o->conf.keep_affinity = (enum guestd_keep)i;
			return 0;
		}
	}
	snprintf(err, errlen, "\"%s\" is not auto, yes or no", v);
	return -1;
}

static int
opt_isolate(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0) {
		o->conf.isolate_idle = *v == 'y';
		return 0;
	}
	snprintf(err, errlen, "\"%s\" is not yes or no", v);
	return -1;
}

static int
opt_report(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	uint64_t	ms;

	if (parse_uint(v, 100, 3600000, &ms) == -1) {
		snprintf(err, errlen, "\"%s\" is not a number of ms in "
		    "100..3600000", v);
		return -1;
	}
	o->conf.report_ms = (unsigned int)ms;
	return 0;
}

static int
opt_max_lease(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	uint64_t	ms;

	if (parse_uint(v, PROTO_MIN_LEASE_MS, PROTO_MAX_LEASE_MS, &ms) == -1) {
		snprintf(err, errlen, "\"%s\" is not a number of ms in "
		    "%d..%d", v, PROTO_MIN_LEASE_MS, PROTO_MAX_LEASE_MS);
		return -1;
	}
	o->conf.max_lease_ms = (unsigned int)ms;
	return 0;
}

static int
opt_log_level(struct guestd_opts *o, const char *v, char *err, size_t errlen)
{
	int	l = log_level_parse(v);

	if (l == -1) {
		snprintf(err, errlen, "\"%s\" is not err, warning, notice, "
		    "info or debug", v);
		return -1;
	}
	o->level = (enum log_level)l;
	return 0;
}

static int
opt_json(struct guestd_opts *o, const char *v, char *e, size_t n)
{
	o->json = 1;
	return 0;
}

static int	opt_help(struct guestd_opts *, const char *, char *, size_t);
static int	opt_version(struct guestd_opts *, const char *, char *,
		    size_t);

static const struct guestd_opt guestd_opts[] = {
	{ "port", 'p', "PATH", opt_port,
	    "the channel: a character device, or unix:PATH to connect to a "
	    "socket (default: the virtio port " PROTO_PORT_NAME ")", 0 },
	{ "backend", 'b', "NAME", opt_backend,
	    "auto, kernel, systemd or cpuset (default auto: the first that "
	    "works, in that order)", 0 },
	{ "cgroup", 'c', "PATH", opt_cgroup,
	    "cpuset backend: a cgroup to confine, below the cgroup root; "
	    "repeatable (default: every top-level cgroup that holds tasks)", 0 },
	{ "slice", 's', "NAME", opt_slice,
	    "systemd backend: a slice to confine; repeatable (default: "
	    "system.slice, user.slice, machine.slice where present)", 0 },
	{ "keep-affinity", 'k', "WHEN", opt_keep,
	    "auto, yes or no: put back task affinities a cpuset change "
	    "resets (auto: on kernels older than 6.2)", 0 },
	{ "isolate-idle", 0, "YES|NO", opt_isolate,
	    "cpuset backend, confining every top-level cgroup: hold the CPUs "
	    "outside the set in an isolated cpuset partition, so the "
	    "scheduler stops waking them to balance load (default yes)", 0 },
	{ "proc-root", 0, "DIR", NULL, "where procfs is (default /proc)",
	    offsetof(struct guestd_conf, proc_root) },
	{ "sys-root", 0, "DIR", NULL, "where sysfs is (default /sys)",
	    offsetof(struct guestd_conf, sys_root) },
	{ "cgroup-root", 0, "DIR", NULL,
	    "where cgroup2 is (default /sys/fs/cgroup)",
	    offsetof(struct guestd_conf, cgroup_root) },
	{ "run-dir", 0, "DIR", NULL,
	    "state, status and lock files (default " GUESTD_RUN_DIR ")",
	    offsetof(struct guestd_conf, run_dir) },
	{ "report-interval", 'r', "MS", opt_report,
	    "milliseconds between reports to the host (default 1000)", 0 },
	{ "max-lease", 0, "MS", opt_max_lease,
	    "the longest lease a host's hello may raise the 60 s cap to; "
	    "a lease beyond the cap is cut to it (default 60000)", 0 },
	{ "log-level", 'l', "LEVEL", opt_log_level,
	    "err, warning, notice, info or debug (default info)", 0 },
	{ "json", 'j', NULL, opt_json,
	    "status: print JSON", 0 },
	{ "help", 'h', NULL, opt_help, "print this help", 0 },
	{ "version", 'V', NULL, opt_version, "print the version", 0 },
};

static void
guestd_usage(FILE *f)
{
	char	left[64];
	size_t	i;

	fprintf(f, "usage: %s [OPTION]...          run the agent\n"
	    "       %s status [--json] [--run-dir DIR]\n\n", GUESTD_NAME,
	    GUESTD_NAME);
	for (i = 0; i < nitems(guestd_opts); i++) {
		const struct guestd_opt	*o = &guestd_opts[i];

		snprintf(left, sizeof(left), "%s%c%s--%s%s%s",
		    o->short_name ? "-" : "", o->short_name ? o->short_name : ' ',
		    o->short_name ? ", " : "  ", o->name, o->arg ? " " : "",
		    o->arg ? o->arg : "");
		fprintf(f, "  %-28s %s\n", left, o->help);
	}
}

static int
opt_help(struct guestd_opts *o, const char *v, char *e, size_t n)
{
	guestd_usage(stdout);
	exit(0);
}

static int
opt_version(struct guestd_opts *o, const char *v, char *e, size_t n)
{
	printf("%s %s\n", GUESTD_NAME, PREFCPU_VERSION);
	exit(0);
}

static void
guestd_parse(struct guestd_opts *o, int argc, char **argv)
{
	struct option	 longs[nitems(guestd_opts) + 1];
	char		 shorts[3 * nitems(guestd_opts) + 2], *sp = shorts;
	char		 err[256];
	size_t		 i;
	int		 c, idx;

	memset(longs, 0, sizeof(longs));
	*sp++ = ':';
	for (i = 0; i < nitems(guestd_opts); i++) {
		longs[i].name = guestd_opts[i].name;
		longs[i].has_arg = guestd_opts[i].arg != NULL ?
		    required_argument : no_argument;
		longs[i].val = 256 + (int)i;
		if (guestd_opts[i].short_name != 0) {
			*sp++ = (char)guestd_opts[i].short_name;
			if (guestd_opts[i].arg != NULL)
				*sp++ = ':';
		}
	}
	*sp = '\0';
	while ((c = getopt_long(argc, argv, shorts, longs, &idx)) != -1) {
		if (c == '?' || c == ':') {
			fprintf(stderr, "%s: %s option %s\n", GUESTD_NAME,
			    c == ':' ? "missing the argument of" : "unknown",
			    argv[optind - 1]);
			guestd_usage(stderr);
			exit(2);
		}
		for (i = 0; i < nitems(guestd_opts); i++) {
			if (c == 256 + (int)i || c == guestd_opts[i].short_name)
				break;
		}
		if (guestd_opts[i].set == NULL)
			*(const char **)((char *)&o->conf +
			    guestd_opts[i].dir) = optarg;
		else if (guestd_opts[i].set(o, optarg, err, sizeof(err)) == -1) {
			fprintf(stderr, "%s: --%s: %s\n", GUESTD_NAME,
			    guestd_opts[i].name, err);
			exit(2);
		}
	}
}

static int
guestd_signals(void)
{
	sigset_t	set;
	int		fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		fatal("sigprocmask");
	if ((fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1)
		fatal("signalfd");
	return fd;
}

/* The signal that asks us to stop, 0 for none (SIGHUP is ignored). */
static int
guestd_read_signal(int fd)
{
	struct signalfd_siginfo	si;

	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			return (int)si.ssi_signo;
	}
	return 0;
}

/* Restore what an earlier run left; 0 when done or nothing, -1 logged. */
static int
guestd_recover(const struct guestd_conf *conf)
{
	char	err[512];
	int	rc;

	rc = backend_recover(conf, err, sizeof(err));
	if (rc == -1) {
		log_warnx("cannot restore what an earlier run changed: %s; "
		    "retrying every %d s, targets refused meanwhile", err,
		    SESSION_RETRY_MS / 1000);
		return -1;
	}
	if (rc == 1)
		log_notice("restored the originals an earlier run left");
	return 0;
}

/* Open the configured backend; NULL (logged) when auto finds none. */
static struct backend *
guestd_backend(const struct guestd_conf *conf)
{
	struct backend	*be;
	char		 err[512];

	be = backend_open(conf, conf->backend, err, sizeof(err));
	if (be == NULL) {
		if (strcmp(conf->backend, "auto") != 0)
			fatalx("%s", err);
		log_warnx("%s; targets will be refused", err);
	} else
		log_info("backend %s%s", backend_name(be),
		    backend_keeps_affinity(be) ? ", keeping task affinities" :
		    "");
	return be;
}

static int
guestd_run(struct guestd_conf *conf)
{
	struct backend	*be = NULL;
	struct session	*sess;
	struct port	*port;
	struct pollfd	 pfd[2];
	uint64_t	 now, deadline, recover_at = 0;
	int		 sigfd, lockfd, sig = 0, timeout, n, rc;

	if (mkdir_p(conf->run_dir, 0755) == -1)
		fatal("%s", conf->run_dir);
	if ((lockfd = status_lock(conf->run_dir)) == -1) {
		if (errno == EWOULDBLOCK)
			fatalx("another %s runs with %s", GUESTD_NAME,
			    conf->run_dir);
		fatal("lock in %s", conf->run_dir);
	}
	/*
	 * Signals are blocked before the recovery so that a SIGTERM during
	 * it waits for the loop, which restores anyway.
	 */
	sigfd = guestd_signals();

	/*
	 * Originals an earlier run left that cannot be put back now (a
	 * cgroup busy or read-only for a while) are retried on a timer;
	 * targets are refused meanwhile, as the state file holds them.
	 */
	if (guestd_recover(conf) == 0)
		be = guestd_backend(conf);
	else
		recover_at = time_mono_ms() + SESSION_RETRY_MS;

	sess = session_new(conf, be);
	if (recover_at != 0)
		session_set_backend(sess, NULL, true);
	port = port_new(conf->port, conf->sys_root, &session_port_cbs, sess);
	session_set_port(sess, port);

	while (sig == 0) {
		now = time_mono_ms();
		if (recover_at != 0 && now >= recover_at) {
			if (guestd_recover(conf) == 0) {
				recover_at = 0;
				be = guestd_backend(conf);
				session_set_backend(sess, be, false);
			} else
				recover_at = now + SESSION_RETRY_MS;
		}
		port_timer(port, now);
		session_timer(sess, now);

		pfd[0].fd = sigfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = port_pollfd(port, &pfd[1].events);
		deadline = deadline_min(deadline_min(port_deadline(port),
		    session_deadline(sess)), recover_at);
		now = time_mono_ms();
		if (deadline == 0)
			timeout = -1;
		else if (deadline <= now)
			timeout = 0;
		else
			timeout = deadline - now > 3600000 ? 3600000 :
			    (int)(deadline - now);
		n = poll(pfd, 2, timeout);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		if (pfd[0].revents & POLLIN)
			sig = guestd_read_signal(sigfd);
		if (sig == 0 && pfd[1].fd != -1 && pfd[1].revents != 0)
			port_handle(port, pfd[1].revents);
	}
	log_notice("%s: stopping", strsignal(sig));
	rc = session_shutdown(sess);
	/*
	 * The port may be gone (the unit stops with the device): retry
	 * without it, until it works, a second signal, or the stop timeout.
	 */
	deadline = time_mono_ms() + GUESTD_STOP_RETRY_MS;
	while (rc == -1 && time_mono_ms() < deadline) {
		log_info("retrying the restore in %d s", SESSION_RETRY_MS / 1000);
		pfd[0].fd = sigfd;
		pfd[0].events = POLLIN;
		if (poll(pfd, 1, SESSION_RETRY_MS) == 1 &&
		    guestd_read_signal(sigfd) != 0)
			break;
		rc = session_shutdown(sess);
	}
	if (rc == -1)
		log_warnx("the originals stay in the state file; the next "
		    "start restores them");
	session_free(sess);
	port_free(port);
	backend_close(be);
	status_remove(conf);
	close(sigfd);
	close(lockfd);
	return rc == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct guestd_opts	o;
	bool			status = false;

	memset(&o, 0, sizeof(o));
	o.conf.backend = "auto";
	o.conf.proc_root = "/proc";
	o.conf.sys_root = "/sys";
	o.conf.cgroup_root = "/sys/fs/cgroup";
	o.conf.run_dir = GUESTD_RUN_DIR;
	o.conf.keep_affinity = GUESTD_KEEP_AUTO;
	o.conf.isolate_idle = true;
	o.conf.report_ms = GUESTD_REPORT_MS;
	o.conf.max_lease_ms = PROTO_LEASE_CAP_MS;
	o.level = LOGL_INFO;

	if (argc > 1 && strcmp(argv[1], "status") == 0) {
		status = true;
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	guestd_parse(&o, argc, argv);
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument %s\n", GUESTD_NAME,
		    argv[optind]);
		guestd_usage(stderr);
		return 2;
	}
	if (status)
		return status_print(o.conf.run_dir, o.json);
	if (o.json) {
		fprintf(stderr, "%s: --json is for status\n", GUESTD_NAME);
		return 2;
	}
	log_init(GUESTD_NAME, o.level);
	/*
	 * json-c seeds its default string hash from /dev/urandom on first
	 * use; early in a guest's boot, before the kernel's RNG is ready,
	 * that read spins generating entropy (3.7 s of CPU under TCG).
	 * Lines are at most 4 KiB, so an unseeded hash is no flooding risk.
	 */
	json_global_set_string_hash(JSON_C_STR_HASH_PERLLIKE);
	return guestd_run(&o.conf);
}
