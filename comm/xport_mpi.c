/* Host transport on MPI in this process: comm's own duplicates of the job's communicator, every
 * collective non-blocking with a deadline (large allreduces through node-local shared memory), and
 * a diagnosis that names the ranks that never came. */
#include "comm/xport_mpi.h"

#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"

enum {
  TAG_FLAGS = 0x1000,   /* + 2*(seq % 4096): bootstrap flag exchanges on x->comm */
  TAG_DIAG = 0x7700,    /* the one diagnosis after a timeout, on x->diag */
  TAG_SETUP = 0x7702,   /* diagnosis of a set-up that timed out, on the job's communicator */
  TAG_ARRIVAL = 0x7704, /* comm_mpi_arrival, on the program's communicator */
  TAG_SHM = 0x7706      /* shared-memory set-up (uses +2 too) */
};
enum { ENGINE_LOCAL = 0, ENGINE_MPI = 1, ENGINE_SHM = 2 };

typedef struct xport_mpi_s {
  MPI_Comm comm;   /* collectives and bootstrap flags */
  MPI_Comm diag;   /* the diagnosis exchange, apart from whatever is stuck on comm */
  shmcoll_t *shm;  /* large allreduces; NULL when not usable */
} xport_mpi_t;

/* ---- diagnosis ---- */

/* After a deadline passed in op #seq, every rank that got there says which op it is in (a bounded
 * flags exchange). Ranks that do not answer are missing; ranks in another op are out of step. */
static int diag_start(xport_op_t *x, MPI_Comm comm, int tag) {
  int n = x->c->size;
  x->dmine = (int)(x->seq & 0x7fffffff);
  x->dvals = calloc((size_t)n, sizeof *x->dvals);
  x->dans = calloc((size_t)n, sizeof *x->dans);
  if (!x->dvals || !x->dans) return GPL_ENOMEM;
  hostop_t op = {.kind = HOP_FLAGS, .send = &x->dmine, .recv = x->dvals, .answered = x->dans};
  CHECK(hostop_start(&x->d, &op, comm, tag, util_now() + comm_grace(x->timeout)));
  x->diagnosing = 1;
  return GPL_OK;
}

