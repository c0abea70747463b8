/* common/err.c: every error code of the table has its own name and message and is negative; codes
 * outside it say so; the dtype and reduction-operator names go both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "gpulaunch/error.h"
#include "gpulaunch/types.h"

static void test_codes(void **st) {
  (void)st;
  static const struct { int code; const char *name; } table[] = {
#define ROW_(name, val, msg) {GPL_##name, #name},
      GPL_ERR_MAP(ROW_)
#undef ROW_
  };
  size_t n = sizeof table / sizeof table[0];
  for (size_t i = 0; i < n; i++) {
    assert_true(table[i].code < 0);
    assert_string_equal(gpl_err_name(table[i].code), table[i].name);
    assert_string_not_equal(gpl_strerror(table[i].code), "unknown error");
    for (size_t j = 0; j < i; j++) { /* no two codes, names or messages alike */
      assert_int_not_equal(table[i].code, table[j].code);
      assert_string_not_equal(gpl_strerror(table[i].code), gpl_strerror(table[j].code));
    }
  }
  assert_string_equal(gpl_strerror(GPL_OK), "success");
  assert_string_equal(gpl_err_name(GPL_OK), "OK");
  assert_string_equal(gpl_strerror(GPL_ETIMEDOUT), "timed out waiting for other ranks");
  assert_string_equal(gpl_strerror(-1000), "unknown error");
  assert_string_equal(gpl_err_name(1), "UNKNOWN");
}

static void test_dtypes_and_ops(void **st) {
  (void)st;
  for (int i = 0; i < GPL_DTYPE_COUNT; i++) {
    gpl_dtype_t dt;
    assert_int_equal(gpl_dtype_parse(gpl_dtype_name((gpl_dtype_t)i), &dt), GPL_OK);
    assert_int_equal(dt, i);
    assert_true(gpl_dtype_size(dt) > 0);
  }
  gpl_dtype_t dt;
  assert_int_equal(gpl_dtype_parse("BF16", &dt), GPL_OK);
  assert_int_equal(dt, GPL_BFLOAT16);
  assert_int_equal(gpl_dtype_size(GPL_HALF), 2);
  assert_int_equal(gpl_dtype_parse("float128", &dt), GPL_EINVAL);
  assert_int_equal(gpl_dtype_size(GPL_DTYPE_COUNT), 0);
  assert_string_equal(gpl_dtype_name(GPL_DTYPE_COUNT), "unknown");
  for (int i = 0; i < GPL_REDOP_COUNT; i++) {
    gpl_redop_t op;
    assert_int_equal(gpl_redop_parse(gpl_redop_name((gpl_redop_t)i), &op), GPL_OK);
    assert_int_equal(op, i);
  }
  gpl_redop_t op;
  assert_int_equal(gpl_redop_parse("xor", &op), GPL_EINVAL);
  assert_int_equal(gpl_redop_parse(NULL, &op), GPL_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_codes),
      cmocka_unit_test(test_dtypes_and_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
