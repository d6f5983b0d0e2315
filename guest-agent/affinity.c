/* Recorded task affinities, put back after each cpuset change. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "affinity.h"
#include "log.h"
#include "util.h"

#define AFFINITY_MAX_DEPTH	32	/* cgroup nesting walked */
#define AFFINITY_MAX_TASKS	65536	/* threads recorded */

struct affinity_rec {
	pid_t		tid;
	struct cpuset	mask;
};

struct affinity {
	struct affinity_rec	*recs;
	size_t			 n;
};

struct affinity *
affinity_new(void)
{
	return xcalloc(1, sizeof(struct affinity));
}

void
affinity_free(struct affinity *a)
{
	if (a == NULL)
		return;
	free(a->recs);
	free(a);
}

size_t
affinity_count(const struct affinity *a)
{
	return a->n;
}

void
affinity_clear(struct affinity *a)
{
	free(a->recs);
	a->recs = NULL;
	a->n = 0;
}

static bool
affinity_has(const struct affinity *a, pid_t tid)
{
	size_t	i;

	for (i = 0; i < a->n; i++) {
		if (a->recs[i].tid == tid)
			return true;
	}
	return false;
}

static void
affinity_add(struct affinity *a, pid_t tid, const struct cpuset *mask)
{
	if (a->n >= AFFINITY_MAX_TASKS) {
		log_warnx("affinity: more than %d pinned threads; thread %d "
		    "is not kept", AFFINITY_MAX_TASKS, (int)tid);
		return;
	}
	a->recs = xreallocarray(a->recs, a->n + 1, sizeof(*a->recs));
	a->recs[a->n].tid = tid;
	a->recs[a->n].mask = *mask;
	a->n++;
}

/* struct cpuset and cpu_set_t are both little bitmaps of 64-bit words. */
static int
affinity_get(pid_t tid, struct cpuset *mask)
{
	cpu_set_t	*cs;
	size_t		 size = CPU_ALLOC_SIZE(CPUSET_MAX);
	unsigned int	 cpu;
	int		 rc;

	cs = CPU_ALLOC(CPUSET_MAX);
	if (cs == NULL)
		abort();
	CPU_ZERO_S(size, cs);
	rc = sched_getaffinity(tid, size, cs);
	cpuset_zero(mask);
	if (rc == 0) {
		for (cpu = 0; cpu < CPUSET_MAX; cpu++) {
			if (CPU_ISSET_S(cpu, size, cs))
				cpuset_set(mask, cpu);
		}
	}
	CPU_FREE(cs);
	return rc;
}

static int
affinity_set(pid_t tid, const struct cpuset *mask)
{
	cpu_set_t	*cs;
	size_t		 size = CPU_ALLOC_SIZE(CPUSET_MAX);
	int		 cpu, rc, saved;

	cs = CPU_ALLOC(CPUSET_MAX);
	if (cs == NULL)
		abort();
	CPU_ZERO_S(size, cs);
	CPUSET_FOREACH(cpu, mask)
		CPU_SET_S((unsigned int)cpu, size, cs);
	rc = sched_setaffinity(tid, size, cs);
	saved = errno;
	CPU_FREE(cs);
	errno = saved;
	return rc;
}

static void
affinity_walk(struct affinity *a, const char *dir, const struct cpuset *scope,
    int depth)
{
	char		*path, *line = NULL;
	size_t		 cap = 0;
	FILE		*f;
	DIR		*d;
	struct dirent	*de;
	struct cpuset	 mask;
	uint64_t	 tid;

	xasprintf(&path, "%s/cgroup.threads", dir);
	if ((f = fopen(path, "re")) != NULL) {
		while (getline(&line, &cap, f) != -1) {
			str_rstrip(line);
			if (parse_uint(line, 1, INT_MAX, &tid) == -1 ||
			    affinity_has(a, (pid_t)tid))
				continue;
			if (affinity_get((pid_t)tid, &mask) == -1 ||
			    cpuset_subset(scope, &mask))
				continue;
			affinity_add(a, (pid_t)tid, &mask);
		}
		free(line);
		fclose(f);
	}
	free(path);

	if (depth >= AFFINITY_MAX_DEPTH || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		affinity_walk(a, path, scope, depth + 1);
		free(path);
	}
	closedir(d);
}

void
affinity_record(struct affinity *a, const char *cgdir,
    const struct cpuset *scope)
{
	affinity_walk(a, cgdir, scope, 0);
}

void
affinity_reapply(struct affinity *a)
{
	size_t	i = 0;
	char	buf[256];

	while (i < a->n) {
		if (affinity_set(a->recs[i].tid, &a->recs[i].mask) == -1) {
			if (errno == ESRCH) {
				a->recs[i] = a->recs[--a->n];
				continue;
			}
			/* EINVAL: no CPU of the mask is in the cpuset now. */
			if (errno != EINVAL) {
				cpuset_format(&a->recs[i].mask, buf,
				    sizeof(buf));
				log_warn("affinity: thread %d back to %s",
				    (int)a->recs[i].tid, buf);
			}
		}
		i++;
	}
}

void
affinity_save(const struct affinity *a, struct state *st)
{
	char	 key[32], *val;
	size_t	 i;

	for (i = 0; i < a->n; i++) {
		snprintf(key, sizeof(key), "%d", (int)a->recs[i].tid);
		val = cpuset_to_str(&a->recs[i].mask);
		state_add(st, "affinity", key, val);
		free(val);
	}
}

int
affinity_load(struct affinity *a, const struct state *st, char *err,
    size_t errlen)
{
	struct cpuset	mask;
	uint64_t	tid;
	size_t		i;
	char		cause[128];

	for (i = 0; i < st->n; i++) {
		if (strcmp(st->recs[i].kind, "affinity") != 0)
			continue;
		if (parse_uint(st->recs[i].key, 1, INT_MAX, &tid) == -1 ||
		    cpuset_parse(&mask, st->recs[i].val, cause,
		    sizeof(cause)) == -1 || cpuset_empty(&mask)) {
			snprintf(err, errlen, "affinity record of %s is bad",
			    st->recs[i].key);
			return -1;
		}
		if (!affinity_has(a, (pid_t)tid))
			affinity_add(a, (pid_t)tid, &mask);
	}
	return 0;
}
