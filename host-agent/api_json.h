/* json-c helpers shared by the api_* modules only. */
#ifndef PREFCPU_API_JSON_H
#define PREFCPU_API_JSON_H

#include <stddef.h>

#include <json-c/json.h>

#include "cpuset.h"

/* A short text form ("%.6g"); NULL (JSON null) for NaN and infinities. */
struct json_object *api_json_double(double);
struct json_object *api_json_cpuset(const struct cpuset *);
/* Serialise o plus a newline into a new string, and release o. */
char	*api_json_finish(struct json_object *o, size_t *len);

#endif
