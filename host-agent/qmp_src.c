/*
 * Discovery through QMP monitors (see qmp_src.h).
 *
 * A monitor (struct qconn) goes WAIT -> (connect) GREETING -> (greeting,
 * qmp_capabilities) QUERY -> (round done) HOLD for a dedicated monitor,
 * or closed and back to WAIT for a shared one.  Any failure closes the
 * connection and goes back to WAIT with backoff.  One timer per monitor
 * serves the reply timeout, the retry and the next round.
 *
 * The model's VMs are found again by UUID at every use (host_vm_find):
 * libvirt may take a VM over (a domain with an extra monitor), so no
 * pointer to a struct vm is kept across callbacks.
 */
#include <sys/types.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "log.h"
#include "polmeta.h"
#include "qmp.h"
#include "qmp_src.h"
#include "util.h"

#define QSRC_PORT_NAME		"org.prefcpu.0"
#define QSRC_MAX_PORTS		64	/* virtserialports asked about */
#define QSRC_MAX_MONITORS	4096
#define QSRC_POLICY_MAX		65536	/* bytes of a drop-in file */
#define QSRC_LIVENESS_MS	1000

enum qc_state {
	QC_WAIT,	/* not connected; the timer connects */
	QC_GREETING,	/* connected, waiting for {"QMP": ...} */
	QC_QUERY,	/* a command is in flight */
	QC_HOLD,	/* dedicated, between rounds */
};

/* The steps of a query round, in order. */
enum qc_step {
	ST_CAPS,
	ST_NAME,
	ST_UUID,
	ST_STATUS,
	ST_CPUS,
	ST_CHARDEV,
	ST_LIST_PERIPH,
	ST_LIST_ANON,
	ST_PORT_NAME,
	ST_PORT_CHARDEV,
	ST_DONE,
};

/* What a round found. */
struct qround {
	char		 name[QMP_STR];
	char		 uuid[VM_UUID_LEN];
	bool		 running;
	struct qmp_cpu	*cpus;
	unsigned int	 ncpus;
	struct qmp_item	*chardevs;
	unsigned int	 nchardevs;
	char		 (*ports)[QMP_STR];	/* QOM paths of virtserialports */
	unsigned int	 nports, port_i;
	char		 label[QMP_STR];	/* the channel's chardev */
};

struct qsrc;

struct qconn {
	struct qsrc		*q;
	char			*path;
	bool			 shared;
	bool			 seen;		/* by the last rescan */
	enum qc_state		 state;
	enum qc_step		 step;
	struct bufferevent	*bev;
	struct event		*ev_timer;
	uint64_t		 next_id, wait_id;
	enum qmp_expect		 expect;
	unsigned int		 backoff_ms;
	pid_t			 pid;		/* SO_PEERCRED */
	char			 uuid[VM_UUID_LEN];	/* VM fed, "" none */
	bool			 busy_logged;
	bool			 down_logged;
	bool			 again;		/* a new round after this one */
	uint64_t		 rounds;
	struct qround		 r;
	TAILQ_ENTRY(qconn)	 entry;
};

struct qsrc {
	struct event_base	*base;
	struct host		*host;
	struct qsrc_params	 p;
	char			*proc_root, *cgroup_root, *policy_dir;
	char			*monitors, *shared;
	TAILQ_HEAD(, qconn)	 conns;
	unsigned int		 nconns;
	int			 ino;		/* inotify fd, -1 if none */
	struct event		*ev_ino;
	struct event		*ev_scan;	/* rescan every poll_ms */
	struct event		*ev_live;	/* process liveness */
	struct {
		int		 wd;
		char		*dir;
	}			*watch;
	unsigned int		 nwatch;
};

static void	qc_timer(evutil_socket_t, short, void *);
static void	qc_send(struct qconn *, enum qc_step);
static void	qc_close(struct qconn *);
static void	qsrc_scan(struct qsrc *);

static char *
qesc(char *buf, size_t len, const char *s)
{
	return str_escape(buf, len, s, strlen(s));
}

static void
qc_arm(struct qconn *c, unsigned int ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_del(c->ev_timer);
	evtimer_add(c->ev_timer, &tv);
}

static void
qround_clear(struct qround *r)
{
	free(r->cpus);
	free(r->chardevs);
	free(r->ports);
	memset(r, 0, sizeof(*r));
}

/* --- the model ------------------------------------------------------------ */

/* The VM this monitor feeds, if it is still ours. */
static struct vm *
qc_vm(const struct qconn *c)
{
	struct vm	*vm;

	if (c->uuid[0] == '\0')
		return NULL;
	vm = host_vm_find(c->q->host, c->uuid);
	return vm != NULL && vm->source == VM_SRC_QMP ? vm : NULL;
}

static void
qc_forget(struct qconn *c, const char *why)
{
	struct vm	*vm = qc_vm(c);
	char		 name[VM_NAME_LEN * 4];

	if (vm != NULL) {
		log_notice("qmp %s: %s: %s; no longer tracked",
		    qesc(name, sizeof(name), vm->info.name), c->path, why);
		host_vm_remove(c->q->host, vm);
	}
	c->uuid[0] = '\0';
	c->pid = 0;
}

