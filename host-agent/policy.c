/*
 * The policy engine (DESIGN.md section 3.3).  Every period: group the VMs
 * into contention domains by their pCPUs, take out what cannot be steered,
 * water-fill the rest of each domain's capacity by weight, round the shares
 * to whole guest cores, then damp the moves so that steady input gives
 * steady output.  No I/O and no clock: the caller passes the time in.
 *
 * Choices the design leaves open, and why:
 * - Work conservation: the capacity is spent on what the VMs would use,
 *   not on the vCPUs they prefer.  A VM with k cores costs
 *   min(vCPUs of k cores, claim), and the rule is "sum over VMs of
 *   min(preferred vCPUs, claim) <= C" (the unsteered at their demand),
 *   both in the contention test and in the fit of whole cores.  So a
 *   floor (one core, min-cores) that a VM does not use costs only its
 *   claim: an idle VM keeps one core counted at a few hundredths of a
 *   CPU, and the busy ones get the rest instead of leaving it idle.
 * - The headroom is at most the demand itself: a VM using 0.02 CPUs does
 *   not hold half a CPU of the capacity; from its floor it can grow to
 *   the whole floor without a decision, and its demand shows it next
 *   period.  From a demand of one headroom on the claim is demand plus
 *   headroom, continuous across that point.
 * - Headroom a VM leaves idle costs nothing: a VM that is not saturated
 *   and does not keep 75% of its preferred vCPUs busy counts at its
 *   demand in the fill (its claim), and when that is met it gets the
 *   cores of its demand plus headroom on top (want_k), uncounted: an
 *   idle vCPU takes no pCPU time, and if the VM does use it the next
 *   period counts it.  Whether a domain is contended, and whether whole
 *   cores meet every claim, still count the headroom (want), so a
 *   domain does not flip to "no contention" on it.  Counting it (v2)
 *   left a pCPU idle where a VM flipped from 8 tasks to 1 and kept 2
 *   vCPUs for 1 (flip: 7.3% idle, 0.92x the oracle).
 * - The same way, a VM whose demand falls again keeps the cores of its
 *   peak (at most the cores it has) for POLICY_PEAK_MS after its demand
 *   last reached it, uncounted: demand that changes every few seconds
 *   finds its vCPUs in place instead of growing a period late each time
 *   (flip: 3.6% -> 0.2% idle, 0.96x -> 1.00x the oracle).  Only a fall
 *   that comes within POLICY_FALL_MS of the one before it, i.e. after
 *   the demand came back: the first fall shrinks the VM at once (phases:
 *   a VM whose demand fell for good kept its cores for those 10 s, so
 *   sets settled 10 s after the change instead of 1; flip pays one
 *   shrink-and-grow more, 1.00x -> 0.99x the oracle).
 * - The floors (one core, min-cores), counted as above, are lower bounds
 *   inside the water-fill, so the others share what the floors leave;
 *   only when the floors alone exceed the capacity is the domain over
 *   capacity.
 * - A VM's claim is at least the whole cores that keep its demand below
 *   the saturation level: a smaller claim would leave it saturated after
 *   the shrink, claiming all its vCPUs the next period (a flip-flop).
 *   Only where those cores are above its floor: within the floor the VM
 *   keeps its cores anyway, and the raise would only cost capacity.
 * - Whole cores round to the nearest fit: a core is added while half of
 *   what it costs still fits (used + cost / 2 < C), i.e. while the
 *   over-commit it causes is smaller than the idle capacity it fills.
 *   The sum may exceed C by less than half a core, never by a whole one;
 *   rounding down would leave up to a core idle per domain (one busy VM
 *   of 2 vCPUs and an idle one on 2 pCPUs: 1 vCPU, half the host idle).
 * - A domain is contended only when some VM cannot have its claim in
 *   whole cores: claims a little above C that round to everyone's claim
 *   are no contention (all vCPUs, no persistence counted).
 * - The hint bound is the share the VM would get if every steered VM of
 *   its domain claimed all its vCPUs: what a busy honest VM can count on.
 * - A shrink deferred by persistence or dwell keeps the old cores and may
 *   exceed the capacity for that long (shrinking is slow on purpose); a
 *   dead-band hold of a shrink is made only within the capacity.
 * - Non-followers (no agent, an agent that does not ack, mode off) take
 *   part in one water-fill with the steered VMs at their demand, so they
 *   count at most at their weighted share: not cooperating never earns
 *   more than cooperating (policy v2; v1 counted them at their demand,
 *   which handed them the cooperators' share).
 * - Confinement censors demand: a VM held to k vCPUs shows at most k.  A
 *   confined VM keeping 80% of its preferred vCPUs busy counts as
 *   saturated (it claims everything), unless its guest reports no more
 *   runnable tasks than preferred vCPUs, or it grew from this very size
 *   and demand within the last minute without showing more demand.
 * - Cores cost what the VM keeps busy of them (util): a barrier guest
 *   that keeps 80% of its vCPUs busy gets the vCPUs its share keeps busy
 *   (4 CPUs -> 5 vCPUs), not 4 vCPUs and idle pCPUs.
 * - But a confined VM is not shrunk below the cores that hold its demand
 *   under the censor level, when it has them and they cost no more than
 *   its share.  util has a floor (POLICY_UTIL_MIN), so a VM keeping 0.85
 *   CPUs busy on 3 vCPUs sees a core costed at 0.5 and one core as
 *   enough; there it would look short, claim all its vCPUs and grow
 *   back (phases: 3 -> 1 -> 5 vCPUs, its neighbours shrunk and grown,
 *   13 s to settle).  Only shrinks are stopped: never above its cores.
 * - A saturated VM whose growth the dead band holds grows all the same
 *   into room the others leave as they stand (work conservation), if
 *   the whole growth fits (a held shrink needs room for half of it), or
 *   half of it once the dead band has held it for a dwell time: two
 *   spinlock guests of the same share (3.86 CPUs) next to two barrier
 *   guests of weight 300, one held at 3 vCPUs by the dead band, the
 *   other at 4, left 0.7 pCPUs idle for good (0.97x -> 1.00x the
 *   governor; every bench scenario unchanged), but
 *   not back to a size it was shrunk from within a minute of growing
 *   into room to it, for two minutes (doubled up to 8 each time that
 *   growth fails again right after): room that comes and goes with the
 *   others' phases does not move it back and forth (phases: 5 changes
 *   per minute without this rule), and each try costs two changes, so
 *   tries two minutes apart keep it within one change a minute.  Growth
 *   by share is never held.
 * - The same holds a VM that is not short of vCPUs at its cores when its
 *   domain has no contention (hold-regrow): no contention seen while it
 *   is confined is censored, and releasing it to all its vCPUs brought
 *   the contention back.  Held, it still grows into the room the claims
 *   leave, to the cores its claim plus its weighted part of that room
 *   pay for at its util, when tasks wait for its vCPUs (its guest's
 *   runnable hint above what it keeps busy, or without one, 75% busy):
 *   four barrier guests of 16 vCPUs held at 8 on 32 pCPUs kept 6.1 CPUs
 *   busy each and left 7.6 pCPUs idle for the hold (0.90x no steering;
 *   grown to 10-11 vCPUs, 1.005x).  A VM whose guest runs fewer tasks
 *   than that would leave the vCPUs idle: not grown.  Such a growth
 *   counts as growth into room: shrunk back soon after, it is held too.
 *   Whole cores within its part, not the nearest: rounded like the
 *   fill, those guests grew from 11 to 12 vCPUs (barrier-big 0.999x ->
 *   1.017x the governor), but barrier guests next to a neighbour
 *   bursting every 3 s grew into room its next burst took back
 *   (barrier-burst, seed 6: 7 -> 16 changes per minute).
 * - A VM first decided with all its cores under contention has them as
 *   if grown into room: shrunk from them within a minute (start-up), it
 *   is held the same way, without first being released to find out
 *   (barrier-big: 16 -> 8 -> 16 -> 8 -> 10 -> 11 vCPUs in 8 s, now 16 ->
 *   8 -> 10 -> 11 in 4 s; barrier-burst 1.5 -> 1.0 changes per VM per
 *   minute).  Only the first shrink after such a growth counts.  A hold
 *   lifts when releasing the held VMs would fit: each counts at what it
 *   used before its shrink, scaled as its use (the more of its last two
 *   periods) stands to its use right after the shrink; a VM whose work
 *   fell, not its vCPUs, is released.
 * - The dead band does not hold a VM whose own demand rose: its claim met
 *   for 3 decisions in a row (it had cores it did not use, kept from a
 *   peak), then saturated at them.  Its share was its claim, so the move
 *   is no small one; held, a guest whose demand swaps with another's
 *   every 10 s kept the 4 cores of its last peak for the whole phase
 *   where its share was 4.9 (flip-mixed: 0.99x -> 1.01x no steering,
 *   every other scenario unchanged).  Not where demand jitters.
 * - Growth by share waits grow-after periods (1 by default: at once) of
 *   a larger share in a row, to the fewest cores of those periods.  A
 *   neighbour whose demand dips for one period then moves nobody
 *   (bursty-slow: 3-21 changes/min over 4 VMs at 1, 0-3 at 2), but
 *   every growth by share comes a period later (flip-together: 1.00x ->
 *   0.96x no steering, phases 0.99x -> 0.98x), so the default stays 1
 *   and the operator chooses.  Only growth by share: growth into room
 *   and the release when contention ends are never delayed.
 * - Where the demand jitters, it waits 2 all the same: for a minute after
 *   the VMs of a domain whose sets stayed the same used a CPU less (or
 *   more) for one period and came back the next, growth by share there
 *   waits two periods, and so does a shrink by share (its claim not met
 *   at the new cores: a neighbour's rise, not its own fall), to the most
 *   cores of the two (hold-shrink).  One sample cannot tell a dip from a
 *   lasting change; once dips are seen to come back, the second sample
 *   decides.  bursty-slow: 3-21 changes/min over 4 VMs -> 0-3, 1.07-1.08x
 *   -> 1.07-1.09x no steering; every other scenario unchanged, as its
 *   demand moves for good or not at all (flip-together stays 1.00x).
 * - A surge waits a period too: where a VM saturates its cores using
 *   more than the most it used in the last POLICY_PEAK_MS, it grows at
 *   once but the others' shrinks by share wait for a second period of
 *   it (hold-shrink), in any domain.  A burst of one period beyond what
 *   a guest showed lately moves nobody; a wake-up takes its share within
 *   two periods; demand coming back to a level it reached lately (a
 *   guest flipping every 5 s) moves the others at once (policy_surge).
 * - A rise that falls back as the shrinks it calls for land moves nobody
 *   once such rises were seen: where a VM's use rose by a CPU at the
 *   same cores and fell back by a CPU two decisions later (or three
 *   decisions later, twice in a row), within the last minute, the
 *   others' shrinks by share wait while a new rise of it has lasted no
 *   longer (hold-shrink, policy_brief).  Shrunk at the rise's first
 *   decision, they spent the low phase shrunk and grew back a period
 *   late: two guests flipping between 2 and 8 or 16 tasks every 2 s next
 *   to three busy ones (random flip-00) ran at 0.97x no steering with 88
 *   changes per minute, now 1.03x with 40; flip-17 (3 s) 0.95x -> 1.00x;
 *   random sweep 94 -> 98 of 120 at least 0.99x no steering, 89 -> 93 at
 *   least the governor; every bench scenario unchanged.  A rise of one
 *   period is the jitter rule's, and in a jittery domain moves wait two
 *   periods both ways already (holding there too kept a spinlock guest
 *   over-committed next to two guests flipping a period apart: flip-08
 *   1.14x -> 1.12x).  Holding a single rise of three periods costs what
 *   it saves (bursty-weights 3 -> 15 changes per minute); longer rises
 *   are followed.  A rise that lasts shrinks the others a period later
 *   than otherwise: so does a guest that wakes for good right after
 *   such a rise.
 * - A guest busy in bursts is over-committed: a confined VM whose guest
 *   reports at least as many runnable tasks as its preferred vCPUs while
 *   it keeps only 50-90% of them busy runs more tasks at once than it has
 *   vCPUs and leaves them idle between (barrier phases).  After two such
 *   decisions in a row it gets the cores of 1.5x its share in vCPUs, in a
 *   contended domain, counted at its share: the host's CPU weights hold
 *   its CPU time, the extra vCPUs fill the holes of its neighbours' bursts
 *   with its own (barrier-3x: 6 guests of 8 vCPUs on 16 pCPUs, 3 vCPUs
 *   each keep 2.6 CPUs busy with 5.1 tasks runnable; at 4: 0.98x -> 1.00x
 *   the governor, 6.7% -> 4.6% of pCPU time idle; barrier-2x 1.01x ->
 *   1.02x).  It keeps them while it stays below 97% busy, contended, with
 *   at least its share in runnable tasks, resized only when 1.5x its
 *   share moves by more than a core, and held at them when its share
 *   alone would give it one core more: a guest whose use moves with its
 *   vCPUs would move between the two (mixed-13: 9 changes in a minute).
 *   Not started next to a confined VM keeping 97% of its own set busy:
 *   the extra vCPUs take the CPU its whole cores leave it (mixed-13: a
 *   cpu-bound neighbour 170 -> 152 CPU s in a minute, the domain's useful
 *   work -1.3%).  Such a VM appearing later does not end it (mixed-00:
 *   0.966x no steering, 0.956x if it did).  Nor does one stop it whose
 *   rises are brief (policy_brief_rises): busy in bursts of its own, it
 *   keeps its set busy only in them, the extra vCPUs fill the gaps
 *   between, and in a burst the host's CPU weights hold its share.
 *   barrier-burst (three barrier guests next to one bursting between 2
 *   and 6 tasks every 3 s): the barrier guests were held at 5 vCPUs with
 *   3 pCPUs idle between the bursts, 0.977x -> 0.993x no steering and
 *   0.986x -> 1.002x the governor (seeds 2-6: 0.976-0.995x -> 0.992-
 *   0.995x), the bursting guest's work unchanged (416 CPU s), for two
 *   changes more when the over-commit starts (the report's steady changes
 *   per VM per minute 1.0 -> 1.5); bursts of 2 s with gaps of 1 s
 *   0.988x -> 1.004x.  A neighbour that stays busy still stops it:
 *   there the over-commit took it below its entitlement (5 barrier
 *   guests and a cpu-bound one on 16 pCPUs: 369 -> 308 CPU s of 320
 *   entitled in two minutes).
 * - CPUs left idle while tasks wait are a reason to grow (policy_spare):
 *   the CPUs a contended domain did not run, averaged (a tenth of each
 *   new figure, the lower of the last two, so that one period's gap after
 *   a fall of demand counts for nothing), buy saturated confined VMs whose
 *   guests report tasks for one more core that core, counted at their
 *   share like an over-commit: new while the average pays for half of
 *   it, kept while it pays for a tenth, none new in a period in which a
 *   VM of the domain surged.  The idle comes from neighbours busy in
 *   bursts or phases: whole cores round to within half a core of the
 *   capacity.  bench: phases 0.99x -> 1.00x no steering, barrier-weights
 *   1.00x -> 1.01x the governor, flip-mixed 0.99x -> 1.00x, bursty-weights
 *   0.99x -> 1.00x with 1.5 -> 0.75 changes per VM per minute, barrier-
 *   burst 0.97x -> 0.99x, bursty-slow 0 -> 1 change per VM per minute;
 *   random sweep: 81 -> 89 of 120 at least the governor.  A faster
 *   average (a fifth) doubled the changes of the random barrier guests;
 *   without the lower of the last two, flip-together lost 4%.
 * - Demand is the last period's (ewma-alpha 1 by default): the dead band
 *   and the dwell, not a moving average, keep steady input steady, and a
 *   VM whose demand falls gives its share back within a period.
 * - max-cores applies with or without contention.
 * - A VM whose pCPUs miss the host's may run anywhere: all host pCPUs.
 *
 * Cost: linear in the VMs, their cores and the host's pCPUs, plus a sort of
 * each domain's VMs.  Sets of vCPUs are walked only over the words that can
 * hold a vCPU id (nvcpus), never over all CPUSET_WORDS, except once per core
 * to reject ids at or above nvcpus.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "policy.h"
#include "util.h"

#define POLICY_EPS		1e-9
/*
 * Least capacity of a domain, CPUs: when non-VM load swallows every pCPU
 * the VMs still hold one core each, reported as over capacity, instead of
 * shares of zero or less.
 */
