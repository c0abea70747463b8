/* Start-up placement of a rank: load the node's topology (live or XML), plan every local rank,
 * bind this one, and hand the plan's variables to the program. */
#include "launcher/job/place.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/check.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "topology/mpinet_init.h"
#include "topology/net.h"
#include "topology/plan.h"
#include "topology/preflight.h"
#include "topology/topo.h"

static const char *xml_path(const launch_t *L) {
  if (L->topology_xml) return L->topology_xml;
  const char *x = L->conf ? L->conf->topology.xml : "";
  return x && *x ? x : NULL;
}

static int set_var(childenv_t *ce, const char *k, const char *v) {
  if (ce) return childenv_add(ce, k, v);
  return setenv(k, v, 1) == 0 ? GPL_OK : GPL_ESYS;
}

/* The node's topology: from a file, or discovered once per node: the first rank of the node pays
 * for hwloc's discovery (the slow part of start-up on big machines) and the others import its
 * XML export, which gives the same topology (and so the same plan) in a fraction of the time. */
static int load_topology(launch_t *L, const char *xml, topo_t **t) {
  job_t *job = L->job;
  if (xml || !job || job->local_size == 1) return topo_load(t, xml);
  char *buf = NULL;
  size_t len = 0;
  int rc = GPL_OK;
  if (job->local_rank == 0) {
    rc = topo_load(t, NULL);
    if (rc == GPL_OK) rc = topo_export(*t, &buf, &len);
  }
  long n = rc == GPL_OK ? (long)len : -1;
  CHECKGOTO(mpix_gbcast(&job->node_grp, &n, (int)sizeof n, 0, job->timeout, "start-up (node topology)"), rc, out);
  if (n < 0) {
    if (job->local_rank != 0) LOG_INFO(TOPO, "the node's first rank could not read the topology");
    rc = GPL_ETOPO;
    goto out;
  }
  if (job->local_rank != 0) {
    buf = malloc((size_t)n);
    if (!buf) {
      rc = GPL_ENOMEM;
      goto out;
    }
  }
  CHECKGOTO(mpix_gbcast(&job->node_grp, buf, (int)n, 0, job->timeout, "start-up (node topology)"), rc, out);
  if (job->local_rank != 0) rc = topo_load_shared(t, buf, (size_t)n);
out:
  free(buf);
  return rc;
}

