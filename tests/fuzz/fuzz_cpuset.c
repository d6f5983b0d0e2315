/*
 * libFuzzer harness for the cpulist parser: any bytes either parse or fail
 * with a one-line cause, and what parses survives format + parse intact.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_cause(const char *err, size_t errlen)
{
	size_t	i, n = strnlen(err, errlen);

	if (n == 0 || n == errlen)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)err[i] < 0x20)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cpuset	 set, back;
	char		 err[256], *text;

	memset(err, 0, sizeof err);
	if (cpuset_parse_n(&set, (const char *)data, size, err,
	    sizeof err) != 0) {
		check_cause(err, sizeof err);
		return 0;
	}
	/* Formatting never needs more than every CPU listed alone. */
	text = cpuset_to_str(&set);
	if (cpuset_parse(&back, text, err, sizeof err) != 0 ||
	    !cpuset_equal(&set, &back))
		abort();
	if (cpuset_last(&set) >= CPUSET_MAX)
		abort();
	free(text);
	return 0;
}