#define POLICY_CAP_FLOOR	0.1
#define POLICY_BUSY		0.75
/*
 * A confined VM keeping this much of its preferred vCPUs busy (run +
 * delay) counts as saturated: its demand may be more than it can show.
 * Measured on bench/scenarios with the rest of the policy as it is: at
 * 0.75 a guest that keeps a confined set 75-80% busy claims all its
 * vCPUs, grows and is shrunk back (phases: 5 changes/min, never
 * settled, 0.965x no steering); at 0.85 a barrier guest keeping 82% of
 * a confined set busy goes unseen and flaps (barrier-2x: 120
 * changes/min); at 0.8 neither (0 changes/min, 0.985x and 0.996x).
 */
#define POLICY_CENSOR		0.8
#define POLICY_UTIL_MIN		0.5
/* CPUs of demand a growth must bring to count as a gain. */
#define POLICY_GAIN		0.5
/* How long a growth that gained nothing is not tried again, ms. */
#define POLICY_NOGAIN_MS	60000
/*
 * Hold of a growth into room that did not last (regrow_hold): two
 * minutes, as a try costs two changes (grown, shrunk back), doubled up
 * to eight each time it fails again right after its hold.
 */
#define POLICY_REGROW_MS	(2 * POLICY_NOGAIN_MS)
#define POLICY_REGROW_MAX_MS	(4 * POLICY_REGROW_MS)
/* How long a VM's peak demand is kept after it last reached it, ms. */
#define POLICY_PEAK_MS		10000
/* A fall of demand keeps the peak within this of the last fall, ms. */
#define POLICY_FALL_MS		(2 * POLICY_PEAK_MS)
/*
 * Jitter: the demand of a contention domain's VMs whose sets stayed the
 * same moves by this many CPUs for one period and comes back the next.
 * For POLICY_JITTER_MS after, a move by share waits two periods there.
 */
#define POLICY_JITTER		1.0
#define POLICY_JITTER_MS	60000
#define POLICY_NOCPU		UINT_MAX
/*
 * Over-commit (policy_overcommit): a confined VM keeping at least
 * POLICY_UTIL_MIN and less than POLICY_HOLES of its preferred vCPUs busy
 * while its guest reports as many runnable tasks, for POLICY_HOLEY_PERIODS
 * decisions in a row, gets POLICY_OVER times its share in vCPUs; it keeps
 * them while it keeps less than POLICY_SOLID of its vCPUs busy.  A
 * confined VM keeping POLICY_SOLID of its vCPUs busy stops any from
 * starting in its domain.
 */
#define POLICY_HOLES		0.9
#define POLICY_SOLID		0.97
#define POLICY_HOLEY_PERIODS	2
#define POLICY_OVER		1.5
/*
 * Spare vCPUs (policy_spare): a contended domain's CPUs left idle, as a
 * moving average (weight POLICY_SPARE_ALPHA for the newest sample, the
 * lower of the last two), buy saturated confined VMs with runnable tasks
 * for them one core each beyond their share: a new one while the average
 * pays for POLICY_SPARE_NEW of the core's vCPUs, kept while it pays for
 * POLICY_SPARE_KEEP of them.
 */
#define POLICY_SPARE_ALPHA	0.1
#define POLICY_SPARE_NEW	0.5
#define POLICY_SPARE_KEEP	0.1
/*
 * Brief rises (policy_brief): a VM whose use rose by POLICY_JITTER CPUs
 * and fell back by as much POLICY_BRIEF decisions later, or
 * POLICY_BRIEF + 1 decisions later twice in a row, within the last
 * POLICY_JITTER_MS, holds the others' shrinks by share while a new rise
 * of its has lasted no longer.
 */
#define POLICY_BRIEF		2
/* Decisions in a row a claim was met before a rise is its own demand. */
#define POLICY_MET_PERIODS	3

enum pvm_kind {
	PVM_AUTO,		/* steered by the engine */
	PVM_UNSTEERED,		/* no agent following */
	PVM_OFF,		/* mode off */
	PVM_FIXED,		/* mode fixed, agent following */
	PVM_HOLD,		/* never sampled: keeps its set, counted 0 */
};

/* What the engine works out for one VM during one policy_decide(). */
struct pvm {
	enum pvm_kind	kind;
	unsigned int	domain;
	unsigned int	first_pcpu;	/* any pCPU of the VM, for union-find */
	unsigned int	nw;		/* words of vCPU sets that can be set */
	uint64_t	*on;		/* online vCPUs below nvcpus, nw words */
	unsigned int	nonline;
	unsigned int	nusable;	/* cores with an online vCPU */
	unsigned int	*order;		/* usable cores in selection order */
	unsigned int	*cum;		/* cum[k]: vCPUs of order[0 .. k-1] */
	unsigned int	cur_k;		/* cores preferred before this period */
	unsigned int	cur_vcpus;
	unsigned int	nfixed;		/* mode fixed: its vCPUs online */
	unsigned int	lo_k, hi_k;	/* bounds: one core, min and max */
	unsigned int	base_k;		/* whole cores within the share */
	unsigned int	want_k;		/* cores it wants if its claim is met */
	unsigned int	k;		/* cores decided */
	unsigned int	contended;	/* periods, this one included */
	double		demand;		/* EWMA, this period's sample included */
	double		claim;		/* CPUs counted against the capacity */
	bool		peak_new;	/* a new peak window starts */
	bool		fall_new;	/* a fall now starts a new episode */
	bool		peak_keep;	/* a fall keeps the peak's cores */
	bool		fell;		/* peak's cores above the claim's */
	double		peak;		/* most used lately, see claims */
	double		want;		/* claim with headroom, see claims */
	double		entitle;	/* share had it claimed all: hint bound */
	double		share;
	double		counted;	/* CPUs taken out of C when not steered */
	double		fair;		/* weighted fair share of C, CPUs */
	double		util;		/* busy share of its vCPUs, see use() */
	double		sat_level;	/* the config's saturation */
	double		use;		/* run + delay this period, CPUs */
	bool		at_share;	/* not steered, counted below its demand */
	double		frac;		/* share beyond base_k, in next core */
	bool		saturated;
	bool		hint_raised;
	bool		max_capped;	/* max-cores cut the claim */
	bool		at_lo;		/* share raised to the core minimum */
	bool		idle_floor;	/* claim below its floor's vCPUs */
	bool		headroom;	/* met, given its headroom on top */
	bool		db_shrink;	/* shrink that the dead band may hold */
	bool		censored;	/* saturated only as a confined busy VM */
	bool		nogain;		/* its last growth brought no demand */
	unsigned int	db_grow;	/* saturated, growth held: its target */
	bool		db_held;	/* and not held from room (regrow) */
	unsigned int	room_k;		/* no contention: see policy_room */
	bool		regrow_held;	/* room may not grow it: see settle */
	bool		surge;		/* its domain's: see policy_surge */
	bool		brief;		/* a neighbour's: see policy_brief */
	bool		brief_held;	/* its shrink waits for that */
	unsigned char	rise_n, rise_last, rise_prev;	/* policy_state */
	bool		fell_back;	/* its rise fell back now */
	double		regrow_est;	/* use back at regrow_k: see release */
	bool		room_grown;	/* grown into room: see settle */
	unsigned int	grow_wanted;	/* see policy_state, this one counted */
	unsigned int	grow_k;
	unsigned int	shrink_wanted;
	unsigned int	shrink_k;
	unsigned int	wait;		/* periods a move by share waits */
	bool		jitter;		/* its domain's demand jittered now */
	unsigned char	holey_n;	/* see policy_state, this one counted */
	unsigned int	over_k;		/* over-committed: see overcommit */
	unsigned int	paid_k;		/* the cores it is counted at then */
	double		idle_mean;	/* see policy_state */
	double		idle_last;
	bool		spare;		/* holds a spare core: see spare */
	unsigned int	spare_k;	/* 1 if k includes it now */
	unsigned int	target_k;	/* k before the damping */
	enum policy_reason reason;
};

struct pdom {
	unsigned int	npcpus;
	double		capacity;	/* C */
	double		free;		/* R: C minus what is not steered */
	double		claims;
	unsigned int	first, nvm;	/* slice of the VM index by domain */
	unsigned int	nrogue;		/* VMs not following (no agent, off) */
	double		rogue_cpus;	/* what they are counted at */
	bool		contended;
	bool		jittery;	/* a VM's demand came back lately */
	const struct policy_vm *surge;	/* a VM that surged: policy_surge */
	/* The first two brief risers (policy_brief), their rises so far. */
	const struct policy_vm *brief[2];
	unsigned int	brief_n[2];
	unsigned int	nbrief;
	bool		rounded;	/* claims above C, but they fit in cores */
	bool		over;
	bool		regrow_free;	/* released, the held fit: release */
	double		idle;		/* CPUs left idle on average: spare */
};

/* One VM in a water-fill: weight, least and most CPUs, result. */
struct wf_item {
	double	w, lo, hi, out;
	bool	raised;		/* out is lo, above its weighted level */
};

struct wf_event {
	double		at;		/* water level where the slope changes */
	unsigned int	i;
	bool		is_hi;
};

/*
 * Everything one policy_decide() works with, in one allocation: the
 * inputs, each VM's and each domain's figures, and the scratch of every
 * phase.  Sizes come from the inputs (policy_work_new()).
 */
struct pwork {
	const struct policy_config *cfg;
	const struct policy_host *host;
	struct policy_vm *vms;
	size_t		 n;
	struct pvm	*pv;		/* n */
	struct pdom	*doms;		/* ndom <= n used */
	unsigned int	 ndom;
	unsigned int	*idx;		/* n: VMs by domain, in VM order */
	unsigned int	*cand;		/* n */
	struct wf_item	*it;		/* n */
	struct wf_event	*ev;		/* 2n */
	unsigned int	*usable, *pairs, *grp;	/* max cores, 2x, 2x */
	unsigned int	 npc;		/* pCPU ids: last host pCPU + 1 */
	unsigned int	*parent, *domof;	/* npc: union-find */
	unsigned char	*used;		/* npc */
	size_t		 hsize;		/* power of 2 >= 2n */
	unsigned int	*seen;		/* hsize */
};

static const char *const policy_reason_names[] = {
	[POLICY_R_NO_CONTENTION] = "no-contention",
	[POLICY_R_FAIR_SHARE] = "fair-share",
	[POLICY_R_GROW] = "grow",
	[POLICY_R_HOLD_DEAD_BAND] = "hold-dead-band",
	[POLICY_R_HOLD_DWELL] = "hold-dwell",
	[POLICY_R_HOLD_PERSIST] = "hold-persist",
	[POLICY_R_MIN_CORES] = "min-cores",
	[POLICY_R_MAX_CORES] = "max-cores",
	[POLICY_R_UNSTEERED] = "unsteered",
	[POLICY_R_MODE_OFF] = "mode-off",
	[POLICY_R_MODE_FIXED] = "mode-fixed",
	[POLICY_R_UNMEASURED] = "unmeasured",
	[POLICY_R_HOLD_REGROW] = "hold-regrow",
	[POLICY_R_HOLD_GROW] = "hold-grow",
	[POLICY_R_HOLD_SHRINK] = "hold-shrink",
	[POLICY_R_OVERCOMMIT] = "overcommit",
	[POLICY_R_SPARE] = "spare",
};

const char *
policy_reason_name(enum policy_reason r)
{
	if ((size_t)r >= nitems(policy_reason_names) ||
	    policy_reason_names[r] == NULL)
		return "unknown";
	return policy_reason_names[r];
}

void
policy_config_default(struct policy_config *c)
{
	memset(c, 0, sizeof(*c));
	c->ewma_alpha = 1.0;
	c->headroom = 0.5;
	c->dead_band = 1.0;
	c->dwell_ms = 3000;
	c->shrink_after = 2;
	c->grow_after = 1;
	c->saturation = 0.9;
}

void
policy_state_init(struct policy_state *s)
{
	memset(s, 0, sizeof(*s));
}

int
policy_state_adopt(struct policy_state *s, const struct policy_config *cfg,
    const struct cpuset *preferred, unsigned int cores)
{
	if (s->init || cpuset_empty(preferred) || cores == 0)
		return -1;
	s->init = true;
	s->demand_unknown = true;
	s->demand = 0;
	s->preferred = *preferred;
	s->cores = cores;
	/* It was decided under contention: a further shrink need not wait. */
	s->contended = cfg->shrink_after;
	return 0;
}

static void
policy_err(char *err, size_t errlen, const struct policy_vm *vm, size_t i,
    const char *fmt, ...) LOG_PRINTF(5, 6);

/*
 * A VM's name for a message, escaped (it comes from the domain), or
 * fallback when it has none.
 */
static void
policy_vm_name(char *buf, size_t len, const struct policy_vm *vm,
    const char *fallback)
{
	if (vm->name == NULL)
		snprintf(buf, len, "%s", fallback);
	else
		str_escape(buf, len, vm->name, strlen(vm->name));
}

/* Write "vm NAME: cause" (or "vm #i") into err. */
static void
policy_err(char *err, size_t errlen, const struct policy_vm *vm, size_t i,
    const char *fmt, ...)
{
	char	name[96], cause[160], num[32];
	va_list	ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	if (vm == NULL)
		snprintf(err, errlen, "%s", cause);
	else {
		snprintf(num, sizeof(num), "#%zu", i);
		policy_vm_name(name, sizeof(name), vm, num);
		snprintf(err, errlen, "vm %s: %s", name, cause);
	}
}

static bool
policy_finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

