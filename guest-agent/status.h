/*
 * The status file the running agent keeps in its run directory, and the
 * `prefcpu-guestd status` command that reads it with the state file.
 */
#ifndef PREFCPU_GUEST_STATUS_H
#define PREFCPU_GUEST_STATUS_H

#include "guestd.h"
#include "state.h"

/*
 * Take the run directory's lock (held for the agent's lifetime): one agent
 * per run directory, and `status` knows whether one runs.  The fd, or -1
 * with errno (EWOULDBLOCK: another agent holds it).
 */
int	status_lock(const char *run_dir);
/* Replace the status file (records of kind "status"); logs failures. */
void	status_save(const struct guestd_conf *, const struct state *);
/* Remove it at exit. */
void	status_remove(const struct guestd_conf *);
/* Print the status for a human, or as JSON; the exit code. */
int	status_print(const char *run_dir, int json);

#endif