/* This rank's part (the topology may come from the node's first rank). */
static int place_local(launch_t *L, childenv_t *ce, place_t *out) {
  job_t *job = L->job;
  int rank = job ? job->rank : 0;
  const char *host = job ? job->host : util_hostname();
  const char *xml = xml_path(L);
  int rc = load_topology(L, xml, &out->topo);
  if (rc < 0) {
    log_print("gpulaunch: rank %d (host %s): cannot load the topology %s: %s\n", rank, host,
            xml ? xml : "of this machine", gpl_strerror(rc));
    return GPL_ETOPO;
  }
  char err[512] = "";
  plan_opts_t o;
  plan_opts_default(&o);
  o.local_size = job ? job->local_size : 1;
  if (L->conf) {
    CHECK(plan_bind_parse(L->conf->topology.bind, &o.bind));
    CHECK(plan_visible_parse(L->conf->topology.visible_gpus, &o.visible_gpus));
    o.no_gpus = strcmp(L->conf->topology.gpus, "none") == 0;
  }
  o.visible = out->topo->live ? getenv("CUDA_VISIBLE_DEVICES") : NULL;
  o.err = err;
  o.errlen = sizeof err;
  rc = plan_make(out->topo, &o, &out->plan);
  if (rc < 0) {
    log_print("gpulaunch: rank %d (host %s): no placement: %s\n", rank, host,
            err[0] ? err : gpl_strerror(rc));
    return GPL_ETOPO;
  }
  int lr = job ? job->local_rank : 0;
  const plan_rank_t *me = &out->plan->ranks[lr];
  out->gpu = me->gpu >= 0 ? out->topo->gpus[me->gpu].index : -1;
  if (me->nic >= 0) util_strlcpy(out->nic, out->topo->nics[me->nic].name, sizeof out->nic);
  LOG_INFO(TOPO, "%s", me->why_gpu);
  LOG_INFO(TOPO, "%s", me->why_cpus);
  if (me->why_nic[0]) LOG_INFO(TOPO, "%s", me->why_nic);

  /* Bind gpulaunch (and so the program it starts) to the rank's cores. plan_bind logs what it
   * did (a replaced or failed binding as a warning); an unbound rank still runs. */
  if (out->plan->bind != PLAN_BIND_NONE) {
    char msg[512];
    (void)plan_bind(out->topo, me, msg, sizeof msg);
  }
  /* Threads for the rank (OMP_NUM_THREADS): the whole cores of its binding divided by the node's
   * ranks whose bindings share them (more ranks than cores get the same cores), at least 1; so
   * the node's ranks together never run more threads than it has cores (or than there are
   * ranks). Unbound: the CPUs this process may use, shared by all the node's ranks. */
  int cores = hwloc_get_nbobjs_inside_cpuset_by_type(out->topo->hw, me->cpuset, HWLOC_OBJ_CORE);
  if (cores <= 0) cores = hwloc_bitmap_weight(me->cpuset);
  int sharers = 0;
  if (out->plan->bind == PLAN_BIND_NONE || cores <= 0) {
    cpu_set_t set;
    cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    sharers = o.local_size > 0 ? o.local_size : 1;
  } else {
    for (int i = 0; i < out->plan->nranks; i++)
      sharers += hwloc_bitmap_intersects(out->plan->ranks[i].cpuset, me->cpuset) != 0;
  }
  if (sharers < 1) sharers = 1;
  out->cores = cores / sharers > 0 ? cores / sharers : 1;
  const char *user_omp = getenv("OMP_NUM_THREADS");
  if (sharers > 1 && lr == 0 && !(user_omp && user_omp[0]) &&
      !(L->conf && L->conf->job.omp_num_threads > 0))
    log_print("gpulaunch: host %s: %d ranks share %d core%s: OMP_NUM_THREADS=%d each (set "
              "OMP_NUM_THREADS or [job] omp_num_threads to choose)\n",
              host, sharers, cores, cores == 1 ? "" : "s", out->cores);

  /* The plan leaves CUDA_VISIBLE_DEVICES unset when the node's ranks use every GPU in bus order;
   * a value inherited anyway (a topology from a file says nothing of it) must not reach the
   * program, so it gets the same list written out. */
  if (me->gpu >= 0 && !plan_env_get(me, "CUDA_VISIBLE_DEVICES") && getenv("CUDA_VISIBLE_DEVICES")) {
    char all[PLAN_VALUE_LEN] = "";
    for (int i = 0; i < out->plan->nranks; i++) {
      size_t n = strlen(all);
      snprintf(all + n, sizeof all - n, "%s%d", i ? "," : "", out->plan->ranks[i].gpu);
    }
    CHECK(set_var(ce, "CUDA_VISIBLE_DEVICES", all));
  }
  for (int i = 0; i < me->nenv; i++) {
    /* A variable the user exported wins (NCCL_IB_HCA, ...), except CUDA_VISIBLE_DEVICES: the
     * plan already chose among the GPUs it allowed. */
    if (getenv(me->env[i].name) && strcmp(me->env[i].name, "CUDA_VISIBLE_DEVICES") != 0) {
      LOG_INFO(TOPO, "keeping %s=%s from the environment (the plan says %s)", me->env[i].name,
               getenv(me->env[i].name), me->env[i].value);
      continue;
    }
    LOG_INFO(TOPO, "%s=%s: %s", me->env[i].name, me->env[i].value, me->env[i].reason);
    CHECK(set_var(ce, me->env[i].name, me->env[i].value));
  }
  return GPL_OK;
}

const char *place_user_var(const launch_t *L, const char *name, const char **source) {
  static char where[96];
  static const char *const sections[] = {"env", "nccl"}; /* conf_vars_id_t order */
  for (size_t s = 0; s < 2 && L->conf; s++) {
    int n = conf_vars_count(L->conf, (conf_vars_id_t)s);
    for (int i = 0; i < n; i++) {
      const char *k, *v;
      conf_vars_entry(L->conf, (conf_vars_id_t)s, i, &k, &v);
      if (strcmp(k, name) == 0) {
        /* [nccl] keys are written without their NCCL_ prefix, as users usually do. */
        const char *shown = s == 1 && strncmp(k, "NCCL_", 5) == 0 ? k + 5 : k;
        snprintf(where, sizeof where, "[%s] %s", sections[s], shown);
        if (source) *source = where;
        return v;
      }
    }
  }
  if (source) *source = "the environment";
  return getenv(name);
}

