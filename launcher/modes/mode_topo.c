/* `gpulaunch topo`: the node's GPU x NIC path matrix, NUMA and CPUs per GPU, and the placement plan (text or JSON); under mpirun, the whole job's. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/check.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/cli.h"
#include "launcher/launcher.h"
#include "launcher/job/place.h"
#include "topology/net.h"
#include "topology/plan.h"
#include "topology/report.h"
#include "topology/topo.h"

static const char g_topo_usage[] =
        "usage: gpulaunch [CONFIG] topo [--topology FILE] [--ranks-per-node N] [--bind cores|numa|none]\n"
        "                     [--no-gpus] [--visible-gpus node|rank] [--nics-per-rank N] [--json [FILE]]\n"
        "\n"
        "Prints this node's GPU x NIC matrix of PCI path classes (PIX < PXB < PHB < NODE < SYS, as\n"
        "`nvidia-smi topo -m`), the NUMA node and local CPUs of each GPU, each GPU's NICs nearest\n"
        "first, and the plan for each local rank (GPU, CPU cores, NIC, environment) with the reason\n"
        "for every choice.\n"
        "\n"
        "  --topology FILE       plan from an hwloc XML export (`lstopo --of xml FILE`) instead of this\n"
        "                        machine; default: [topology] xml, else this machine\n"
        "  --ranks-per-node N    plan for N local ranks; default: the ranks of this node under mpirun,\n"
        "                        else one per GPU (at least 1)\n"
        "  --bind MODE           cores (default; the GPU's local cores split among its ranks), numa\n"
        "                        (the GPU's whole local CPU set) or none; default: [topology] bind\n"
        "  --no-gpus             plan a CPU-only job ([topology] gpus = none)\n"
        "  --visible-gpus MODE   node (default: every rank of a node gets the same CUDA_VISIBLE_DEVICES,\n"
        "                        its ranks' GPUs in local-rank order) or rank (one GPU per process);\n"
        "                        default: [topology] visible_gpus\n"
        "  --nics-per-rank N     a rank's own nearest RDMA devices shown in the plan (default 1);\n"
        "                        NCCL_IB_HCA is the node's: every RDMA NIC nearest to one of its GPUs\n"
        "  --json                write the JSON document to standard output instead of the text\n"
        "  --json FILE           write the JSON document to FILE ('-' = standard output) and the\n"
        "                        text to standard output; also --json=FILE\n"
        "\n"
        "Under mpirun with several nodes, rank 0 prints the whole job: every node's plan, and the\n"
        "network interface each node agreed on for NCCL_SOCKET_IFNAME (from the environment or\n"
        "[nccl] SOCKET_IFNAME when set, checked with NCCL's syntax on every node) with MASTER_ADDR;\n"
        "--json then adds \"nodes\": [{\"node\", \"host\", \"ifname\", \"addr\", \"gpus\", \"nics\",\n"
        "\"ranks\"}, ...] and \"master_addr\" to rank 0's node's document.\n"
        "\n"
        "Exit status: 0, 64 bad arguments, 66 the topology does not load or cannot be planned\n"
        "(e.g. more ranks per node than GPUs), 67 no network interface connects the nodes (or\n"
        "NCCL_SOCKET_IFNAME matches nothing usable on a node), 68 a node did not answer in time.\n";

typedef struct topo_args_s {
  const char *bind;
  const char *visible;
  long ranks;
  long nics;
  int no_gpus;
  int json;
  const char *json_path; /* NULL or "-" = stdout */
} topo_args_t;

/* --topology is one of the options every mode takes (cli.h): it arrives as L->topology_xml. */
enum { OPT_RPN = 1, OPT_NICS, OPT_BIND, OPT_VISIBLE, OPT_NO_GPUS, OPT_JSON };
static const struct option g_topo_opts[] = {
    {"ranks-per-node", required_argument, 0, OPT_RPN}, {"nics-per-rank", required_argument, 0, OPT_NICS},
    {"bind", required_argument, 0, OPT_BIND},          {"visible-gpus", required_argument, 0, OPT_VISIBLE},
    {"no-gpus", no_argument, 0, OPT_NO_GPUS},          {"json", optional_argument, 0, OPT_JSON},
    {"help", no_argument, 0, 'h'},                     {0, 0, 0, 0}};
