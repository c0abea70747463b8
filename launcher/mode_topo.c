/* `gpulaunch topo`: the node's GPU x NIC path matrix, NUMA and CPUs per GPU, and the placement plan (text or JSON). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/check.h"
#include "common/log.h"
#include "common/util.h"
#include "launcher/launcher.h"
#include "topology/plan.h"
#include "topology/report.h"
#include "topology/topo.h"

static void topo_usage(FILE *f) {
  fputs("usage: gpulaunch [CONFIG] topo [--topology FILE] [--ranks-per-node N] [--bind cores|numa|none]\n"
        "                     [--no-gpus] [--nics-per-rank N] [--json [FILE]]\n"
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
        "  --nics-per-rank N     RDMA devices per rank in NCCL_IB_HCA (default 1)\n"
        "  --json                write the JSON document to standard output instead of the text\n"
        "  --json FILE           write the JSON document to FILE ('-' = standard output) and the\n"
        "                        text to standard output; also --json=FILE\n"
        "\n"
        "Exit status: 0, 64 bad arguments, 66 the topology does not load or cannot be planned\n"
        "(e.g. more ranks per node than GPUs).\n",
        f);
}

typedef struct topo_args_s {
  const char *xml;
  const char *bind;
  long ranks;
  long nics;
  int no_gpus;
  int json;
  const char *json_path; /* NULL or "-" = stdout */
} topo_args_t;

