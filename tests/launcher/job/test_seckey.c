/* launcher/job/seckey.c: the job key from [security] key_file (0600, the user's, long enough;
 * per run id), in a MUNGE credential (a real munged started here) and made for the job by
 * gpulaunch-run (handed over the environment, by name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/envvar.h"
#include "gpulaunch/error.h"
#include "launcher/conf/conf.h"
#include "launcher/job/seckey.h"
#include "launcher/job/seckey_munge.h"

static char g_dir[] = "/tmp/gpl_seckey_XXXXXX";

static void write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file(void **st) {
  (void)st;
  char good[128], loose[128], shorty[128];
  snprintf(good, sizeof good, "%s/good.key", g_dir);
  snprintf(loose, sizeof loose, "%s/loose.key", g_dir);
  snprintf(shorty, sizeof shorty, "%s/short.key", g_dir);
  write_file(good, "0123456789abcdef0123456789abcdef", 0600);
  write_file(loose, "0123456789abcdef0123456789abcdef", 0644);
  write_file(shorty, "short", 0600);
  uint8_t a[TLS_KEY_LEN], b[TLS_KEY_LEN], c[TLS_KEY_LEN];
  assert_int_equal(seckey_from_file(good, "run-1", a), 0);
  assert_int_equal(seckey_from_file(good, "run-1", b), 0);
  assert_memory_equal(a, b, sizeof a); /* every host derives the same */
  assert_int_equal(seckey_from_file(good, "run-2", c), 0);
  assert_memory_not_equal(a, c, sizeof a); /* another job, another key */
  assert_int_equal(seckey_from_file(loose, "run-1", a), GPL_ECONFIG);
  assert_int_equal(seckey_from_file(shorty, "run-1", a), GPL_ECONFIG);
  assert_int_equal(seckey_from_file(g_dir, "run-1", a), GPL_ECONFIG); /* a folder */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.key", g_dir);
  assert_int_equal(seckey_from_file(missing, "run-1", a), GPL_ECONFIG);
}

static void test_front_sources(void **st) {
  (void)st;
  conf_t *c = NULL;
  assert_int_equal(conf_load(&c, NULL), 0);
  unsetenv("GPULAUNCH_JOB_KEY");
  setenv("GPULAUNCH_RUN_ID", "run-front", 1);
  char nosock[160]; /* no munged here: the next source */
  snprintf(nosock, sizeof nosock, "%s/no-munged.socket", g_dir);
  setenv("GPULAUNCH_MUNGE_SOCKET", nosock, 1);
  seckey_t k;
  /* No key_file: a key made for the job, handed over by name (the value in the environment). */
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_HANDED);
  assert_string_equal(envvar_get(ENVVAR_KEY_SOURCE), "handed");
  const char *hex = envvar_get(ENVVAR_JOB_KEY);
  assert_non_null(hex);
  uint8_t back[TLS_KEY_LEN];
  assert_int_equal(tls_unhex(hex, back, sizeof back), 0);
  assert_memory_equal(back, k.tls.key, sizeof back);
  assert_false(k.tls.off);
  /* key_file: the same key as the ranks derive, nothing in the environment. */
  char good[128];
  snprintf(good, sizeof good, "%s/good.key", g_dir);
  unsetenv("GPULAUNCH_JOB_KEY");
  c->security.key_file = good;
  c->security.tls = "off";
  c->security.require = "strict";
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_FILE);
  assert_true(k.tls.off);
  assert_true(k.strict);
  assert_null(envvar_get(ENVVAR_JOB_KEY));
  assert_string_equal(envvar_get(ENVVAR_KEY_SOURCE), "file");
  uint8_t want[TLS_KEY_LEN];
  assert_int_equal(seckey_from_file(good, "run-front", want), 0);
  assert_memory_equal(want, k.tls.key, sizeof want);
  /* Uses of one key differ from each other. */
  uint8_t t1[16], t2[16];
  assert_int_equal(seckey_derive(&k, "live token", t1, sizeof t1), 0);
  assert_int_equal(seckey_derive(&k, "front token", t2, sizeof t2), 0);
  assert_memory_not_equal(t1, t2, sizeof t1);
  assert_int_equal(seckey_src_of("file"), SECKEY_FILE);
  assert_int_equal(seckey_src_of("bogus"), SECKEY_NONE);
  c->security.key_file = "";
  c->security.tls = "on";
  c->security.require = "any";
  conf_free(c);
}

/* munged of our own (Debian's munge), its key made here; 0 when it answers on g_sock. */
static char g_sock[160];
static int g_munged = -1; /* 1: running, 0: not available here (munge tests skip) */

static int start_munged(void) {
  if (!seckey_munge_built()) return 0;
  char cmd[1024];
  snprintf(g_sock, sizeof g_sock, "%s/munge.socket", g_dir);
  snprintf(cmd, sizeof cmd,
           "command -v munged >/dev/null && command -v mungekey >/dev/null || exit 3; "
           "chmod 755 %s && mungekey -c -k %s/munge.key -b 1024 && chmod 600 %s/munge.key && "
           "munged --socket=%s --key-file=%s/munge.key --pid-file=%s/munged.pid --log-file=%s/munged.log "
           "--seed-file=%s/munged.seed",
           g_dir, g_dir, g_dir, g_sock, g_dir, g_dir, g_dir, g_dir);
  int rc = system(cmd);
  return rc == 0 ? 1 : 0;
}

