/* Fuzz target: the comm proxy's server, as a wrapped program reaches it. A real server runs on a
 * libuv loop in this process (a job of one: its collectives are local); each input is one
 * program: it connects and sends messages the input describes, well-formed requests with any
 * field values, memfds sealed or not, larger or smaller than declared and shrunk after sending,
 * and raw bytes, while the loop serves them. Oracle: the server (this process) never crashes,
 * never reads out of bounds (ASan), never hangs, and always takes the next program. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "comm/comm_job.h"
#include "comm/proxy_proto.h"
#include "common/log.h"
#include "fuzz.h"

static uv_loop_t g_loop;
static comm_proxy_t *g_proxy;
static char g_path[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  log_set_level(LOG_LVL_ERROR); /* every refusal warns; the fuzzer's output is its findings */
  uv_loop_init(&g_loop);
  comm_job_t job = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .node = 0, .nnodes = 1,
                    .comm = MPI_COMM_NULL, .hosts = NULL, .timeout = 5};
  if (comm_proxy_start(&g_loop, &job, &g_proxy, g_path, sizeof g_path) != 0) {
    fprintf(stderr, "fuzz_proxy: cannot start the proxy\n");
    exit(1);
  }
  return 0;
}

static void spin(int n) {
  for (int i = 0; i < n; i++) uv_run(&g_loop, UV_RUN_NOWAIT);
}

/* Take every reply waiting; 0 when the server closed the connection. */
static int drain(int fd) {
  for (;;) {
    proxy_rep_t rep;
    int rfd;
    ssize_t n = proxy_recv(fd, &rep, sizeof rep, &rfd, MSG_DONTWAIT);
    if (rfd >= 0) close(rfd);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 1;
    if (n <= 0) return 0;
  }
}

static size_t take(const uint8_t **d, size_t *n, void *out, size_t want) {
  size_t k = *n < want ? *n : want;
  memset(out, 0, want);
  memcpy(out, *d, k);
  *d += k;
  *n -= k;
  return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct sockaddr_un sa;
  unsigned salen = proxy_sockaddr(g_path, &sa);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  FUZZ_ASSERT(fd >= 0 && connect(fd, (struct sockaddr *)&sa, salen) == 0, "cannot connect: %s",
              strerror(errno));
  spin(3);
  int open_ = 1;
  for (int msgs = 0; open_ && size > 0 && msgs < 64; msgs++) {
    uint8_t sel = *data++;
    size--;
    if (sel % 5 == 0) { /* raw bytes of any length */
      uint8_t len = 0;
      take(&data, &size, &len, 1);
      uint8_t raw[256];
      size_t k = take(&data, &size, raw, len);
      (void)send(fd, raw, k, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
      proxy_req_t q;
      take(&data, &size, &q, sizeof q);
      if (sel & 0x10) q.magic = PROXY_MAGIC;
      if (sel & 0x20) q.type = 1 + (q.type % 6);
      if (q.type == PROXY_HELLO && (sel & 0x40)) q.version = PROXY_VERSION;
      if (q.type == PROXY_OP && (sel & 0x80)) { /* near the happy path: small, plausible */
        q.count %= 4096;
        q.kind %= 8;
        q.dtype %= 12;
        q.send.region %= 4;
        q.recv.region %= 4;
        q.send.off %= 8192;
        q.recv.off %= 8192;
        q.timeout = 1;
      }
      int mfd = -1;
      uint8_t how = 0;
      if (q.type == PROXY_MAP || (sel & 0x08)) {
        take(&data, &size, &how, 1);
        size_t real = ((size_t)how * 4096) % (1u << 20);
        if (how & 1) q.size = real;
        else q.size %= 1u << 21;
        q.region %= 8;
        mfd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd >= 0 && ftruncate(mfd, (off_t)real) == 0 && (how & 2))
          (void)fcntl(mfd, F_ADD_SEALS, PROXY_REGION_SEALS);
      }
      (void)proxy_send(fd, &q, sizeof q, mfd, MSG_DONTWAIT);
      if (mfd >= 0) {
        if (how & 4) (void)ftruncate(mfd, 0); /* shrink it under the server's mapping */
        close(mfd);
      }
    }
    spin(4);
    open_ = drain(fd);
  }
  close(fd);
  spin(6); /* the server notices and drops this program: the next one must get in */
  return 0;
}
