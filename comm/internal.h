/* comm internals (like libuv's uv-common.h): the communicator itself, the host transport table
 * (in-process MPI, one rank, gpulaunch proxy), the backend table (cpu, nccl) and the helpers
 * they share. Not for the launcher: it uses comm/comm_job.h. */
#ifndef GPL_COMM_INTERNAL_H
#define GPL_COMM_INTERNAL_H

#include <stdint.h>

#include "comm/comm_job.h"
#include "comm/hostop.h"
#include "common/check.h"
#include "kernels/fused.h"

/* The steps of comm_init, shared with gpl_init and the proxy client: a communicator shell from the
 * job (no transport yet); the backend agreed and started once the transport is up; freeing
 * everything a communicator holds (backend, transport, memory; not MPI itself). */
int comm_new(gpl_comm_t **out, const comm_job_t *job);
int comm_start_backend(gpl_comm_t *c, const gpl_init_opts_t *o);
void comm_free(gpl_comm_t *c);

typedef struct comm_xport_s comm_xport_t;
typedef struct comm_backend_s comm_backend_t;

struct gpl_comm_s {
  int rank, size, local_rank, local_size, node, nnodes;
  char **hosts;          /* size entries, owned; NULL entries allowed */
  double timeout;        /* every wait on other ranks */
  const comm_xport_t *xp; /* host transport: bootstrap exchanges, cpu collectives */
  void *xp_state;
  const comm_backend_t *be;
  void *be_state;
  int device;            /* CUDA device (nccl) or -1 */
  int owns_mpi;          /* gpl_init called MPI_Init: gpl_finalize calls MPI_Finalize */
  int broken;            /* a collective failed: every later call returns GPL_ESTATE */
  uint64_t seq;          /* host ops run so far (the same on every rank while not broken) */
  /* fused allreduce scratch, in comm memory */
  void *bucket;
  size_t bucket_bytes;
  kern_scaler_t *flag_scaler; /* found_inf for calls without a scaler */
};

/* Host transport: how host collectives reach the other ranks. */
struct comm_xport_s {
  const char *name;
  /* Run one host op with a deadline of `timeout` seconds. A collective that times out is
   * diagnosed (the ranks that did not arrive are logged, with `what`) and breaks the comm;
   * HOP_FLAGS returns GPL_ETIMEDOUT with answered[] filled and logs nothing. */
  int (*run)(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what);
  /* Host memory the transport moves without a copy (shared memory for the proxy). */
  int (*alloc)(gpl_comm_t *c, void **p, size_t bytes);
  void (*free)(gpl_comm_t *c, void *p);
  void (*destroy)(gpl_comm_t *c);
};

extern const comm_xport_t comm_xport_self;  /* a job of one: local copies */
extern const comm_xport_t comm_xport_mpi;   /* in-process MPI */
extern const comm_xport_t comm_xport_proxy; /* through the parent gpulaunch (wrapped child) */

/* Set up the in-process MPI transport on job->comm (duplicated, with a deadline). */
int comm_xport_mpi_init(gpl_comm_t *c, MPI_Comm comm);
/* Every rank of comm checks in (a bounded flags exchange on a tag of its own); on a timeout the
 * ranks that did not are named on every rank that did. */
int comm_mpi_arrival(MPI_Comm comm, double timeout, const char *what);

