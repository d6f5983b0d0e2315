/* Backend table, state file, and the apply/restore protocol around it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backend-impl.h"
#include "facts.h"
#include "log.h"
#include "state.h"
#include "util.h"

/* In the order "auto" tries them (DESIGN.md 4). */
static const struct backend_ops *const backend_table[] = {
	&be_kernel_ops,
	&be_systemd_ops,
	&be_cpuset_ops,
};

const char *const backend_names[] = { "kernel", "systemd", "cpuset", NULL };

struct backend {
	const struct backend_ops	*ops;
	void				*impl;
	const struct guestd_conf	*conf;
	char				*state_path;
	bool				 keeps_affinity;
	bool				 changed;	/* originals held */
};

int
be_write(const char *path, const char *value)
{
	return file_write(path, *value == '\0' ? "\n" : value);
}

int
be_read(const char *path, char *buf, size_t len)
{
	if (file_read(path, buf, len) == -1)
		return -1;
	str_rstrip(buf);
	return 0;
}

char *
backend_state_path(const struct guestd_conf *conf)
{
	return path_join(conf->run_dir, GUESTD_STATE_FILE);
}

static const struct backend_ops *
backend_find(const char *name)
{
	size_t	i;

	for (i = 0; i < nitems(backend_table); i++) {
		if (strcmp(backend_table[i]->name, name) == 0)
			return backend_table[i];
	}
	return NULL;
}

unsigned int
backend_usable(const struct guestd_conf *conf, const char **names,
    unsigned int max)
{
	unsigned int	n = 0;
	size_t		i;

	for (i = 0; i < nitems(backend_table) && n < max; i++) {
		if (backend_table[i]->usable(conf))
			names[n++] = backend_table[i]->name;
	}
	return n;
}

/* Kernels before 6.2 reset task affinities when a cpuset changes. */
static bool
backend_want_keep(const struct guestd_conf *conf,
    const struct backend_ops *ops)
{
	char	release[128];

	if (ops == &be_kernel_ops)
		return false;
	switch (conf->keep_affinity) {
	case GUESTD_KEEP_YES:
		return true;
	case GUESTD_KEEP_NO:
		return false;
	case GUESTD_KEEP_AUTO:
		break;
	}
	facts_kernel(release, sizeof(release));
	return facts_kernel_before(release, 6, 2);
}

static struct backend *
backend_new(const struct guestd_conf *conf, const struct backend_ops *ops)
{
	struct backend	*be = xcalloc(1, sizeof(*be));

	be->ops = ops;
	be->conf = conf;
	be->keeps_affinity = backend_want_keep(conf, ops);
	be->impl = ops->create(conf, be->keeps_affinity);
	be->state_path = backend_state_path(conf);
	return be;
}

struct backend *
backend_open(const struct guestd_conf *conf, const char *name, char *err,
    size_t errlen)
{
	const struct backend_ops	*ops = NULL;
	size_t				 i;

	if (strcmp(name, "auto") == 0) {
		for (i = 0; i < nitems(backend_table) && ops == NULL; i++) {
			if (backend_table[i]->usable(conf))
				ops = backend_table[i];
		}
		if (ops == NULL) {
			snprintf(err, errlen, "no backend works here "
			    "(no writable preferred file, systemd or cgroup2 "
			    "cpuset controller)");
			return NULL;
		}
	} else if ((ops = backend_find(name)) == NULL) {
		snprintf(err, errlen, "unknown backend \"%s\"", name);
		return NULL;
	} else if (!ops->usable(conf)) {
		snprintf(err, errlen, "backend %s does not work here", name);
		return NULL;
	}
	return backend_new(conf, ops);
}

void
backend_close(struct backend *be)
{
	if (be == NULL)
		return;
	be->ops->destroy(be->impl);
	free(be->state_path);
	free(be);
}

const char *
backend_name(const struct backend *be)
{
	return be->ops->name;
}

bool
backend_keeps_affinity(const struct backend *be)
{
	return be->keeps_affinity;
}

bool
backend_changed(const struct backend *be)
{
	return be->changed;
}

static int
backend_save(struct backend *be, char *err, size_t errlen)
{
	struct state	st;
	int		rc;

	state_init(&st);
	state_add(&st, "backend", "name", be->ops->name);
	be->ops->save(be->impl, &st);
	rc = state_save(&st, be->state_path, err, errlen);
	state_free(&st);
	return rc;
}

int
backend_apply(struct backend *be, const struct cpuset *set, char *err,
    size_t errlen)
{
	char	cause[512];

	if (be->ops->prepare(be->impl, set, err, errlen) == -1)
		return -1;
	/* The originals reach the disk before the first write. */
	if (backend_save(be, cause, sizeof(cause)) == -1) {
		snprintf(err, errlen, "cannot save the originals: %s", cause);
		return -1;
	}
	be->changed = true;
	return be->ops->commit(be->impl, set, err, errlen);
}

int
backend_restore(struct backend *be, char *err, size_t errlen)
{
	if (!be->changed)
		return 0;
	if (be->ops->restore(be->impl, err, errlen) == -1) {
		/* What is still held must survive a crash too. */
		char	cause[256];

		if (backend_save(be, cause, sizeof(cause)) == -1)
			log_warnx("%s", cause);
		return -1;
	}
	be->changed = false;
	if (unlink(be->state_path) == -1 && errno != ENOENT)
		log_warn("%s", be->state_path);
	return 0;
}

int
backend_recover(const struct guestd_conf *conf, char *err, size_t errlen)
{
	const struct backend_ops	*ops;
	struct backend			*be;
	struct state			 st;
	const char			*name;
	char				*path = backend_state_path(conf);
	int				 rc;

	state_init(&st);
	rc = state_load(&st, path, err, errlen);
	free(path);
	if (rc <= 0)
		return rc;
	if ((name = state_get(&st, "backend", "name")) == NULL ||
	    (ops = backend_find(name)) == NULL) {
		snprintf(err, errlen, "state file names no known backend");
		state_free(&st);
		return -1;
	}
	be = backend_new(conf, ops);
	rc = ops->load(be->impl, &st, err, errlen);
	state_free(&st);
	if (rc == 0) {
		be->changed = true;
		rc = backend_restore(be, err, errlen);
	}
	backend_close(be);
	return rc == 0 ? 1 : -1;
}