void
qsrc_policy_parse(const char *text, size_t len, const char *path,
    unsigned int nvcpus, struct vm_meta *m)
{
	char		 line[512], cause[160], esc[128];
	const char	*p = text, *end = text + len, *nl;
	char		*k, *v, *eq;
	unsigned int	 lineno = 0;
	size_t		 n;
	int		 f;

	memset(m, 0, sizeof(*m));
	polmeta_init(&m->pol);
	m->present = true;
	m->valid = true;
	while (p < end) {
		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (n >= sizeof(line) || memchr(p, '\0', n) != NULL) {
			snprintf(m->error, sizeof(m->error), "%s:%u: line too "
			    "long or binary", path, lineno);
			goto bad;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (nl != NULL);
		if ((k = strchr(line, '#')) != NULL)
			*k = '\0';
		k = line;
		while (isspace((unsigned char)*k))
			k++;
		str_rstrip(k);
		if (*k == '\0' || strcmp(k, "[policy]") == 0)
			continue;
		if ((eq = strchr(k, '=')) == NULL) {
			snprintf(m->error, sizeof(m->error), "%s:%u: expected "
			    "field = value", path, lineno);
			goto bad;
		}
		*eq = '\0';
		v = eq + 1;
		str_rstrip(k);
		while (isspace((unsigned char)*v))
			v++;
		if ((f = polmeta_field_find(k, PMN_ATTR)) < 0) {
			snprintf(m->error, sizeof(m->error), "%s:%u: unknown "
			    "field \"%s\"", path, lineno,
			    qesc(esc, sizeof(esc), k));
			goto bad;
		}
		if (polmeta_set_text(&m->pol, (enum polmeta_field)f, v,
		    PMN_ATTR, cause, sizeof(cause)) != 0) {
			snprintf(m->error, sizeof(m->error), "%s:%u: %s", path,
			    lineno, cause);
			goto bad;
		}
	}
	if (polmeta_check(&m->pol, nvcpus, PMN_ATTR, cause,
	    sizeof(cause)) != 0) {
		snprintf(m->error, sizeof(m->error), "%s: %s", path, cause);
		goto bad;
	}
	return;
bad:
	m->valid = false;
	polmeta_init(&m->pol);
}

/* The drop-in policy of a VM named name. */
static void
qsrc_policy_read(struct qsrc *q, const char *name, unsigned int nvcpus,
    struct vm_meta *m)
{
	char	*path, *buf;
	int	 fd;
	ssize_t	 n;

	memset(m, 0, sizeof(*m));
	polmeta_init(&m->pol);
	m->valid = true;
	if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL)
		return;
	xasprintf(&path, "%s/%s.conf", q->policy_dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		if (errno != ENOENT) {
			m->present = true;
			m->valid = false;
			snprintf(m->error, sizeof(m->error), "%s: %s", path,
			    strerror(errno));
		}
		free(path);
		return;
	}
	buf = xmalloc(QSRC_POLICY_MAX + 1);
	n = fd_pread_all(fd, buf, QSRC_POLICY_MAX + 1);
	close(fd);
	if (n < 0 || n > QSRC_POLICY_MAX) {
		m->present = true;
		m->valid = false;
		snprintf(m->error, sizeof(m->error), "%s: %s", path, n < 0 ?
		    strerror(errno) : "over 64 KiB");
	} else
		qsrc_policy_parse(buf, (size_t)n, path, nvcpus, m);
	free(buf);
	free(path);
}

static void
qsrc_set_meta(struct vm *vm, const struct vm_meta *m)
{
	char	name[VM_NAME_LEN * 4], *s;

	qesc(name, sizeof(name), vm->info.name);
	if (!m->valid && (vm->meta.valid ||
	    strcmp(vm->meta.error, m->error) != 0))
		log_warnx("qmp %s: policy: %s; using defaults until it is "
		    "fixed", name, m->error);
	else if (m->valid && !vm->meta.valid)
		log_notice("qmp %s: policy is valid again", name);
	if (m->valid && m->present && (!vm->meta.present ||
	    memcmp(&m->pol, &vm->meta.pol, sizeof(m->pol)) != 0)) {
		s = polmeta_xml(&m->pol);
		log_info("qmp %s: policy %s", name, s);
		free(s);
	}
	vm->meta = *m;
}

/* Split "a b c" into words; each word is handed to fn. */
static void
qsrc_words(const char *list, void (*fn)(struct qsrc *, const char *, bool),
    struct qsrc *q, bool shared)
{
	char	*copy = xstrdup(list), *w, *save = NULL;

	for (w = strtok_r(copy, " \t,", &save); w != NULL;
	    w = strtok_r(NULL, " \t,", &save))
		fn(q, w, shared);
	free(copy);
}

unsigned int
qsrc_weight(const char *proc_root, const char *cgroup_root, pid_t pid,
    char *from, size_t fromlen)
{
	char		 buf[8192], path[PATH_MAX], val[64], *line, *save = NULL;
	char		*ctl, *cg;
	uint64_t	 u;
	unsigned int	 v1 = 0;

	if (from != NULL && fromlen > 0)
		from[0] = '\0';
	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, (int)pid);
	if (pid <= 0 || file_read(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		/* hierarchy-ID:controllers:path */
		if ((ctl = strchr(line, ':')) == NULL ||
		    (cg = strchr(ctl + 1, ':')) == NULL)
			continue;
		*cg++ = '\0';
		ctl++;
		if (strstr(cg, "..") != NULL || cg[0] != '/')
			continue;
		if (*ctl == '\0') {
			/* v2: cpu.weight 1..10000, 100 the default. */
			snprintf(path, sizeof(path), "%s%s/cpu.weight",
			    cgroup_root, strcmp(cg, "/") == 0 ? "" : cg);
			if (file_read(path, val, sizeof(val)) > 0 &&
			    parse_uint(str_rstrip(val), 1, 10000, &u) == 0) {
				if (from != NULL)
					snprintf(from, fromlen, "%s", path);
				return (unsigned int)(u * 1024 / 100);
			}
		} else if (v1 == 0 && (strcmp(ctl, "cpu") == 0 ||
		    strstr(ctl, "cpu,") == ctl || strstr(ctl, ",cpu,") ||
		    (strlen(ctl) > 4 && strcmp(ctl + strlen(ctl) - 4,
		    ",cpu") == 0))) {
			static const char *const dirs[] = { "cpu", "cpu,cpuacct" };
			size_t	i;

			for (i = 0; i < nitems(dirs) && v1 == 0; i++) {
				snprintf(path, sizeof(path), "%s/%s%s/cpu.shares",
				    cgroup_root, dirs[i], strcmp(cg, "/") == 0 ?
				    "" : cg);
				if (file_read(path, val, sizeof(val)) > 0 &&
				    parse_uint(str_rstrip(val), 2, 262144,
				    &u) == 0) {
					v1 = (unsigned int)u;
					if (from != NULL)
						snprintf(from, fromlen, "%s",
						    path);
				}
			}
		}
	}
	return v1;
}

