/* Plays gpulaunch's supervisor around the comm proxy: every MPI rank starts the proxy on a libuv
 * loop, spawns a program (not an MPI process: it must use the proxy, though it inherits Open MPI's
 * variables) with GPULAUNCH_PROXY set, runs the loop until the program exits, stops the proxy and
 * exits with the program's status.
 *   mpirun -np 4 test_comm_proxy [--expect-log TEXT] -- PROGRAM ARGS...
 * --expect-log: this rank's log (the proxy's, and the program's) must contain TEXT, except on the
 * rank GPL_TEST_SLEEP_RANK names. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "comm/proxy.h"
#include "common/mpix.h"
#include "common/util.h"
#include "tests/comm/capture.h"

extern char **environ;

typedef struct host_s {
  comm_proxy_t *proxy;
  int exited;
  int64_t status;
  int signo;
} host_t;

static void on_exit_cb(uv_process_t *proc, int64_t status, int signo) {
  host_t *h = proc->data;
  h->exited = 1;
  h->status = status;
  h->signo = signo;
  uv_close((uv_handle_t *)proc, NULL);
  comm_proxy_stop(h->proxy); /* the loop ends once its handles have closed */
  h->proxy = NULL;
}

int main(int argc, char **argv) {
  const char *expect = NULL;
  int first = 1;
  for (; first < argc; first++) {
    if (strcmp(argv[first], "--expect-log") == 0 && first + 1 < argc) expect = argv[++first];
    else if (strcmp(argv[first], "--") == 0) {
      first++;
      break;
    }
  }
  if (first >= argc) {
    fprintf(stderr, "usage: test_comm_proxy [--expect-log TEXT] -- PROGRAM ARGS...\n");
    return 64;
  }
  MPI_Init(&argc, &argv);
  log_init();
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  log_set_identity(util_hostname(), rank);
  const char *sr = getenv("GPL_TEST_SLEEP_RANK");
  int sleeper = sr ? atoi(sr) : -1;
  static char log[1 << 16];
  if (expect && rank != sleeper) capture_begin();

  /* the job, as job_init would describe it: one node */
  enum { HL = 64 };
  char *names = calloc((size_t)size, HL);
  const char **hosts = calloc((size_t)size, sizeof *hosts);
  char mine[HL] = {0};
  util_strlcpy(mine, util_hostname(), HL);
  if (mpix_allgather(mine, HL, names, MPI_COMM_WORLD, 30, "host names") < 0) return 2;
  for (int r = 0; r < size; r++) hosts[r] = names + (size_t)r * HL;
  comm_job_t job = {.rank = rank, .size = size, .local_rank = rank, .local_size = size,
                    .node = 0, .nnodes = 1, .comm = MPI_COMM_WORLD, .hosts = hosts,
                    .timeout = mpix_default_timeout()};

  uv_loop_t loop;
  uv_loop_init(&loop);
  host_t h;
  memset(&h, 0, sizeof h);
  char path[256];
  int rc = comm_proxy_start(&loop, &job, &h.proxy, path, sizeof path);
  if (rc < 0) {
    fprintf(stderr, "rank %d: comm_proxy_start: %s\n", rank, gpl_strerror(rc));
    return 3;
  }
  /* the program's environment: ours (Open MPI's variables included) and the proxy */
  int n = 0;
  while (environ[n]) n++;
  char **env = calloc((size_t)n + 2, sizeof *env);
  for (int i = 0; i < n; i++) env[i] = environ[i];
  char proxy_var[300];
  snprintf(proxy_var, sizeof proxy_var, "%s=%s", COMM_PROXY_ENV, path);
  env[n] = proxy_var;

  uv_process_t proc;
  proc.data = &h;
  uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = 1}},
                                   {UV_INHERIT_FD, {.fd = 2}}};
  uv_process_options_t po;
  memset(&po, 0, sizeof po);
  po.file = argv[first];
  po.args = argv + first;
  po.env = env;
  po.exit_cb = on_exit_cb;
  po.stdio_count = 3;
  po.stdio = stdio;
  rc = uv_spawn(&loop, &proc, &po);
  if (rc < 0) {
    fprintf(stderr, "rank %d: cannot start %s: %s\n", rank, argv[first], uv_strerror(rc));
    comm_proxy_stop(h.proxy);
    uv_run(&loop, UV_RUN_DEFAULT);
    return 4;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  int code = h.signo ? 128 + h.signo : (int)h.status;
  if (expect && rank != sleeper) {
    capture_end(log, sizeof log);
    if (!strstr(log, expect)) {
      fprintf(stderr, "FAIL rank %d: the log does not contain \"%s\"\n", rank, expect);
      code = code ? code : 1;
    }
  }
  if (code) fprintf(stderr, "rank %d: the program exited with %d\n", rank, code);
  free(env);
  free(names);
  free(hosts);
  MPI_Finalize();
  return code;
}
