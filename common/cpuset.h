/*
 * A set of CPU numbers, 0 .. CPUSET_MAX-1, and the Linux cpulist text form
 * ("0-3,8,10-11").  A plain value type: copy it with '=', no allocation.
 */
#ifndef PREFCPU_CPUSET_H
#define PREFCPU_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUSET_MAX	8192
#define CPUSET_WORDS	(CPUSET_MAX / 64)

struct cpuset {
	uint64_t	bits[CPUSET_WORDS];
};

void	cpuset_zero(struct cpuset *);
/* Add one CPU or the range lo..hi; -1 if beyond CPUSET_MAX. */
int	cpuset_set(struct cpuset *, unsigned int);
int	cpuset_set_range(struct cpuset *, unsigned int, unsigned int);
void	cpuset_clear(struct cpuset *, unsigned int);
bool	cpuset_isset(const struct cpuset *, unsigned int);

/* dst may be the same object as a or b. */
void	cpuset_and(struct cpuset *, const struct cpuset *, const struct cpuset *);
void	cpuset_or(struct cpuset *, const struct cpuset *, const struct cpuset *);
void	cpuset_andnot(struct cpuset *, const struct cpuset *, const struct cpuset *);

bool	cpuset_equal(const struct cpuset *, const struct cpuset *);
/* True if every CPU of a is in b. */
bool	cpuset_subset(const struct cpuset *, const struct cpuset *);
bool	cpuset_intersects(const struct cpuset *, const struct cpuset *);
bool	cpuset_empty(const struct cpuset *);
unsigned int cpuset_count(const struct cpuset *);

/* Lowest, highest, and next CPU after 'after'; -1 when there is none. */
int	cpuset_first(const struct cpuset *);
int	cpuset_last(const struct cpuset *);
int	cpuset_next(const struct cpuset *, int after);

#define CPUSET_FOREACH(cpu, set)					\
	for ((cpu) = cpuset_first(set); (cpu) >= 0;			\
	    (cpu) = cpuset_next((set), (cpu)))

/*
 * Parse a cpulist.  One trailing newline is accepted (sysfs prints one);
 * an empty string is the empty set.  On error returns -1 and writes a
 * one-line cause naming the offending item and its offset into err.
 */
int	cpuset_parse(struct cpuset *, const char *, char *err, size_t errlen);
/* Same, for a buffer that is not NUL-terminated (an embedded NUL is an error). */
int	cpuset_parse_n(struct cpuset *, const char *, size_t,
	    char *err, size_t errlen);

/*
 * Write the cpulist form, NUL-terminated, without newline.  Returns its
 * length, or -1 if it does not fit in len bytes (buf then holds "").
 */
int	cpuset_format(const struct cpuset *, char *buf, size_t len);
/* Same, into a new allocation (aborts on allocation failure). */
char	*cpuset_to_str(const struct cpuset *);

#endif
