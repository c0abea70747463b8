/* common/safefile.c: files opened without following links, created 0600, other kinds of files
 * refused, reads capped, folders made and checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"
#include "gpulaunch/error.h"

static char g_dir[64];

/* safefile: no link followed, 0600, other kinds of files refused, reads capped. */
static void test_safefile(void **st) {
  (void)st;
  char path[256], link[256], err[512];
  snprintf(path, sizeof path, "%s/sf.txt", g_dir);
  snprintf(link, sizeof link, "%s/sf.link", g_dir);
  int fd;
  assert_int_equal(safefile_open_append(path, &fd, err, sizeof err), 0);
  assert_int_equal(write(fd, "abc", 3), 3);
  close(fd);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  assert_int_equal(symlink(path, link), 0);
  assert_int_equal(safefile_open_append(link, &fd, err, sizeof err), GPL_ESYS);
  assert_non_null(strstr(err, "symbolic link"));
  assert_int_equal(safefile_open_write(link, &fd, err, sizeof err), GPL_ESYS);
  char *txt;
  size_t n;
  assert_int_equal(safefile_read(path, 100, &txt, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  free(txt);
  assert_int_equal(safefile_read(path, 2, &txt, &n, err, sizeof err), GPL_ERANGE);
  assert_int_equal(safefile_read("/dev/zero", 100, &txt, &n, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "character device"));
  assert_int_equal(safefile_read(g_dir, 100, &txt, &n, err, sizeof err), GPL_EINVAL);
  /* /proc files say size 0 and have content */
  assert_int_equal(safefile_read("/proc/self/status", 1 << 20, &txt, &n, err, sizeof err), 0);
  assert_true(n > 0);
  free(txt);
  assert_int_equal(safefile_check_parent("/no/such/dir/x", err, sizeof err), GPL_ENOENT);
  unlink(link);
  unlink(path);
}

/* Whole texts written in one go, folders made with their parents, and a file where a folder
 * should be refused. */
static void test_write_and_mkdir(void **st) {
  (void)st;
  char path[256], dir[256], err[512];
  snprintf(path, sizeof path, "%s/text.txt", g_dir);
  assert_int_equal(safefile_write_text(path, "hello\n", err, sizeof err), 0);
  char *txt;
  size_t n;
  assert_int_equal(safefile_read(path, 100, &txt, &n, err, sizeof err), 0);
  assert_int_equal(n, 6);
  assert_memory_equal(txt, "hello\n", 6);
  free(txt);
  snprintf(dir, sizeof dir, "%s/a/b/c", g_dir);
  assert_int_equal(safefile_mkdir_p(dir, 0700, err, sizeof err), 0);
  struct stat sb;
  assert_int_equal(stat(dir, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(safefile_check_dir(dir, err, sizeof err), 0);
  snprintf(dir, sizeof dir, "%s/text.txt/below", g_dir);
  assert_true(safefile_mkdir_p(dir, 0700, err, sizeof err) < 0);
  unlink(path);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/gpl-safefile.XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_safefile),
      cmocka_unit_test(test_write_and_mkdir),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
