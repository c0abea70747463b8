/* TLS 1.3 for gpulaunch's control channels (OpenSSL 3): mutual authentication by an external
 * pre-shared key derived per job and per channel from the job key (HKDF-SHA256), or by a site's
 * PKI (mutual TLS); connections over memory BIOs (for libuv loops) or over a socket. */
#ifndef GPL_COMMON_TLS_H
#define GPL_COMMON_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TLS_KEY_LEN 32 /* the job key and every channel key: 256 bits */

/* How a job's channels are secured ([security] in the config). */
typedef struct tls_cfg_s {
  int off;                        /* [security] tls = off: plain TCP (one warning line) */
  uint8_t key[TLS_KEY_LEN];       /* the job key (PSK mode) */
  const char *cert, *pkey, *ca;   /* a site's PKI: all three set -> mutual TLS with certificates */
} tls_cfg_t;

typedef struct tls_ctx_s tls_ctx_t; /* one channel's settings, one side (client or server) */
typedef struct tls_s tls_t;         /* one connection */

/* HKDF-SHA256 (RFC 5869) of ikm with salt and info into out (outlen bytes). 0 or GPL_EIO. */
int tls_hkdf(const uint8_t *ikm, size_t ikmlen, const char *salt, const char *info, uint8_t *out, size_t outlen);

/* One channel's context ("live", "front", "preflight": its key and PSK identity are derived from
 * the job key and this name, so a record of one channel means nothing to another). server: the
 * side that accepts. 0, or a negative code (a PKI file that cannot be read: said on stderr). */
int tls_ctx_new(tls_ctx_t **out, const tls_cfg_t *cfg, const char *channel, int server);
void tls_ctx_free(tls_ctx_t *ctx);
const char *tls_ctx_channel(const tls_ctx_t *ctx);

/* A connection: fd >= 0 reads and writes that (non-blocking) socket; fd < 0 uses memory buffers
 * (tls_feed / tls_drain). PSK channels share the process's OpenSSL context of their side, made by
 * the first connection (thread-safe). 0 or GPL_ENOMEM. */
int tls_new(tls_t **out, tls_ctx_t *ctx, int fd);
void tls_free(tls_t *t);

/* Drive the handshake: 1 done, 0 it waits for the peer (send tls_drain's bytes, feed what comes;
 * on a socket: poll for POLLIN), GPL_EAUTH the peer failed it (no
 * TLS 1.3, no key or the wrong one, no valid certificate; tls_why says), GPL_EIO closed. */
int tls_handshake(tls_t *t);
int tls_wants_write(const tls_t *t);
/* The handshake completed. */
int tls_ready(const tls_t *t);
/* Plaintext received: > 0 bytes, 0 none yet, GPL_EIO closed or broken (a record that fails its
 * MAC, a replayed or cut record). Before the handshake completes it drives it. */
ssize_t tls_read(tls_t *t, void *buf, size_t len);
/* Queue plaintext (memory mode: as records for tls_drain; socket mode: written, 0 when all of
 * it went out, GPL_EIO when the socket would not take it). */
int tls_write(tls_t *t, const void *buf, size_t len);
/* Memory mode: records from the peer in; records for the peer out (bytes copied, <= cap). */
int tls_feed(tls_t *t, const void *buf, size_t len);
size_t tls_drain(tls_t *t, void *buf, size_t cap);
size_t tls_pending(const tls_t *t);
/* Socket mode, blocking with a deadline (CLOCK_MONOTONIC seconds, util_now): the handshake; the
 * whole buffer written. 0, GPL_ETIMEDOUT, GPL_EAUTH, GPL_EIO. */
int tls_handshake_wait(tls_t *t, double timeout_s);
int tls_write_all(tls_t *t, const void *buf, size_t len, double timeout_s);
/* Why the last call failed (OpenSSL's reason, e.g. "unsupported protocol"), or "". */
const char *tls_why(const tls_t *t);

/* A peer failed authentication on channel from peer ("10.0.0.5"): counted per source address,
 * the first failure from an address logged at once (with the reason), later ones summed up by
 * tls_fail_report. The hook (e.g. the audit log) is called at an address's first failure (count 1) and
 * from tls_fail_report with its count so far, never once per connection. */
typedef void (*tls_fail_fn)(const char *channel, const char *peer, unsigned count);
void tls_set_fail_hook(tls_fail_fn fn);
void tls_fail_note(const char *channel, const char *peer, const char *why);
/* One line per source address whose failures were not all logged yet ("N failures"). */
void tls_fail_report(void);
/* Total failures counted (tests). */
unsigned tls_fail_total(void);

/* Fill buf with random bytes from the OS (getrandom). 0 or GPL_ESYS: never a weaker fallback. */
int tls_random(void *buf, size_t len);
/* Hex of len bytes into out (2*len+1), and back (0 or GPL_EINVAL). */
void tls_hex(const uint8_t *in, size_t len, char *out);
int tls_unhex(const char *in, uint8_t *out, size_t len);
/* Constant-time comparison: 1 equal. */
int tls_same(const void *a, const void *b, size_t len);

#endif
