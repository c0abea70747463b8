/* Host transport on MPI in this process: comm's own duplicates of the job's communicator, every
 * collective non-blocking with a deadline, and a diagnosis that names the ranks that never came. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"

enum {
  TAG_FLAGS = 0x1000, /* + 2*(seq % 4096): bootstrap flag exchanges on x->comm */
  TAG_DIAG = 0x7700,  /* the one diagnosis after a timeout, on x->diag */
  TAG_SETUP = 0x7702, /* diagnosis of a set-up that timed out, on the job's communicator */
  TAG_ARRIVAL = 0x7704 /* comm_mpi_arrival, on the program's communicator */
};

typedef struct xport_mpi_s {
  MPI_Comm comm; /* collectives and bootstrap flags */
  MPI_Comm diag; /* the diagnosis exchange, apart from whatever is stuck on comm */
} xport_mpi_t;

/* After a deadline passed in op #seq: ask every rank, with a short deadline of its own, which op
 * it is in. Ranks that do not answer are missing; ranks in another op are out of step. */
static void diagnose(gpl_comm_t *c, MPI_Comm comm, int tag, uint64_t seq, double waited,
                     const char *what) {
  int n = c->size, mine = (int)(seq & 0x7fffffff);
  int *vals = calloc((size_t)n, sizeof *vals), *ans = calloc((size_t)n, sizeof *ans);
  int *missing = calloc((size_t)n, sizeof *missing), *astray = calloc((size_t)n, sizeof *astray);
  if (!vals || !ans || !missing || !astray) {
    LOG_ERROR("timed out after %.1f s in %s (and out of memory to find out who is missing)",
              waited, what);
    goto out;
  }
  hostop_t op = {.kind = HOP_FLAGS, .send = &mine, .recv = vals, .answered = ans};
  hostop_run_t r;
  int nmiss = 0, nastray = 0;
  if (hostop_start(&r, &op, comm, tag, util_now() + comm_grace(waited)) == GPL_OK)
    (void)hostop_wait(&r);
  for (int p = 0; p < n; p++) {
    missing[p] = ans[p] == 0;
    astray[p] = ans[p] > 0 && vals[p] != mine;
    nmiss += missing[p];
    nastray += astray[p];
  }
  strbuf_t msg = STRBUF_INIT;
  strbuf_printf(&msg, "timed out after %.1f s in %s (host op #%llu)", waited, what,
                (unsigned long long)seq);
  if (nmiss) {
    char *l = comm_missing_list(c, ans);
    strbuf_printf(&msg, ": no answer from %s", l ? l : "?");
    free(l);
  }
  if (nastray) {
    char *l = comm_rank_list(c, astray);
    strbuf_printf(&msg, "%s %s %s in a different operation", nmiss ? ";" : ":", l ? l : "?",
                  nastray > 1 ? "are" : "is");
    free(l);
  }
  if (!nmiss && !nastray)
    strbuf_append(&msg, ": every rank arrived but the operation did not complete (MPI or network "
                        "problem, or a deadline too short for this size)");
  LOG_ERROR("%s", strbuf_str(&msg));
  strbuf_free(&msg);
out:
  free(vals);
  free(ans);
  free(missing);
  free(astray);
}

static int mpi_run(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what) {
  xport_mpi_t *x = c->xp_state;
  uint64_t seq = ++c->seq;
  if (c->size == 1) {
    CHECK(hostop_validate(op, 1));
    return hostop_local(op);
  }
  hostop_run_t r;
  int tag = TAG_FLAGS + 2 * (int)(seq % 4096);
  CHECK(hostop_start(&r, op, x->comm, tag, util_now() + timeout));
  int rc = hostop_wait(&r);
  if (rc == GPL_ETIMEDOUT && op->kind != HOP_FLAGS)
    diagnose(c, x->diag, TAG_DIAG, seq, timeout, what);
  return rc;
}

static int mpi_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  (void)c;
  *p = bytes ? malloc(bytes) : NULL;
  return bytes && !*p ? GPL_ENOMEM : GPL_OK;
}

static void mpi_free(gpl_comm_t *c, void *p) {
  (void)c;
  free(p);
}