static void test_munge(void **st) {
  (void)st;
  conf_t *c = NULL;
  assert_int_equal(conf_load(&c, NULL), 0);
  setenv("GPULAUNCH_RUN_ID", "run-munge", 1);
  unsetenv("GPULAUNCH_JOB_KEY");
  uint8_t key[TLS_KEY_LEN];
  char why[512], *cred = NULL;
  int replayed = 0;
  if (!seckey_munge_built()) { /* the stub says so, and the front hands the key over */
    assert_int_equal(seckey_munge_encode(key, "x", &cred, why, sizeof why), GPL_ENOTSUP);
    assert_non_null(strstr(why, "not built with MUNGE"));
    seckey_t h;
    assert_int_equal(seckey_front(&h, &c->security), 0);
    assert_int_equal(h.src, SECKEY_HANDED);
    conf_free(c);
    return;
  }
  /* Built with libmunge: Debian's munge (munged, mungekey) is installed with it (install-deps). */
  if (g_munged < 0) g_munged = start_munged();
  if (!g_munged) fail_msg("munged did not start (Debian's munge: scripts/install-deps.sh); see %s/munged.log", g_dir);
  setenv("GPULAUNCH_MUNGE_SOCKET", g_sock, 1);
  seckey_t k;
  /* munged answers: the key travels in a credential, and the key is nowhere in the environment. */
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_MUNGE);
  assert_string_equal(envvar_get(ENVVAR_KEY_SOURCE), "munge");
  assert_null(envvar_get(ENVVAR_JOB_KEY));
  const char *e = envvar_get(ENVVAR_MUNGE_CREDENTIAL);
  assert_non_null(e);
  char *cred1 = strdup(e);
  char hex[2 * TLS_KEY_LEN + 1];
  tls_hex(k.tls.key, TLS_KEY_LEN, hex);
  assert_null(strstr(cred1, hex)); /* (it is encrypted) */
  /* A rank decodes the same key; a second decode on this host is munged's "replayed", accepted. */
  assert_int_equal(seckey_munge_decode(cred1, "run-munge", key, &replayed, why, sizeof why), 0);
  assert_memory_equal(key, k.tls.key, TLS_KEY_LEN);
  assert_false(replayed);
  memset(key, 0, sizeof key);
  assert_int_equal(seckey_munge_decode(cred1, "run-munge", key, &replayed, why, sizeof why), 0);
  assert_true(replayed);
  assert_memory_equal(key, k.tls.key, TLS_KEY_LEN);
  /* Another run's credential, or one that is not munge's, is refused with the reason. */
  assert_int_equal(seckey_munge_decode(cred1, "run-other", key, &replayed, why, sizeof why), GPL_EAUTH);
  assert_non_null(strstr(why, "another run's"));
  assert_int_equal(seckey_munge_decode("MUNGE:AwQDAAAnotacredential:", "run-munge", key, &replayed, why, sizeof why),
                   GPL_EAUTH);
  /* The first launch keeps the credential; each later one gets a fresh one for the same key. */
  assert_int_equal(seckey_front_renew(), 0);
  assert_string_equal(envvar_get(ENVVAR_MUNGE_CREDENTIAL), cred1);
  assert_int_equal(seckey_front_renew(), 0);
  assert_string_not_equal(envvar_get(ENVVAR_MUNGE_CREDENTIAL), cred1);
  assert_int_equal(seckey_munge_decode(envvar_get(ENVVAR_MUNGE_CREDENTIAL), "run-munge", key, &replayed, why, sizeof why), 0);
  assert_memory_equal(key, k.tls.key, TLS_KEY_LEN);
  free(cred1);
  /* [security] munge = off: the key is handed over, even with munged there. */
  c->security.munge = "off";
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_HANDED);
  assert_null(envvar_get(ENVVAR_MUNGE_CREDENTIAL));
  assert_non_null(envvar_get(ENVVAR_JOB_KEY));
  assert_int_equal(seckey_front_renew(), 0); /* nothing to renew */
  assert_null(envvar_get(ENVVAR_MUNGE_CREDENTIAL));
  c->security.munge = "auto";
  /* key_file first, whatever munged does. */
  char good[128];
  snprintf(good, sizeof good, "%s/good.key", g_dir);
  c->security.key_file = good;
  assert_int_equal(seckey_front(&k, &c->security), 0);
  assert_int_equal(k.src, SECKEY_FILE);
  assert_null(envvar_get(ENVVAR_MUNGE_CREDENTIAL));
  c->security.key_file = "";
  unsetenv("GPULAUNCH_JOB_KEY");
  assert_int_equal(seckey_src_of("munge"), SECKEY_MUNGE);
  assert_string_equal(seckey_src_name(SECKEY_MUNGE), "MUNGE");
  conf_free(c);
}

static int setup(void **st) {
  (void)st;
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  char cmd[512];
  if (g_munged == 1) { /* our munged, by its pid file */
    snprintf(cmd, sizeof cmd, "kill $(cat %s/munged.pid) 2>/dev/null; sleep 0.2", g_dir);
    if (system(cmd) != 0) { /* (gone already) */ }
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_file),
      cmocka_unit_test(test_front_sources),
      cmocka_unit_test(test_munge),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
