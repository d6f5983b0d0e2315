/*
 * Policy bodies decoded once, at the edge: past api_policy_from_json()
 * nothing sees JSON, and every field has been range-checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "api.h"
#include "api_policy.h"
#include "util.h"

#define POLICY_JSON_DEPTH	2

enum pol_field {
	PF_MODE,
	PF_WEIGHT,
	PF_MIN_CORES,
	PF_MAX_CORES,
	PF_CPUS,
};

/* Member name in JSON, attribute name in XML. */
static const struct {
	const char	*json;
	const char	*xml;
	enum pol_field	 field;
} pol_fields[] = {
	{ "mode", "mode", PF_MODE },
	{ "weight", "weight", PF_WEIGHT },
	{ "min_cores", "min-cores", PF_MIN_CORES },
	{ "max_cores", "max-cores", PF_MAX_CORES },
	{ "cpus", "cpus", PF_CPUS },
};

static int
pol_uint(struct json_object *v, const char *name, unsigned int min,
    unsigned int max, unsigned int *out, char *err, size_t errlen)
{
	int64_t	 i;

	if (!json_object_is_type(v, json_type_int)) {
		snprintf(err, errlen, "%s: not an integer", name);
		return -1;
	}
	i = json_object_get_int64(v);
	if (i < min || i > max) {
		snprintf(err, errlen, "%s: %lld is out of range %u..%u", name,
		    (long long)i, min, max);
		return -1;
	}
	*out = (unsigned int)i;
	return 0;
}

static int
pol_set(struct api_policy *p, enum pol_field f, const char *name,
    struct json_object *v, char *err, size_t errlen)
{
	char	cause[128];
	int	m;

	switch (f) {
	case PF_MODE:
		if (!json_object_is_type(v, json_type_string) ||
		    (m = api_mode_parse(json_object_get_string(v))) < 0) {
			snprintf(err, errlen, "%s: not auto, off or fixed",
			    name);
			return -1;
		}
		p->mode = (enum policy_mode)m;
		p->has_mode = true;
		return 0;
	case PF_WEIGHT:
		p->has_weight = true;
		return pol_uint(v, name, 1, API_POLICY_WEIGHT_MAX, &p->weight,
		    err, errlen);
	case PF_MIN_CORES:
		p->has_min_cores = true;
		return pol_uint(v, name, 0, API_POLICY_CORES_MAX, &p->min_cores,
		    err, errlen);
	case PF_MAX_CORES:
		p->has_max_cores = true;
		return pol_uint(v, name, 0, API_POLICY_CORES_MAX, &p->max_cores,
		    err, errlen);
	case PF_CPUS:
		if (!json_object_is_type(v, json_type_string)) {
			snprintf(err, errlen, "%s: not a string", name);
			return -1;
		}
		if (cpuset_parse_n(&p->cpus, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v), cause,
		    sizeof cause) != 0) {
			snprintf(err, errlen, "%s: %s", name, cause);
			return -1;
		}
		p->has_cpus = true;
		return 0;
	}
	return -1;
}

/*
 * json-c's strict mode still takes 'single-quoted' strings, which are not
 * JSON: refuse a quote outside a double-quoted string.
 */
static bool
pol_single_quotes(const char *s, size_t len)
{
	bool	in = false;
	size_t	i;

	for (i = 0; i < len; i++) {
		if (in && s[i] == '\\')
			i++;
		else if (s[i] == '"')
			in = !in;
		else if (!in && s[i] == '\'')
			return true;
	}
	return false;
}

