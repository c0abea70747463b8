/* TLS 1.3 connections for the control channels (tls.h): an external PSK per channel (HKDF of the
 * job key) on one shared OpenSSL 3 context per side, or a site's certificates, over memory BIOs
 * or a socket. */
#include "common/tls.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"

#define SALT "gpulaunch tls v1"

struct tls_ctx_s {
  SSL_CTX *ssl;           /* a site's PKI: this context's own; PSK: NULL (the process's, psk_ssl_ctx) */
  int server, psk, plain; /* plain: [security] tls = off, bytes as they are */
  char channel[32];
  char identity[64];           /* "gpulaunch/CHANNEL" */
  uint8_t key[TLS_KEY_LEN];    /* the channel's PSK */
};

struct tls_s {
  tls_ctx_t *ctx;
  SSL *ssl;
  BIO *rbio, *wbio; /* records in and out (fd >= 0: this file moves them on the socket) */
  int fd, done, want_write;
  char why[160];
};

int tls_hkdf(const uint8_t *ikm, size_t ikmlen, const char *salt, const char *info, uint8_t *out, size_t outlen) {
  EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
  EVP_KDF_CTX *k = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
  EVP_KDF_free(kdf);
  if (!k) return GPL_EIO;
  OSSL_PARAM p[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikmlen),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, strlen(salt)),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info)),
      OSSL_PARAM_construct_end()};
  int ok = EVP_KDF_derive(k, out, outlen, p) == 1;
  EVP_KDF_CTX_free(k);
  return ok ? 0 : GPL_EIO;
}

/* A TLS 1.3 session that carries the channel's PSK (both sides build the same). */
static SSL_SESSION *psk_session(SSL *ssl, const tls_ctx_t *c) {
  static const unsigned char aes128gcm[2] = {0x13, 0x01}; /* TLS_AES_128_GCM_SHA256 */
  const SSL_CIPHER *ci = SSL_CIPHER_find(ssl, aes128gcm);
  SSL_SESSION *s = ci ? SSL_SESSION_new() : NULL;
  if (!s) return NULL;
  if (!SSL_SESSION_set1_master_key(s, c->key, sizeof c->key) || !SSL_SESSION_set_cipher(s, ci) ||
      !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return NULL;
  }
  return s;
}

static int use_psk(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess) {
  (void)md;
  const tls_ctx_t *c = SSL_get_app_data(ssl); /* the connection's channel (tls_new) */
  *sess = psk_session(ssl, c);
  if (!*sess) return 0;
  *id = (const unsigned char *)c->identity;
  *idlen = strlen(c->identity);
  return 1;
}

static int find_psk(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess) {
  const tls_ctx_t *c = SSL_get_app_data(ssl);
  *sess = NULL;
  /* Another channel's or another program's identity: no PSK, and with no certificate either
   * the handshake fails. */
  if (idlen != strlen(c->identity) || memcmp(id, c->identity, idlen) != 0) return 1;
  *sess = psk_session(ssl, c);
  return *sess ? 1 : 0;
}

static void openssl_why(char *out, size_t len) {
  unsigned long e = ERR_get_error(), last = e;
  while (e) {
    last = e;
    e = ERR_get_error();
  }
  if (last) ERR_error_string_n(last, out, len);
  else util_strlcpy(out, "connection closed during the handshake", len);
}

/* What every context of ours has: TLS 1.3 and nothing older; no tickets (no resumption: each
 * connection authenticates). */
