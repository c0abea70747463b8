/* Test driver for the interface agreement and the preflight under a real mpirun (one host, or netns hosts): prints each rank's outcome. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "common/log.h"
#include "common/mpix.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "topology/mpinet_init.h"
#include "topology/net.h"
#include "topology/plan.h"
#include "topology/preflight.h"
#include "topology/topo.h"

/* Usage: net_driver [--fake-nodes K] [--loopback] [--topology FILE|--no-topo] [--user VALUE]
 *                   [--probe ring|all|off] [--probe-timeout S] [--pause-dir DIR] [--timeout S]
 *   --fake-nodes K   treat rank r as on node r % K (one host standing in for K)
 *   --loopback       no agreement (on one host every "node" has the same addresses, which the
 *                    agreement rightly refuses): node n's address is 127.0.0.(n+1) on lo, and
 *                    only the preflight runs (its MPI side and sockets, on loopback)
 *   --pause-dir DIR  after the agreement (and a barrier) rank 0 creates DIR/agreed and waits for
 *                    DIR/go before starting the preflight (a test breaks a path in between)
 * Output, one line per rank: "net rank=R node=N host=H status=S ifname=I addr=A value=V
 * master=M", then "preflight rank=R rc=... probes=... failed=... accepted=... refused=...";
 * rank 0 adds "timing nodes=... ranks=... agree_ms=... preflight_ms=...".
 * Exit: 0, 67 (GPL_ENET/GPL_EUNREACH), 68 (timeout), 70 (other). */

typedef struct who_s {
  char host[64];
  int leader; /* world rank of the node's leader */
} who_t;

static int code(int rc) {
  if (rc == 0) return 0;
  if (rc == GPL_ENET || rc == GPL_EUNREACH) return 67;
  if (rc == GPL_ETIMEDOUT) return 68;
  return 70;
}

