/* common/tls.c: TLS 1.3 with a per-channel PSK or a site's certificates, memory BIOs and sockets;
 * what must be refused (TLS 1.2, no PSK, the wrong key or channel, a foreign CA, replayed or
 * altered records) is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/tls.h"
#include "gpulaunch/error.h"

static tls_cfg_t cfg_key(uint8_t b) {
  tls_cfg_t c;
  memset(&c, 0, sizeof c);
  memset(c.key, b, sizeof c.key);
  return c;
}

/* Shuttle records between two memory-mode connections until both are done or one fails. */
static int pump(tls_t *a, tls_t *b, int *ra, int *rb) {
  unsigned char buf[16384];
  for (int i = 0; i < 20; i++) {
    *ra = tls_handshake(a);
    size_t n;
    while ((n = tls_drain(a, buf, sizeof buf)) > 0) tls_feed(b, buf, n);
    *rb = tls_handshake(b);
    while ((n = tls_drain(b, buf, sizeof buf)) > 0) tls_feed(a, buf, n);
    if (*ra < 0 || *rb < 0 || (*ra == 1 && *rb == 1)) break;
  }
  return *ra == 1 && *rb == 1;
}

static void pair(const tls_cfg_t *cc, const char *cch, const tls_cfg_t *sc, const char *sch, tls_ctx_t **cx,
                 tls_ctx_t **sx, tls_t **c, tls_t **s) {
  assert_int_equal(tls_ctx_new(cx, cc, cch, 0), 0);
  assert_int_equal(tls_ctx_new(sx, sc, sch, 1), 0);
  assert_int_equal(tls_new(c, *cx, -1), 0);
  assert_int_equal(tls_new(s, *sx, -1), 0);
}

static void unpair(tls_ctx_t *cx, tls_ctx_t *sx, tls_t *c, tls_t *s) {
  tls_free(c);
  tls_free(s);
  tls_ctx_free(cx);
  tls_ctx_free(sx);
}

static void test_hkdf_rfc5869(void **st) {
  (void)st;
  /* RFC 5869 A.3: IKM 22 x 0x0b, no salt, no info. */
  uint8_t ikm[22], out[42], want[42];
  memset(ikm, 0x0b, sizeof ikm);
  assert_int_equal(tls_unhex("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
                             want, sizeof want), 0);
  assert_int_equal(tls_hkdf(ikm, sizeof ikm, "", "", out, sizeof out), 0);
  assert_memory_equal(out, want, sizeof want);
}

static void test_psk_roundtrip(void **st) {
  (void)st;
  tls_cfg_t k = cfg_key(7);
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  pair(&k, "live", &k, "live", &cx, &sx, &c, &s);
  int ra, rb;
  assert_true(pump(c, s, &ra, &rb));
  assert_int_equal(tls_write(c, "HELLO frame", 11), 0);
  unsigned char rec[4096];
  size_t n = tls_drain(c, rec, sizeof rec);
  assert_true(n > 11);
  assert_null(memmem(rec, n, "HELLO", 5)); /* on the wire: a record, not the frame */
  tls_feed(s, rec, n);
  char got[64];
  assert_int_equal(tls_read(s, got, sizeof got), 11);
  assert_memory_equal(got, "HELLO frame", 11);
  assert_int_equal(tls_read(s, got, sizeof got), 0); /* nothing more yet */
  /* The other way. */
  assert_int_equal(tls_write(s, "ok", 2), 0);
  n = tls_drain(s, rec, sizeof rec);
  tls_feed(c, rec, n);
  assert_int_equal(tls_read(c, got, sizeof got), 2);
  unpair(cx, sx, c, s);
}

static void test_wrong_key_refused(void **st) {
  (void)st;
  tls_cfg_t a = cfg_key(1), b = cfg_key(2);
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  pair(&a, "live", &b, "live", &cx, &sx, &c, &s);
  int ra, rb;
  assert_false(pump(c, s, &ra, &rb));
  assert_true(ra == GPL_EAUTH || rb == GPL_EAUTH);
  unpair(cx, sx, c, s);
}

