/* Bounded MPI: waits with a deadline that name the missing ranks, the collectives built on the
 * tree exchange (common/mpix_tree.c), the reach check, bounded communicator duplicates. */
#include "common/envvar.h"
#include "common/mpix.h"
#include "common/mpix_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/util.h"

enum { TAG_PROBE = 7104 };

static const char *const *g_hosts;
static int g_nhosts;

void mpix_set_hosts(const char *const *hosts, int n) {
  g_hosts = hosts;
  g_nhosts = hosts ? n : 0;
}

const char *mpix_rank_name(int r, char *buf, size_t len) {
  if (g_hosts && r >= 0 && r < g_nhosts && g_hosts[r])
    snprintf(buf, len, "rank %d (host %s)", r, g_hosts[r]);
  else
    snprintf(buf, len, "rank %d", r);
  return buf;
}

int mpix_world_rank(MPI_Comm comm, int r) {
  MPI_Group g, w;
  int out = r;
  if (comm == MPI_COMM_WORLD) return r;
  if (MPI_Comm_group(comm, &g) != MPI_SUCCESS) return r;
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, 1, &r, w, &out);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return out == MPI_UNDEFINED ? r : out;
}

double mpix_default_timeout(void) {
  const char *s = envvar_get(ENVVAR_TIMEOUT);
  double t;
  if (s && util_parse_duration(s, &t) == GPL_OK && t > 0) return t;
  return 60.0;
}

void mpix__nap(mpix__nap_t *z) {
  double now = util_now();
  if (z->start == 0) z->start = now, z->nap = 5e-5;
  if (now - z->start < 5e-3) {
    sched_yield();
    return;
  }
  util_sleep(z->nap);
  if (z->nap < 2e-3) z->nap *= 2;
}

int mpix__wait_until(MPI_Request *reqs, int n, double deadline) {
  mpix__nap_t z = {0};
  for (;;) {
    int done = 0;
    if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    if (done) return 1;
    if (util_now() >= deadline) return 0;
    mpix__nap(&z);
  }
}

int mpix_wait(MPI_Request *reqs, int n, const int *peers, MPI_Comm comm, double timeout_s,
              const char *what) {
  int done = mpix__wait_until(reqs, n, util_now() + timeout_s);
  if (done < 0) return GPL_EMPI;
  if (done) return GPL_OK;
  strbuf_t msg = STRBUF_INIT;
  int count = 0;
  for (int i = 0; i < n; i++) {
    int flag = 0;
    if (reqs[i] != MPI_REQUEST_NULL) MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
    if (reqs[i] == MPI_REQUEST_NULL || flag || !peers || peers[i] < 0) continue;
    char name[300];
    strbuf_printf(&msg, "%s%s", count++ ? ", " : "",
                  mpix_rank_name(mpix_world_rank(comm, peers[i]), name, sizeof name));
  }
  LOG_ERROR("timed out after %.1f s in %s: no answer from %s", timeout_s, what,
            count ? strbuf_str(&msg) : "(unknown ranks)");
  strbuf_free(&msg);
  return GPL_ETIMEDOUT;
}

int mpix_comm_size(MPI_Comm comm, int *rank, int *size) {
  int init = 0;
  MPI_Initialized(&init); /* callable before MPI_Init */
  if (!init) {
    if (rank) *rank = 0;
    if (size) *size = 1;
    return GPL_OK;
  }
  int r = 0, n = 0;
  MPICHECK(MPI_Comm_rank(comm, &r));
  MPICHECK(MPI_Comm_size(comm, &n));
  if (rank) *rank = r;
  if (size) *size = n;
  return GPL_OK;
}

int mpix_barrier(MPI_Comm comm, double timeout_s, const char *what) {
  int size;
  CHECK(mpix_comm_size(comm, NULL, &size));
  char dummy = 0;
  char *all = malloc((size_t)size);
  if (!all) return GPL_ENOMEM;
  int rc = mpix_allgather(&dummy, 1, all, comm, timeout_s, what);
  free(all);
  return rc;
}

