/*
 * The sampler.  Files read every period are kept open and re-read with
 * pread (schedstat, /proc/stat, the cpuset file, PSI): one syscall per file
 * per period, no path lookups.
 *
 * What it keeps per vCPU thread to do so (the open file, the previous
 * read, whether the thread vanished) is its own: a struct sampler_vm per
 * VM, which vm->sampler points to and the model never looks into.  A
 * pointer rather than a table keyed by thread id: found in O(1) for every
 * thread every period, freed with its VM through the model's vm_removed
 * hook, and a thread id reused by another VM cannot alias it.  The
 * vm_changed hook closes the files of threads whose id changed; a period
 * checks the ids too, so a change not announced is never read under the
 * old thread's rates.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include "log.h"
#include "sampler.h"
#include "util.h"

#define NS_PER_S	1000000000.0
#define SAMPLER_REPROBE	10	/* periods between looks for a better cpuset */

/* Where the pCPUs usable by VMs come from, most specific first. */
static const struct sampler_usable_src {
	const char	*path;		/* under cgroup_root, or sys_root */
	const char	*name;
	bool		 sys;
} sampler_usable_srcs[] = {
	{ "machine.slice/cpuset.cpus.effective", "cgroup2", false },
	{ "cpuset/machine.slice/cpuset.effective_cpus", "cgroup1", false },
	{ "cpuset/machine/cpuset.effective_cpus", "cgroup1", false },
	{ "cpuset/machine.slice/cpuset.cpus", "cgroup1", false },
	{ "cpuset/machine/cpuset.cpus", "cgroup1", false },
	{ "devices/system/cpu/online", "online", true },
};

struct sampler_cpu {
	uint64_t	busy;		/* USER_HZ ticks, cumulative */
	uint64_t	total;
	bool		seen;
};

/* What the sampler keeps of one vCPU thread (model.h has its figures). */
struct sampler_thread {
	pid_t		 tid;		/* the thread this is about, 0 none */
	int		 fd;		/* its open schedstat, -1 if none */
	bool		 primed;	/* run_ns/delay_ns hold a previous read */
	bool		 gone;		/* it vanished: not retried */
	uint64_t	 run_ns;	/* cumulative, as last read */
	uint64_t	 delay_ns;
};

/* The sampler's state of one VM; vm->sampler points here. */
struct sampler_vm {
	struct vm		*vm;
	struct sampler_thread	*thr;
	unsigned int		 n;
	TAILQ_ENTRY(sampler_vm)	 entry;
};

struct sampler {
	struct host	*host;
	TAILQ_HEAD(, sampler_vm) vms;

	char		*proc_root;
	char		*sys_root;
	char		*cgroup_root;

	int		 stat_fd;
	int		 online_fd;
	int		 usable_fd;
	const struct sampler_usable_src *usable_src;
	const struct sampler_usable_src *logged_src;
	unsigned int	 runs;
	int		 psi_fd;
	bool		 psi_absent;	/* logged once */

	char		*buf;		/* for /proc/stat; grows */
	size_t		 buflen;

	struct sampler_cpu *cpu;	/* by CPU number */
	unsigned int	 ncpu;
	double		 hz;

	uint64_t	 last_ns;
	bool		 primed;
	int		 last_error;	/* host read error logged last, 0: none */
};

static void
sampler_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Forget what was read of a thread; it is now about tid. */
static void
sampler_thread_reset(struct sampler_thread *st, pid_t tid)
{
	sampler_close(&st->fd);
	memset(st, 0, sizeof(*st));
	st->fd = -1;
	st->tid = tid;
}

/* Follow the VM's threads: close what is about a thread it no longer has. */
static void
sampler_vm_sync(struct sampler_vm *sv)
{
	const struct vm	*vm = sv->vm;
	unsigned int	 i, n = vm->info.nvcpus;

	for (i = n; i < sv->n; i++)
		sampler_close(&sv->thr[i].fd);
	if (n != sv->n) {
		sv->thr = xreallocarray(sv->thr, n ? n : 1, sizeof(*sv->thr));
		for (i = sv->n; i < n; i++) {
			sv->thr[i].fd = -1;
			sampler_thread_reset(&sv->thr[i], 0);
		}
		sv->n = n;
	}
	for (i = 0; i < n; i++) {
		if (sv->thr[i].tid != vm->thread[i].tid)
			sampler_thread_reset(&sv->thr[i], vm->thread[i].tid);
	}
}

