/*
 * Operator policy: the field table, the validator and the three text forms
 * (metadata XML, API JSON, CLI arguments) of one struct.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jsonobj.h"
#include "log.h"
#include "polmeta.h"
#include "util.h"

#define POLMETA_JSON_DEPTH	1	/* an object of scalars and nulls */

const char *const polmeta_mode_names[] = {
	[POLICY_MODE_AUTO] = "auto",
	[POLICY_MODE_OFF] = "off",
	[POLICY_MODE_FIXED] = "fixed",
	NULL
};

const char *const polmeta_enforce_names[] = {
	[POLMETA_ENFORCE_NONE] = "none",
	[POLMETA_ENFORCE_CAP] = "cap",
	NULL
};

const struct polmeta_field_def polmeta_fields[PM_NFIELDS] = {
	[PM_MODE] = { "mode", "mode", PMT_KEYWORD, polmeta_mode_names, 0, 0 },
	[PM_WEIGHT] = { "weight", "weight", PMT_UINT, NULL, 1,
	    POLICY_WEIGHT_MAX },
	[PM_MIN_CORES] = { "min-cores", "min_cores", PMT_UINT, NULL, 0,
	    POLMETA_CORES_MAX },
	[PM_MAX_CORES] = { "max-cores", "max_cores", PMT_UINT, NULL, 0,
	    POLMETA_CORES_MAX },
	[PM_CPUS] = { "cpus", "cpus", PMT_CPUS, NULL, 0, 0 },
	[PM_ENFORCE] = { "enforce", "enforce", PMT_KEYWORD,
	    polmeta_enforce_names, 0, 0 },
};

void
polmeta_init(struct polmeta *p)
{
	memset(p, 0, sizeof(*p));
	cpuset_zero(&p->cpus);
}

const char *
polmeta_name(enum polmeta_field f, enum polmeta_names n)
{
	return n == PMN_JSON ? polmeta_fields[f].json : polmeta_fields[f].attr;
}

int
polmeta_field_find(const char *name, enum polmeta_names n)
{
	int	f;

	for (f = 0; f < PM_NFIELDS; f++) {
		if (strcmp(name, polmeta_name((enum polmeta_field)f, n)) == 0)
			return f;
	}
	return -1;
}

/* "auto, off or fixed" */
static void
polmeta_words(const char *const *w, char *buf, size_t len)
{
	size_t	i, o = 0;

	buf[0] = '\0';
	for (i = 0; w[i] != NULL && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i == 0 ? "" :
		    w[i + 1] == NULL ? " or " : ", ", w[i]);
}

int
polmeta_set_text(struct polmeta *p, enum polmeta_field f, const char *s,
    enum polmeta_names n, char *err, size_t errlen)
{
	const struct polmeta_field_def *d = &polmeta_fields[f];
	char		 esc[64], words[64], cause[128];
	uint64_t	 v;
	unsigned int	 i;

	str_escape(esc, sizeof(esc), s, strlen(s));
	switch (d->type) {
	case PMT_KEYWORD:
		for (i = 0; d->words[i] != NULL; i++) {
			if (strcmp(s, d->words[i]) == 0) {
				p->val[f] = i;
				p->has[f] = true;
				return 0;
			}
		}
		polmeta_words(d->words, words, sizeof(words));
		err_set(err, errlen, "%s: '%s' is not %s", polmeta_name(f, n),
		    esc, words);
		return -1;
	case PMT_UINT:
		if (parse_uint(s, d->min, d->max, &v) != 0) {
			err_set(err, errlen, "%s: '%s' is not a number in "
			    "%u..%u", polmeta_name(f, n), esc, d->min, d->max);
			return -1;
		}
		p->val[f] = (unsigned int)v;
		p->has[f] = true;
		return 0;
	case PMT_CPUS:
		if (cpuset_parse(&p->cpus, s, cause, sizeof(cause)) != 0) {
			err_set(err, errlen, "%s: %s", polmeta_name(f, n),
			    cause);
			return -1;
		}
		p->has[f] = true;
		return 0;
	}
	return -1;
}

int
polmeta_set_int(struct polmeta *p, enum polmeta_field f, int64_t v,
    enum polmeta_names n, char *err, size_t errlen)
{
	const struct polmeta_field_def *d = &polmeta_fields[f];

	if (d->type != PMT_UINT) {
		err_set(err, errlen, "%s: a number where text is expected",
		    polmeta_name(f, n));
		return -1;
	}
	if (v < d->min || v > d->max) {
		err_set(err, errlen, "%s: %lld is out of range %u..%u",
		    polmeta_name(f, n), (long long)v, d->min, d->max);
		return -1;
	}
	p->val[f] = (unsigned int)v;
	p->has[f] = true;
	return 0;
}

