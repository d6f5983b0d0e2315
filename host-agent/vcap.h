/*
 * Optional enforcement (prefcpu-policy(5), enforce=cap): a VM that does
 * not follow its targets is capped at its weighted fair share while its
 * contention domain is contended, through libvirt's own scheduler
 * parameters (vcpu_quota over the VM's vcpu_period, AFFECT_LIVE), never
 * by writing cgroup files behind libvirt's back.
 *
 * At the end of each period (the model's period_end hook) it compares
 * what every VM should have with what it has; the libvirt calls run afterwards from their own loop
 * callback, a few per loop iteration, so the period never waits on them.
 * A cap is set again only when the share moved by more than a band.
 *
 * Every cap set is recorded with the VM's original values in a state
 * file (one line per VM); a daemon restarted after SIGKILL reads it,
 * re-owns the caps it finds still in place and lifts them as soon as
 * they are no longer wanted.  A cap someone else changed in between is
 * left alone.  vcap_lift_all() (SIGTERM) restores every original.
 */
#ifndef PREFCPU_VCAP_H
#define PREFCPU_VCAP_H

#include <stdbool.h>

#include "model.h"

struct event_base;
struct virt;

/*
 * Relative change of the cap, over which it is set again.  The share of a
 * non-follower moves with the host's non-VM load (QEMU's own threads
 * among it) from period to period; a cap chasing every such move would be
 * a libvirt call a period for nothing.
 */
#define VCAP_BAND		0.25
/* libvirt calls per loop iteration. */
#define VCAP_CALLS_PER_RUN	4
/* A call slower than this is logged. */
#define VCAP_SLOW_MS		100

struct vcap;

/*
 * state_path: the state file, in the daemon's run directory.  Caps a
 * previous run left in it are re-owned once libvirt is connected.
 * observe: decide only; never cap.  Registers the model's period_end
 * hook; vcap_free() removes it.
 */
struct vcap	*vcap_new(struct event_base *, struct host *, struct virt *,
		    const char *state_path, bool observe);
void		 vcap_set_observe(struct vcap *, bool);
/*
 * Lift every cap now (synchronously: at exit).  Returns how many could
 * not be lifted (libvirt unreachable); those stay in the state file for
 * the next start.
 */
unsigned int	 vcap_lift_all(struct vcap *);
void		 vcap_free(struct vcap *);

/*
 * The cap a VM should have now, in CPUs, or 0 for none: its weighted fair
 * share while it does not follow, its domain is contended and the
 * enforcement in force for it is cap.  Pure (for tests).
 */
double		 vcap_wanted(const struct vm *, enum polmeta_enforce dflt,
		    bool observe);
/* vcpu_quota (us) for a cap of cpus over nvcpus vCPUs and period_us. */
long long	 vcap_quota(double cpus, unsigned int nvcpus,
		    unsigned long long period_us);

#endif