/* The VM's state, created at its first sample. */
static struct sampler_vm *
sampler_vm_state(struct sampler *s, struct vm *vm)
{
	struct sampler_vm	*sv = vm->sampler;

	if (sv == NULL) {
		sv = xcalloc(1, sizeof(*sv));
		sv->vm = vm;
		vm->sampler = sv;
		TAILQ_INSERT_TAIL(&s->vms, sv, entry);
	}
	sampler_vm_sync(sv);
	return sv;
}

/* Close the VM's files and drop its state. */
static void
sampler_forget(struct sampler *s, struct vm *vm)
{
	struct sampler_vm	*sv = vm->sampler;
	unsigned int		 i;

	if (sv == NULL)
		return;
	for (i = 0; i < sv->n; i++)
		sampler_close(&sv->thr[i].fd);
	TAILQ_REMOVE(&s->vms, sv, entry);
	free(sv->thr);
	free(sv);
	vm->sampler = NULL;
}

static void
sampler_hook_changed(struct vm *vm, void *arg)
{
	if (vm->sampler != NULL)
		sampler_vm_sync(vm->sampler);
}

static void
sampler_hook_removed(struct vm *vm, void *arg)
{
	sampler_forget(arg, vm);
}

/* Close the host files and forget every previous read: rates start over. */
static void
sampler_restart(struct sampler *s)
{
	struct sampler_vm	*sv;
	unsigned int		 i;

	sampler_close(&s->stat_fd);
	sampler_close(&s->online_fd);
	sampler_close(&s->usable_fd);
	sampler_close(&s->psi_fd);
	s->usable_src = s->logged_src = NULL;
	s->runs = 0;
	s->psi_absent = false;
	free(s->cpu);
	s->cpu = NULL;
	s->ncpu = 0;
	s->last_ns = 0;
	s->primed = false;
	s->last_error = 0;
	TAILQ_FOREACH(sv, &s->vms, entry) {
		for (i = 0; i < sv->n; i++)
			sampler_thread_reset(&sv->thr[i], sv->thr[i].tid);
	}
}

static void
sampler_set_roots(struct sampler *s, const char *proc_root,
    const char *sys_root, const char *cgroup_root)
{
	free(s->proc_root);
	free(s->sys_root);
	free(s->cgroup_root);
	s->proc_root = xstrdup(proc_root);
	s->sys_root = xstrdup(sys_root);
	s->cgroup_root = xstrdup(cgroup_root);
}

struct sampler *
sampler_new(struct host *host, const char *proc_root, const char *sys_root,
    const char *cgroup_root)
{
	struct sampler		*s;
	struct host_hooks	 hooks;
	long			 hz;

	s = xcalloc(1, sizeof(*s));
	s->host = host;
	TAILQ_INIT(&s->vms);
	sampler_set_roots(s, proc_root, sys_root, cgroup_root);
	s->stat_fd = s->online_fd = s->usable_fd = s->psi_fd = -1;
	s->buflen = 16384;
	s->buf = xmalloc(s->buflen);
	hz = sysconf(_SC_CLK_TCK);
	s->hz = hz > 0 ? (double)hz : 100.0;
	memset(&hooks, 0, sizeof(hooks));
	hooks.vm_changed = sampler_hook_changed;
	hooks.vm_removed = sampler_hook_removed;
	hooks.arg = s;
	host_add_hooks(host, &hooks);
	return s;
}

void
sampler_reroot(struct sampler *s, const char *proc_root, const char *sys_root,
    const char *cgroup_root)
{
	sampler_restart(s);
	sampler_set_roots(s, proc_root, sys_root, cgroup_root);
}

void
sampler_free(struct sampler *s)
{
	struct sampler_vm	*sv;

	if (s == NULL)
		return;
	host_remove_hooks(s->host, s);
	while ((sv = TAILQ_FIRST(&s->vms)) != NULL)
		sampler_forget(s, sv->vm);
	sampler_restart(s);
	free(s->proc_root);
	free(s->sys_root);
	free(s->cgroup_root);
	free(s->buf);
	free(s);
}