static void base_settings(SSL_CTX *s) {
  SSL_CTX_set_min_proto_version(s, TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(s, TLS1_3_VERSION);
  SSL_CTX_set_options(s, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(s, 0);
  SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
}

/* The process's PSK context of one side, made at its first connection and kept: every channel's
 * connections share it (the channel, its identity and key, come from the connection's app data
 * in the callbacks). An SSL_CTX costs OpenSSL 3 about 0.15 ms to make (1 ms the first one in a
 * process): once per side instead of once per channel, and on the thread of the first connection
 * rather than before a collective. Thread-safe (the liveness thread and the supervisor's). */
static SSL_CTX *g_psk_ssl[2];
static pthread_mutex_t g_psk_mu = PTHREAD_MUTEX_INITIALIZER;

static SSL_CTX *psk_ssl_ctx(int server) {
  pthread_mutex_lock(&g_psk_mu);
  SSL_CTX *s = g_psk_ssl[server];
  if (!s && (s = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method())) != NULL) {
    base_settings(s);
    /* The PSK's hash (SHA-256) must be the suite's: a server that picked a SHA-384 suite would
     * pass over the key. (EC)DHE with the PSK (psk_dhe_ke, OpenSSL's default and the only mode
     * offered): forward secrecy, docs/security.md. */
    if (SSL_CTX_set_ciphersuites(s, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256") != 1) {
      SSL_CTX_free(s);
      s = NULL;
    } else {
      if (server) SSL_CTX_set_psk_find_session_callback(s, find_psk);
      else SSL_CTX_set_psk_use_session_callback(s, use_psk);
      g_psk_ssl[server] = s;
    }
  }
  pthread_mutex_unlock(&g_psk_mu);
  return s;
}

int tls_ctx_new(tls_ctx_t **out, const tls_cfg_t *cfg, const char *channel, int server) {
  *out = NULL;
  tls_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return GPL_ENOMEM;
  c->server = server;
  util_strlcpy(c->channel, channel, sizeof c->channel);
  snprintf(c->identity, sizeof c->identity, "gpulaunch/%s", channel);
  if (cfg->off) {
    c->plain = 1;
    *out = c;
    return 0;
  }
  if (cfg->cert && *cfg->cert && cfg->pkey && *cfg->pkey && cfg->ca && *cfg->ca) {
    c->ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    if (!c->ssl) goto fail;
    base_settings(c->ssl);
    if (SSL_CTX_use_certificate_chain_file(c->ssl, cfg->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(c->ssl, cfg->pkey, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(c->ssl) != 1 || SSL_CTX_load_verify_locations(c->ssl, cfg->ca, NULL) != 1) {
      char why[160];
      openssl_why(why, sizeof why);
      log_print("gpulaunch: [security] tls_cert %s, tls_key %s, tls_ca %s: cannot be used (%s)\n", cfg->cert,
                cfg->pkey, cfg->ca, why);
      SSL_CTX_free(c->ssl);
      free(c);
      return GPL_ECONFIG;
    }
    /* Mutual: each side shows a certificate of the site's CA. */
    SSL_CTX_set_verify(c->ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  } else {
    c->psk = 1;
    char info[64];
    snprintf(info, sizeof info, "channel %s", channel);
    if (tls_hkdf(cfg->key, TLS_KEY_LEN, SALT, info, c->key, sizeof c->key) < 0) goto fail;
  }
  *out = c;
  return 0;
fail:
  if (c->ssl) SSL_CTX_free(c->ssl);
  OPENSSL_cleanse(c->key, sizeof c->key);
  free(c);
  return GPL_EIO;
}

void tls_ctx_free(tls_ctx_t *c) {
  if (!c) return;
  SSL_CTX_free(c->ssl);
  OPENSSL_cleanse(c->key, sizeof c->key);
  free(c);
}

const char *tls_ctx_channel(const tls_ctx_t *c) { return c->channel; }

int tls_new(tls_t **out, tls_ctx_t *ctx, int fd) {
  *out = NULL;
  tls_t *t = calloc(1, sizeof *t);
  if (!t) return GPL_ENOMEM;
  t->ctx = ctx;
  t->fd = fd;
  if (!ctx->plain) {
    SSL_CTX *s = ctx->psk ? psk_ssl_ctx(ctx->server) : ctx->ssl;
    t->ssl = s ? SSL_new(s) : NULL;
    if (!t->ssl) goto fail;
    SSL_set_app_data(t->ssl, ctx); /* the channel, for the PSK callbacks */
  }
  /* Memory BIOs in both modes: on a socket, this file moves the bytes (send with
   * MSG_NOSIGNAL: a peer that went away never raises SIGPIPE in the caller). */
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (!t->rbio || !t->wbio) {
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    goto fail;
  }
  BIO_set_mem_eof_return(t->rbio, -1); /* empty: "want read", not EOF */
  if (ctx->plain) {
    t->done = 1;
    *out = t;
    return 0;
  }
  SSL_set_bio(t->ssl, t->rbio, t->wbio);
  if (ctx->server) SSL_set_accept_state(t->ssl);
  else SSL_set_connect_state(t->ssl);
  *out = t;
  return 0;
fail:
  if (t->ssl) SSL_free(t->ssl);
  free(t);
  return GPL_ENOMEM;
}

void tls_free(tls_t *t) {
  if (!t) return;
  if (t->ssl) SSL_free(t->ssl); /* (its BIOs with it) */
  else {
    BIO_free(t->rbio);
    BIO_free(t->wbio);
  }
  free(t);
}

/* An SSL call's result: 0 want I/O, GPL_EAUTH during the handshake, GPL_EIO after it. */
static int ssl_result(tls_t *t, int rc) {
  int e = SSL_get_error(t->ssl, rc);
  t->want_write = e == SSL_ERROR_WANT_WRITE;
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    ERR_clear_error();
    return 0;
  }
  if (e == SSL_ERROR_SYSCALL && errno == EINTR) return 0;
  if (e == SSL_ERROR_ZERO_RETURN) util_strlcpy(t->why, "closed by the peer", sizeof t->why);
  else openssl_why(t->why, sizeof t->why);
  ERR_clear_error();
  return t->done || e == SSL_ERROR_ZERO_RETURN ? GPL_EIO : GPL_EAUTH;
}

/* Socket mode: send what OpenSSL queued (bounded by deadline; 0 = do not wait). 0 or GPL_EIO /
 * GPL_ETIMEDOUT. */
static int fd_flush(tls_t *t, double deadline) {
  if (t->fd < 0) return 0;
  for (;;) {
    char *p;
    long n = BIO_get_mem_data(t->wbio, &p);
    if (n <= 0) return 0;
    ssize_t w = send(t->fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      char sink[4096];
      for (long left = w; left > 0;) left -= BIO_read(t->wbio, sink, (int)(left < (long)sizeof sink ? left : (long)sizeof sink));
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      double left = deadline - util_now();
      if (left <= 0) return deadline > 0 ? GPL_ETIMEDOUT : 0;
      struct pollfd pf = {.fd = t->fd, .events = POLLOUT};
      if (poll(&pf, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR) return GPL_EIO;
      continue;
    }
    util_strlcpy(t->why, "connection reset", sizeof t->why);
    return GPL_EIO;
  }
}

/* Socket mode: what arrived into OpenSSL. > 0 bytes, 0 nothing now, GPL_EIO closed. */
static int fd_fill(tls_t *t) {
  char buf[16384];
  for (;;) {
    ssize_t n = recv(t->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) return BIO_write(t->rbio, buf, (int)n) == (int)n ? (int)n : GPL_ENOMEM;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    util_strlcpy(t->why, n == 0 ? "closed by the peer" : "connection reset", sizeof t->why);
    return GPL_EIO;
  }
}

int tls_handshake(tls_t *t) {
  for (;;) {
    if (t->done) return 1;
    int rc = SSL_do_handshake(t->ssl);
    int fl = fd_flush(t, util_now() + 1.0); /* a handshake flight is small; 1 s at most */
    if (rc == 1) {
      t->done = 1;
      return fl < 0 ? fl : 1;
    }
    rc = ssl_result(t, rc);
    if (rc < 0) return rc == GPL_EIO ? GPL_EAUTH : rc; /* closed without a word: no peer of ours */
    if (fl < 0) return GPL_EIO;
    if (t->fd < 0) return 0;
    int got = fd_fill(t);
    if (got == 0) return 0;
    if (got < 0) return GPL_EAUTH;
  }
}

int tls_wants_write(const tls_t *t) { return t->want_write; }
int tls_ready(const tls_t *t) { return t->done; }
const char *tls_why(const tls_t *t) { return t->why; }

ssize_t tls_read(tls_t *t, void *buf, size_t len) {
  if (!t->done) {
    int h = tls_handshake(t);
    if (h <= 0) return h;
  }
  for (;;) {
    if (!t->ssl) { /* plain */
      int n = BIO_read(t->rbio, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
      if (n > 0) return n;
      if (t->fd < 0) return 0;
      int got = fd_fill(t);
      if (got <= 0) return got;
      continue;
    }
    int n = SSL_read(t->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
    if (fd_flush(t, 0) < 0) return GPL_EIO;
    if (n > 0) return n;
    int rc = ssl_result(t, n);
    if (rc < 0) return GPL_EIO;
    if (t->fd < 0) return 0;
    int got = fd_fill(t);
    if (got <= 0) return got;
  }
}

int tls_write(tls_t *t, const void *buf, size_t len) {
  if (len == 0) return 0;
  if (t->fd >= 0) return tls_write_all(t, buf, len, 1.0);
  /* memory BIO: takes all of it */
  int n = t->ssl ? SSL_write(t->ssl, buf, (int)len) : BIO_write(t->wbio, buf, (int)len);
  return n == (int)len ? 0 : GPL_EIO;
}

int tls_feed(tls_t *t, const void *buf, size_t len) {
  return BIO_write(t->rbio, buf, (int)len) == (int)len ? 0 : GPL_ENOMEM;
}

size_t tls_drain(tls_t *t, void *buf, size_t cap) {
  if (cap == 0) return 0;
  int n = BIO_read(t->wbio, buf, (int)(cap > 1 << 30 ? 1 << 30 : cap));
  return n > 0 ? (size_t)n : 0;
}

size_t tls_pending(const tls_t *t) { return BIO_ctrl_pending(t->wbio); }

int tls_handshake_wait(tls_t *t, double timeout_s) {
  double deadline = util_now() + timeout_s;
  for (;;) {
    int rc = tls_handshake(t);
    if (rc != 0) return rc > 0 ? 0 : rc;
    double left = deadline - util_now();
    struct pollfd pf = {.fd = t->fd, .events = POLLIN};
    if (left <= 0 || (poll(&pf, 1, (int)(left * 1000) + 1) == 0 && util_now() >= deadline)) {
      util_strlcpy(t->why, "no handshake in time", sizeof t->why);
      return GPL_ETIMEDOUT;
    }
  }
}

int tls_write_all(tls_t *t, const void *buf, size_t len, double timeout_s) {
  if (len && (t->ssl ? SSL_write(t->ssl, buf, (int)len) : BIO_write(t->wbio, buf, (int)len)) != (int)len)
    return GPL_EIO;
  return fd_flush(t, util_now() + timeout_s);
}

int tls_random(void *buf, size_t len) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      log_print("gpulaunch: no random bytes from the system (getrandom: %s): refusing to make a key "
                "from anything weaker\n", strerror(errno));
      return GPL_ESYS;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

void tls_hex(const uint8_t *in, size_t len, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = d[in[i] >> 4];
    out[2 * i + 1] = d[in[i] & 15];
  }
  out[2 * len] = 0;
}

static int nib(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int tls_unhex(const char *in, uint8_t *out, size_t len) {
  if (strlen(in) != 2 * len) return GPL_EINVAL;
  for (size_t i = 0; i < len; i++) {
    int h = nib(in[2 * i]), l = nib(in[2 * i + 1]);
    if (h < 0 || l < 0) return GPL_EINVAL;
    out[i] = (uint8_t)(h << 4 | l);
  }
  return 0;
}

int tls_same(const void *a, const void *b, size_t len) { return CRYPTO_memcmp(a, b, len) == 0; }
