/*
 * The protocol session with the host (DESIGN.md section 5): hello, targets
 * applied in seq order within a session, release, ping, the lease, and
 * periodic reports.  It owns no I/O of its own: the port feeds it lines
 * and it sends through the port.
 */
#ifndef PREFCPU_GUEST_SESSION_H
#define PREFCPU_GUEST_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "guestd.h"
#include "port.h"

#define SESSION_RETRY_MS	5000	/* between tries of a failed restore */
/* Targets decided at once, then one per SESSION_APPLY_MS (4 a second). */
#define SESSION_APPLY_BURST	4
#define SESSION_APPLY_MS	250
/* Least time between two status writes that only move the lease. */
#define SESSION_STATUS_MS	1000

struct session;

/* be may be NULL (no backend works): targets are then refused. */
struct session *session_new(const struct guestd_conf *, struct backend *);
void	session_free(struct session *);
void	session_set_port(struct session *, struct port *);
/*
 * Set the backend once it opens; recovering: an earlier run's originals
 * are not restored yet, so targets are refused until they are.
 */
void	session_set_backend(struct session *, struct backend *,
	    bool recovering);

/* The port's callbacks; arg is the session. */
extern const struct port_cbs session_port_cbs;

/* Monotonic ms of the next timer, 0 if none; run timers due by now. */
uint64_t session_deadline(const struct session *);
void	session_timer(struct session *, uint64_t now_ms);

/* Put the originals back before exit; -1 if that failed. */
int	session_shutdown(struct session *);

#endif
