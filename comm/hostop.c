/* Host collectives on MPI as pollable operations: non-blocking MPI calls, a deadline checked on
 * every poll, half/bfloat16 reductions as MPI user ops, and the bounded flags exchange that names
 * the ranks that did not answer. */
#include "comm/hostop.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"
#include "comm/reduce.h"

/* ---- dtypes ---- */

size_t hostop_dtype_size(gpl_dtype_t dt) { return gpl_dtype_size(dt); }

static int is_float16(gpl_dtype_t dt) { return dt == GPL_HALF || dt == GPL_BFLOAT16; }

MPI_Datatype hostop_mpi_type(gpl_dtype_t dt) {
  switch (dt) {
    case GPL_INT8: return MPI_INT8_T;
    case GPL_UINT8: return MPI_UINT8_T;
    case GPL_INT32: return MPI_INT32_T;
    case GPL_UINT32: return MPI_UINT32_T;
    case GPL_INT64: return MPI_INT64_T;
    case GPL_UINT64: return MPI_UINT64_T;
    case GPL_FLOAT: return MPI_FLOAT;
    case GPL_DOUBLE: return MPI_DOUBLE;
    case GPL_HALF: /* 16-bit floats travel as 16-bit words and are reduced by our user ops */
    case GPL_BFLOAT16: return MPI_UINT16_T;
    default: return MPI_DATATYPE_NULL;
  }
}

/* User ops for 16-bit floats: reduce_into converts each pair to float, computes, and rounds back
 * to nearest even, as NCCL does for half. */
#define F16_OP(name, dt, op)                                                           \
  static void name(void *in, void *inout, int *len, MPI_Datatype *type) {              \
    (void)type;                                                                        \
    reduce_into(inout, in, (size_t)*len, dt, op);                                      \
  }
F16_OP(half_sum, GPL_HALF, GPL_OP_SUM)
F16_OP(half_prod, GPL_HALF, GPL_OP_PROD)
F16_OP(half_max, GPL_HALF, GPL_OP_MAX)
F16_OP(half_min, GPL_HALF, GPL_OP_MIN)
F16_OP(bf16_sum, GPL_BFLOAT16, GPL_OP_SUM)
F16_OP(bf16_prod, GPL_BFLOAT16, GPL_OP_PROD)
F16_OP(bf16_max, GPL_BFLOAT16, GPL_OP_MAX)
F16_OP(bf16_min, GPL_BFLOAT16, GPL_OP_MIN)

static MPI_User_function *const g_f16_fns[2][4] = {
    {half_sum, half_prod, half_max, half_min},
    {bf16_sum, bf16_prod, bf16_max, bf16_min},
};
static MPI_Op g_f16_ops[2][4];
static int g_types_refs;

int hostop_types_acquire(void) {
  if (g_types_refs++ > 0) return GPL_OK;
  for (int t = 0; t < 2; t++)
    for (int o = 0; o < 4; o++) {
      int rc = MPI_Op_create(g_f16_fns[t][o], 1, &g_f16_ops[t][o]);
      if (rc != MPI_SUCCESS) {
        LOG_WARN("MPI_Op_create for 16-bit float reductions failed (%d)", rc);
        g_types_refs--;
        return GPL_EMPI;
      }
    }
  return GPL_OK;
}

void hostop_types_release(void) {
  if (g_types_refs <= 0 || --g_types_refs > 0) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  for (int t = 0; t < 2; t++)
    for (int o = 0; o < 4; o++) MPI_Op_free(&g_f16_ops[t][o]);
}

MPI_Op hostop_mpi_op(gpl_dtype_t dt, gpl_redop_t op) {
  int o = op == GPL_OP_PROD ? 1 : op == GPL_OP_MAX ? 2 : op == GPL_OP_MIN ? 3 : 0; /* avg: sum */
  if (is_float16(dt)) return g_f16_ops[dt == GPL_BFLOAT16][o];
  static const MPI_Op builtin[4] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  return builtin[o];
}

/* ---- sizes and validation ---- */

