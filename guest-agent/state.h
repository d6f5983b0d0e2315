/*
 * The agent's own small files in its run directory: a list of records
 * (kind, key, value), one per line, every field percent-encoded so that
 * cgroup names with spaces or newlines survive.  Used for the state file
 * (the originals to restore) and the status file (what `status` prints).
 */
#ifndef PREFCPU_GUEST_STATE_H
#define PREFCPU_GUEST_STATE_H

#include <stddef.h>

struct state_rec {
	char	*kind;
	char	*key;
	char	*val;
};

struct state {
	struct state_rec *recs;
	size_t		  n;
};

void	state_init(struct state *);
void	state_free(struct state *);
void	state_add(struct state *, const char *kind, const char *key,
	    const char *val);
/* Add with a printf-formatted value. */
void	state_addf(struct state *, const char *kind, const char *key,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The value of the first record of kind and key, or NULL. */
const char *state_get(const struct state *, const char *kind, const char *key);

/* The text form; the caller frees it. */
char	*state_format(const struct state *);
/* Parse the text form over an initialised state; -1 with a cause. */
int	state_parse(struct state *, const char *text, char *err, size_t errlen);

/* Write atomically (mode 0644); -1 with a cause. */
int	state_save(const struct state *, const char *path, char *err,
	    size_t errlen);
/* 1 if loaded, 0 if there is no such file, -1 with a cause. */
int	state_load(struct state *, const char *path, char *err, size_t errlen);

#endif