const cli_spec_t mode_topo_cli = {"h", g_topo_opts};

static int parse_args(launch_t *L, topo_args_t *a) {
  cli_t c;
  if (cli_begin(&c, "gpulaunch topo", L->argc, L->argv, &mode_topo_cli) < 0) return -1;
  int code, rc = 0;
  while (rc == 0 && (code = cli_next(&c, 1)) != -1) {
    switch (code) {
      case 'h': fputs(g_topo_usage, stdout); rc = 1; break;
      case OPT_RPN:
        if (util_parse_long(optarg, 1, 4096, &a->ranks) < 0) {
          log_print("gpulaunch topo: --ranks-per-node %s: expected a number from 1 to 4096\n", optarg);
          rc = -1;
        }
        break;
      case OPT_NICS:
        if (util_parse_long(optarg, 1, PLAN_MAX_NICS, &a->nics) < 0) {
          log_print("gpulaunch topo: --nics-per-rank %s: expected a number from 1 to %d\n", optarg, PLAN_MAX_NICS);
          rc = -1;
        }
        break;
      case OPT_BIND: a->bind = optarg; break;
      case OPT_VISIBLE: a->visible = optarg; break;
      case OPT_NO_GPUS: a->no_gpus = 1; break;
      case OPT_JSON: /* --json, --json=FILE, or --json FILE (the next word, when not an option) */
        a->json = 1;
        a->json_path = cli_optional_next(&c);
        break;
      case ':': log_print("gpulaunch topo: %s needs a value\n", cli_opt(&c)); rc = -1; break;
      default: log_print("gpulaunch topo: unknown argument '%s'\n%s", cli_opt(&c), g_topo_usage); rc = -1; break;
    }
  }
  int n;
  char **rest = cli_rest(&c, &n);
  if (rc == 0 && n > 0) {
    log_print("gpulaunch topo: unexpected argument '%s'\n%s", rest[0], g_topo_usage);
    rc = -1;
  }
  cli_end(&c);
  return rc;
}

/* --json without FILE, or with "-": the document replaces the text on standard output. */
static int json_to_stdout(const topo_args_t *a) {
  return a->json && (!a->json_path || strcmp(a->json_path, "-") == 0);
}

/* A [topology] setting of L's config, or NULL where it is empty or there is no config. */
#define CONF_OR_NULL(L, key) ((L)->conf && *(L)->conf->topology.key ? (L)->conf->topology.key : NULL)

/* Write doc (and free it) to path, or to standard output for NULL or "-". An exit code. */
static int write_doc(cJSON *doc, const char *path) {
  char *text = cJSON_Print(doc);
  cJSON_Delete(doc);
  if (!text) return GPL_EXIT_INTERNAL;
  int to_stdout = !path || strcmp(path, "-") == 0;
  char err[PATH_MAX + 200] = "";
  FILE *f = to_stdout ? stdout : safefile_fopen_write(path, err, sizeof err);
  if (!f) {
    log_print("gpulaunch topo: cannot write: %s\n", err);
    free(text);
    return GPL_EXIT_USAGE;
  }
  int ok = fputs(text, f) != EOF && fputc('\n', f) != EOF;
  ok = (to_stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
  free(text);
  if (!ok) {
    log_print("gpulaunch topo: writing %s failed\n", to_stdout ? "standard output" : path);
    return GPL_EXIT_INTERNAL;
  }
  return GPL_EXIT_OK;
}

static int write_json(const topo_t *t, const plan_t *p, const char *path) {
  cJSON *doc = report_json(t, p);
  if (!doc) {
    log_print("gpulaunch topo: out of memory building the JSON report\n");
    return GPL_EXIT_INTERNAL;
  }
  return write_doc(doc, path);
}

/* ---- the whole job (mpirun over several nodes) ---------------------------------------------- */

/* One node's report as a string: its JSON document (plus host, interface) or its text. */
static char *node_json(const job_t *job, const topo_t *t, const plan_t *p, const net_result_t *net) {
  cJSON *doc = report_json(t, p);
  if (!doc) return NULL;
  cJSON_AddNumberToObject(doc, "node", job->node);
  cJSON_AddStringToObject(doc, "host", job->host);
  if (net->status == 0 && net->nodes[job->node].ifname[0]) {
    cJSON_AddStringToObject(doc, "ifname", net->nodes[job->node].ifname);
    cJSON_AddStringToObject(doc, "addr", net->nodes[job->node].addr);
  } else {
    cJSON_AddNullToObject(doc, "ifname");
    cJSON_AddNullToObject(doc, "addr");
  }
  char *s = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  return s;
}

static char *node_text(const topo_t *t, const plan_t *p) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  report_text(f, t, p);
  fclose(f);
  return buf;
}