static int
policy_check_config(const struct policy_config *c, char *err, size_t errlen)
{
	if (!(c->ewma_alpha > 0 && c->ewma_alpha <= 1))
		policy_err(err, errlen, NULL, 0,
		    "config: ewma_alpha must be in (0, 1]");
	else if (!policy_finite_nonneg(c->headroom))
		policy_err(err, errlen, NULL, 0,
		    "config: headroom must be >= 0");
	else if (!policy_finite_nonneg(c->dead_band))
		policy_err(err, errlen, NULL, 0,
		    "config: dead_band must be >= 0");
	else if (!(c->saturation > 0 && c->saturation <= 1))
		policy_err(err, errlen, NULL, 0,
		    "config: saturation must be in (0, 1]");
	else
		return 0;
	return -1;
}

/* Words of a vCPU set that can hold ids below n. */
static unsigned int
policy_words(unsigned int n)
{
	return (n + 63) / 64;
}

/* Mask of the valid bits of word w for ids below n. */
static uint64_t
policy_word_mask(unsigned int n, unsigned int w)
{
	unsigned int	top = n - w * 64;

	return top >= 64 ? UINT64_MAX : (UINT64_C(1) << top) - 1;
}

/* vCPUs in a & b & c over the first nw words; c may be NULL. */
static unsigned int
policy_count3(const uint64_t *a, const uint64_t *b, const uint64_t *c,
    unsigned int nw)
{
	unsigned int	w, n = 0;

	for (w = 0; w < nw; w++)
		n += (unsigned int)__builtin_popcountll(a[w] & b[w] &
		    (c != NULL ? c[w] : UINT64_MAX));
	return n;
}

/* Check one VM; 0, or -1 with err naming the VM and the field. */
static int
policy_check_vm(const struct policy_vm *vm, size_t i, char *err,
    size_t errlen)
{
	uint64_t	 seen[CPUSET_WORDS];
	unsigned int	 k, w, nw;
	uint64_t	 m;

	if (vm->nvcpus == 0 || vm->nvcpus > CPUSET_MAX) {
		policy_err(err, errlen, vm, i, "nvcpus %u not in 1..%u",
		    vm->nvcpus, CPUSET_MAX);
		return -1;
	}
	if (vm->ncores == 0 || vm->cores == NULL) {
		policy_err(err, errlen, vm, i, "ncores is 0");
		return -1;
	}
	if (vm->ncores > vm->nvcpus) {
		policy_err(err, errlen, vm, i, "ncores %u above nvcpus %u",
		    vm->ncores, vm->nvcpus);
		return -1;
	}
	if (vm->weight == 0 || vm->weight > POLICY_WEIGHT_MAX) {
		policy_err(err, errlen, vm, i, "weight %u not in 1..%u",
		    vm->weight, POLICY_WEIGHT_MAX);
		return -1;
	}
	if (vm->max_cores != 0 && vm->min_cores > vm->max_cores) {
		policy_err(err, errlen, vm, i,
		    "min_cores %u above max_cores %u", vm->min_cores,
		    vm->max_cores);
		return -1;
	}
	if ((unsigned int)vm->mode > POLICY_MODE_FIXED) {
		policy_err(err, errlen, vm, i, "mode %u unknown",
		    (unsigned int)vm->mode);
		return -1;
	}
	if (vm->mode == POLICY_MODE_FIXED && cpuset_empty(&vm->fixed)) {
		policy_err(err, errlen, vm, i, "fixed: mode fixed needs cpus");
		return -1;
	}
	if (!policy_finite_nonneg(vm->run_cpus) ||
	    !policy_finite_nonneg(vm->delay_cpus)) {
		policy_err(err, errlen, vm, i,
		    "run_cpus/delay_cpus must be finite and >= 0");
		return -1;
	}
	if (isnan(vm->hint_runnable)) {
		policy_err(err, errlen, vm, i, "hint_runnable is NaN");
		return -1;
	}
	if (vm->state == NULL) {
		policy_err(err, errlen, vm, i, "state is NULL");
		return -1;
	}

	nw = policy_words(vm->nvcpus);
	memset(seen, 0, nw * sizeof(seen[0]));
	for (k = 0; k < vm->ncores; k++) {
		const uint64_t	*b = vm->cores[k].bits;

		/* No early exit: the compiler makes this a vector OR. */
		m = b[nw - 1] & ~policy_word_mask(vm->nvcpus, nw - 1);
		for (w = nw; w < CPUSET_WORDS; w++)
			m |= b[w];
		if (m != 0) {
			policy_err(err, errlen, vm, i,
			    "cores[%u] holds vCPU %d >= nvcpus %u", k,
			    cpuset_last(&vm->cores[k]), vm->nvcpus);
			return -1;
		}
		m = 0;
		for (w = 0; w < nw; w++) {
			m |= b[w];
			if (b[w] & seen[w]) {
				policy_err(err, errlen, vm, i,
				    "cores[%u] shares a vCPU with an earlier "
				    "core", k);
				return -1;
			}
			seen[w] |= b[w];
		}
		if (m == 0) {
			policy_err(err, errlen, vm, i, "cores[%u] is empty", k);
			return -1;
		}
	}
	return 0;
}

static int
policy_node_cmp(const void *a, const void *b)
{
	const unsigned int	*x = a, *y = b;

	/* Pairs of (node, core). */
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	if (x[1] != y[1])
		return x[1] < y[1] ? -1 : 1;
	return 0;
}

/*
 * Order the usable cores as they will be chosen: the core of vCPU 0 first,
 * then by core index; with several NUMA cells, round-robin over the cells
 * (starting with vCPU 0's) so that any prefix is spread evenly.  The order
 * depends on the topology only, so a decision of k cores is a prefix of
 * one of k+1 cores: growing adds cores, shrinking drops the last ones.
 * pairs needs 2 * ncores entries, grp 2 * ncores.
 */
static void
policy_order_cores(const struct policy_vm *vm, unsigned int *usable,
    unsigned int nusable, unsigned int core0, unsigned int *order,
    unsigned int *pairs, unsigned int *grp)
{
	unsigned int	 i, j, n, ngrp, g0, r, maxlen, g;
	bool		 multi = false;

	if (vm->core_node != NULL)
		for (i = 1; i < nusable; i++)
			if (vm->core_node[usable[i]] !=
			    vm->core_node[usable[0]])
				multi = true;
	if (!multi) {
		order[0] = core0;
		for (i = 0, n = 1; i < nusable; i++)
			if (usable[i] != core0)
				order[n++] = usable[i];
		return;
	}

	for (i = 0; i < nusable; i++) {
		pairs[2 * i] = vm->core_node[usable[i]];
		pairs[2 * i + 1] = usable[i];
	}
	qsort(pairs, nusable, 2 * sizeof(*pairs), policy_node_cmp);
	/* grp[2g]: start of cell g in pairs, grp[2g+1]: its length. */
	ngrp = 0;
	g0 = 0;
	for (i = 0; i < nusable; i++) {
		if (i == 0 || pairs[2 * i] != pairs[2 * i - 2]) {
			grp[2 * ngrp] = i;
			grp[2 * ngrp + 1] = 0;
			ngrp++;
		}
		grp[2 * (ngrp - 1) + 1]++;
		if (pairs[2 * i + 1] == core0) {
			g0 = ngrp - 1;
			/* Move core0 to the front of its cell. */
			for (j = i; j > grp[2 * g0]; j--) {
				pairs[2 * j + 1] = pairs[2 * j - 1];
				pairs[2 * j] = pairs[2 * j - 2];
			}
			pairs[2 * grp[2 * g0] + 1] = core0;
			pairs[2 * grp[2 * g0]] = vm->core_node[core0];
		}
	}
	maxlen = 0;
	for (g = 0; g < ngrp; g++)
		if (grp[2 * g + 1] > maxlen)
			maxlen = grp[2 * g + 1];
	n = 0;
	for (r = 0; r < maxlen; r++)
		for (j = 0; j < ngrp; j++) {
			g = (g0 + j) % ngrp;
			if (r < grp[2 * g + 1])
				order[n++] = pairs[2 * (grp[2 * g] + r) + 1];
		}
}

/* Whether t_ms is less than span_ms before now_ms (and not after it). */
static bool
policy_lately(uint64_t now_ms, uint64_t t_ms, uint64_t span_ms)
{
	return now_ms >= t_ms && now_ms - t_ms < span_ms;
}

/*
 * Whether a VM at vcpus preferred vCPUs with this demand was grown from
 * there before and showed no more demand for it, not long ago.
 */
static bool
policy_nogain(const struct policy_state *st, unsigned int vcpus,
    double sample, uint64_t now_ms)
{
	return st->init && st->nogain_vcpus == vcpus &&
	    sample <= st->nogain_demand + POLICY_GAIN &&
	    policy_lately(now_ms, st->nogain_ms, POLICY_NOGAIN_MS);
}

/*
 * Whether a prepared VM is saturated (short of vCPUs), what of its vCPUs
 * it keeps busy (util), and whether its last growth brought no more
 * demand.  sample: run + delay this period, at most its online vCPUs.
 */
static void
policy_saturation(const struct policy_vm *vm, struct pvm *p, double sample,
    uint64_t now_ms)
{
	const struct policy_state *st = vm->state;

	/*
	 * A VM held to fewer vCPUs than it has cannot show more demand than
	 * it has vCPUs: when it keeps POLICY_CENSOR of them busy (run +
	 * delay), its demand is censored and it counts as saturated.
	 */
	p->saturated = vm->run_cpus >=
	    p->sat_level * p->cur_vcpus - POLICY_EPS;
	if (!p->saturated && p->cur_vcpus < p->nonline && !vm->unmeasured &&
	    sample >= POLICY_CENSOR * p->cur_vcpus - POLICY_EPS)
		p->saturated = p->censored = true;
	/*
	 * Held to fewer vCPUs than it has, a saturated VM may have more
	 * work than vCPUs, or just as much.  The guest's hint tells: no
	 * more runnable tasks than preferred vCPUs and it is not short
	 * (lowering its own claim, such a hint needs no trust).  Without a
	 * hint, what happened the last time it grew from here tells: if
	 * its demand did not rise then, it is taken as not short for a
	 * while (POLICY_NOGAIN_MS).  More runnable tasks than vCPUs
	 * overrides that memory: its work has changed.
	 */
	if (p->saturated && p->cur_vcpus < p->nonline) {
		double	h = vm->hint_runnable;

		if (h >= 0 && h <= p->cur_vcpus)
			p->saturated = false;
		else if (!(h > p->cur_vcpus + POLICY_GAIN) &&
		    policy_nogain(st, p->cur_vcpus, sample, now_ms))
			p->saturated = false;
		if (!p->saturated)
			p->censored = false;
	}
	/*
	 * The period after it grew as saturated: did the demand rise with
	 * the vCPUs?  If not, its demand was what it showed there.
	 */
	p->nogain = st->init && st->grown_vcpus != 0 && !vm->unmeasured &&
	    p->cur_vcpus > st->grown_vcpus &&
	    sample <= st->grown_demand + POLICY_GAIN;
	p->util = 1;
	p->use = vm->unmeasured ? 0 : sample;
	if (p->cur_vcpus < p->nonline && !vm->unmeasured &&
	    sample < p->cur_vcpus)
		p->util = sample / p->cur_vcpus < POLICY_UTIL_MIN ?
		    POLICY_UTIL_MIN : sample / p->cur_vcpus;
}

/*
 * Work out a VM's cores, demand and saturation.  Storage for on, order
 * and cum comes from the caller's pools.  -1 (with err) if no core has an
 * online vCPU.
 */
static int
policy_prep_vm(const struct policy_config *cfg, const struct policy_vm *vm,
    size_t i, struct pvm *p, unsigned int *usable, unsigned int *pairs,
    unsigned int *grp, uint64_t now_ms, char *err, size_t errlen)
{
	const struct policy_state *st = vm->state;
	unsigned int	 k, w, c, nus, core0 = POLICY_NOCPU;
	double		 sample;
	bool		 known;

	p->nw = policy_words(vm->nvcpus);
	p->nonline = 0;
	for (w = 0; w < p->nw; w++) {
		p->on[w] = vm->online.bits[w] &
		    policy_word_mask(vm->nvcpus, w);
		p->nonline += (unsigned int)__builtin_popcountll(p->on[w]);
	}

	nus = 0;
	for (k = 0; k < vm->ncores; k++) {
		if (policy_count3(vm->cores[k].bits, p->on, NULL, p->nw) == 0)
			continue;
		usable[nus++] = k;
		/* vCPU 0 is in at most one core: cores do not overlap. */
		if (core0 == POLICY_NOCPU || (vm->cores[k].bits[0] &
		    p->on[0] & 1))
			core0 = k;
	}
	if (nus == 0) {
		policy_err(err, errlen, vm, i,
		    "online: no online vCPU in any core");
		return -1;
	}
	p->nusable = nus;
	policy_order_cores(vm, usable, nus, core0, p->order, pairs, grp);
	p->cum[0] = 0;
	for (k = 0; k < nus; k++)
		p->cum[k + 1] = p->cum[k] + policy_count3(
		    vm->cores[p->order[k]].bits, p->on, NULL, p->nw);

	/* Cores preferred now: before any decision, all of them. */
	p->cur_k = nus;
	p->cur_vcpus = p->nonline;
	if (st->init) {
		unsigned int	ck = 0, cv = 0;

		for (k = 0; k < nus; k++) {
			c = policy_count3(vm->cores[p->order[k]].bits, p->on,
			    st->preferred.bits, p->nw);
			if (c != 0)
				ck++;
			cv += c;
		}
		if (ck != 0) {
			p->cur_k = ck;
			p->cur_vcpus = cv;
		}
	}

	/* No more than its online vCPUs can run or wait. */
	sample = vm->run_cpus + vm->delay_cpus;
	if (sample > p->nonline)
		sample = p->nonline;
	known = st->init && !st->demand_unknown;
	if (vm->unmeasured)
		p->demand = known ? st->demand : 0;
	else
		p->demand = known ? cfg->ewma_alpha * sample +
		    (1 - cfg->ewma_alpha) * st->demand : sample;
	/*
	 * The most it used lately: kept until POLICY_PEAK_MS after the
	 * demand last reached it.
	 */
	if (known && p->demand < st->peak - POLICY_EPS &&
	    policy_lately(now_ms, st->peak_ms, POLICY_PEAK_MS))
		p->peak = st->peak;
	else {
		p->peak = p->demand;
		p->peak_new = true;
	}
	/*
	 * A fall from the peak (see claims) begins a new episode when the
	 * demand came back to a peak since the last one; the episode keeps
	 * the peak's cores only if that last fall was lately: demand that
	 * comes and goes, not demand that fell once.
	 */
	p->fall_new = st->fell_ms == 0 || st->fell_ms < st->peak_ms;
	p->peak_keep = p->fall_new ? st->fell_ms != 0 &&
	    policy_lately(now_ms, st->fell_ms, POLICY_FALL_MS) :
	    st->fell_keep;
	p->sat_level = cfg->saturation;
	policy_saturation(vm, p, sample, now_ms);

	/*
	 * Never sampled: keep its set, whether its agent follows yet or not
	 * (at start-up neither is known; a restarted daemon may still adopt
	 * what the guest holds).  The operator's fixed set needs no sample.
	 */
	if (vm->mode == POLICY_MODE_OFF)
		p->kind = PVM_OFF;
	else if (vm->mode == POLICY_MODE_FIXED && vm->steerable)
		p->kind = PVM_FIXED;
	else if (vm->unmeasured && !known)
		p->kind = PVM_HOLD;
	else if (!vm->steerable)
		p->kind = PVM_UNSTEERED;
	else if (vm->mode == POLICY_MODE_FIXED)
		p->kind = PVM_FIXED;
	else
		p->kind = PVM_AUTO;

	/* Unsteered VMs count at their demand, fixed ones within their set. */
	p->counted = p->demand < p->nonline ? p->demand : p->nonline;
	if (p->kind == PVM_FIXED) {
		p->nfixed = policy_count3(vm->fixed.bits, p->on, NULL, p->nw);
		if (p->nfixed != 0 && p->counted > p->nfixed)
			p->counted = p->nfixed;
	}
	return 0;
}

