/* common/strbuf.c: appends and printf past the first allocation, taking the text, resetting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

static void test_append(void **st) {
  (void)st;
  strbuf_t b = STRBUF_INIT;
  assert_string_equal(strbuf_str(&b), ""); /* empty, never NULL */
  strbuf_append(&b, "ab");
  strbuf_append_n(&b, "cdef", 2);
  strbuf_printf(&b, "-%d-%s", 42, "x");
  assert_string_equal(strbuf_str(&b), "abcd-42-x");
  assert_int_equal(b.len, 9);
  /* far past any first allocation: every byte kept, always terminated */
  for (int i = 0; i < 1000; i++) strbuf_printf(&b, "%04d", i);
  assert_int_equal(b.len, 9 + 4000);
  assert_int_equal(strlen(b.s), b.len);
  assert_memory_equal(b.s + 9 + 4 * 999, "0999", 4);
  assert_int_equal(b.oom, 0);
  strbuf_reset(&b);
  assert_int_equal(b.len, 0);
  assert_string_equal(strbuf_str(&b), "");
  strbuf_append(&b, "kept");
  char *s = strbuf_take(&b); /* the caller owns it; the buffer starts again */
  assert_string_equal(s, "kept");
  free(s);
  assert_int_equal(b.len, 0);
  assert_string_equal(strbuf_str(&b), "");
  strbuf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_append),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
