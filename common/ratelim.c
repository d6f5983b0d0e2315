/* Token bucket (see ratelim.h). */
#include "ratelim.h"

void
ratelim_init(struct ratelim *rl, unsigned int burst, uint32_t every_ms,
    uint64_t now_ms)
{
	rl->burst = burst > 0 ? burst : 1;
	rl->every_ms = every_ms > 0 ? every_ms : 1;
	rl->credit_ms = (uint64_t)rl->burst * rl->every_ms;
	rl->last_ms = now_ms;
	rl->refused = 0;
}

/* The credit at now; a clock that went back adds nothing. */
static uint64_t
ratelim_credit(const struct ratelim *rl, uint64_t now_ms)
{
	uint64_t	full = (uint64_t)rl->burst * rl->every_ms;
	uint64_t	dt = now_ms > rl->last_ms ? now_ms - rl->last_ms : 0;

	if (dt >= full || rl->credit_ms + dt >= full)
		return full;
	return rl->credit_ms + dt;
}

bool
ratelim_take(struct ratelim *rl, uint64_t now_ms)
{
	rl->credit_ms = ratelim_credit(rl, now_ms);
	if (now_ms > rl->last_ms)
		rl->last_ms = now_ms;
	if (rl->credit_ms < rl->every_ms) {
		rl->refused++;
		return false;
	}
	rl->credit_ms -= rl->every_ms;
	return true;
}

uint64_t
ratelim_ready(const struct ratelim *rl, uint64_t now_ms)
{
	uint64_t	credit = ratelim_credit(rl, now_ms);

	if (credit >= rl->every_ms)
		return now_ms;
	return now_ms + (rl->every_ms - credit);
}

uint64_t
ratelim_refused(struct ratelim *rl)
{
	uint64_t	n = rl->refused;

	rl->refused = 0;
	return n;
}
