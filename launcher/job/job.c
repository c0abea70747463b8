/* Who am I: MPI start-up, host names of all ranks, nodes by host name, the node's and the leaders'
 * groups; every step bounded by a deadline (exchanges of our own, or the watchdog around MPI's). */
#include "launcher/job/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm_job.h"
#include "common/envvar.h"
#include "common/mpix.h"
#include "common/util.h"
#include "common/watchdog.h"
#include "launcher/exitcode.h"
#include "launcher/job/slurm.h"
#include "topology/mpinet_init.h"


/* Test hook: GPULAUNCH_TEST_STALL=rank:seconds[:stage] makes one rank arrive late at a stage
 * ("init" by default), so the tests can see the others name it. */
void job_test_stall(const job_t *job, const char *stage) {
  const char *s = envvar_get(ENVVAR_TEST_STALL);
  if (!s) return;
  int rank = -1;
  double secs = 0;
  char st[32] = "init";
  if (sscanf(s, "%d:%lf:%31s", &rank, &secs, st) < 2) return;
  if (rank == job->rank && strcmp(st, stage) == 0) {
    LOG_INFO(JOB, "test hook: rank %d stalls %.1f s at %s", rank, secs, stage);
    util_sleep(secs);
  }
}

/* A job of one started alone (no mpirun, srun or PMI): no MPI_Init at all. A singleton MPI_Init
 * needs the MPI runtime's own daemons (Open MPI forks orted; where there is none it fails or
 * hangs), and one rank needs nothing from MPI: its communicators stay MPI_COMM_NULL, which
 * common/mpix.c and launcher/sup/ctl.c take as this process alone. */
static int job_init_alone(job_t *job) {
  job->rank = 0;
  job->size = job->local_size = job->nnodes = 1;
  job->hosts = calloc(1, sizeof *job->hosts);
  job->node_of = calloc(1, sizeof *job->node_of);
  job->leader_of_node = calloc(1, sizeof *job->leader_of_node);
  if (!job->hosts || !job->node_of || !job->leader_of_node || !(job->hosts[0] = strdup(job->host)))
    return GPL_ENOMEM;
  job->node_grp = job->lead_grp = (mpix_group_t){.comm = MPI_COMM_NULL, .n = 1, .me = 0};
  log_set_identity(job->host, 0);
  mpix_set_hosts((const char *const *)job->hosts, 1);
  LOG_INFO(JOB, "a job of one, started alone: MPI is not used");
  return GPL_OK;
}