static unsigned int
policy_uf_find(unsigned int *parent, unsigned int x)
{
	while (parent[x] != x) {
		parent[x] = parent[parent[x]];
		x = parent[x];
	}
	return x;
}

static void
policy_uf_union(unsigned int *parent, unsigned int a, unsigned int b)
{
	a = policy_uf_find(parent, a);
	b = policy_uf_find(parent, b);
	if (a != b)
		parent[b] = a;
}

/*
 * Split the VMs into contention domains: union-find over the pCPUs, each
 * VM joining all of its pCPUs, so that overlap is transitive at a cost
 * linear in the pCPUs named.  A VM whose pCPUs miss the host's entirely is
 * taken to run on all of the host's (its threads land somewhere).
 * Domains are numbered in the order of their first VM.
 */
static void
policy_domains(struct pwork *wk)
{
	const struct policy_host *host = wk->host;
	const struct policy_vm	*vms = wk->vms;
	struct pvm		*pv = wk->pv;
	unsigned int		 hw, npc = wk->npc, ndom = 0, nhost, root, p;
	unsigned int		*parent = wk->parent, *domof = wk->domof;
	unsigned int		*seen = wk->seen;
	unsigned char		*used = wk->used;
	struct pdom		*doms = wk->doms;
	size_t			 i, n = wk->n, hsize = wk->hsize;
	int			 b;
	bool			 fallback = false;

	hw = policy_words(npc);
	for (p = 0; p < npc; p++) {
		parent[p] = p;
		domof[p] = POLICY_NOCPU;
	}
	nhost = cpuset_count(&host->pcpus);

	/*
	 * Most VMs share a handful of pCPU sets (the whole host, a few pinned
	 * groups): join each distinct set once, found by a hash of its words.
	 */
	for (i = 0; i < hsize; i++)
		seen[i] = POLICY_NOCPU;
	for (i = 0; i < n; i++) {
		const uint64_t	*pb = vms[i].pcpus.bits;
		unsigned int	 w, first = POLICY_NOCPU;
		uint64_t	 h = 1469598103934665603ULL, x;
		size_t		 slot;

		for (w = 0; w < hw; w++)
			h = (h ^ (pb[w] & host->pcpus.bits[w])) *
			    1099511628211ULL;
		for (slot = h & (hsize - 1); seen[slot] != POLICY_NOCPU;
		    slot = (slot + 1) & (hsize - 1)) {
			const uint64_t *qb = vms[seen[slot]].pcpus.bits;

			for (w = 0; w < hw; w++)
				if ((pb[w] ^ qb[w]) & host->pcpus.bits[w])
					break;
			if (w == hw)
				break;
		}
		if (seen[slot] != POLICY_NOCPU) {
			pv[i].first_pcpu = pv[seen[slot]].first_pcpu;
			continue;
		}
		seen[slot] = (unsigned int)i;
		for (w = 0; w < hw; w++) {
			x = pb[w] & host->pcpus.bits[w];
			while (x != 0) {
				b = __builtin_ctzll(x);
				x &= x - 1;
				p = w * 64 + (unsigned int)b;
				used[p] = 1;
				if (first == POLICY_NOCPU)
					first = p;
				else
					policy_uf_union(parent, first, p);
			}
		}
		if (first == POLICY_NOCPU) {
			first = (unsigned int)cpuset_first(&host->pcpus);
			fallback = true;
		}
		pv[i].first_pcpu = first;
	}
	if (fallback) {
		unsigned int	first = (unsigned int)cpuset_first(&host->pcpus);

		CPUSET_FOREACH(b, &host->pcpus) {
			used[b] = 1;
			policy_uf_union(parent, first, (unsigned int)b);
		}
	}

	for (i = 0; i < n; i++) {
		root = policy_uf_find(parent, pv[i].first_pcpu);
		if (domof[root] == POLICY_NOCPU)
			domof[root] = ndom++;
		pv[i].domain = domof[root];
	}
	for (p = 0; p < npc; p++)
		if (used[p])
			doms[domof[policy_uf_find(parent, p)]].npcpus++;
	for (i = 0; i < ndom; i++) {
		struct pdom	*d = &doms[i];

		d->capacity = d->npcpus - host->nonvm_cpus *
		    ((double)d->npcpus / nhost);
		if (d->capacity < POLICY_CAP_FLOOR)
			d->capacity = POLICY_CAP_FLOOR;
	}
	wk->ndom = ndom;
}

static int
policy_event_cmp(const void *a, const void *b)
{
	const struct wf_event	*x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	/* A lower bound ends before an upper one starts at the same level. */
	if (x->is_hi != y->is_hi)
		return x->is_hi ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/*
 * Weighted max-min with bounds: find the water level L with
 * sum(clamp(w * L, lo, hi)) = R and give each clamp(w * L, lo, hi).  When
 * the lower bounds alone exceed R everyone gets lo (the caller reports
 * it); when the upper bounds fit everyone gets hi.  ev holds 2n events.
 * Returns the level L: 0 when the lower bounds do not fit, HUGE_VAL when
 * the upper bounds do.
 */
static double
policy_waterfill(struct wf_item *it, unsigned int n, double R,
    struct wf_event *ev)
{
	double		 sumlo = 0, sumhi = 0, base, slope, level = 0, f;
	unsigned int	 i, ne = 0;

	for (i = 0; i < n; i++) {
		sumlo += it[i].lo;
		sumhi += it[i].hi;
	}
	if (sumlo >= R || sumhi <= R) {
		for (i = 0; i < n; i++) {
			it[i].out = sumlo >= R ? it[i].lo : it[i].hi;
			it[i].raised = sumlo >= R;
		}
		return sumlo >= R ? 0 : HUGE_VAL;
	}
	for (i = 0; i < n; i++) {
		ev[ne++] = (struct wf_event){ it[i].lo / it[i].w, i, false };
		ev[ne++] = (struct wf_event){ it[i].hi / it[i].w, i, true };
	}
	qsort(ev, ne, sizeof(*ev), policy_event_cmp);
	/* Between events the sum is base + slope * level. */
	base = sumlo;
	slope = 0;
	for (i = 0; i < ne; i++) {
		f = base + slope * ev[i].at;
		if (f >= R && slope > 0) {
			level = (R - base) / slope;
			if (level < ev[i].at - POLICY_EPS)
				break;
			/*
			 * R is reached just as the last VMs on the slope hit
			 * their hi: the level may rise to where the next one
			 * leaves its lo.  Take that top, so that a VM at its
			 * lo there is not reported as raised to it.
			 */
			for (; i < ne && ev[i].at <= level + POLICY_EPS; i++)
				slope += ev[i].is_hi ? -it[ev[i].i].w :
				    it[ev[i].i].w;
			if (slope <= POLICY_EPS && i < ne)
				level = ev[i].at;
			break;
		}
		if (ev[i].is_hi) {
			base += it[ev[i].i].hi;
			slope -= it[ev[i].i].w;
		} else {
			base -= it[ev[i].i].lo;
			slope += it[ev[i].i].w;
		}
		level = ev[i].at;
	}
	for (i = 0; i < n; i++) {
		f = it[i].w * level;
		it[i].out = f < it[i].lo ? it[i].lo : f > it[i].hi ?
		    it[i].hi : f;
		it[i].raised = f < it[i].lo - POLICY_EPS;
	}
	return level;
}

/* Smallest k with cum[k] > x, or nusable. */
static unsigned int
policy_cores_above(const struct pvm *p, double x)
{
	unsigned int	k;

	for (k = 0; k < p->nusable && p->cum[k] <= x + POLICY_EPS; k++)
		;
	return k;
}

/* Smallest k whose cores hold x vCPUs, or nusable. */
static unsigned int
policy_cores_for(const struct pvm *p, double x)
{
	unsigned int	k;

	for (k = 0; k < p->nusable && p->cum[k] < x - POLICY_EPS; k++)
		;
	return k;
}

/*
 * What the first k cores of a VM use, CPUs: their vCPUs times the share of
 * its preferred vCPUs that the VM keeps busy (run + delay) when it is held
 * below its vCPUs and saturated, else 1.  A barrier guest confined to 4
 * vCPUs keeps them 80% busy: 5 vCPUs use its share of 4 CPUs.
 */
static double
policy_use(const struct pvm *p, unsigned int k)
{
	return p->cum[k] * p->util;
}

/* Largest k whose cores use at most x. */
static unsigned int
policy_cores_within(const struct pvm *p, double x)
{
	unsigned int	k = 0;

	while (k < p->nusable && policy_use(p, k + 1) <= x + POLICY_EPS)
		k++;
	return k;
}

/* The share in fractional cores, for the dead band. */
static double
policy_share_cores(const struct pvm *p)
{
	return p->base_k + p->frac;
}

/*
 * What k cores of a steered VM cost the capacity: the CPUs it would use
 * of them, at most its claim.
 */
static double
policy_cost(const struct pvm *p, unsigned int k)
{
	double	u = policy_use(p, k);

	return u < p->claim ? u : p->claim;
}

/* Whether one more core of cost extra still fits: half of it at least. */
static bool
policy_fits(double used, double extra, double cap)
{
	return extra <= POLICY_EPS || used + extra / 2 < cap - POLICY_EPS;
}

static int
policy_frac_cmp(const void *a, const void *b, void *arg)
{
	const struct pvm	*pv = arg;
	unsigned int		 x = *(const unsigned int *)a;
	unsigned int		 y = *(const unsigned int *)b;

	if (pv[x].frac != pv[y].frac)
		return pv[x].frac > pv[y].frac ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * No contention: the cores each steered VM would use within its claim
 * and its weighted part of the capacity the claims leave (room_k), for a
 * VM that may not grow to all its vCPUs (policy_release).
 */
static void
policy_room(const struct policy_vm *vms, struct pvm *pv,
    const struct pdom *d, const unsigned int *idx)
{
	unsigned int	j;
	double		room = d->free, w = 0;

	for (j = 0; j < d->nvm; j++)
		if (pv[idx[j]].kind == PVM_AUTO) {
			room -= pv[idx[j]].claim;
			w += vms[idx[j]].weight;
		}
	if (room < 0)
		room = 0;
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		p->room_k = policy_cores_within(p, p->claim +
		    room * vms[idx[j]].weight / w);
		if (p->room_k < p->lo_k)
			p->room_k = p->lo_k;
		if (p->room_k > p->hi_k)
			p->room_k = p->hi_k;
	}
}

/*
 * No contention: every steered VM gets all its cores, up to max-cores, and
 * the cores of its part of the room in case it may not (policy_room).
 */
static void
policy_all_cores(const struct policy_vm *vms, struct pvm *pv,
    const struct pdom *d, const unsigned int *idx)
{
	unsigned int	j;

	policy_room(vms, pv, d, idx);
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		p->share = p->claim;
		p->k = p->base_k = p->hi_k;
		p->frac = 0;
	}
}

/*
 * Count the VMs that do not follow (no agent, an agent that does not ack,
 * mode off) at most at their weighted fair share: one water-fill of R
 * (what fixed sets and unmeasured VMs leave) over every VM of the domain,
 * the steered at their claims and the others at their demand.  The host's
 * CPU weights hold a non-follower to that share while its neighbours are
 * busy, so counting it at its whole demand would hand the cooperating VMs'
 * share to it.  Each has the floor a steered VM has: one core, at most
 * what it uses; its share (fair, what enforce="cap" holds it to) is never
 * below one core.  Without that floor a host whose other load leaves less
 * than the steered VMs' floors gave it a share of 0, and a cap of almost
 * nothing, where a follower keeps a whole core.  Returns the CPUs counted
 * for them.
 */
static double
policy_count_rogues(const struct policy_vm *vms, struct pvm *pv,
    struct pdom *d, const unsigned int *idx, struct wf_item *it,
    struct wf_event *ev, double R)
{
	unsigned int	 j, na = 0;
	double		 level, f, sum = 0;

	if (R < 0)
		R = 0;
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind == PVM_AUTO)
			it[na++] = (struct wf_item){ .w = vms[idx[j]].weight,
			    .lo = policy_cost(p, p->lo_k), .hi = p->claim };
		else if (p->kind == PVM_UNSTEERED || p->kind == PVM_OFF)
			it[na++] = (struct wf_item){ .w = vms[idx[j]].weight,
			    .lo = p->counted < p->cum[1] ? p->counted :
			    p->cum[1], .hi = p->counted };
	}
	level = policy_waterfill(it, na, R, ev);
	for (j = 0, na = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO && p->kind != PVM_UNSTEERED &&
		    p->kind != PVM_OFF)
			continue;
		if (p->kind != PVM_AUTO) {
			p->counted = it[na].out;
			f = vms[idx[j]].weight * level;
			if (f < p->cum[1])
				f = p->cum[1];
			p->fair = f < p->nonline ? f : p->nonline;
			p->at_share = p->counted < it[na].hi - POLICY_EPS;
			sum += p->counted;
		}
		na++;
	}
	d->rogue_cpus = sum;
	return sum;
}

/*
 * Hints may raise a claim only where the host's own figures back
 * them: the VM keeps its preferred vCPUs busy (run + delay), so its
 * demand may be hidden by its confinement.  Then up to the share it
 * would get if it claimed all its vCPUs, computed without hints: a guest
 * that claims more runnable tasks than it has gets no more than a busy
 * honest one, and an idle one gets nothing.
 */
static void
policy_hints(const struct policy_vm *vms, struct pvm *pv, struct pdom *d,
    const unsigned int *idx, struct wf_item *it, struct wf_event *ev)
{
	unsigned int	 j, na;

	for (j = 0, na = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		it[na++] = (struct wf_item){ .w = vms[idx[j]].weight,
		    .lo = p->cum[p->lo_k], .hi = p->cum[p->hi_k] };
	}
	policy_waterfill(it, na, d->free, ev);
	for (j = 0, na = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];
		double		 h = vms[idx[j]].hint_runnable;

		if (p->kind != PVM_AUTO)
			continue;
		p->entitle = it[na++].out;
		if (p->use < POLICY_BUSY * p->cur_vcpus - POLICY_EPS)
			continue;
		if (h > p->entitle)
			h = p->entitle;
		if (h > p->claim + POLICY_EPS) {
			p->claim = h;
			if (p->want < h)
				p->want = h;
			p->hint_raised = true;
		}
	}
}