/* Backend: collectives on comm memory, and the elementwise steps of the fused allreduce. */
struct comm_backend_s {
  gpl_backend_t kind;
  const char *name;
  /* Can this rank use the backend? Local, no communication: 0, or GPL_ENOGPU / GPL_ENOCUDA with
   * the reason in why. */
  int (*probe)(gpl_comm_t *c, int device, char *why, size_t len);
  /* Collective set-up, once the backend is agreed by all ranks. */
  int (*init)(gpl_comm_t *c, const gpl_init_opts_t *o);
  void (*destroy)(gpl_comm_t *c);
  int (*allreduce)(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                   gpl_redop_t op, void *stream);
  int (*allgather)(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                   void *stream);
  int (*reduce_scatter)(gpl_comm_t *c, const void *send, void *recv, size_t count,
                        gpl_dtype_t dt, gpl_redop_t op, void *stream);
  int (*broadcast)(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                   int root, void *stream);
  int (*alltoall)(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                  void *stream);
  int (*barrier)(gpl_comm_t *c);
  int (*synchronize)(gpl_comm_t *c, void *stream);
  int (*mem_alloc)(gpl_comm_t *c, void **p, size_t bytes);
  void (*mem_free)(gpl_comm_t *c, void *p);
  int (*memcpy)(gpl_comm_t *c, void *dst, const void *src, size_t bytes, gpl_copy_t dir,
                void *stream);
  int (*pack)(gpl_comm_t *c, const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire,
              float prescale, void *stream);
  int (*unpack)(gpl_comm_t *c, const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t,
                int n, float postscale, kern_scaler_t *sc, void *stream);
  int (*scaler_update)(gpl_comm_t *c, kern_scaler_t *sc, void *stream);
  /* The fused scratch (c->bucket) is shared by calls on different streams. NULL where every
   * call is synchronous (cpu). acquire: *use gets the stream the steps for the caller's `stream`
   * run on (never NULL: ordered after the legacy stream once, not at every step), and work on
   * it from now on waits for the scratch's last user; release: the work queued on `use` so far
   * is its last user, and a NULL `stream` (the legacy stream) is ordered after it; idle: wait on
   * the host (the communicator's deadline) until that user is done, before the scratch is freed. */
  int (*scratch_acquire)(gpl_comm_t *c, void *stream, void **use);
  int (*scratch_release)(gpl_comm_t *c, void *stream, void *use);
  int (*scratch_idle)(gpl_comm_t *c);
};

extern const comm_backend_t comm_backend_cpu;
extern const comm_backend_t comm_backend_nccl; /* nccl.c, or nccl_stub.c without NCCL */

/* "rank 3 (host node2)" into buf. */
const char *comm_rank_name(const gpl_comm_t *c, int rank, char *buf, size_t len);
/* The ranks r with bad[r] != 0 as "rank 3 (host a), rank 5 (host b)" (the first 16, then
 * "and N more"), malloc'd. */
char *comm_rank_list(const gpl_comm_t *c, const int *bad);

/* The ranks with answered[r] == 0 (HOP_FLAGS), noting when the others could not be asked because
 * the missing one is the rank that gathers; malloc'd. */
char *comm_missing_list(const gpl_comm_t *c, const int *answered);

/* Exchange one int per rank (HOP_FLAGS on the transport): all[r] = rank r's value, answered[r]
 * whether it was heard from within timeout (1, 0, or -1 unknown: see HOP_FLAGS). GPL_ETIMEDOUT when some rank is missing. */
int comm_exchange_flags(gpl_comm_t *c, int mine, int *all, int *answered, double timeout);

/* Grace for the diagnosis after a deadline: how long the ranks that did arrive wait for each
 * other to compare notes. */
double comm_grace(double timeout);

/* A host op on the transport, breaking the comm when it fails because of other ranks. */
int comm_host_run(gpl_comm_t *c, const hostop_t *op, const char *what);

/* rc, after marking c broken when rc means the ranks are out of step (a timeout, an MPI, NCCL,
 * CUDA, peer, protocol or I/O failure): every later call then returns GPL_ESTATE. */
int comm_settle(gpl_comm_t *c, int rc);

/* First line of every public call on a communicator: GPL_EINVAL without one, GPL_ESTATE when it
 * is broken. */
#define COMM_GUARD(c)                                                                      \
  do {                                                                                     \
    if (!(c) || !(c)->be) return GPL_EINVAL;                                               \
    if ((c)->broken) return GPL_ESTATE;                                                    \
  } while (0)

#endif
