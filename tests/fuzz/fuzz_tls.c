/* Fuzz target: what a peer without the job key can send to a TLS listener of the control channels
 * (common/tls.c, memory mode as liveness.c and the preflight use it): the input, cut into chunks
 * by its first bytes, fed to a server with the "live" channel's PSK, the handshake driven and
 * records read after each chunk. Oracle: no plaintext is ever delivered (whoever lacks the key
 * cannot make a record the server accepts), and the server's answers are whole TLS records. The
 * same bytes as a line of the front channel (frontproto_arg): an argument is the rest of the line
 * after "WORD ". */
#include <string.h>

#include "common/tls.h"
#include "fuzz.h"
#include "launcher/sup/frontproto.h"

static tls_ctx_t *g_srv;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  tls_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  memset(cfg.key, 0x5a, sizeof cfg.key);
  return tls_ctx_new(&g_srv, &cfg, "live", 1);
}

static void check_records(const unsigned char *b, size_t n) {
  size_t i = 0;
  while (i + 5 <= n) {
    FUZZ_ASSERT(b[i] >= 20 && b[i] <= 23, "record type %d", b[i]);
    size_t len = (size_t)b[i + 3] << 8 | b[i + 4];
    i += 5 + len;
  }
  FUZZ_ASSERT(i == n, "answer of %zu bytes is not whole records", n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_srv && LLVMFuzzerInitialize(NULL, NULL) < 0) return 0;
  tls_t *t = NULL;
  if (tls_new(&t, g_srv, -1) < 0) return 0;
  size_t chunk = size ? (size_t)data[0] * 4 + 1 : 1;
  unsigned char out[65536], plain[4096];
  for (size_t off = size ? 1 : 0; off < size; off += chunk) {
    size_t n = size - off < chunk ? size - off : chunk;
    tls_feed(t, data + off, n);
    int h = tls_handshake(t);
    size_t m = tls_drain(t, out, sizeof out);
    check_records(out, m);
    if (h < 0) break;
    ssize_t r = tls_read(t, plain, sizeof plain);
    FUZZ_ASSERT(r <= 0, "%zd bytes of plaintext from a peer without the key", r);
    if (r < 0) break;
  }
  tls_free(t);
  /* The front channel's words on the same bytes, as one line. */
  char line[FRONTPROTO_LINE_MAX];
  size_t n = size < sizeof line - 1 ? size : sizeof line - 1;
  memcpy(line, data, n);
  line[n] = 0;
  static const char *const words[] = {FRONTPROTO_HELLO, FRONTPROTO_TELL, FRONTPROTO_LOST, FRONTPROTO_NOTICE,
                                      FRONTPROTO_EXIT, FRONTPROTO_STOP};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    const char *a = frontproto_arg(line, words[i]);
    if (a) FUZZ_ASSERT(a == line + strlen(words[i]) + 1 && a[-1] == ' ', "argument of %s misplaced", words[i]);
  }
  return 0;
}
