/* Node-local allreduce in shared memory. Each node has one segment: a line per rank for barrier
 * arrivals, a slot per rank, and two result buffers. A buffer goes through in chunks of one slot:
 *   1. every rank copies its chunk into its slot, and arrives;
 *   2. each rank reduces its own slice of the chunk over all slots into a result buffer (in rank
 *      order, 16-bit floats accumulated in float and rounded once; one rank per slice, so every
 *      rank sees the same bits), allreduces that slice with the ranks of the same
 *      local index on the other nodes (MPI), and arrives;
 *   3. every rank copies the whole result out.
 * The result buffers alternate between chunks, so two barriers per chunk suffice: a rank writes a
 * slot only after everyone finished reading the slots (barrier 2 of the last chunk), and a result
 * buffer only after everyone copied it out (barrier 1 of the next chunk). A barrier that passes its
 * deadline names the ranks that did not arrive. */
#include "comm/shmcoll.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm/internal.h"
#include "comm/reduce.h"
#include "common/envvar.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"

enum { SLOT_BYTES = 256 << 10 }; /* per-core cache sized: measured best for 4 ranks on 2 cores */

typedef struct shm_line_s {
  _Alignas(64) _Atomic uint64_t gen; /* barriers this rank has arrived at */
} shm_line_t;

struct shmcoll_s {
  gpl_comm_t *c;     /* for rank names and the job size */
  MPI_Comm node;     /* the ranks sharing the segment */
  MPI_Comm cross;    /* same local index on every node; MPI_COMM_NULL with one node */
  int L, lr;         /* ranks on this node, and our index among them */
  int *world_of;     /* rank in the job's communicator of each local index */
  size_t slot;       /* bytes per slot and per result buffer */
  char *base;
  size_t bytes;
  shm_line_t *lines; /* L lines */
  char *slots;       /* L slots */
  char *res[2];
  uint64_t gen;      /* barriers we have arrived at */
  uint64_t chunks;   /* chunks done: picks the result buffer */
};

static void arrive(shmcoll_t *s) {
  s->gen++;
  atomic_store_explicit(&s->lines[s->lr].gen, s->gen, memory_order_release);
}

static int all_arrived(const shmcoll_t *s) {
  for (int q = 0; q < s->L; q++)
    if (atomic_load_explicit(&s->lines[q].gen, memory_order_acquire) < s->gen) return 0;
  return 1;
}

/* ---- set-up ---- */

static int map_segment(shmcoll_t *s, const char *name, int create) {
  int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
  if (fd < 0) {
    LOG_WARN("shared memory %s: shm_open: %s", name, strerror(errno));
    return GPL_ESYS;
  }
  if (create) {
    /* Reserve the pages now: a full /dev/shm is an error here, not a SIGBUS later. */
    int e = posix_fallocate(fd, 0, (off_t)s->bytes);
    if (e != 0) {
      LOG_WARN("shared memory %s: cannot reserve %zu bytes in /dev/shm: %s", name, s->bytes,
               strerror(e));
      close(fd);
      shm_unlink(name);
      return GPL_ESYS;
    }
  }
  void *p = mmap(NULL, s->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    LOG_WARN("shared memory %s: mmap of %zu bytes: %s", name, s->bytes, strerror(errno));
    if (create) shm_unlink(name);
    return GPL_ESYS;
  }
  s->base = p;
  size_t hdr = ((size_t)s->L * sizeof(shm_line_t) + 4095) & ~(size_t)4095;
  s->lines = (shm_line_t *)s->base;
  s->slots = s->base + hdr;
  s->res[0] = s->slots + (size_t)s->L * s->slot;
  s->res[1] = s->res[0] + s->slot;
  return GPL_OK;
}

/* Slot size: GPULAUNCH_COMM_SHM_SLOT (bytes, K/M suffixes) on the node's first rank, else 256 KiB;
 * the segment holds a slot per rank and two more. */
static size_t slot_bytes(void) {
  const char *e = envvar_get(ENVVAR_COMM_SHM_SLOT);
  uint64_t v;
  if (e && util_parse_size(e, &v) == GPL_OK && v >= 4096 && v <= (1ull << 30)) return (size_t)v & ~(size_t)63;
  return SLOT_BYTES;
}

