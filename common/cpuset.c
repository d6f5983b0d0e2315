/*
 * CPU sets as fixed bitmaps and their cpulist text form.  The parser is
 * strict because cpulists arrive from guests and config files: anything
 * sysfs would not print is rejected with the offset of the bad item.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "util.h"

#define WORD(cpu)	((cpu) / 64)
#define BIT(cpu)	(UINT64_C(1) << ((cpu) % 64))

void
cpuset_zero(struct cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

int
cpuset_set(struct cpuset *s, unsigned int cpu)
{
	if (cpu >= CPUSET_MAX)
		return -1;
	s->bits[WORD(cpu)] |= BIT(cpu);
	return 0;
}

int
cpuset_set_range(struct cpuset *s, unsigned int lo, unsigned int hi)
{
	unsigned int	cpu;

	if (lo > hi || hi >= CPUSET_MAX)
		return -1;
	for (cpu = lo; cpu <= hi; cpu++) {
		/* Whole words at once: ranges like 0-8191 are common. */
		if (cpu % 64 == 0 && hi - cpu >= 63) {
			s->bits[WORD(cpu)] = UINT64_MAX;
			cpu += 63;
			continue;
		}
		s->bits[WORD(cpu)] |= BIT(cpu);
	}
	return 0;
}

void
cpuset_clear(struct cpuset *s, unsigned int cpu)
{
	if (cpu < CPUSET_MAX)
		s->bits[WORD(cpu)] &= ~BIT(cpu);
}

bool
cpuset_isset(const struct cpuset *s, unsigned int cpu)
{
	if (cpu >= CPUSET_MAX)
		return false;
	return (s->bits[WORD(cpu)] & BIT(cpu)) != 0;
}

void
cpuset_and(struct cpuset *d, const struct cpuset *a, const struct cpuset *b)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		d->bits[i] = a->bits[i] & b->bits[i];
}

void
cpuset_or(struct cpuset *d, const struct cpuset *a, const struct cpuset *b)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		d->bits[i] = a->bits[i] | b->bits[i];
}

void
cpuset_andnot(struct cpuset *d, const struct cpuset *a, const struct cpuset *b)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		d->bits[i] = a->bits[i] & ~b->bits[i];
}

bool
cpuset_equal(const struct cpuset *a, const struct cpuset *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

bool
cpuset_subset(const struct cpuset *a, const struct cpuset *b)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		if (a->bits[i] & ~b->bits[i])
			return false;
	return true;
}

bool
cpuset_intersects(const struct cpuset *a, const struct cpuset *b)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		if (a->bits[i] & b->bits[i])
			return true;
	return false;
}

bool
cpuset_empty(const struct cpuset *s)
{
	size_t	i;

	for (i = 0; i < CPUSET_WORDS; i++)
		if (s->bits[i] != 0)
			return false;
	return true;
}

unsigned int
cpuset_count(const struct cpuset *s)
{
	unsigned int	n = 0;
	size_t		i;

	for (i = 0; i < CPUSET_WORDS; i++)
		n += (unsigned int)__builtin_popcountll(s->bits[i]);
	return n;
}

/* Lowest CPU >= from, or -1. */
static int
cpuset_scan(const struct cpuset *s, unsigned int from)
{
	size_t		i;
	uint64_t	w;

	if (from >= CPUSET_MAX)
		return -1;
	i = WORD(from);
	w = s->bits[i] & (UINT64_MAX << (from % 64));
	for (;;) {
		if (w != 0)
			return (int)(i * 64 + (size_t)__builtin_ctzll(w));
		if (++i == CPUSET_WORDS)
			return -1;
		w = s->bits[i];
	}
}

int
cpuset_first(const struct cpuset *s)
{
	return cpuset_scan(s, 0);
}

int
cpuset_last(const struct cpuset *s)
{
	size_t	i;

	for (i = CPUSET_WORDS; i-- > 0;)
		if (s->bits[i] != 0)
			return (int)(i * 64 + 63 -
			    (size_t)__builtin_clzll(s->bits[i]));
	return -1;
}

int
cpuset_next(const struct cpuset *s, int after)
{
	if (after < -1)
		after = -1;
	return cpuset_scan(s, (unsigned int)(after + 1));
}

/*
 * Read a CPU number at *pos.  Only digits: no sign, no space, no base
 * prefix other than plain decimal (leading zeros are tolerated as sysfs
 * never prints them but they are unambiguous).
 */
