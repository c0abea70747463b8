/* Bounded MPI collectives: gather to the root and fan out with non-blocking calls and a deadline,
 * so a rank that never arrives is named instead of hanging everyone. */
#include "common/mpix.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/util.h"

enum { TAG_GATHER = 7101, TAG_SCATTER = 7102, TAG_BCAST = 7103, TAG_PROBE = 7104, TAG_PROBE_REPORT = 7105 };

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

static int world_rank_of(MPI_Comm comm, int r) {
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
  const char *s = getenv("GPULAUNCH_TIMEOUT");
  double t;
  if (s && util_parse_duration(s, &t) == GPL_OK && t > 0) return t;
  return 60.0;
}

/* Poll until every request is done (1) or the deadline passes (0): the first few milliseconds
 * yield and poll again (start-up exchanges complete in microseconds once everyone is there, and
 * oversubscribed ranks still get the CPU); after that, sleep, longer and longer, so a long wait
 * does not burn a core. */
static int wait_until(MPI_Request *reqs, int n, double deadline) {
  double start = util_now(), nap = 5e-5;
  for (;;) {
    int done = 0;
    if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return -1;
    if (done) return 1;
    double now = util_now();
    if (now >= deadline) return 0;
    if (now - start < 5e-3) {
      sched_yield();
      continue;
    }
    util_sleep(nap);
    if (nap < 2e-3) nap *= 2;
  }
}

int mpix_wait(MPI_Request *reqs, int n, const int *peers, MPI_Comm comm, double timeout_s,
              const char *what) {
  int done = wait_until(reqs, n, util_now() + timeout_s);
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
                  mpix_rank_name(world_rank_of(comm, peers[i]), name, sizeof name));
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

int mpix_allgather(const void *send, int bytes, void *recv, MPI_Comm comm, double timeout_s,
                   const char *what) {
  int rank, size, rc = GPL_OK;
  CHECK(mpix_comm_size(comm, &rank, &size));
  char *out = recv;
  memcpy(out + (size_t)rank * (size_t)bytes, send, (size_t)bytes);
  if (size == 1) return GPL_OK;
  MPI_Request *reqs = calloc((size_t)size, sizeof *reqs);
  int *peers = calloc((size_t)size, sizeof *peers);
  if (!reqs || !peers) {
    free(reqs);
    free(peers);
    return GPL_ENOMEM;
  }
  if (rank == 0) {
    /* Root: receive from everyone (naming who is missing), then send the whole table out. */
    int n = 0;
    for (int r = 1; r < size; r++) {
      peers[n] = r;
      MPI_Irecv(out + (size_t)r * (size_t)bytes, bytes, MPI_BYTE, r, TAG_GATHER, comm, &reqs[n++]);
    }
    CHECKGOTO(mpix_wait(reqs, n, peers, comm, timeout_s, what), rc, done);
    n = 0;
    for (int r = 1; r < size; r++) {
      peers[n] = r;
      MPI_Isend(out, bytes * size, MPI_BYTE, r, TAG_SCATTER, comm, &reqs[n++]);
    }
    CHECKGOTO(mpix_wait(reqs, n, peers, comm, timeout_s, what), rc, done);
  } else {
    /* Rank 0 knows who is missing and says so; the others wait a little longer so that its
     * message (and its MPI_Abort) comes first, and speak only if rank 0 itself is missing. */
    peers[0] = 0;
    peers[1] = 0;
    MPI_Isend(send, bytes, MPI_BYTE, 0, TAG_GATHER, comm, &reqs[0]);
    MPI_Irecv(out, bytes * size, MPI_BYTE, 0, TAG_SCATTER, comm, &reqs[1]);
    CHECKGOTO(mpix_wait(reqs, 2, peers, comm, timeout_s + 2.0, what), rc, done);
  }
done:
  free(reqs);
  free(peers);
  return rc;
}