/*
 * Phase "claims" of one domain: each steered VM's bounds and claim, what
 * the others count at (non-followers at most at their share), the hints,
 * and whether the domain is contended.  idx lists its VMs; it and ev are
 * scratch of nvm.
 */
static void
policy_claims(const struct policy_config *cfg, const struct policy_vm *vms,
    struct pvm *pv, struct pdom *d, const unsigned int *idx,
    struct wf_item *it, struct wf_event *ev)
{
	unsigned int	 j, i;
	double		 notsteered = 0, all, hr;
	bool		 hinted = false;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_vm	*vm = &vms[idx[j]];
		struct pvm		*p = &pv[idx[j]];

		switch (p->kind) {
		case PVM_AUTO:
			p->lo_k = vm->min_cores > 1 ? vm->min_cores : 1;
			if (p->lo_k > p->nusable)
				p->lo_k = p->nusable;
			p->hi_k = vm->max_cores != 0 &&
			    vm->max_cores < p->nusable ? vm->max_cores :
			    p->nusable;
			if (p->hi_k < p->lo_k)
				p->hi_k = p->lo_k;
			all = policy_use(p, p->hi_k);
			/*
			 * A VM that is not saturated claims its demand plus
			 * headroom (at most its demand again), but at least
			 * the whole cores that keep it below saturation: less
			 * would make it saturated at once and claim
			 * everything back next period.  Within its floor it
			 * keeps those cores anyway: no raise there.
			 */
			if (p->saturated) {
				p->claim = policy_use(p, p->nusable);
				p->want_k = p->nusable;
			} else {
				hr = cfg->headroom < p->demand ?
				    cfg->headroom : p->demand;
				p->claim = p->demand + hr;
				i = policy_cores_above(p, p->demand /
				    cfg->saturation);
				if (i > p->lo_k && policy_use(p, i) > p->claim)
					p->claim = policy_use(p, i);
			}
			/*
			 * A VM whose demand fell again keeps the cores of
			 * its peak, uncounted, for POLICY_PEAK_MS: demand
			 * that changes every few seconds finds its vCPUs
			 * there (peak_keep, see prep).  Keeps, never adds:
			 * at most the cores it has.
			 */
			p->want_k = policy_cores_for(p, p->claim);
			i = policy_cores_for(p, p->peak);
			if (i > p->cur_k)
				i = p->cur_k;
			if (!p->saturated && i > p->want_k) {
				p->fell = true;
				if (p->peak_keep)
					p->want_k = i;
			}
			if (p->want_k > p->hi_k)
				p->want_k = p->hi_k;
			p->max_capped = p->claim > all + POLICY_EPS &&
			    p->hi_k < p->nusable;
			if (p->claim > all)
				p->claim = all;
			/*
			 * Headroom a VM leaves idle costs nothing: one that
			 * does not keep its vCPUs busy counts at its demand
			 * in the fill, and gets its headroom on top when
			 * that is met.  Whether the domain is contended, and
			 * whether the cores meet every claim, still count it.
			 */
			p->want = p->claim;
			if (!p->saturated && p->use < POLICY_BUSY *
			    p->cur_vcpus - POLICY_EPS && p->demand < p->claim)
				p->claim = p->demand;
			if (vm->hint_runnable >= 0)
				hinted = true;
			break;
		case PVM_FIXED:
		case PVM_HOLD:
			notsteered += p->counted;
			break;
		case PVM_UNSTEERED:
		case PVM_OFF:
			d->nrogue++;
			break;
		}
	}
	if (d->nrogue > 0)
		notsteered += policy_count_rogues(vms, pv, d, idx, it, ev,
		    d->capacity - notsteered);
	d->free = d->capacity - notsteered;
	if (d->free < 0)
		d->free = 0;
	if (hinted)
		policy_hints(vms, pv, d, idx, it, ev);

	d->claims = notsteered;
	for (j = 0; j < d->nvm; j++)
		if (pv[idx[j]].kind == PVM_AUTO)
			d->claims += pv[idx[j]].want;
	d->contended = d->claims > d->capacity + POLICY_EPS;
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind == PVM_AUTO)
			p->idle_floor = p->claim < p->cum[p->lo_k] -
			    POLICY_EPS;
	}
}


/*
 * Phase "targets" of one domain: without contention every steered VM
 * gets all its cores; with it, the weighted water-fill of what the others
 * leave, rounded to whole cores (floors first, then the largest
 * remainders while half a core still fits).  cand is scratch of nvm.
 */
static void
policy_targets(const struct policy_vm *vms, struct pvm *pv, struct pdom *d,
    const unsigned int *idx, struct wf_item *it, struct wf_event *ev,
    unsigned int *cand)
{
	unsigned int	 j, na, nc = 0, i;
	double		 used;
	bool		 short_claim;

	if (!d->contended) {
		policy_all_cores(vms, pv, d, idx);
		return;
	}

	/* Floors count at what they would use: lo is their cost. */
	for (j = 0, na = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		it[na++] = (struct wf_item){ .w = vms[idx[j]].weight,
		    .lo = policy_cost(p, p->lo_k), .hi = p->claim };
	}
	policy_waterfill(it, na, d->free, ev);

	/* Whole cores: floors first, then the remainders largest first. */
	used = 0;
	for (j = 0, na = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		p->share = it[na].out;
		p->at_lo = it[na].raised;
		na++;

		p->base_k = policy_cores_within(p, p->share);
		if (p->base_k < p->lo_k)
			p->base_k = p->lo_k;
		/*
		 * Confined, not below the cores that hold its demand under
		 * the censor level, if it has them and they cost no more
		 * than its share: fewer would make it look short and claim
		 * everything back next period.
		 */
		i = policy_cores_above(p, p->demand / POLICY_CENSOR);
		if (p->cur_vcpus < p->nonline && i > p->base_k &&
		    i <= p->cur_k &&
		    policy_cost(p, i) <= p->share + POLICY_EPS)
			p->base_k = i;
		if (p->base_k > p->hi_k)
			p->base_k = p->hi_k;
		p->k = p->base_k;
		p->frac = 0;
		if (p->k < p->nusable)
			p->frac = (p->share - policy_use(p, p->k)) /
			    (policy_use(p, p->k + 1) - policy_use(p, p->k));
		if (p->frac < 0)
			p->frac = 0;
		used += policy_cost(p, p->k);
		if (p->k < p->hi_k && p->frac > POLICY_EPS)
			cand[nc++] = idx[j];
	}
	/* Shares sum to R unless the floors alone exceed it. */
	d->over = used > d->free + POLICY_EPS;
	qsort_r(cand, nc, sizeof(*cand), policy_frac_cmp, pv);
	for (j = 0; j < nc; j++) {
		struct pvm	*p = &pv[cand[j]];
		double		 extra = policy_cost(p, p->k + 1) -
		    policy_cost(p, p->k);

		if (policy_fits(used, extra, d->free)) {
			p->k++;
			used += extra;
		}
	}

	/*
	 * Every claim met in whole cores: no contention after all.  A VM
	 * whose claim is met gets its headroom on top, uncounted: the
	 * vCPUs it does not use cost nothing, and if it does use them the
	 * next period counts it.
	 */
	short_claim = false;
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[idx[j]];

		if (p->kind != PVM_AUTO)
			continue;
		if (policy_use(p, p->k) < p->want - POLICY_EPS)
			short_claim = true;
		if (policy_cost(p, p->k) >= p->claim - POLICY_EPS &&
		    p->k < p->want_k) {
			p->k = p->want_k;
			p->headroom = true;
		}
	}
	if (!short_claim && !d->over) {
		d->contended = false;
		d->rounded = true;
		policy_all_cores(vms, pv, d, idx);
	}
}

/*
 * Whether a VM's growth is its own demand rising, not its share moving a
 * little: its claim was met for POLICY_MET_PERIODS decisions in a row
 * (it had more cores than it used: kept from a peak, or its headroom),
 * and now it is saturated at them.  Its share was its claim; the dead
 * band does not hold such a growth.  Not where demand jitters, nor where
 * grow-after asks for more than one period: there every growth waits.
 */
static bool
policy_claim_rose(const struct policy_state *st, const struct pvm *p)
{
	return p->wait < 2 && st->init && p->saturated &&
	    st->met_n >= POLICY_MET_PERIODS;
}

/*
 * Damp one steered VM of a contended domain: decide between its target k
 * and its current cores.  Shrinks that only the dead band would hold are
 * marked and settled afterwards against the domain's capacity.
 */
static void
policy_damp(const struct policy_config *cfg, const struct policy_vm *vm,
    const struct policy_host *host, struct pvm *p)
{
	const struct policy_state *st = vm->state;
	double		 sc = policy_share_cores(p);
	bool		 shrink_waits;

	p->reason = POLICY_R_FAIR_SHARE;
	if (p->k == p->cur_k)
		return;
	/* Out of the operator's bounds: move at once. */
	if (p->cur_k < p->lo_k || p->cur_k > p->hi_k)
		return;
	if (p->k > p->cur_k) {
		if (sc - p->cur_k < cfg->dead_band - POLICY_EPS &&
		    !policy_claim_rose(st, p)) {
			/* Settled afterwards: it grows where there is room. */
			p->db_grow = p->saturated ? p->k : 0;
			p->k = p->cur_k;
			p->reason = POLICY_R_HOLD_DEAD_BAND;
		} else {
			/*
			 * grow-after: the share must want the growth that
			 * many periods in a row, and it grows to the fewest
			 * cores any of them wanted.
			 */
			p->grow_wanted = st->grow_wanted + 1;
			p->grow_k = st->grow_wanted != 0 &&
			    st->grow_k < p->k ? st->grow_k : p->k;
			if (p->grow_wanted < p->wait) {
				p->k = p->cur_k;
				p->reason = POLICY_R_HOLD_GROW;
				return;
			}
			p->k = p->grow_k;
			p->grow_wanted = 0;
			if (p->saturated)
				p->reason = POLICY_R_GROW;
		}
		return;
	}
	/*
	 * In a jittery domain a shrink that the share makes (its claim not
	 * met at the new cores) waits two periods of a smaller share in a
	 * row too, counted through the holds below, to the most cores of
	 * them: a neighbour's demand that rises for a period moves nobody.
	 * So does one in a domain where a VM surged (policy_surge).  A VM
	 * whose own claim fell shrinks at once.
	 */
	shrink_waits = (p->wait >= 2 || p->surge) && (p->saturated ||
	    policy_cost(p, p->k) < p->claim - POLICY_EPS);
	if (shrink_waits) {
		p->shrink_wanted = st->shrink_wanted + 1;
		p->shrink_k = st->shrink_wanted != 0 &&
		    st->shrink_k > p->k && st->shrink_k < p->cur_k ?
		    st->shrink_k : p->k;
	}
	/* A neighbour's rise that falls back as a shrink lands: none. */
	if (p->brief && (p->saturated ||
	    policy_cost(p, p->k) < p->claim - POLICY_EPS)) {
		p->reason = POLICY_R_HOLD_SHRINK;
		p->brief_held = true;
		p->k = p->cur_k;
		return;
	}
	if (p->contended < cfg->shrink_after) {
		p->reason = POLICY_R_HOLD_PERSIST;
		p->k = p->cur_k;
		return;
	}
	if (st->changes != 0 &&
	    policy_lately(host->now_ms, st->last_change_ms, cfg->dwell_ms)) {
		p->reason = POLICY_R_HOLD_DWELL;
		p->k = p->cur_k;
		return;
	}
	if (shrink_waits) {
		if (p->shrink_wanted < 2) {
			p->reason = POLICY_R_HOLD_SHRINK;
			p->k = p->cur_k;
			return;
		}
		p->k = p->shrink_k;
		p->shrink_wanted = 0;
	}
	if (p->cur_k - sc < cfg->dead_band - POLICY_EPS)
		p->db_shrink = true;
}

/* The why of a fair-share decision. */
static void
policy_why_share(const struct pvm *p, const struct pdom *d, unsigned int w,
    const struct policy_decision *o, char *s, size_t len)
{
	if (p->idle_floor && p->k == p->lo_k)
		snprintf(s, len, "idle: 1 core kept (vCPU 0's), "
		    "counted at %.2f of %.2f CPUs -> %u vCPUs%s",
		    p->claim, d->free, o->vcpus,
		    d->over ? "; domain over capacity" : "");
	else if (!p->saturated &&
	    policy_cost(p, p->k) >= p->claim - POLICY_EPS)
		snprintf(s, len, "%sclaim %.2f of %.2f CPUs met%s -> "
		    "%u core%s, %u vCPUs", p->idle_floor ? "idle: " :
		    "", p->claim, d->free, p->headroom ?
		    ", headroom on top uncounted" : "", o->cores,
		    o->cores == 1 ? "" : "s", o->vcpus);
	else if (p->at_lo && p->lo_k == 1)
		snprintf(s, len, "fair share %.2f of %.2f CPUs at "
		    "weight %u, below one core -> 1 core (vCPU 0's), "
		    "%u vCPUs%s", p->share, d->free, w, o->vcpus,
		    d->over ? "; domain over capacity" : "");
	else
		snprintf(s, len, "fair share %.2f of %.2f CPUs at "
		    "weight %u -> %u core%s, %u vCPUs", p->share,
		    d->free, w, o->cores, o->cores == 1 ? "" : "s",
		    o->vcpus);
}

/* Write the one-line explanation of a decision. */
static void
policy_why(const struct policy_config *cfg, const struct policy_vm *vm,
    const struct pvm *p, const struct pdom *d, const struct policy_host *host,
    struct policy_decision *o)
{
	char		*s = o->why, cl[48];
	size_t		 len = sizeof(o->why), off;
	unsigned int	 w = vm->weight;

