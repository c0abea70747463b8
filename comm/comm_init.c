/* Communicator set-up from a job (comm_init): host transport, agreement on the backend by all
 * ranks, backend start; and the defaults of the init options. Above the transports and backends
 * it picks. */
#include "comm/internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

void gpl_init_opts_default(gpl_init_opts_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->backend = GPL_BACKEND_AUTO;
  o->init_timeout = 60.0;
  o->timeout = 0.0; /* the GPULAUNCH_TIMEOUT default */
  o->device = -1;
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
