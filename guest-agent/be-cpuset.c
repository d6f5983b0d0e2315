/*
 * cpuset backend: cgroup v2 cpuset.cpus of the configured cgroups (by
 * default every top-level cgroup that holds tasks).  The cpuset controller
 * is enabled only where an ancestor lacks it, and disabled again on
 * restore.  Writes are ordered so that no cgroup is ever asked for CPUs
 * its parent lacks: narrowing goes children first, widening parents
 * first, and a change that is neither widens to the union first.
 *
 * Confining every top-level cgroup that holds tasks (the default, with
 * --isolate-idle yes), the CPUs outside the set are then held in an
 * isolated cpuset partition, the cgroup CG_IDLE, which holds no task:
 * without it the scheduler keeps the idle CPUs in its load balancing, and
 * a busy CPU wakes an idle one with an IPI every few milliseconds to pull
 * tasks it may not run (measured under TCG: the idle vCPU of a confined
 * 2-vCPU guest ran 0.048 CPUs with 127 such IPIs a second, 0.006 CPUs
 * isolated).  The partition is dissolved before every change of the
 * cgroups and made again after it, so its CPUs never overlap what a
 * sibling asks for; a kernel that refuses it (before 6.1, or a sibling
 * holding those CPUs) leaves the CPUs balanced as before.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "affinity.h"
#include "backend-impl.h"
#include "facts.h"
#include "log.h"
#include "util.h"

#define CG_VALUE	4096	/* bytes of a cpuset.cpus value */
#define CG_MAX		1024	/* cgroups handled */
#define CG_IDLE		"prefcpu-idle"	/* the idle CPUs' partition */

struct cg {
	char	*rel;		/* below the root, no leading '/' */
	char	*dir;
	int	 depth;		/* 1 for a top-level cgroup */
	char	*orig;		/* cpuset.cpus before the first change */
	char	*cur;		/* what it holds now, as far as we know */
	/*
	 * cur is a guess (the file could not be read at recovery): the
	 * value is written even when it equals cur.
	 */
	bool	 unsure;
};

/* A cgroup whose subtree_control we gave "+cpuset" (root is ""). */
struct cg_enabled {
	char	*rel;
	char	*dir;
	bool	 done;
};

struct be_cpuset {
	const struct guestd_conf *conf;
	struct cg		*cgs;
	size_t			 ncgs;
	struct cg_enabled	*ens;
	size_t			 nens;
	struct affinity		*aff;	/* NULL unless keeping affinities */
	/* CG_IDLE may exist: dissolve it before a change, on restore. */
	bool			 idle_planned;
	bool			 idle_logged;	/* a refusal was logged */
};

struct cg_step {
	size_t	 idx;
	char	*text;
};

static bool
cg_isdir(const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
cg_depth(const char *rel)
{
	int	d = *rel == '\0' ? 0 : 1;

	for (; *rel != '\0'; rel++)
		d += *rel == '/';
	return d;
}

static bool
cg_has_token(const char *text, const char *word)
{
	size_t		 n = strlen(word);
	const char	*p = text;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == text || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
		p += n;
	}
	return false;
}

static bool
be_cpuset_usable(const struct guestd_conf *conf)
{
	char	*path = path_join(conf->cgroup_root, "cgroup.controllers");
	char	 buf[1024];
	bool	 ok;

	ok = file_read(path, buf, sizeof(buf)) != -1 &&
	    cg_has_token(buf, "cpuset");
	free(path);
	return ok;
}

static void *
be_cpuset_create(const struct guestd_conf *conf, bool keep_affinity)
{
	struct be_cpuset	*c = xcalloc(1, sizeof(*c));

	c->conf = conf;
	if (keep_affinity)
		c->aff = affinity_new();
	return c;
}