/* A key for a VM without -uuid (QEMU reports all zeros): its monitor. */
static void
qsrc_path_uuid(const char *path, char uuid[VM_UUID_LEN])
{
	uint64_t	h1 = 1469598103934665603ULL, h2 = 0x9e3779b97f4a7c15ULL;
	const unsigned char *s;

	for (s = (const unsigned char *)path; *s != '\0'; s++) {
		h1 = (h1 ^ *s) * 1099511628211ULL;
		h2 = (h2 ^ *s) * 0x100000001b3ULL + (h2 >> 29);
	}
	snprintf(uuid, VM_UUID_LEN, "%08x-%04x-%04x-%04x-%012llx",
	    (unsigned int)(h1 >> 32), (unsigned int)(h1 >> 16) & 0xffff,
	    0x8000 | ((unsigned int)h1 & 0x0fff),
	    0x8000 | ((unsigned int)(h2 >> 48) & 0x3fff),
	    (unsigned long long)(h2 & 0xffffffffffffULL));
}

static int
qsrc_core_cmp(const struct qmp_cpu *a, const struct qmp_cpu *b)
{
	return a->socket == b->socket && a->die == b->die &&
	    a->core == b->core && a->core >= 0 ? 0 : 1;
}

/*
 * Build the VM's info from the round: vCPUs (query-cpus-fast lists the
 * present ones), cores from socket/die/core ids, NUMA cells from node ids.
 */
static void
qround_info(const struct qconn *c, const struct qround *r, struct vm_info *i,
    unsigned int shares, const char *channel)
{
	unsigned int	 k, j, maxnode = 0, maxthreads = 1, nsock = 0;
	int		 sockets[QMP_MAX_CPUS];
	bool		 numa = r->ncpus > 0;

	memset(i, 0, sizeof(*i));
	snprintf(i->uuid, sizeof(i->uuid), "%s", r->uuid);
	i->id = -1;
	i->paused = !r->running;
	i->nvcpus = r->cpus[r->ncpus - 1].index + 1;
	cpuset_zero(&i->online);
	for (k = 0; k < r->ncpus; k++)
		cpuset_set(&i->online, r->cpus[k].index);
	/* Cores: vCPUs with the same socket, die and core ids. */
	i->core = xcalloc(r->ncpus, sizeof(*i->core));
	for (k = 0; k < r->ncpus; k++) {
		for (j = 0; j < k; j++) {
			if (qsrc_core_cmp(&r->cpus[j], &r->cpus[k]) == 0)
				break;
		}
		if (j < k) {
			/* the core of vCPU j */
			unsigned int m;

			for (m = 0; m < i->ncores; m++) {
				if (cpuset_isset(&i->core[m],
				    r->cpus[j].index)) {
					cpuset_set(&i->core[m],
					    r->cpus[k].index);
					if (cpuset_count(&i->core[m]) >
					    maxthreads)
						maxthreads = cpuset_count(
						    &i->core[m]);
					break;
				}
			}
			continue;
		}
		cpuset_zero(&i->core[i->ncores]);
		cpuset_set(&i->core[i->ncores++], r->cpus[k].index);
		for (j = 0; j < nsock; j++) {
			if (sockets[j] == r->cpus[k].socket)
				break;
		}
		if (j == nsock)
			sockets[nsock++] = r->cpus[k].socket;
	}
	i->threads = maxthreads;
	i->sockets = nsock ? nsock : 1;
	i->dies = 1;
	i->cores = i->ncores / i->sockets ? i->ncores / i->sockets : 1;
	/* NUMA: every vCPU must name its node. */
	for (k = 0; k < r->ncpus; k++) {
		if (r->cpus[k].node < 0)
			numa = false;
		else if ((unsigned int)r->cpus[k].node > maxnode)
			maxnode = (unsigned int)r->cpus[k].node;
	}
	if (numa && maxnode < 64) {
		i->nnodes = maxnode + 1;
		i->node = xcalloc(i->nnodes, sizeof(*i->node));
		for (k = 0; k < i->nnodes; k++)
			cpuset_zero(&i->node[k]);
		for (k = 0; k < r->ncpus; k++)
			cpuset_set(&i->node[r->cpus[k].node], r->cpus[k].index);
		i->core_node = xcalloc(i->ncores, sizeof(*i->core_node));
		for (k = 0; k < i->ncores; k++) {
			int first = cpuset_first(&i->core[k]);

			for (j = 0; j < r->ncpus; j++) {
				if (r->cpus[j].index == (unsigned int)first)
					i->core_node[k] =
					    (unsigned int)r->cpus[j].node;
			}
		}
	}
	i->shares = shares;
	i->channel = channel != NULL ? xstrdup(channel) : NULL;
	i->name = xstrdup(r->name);
	(void)c;
}

/* The host path of the org.prefcpu.0 channel, from the round. */
static bool
qround_channel(const struct qround *r, char *path, size_t len)
{
	unsigned int	k;

	for (k = 0; k < r->nchardevs; k++) {
		if (r->label[0] != '\0' &&
		    strcmp(r->chardevs[k].name, r->label) == 0)
			return qmp_unix_path(r->chardevs[k].value, path,
			    len) == 0;
	}
	/* No port found through QOM: a chardev named after the channel. */
	for (k = 0; k < r->nchardevs; k++) {
		if (strcmp(r->chardevs[k].name, QSRC_PORT_NAME) == 0 ||
		    strcmp(r->chardevs[k].name, "prefcpu") == 0)
			return qmp_unix_path(r->chardevs[k].value, path,
			    len) == 0;
	}
	return false;
}