int mpix_allreduce_double(double *inout, MPI_Op op, MPI_Comm comm, double timeout_s,
                          const char *what) {
  int size;
  CHECK(mpix_comm_size(comm, NULL, &size));
  double *all = malloc((size_t)size * sizeof *all);
  if (!all) return GPL_ENOMEM;
  int rc = mpix_allgather(inout, (int)sizeof *inout, all, comm, timeout_s, what);
  if (rc == GPL_OK) {
    double acc = all[0];
    for (int i = 1; i < size; i++) {
      if (op == MPI_SUM) acc += all[i];
      else if (op == MPI_MAX) acc = all[i] > acc ? all[i] : acc;
      else if (op == MPI_MIN) acc = all[i] < acc ? all[i] : acc;
      else rc = GPL_EINVAL;
    }
    *inout = acc;
  }
  free(all);
  return rc;
}

int mpix_gallgather_str(const mpix_group_t *g, const char *mine, char ***all_out, double timeout_s,
                        const char *what) {
  int size = g->n;
  int len = (int)strlen(mine) + 1;
  int *lens = malloc((size_t)size * sizeof *lens);
  if (!lens) return GPL_ENOMEM;
  int rc = mpix_gallgather(g, &len, (int)sizeof len, lens, timeout_s, what);
  if (rc < 0) {
    free(lens);
    return rc;
  }
  int max = 1;
  for (int r = 0; r < size; r++) max = lens[r] > max ? lens[r] : max;
  char *mine_pad = calloc(1, (size_t)max);
  char *blocks = malloc((size_t)max * (size_t)size);
  char **all = calloc((size_t)size, sizeof *all);
  if (!mine_pad || !blocks || !all) {
    free(lens), free(mine_pad), free(blocks), free(all);
    return GPL_ENOMEM;
  }
  memcpy(mine_pad, mine, (size_t)len);
  rc = mpix_gallgather(g, mine_pad, max, blocks, timeout_s, what);
  for (int r = 0; rc == GPL_OK && r < size; r++) {
    all[r] = strndup(blocks + (size_t)r * (size_t)max, (size_t)max);
    if (!all[r]) rc = GPL_ENOMEM;
  }
  free(lens);
  free(mine_pad);
  free(blocks);
  if (rc < 0) {
    mpix_free_strs(all, size);
    return rc;
  }
  *all_out = all;
  return GPL_OK;
}

int mpix_allgather_str(const char *mine, char ***all_out, MPI_Comm comm, double timeout_s, const char *what) {
  mpix_group_t g;
  CHECK(mpix_group_of(comm, &g));
  return mpix_gallgather_str(&g, mine, all_out, timeout_s, what);
}

void mpix_free_strs(char **all, int n) {
  if (!all) return;
  for (int i = 0; i < n; i++) free(all[i]);
  free(all);
}