static void test_other_channel_refused(void **st) {
  (void)st;
  tls_cfg_t a = cfg_key(1);
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  pair(&a, "front", &a, "live", &cx, &sx, &c, &s);
  int ra, rb;
  assert_false(pump(c, s, &ra, &rb));
  assert_int_equal(rb, GPL_EAUTH);
  unpair(cx, sx, c, s);
}

/* The PSK channels of a process share one OpenSSL context per side: each connection still
 * authenticates with its own channel's key, whichever channels are open at the same time and in
 * whatever order their handshakes run (the callbacks find the channel through the connection). */
static void test_shared_context_keeps_channels_apart(void **st) {
  (void)st;
  tls_cfg_t k1 = cfg_key(1), k2 = cfg_key(2);
  tls_ctx_t *cx1, *sx1, *cx2, *sx2, *cx3, *sx3;
  tls_t *c1, *s1, *c2, *s2, *c3, *s3;
  pair(&k1, "live", &k1, "live", &cx1, &sx1, &c1, &s1);
  pair(&k2, "front", &k2, "front", &cx2, &sx2, &c2, &s2);
  pair(&k1, "live", &k2, "live", &cx3, &sx3, &c3, &s3); /* the same channel, another job's key */
  int ra, rb;
  /* The later channels first: a context-wide channel would be the last one set up. */
  assert_false(pump(c3, s3, &ra, &rb));
  assert_true(ra == GPL_EAUTH || rb == GPL_EAUTH);
  assert_true(pump(c2, s2, &ra, &rb));
  assert_true(pump(c1, s1, &ra, &rb));
  unsigned char rec[256], got[16];
  assert_int_equal(tls_write(c1, "beat", 4), 0);
  size_t n = tls_drain(c1, rec, sizeof rec);
  tls_feed(s1, rec, n);
  assert_int_equal(tls_read(s1, got, sizeof got), 4);
  /* A record of the live connection fed to the front one: its MAC fails there. */
  assert_int_equal(tls_write(c1, "beat", 4), 0);
  n = tls_drain(c1, rec, sizeof rec);
  tls_feed(s2, rec, n);
  assert_int_equal(tls_read(s2, got, sizeof got), GPL_EIO);
  unpair(cx3, sx3, c3, s3);
  unpair(cx2, sx2, c2, s2);
  unpair(cx1, sx1, c1, s1);
}

/* A client of OpenSSL's own, configured as told: its handshake against our server. */
static int foreign_client(tls_t *s, int max_version, const char *what) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_max_proto_version(ctx, max_version);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  SSL *ssl = SSL_new(ctx);
  BIO *r = BIO_new(BIO_s_mem()), *w = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(r, -1);
  SSL_set_bio(ssl, r, w);
  SSL_set_connect_state(ssl);
  int sr = 0, cr = 0;
  unsigned char buf[16384];
  for (int i = 0; i < 10; i++) {
    cr = SSL_do_handshake(ssl);
    int n;
    while ((n = BIO_read(w, buf, sizeof buf)) > 0) tls_feed(s, buf, (size_t)n);
    sr = tls_handshake(s);
    size_t m;
    while ((m = tls_drain(s, buf, sizeof buf)) > 0) BIO_write(r, buf, (int)m);
    if (sr < 0 || cr == 1) break;
  }
  (void)what;
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return sr;
}

static void test_tls12_and_no_psk_refused(void **st) {
  (void)st;
  tls_cfg_t k = cfg_key(3);
  tls_ctx_t *sx;
  tls_t *s;
  assert_int_equal(tls_ctx_new(&sx, &k, "front", 1), 0);
  assert_int_equal(tls_new(&s, sx, -1), 0);
  assert_int_equal(foreign_client(s, TLS1_2_VERSION, "TLS 1.2"), GPL_EAUTH);
  assert_non_null(strstr(tls_why(s), "protocol"));
  tls_free(s);
  assert_int_equal(tls_new(&s, sx, -1), 0);
  assert_int_equal(foreign_client(s, TLS1_3_VERSION, "TLS 1.3 without the PSK"), GPL_EAUTH);
  tls_free(s);
  tls_ctx_free(sx);
}

