/* Options of `gpulaunch accept`: the [accept] section, [topology] probe settings, and the mode's
 * command line (report files, progress, overrides of [accept] keys). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/cli.h"
#include "launcher/conf/conf.h"

static const char g_accept_usage[] =
      "usage: mpirun -np N gpulaunch accept [CONFIG] [options]\n"
      "\n"
      "Checks that a cluster is fit for a long run, before it starts. Per node: GPU count and\n"
      "model, PCIe links, expected NICs up and fast enough, a NIC near each GPU, each rank bound\n"
      "near its GPU, GPU health through NVML (ECC, retired pages or remapped rows, Xid, clocks,\n"
      "temperature, NVLink).\n"
      "Nodes against each other (compare = majority): a node whose GPU count, GPU model, NICs\n"
      "(count, model, speed), PCIe or NVLink links differ from what most nodes have fails, named\n"
      "with its value and the majority's; with no majority (2 nodes that differ) all of them fail.\n"
      "Explicit expectations (gpus, gpu_model, nics) replace the comparison of what they cover.\n"
      "A node without a GPU fails unless the run is meant for that: [accept] gpus = 0 (--gpus 0).\n"
      "Per job: the start-up's interface agreement and TCP preflight between the nodes (what the\n"
      "job's programs get), latency (small allreduces of 8 B to 64 KiB and an 8-byte round trip\n"
      "per pair of nodes, p50 and p99: a node slow with every partner, or a slow link between\n"
      "healthy nodes, is named; [accept] max_latency_us bounds them), allreduce bus bandwidth\n"
      "against [accept] min_busbw, and a search\n"
      "for a slow node or link (ring of node pairs, then pairs; halving when needed) that names\n"
      "the culprit. Each pair is measured 3 times and its best try counts; when the tries of\n"
      "healthy pairs spread more than pair_fraction tolerates (busy or shared nodes), only what\n"
      "stands out of that noise is flagged, and the report says which rule was applied.\n"
      "\n"
      "  --json FILE          every check, value, threshold and host as JSON\n"
      "  --junit FILE         JUnit XML: one testsuite per node and one for the job\n"
      "  --html FILE          one self-contained page with the tables and the bandwidth chart\n"
      "  --exclude-out FILE   the bad hosts, one per line (scripts/hostfile --exclude FILE)\n"
      "  --min-busbw X        GB/s, or auto ([accept] min_busbw)\n"
      "  --size BYTES         allreduce size ([accept] size; 0: 64M on CPU, 1G on GPU)\n"
      "  --gpus N, --gpu-model TEXT, --nics LIST, --search ring|halving|off\n"
      "                       expectations ([accept] keys); --gpus 0 accepts nodes without GPUs\n"
      "  --compare majority|off   nodes against each other ([accept] compare; default majority)\n"
      "  --strict             warnings fail the run too ([accept] strict)\n"
      "  --progress, --no-progress   progress line (default: when the terminal is a tty)\n"
      "\n"
      "Statuses: pass, warn (works, not as it should), fail, skipped (with the reason), error\n"
      "(could not run). Exit status: 0 when nothing failed (warnings and skipped checks do not\n"
      "count unless strict), 73 when a check failed, 74 when checks could not run.\n";

void accept_opts_default(accept_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->gpus = -1;
  o->nic_max_path = PATH_PHB;
  o->min_busbw_auto = 1;
  o->fraction = 0.93;
  o->iters = 10;
  o->budget = 10;
  o->search = ACCEPT_SEARCH_RING;
  o->compare = 1;
  o->max_gpu_temp = 85;
  o->probe = 1;
  o->probe_timeout = 5;
  o->progress = -1;
}

int accept_opts_from_conf(accept_opts_t *o, const conf_t *c) {
  o->gpus = (int)c->accept.gpus;
  snprintf(o->gpu_model, sizeof o->gpu_model, "%s", c->accept.gpu_model);
  snprintf(o->nics, sizeof o->nics, "%s", c->accept.nics);
  o->nic_min_speed = c->accept.nic_min_speed;
  if (path_class_parse(c->accept.nic_max_path, &o->nic_max_path) < 0)
    o->nic_max_path = PATH_PHB;
  const char *mb = c->accept.min_busbw;
  if (!mb[0] || strcmp(mb, "auto") == 0) {
    o->min_busbw_auto = 1;
  } else if (util_parse_double(mb, &o->min_busbw) == GPL_OK && o->min_busbw >= 0) {
    o->min_busbw_auto = 0;
  } else {
    log_print("gpulaunch: %s: [accept] min_busbw: '%s' is neither a number of GB/s nor auto\n",
            conf_origin(c, &c->accept.min_busbw), mb);
    /* from --min-busbw a usage error (64), as bench's --min-busbw; from the file a config one */
    return conf_origin(c, &c->accept.min_busbw)[0] == '-' ? GPL_EINVAL : GPL_ECONFIG;
  }
  o->size = c->accept.size;
  o->pair_size = c->accept.pair_size;
  o->fraction = c->accept.pair_fraction;
  o->iters = (int)c->accept.iters;
  o->budget = c->accept.budget;
  const char *se = c->accept.search;
  o->search = strcmp(se, "off") == 0       ? ACCEPT_SEARCH_OFF
              : strcmp(se, "halving") == 0 ? ACCEPT_SEARCH_HALVING
                                           : ACCEPT_SEARCH_RING;
  o->strict = c->accept.strict;
  o->compare = strcmp(c->accept.compare, "off") != 0;
  o->max_gpu_temp = c->accept.max_gpu_temp;
  o->max_latency_us = c->accept.max_latency_us;
  snprintf(o->iface, sizeof o->iface, "%s", c->accept.iface);
  const char *pr = c->topology.probe;
  o->probe = strcmp(pr, "off") == 0 ? 0 : strcmp(pr, "all") == 0 ? 2 : 1;
  o->probe_timeout = c->topology.probe_timeout;
  if (o->probe_timeout <= 0) o->probe_timeout = 5;
  return GPL_OK;
}

