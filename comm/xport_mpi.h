/* The in-process MPI transport's operations as pollable state (start, then test until done), so
 * the same code runs a host collective in a wait loop here and from an event loop in the proxy. */
#ifndef GPL_COMM_XPORT_MPI_H
#define GPL_COMM_XPORT_MPI_H

#include "comm/internal.h"
#include "comm/shmcoll.h"

typedef struct xport_op_s {
  gpl_comm_t *c;
  hostop_t op;
  const char *what;   /* for messages; must outlive the op */
  double timeout;
  uint64_t seq;       /* the comm's host-op number, compared between ranks after a timeout */
  int engine;         /* 0 local copy, 1 MPI, 2 shared memory */
  hostop_run_t h;
  shmcoll_run_t s;
  int diagnosing;     /* the op timed out: asking the others (bounded) who is missing */
  hostop_run_t d;
  int dmine, *dvals, *dans;
  int done, status;
} xport_op_t;

/* Start op on c's MPI transport (c->xp must be comm_xport_mpi). */
int xport_mpi_start(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what,
                    xport_op_t *x);
/* Make progress without blocking; when x->done, x->status is the result (a timeout has been
 * explained in the log by then). */
int xport_mpi_test(xport_op_t *x);

/* Elements of dt per shared-memory chunk when c's transport has the shared-memory allreduce, else
 * 0. */
size_t xport_mpi_shm_chunk(gpl_comm_t *c, gpl_dtype_t dt);
/* An allreduce of count elements through shared memory whose input and output chunks the caller
 * makes and takes (shmcoll_io_t); waits with the communicator's deadline. */
int xport_mpi_allreduce_io(gpl_comm_t *c, size_t count, gpl_dtype_t dt, gpl_redop_t op,
                           const shmcoll_io_t *io, const char *what);

#endif
