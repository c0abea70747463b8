/* Control messages between each rank's supervisor and the coordinator (rank 0), over MPI with
 * non-blocking calls polled from the libuv loop. */
#ifndef GPL_LAUNCHER_CTL_H
#define GPL_LAUNCHER_CTL_H

#include <mpi.h>

#include "launcher/sup/ctl_msg.h"

typedef struct ctl_s {
  MPI_Comm comm;  /* MPI_COMM_NULL: a job of one without MPI, messages to itself queued locally */
  int rank, size;
  /* Sends in flight, and how many bytes of program output they hold. */
  struct ctl_send_s *sends;
  size_t out_inflight;
  struct ctl_send_s *local; /* the job of one's own messages, in order */
} ctl_t;

/* Program output forwarded to rank 0 (whole lines, already prefixed): is_err, bytes. */
typedef void (*ctl_output_fn)(void *arg, int src_rank, int is_err, const char *data, size_t len);

/* comm: the supervisors' communicator, or MPI_COMM_NULL for a job of one without MPI. */
int ctl_init(ctl_t *c, MPI_Comm comm);
/* Post a message to a rank (rank 0 for events; every rank for commands). Non-blocking. */
int ctl_send(ctl_t *c, int dest, const ctl_msg_t *m);
/* Send a command to every rank (including this one). */
int ctl_broadcast(ctl_t *c, const ctl_msg_t *m);
/* Send program output to rank 0; it arrives before any event this rank sends afterwards. */
int ctl_send_output(ctl_t *c, int is_err, const char *data, size_t len);
/* Poll: 1 and *out filled when a control message arrived, 0 when none. Output messages found on
 * the way are handed to on_output (rank 0) in arrival order. Also progresses sends. */
int ctl_poll(ctl_t *c, ctl_msg_t *out, ctl_output_fn on_output, void *arg);
/* Wait (bounded) for the sends in flight to complete; cancel the receive. */
void ctl_close(ctl_t *c, double timeout_s);

#endif
