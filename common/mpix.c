/* Bounded MPI: waits with a deadline that name the missing ranks, and the rank names they use;
 * what the tree exchange (common/mpix_tree.c) stands on. */
#include "common/envvar.h"
#include "common/mpix.h"
#include "common/mpix_int.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/util.h"

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
