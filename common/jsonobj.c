/*
 * The strict guard for every JSON text prefcpu reads from a peer that may
 * lie: protocol lines, QMP replies, API request bodies.
 */
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "jsonobj.h"
#include "log.h"
#include "util.h"

struct json_object *
json_parse_object(const char *text, size_t len, unsigned int depth,
    char *err, size_t errlen)
{
	struct json_tokener	*tok;
	struct json_object	*root;
	enum json_tokener_error	 jerr;
	const char		*why;
	size_t			 off, end;

	if (len > INT32_MAX) {
		err_set(err, errlen, "%zu bytes, too long", len);
		return NULL;
	}
	if ((why = memchr(text, '\0', len)) != NULL) {
		err_set(err, errlen, "NUL byte at offset %zu",
		    (size_t)(why - text));
		return NULL;
	}
	if ((off = json_prescan(text, len, &why)) != len) {
		err_set(err, errlen, "%s at offset %zu", why, off);
		return NULL;
	}
	/* json-c's depth counts one more level than the nesting it accepts. */
	if ((tok = json_tokener_new_ex((int)depth + 1)) == NULL)
		fatalx("json_tokener_new_ex: out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
	    JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (root == NULL) {
		if (jerr == json_tokener_continue || jerr == json_tokener_success)
			err_set(err, errlen, "not JSON: truncated");
		else
			err_set(err, errlen, "not JSON: %s at offset %zu",
			    json_tokener_error_desc(jerr), end);
		return NULL;
	}
	for (off = end; off < len; off++) {
		if (memchr(" \t\r\n", text[off], 4) == NULL) {
			err_set(err, errlen, "trailing bytes after the object "
			    "at offset %zu", off);
			json_object_put(root);
			return NULL;
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		err_set(err, errlen, "expected a JSON object, got %s",
		    json_type_to_name(json_object_get_type(root)));
		json_object_put(root);
		return NULL;
	}
	return root;
}
