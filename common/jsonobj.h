#ifndef PREFCPU_JSONOBJ_H
#define PREFCPU_JSONOBJ_H

#include <stddef.h>

struct json_object;

/*
 * Parse text as exactly one JSON object, whitespace around it: the strict
 * guard for every JSON text prefcpu reads (protocol lines, QMP replies,
 * API request bodies).  No NUL byte, nothing json_prescan() refuses,
 * json-c's strict mode with UTF-8 checked, nesting at most depth levels,
 * no trailing bytes, an object.  Returns the object (the caller puts it),
 * or NULL with a one-line cause in err ("not JSON: truncated").
 */
struct json_object *json_parse_object(const char *text, size_t len,
	    unsigned int depth, char *err, size_t errlen);

#endif
