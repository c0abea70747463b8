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

/* node_exporter's textfile folder: group-writable for a group of ours (whoever owns it) passes
 * with SAFEFILE_DIR_GROUP only; safefile_replace writes through no planted link, gives the file
 * the mode asked for whatever the umask, and leaves no temporary file. */
static void test_group_folder_and_replace(void **st) {
  (void)st;
  char dir[256], path[300], victim[300], err[1024];
  snprintf(dir, sizeof dir, "%s/textfile", g_dir);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0775), 0);
  snprintf(path, sizeof path, "%s/gpu.prom", dir);
  assert_int_equal(safefile_check_dir(dir, err, sizeof err), GPL_EINVAL); /* the default rule */
  assert_non_null(strstr(err, "writable by other users"));
  assert_int_equal(safefile_check_parent_flags(path, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
  /* a link planted under the name: replaced, the file it points to untouched */
  snprintf(victim, sizeof victim, "%s/victim", g_dir);
  assert_int_equal(safefile_write_text(victim, "victim\n", err, sizeof err), 0);
  assert_int_equal(symlink(victim, path), 0);
  mode_t old = umask(077);
  assert_int_equal(safefile_replace(path, "a 1\n", 4, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
  umask(old);
  struct stat sb;
  assert_int_equal(lstat(path, &sb), 0);
  assert_true(S_ISREG(sb.st_mode));
  assert_int_equal(sb.st_mode & 07777, 0644);
  char *txt;
  size_t n;
  assert_int_equal(safefile_read(victim, 100, &txt, &n, err, sizeof err), 0);
  assert_string_equal(txt, "victim\n");
  free(txt);
  assert_int_equal(safefile_read(path, 100, &txt, &n, err, sizeof err), 0);
  assert_string_equal(txt, "a 1\n");
  free(txt);
  assert_int_equal(safefile_replace(path, "a 2\n", 4, 0640, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0640);
  /* without the flag the same folder is refused, and nothing is written */
  assert_int_equal(safefile_replace(path, "x", 1, 0644, 0, err, sizeof err), GPL_EINVAL);
  /* writable by everyone without the sticky bit: refused; with it: fine */
  assert_int_equal(chmod(dir, 0777), 0);
  assert_int_equal(safefile_replace(path, "x", 1, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "writable by every user"));
  assert_int_equal(chmod(dir, 01777), 0);
  assert_int_equal(safefile_replace(path, "a 3\n", 4, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
  /* a folder on the way that is our own link is followed; the file lands in the folder */
  char via[300], path2[340];
  snprintf(via, sizeof via, "%s/via", g_dir);
  assert_int_equal(symlink(dir, via), 0);
  snprintf(path2, sizeof path2, "%s/gpu.prom", via);
  assert_int_equal(safefile_replace(path2, "a 4\n", 4, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
  assert_int_equal(safefile_read(path, 100, &txt, &n, err, sizeof err), 0);
  assert_string_equal(txt, "a 4\n");
  free(txt);
  if (geteuid() == 0) {
    /* as root: group-writable for a group we are not in (65534), owned by another user with our
     * group; the other user's link on the way (tests/launcher/ops/test_prom_node_exporter.sh
     * runs the rest with real users) */
    assert_int_equal(chmod(dir, 0775), 0);
    assert_int_equal(chown(dir, 65534, getegid()), 0);
    assert_int_equal(safefile_replace(path, "a 5\n", 4, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
    assert_int_equal(safefile_check_dir(dir, err, sizeof err), GPL_EINVAL);
    assert_int_equal(chown(dir, 0, 65534), 0);
    assert_int_equal(safefile_replace(path, "x", 1, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), GPL_EINVAL);
    assert_non_null(strstr(err, "which you are not in"));
    assert_int_equal(chown(dir, 65534, 65534), 0);
    assert_int_equal(safefile_replace(path, "x", 1, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), GPL_EINVAL);
    assert_non_null(strstr(err, "belongs to another user"));
    /* another user's link under the name in a sticky folder: root may replace it (the sticky
     * bit binds other users: test_prom_node_exporter.sh has a job user meet it); never followed */
    assert_int_equal(chown(dir, 0, getegid()), 0);
    assert_int_equal(chmod(dir, 01775), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(lchown(path, 65534, 65534), 0);
    assert_int_equal(safefile_replace(path, "a 6\n", 4, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), 0);
    assert_int_equal(safefile_read(victim, 100, &txt, &n, err, sizeof err), 0);
    assert_string_equal(txt, "victim\n");
    free(txt);
    assert_int_equal(chmod(dir, 0775), 0);
    assert_int_equal(lchown(via, 65534, 65534), 0);
    assert_int_equal(safefile_replace(path2, "x", 1, 0644, SAFEFILE_DIR_GROUP, err, sizeof err), GPL_EINVAL);
    assert_non_null(strstr(err, "symbolic link owned by another user"));
  }
  /* no temporary file left behind */
  char cmd[400];
  snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) = 1", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/gpl-safefile.XXXXXX");
  if (!mkdtemp(g_dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_safefile),
      cmocka_unit_test(test_write_and_mkdir),
      cmocka_unit_test(test_group_folder_and_replace),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) rc = rc ? rc : 1;
  return rc;
}