static void mpi_destroy(gpl_comm_t *c) {
  xport_mpi_t *x = c->xp_state;
  if (!x) return;
  int fin = 0;
  MPI_Finalized(&fin);
  /* A communicator broken by a timeout still has a collective in flight that MPI cannot cancel;
   * freeing it under that operation crashes Open MPI's libnbc later (in MPI_Finalize's progress),
   * so a broken one is left to MPI. */
  if (!fin && !c->broken && x->comm != MPI_COMM_NULL) MPI_Comm_free(&x->comm);
  if (!fin && !c->broken && x->diag != MPI_COMM_NULL) MPI_Comm_free(&x->diag);
  hostop_types_release();
  free(x);
  c->xp_state = NULL;
}

const comm_xport_t comm_xport_mpi = {"mpi", mpi_run, mpi_alloc, mpi_free, mpi_destroy};

int comm_xport_mpi_init(gpl_comm_t *c, MPI_Comm parent) {
  xport_mpi_t *x = calloc(1, sizeof *x);
  ALLOCCHECK(x);
  x->comm = x->diag = MPI_COMM_NULL;
  c->xp = &comm_xport_mpi;
  c->xp_state = x;
  int rc = hostop_types_acquire();
  if (rc < 0) {
    free(x);
    c->xp_state = NULL;
    return rc;
  }
  /* Two private duplicates, made with MPI_Comm_idup so that a rank that never comes is a
   * deadline and a name, not a hang. */
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPICHECK(MPI_Comm_idup(parent, &x->comm, &reqs[0]));
  MPICHECK(MPI_Comm_idup(parent, &x->diag, &reqs[1]));
  double deadline = util_now() + c->timeout, nap = 1e-5;
  for (unsigned i = 0;; i++) {
    int done = 0;
    MPICHECK(MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE));
    if (done) break;
    if (util_now() >= deadline) {
      /* The requests stay with MPI (a collective cannot be cancelled); x->comm and x->diag are
       * not ours to free until they complete, so forget them. */
      x->comm = x->diag = MPI_COMM_NULL;
      diagnose(c, parent, TAG_SETUP, 0, c->timeout, "communicator set-up (MPI_Comm_idup)");
      return GPL_ETIMEDOUT;
    }
    if (i > 64) util_sleep(nap);
    if (i > 64 && nap < 1e-3) nap *= 2;
  }
  MPICHECK(MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN));
  MPICHECK(MPI_Comm_set_errhandler(x->diag, MPI_ERRORS_RETURN));
  return GPL_OK;
}

int comm_mpi_arrival(MPI_Comm comm, double timeout, const char *what) {
  int rank = 0, size = 0, mine = 1;
  MPICHECK(MPI_Comm_rank(comm, &rank));
  MPICHECK(MPI_Comm_size(comm, &size));
  if (size == 1) return GPL_OK;
  int *vals = calloc((size_t)size, sizeof *vals), *ans = calloc((size_t)size, sizeof *ans);
  if (!vals || !ans) {
    free(vals);
    free(ans);
    return GPL_ENOMEM;
  }
  hostop_t op = {.kind = HOP_FLAGS, .send = &mine, .recv = vals, .answered = ans};
  hostop_run_t r;
  int rc = hostop_start(&r, &op, comm, TAG_ARRIVAL, util_now() + timeout);
  if (rc == GPL_OK) rc = hostop_wait(&r);
  if (rc == GPL_ETIMEDOUT) {
    strbuf_t msg = STRBUF_INIT;
    int n = 0;
    int unknown = 0;
    for (int p = 0; p < size; p++) {
      if (ans[p] == 0) strbuf_printf(&msg, "%srank %d", n++ ? ", " : "", p);
      unknown += ans[p] < 0;
    }
    if (unknown) strbuf_printf(&msg, ", which gathers the answers (%d other rank%s could not be "
                                     "asked)", unknown, unknown > 1 ? "s" : "");
    LOG_ERROR("timed out after %.1f s in %s: no answer from %s", timeout, what, strbuf_str(&msg));
    strbuf_free(&msg);
  }
  free(vals);
  free(ans);
  return rc;
}
