/* Plays gpulaunch's supervisor around the comm proxy: every MPI rank starts the proxy on a libuv
 * loop, spawns a program (not an MPI process: it must use the proxy, though it inherits Open MPI's
 * variables) with GPULAUNCH_PROXY set, runs the loop until the program exits, stops the proxy and
 * exits with the program's status.
 *   mpirun -np 4 test_comm_proxy [--expect-log TEXT] [--attempts N [--kill-after S]] -- PROGRAM...
 * --attempts: run the program N times in a row (restarts; GPULAUNCH_RESTART_COUNT=attempt), the
 * proxy staying up; --kill-after: kill the first attempt's program after S seconds.
 * --expect-log: this rank's log (the proxy's, and the program's) must contain TEXT, except on the
 * rank GPL_TEST_SLEEP_RANK names. */
#include <mpi.h>
#include <signal.h>
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
  uv_loop_t *loop;
  comm_proxy_t *proxy;
  uv_process_t proc;
  uv_timer_t killer;
  uv_process_options_t po;
  int attempt, attempts;
  double kill_after;
  int64_t status;
  int signo;
  char attempt_var[64];
} host_t;

static void spawn(host_t *h);

static void on_kill(uv_timer_t *t) {
  host_t *h = t->data;
  uv_process_kill(&h->proc, SIGKILL);
}

static void on_proc_closed(uv_handle_t *hd) {
  host_t *h = hd->data;
  if (++h->attempt < h->attempts) {
    spawn(h); /* a restart: the proxy stays, the program connects again */
    return;
  }
  uv_close((uv_handle_t *)&h->killer, NULL);
  comm_proxy_stop(h->proxy); /* the loop ends once its handles have closed */
  h->proxy = NULL;
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int signo) {
  host_t *h = proc->data;
  h->status = status;
  h->signo = signo;
  uv_timer_stop(&h->killer);
  uv_close((uv_handle_t *)proc, on_proc_closed);
}

static void spawn(host_t *h) {
  snprintf(h->attempt_var, sizeof h->attempt_var, "GPULAUNCH_RESTART_COUNT=%d", h->attempt);
  h->proc.data = h;
  int rc = uv_spawn(h->loop, &h->proc, &h->po);
  if (rc < 0) {
    fprintf(stderr, "cannot start %s: %s\n", h->po.file, uv_strerror(rc));
    h->status = 4;
    h->attempt = h->attempts;
    uv_close((uv_handle_t *)&h->killer, NULL);
    comm_proxy_stop(h->proxy);
    h->proxy = NULL;
    return;
  }
  if (h->kill_after > 0 && h->attempt == 0)
    uv_timer_start(&h->killer, on_kill, (uint64_t)(h->kill_after * 1000), 0);
}

int main(int argc, char **argv) {
  const char *expect = NULL;
  int first = 1, attempts = 1;
  double kill_after = 0;
  for (; first < argc; first++) {
    if (strcmp(argv[first], "--expect-log") == 0 && first + 1 < argc) expect = argv[++first];
    else if (strcmp(argv[first], "--attempts") == 0 && first + 1 < argc)
      attempts = atoi(argv[++first]);
    else if (strcmp(argv[first], "--kill-after") == 0 && first + 1 < argc)
      kill_after = atof(argv[++first]);
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
  h.loop = &loop;
  h.attempts = attempts > 0 ? attempts : 1;
  h.kill_after = kill_after;
  uv_timer_init(&loop, &h.killer);
  h.killer.data = &h;
  char path[256];
  int rc = comm_proxy_start(&loop, &job, &h.proxy, path, sizeof path);
  if (rc < 0) {
    fprintf(stderr, "rank %d: comm_proxy_start: %s\n", rank, gpl_strerror(rc));
    return 3;
  }
  /* the program's environment: ours (Open MPI's variables included) and the proxy */
  int n = 0;
  while (environ[n]) n++;
  char **env = calloc((size_t)n + 3, sizeof *env);
  for (int i = 0; i < n; i++) env[i] = environ[i];
  char proxy_var[300];
  snprintf(proxy_var, sizeof proxy_var, "%s=%s", COMM_PROXY_ENV, path);
  env[n] = proxy_var;
  env[n + 1] = h.attempt_var;

  uv_stdio_container_t stdio[3] = {{UV_IGNORE, {0}}, {UV_INHERIT_FD, {.fd = 1}},
                                   {UV_INHERIT_FD, {.fd = 2}}};
  h.po.file = argv[first];
  h.po.args = argv + first;
  h.po.env = env;
  h.po.exit_cb = on_exit_cb;
  h.po.stdio_count = 3;
  h.po.stdio = stdio;
  spawn(&h);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  int code = h.signo ? 128 + h.signo : (int)h.status; /* the last attempt's */
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
