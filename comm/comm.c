/* The communicator itself, under every other part of comm/: its shell (comm_new, comm_free), and
 * the helpers every part uses to name ranks, exchange flags and settle an error. */
#include "comm/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"

const char *comm_rank_name(const gpl_comm_t *c, int r, char *buf, size_t len) {
  if (c && c->hosts && r >= 0 && r < c->size && c->hosts[r] && c->hosts[r][0])
    snprintf(buf, len, "rank %d (host %s)", r, c->hosts[r]);
  else
    snprintf(buf, len, "rank %d", r);
  return buf;
}

char *comm_rank_list(const gpl_comm_t *c, const int *bad) {
  strbuf_t b = STRBUF_INIT;
  int shown = 0, total = 0;
  for (int r = 0; r < c->size; r++) {
    if (!bad[r]) continue;
    total++;
    if (shown == 16) continue;
    char name[320];
    strbuf_printf(&b, "%s%s", shown ? ", " : "", comm_rank_name(c, r, name, sizeof name));
    shown++;
  }
  if (total > shown) strbuf_printf(&b, " and %d more", total - shown);
  if (!total) strbuf_append(&b, "(none)");
  return strbuf_take(&b);
}

char *comm_missing_list(const gpl_comm_t *c, const int *answered) {
  int *miss = calloc((size_t)c->size, sizeof *miss), unknown = 0;
  if (!miss) return NULL;
  for (int r = 0; r < c->size; r++) {
    miss[r] = answered[r] == 0;
    unknown += answered[r] < 0;
  }
  char *l = comm_rank_list(c, miss);
  free(miss);
  if (!unknown || !l) return l;
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "%s, which gathers the answers (%d other rank%s could not be asked)", l,
                unknown, unknown > 1 ? "s" : "");
  free(l);
  return strbuf_take(&b);
}

double comm_grace(double timeout) {
  double g = 0.5 * timeout;
  return g < 1.0 ? 1.0 : g > 30.0 ? 30.0 : g;
}

int comm_exchange_flags(gpl_comm_t *c, int mine, int *all, int *answered, double timeout) {
  hostop_t op = {.kind = HOP_FLAGS, .send = &mine, .recv = all, .answered = answered};
  if (c->broken) return GPL_ESTATE;
  return c->xp->run(c, &op, timeout, "flags exchange");
}

int comm_host_run(gpl_comm_t *c, const hostop_t *op, const char *what) {
  if (c->broken) return GPL_ESTATE;
  return comm_settle(c, c->xp->run(c, op, c->timeout, what));
}

int comm_settle(gpl_comm_t *c, int rc) {
  if (rc == GPL_ETIMEDOUT || rc == GPL_EMPI || rc == GPL_ENCCL || rc == GPL_EPEER ||
      rc == GPL_ECUDA || rc == GPL_EPROTO || rc == GPL_EIO)
    c->broken = 1;
  return rc;
}

int comm_new(gpl_comm_t **out, const comm_job_t *job) {
  *out = NULL;
  if (!job || job->size < 1 || job->rank < 0 || job->rank >= job->size || job->local_size < 1 ||
      job->local_rank < 0 || job->local_rank >= job->local_size || job->nnodes < 1 ||
      job->node < 0 || job->node >= job->nnodes) {
    LOG_WARN("comm_init: inconsistent job description");
    return GPL_EINVAL;
  }
  gpl_comm_t *c = calloc(1, sizeof *c);
  ALLOCCHECK(c);
  c->rank = job->rank;
  c->size = job->size;
  c->local_rank = job->local_rank;
  c->local_size = job->local_size;
  c->node = job->node;
  c->nnodes = job->nnodes;
  c->timeout = job->timeout > 0 ? job->timeout : mpix_default_timeout();
  c->device = -1;
  if (job->hosts) {
    c->hosts = calloc((size_t)job->size, sizeof *c->hosts);
    if (!c->hosts) {
      free(c);
      return GPL_ENOMEM;
    }
    for (int r = 0; r < job->size; r++)
      if (job->hosts[r] && !(c->hosts[r] = strdup(job->hosts[r]))) {
        comm_free(c);
        return GPL_ENOMEM;
      }
  }
  *out = c;
  return GPL_OK;
}

void comm_free(gpl_comm_t *c) {
  if (!c) return;
  if (c->be) {
    if (c->bucket) c->be->mem_free(c, c->bucket);
    if (c->flag_scaler) c->be->mem_free(c, c->flag_scaler);
    if (c->be->destroy) c->be->destroy(c);
  }
  if (c->xp && c->xp->destroy) c->xp->destroy(c);
  if (c->hosts)
    for (int r = 0; r < c->size; r++) free(c->hosts[r]);
  free(c->hosts);
  free(c);
}