static void test_replay_and_tamper(void **st) {
  (void)st;
  tls_cfg_t k = cfg_key(9);
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  pair(&k, "live", &k, "live", &cx, &sx, &c, &s);
  /* Record everything the client sends in a real session. */
  static unsigned char cap[65536];
  size_t ncap = 0;
  unsigned char buf[16384];
  int ra = 0, rb = 0;
  for (int i = 0; i < 20 && !(ra == 1 && rb == 1); i++) {
    ra = tls_handshake(c);
    size_t n;
    while ((n = tls_drain(c, buf, sizeof buf)) > 0) {
      memcpy(cap + ncap, buf, n);
      ncap += n;
      tls_feed(s, buf, n);
    }
    rb = tls_handshake(s);
    while ((n = tls_drain(s, buf, sizeof buf)) > 0) tls_feed(c, buf, n);
  }
  assert_int_equal(ra, 1);
  assert_int_equal(rb, 1);
  assert_int_equal(tls_write(c, "ABORT", 5), 0);
  size_t n = tls_drain(c, buf, sizeof buf);
  memcpy(cap + ncap, buf, n);
  ncap += n;
  /* A flipped bit in the record: refused, nothing delivered. */
  buf[n - 3] ^= 1;
  tls_feed(s, buf, n);
  char got[64];
  assert_int_equal(tls_read(s, got, sizeof got), GPL_EIO);
  /* The whole captured stream to a fresh server: never a frame. */
  tls_t *s2;
  assert_int_equal(tls_new(&s2, sx, -1), 0);
  tls_feed(s2, cap, ncap);
  assert_true(tls_read(s2, got, sizeof got) < 0);
  tls_free(s2);
  unpair(cx, sx, c, s);
}

static void test_socket_mode(void **st) {
  (void)st;
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  tls_cfg_t k = cfg_key(4);
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  assert_int_equal(tls_ctx_new(&cx, &k, "front", 0), 0);
  assert_int_equal(tls_ctx_new(&sx, &k, "front", 1), 0);
  assert_int_equal(tls_new(&c, cx, sv[0]), 0);
  assert_int_equal(tls_new(&s, sx, sv[1]), 0);
  int ra = 0, rb = 0;
  for (int i = 0; i < 50 && !(ra == 1 && rb == 1); i++) {
    ra = tls_handshake(c);
    rb = tls_handshake(s);
  }
  assert_int_equal(ra, 1);
  assert_int_equal(rb, 1);
  assert_int_equal(tls_write_all(c, "exit 0\n", 7, 1.0), 0);
  char got[16];
  ssize_t n = 0;
  for (int i = 0; i < 50 && n == 0; i++) n = tls_read(s, got, sizeof got);
  assert_int_equal(n, 7);
  close(sv[0]);
  n = 0;
  for (int i = 0; i < 50 && n == 0; i++) n = tls_read(s, got, sizeof got);
  assert_true(n < 0);
  tls_free(c);
  tls_free(s);
  tls_ctx_free(cx);
  tls_ctx_free(sx);
  close(sv[1]);
}

static int sh(const char *dir, const char *cmd) {
  char line[1024];
  snprintf(line, sizeof line, "cd %s && %s >/dev/null 2>&1", dir, cmd);
  return system(line);
}

static void make_ca(const char *dir, const char *ca, const char *node) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s.key -out %s.pem "
           "-subj /CN=%s -days 2",
           ca, ca, ca);
  assert_int_equal(sh(dir, cmd), 0);
  snprintf(cmd, sizeof cmd,
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout %s.key -out %s.csr -subj /CN=%s"
           " && openssl x509 -req -in %s.csr -CA %s.pem -CAkey %s.key -CAcreateserial -out %s.pem -days 2",
           node, node, node, node, ca, ca, node);
  assert_int_equal(sh(dir, cmd), 0);
}

