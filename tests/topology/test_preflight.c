/* Preflight sockets in one process on loopback: the token handshake, wrong tokens refused, refused ports, silent peers, deadlines. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/tls.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "topology/preflight.h"

static uint8_t g_token[PREFLIGHT_TOKEN_LEN];

static void fill_token(uint8_t *t, uint8_t seed) {
  for (int i = 0; i < PREFLIGHT_TOKEN_LEN; i++) t[i] = (uint8_t)(seed * 31 + i * 7);
}

static void test_mode_parse(void **state) {
  (void)state;
  preflight_mode_t m;
  assert_int_equal(preflight_mode_parse("ring", &m), 0);
  assert_int_equal(m, PREFLIGHT_RING);
  assert_int_equal(preflight_mode_parse("ALL", &m), 0);
  assert_int_equal(m, PREFLIGHT_ALL);
  assert_int_equal(preflight_mode_parse("off", &m), 0);
  assert_int_equal(m, PREFLIGHT_OFF);
  assert_int_equal(preflight_mode_parse("pairs", &m), GPL_EINVAL);
  assert_string_equal(preflight_mode_name(PREFLIGHT_ALL), "all");
}

/* Node 1 listens; node 0 probes it with the right token, a wrong one, and as the wrong node. */
static void test_token_handshake(void **state) {
  (void)state;
  preflight_t *lis = NULL, *pro = NULL;
  assert_int_equal(preflight_init(&lis, g_token, 1), 0);
  int port = 0;
  assert_int_equal(preflight_listen(lis, "127.0.0.1", &port), 0);
  assert_true(port > 0);
  /* Listener and prober share one loop here: the prober's probes go on the listener's pf. */
  pro = lis;
  uint8_t wrong[PREFLIGHT_TOKEN_LEN];
  fill_token(wrong, 99);
  int ok = preflight_probe(pro, "127.0.0.1", "127.0.0.1", port, 1, 2.0, NULL);
  int bad = preflight_probe(pro, NULL, "127.0.0.1", port, 1, 2.0, wrong);
  int who = preflight_probe(pro, NULL, "127.0.0.1", port, 2, 2.0, NULL); /* means node 2: refused */
  double t0 = util_now();
  assert_int_equal(preflight_loop(lis, NULL, NULL, util_now() + 10), 0);
  char err[160];
  assert_int_equal(preflight_result(pro, ok, err, sizeof err), 0);
  assert_int_equal(preflight_result(pro, bad, err, sizeof err), GPL_EUNREACH);
  print_message("wrong token: %s\n", err);
  assert_non_null(strstr(err, "without accepting the token"));
  assert_int_equal(preflight_result(pro, who, err, sizeof err), GPL_EUNREACH);
  int accepted = 0, refused = 0;
  /* The listener counts when its side has closed: give it a moment. */
  for (int i = 0; i < 100 && accepted + refused < 3; i++) {
    preflight_loop(lis, NULL, NULL, util_now() + 0.01);
    preflight_counts(lis, &accepted, &refused);
  }
  assert_int_equal(accepted, 1);
  assert_int_equal(refused, 2);
  assert_true(util_now() - t0 < 2.0); /* none of them waited for a timeout */
  preflight_free(lis);
}

/* A listener from another job (another token) answers nothing we accept, and refuses us. */
static void test_other_job(void **state) {
  (void)state;
  uint8_t other[PREFLIGHT_TOKEN_LEN];
  fill_token(other, 5);
  preflight_t *a = NULL, *b = NULL;
  assert_int_equal(preflight_init(&a, g_token, 0), 0);
  assert_int_equal(preflight_init(&b, other, 1), 0);
  int port = 0;
  assert_int_equal(preflight_listen(b, "127.0.0.1", &port), 0);
  int i = preflight_probe(a, NULL, "127.0.0.1", port, 1, 2.0, NULL);
  /* Two loops, one thread: step them in turn. */
  for (int k = 0; k < 200 && preflight_result(a, i, NULL, 0) == GPL_ESTATE; k++) {
    preflight_loop(a, NULL, NULL, util_now() + 0.005);
    preflight_loop(b, NULL, NULL, util_now() + 0.005);
  }
  char err[160];
  assert_int_equal(preflight_result(a, i, err, sizeof err), GPL_EUNREACH);
  int accepted = -1, refused = -1;
  preflight_counts(b, &accepted, &refused);
  assert_int_equal(accepted, 0);
  assert_int_equal(refused, 1);
  preflight_free(a);
  preflight_free(b);
}

