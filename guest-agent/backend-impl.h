/* What each backend module (be-*.c) provides to backend.c. */
#ifndef PREFCPU_GUEST_BACKEND_IMPL_H
#define PREFCPU_GUEST_BACKEND_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "cpuset.h"
#include "guestd.h"
#include "state.h"

struct backend_ops {
	const char	*name;
	/* Can it work on this guest? */
	bool		 (*usable)(const struct guestd_conf *);
	void		*(*create)(const struct guestd_conf *, bool keep_affinity);
	void		 (*destroy)(void *);
	/*
	 * Before set is written: read the originals not held yet, plan
	 * what must be enabled, record affinities.  Writes nothing.
	 */
	int		 (*prepare)(void *, const struct cpuset *set, char *err,
			    size_t errlen);
	/* Write set; on failure roll back what it wrote, and say so. */
	int		 (*commit)(void *, const struct cpuset *set, char *err,
			    size_t errlen);
	/* Write the originals back and forget them. */
	int		 (*restore)(void *, char *err, size_t errlen);
	/* The originals as records, and back. */
	void		 (*save)(void *, struct state *);
	int		 (*load)(void *, const struct state *, char *err,
			    size_t errlen);
};

extern const struct backend_ops be_kernel_ops;
extern const struct backend_ops be_systemd_ops;
extern const struct backend_ops be_cpuset_ops;

/*
 * Write a value to a cgroupfs/sysfs file.  An empty value is written as
 * a newline: an empty write() never reaches the kernel.
 */
int	be_write(const char *path, const char *value);
/* Read a one-line value, trailing whitespace stripped; -1 with errno. */
int	be_read(const char *path, char *buf, size_t len);

#endif