static void test_pki_mutual(void **st) {
  (void)st;
  char dir[] = "/tmp/gpl_tls_XXXXXX";
  assert_non_null(mkdtemp(dir));
  make_ca(dir, "ca", "node");
  make_ca(dir, "other", "stranger");
  char cert[128], key[128], ca[128], scert[128], skey[128];
  snprintf(cert, sizeof cert, "%s/node.pem", dir);
  snprintf(key, sizeof key, "%s/node.key", dir);
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(scert, sizeof scert, "%s/stranger.pem", dir);
  snprintf(skey, sizeof skey, "%s/stranger.key", dir);
  tls_cfg_t good = cfg_key(0), bad = cfg_key(0);
  good.cert = cert, good.pkey = key, good.ca = ca;
  bad.cert = scert, bad.pkey = skey, bad.ca = ca; /* trusts our CA, its own certificate is not ours */
  tls_ctx_t *cx, *sx;
  tls_t *c, *s;
  pair(&good, "live", &good, "live", &cx, &sx, &c, &s);
  int ra, rb;
  assert_true(pump(c, s, &ra, &rb));
  unpair(cx, sx, c, s);
  pair(&bad, "live", &good, "live", &cx, &sx, &c, &s);
  assert_false(pump(c, s, &ra, &rb));
  assert_true(ra == GPL_EAUTH || rb == GPL_EAUTH);
  unpair(cx, sx, c, s);
  /* A PKI file that cannot be read: a configuration error. */
  tls_cfg_t missing = good;
  missing.ca = "/nonexistent/ca.pem";
  assert_int_equal(tls_ctx_new(&cx, &missing, "live", 0), GPL_ECONFIG);
  char rm[160];
  snprintf(rm, sizeof rm, "rm -rf %s", dir);
  assert_int_equal(system(rm), 0);
}

static unsigned g_hook_count, g_hook_calls;
static char g_hook_peer[64];
static void hook(const char *channel, const char *peer, unsigned count) {
  (void)channel;
  snprintf(g_hook_peer, sizeof g_hook_peer, "%s", peer);
  g_hook_count = count;
  g_hook_calls++;
}

static void test_fail_counts(void **st) {
  (void)st;
  tls_set_fail_hook(hook);
  unsigned before = tls_fail_total();
  for (int i = 0; i < 5; i++) tls_fail_note("live", "10.9.0.7", "bad record mac");
  tls_fail_note("live", "10.9.0.8", NULL);
  assert_int_equal(tls_fail_total() - before, 6);
  /* The hook (the audit log) hears a source's first failure only: 2 calls, not 6. */
  assert_int_equal(g_hook_calls, 2);
  assert_int_equal(g_hook_count, 1); /* the last call: 10.9.0.8's first */
  assert_string_equal(g_hook_peer, "10.9.0.8");
  tls_fail_note("live", "10.9.0.7", NULL);
  assert_int_equal(g_hook_calls, 2);
  /* ... and the rest once, with the count so far, when the failures are reported. */
  tls_fail_report();
  assert_int_equal(g_hook_calls, 3);
  assert_int_equal(g_hook_count, 6);
  assert_string_equal(g_hook_peer, "10.9.0.7");
  tls_fail_report(); /* nothing new: no call */
  assert_int_equal(g_hook_calls, 3);
  tls_set_fail_hook(NULL);
}

static void test_random_hex(void **st) {
  (void)st;
  uint8_t a[32], b[32], back[32];
  assert_int_equal(tls_random(a, sizeof a), 0);
  assert_int_equal(tls_random(b, sizeof b), 0);
  assert_false(tls_same(a, b, sizeof a));
  char hex[65];
  tls_hex(a, sizeof a, hex);
  assert_int_equal(strlen(hex), 64);
  assert_int_equal(tls_unhex(hex, back, sizeof back), 0);
  assert_true(tls_same(a, back, sizeof a));
  assert_int_equal(tls_unhex("zz", back, 1), GPL_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hkdf_rfc5869),       cmocka_unit_test(test_psk_roundtrip),
      cmocka_unit_test(test_wrong_key_refused),  cmocka_unit_test(test_other_channel_refused),
      cmocka_unit_test(test_shared_context_keeps_channels_apart),
      cmocka_unit_test(test_tls12_and_no_psk_refused), cmocka_unit_test(test_replay_and_tamper),
      cmocka_unit_test(test_socket_mode),        cmocka_unit_test(test_pki_mutual),
      cmocka_unit_test(test_fail_counts),        cmocka_unit_test(test_random_hex),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