static void diag_report(xport_op_t *x) {
  gpl_comm_t *c = x->c;
  int n = c->size, nmiss = 0, nastray = 0;
  int *astray = calloc((size_t)n, sizeof *astray);
  strbuf_t msg = STRBUF_INIT;
  strbuf_printf(&msg, "timed out after %.1f s in %s (host op #%llu)", x->timeout, x->what,
                (unsigned long long)x->seq);
  for (int p = 0; p < n; p++) {
    nmiss += x->dans[p] == 0;
    if (astray) astray[p] = x->dans[p] > 0 && x->dvals[p] != x->dmine;
    nastray += x->dans[p] > 0 && x->dvals[p] != x->dmine;
  }
  if (nmiss) {
    char *l = comm_missing_list(c, x->dans);
    strbuf_printf(&msg, ": no answer from %s", l ? l : "?");
    free(l);
  }
  if (nastray && astray) {
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
  free(astray);
}

static void op_done(xport_op_t *x, int status) {
  free(x->dvals);
  free(x->dans);
  x->dvals = x->dans = NULL;
  x->done = 1;
  x->status = status;
}

/* ---- operations ---- */

int xport_mpi_start(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what,
                    xport_op_t *x) {
  xport_mpi_t *t = c->xp_state;
  memset(x, 0, sizeof *x);
  x->c = c;
  x->op = *op;
  x->what = what;
  x->timeout = timeout;
  /* before the sequence number moves: a refused op (a hostile program's, through the proxy)
   * leaves this rank's sequence where the others' is */
  CHECK(hostop_validate(op, c->size));
  x->seq = ++c->seq;
  double deadline = util_now() + timeout;
  if (c->size == 1) {
    x->engine = ENGINE_LOCAL;
    op_done(x, hostop_local(op));
    return GPL_OK;
  }
  if (t->shm && op->kind == HOP_ALLREDUCE &&
      hostop_recv_bytes(op, c->size) >= SHMCOLL_MIN_BYTES) {
    x->engine = ENGINE_SHM;
    return shmcoll_start(&x->s, t->shm, op, NULL, deadline);
  }
  x->engine = ENGINE_MPI;
  return hostop_start(&x->h, op, t->comm, TAG_FLAGS + 2 * (int)(x->seq % 4096), deadline);
}

int xport_mpi_test(xport_op_t *x) {
  xport_mpi_t *t = x->c->xp_state;
  if (x->done) return GPL_OK;
  if (x->diagnosing) {
    CHECK(hostop_test(&x->d));
    if (x->d.done) {
      diag_report(x);
      op_done(x, GPL_ETIMEDOUT);
    }
    return GPL_OK;
  }
  int done, status, explained = 0;
  if (x->engine == ENGINE_SHM) {
    CHECK(shmcoll_test(&x->s));
    done = x->s.done;
    status = x->s.status;
    explained = x->s.diagnosed;
  } else {
    CHECK(hostop_test(&x->h));
    done = x->h.done;
    status = x->h.status;
    explained = x->op.kind == HOP_FLAGS; /* the caller explains a flags exchange */
  }
  if (!done) return GPL_OK;
  if (status == GPL_ETIMEDOUT && !explained) return diag_start(x, t->diag, TAG_DIAG);
  op_done(x, status);
  return GPL_OK;
}

static int wait_op(xport_op_t *x);

static int mpi_run(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what) {
  xport_op_t x;
  CHECK(xport_mpi_start(c, op, timeout, what, &x));
  return wait_op(&x);
}

static int wait_op(xport_op_t *x) {
  double nap = 0;
  for (unsigned i = 0;; i++) {
    int rc = xport_mpi_test(x);
    if (rc < 0) {
      op_done(x, rc);
      return rc;
    }
    if (x->done) return x->status;
    hostop_pause(i, &nap);
  }
}

size_t xport_mpi_shm_chunk(gpl_comm_t *c, gpl_dtype_t dt) {
  xport_mpi_t *t = c->xp == &comm_xport_mpi ? c->xp_state : NULL;
  return t && t->shm && c->size > 1 ? shmcoll_chunk(t->shm, dt) : 0;
}

int xport_mpi_allreduce_io(gpl_comm_t *c, size_t count, gpl_dtype_t dt, gpl_redop_t op,
                           const shmcoll_io_t *io, const char *what) {
  xport_mpi_t *t = c->xp_state;
  if (c->broken) return GPL_ESTATE;
  xport_op_t x;
  memset(&x, 0, sizeof x);
  x.c = c;
  x.what = what;
  x.timeout = c->timeout;
  x.seq = ++c->seq;
  x.engine = ENGINE_SHM;
  x.op = (hostop_t){.kind = HOP_ALLREDUCE, .count = count, .dtype = dt, .op = op};
  CHECK(shmcoll_start(&x.s, t->shm, &x.op, io, util_now() + c->timeout));
  int rc = wait_op(&x);
  if (rc == GPL_ETIMEDOUT || rc == GPL_EMPI) c->broken = 1;
  return rc;
}

/* ---- set-up and tear-down ---- */

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
  xport_mpi_t *t = c->xp_state;
  if (!t) return;
  int fin = 0;
  MPI_Finalized(&fin);
  shmcoll_destroy(t->shm, c->broken);
  /* A communicator broken by a timeout still has a collective in flight that MPI cannot cancel;
   * freeing it under that operation crashes Open MPI's libnbc later (in MPI_Finalize's progress),
   * so a broken one is left to MPI. */
  if (!fin && !c->broken && t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
  if (!fin && !c->broken && t->diag != MPI_COMM_NULL) MPI_Comm_free(&t->diag);
  hostop_types_release();
  free(t);
  c->xp_state = NULL;
}

const comm_xport_t comm_xport_mpi = {"mpi", mpi_run, mpi_alloc, mpi_free, mpi_destroy};

int comm_xport_mpi_init(gpl_comm_t *c, MPI_Comm parent) {
  xport_mpi_t *t = calloc(1, sizeof *t);
  ALLOCCHECK(t);
  t->comm = t->diag = MPI_COMM_NULL;
  int rc = hostop_types_acquire();
  if (rc < 0) {
    free(t);
    return rc;
  }
  c->xp = &comm_xport_mpi;
  c->xp_state = t;
  /* Two private duplicates, one after the other (Open MPI 4.1 sometimes never completed one of
   * two concurrent MPI_Comm_idup), each with a deadline. Every rank must be here first: a
   * bounded barrier turns a rank that never comes into a name, and a dup that still stalls names
   * the pairs of ranks that cannot reach each other. */
  rc = mpix_barrier(parent, c->timeout, "communicator set-up");
  if (rc == GPL_OK) rc = mpix_comm_dup(parent, &t->comm, c->timeout, "communicator set-up");
  if (rc == GPL_OK) rc = mpix_comm_dup(parent, &t->diag, c->timeout, "communicator set-up");
  if (rc < 0) {
    c->broken = 1;
    return rc;
  }
  MPICHECK(MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN));
  MPICHECK(MPI_Comm_set_errhandler(t->diag, MPI_ERRORS_RETURN));
  if (c->size > 1) {
    rc = shmcoll_create(&t->shm, c, t->comm, TAG_SHM);
    if (rc < 0) {
      c->broken = rc == GPL_ETIMEDOUT;
      return rc;
    }
  }
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
    int n = 0, unknown = 0;
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