void place_net_job(const launch_t *L, net_job_t *nj) {
  const job_t *job = L->job;
  *nj = (net_job_t){
      .rank = job->rank, .size = job->size, .local_rank = job->local_rank, .nnodes = job->nnodes,
      .node_of = job->node_of, .leader_of_node = job->leader_of_node,
      .hosts = (const char *const *)job->hosts, .comm = job->world, .node = job->node_grp,
      .leaders = job->lead_grp, .timeout = job->timeout,
      .family = net_family_parse(place_user_var(L, "NCCL_SOCKET_FAMILY", NULL)),
      .tls = L->sec_done ? &L->sec.tls : NULL,
  };
}

static const char *effective_var(childenv_t *ce, const char *name);

/* Every node's interface for NCCL_SOCKET_IFNAME and rank 0's address (MASTER_ADDR), then the
 * TCP preflight over them. Collective; the same result on every rank. */
static int place_network(launch_t *L, childenv_t *ce, place_t *out) {
  job_t *job = L->job;
  net_job_t nj;
  place_net_job(L, &nj);
  const char *source = NULL;
  const char *user = place_user_var(L, "NCCL_SOCKET_IFNAME", &source);
  plan_rank_t *me = &out->plan->ranks[job->local_rank];
  net_result_t *net = &out->net;
  int rc = net_agree(&nj, out->topo, me, user, source, net);
  out->net_done = 1;
  out->net_rc = rc;
  if (rc >= 0) {
    util_strlcpy(out->ifname, net->ifname, sizeof out->ifname);
    util_strlcpy(out->master_addr, net->master_addr, sizeof out->master_addr);
    const char *v = plan_env_get(me, "NCCL_SOCKET_IFNAME");
    /* The user's own value reaches the program through [nccl] or the environment already. */
    if (v && !user) {
      LOG_INFO(NET, "NCCL_SOCKET_IFNAME=%s: %s", v, net->reason);
      rc = set_var(ce, "NCCL_SOCKET_IFNAME", v);
    }
    /* PyTorch's gloo picks its interface from the host name (often 127.0.1.1 or a decoy) unless
     * told: the same interface as NCCL's on this node, unless the user chose one. */
    if (rc >= 0 && net->ifname[0] && !effective_var(ce, "GLOO_SOCKET_IFNAME"))
      rc = set_var(ce, "GLOO_SOCKET_IFNAME", net->ifname);
    /* NCCL's interface and MPI's (chosen before MPI_Init): the same where both are TCP, or said. */
    iface_list_t l;
    if (job->nnodes == 1) {
      out->mpi_same = 1;
      util_strlcpy(out->mpi_net, "one host: MPI's ranks talk over shared memory", sizeof out->mpi_net);
    } else if (net->ifname[0] && iface_list(&l) == 0) {
      const iface_t *f = iface_find(&l, net->ifname);
      if (f) {
        out->mpi_same = mpinet_compare(mpinet_init_choice(), f, user != NULL, out->mpi_net, sizeof out->mpi_net);
        if (job->rank == 0) LOG_INFO(NET, "%s", out->mpi_net);
      }
      iface_list_free(&l);
    }
  }
  if (rc >= 0) {
    preflight_mode_t mode = PREFLIGHT_RING;
    if (L->conf) preflight_mode_parse(L->conf->topology.probe, &mode);
    double timeout = L->conf ? L->conf->topology.probe_timeout : 5.0;
    rc = preflight_run(&nj, net, mode, timeout, &out->preflight);
    out->preflight_done = 1;
    out->preflight_rc = rc;
    out->preflight_mode = mode;
    out->preflight_timeout = timeout;
  }
  return rc < 0 ? rc : GPL_OK;
}

/* A node-wide variable as this rank's program (or, for built-in jobs, this process) gets it. */
static const char *effective_var(childenv_t *ce, const char *name) {
  return ce ? childenv_get(ce, 0, name) : getenv(name);
}