enum sampler_thread_state
sampler_thread_state(const struct sampler *s, const struct vm *vm,
    unsigned int vcpu)
{
	const struct sampler_vm	*sv = vm->sampler;
	const struct sampler_thread *st;

	if (sv == NULL || vcpu >= sv->n || vcpu >= vm->info.nvcpus)
		return SAMPLER_T_CLOSED;
	st = &sv->thr[vcpu];
	if (st->tid != vm->thread[vcpu].tid)
		return SAMPLER_T_CLOSED;	/* closed at the next sync */
	if (st->gone)
		return SAMPLER_T_GONE;
	return st->fd >= 0 ? SAMPLER_T_OPEN : SAMPLER_T_CLOSED;
}

static int
sampler_open(const char *root, const char *path)
{
	char	*p = path_join(root, path);
	int	 fd;

	fd = open(p, O_RDONLY | O_CLOEXEC);
	free(p);
	return fd;
}

/* Read a kept-open file, growing the buffer for large ones (/proc/stat). */
static ssize_t
sampler_read(struct sampler *s, int fd)
{
	ssize_t	n;

	for (;;) {
		n = fd_pread_all(fd, s->buf, s->buflen);
		if (n >= 0 || errno != EFBIG || s->buflen >= (1U << 24))
			return n;
		s->buflen *= 2;
		s->buf = xreallocarray(s->buf, s->buflen, 1);
	}
}

/* Read a cpulist file kept open in *fd (opened from root/path if -1). */
static int
sampler_cpulist(struct sampler *s, int *fd, const char *root,
    const char *path, struct cpuset *out)
{
	char	err[128];

	if (*fd < 0 && (*fd = sampler_open(root, path)) < 0)
		return -1;
	if (sampler_read(s, *fd) < 0 ||
	    cpuset_parse(out, str_rstrip(s->buf), err, sizeof(err)) != 0) {
		sampler_close(fd);
		return -1;
	}
	return 0;
}

static int
sampler_host_cpus(struct sampler *s, struct host_sample *hs)
{
	const struct sampler_usable_src	*src;
	size_t				 i;

	if (sampler_cpulist(s, &s->online_fd, s->sys_root,
	    "devices/system/cpu/online", &hs->online) != 0)
		return -1;

	/*
	 * Keep the source found last time while it reads well, but look for
	 * a more specific one now and then: the machine slice appears when
	 * libvirtd starts its first VM, which may be after us.
	 */
	if (s->usable_src != NULL && s->usable_src != sampler_usable_srcs &&
	    s->runs % SAMPLER_REPROBE == 0)
		s->usable_src = NULL;
	if (s->usable_src != NULL) {
		src = s->usable_src;
		if (sampler_cpulist(s, &s->usable_fd, src->sys ? s->sys_root :
		    s->cgroup_root, src->path, &hs->usable) == 0 &&
		    !cpuset_empty(&hs->usable))
			goto found;
		s->usable_src = NULL;
	}
	for (i = 0; i < nitems(sampler_usable_srcs); i++) {
		src = &sampler_usable_srcs[i];
		sampler_close(&s->usable_fd);
		if (sampler_cpulist(s, &s->usable_fd, src->sys ? s->sys_root :
		    s->cgroup_root, src->path, &hs->usable) == 0 &&
		    !cpuset_empty(&hs->usable)) {
			if (src != s->logged_src) {
				char *p = path_join(src->sys ? s->sys_root :
				    s->cgroup_root, src->path);
				log_info("host CPUs usable by VMs from %s", p);
				free(p);
				s->logged_src = src;
			}
			s->usable_src = src;
			goto found;
		}
	}
	return -1;
found:
	hs->usable_from = s->usable_src->name;
	/* An offline CPU runs nothing, whatever the cpuset says. */
	cpuset_and(&hs->usable, &hs->usable, &hs->online);
	return 0;
}