/*
 * The glob matched a VM's channel socket before the VM was known: let go
 * of it at once (the rescan will not take it again).
 */
static void
qsrc_drop_path(struct qsrc *q, const char *path)
{
	struct qconn	*c;

	TAILQ_FOREACH(c, &q->conns, entry) {
		if (strcmp(c->path, path) == 0 && c->state != QC_WAIT) {
			log_info("qmp %s: a VM's channel, not a monitor; let "
			    "go", c->path);
			qc_close(c);
			qc_arm(c, c->q->p.poll_ms);
		}
	}
}

/* Another monitor already feeds this UUID. */
static struct qconn *
qsrc_owner(struct qsrc *q, const struct qconn *self, const char *uuid)
{
	struct qconn	*c;

	TAILQ_FOREACH(c, &q->conns, entry) {
		if (c != self && strcmp(c->uuid, uuid) == 0)
			return c;
	}
	return NULL;
}

/* A round is complete: write what it found into the model. */
static void
qc_apply(struct qconn *c)
{
	struct qsrc	*q = c->q;
	struct qround	*r = &c->r;
	struct vm	*vm;
	struct qconn	*other;
	struct vm_info	 info;
	struct vm_meta	 meta;
	pid_t		*tids;
	char		 chan[108], esc[VM_NAME_LEN * 4], from[PATH_MAX];
	const char	*base;
	unsigned int	 shares, k;
	bool		 added = false, haschan;

	if (r->ncpus == 0)
		return;
	if (r->uuid[0] == '\0' ||
	    strcmp(r->uuid, "00000000-0000-0000-0000-000000000000") == 0)
		qsrc_path_uuid(c->path, r->uuid);
	if (r->name[0] == '\0') {
		/* No -name: the socket's name without its extension. */
		base = strrchr(c->path, '/');
		base = base != NULL ? base + 1 : c->path;
		snprintf(r->name, sizeof(r->name), "%.*s",
		    (int)strcspn(base, "."), base);
	}
	qesc(esc, sizeof(esc), r->name);

	/* The UUID changed: another QEMU listens on this socket now. */
	if (c->uuid[0] != '\0' && strcmp(c->uuid, r->uuid) != 0)
		qc_forget(c, "another VM answers on this monitor");
	vm = host_vm_find(q->host, r->uuid);
	if (vm != NULL && vm->source != VM_SRC_QMP) {
		if (c->rounds == 1)
			log_info("qmp %s: %s: a %s domain; left to it", esc,
			    c->path, vm_source_name(vm->source));
		c->uuid[0] = '\0';
		return;
	}
	other = qsrc_owner(q, c, r->uuid);
	if (other != NULL) {
		/* A dedicated monitor wins over a shared one. */
		if (other->shared && !c->shared) {
			log_info("qmp %s: now through %s instead of %s", esc,
			    c->path, other->path);
			other->uuid[0] = '\0';
		} else {
			if (c->rounds == 1)
				log_info("qmp %s: %s: also reached through "
				    "%s; using that one", esc, c->path,
				    other->path);
			return;
		}
	}
	if (vm == NULL && (vm = host_vm_find_name(q->host, r->name)) != NULL) {
		if (c->rounds == 1)
			log_warnx("qmp %s: %s: a VM of that name is tracked "
			    "already (UUID %s); not tracked", esc, c->path,
			    vm->info.uuid);
		return;
	}

	shares = qsrc_weight(q->proc_root, q->cgroup_root, c->pid, from,
	    sizeof(from));
	haschan = qround_channel(r, chan, sizeof(chan));
	qround_info(c, r, &info, shares, haschan ? chan : NULL);
	if (haschan)
		qsrc_drop_path(q, chan);
	qsrc_policy_read(q, r->name, info.nvcpus, &meta);
	tids = xcalloc(info.nvcpus, sizeof(*tids));
	for (k = 0; k < r->ncpus; k++)
		tids[r->cpus[k].index] = r->cpus[k].tid;

	vm = host_vm_find(q->host, r->uuid);
	if (vm == NULL) {
		vm = host_vm_add(q->host, r->uuid, r->name);
		vm->source = VM_SRC_QMP;
		added = true;
	}
	snprintf(c->uuid, sizeof(c->uuid), "%s", r->uuid);
	vm_set_info(vm, &info);
	qsrc_set_meta(vm, &meta);
	vm_set_threads(vm, c->pid, tids, vm->info.nvcpus, VM_TID_QMP);
	free(tids);
	if (added)
		log_notice("qmp %s: tracking (%s monitor %s, pid %d, %u vCPUs, "
		    "%u cores, %u NUMA cells, weight %u%s%s%s%s)", esc,
		    c->shared ? "shared" : "dedicated", c->path, (int)c->pid,
		    vm->info.nvcpus, vm->info.ncores, vm->info.nnodes,
		    polmeta_weight(vm_policy(vm), vm->info.shares),
		    from[0] ? " from " : "", from,
		    vm->info.channel ? ", channel " : ", no org.prefcpu.0 channel",
		    vm->info.channel ? vm->info.channel : "");
	host_vm_changed(q->host, vm);
}

/* --- the connection ------------------------------------------------------- */

static void
qc_close(struct qconn *c)
{
	if (c->bev != NULL) {
		bufferevent_free(c->bev);
		c->bev = NULL;
	}
	qround_clear(&c->r);
	c->state = QC_WAIT;
}

/* A failure: close and retry with backoff. */
static void
qc_fail(struct qconn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
qc_fail(struct qconn *c, const char *fmt, ...)
{
	va_list	ap;
	char	msg[512];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->down_logged)
		log_warnx("qmp %s: %s; retrying with backoff", c->path, msg);
	c->down_logged = true;
	qc_close(c);
	qc_arm(c, c->backoff_ms);
	c->backoff_ms = c->backoff_ms * 2 > c->q->p.reconnect_max_ms ?
	    c->q->p.reconnect_max_ms : c->backoff_ms * 2;
}