/* TLS (issue 35): the same job key gets through, the right token under another job's key does
 * not (the listener counts an authentication failure), and the capture of the wire never holds
 * the token (the probe is inside TLS records). */
static void test_tls(void **state) {
  (void)state;
  tls_cfg_t k1, k2;
  memset(&k1, 0, sizeof k1);
  memset(k1.key, 1, sizeof k1.key);
  k2 = k1;
  k2.key[0] = 2;
  preflight_t *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(preflight_init(&a, g_token, 0), 0);
  assert_int_equal(preflight_init(&b, g_token, 1), 0);
  assert_int_equal(preflight_init(&c, g_token, 0), 0);
  assert_int_equal(preflight_set_tls(a, &k1), 0);
  assert_int_equal(preflight_set_tls(b, &k1), 0);
  assert_int_equal(preflight_set_tls(c, &k2), 0);
  int port = 0;
  assert_int_equal(preflight_listen(b, "127.0.0.1", &port), 0);
  unsigned fails = tls_fail_total();
  int i = preflight_probe(a, NULL, "127.0.0.1", port, 1, 2.0, NULL);
  int j = preflight_probe(c, NULL, "127.0.0.1", port, 1, 2.0, NULL);
  for (int k = 0; k < 400 && (preflight_result(a, i, NULL, 0) == GPL_ESTATE || preflight_result(c, j, NULL, 0) == GPL_ESTATE); k++) {
    preflight_loop(a, NULL, NULL, util_now() + 0.005);
    preflight_loop(b, NULL, NULL, util_now() + 0.005);
    preflight_loop(c, NULL, NULL, util_now() + 0.005);
  }
  char err[160];
  assert_int_equal(preflight_result(a, i, err, sizeof err), 0);
  assert_int_equal(preflight_result(c, j, err, sizeof err), GPL_EUNREACH);
  print_message("another key: %s\n", err);
  for (int k = 0; k < 50 && tls_fail_total() == fails; k++) preflight_loop(b, NULL, NULL, util_now() + 0.005);
  assert_true(tls_fail_total() > fails);
  int accepted = -1, refused = -1;
  preflight_counts(b, &accepted, &refused);
  assert_int_equal(accepted, 1);
  assert_int_equal(refused, 1);
  preflight_free(a);
  preflight_free(b);
  preflight_free(c);
}

/* Nobody listens: refused at once, named. */
static void test_refused_port(void **state) {
  (void)state;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  int port = ntohs(sa.sin_port);
  close(fd); /* bound, never listened, closed: nobody answers on that port */
  preflight_t *pf = NULL;
  assert_int_equal(preflight_init(&pf, g_token, 0), 0);
  int i = preflight_probe(pf, NULL, "127.0.0.1", port, 1, 2.0, NULL);
  assert_int_equal(preflight_loop(pf, NULL, NULL, util_now() + 5), 0);
  char err[160];
  assert_int_equal(preflight_result(pf, i, err, sizeof err), GPL_EUNREACH);
  assert_string_equal(err, "connection refused");
  assert_true(preflight_seconds(pf, i) < 1.0);
  preflight_free(pf);
}