size_t hostop_send_bytes(const hostop_t *op, int size) {
  size_t e = hostop_dtype_size(op->dtype), n = op->count;
  switch (op->kind) {
    case HOP_ALLREDUCE:
    case HOP_BCAST:
    case HOP_ALLGATHER: return n * e;
    case HOP_REDUCE_SCATTER:
    case HOP_ALLTOALL: return n * e * (size_t)size;
    case HOP_FLAGS: return sizeof(int);
    default: return 0;
  }
}

size_t hostop_recv_bytes(const hostop_t *op, int size) {
  size_t e = hostop_dtype_size(op->dtype), n = op->count;
  switch (op->kind) {
    case HOP_ALLREDUCE:
    case HOP_BCAST:
    case HOP_REDUCE_SCATTER: return n * e;
    case HOP_ALLGATHER:
    case HOP_ALLTOALL: return n * e * (size_t)size;
    case HOP_FLAGS: return sizeof(int) * (size_t)size;
    default: return 0;
  }
}

static int overlap(const void *a, size_t na, const void *b, size_t nb) {
  const char *pa = a, *pb = b;
  return na && nb && pa < pb + nb && pb < pa + na;
}

int hostop_validate(const hostop_t *op, int size) {
  if ((unsigned)op->kind >= HOP_KIND_COUNT) return GPL_EINVAL;
  if (op->kind == HOP_BARRIER) return GPL_OK;
  if (op->kind == HOP_FLAGS) return op->send && op->recv && op->answered ? GPL_OK : GPL_EINVAL;
  if ((unsigned)op->dtype >= GPL_DTYPE_COUNT) {
    LOG_WARN("unknown dtype %d", (int)op->dtype);
    return GPL_EINVAL;
  }
  if ((op->kind == HOP_ALLREDUCE || op->kind == HOP_REDUCE_SCATTER) &&
      (unsigned)op->op >= GPL_REDOP_COUNT) {
    LOG_WARN("unknown reduction op %d", (int)op->op);
    return GPL_EINVAL;
  }
  if (op->kind == HOP_BCAST && (op->root < 0 || op->root >= size)) {
    LOG_WARN("broadcast root %d is not a rank (size %d)", op->root, size);
    return GPL_EINVAL;
  }
  if (op->count > (size_t)INT_MAX) {
    LOG_WARN("count %zu is larger than MPI's int counts allow; split the call", op->count);
    return GPL_ERANGE;
  }
  size_t sb = hostop_send_bytes(op, size), rb = hostop_recv_bytes(op, size);
  if (rb && !op->recv) return GPL_EINVAL;
  if (sb && !op->send && op->kind != HOP_BCAST) return GPL_EINVAL;
  if (op->kind == HOP_ALLREDUCE && op->send != op->recv && overlap(op->send, sb, op->recv, rb)) {
    LOG_WARN("allreduce buffers overlap without being the same (in place is send == recv)");
    return GPL_EINVAL;
  }
  if (op->kind == HOP_ALLTOALL && overlap(op->send, sb, op->recv, rb)) {
    LOG_WARN("alltoall send and receive buffers must not overlap");
    return GPL_EINVAL;
  }
  return GPL_OK;
}

/* ---- local (one rank) ---- */

int hostop_local(const hostop_t *op) {
  if (op->kind == HOP_BARRIER) return GPL_OK;
  if (op->kind == HOP_FLAGS) {
    ((int *)op->recv)[0] = *(const int *)op->send;
    op->answered[0] = 1;
    return GPL_OK;
  }
  size_t bytes = hostop_recv_bytes(op, 1);
  /* Every collective of one rank is a copy (sum, prod, max, min and avg of one value are the
   * value; the reduce-scatter block of rank 0 is the whole buffer). */
  if (bytes && op->send && op->send != op->recv) memmove(op->recv, op->send, bytes);
  return GPL_OK;
}

/* ---- start / test ---- */

