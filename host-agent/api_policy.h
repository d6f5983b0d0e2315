/*
 * A VM's policy as an operator writes it: the attributes of the libvirt
 * metadata element <policy/> in the prefcpu namespace (DESIGN.md 3.5),
 * each present or not.  Shared by the daemon's write route and prefcpuctl
 * so that both build the same XML and check the same ranges.
 */
#ifndef PREFCPU_API_POLICY_H
#define PREFCPU_API_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "cpuset.h"
#include "policy.h"

#define API_POLICY_NS		"http://prefcpu.org/xmlns/policy/1"
#define API_POLICY_KEY		"prefcpu"
#define API_POLICY_WEIGHT_MAX	10000
#define API_POLICY_CORES_MAX	4096

struct api_policy {
	bool		has_mode, has_weight, has_min_cores, has_max_cores,
			has_cpus;
	enum policy_mode mode;
	unsigned int	weight;		/* 1 .. API_POLICY_WEIGHT_MAX */
	unsigned int	min_cores;	/* 0 .. API_POLICY_CORES_MAX */
	unsigned int	max_cores;	/* 0 (none) .. API_POLICY_CORES_MAX */
	struct cpuset	cpus;		/* vCPUs for mode fixed */
};

/*
 * Decode a JSON object {"mode":"auto","weight":200,"min_cores":1,
 * "max_cores":4,"cpus":"0-3"} (every member optional, null means unset,
 * others are errors) and check it.  0, or -1 with a cause in err.
 */
int	api_policy_from_json(const char *, size_t, struct api_policy *,
	    char *err, size_t errlen);
/* The same object; a new string. */
char	*api_policy_to_json(const struct api_policy *);
/* Ranges and consistency (min <= max, cpus only and always for fixed). */
int	api_policy_check(const struct api_policy *, char *err, size_t errlen);
/* The metadata element, e.g. <policy mode="auto" weight="200"/>; new string. */
char	*api_policy_xml(const struct api_policy *);

#endif
