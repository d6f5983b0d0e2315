/* Synthetic file trees in a temp dir for the host daemon's unit suites. */
#ifndef PREFCPU_TEST_FSTREE_H
#define PREFCPU_TEST_FSTREE_H

#define _XOPEN_SOURCE_EXTENDED 1
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static inline char *
fstree_new(void)
{
	const char	*t = getenv("TMPDIR");
	char		*dir;

	xasprintf(&dir, "%s/prefcpu-hostd-test.XXXXXX", t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

/* Write root/rel, creating directories; truncates in place (fds stay valid). */
static inline void
fstree_put(const char *root, const char *rel, const char *text)
{
	char	*p = path_join(root, rel), *slash;
	FILE	*fp;

	slash = strrchr(p, '/');
	*slash = '\0';
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	*slash = '/';
	fp = fopen(p, "w");
	ck_assert_msg(fp != NULL, "cannot write %s", p);
	fputs(text, fp);
	fclose(fp);
	free(p);
}

static inline void
fstree_del(const char *root, const char *rel)
{
	char	*p = path_join(root, rel);

	unlink(p);
	free(p);
}

static inline int
fstree_rm1(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

static inline void
fstree_free(char *dir)
{
	nftw(dir, fstree_rm1, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

#endif