static int flags_start(hostop_run_t *r) {
  int n = r->size;
  /* values[n], answered[n], and our own value to send (its own slot: the table is received into) */
  r->table = calloc((size_t)2 * (size_t)n + 1, sizeof *r->table);
  r->reqs = calloc((size_t)n + 1, sizeof *r->reqs);
  if (!r->table || !r->reqs) return GPL_ENOMEM;
  r->table[r->rank] = *(const int *)r->op.send;
  r->table[n + r->rank] = 1;
  if (r->rank == 0) {
    for (int p = 1; p < n; p++)
      MPICHECK(MPI_Irecv(&r->table[p], 1, MPI_INT, p, r->tag, r->comm, &r->reqs[p - 1]));
    r->nreqs = n - 1;
  } else {
    /* Sent from r->table so that a send the root never takes can outlive the caller's int. */
    r->table[2 * n] = r->table[r->rank];
    MPICHECK(MPI_Isend(&r->table[2 * n], 1, MPI_INT, 0, r->tag, r->comm, &r->reqs[0]));
    MPICHECK(MPI_Irecv(r->table, 2 * n, MPI_INT, 0, r->tag + 1, r->comm, &r->reqs[1]));
    r->nreqs = 2;
  }
  return GPL_OK;
}

int hostop_start(hostop_run_t *r, const hostop_t *op, MPI_Comm comm, int tag, double deadline) {
  memset(r, 0, sizeof *r);
  r->op = *op;
  r->comm = comm;
  r->tag = tag;
  r->deadline = deadline;
  r->req = MPI_REQUEST_NULL;
  MPICHECK(MPI_Comm_rank(comm, &r->rank));
  MPICHECK(MPI_Comm_size(comm, &r->size));
  CHECK(hostop_validate(op, r->size));
  double left = deadline - util_now();
  r->grace = GPL_MAX(1.0, 0.25 * left);
  if (op->kind == HOP_FLAGS) return flags_start(r);

  size_t e = hostop_dtype_size(op->dtype);
  int n = (int)op->count;
  MPI_Datatype t = hostop_mpi_type(op->dtype);
  const void *send = op->send;
  size_t sb = hostop_send_bytes(op, r->size), rb = hostop_recv_bytes(op, r->size);
  switch (op->kind) {
    case HOP_ALLREDUCE:
      MPICHECK(MPI_Iallreduce(send == op->recv ? MPI_IN_PLACE : send, op->recv, n, t,
                                  hostop_mpi_op(op->dtype, op->op), comm, &r->req));
      break;
    case HOP_ALLGATHER:
      if (send == (const char *)op->recv + (size_t)r->rank * op->count * e) {
        send = MPI_IN_PLACE;
      } else if (overlap(send, sb, op->recv, rb)) {
        ALLOCCHECK(r->tmp = malloc(sb));
        memcpy(r->tmp, send, sb);
        send = r->tmp;
      }
      MPICHECK(MPI_Iallgather(send, n, t, op->recv, n, t, comm, &r->req));
      break;
    case HOP_REDUCE_SCATTER:
      /* MPI's in-place reduce-scatter takes the input from recv, NCCL's puts the output inside the
       * input: copy the input aside when the buffers overlap. */
      if (overlap(send, sb, op->recv, rb)) {
        ALLOCCHECK(r->tmp = malloc(sb));
        memcpy(r->tmp, send, sb);
        send = r->tmp;
      }
      MPICHECK(MPI_Ireduce_scatter_block(send, op->recv, n, t, hostop_mpi_op(op->dtype, op->op), comm,
                                             &r->req));
      break;
    case HOP_BCAST:
      if (r->rank == op->root && send && send != op->recv) memmove(op->recv, send, rb);
      MPICHECK(MPI_Ibcast(op->recv, n, t, op->root, comm, &r->req));
      break;
    case HOP_ALLTOALL:
      MPICHECK(MPI_Ialltoall(send, n, t, op->recv, n, t, comm, &r->req));
      break;
    case HOP_BARRIER:
      MPICHECK(MPI_Ibarrier(comm, &r->req));
      break;
    default:
      return GPL_EINVAL;
  }
  return GPL_OK;
}

static void finish(hostop_run_t *r, int status) {
  r->done = 1;
  r->status = status;
}

/* The flags exchange, one poll. The root gathers until everyone answered or the deadline, then
 * sends the table (values and who answered) out; the others wait for it until deadline + grace. */