/* The round is over. */
static void
qc_done(struct qconn *c)
{
	c->rounds++;
	c->down_logged = false;
	c->busy_logged = false;
	c->backoff_ms = c->q->p.reconnect_min_ms;
	qc_apply(c);
	qround_clear(&c->r);
	if (c->shared) {
		/* Never keep someone else's monitor: one round, then go. */
		qc_close(c);
		qc_arm(c, c->q->p.poll_ms);
		return;
	}
	c->state = QC_HOLD;
	qc_arm(c, c->again ? 0 : c->q->p.poll_ms);
	c->again = false;
}

/* Send the command of step s (the next virtserialport for the port steps). */
static void
qc_send(struct qconn *c, enum qc_step s)
{
	static const struct {
		const char	*execute;
		enum qmp_expect	 expect;
	} cmds[] = {
		[ST_CAPS] = { "qmp_capabilities", QMPX_ANY },
		[ST_NAME] = { "query-name", QMPX_NAME },
		[ST_UUID] = { "query-uuid", QMPX_UUID },
		[ST_STATUS] = { "query-status", QMPX_STATUS },
		[ST_CPUS] = { "query-cpus-fast", QMPX_CPUS },
		[ST_CHARDEV] = { "query-chardev", QMPX_CHARDEV },
		[ST_LIST_PERIPH] = { "qom-list", QMPX_QOM_LIST },
		[ST_LIST_ANON] = { "qom-list", QMPX_QOM_LIST },
		[ST_PORT_NAME] = { "qom-get", QMPX_STRING },
		[ST_PORT_CHARDEV] = { "qom-get", QMPX_STRING },
	};
	const char	*path = NULL, *prop = NULL;
	char		*line;

	if ((s == ST_PORT_NAME || s == ST_PORT_CHARDEV) &&
	    c->r.port_i >= c->r.nports)
		s = ST_DONE;
	if (s == ST_DONE) {
		qc_done(c);
		return;
	}
	switch (s) {
	case ST_LIST_PERIPH:
		path = "/machine/peripheral";
		break;
	case ST_LIST_ANON:
		path = "/machine/peripheral-anon";
		break;
	case ST_PORT_NAME:
		path = c->r.ports[c->r.port_i];
		prop = "name";
		break;
	case ST_PORT_CHARDEV:
		path = c->r.ports[c->r.port_i];
		prop = "chardev";
		break;
	default:
		break;
	}
	c->step = s;
	c->expect = cmds[s].expect;
	c->wait_id = ++c->next_id;
	line = qmp_command(cmds[s].execute, c->wait_id, path, prop);
	bufferevent_write(c->bev, line, strlen(line));
	free(line);
	c->state = QC_QUERY;
	qc_arm(c, c->q->p.timeout_ms);
}

/* Keep the QOM children that are virtserialports. */
static void
qc_ports(struct qconn *c, const struct qmp_reply *rep, const char *parent)
{
	unsigned int	k;

	for (k = 0; k < rep->n && c->r.nports < QSRC_MAX_PORTS; k++) {
		if (strncmp(rep->items[k].value, "child<virtserialport", 20) != 0)
			continue;
		c->r.ports = xreallocarray(c->r.ports, c->r.nports + 1,
		    sizeof(*c->r.ports));
		if ((size_t)snprintf(c->r.ports[c->r.nports], QMP_STR, "%s/%s",
		    parent, rep->items[k].name) < QMP_STR)
			c->r.nports++;
	}
}

/* The reply to the command in flight. */
static void
qc_reply(struct qconn *c, struct qmp_reply *rep)
{
	struct qround	*r = &c->r;
	char		 esc[QMP_STR * 4];
	enum qc_step	 next = c->step + 1;

	if (rep->kind == QMPK_ERROR) {
		/* An older QEMU without a command, or no such QOM path. */
		if (c->step == ST_CAPS || c->step == ST_CPUS) {
			qc_fail(c, "%s failed: %s", c->step == ST_CAPS ?
			    "qmp_capabilities" : "query-cpus-fast",
			    qesc(esc, sizeof(esc), rep->text));
			return;
		}
		log_debug("qmp %s: step %d: %s", c->path, (int)c->step,
		    qesc(esc, sizeof(esc), rep->text));
		if (c->step == ST_PORT_NAME || c->step == ST_PORT_CHARDEV) {
			r->port_i++;
			next = ST_PORT_NAME;
		}
		qc_send(c, next);
		return;
	}
	switch (c->step) {
	case ST_NAME:
		snprintf(r->name, sizeof(r->name), "%s", rep->text);
		break;
	case ST_UUID:
		snprintf(r->uuid, sizeof(r->uuid), "%s", rep->text);
		break;
	case ST_STATUS:
		r->running = rep->running;
		break;
	case ST_CPUS:
		r->cpus = rep->cpus;
		r->ncpus = rep->n;
		rep->cpus = NULL;
		break;
	case ST_CHARDEV:
		r->chardevs = rep->items;
		r->nchardevs = rep->n;
		rep->items = NULL;
		break;
	case ST_LIST_PERIPH:
		qc_ports(c, rep, "/machine/peripheral");
		break;
	case ST_LIST_ANON:
		qc_ports(c, rep, "/machine/peripheral-anon");
		break;
	case ST_PORT_NAME:
		if (strcmp(rep->text, QSRC_PORT_NAME) == 0)
			next = ST_PORT_CHARDEV;
		else {
			r->port_i++;
			next = ST_PORT_NAME;
		}
		break;
	case ST_PORT_CHARDEV:
		snprintf(r->label, sizeof(r->label), "%s", rep->text);
		next = ST_DONE;
		break;
	default:
		break;
	}
	qc_send(c, next);
}

