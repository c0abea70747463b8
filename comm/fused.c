/* The fused gradient allreduce: tensors packed back to back into buckets (pack with pre-scale and
 * cast, one pass), each bucket summed in the wire dtype, then unpacked (cast, post-scale, loss-scale
 * inverse and inf/NaN check, one pass); the loss-scaler objects; and the unfused baseline. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "comm/xport_mpi.h"

/* gpl_tensor_t is the public twin of kern_tensor_t: the same layout, so a list of one is a list of
 * the other. */
_Static_assert(sizeof(gpl_tensor_t) == sizeof(kern_tensor_t), "tensor layout");
_Static_assert(offsetof(gpl_tensor_t, data) == offsetof(kern_tensor_t, data), "tensor layout");
_Static_assert(offsetof(gpl_tensor_t, count) == offsetof(kern_tensor_t, count), "tensor layout");

struct gpl_scaler_s {
  kern_scaler_t *sc; /* comm memory */
};

/* ---- loss scaler ---- */

int gpl_scaler_create(gpl_comm_t *c, gpl_scaler_t **out, float init_scale, float growth_factor,
                      float backoff_factor, int growth_interval) {
  COMM_GUARD(c);
  if (!out || !(init_scale > 0) || !(growth_factor >= 1) || !(backoff_factor > 0) ||
      !(backoff_factor <= 1) || growth_interval < 1)
    return GPL_EINVAL;
  *out = NULL;
  gpl_scaler_t *s = calloc(1, sizeof *s);
  ALLOCCHECK(s);
  kern_scaler_t h;
  kern_scaler_init(&h, init_scale, growth_factor, backoff_factor, growth_interval);
  int rc = c->be->mem_alloc(c, (void **)&s->sc, sizeof h);
  if (rc == GPL_OK) rc = c->be->memcpy(c, s->sc, &h, sizeof h, GPL_COPY_TO_COMM, NULL);
  if (rc < 0) {
    if (s->sc) c->be->mem_free(c, s->sc);
    free(s);
    return comm_settle(c, rc);
  }
  *out = s;
  return GPL_OK;
}

int gpl_scaler_update(gpl_comm_t *c, gpl_scaler_t *s, void *stream) {
  COMM_GUARD(c);
  if (!s) return GPL_EINVAL;
  return comm_settle(c, c->be->scaler_update(c, s->sc, stream));
}

int gpl_scaler_read(gpl_comm_t *c, const gpl_scaler_t *s, gpl_scaler_state_t *st, void *stream) {
  COMM_GUARD(c);
  if (!s || !st) return GPL_EINVAL;
  kern_scaler_t h;
  CHECK(comm_settle(c, c->be->memcpy(c, &h, s->sc, sizeof h, GPL_COPY_TO_HOST, stream)));
  st->scale = h.scale;
  st->found_inf = h.found_inf;
  st->skipped = h.skipped;
  st->good_steps = h.good_steps;
  st->overflow_steps = h.overflow_steps;
  return GPL_OK;
}

void gpl_scaler_destroy(gpl_comm_t *c, gpl_scaler_t *s) {
  if (!s) return;
  if (c && c->be && s->sc) c->be->mem_free(c, s->sc);
  free(s);
}

/* ---- options ---- */

void gpl_fused_opts_default(gpl_fused_opts_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->bucket_mb = 25.0;
  o->wire = GPL_FLOAT;
  o->prescale = 1.0f;
  o->postscale = 1.0f;
}

static int check_opts(const gpl_tensor_t *t, int n, const gpl_fused_opts_t *o) {
  if (n < 0 || (n > 0 && !t) || !o) return GPL_EINVAL;
  if (o->wire != GPL_FLOAT && o->wire != GPL_BFLOAT16 && o->wire != GPL_HALF) {
    LOG_WARN("fused allreduce: wire dtype %s is not float, bfloat16 or half",
             gpl_dtype_name(o->wire));
    return GPL_EINVAL;
  }
  if (!(o->bucket_mb > 0)) {
    LOG_WARN("fused allreduce: bucket_mb must be positive (got %g)", o->bucket_mb);
    return GPL_EINVAL;
  }
  for (int i = 0; i < n; i++)
    if (t[i].count && !t[i].data) {
      LOG_WARN("fused allreduce: tensor %d has %zu elements and no data", i, t[i].count);
      return GPL_EINVAL;
    }
  return GPL_OK;
}

/* Comm-memory scratch of at least `bytes` (kept between calls, grown when needed). */
static int scratch(gpl_comm_t *c, size_t bytes) {
  if (bytes <= c->bucket_bytes) return GPL_OK;
  /* A call on another stream may still be unpacking from the old one. */
  if (c->bucket && c->be->scratch_idle) CHECK(c->be->scratch_idle(c));
  if (c->bucket) c->be->mem_free(c, c->bucket);
  c->bucket = NULL;
  c->bucket_bytes = 0;
  CHECK(c->be->mem_alloc(c, &c->bucket, bytes));
  c->bucket_bytes = bytes;
  return GPL_OK;
}

