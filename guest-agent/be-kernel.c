/*
 * kernel backend: a writable /sys/devices/system/cpu/preferred, where a
 * guest kernel offers one.  Upstream's file is read-only (its steal
 * governor drives it); this backend is then not usable and the governor
 * is only reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend-impl.h"
#include "util.h"

#define BE_KERNEL_FILE	"devices/system/cpu/preferred"

struct be_kernel {
	char	*path;
	char	*orig;		/* NULL until the first change */
};

static bool
be_kernel_usable(const struct guestd_conf *conf)
{
	char		*path = path_join(conf->sys_root, BE_KERNEL_FILE);
	struct stat	 st;
	bool		 ok;

	/* Mode bits, not access(2): root may write anything it can open. */
	ok = stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 0222) != 0;
	free(path);
	return ok;
}

static void *
be_kernel_create(const struct guestd_conf *conf, bool keep_affinity)
{
	struct be_kernel	*k = xcalloc(1, sizeof(*k));

	k->path = path_join(conf->sys_root, BE_KERNEL_FILE);
	return k;
}

static void
be_kernel_destroy(void *arg)
{
	struct be_kernel	*k = arg;

	free(k->path);
	free(k->orig);
	free(k);
}

static int
be_kernel_prepare(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_kernel	*k = arg;
	char			 buf[4096];

	if (k->orig != NULL)
		return 0;
	if (be_read(k->path, buf, sizeof(buf)) == -1) {
		snprintf(err, errlen, "%s: %s", k->path, strerror(errno));
		return -1;
	}
	k->orig = xstrdup(buf);
	return 0;
}

static int
be_kernel_commit(void *arg, const struct cpuset *set, char *err,
    size_t errlen)
{
	struct be_kernel	*k = arg;
	char			 buf[4096];

	if (cpuset_format(set, buf, sizeof(buf)) == -1 ||
	    be_write(k->path, buf) == -1) {
		snprintf(err, errlen, "%s: %s", k->path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
be_kernel_restore(void *arg, char *err, size_t errlen)
{
	struct be_kernel	*k = arg;

	if (k->orig == NULL)
		return 0;
	if (be_write(k->path, k->orig) == -1) {
		snprintf(err, errlen, "%s: %s", k->path, strerror(errno));
		return -1;
	}
	free(k->orig);
	k->orig = NULL;
	return 0;
}

static void
be_kernel_save(void *arg, struct state *st)
{
	struct be_kernel	*k = arg;

	if (k->orig != NULL)
		state_add(st, "preferred", k->path, k->orig);
}

static int
be_kernel_load(void *arg, const struct state *st, char *err, size_t errlen)
{
	struct be_kernel	*k = arg;
	const char		*v = state_get(st, "preferred", k->path);

	if (v == NULL) {
		snprintf(err, errlen, "state file has no original for %s",
		    k->path);
		return -1;
	}
	free(k->orig);
	k->orig = xstrdup(v);
	return 0;
}

const struct backend_ops be_kernel_ops = {
	.name = "kernel",
	.usable = be_kernel_usable,
	.create = be_kernel_create,
	.destroy = be_kernel_destroy,
	.prepare = be_kernel_prepare,
	.commit = be_kernel_commit,
	.restore = be_kernel_restore,
	.save = be_kernel_save,
	.load = be_kernel_load,
};
