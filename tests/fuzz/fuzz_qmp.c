/*
 * libFuzzer harness for the QMP reply decoder (qmp_decode) and the
 * chardev filename reader (qmp_unix_path): the first byte picks what the
 * reply is expected to carry, the rest is the line.
 *
 * Invariants checked: a failure leaves a one-line cause and nothing
 * allocated; a decoded vCPU list is sorted by index, without duplicates,
 * within QMP_MAX_CPUS, with thread ids > 0; strings fit their buffers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qmp.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct qmp_reply r;
	char		 err[256], path[108];
	unsigned int	 i;
	size_t		 n;

	if (size < 1 || size > 1 << 16)
		return 0;
	err[0] = '\0';
	if (qmp_decode((const char *)data + 1, size - 1,
	    (enum qmp_expect)(data[0] % (QMPX_STRING + 1)), &r, err,
	    sizeof(err)) != 0) {
		n = strnlen(err, sizeof(err));
		if (n == 0 || n == sizeof(err) || memchr(err, '\n', n) ||
		    r.cpus != NULL || r.items != NULL)
			abort();
		return 0;
	}
	if (strnlen(r.text, QMP_STR) == QMP_STR || r.n > QMP_MAX_ITEMS)
		abort();
	for (i = 0; r.cpus != NULL && i < r.n; i++) {
		if (r.cpus[i].tid <= 0 || r.cpus[i].index >= QMP_MAX_CPUS ||
		    (i > 0 && r.cpus[i].index <= r.cpus[i - 1].index))
			abort();
	}
	for (i = 0; r.items != NULL && i < r.n; i++) {
		if (qmp_unix_path(r.items[i].value, path, sizeof(path)) == 0 &&
		    (path[0] != '/' || strlen(path) >= sizeof(path)))
			abort();
	}
	qmp_reply_free(&r);
	return 0;
}