/* A peer that accepts TCP but never answers: the probe gives up at its deadline. */
static void test_silent_peer(void **state) {
  (void)state;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_int_equal(listen(fd, 4), 0); /* the kernel completes handshakes; nobody reads */
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  preflight_t *pf = NULL;
  assert_int_equal(preflight_init(&pf, g_token, 0), 0);
  int i = preflight_probe(pf, NULL, "127.0.0.1", ntohs(sa.sin_port), 1, 0.3, NULL);
  double t0 = util_now();
  assert_int_equal(preflight_loop(pf, NULL, NULL, util_now() + 5), 0);
  double dt = util_now() - t0;
  char err[160];
  assert_int_equal(preflight_result(pf, i, err, sizeof err), GPL_EUNREACH);
  print_message("silent peer: %s (%.2f s)\n", err, dt);
  assert_string_equal(err, "timed out after 0.3 s waiting for the answer");
  assert_true(dt >= 0.28 && dt < 1.5);
  preflight_free(pf);
  close(fd);
}

/* The loop's own deadline, while more() keeps asking for more. */
static int forever(void *arg) {
  (*(int *)arg)++;
  return 1;
}

static void test_loop_deadline(void **state) {
  (void)state;
  preflight_t *pf = NULL;
  assert_int_equal(preflight_init(&pf, g_token, 0), 0);
  int port = 0, calls = 0;
  assert_int_equal(preflight_listen(pf, "127.0.0.1", &port), 0);
  double t0 = util_now();
  assert_int_equal(preflight_loop(pf, forever, &calls, util_now() + 0.2), GPL_ETIMEDOUT);
  assert_true(util_now() - t0 < 1.0);
  assert_true(calls > 10);
  preflight_free(pf);
}

/* Bad addresses are errors, not hangs. */
static void test_bad_addresses(void **state) {
  (void)state;
  preflight_t *pf = NULL;
  assert_int_equal(preflight_init(&pf, g_token, 0), 0);
  int port = 0;
  assert_int_equal(preflight_listen(pf, "not-an-ip", &port), GPL_EINVAL);
  assert_int_equal(preflight_listen(pf, "198.51.100.254", &port), GPL_EUNREACH); /* not ours: cannot bind */
  int i = preflight_probe(pf, NULL, "nowhere", 1, 1, 1.0, NULL);
  int j = preflight_probe(pf, "198.51.100.254", "127.0.0.1", 1, 1, 1.0, NULL);
  assert_int_equal(preflight_loop(pf, NULL, NULL, util_now() + 5), 0);
  char err[160];
  assert_int_equal(preflight_result(pf, i, err, sizeof err), GPL_EINVAL);
  assert_int_equal(preflight_result(pf, j, err, sizeof err), GPL_EUNREACH);
  assert_non_null(strstr(err, "cannot use the source address 198.51.100.254"));
  preflight_free(pf);
}

/* IPv6 loopback: its own CTest entry (test_preflight_ipv6, NEEDS ipv6), run with --ipv6. */
static void test_ipv6(void **state) {
  (void)state;
  preflight_t *pf = NULL;
  assert_int_equal(preflight_init(&pf, g_token, 3), 0);
  int port = 0;
  assert_int_equal(preflight_listen(pf, "::1", &port), 0);
  int i = preflight_probe(pf, "::1", "::1", port, 3, 2.0, NULL);
  assert_int_equal(preflight_loop(pf, NULL, NULL, util_now() + 5), 0);
  assert_int_equal(preflight_result(pf, i, NULL, 0), 0);
  preflight_free(pf);
}

/* Whether this machine has the IPv6 loopback: a socket bound to ::1. */
static int have_ipv6_loopback(void) {
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  struct sockaddr_in6 a;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

int main(int argc, char **argv) {
  log_init();
  fill_token(g_token, 1);
  if (argc > 1 && strcmp(argv[1], "--ipv6") == 0) {
    if (!have_ipv6_loopback()) {
      printf("SKIP: no IPv6 loopback (::1) on this machine\n");
      return 77;
    }
    const struct CMUnitTest v6[] = {cmocka_unit_test(test_ipv6)};
    return cmocka_run_group_tests(v6, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mode_parse),  cmocka_unit_test(test_token_handshake), cmocka_unit_test(test_other_job), cmocka_unit_test(test_tls),
      cmocka_unit_test(test_refused_port), cmocka_unit_test(test_silent_peer),     cmocka_unit_test(test_loop_deadline),
      cmocka_unit_test(test_bad_addresses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
