/* Options of `gpulaunch accept`: the [accept] section, [topology] probe settings, and the mode's
 * command line (report files, progress, overrides of [accept] keys). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/core/conf.h"

void accept_usage(FILE *f) {
  fputs(
      "usage: mpirun -np N gpulaunch accept [CONFIG] [options]\n"
      "\n"
      "Checks that a cluster is fit for a long run, before it starts. Per node: GPU count and\n"
      "model, PCIe links, expected NICs up and fast enough, a NIC near each GPU, each rank bound\n"
      "near its GPU, GPU health through NVML (ECC, retired pages or remapped rows, Xid, clocks,\n"
      "temperature, NVLink).\n"
      "Per job: the start-up's interface agreement and TCP preflight between the nodes (what the\n"
      "job's programs get), allreduce bus bandwidth against [accept] min_busbw, and a search\n"
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
      "  --strict             warnings fail the run too ([accept] strict)\n"
      "  --progress, --no-progress   progress line (default: when the terminal is a tty)\n"
      "\n"
      "Statuses: pass, warn (works, not as it should), fail, skipped (with the reason), error\n"
      "(could not run). Exit status: 0 when nothing failed (warnings and skipped checks do not\n"
      "count unless strict), 73 when a check failed, 74 when checks could not run.\n",
      f);
}

void accept_opts_default(accept_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->gpus = -1;
  o->nic_max_path = PATH_PHB;
  o->min_busbw_auto = 1;
  o->fraction = 0.93;
  o->iters = 10;
  o->budget = 10;
  o->search = ACCEPT_SEARCH_RING;
  o->max_gpu_temp = 85;
  o->probe = 1;
  o->probe_timeout = 5;
  o->progress = -1;
}

int accept_opts_from_conf(accept_opts_t *o, const conf_t *c) {
  o->gpus = (int)conf_int(c, "accept", "gpus");
  snprintf(o->gpu_model, sizeof o->gpu_model, "%s", conf_str(c, "accept", "gpu_model"));
  snprintf(o->nics, sizeof o->nics, "%s", conf_str(c, "accept", "nics"));
  o->nic_min_speed = conf_double(c, "accept", "nic_min_speed");
  if (path_class_parse(conf_str(c, "accept", "nic_max_path"), &o->nic_max_path) < 0)
    o->nic_max_path = PATH_PHB;
  const char *mb = conf_str(c, "accept", "min_busbw");
  if (!mb[0] || strcmp(mb, "auto") == 0) {
    o->min_busbw_auto = 1;
  } else if (util_parse_double(mb, &o->min_busbw) == GPL_OK && o->min_busbw >= 0) {
    o->min_busbw_auto = 0;
  } else {
    fprintf(stderr, "gpulaunch: %s: [accept] min_busbw: '%s' is neither a number of GB/s nor auto\n",
            conf_origin(c, "accept", "min_busbw"), mb);
    return GPL_ECONFIG;
  }
  o->size = conf_size(c, "accept", "size");
  o->pair_size = conf_size(c, "accept", "pair_size");
  o->fraction = conf_double(c, "accept", "pair_fraction");
  o->iters = (int)conf_int(c, "accept", "iters");
  o->budget = conf_duration(c, "accept", "budget");
  const char *se = conf_str(c, "accept", "search");
  o->search = strcmp(se, "off") == 0       ? ACCEPT_SEARCH_OFF
              : strcmp(se, "halving") == 0 ? ACCEPT_SEARCH_HALVING
                                           : ACCEPT_SEARCH_RING;
  o->strict = conf_bool(c, "accept", "strict");
  o->max_gpu_temp = conf_double(c, "accept", "max_gpu_temp");
  snprintf(o->iface, sizeof o->iface, "%s", conf_str(c, "accept", "iface"));
  const char *pr = conf_str(c, "topology", "probe");
  o->probe = strcmp(pr, "off") == 0 ? 0 : strcmp(pr, "all") == 0 ? 2 : 1;
  o->probe_timeout = conf_duration(c, "topology", "probe_timeout");
  if (o->probe_timeout <= 0) o->probe_timeout = 5;
  return GPL_OK;
}

/* "--opt VALUE" or "--opt=VALUE"; NULL when argv[*i] is another option. */
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

int accept_opts_from_argv(accept_opts_t *o, conf_t *c, int argc, char **argv, int print) {
  /* Overrides of [accept] keys, validated by the schema like the file. */
  static const struct {
    const char *opt, *key;
  } keys[] = {{"--min-busbw", "min_busbw"}, {"--size", "size"},     {"--gpus", "gpus"},
              {"--gpu-model", "gpu_model"}, {"--nics", "nics"},     {"--search", "search"},
              {"--pair-size", "pair_size"}, {"--iters", "iters"},   {"--iface", "iface"},
              {"--pair-fraction", "pair_fraction"}};
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    int missing = 0, done = 0;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      if (print) accept_usage(stdout);
      return 1;
    } else if ((v = opt_value(argc, argv, &i, "--json", &missing))) {
      o->json = v;
    } else if ((v = opt_value(argc, argv, &i, "--junit", &missing))) {
      o->junit = v;
    } else if ((v = opt_value(argc, argv, &i, "--html", &missing))) {
      o->html = v;
    } else if ((v = opt_value(argc, argv, &i, "--exclude-out", &missing))) {
      o->exclude = v;
    } else if (strcmp(a, "--progress") == 0) {
      o->progress = 1;
    } else if (strcmp(a, "--no-progress") == 0) {
      o->progress = 0;
    } else if (strcmp(a, "--strict") == 0) {
      if (conf_set(c, "accept", "strict", "true", "--strict") < 0) return GPL_EINVAL;
    } else {
      for (size_t k = 0; k < sizeof keys / sizeof keys[0] && !done && !missing; k++) {
        if ((v = opt_value(argc, argv, &i, keys[k].opt, &missing))) {
          if (conf_set(c, "accept", keys[k].key, v, keys[k].opt) < 0) return GPL_EINVAL;
          done = 1;
        }
      }
      if (!done && !missing) {
        if (print) {
          fprintf(stderr, "gpulaunch accept: unknown argument '%s'\n", a);
          accept_usage(stderr);
        }
        return GPL_EINVAL;
      }
    }
    if (missing) {
      if (print) fprintf(stderr, "gpulaunch accept: %s needs a value\n", a);
      return GPL_EINVAL;
    }
  }
  return GPL_OK;
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
  cJSON_AddNumberToObject(j, "max_gpu_temp_C", o->max_gpu_temp);
  cJSON_AddStringToObject(j, "iface", o->iface);
  static const char *const pr[] = {"off", "ring", "all"};
  cJSON_AddStringToObject(j, "probe", pr[o->probe]);
  cJSON_AddNumberToObject(j, "probe_timeout_s", o->probe_timeout);
  return j;
}
