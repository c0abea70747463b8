/* A lone rank of 2 on the nccl backend, without MPI or a second process: rank 0 of a job of two
 * whose peer agrees on the backend and then never joins NCCL (a host transport of the test's own
 * plays that peer). The non-blocking ncclCommInitRankConfig must give up at the init timeout, the
 * message must name rank 1, ncclCommAbort must return, and all of it within a bound. Prints
 * "init timeout ... s, abort ... s". Exit 77 where the nccl backend cannot run (no GPU, no NCCL,
 * or a build without CUDA).
 * usage: test_comm_lone [INIT_TIMEOUT_S]   (default 3) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "common/util.h"

static int g_flags_calls;

/* The peer's part: it answers the first flags exchange (the backend agreement: "nccl works here"),
 * then is silent, as a rank that died or hangs before ncclCommInitRankConfig. Broadcasts from
 * rank 0 need no answer. */
static int lone_run(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what) {
  (void)what;
  c->seq++;
  if (op->kind == HOP_BCAST) return GPL_OK;
  if (op->kind != HOP_FLAGS) return GPL_ENOTSUP;
  int *all = op->recv;
  all[0] = *(const int *)op->send;
  op->answered[0] = 1;
  if (g_flags_calls++ == 0) {
    all[1] = 0;
    op->answered[1] = 1;
    return GPL_OK;
  }
  util_sleep(timeout); /* the deadline passes with no word from rank 1 */
  all[1] = 0;
  op->answered[1] = 0;
  return GPL_ETIMEDOUT;
}
static int lone_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  (void)c;
  *p = bytes ? malloc(bytes) : NULL;
  return bytes && !*p ? GPL_ENOMEM : GPL_OK;
}
static void lone_free(gpl_comm_t *c, void *p) {
  (void)c;
  free(p);
}
static void lone_destroy(gpl_comm_t *c) { (void)c; }
static const comm_xport_t lone_xport = {"lone rank of 2 (test)", lone_run, lone_alloc, lone_free,
                                        lone_destroy};

int main(int argc, char **argv) {
  double init_timeout = argc > 1 ? atof(argv[1]) : 3.0;
  log_init();
  char why[512] = "";
  gpl_comm_t probe = {.rank = 0, .size = 1, .local_size = 1, .nnodes = 1, .device = -1};
  if (comm_backend_nccl.probe(&probe, -1, why, sizeof why) != GPL_OK) {
    printf("SKIP: nccl backend unavailable here (%s)\n", why);
    return 77;
  }
  const char *hosts[2] = {util_hostname(), "peer-that-never-comes"};
  comm_job_t job = {.rank = 0, .size = 2, .local_rank = 0, .local_size = 1, .node = 0, .nnodes = 2,
                    .comm = MPI_COMM_NULL, .hosts = hosts, .timeout = 2.0};
  gpl_comm_t *c = NULL;
  if (comm_new(&c, &job) != GPL_OK) return 1;
  c->xp = &lone_xport;
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = GPL_BACKEND_NCCL;
  o.init_timeout = init_timeout;
  o.timeout = 2.0;
  double t0 = util_now();
  int rc = comm_start_backend(c, &o);
  double took = util_now() - t0;
  comm_free(c);
  double bound = init_timeout + comm_grace(init_timeout) + 20.0; /* NCCL's abort: seconds at most */
  printf("lone rank of 2: comm_start_backend -> %s after %.2f s (init timeout %.1f s, bound %.1f s)\n",
         gpl_err_name(rc), took, init_timeout, bound);
  if (rc != GPL_ETIMEDOUT) {
    printf("FAIL: expected GPL_ETIMEDOUT\n");
    return 1;
  }
  if (took < init_timeout || took > bound) {
    printf("FAIL: took %.2f s, outside [%.1f, %.1f]\n", took, init_timeout, bound);
    return 1;
  }
  printf("ok: init timed out and the communicator was aborted\n");
  return 0;
}
