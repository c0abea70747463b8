/* Bounded MPI collectives built on the tree exchange (common/mpix_tree.c): barrier, allreduce of
 * a double, strings of every rank, the reach check between hosts, and communicator duplicates
 * that run it when they time out. */
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/mpix_int.h"
#include "common/util.h"

enum { TAG_PROBE = 7104 };

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