int job_init(job_t *job, int *argc, char ***argv, double timeout) {
  memset(job, 0, sizeof *job);
  job->world = job->ctl = MPI_COMM_NULL;
  job->timeout = timeout;
  job->under_launcher = util_env_rank() >= 0;
  util_strlcpy(job->host, util_hostname(), sizeof job->host);
  slurm_check_launch(); /* srun without PMIx: one line saying what to pass, instead of MPI_Init's */
  if (!job->under_launcher) return job_init_alone(job);

  /* Every step below is bounded: exchanges of our own have deadlines that name the missing
   * ranks, MPI_Comm_idup is waited for with one, and the calls MPI offers only as blocking
   * collectives (MPI_Init, the splits) run under the watchdog. */
  /* Open MPI's TCP transport reads its interfaces from the environment at MPI_Init: choose them
   * first (docker0's 172.17.0.1 on every host would otherwise make it dial its own host). */
  CHECK(mpinet_init(job->host, timeout, util_env_rank()));
  int provided;
  wdog_arm(timeout + 5.0, "MPI_Init", "a rank of the job did not start, or mpirun's/srun's daemons cannot "
           "reach each other", GPL_EXIT_TIMEOUT);
  double t_init = util_now();
  int mrc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  wdog_disarm();
  t_init = util_now() - t_init;
  mpinet_init_done();
  MPICHECK(mrc);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPICHECK(MPI_Comm_rank(MPI_COMM_WORLD, &job->rank));
  MPICHECK(MPI_Comm_size(MPI_COMM_WORLD, &job->size));
  log_set_identity(job->host, job->rank);
  LOG_DEBUG(JOB, "start-up: MPI_Init took %.1f ms", t_init * 1e3);
  job_test_stall(job, "init");

  /* Everyone must be here before the communicator calls below, and their host names known so
   * that every later message can name a rank's host. */
  char (*names)[64] = calloc((size_t)job->size, sizeof *names);
  job->hosts = calloc((size_t)job->size, sizeof *job->hosts);
  job->node_of = calloc((size_t)job->size, sizeof *job->node_of);
  job->leader_of_node = calloc((size_t)job->size, sizeof *job->leader_of_node);
  if (!names || !job->hosts || !job->node_of || !job->leader_of_node) {
    free(names);
    return GPL_ENOMEM;
  }
  char me_host[64];
  util_strlcpy(me_host, job->host, sizeof me_host);
  /* The first exchange is the first of MPI's own TCP traffic between hosts: where it cannot flow
   * (a firewall, a missing route, the wrong interface) its deadline names the hosts not heard
   * from (the launcher's PMIx server knows every rank's host), the interfaces MPI's transport
   * used and the fix, in one line. */
  int npmix = 0;
  const char *const *pmix_hosts = mpinet_init_hosts(&npmix);
  if (npmix == job->size) mpix_set_hosts(pmix_hosts, npmix);
  char used[MPINET_VALUE_LEN * 2 + 64], what[sizeof used + 256];
  util_fmt(what, sizeof what, "start-up (MPI's first exchange; MPI's TCP transport used %s; if the hosts reach each "
           "other on another network, give it: mpirun --mca btl_tcp_if_include <subnet>)",
           mpinet_describe(mpinet_init_choice(), used, sizeof used));
  int rc = mpix_allgather(me_host, (int)sizeof me_host, names, MPI_COMM_WORLD, timeout, what);
  mpix_set_hosts(NULL, 0);
  mpinet_init_free();
  for (int r = 0; rc == GPL_OK && r < job->size; r++)
    if (!(job->hosts[r] = strdup(names[r]))) rc = GPL_ENOMEM;
  free(names);
  CHECK(rc);
  mpix_set_hosts((const char *const *)job->hosts, job->size);
  LOG_DEBUG(JOB, "start-up: host names gathered");
  job_test_stall(job, "dup");

  /* Nodes by host name, numbered in the order of their first rank (so node 0 holds rank 0). */
  int *first = calloc((size_t)job->size, sizeof *first);
  int *members = calloc((size_t)job->size, sizeof *members);
  if (!first || !members || util_first_of_each((const char *const *)job->hosts, job->size, first) < 0) {
    free(first);
    free(members);
    return GPL_ENOMEM;
  }
  for (int r = 0; r < job->size; r++) {
    if (first[r] == r) job->leader_of_node[job->nnodes++] = r;
    job->node_of[r] = first[r] == r ? job->nnodes - 1 : job->node_of[first[r]];
  }
  job->node = job->node_of[job->rank];
  int nmem = 0;
  for (int r = 0; r < job->size; r++)
    if (job->node_of[r] == job->node) {
      if (r == job->rank) job->local_rank = nmem;
      members[nmem++] = r;
    }
  job->local_size = nmem;
  free(first);
  /* From here on every exchange over MPI_COMM_WORLD runs over the nodes' tree (bounded fan-in:
   * the node's first rank gathers its node, the first ranks form a k-ary tree). */
  rc = mpix_set_nodes(job->node_of, job->leader_of_node, job->nnodes, job->size);
  if (rc < 0) {
    free(members);
    return rc;
  }

  /* The exchanges below run over the tree's links between hosts, which the exchange above did not
   * all use, and NCCL later needs hosts to reach each other: a partition between hosts that both
   * reach rank 0 would stall them. The first ranks of the hosts probe their neighbours on a ring
   * (every split of the hosts in two cuts it) and every pair that cannot talk is named. */
  rc = job->nnodes > 1 ? mpix_reach_check(MPI_COMM_WORLD, job->leader_of_node, job->nnodes, timeout,
                                          "start-up (hosts reaching each other)")
                       : GPL_OK;
  if (rc < 0) {
    free(members);
    return rc;
  }
  LOG_DEBUG(JOB, "start-up: %d nodes reach each other", job->nnodes);

  /* No communicator is made: each one MPI makes costs rounds of collectives among its members to
   * agree on its context id (with many ranks per core each round waits for the scheduler; 0.1-0.3 s
   * per communicator at 4 hosts x 2 ranks). world is MPI_COMM_WORLD itself (gpulaunch is the only
   * MPI user of its process: the program it supervises is another process); the node's ranks and
   * the nodes' first ranks exchange over it as groups with tags of their own (common/mpix.h); the
   * supervisors' messages have a tag of their own too (launcher/sup/ctl.c). */
  job->world = MPI_COMM_WORLD;
  job->ctl = MPI_COMM_WORLD;
  job->node_ranks = members;
  job->node_grp = (mpix_group_t){.comm = MPI_COMM_WORLD, .n = nmem, .me = job->local_rank, .ranks = members, .tag = 16};
  job->lead_grp = (mpix_group_t){.comm = MPI_COMM_WORLD, .n = job->nnodes, .me = job->local_rank == 0 ? job->node : -1,
                                 .ranks = job->leader_of_node, .tag = 32};
  LOG_INFO(JOB, "rank %d/%d local %d/%d node %d/%d", job->rank, job->size, job->local_rank,
           job->local_size, job->node, job->nnodes);
  return GPL_OK;
}

