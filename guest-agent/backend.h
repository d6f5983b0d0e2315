/*
 * The ways the agent can make the guest prefer some CPUs (DESIGN.md 4):
 * kernel (a writable preferred-CPU file), systemd (AllowedCPUs= on
 * slices) and cpuset (cgroup v2 cpuset.cpus).  A backend saves the
 * original state to the state file before its first change and can
 * always put it back.
 */
#ifndef PREFCPU_GUEST_BACKEND_H
#define PREFCPU_GUEST_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "cpuset.h"
#include "guestd.h"

struct backend;

/* Backend names in the order "auto" tries them, NULL-terminated. */
extern const char *const backend_names[];

/* The backends usable on this guest, in auto order; returns how many. */
unsigned int backend_usable(const struct guestd_conf *, const char **names,
	    unsigned int max);
/*
 * Open a backend by name, or with "auto" the first usable one.  NULL with
 * a cause if the name is unknown or it cannot work here.
 */
struct backend *backend_open(const struct guestd_conf *, const char *name,
	    char *err, size_t errlen);
void	backend_close(struct backend *);
const char *backend_name(const struct backend *);
/* True if it puts back task affinities the kernel resets (before 6.2). */
bool	backend_keeps_affinity(const struct backend *);

/*
 * Make the guest prefer set.  The originals are in the state file before
 * anything is written.  On failure nothing has changed (what was written
 * is rolled back) and err names what failed.
 */
int	backend_apply(struct backend *, const struct cpuset *set, char *err,
	    size_t errlen);
/*
 * Put the originals back and remove the state file; 0 at once if nothing
 * was changed.  On failure the state file stays, for a later try.
 */
int	backend_restore(struct backend *, char *err, size_t errlen);
/* True while originals are held (a change may be in place). */
bool	backend_changed(const struct backend *);

/*
 * At start-up: if a state file is left by a run that did not restore
 * (crash, kill -9), restore what it holds with the backend it names and
 * remove it.  Returns 1 if it restored, 0 if there was nothing to do,
 * -1 with a cause (the state file is kept).
 */
int	backend_recover(const struct guestd_conf *, char *err, size_t errlen);

/* The state file's path; the caller frees it. */
char	*backend_state_path(const struct guestd_conf *);

#endif