/* Parse "cpuN user nice system idle iowait irq softirq steal ..." lines. */
static int
sampler_proc_stat(struct sampler *s, const struct cpuset *usable,
    double *busy_ticks)
{
	char		*line, *next;
	uint64_t	 f[8];
	unsigned int	 cpu, i;
	int		 n;

	if (s->stat_fd < 0 && (s->stat_fd = sampler_open(s->proc_root,
	    "stat")) < 0)
		return -1;
	if (sampler_read(s, s->stat_fd) < 0) {
		sampler_close(&s->stat_fd);
		return -1;
	}
	*busy_ticks = 0;
	for (line = s->buf; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (strncmp(line, "cpu", 3) != 0 || !isdigit((unsigned char)
		    line[3]))
			continue;
		memset(f, 0, sizeof(f));
		n = sscanf(line + 3, "%u %" SCNu64 " %" SCNu64 " %" SCNu64
		    " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
		    &cpu, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
		    &f[7]);
		if (n < 5 || cpu >= CPUSET_MAX)
			continue;
		if (cpu >= s->ncpu) {
			s->cpu = xreallocarray(s->cpu, cpu + 1,
			    sizeof(*s->cpu));
			memset(&s->cpu[s->ncpu], 0, (cpu + 1 - s->ncpu) *
			    sizeof(*s->cpu));
			s->ncpu = cpu + 1;
		}
		/* guest time is already inside user; idle and iowait are not busy. */
		uint64_t total = 0;
		for (i = 0; i < 8; i++)
			total += f[i];
		uint64_t busy = total - f[3] - f[4];
		struct sampler_cpu *c = &s->cpu[cpu];
		if (c->seen && cpuset_isset(usable, cpu) && busy >= c->busy)
			*busy_ticks += (double)(busy - c->busy);
		c->busy = busy;
		c->total = total;
		c->seen = true;
	}
	return 0;
}

static void
sampler_psi(struct sampler *s, struct host_sample *hs)
{
	char	*p;

	hs->psi_some_avg10 = hs->psi_full_avg10 = -1;
	if (s->psi_fd < 0 && (s->psi_fd = sampler_open(s->proc_root,
	    "pressure/cpu")) < 0) {
		if (!s->psi_absent)
			log_info("no CPU pressure (PSI) under %s", s->proc_root);
		s->psi_absent = true;
		return;
	}
	if (sampler_read(s, s->psi_fd) < 0) {
		sampler_close(&s->psi_fd);
		return;
	}
	if ((p = strstr(s->buf, "some avg10=")) != NULL)
		hs->psi_some_avg10 = strtod(p + 11, NULL);
	if ((p = strstr(s->buf, "full avg10=")) != NULL)
		hs->psi_full_avg10 = strtod(p + 11, NULL);
}

/* Open a vCPU thread's schedstat. */
static int
sampler_thread_open(struct sampler *s, const struct vm *vm, pid_t tid)
{
	char	path[96];

	if (vm->pid > 0)
		snprintf(path, sizeof(path), "%d/task/%d/schedstat",
		    (int)vm->pid, (int)tid);
	else
		snprintf(path, sizeof(path), "%d/schedstat", (int)tid);
	return sampler_open(s->proc_root, path);
}

static void
sampler_thread_gone(struct vm *vm, struct sampler_thread *st,
    unsigned int vcpu)
{
	struct vm_thread *t = &vm->thread[vcpu];
	char		 name[VM_NAME_LEN * 4];

	sampler_close(&st->fd);
	st->gone = true;
	st->primed = false;
	t->sampled = false;
	t->run_cpus = t->delay_cpus = 0;
	str_escape(name, sizeof(name), vm->info.name, strlen(vm->info.name));
	log_debug("domain %s: vCPU %u thread %d is gone", name, vcpu,
	    (int)st->tid);
}

/* Read one thread's schedstat; -1 if it is gone. */
static int
sampler_thread_read(struct sampler *s, const struct vm *vm,
    struct sampler_thread *st, uint64_t *run, uint64_t *delay)
{
	char	buf[128];
	ssize_t	n;

	if (st->fd < 0 && (st->fd = sampler_thread_open(s, vm, st->tid)) < 0)
		return -1;
	n = fd_pread_all(st->fd, buf, sizeof(buf));
	/* Nothing (ESRCH): the thread exited while we held it open. */
	if (n <= 0 || sscanf(buf, "%" SCNu64 " %" SCNu64, run, delay) != 2)
		return -1;
	return 0;
}

static void
sampler_vm(struct sampler *s, struct vm *vm, double dt_ns,
    struct host_sample *hs)
{
	struct sampler_vm *sv = sampler_vm_state(s, vm);
	struct vm_sample *vs = &vm->sample;
	struct sampler_thread *st;
	struct vm_thread *t;
	unsigned int	 i;
	uint64_t	 run, delay;