static void
qc_event(struct qconn *c, const struct qmp_reply *rep)
{
	struct vm	*vm = qc_vm(c);
	char		 esc[128];

	qesc(esc, sizeof(esc), rep->text);
	log_info("qmp %s: event %s", c->path, esc);
	if (vm == NULL)
		return;
	if (strcmp(rep->text, "STOP") == 0 || strcmp(rep->text, "RESUME") == 0) {
		vm->info.paused = strcmp(rep->text, "STOP") == 0;
		host_vm_changed(c->q->host, vm);
	} else if (strcmp(rep->text, "SHUTDOWN") == 0) {
		/* QEMU exits next (unless -no-shutdown): stop steering it. */
		vm->info.paused = true;
		host_vm_changed(c->q->host, vm);
	} else if (strncmp(rep->text, "DEVICE_", 7) == 0 ||
	    strncmp(rep->text, "ACPI_", 5) == 0) {
		/* vCPU or port hot(un)plug: ask again. */
		if (c->state == QC_HOLD)
			qc_arm(c, 0);
		else
			c->again = true;
	}
}

static void
qc_line(struct qconn *c, const char *line, size_t len)
{
	struct qmp_reply rep;
	char		 err[256];

	if (qmp_decode(line, len, c->state == QC_QUERY ? c->expect : QMPX_ANY,
	    &rep, err, sizeof(err)) != 0) {
		qc_fail(c, "bad reply: %s", err);
		return;
	}
	switch (rep.kind) {
	case QMPK_EVENT:
		qc_event(c, &rep);
		break;
	case QMPK_GREETING:
		if (c->state != QC_GREETING) {
			qc_fail(c, "a second greeting");
			break;
		}
		c->busy_logged = false;
		qc_send(c, ST_CAPS);
		break;
	case QMPK_RETURN:
	case QMPK_ERROR:
		if (c->state != QC_QUERY || !rep.has_id ||
		    rep.id != c->wait_id) {
			qc_fail(c, "a reply to no command of ours");
			break;
		}
		qc_reply(c, &rep);
		break;
	}
	qmp_reply_free(&rep);
}

static void
qc_read(struct bufferevent *bev, void *arg)
{
	struct qconn		*c = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);
	struct evbuffer_ptr	 eol;
	size_t			 n, eollen;
	char			*line;

	while (c->bev == bev) {
		eol = evbuffer_search_eol(in, NULL, &eollen, EVBUFFER_EOL_LF);
		if (eol.pos < 0) {
			if (evbuffer_get_length(in) > c->q->p.max_reply)
				qc_fail(c, "a reply over %u bytes: refused",
				    c->q->p.max_reply);
			return;
		}
		n = (size_t)eol.pos;
		if (n > c->q->p.max_reply) {
			qc_fail(c, "a reply of %zu bytes, over %u: refused", n,
			    c->q->p.max_reply);
			return;
		}
		line = xmalloc(n + 1);
		evbuffer_remove(in, line, n);
		evbuffer_drain(in, eollen);
		line[n] = '\0';
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n > 0)
			qc_line(c, line, n);
		free(line);
	}
}

static bool
qsrc_alive(const struct qsrc *q, pid_t pid)
{
	char	path[PATH_MAX], buf[512], *p;

	if (pid <= 0)
		return true;	/* not known: the socket decides */
	snprintf(path, sizeof(path), "%s/%d/stat", q->proc_root, (int)pid);
	if (file_read(path, buf, sizeof(buf)) <= 0)
		return false;
	/* "PID (comm) S ...": the state after the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] == '\0')
		return true;
	return p[2] != 'Z' && p[2] != 'X';
}

static void
qc_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct qconn	*c = arg;

	if (what & BEV_EVENT_EOF) {
		if (c->shared && c->state == QC_WAIT)
			return;
		log_info("qmp %s: monitor closed", c->path);
		qc_close(c);
		if (!qsrc_alive(c->q, c->pid))
			qc_forget(c, "QEMU exited");
		/* Reconnecting tells whether QEMU is still there. */
		c->backoff_ms = c->q->p.reconnect_min_ms;
		qc_arm(c, c->q->p.reconnect_min_ms);
		return;
	}
	if (what & BEV_EVENT_ERROR)
		qc_fail(c, "monitor: %s", strerror(EVUTIL_SOCKET_ERROR()));
}

static void
qc_connect(struct qconn *c)
{
	struct sockaddr_un	 sun;
	struct ucred		 cred;
	socklen_t		 credlen = sizeof(cred);
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(c->path) >= sizeof(sun.sun_path)) {
		qc_fail(c, "path too long for a socket");
		return;
	}
	memcpy(sun.sun_path, c->path, strlen(c->path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		qc_fail(c, "socket: %s", strerror(errno));
		return;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
		int e = errno;

		close(fd);
		if (e == ECONNREFUSED || e == ENOENT) {
			/* Nobody listens: the VM is gone. */
			qc_forget(c, "monitor gone (QEMU exited)");
			qc_fail(c, "connect: %s", strerror(e));
		} else if (e == EAGAIN) {
			qc_arm(c, c->q->p.poll_ms);	/* backlog full: busy */
		} else
			qc_fail(c, "connect: %s", strerror(e));
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &credlen) == 0 &&
	    cred.pid > 0) {
		if (c->pid != 0 && c->pid != cred.pid)
			qc_forget(c, "another process listens now");
		c->pid = cred.pid;
	}
	c->bev = bufferevent_socket_new(c->q->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		close(fd);
		qc_fail(c, "bufferevent: out of memory");
		return;
	}
	/* Read no more than one reply's bound ahead. */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    (size_t)c->q->p.max_reply + 2);
	bufferevent_setcb(c->bev, qc_read, NULL, qc_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	memset(&c->r, 0, sizeof(c->r));
	c->state = QC_GREETING;
	qc_arm(c, c->q->p.timeout_ms);
}

