/*
 * systemd backend: AllowedCPUs= set at runtime on slices (default
 * system.slice, user.slice and machine.slice where they exist).  systemd
 * owns the cgroups it created and may rewrite their attributes, so the
 * change goes through systemctl, never into cgroupfs directly.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "affinity.h"
#include "backend-impl.h"
#include "cmd.h"
#include "facts.h"
#include "log.h"
#include "util.h"

#define SD_VALUE	4096

static const char *const sd_default_slices[] = {
	"system.slice", "user.slice", "machine.slice",
};

struct sd_slice {
	char	*name;
	char	*orig;		/* AllowedCPUs before the first change */
	char	*cur;
};

struct be_systemd {
	const struct guestd_conf *conf;
	struct sd_slice		*slices;
	size_t			 n;
	struct affinity		*aff;
};

static bool
be_systemd_usable(const struct guestd_conf *conf)
{
	char	*path = path_join(conf->proc_root, "1/comm"), buf[64];
	bool	 ok;

	ok = be_read(path, buf, sizeof(buf)) == 0 &&
	    strcmp(buf, "systemd") == 0 && cmd_exists("systemctl");
	free(path);
	return ok;
}

static void *
be_systemd_create(const struct guestd_conf *conf, bool keep_affinity)
{
	struct be_systemd	*s = xcalloc(1, sizeof(*s));

	s->conf = conf;
	if (keep_affinity)
		s->aff = affinity_new();
	return s;
}

static void
be_systemd_forget(struct be_systemd *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++) {
		free(s->slices[i].name);
		free(s->slices[i].orig);
		free(s->slices[i].cur);
	}
	free(s->slices);
	s->slices = NULL;
	s->n = 0;
	if (s->aff != NULL)
		affinity_clear(s->aff);
}

static void
be_systemd_destroy(void *arg)
{
	struct be_systemd	*s = arg;

	be_systemd_forget(s);
	affinity_free(s->aff);
	free(s);
}

static bool
be_systemd_held(const struct be_systemd *s, const char *name)
{
	size_t	i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->slices[i].name, name) == 0)
			return true;
	}
	return false;
}

static void
be_systemd_add(struct be_systemd *s, const char *name, const char *orig)
{
	s->slices = xreallocarray(s->slices, s->n + 1, sizeof(*s->slices));
	s->slices[s->n].name = xstrdup(name);
	s->slices[s->n].orig = xstrdup(orig);
	s->slices[s->n].cur = xstrdup(orig);
	s->n++;
}

static int
be_systemd_show(const char *slice, char *buf, size_t len, char *err,
    size_t errlen)
{
	char *const	argv[] = { "systemctl", "show", "--property=AllowedCPUs",
			    "--value", (char *)slice, NULL };

	if (cmd_run(argv, buf, len, CMD_TIMEOUT_MS, err, errlen) == -1)
		return -1;
	str_rstrip(buf);
	return 0;
}

static int
be_systemd_set(const char *slice, const char *value, char *err,
    size_t errlen)
{
	char	*prop;
	int	 rc;

	xasprintf(&prop, "AllowedCPUs=%s", value);
	{
		char *const	argv[] = { "systemctl", "set-property",
				    "--runtime", (char *)slice, prop, NULL };

		rc = cmd_run(argv, NULL, 0, CMD_TIMEOUT_MS, err, errlen);
	}
	free(prop);
	return rc;
}

/*
 * Set a slice back to a previous value.  systemd turns an empty
 * AllowedCPUs= into an empty cpuset.cpus, which the kernel refuses for a
 * cgroup with tasks (ENOSPC) and systemd then leaves the narrowed set in
 * place; so the slice first gets every online CPU, then the empty value
 * (the property is reset and the cgroup keeps all CPUs).
 */
static int
be_systemd_put(struct be_systemd *s, const char *slice, const char *value,
    char *err, size_t errlen)
{
	struct cpuset	 online;
	char		*all;
	int		 rc;

	if (*value == '\0') {
		if (facts_online(&online, s->conf, err, errlen) == -1)
			return -1;
		all = cpuset_to_str(&online);
		rc = be_systemd_set(slice, all, err, errlen);
		free(all);
		if (rc == -1)
			return -1;
	}
	return be_systemd_set(slice, value, err, errlen);
}

static void
be_systemd_record(struct be_systemd *s, const char *slice,
    const struct cpuset *online)
{
	char		*dir = path_join(s->conf->cgroup_root, slice), *path;
	char		 buf[SD_VALUE], cause[128];
	struct cpuset	 scope;

	xasprintf(&path, "%s/cpuset.cpus.effective", dir);
	if (be_read(path, buf, sizeof(buf)) == -1 ||
	    cpuset_parse(&scope, buf, cause, sizeof(cause)) == -1 ||
	    cpuset_empty(&scope))
		scope = *online;
	affinity_record(s->aff, dir, &scope);
	free(path);
	free(dir);
}