int
polmeta_check(const struct polmeta *p, unsigned int nvcpus,
    enum polmeta_names n, char *err, size_t errlen)
{
	bool	fixed = polmeta_mode(p) == POLICY_MODE_FIXED;

	if (p->has[PM_MIN_CORES] && p->has[PM_MAX_CORES] &&
	    p->val[PM_MAX_CORES] != 0 &&
	    p->val[PM_MIN_CORES] > p->val[PM_MAX_CORES]) {
		err_set(err, errlen, "%s: %u is above %s %u",
		    polmeta_name(PM_MIN_CORES, n), p->val[PM_MIN_CORES],
		    polmeta_name(PM_MAX_CORES, n), p->val[PM_MAX_CORES]);
		return -1;
	}
	if (fixed && !p->has[PM_CPUS]) {
		err_set(err, errlen, "%s: required with mode fixed",
		    polmeta_name(PM_CPUS, n));
		return -1;
	}
	if (!fixed && p->has[PM_CPUS]) {
		err_set(err, errlen, "%s: only with mode fixed",
		    polmeta_name(PM_CPUS, n));
		return -1;
	}
	if (p->has[PM_CPUS] && (cpuset_empty(&p->cpus) || (nvcpus > 0 &&
	    cpuset_last(&p->cpus) >= (int)nvcpus))) {
		if (nvcpus > 0)
			err_set(err, errlen, "%s: must name vCPUs in 0-%u",
			    polmeta_name(PM_CPUS, n), nvcpus - 1);
		else
			err_set(err, errlen, "%s: must name vCPUs",
			    polmeta_name(PM_CPUS, n));
		return -1;
	}
	return 0;
}

void
polmeta_merge(struct polmeta *base, const struct polmeta *change)
{
	int	f;

	for (f = 0; f < PM_NFIELDS; f++) {
		if (!change->has[f])
			continue;
		base->has[f] = true;
		base->val[f] = change->val[f];
		if (f == PM_CPUS)
			base->cpus = change->cpus;
	}
	if (change->has[PM_MODE] && !change->has[PM_CPUS] &&
	    change->val[PM_MODE] != POLICY_MODE_FIXED) {
		base->has[PM_CPUS] = false;
		cpuset_zero(&base->cpus);
	}
}

char *
polmeta_value(const struct polmeta *p, enum polmeta_field f)
{
	char	*s;

	switch (polmeta_fields[f].type) {
	case PMT_KEYWORD:
		return xstrdup(polmeta_fields[f].words[p->val[f]]);
	case PMT_UINT:
		xasprintf(&s, "%u", p->val[f]);
		return s;
	case PMT_CPUS:
		break;
	}
	return cpuset_to_str(&p->cpus);
}

enum policy_mode
polmeta_mode(const struct polmeta *p)
{
	return p != NULL && p->has[PM_MODE] ?
	    (enum policy_mode)p->val[PM_MODE] : POLICY_MODE_AUTO;
}

unsigned int
polmeta_weight(const struct polmeta *p, unsigned int shares)
{
	if (p != NULL && p->has[PM_WEIGHT])
		return p->val[PM_WEIGHT];
	if (shares == 0)
		return POLMETA_DEFAULT_WEIGHT;
	return shares > POLICY_WEIGHT_MAX ? POLICY_WEIGHT_MAX : shares;
}

unsigned int
polmeta_min_cores(const struct polmeta *p)
{
	return p != NULL && p->has[PM_MIN_CORES] ? p->val[PM_MIN_CORES] : 0;
}

unsigned int
polmeta_max_cores(const struct polmeta *p)
{
	return p != NULL && p->has[PM_MAX_CORES] ? p->val[PM_MAX_CORES] : 0;
}

enum polmeta_enforce
polmeta_enforce(const struct polmeta *p, enum polmeta_enforce dflt)
{
	return p != NULL && p->has[PM_ENFORCE] ?
	    (enum polmeta_enforce)p->val[PM_ENFORCE] : dflt;
}

const char *
polmeta_mode_name(enum policy_mode m)
{
	return (unsigned int)m <= POLICY_MODE_FIXED ? polmeta_mode_names[m] :
	    "unknown";
}

const char *
polmeta_enforce_name(enum polmeta_enforce e)
{
	return (unsigned int)e <= POLMETA_ENFORCE_CAP ?
	    polmeta_enforce_names[e] : "unknown";
}

