/* Control messages and forwarded output over MPI: probed and received when they arrive, sends
 * kept in flight and progressed by polling; nothing here ever blocks on another rank. A job of one
 * without MPI (MPI_COMM_NULL) posts to a queue of its own instead. Every message has one tag
 * (the kind is its first int), so that a sender's messages are taken in the order it sent them
 * and the supervisors share MPI_COMM_WORLD with the bounded exchanges (other tags) without a
 * communicator of their own. */
#include "launcher/sup/ctl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"

enum { CTL_TAG = 7200 };
enum { CTL_KIND_EV = 1, CTL_KIND_CMD, CTL_KIND_OUT };

typedef struct ctl_send_s {
  MPI_Request req;
  size_t out_bytes; /* program output carried (for flow control) */
  size_t len;       /* bytes in buf */
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

/* A message: its kind (an int), then a, then b. */
static int post(ctl_t *c, int dest, int kind, const void *a, size_t alen, const void *b, size_t blen) {
  int32_t k = kind;
  size_t len = sizeof k + alen + blen;
  ctl_send_t *s = malloc(sizeof *s + len);
  ALLOCCHECK(s);
  memcpy(s->buf, &k, sizeof k);
  memcpy(s->buf + sizeof k, a, alen);
  if (blen) memcpy(s->buf + sizeof k + alen, b, blen);
  s->out_bytes = kind == CTL_KIND_OUT ? blen : 0;
  s->len = len;
  if (c->comm == MPI_COMM_NULL) { /* to this rank itself, the only one */
    append(&c->local, s);
    return GPL_OK;
  }
  int rc = MPI_Isend(s->buf, (int)len, MPI_BYTE, dest, CTL_TAG, c->comm, &s->req);
  if (rc != MPI_SUCCESS) {
    free(s);
    LOG_WARN("MPI_Isend of a control message to rank %d failed", dest);
    return GPL_EMPI;
  }
  c->out_inflight += s->out_bytes;
  append(&c->sends, s);
  return GPL_OK;
}

/* One message that arrived: output goes to on_output (0), an event or command into out (1). */
static int deliver(const char *buf, size_t len, ctl_msg_t *out, ctl_output_fn on_output, void *arg) {
  int32_t kind;
  if (len < sizeof kind) return 0;
  memcpy(&kind, buf, sizeof kind);
  buf += sizeof kind;
  len -= sizeof kind;
  if (kind == CTL_KIND_OUT) {
    int hdr[2];
    if (len < sizeof hdr) return 0;
    memcpy(hdr, buf, sizeof hdr);
    if (on_output) on_output(arg, hdr[0], hdr[1], buf + sizeof hdr, len - sizeof hdr);
    return 0;
  }
  memset(out, 0, sizeof *out);
  memcpy(out, buf, len < sizeof *out ? len : sizeof *out);
  return 1;
}

/* The local queue's version of ctl_poll. */
static int poll_local(ctl_t *c, ctl_msg_t *out, ctl_output_fn on_output, void *arg) {
  while (c->local) {
    ctl_send_t *m = c->local;
    c->local = m->next;
    int got = deliver(m->buf, m->len, out, on_output, arg);
    free(m);
    if (got) return 1;
  }
  return 0;
}

int ctl_send(ctl_t *c, int dest, const ctl_msg_t *m) {
  return post(c, dest, m->type >= CTL_STOP ? CTL_KIND_CMD : CTL_KIND_EV, m, sizeof *m, NULL, 0);
}

int ctl_broadcast(ctl_t *c, const ctl_msg_t *m) {
  for (int r = 0; r < c->size; r++) CHECK(ctl_send(c, r, m));
  return GPL_OK;
}

int ctl_send_output(ctl_t *c, int is_err, const char *data, size_t len) {
  int hdr[2] = {c->rank, is_err};
  return post(c, 0, CTL_KIND_OUT, hdr, sizeof hdr, data, len);
}

int ctl_poll(ctl_t *c, ctl_msg_t *out, ctl_output_fn on_output, void *arg) {
  if (c->comm == MPI_COMM_NULL) return poll_local(c, out, on_output, arg);
  progress_sends(c);
  for (;;) {
    int flag = 0;
    MPI_Status st;
    /* Rank 0 hears everyone; the others hear rank 0 only. In arrival order per sender. */
    if (MPI_Iprobe(c->rank == 0 ? MPI_ANY_SOURCE : 0, CTL_TAG, c->comm, &flag, &st) != MPI_SUCCESS || !flag)
      return 0;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    char *buf = malloc((size_t)count + 1);
    if (!buf) return 0;
    MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, CTL_TAG, c->comm, MPI_STATUS_IGNORE);
    int got = deliver(buf, (size_t)count, out, on_output, arg);
    free(buf);
    if (got) return 1;
  }
}

/* Messages this rank sent itself that nobody will read now (a STOPPED after the EXIT): taken off
 * the queue, or their sends would hold ctl_close for its whole timeout. */
static void drop_own(ctl_t *c) {
  if (c->comm == MPI_COMM_NULL) return; /* no MPI: the local queue is freed below */
  for (;;) {
    int flag = 0, count = 0;
    MPI_Status st;
    if (MPI_Iprobe(c->rank, CTL_TAG, c->comm, &flag, &st) != MPI_SUCCESS || !flag) return;
    MPI_Get_count(&st, MPI_BYTE, &count);
    char *junk = malloc((size_t)count + 1);
    if (!junk) return;
    MPI_Recv(junk, count, MPI_BYTE, c->rank, CTL_TAG, c->comm, MPI_STATUS_IGNORE);
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
