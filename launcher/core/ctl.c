/* Control messages and forwarded output over MPI: probed and received when they arrive, sends
 * kept in flight and progressed by polling; nothing here ever blocks on another rank. A job of one
 * without MPI (MPI_COMM_NULL) posts to a queue of its own instead. */
#include "launcher/core/ctl.h"

#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"

enum { CTL_TAG_EV = 7201, CTL_TAG_CMD = 7202, CTL_TAG_OUT = 7203 };

typedef struct ctl_send_s {
  MPI_Request req;
  size_t out_bytes; /* program output carried (for flow control) */
  int tag;          /* local queue only */
  size_t len;       /* local queue only: bytes in buf */
  struct ctl_send_s *next;
  char buf[];       /* the message */
} ctl_send_t;

int ctl_init(ctl_t *c, MPI_Comm comm) {
  memset(c, 0, sizeof *c);
  c->comm = comm;
  if (comm == MPI_COMM_NULL) { /* a job of one started alone: MPI is not initialised */
    c->rank = 0;
    c->size = 1;
    return GPL_OK;
  }
  MPICHECK(MPI_Comm_rank(comm, &c->rank));
  MPICHECK(MPI_Comm_size(comm, &c->size));
  return GPL_OK;
}

/* Append to a list (sends in flight, or the local queue): tested and delivered in order. */
static void append(ctl_send_t **list, ctl_send_t *s) {
  s->next = NULL;
  while (*list) list = &(*list)->next;
  *list = s;
}

static void progress_sends(ctl_t *c) {
  ctl_send_t **pp = &c->sends;
  while (*pp) {
    int done = 0;
    MPI_Test(&(*pp)->req, &done, MPI_STATUS_IGNORE);
    if (done) {
      ctl_send_t *d = *pp;
      *pp = d->next;
      c->out_inflight -= d->out_bytes;
      free(d);
    } else {
      pp = &(*pp)->next;
    }
  }
}

static int post(ctl_t *c, int dest, int tag, const void *a, size_t alen, const void *b, size_t blen) {
  ctl_send_t *s = malloc(sizeof *s + alen + blen);
  ALLOCCHECK(s);
  memcpy(s->buf, a, alen);
  if (blen) memcpy(s->buf + alen, b, blen);
  s->out_bytes = tag == CTL_TAG_OUT ? blen : 0;
  if (c->comm == MPI_COMM_NULL) { /* to this rank itself, the only one */
    s->tag = tag;
    s->len = alen + blen;
    append(&c->local, s);
    return GPL_OK;
  }
  int rc = MPI_Isend(s->buf, (int)(alen + blen), MPI_BYTE, dest, tag, c->comm, &s->req);
  if (rc != MPI_SUCCESS) {
    free(s);
    LOG_WARN("MPI_Isend of a control message to rank %d failed", dest);
    return GPL_EMPI;
  }
  c->out_inflight += s->out_bytes;
  append(&c->sends, s);
  return GPL_OK;
}

/* The local queue's version of ctl_poll. */
static int poll_local(ctl_t *c, ctl_msg_t *out, ctl_output_fn on_output, void *arg) {
  while (c->local) {
    ctl_send_t *m = c->local;
    c->local = m->next;
    if (m->tag == CTL_TAG_OUT) {
      int hdr[2];
      memcpy(hdr, m->buf, sizeof hdr);
      if (on_output) on_output(arg, hdr[0], hdr[1], m->buf + sizeof hdr, m->len - sizeof hdr);
      free(m);
      continue;
    }
    memset(out, 0, sizeof *out);
    memcpy(out, m->buf, m->len < sizeof *out ? m->len : sizeof *out);
    free(m);
    return 1;
  }
  return 0;
}

int ctl_send(ctl_t *c, int dest, const ctl_msg_t *m) {
  return post(c, dest, m->type >= CTL_STOP ? CTL_TAG_CMD : CTL_TAG_EV, m, sizeof *m, NULL, 0);
}

int ctl_broadcast(ctl_t *c, const ctl_msg_t *m) {
  for (int r = 0; r < c->size; r++) CHECK(ctl_send(c, r, m));
  return GPL_OK;
}

int ctl_send_output(ctl_t *c, int is_err, const char *data, size_t len) {
  int hdr[2] = {c->rank, is_err};
  return post(c, 0, CTL_TAG_OUT, hdr, sizeof hdr, data, len);
}

int ctl_poll(ctl_t *c, ctl_msg_t *out, ctl_output_fn on_output, void *arg) {
  if (c->comm == MPI_COMM_NULL) return poll_local(c, out, on_output, arg);
  progress_sends(c);
  for (;;) {
    int flag = 0;
    MPI_Status st;
    /* Rank 0 hears everyone; the others hear rank 0 only. In arrival order per sender. */
    if (MPI_Iprobe(c->rank == 0 ? MPI_ANY_SOURCE : 0, MPI_ANY_TAG, c->comm, &flag, &st) != MPI_SUCCESS ||
        !flag)
      return 0;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (st.MPI_TAG == CTL_TAG_OUT) {
      char *buf = malloc((size_t)count + 1);
      if (!buf) return 0;
      MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, c->comm, MPI_STATUS_IGNORE);
      int hdr[2];
      memcpy(hdr, buf, sizeof hdr);
      if (on_output && count >= (int)sizeof hdr)
        on_output(arg, hdr[0], hdr[1], buf + sizeof hdr, (size_t)count - sizeof hdr);
      free(buf);
      continue;
    }
    if (st.MPI_TAG != CTL_TAG_EV && st.MPI_TAG != CTL_TAG_CMD) {
      /* Not ours (should not happen on this communicator): take it off the queue. */
      char *junk = malloc((size_t)count + 1);
      MPI_Recv(junk, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, c->comm, MPI_STATUS_IGNORE);
      free(junk);
      continue;
    }
    memset(out, 0, sizeof *out);
    MPI_Recv(out, (int)sizeof *out, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, c->comm, MPI_STATUS_IGNORE);
    return 1;
  }
}

/* Messages this rank sent itself that nobody will read now (a STOPPED after the EXIT): taken off
 * the queue, or their sends would hold ctl_close for its whole timeout. */
static void drop_own(ctl_t *c) {
  if (c->comm == MPI_COMM_NULL) return; /* no MPI: the local queue is freed below */
  for (;;) {
    int flag = 0, count = 0;
    MPI_Status st;
    if (MPI_Iprobe(c->rank, MPI_ANY_TAG, c->comm, &flag, &st) != MPI_SUCCESS || !flag) return;
    MPI_Get_count(&st, MPI_BYTE, &count);
    char *junk = malloc((size_t)count + 1);
    if (!junk) return;
    MPI_Recv(junk, count, MPI_BYTE, c->rank, st.MPI_TAG, c->comm, MPI_STATUS_IGNORE);
    free(junk);
  }
}

void ctl_close(ctl_t *c, double timeout_s) {
  double deadline = util_now() + timeout_s;
  while (c->sends && util_now() < deadline) {
    drop_own(c);
    progress_sends(c);
    if (c->sends) util_sleep(1e-3);
  }
  while (c->sends) { /* abandoned: the peer is gone */
    ctl_send_t *d = c->sends;
    c->sends = d->next;
    free(d);
  }
  while (c->local) { /* not polled any more */
    ctl_send_t *d = c->local;
    c->local = d->next;
    free(d);
  }
  c->out_inflight = 0;
}