/* Rank 0's document with "nodes" (every node, in order) and "master_addr". */
static int write_job_json(char **docs, const job_t *job, const net_result_t *net, const char *path) {
  cJSON *top = NULL, *nodes = cJSON_CreateArray();
  for (int n = 0; nodes && n < job->nnodes; n++) {
    cJSON *d = cJSON_Parse(docs[job->leader_of_node[n]]);
    if (!d) {
      log_print("gpulaunch topo: node %d sent an unreadable report\n", n);
      cJSON_Delete(nodes);
      cJSON_Delete(top);
      return GPL_EXIT_INTERNAL;
    }
    if (n == job->node) top = cJSON_Duplicate(d, 1);
    cJSON_AddItemToArray(nodes, d);
  }
  if (!top) {
    cJSON_Delete(nodes);
    return GPL_EXIT_INTERNAL;
  }
  cJSON_AddNumberToObject(top, "nnodes", job->nnodes);
  if (net->status == 0 && net->master_addr[0]) cJSON_AddStringToObject(top, "master_addr", net->master_addr);
  else cJSON_AddNullToObject(top, "master_addr");
  cJSON_AddItemToObject(top, "nodes", nodes);
  return write_doc(top, path);
}

/* Agree on the interfaces, gather every node leader's report, print the job from rank 0. */
static int topo_job(launch_t *L, const topo_args_t *a, topo_t *t, plan_t *p, int rc) {
  const job_t *job = L->job;
  rc = job_agree(L->job, rc, "gpulaunch topo"); /* a node that could not plan: everybody stops here */
  if (rc < 0) return rc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : GPL_EXIT_TOPOLOGY;
  net_job_t nj;
  place_net_job(L, &nj);
  const char *source = NULL, *user = place_user_var(L, "NCCL_SOCKET_IFNAME", &source);
  plan_rank_t *me = job->local_rank < p->nranks ? &p->ranks[job->local_rank] : NULL;
  net_result_t net;
  int nrc = net_agree(&nj, t, me, user, source, &net);
  if (nrc == 0 && job->local_rank == 0)
    for (int i = 0; i < p->nranks; i++) net_apply(&net.eval, t, &p->ranks[i]); /* the node's other local ranks */
  int json_stdout = json_to_stdout(a);
  int leader = job->local_rank == 0, exit_code = GPL_EXIT_OK, grc = 0;
  char **docs = NULL, **texts = NULL, *mine;
  /* Every rank has the same arguments, so all take part in the same exchanges. */
  if (a->json) {
    mine = leader ? node_json(job, t, p, &net) : NULL;
    grc = mpix_allgather_str(mine ? mine : "", &docs, job->world, job->timeout, "gpulaunch topo (reports)");
    free(mine);
  }
  if (grc == 0 && !json_stdout) {
    mine = leader ? node_text(t, p) : NULL;
    grc = mpix_allgather_str(mine ? mine : "", &texts, job->world, job->timeout, "gpulaunch topo (reports)");
    free(mine);
  }
  if (grc < 0) exit_code = grc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : GPL_EXIT_INTERNAL;
  if (job->rank == 0 && grc == 0) {
    if (!json_stdout) {
      for (int n = 0; n < job->nnodes; n++) {
        const char *host = job->hosts[job->leader_of_node[n]];
        if (nrc == 0)
          printf("%s== node %d of %d: %s, interface %s (%s) ==\n\n", n ? "\n" : "", n, job->nnodes, host,
                 net.nodes[n].ifname, net.nodes[n].addr);
        else
          printf("%s== node %d of %d: %s, no agreed interface ==\n\n", n ? "\n" : "", n, job->nnodes, host);
        fputs(texts[job->leader_of_node[n]], stdout);
      }
      if (nrc == 0) printf("\nMASTER_ADDR=%s (node 0's %s); interfaces agreed in %.1f ms\n", net.master_addr, net.master_ifname,
                           net.seconds * 1e3);
      fflush(stdout);
    }
    if (a->json) {
      int jc = write_job_json(docs, job, &net, a->json_path);
      if (jc != GPL_EXIT_OK) exit_code = jc;
    }
  }
  mpix_free_strs(docs, docs ? job->size : 0);
  mpix_free_strs(texts, texts ? job->size : 0);
  net_result_free(&net);
  if (nrc < 0) return exitcode_of(nrc);
  return exit_code;
}