static void
qc_timer(evutil_socket_t fd, short what, void *arg)
{
	struct qconn	*c = arg;

	switch (c->state) {
	case QC_WAIT:
		qc_connect(c);
		break;
	case QC_GREETING:
		/*
		 * Connected but not greeted: QEMU serves one client at a
		 * time and another holds the monitor.  Let go, try later.
		 */
		if (!c->busy_logged)
			log_info("qmp %s: busy (no greeting within %u ms: "
			    "another client holds it); trying again later",
			    c->path, c->q->p.timeout_ms);
		c->busy_logged = true;
		qc_close(c);
		qc_arm(c, c->shared ? c->q->p.poll_ms : c->backoff_ms);
		break;
	case QC_QUERY:
		qc_fail(c, "no reply within %u ms", c->q->p.timeout_ms);
		break;
	case QC_HOLD:
		qc_send(c, ST_NAME);
		break;
	}
}

/* --- the monitors ------------------------------------------------------- */

static struct qconn *
qsrc_find(struct qsrc *q, const char *path)
{
	struct qconn	*c;

	TAILQ_FOREACH(c, &q->conns, entry) {
		if (strcmp(c->path, path) == 0)
			return c;
	}
	return NULL;
}

static void
qconn_free(struct qconn *c, const char *why)
{
	qc_close(c);
	qc_forget(c, why);
	event_free(c->ev_timer);
	free(c->path);
	free(c);
}

static void
qsrc_watch(struct qsrc *q, const char *dir)
{
	unsigned int	k;
	int		wd;

	for (k = 0; k < q->nwatch; k++) {
		if (strcmp(q->watch[k].dir, dir) == 0)
			return;
	}
	if (q->ino < 0)
		return;
	wd = inotify_add_watch(q->ino, dir, IN_CREATE | IN_DELETE |
	    IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_ONLYDIR);
	if (wd < 0)
		return;		/* not there yet: the rescan tries again */
	q->watch = xreallocarray(q->watch, q->nwatch + 1, sizeof(*q->watch));
	q->watch[q->nwatch].wd = wd;
	q->watch[q->nwatch++].dir = xstrdup(dir);
	log_debug("qmp: watching %s", dir);
}

/*
 * A socket that is a tracked VM's channel is the guest agent's, not a
 * monitor: a glob that matches it too must not take it.
 */
static bool
qsrc_is_channel(const struct qsrc *q, const char *path)
{
	struct vm	*vm;

	HOST_FOREACH_VM(vm, q->host) {
		if (vm->info.channel != NULL &&
		    strcmp(vm->info.channel, path) == 0)
			return true;
	}
	return false;
}

static void
qsrc_glob(struct qsrc *q, const char *pattern, bool shared)
{
	glob_t		 g;
	struct stat	 st;
	struct qconn	*c;
	char		*dir, *slash;
	size_t		 i;

	dir = xstrdup(pattern);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		qsrc_watch(q, dir);
	}
	free(dir);
	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (i = 0; i < g.gl_pathc; i++) {
		if (stat(g.gl_pathv[i], &st) != 0 || !S_ISSOCK(st.st_mode) ||
		    qsrc_is_channel(q, g.gl_pathv[i]))
			continue;
		if ((c = qsrc_find(q, g.gl_pathv[i])) != NULL) {
			c->seen = true;
			continue;
		}
		if (q->nconns >= QSRC_MAX_MONITORS) {
			log_warnx("qmp: more than %d monitors; %s ignored",
			    QSRC_MAX_MONITORS, g.gl_pathv[i]);
			break;
		}
		c = xcalloc(1, sizeof(*c));
		c->q = q;
		c->path = xstrdup(g.gl_pathv[i]);
		c->shared = shared;
		c->seen = true;
		c->state = QC_WAIT;
		c->backoff_ms = q->p.reconnect_min_ms;
		c->ev_timer = evtimer_new(q->base, qc_timer, c);
		if (c->ev_timer == NULL)
			fatalx("libevent: cannot create a QMP timer");
		TAILQ_INSERT_TAIL(&q->conns, c, entry);
		q->nconns++;
		log_info("qmp: found %s monitor %s", shared ? "shared" :
		    "dedicated", c->path);
		qc_arm(c, 0);
	}
	globfree(&g);
}

/* Bring the monitors in line with the sockets the globs find now. */
static void
qsrc_scan(struct qsrc *q)
{
	struct qconn	*c, *next;

	TAILQ_FOREACH(c, &q->conns, entry)
		c->seen = false;
	qsrc_words(q->monitors, qsrc_glob, q, false);
	qsrc_words(q->shared, qsrc_glob, q, true);
	qsrc_watch(q, q->policy_dir);
	for (c = TAILQ_FIRST(&q->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->seen)
			continue;
		TAILQ_REMOVE(&q->conns, c, entry);
		q->nconns--;
		qconn_free(c, "monitor socket removed");
	}
}

/* Re-read every tracked VM's policy file. */
static void
qsrc_policies(struct qsrc *q)
{
	struct qconn	*c;
	struct vm	*vm;
	struct vm_meta	 m;

	TAILQ_FOREACH(c, &q->conns, entry) {
		if ((vm = qc_vm(c)) == NULL)
			continue;
		qsrc_policy_read(q, vm->info.name, vm->info.nvcpus, &m);
		if (memcmp(&m, &vm->meta, sizeof(m)) == 0)
			continue;
		qsrc_set_meta(vm, &m);
		host_vm_changed(q->host, vm);
	}
}