/* Every rank of a node must hand its program the same CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER and
 * NCCL_IB_HCA: NCCL builds a node's rings from what all of its ranks see, and a rank that sees
 * other GPUs than its neighbours cannot reach theirs over CUDA IPC. The plans agree by
 * construction; what can differ is what the ranks inherited (srun --gpus-per-task, a wrapper
 * that exports a per-rank value). Collective over the node; bounded. */
static int check_node_uniform(launch_t *L, childenv_t *ce, const place_t *pl) {
  job_t *job = L->job;
  static const char *const names[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_IB_HCA"};
  strbuf_t mine = STRBUF_INIT;
  for (size_t k = 0; k < GPL_ARRAY_LEN(names); k++) {
    if (!plan_env_node_wide(pl->plan, names[k])) continue;
    const char *v = effective_var(ce, names[k]);
    strbuf_printf(&mine, "%s=%s\n", names[k], v ? v : "(unset)");
  }
  char **all = NULL;
  const char *me = strbuf_str(&mine);
  int rc = mpix_gallgather_str(&job->node_grp, me, &all, job->timeout,
                              "start-up (node-wide CUDA_VISIBLE_DEVICES and NCCL_IB_HCA)");
  if (rc == GPL_OK && strcmp(all[0], me) != 0) {
    /* Say which variable differs from the node's first rank, once per differing rank. */
    const char *a = all[0], *b = me;
    while (*a && *b) {
      size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
      if (la != lb || strncmp(a, b, la) != 0) {
        log_print("gpulaunch: rank %d (host %s): %.*s, but the node's local rank 0 (rank %d) has %.*s: every "
                "rank of a node must give its program the same value (NCCL builds the node's rings from all of "
                "them); check what each rank inherits (srun --gpus-per-task, a per-rank export)\n",
                job->rank, job->host, (int)lb, b, job->leader_of_node[job->node], (int)la, a);
        break;
      }
      a += la + (a[la] == '\n');
      b += lb + (b[lb] == '\n');
    }
    rc = GPL_ETOPO;
  }
  mpix_free_strs(all, all ? job->local_size : 0);
  strbuf_free(&mine);
  return rc;
}

int place_rank(launch_t *L, childenv_t *ce, place_t *out) {
  memset(out, 0, sizeof *out);
  out->gpu = -1;
  int rc = place_local(L, ce, out);
  if (!L->job) return rc;
  rc = job_agree(L->job, rc, "start-up (placement)");
  if (rc < 0) return rc;
  /* The check is the node's, the agreement everyone's: nodes may have different rank counts
   * (sbatch -n 3 on two nodes), and a node of one rank must still join the agreement. */
  rc = job_agree(L->job, L->job->local_size > 1 ? check_node_uniform(L, ce, out) : GPL_OK,
                 "start-up (node-wide values)");
  if (rc < 0) return rc;
  /* The job key before any channel opens (the preflight's is the first). */
  rc = seckey_agree(&L->sec, L->conf ? &L->conf->security : NULL, L->job);
  if (rc < 0) return rc;
  L->sec_done = 1;
  return place_network(L, ce, out);
}

void place_free(place_t *p) {
  if (p->plan) plan_free(p->plan);
  if (p->topo) topo_free(p->topo);
  net_result_free(&p->net);
  p->plan = NULL;
  p->topo = NULL;
}

void place_summary(const place_t *p, cJSON *summary) {
  if (!summary || !p->net_done) return;
  cJSON *n = cJSON_AddObjectToObject(summary, "network");
  const mpinet_choice_t *c = mpinet_init_choice();
  static const char *const how[] = {"openmpi", "user", "job", "local"};
  cJSON_AddStringToObject(n, "nccl_socket_ifname", p->ifname);
  cJSON_AddStringToObject(n, "mpi_btl_tcp_if_include", c->how == MPINET_USER ? "" : c->value);
  cJSON_AddStringToObject(n, "mpi_interfaces", c->ifnames);
  cJSON_AddStringToObject(n, "mpi_chosen_by", how[c->how]);
  cJSON_AddStringToObject(n, "mpi_why", c->why);
  if (p->mpi_net[0]) {
    cJSON_AddBoolToObject(n, "mpi_same_as_nccl", p->mpi_same);
    cJSON_AddStringToObject(n, "mpi_vs_nccl", p->mpi_net);
  }
}
