/*
 * Operator policy of one VM (DESIGN.md 3.5, prefcpu-policy(5)): the one
 * owner of its fields.  One table names each field as a libvirt metadata
 * attribute (also the prefcpuctl option) and as an API JSON member, with
 * its range; one validator (polmeta_check) is used by the metadata reader
 * (domxml.c), the API's write route (the JSON decoder below) and
 * prefcpuctl.  The mode and enforcement names and the effective weight
 * live here and nowhere else.
 *
 * Pure: text or JSON in, a struct out; no libvirt, no libevent.
 */
#ifndef PREFCPU_POLMETA_H
#define PREFCPU_POLMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "policy.h"

#define POLMETA_NS		"http://prefcpu.org/xmlns/policy/1"
#define POLMETA_KEY		"prefcpu"
#define POLMETA_CORES_MAX	4096	/* min-cores, max-cores */
/* A VM without a policy weight nor CPU shares: cgroup v1's default shares. */
#define POLMETA_DEFAULT_WEIGHT	1024

/* Enforcement of a non-following VM's weighted fair share. */
enum polmeta_enforce {
	POLMETA_ENFORCE_NONE,	/* counted at its share, not capped */
	POLMETA_ENFORCE_CAP,	/* capped through libvirt while contended */
};

enum polmeta_field {
	PM_MODE,
	PM_WEIGHT,
	PM_MIN_CORES,
	PM_MAX_CORES,
	PM_CPUS,
	PM_ENFORCE,
	PM_NFIELDS
};

enum polmeta_type {
	PMT_KEYWORD,	/* one of words[]; the value is its index */
	PMT_UINT,	/* min .. max */
	PMT_CPUS,	/* a cpulist of vCPU ids */
};

struct polmeta_field_def {
	const char		*attr;	/* metadata attribute, CLI option */
	const char		*json;	/* API member */
	enum polmeta_type	 type;
	const char *const	*words;	/* PMT_KEYWORD: NULL-terminated */
	unsigned int		 min, max;	/* PMT_UINT */
};

extern const struct polmeta_field_def polmeta_fields[PM_NFIELDS];
/* NULL-terminated, indexed by enum policy_mode / enum polmeta_enforce. */
extern const char *const polmeta_mode_names[];
extern const char *const polmeta_enforce_names[];

/* A policy as written: each field present or not. */
struct polmeta {
	bool		has[PM_NFIELDS];
	/* PMT_KEYWORD: index into words; PMT_UINT: the number. */
	unsigned int	val[PM_NFIELDS];
	struct cpuset	cpus;		/* PM_CPUS */
};

/* Names for error texts: the metadata's or the API's. */
enum polmeta_names {
	PMN_ATTR,
	PMN_JSON,
};

void	polmeta_init(struct polmeta *);
const char *polmeta_name(enum polmeta_field, enum polmeta_names);
/* The field with that attribute (or JSON) name, or -1. */
int	polmeta_field_find(const char *, enum polmeta_names);

/*
 * Set a field from its text form (a metadata attribute, a CLI argument, a
 * JSON string).  0, or -1 with a cause naming the field; untrusted text
 * is escaped in it.
 */
int	polmeta_set_text(struct polmeta *, enum polmeta_field, const char *,
	    enum polmeta_names, char *err, size_t errlen);
/* Set a PMT_UINT field from a number (a JSON integer); 0 or -1. */
int	polmeta_set_int(struct polmeta *, enum polmeta_field, int64_t,
	    enum polmeta_names, char *err, size_t errlen);
/*
 * The one validator, across fields: min-cores <= max-cores (max 0: none),
 * cpus required with mode fixed and refused without it, cpus naming
 * vCPUs below nvcpus (0: not known, as for the API).  0 or -1 with err.
 */
int	polmeta_check(const struct polmeta *, unsigned int nvcpus,
	    enum polmeta_names, char *err, size_t errlen);
/*
 * Apply the fields change sets over base.  A mode other than fixed drops
 * base's cpus (they are only for fixed) unless change sets cpus too.
 */
void	polmeta_merge(struct polmeta *base, const struct polmeta *change);

/* A field's value as text (keyword, number or cpulist); a new string. */
char	*polmeta_value(const struct polmeta *, enum polmeta_field);

/* Effective values; p may be NULL (no valid policy: the defaults). */
enum policy_mode polmeta_mode(const struct polmeta *);
/* The weight a VM competes with: its policy, else its CPU shares (0: none). */
unsigned int polmeta_weight(const struct polmeta *, unsigned int shares);
unsigned int polmeta_min_cores(const struct polmeta *);
unsigned int polmeta_max_cores(const struct polmeta *);
enum polmeta_enforce polmeta_enforce(const struct polmeta *,
	    enum polmeta_enforce dflt);
const char *polmeta_mode_name(enum policy_mode);
const char *polmeta_enforce_name(enum polmeta_enforce);

/*
 * Decode a JSON object {"mode":"auto","weight":200,...} (every member
 * optional, null means unset, unknown members are errors) and check it:
 * the API's policy body.  0, or -1 with a cause.
 */
int	polmeta_from_json(const char *, size_t, struct polmeta *,
	    char *err, size_t errlen);
/* The same object; a new string. */
char	*polmeta_to_json(const struct polmeta *);
/* The metadata element, e.g. <policy mode="auto" weight="200"/>; new string. */
char	*polmeta_xml(const struct polmeta *);

#endif