static void
be_cpuset_forget(struct be_cpuset *c)
{
	size_t	i;

	for (i = 0; i < c->ncgs; i++) {
		free(c->cgs[i].rel);
		free(c->cgs[i].dir);
		free(c->cgs[i].orig);
		free(c->cgs[i].cur);
	}
	free(c->cgs);
	c->cgs = NULL;
	c->ncgs = 0;
	for (i = 0; i < c->nens; i++) {
		free(c->ens[i].rel);
		free(c->ens[i].dir);
	}
	free(c->ens);
	c->ens = NULL;
	c->nens = 0;
	if (c->aff != NULL)
		affinity_clear(c->aff);
}

static void
be_cpuset_destroy(void *arg)
{
	struct be_cpuset	*c = arg;

	be_cpuset_forget(c);
	affinity_free(c->aff);
	free(c);
}

/* A cgroup holds tasks if it or a descendant does (cgroup.events). */
static bool
cg_populated(const char *dir)
{
	char	*path, buf[256];
	bool	 yes = false;

	xasprintf(&path, "%s/cgroup.events", dir);
	if (file_read(path, buf, sizeof(buf)) != -1)
		yes = strstr(buf, "populated 1") != NULL;
	free(path);
	return yes;
}

static int
cg_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The cgroups to set now, as relative paths; the caller frees them. */
static size_t
be_cpuset_targets(struct be_cpuset *c, char ***out)
{
	char		**list = NULL, *dir;
	size_t		  n = 0, i;
	DIR		 *d;
	struct dirent	 *de;

	if (c->conf->ncgroups > 0) {
		list = xcalloc(c->conf->ncgroups, sizeof(*list));
		for (i = 0; i < c->conf->ncgroups; i++)
			list[n++] = xstrdup(c->conf->cgroups[i]);
		*out = list;
		return n;
	}
	if ((d = opendir(c->conf->cgroup_root)) != NULL) {
		while ((de = readdir(d)) != NULL && n < CG_MAX) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
			    strcmp(de->d_name, CG_IDLE) == 0)
				continue;
			dir = path_join(c->conf->cgroup_root, de->d_name);
			if (cg_populated(dir)) {
				list = xreallocarray(list, n + 1,
				    sizeof(*list));
				list[n++] = xstrdup(de->d_name);
			}
			free(dir);
		}
		closedir(d);
	}
	if (n > 1)
		qsort(list, n, sizeof(*list), cg_strcmp);
	*out = list;
	return n;
}

static ssize_t
be_cpuset_find(const struct be_cpuset *c, const char *rel)
{
	size_t	i;

	for (i = 0; i < c->ncgs; i++) {
		if (strcmp(c->cgs[i].rel, rel) == 0)
			return (ssize_t)i;
	}
	return -1;
}

static bool
be_cpuset_planned(const struct be_cpuset *c, const char *rel)
{
	size_t	i;

	for (i = 0; i < c->nens; i++) {
		if (strcmp(c->ens[i].rel, rel) == 0)
			return true;
	}
	return false;
}

/* Plan "+cpuset" on every ancestor of rel that lacks it, root first. */
static int
be_cpuset_plan_enable(struct be_cpuset *c, const char *rel, bool *planned,
    char *err, size_t errlen)
{
	char		*anc, *dir, *path, buf[1024];
	const char	*p = rel;
	size_t		 len;

	*planned = false;
	for (;;) {
		len = (size_t)(p - rel);
		if (len > 0)
			len--;	/* the '/' before p */
		anc = xstrndup(rel, p == rel ? 0 : len);
		if (be_cpuset_planned(c, anc)) {
			*planned = true;
			free(anc);
		} else {
			dir = path_join(c->conf->cgroup_root, anc);
			xasprintf(&path, "%s/cgroup.subtree_control", dir);
			if (file_read(path, buf, sizeof(buf)) == -1) {
				snprintf(err, errlen, "cgroup /%s: %s", anc,
				    strerror(errno));
				free(path);
				free(dir);
				free(anc);
				return -1;
			}
			free(path);
			if (!cg_has_token(buf, "cpuset")) {
				c->ens = xreallocarray(c->ens, c->nens + 1,
				    sizeof(*c->ens));
				c->ens[c->nens].rel = anc;
				c->ens[c->nens].dir = dir;
				c->ens[c->nens].done = false;
				c->nens++;
				*planned = true;
			} else {
				free(dir);
				free(anc);
			}
		}
		if ((p = strchr(p, '/')) == NULL)
			break;
		p++;
	}
	return 0;
}