int mpix_bcast(void *buf, int bytes, int root, MPI_Comm comm, double timeout_s, const char *what) {
  int rank, size, rc = GPL_OK;
  CHECK(mpix_comm_size(comm, &rank, &size));
  if (size == 1) return GPL_OK;
  if (rank != root) {
    MPI_Request req;
    int peer = root;
    MPI_Irecv(buf, bytes, MPI_BYTE, root, TAG_BCAST, comm, &req);
    return mpix_wait(&req, 1, &peer, comm, timeout_s + 2.0, what);
  }
  MPI_Request *reqs = calloc((size_t)size, sizeof *reqs);
  int *peers = calloc((size_t)size, sizeof *peers);
  if (!reqs || !peers) {
    free(reqs);
    free(peers);
    return GPL_ENOMEM;
  }
  int n = 0;
  for (int r = 0; r < size; r++) {
    if (r == root) continue;
    peers[n] = r;
    MPI_Isend(buf, bytes, MPI_BYTE, r, TAG_BCAST, comm, &reqs[n++]);
  }
  rc = mpix_wait(reqs, n, peers, comm, timeout_s, what);
  free(reqs);
  free(peers);
  return rc;
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

int mpix_allgather_str(const char *mine, char ***all_out, MPI_Comm comm, double timeout_s,
                       const char *what) {
  int size;
  CHECK(mpix_comm_size(comm, NULL, &size));
  int len = (int)strlen(mine) + 1;
  int *lens = malloc((size_t)size * sizeof *lens);
  if (!lens) return GPL_ENOMEM;
  int rc = mpix_allgather(&len, (int)sizeof len, lens, comm, timeout_s, what);
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
  rc = mpix_allgather(mine_pad, max, blocks, comm, timeout_s, what);
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

void mpix_free_strs(char **all, int n) {
  if (!all) return;
  for (int i = 0; i < n; i++) free(all[i]);
  free(all);
}

int mpix_reach_check(MPI_Comm comm, const int *probers, int nprobers, double timeout_s, const char *what) {
  int rank, size;
  MPICHECK(MPI_Comm_rank(comm, &rank));
  MPICHECK(MPI_Comm_size(comm, &size));
  int me = -1; /* my index among the probers */
  for (int i = 0; i < nprobers; i++)
    if (probers[i] == rank) me = i;
  int n = nprobers, verdict = 0;
  /* Deadlines from one start: a prober that cannot hear another reports at the end of the probe
   * phase, so rank 0 (which heard everyone at once) must wait for reports past that end, not for
   * timeout_s from its own early finish (the reports then raced its deadline). */
  double t0 = util_now(), probe_end = t0 + timeout_s, report_end = t0 + 2 * timeout_s;
  /* The buffers stay with MPI when a probe goes unanswered (it may still complete them): they
   * are freed only when every request completed. */
  MPI_Request *reqs = NULL;
  char *in = NULL, *heard = NULL, *all = NULL;
  static char one = 1;
  int clean = 1;
  if (me >= 0) {
    reqs = calloc((size_t)n * 2, sizeof *reqs);
    in = calloc((size_t)n, 1);
    heard = calloc((size_t)n, 1);
    all = rank == 0 ? calloc((size_t)n * (size_t)n, 1) : NULL;
    if (!reqs || !in || !heard || (rank == 0 && !all)) return GPL_ENOMEM;
    for (int i = 0; i < n; i++) {
      reqs[2 * i] = reqs[2 * i + 1] = MPI_REQUEST_NULL;
      if (i == me) continue;
      MPI_Irecv(&in[i], 1, MPI_BYTE, probers[i], TAG_PROBE, comm, &reqs[2 * i]);
      MPI_Isend(&one, 1, MPI_BYTE, probers[i], TAG_PROBE, comm, &reqs[2 * i + 1]);
    }
    clean = wait_until(reqs, 2 * n, probe_end) == 1;
    for (int i = 0; i < n; i++) {
      int flag = i == me || reqs[2 * i] == MPI_REQUEST_NULL;
      if (!flag) MPI_Test(&reqs[2 * i], &flag, MPI_STATUS_IGNORE);
      heard[i] = (char)flag;
    }
    /* Every prober reports whom it heard to rank 0 (the star every rank just used). */
    if (rank != 0) {
      MPI_Request rq;
      MPI_Isend(heard, n, MPI_BYTE, 0, TAG_PROBE_REPORT, comm, &rq);
      clean &= wait_until(&rq, 1, report_end) == 1;
    } else {
      MPI_Request *rr = calloc((size_t)n, sizeof *rr);
      if (!rr) return GPL_ENOMEM;
      memcpy(all + (size_t)me * n, heard, (size_t)n);
      for (int i = 0; i < n; i++) {
        rr[i] = MPI_REQUEST_NULL;
        if (i != me) MPI_Irecv(all + (size_t)i * n, n, MPI_BYTE, probers[i], TAG_PROBE_REPORT, comm, &rr[i]);
      }
      clean &= wait_until(rr, n, report_end) == 1;
      int shown = 0, pairs = 0;
      for (int a = 0; a < n; a++) {
        int got = a == me || rr[a] == MPI_REQUEST_NULL;
        if (!got) MPI_Test(&rr[a], &got, MPI_STATUS_IGNORE);
        if (!got) { /* its report never came: it cannot reach rank 0 either */
          for (int b = 0; b < n; b++) all[(size_t)a * n + b] = b == me ? 0 : 1;
          all[(size_t)a * n + a] = 1;
        }
      }
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
          if (a == b || all[(size_t)a * n + b]) continue;
          int both = !all[(size_t)b * n + a];
          if (both && b < a) continue; /* said once */
          pairs++;
          if (shown++ >= 12) continue;
          char na[300], nb[300];
          LOG_ERROR("%s: %s and %s cannot reach each other%s", what,
                    mpix_rank_name(world_rank_of(comm, probers[a]), na, sizeof na),
                    mpix_rank_name(world_rank_of(comm, probers[b]), nb, sizeof nb),
                    both ? " (a network partition between their hosts?)" : " (one way)");
        }
      if (shown > 12) LOG_ERROR("%s: ... and %d more pairs that cannot reach each other", what, pairs - 12);
      verdict = pairs ? 1 : 0;
      if (clean) free(rr);
    }
  }
  /* Everyone learns the verdict, which rank 0 has by report_end at the latest (bounded; a rank
   * rank 0 cannot reach times out on its own). */
  double left = report_end - util_now();
  int rc = mpix_bcast(&verdict, (int)sizeof verdict, 0, comm, (left > 0 ? left : 0) + 1.0, what);
  if (clean && reqs) {
    free(reqs), free(in), free(heard), free(all);
  }
  if (rc < 0) return rc;
  return verdict ? GPL_ETIMEDOUT : GPL_OK;
}

int mpix_comm_idup_wait(MPI_Comm comm, MPI_Request *req, MPI_Comm *out, double timeout_s, const char *what) {
  int done = wait_until(req, 1, util_now() + timeout_s);
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