/* The options; those that override an [accept] key say which (validated by the schema like the
 * file). */
enum { OPT_JSON = 1, OPT_JUNIT, OPT_HTML, OPT_EXCLUDE, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_STRICT, OPT_KEY };
static const struct option g_accept_opts[] = {
    {"json", required_argument, 0, OPT_JSON},          {"junit", required_argument, 0, OPT_JUNIT},
    {"html", required_argument, 0, OPT_HTML},          {"exclude-out", required_argument, 0, OPT_EXCLUDE},
    {"progress", no_argument, 0, OPT_PROGRESS},        {"no-progress", no_argument, 0, OPT_NO_PROGRESS},
    {"strict", no_argument, 0, OPT_STRICT},            {"min-busbw", required_argument, 0, OPT_KEY + 0},
    {"size", required_argument, 0, OPT_KEY + 1},       {"gpus", required_argument, 0, OPT_KEY + 2},
    {"gpu-model", required_argument, 0, OPT_KEY + 3},  {"nics", required_argument, 0, OPT_KEY + 4},
    {"search", required_argument, 0, OPT_KEY + 5},     {"pair-size", required_argument, 0, OPT_KEY + 6},
    {"iters", required_argument, 0, OPT_KEY + 7},      {"iface", required_argument, 0, OPT_KEY + 8},
    {"pair-fraction", required_argument, 0, OPT_KEY + 9}, {"compare", required_argument, 0, OPT_KEY + 10},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
#define KEY(name) offsetof(conf_t, accept.name) /* the [accept] setting of OPT_KEY + i */
static const size_t g_keys[] = {KEY(min_busbw), KEY(size), KEY(gpus), KEY(gpu_model), KEY(nics),
                                KEY(search), KEY(pair_size), KEY(iters), KEY(iface),
                                KEY(pair_fraction), KEY(compare)};
const cli_spec_t mode_accept_cli = {"h", g_accept_opts};

int accept_opts_from_argv(accept_opts_t *o, conf_t *c, int argc, char **argv, int print) {
  cli_t cl;
  if (cli_begin(&cl, "gpulaunch accept", argc, argv, &mode_accept_cli) < 0) return GPL_ENOMEM;
  int code, rc = GPL_OK;
  while (rc == GPL_OK && (code = cli_next(&cl, 1)) != -1) {
    switch (code) {
      case 'h':
        if (print) fputs(g_accept_usage, stdout);
        rc = 1;
        break;
      case OPT_JSON: o->json = optarg; break;
      case OPT_JUNIT: o->junit = optarg; break;
      case OPT_HTML: o->html = optarg; break;
      case OPT_EXCLUDE: o->exclude = optarg; break;
      case OPT_PROGRESS: o->progress = 1; break;
      case OPT_NO_PROGRESS: o->progress = 0; break;
      case OPT_STRICT:
        if (conf_set(c, &c->accept.strict, "true", "--strict") < 0) rc = GPL_EINVAL;
        break;
      case ':':
        if (print) log_print("gpulaunch accept: %s needs a value\n", cli_opt(&cl));
        rc = GPL_EINVAL;
        break;
      case '?':
        if (print) log_print("gpulaunch accept: unknown argument '%s'\n%s", cli_opt(&cl), g_accept_usage);
        rc = GPL_EINVAL;
        break;
      default: {
        char origin[64] = "";
        for (const struct option *op = g_accept_opts; op->name; op++)
          if (op->val == code) snprintf(origin, sizeof origin, "--%s", op->name);
        if (conf_set(c, (char *)c + g_keys[code - OPT_KEY], optarg, origin) < 0) rc = GPL_EINVAL;
        break;
      }
    }
  }
  int n;
  char **rest = cli_rest(&cl, &n);
  if (rc == GPL_OK && n > 0) {
    if (print) log_print("gpulaunch accept: unknown argument '%s'\n%s", rest[0], g_accept_usage);
    rc = GPL_EINVAL;
  }
  cli_end(&cl);
  return rc;
}

cJSON *accept_opts_json(const accept_opts_t *o) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddNumberToObject(j, "gpus", o->gpus);
  cJSON_AddStringToObject(j, "gpu_model", o->gpu_model);
  cJSON_AddStringToObject(j, "nics", o->nics);
  cJSON_AddNumberToObject(j, "nic_min_speed_Gbps", o->nic_min_speed);
  cJSON_AddStringToObject(j, "nic_max_path", path_class_name(o->nic_max_path));
  if (o->min_busbw_auto) cJSON_AddStringToObject(j, "min_busbw", "auto");
  else cJSON_AddNumberToObject(j, "min_busbw", o->min_busbw);
  cJSON_AddNumberToObject(j, "size", (double)o->size);
  cJSON_AddNumberToObject(j, "pair_size", (double)o->pair_size);
  cJSON_AddNumberToObject(j, "pair_fraction", o->fraction);
  cJSON_AddNumberToObject(j, "iters", o->iters);
  cJSON_AddNumberToObject(j, "budget_s", o->budget);
  static const char *const se[] = {"off", "ring", "halving"};
  cJSON_AddStringToObject(j, "search", se[o->search]);
  cJSON_AddBoolToObject(j, "strict", o->strict);
  cJSON_AddStringToObject(j, "compare", o->compare ? "majority" : "off");
  cJSON_AddNumberToObject(j, "max_gpu_temp_C", o->max_gpu_temp);
  cJSON_AddNumberToObject(j, "max_latency_us", o->max_latency_us);
  cJSON_AddStringToObject(j, "iface", o->iface);
  static const char *const pr[] = {"off", "ring", "all"};
  cJSON_AddStringToObject(j, "probe", pr[o->probe]);
  cJSON_AddNumberToObject(j, "probe_timeout_s", o->probe_timeout);
  return j;
}