/* The scratch is about to be written on `stream`: order it after its last user (another call,
 * maybe on another stream); and, once this call's last reader of it is queued, say so. */
/* *use: the stream the steps on the scratch run on (the caller's where the backend has none). */
static int scratch_acquire(gpl_comm_t *c, void *stream, void **use) {
  *use = stream;
  return c->be->scratch_acquire ? c->be->scratch_acquire(c, stream, use) : GPL_OK;
}

static int scratch_release(gpl_comm_t *c, void *stream, void *use) {
  return c->be->scratch_release ? c->be->scratch_release(c, stream, use) : GPL_OK;
}

/* The scaler whose found_inf this call reports: the user's, or (when only the overflow flag was
 * asked for) a private one reset to scale 1, or none. */
static int pick_scaler(gpl_comm_t *c, const gpl_fused_opts_t *o, void *stream, kern_scaler_t **sc) {
  *sc = NULL;
  if (o->scaler) {
    *sc = o->scaler->sc;
    return GPL_OK;
  }
  if (!o->overflow) return GPL_OK;
  if (!c->flag_scaler) CHECK(c->be->mem_alloc(c, (void **)&c->flag_scaler, sizeof(kern_scaler_t)));
  kern_scaler_t h;
  kern_scaler_init(&h, 1.0f, 1.0f, 1.0f, 1);
  CHECK(c->be->memcpy(c, c->flag_scaler, &h, sizeof h, GPL_COPY_TO_COMM, stream));
  *sc = c->flag_scaler;
  return GPL_OK;
}

static int read_overflow(gpl_comm_t *c, const gpl_fused_opts_t *o, kern_scaler_t *sc,
                         void *stream) {
  if (!o->overflow) return GPL_OK;
  kern_scaler_t h;
  CHECK(c->be->memcpy(c, &h, sc, sizeof h, GPL_COPY_TO_HOST, stream));
  *o->overflow = h.found_inf != 0;
  return GPL_OK;
}

/* No element to reduce: the overflow flag is the scaler's (or 0). */
static int nothing_to_do(gpl_comm_t *c, const gpl_fused_opts_t *o, void *stream) {
  if (!o->overflow) return GPL_OK;
  if (o->scaler) return read_overflow(c, o, o->scaler->sc, stream);
  *o->overflow = 0;
  return GPL_OK;
}

/* ---- the cpu backend on node-local shared memory: no bucket copies ---- */

/* The shared-memory allreduce runs in chunks of one slot; each chunk of this rank's input is
 * packed straight into its slot, and each chunk of the result unpacked straight from the shared
 * result: one pass over the tensors before the sum and one after, nothing else. */
typedef struct io_cursor_s {
  int i;      /* slice */
  size_t pos; /* elements of it already taken */
} io_cursor_t;

typedef struct io_ctx_s {
  gpl_comm_t *c;
  const kern_tensor_t *sl;
  int ns;
  kern_tensor_t *part; /* the sub-slices of one chunk */
  const gpl_fused_opts_t *o;
  kern_scaler_t *sc;
  io_cursor_t in, out;
} io_ctx_t;

/* The sub-slices that make up the next len elements of the bucket; moves the cursor. */
static int io_take(io_ctx_t *x, io_cursor_t *cur, size_t len) {
  int m = 0;
  while (len > 0 && cur->i < x->ns) {
    size_t avail = x->sl[cur->i].count - cur->pos;
    size_t t = avail < len ? avail : len;
    if (t) {
      x->part[m].data = x->sl[cur->i].data + cur->pos;
      x->part[m].count = t;
      m++;
    }
    cur->pos += t;
    len -= t;
    if (cur->pos == x->sl[cur->i].count) {
      cur->i++;
      cur->pos = 0;
    }
  }
  return m;
}

static int io_fill(void *arg, size_t off, size_t len, void *dst) {
  io_ctx_t *x = arg;
  (void)off;
  int m = io_take(x, &x->in, len);
  return x->c->be->pack(x->c, x->part, m, dst, x->o->wire, x->o->prescale, NULL);
}

static int io_drain(void *arg, size_t off, size_t len, const void *src) {
  io_ctx_t *x = arg;
  (void)off;
  int m = io_take(x, &x->out, len);
  return x->c->be->unpack(x->c, src, x->o->wire, x->part, m, x->o->postscale, x->sc, NULL);
}

static int flush_shm(gpl_comm_t *c, const kern_tensor_t *sl, int ns, size_t fill,
                     const gpl_fused_opts_t *o, kern_scaler_t *sc) {
  io_ctx_t x = {c, sl, ns, malloc((size_t)ns * sizeof *x.part), o, sc, {0, 0}, {0, 0}};
  ALLOCCHECK(x.part);
  shmcoll_io_t io = {&x, io_fill, io_drain};
  int rc = xport_mpi_allreduce_io(c, fill, o->wire, GPL_OP_SUM, &io, "fused allreduce");
  free(x.part);
  return rc;
}

