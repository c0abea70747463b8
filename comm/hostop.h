/* Host collectives on MPI as pollable operations with a deadline (start, then test until done),
 * so one code path serves the in-process cpu backend and the proxy's event loop. */
#ifndef GPL_COMM_HOSTOP_H
#define GPL_COMM_HOSTOP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "common/check.h"
#include "gpulaunch/types.h"

typedef enum hostop_kind_e {
  HOP_ALLREDUCE = 0,
  HOP_ALLGATHER,
  HOP_REDUCE_SCATTER,
  HOP_BCAST,
  HOP_ALLTOALL,
  HOP_BARRIER,
  /* Every rank contributes one int (send); recv[r] gets rank r's value and answered[r] = 1 for
   * every rank heard from before the deadline, 0 for the missing. Gathered at rank 0, which sends
   * the table (with who answered) back, so every rank can name the missing ones; when rank 0 is
   * the missing one, the others cannot know about each other: answered[] = -1 (unknown) for them.
   * Ends by itself at the deadline (status GPL_ETIMEDOUT when some rank is missing). */
  HOP_FLAGS,
  HOP_KIND_COUNT
} hostop_kind_t;

/* One host collective, NCCL semantics (see include/gpulaunch/comm.h). count is in elements: the
 * whole buffer for allreduce/bcast, per rank for allgather/alltoall/reduce-scatter. */
typedef struct hostop_s {
  hostop_kind_t kind;
  const void *send;
  void *recv;
  size_t count;
  gpl_dtype_t dtype;
  gpl_redop_t op;
  int root;
  int *answered; /* HOP_FLAGS only: size entries, out: 1 answered, 0 missing, -1 unknown */
} hostop_t;

/* An operation in flight. */
typedef struct hostop_run_s {
  hostop_t op;
  MPI_Comm comm;
  int rank, size;
  double deadline;      /* collectives: give up here; HOP_FLAGS: root stops gathering here */
  double grace;         /* HOP_FLAGS: how much longer the others wait for the root's table */
  int tag;              /* HOP_FLAGS: tag and tag+1 */
  int phase;            /* HOP_FLAGS root: 0 gather, 1 scatter */
  int done;
  int status;           /* when done: 0, GPL_ETIMEDOUT or another code */
  MPI_Request req;      /* collectives */
  MPI_Request *reqs;    /* HOP_FLAGS */
  int nreqs;
  int *table;           /* HOP_FLAGS: 2*size ints: values then answered */
  void *tmp;            /* a copy of the send buffer when MPI cannot take the NCCL-style in-place */
} hostop_run_t;

/* Element size, or 0 for an unknown dtype. */
size_t hostop_dtype_size(gpl_dtype_t dt);
/* Bytes the op reads from send / writes to recv on a communicator of `size` ranks. */
size_t hostop_send_bytes(const hostop_t *op, int size);
size_t hostop_recv_bytes(const hostop_t *op, int size);
/* Check an op's arguments for a communicator of `size` ranks: GPL_EINVAL / GPL_ERANGE. */
int hostop_validate(const hostop_t *op, int size);

/* MPI datatypes and reduction ops for half and bfloat16 (user ops computing in float, rounding to
 * nearest even). Reference counted; the last release frees them (unless MPI is finalised). */
int hostop_types_acquire(void);
void hostop_types_release(void);
/* The MPI datatype and op for a dtype (16-bit floats: MPI_UINT16_T with our user ops; avg: sum). */
MPI_Datatype hostop_mpi_type(gpl_dtype_t dt);
MPI_Op hostop_mpi_op(gpl_dtype_t dt, gpl_redop_t op);

/* Start op on comm; it must be done by `deadline` (util_now() clock). tag: HOP_FLAGS only (uses
 * tag and tag+1; every rank must pass the same). */
int hostop_start(hostop_run_t *r, const hostop_t *op, MPI_Comm comm, int tag, double deadline);
/* Make progress; sets r->done (and r->status) when finished or expired. Never blocks. */
int hostop_test(hostop_run_t *r);
/* Poll until done, yielding the CPU between polls (hostop_pause). Returns r->status. */
int hostop_wait(hostop_run_t *r);
/* The pause after the i-th poll of a collective in flight (i from 0; *nap starts at 0 and is the
 * pause's own state): nothing, then a yield of the core, then sleeps growing up to 1 ms. */
void hostop_pause(unsigned i, double *nap);
/* The op on a communicator of one rank (copies; avg of one value is itself). */
int hostop_local(const hostop_t *op);

#endif
