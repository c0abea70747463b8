/* Host transport of a job of one rank: every collective is a local copy; no MPI needed. */
#include <stdlib.h>

#include "comm/internal.h"

static int self_run(gpl_comm_t *c, const hostop_t *op, double timeout, const char *what) {
  (void)timeout;
  (void)what;
  c->seq++;
  CHECK(hostop_validate(op, 1));
  return hostop_local(op);
}

static int self_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  (void)c;
  *p = bytes ? malloc(bytes) : NULL;
  return bytes && !*p ? GPL_ENOMEM : GPL_OK;
}

static void self_free(gpl_comm_t *c, void *p) {
  (void)c;
  free(p);
}

static void self_destroy(gpl_comm_t *c) { (void)c; }

const comm_xport_t comm_xport_self = {"self", self_run, self_alloc, self_free, self_destroy};