int mpix_reach_check(MPI_Comm comm, const int *probers, int nprobers, double timeout_s, const char *what) {
  int rank, size;
  CHECK(mpix_comm_size(comm, &rank, &size));
  int me = -1; /* my index among the probers */
  for (int i = 0; i < nprobers; i++)
    if (probers[i] == rank) me = i;
  int n = nprobers;
  /* Deadlines from one start: a prober that cannot hear a partner reports at the end of the probe
   * phase, so the exchange of the reports waits that long beyond it. */
  double t0 = util_now(), probe_end = t0 + timeout_s;
  /* Partners: the neighbours on a ring of the probers. Any split of the hosts in two groups that
   * cannot reach each other (even if both reach rank 0's) cuts the ring somewhere, and no prober
   * talks to more than two others, whatever the job's size. */
  int part[2] = {-1, -1}, np = 0;
  if (me >= 0 && n > 1) {
    part[np++] = (me + n - 1) % n;
    if (n > 2) part[np++] = (me + 1) % n;
  }
  /* The buffers stay with MPI when a probe goes unanswered (it may still complete them). */
  static char one = 1;
  char *in = calloc(2, 1);
  MPI_Request *reqs = calloc(4, sizeof *reqs);
  if (!in || !reqs) {
    free(in), free(reqs);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < 4; i++) reqs[i] = MPI_REQUEST_NULL;
  for (int i = 0; i < np; i++) {
    MPI_Irecv(&in[i], 1, MPI_BYTE, probers[part[i]], TAG_PROBE, comm, &reqs[2 * i]);
    MPI_Isend(&one, 1, MPI_BYTE, probers[part[i]], TAG_PROBE, comm, &reqs[2 * i + 1]);
  }
  int clean = np == 0 || mpix__wait_until(reqs, 2 * np, probe_end) == 1;
  /* My record: bit 0, I did not hear my left partner; bit 1, my right one; bit 7, I probe. */
  unsigned char rec = 0;
  if (me >= 0) rec |= 0x80;
  for (int i = 0; i < np; i++) {
    int flag = reqs[2 * i] == MPI_REQUEST_NULL;
    if (!flag) MPI_Test(&reqs[2 * i], &flag, MPI_STATUS_IGNORE);
    if (!flag) rec |= (unsigned char)(n == 2 ? 3 : 1 << i);
  }
  if (clean) free(in), free(reqs);
  /* Everyone gets every record over the tree (bounded fan-in) and reaches the same verdict. */
  unsigned char *all = malloc((size_t)size);
  if (!all) return GPL_ENOMEM;
  double left = t0 + 2 * timeout_s - util_now();
  int rc = mpix_allgather(&rec, 1, all, comm, left > 1 ? left : 1, what);
  if (rc < 0) {
    free(all);
    return rc;
  }
  int shown = 0, pairs = 0;
  for (int a = 0; n > 1 && a < (n == 2 ? 1 : n); a++) {
    int b = (a + 1) % n; /* the pair a -> b: a's right partner, b's left */
    int a_deaf = (all[probers[a]] & 2) != 0, b_deaf = (all[probers[b]] & 1) != 0;
    if (!a_deaf && !b_deaf) continue;
    pairs++;
    if (rank != 0 || shown++ >= 12) continue;
    char na[300], nb[300];
    LOG_ERROR("%s: %s and %s cannot reach each other%s", what,
              mpix_rank_name(mpix_world_rank(comm, probers[a]), na, sizeof na),
              mpix_rank_name(mpix_world_rank(comm, probers[b]), nb, sizeof nb),
              a_deaf && b_deaf ? " (a network partition between their hosts?)" : " (one way)");
  }
  if (rank == 0 && shown > 12) LOG_ERROR("%s: ... and %d more pairs that cannot reach each other", what, pairs - 12);
  free(all);
  return pairs ? GPL_ETIMEDOUT : GPL_OK;
}

int mpix_comm_idup_wait(MPI_Comm comm, MPI_Request *req, MPI_Comm *out, double timeout_s, const char *what) {
  int done = mpix__wait_until(req, 1, util_now() + timeout_s);
  if (done == 1) return GPL_OK;
  if (done < 0) return GPL_EMPI;
  LOG_ERROR("timed out after %.1f s in %s: MPI_Comm_idup did not complete although every rank had arrived; "
            "checking which ranks can reach each other", timeout_s, what);
  int size = 0;
  MPI_Comm_size(comm, &size);
  int *all = calloc((size_t)size, sizeof *all);
  for (int r = 0; all && r < size; r++) all[r] = r;
  if (all) mpix_reach_check(comm, all, size, timeout_s < 10 ? timeout_s : 10, what);
  free(all);
  *out = MPI_COMM_NULL;
  return GPL_ETIMEDOUT;
}

int mpix_comm_dup(MPI_Comm comm, MPI_Comm *out, double timeout_s, const char *what) {
  MPI_Request req;
  *out = MPI_COMM_NULL;
  MPICHECK(MPI_Comm_idup(comm, out, &req));
  return mpix_comm_idup_wait(comm, &req, out, timeout_s, what);
}
