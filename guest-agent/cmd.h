/* Run a helper program (systemctl) without a shell, with a deadline. */
#ifndef PREFCPU_GUEST_CMD_H
#define PREFCPU_GUEST_CMD_H

#include <stddef.h>

#define CMD_TIMEOUT_MS	10000

/*
 * Run argv[0] (looked up on PATH) with stdin from /dev/null.  Its stdout
 * goes to out (NUL-terminated, cut at outlen-1 bytes; out may be NULL).
 * Returns 0 if it exited with status 0, else -1 with a cause in err that
 * quotes the first line of its stderr.  A program still running after
 * timeout_ms is killed.
 */
int	cmd_run(char *const argv[], char *out, size_t outlen,
	    unsigned int timeout_ms, char *err, size_t errlen);
/* True if a program of that name is on PATH. */
int	cmd_exists(const char *name);

#endif