static void seg_size(shmcoll_t *s, size_t slot) {
  s->slot = slot;
  size_t hdr = ((size_t)s->L * sizeof(shm_line_t) + 4095) & ~(size_t)4095;
  s->bytes = hdr + ((size_t)s->L + 2) * s->slot;
}

/* A bounded host op on an MPI communicator outside a gpl_comm_t's transport. */
static int run_on(const hostop_t *op, MPI_Comm comm, int tag, double timeout) {
  hostop_run_t r;
  CHECK(hostop_start(&r, op, comm, tag, util_now() + timeout));
  return hostop_wait(&r);
}

void shmcoll_destroy(shmcoll_t *s, int broken) {
  if (!s) return;
  if (s->base) munmap(s->base, s->bytes);
  int fin = 0;
  MPI_Finalized(&fin);
  /* A broken communicator may still have a cross-node step in flight: leave it to MPI. */
  if (!fin && !broken && s->node != MPI_COMM_NULL) MPI_Comm_free(&s->node);
  if (!fin && !broken && s->cross != MPI_COMM_NULL) MPI_Comm_free(&s->cross);
  free(s->world_of);
  free(s);
}

int shmcoll_create(shmcoll_t **out, gpl_comm_t *c, MPI_Comm comm, int tag) {
  *out = NULL;
  int rank, size, rc = GPL_OK;
  MPICHECK(MPI_Comm_rank(comm, &rank));
  MPICHECK(MPI_Comm_size(comm, &size));
  shmcoll_t *s = calloc(1, sizeof *s);
  ALLOCCHECK(s);
  s->c = c;
  s->node = s->cross = MPI_COMM_NULL;
  s->slot = SLOT_BYTES;
  /* Blocking calls; every rank is known to be here (the caller passed a bounded barrier), and the
   * watchdog bounds them should the network fail now. */
  MPIX_GUARDED(c->timeout, "communicator set-up: MPI_Comm_split_type",
               MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &s->node));
  MPI_Comm_set_errhandler(s->node, MPI_ERRORS_RETURN);
  MPICHECK(MPI_Comm_size(s->node, &s->L));
  MPICHECK(MPI_Comm_rank(s->node, &s->lr));
  /* Test hook: GPULAUNCH_TEST_SHM_NODES=k cuts each node into k pretend nodes, so one machine
   * runs the cross-node step. */
  const char *tn = envvar_get(ENVVAR_TEST_SHM_NODES);
  int k = tn ? atoi(tn) : 1;
  if (k > 1 && s->L % k == 0) {
    MPI_Comm sub;
    MPICHECK(MPI_Comm_split(s->node, s->lr / (s->L / k), s->lr, &sub));
    MPI_Comm_free(&s->node);
    s->node = sub;
    MPI_Comm_set_errhandler(s->node, MPI_ERRORS_RETURN);
    MPICHECK(MPI_Comm_size(s->node, &s->L));
    MPICHECK(MPI_Comm_rank(s->node, &s->lr));
  }
  s->world_of = calloc((size_t)s->L, sizeof *s->world_of);
  int *locals = calloc((size_t)s->L, sizeof *locals);
  if (!s->world_of || !locals) {
    free(locals);
    shmcoll_destroy(s, 0);
    return GPL_ENOMEM;
  }
  MPI_Group gn, gc;
  MPI_Comm_group(s->node, &gn);
  MPI_Comm_group(comm, &gc);
  for (int q = 0; q < s->L; q++) locals[q] = q;
  MPI_Group_translate_ranks(gn, s->L, locals, gc, s->world_of);
  MPI_Group_free(&gn);
  MPI_Group_free(&gc);
  free(locals);

  /* The node's first rank creates the segment and sends its name (with its status). */
  struct {
    int ok;
    size_t slot;
    char name[64];
  } msg;
  memset(&msg, 0, sizeof msg);
  /* GPULAUNCH_COMM_SHM=0 turns the path off (on any rank: then for all, as agreed below). */
  const char *env = envvar_get(ENVVAR_COMM_SHM);
  int want = !(env && strcmp(env, "0") == 0);
  if (s->lr == 0 && want) {
    snprintf(msg.name, sizeof msg.name, "/gpulaunch-%d-%d-%llx", (int)getpid(), rank,
             (unsigned long long)util_now_ns());
    msg.slot = slot_bytes();
    seg_size(s, msg.slot);
    msg.ok = map_segment(s, msg.name, 1) == GPL_OK;
  }
  hostop_t b = {.kind = HOP_BCAST, .send = &msg, .recv = &msg, .count = sizeof msg,
                .dtype = GPL_UINT8, .root = 0};
  rc = run_on(&b, s->node, tag, c->timeout);
  if (rc < 0) goto fail;
  int mine = msg.ok && want;
  if (s->lr != 0 && mine) {
    seg_size(s, msg.slot);
    mine = map_segment(s, msg.name, 0) == GPL_OK;
  }

  /* Everyone says whether it has the segment and how many ranks its node has: the shared-memory
   * path is used only if all do and all nodes are the same size (the slices must line up). */
  int *vals = calloc((size_t)size, sizeof *vals), *ans = calloc((size_t)size, sizeof *ans);
  if (!vals || !ans) {
    free(vals);
    free(ans);
    rc = GPL_ENOMEM;
    goto fail;
  }
  int flag = mine ? s->L : -1;
  hostop_t f = {.kind = HOP_FLAGS, .send = &flag, .recv = vals, .answered = ans};
  rc = run_on(&f, comm, tag + 2, c->timeout);
  if (s->lr == 0 && msg.ok) shm_unlink(msg.name); /* mapped by all who could: no leak from here */
  int usable = rc == GPL_OK;
  for (int p = 0; p < size && usable; p++) usable = vals[p] == s->L;
  free(vals);
  free(ans);
  if (rc < 0) goto fail;
  if (!usable) {
    LOG_INFO(COMM, "shared-memory allreduce not used (turned off, a rank could not map it, or "
                   "nodes differ in size); large buffers go through MPI");
    shmcoll_destroy(s, 0);
    return GPL_OK;
  }
  if (s->L < size) {
    MPIX_GUARDED(c->timeout, "communicator set-up: MPI_Comm_split (across nodes)",
                 MPI_Comm_split(comm, s->lr, rank, &s->cross));
    MPI_Comm_set_errhandler(s->cross, MPI_ERRORS_RETURN);
  }
  LOG_INFO(COMM, "shared-memory allreduce: %d ranks on this node, %d nodes, %zu KiB slots",
           s->L, size / s->L, s->slot / 1024);
  *out = s;
  return GPL_OK;
