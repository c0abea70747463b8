/* Control messages over MPI: one posted receive, a list of sends in flight, polled, never blocking. */
#include "launcher/ctl.h"

#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"

enum { CTL_TAG_EV = 7201, CTL_TAG_CMD = 7202 };

typedef struct ctl_send_s {
  MPI_Request req;
  ctl_msg_t msg;
  struct ctl_send_s *next;
} ctl_send_t;

static int post_recv(ctl_t *c) {
  /* The coordinator listens to events from anyone and to its own commands; the others listen to
   * commands from the coordinator. One receive with ANY_TAG covers both on rank 0. */
  MPICHECK(MPI_Irecv(&c->recv_buf, (int)sizeof c->recv_buf, MPI_BYTE,
                     c->rank == 0 ? MPI_ANY_SOURCE : 0, MPI_ANY_TAG, c->comm, &c->recv_req));
  return GPL_OK;
}

int ctl_init(ctl_t *c, MPI_Comm comm) {
  memset(c, 0, sizeof *c);
  c->comm = comm;
  MPICHECK(MPI_Comm_rank(comm, &c->rank));
  MPICHECK(MPI_Comm_size(comm, &c->size));
  return post_recv(c);
}

static void progress_sends(ctl_t *c) {
  ctl_send_t **pp = &c->sends;
  while (*pp) {
    int done = 0;
    MPI_Test(&(*pp)->req, &done, MPI_STATUS_IGNORE);
    if (done) {
      ctl_send_t *d = *pp;
      *pp = d->next;
      free(d);
    } else {
      pp = &(*pp)->next;
    }
  }
}

int ctl_send(ctl_t *c, int dest, const ctl_msg_t *m) {
  ctl_send_t *s = calloc(1, sizeof *s);
  ALLOCCHECK(s);
  s->msg = *m;
  int tag = m->type >= CTL_STOP ? CTL_TAG_CMD : CTL_TAG_EV;
  int rc = MPI_Isend(&s->msg, (int)sizeof s->msg, MPI_BYTE, dest, tag, c->comm, &s->req);
  if (rc != MPI_SUCCESS) {
    free(s);
    LOG_WARN("MPI_Isend of a control message to rank %d failed", dest);
    return GPL_EMPI;
  }
  s->next = c->sends;
  c->sends = s;
  return GPL_OK;
}

int ctl_broadcast(ctl_t *c, const ctl_msg_t *m) {
  for (int r = 0; r < c->size; r++) CHECK(ctl_send(c, r, m));
  return GPL_OK;
}

int ctl_poll(ctl_t *c, ctl_msg_t *out) {
  progress_sends(c);
  if (c->recv_req == MPI_REQUEST_NULL) return 0;
  int done = 0;
  if (MPI_Test(&c->recv_req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
  if (!done) return 0;
  *out = c->recv_buf;
  post_recv(c);
  return 1;
}

void ctl_close(ctl_t *c, double timeout_s) {
  double deadline = util_now() + timeout_s;
  while (c->sends && util_now() < deadline) {
    progress_sends(c);
    if (c->sends) util_sleep(1e-3);
  }
  while (c->sends) { /* abandoned: the peer is gone */
    ctl_send_t *d = c->sends;
    c->sends = d->next;
    free(d);
  }
  if (c->recv_req != MPI_REQUEST_NULL) {
    MPI_Cancel(&c->recv_req);
    MPI_Request_free(&c->recv_req);
  }
}
