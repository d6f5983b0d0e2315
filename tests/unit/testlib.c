/* Shared helpers of the Check suites; see testlib.h. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "util.h"

int
testlib_run(Suite *s)
{
	SRunner	*sr = srunner_create(s);
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

char *
testlib_tmpdir(void)
{
	const char	*base = getenv("TMPDIR");
	char		*dir;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	xasprintf(&dir, "%s/prefcpu-test.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static int
testlib_rm1(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	return remove(path);
}

void
testlib_rmtree(char *dir)
{
	ck_assert_int_eq(nftw(dir, testlib_rm1, 16, FTW_DEPTH | FTW_PHYS), 0);
	free(dir);
}

char	*testlib_dir;

void
testlib_dir_setup(void)
{
	testlib_dir = testlib_tmpdir();
}

void
testlib_dir_teardown(void)
{
	testlib_rmtree(testlib_dir);
	testlib_dir = NULL;
}

void
testlib_write(const char *path, const char *text)
{
	FILE	*fp = fopen(path, "w");

	ck_assert_msg(fp != NULL, "cannot write %s", path);
	ck_assert_int_ge(fputs(text, fp), 0);
	ck_assert_int_eq(fclose(fp), 0);
}

void
testlib_put(const char *root, const char *rel, const char *text)
{
	char	*p = path_join(root, rel), *slash;

	slash = strrchr(p, '/');
	*slash = '\0';
	ck_assert_int_eq(mkdir_p(p, 0755), 0);
	*slash = '/';
	testlib_write(p, text);
	free(p);
}

void
testlib_del(const char *root, const char *rel)
{
	char	*p = path_join(root, rel);

	unlink(p);
	free(p);
}
