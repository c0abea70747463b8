/* common/version.c: the library's run-time version is the one its headers were made with, and
 * the string and the number say the same version. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "gpulaunch/version.h"

static void test_version(void **st) {
  (void)st;
  assert_int_equal(gpl_version(), GPULAUNCH_VERSION_HEX);
  assert_string_equal(gpl_version_string(), GPULAUNCH_VERSION_STRING);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", GPULAUNCH_VERSION_MAJOR, GPULAUNCH_VERSION_MINOR,
           GPULAUNCH_VERSION_PATCH);
  assert_string_equal(gpl_version_string(), want);
  assert_true(GPULAUNCH_VERSION_HEX > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
