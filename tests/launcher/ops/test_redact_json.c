/* launcher/ops/redact_json.c: secrets redacted in every member of a JSON document, at any depth
 * (the text rules themselves are tests/common/test_redact.c's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/ops/redact_json.h"

static void check_json(const char *in, const char *want) {
  cJSON *doc = cJSON_Parse(in);
  assert_non_null(doc);
  assert_int_equal(redact_json(doc), 0);
  char *out = cJSON_PrintUnformatted(doc);
  assert_non_null(out);
  if (strcmp(out, want) != 0) fail_msg("redact_json(%s)\n  got  %s\n  want %s", in, out, want);
  free(out);
  cJSON_Delete(doc);
}

/* Issue 19: the walk stopped after the first child, so every later member kept its secret. */
static void test_json_whole_document(void **state) {
  (void)state;
  check_json("{\"a\":1,\"password\":\"xyz123\"}", "{\"a\":1,\"password\":\"<redacted>\"}");
  check_json("{\"a\":{\"b\":1,\"c\":[1,\"x\",{\"d\":2,\"api_key\":\"k\"}]},\"e\":\"MY_TOKEN=tt\"}",
             "{\"a\":{\"b\":1,\"c\":[1,\"x\",{\"d\":2,\"api_key\":\"<redacted>\"}]},"
             "\"e\":\"MY_TOKEN=<redacted>\"}");
  /* everything under a secret-named member, at any depth */
  check_json("{\"secret\":[\"a\",{\"x\":\"b\"}],\"n\":3,\"ok\":true}",
             "{\"secret\":[\"<redacted>\",{\"x\":\"<redacted>\"}],\"n\":3,\"ok\":true}");
  check_json("[\"a\",\"b\",\"https://u:pw@h/x\"]", "[\"a\",\"b\",\"https://u:<redacted>@h/x\"]");
  /* an environment secret in a member name or any string */
  setenv("MY_API_TOKEN", "s3cr3t-value-123", 1);
  check_json("{\"x\":1,\"s3cr3t-value-123\":\"v\",\"y\":[\"z s3cr3t-value-123\"]}",
             "{\"x\":1,\"<redacted>\":\"v\",\"y\":[\"z <redacted>\"]}");
  unsetenv("MY_API_TOKEN");
  assert_int_equal(redact_json(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_json_whole_document),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