fail:
  shmcoll_destroy(s, rc == GPL_ETIMEDOUT);
  return rc;
}

/* ---- the allreduce ---- */

size_t shmcoll_chunk(const shmcoll_t *s, gpl_dtype_t dt) { return s->slot / gpl_dtype_size(dt); }

int shmcoll_start(shmcoll_run_t *r, shmcoll_t *s, const hostop_t *op, const shmcoll_io_t *io,
                  double deadline) {
  memset(r, 0, sizeof *r);
  if (op->kind != HOP_ALLREDUCE) return GPL_EINVAL;
  r->s = s;
  r->op = *op;
  r->io = io;
  r->size = s->c->size;
  r->esz = hostop_dtype_size(op->dtype);
  r->deadline = deadline;
  r->req = MPI_REQUEST_NULL;
  if (!op->count) {
    r->done = 1;
    r->status = GPL_OK;
  }
  return GPL_OK;
}

static void finish(shmcoll_run_t *r, int status) {
  r->done = 1;
  r->status = status;
}

/* A barrier that did not fill by the deadline: name the ranks of the node that are not there. */
static void barrier_timeout(shmcoll_run_t *r) {
  shmcoll_t *s = r->s;
  int *missing = calloc((size_t)s->c->size, sizeof *missing);
  if (missing) {
    for (int q = 0; q < s->L; q++)
      if (atomic_load_explicit(&s->lines[q].gen, memory_order_acquire) < s->gen)
        missing[s->world_of[q]] = 1;
    char *l = comm_rank_list(s->c, missing);
    LOG_ERROR("timed out after %.1f s in allreduce (shared memory, %zu elements): no answer "
              "from %s", s->c->timeout, r->op.count, l ? l : "?");
    free(l);
    free(missing);
    r->diagnosed = 1;
  }
  finish(r, GPL_ETIMEDOUT);
}