static void
be_cpuset_add(struct be_cpuset *c, const char *rel, char *dir,
    const char *orig)
{
	struct cg	*g;

	c->cgs = xreallocarray(c->cgs, c->ncgs + 1, sizeof(*c->cgs));
	g = &c->cgs[c->ncgs++];
	g->rel = xstrdup(rel);
	g->dir = dir;
	g->depth = cg_depth(rel);
	g->orig = xstrdup(orig);
	g->cur = xstrdup(orig);
	g->unsure = false;
}

static void
be_cpuset_record(struct be_cpuset *c, const struct cg *g,
    const struct cpuset *online)
{
	char		*path, buf[CG_VALUE], cause[128];
	struct cpuset	 scope;

	xasprintf(&path, "%s/cpuset.cpus.effective", g->dir);
	if (be_read(path, buf, sizeof(buf)) == -1 ||
	    cpuset_parse(&scope, buf, cause, sizeof(cause)) == -1 ||
	    cpuset_empty(&scope))
		scope = *online;
	free(path);
	affinity_record(c->aff, g->dir, &scope);
}

static bool
be_cpuset_isolating(const struct be_cpuset *c)
{
	return c->conf->isolate_idle && c->conf->ncgroups == 0;
}

static int
be_cpuset_prepare(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_cpuset	*c = arg;
	struct cpuset		 online;
	char			**targets, *dir, *path, buf[CG_VALUE];
	size_t			 n, i;
	bool			 planned;
	int			 rc = -1;

	n = be_cpuset_targets(c, &targets);
	if (n == 0 && c->ncgs == 0) {
		snprintf(err, errlen, "no cgroup to confine: no top-level "
		    "cgroup holds tasks (see --cgroup)");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (be_cpuset_find(c, targets[i]) != -1)
			continue;
		dir = path_join(c->conf->cgroup_root, targets[i]);
		if (!cg_isdir(dir)) {
			snprintf(err, errlen, "cgroup /%s does not exist",
			    targets[i]);
			free(dir);
			goto out;
		}
		if (be_cpuset_plan_enable(c, targets[i], &planned, err,
		    errlen) == -1) {
			free(dir);
			goto out;
		}
		xasprintf(&path, "%s/cpuset.cpus", dir);
		if (be_read(path, buf, sizeof(buf)) == -1) {
			/* The file appears once the controller is on. */
			if (errno != ENOENT || !planned) {
				snprintf(err, errlen, "cgroup /%s: "
				    "cpuset.cpus: %s", targets[i],
				    strerror(errno));
				free(path);
				free(dir);
				goto out;
			}
			buf[0] = '\0';
		}
		free(path);
		be_cpuset_add(c, targets[i], dir, buf);
	}
	if (c->aff != NULL) {
		if (facts_online(&online, c->conf, err, errlen) == -1)
			goto out;
		for (i = 0; i < c->ncgs; i++)
			be_cpuset_record(c, &c->cgs[i], &online);
	}
	/* Planned before the state is saved, so a crash still undoes it. */
	if (be_cpuset_isolating(c))
		c->idle_planned = true;
	rc = 0;
out:
	for (i = 0; i < n; i++)
		free(targets[i]);
	free(targets);
	return rc;
}

/* A value as a set; "" (inherit from the parent) counts as all online. */
static void
cg_value_set(const char *text, const struct cpuset *online,
    struct cpuset *set)
{
	char	cause[128];

	if (*text == '\0' || cpuset_parse(set, text, cause,
	    sizeof(cause)) == -1)
		*set = *online;
}

