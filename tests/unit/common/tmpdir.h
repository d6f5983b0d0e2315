/*
 * Per-test temporary directories for the common/ suites: created under
 * $TMPDIR and removed with everything in them.
 */
#ifndef PREFCPU_TEST_TMPDIR_H
#define PREFCPU_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

static inline char *
tmpdir_make(void)
{
	const char	*base = getenv("TMPDIR");
	char		*dir;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	ck_assert_int_ge(asprintf(&dir, "%s/prefcpu-test-XXXXXX", base), 0);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static inline int
tmpdir_rm_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static inline void
tmpdir_remove(char *dir)
{
	ck_assert_int_eq(nftw(dir, tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(dir);
}

/* Write a whole file, creating it; for fixtures. */
static inline void
tmpdir_put(const char *path, const char *text)
{
	FILE	*fp = fopen(path, "w");

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fputs(text, fp) >= 0, 1);
	ck_assert_int_eq(fclose(fp), 0);
}

#endif