/* Our slice [s0, s1) of the current chunk, cache-line aligned so ranks never share a line. */
static void my_slice(shmcoll_run_t *r) {
  size_t per_line = 64 / r->esz, L = (size_t)r->s->L;
  size_t part = (r->len + L - 1) / L;
  part = (part + per_line - 1) / per_line * per_line;
  r->s0 = GPL_MIN(r->len, (size_t)r->s->lr * part);
  r->s1 = GPL_MIN(r->len, r->s0 + part);
}

int shmcoll_test(shmcoll_run_t *r) {
  shmcoll_t *s = r->s;
  size_t cap = s->slot / r->esz;
  for (;;) {
    if (r->done) return GPL_OK;
    switch (r->phase) {
      case 0: { /* our chunk into our slot */
        const char *src = r->op.send ? r->op.send : r->op.recv;
        char *slot = s->slots + (size_t)s->lr * s->slot;
        r->len = GPL_MIN(cap, r->op.count - r->off);
        if (r->io) {
          int rc = r->io->fill(r->io->arg, r->off, r->len, slot);
          if (rc < 0) {
            /* the others wait at the barrier until their deadline; we cannot take part */
            finish(r, rc);
            return GPL_OK;
          }
        } else {
          memcpy(slot, src + r->off * r->esz, r->len * r->esz);
        }
        arrive(s);
        r->phase = 1;
        break;
      }
      case 1: { /* everyone's chunk is in: reduce our slice in rank order */
        if (!all_arrived(s)) {
          if (util_now() >= r->deadline) barrier_timeout(r);
          return GPL_OK;
        }
        my_slice(r);
        r->res = s->res[s->chunks & 1];
        size_t n = r->s1 - r->s0, o = r->s0 * r->esz;
        if (n) {
          const void *src[64];
          const void **srcs = s->L <= 64 ? src : malloc((size_t)s->L * sizeof *srcs);
          if (!srcs) {
            finish(r, GPL_ENOMEM);
            return GPL_OK;
          }
          for (int q = 0; q < s->L; q++) srcs[q] = s->slots + (size_t)q * s->slot + o;
          reduce_many(r->res + o, srcs, s->L, n, r->op.dtype, r->op.op);
          if (srcs != src) free(srcs);
        }
        if (s->cross != MPI_COMM_NULL) {
          int mrc = MPI_Iallreduce(MPI_IN_PLACE, r->res + o, (int)n, hostop_mpi_type(r->op.dtype),
                                   hostop_mpi_op(r->op.dtype, r->op.op), s->cross, &r->req);
          if (mrc != MPI_SUCCESS) {
            LOG_WARN("MPI_Iallreduce across nodes failed (%d)", mrc);
            finish(r, GPL_EMPI);
            return GPL_OK;
          }
        }
        r->phase = 2;
        break;
      }
      case 2: { /* the other nodes' share of our slice */
        if (r->req != MPI_REQUEST_NULL) {
          int flag = 0;
          if (MPI_Test(&r->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            finish(r, GPL_EMPI);
            return GPL_OK;
          }
          if (!flag) {
            if (util_now() >= r->deadline) finish(r, GPL_ETIMEDOUT); /* diagnosed by the caller */
            return GPL_OK;
          }
        }
        if (r->op.op == GPL_OP_AVG && r->s1 > r->s0)
          reduce_divide(r->res + r->s0 * r->esz, r->s1 - r->s0, r->op.dtype, r->size);
        arrive(s);
        r->phase = 3;
        break;
      }
      case 3: { /* every slice is done: copy the chunk's result out */
        if (!all_arrived(s)) {
          if (util_now() >= r->deadline) barrier_timeout(r);
          return GPL_OK;
        }
        int rc = GPL_OK;
        if (r->io) rc = r->io->drain(r->io->arg, r->off, r->len, r->res);
        else memcpy((char *)r->op.recv + r->off * r->esz, r->res, r->len * r->esz);
        s->chunks++;
        if (rc < 0) {
          finish(r, rc);
          return GPL_OK;
        }
        r->off += r->len;
        if (r->off == r->op.count) finish(r, GPL_OK);
        r->phase = 0;
        break;
      }
      default:
        finish(r, GPL_EINVAL);
        return GPL_OK;
    }
  }
}