	switch (o->reason) {
	case POLICY_R_NO_CONTENTION:
		snprintf(s, len, "no contention: claims %.2f of %.2f CPUs%s "
		    "-> all %u vCPUs", d->claims, d->capacity, d->rounded ?
		    ", within half a core" : "", o->vcpus);
		break;
	case POLICY_R_HOLD_REGROW:
		if (p->regrow_est >= 0)
			snprintf(cl, sizeof(cl), ", where it would use %.2f "
			    "CPUs", p->regrow_est);
		else
			cl[0] = '\0';
		snprintf(s, len, "no contention: claims %.2f of %.2f CPUs, "
		    "but not grown to %s %u vCPUs: shrunk from %u cores "
		    "%llu s ago, soon after it got them (held %llu s)%s "
		    "-> %u vCPUs %s", d->claims, d->capacity,
		    p->hi_k < p->nusable ? "max-cores'" : "all",
		    p->cum[p->hi_k], vm->state->regrow_k,
		    (unsigned long long)
		    (host->now_ms - vm->state->regrow_ms) / 1000,
		    (unsigned long long)vm->state->regrow_hold / 1000, cl,
		    o->vcpus, p->room_grown ? "grown into room, its share of "
		    "it, as tasks wait" : "kept");
		break;
	case POLICY_R_MAX_CORES:
		if (!d->contended)
			snprintf(s, len, "no contention, capped at max-cores "
			    "%u -> %u vCPUs", vm->max_cores, o->vcpus);
		else
			snprintf(s, len, "fair share %.2f of %.2f CPUs at "
			    "weight %u, capped at max-cores %u -> %u vCPUs",
			    p->share, d->free, w, vm->max_cores, o->vcpus);
		break;
	case POLICY_R_FAIR_SHARE:
		policy_why_share(p, d, w, o, s, len);
		break;
	case POLICY_R_MIN_CORES:
		if (p->idle_floor)
			snprintf(s, len, "idle: min-cores %u kept, counted at "
			    "%.2f of %.2f CPUs -> %u vCPUs%s", vm->min_cores,
			    p->claim, d->free, o->vcpus,
			    d->over ? "; domain over capacity" : "");
		else
			snprintf(s, len, "fair share %.2f of %.2f CPUs at "
			    "weight %u raised to min-cores %u -> %u vCPUs%s",
			    p->share,
			    d->free, w, vm->min_cores, o->vcpus,
			    d->over ? "; domain over capacity" : "");
		break;
	case POLICY_R_GROW:
		snprintf(s, len, "saturated (%.2f CPUs busy on %u vCPUs), "
		    "fair share %.2f of %.2f CPUs at weight %u -> grown to "
		    "%u cores, %u vCPUs", vm->run_cpus, p->cur_vcpus, p->share,
		    d->free, w, o->cores, o->vcpus);
		break;
	case POLICY_R_SPARE:
		snprintf(s, len, "saturated (%.2f CPUs busy on %u vCPUs, %.1f "
		    "tasks runnable), %.2f of %.2f CPUs idle on average: a "
		    "core beyond fair share %.2f at weight %u -> %u cores, %u "
		    "vCPUs, counted at its share", p->use, p->cur_vcpus,
		    vm->hint_runnable, d->idle, d->capacity, p->share, w,
		    o->cores, o->vcpus);
		break;
	case POLICY_R_OVERCOMMIT:
		snprintf(s, len, "busy in bursts (%.2f CPUs busy on %u vCPUs, "
		    "%.1f tasks runnable): %.1fx fair share %.2f of %.2f CPUs "
		    "at weight %u in vCPUs -> %u cores, %u vCPUs, counted at "
		    "its share", p->use, p->cur_vcpus, vm->hint_runnable,
		    POLICY_OVER, p->share, d->free, w, o->cores, o->vcpus);
		break;
	case POLICY_R_HOLD_DEAD_BAND:
		snprintf(s, len, "fair share %.2f CPUs (%.2f cores) within "
		    "dead band %.2f of %u cores: hold", p->share,
		    policy_share_cores(p), cfg->dead_band, p->cur_k);
		off = strlen(s);
		if (p->regrow_held && off < len)
			snprintf(s + off, len - off, "; not grown into room "
			    "to %u cores: shrunk from %u %llu s ago, soon "
			    "after it got them (held %llu s)", p->db_grow,
			    vm->state->regrow_k, (unsigned long long)
			    (host->now_ms - vm->state->regrow_ms) / 1000,
			    (unsigned long long)vm->state->regrow_hold / 1000);
		break;
	case POLICY_R_HOLD_DWELL:
		snprintf(s, len, "shrink to fair share %.2f CPUs deferred: "
		    "last change %llu ms ago, dwell %llu ms", p->share,
		    (unsigned long long)(host->now_ms -
		    vm->state->last_change_ms),
		    (unsigned long long)cfg->dwell_ms);
		break;
	case POLICY_R_HOLD_PERSIST:
		snprintf(s, len, "shrink to fair share %.2f CPUs deferred: "
		    "contended %u of %u periods", p->share, p->contended,
		    cfg->shrink_after);
		break;
	case POLICY_R_HOLD_GROW:
		snprintf(s, len, "growth to fair share %.2f CPUs (%u cores) "
		    "deferred: larger share %u of %u periods -> %u vCPUs",
		    p->share, p->grow_k, p->grow_wanted, p->wait,
		    o->vcpus);
		break;
	case POLICY_R_HOLD_SHRINK:
		if (p->brief_held) {
			char	name[64];
			unsigned int	b = d->brief[0] == vm;
			const struct policy_state *bs = d->brief[b]->state;

			policy_vm_name(name, sizeof(name), d->brief[b], "a VM");
			snprintf(s, len, "shrink to fair share %.2f CPUs "
			    "deferred: %s's use rose %u period%s ago, and "
			    "its last rise fell back after %u periods, %llu s "
			    "ago -> %u vCPUs", p->share, name, d->brief_n[b],
			    d->brief_n[b] == 1 ? "" : "s", bs->rise_last,
			    (unsigned long long)(host->now_ms - bs->rise_ms) /
			    1000, o->vcpus);
		} else if (d->surge != NULL && !d->jittery) {
			char	name[64];

			policy_vm_name(name, sizeof(name), d->surge, "a VM");
			snprintf(s, len, "shrink to fair share %.2f CPUs (%u "
			    "cores) deferred: smaller share %u of 2 periods, "
			    "%s surged past all it used in the last %u s -> "
			    "%u vCPUs", p->share, p->shrink_k,
			    p->shrink_wanted, name, POLICY_PEAK_MS / 1000,
			    o->vcpus);
		} else
			snprintf(s, len, "shrink to fair share %.2f CPUs (%u "
			    "cores) deferred: smaller share %u of %u periods, "
			    "a VM's demand came back within a period lately "
			    "-> %u vCPUs", p->share, p->shrink_k,
			    p->shrink_wanted, p->wait, o->vcpus);
		break;
	case POLICY_R_UNSTEERED:
	case POLICY_R_MODE_OFF:
		if (p->at_share)
			snprintf(s, len, "%s: all %u vCPUs, counted at its "
			    "weighted share %.2f of %.2f CPUs (demand %.2f)",
			    o->reason == POLICY_R_MODE_OFF ? "mode off" :
			    "no agent following", o->vcpus, p->counted,
			    d->capacity, p->demand);
		else
			snprintf(s, len, "%s: all %u vCPUs, counted at demand "
			    "%.2f CPUs (share %.2f)", o->reason ==
			    POLICY_R_MODE_OFF ? "mode off" :
			    "no agent following", o->vcpus, p->counted,
			    p->fair);
		break;
	case POLICY_R_UNMEASURED:
		snprintf(s, len, "no sample yet: keeps its %u vCPUs, counted "
		    "at 0 CPUs until measured", o->vcpus);
		break;
	case POLICY_R_MODE_FIXED:
		if (cpuset_format(&o->preferred, cl, sizeof(cl)) < 0)
			snprintf(cl, sizeof(cl), "(%u vCPUs)", o->vcpus);
		snprintf(s, len, "mode fixed: cpus %s%s, counted at %.2f CPUs",
		    cl, p->nfixed == 0 ? " (fixed cpus offline: all)" : "",
		    p->counted);
		break;
	}
	off = strlen(s);
	if (o->reason == POLICY_R_NO_CONTENTION && p->idle_floor && off < len)
		snprintf(s + off, len - off, "; idle, counted at %.2f CPUs",
		    p->claim);
	off = strlen(s);
	if (p->kind == PVM_AUTO && d->contended && d->nrogue > 0 && off < len)
		snprintf(s + off, len - off, "; %u VM%s without an agent "
		    "count%s %.2f CPUs at %s share", d->nrogue,
		    d->nrogue == 1 ? "" : "s", d->nrogue == 1 ? "s" : "",
		    d->rogue_cpus, d->nrogue == 1 ? "its" : "their");
	off = strlen(s);
	if (p->hint_raised && off < len)
		snprintf(s + off, len - off, "; hint %.0f runnable raised "
		    "claim to %.2f", vm->hint_runnable, p->claim);
}

/* Fill the preferred set of a steered VM from its first k cores. */
static void
policy_fill_cores(const struct policy_vm *vm, const struct pvm *p,
    struct cpuset *out)
{
	unsigned int	k, w;

	cpuset_zero(out);
	for (k = 0; k < p->k; k++)
		for (w = 0; w < p->nw; w++)
			out->bits[w] |= vm->cores[p->order[k]].bits[w] &
			    p->on[w];
}

/* Set out to the online vCPUs. */
static void
policy_fill_online(const struct pvm *p, struct cpuset *out)
{
	cpuset_zero(out);
	memcpy(out->bits, p->on, p->nw * sizeof(p->on[0]));
}

/* Cores of the VM that hold a vCPU of set. */
static unsigned int
policy_count_cores(const struct policy_vm *vm, const struct pvm *p,
    const struct cpuset *set)
{
	unsigned int	k, w, n = 0;

	for (k = 0; k < p->nusable; k++)
		for (w = 0; w < p->nw; w++)
			if (vm->cores[p->order[k]].bits[w] & set->bits[w]) {
				n++;
				break;
			}
	return n;
}

/*
 * Whether room must not grow a VM to k cores: it grew into room, was shrunk
 * from regrow_k cores (k or fewer) within POLICY_NOGAIN_MS of that growth,
 * and the shrink was less than regrow_hold ago: POLICY_REGROW_MS,
 * doubled up to POLICY_REGROW_MAX_MS each time the growth after the hold
 * fails again.  Room that comes and goes with the others' barrier phases
 * or bursts would otherwise grow and shrink it every few periods (and
 * twice a minute with a fixed one-minute hold); growth by share (beyond
 * the dead band) is not held, nor is a VM that is short of vCPUs
 * released by no contention.
 */
static bool
policy_regrow_held(const struct policy_state *st, unsigned int k,
    uint64_t now_ms)
{
	return st->regrow_k != 0 && k >= st->regrow_k &&
	    policy_lately(now_ms, st->regrow_ms, st->regrow_hold);
}

/*
 * Whether a confined VM has tasks waiting for its vCPUs: its guest reports
 * more runnable tasks than it keeps busy (run + delay), or without a hint,
 * it keeps most of its vCPUs busy.  And only if it keeps them busier than
 * the util floor, where what more vCPUs would cost is known.
 */
static bool
policy_queued(const struct policy_vm *vm, const struct pvm *p)
{
	if (p->use <= POLICY_UTIL_MIN * p->cur_vcpus + POLICY_EPS)
		return false;
	if (vm->hint_runnable >= 0)
		return vm->hint_runnable > p->use + POLICY_GAIN;
	return p->use >= POLICY_BUSY * p->cur_vcpus - POLICY_EPS;
}

/*
 * A steered VM of a domain without contention gets all its cores (k),
 * grown into room the others leave.  Not if that growth did not last
 * (policy_regrow_held) and it is not short now: it keeps its cores, or
 * the cores of its claim and headroom if more, or with tasks waiting
 * (policy_queued) the cores of its part of the room (policy_room), held
 * below the size it failed at.  "No contention" seen while it is
 * confined is censored (a barrier guest held to 5 of 8 vCPUs keeps 74%
 * of them busy, too few to count as short, and shows the demand of 5);
 * released to all, it shows its demand at 8 and contention again.
 * With a neighbour whose demand bursts every 3 s, three such guests
 * went 8 -> 4 -> 5 -> 8 every 6 s (42 changes/min).
 */
static void
policy_release(const struct policy_vm *vm, struct pvm *p,
    const struct pdom *d, uint64_t now_ms)
{
	const struct policy_state *st = vm->state;

	if (p->k <= p->cur_k)
		return;
	if (p->saturated || d->regrow_free ||
	    !policy_regrow_held(st, p->k, now_ms)) {
		p->room_grown = true;
		return;
	}
	p->k = p->want_k > p->cur_k ? p->want_k : p->cur_k;
	if (p->room_k > p->k && policy_queued(vm, p))
		p->k = p->room_k;
	if (p->k >= st->regrow_k)
		p->k = st->regrow_k - 1 > p->cur_k ? st->regrow_k - 1 :
		    p->cur_k;
	p->room_grown = p->k > p->cur_k && p->k > p->want_k;
	p->regrow_held = true;
	p->reason = POLICY_R_HOLD_REGROW;
}

/*
 * Whether releasing a domain without contention brings contention back:
 * each VM that policy_release() would hold counts at what it would use
 * back at the cores it was shrunk from, its use now scaled as its use
 * fell with that shrink (a barrier guest used 5.07 CPUs at 8 vCPUs and
 * 3.70 at 5: at 3.64 now, 4.99 at 8 again).  If that still fits the
 * capacity, the holds are lifted (regrow_free): its demand fell with its
 * work, not with its vCPUs.  Not sampled since the shrink: held.
 */
static void
policy_regrow_fits(struct pwork *w, struct pdom *d)
{
	const struct policy_vm	*vms = w->vms;
	struct pvm		*pv = w->pv;
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j;
	double			 sum = d->claims;
	bool			 held = false;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_state *st = vms[di[j]].state;
		struct pvm	*p = &pv[di[j]];
		double		 est, now;

		p->regrow_est = -1;
		if (p->kind != PVM_AUTO || p->saturated ||
		    p->hi_k <= p->cur_k ||
		    !policy_regrow_held(st, p->hi_k, w->host->now_ms))
			continue;
		held = true;
		if (vms[di[j]].unmeasured || st->regrow_after <= POLICY_EPS) {
			sum = INFINITY;
			continue;
		}
		now = p->use > st->use_prev ? p->use : st->use_prev;
		est = st->regrow_use * now / st->regrow_after;
		if (est > p->cum[st->regrow_k])
			est = p->cum[st->regrow_k];
		p->regrow_est = est;
		if (est > p->want)
			sum += est - p->want;
	}
	d->regrow_free = held && sum <= d->capacity + POLICY_EPS;
}

/*
 * Whether a domain's demand jittered lately: the VMs whose sets stayed the
 * same over the last three samples used POLICY_JITTER CPUs less (or more)
 * in the middle one than in both the others, and the last is within that
 * of the first; then for POLICY_JITTER_MS.  One period's sample cannot
 * tell such a move from a lasting one; the next period's can.
 */
static void
policy_jitter(struct pwork *w, struct pdom *d)
{
	const struct policy_vm	*vms = w->vms;
	struct pvm		*pv = w->pv;
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j;
	double			 s0 = 0, s1 = 0, s2 = 0;
	bool			 now;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_state *st = vms[di[j]].state;
		const struct pvm	*p = &pv[di[j]];

		if (vms[di[j]].unmeasured || st->use_n < 2 ||
		    st->use_k1 != p->cur_k || st->use_k2 != p->cur_k)
			continue;
		s0 += p->use;
		s1 += st->use_prev;
		s2 += st->use_prev2;
	}
	now = fabs(s0 - s2) < POLICY_JITTER &&
	    fabs(s1 - s2) >= POLICY_JITTER - POLICY_EPS &&
	    fabs(s1 - s0) >= POLICY_JITTER - POLICY_EPS &&
	    (s1 - s2) * (s1 - s0) > 0;
	for (j = 0; j < d->nvm; j++) {
		const struct policy_state *st = vms[di[j]].state;

		pv[di[j]].jitter = now;
		if (now || (st->jitter_ms != 0 && policy_lately(
		    w->host->now_ms, st->jitter_ms, POLICY_JITTER_MS)))
			d->jittery = true;
	}
}