static int
be_systemd_prepare(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_systemd	*s = arg;
	const char		*name;
	char			*dir, buf[SD_VALUE];
	struct cpuset		 online;
	size_t			 i, n;
	bool			 given = s->conf->nslices > 0;

	n = given ? s->conf->nslices : nitems(sd_default_slices);
	for (i = 0; i < n; i++) {
		name = given ? s->conf->slices[i] : sd_default_slices[i];
		if (be_systemd_held(s, name))
			continue;
		dir = path_join(s->conf->cgroup_root, name);
		if (access(dir, F_OK) == -1) {
			free(dir);
			if (!given)
				continue;
			snprintf(err, errlen, "slice %s does not exist", name);
			return -1;
		}
		free(dir);
		if (be_systemd_show(name, buf, sizeof(buf), err, errlen) == -1)
			return -1;
		be_systemd_add(s, name, buf);
	}
	if (s->n == 0) {
		snprintf(err, errlen, "no slice to confine");
		return -1;
	}
	if (s->aff != NULL) {
		if (facts_online(&online, s->conf, err, errlen) == -1)
			return -1;
		for (i = 0; i < s->n; i++)
			be_systemd_record(s, s->slices[i].name, &online);
	}
	return 0;
}

/* Slices are siblings: the order of the writes does not matter. */
static int
be_systemd_commit(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_systemd	*s = arg;
	char			*text = cpuset_to_str(set), cause[256];
	char			 names[256] = "", **prev;
	size_t			 i, j, used;
	int			 rc = 0;

	prev = xcalloc(s->n + 1, sizeof(*prev));
	for (i = 0; i < s->n; i++) {
		if (strcmp(s->slices[i].cur, text) == 0)
			continue;
		if (be_systemd_set(s->slices[i].name, text, cause,
		    sizeof(cause)) == -1) {
			rc = -1;
			break;
		}
		prev[i] = s->slices[i].cur;
		s->slices[i].cur = xstrdup(text);
	}
	if (rc == -1) {
		/* Put back, last first, what this commit changed. */
		for (j = i; j > 0; j--) {
			struct sd_slice	*sl = &s->slices[j - 1];
			char		 e2[256];

			if (prev[j - 1] == NULL)
				continue;
			if (be_systemd_put(s, sl->name, prev[j - 1], e2,
			    sizeof(e2)) == -1) {
				log_warnx("slice %s: rollback: %s", sl->name,
				    e2);
				continue;
			}
			free(sl->cur);
			sl->cur = prev[j - 1];
			prev[j - 1] = NULL;
			used = strlen(names);
			snprintf(names + used, sizeof(names) - used, "%s%s",
			    used > 0 ? ", " : "", sl->name);
		}
		snprintf(err, errlen, "slice %s: %s%s%s", s->slices[i].name,
		    cause, *names != '\0' ? "; rolled back " : "", names);
	}
	for (i = 0; i < s->n; i++)
		free(prev[i]);
	free(prev);
	free(text);
	if (s->aff != NULL)
		affinity_reapply(s->aff);
	return rc;
}

static int
be_systemd_restore(void *arg, char *err, size_t errlen)
{
	struct be_systemd	*s = arg;
	char			 cause[256];
	size_t			 i;
	int			 rc = 0;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->slices[i].cur, s->slices[i].orig) == 0)
			continue;
		if (be_systemd_put(s, s->slices[i].name, s->slices[i].orig,
		    cause, sizeof(cause)) == -1) {
			snprintf(err, errlen, "slice %s: %s",
			    s->slices[i].name, cause);
			rc = -1;
			continue;
		}
		free(s->slices[i].cur);
		s->slices[i].cur = xstrdup(s->slices[i].orig);
	}
	if (s->aff != NULL)
		affinity_reapply(s->aff);
	if (rc == 0)
		be_systemd_forget(s);
	return rc;
}

static void
be_systemd_save(void *arg, struct state *st)
{
	struct be_systemd	*s = arg;
	size_t			 i;

	for (i = 0; i < s->n; i++)
		state_add(st, "allowed", s->slices[i].name, s->slices[i].orig);
	if (s->aff != NULL)
		affinity_save(s->aff, st);
}

static int
be_systemd_load(void *arg, const struct state *st, char *err, size_t errlen)
{
	struct be_systemd	*s = arg;
	size_t			 i;

	for (i = 0; i < st->n; i++) {
		if (strcmp(st->recs[i].kind, "allowed") == 0) {
			be_systemd_add(s, st->recs[i].key, st->recs[i].val);
			/* Unknown now: restore writes it whatever it is. */
			free(s->slices[s->n - 1].cur);
			s->slices[s->n - 1].cur = xstrdup("?");
		} else if (strcmp(st->recs[i].kind, "affinity") == 0 &&
		    s->aff == NULL)
			s->aff = affinity_new();
	}
	if (s->aff != NULL)
		return affinity_load(s->aff, st, err, errlen);
	return 0;
}

const struct backend_ops be_systemd_ops = {
	.name = "systemd",
	.usable = be_systemd_usable,
	.create = be_systemd_create,
	.destroy = be_systemd_destroy,
	.prepare = be_systemd_prepare,
	.commit = be_systemd_commit,
	.restore = be_systemd_restore,
	.save = be_systemd_save,
	.load = be_systemd_load,
};
