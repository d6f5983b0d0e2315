/* The guest's topology and load, read from procfs and sysfs. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "facts.h"
#include "util.h"

#define FACTS_SMALL	4096	/* sysfs cpulists, loadavg, pressure */
#define FACTS_STAT	1024	/* the head of /proc/stat: its "cpu " line */
/* A schedstat cpu line is 10 numbers; longer (domain) lines are skipped. */
#define FACTS_SCHED_LINE	512
#define FACTS_SCHED_VERSION	15	/* cpu lines as documented since 2.6.30 */

static int
facts_read_cpulist(const char *root, const char *rel, struct cpuset *set,
    char *err, size_t errlen)
{
	char	*path = path_join(root, rel), buf[FACTS_SMALL], cause[128];
	int	 rc = -1;

	if (file_read(path, buf, sizeof(buf)) == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	else if (cpuset_parse(set, buf, cause, sizeof(cause)) == -1)
		snprintf(err, errlen, "%s: %s", path, cause);
	else
		rc = 0;
	free(path);
	return rc;
}

int
facts_online(struct cpuset *online, const struct guestd_conf *conf,
    char *err, size_t errlen)
{
	if (facts_read_cpulist(conf->sys_root, "devices/system/cpu/online",
	    online, err, errlen) == -1)
		return -1;
	if (cpuset_empty(online)) {
		snprintf(err, errlen, "no CPU is online");
		return -1;
	}
	return 0;
}

int
facts_read(struct facts *f, const struct guestd_conf *conf, char *err,
    size_t errlen)
{
	struct cpuset	 seen, core;
	char		 rel[128], cause[256];
	int		 cpu;

	memset(f, 0, sizeof(*f));
	if (facts_online(&f->online, conf, err, errlen) == -1)
		return -1;
	f->cores = xcalloc(cpuset_count(&f->online), sizeof(*f->cores));
	cpuset_zero(&seen);
	CPUSET_FOREACH(cpu, &f->online) {
		if (cpuset_isset(&seen, (unsigned int)cpu))
			continue;
		snprintf(rel, sizeof(rel),
		    "devices/system/cpu/cpu%d/topology/thread_siblings_list",
		    cpu);
		/* Without topology (or with a bad one) a CPU is its own core. */
		if (facts_read_cpulist(conf->sys_root, rel, &core, cause,
		    sizeof(cause)) == -1 || !cpuset_isset(&core,
		    (unsigned int)cpu)) {
			cpuset_zero(&core);
			cpuset_set(&core, (unsigned int)cpu);
		}
		cpuset_and(&core, &core, &f->online);
		cpuset_andnot(&core, &core, &seen);
		cpuset_or(&seen, &seen, &core);
		f->cores[f->ncores++] = core;
	}
	return 0;
}

void
facts_free(struct facts *f)
{
	free(f->cores);
	f->cores = NULL;
	f->ncores = 0;
}

void
facts_kernel(char *buf, size_t len)
{
	struct utsname	u;

	if (uname(&u) == -1)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%s", u.release);
}

bool
facts_kernel_before(const char *release, unsigned int major,
    unsigned int minor)
{
	unsigned int	maj, min;

	if (sscanf(release, "%u.%u", &maj, &min) != 2)
		return false;
	return maj < major || (maj == major && min < minor);
}

void
facts_governor(const struct guestd_conf *conf, char *buf, size_t len,
    struct cpuset *mask)
{
	char		*path, cause[128];
	struct stat	 st;

	buf[0] = '\0';
	cpuset_zero(mask);
	path = path_join(conf->sys_root, "devices/system/cpu/preferred");
	if (stat(path, &st) == 0 && (st.st_mode & 0222) == 0 &&
	    facts_read_cpulist(conf->sys_root, "devices/system/cpu/preferred",
	    mask, cause, sizeof(cause)) == 0)
		snprintf(buf, len, "steal");
	free(path);
}

int
facts_parse_stat(const char *text, struct facts_cputime *t)
{
	uint64_t	v[8];

	/* user nice system idle iowait irq softirq steal; guest is in user. */
	if (sscanf(text, "cpu %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
	    " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &v[0], &v[1],
	    &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		return -1;
	t->steal = v[7];
	t->total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
	return 0;
}

int
facts_parse_psi(const char *text, double *avg10)
{
	double	v;

	if (sscanf(text, "some avg10=%lf", &v) != 1 || !(v >= 0 && v <= 100))
		return -1;
	*avg10 = v;
	return 0;
}

int
facts_parse_loadavg(const char *text, uint32_t *nr_running)
{
	double		a, b, c;
	uint32_t	r, t;

	if (sscanf(text, "%lf %lf %lf %" SCNu32 "/%" SCNu32, &a, &b, &c, &r,
	    &t) != 5 || r > 1000000)
		return -1;
	/*
	 * The kernel counts the reader itself as running: an idle guest
	 * reads "1/N".  Without this the host sees a runnable-task hint of
	 * one CPU from every idle guest.
	 */
	*nr_running = r > 0 ? r - 1 : 0;
	return 0;
}

double
facts_steal_pct(const struct facts_cputime *before,
    const struct facts_cputime *after)
{
	uint64_t	dt, ds;

	if (after->total <= before->total || after->steal < before->steal)
		return 0;
	dt = after->total - before->total;
	ds = after->steal - before->steal;
	if (ds > dt)
		return 100;
	return 100.0 * (double)ds / (double)dt;
}

static int
facts_read_file(const char *root, const char *rel, char *buf, size_t len,
    char *err, size_t errlen)
{
	char	*path = path_join(root, rel);
	int	 rc = 0;

	if (file_read(path, buf, len) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = errno == ENOENT ? -2 : -1;
	}
	free(path);
	return rc;
}

/*
 * /proc/stat grows with the CPUs and interrupts (tens of KiB on big
 * guests); only its first line is needed, so read just the head.
 */
static int
facts_read_head(const char *root, const char *rel, char *buf, size_t len,
    char *err, size_t errlen)
{
	char	*path = path_join(root, rel);
	int	 fd, rc = -1;
	ssize_t	 n;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		do
			n = read(fd, buf, len - 1);
		while (n == -1 && errno == EINTR);
		if (n >= 0) {
			buf[n] = '\0';
			rc = 0;
		}
		close(fd);
	}
	if (rc == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	free(path);
	return rc;
}

int
facts_read_schedstat(const char *root, uint64_t *busy_ns, char *err,
    size_t errlen)
{
	char		*path = path_join(root, "schedstat");
	char		 line[FACTS_SCHED_LINE];
	FILE		*fp;
	uint64_t	 v[8], sum = 0;
	unsigned int	 cpu, version = 0, ncpu = 0;
	bool		 at_start = true, start;
	size_t		 n;
	int		 rc = -1;

	if ((fp = fopen(path, "re")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	/* Domain lines grow with the CPUs: read line by line, bounded. */
	while (fgets(line, sizeof(line), fp) != NULL) {
		n = strlen(line);
		start = at_start;
		at_start = n > 0 && line[n - 1] == '\n';
		if (!start)
			continue;	/* the rest of a long line */
		if (strncmp(line, "version ", 8) == 0) {
			if (sscanf(line + 8, "%u", &version) != 1) {
				snprintf(err, errlen, "%s: bad version line",
				    path);
				goto out;
			}
			if (version < FACTS_SCHED_VERSION) {
				snprintf(err, errlen, "%s: version %u, %d or "
				    "later needed", path, version,
				    FACTS_SCHED_VERSION);
				goto out;
			}
			continue;
		}
		if (strncmp(line, "cpu", 3) != 0 ||
		    !isdigit((unsigned char)line[3]))
			continue;
		if (version == 0) {
			snprintf(err, errlen, "%s: no version line before the "
			    "cpu lines", path);
			goto out;
		}
		if (!at_start || sscanf(line, "cpu%u %" SCNu64 " %" SCNu64
		    " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %"
		    SCNu64 " %" SCNu64, &cpu, &v[0], &v[1], &v[2], &v[3],
		    &v[4], &v[5], &v[6], &v[7]) != 9) {
			snprintf(err, errlen, "%s: bad line for cpu %.16s",
			    path, line + 3);
			err[strcspn(err, "\n")] = '\0';
			goto out;
		}
		/* 7th: run time, 8th: wait time of that CPU's tasks (ns). */
		if (v[6] > UINT64_MAX - sum || v[7] > UINT64_MAX - sum - v[6]) {
			snprintf(err, errlen, "%s: counters overflow", path);
			goto out;
		}
		sum += v[6] + v[7];
		ncpu++;
	}
	if (ferror(fp)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (ncpu == 0) {
		snprintf(err, errlen, "%s: no cpu lines", path);
		goto out;
	}
	*busy_ns = sum;
	rc = 0;
out:
	if (fp != NULL)
		fclose(fp);
	free(path);
	return rc;
}

int
facts_runnable_mean(const struct facts_sched *before,
    const struct facts_sched *after, double *mean)
{
	uint64_t	d, dself;

	if (!before->valid || !after->valid || after->at_ns <= before->at_ns ||
	    after->busy_ns < before->busy_ns)
		return -1;
	d = after->busy_ns - before->busy_ns;
	if (after->self_ns >= before->self_ns) {
		dself = after->self_ns - before->self_ns;
		d -= dself < d ? dself : d;
	}
	*mean = (double)d / (double)(after->at_ns - before->at_ns);
	return 0;
}

/* A runnable-tasks sample now; on failure last->why says why. */
static void
facts_sched_sample(const struct guestd_conf *conf, struct facts_last *last,
    uint64_t now_ns, struct facts_sched *out)
{
	char		 buf[128];
	char		*path;
	uint64_t	 run, wait;

	memset(out, 0, sizeof(*out));
	if (facts_read_schedstat(conf->proc_root, &out->busy_ns, last->why,
	    sizeof(last->why)) == -1) {
		last->fallback = true;
		return;
	}
	/* The agent's own run and wait, where the tree has them. */
	path = path_join(conf->proc_root, "self/schedstat");
	if (file_read(path, buf, sizeof(buf)) != -1 &&
	    sscanf(buf, "%" SCNu64 " %" SCNu64, &run, &wait) == 2 &&
	    run <= UINT64_MAX - wait)
		out->self_ns = run + wait;
	free(path);
	out->at_ns = now_ns;
	out->valid = true;
	last->fallback = false;
	last->why[0] = '\0';
}

void
facts_sched_begin(const struct guestd_conf *conf, struct facts_last *last,
    uint64_t now_ns)
{
	facts_sched_sample(conf, last, now_ns, &last->sched);
}

int
facts_report(const struct guestd_conf *conf, struct facts_last *last,
    uint64_t now_ns, struct proto_report *r, char *err, size_t errlen)
{
	struct facts_cputime	 now;
	struct facts_sched	 sched;
	char			*buf;
	double			 mean;
	int			 rc = -1, frc;

	memset(r, 0, sizeof(*r));
	if (facts_online(&r->online, conf, err, errlen) == -1)
		return -1;
	buf = xmalloc(FACTS_SMALL);
	if (facts_read_head(conf->proc_root, "stat", buf, FACTS_STAT, err,
	    errlen) == -1)
		goto out;
	if (facts_parse_stat(buf, &now) == -1) {
		snprintf(err, errlen, "%s/stat: no cpu line", conf->proc_root);
		goto out;
	}
	r->steal_pct = facts_steal_pct(&last->cputime, &now);
	last->cputime = now;

	frc = facts_read_file(conf->proc_root, "pressure/cpu", buf,
	    FACTS_SMALL, err, errlen);
	if (frc == -1)
		goto out;
	if (frc == 0 && facts_parse_psi(buf, &r->psi_some_avg10) == -1) {
		snprintf(err, errlen, "%s/pressure/cpu: no some avg10",
		    conf->proc_root);
		goto out;
	}

	facts_sched_sample(conf, last, now_ns, &sched);
	if (facts_runnable_mean(&last->sched, &sched, &mean) == 0) {
		last->sched = sched;
		if (mean > PROTO_MAX_NR_RUNNING)
			mean = PROTO_MAX_NR_RUNNING;
		/* Two decimals are plenty for a hint and keep lines short. */
		r->runnable = (double)(uint64_t)(mean * 100 + 0.5) / 100;
		r->has_runnable = true;
		r->nr_running = (uint32_t)(mean + 0.5);
		rc = 0;
		goto out;
	}
	/* No mean (yet): the count of this instant. */
	last->sched = sched;
	if (facts_read_file(conf->proc_root, "loadavg", buf, FACTS_SMALL, err,
	    errlen) != 0)
		goto out;
	if (facts_parse_loadavg(buf, &r->nr_running) == -1) {
		snprintf(err, errlen, "%s/loadavg: unexpected format",
		    conf->proc_root);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}
