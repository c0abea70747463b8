/* The public C API (include/gpulaunch/comm.h): gpl_init from the process's environment, argument
 * checks, and dispatch to the communicator's backend. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/internal.h"
#include "comm/proxy.h"
#include "common/envvar.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/util.h"

/* ---- names ---- */

const char *gpl_backend_name(gpl_backend_t b) {
  switch (b) {
    case GPL_BACKEND_AUTO: return "auto";
    case GPL_BACKEND_NCCL: return "nccl";
    case GPL_BACKEND_CPU: return "cpu";
    default: return "unknown";
  }
}

int gpl_backend_parse(const char *s, gpl_backend_t *out) {
  if (!s || !out) return GPL_EINVAL;
  for (int b = GPL_BACKEND_AUTO; b <= GPL_BACKEND_CPU; b++)
    if (strcasecmp(s, gpl_backend_name((gpl_backend_t)b)) == 0) {
      *out = (gpl_backend_t)b;
      return GPL_OK;
    }
  return GPL_EINVAL;
}

/* ---- life cycle ---- */

int gpl_finalize(gpl_comm_t *c) {
  if (!c) return GPL_OK;
  int owns = c->owns_mpi;
  comm_free(c);
  if (owns) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPICHECK(MPI_Finalize());
  }
  return GPL_OK;
}

/* The environment's overrides of the options (what gpulaunch passes to a program it wraps). */
static int apply_env(gpl_init_opts_t *o) {
  const char *s = envvar_get(ENVVAR_COMM_BACKEND);
  if (o->backend == GPL_BACKEND_AUTO && s && *s && gpl_backend_parse(s, &o->backend) < 0) {
    LOG_ERROR("GPULAUNCH_COMM_BACKEND=%s: expected auto, nccl or cpu", s);
    return GPL_EINVAL;
  }
  s = envvar_get(ENVVAR_COMM_INIT_TIMEOUT);
  double t;
  if (s && *s) {
    if (util_parse_duration(s, &t) < 0 || t <= 0) {
      LOG_ERROR("GPULAUNCH_COMM_INIT_TIMEOUT=%s: expected a duration such as 60s", s);
      return GPL_EINVAL;
    }
    o->init_timeout = t;
  }
  if (o->init_timeout <= 0) o->init_timeout = 60.0;
  if (o->timeout <= 0) o->timeout = mpix_default_timeout();
  return GPL_OK;
}

/* All ranks of MPI_COMM_WORLD; nodes found by comparing host names (a bounded allgather). */
static int init_world(gpl_comm_t **out, const gpl_init_opts_t *o, int owns_mpi) {
  enum { HOSTLEN = 256 };
  int rank = 0, size = 0, rc;
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  log_set_identity(util_hostname(), rank);
  /* Everyone checks in first, so a rank that never comes is named by every rank that did. */
  CHECK(comm_mpi_arrival(MPI_COMM_WORLD, o->timeout, "gpl_init (start-up)"));
  char mine[HOSTLEN] = {0};
  util_strlcpy(mine, util_hostname(), sizeof mine);
  char *all = calloc((size_t)size, HOSTLEN);
  const char **hosts = calloc((size_t)size, sizeof *hosts);
  if (!all || !hosts) {
    free(all);
    free(hosts);
    return GPL_ENOMEM;
  }
  rc = mpix_allgather(mine, HOSTLEN, all, MPI_COMM_WORLD, o->timeout, "gpl_init: host names");
  if (rc == GPL_OK) {
    comm_job_t j = {.rank = rank, .size = size, .comm = MPI_COMM_WORLD, .timeout = o->timeout};
    /* Nodes are numbered in the order of their first rank; first[r]: first rank on r's host. */
    int *first = calloc((size_t)size, sizeof *first);
    if (!first) {
      free(all);
      free(hosts);
      return GPL_ENOMEM;
    }
    for (int r = 0; r < size; r++) hosts[r] = all + (size_t)r * HOSTLEN;
    if (util_first_of_each((const char *const *)hosts, size, first) < 0) {
      free(first);
      free(all);
      free(hosts);
      return GPL_ENOMEM;
    }
    for (int r = 0; r < size; r++) {
      if (first[r] == r) j.nnodes++;
      if (first[r] == r && r < first[rank]) j.node++;
      if (first[r] == first[rank]) {
        j.local_size++;
        if (r < rank) j.local_rank++;
      }
    }
    free(first);
    j.hosts = hosts;
    rc = comm_init(out, &j, o);
    if (rc == GPL_OK) (*out)->owns_mpi = owns_mpi;
  }
  free(all);
  free(hosts);
  return rc;
}

