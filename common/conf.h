/*
 * Table-driven configuration for both daemons (tmux options-table.c in
 * spirit): one table lists every option with its type, range, default and
 * help; the INI reader (libinih), --dump-config and the man pages follow
 * from it.  Values are stored into a caller struct through offsetof().
 */
#ifndef PREFCPU_CONF_H
#define PREFCPU_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum conf_type {
	CONF_BOOL,		/* bool; yes/no, true/false, on/off, 1/0 */
	CONF_UINT,		/* unsigned int in [min, max] */
	CONF_DOUBLE,		/* double in [dmin, dmax] */
	CONF_STRING,		/* char[CONF_STRLEN] */
	CONF_CHOICE,		/* unsigned int index into choices[] */
	CONF_CPULIST,		/* struct cpuset */
};

#define CONF_STRLEN	256

struct conf_opt {
	const char		*section;	/* INI section, e.g. "hostd" */
	const char		*name;
	enum conf_type		 type;
	size_t			 offset;	/* into the caller's struct */
	const char		*def;		/* default, in config syntax */
	uint64_t		 min, max;	/* CONF_UINT */
	double			 dmin, dmax;	/* CONF_DOUBLE */
	const char *const	*choices;	/* CONF_CHOICE, NULL-terminated */
	const char		*help;		/* one sentence, for --help/man */
};

/* Set every option of the table (n entries) to its default. */
void	conf_defaults(const struct conf_opt *, size_t n, void *dst);
/*
 * Set one option from text; -1 with a cause ("weight: 0 is below the
 * minimum 1") in err.
 */
int	conf_set(const struct conf_opt *, size_t n, void *dst,
	    const char *section, const char *name, const char *value,
	    char *err, size_t errlen);
/*
 * Read an INI file over the current values.  On error returns -1 and err
 * holds "FILE:LINE: cause" (unknown section or key, bad value, syntax).
 */
int	conf_load(const struct conf_opt *, size_t n, void *dst,
	    const char *path, char *err, size_t errlen);
/* Print the effective values as an INI file that conf_load accepts. */
void	conf_dump(const struct conf_opt *, size_t n, const void *src, FILE *);
/* Print a table of options, defaults and help (for --help and docs). */
void	conf_help(const struct conf_opt *, size_t n, FILE *);

#endif
