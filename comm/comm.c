/* Communicator set-up from a job: host transport, agreement on the backend by all ranks, backend
 * start; and the helpers every part of comm/ uses to name ranks and exchange flags. */
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

/* Every rank probes nccl locally, then all agree: nccl only when every rank can use it. auto falls
 * back to cpu (info line); an explicit nccl fails on every rank, naming the ranks without a GPU. */
static int choose_backend(gpl_comm_t *c, const gpl_init_opts_t *o, const comm_backend_t **out) {
  if (o->backend == GPL_BACKEND_CPU) {
    *out = &comm_backend_cpu;
    return GPL_OK;
  }
  char why[512] = "";
  int mine = comm_backend_nccl.probe(c, o->device, why, sizeof why);
  int n = c->size, rc;
  int *all = calloc((size_t)n, sizeof *all), *ans = calloc((size_t)n, sizeof *ans);
  int *bad = calloc((size_t)n, sizeof *bad);
  if (!all || !ans || !bad) {
    rc = GPL_ENOMEM;
    goto out;
  }
  rc = comm_exchange_flags(c, mine, all, ans, c->timeout);
  if (rc == GPL_ETIMEDOUT) {
    char *l = comm_missing_list(c, ans);
    LOG_ERROR("timed out after %.1f s agreeing on the communication backend: no answer from %s",
              c->timeout, l ? l : "?");
    free(l);
    c->broken = 1;
    goto out;
  }
  if (rc < 0) goto out;
  int nbad = 0, first = 0;
  for (int r = 0; r < n; r++) {
    bad[r] = all[r] != 0;
    if (bad[r] && !nbad++) first = all[r];
  }
  if (!nbad) {
    *out = &comm_backend_nccl;
    goto out;
  }
  char *l = comm_rank_list(c, bad);
  if (o->backend == GPL_BACKEND_AUTO) {
    if (mine)
      LOG_INFO(COMM, "backend auto: using cpu (nccl unusable here: %s)", why);
    else
      LOG_INFO(COMM, "backend auto: using cpu, because nccl is unusable on %s", l ? l : "?");
    *out = &comm_backend_cpu;
  } else {
    if (mine)
      LOG_ERROR("backend nccl was asked for, but this rank cannot use it: %s", why);
    else
      LOG_ERROR("backend nccl was asked for, but it is unusable on %s (see their messages)",
                l ? l : "?");
    rc = first < 0 ? first : GPL_ENOGPU;
  }
  free(l);
out:
  free(all);
  free(ans);
  free(bad);
  return rc;
}

int comm_start_backend(gpl_comm_t *c, const gpl_init_opts_t *o) {
  const comm_backend_t *be = NULL;
  CHECK(choose_backend(c, o, &be));
  c->be = be;
  int rc = be->init(c, o);
  if (rc < 0) {
    if (be->destroy) be->destroy(c);
    c->be = NULL;
    return rc;
  }
  LOG_INFO(COMM, "communicator ready: rank %d of %d, backend %s, transport %s", c->rank, c->size,
           be->name, c->xp->name);
  return GPL_OK;
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

int comm_init(gpl_comm_t **out, const comm_job_t *job, const gpl_init_opts_t *opts) {
  gpl_init_opts_t o;
  gpl_comm_t *c = NULL;
  int rc;
  if (!out) return GPL_EINVAL;
  *out = NULL;
  if (opts) o = *opts;
  else gpl_init_opts_default(&o);
  if (job && job->comm == MPI_COMM_NULL && job->size != 1) {
    LOG_WARN("comm_init: a job of %d ranks needs an MPI communicator", job->size);
    return GPL_EINVAL;
  }
  CHECK(comm_new(&c, job));
  if (job->comm == MPI_COMM_NULL) {
    c->xp = &comm_xport_self;
  } else {
    int size = 0;
    MPI_Comm_size(job->comm, &size);
    if (size != job->size) {
      LOG_WARN("comm_init: job says %d ranks but its communicator has %d", job->size, size);
      comm_free(c);
      return GPL_EINVAL;
    }
    CHECKGOTO(comm_xport_mpi_init(c, job->comm), rc, fail);
  }
  CHECKGOTO(comm_start_backend(c, &o), rc, fail);
  *out = c;
  return GPL_OK;
fail:
  comm_free(c);
  return rc;
}