static int flags_test(hostop_run_t *r) {
  int n = r->size, flag = 0, got_table = 0;
  double now = util_now(), limit = r->deadline + r->grace;
  if (r->rank == 0 && r->phase == 0) {
    MPICHECK(MPI_Testall(r->nreqs, r->reqs, &flag, MPI_STATUSES_IGNORE));
    if (!flag && now < r->deadline) return GPL_OK;
    for (int p = 1; p < n; p++) {
      r->table[n + p] = 1;
      if (r->reqs[p - 1] == MPI_REQUEST_NULL) continue;
      MPI_Status st;
      MPI_Cancel(&r->reqs[p - 1]);
      MPI_Wait(&r->reqs[p - 1], &st); /* a cancelled receive completes locally */
      int cancelled = 0;
      MPI_Test_cancelled(&st, &cancelled);
      r->table[n + p] = !cancelled;
    }
    for (int p = 1; p < n; p++)
      MPICHECK(MPI_Isend(r->table, 2 * n, MPI_INT, p, r->tag + 1, r->comm, &r->reqs[p - 1]));
    r->phase = 1;
    return GPL_OK;
  }
  if (r->rank == 0) {
    MPICHECK(MPI_Testall(r->nreqs, r->reqs, &flag, MPI_STATUSES_IGNORE));
    got_table = 1;
  } else {
    MPICHECK(MPI_Test(&r->reqs[1], &got_table, MPI_STATUS_IGNORE));
    MPICHECK(MPI_Test(&r->reqs[0], &flag, MPI_STATUS_IGNORE));
    flag = got_table;
  }
  if (!flag && now < limit) return GPL_OK;
  int leak = 0;
  for (int i = 0; i < r->nreqs; i++) {
    if (r->reqs[i] == MPI_REQUEST_NULL) continue;
    if (r->rank != 0 && i == 1) { /* our receive of the table: cancel it */
      MPI_Cancel(&r->reqs[i]);
      MPI_Wait(&r->reqs[i], MPI_STATUS_IGNORE);
    } else { /* a send nobody took yet: MPI finishes it whenever, so its buffer must stay */
      MPI_Request_free(&r->reqs[i]);
      leak = 1;
    }
  }
  int *vals = r->op.recv, all = 1;
  for (int p = 0; p < n; p++) {
    /* without the root's table only two things are known: we answered, the root did not */
    int ans = got_table ? r->table[n + p] : p == r->rank ? 1 : p == 0 ? 0 : -1;
    r->op.answered[p] = ans;
    vals[p] = ans > 0 ? r->table[p] : 0;
    if (ans <= 0) all = 0;
  }
  if (!leak) free(r->table);
  r->table = NULL;
  free(r->reqs);
  r->reqs = NULL;
  finish(r, all ? GPL_OK : GPL_ETIMEDOUT);
  return GPL_OK;
}

int hostop_test(hostop_run_t *r) {
  if (r->done) return GPL_OK;
  if (r->op.kind == HOP_FLAGS) return flags_test(r);
  int flag = 0;
  MPICHECK(MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE));
  if (flag) {
    if ((r->op.kind == HOP_ALLREDUCE || r->op.kind == HOP_REDUCE_SCATTER) &&
        r->op.op == GPL_OP_AVG)
      reduce_divide(r->op.recv, r->op.count, r->op.dtype, r->size);
    free(r->tmp);
    r->tmp = NULL;
    finish(r, GPL_OK);
  } else if (util_now() >= r->deadline) {
    /* A non-blocking collective can be neither cancelled nor freed (MPI 3.1 sec. 5.12): the
     * request and its buffers stay with MPI, and the communicator is unusable from here on. */
    r->tmp = NULL;
    finish(r, GPL_ETIMEDOUT);
  }
  return GPL_OK;
}

void hostop_pause(unsigned i, double *nap) {
  /* Spin briefly (a small collective finishes in microseconds), then yield the core (ranks are
   * often oversubscribed), then sleep in growing naps up to 1 ms for long waits. */
  if (i < 64) return;
  if (i < 20000) {
    sched_yield();
    return;
  }
  if (*nap <= 0) *nap = 1e-5;
  util_sleep(*nap);
  if (*nap < 1e-3) *nap *= 2;
}

int hostop_wait(hostop_run_t *r) {
  double nap = 0;
  for (unsigned i = 0;; i++) {
    CHECK(hostop_test(r));
    if (r->done) return r->status;
    hostop_pause(i, &nap);
  }
}
