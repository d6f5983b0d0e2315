/*
 * A token bucket over monotonic milliseconds: at most burst events at
 * once, then one per every_ms.  Used for the guest agent's applies and the
 * host's log lines per guest; it counts what it refused, so that a caller
 * can say "suppressed N" when it grants again.  No I/O, no clock of its
 * own: the caller passes the time.
 */
#ifndef PREFCPU_RATELIM_H
#define PREFCPU_RATELIM_H

#include <stdbool.h>
#include <stdint.h>

struct ratelim {
	unsigned int	burst;		/* tokens when full, >= 1 */
	uint32_t	every_ms;	/* one token back per, >= 1 */
	uint64_t	credit_ms;	/* tokens * every_ms, at most full */
	uint64_t	last_ms;	/* when credit_ms was computed */
	uint64_t	refused;	/* takes refused since the last grant */
};

/* A full bucket at now. */
void	ratelim_init(struct ratelim *, unsigned int burst, uint32_t every_ms,
	    uint64_t now_ms);
/* Take a token if there is one (true); otherwise count a refusal. */
bool	ratelim_take(struct ratelim *, uint64_t now_ms);
/* When the next token is there: now_ms if one is, else a later time. */
uint64_t ratelim_ready(const struct ratelim *, uint64_t now_ms);
/* The refusals counted since the last grant, and reset the count. */
uint64_t ratelim_refused(struct ratelim *);

#endif