void job_finalize(job_t *job) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  mpix_set_hosts(NULL, 0);
  mpix_set_nodes(NULL, NULL, 0, 0);
  if (init && !fin) {
    /* Every rank agreed it is done; a host lost just now must not keep this one here. */
    wdog_arm(job->timeout, "MPI_Finalize", "the job had finished; a host was lost at its end", 0);
    MPI_Finalize();
    wdog_disarm();
  }
  if (job->hosts)
    for (int r = 0; r < job->size; r++) free(job->hosts[r]);
  free(job->hosts);
  free(job->node_of);
  free(job->leader_of_node);
  free(job->node_ranks);
  job->hosts = NULL;
  job->node_of = job->leader_of_node = job->node_ranks = NULL;
}

void job_to_comm(const job_t *job, comm_job_t *out) {
  memset(out, 0, sizeof *out);
  out->rank = job->rank;
  out->size = job->size;
  out->local_rank = job->local_rank;
  out->local_size = job->local_size;
  out->node = job->node;
  out->nnodes = job->nnodes;
  out->comm = job->world;
  out->hosts = (const char *const *)job->hosts;
  out->timeout = job->timeout;
}

int job_agree(job_t *job, int rc, const char *what) {
  if (!job || job->size == 1) return rc;
  int *all = calloc((size_t)job->size, sizeof *all);
  if (!all) return GPL_ENOMEM;
  int ret = mpix_allgather(&rc, (int)sizeof rc, all, job->world, job->timeout, what);
  for (int r = 0; ret == GPL_OK && r < job->size; r++)
    if (all[r] < 0) {
      ret = all[r];
      if (r != job->rank) LOG_INFO(JOB, "%s: rank %d failed (%s)", what, r, gpl_err_name(all[r]));
    }
  free(all);
  return ret;
}

void job_exit(job_t *job, int code) {
  fflush(stdout);
  fflush(stderr);
  if (job->lost) _exit(code);
  int *codes = calloc((size_t)job->size, sizeof *codes);
  if (!codes || mpix_allgather(&code, (int)sizeof code, codes, job->world, job->timeout,
                               "exit (agreeing on the exit status)") < 0)
    job_abort(job, code ? code : GPL_EXIT_TIMEOUT);
  int agreed = 0;
  for (int r = 0; r < job->size && !agreed; r++) agreed = codes[r];
  free(codes);
  LOG_DEBUG(JOB, "exit: every rank agreed on status %d", agreed);
  if (agreed == 0) {
    job_finalize(job);
    LOG_DEBUG(JOB, "exit: MPI_Finalize done");
    exit(0);
  }
  /* Every rank leaves with the status at once. mpirun 4.1 then ends at once or, about one time in
   * four, 1 or 2 s later: it aborts the job at the first non-zero status it
   * reaps and sends SIGCONT, SIGTERM and SIGKILL a second apart to ranks it has not yet marked
   * dead, even ones that have exited. Orders tried (rank 0 last, rank 0 first and the others
   * after MPI_Finalize) were no better: 2 s always, or 1 time in 20 for 0.1 s more each time. */
  _exit(agreed);
}

void job_abort(job_t *job, int exit_code) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  fflush(stdout);
  fflush(stderr);
  /* MPI_Abort asks mpirun/srun to end the job; when the launcher cannot reach a lost host's
   * daemon it may never return: this rank leaves anyway. */
  if (init && !fin && job && job->size > 1) {
    wdog_arm(5.0, "MPI_Abort", "leaving without it (the launcher may still be ending the other ranks)", exit_code);
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
  exit(exit_code);
}