/* Started by an MPI launcher (the MPI library has not been initialised yet)? */
static int under_mpi_launcher(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE",
                                     "MV2_COMM_WORLD_RANK"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(vars); i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

int gpl_init(gpl_comm_t **out, const gpl_init_opts_t *opts) {
  gpl_init_opts_t o;
  if (!out) return GPL_EINVAL;
  *out = NULL;
  log_init();
  if (opts) o = *opts;
  else gpl_init_opts_default(&o);
  CHECK(apply_env(&o));

  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return init_world(out, &o, 0);

  /* A program gpulaunch wraps is a child of the MPI rank, not an MPI process: it must never call
   * MPI_Init (it would inherit its parent's Open MPI variables). It talks through its parent. */
  const char *proxy = envvar_get(ENVVAR_PROXY);
  if (proxy && *proxy) return comm_proxy_connect(out, proxy, &o);

  const char *ws = getenv("WORLD_SIZE");
  if (ws && getenv("RANK") && atoi(ws) > 1 && !under_mpi_launcher()) {
    if (envvar_get(ENVVAR_RUN_ID))
      LOG_ERROR("gpl_init: wrapped by gpulaunch (WORLD_SIZE=%s) but without its comm proxy (%s "
                "is not set): this gpulaunch cannot serve gpl_init to the programs it runs", ws,
                COMM_PROXY_ENV);
    else
      LOG_ERROR("gpl_init: RANK/WORLD_SIZE=%s are set but there is no MPI launcher and no "
                "gpulaunch proxy (%s): run the program under gpulaunch or mpirun",
                ws, COMM_PROXY_ENV);
    return GPL_ENOTSUP;
  }
  if (under_mpi_launcher()) {
    MPICHECK(MPI_Init(NULL, NULL));
    return init_world(out, &o, 1);
  }
  /* A job of one, without MPI. */
  log_set_identity(util_hostname(), 0);
  const char *host = util_hostname();
  comm_job_t j = {.rank = 0, .size = 1, .local_rank = 0, .local_size = 1, .node = 0, .nnodes = 1,
                  .comm = MPI_COMM_NULL, .hosts = &host, .timeout = o.timeout};
  return comm_init(out, &j, &o);
}

/* ---- accessors ---- */

int gpl_comm_rank(const gpl_comm_t *c) { return c ? c->rank : -1; }
int gpl_comm_size(const gpl_comm_t *c) { return c ? c->size : 0; }
int gpl_comm_local_rank(const gpl_comm_t *c) { return c ? c->local_rank : -1; }
int gpl_comm_local_size(const gpl_comm_t *c) { return c ? c->local_size : 0; }
int gpl_comm_node(const gpl_comm_t *c) { return c ? c->node : -1; }
int gpl_comm_nnodes(const gpl_comm_t *c) { return c ? c->nnodes : 0; }
gpl_backend_t gpl_comm_backend(const gpl_comm_t *c) {
  return c && c->be ? c->be->kind : GPL_BACKEND_AUTO;
}
int gpl_comm_device(const gpl_comm_t *c) { return c ? c->device : -1; }

/* ---- dispatch ---- */

static int check_common(const gpl_comm_t *c, const void *send, const void *recv, size_t count,
                        gpl_dtype_t dt, int need_send) {
  (void)c;
  if ((unsigned)dt >= GPL_DTYPE_COUNT) {
    LOG_WARN("unknown dtype %d", (int)dt);
    return GPL_EINVAL;
  }
  if (count && (!recv || (need_send && !send))) {
    LOG_WARN("NULL buffer for %zu elements", count);
    return GPL_EINVAL;
  }
  return GPL_OK;
}

static int check_op(gpl_redop_t op) {
  if ((unsigned)op >= GPL_REDOP_COUNT) {
    LOG_WARN("unknown reduction op %d", (int)op);
    return GPL_EINVAL;
  }
  return GPL_OK;
}

int gpl_mem_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  COMM_GUARD(c);
  if (!p) return GPL_EINVAL;
  *p = NULL;
  if (!bytes) return GPL_OK;
  return c->be->mem_alloc(c, p, bytes);
}