	memset(vs, 0, sizeof(*vs));
	for (i = 0; i < vm->info.nvcpus; i++) {
		t = &vm->thread[i];
		st = &sv->thr[i];
		if (st->tid <= 0 || st->gone)
			continue;
		if (sampler_thread_read(s, vm, st, &run, &delay) != 0) {
			sampler_thread_gone(vm, st, i);
			vs->gone++;
			continue;
		}
		vs->threads++;
		if (st->primed && dt_ns > 0 && run >= st->run_ns &&
		    delay >= st->delay_ns) {
			t->run_cpus = (double)(run - st->run_ns) / dt_ns;
			t->delay_cpus = (double)(delay - st->delay_ns) / dt_ns;
			vs->run_cpus += t->run_cpus;
			vs->delay_cpus += t->delay_cpus;
			vs->valid = true;
		}
		st->run_ns = t->run_ns = run;
		st->delay_ns = t->delay_ns = delay;
		st->primed = t->sampled = true;
	}
	hs->threads += vs->threads;
	hs->gone += vs->gone;
	if (vs->valid) {
		hs->vm_run_cpus += vs->run_cpus;
		hs->vm_delay_cpus += vs->delay_cpus;
	}
}

int
sampler_run(struct sampler *s, uint64_t now_ns)
{
	struct host		*host = s->host;
	struct host_sample	*hs = host_sample_mut(host);
	struct vm		*vm;
	double			 dt_ns, busy_ticks = 0;
	int			 rc = 0;

	dt_ns = s->primed && now_ns > s->last_ns ?
	    (double)(now_ns - s->last_ns) : 0;
	hs->mono_ms = now_ns / 1000000;
	hs->real_ms = time_real_ms();
	hs->period_s = dt_ns / NS_PER_S;
	hs->vm_run_cpus = hs->vm_delay_cpus = 0;
	hs->threads = hs->gone = 0;
	hs->vms = host_nvms(host);
	s->runs++;

	if (sampler_host_cpus(s, hs) != 0) {
		if (s->last_error != 1)
			log_warnx("cannot read the online CPUs under %s",
			    s->sys_root);
		s->last_error = 1;
		rc = -1;
	} else if (sampler_proc_stat(s, &hs->usable, &busy_ticks) != 0) {
		if (s->last_error != 2)
			log_warn("cannot read %s/stat", s->proc_root);
		s->last_error = 2;
		rc = -1;
	} else
		s->last_error = 0;
	sampler_psi(s, hs);

	HOST_FOREACH_VM(vm, host)
		sampler_vm(s, vm, dt_ns, hs);

	hs->valid = rc == 0 && dt_ns > 0;
	if (hs->valid) {
		double ncpu = (double)cpuset_count(&hs->usable);

		hs->busy_cpus = busy_ticks / s->hz / (dt_ns / NS_PER_S);
		if (hs->busy_cpus > ncpu)
			hs->busy_cpus = ncpu;
		hs->nonvm_cpus = hs->busy_cpus - hs->vm_run_cpus;
		if (hs->nonvm_cpus < 0)
			hs->nonvm_cpus = 0;
		hs->capacity = ncpu - hs->nonvm_cpus;
	} else {
		hs->busy_cpus = hs->nonvm_cpus = 0;
		hs->capacity = (double)cpuset_count(&hs->usable);
	}
	s->last_ns = now_ns;
	s->primed = true;
	return rc;
}

int
sampler_find_vcpu_threads(const char *proc_root, pid_t pid, pid_t *tids,
    unsigned int n)
{
	char		 path[64], *dir, comm[64];
	DIR		*d;
	struct dirent	*de;
	uint64_t	 tid;
	unsigned int	 vcpu;
	int		 found = 0;
	char		 kind[8];

	memset(tids, 0, n * sizeof(*tids));
	snprintf(path, sizeof(path), "%d/task", (int)pid);
	dir = path_join(proc_root, path);
	d = opendir(dir);
	if (d == NULL) {
		free(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		char *cpath;

		if (parse_uint(de->d_name, 1, INT32_MAX, &tid) != 0)
			continue;
		xasprintf(&cpath, "%s/%s/comm", dir, de->d_name);
		if (file_read(cpath, comm, sizeof(comm)) > 0 &&
		    sscanf(comm, "CPU %u/%7[A-Z]", &vcpu, kind) == 2 &&
		    vcpu < n && tids[vcpu] == 0) {
			tids[vcpu] = (pid_t)tid;
			found++;
		}
		free(cpath);
	}
	closedir(d);
	free(dir);
	return found;
}