/* One JSON member into p; v is not NULL. */
static int
polmeta_json_member(struct polmeta *p, enum polmeta_field f,
    struct json_object *v, char *err, size_t errlen)
{
	char	words[64];

	switch (polmeta_fields[f].type) {
	case PMT_UINT:
		if (!json_object_is_type(v, json_type_int)) {
			err_set(err, errlen, "%s: not an integer",
			    polmeta_name(f, PMN_JSON));
			return -1;
		}
		return polmeta_set_int(p, f, json_object_get_int64(v),
		    PMN_JSON, err, errlen);
	case PMT_KEYWORD:
		if (!json_object_is_type(v, json_type_string)) {
			polmeta_words(polmeta_fields[f].words, words,
			    sizeof(words));
			err_set(err, errlen, "%s: not %s",
			    polmeta_name(f, PMN_JSON), words);
			return -1;
		}
		break;
	case PMT_CPUS:
		if (!json_object_is_type(v, json_type_string)) {
			err_set(err, errlen, "%s: not a string",
			    polmeta_name(f, PMN_JSON));
			return -1;
		}
		break;
	}
	if (strlen(json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v)) {
		err_set(err, errlen, "%s: a NUL in the string",
		    polmeta_name(f, PMN_JSON));
		return -1;
	}
	return polmeta_set_text(p, f, json_object_get_string(v), PMN_JSON,
	    err, errlen);
}

/* The members of a decoded object into p. */
static int
polmeta_json_object(struct json_object *o, struct polmeta *p, char *err,
    size_t errlen)
{
	struct json_object_iterator	 it, end;
	struct json_object		*val;
	const char			*key;
	char				 known[128];
	size_t				 k = 0;
	int				 f;

	/* Not json_object_object_foreach: a GNU statement expression. */
	it = json_object_iter_begin(o);
	end = json_object_iter_end(o);
	for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
		key = json_object_iter_peek_name(&it);
		val = json_object_iter_peek_value(&it);
		if ((f = polmeta_field_find(key, PMN_JSON)) < 0) {
			for (f = 0; f < PM_NFIELDS && k < sizeof(known); f++)
				k += (size_t)snprintf(known + k,
				    sizeof(known) - k, "%s%s", f ? ", " : "",
				    polmeta_fields[f].json);
			/* The key is client text: only its length is shown. */
			err_set(err, errlen, "unknown member (%zu bytes); "
			    "known: %s", strlen(key), known);
			return -1;
		}
		if (val != NULL && polmeta_json_member(p,
		    (enum polmeta_field)f, val, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int
polmeta_from_json(const char *text, size_t len, struct polmeta *p,
    char *err, size_t errlen)
{
	struct json_object	*o;
	char			 why[128];
	int			 rc = -1;

	polmeta_init(p);
	if ((o = json_parse_object(text, len, POLMETA_JSON_DEPTH, why,
	    sizeof(why))) == NULL)
		err_set(err, errlen, "body: %s", why);
	else if (polmeta_json_object(o, p, err, errlen) == 0)
		rc = polmeta_check(p, 0, PMN_JSON, err, errlen);
	json_object_put(o);
	if (rc != 0)
		polmeta_init(p);
	return rc;
}

char *
polmeta_to_json(const struct polmeta *p)
{
	struct json_object	*o = json_object_new_object();
	char			*s;
	int			 f;

	for (f = 0; f < PM_NFIELDS; f++) {
		if (!p->has[f])
			continue;
		if (polmeta_fields[f].type == PMT_UINT) {
			json_object_object_add(o, polmeta_fields[f].json,
			    json_object_new_int64(p->val[f]));
			continue;
		}
		s = polmeta_value(p, (enum polmeta_field)f);
		json_object_object_add(o, polmeta_fields[f].json,
		    json_object_new_string(s));
		free(s);
	}
	s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

char *
polmeta_xml(const struct polmeta *p)
{
	char	*buf = NULL, *val;
	size_t	 n = 0;
	FILE	*fp;
	int	 f;

	fp = open_memstream(&buf, &n);
	if (fp == NULL)
		fatalx("open_memstream: out of memory");
	fputs("<policy", fp);
	/* Every value is a keyword, a number or a cpulist: nothing to escape. */
	for (f = 0; f < PM_NFIELDS; f++) {
		if (!p->has[f])
			continue;
		val = polmeta_value(p, (enum polmeta_field)f);
		fprintf(fp, " %s=\"%s\"", polmeta_fields[f].attr, val);
		free(val);
	}
	fputs("/>", fp);
	if (fclose(fp) != 0)
		fatalx("open_memstream: out of memory");
	return buf;
}