/*
 * Whether a steered VM of the domain surged: saturated at its cores and
 * using more than the most it used in the last POLICY_PEAK_MS (its peak,
 * kept that long after it last reached it).  Its claim is then all its
 * vCPUs, on one period's sample of a demand it has not shown lately: a
 * guest of weight 400 bursting 300 ms in 2 s, saturating the 2 vCPUs it
 * kept, took its share of 4.67 of 7 CPUs from two busy neighbours, which
 * shrank 3 -> 1 and grew back the next period (18 changes per VM per
 * minute, 0.92x no steering).  The others' shrinks by share then wait a
 * second period (policy_damp), so a burst of one period moves nobody
 * and a wake-up takes its share within two.  Demand that comes back to a
 * level it reached lately (a guest flipping every 5 s) is no surge: the
 * others give way at once, as before.  Returns the VM, or NULL.
 */
static const struct policy_vm *
policy_surge(const struct pwork *w, const struct pdom *d)
{
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_state *st = w->vms[di[j]].state;
		const struct pvm	*p = &w->pv[di[j]];

		if (p->kind == PVM_AUTO && st->init &&
		    !w->vms[di[j]].unmeasured && p->saturated &&
		    p->use > st->peak + POLICY_EPS)
			return &w->vms[di[j]];
	}
	return NULL;
}

/* Whether the dead band has held a VM's growth for a dwell time. */
static bool
policy_held_long(const struct policy_config *cfg,
    const struct policy_state *st, uint64_t now_ms)
{
	return st->dbhold_ms != 0 && now_ms >= st->dbhold_ms &&
	    !policy_lately(now_ms, st->dbhold_ms, cfg->dwell_ms);
}

/*
 * A steered VM whose guest runs more tasks at once than its confined vCPUs
 * and leaves them idle between: see POLICY_HOLES.
 */
static bool
policy_holey(const struct policy_vm *vm, const struct pvm *p)
{
	double	v = p->cur_vcpus;

	return p->cur_k < p->nusable && vm->hint_runnable >= v - POLICY_EPS &&
	    p->use >= POLICY_UTIL_MIN * v && p->use < POLICY_HOLES * v;
}

/* A VM that keeps its preferred vCPUs busy: see POLICY_SOLID. */
static bool
policy_solid(const struct pvm *p)
{
	return p->use >= POLICY_SOLID * p->cur_vcpus;
}

/*
 * Whether a VM's rises are brief: its last one fell back after
 * POLICY_BRIEF decisions, or its last two after POLICY_BRIEF + 1 each,
 * lately.
 */
static bool
policy_brief_rises(const struct policy_state *st, uint64_t now_ms)
{
	return (st->rise_last == POLICY_BRIEF ||
	    (st->rise_last == POLICY_BRIEF + 1 &&
	    st->rise_prev == st->rise_last)) &&
	    policy_lately(now_ms, st->rise_ms, POLICY_JITTER_MS);
}

/*
 * Follow each VM's rises of use (a CPU more than the period before) and
 * how long they last until its use falls back by a CPU, and count the
 * VMs of the domain whose rises are brief (policy_brief_rises) and whose
 * rise now has lasted no longer than their last: the others' shrinks by
 * share wait (policy_damp).  A shrink by share lands a period after the
 * rise; where the rise falls back a period after that, the shrunk VMs
 * spend the low phase shrunk and grow back a period late.  A rise of one
 * period is the jitter rule's.  Where rises last three periods, a
 * shrink pays for the period it costs only just: held after two such
 * rises in a row, not after one.  Longer rises are followed.
 */
static void
policy_brief(struct pwork *w, struct pdom *d)
{
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j;
	bool			 same;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_vm	*vm = &w->vms[di[j]];
		const struct policy_state *st = vm->state;
		struct pvm		*p = &w->pv[di[j]];

		p->rise_n = st->rise_n;
		p->rise_last = st->rise_last;
		p->rise_prev = st->rise_prev;
		if (vm->unmeasured || st->use_n == 0)
			continue;
		/* Its own demand: at the same cores in both periods. */
		same = st->use_k1 == p->cur_k;
		if (same &&
		    p->use >= st->use_prev + POLICY_JITTER - POLICY_EPS)
			p->rise_n = 1;
		else if (same && st->rise_n != 0 &&
		    p->use <= st->use_prev - POLICY_JITTER + POLICY_EPS) {
			p->rise_prev = st->rise_last;
			p->rise_last = st->rise_n;
			p->rise_n = 0;
			p->fell_back = true;
		} else if (st->rise_n != 0 && st->rise_n < UCHAR_MAX)
			p->rise_n++;
		if (p->kind == PVM_AUTO && p->rise_n != 0 &&
		    p->rise_n <= st->rise_last &&
		    policy_brief_rises(st, w->host->now_ms)) {
			if (d->nbrief < 2) {
				d->brief[d->nbrief] = vm;
				d->brief_n[d->nbrief] = p->rise_n;
			}
			d->nbrief++;
		}
	}
}

/*
 * Phase "overcommit" of a contended domain, after the others: a VM busy in
 * bursts gets more vCPUs than its share, counted at its share (see the
 * rules at the top).  A confined VM keeping its set busy stops a new one,
 * unless its rises are brief: it is busy in bursts of its own.
 */
static void
policy_overcommit(struct pwork *w, struct pdom *d)
{
	const struct policy_vm	*vms = w->vms;
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j, want, k;
	bool			 solid = false;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_state *st = vms[di[j]].state;
		const struct pvm	*p = &w->pv[di[j]];

		if (p->kind == PVM_AUTO && p->cur_k < p->nusable &&
		    policy_solid(p) && !policy_brief_rises(st, w->host->now_ms))
			solid = true;
	}
	for (j = 0; j < d->nvm; j++) {
		const struct policy_vm	*vm = &vms[di[j]];
		const struct policy_state *st = vm->state;
		struct pvm		*p = &w->pv[di[j]];

		if (p->kind != PVM_AUTO || vm->unmeasured)
			continue;
		if (!solid && policy_holey(vm, p))
			p->holey_n = st->holey_n < UCHAR_MAX ?
			    st->holey_n + 1 : UCHAR_MAX;
		want = policy_cores_for(p, round(POLICY_OVER * p->share));
		if (want > p->hi_k)
			want = p->hi_k;
		k = st->over_k;
		if (k != 0 && (vm->hint_runnable < p->share || policy_solid(p)))
			k = 0;
		if (k != 0 && (want + 1 < k || want > k + 1 || k > p->hi_k))
			k = want;
		else if (k == 0 && p->holey_n >= POLICY_HOLEY_PERIODS)
			k = want;
		/* Its share alone gives it a core more than that: none. */
		if (k == 0 || k + 1 < p->k || k < p->lo_k)
			continue;
		p->over_k = k;
		p->paid_k = p->k < k ? p->k : k;
		p->k = k;
		p->reason = POLICY_R_OVERCOMMIT;
	}
}

/*
 * The CPUs a domain left idle last period: its capacity less what its VMs
 * ran, a spare core's use not counted (it is not the others' use).
 */
static double
policy_idle(const struct pwork *w, const struct pdom *d)
{
	const unsigned int	*di = w->idx + d->first;
	double			 idle = d->capacity, r;
	unsigned int		 j;

	for (j = 0; j < d->nvm; j++) {
		const struct policy_vm	*vm = &w->vms[di[j]];
		const struct policy_state *st = vm->state;
		const struct pvm	*p = &w->pv[di[j]];

		r = vm->run_cpus < p->nonline ? vm->run_cpus : p->nonline;
		if (st->spare && st->cores >= 1 && st->cores <= p->nusable &&
		    r > p->cum[st->cores - 1])
			r = p->cum[st->cores - 1];
		idle -= r;
	}
	return idle > 0 ? idle : 0;
}

/*
 * Whether a VM may have a spare core (one beyond k): steered, confined
 * below it, not over-committed, saturated (or keeping its set busy), with
 * its guest reporting runnable tasks for the core's vCPUs.
 */
static bool
policy_spare_fits(const struct policy_vm *vm, const struct pvm *p)
{
	return p->kind == PVM_AUTO && !vm->unmeasured &&
	    p->reason != POLICY_R_OVERCOMMIT && p->k < p->hi_k &&
	    p->k < p->nusable && (p->saturated || policy_solid(p)) &&
	    vm->hint_runnable >= p->cum[p->k + 1] - 0.5;
}

/*
 * Phase "spare" of a domain, after the others: the CPUs it leaves idle on
 * average while contended buy saturated confined VMs a core each beyond
 * their share, counted at their share (see the rules at the top).  The
 * average lives in each VM's state (domains are found anew every period);
 * the domain's is the mean of its measured VMs'.  Not contended, it stands
 * still, and a VM held at its size keeps its spare core.
 */
static void
policy_spare(struct pwork *w, struct pdom *d)
{
	const struct policy_vm	*vms = w->vms;
	const unsigned int	*di = w->idx + d->first;
	unsigned int		*cand = w->cand;
	unsigned int		 j, nc = 0, nm = 0, pass;
	double			 idle, sum = 0, x, lo;
	double			 budget;

	/* Not contended, the average stands still: no figure needed. */
	idle = d->contended ? policy_idle(w, d) : 0;
	for (j = 0; j < d->nvm; j++) {
		const struct policy_vm	*vm = &vms[di[j]];
		const struct policy_state *st = vm->state;
		struct pvm		*p = &w->pv[di[j]];

		p->idle_mean = st->idle_mean;
		p->idle_last = st->idle_last;
		if (vm->unmeasured)
			continue;
		if (d->contended) {
			lo = idle < st->idle_last ? idle : st->idle_last;
			p->idle_mean += POLICY_SPARE_ALPHA * (lo - p->idle_mean);
			p->idle_last = idle;
		} else if (st->spare && p->kind == PVM_AUTO &&
		    p->k >= st->cores)
			p->spare = true;
		sum += p->idle_mean;
		nm++;
	}
	d->idle = nm != 0 ? sum / nm : 0;
	if (!d->contended)
		return;
	budget = d->idle;
	for (j = 0; j < d->nvm; j++)
		if (policy_spare_fits(&vms[di[j]], &w->pv[di[j]]))
			cand[nc++] = di[j];
	qsort_r(cand, nc, sizeof(*cand), policy_frac_cmp, w->pv);
	/* The holders keep theirs first, then the largest remainders. */
	for (pass = 0; pass < 2; pass++)
		for (j = 0; j < nc; j++) {
			const struct policy_state *st = vms[cand[j]].state;
			struct pvm	*p = &w->pv[cand[j]];

			if (st->spare != (pass == 0) ||
			    (pass == 1 && d->surge != NULL))
				continue;
			x = p->cum[p->k + 1] - p->cum[p->k];
			if (budget + POLICY_EPS < x * (pass == 0 ?
			    POLICY_SPARE_KEEP : POLICY_SPARE_NEW))
				continue;
			budget -= x;
			p->spare = true;
			/*
			 * Grown by its share now: it has the right to the
			 * core, from the next period.  Held at its size by
			 * the damping, it has the core unless its share's
			 * own cores reach that size.
			 */
			if (p->k > st->cores)
				continue;
			if (pass == 1 || p->k < st->cores)
				p->k++;
			else if (p->k <= p->target_k)
				continue;
			p->spare_k = 1;
			p->reason = POLICY_R_SPARE;
		}
}

/*
 * Phase "damp" of one domain: count its contention, hold the moves that
 * damping defers, settle the dead band against the capacity, and name
 * the reasons.
 */
static void
policy_settle(struct pwork *w, struct pdom *d)
{
	const struct policy_config *cfg = w->cfg;
	const struct policy_host *host = w->host;
	struct policy_vm	*vms = w->vms;
	struct pvm		*pv = w->pv;
	const unsigned int	*di = w->idx + d->first;
	unsigned int		 j;
	double			 total = 0;

	policy_jitter(w, d);
	d->surge = policy_surge(w, d);
	policy_brief(w, d);
	if (!d->contended)
		policy_regrow_fits(w, d);
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[di[j]];
		const struct policy_state *st = vms[di[j]].state;

		if (d->contended)
			p->contended = st->contended == UINT_MAX ?
			    UINT_MAX : st->contended + 1;
		if (p->kind != PVM_AUTO)
			continue;
		if (!d->contended) {
			p->reason = p->k < p->nusable ?
			    POLICY_R_MAX_CORES :
			    POLICY_R_NO_CONTENTION;
			policy_release(&vms[di[j]], p, d, host->now_ms);
			continue;
		}
		p->wait = d->jittery && cfg->grow_after < 2 ? 2 :
		    cfg->grow_after;
		p->surge = d->surge != NULL;
		/* A jittery domain's moves by share wait 2 periods anyway. */
		p->brief = !d->jittery && (d->nbrief > 1 ||
		    (d->nbrief == 1 && d->brief[0] != &vms[di[j]]));
		p->target_k = p->k;
		policy_damp(cfg, &vms[di[j]], host, p);
		total += policy_cost(p, p->k);
	}
	if (!d->contended) {
		policy_spare(w, d);
		return;
	}
	/* The dead band may hold a shrink only where there is room. */
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[di[j]];
		double		 extra;

		if (p->kind != PVM_AUTO || !p->db_shrink)
			continue;
		extra = policy_cost(p, p->cur_k) -
		    policy_cost(p, p->k);
		if (policy_fits(total, extra, d->free)) {
			p->k = p->cur_k;
			p->reason = POLICY_R_HOLD_DEAD_BAND;
			total += extra;
		}
	}
	/*
	 * A saturated VM whose growth the dead band held grows all
	 * the same where the capacity has room as the others stand:
	 * holding it would leave that room idle.  Room for all of the
	 * growth, where a held shrink needs room for half of it: the
	 * others' demand moving a little must not move it back and
	 * forth.  Once the dead band has held it for a dwell time, half
	 * of it is enough, as for whole cores: its share has stayed.
	 * Not back to a size it was just shrunk from after growing to it
	 * (policy_regrow_held): that growth did not last.
	 */
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[di[j]];
		double		 extra;

		if (p->kind != PVM_AUTO || p->db_grow == 0)
			continue;
		if (policy_regrow_held(vms[di[j]].state, p->db_grow,
		    host->now_ms)) {
			p->regrow_held = true;
			continue;
		}
		extra = policy_cost(p, p->db_grow) -
		    policy_cost(p, p->k);
		p->db_held = true;
		if (total + extra <= d->free + POLICY_EPS ||
		    (policy_held_long(cfg, vms[di[j]].state,
		    host->now_ms) && policy_fits(total, extra, d->free))) {
			p->k = p->db_grow;
			p->reason = POLICY_R_GROW;
			p->room_grown = true;
			total += extra;
		}
	}
	for (j = 0; j < d->nvm; j++) {
		struct pvm	*p = &pv[di[j]];

		if (p->kind != PVM_AUTO ||
		    p->reason != POLICY_R_FAIR_SHARE)
			continue;
		if ((p->at_lo || p->idle_floor) && p->lo_k > 1 &&
		    p->k == p->lo_k)
			p->reason = POLICY_R_MIN_CORES;
		else if (p->max_capped && p->k == p->hi_k)
			p->reason = POLICY_R_MAX_CORES;
	}
	policy_overcommit(w, d);
	policy_spare(w, d);
}

