/*
 * libFuzzer harness for the body of PUT /api/v1/domains/NAME/policy
 * (polmeta_from_json), what a local API client controls.
 *
 * Invariants checked: a refused body gives a one-line cause; an accepted
 * one passes polmeta_check, re-encodes (polmeta_to_json) to a body that
 * decodes to the same encoding, and renders as metadata XML.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "polmeta.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct polmeta	 p, q;
	char		 err[256], *j1, *j2, *xml;
	size_t		 n;

	if (size > 1 << 16)
		return 0;
	err[0] = '\0';
	if (polmeta_from_json((const char *)data, size, &p, err,
	    sizeof(err)) != 0) {
		n = strnlen(err, sizeof(err));
		if (n == 0 || n == sizeof(err) || memchr(err, '\n', n))
			abort();
		return 0;
	}
	if (polmeta_check(&p, 0, PMN_JSON, err, sizeof(err)) != 0)
		abort();
	j1 = polmeta_to_json(&p);
	if (polmeta_from_json(j1, strlen(j1), &q, err, sizeof(err)) != 0)
		abort();
	j2 = polmeta_to_json(&q);
	if (strcmp(j1, j2) != 0)
		abort();
	xml = polmeta_xml(&p);
	if (xml == NULL || strstr(xml, "<policy") == NULL)
		abort();
	free(j1);
	free(j2);
	free(xml);
	return 0;
}
