/*
 * libFuzzer harness for the guest agent's state file (the originals it
 * saved under /run, read back at start-up after a crash).
 *
 * Invariants checked: a refused file gives a one-line cause; an accepted
 * one formats (state_format) to text that parses again and formats to the
 * very same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state	 a, b;
	char		*text, *t1, *t2, err[256];
	size_t		 n;

	if (size > 1 << 16)
		return 0;
	text = malloc(size + 1);
	if (text == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	state_init(&a);
	err[0] = '\0';
	if (state_parse(&a, text, err, sizeof err) != 0) {
		n = strnlen(err, sizeof err);
		if (n == 0 || n == sizeof err || memchr(err, '\n', n))
			abort();
	} else {
		t1 = state_format(&a);
		state_init(&b);
		if (state_parse(&b, t1, err, sizeof err) != 0)
			abort();
		t2 = state_format(&b);
		if (strcmp(t1, t2) != 0)
			abort();
		free(t1);
		free(t2);
		state_free(&b);
	}
	state_free(&a);
	free(text);
	return 0;
}