/*
 * Write a cgroup's cpuset.cpus.  An empty value ("inherit", how a cgroup
 * starts) cannot be written back while the cgroup holds tasks (ENOSPC):
 * the parent's effective CPUs, which is what "" gave, are written instead.
 */
static int
cg_write(const struct cg *g, const char *text)
{
	char	*path, *parent, *slash, buf[CG_VALUE];
	int	 rc, saved;

	xasprintf(&path, "%s/cpuset.cpus", g->dir);
	rc = be_write(path, text);
	free(path);
	if (rc == 0 || *text != '\0' || errno != ENOSPC)
		return rc;
	saved = errno;
	parent = xstrdup(g->dir);
	if ((slash = strrchr(parent, '/')) != NULL)
		*slash = '\0';
	xasprintf(&path, "%s/cpuset.cpus.effective", parent);
	if (be_read(path, buf, sizeof(buf)) == 0 && *buf != '\0') {
		free(path);
		xasprintf(&path, "%s/cpuset.cpus", g->dir);
		if ((rc = be_write(path, buf)) == 0)
			log_info("cgroup /%s holds tasks, so its cpuset.cpus "
			    "is the parent's %s, not empty", g->rel, buf);
	} else {
		rc = -1;
		errno = saved;
	}
	free(path);
	free(parent);
	return rc;
}

static int
cg_step_cmp_up(const void *a, const void *b, void *arg)
{
	const struct cg		*cgs = arg;
	const struct cg_step	*x = a, *y = b;

	return cgs[x->idx].depth - cgs[y->idx].depth;
}

static void
cg_sort(struct cg_step *steps, size_t n, const struct cg *cgs, bool up)
{
	size_t		i;
	struct cg_step	t;

	qsort_r(steps, n, sizeof(*steps), cg_step_cmp_up, (void *)cgs);
	if (!up) {
		for (i = 0; i < n / 2; i++) {
			t = steps[i];
			steps[i] = steps[n - 1 - i];
			steps[n - 1 - i] = t;
		}
	}
}

static void
cg_append_name(char *buf, size_t len, const char *rel)
{
	size_t	used = strlen(buf);

	snprintf(buf + used, len - used, "%s/%s", used > 0 ? ", " : "", rel);
}

/*
 * Write want[i] into every cgroup, ordered as the header comment says.
 * With rollback, the first failure undoes what was written and stops;
 * without (restore), every cgroup is tried and the failures named.
 */