int
api_policy_from_json(const char *text, size_t len, struct api_policy *p,
    char *err, size_t errlen)
{
	struct json_tokener	*tok;
	struct json_object	*o;
	size_t			 i;
	int			 rc = -1;
	bool			 known;

	memset(p, 0, sizeof *p);
	if (len > INT32_MAX || memchr(text, '\0', len) != NULL) {
		snprintf(err, errlen, "body is not JSON text");
		return -1;
	}
	if (pol_single_quotes(text, len)) {
		snprintf(err, errlen, "body is not JSON: single quotes");
		return -1;
	}
	tok = json_tokener_new_ex(POLICY_JSON_DEPTH);
	if (tok == NULL)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o == NULL || json_tokener_get_parse_end(tok) != len) {
		snprintf(err, errlen, "body is not one JSON object: %s",
		    o == NULL ? json_tokener_error_desc(
		    json_tokener_get_error(tok)) : "trailing data");
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "body is not a JSON object");
		goto out;
	}
	json_object_object_foreach(o, key, val) {
		known = false;
		for (i = 0; i < nitems(pol_fields); i++) {
			if (strcmp(key, pol_fields[i].json) != 0)
				continue;
			known = true;
			if (val != NULL && pol_set(p, pol_fields[i].field, key,
			    val, err, errlen) != 0)
				goto out;
		}
		if (!known) {
			/* The key is client text: only its length is shown. */
			snprintf(err, errlen, "unknown member (%zu bytes);"
			    " known: mode, weight, min_cores, max_cores, cpus",
			    strlen(key));
			goto out;
		}
	}
	rc = api_policy_check(p, err, errlen);
out:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

int
api_policy_check(const struct api_policy *p, char *err, size_t errlen)
{
	bool	fixed = p->has_mode && p->mode == POLICY_MODE_FIXED;

	if (p->has_min_cores && p->has_max_cores && p->max_cores != 0 &&
	    p->min_cores > p->max_cores) {
		snprintf(err, errlen, "min_cores %u is above max_cores %u",
		    p->min_cores, p->max_cores);
		return -1;
	}
	if (fixed && (!p->has_cpus || cpuset_empty(&p->cpus))) {
		snprintf(err, errlen, "mode fixed needs cpus");
		return -1;
	}
	if (!fixed && p->has_cpus) {
		snprintf(err, errlen, "cpus is only for mode fixed");
		return -1;
	}
	return 0;
}

char *
api_policy_to_json(const struct api_policy *p)
{
	struct json_object	*o = json_object_new_object();
	char			*s;

	if (p->has_mode)
		json_object_object_add(o, "mode",
		    json_object_new_string(api_mode_name(p->mode)));
	if (p->has_weight)
		json_object_object_add(o, "weight",
		    json_object_new_int64(p->weight));
	if (p->has_min_cores)
		json_object_object_add(o, "min_cores",
		    json_object_new_int64(p->min_cores));
	if (p->has_max_cores)
		json_object_object_add(o, "max_cores",
		    json_object_new_int64(p->max_cores));
	if (p->has_cpus) {
		s = cpuset_to_str(&p->cpus);
		json_object_object_add(o, "cpus", json_object_new_string(s));
		free(s);
	}
	s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

char *
api_policy_xml(const struct api_policy *p)
{
	char	*buf = NULL, *cpus;
	size_t	 n = 0, i;
	FILE	*f;

	f = open_memstream(&buf, &n);
	if (f == NULL)
		abort();
	fputs("<policy", f);
	/* Every value is a keyword, a number or a cpulist: nothing to escape. */
	for (i = 0; i < nitems(pol_fields); i++) {
		switch (pol_fields[i].field) {
		case PF_MODE:
			if (p->has_mode)
				fprintf(f, " mode=\"%s\"",
				    api_mode_name(p->mode));
			break;
		case PF_WEIGHT:
			if (p->has_weight)
				fprintf(f, " weight=\"%u\"", p->weight);
			break;
		case PF_MIN_CORES:
			if (p->has_min_cores)
				fprintf(f, " min-cores=\"%u\"", p->min_cores);
			break;
		case PF_MAX_CORES:
			if (p->has_max_cores)
				fprintf(f, " max-cores=\"%u\"", p->max_cores);
			break;
		case PF_CPUS:
			if (p->has_cpus) {
				cpus = cpuset_to_str(&p->cpus);
				fprintf(f, " cpus=\"%s\"", cpus);
				free(cpus);
			}
			break;
		}
	}
	fputs("/>", f);
	if (fclose(f) != 0)
		abort();
	return buf;
}
