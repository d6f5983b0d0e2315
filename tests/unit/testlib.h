/*
 * What every Check suite needs besides its tests: a runner for main() and
 * temp file trees under $TMPDIR for roots passed to the code under test.
 */
#ifndef PREFCPU_TESTLIB_H
#define PREFCPU_TESTLIB_H

#include <check.h>

/* Run every test in s, free it; EXIT_SUCCESS if none failed. */
int	 testlib_run(Suite *s);

/* New empty directory under $TMPDIR (or /tmp); the caller frees it. */
char	*testlib_tmpdir(void);
/* Remove dir with everything in it, then free dir. */
void	 testlib_rmtree(char *dir);

/*
 * A fixture's temp directory: testlib_dir_setup makes testlib_dir,
 * testlib_dir_teardown removes it; for tcase_add_*_fixture.
 */
extern char	*testlib_dir;
void	 testlib_dir_setup(void);
void	 testlib_dir_teardown(void);

/* Write a whole file; an existing one is truncated in place (open fds
 * stay valid). */
void	 testlib_write(const char *path, const char *text);
/* Write root/rel, creating the directories in between. */
void	 testlib_put(const char *root, const char *rel, const char *text);
/* Remove root/rel if present. */
void	 testlib_del(const char *root, const char *rel);

#endif