static int
be_cpuset_write_all(struct be_cpuset *c, char *const *want, bool rollback,
    char *err, size_t errlen)
{
	struct cpuset	 online, olds, news, u;
	struct cg_step	*steps, *undo;
	size_t		 nsteps = 0, nundo = 0, i;
	bool		 narrow = true, widen = true;
	char		 names[256] = "", failed[256] = "", cause[128] = "";
	char		*text;
	int		 rc = 0;

	if (facts_online(&online, c->conf, err, errlen) == -1)
		return -1;
	steps = xcalloc(2 * c->ncgs + 1, sizeof(*steps));
	undo = xcalloc(2 * c->ncgs + 1, sizeof(*undo));
	for (i = 0; i < c->ncgs; i++) {
		cg_value_set(c->cgs[i].cur, &online, &olds);
		cg_value_set(want[i], &online, &news);
		narrow = narrow && cpuset_subset(&news, &olds);
		widen = widen && cpuset_subset(&olds, &news);
	}
	if (!narrow && !widen) {
		/* First widen each cgroup to old | new, parents first. */
		for (i = 0; i < c->ncgs; i++) {
			cg_value_set(c->cgs[i].cur, &online, &olds);
			cg_value_set(want[i], &online, &news);
			if (cpuset_subset(&news, &olds))
				continue;
			cpuset_or(&u, &olds, &news);
			steps[nsteps].idx = i;
			steps[nsteps++].text = cpuset_to_str(&u);
		}
		cg_sort(steps, nsteps, c->cgs, true);
	}
	for (i = 0; i < c->ncgs; i++) {
		steps[nsteps + i].idx = i;
		steps[nsteps + i].text = xstrdup(want[i]);
	}
	cg_sort(steps + nsteps, c->ncgs, c->cgs, widen && !narrow);
	nsteps += c->ncgs;

	for (i = 0; i < nsteps; i++) {
		struct cg	*g = &c->cgs[steps[i].idx];

		if (!g->unsure && strcmp(g->cur, steps[i].text) == 0)
			continue;
		if (cg_write(g, steps[i].text) == 0) {
			undo[nundo].idx = steps[i].idx;
			undo[nundo++].text = g->cur;
			g->cur = xstrdup(steps[i].text);
			g->unsure = false;
		} else if (errno == ENOENT && !cg_isdir(g->dir)) {
			/* Removed meanwhile: nothing left to confine. */
			log_info("cgroup /%s is gone", g->rel);
		} else {
			snprintf(cause, sizeof(cause), "%s", strerror(errno));
			cg_append_name(failed, sizeof(failed), g->rel);
			rc = -1;
			if (rollback) {
				snprintf(err, errlen, "cgroup /%s: "
				    "cpuset.cpus: %s", g->rel, cause);
				break;
			}
		}
	}
	if (rc == -1 && rollback) {
		while (nundo > 0) {
			struct cg_step	*s = &undo[--nundo];
			struct cg	*g = &c->cgs[s->idx];

			if (cg_write(g, s->text) == 0) {
				free(g->cur);
				g->cur = s->text;
				cg_append_name(names, sizeof(names), g->rel);
			} else {
				log_warn("cgroup /%s: rolling back to \"%s\"",
				    g->rel, s->text);
				free(s->text);
			}
		}
		if (*names != '\0') {
			text = xstrdup(err);
			snprintf(err, errlen, "%s; rolled back %s", text,
			    names);
			free(text);
		}
	} else if (rc == -1) {
		snprintf(err, errlen, "cpuset.cpus of %s: %s", failed, cause);
	}
	for (i = 0; i < nundo; i++)
		free(undo[i].text);
	for (i = 0; i < nsteps; i++)
		free(steps[i].text);
	free(undo);
	free(steps);
	return rc;
}

static int
be_cpuset_enable(struct be_cpuset *c, size_t *first, char *err,
    size_t errlen)
{
	char	*path;
	size_t	 i;

	*first = c->nens;
	for (i = 0; i < c->nens; i++) {
		if (c->ens[i].done)
			continue;
		if (*first == c->nens)
			*first = i;
		xasprintf(&path, "%s/cgroup.subtree_control", c->ens[i].dir);
		if (file_write(path, "+cpuset") == -1) {
			snprintf(err, errlen, "cgroup /%s: enabling the cpuset "
			    "controller: %s", c->ens[i].rel, strerror(errno));
			free(path);
			return -1;
		}
		free(path);
		c->ens[i].done = true;
	}
	return 0;
}

/* Disable, deepest first, what we enabled from index first on. */
static void
be_cpuset_disable(struct be_cpuset *c, size_t first)
{
	char	*path;
	size_t	 i;

	for (i = c->nens; i > first; i--) {
		struct cg_enabled	*e = &c->ens[i - 1];

		if (!e->done)
			continue;
		xasprintf(&path, "%s/cgroup.subtree_control", e->dir);
		/* EBUSY if the user uses it below now: then it stays. */
		if (file_write(path, "-cpuset") == -1)
			log_warn("cgroup /%s: disabling the cpuset controller",
			    e->rel);
		else
			e->done = false;
		free(path);
	}
}

/*
 * Dissolve the idle CPUs' partition if it is there: "member" first (its
 * CPUs go back to the root), then the cgroup itself.  0 if it is gone.
 */