int mode_topo(launch_t *L) {
  topo_args_t a;
  memset(&a, 0, sizeof a);
  int prc = parse_args(L, &a);
  if (prc > 0) return GPL_EXIT_OK;
  if (prc < 0) return GPL_EXIT_USAGE;

  /* Alone (or one node): this node's plan, printed by world rank 0. Several nodes: the whole
   * job (topo_job), every rank taking part in the exchanges. */
  const job_t *job = L->job;
  int printer = !job || job->rank == 0;
  int whole_job = job && job->nnodes > 1;

  const char *xml = L->topology_xml ? L->topology_xml : CONF_OR_NULL(L, xml);
  plan_opts_t o;
  plan_opts_default(&o);
  char err[512] = "";
  o.err = err;
  o.errlen = sizeof err;
  const char *bind = a.bind ? a.bind : CONF_OR_NULL(L, bind);
  if (bind && plan_bind_parse(bind, &o.bind) < 0) {
    log_print("gpulaunch topo: bind '%s': expected cores, numa or none\n", bind);
    return GPL_EXIT_USAGE;
  }
  const char *vis = a.visible ? a.visible : CONF_OR_NULL(L, visible_gpus);
  if (vis && plan_visible_parse(vis, &o.visible_gpus) < 0) {
    log_print("gpulaunch topo: visible-gpus '%s': expected node or rank\n", vis);
    return GPL_EXIT_USAGE;
  }
  const char *gpus = CONF_OR_NULL(L, gpus);
  o.no_gpus = a.no_gpus || (gpus && strcmp(gpus, "none") == 0);
  o.nics_per_rank = a.nics > 0 ? (int)a.nics : 1;
  if (a.ranks > 0) o.local_size = (int)a.ranks;
  else if (job && job->under_launcher && job->local_size > 0) o.local_size = job->local_size;

  topo_t *t = NULL;
  int rc = topo_load(&t, xml);
  if (rc < 0) {
    /* topo_load said what is wrong with the file on stderr. */
    log_print("gpulaunch topo: cannot load the topology of %s (%s)\n", xml ? xml : "this machine", gpl_strerror(rc));
    if (whole_job) job_agree(L->job, GPL_ETOPO, "gpulaunch topo");
    return GPL_EXIT_TOPOLOGY;
  }
  if (t->live) o.visible = getenv("CUDA_VISIBLE_DEVICES");
  plan_t *p = NULL;
  rc = plan_make(t, &o, &p);
  if (rc < 0) {
    if (!err[0]) log_print("gpulaunch topo: no plan: %s\n", gpl_strerror(rc));
    topo_free(t);
    if (whole_job) job_agree(L->job, rc, "gpulaunch topo");
    return rc == GPL_ETOPO || rc == GPL_EINVAL ? GPL_EXIT_TOPOLOGY : GPL_EXIT_INTERNAL;
  }
  int exit_code = GPL_EXIT_OK;
  if (whole_job) {
    exit_code = topo_job(L, &a, t, p, 0);
  } else if (printer) {
    if (!json_to_stdout(&a) && report_text(stdout, t, p) < 0) exit_code = GPL_EXIT_INTERNAL;
    if (a.json && exit_code == GPL_EXIT_OK) exit_code = write_json(t, p, a.json_path);
  }
  plan_free(p);
  topo_free(t);
  return exit_code;
}
