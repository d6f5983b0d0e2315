/*
 * Task affinities kept across cpuset changes.  Before 6.2 a change of a
 * cgroup's cpuset.cpus resets the affinity of every task in it to the new
 * set, so a user's pin (taskset -p 8 PID) is lost once the set narrows and
 * widens again.  The agent records, before it narrows, the tasks whose
 * own mask is narrower than their cgroup's set, and puts the masks back
 * after every change; the kernel intersects them with the cpuset.
 */
#ifndef PREFCPU_GUEST_AFFINITY_H
#define PREFCPU_GUEST_AFFINITY_H

#include <stddef.h>

#include "cpuset.h"
#include "state.h"

struct affinity;

struct affinity *affinity_new(void);
void	affinity_free(struct affinity *);
/*
 * Record the threads of cgdir and its descendants (cgroup.threads) that
 * are not yet recorded and whose mask leaves out part of scope.
 */
void	affinity_record(struct affinity *, const char *cgdir,
	    const struct cpuset *scope);
/* Set every recorded mask again; forget the threads that are gone. */
void	affinity_reapply(struct affinity *);
size_t	affinity_count(const struct affinity *);
void	affinity_clear(struct affinity *);
/* Records of kind "affinity": key the thread id, value its mask. */
void	affinity_save(const struct affinity *, struct state *);
int	affinity_load(struct affinity *, const struct state *, char *err,
	    size_t errlen);

#endif