static void
qsrc_ino(evutil_socket_t fd, short what, void *arg)
{
	struct qsrc	*q = arg;
	char		 buf[8192] __attribute__((aligned(8)));
	const struct inotify_event *ev;
	ssize_t		 n;
	size_t		 off;
	bool		 scan = false, pol = false;
	unsigned int	 k;

	while ((n = read(q->ino, buf, sizeof(buf))) > 0) {
		for (off = 0; off + sizeof(*ev) <= (size_t)n;
		    off += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			if (ev->mask & IN_Q_OVERFLOW) {
				scan = pol = true;
				continue;
			}
			for (k = 0; k < q->nwatch; k++) {
				if (q->watch[k].wd != ev->wd)
					continue;
				if (ev->mask & IN_IGNORED) {
					/* The directory went away. */
					free(q->watch[k].dir);
					q->watch[k] = q->watch[--q->nwatch];
					scan = true;
					break;
				}
				if (strcmp(q->watch[k].dir, q->policy_dir) == 0)
					pol = true;
				if (!(ev->mask & IN_CLOSE_WRITE))
					scan = true;
				break;
			}
		}
	}
	if (scan)
		qsrc_scan(q);
	if (pol)
		qsrc_policies(q);
}

static void
qsrc_scan_cb(evutil_socket_t fd, short what, void *arg)
{
	qsrc_scan(arg);
}

/* A VM whose QEMU exited goes at once, even behind a shared monitor. */
static void
qsrc_live_cb(evutil_socket_t fd, short what, void *arg)
{
	struct qsrc	*q = arg;
	struct qconn	*c;

	TAILQ_FOREACH(c, &q->conns, entry) {
		if (c->uuid[0] != '\0' && !qsrc_alive(q, c->pid)) {
			qc_forget(c, "QEMU exited");
			if (c->state != QC_WAIT) {
				qc_close(c);
				qc_arm(c, c->q->p.reconnect_min_ms);
			}
		}
	}
}

static void
qsrc_copy_params(struct qsrc *q, const struct qsrc_params *p)
{
	free(q->proc_root);
	free(q->cgroup_root);
	free(q->policy_dir);
	free(q->monitors);
	free(q->shared);
	q->p = *p;
	q->p.proc_root = q->proc_root = xstrdup(p->proc_root);
	q->p.cgroup_root = q->cgroup_root = xstrdup(p->cgroup_root);
	q->p.policy_dir = q->policy_dir = xstrdup(p->policy_dir);
	q->p.monitors = q->monitors = xstrdup(p->monitors);
	q->p.shared = q->shared = xstrdup(p->shared);
}

static void
qsrc_arm_timers(struct qsrc *q)
{
	struct timeval	tv = { q->p.poll_ms / 1000, (q->p.poll_ms % 1000) *
	    1000 };
	struct timeval	lv = { QSRC_LIVENESS_MS / 1000,
	    (QSRC_LIVENESS_MS % 1000) * 1000 };

	event_del(q->ev_scan);
	event_add(q->ev_scan, &tv);
	event_del(q->ev_live);
	event_add(q->ev_live, &lv);
}

struct qsrc *
qsrc_new(struct event_base *base, struct host *host,
    const struct qsrc_params *p)
{
	struct qsrc	*q;

	q = xcalloc(1, sizeof(*q));
	q->base = base;
	q->host = host;
	TAILQ_INIT(&q->conns);
	qsrc_copy_params(q, p);
	q->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (q->ino < 0)
		log_warn("inotify; QMP monitors are found every %u ms only",
		    p->poll_ms);
	else if ((q->ev_ino = event_new(base, q->ino, EV_READ | EV_PERSIST,
	    qsrc_ino, q)) == NULL || event_add(q->ev_ino, NULL) != 0)
		fatalx("libevent: cannot watch inotify");
	q->ev_scan = event_new(base, -1, EV_PERSIST, qsrc_scan_cb, q);
	q->ev_live = event_new(base, -1, EV_PERSIST, qsrc_live_cb, q);
	if (q->ev_scan == NULL || q->ev_live == NULL)
		fatalx("libevent: cannot create the QMP timers");
	qsrc_arm_timers(q);
	log_notice("qmp: monitors %s, shared monitors %s, policies in %s",
	    q->monitors[0] ? q->monitors : "(none)",
	    q->shared[0] ? q->shared : "(none)", q->policy_dir);
	qsrc_scan(q);
	return q;
}

void
qsrc_free(struct qsrc *q)
{
	struct qconn	*c;
	unsigned int	 k;

	if (q == NULL)
		return;
	while ((c = TAILQ_FIRST(&q->conns)) != NULL) {
		TAILQ_REMOVE(&q->conns, c, entry);
		qconn_free(c, "daemon stopping");
	}
	if (q->ev_ino != NULL)
		event_free(q->ev_ino);
	if (q->ino >= 0)
		close(q->ino);
	for (k = 0; k < q->nwatch; k++)
		free(q->watch[k].dir);
	free(q->watch);
	event_free(q->ev_scan);
	event_free(q->ev_live);
	free(q->proc_root);
	free(q->cgroup_root);
	free(q->policy_dir);
	free(q->monitors);
	free(q->shared);
	free(q);
}

void
qsrc_set_params(struct qsrc *q, const struct qsrc_params *p)
{
	struct qconn	*c;
	unsigned int	 k;

	if (q == NULL)
		return;
	qsrc_copy_params(q, p);
	/* Watch the directories of the new globs only. */
	for (k = 0; k < q->nwatch; k++) {
		if (q->ino >= 0)
			inotify_rm_watch(q->ino, q->watch[k].wd);
		free(q->watch[k].dir);
	}
	q->nwatch = 0;
	TAILQ_FOREACH(c, &q->conns, entry) {
		if (c->backoff_ms < p->reconnect_min_ms ||
		    c->backoff_ms > p->reconnect_max_ms)
			c->backoff_ms = p->reconnect_min_ms;
	}
	qsrc_arm_timers(q);
	qsrc_scan(q);
	qsrc_policies(q);
}

unsigned int
qsrc_monitors(const struct qsrc *q)
{
	return q != NULL ? q->nconns : 0;
}