/* The value of "--opt VALUE" or "--opt=VALUE"; NULL when argv[*i] is not this option. */
static const char *opt_value(int argc, char **argv, int *i, const char *opt, int *missing) {
  size_t n = strlen(opt);
  if (strncmp(argv[*i], opt, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != 0) return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

static int parse_args(launch_t *L, topo_args_t *a) {
  int argc = L->argc;
  char **argv = L->argv;
  for (int i = 0; i < argc; i++) {
    const char *v;
    int missing = 0;
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      topo_usage(stdout);
      return 1;
    } else if ((v = opt_value(argc, argv, &i, "--topology", &missing))) {
      a->xml = v;
    } else if ((v = opt_value(argc, argv, &i, "--ranks-per-node", &missing))) {
      if (util_parse_long(v, 1, 4096, &a->ranks) < 0) {
        fprintf(stderr, "gpulaunch topo: --ranks-per-node %s: expected a number from 1 to 4096\n", v);
        return -1;
      }
    } else if ((v = opt_value(argc, argv, &i, "--nics-per-rank", &missing))) {
      if (util_parse_long(v, 1, PLAN_MAX_NICS, &a->nics) < 0) {
        fprintf(stderr, "gpulaunch topo: --nics-per-rank %s: expected a number from 1 to %d\n", v, PLAN_MAX_NICS);
        return -1;
      }
    } else if ((v = opt_value(argc, argv, &i, "--bind", &missing))) {
      a->bind = v;
    } else if (strcmp(arg, "--no-gpus") == 0) {
      a->no_gpus = 1;
    } else if (strncmp(arg, "--json=", 7) == 0) {
      a->json = 1;
      a->json_path = arg + 7;
    } else if (strcmp(arg, "--json") == 0) {
      a->json = 1;
      /* An optional FILE: the next word when it is not an option. */
      if (i + 1 < argc && (argv[i + 1][0] != '-' || strcmp(argv[i + 1], "-") == 0)) a->json_path = argv[++i];
    } else {
      fprintf(stderr, "gpulaunch topo: unknown argument '%s'\n", arg);
      topo_usage(stderr);
      return -1;
    }
    if (missing) {
      fprintf(stderr, "gpulaunch topo: %s needs a value\n", arg);
      return -1;
    }
  }
  return 0;
}

static const char *conf_or_null(const launch_t *L, const char *key) {
  if (!L->conf) return NULL;
  const char *s = conf_str(L->conf, "topology", key);
  return s && *s ? s : NULL;
}

static int write_json(const topo_t *t, const plan_t *p, const char *path) {
  cJSON *doc = report_json(t, p);
  if (!doc) {
    fprintf(stderr, "gpulaunch topo: out of memory building the JSON report\n");
    return GPL_EXIT_INTERNAL;
  }
  char *text = cJSON_Print(doc);
  cJSON_Delete(doc);
  if (!text) return GPL_EXIT_INTERNAL;
  int to_stdout = !path || strcmp(path, "-") == 0;
  FILE *f = to_stdout ? stdout : fopen(path, "w");
  if (!f) {
    fprintf(stderr, "gpulaunch topo: cannot write %s: %s\n", path, strerror(errno));
    free(text);
    return GPL_EXIT_USAGE;
  }
  int ok = fputs(text, f) != EOF && fputc('\n', f) != EOF;
  ok = (to_stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
  free(text);
  if (!ok) {
    fprintf(stderr, "gpulaunch topo: writing %s failed\n", to_stdout ? "standard output" : path);
    return GPL_EXIT_INTERNAL;
  }
  return GPL_EXIT_OK;
}

int mode_topo(launch_t *L) {
  topo_args_t a;
  memset(&a, 0, sizeof a);
  int prc = parse_args(L, &a);
  if (prc > 0) return GPL_EXIT_OK;
  if (prc < 0) return GPL_EXIT_USAGE;

  /* TODO(issue 3, part B): under mpirun with several nodes, gather every node's plan to rank 0
   * (bounded, common/mpix.h) and print the whole job. For now world rank 0 prints its own
   * node's plan and the other ranks print nothing. */
  const job_t *job = L->job;
  int printer = !job || job->rank == 0;

  const char *xml = a.xml ? a.xml : L->topology_xml ? L->topology_xml : conf_or_null(L, "xml");
  plan_opts_t o;
  plan_opts_default(&o);
  char err[512] = "";
  o.err = err;
  o.errlen = sizeof err;
  const char *bind = a.bind ? a.bind : conf_or_null(L, "bind");
  if (bind && plan_bind_parse(bind, &o.bind) < 0) {
    fprintf(stderr, "gpulaunch topo: bind '%s': expected cores, numa or none\n", bind);
    return GPL_EXIT_USAGE;
  }
  const char *gpus = conf_or_null(L, "gpus");
  o.no_gpus = a.no_gpus || (gpus && strcmp(gpus, "none") == 0);
  o.nics_per_rank = a.nics > 0 ? (int)a.nics : 1;
  if (a.ranks > 0) o.local_size = (int)a.ranks;
  else if (job && job->under_launcher && job->local_size > 0) o.local_size = job->local_size;

  topo_t *t = NULL;
  int rc = topo_load(&t, xml);
  if (rc < 0) {
    /* topo_load said what is wrong with the file on stderr. */
    fprintf(stderr, "gpulaunch topo: cannot load the topology of %s (%s)\n", xml ? xml : "this machine", gpl_strerror(rc));
    return GPL_EXIT_TOPOLOGY;
  }
  if (t->live) o.visible = getenv("CUDA_VISIBLE_DEVICES");
  plan_t *p = NULL;
  rc = plan_make(t, &o, &p);
  if (rc < 0) {
    if (!err[0]) fprintf(stderr, "gpulaunch topo: no plan: %s\n", gpl_strerror(rc));
    topo_free(t);
    return rc == GPL_ETOPO || rc == GPL_EINVAL ? GPL_EXIT_TOPOLOGY : GPL_EXIT_INTERNAL;
  }
  int exit_code = GPL_EXIT_OK;
  if (printer) {
    int json_stdout = a.json && (!a.json_path || strcmp(a.json_path, "-") == 0);
    if (!json_stdout) {
      if (report_text(stdout, t, p) < 0) exit_code = GPL_EXIT_INTERNAL;
      if (job && job->nnodes > 1)
        printf("\n(node 0 of %d; the other nodes' plans are not gathered yet)\n", job->nnodes);
    }
    if (a.json && exit_code == GPL_EXIT_OK) exit_code = write_json(t, p, a.json_path);
  }
  plan_free(p);
  topo_free(t);
  return exit_code;
}
