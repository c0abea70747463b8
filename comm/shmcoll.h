/* Allreduce through shared memory among the ranks of a node (a reduce-scatter in shared memory,
 * then MPI across nodes for each rank's slice, then everyone copies the result out), as a pollable
 * operation with a deadline. Used by the cpu backend for large buffers, where Open MPI's
 * shared-memory transport copies every byte through its FIFOs and waits on each peer in turn. */
#ifndef GPL_COMM_SHMCOLL_H
#define GPL_COMM_SHMCOLL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/hostop.h"

typedef struct gpl_comm_s gpl_comm_t;
typedef struct shmcoll_s shmcoll_t;

/* Buffers of at least this many bytes go through shared memory (smaller ones through MPI, whose
 * latency for them is lower). */
#define SHMCOLL_MIN_BYTES (32 * 1024)

/* Set up on comm (every rank calls it; all must be known present, e.g. right after the bounded
 * barrier of the MPI transport's set-up): one segment per node, created by the node's first rank and unlinked
 * once every rank of the node mapped it, and a cross-node communicator when there are several
 * nodes. *out is NULL (and the MPI path is used) unless every rank succeeded and every node has
 * the same number of ranks (GPULAUNCH_COMM_SHM=0 on any rank turns it off for all). c names ranks
 * in messages. Returns an error only for MPI failures and
 * timeouts. */
int shmcoll_create(shmcoll_t **out, gpl_comm_t *c, MPI_Comm comm, int tag);
void shmcoll_destroy(shmcoll_t *s, int broken);

/* Instead of buffers, the caller may produce each chunk of the input and consume each chunk of the
 * result itself (the fused allreduce packs straight into the shared slot and unpacks straight from
 * the reduced result). Chunks come in order; off and len count elements of op.dtype. */
typedef struct shmcoll_io_s {
  void *arg;
  int (*fill)(void *arg, size_t off, size_t len, void *dst);
  int (*drain)(void *arg, size_t off, size_t len, const void *src);
} shmcoll_io_t;

typedef struct shmcoll_run_s {
  shmcoll_t *s;
  hostop_t op;
  const shmcoll_io_t *io; /* NULL: op.send / op.recv */
  int size;         /* ranks in all (avg divides by it) */
  size_t esz, off, len;
  double deadline;
  int phase;
  int done, status;
  int diagnosed;    /* the timeout was explained (the ranks named) here */
  MPI_Request req;  /* the cross-node step */
  char *res;
  size_t s0, s1;    /* this rank's slice of the chunk */
} shmcoll_run_t;

/* HOP_ALLREDUCE only. io may be NULL (then op.send and op.recv are the buffers); with io, the
 * buffers are ignored and io must outlive the operation. */
int shmcoll_start(shmcoll_run_t *r, shmcoll_t *s, const hostop_t *op, const shmcoll_io_t *io,
                  double deadline);
/* Elements of dt one slot holds (the chunk size). */
size_t shmcoll_chunk(const shmcoll_t *s, gpl_dtype_t dt);
/* Make progress without blocking; sets r->done and r->status. */
int shmcoll_test(shmcoll_run_t *r);

#endif