static int
be_cpuset_idle_drop(struct be_cpuset *c)
{
	char	*dir, *path;
	int	 rc = 0;

	if (!c->idle_planned)
		return 0;
	dir = path_join(c->conf->cgroup_root, CG_IDLE);
	if (cg_isdir(dir)) {
		xasprintf(&path, "%s/cpuset.cpus.partition", dir);
		if (be_write(path, "member") == -1 && errno != ENOENT)
			log_warn("cgroup /%s: cpuset.cpus.partition",
			    CG_IDLE);
		free(path);
		if (rmdir(dir) == -1) {
			log_warn("cgroup /%s: removing it", CG_IDLE);
			rc = -1;
		} else
			log_debug("cgroup /%s removed", CG_IDLE);
	}
	free(dir);
	return rc;
}

/*
 * Make cgroup dir an isolated partition of CPUs text, and read back that
 * the kernel took it.  -1 with cause (what failed) otherwise.
 */
static int
be_cpuset_isolate(const char *dir, const char *text, char *cause,
    size_t len)
{
	char	*path, buf[256];
	int	 rc = -1;

	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		snprintf(cause, len, "creating it: %s", strerror(errno));
		return -1;
	}
	xasprintf(&path, "%s/cpuset.cpus", dir);
	if (be_write(path, text) == -1) {
		snprintf(cause, len, "cpuset.cpus %s: %s", text,
		    strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	xasprintf(&path, "%s/cpuset.cpus.partition", dir);
	if (be_write(path, "isolated") == -1)
		snprintf(cause, len, "an isolated partition: %s",
		    strerror(errno));
	else if (be_read(path, buf, sizeof(buf)) == -1)
		snprintf(cause, len, "cpuset.cpus.partition: %s",
		    strerror(errno));
	else if (strcmp(buf, "isolated") != 0)
		snprintf(cause, len, "the kernel says \"%s\"", buf);
	else
		rc = 0;
	free(path);
	return rc;
}

/*
 * Hold the online CPUs outside set in an isolated partition.  A refusal
 * (an old kernel, a sibling holding those CPUs) is logged once and
 * undone: the confinement stands without it.
 */
static void
be_cpuset_idle_make(struct be_cpuset *c, const struct cpuset *set)
{
	struct cpuset	 online, idle;
	char		*dir, *text, cause[320];

	if (!c->idle_planned || facts_online(&online, c->conf, cause,
	    sizeof(cause)) == -1)
		return;
	cpuset_andnot(&idle, &online, set);
	if (cpuset_empty(&idle))
		return;
	dir = path_join(c->conf->cgroup_root, CG_IDLE);
	text = cpuset_to_str(&idle);
	if (be_cpuset_isolate(dir, text, cause, sizeof(cause)) == 0) {
		log_info("CPUs %s isolated from load balancing (cgroup /%s)",
		    text, CG_IDLE);
	} else {
		if (!c->idle_logged)
			log_notice("cgroup /%s: %s; CPUs %s stay in the "
			    "scheduler's load balancing", CG_IDLE, cause,
			    text);
		else
			log_debug("cgroup /%s: %s", CG_IDLE, cause);
		c->idle_logged = true;
		(void)be_cpuset_idle_drop(c);
	}
	free(text);
	free(dir);
}

static int
be_cpuset_commit(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_cpuset	*c = arg;
	char			**want, *text;
	size_t			 i, first;
	int			 rc;

	if (be_cpuset_enable(c, &first, err, errlen) == -1) {
		be_cpuset_disable(c, first);
		return -1;
	}
	/* Its CPUs go back first, for the siblings that may widen. */
	(void)be_cpuset_idle_drop(c);
	text = cpuset_to_str(set);
	want = xcalloc(c->ncgs + 1, sizeof(*want));
	for (i = 0; i < c->ncgs; i++)
		want[i] = text;
	rc = be_cpuset_write_all(c, want, true, err, errlen);
	free(want);
	free(text);
	if (rc == -1)
		be_cpuset_disable(c, first);
	else
		be_cpuset_idle_make(c, set);
	if (c->aff != NULL)
		affinity_reapply(c->aff);
	return rc;
}

static int
be_cpuset_restore(void *arg, char *err, size_t errlen)
{
	struct be_cpuset	*c = arg;
	char			**want;
	size_t			 i;
	int			 rc;

	if (be_cpuset_idle_drop(c) == 0)
		c->idle_planned = false;
	want = xcalloc(c->ncgs + 1, sizeof(*want));
	for (i = 0; i < c->ncgs; i++)
		want[i] = c->cgs[i].orig;
	rc = be_cpuset_write_all(c, want, false, err, errlen);
	free(want);
	if (rc == 0)
		be_cpuset_disable(c, 0);
	/*
	 * After the controller is gone too: before 6.2, moving the tasks
	 * back to the root's cpuset resets their affinity once more.
	 */
	if (c->aff != NULL)
		affinity_reapply(c->aff);
	if (rc == -1)
		return -1;
	be_cpuset_forget(c);
	return 0;
}

static void
be_cpuset_save(void *arg, struct state *st)
{
	struct be_cpuset	*c = arg;
	size_t			 i;

	for (i = 0; i < c->ncgs; i++)
		state_add(st, "cpuset", c->cgs[i].rel, c->cgs[i].orig);
	/* Planned ones too: disabling what is off is harmless. */
	for (i = 0; i < c->nens; i++)
		state_add(st, "cpuset-enabled", c->ens[i].rel, "");
	if (c->idle_planned)
		state_add(st, "cpuset-idle", CG_IDLE, "");
	if (c->aff != NULL)
		affinity_save(c->aff, st);
}

static int
be_cpuset_load(void *arg, const struct state *st, char *err, size_t errlen)
{
	struct be_cpuset	*c = arg;
	const struct state_rec	*r;
	char			*path, buf[CG_VALUE];
	size_t			 i;

	for (i = 0; i < st->n; i++) {
		r = &st->recs[i];
		if (strstr(r->key, "..") != NULL) {
			snprintf(err, errlen, "state file: bad cgroup name");
			return -1;
		}
		if (strcmp(r->kind, "cpuset") == 0) {
			be_cpuset_add(c, r->key,
			    path_join(c->conf->cgroup_root, r->key), r->val);
			xasprintf(&path, "%s/cpuset.cpus",
			    c->cgs[c->ncgs - 1].dir);
			if (be_read(path, buf, sizeof(buf)) == 0) {
				free(c->cgs[c->ncgs - 1].cur);
				c->cgs[c->ncgs - 1].cur = xstrdup(buf);
			} else {
				/*
				 * Unreadable (a directory in its place, the
				 * cgroup gone): not known to hold the
				 * original, so the restore writes it and a
				 * failure is reported, not skipped.
				 */
				c->cgs[c->ncgs - 1].unsure = true;
			}
			free(path);
		} else if (strcmp(r->kind, "cpuset-enabled") == 0) {
			c->ens = xreallocarray(c->ens, c->nens + 1,
			    sizeof(*c->ens));
			c->ens[c->nens].rel = xstrdup(r->key);
			c->ens[c->nens].dir = path_join(c->conf->cgroup_root,
			    r->key);
			c->ens[c->nens].done = true;
			c->nens++;
		} else if (strcmp(r->kind, "cpuset-idle") == 0) {
			c->idle_planned = true;
		} else if (strcmp(r->kind, "affinity") == 0 && c->aff == NULL)
			c->aff = affinity_new();
	}
	if (c->aff != NULL)
		return affinity_load(c->aff, st, err, errlen);
	return 0;
}

const struct backend_ops be_cpuset_ops = {
	.name = "cpuset",
	.usable = be_cpuset_usable,
	.create = be_cpuset_create,
	.destroy = be_cpuset_destroy,
	.prepare = be_cpuset_prepare,
	.commit = be_cpuset_commit,
	.restore = be_cpuset_restore,
	.save = be_cpuset_save,
	.load = be_cpuset_load,
};