static int
cpuset_parse_num(const char *s, size_t len, size_t *pos, unsigned int *out,
    char *err, size_t errlen)
{
	size_t		start = *pos, i = *pos;
	uint64_t	v = 0;

	if (i >= len || s[i] < '0' || s[i] > '9') {
		if (i >= len)
			err_set(err, errlen,
			    "missing CPU number at offset %zu", i);
		else if (s[i] == '\0')
			err_set(err, errlen,
			    "NUL byte at offset %zu", i);
		else if (s[i] >= ' ' && s[i] < 0x7f)
			err_set(err, errlen,
			    "unexpected '%c' at offset %zu, expected a CPU number",
			    s[i], i);
		else
			err_set(err, errlen,
			    "unexpected byte 0x%02x at offset %zu, expected a CPU number",
			    (unsigned char)s[i], i);
		return -1;
	}
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v >= CPUSET_MAX) {
			/* Skip the rest of the number to show all of it. */
			while (i < len && s[i] >= '0' && s[i] <= '9')
				i++;
			err_set(err, errlen,
			    "CPU %.*s at offset %zu is out of range (max %d)",
			    (int)(i - start > 24 ? 24 : i - start), s + start,
			    start, CPUSET_MAX - 1);
			return -1;
		}
	}
	*pos = i;
	*out = (unsigned int)v;
	return 0;
}

static int
cpuset_bad_sep(const char *s, size_t i, char *err, size_t errlen)
{
	if (s[i] == '\0')
		err_set(err, errlen, "NUL byte at offset %zu", i);
	else if (s[i] >= ' ' && s[i] < 0x7f)
		err_set(err, errlen,
		    "unexpected '%c' at offset %zu, expected ','",
		    s[i], i);
	else
		err_set(err, errlen,
		    "unexpected byte 0x%02x at offset %zu, expected ','",
		    (unsigned char)s[i], i);
	return -1;
}

int
cpuset_parse_n(struct cpuset *set, const char *s, size_t len, char *err,
    size_t errlen)
{
	struct cpuset	tmp;
	size_t		i = 0, start;
	unsigned int	lo, hi;

	cpuset_zero(&tmp);
	if (len > 0 && s[len - 1] == '\n')
		len--;
	if (len == 0) {
		*set = tmp;
		return 0;
	}
	for (;;) {
		start = i;
		if (i < len && s[i] == ',') {
			err_set(err, errlen, "empty item at offset %zu", i);
			return -1;
		}
		if (cpuset_parse_num(s, len, &i, &lo, err, errlen) == -1) {
			if (i >= len && start > 0)
				err_set(err, errlen,
				    "empty item at offset %zu", i);
			return -1;
		}
		hi = lo;
		if (i < len && s[i] == '-') {
			i++;
			if (cpuset_parse_num(s, len, &i, &hi, err,
			    errlen) == -1)
				return -1;
			if (hi < lo) {
				err_set(err, errlen,
				    "descending range %u-%u at offset %zu",
				    lo, hi, start);
				return -1;
			}
		}
		cpuset_set_range(&tmp, lo, hi);
		if (i == len)
			break;
		if (s[i] != ',')
			return cpuset_bad_sep(s, i, err, errlen);
		i++;
	}
	*set = tmp;
	return 0;
}

int
cpuset_parse(struct cpuset *set, const char *s, char *err, size_t errlen)
{
	return cpuset_parse_n(set, s, strlen(s), err, errlen);
}

int
cpuset_format(const struct cpuset *s, char *buf, size_t len)
{
	size_t	off = 0;
	int	lo, hi, n;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	lo = cpuset_first(s);
	while (lo >= 0) {
		hi = lo;
		while (hi + 1 < CPUSET_MAX && cpuset_isset(s, (unsigned)hi + 1))
			hi++;
		if (hi == lo)
			n = snprintf(buf + off, len - off, "%s%d",
			    off ? "," : "", lo);
		else
			n = snprintf(buf + off, len - off, "%s%d-%d",
			    off ? "," : "", lo, hi);
		if (n < 0 || (size_t)n >= len - off) {
			buf[0] = '\0';
			return -1;
		}
		off += (size_t)n;
		lo = cpuset_next(s, hi);
	}
	return (int)off;
}

char *
cpuset_to_str(const struct cpuset *s)
{
	/* Worst case: every other CPU, "NNNN," per CPU. */
	size_t	 len = (CPUSET_MAX / 2) * 5 + 1;
	char	*buf = xmalloc(len), *out;

	/* Cannot fail at this size; cpuset_format leaves "" if it did. */
	(void)cpuset_format(s, buf, len);
	out = xstrdup(buf);
	free(buf);
	return out;
}