/* Phase "output": the decisions and the summary, from the work. */
static void
policy_output(struct pwork *wk, struct policy_decision *out,
    struct policy_summary *sum)
{
	const struct policy_config *cfg = wk->cfg;
	const struct policy_host *host = wk->host;
	struct policy_vm	*vms = wk->vms;
	struct pvm		*pv = wk->pv;
	struct pdom		*doms = wk->doms;
	size_t			 i, n = wk->n;

	for (i = 0; i < n; i++) {
		struct policy_vm	*vm = &vms[i];
		struct policy_state	*st = vm->state;
		struct policy_decision	*o = &out[i];
		struct pvm		*p = &pv[i];
		struct pdom		*d = &doms[p->domain];
		bool			 same;

		memset(o, 0, sizeof(*o));
		switch (p->kind) {
		case PVM_AUTO:
			policy_fill_cores(vm, p, &o->preferred);
			o->cores = p->k;
			o->vcpus = p->cum[p->k];
			o->share = p->share;
			break;
		case PVM_FIXED:
			if (p->nfixed == 0)
				policy_fill_online(p, &o->preferred);
			else {
				unsigned int	w;

				cpuset_zero(&o->preferred);
				for (w = 0; w < p->nw; w++)
					o->preferred.bits[w] =
					    vm->fixed.bits[w] & p->on[w];
			}
			p->reason = POLICY_R_MODE_FIXED;
			break;
		case PVM_HOLD:
			policy_fill_online(p, &o->preferred);
			if (st->init) {
				struct cpuset	kept;

				cpuset_and(&kept, &st->preferred,
				    &o->preferred);
				if (!cpuset_empty(&kept))
					o->preferred = kept;
			}
			p->reason = POLICY_R_UNMEASURED;
			break;
		case PVM_UNSTEERED:
		case PVM_OFF:
			policy_fill_online(p, &o->preferred);
			p->reason = p->kind == PVM_OFF ? POLICY_R_MODE_OFF :
			    POLICY_R_UNSTEERED;
			break;
		}
		if (p->kind != PVM_AUTO) {
			o->vcpus = cpuset_count(&o->preferred);
			o->cores = policy_count_cores(vm, p, &o->preferred);
			o->share = p->counted;
			p->claim = p->counted;
		}
		if (p->kind == PVM_AUTO)
			o->fair = d->contended ? p->share : p->cum[p->nusable];
		else if (p->kind == PVM_UNSTEERED || p->kind == PVM_OFF)
			o->fair = p->fair;
		else
			o->fair = p->counted;
		o->reason = p->reason;
		o->domain = p->domain;
		o->capacity = d->capacity;
		o->demand = p->demand;
		o->claim = p->claim;
		o->counted = p->kind != PVM_AUTO ? p->counted :
		    policy_cost(p, p->over_k != 0 ? p->paid_k :
		    p->k - p->spare_k);
		o->saturated = p->saturated;
		o->contended = d->contended;
		if (st->init)
			same = cpuset_equal(&st->preferred, &o->preferred);
		else {
			unsigned int	w;

			/* Before any target the guest uses all online. */
			same = true;
			for (w = 0; w < p->nw; w++)
				if (o->preferred.bits[w] != p->on[w])
					same = false;
		}
		o->changed = !same;
		policy_why(cfg, vm, p, d, host, o);

		sum->demand += p->demand;
		sum->vcpus += p->nonline;
		sum->preferred += o->vcpus;
	}
	for (i = 0; i < wk->ndom; i++) {
		sum->capacity += doms[i].capacity;
		if (doms[i].over)
			sum->over_capacity = true;
	}
	sum->ndomains = wk->ndom;
}

/*
 * Phase "commit": what the engine remembers of each VM.  Nothing before
 * it writes the caller's state, so an invalid input changes nothing.
 */
static void
policy_commit(struct pwork *w, const struct policy_decision *out)
{
	const struct policy_host *host = w->host;
	struct policy_vm	*vms = w->vms;
	struct pvm		*pv = w->pv;
	size_t			 i, n = w->n;

	for (i = 0; i < n; i++) {
		struct policy_state	*st = vms[i].state;

		/*
		 * Never sampled: nothing learnt.  Still "before any decision"
		 * (and adoptable) if it was; an adopted set is kept with its
		 * contention count.
		 */
		if (pv[i].kind == PVM_HOLD) {
			if (st->init) {
				st->preferred = out[i].preferred;
				st->cores = out[i].cores;
			}
			continue;
		}
		/*
		 * First decided with all its cores under contention: it has
		 * them as if grown into room just now.  Shrunk from them
		 * within a minute, no contention seen while it is confined
		 * does not hand them all back for a while.
		 */
		if (!st->init && pv[i].cur_k == pv[i].nusable &&
		    pv[i].contended != 0)
			st->grow_ms = host->now_ms;
		st->init = true;
		if (!vms[i].unmeasured)
			st->demand_unknown = false;
		st->demand = pv[i].demand;
		st->peak = pv[i].peak;
		if (pv[i].peak_new)
			st->peak_ms = host->now_ms;
		if (pv[i].fell && pv[i].fall_new) {
			st->fell_ms = host->now_ms;
			st->fell_keep = pv[i].peak_keep;
		}
		st->contended = pv[i].contended;
		st->grow_wanted = pv[i].grow_wanted;
		st->grow_k = pv[i].grow_k;
		st->shrink_wanted = pv[i].shrink_wanted;
		st->shrink_k = pv[i].shrink_k;
		st->holey_n = pv[i].holey_n;
		st->over_k = pv[i].over_k;
		st->idle_mean = pv[i].idle_mean;
		st->idle_last = pv[i].idle_last;
		st->spare = pv[i].spare;
		st->rise_n = pv[i].rise_n;
		st->rise_last = pv[i].rise_last;
		st->rise_prev = pv[i].rise_prev;
		if (pv[i].fell_back)
			st->rise_ms = host->now_ms;
		st->use_prev2 = st->use_prev;
		st->use_k2 = st->use_k1;
		st->use_prev = pv[i].use;
		st->use_k1 = pv[i].cur_k;
		st->use_n = vms[i].unmeasured ? 0 : st->use_n < 2 ?
		    st->use_n + 1 : 2;
		if (pv[i].jitter)
			st->jitter_ms = host->now_ms;
		if (pv[i].kind != PVM_AUTO || pv[i].saturated ||
		    policy_cost(&pv[i], pv[i].k) < pv[i].claim - POLICY_EPS)
			st->met_n = 0;
		else if (st->met_n < UCHAR_MAX)
			st->met_n++;
		if (!pv[i].db_held || out[i].changed)
			st->dbhold_ms = 0;
		else if (st->dbhold_ms == 0)
			st->dbhold_ms = host->now_ms;
		if (pv[i].nogain) {
			st->nogain_vcpus = st->grown_vcpus;
			st->nogain_demand = st->grown_demand;
			st->nogain_ms = host->now_ms;
		}
		st->grown_vcpus = 0;
		if (out[i].changed && out[i].cores < st->cores &&
		    st->grow_ms != 0 && policy_lately(host->now_ms,
		    st->grow_ms, POLICY_NOGAIN_MS)) {
			/*
			 * Again within a minute after its hold ran out:
			 * the room comes and goes for good, hold twice as
			 * long (up to POLICY_REGROW_MAX_MS).
			 */
			if (st->regrow_k != 0 && policy_lately(host->now_ms,
			    st->regrow_ms, st->regrow_hold + POLICY_NOGAIN_MS))
				st->regrow_hold = 2 * st->regrow_hold <
				    POLICY_REGROW_MAX_MS ? 2 *
				    st->regrow_hold : POLICY_REGROW_MAX_MS;
			else
				st->regrow_hold = POLICY_REGROW_MS;
			st->regrow_k = st->cores;
			st->regrow_ms = host->now_ms;
			st->regrow_use = pv[i].use;
			st->regrow_after = -1;
			st->grow_ms = 0;
		} else if (st->regrow_k != 0 && st->regrow_after < 0 &&
		    !vms[i].unmeasured)
			st->regrow_after = pv[i].use;
		if (out[i].changed && pv[i].room_grown)
			st->grow_ms = host->now_ms;
		if (out[i].changed) {
			st->changes++;
			st->last_change_ms = host->now_ms;
			if (pv[i].saturated && out[i].reason == POLICY_R_GROW) {
				st->grown_vcpus = pv[i].cur_vcpus;
				st->grown_demand = pv[i].use;
			}
		}
		st->preferred = out[i].preferred;
		st->cores = out[i].cores;
	}
}

/* A block being carved: base NULL while measuring. */
struct pcarve {
	char	*base;
	size_t	 off;
};

/* Carve n items of size bytes, aligned for any type; NULL if measuring. */
static void *
policy_carve(struct pcarve *c, size_t n, size_t size)
{
	size_t	 at = c->off;

	c->off += (n * size + 15) & ~(size_t)15;
	return c->base != NULL ? c->base + at : NULL;
}

/*
 * Size the work for these inputs and allocate it in one block (freed
 * with free(w)); each VM's vCPU words, core order and cumulative counts
 * come from pools in it.  maxcores: the most cores of one VM.
 */
static struct pwork *
policy_work_new(const struct policy_config *cfg,
    const struct policy_host *host, struct policy_vm *vms, size_t n,
    size_t ncores, size_t nwords, unsigned int maxcores)
{
	struct pwork	 w0, *w;
	struct pcarve	 c = { NULL, 0 };
	size_t		 i, hsize = 1;
	unsigned int	 npc = (unsigned int)cpuset_last(&host->pcpus) + 1;
	uint64_t	*onpool;
	unsigned int	*corepool, *cumpool;

	memset(&w0, 0, sizeof(w0));
	while (hsize < 2 * n)
		hsize *= 2;
	/*
	 * Two passes: measure, then carve for real.  The work struct comes
	 * first, so free(w) frees the block.
	 */
	for (i = 0; i < 2; i++) {
		c.off = 0;
		w = policy_carve(&c, 1, sizeof(*w));
		w0.pv = policy_carve(&c, n, sizeof(*w0.pv));
		w0.doms = policy_carve(&c, n, sizeof(*w0.doms));
		w0.idx = policy_carve(&c, n, sizeof(*w0.idx));
		w0.cand = policy_carve(&c, n, sizeof(*w0.cand));
		w0.it = policy_carve(&c, n, sizeof(*w0.it));
		w0.ev = policy_carve(&c, 2 * n, sizeof(*w0.ev));
		w0.usable = policy_carve(&c, maxcores, sizeof(*w0.usable));
		w0.pairs = policy_carve(&c, 2 * (size_t)maxcores,
		    sizeof(*w0.pairs));
		w0.grp = policy_carve(&c, 2 * (size_t)maxcores,
		    sizeof(*w0.grp));
		w0.parent = policy_carve(&c, npc, sizeof(*w0.parent));
		w0.domof = policy_carve(&c, npc, sizeof(*w0.domof));
		w0.used = policy_carve(&c, npc, sizeof(*w0.used));
		w0.seen = policy_carve(&c, hsize, sizeof(*w0.seen));
		onpool = policy_carve(&c, nwords, sizeof(*onpool));
		corepool = policy_carve(&c, ncores, sizeof(*corepool));
		cumpool = policy_carve(&c, ncores + n, sizeof(*cumpool));
		if (i == 0)
			c.base = xcalloc(1, c.off);
	}
	*w = w0;
	w->cfg = cfg;
	w->host = host;
	w->vms = vms;
	w->n = n;
	w->npc = npc;
	w->hsize = hsize;
	nwords = ncores = 0;
	for (i = 0; i < n; i++) {
		w->pv[i].on = onpool + nwords;
		nwords += policy_words(vms[i].nvcpus);
		w->pv[i].order = corepool + ncores;
		w->pv[i].cum = cumpool + ncores + i;
		ncores += vms[i].ncores;
	}
	return w;
}

/* Phase "domains": split the VMs and index them by domain, in VM order. */
static void
policy_index(struct pwork *w)
{
	struct pdom	*doms = w->doms;
	size_t		 i;

	policy_domains(w);
	for (i = 0; i < w->n; i++)
		doms[w->pv[i].domain].nvm++;
	for (i = 1; i < w->ndom; i++)
		doms[i].first = doms[i - 1].first + doms[i - 1].nvm;
	/* cand is free until the targets: the fill count of each domain. */
	memset(w->cand, 0, w->n * sizeof(*w->cand));
	for (i = 0; i < w->n; i++) {
		unsigned int	dom = w->pv[i].domain;

		w->idx[doms[dom].first + w->cand[dom]++] = (unsigned int)i;
	}
}

/* Check the inputs; count what sizes the work.  0, or -1 with err. */
static int
policy_check(const struct policy_config *cfg, const struct policy_host *host,
    const struct policy_vm *vms, size_t n, size_t *ncores, size_t *nwords,
    unsigned int *maxcores, char *err, size_t errlen)
{
	size_t	i;

	if (policy_check_config(cfg, err, errlen) == -1)
		return -1;
	if (cpuset_empty(&host->pcpus)) {
		policy_err(err, errlen, NULL, 0, "host: pcpus is empty");
		return -1;
	}
	if (!policy_finite_nonneg(host->nonvm_cpus)) {
		policy_err(err, errlen, NULL, 0,
		    "host: nonvm_cpus must be finite and >= 0");
		return -1;
	}
	*ncores = *nwords = 0;
	*maxcores = 0;
	for (i = 0; i < n; i++) {
		if (policy_check_vm(&vms[i], i, err, errlen) == -1)
			return -1;
		*ncores += vms[i].ncores;
		*nwords += policy_words(vms[i].nvcpus);
		if (vms[i].ncores > *maxcores)
			*maxcores = vms[i].ncores;
	}
	return 0;
}

/*
 * The phases, in order: check, prepare each VM (cores, demand,
 * saturation, kind), domains, then per domain claims, targets and damp,
 * then output and commit.
 */
int
policy_decide(const struct policy_config *cfg, const struct policy_host *host,
    struct policy_vm *vms, size_t n, struct policy_decision *out,
    struct policy_summary *sum, char *err, size_t errlen)
{
	struct pwork	*w;
	size_t		 i, ncores, nwords;
	unsigned int	 maxcores;

	if (policy_check(cfg, host, vms, n, &ncores, &nwords, &maxcores, err,
	    errlen) == -1)
		return -1;
	memset(sum, 0, sizeof(*sum));
	if (n == 0)
		return 0;
	w = policy_work_new(cfg, host, vms, n, ncores, nwords, maxcores);
	for (i = 0; i < n; i++)
		if (policy_prep_vm(cfg, &vms[i], i, &w->pv[i], w->usable,
		    w->pairs, w->grp, host->now_ms, err, errlen) == -1) {
			free(w);
			return -1;
		}
	policy_index(w);
	for (i = 0; i < w->ndom; i++) {
		struct pdom		*d = &w->doms[i];
		const unsigned int	*di = w->idx + d->first;

		policy_claims(cfg, vms, w->pv, d, di, w->it, w->ev);
		policy_targets(vms, w->pv, d, di, w->it, w->ev, w->cand);
		policy_settle(w, d);
	}
	policy_output(w, out, sum);
	policy_commit(w, out);
	free(w);
	return 0;
}
