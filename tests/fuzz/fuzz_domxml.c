/*
 * libFuzzer harness for the domain XML parsers: the live XML
 * (domxml_parse), its <policy> metadata (domxml_policy) and libvirt's
 * status XML (domxml_status), all on the same bytes.
 *
 * Invariants checked: a failure leaves a one-line cause; a parsed domain
 * has its online vCPUs within its vCPUs and every core within them; a
 * policy is either valid or says why not; thread ids found are at most n.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_cause(const char *err, size_t errlen)
{
	size_t	n = strnlen(err, errlen);

	if (n == 0 || n == errlen || memchr(err, '\n', n) != NULL) {
		fprintf(stderr, "bad cause: \"%.*s\"\n", (int)n, err);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_info	 info;
	struct vm_meta	 meta;
	pid_t		 pid = 0, tids[64];
	char		 err[256];
	unsigned int	 i;
	int		 n;

	if (size > 1 << 16)
		return 0;
	memset(&info, 0, sizeof info);
	err[0] = '\0';
	if (domxml_parse((const char *)data, size, &info, err,
	    sizeof err) != 0)
		check_cause(err, sizeof err);
	else {
		if (info.nvcpus == 0 || cpuset_count(&info.online) >
		    info.nvcpus) {
			fprintf(stderr, "nvcpus %u online %u\n", info.nvcpus,
			    cpuset_count(&info.online));
			abort();
		}
		for (i = 0; i < info.ncores; i++)
			if (cpuset_empty(&info.core[i]))
				abort();
		vm_info_clear(&info);
	}
	memset(&meta, 0, sizeof meta);
	err[0] = '\0';
	if (domxml_policy((const char *)data, size, 8, &meta, err,
	    sizeof err) != 0)
		check_cause(err, sizeof err);
	else if (!meta.valid && meta.error[0] == '\0')
		abort();
	err[0] = '\0';
	n = domxml_status((const char *)data, size, &pid, tids, 64, err,
	    sizeof err);
	if (n < 0)
		check_cause(err, sizeof err);
	else if (n > 64)
		abort();
	return 0;
}
