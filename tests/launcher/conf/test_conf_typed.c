/* The typed settings: every schema key has its own field, filled once at load (defaults where the
 * file is silent) and by conf_set; origins and texts reachable by field; errors still at load. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpulaunch/error.h"
#include "launcher/conf/conf.h"

static conf_t *load(const char *text) {
  conf_t *c = NULL;
  char *errors = NULL;
  int rc = conf_load_text_errors(&c, "t.conf", text, strlen(text), &errors);
  if (rc != GPL_OK) print_error("unexpected errors: %s\n", errors ? errors : "(none)");
  free(errors);
  assert_int_equal(rc, GPL_OK);
  return c;
}

/* Each key a field of its own, found back from its address; text fields hold the default. */
static void test_schema_fields(void **st) {
  (void)st;
  conf_t *c = load("");
  int n;
  const conf_key_t *k = conf_schema(&n);
  for (int i = 0; i < n; i++) {
    if (k[i].type == CONF_FREE) continue;
    assert_true(k[i].offset < offsetof(conf_t, st));
    for (int j = 0; j < i; j++)
      if (k[j].type != CONF_FREE) assert_true(k[j].offset != k[i].offset);
    const void *field = (const char *)c + k[i].offset;
    assert_ptr_equal(conf_key_of(c, field), &k[i]);
    assert_string_equal(conf_text(c, field), k[i].def);
    assert_string_equal(conf_origin(c, field), "default");
    assert_false(conf_is_set(c, field));
    if (k[i].type == CONF_STR || k[i].type == CONF_ENUM || k[i].type == CONF_PATH ||
        k[i].type == CONF_OUTPATH)
      assert_string_equal(*(const char *const *)field, k[i].def);
  }
  assert_int_equal(c->job.restarts, 0);
  assert_true(c->job.grace == 10.0);
  assert_int_equal(c->job.preempt_signal, 15);
  assert_int_equal(c->job.command.argc, 0);
  assert_string_equal(c->topology.bind, "cores");
  assert_true(c->comm.bucket_mb == 25.0);
  assert_int_equal(c->bench.maxbytes, 32u << 20);
  assert_true(c->bench.check);
  assert_false(c->accept.strict);
  assert_int_equal(c->accept.gpus, -1);
  assert_true(c->monitor.enabled);
  conf_free(c);
}

static void test_fields_from_file(void **st) {
  (void)st;
  conf_t *c = load("[job]\n"
                   "command = train --lr 0.1\n"
                   "restarts = 3\n"
                   "grace = 1500ms\n"
                   "preempt_signal = USR1\n"
                   "[topology]\n"
                   "bind = numa\n"
                   "[bench]\n"
                   "maxbytes = 1G\n"
                   "[monitor]\n"
                   "enabled = no\n"
                   "[env]\n"
                   "FOO = bar\n");
  assert_int_equal(c->job.command.argc, 3);
  assert_string_equal(c->job.command.argv[2], "0.1");
  assert_int_equal(c->job.restarts, 3);
  assert_true(c->job.grace == 1.5);
  assert_int_equal(c->job.preempt_signal, 10);
  assert_string_equal(c->topology.bind, "numa");
  assert_int_equal(c->bench.maxbytes, 1ull << 30);
  assert_string_equal(conf_text(c, &c->bench.maxbytes), "1G");
  assert_false(c->monitor.enabled);
  assert_string_equal(conf_origin(c, &c->job.restarts), "t.conf:3");
  assert_string_equal(conf_origin(c, &c->bench.maxbytes), "t.conf:9");
  assert_true(conf_is_set(c, &c->job.grace));
  assert_false(conf_is_set(c, &c->job.stop_timeout));
  assert_int_equal(conf_vars_count(c, CONF_VARS_ENV), 1);
  assert_int_equal(conf_vars_count(c, CONF_VARS_NCCL), 0);
  conf_free(c);
}

/* conf_set updates the field and its origin; a bad value leaves both as they were. */
static void test_set(void **st) {
  (void)st;
  conf_t *c = load("[bench]\niters = 4\n");
  assert_int_equal(conf_set(c, &c->bench.iters, "7", "-n"), GPL_OK);
  assert_int_equal(c->bench.iters, 7);
  assert_string_equal(conf_origin(c, &c->bench.iters), "-n");
  assert_int_equal(conf_set(c, &c->bench.iters, "many", "-n"), GPL_ECONFIG);
  assert_int_equal(c->bench.iters, 7);
  assert_int_equal(conf_set(c, &c->bench.dtype, "half", "-d"), GPL_OK);
  assert_string_equal(c->bench.dtype, "half");
  assert_int_equal(conf_set_key(c, "comm", "backend", "cpu", "--set"), GPL_OK);
  assert_string_equal(c->comm.backend, "cpu");
  assert_int_equal(conf_set(c, &c->accept.strict, "true", "--strict"), GPL_OK);
  assert_true(c->accept.strict);
  conf_free(c);
}

/* A mistyped key is still a file:line error at load, with a suggestion. */
static void test_mistyped_key(void **st) {
  (void)st;
  conf_t *c = NULL;
  char *errors = NULL;
  const char *text = "[job]\ngrase = 1s\n";
  assert_int_equal(conf_load_text_errors(&c, "t.conf", text, strlen(text), &errors), GPL_ECONFIG);
  assert_null(c);
  assert_non_null(errors);
  assert_non_null(strstr(errors, "t.conf:2: [job] unknown key 'grase' (did you mean 'grace'?)"));
  free(errors);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema_fields),
      cmocka_unit_test(test_fields_from_file),
      cmocka_unit_test(test_set),
      cmocka_unit_test(test_mistyped_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