/* pack -> sum in the wire dtype -> unpack, for one bucket of ns slices and `fill` elements. */
static int flush(gpl_comm_t *c, const kern_tensor_t *sl, int ns, size_t fill,
                 const gpl_fused_opts_t *o, kern_scaler_t *sc, void *stream) {
  size_t esz = gpl_dtype_size(o->wire);
  if (c->be == &comm_backend_cpu && xport_mpi_shm_chunk(c, o->wire) &&
      fill * esz >= SHMCOLL_MIN_BYTES)
    return flush_shm(c, sl, ns, fill, o, sc);
  CHECK(scratch(c, fill * esz));
  void *use;
  CHECK(scratch_acquire(c, stream, &use));
  CHECK(c->be->pack(c, sl, ns, c->bucket, o->wire, o->prescale, use));
  CHECK(c->be->allreduce(c, c->bucket, c->bucket, fill, o->wire, GPL_OP_SUM, use));
  CHECK(c->be->unpack(c, c->bucket, o->wire, sl, ns, o->postscale, sc, use));
  return scratch_release(c, stream, use);
}

static int fused(gpl_comm_t *c, const gpl_tensor_t *tensors, int n, const gpl_fused_opts_t *o,
                 void *stream) {
  const kern_tensor_t *t = (const kern_tensor_t *)tensors;
  size_t esz = gpl_dtype_size(o->wire);
  size_t cap = (size_t)(o->bucket_mb * 1048576.0) / esz;
  if (cap < 1) cap = 1;
  size_t total = kern_total_count(t, n);
  if (total == 0) return nothing_to_do(c, o, stream);
  size_t nbuckets = (total + cap - 1) / cap;
  kern_scaler_t *sc;
  CHECK(pick_scaler(c, o, stream, &sc));
  /* A slice table for the whole call (every tensor once, plus one extra slice per bucket boundary
   * that cuts a tensor), so no entry is reused while a kernel may still read it. */
  size_t maxsl = (size_t)n + nbuckets;
  kern_tensor_t *sl = malloc(maxsl * sizeof *sl);
  ALLOCCHECK(sl);
  int rc = GPL_OK, ns = 0;
  size_t fill = 0, used = 0;
  kern_tensor_t *cur = sl;
  for (int i = 0; i < n && rc == GPL_OK; i++) {
    size_t off = 0;
    while (off < t[i].count) {
      size_t take = t[i].count - off;
      if (take > cap - fill) take = cap - fill;
      cur[ns].data = t[i].data + off;
      cur[ns].count = take;
      ns++;
      fill += take;
      off += take;
      if (fill == cap) {
        CHECKGOTO(flush(c, cur, ns, fill, o, sc, stream), rc, out);
        used += (size_t)ns;
        cur = sl + used;
        ns = 0;
        fill = 0;
      }
    }
  }
  if (fill) CHECKGOTO(flush(c, cur, ns, fill, o, sc, stream), rc, out);
  rc = read_overflow(c, o, sc, stream);
out:
  free(sl);
  return rc;
}

int gpl_fused_allreduce(gpl_comm_t *c, const gpl_tensor_t *t, int n, const gpl_fused_opts_t *o,
                        void *stream) {
  COMM_GUARD(c);
  CHECK(check_opts(t, n, o));
  return comm_settle(c, fused(c, t, n, o, stream));
}

static int unfused(gpl_comm_t *c, const gpl_tensor_t *tensors, int n, const gpl_fused_opts_t *o,
                   void *stream) {
  const kern_tensor_t *t = (const kern_tensor_t *)tensors;
  size_t maxc = 0;
  for (int i = 0; i < n; i++)
    if (t[i].count > maxc) maxc = t[i].count;
  if (!maxc) return nothing_to_do(c, o, stream);
  CHECK(scratch(c, maxc * sizeof(float)));
  kern_scaler_t *sc;
  CHECK(pick_scaler(c, o, stream, &sc));
  /* one tensor after another on one stream: the scratch is taken once for all of them */
  void *use;
  CHECK(scratch_acquire(c, stream, &use));
  for (int i = 0; i < n; i++) {
    if (!t[i].count) continue;
    CHECK(c->be->pack(c, &t[i], 1, c->bucket, GPL_FLOAT, o->prescale, use));
    CHECK(c->be->allreduce(c, c->bucket, c->bucket, t[i].count, GPL_FLOAT, GPL_OP_SUM, use));
    CHECK(c->be->unpack(c, c->bucket, GPL_FLOAT, &t[i], 1, o->postscale, sc, use));
  }
  CHECK(scratch_release(c, stream, use));
  return read_overflow(c, o, sc, stream);
}

int gpl_unfused_allreduce(gpl_comm_t *c, const gpl_tensor_t *t, int n, const gpl_fused_opts_t *o,
                          void *stream) {
  COMM_GUARD(c);
  if (n < 0 || (n > 0 && !t) || !o) return GPL_EINVAL;
  return comm_settle(c, unfused(c, t, n, o, stream));
}