int gpl_mem_free(gpl_comm_t *c, void *p) {
  if (!c || !c->be) return GPL_EINVAL;
  if (p) c->be->mem_free(c, p);
  return GPL_OK;
}

int gpl_memcpy(gpl_comm_t *c, void *dst, const void *src, size_t bytes, gpl_copy_t dir,
               void *stream) {
  COMM_GUARD(c);
  if ((unsigned)dir > GPL_COPY_COMM || (bytes && (!dst || !src))) return GPL_EINVAL;
  if (!bytes) return GPL_OK;
  return comm_settle(c, c->be->memcpy(c, dst, src, bytes, dir, stream));
}

int gpl_synchronize(gpl_comm_t *c, void *stream) {
  COMM_GUARD(c);
  return comm_settle(c, c->be->synchronize(c, stream));
}

int gpl_allreduce(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                  gpl_redop_t op, void *stream) {
  COMM_GUARD(c);
  CHECK(check_common(c, send, recv, count, dt, 1));
  CHECK(check_op(op));
  return comm_settle(c, c->be->allreduce(c, send, recv, count, dt, op, stream));
}

int gpl_allgather(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                  void *stream) {
  COMM_GUARD(c);
  CHECK(check_common(c, send, recv, count, dt, 1));
  return comm_settle(c, c->be->allgather(c, send, recv, count, dt, stream));
}

int gpl_reduce_scatter(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                       gpl_redop_t op, void *stream) {
  COMM_GUARD(c);
  CHECK(check_common(c, send, recv, count, dt, 1));
  CHECK(check_op(op));
  return comm_settle(c, c->be->reduce_scatter(c, send, recv, count, dt, op, stream));
}

int gpl_broadcast(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                  int root, void *stream) {
  COMM_GUARD(c);
  if (root < 0 || root >= c->size) {
    LOG_WARN("broadcast root %d is not a rank (size %d)", root, c->size);
    return GPL_EINVAL;
  }
  CHECK(check_common(c, send, recv, count, dt, c->rank == root));
  return comm_settle(c, c->be->broadcast(c, send, recv, count, dt, root, stream));
}

int gpl_alltoall(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                 void *stream) {
  COMM_GUARD(c);
  CHECK(check_common(c, send, recv, count, dt, 1));
  return comm_settle(c, c->be->alltoall(c, send, recv, count, dt, stream));
}

int gpl_progress(gpl_comm_t *c, long long step) {
  if (!c) return GPL_EINVAL;
  /* Wrapped by gpulaunch: its supervisor hears it. Otherwise there is nobody to tell. */
  if (c->xp == &comm_xport_proxy) return comm_proxy_progress(c, step < 0 ? -1.0 : (double)step);
  return GPL_OK;
}

int gpl_barrier(gpl_comm_t *c) {
  COMM_GUARD(c);
  return comm_settle(c, c->be->barrier(c));
}