int main(int argc, char **argv) {
  mpinet_init(util_hostname(), 30.0, util_env_rank()); /* as gpulaunch does: MPI's interfaces first */
  MPI_Init(&argc, &argv);
  mpinet_init_done();
  log_init();
  int fake = 0, loopback = 0, no_topo = 0;
  const char *xml = NULL, *user = getenv("NCCL_SOCKET_IFNAME"), *source = "environment", *pause_dir = NULL;
  preflight_mode_t mode = PREFLIGHT_RING;
  double ptimeout = 5, timeout = mpix_default_timeout();
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--fake-nodes") == 0 && v) fake = atoi(v), i++;
    else if (strcmp(a, "--loopback") == 0) loopback = 1;
    else if (strcmp(a, "--no-topo") == 0) no_topo = 1;
    else if (strcmp(a, "--topology") == 0 && v) xml = v, i++;
    else if (strcmp(a, "--user") == 0 && v) user = v, source = "--user", i++;
    else if (strcmp(a, "--probe") == 0 && v) preflight_mode_parse(v, &mode), i++;
    else if (strcmp(a, "--probe-timeout") == 0 && v) ptimeout = atof(v), i++;
    else if (strcmp(a, "--timeout") == 0 && v) timeout = atof(v), i++;
    else if (strcmp(a, "--pause-dir") == 0 && v) pause_dir = v, i++;
    else {
      fprintf(stderr, "net_driver: unknown argument %s\n", a);
      MPI_Abort(MPI_COMM_WORLD, 64);
    }
  }
  net_job_t job;
  memset(&job, 0, sizeof job);
  MPI_Comm_dup(MPI_COMM_WORLD, &job.comm);
  MPI_Comm_rank(job.comm, &job.rank);
  MPI_Comm_size(job.comm, &job.size);
  char host[64];
  gethostname(host, sizeof host);
  host[sizeof host - 1] = 0;
  log_set_identity(host, job.rank);
  /* Nodes: the ranks sharing memory (one host), or rank % K when faking. */
  /* (the launcher makes no communicator, the driver may: groups over them work alike) */
  MPI_Comm node_comm, leaders;
  if (fake > 0) MPI_Comm_split(job.comm, job.rank % fake, job.rank, &node_comm);
  else MPI_Comm_split_type(job.comm, MPI_COMM_TYPE_SHARED, job.rank, MPI_INFO_NULL, &node_comm);
  MPI_Comm_rank(node_comm, &job.local_rank);
  int local_size = 0;
  MPI_Comm_size(node_comm, &local_size);
  mpix_group_of(node_comm, &job.node);
  who_t me = {.leader = job.rank};
  util_strlcpy(me.host, host, sizeof me.host);
  MPI_Bcast(&me.leader, 1, MPI_INT, 0, node_comm);
  who_t *all = calloc((size_t)job.size, sizeof *all);
  MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, job.comm);
  int *node_of = calloc((size_t)job.size, sizeof *node_of), *leader_of = calloc((size_t)job.size, sizeof *leader_of);
  const char **hosts = calloc((size_t)job.size, sizeof *hosts);
  for (int r = 0; r < job.size; r++) {
    hosts[r] = all[r].host;
    if (all[r].leader == r) leader_of[job.nnodes++] = r;
  }
  for (int r = 0; r < job.size; r++)
    for (int n = 0; n < job.nnodes; n++)
      if (leader_of[n] == all[r].leader) node_of[r] = n;
  job.node_of = node_of;
  job.leader_of_node = leader_of;
  job.hosts = hosts;
  job.timeout = timeout;
  job.family = net_family_parse(getenv("NCCL_SOCKET_FAMILY"));
  MPI_Comm_split(job.comm, job.local_rank == 0 ? 0 : MPI_UNDEFINED, job.rank, &leaders);
  if (leaders != MPI_COMM_NULL) mpix_group_of(leaders, &job.leaders);
  else job.leaders = (mpix_group_t){.comm = MPI_COMM_NULL, .n = job.nnodes, .me = -1};
  mpix_set_hosts(hosts, job.size);

  topo_t *t = NULL;
  plan_t *p = NULL;
  plan_rank_t *mine = NULL;
  if (!no_topo && topo_load(&t, xml) == 0) {
    plan_opts_t o;
    plan_opts_default(&o);
    o.local_size = local_size;
    o.no_gpus = t->ngpus < local_size;
    o.bind = PLAN_BIND_NONE;
    if (plan_make(t, &o, &p) == 0 && job.local_rank < p->nranks) mine = &p->ranks[job.local_rank];
  }

  /* Start together, so that the times below are the agreement's, not the topology loads'. */
  mpix_barrier(job.comm, timeout, "net_driver start");
  net_result_t net;
  int rc = 0;
  if (loopback) {
    memset(&net, 0, sizeof net);
    net.size = job.size;
    net.nnodes = job.nnodes;
    net.ranks = calloc((size_t)job.size, sizeof *net.ranks);
    net.nodes = calloc((size_t)job.nnodes, sizeof *net.nodes);
    for (int r = 0; r < job.size; r++) {
      snprintf(net.ranks[r].addr, sizeof net.ranks[r].addr, "127.0.0.%d", node_of[r] + 1);
      snprintf(net.ranks[r].ifname, sizeof net.ranks[r].ifname, "lo");
    }
    for (int n = 0; n < job.nnodes; n++) net.nodes[n] = net.ranks[leader_of[n]];
    snprintf(net.addr, sizeof net.addr, "%s", net.ranks[job.rank].addr);
    snprintf(net.master_addr, sizeof net.master_addr, "%s", net.ranks[0].addr);
  } else {
    rc = net_agree(&job, t, mine, user && *user ? user : NULL, source, &net);
  }
  const char *env = mine ? plan_env_get(mine, "NCCL_SOCKET_IFNAME") : NULL;
  printf("net rank=%d node=%d host=%s status=%d ifname=%s addr=%s value=%s master=%s plan_env=%s\n", job.rank,
         node_of[job.rank], host, rc, net.ifname[0] ? net.ifname : "-", net.addr[0] ? net.addr : "-",
         net.value[0] ? net.value : "-", net.master_addr[0] ? net.master_addr : "-", env ? env : "-");
  fflush(stdout);
  if (rc == 0 && pause_dir) {
    /* Everyone is past the agreement; rank 0 then holds the preflight (it makes the token) until
     * the test has broken a path, while the others already wait inside preflight_run. */
    rc = mpix_barrier(job.comm, timeout, "net_driver pause");
    if (rc == 0 && job.rank == 0) {
      char path[1024];
      snprintf(path, sizeof path, "%s/agreed", pause_dir);
      FILE *f = fopen(path, "w");
      if (f) fclose(f);
      snprintf(path, sizeof path, "%s/go", pause_dir);
      struct stat st;
      for (int i = 0; i < 3000 && stat(path, &st) != 0; i++) util_sleep(0.01);
    }
  }
  preflight_stats_t ps;
  memset(&ps, 0, sizeof ps);
  if (rc == 0) {
    rc = preflight_run(&job, &net, mode, ptimeout, &ps);
    printf("preflight rank=%d rc=%d probes=%d failed=%d accepted=%d refused=%d job_failed=%d ms=%.1f\n", job.rank, rc, ps.probes,
           ps.failed, ps.accepted, ps.refused, ps.job_failed, ps.seconds * 1e3);
  }
  if (rc != 0) {
    /* Like gpulaunch's job_exit: leave without MPI_Finalize, whose exchanges may never finish
     * when a path is broken; mpirun ends the job with this status. */
    fflush(stdout);
    fflush(stderr);
    mpix_barrier(job.comm, 5, "net_driver exit"); /* rank 0's message out before mpirun reacts */
    _exit(code(rc));
  }
  /* The slowest rank's times are the job's. */
  double times[2] = {net.seconds, ps.seconds}, maxt[2];
  MPI_Allreduce(times, maxt, 2, MPI_DOUBLE, MPI_MAX, job.comm);
  if (job.rank == 0)
    printf("timing nodes=%d ranks=%d agree_ms=%.1f preflight_ms=%.1f\n", job.nnodes, job.size, maxt[0] * 1e3, maxt[1] * 1e3);
  fflush(stdout);
  net_result_free(&net);
  plan_free(p);
  topo_free(t);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&node_comm);
  MPI_Comm_free(&job.comm);
  mpix_set_hosts(NULL, 0);
  free(all);
  free(node_of);
  free(leader_of);
  free(hosts);
  MPI_Finalize();
  return code(rc);
}
